"""The Python SDK's server (mcp 2.3.0) with resumability, for the fork's
client to resume against. Prints "listening <port>". `work` reports progress,
then waits until something GETs /release, so a test decides when the
response is produced (while its client is away); `quick`, `quiet` and `poll`
are the client peer matrix's tools."""

import asyncio
import socket
import sys

import uvicorn
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

released = asyncio.Event()


class MemoryEventStore(EventStore):
    """Every event kept; ids are `<stream>:<n>`."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, object]] = []

    async def store_event(self, stream_id, message):
        event_id = f"{stream_id}:{len(self.events)}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback: EventCallback):
        ids = [e[0] for e in self.events]
        if last_event_id not in ids:
            return None
        at = ids.index(last_event_id)
        stream = self.events[at][1]
        for event_id, stream_id, message in self.events[at + 1 :]:
            if stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


server = MCPServer("py-peer-server")


@server.tool()
async def work(count: int, ctx: Context) -> str:
    """Report `count` progress steps, then wait for /release."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count)
    await released.wait()
    return f"finished {count} steps"


@server.tool()
async def stream(count: int, interval_ms: int, ctx: Context) -> str:
    """Report `count` progress steps `interval_ms` apart, then answer (for
    rmcp-resume-probe)."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count)
        await asyncio.sleep(interval_ms / 1000)
    return f"streamed {count}"


@server.tool()
async def quick(count: int, ctx: Context) -> str:
    """Report `count` progress steps back to back, then answer (the client
    peer matrix's tools: tests/peer_matrix.rs)."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count)
    return f"quick {count}"


@server.tool()
async def quiet(ms: int, ctx: Context) -> str:
    """Report progress 1, stay quiet for `ms`, report progress 2, answer."""
    await ctx.report_progress(1, 2)
    await asyncio.sleep(ms / 1000)
    await ctx.report_progress(2, 2)
    return f"quiet {ms}"


@server.tool()
async def poll(ms: int, ctx: Context) -> str:
    """SEP-1699 polling: report progress 1, close this call's SSE stream (the
    SDK offers it with an event store to 2025-11-25 clients), so the client
    resumes with Last-Event-ID; report progress 2 after `ms`, answer."""
    await ctx.report_progress(1, 2)
    closable = ctx.request_context.close_sse_stream is not None
    await ctx.close_sse_stream()
    await asyncio.sleep(ms / 1000)
    await ctx.report_progress(2, 2)
    note = "" if closable else " (stream not closable)"
    return f"poll {ms}{note}"


@server.tool()
async def announce(count: int, ctx: Context) -> str:
    """Send tools/list_changed `count` times (for rmcp-resume-probe)."""
    for _ in range(count):
        await ctx.session.send_tool_list_changed()
    return f"announced {count}"


@server.tool()
async def tick(count: int, interval_ms: int, ctx: Context) -> str:
    """Send resources/updated tick://1..count, interval_ms apart, from a task
    of its own (so on the standalone stream); answer at once (the peer
    matrix's standalone notifications)."""
    session = ctx.session

    async def ticks() -> None:
        for n in range(1, count + 1):
            await asyncio.sleep(interval_ms / 1000)
            try:
                await session.send_resource_updated(f"tick://{n}")
            except Exception:
                return

    ticking.add(asyncio.create_task(ticks()))
    return f"ticking {count}"


ticking: set = set()


async def release(_request):
    released.set()
    return PlainTextResponse("released")


def store_per_session(manager) -> None:
    """Gives each session an event store of its own (`--store-per-session`).

    mcp 2.3.0 hands its one `event_store` to every session, and names a
    call's stream by the call's JSON-RPC id, which every client counts from
    the same start: a store shared by concurrent sessions replays, on one
    session's resume, the events of another session's call with the same id.
    The peer matrix runs many sessions on one server, so it asks for this.
    """
    admit = manager._admit_session

    def admit_with_own_store(requestor):
        manager.event_store = MemoryEventStore()
        return admit(requestor)

    manager._admit_session = admit_with_own_store


async def main() -> None:
    # `--no-store`: no event store, nothing resumable (the SDK's default).
    store = None if "--no-store" in sys.argv[1:] else MemoryEventStore()
    app = server.streamable_http_app(event_store=store, retry_interval=200)
    if "--store-per-session" in sys.argv[1:]:
        store_per_session(server.session_manager)
    app.router.routes.append(Route("/release", release))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    # Listen before announcing the port: connections made before uvicorn
    # starts serving wait in the backlog instead of being refused.
    sock.listen(128)
    print(f"listening {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


asyncio.run(main())
