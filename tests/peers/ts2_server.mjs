// The TypeScript SDK v2's server (@modelcontextprotocol/server, on Node's
// http through @modelcontextprotocol/node) with resumability, for the client
// peer matrix (tests/peer_matrix.rs). Prints "listening <port>".
//
// v2 ships no event store, so this script has its own, in memory: the shape
// of v1's example store (storeEvent, replayEventsAfter), keeping every event
// in arrival order. It also answers getStreamIdForEventId, which v2's
// interface offers and a production store would implement: with it the
// transport answers 409 to a resume of a stream it still thinks connected.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/server";
import { NodeStreamableHTTPServerTransport } from "@modelcontextprotocol/node";

class MemoryEventStore {
  constructor() {
    // Every event, oldest first: { id, streamId, message }.
    this.log = [];
    this.byId = new Map();
    this.next = 0;
  }

  async storeEvent(streamId, message) {
    this.next += 1;
    const id = `${streamId}#${this.next}`;
    const event = { id, streamId, message, at: this.log.length };
    this.log.push(event);
    this.byId.set(id, event);
    return id;
  }

  async getStreamIdForEventId(eventId) {
    return this.byId.get(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId, { send }) {
    const cursor = this.byId.get(lastEventId);
    if (!cursor) {
      return "";
    }
    for (const event of this.log.slice(cursor.at + 1)) {
      // Priming events carry no message.
      if (event.streamId === cursor.streamId && event.message && Object.keys(event.message).length > 0) {
        await send(event.id, event.message);
      }
    }
    return cursor.streamId;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function buildServer() {
  const server = new McpServer({ name: "ts2-peer-server", version: "1.0.0" });
  const progress = async (ctx, value, total) => {
    const token = ctx.mcpReq._meta?.progressToken;
    if (token !== undefined) {
      await ctx.mcpReq.notify({
        method: "notifications/progress",
        params: { progressToken: token, progress: value, total },
      });
    }
  };
  server.registerTool(
    "quick",
    { description: "count progress steps back to back, then the answer", inputSchema: z.object({ count: z.number() }) },
    async ({ count }, ctx) => {
      for (let step = 1; step <= count; step++) {
        await progress(ctx, step, count);
      }
      return { content: [{ type: "text", text: `quick ${count}` }] };
    },
  );
  server.registerTool(
    "quiet",
    { description: "progress 1, quiet for ms, progress 2, the answer", inputSchema: z.object({ ms: z.number() }) },
    async ({ ms }, ctx) => {
      await progress(ctx, 1, 2);
      await sleep(ms);
      await progress(ctx, 2, 2);
      return { content: [{ type: "text", text: `quiet ${ms}` }] };
    },
  );
  // SEP-1699 polling: v2 hands a tool `ctx.http.closeSSE` (with an event
  // store, to 2025-11-25 clients) to close its own request stream.
  server.registerTool(
    "poll",
    {
      description: "progress 1, close the call's SSE stream, progress 2 after ms, the answer",
      inputSchema: z.object({ ms: z.number() }),
    },
    async ({ ms }, ctx) => {
      await progress(ctx, 1, 2);
      const closable = typeof ctx.http?.closeSSE === "function";
      if (closable) {
        ctx.http.closeSSE();
      }
      await sleep(ms);
      await progress(ctx, 2, 2);
      const note = closable ? "" : " (stream not closable)";
      return { content: [{ type: "text", text: `poll ${ms}${note}` }] };
    },
  );
  server.registerTool(
    "stream",
    {
      description: "progress steps interval_ms apart, then the answer",
      inputSchema: z.object({ count: z.number(), interval_ms: z.number() }),
    },
    async ({ count, interval_ms }, ctx) => {
      for (let step = 1; step <= count; step++) {
        await progress(ctx, step, count);
        if (step < count) {
          await sleep(interval_ms);
        }
      }
      return { content: [{ type: "text", text: `streamed ${count}` }] };
    },
  );
  // The peer matrix's standalone notifications: resources/updated
  // tick://1..count, interval_ms apart, from outside any request (so on the
  // standalone stream); answers at once.
  server.server.registerCapabilities({ resources: {} });
  server.registerTool(
    "tick",
    {
      description: "resources/updated tick://1..count on the standalone stream, interval_ms apart",
      inputSchema: z.object({ count: z.number(), interval_ms: z.number() }),
    },
    async ({ count, interval_ms }) => {
      (async () => {
        for (let n = 1; n <= count; n++) {
          await sleep(interval_ms);
          try {
            await server.server.sendResourceUpdated({ uri: `tick://${n}` });
          } catch {
            return;
          }
        }
      })();
      return { content: [{ type: "text", text: `ticking ${count}` }] };
    },
  );
  return server;
}

const transports = new Map();
const http = createServer(async (req, res) => {
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? transports.get(sid) : undefined;
  if (!transport) {
    if (sid) {
      res.writeHead(404).end("unknown session");
      return;
    }
    transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new MemoryEventStore(),
      retryInterval: 200,
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    await buildServer().connect(transport);
  }
  await transport.handleRequest(req, res);
});
http.listen(0, "127.0.0.1", () => {
  console.log(`listening ${http.address().port}`);
});
