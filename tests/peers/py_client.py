"""The Python SDK's client (mcp 2.3.0) against an rmcp-resume server.

Same scenario as ts_client.mjs: initialize (forced to the 2025 handshake, the
revisions with resumable streams), list and call tools, then call `work`
while the test cuts the connection, so the SDK resumes with Last-Event-ID and
meets the fork's `mcp-replay` notice.
"""

import asyncio
import sys

from mcp.client.client import Client


async def main(url: str) -> None:
    progress = 0

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        nonlocal progress
        progress += 1

    async with Client(url, mode="legacy") as client:
        tools = await client.list_tools()
        print("tools: " + ",".join(sorted(t.name for t in tools.tools)), flush=True)
        result = await client.call_tool("sum", {"a": 40, "b": 2})
        print(f"sum: {result.content[0].text}", flush=True)
        result = await client.call_tool(
            "work", {"count": 2}, read_timeout_seconds=30, progress_callback=on_progress
        )
        print(f"work: {result.content[0].text}", flush=True)
        print(f"progress: {progress}", flush=True)


asyncio.run(main(sys.argv[1]))
