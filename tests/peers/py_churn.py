"""The Python SDK's clients (mcp 2.3.0) under connection churn.

argv: the URL (a proxy that cuts every connection after a random lifetime),
the number of clients, the calls each makes. Each call streams 20 progress
notifications; it is whole when each value arrived exactly once. Prints one
`tally` line of JSON.
"""

import asyncio
import json
import sys

from mcp.client.client import Client

STEPS = 20
LIMIT_SECONDS = 60
CONNECT_TRIES = 3


async def run(url: str, calls: int, tally: dict) -> None:
    """Connects, anew after a handshake lost in transit (the SDK does not
    send it again, and there is no session to resume yet), at most
    CONNECT_TRIES times, as an application would; then makes the calls."""
    for attempt in range(1, CONNECT_TRIES + 1):
        connecting = Client(url, mode="legacy")
        try:
            client = await connecting.__aenter__()
        except Exception:  # noqa: BLE001 - any failed handshake is retried, bounded
            if attempt == CONNECT_TRIES:
                raise
            tally["handshakes_lost"] += 1
            continue
        try:
            await make_calls(client, calls, tally)
        finally:
            await connecting.__aexit__(None, None, None)
        return


async def make_calls(client: Client, calls: int, tally: dict) -> None:
    for _ in range(calls):
        tally["calls"] += 1
        values: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            values.append(value)

        try:
            await asyncio.wait_for(
                client.call_tool(
                    "stream",
                    {"count": STEPS, "interval_ms": 25},
                    read_timeout_seconds=LIMIT_SECONDS,
                    progress_callback=on_progress,
                ),
                LIMIT_SECONDS,
            )
        except asyncio.TimeoutError:
            tally["hung"] += 1
            continue
        except Exception:  # noqa: BLE001 - any failure of the call counts as one
            tally["failed"] += 1
            continue
        unique = set(values)
        if len(unique) < STEPS:
            tally["gapped"] += 1
        elif len(values) > len(unique):
            tally["duplicated"] += 1
        else:
            tally["whole"] += 1


async def main(url: str, clients: int, calls: int) -> None:
    tally = {"calls": 0, "whole": 0, "duplicated": 0, "gapped": 0, "failed": 0, "hung": 0, "handshakes_lost": 0}
    await asyncio.gather(*(run(url, calls, tally) for _ in range(clients)), return_exceptions=True)
    print("tally " + json.dumps(tally), flush=True)


asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
