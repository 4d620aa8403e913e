// The TypeScript SDK's client against an rmcp-resume server (URL in argv[2]).
// It initializes, lists and calls tools, keeps the standalone GET stream open,
// and calls `work` while the test cuts its connection: the SDK resumes with
// Last-Event-ID, and the fork's `mcp-replay` notice must not disturb it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
const transport = new StreamableHTTPClientTransport(url);
const errors = [];
transport.onerror = (error) => errors.push(String(error));
const client = new Client({ name: "ts-peer", version: "1.0.0" });
await client.connect(transport);
console.log(`session: ${transport.sessionId !== undefined}`);

const tools = await client.listTools();
console.log(`tools: ${tools.tools.map((t) => t.name).sort().join(",")}`);

const sum = await client.callTool({ name: "sum", arguments: { a: 40, b: 2 } });
console.log(`sum: ${sum.content[0].text}`);

let progress = 0;
const work = await client.callTool(
  { name: "work", arguments: { count: 2 } },
  undefined,
  { onprogress: () => { progress += 1; }, timeout: 30000 },
);
console.log(`work: ${work.content[0].text}`);
console.log(`progress: ${progress}`);
// Disconnects while resuming are expected; anything else is not.
const unexpected = errors.filter((e) => !/disconnected|terminated|fetch failed|aborted/i.test(e));
console.log(`unexpected-errors: ${unexpected.length}`);
for (const e of unexpected) console.log(`  ${e}`);
await client.close();
