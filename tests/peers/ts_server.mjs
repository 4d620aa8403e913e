// The TypeScript SDK's server with resumability (its example in-memory event
// store; none with `--no-store`), for the fork's client to resume against.
// Prints "listening <port>".
// `work` reports progress, then waits until something POSTs /release, so a
// test decides when the response is produced (while its client is away);
// `quick`, `quiet` and `poll` are the client peer matrix's tools.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";

let release;
let released = new Promise((resolve) => { release = resolve; });

function buildServer() {
  const server = new McpServer({ name: "ts-peer-server", version: "1.0.0" });
  server.registerTool(
    "work",
    { description: "progress, then wait for /release", inputSchema: { count: z.number() } },
    async ({ count }, extra) => {
      const token = extra._meta?.progressToken;
      for (let step = 1; step <= count; step++) {
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: step, total: count },
          });
        }
      }
      await released;
      return { content: [{ type: "text", text: `finished ${count} steps` }] };
    },
  );
  // For rmcp-resume-probe: progress `interval_ms` apart, then the answer.
  server.registerTool(
    "stream",
    {
      description: "progress steps, then the answer",
      inputSchema: { count: z.number(), interval_ms: z.number() },
    },
    async ({ count, interval_ms }, extra) => {
      const token = extra._meta?.progressToken;
      for (let step = 1; step <= count; step++) {
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: step, total: count },
          });
        }
        await new Promise((resolve) => setTimeout(resolve, interval_ms));
      }
      return { content: [{ type: "text", text: `streamed ${count}` }] };
    },
  );
  // The client peer matrix's tools (tests/peer_matrix.rs): the same names,
  // arguments, answers and progress values on every row.
  const progress = async (extra, value, total) => {
    const token = extra._meta?.progressToken;
    if (token !== undefined) {
      await extra.sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: value, total },
      });
    }
  };
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  server.registerTool(
    "quick",
    { description: "count progress steps back to back, then the answer", inputSchema: { count: z.number() } },
    async ({ count }, extra) => {
      for (let step = 1; step <= count; step++) {
        await progress(extra, step, count);
      }
      return { content: [{ type: "text", text: `quick ${count}` }] };
    },
  );
  server.registerTool(
    "quiet",
    { description: "progress 1, quiet for ms, progress 2, the answer", inputSchema: { ms: z.number() } },
    async ({ ms }, extra) => {
      await progress(extra, 1, 2);
      await sleep(ms);
      await progress(extra, 2, 2);
      return { content: [{ type: "text", text: `quiet ${ms}` }] };
    },
  );
  // SEP-1699 polling: the tool closes its own request stream (the SDK's
  // closeSSEStream, offered with an event store to 2025-11-25 clients), so
  // the client resumes with Last-Event-ID, and finishes ms later.
  server.registerTool(
    "poll",
    { description: "progress 1, close the call's SSE stream, progress 2 after ms, the answer", inputSchema: { ms: z.number() } },
    async ({ ms }, extra) => {
      await progress(extra, 1, 2);
      const closable = typeof extra.closeSSEStream === "function";
      if (closable) {
        extra.closeSSEStream();
      }
      await sleep(ms);
      await progress(extra, 2, 2);
      const note = closable ? "" : " (stream not closable)";
      return { content: [{ type: "text", text: `poll ${ms}${note}` }] };
    },
  );
  // For rmcp-resume-probe: notifications on the standalone stream.
  server.registerTool(
    "announce",
    { description: "tools/list_changed, count times", inputSchema: { count: z.number() } },
    async ({ count }) => {
      for (let i = 0; i < count; i++) {
        server.sendToolListChanged();
      }
      return { content: [{ type: "text", text: `announced ${count}` }] };
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
      inputSchema: { count: z.number(), interval_ms: z.number() },
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
  if (req.url === "/forget") {
    // The peer matrix's session-lost shape: every session is forgotten, as
    // by a restart, and later requests naming one get 404.
    const forgotten = transports.size;
    transports.clear();
    res.writeHead(200).end(`forgot ${forgotten}`);
    return;
  }
  if (req.url === "/release") {
    release();
    res.writeHead(200).end("released");
    return;
  }
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? transports.get(sid) : undefined;
  if (!transport) {
    if (sid) {
      res.writeHead(404).end("unknown session");
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // `--no-store`: no event store, so nothing can be resumed (the
      // SDK's default); the peer matrix's row for servers that cannot.
      eventStore: process.argv.includes("--no-store") ? undefined : new InMemoryEventStore(),
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
