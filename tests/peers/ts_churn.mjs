// The TypeScript SDK's clients under connection churn: argv[2] is the URL
// (a proxy that cuts every connection after a random lifetime), argv[3] the
// number of clients, argv[4] the calls each makes. Each call streams 20
// progress notifications; it is whole when each value arrived exactly once.
// Prints one `tally` line of JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, clients, calls] = [new URL(process.argv[2]), Number(process.argv[3]), Number(process.argv[4])];
const STEPS = 20;
const LIMIT_MS = 60000;
const tally = { calls: 0, whole: 0, duplicated: 0, gapped: 0, failed: 0, hung: 0, unsent: 0, handshakes_lost: 0 };
const CONNECT_TRIES = 3;

function withLimit(promise) {
  let timer;
  const limit = new Promise((resolve) => { timer = setTimeout(() => resolve("hung"), LIMIT_MS); });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

// A handshake POST cut in transit (a fetch TypeError) is lost for good: the
// SDK does not send it again, and there is no session to resume. The peer
// connects anew, as an application would, at most CONNECT_TRIES times; the
// tally counts each such loss.
async function connect() {
  for (let attempt = 1; ; attempt++) {
    const transport = new StreamableHTTPClientTransport(url);
    transport.onerror = () => {};
    const client = new Client({ name: "ts-churn", version: "1.0.0" });
    try {
      await client.connect(transport);
      return client;
    } catch (e) {
      if (!(e instanceof TypeError) || attempt >= CONNECT_TRIES) throw e;
      tally.handshakes_lost += 1;
      await client.close().catch(() => {});
    }
  }
}

async function run() {
  const client = await connect();
  for (let i = 0; i < calls; i++) {
    tally.calls += 1;
    const values = [];
    const call = client.callTool(
      { name: "stream", arguments: { count: STEPS, interval_ms: 25 } },
      undefined,
      { onprogress: (p) => values.push(p.progress), timeout: LIMIT_MS, resetTimeoutOnProgress: true },
    ).then(
      () => "answered",
      // A network error before any response is a fetch TypeError (the fetch
      // spec's): the POST's connection died before a priming event, so the
      // SDK has no cursor to resume from and does not retry the POST.
      (e) => (e instanceof TypeError && values.length === 0 ? "unsent" : "failed"),
    );
    const ended = await withLimit(call);
    if (ended !== "answered") { tally[ended] += 1; continue; }
    const unique = new Set(values);
    if (unique.size < STEPS) tally.gapped += 1;
    else if (values.length > unique.size) tally.duplicated += 1;
    else tally.whole += 1;
  }
  await withLimit(client.close().catch(() => {}));
}

await Promise.all(Array.from({ length: clients }, run));
console.log(`tally ${JSON.stringify(tally)}`);
process.exit(0);
