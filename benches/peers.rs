//! The servers a user would pick instead, under the harness's load, with
//! one client for all: `cargo bench --bench peers` (after `bash .ci/test`
//! installed the peers: node 22 with the TypeScript SDKs, and the Python
//! SDK's virtualenv).
//!
//! Rows: upstream rmcp 3.11.0 and the fork (each in a process of its own,
//! this binary with `--serve SIDE`), the TypeScript SDK 1.32.2 and 2.x
//! servers with their example event stores (`tests/peers/ts_server.mjs`,
//! `ts2_server.mjs`), and the Python SDK 2.3.0 server with an event store
//! per session (`tests/peers/py_server.py`). Every server answers the same
//! tool, `quick 0` (no progress, the answer at once), and every figure comes
//! from upstream rmcp 3.11.0's client, so only the servers differ:
//!
//! - `latency`: p50 and p99 of one client's calls, in interleaved blocks;
//! - `throughput`: calls/s with 1, 16 and 64 concurrent clients (one
//!   session each), in interleaved rounds, the median round;
//! - `replay`: a call that sends 256 progress events, then a resume from
//!   its first event's id: the time until the 255 events after it arrived
//!   (raw HTTP, so the timing holds no client's reconnect policy);
//! - `memory`: resident memory per idle session holding an open standalone
//!   `GET`, 1,000 sessions, read from the server process's `/proc` status.
//!
//! Results go to `target/bench-report/peers.json`. `-- --quick` shrinks
//! every section; `-- --only SECTION` runs one.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::RunningService;
use rmcp_resume_testkit::matrix::{self, RowServer};
use rmcp_resume_testkit::raw::{RawSession, SseReader};
use rmcp_resume_testkit::{Side, TestServer, scenario};
use serde_json::{Value, json};

type AnyResult<T> = anyhow::Result<T>;
type Client = RunningService<RoleClient, ClientConfig>;

/// One server of the table.
struct Row {
    name: &'static str,
    server: RowServer,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn installed(path: PathBuf, what: &str) -> AnyResult<PathBuf> {
    anyhow::ensure!(
        path.exists(),
        "{what} is not installed at {}: run `bash .ci/test` first, which installs the peers",
        path.display()
    );
    Ok(path)
}

/// Every row's server, each in its own process.
async fn rows() -> AnyResult<Vec<Row>> {
    let peers = repo().join("tests/peers");
    let node = installed(peers.join("node_modules/node/bin/node"), "node 22")?;
    let python = installed(
        repo().join("target/peers-venv/bin/python"),
        "the Python SDK's virtualenv",
    )?;
    let exe = std::env::current_exe()?;
    let serve = Path::new("--serve");
    Ok(vec![
        Row {
            name: "upstream rmcp 3.11.0",
            server: matrix::spawn_peer(&exe, serve, &["upstream"]).await?,
        },
        Row {
            name: "rmcp-resume",
            server: matrix::spawn_peer(&exe, serve, &["fork"]).await?,
        },
        Row {
            name: "TypeScript SDK 1.32.2",
            server: matrix::spawn_peer(&node, &peers.join("ts_server.mjs"), &[]).await?,
        },
        Row {
            name: "TypeScript SDK 2.x",
            server: matrix::spawn_peer(&node, &peers.join("ts2_server.mjs"), &[]).await?,
        },
        Row {
            name: "Python SDK 2.3.0",
            server: matrix::spawn_peer(
                &python,
                &peers.join("py_server.py"),
                &["--store-per-session"],
            )
            .await?,
        },
    ])
}

/// `--serve SIDE`: the shapes server of `SIDE` alone in this process,
/// announced as the peers announce theirs, until the parent kills it.
async fn serve_alone(side: &str) -> AnyResult<()> {
    let side = match side {
        "upstream" => Side::Upstream,
        "fork" => Side::Fork,
        other => anyhow::bail!("unknown side {other}"),
    };
    let served = TestServer::shapes(side).nodelay().serve().await?;
    println!("listening {}", served.addr.port());
    std::future::pending::<()>().await;
    Ok(())
}

fn url(row: &Row) -> String {
    format!("http://{}/mcp", row.server.addr)
}

fn quick() -> AnyResult<CallToolRequestParams> {
    Ok(serde_json::from_value(
        json!({ "name": "quick", "arguments": { "count": 0 } }),
    )?)
}

async fn client(row: &Row) -> AnyResult<Client> {
    scenario::connect(Side::Upstream, ClientConfig::default(), url(row)).await
}

fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return f64::NAN;
    };
    let rank = ((last as f64) * p).round() as usize;
    sorted[rank.min(last)].as_secs_f64() * 1e6
}

/// p50/p99 per row, one client each, in blocks that rotate the rows.
async fn latency(rows: &[Row], quick_run: bool) -> AnyResult<Value> {
    let (rounds, block) = if quick_run { (4, 50) } else { (10, 100) };
    let mut clients = Vec::new();
    for row in rows {
        let client = client(row).await?;
        for _ in 0..100 {
            client.call_tool(quick()?).await?;
        }
        clients.push((client, Vec::with_capacity(rounds * block)));
    }
    for round in 0..rounds {
        for i in (0..rows.len()).map(|i| (i + round) % rows.len()) {
            let (client, samples) = &mut clients[i];
            for _ in 0..block {
                let started = Instant::now();
                client.call_tool(quick()?).await?;
                samples.push(started.elapsed());
            }
        }
    }
    let mut out = serde_json::Map::new();
    for (row, (client, mut samples)) in rows.iter().zip(clients) {
        samples.sort();
        out.insert(
            row.name.into(),
            json!({ "p50_us": percentile_us(&samples, 0.5), "p99_us": percentile_us(&samples, 0.99) }),
        );
        client.cancel().await?;
    }
    Ok(Value::Object(out))
}

/// One call from each client, all at once.
async fn batch(clients: &[Client]) -> AnyResult<()> {
    futures::future::try_join_all(clients.iter().map(|c| async move {
        c.call_tool(quick()?).await?;
        Ok::<_, anyhow::Error>(())
    }))
    .await?;
    Ok(())
}

/// Calls/s with `k` clients per row, rounds rotating the rows; the median.
async fn throughput(rows: &[Row], quick_run: bool) -> AnyResult<Value> {
    let (rounds, batches) = if quick_run { (3, 10) } else { (7, 30) };
    let mut out = serde_json::Map::new();
    for k in [1usize, 16, 64] {
        let mut fleets = Vec::new();
        for row in rows {
            let mut clients = Vec::with_capacity(k);
            for _ in 0..k {
                clients.push(client(row).await?);
            }
            for _ in 0..batches / 2 {
                batch(&clients).await?;
            }
            fleets.push((clients, Vec::with_capacity(rounds)));
        }
        for round in 0..rounds {
            for i in (0..rows.len()).map(|i| (i + round) % rows.len()) {
                let (clients, rates) = &mut fleets[i];
                let started = Instant::now();
                for _ in 0..batches {
                    batch(clients).await?;
                }
                rates.push((batches * k) as f64 / started.elapsed().as_secs_f64());
            }
        }
        let mut by_row = serde_json::Map::new();
        for (row, (clients, mut rates)) in rows.iter().zip(fleets) {
            rates.sort_by(f64::total_cmp);
            by_row.insert(row.name.into(), json!(rates[rates.len() / 2]));
            for client in clients {
                client.cancel().await?;
            }
        }
        out.insert(k.to_string(), Value::Object(by_row));
    }
    Ok(Value::Object(out))
}

/// Progress events of the replayed call.
const REPLAYED: u32 = 256;

/// The progress frames of `frames`.
fn progress(frames: &[rmcp_resume_testkit::raw::Frame]) -> Vec<&rmcp_resume_testkit::raw::Frame> {
    frames
        .iter()
        .filter(|f| {
            f.json()
                .is_some_and(|j| j["method"] == "notifications/progress")
        })
        .collect()
}

/// One replay: a call of `REPLAYED` progress events, then a resume from
/// the first; the time until the last of the rest arrived.
async fn replay_once(url: &str) -> AnyResult<Duration> {
    let mut session = RawSession::open(url).await?;
    let (_, response) = session
        .call("quick", json!({ "count": REPLAYED }), true)
        .await?;
    let frames = SseReader::new(response).collect().await?;
    let events = progress(&frames);
    anyhow::ensure!(
        events.len() == REPLAYED as usize,
        "{} progress events",
        events.len()
    );
    let cursor = events
        .first()
        .and_then(|f| f.id.clone())
        .ok_or_else(|| anyhow::anyhow!("the first progress event has no id"))?;
    let started = Instant::now();
    let response = session.resume(&cursor).await?;
    anyhow::ensure!(response.status() == 200, "resume: {}", response.status());
    let mut reader = SseReader::new(response);
    let mut seen = 0;
    // Some servers keep the resumed stream open after the replay: the
    // clock stops at the last replayed event, not at the stream's end.
    while seen + 1 < REPLAYED as usize {
        let frame = tokio::time::timeout(Duration::from_secs(10), reader.next())
            .await
            .map_err(|_| anyhow::anyhow!("replay stalled after {seen} events"))??
            .ok_or_else(|| anyhow::anyhow!("replay ended after {seen} events"))?;
        if progress(std::slice::from_ref(&frame)).len() == 1 {
            seen += 1;
        }
    }
    let elapsed = started.elapsed();
    let _ = session.delete().await;
    Ok(elapsed)
}

/// The median replay per row, rounds rotating the rows.
async fn replay(rows: &[Row], quick_run: bool) -> AnyResult<Value> {
    let rounds = if quick_run { 3 } else { 9 };
    let mut samples: Vec<Vec<Duration>> = rows.iter().map(|_| Vec::new()).collect();
    let mut failures: Vec<Vec<String>> = rows.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for i in (0..rows.len()).map(|i| (i + round) % rows.len()) {
            match replay_once(&url(&rows[i])).await {
                Ok(elapsed) => samples[i].push(elapsed),
                Err(error) => {
                    eprintln!("peers: replay on {}: {error:#}", rows[i].name);
                    failures[i].push(format!("{error:#}"));
                }
            }
        }
    }
    let mut out = serde_json::Map::new();
    for (row, mut times) in rows.iter().zip(samples) {
        times.sort();
        let value = match times.get(times.len() / 2) {
            Some(median) => {
                json!({ "events": REPLAYED - 1, "ms": median.as_secs_f64() * 1e3, "rounds": times.len() })
            }
            None => json!({ "events": REPLAYED - 1, "ms": null, "rounds": 0 }),
        };
        out.insert(row.name.into(), value);
    }
    Ok(Value::Object(out))
}

/// `VmRSS` of `pid`, in bytes.
fn rss(pid: u32) -> AnyResult<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or_else(|| anyhow::anyhow!("no VmRSS for {pid}"))?
        .parse::<u64>()?;
    Ok(kb * 1024)
}

/// Resident bytes per idle session, `sessions` of them, per row.
async fn memory(rows: &[Row], quick_run: bool) -> AnyResult<Value> {
    let sessions = if quick_run { 200 } else { 1_000 };
    let mut out = serde_json::Map::new();
    for row in rows {
        let pid = row
            .server
            .pid()
            .ok_or_else(|| anyhow::anyhow!("{} has no process of its own", row.name))?;
        let measured = async {
            let http = reqwest::Client::new();
            let warm = RawSession::open_idle(http.clone(), &url(row)).await?;
            let before = rss(pid)?;
            let held: Vec<_> = futures::stream::iter((0..sessions).map(|_| {
                let (http, url) = (http.clone(), url(row));
                async move { RawSession::open_idle(http, &url).await }
            }))
            .buffer_unordered(32)
            .collect()
            .await;
            let held = held.into_iter().collect::<AnyResult<Vec<_>>>()?;
            let after = rss(pid)?;
            drop(held);
            drop(warm);
            AnyResult::Ok(after.saturating_sub(before) as f64 / sessions as f64)
        };
        let value = match measured.await {
            Ok(bytes) => json!({ "sessions": sessions, "bytes_per_session": bytes }),
            Err(error) => {
                eprintln!("peers: memory on {}: {error:#}", row.name);
                json!({ "sessions": sessions, "error": format!("{error:#}") })
            }
        };
        out.insert(row.name.into(), value);
    }
    Ok(Value::Object(out))
}

fn main() -> AnyResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Runtime::new()?;
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        let side = args.get(i + 1).cloned().unwrap_or_default();
        return runtime.block_on(serve_alone(&side));
    }
    let quick_run = args.iter().any(|a| a == "--quick");
    // `--only SECTION` runs one of them.
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let wanted = |section: &str| only.as_deref().is_none_or(|o| o == section);
    let results = runtime.block_on(async {
        let rows = rows().await?;
        let mut results = serde_json::Map::new();
        if wanted("latency") {
            eprintln!("peers: latency");
            results.insert("latency".into(), latency(&rows, quick_run).await?);
        }
        if wanted("throughput") {
            eprintln!("peers: throughput at 1/16/64 concurrent clients");
            results.insert("throughput".into(), throughput(&rows, quick_run).await?);
        }
        if wanted("replay") {
            eprintln!("peers: a 256-event replay");
            results.insert("replay".into(), replay(&rows, quick_run).await?);
        }
        if wanted("memory") {
            eprintln!("peers: memory per idle session");
            results.insert("memory".into(), memory(&rows, quick_run).await?);
        }
        Ok::<_, anyhow::Error>(Value::Object(results))
    })?;
    let dir = repo().join("target/bench-report");
    std::fs::create_dir_all(&dir)?;
    let text = serde_json::to_string_pretty(&results)?;
    std::fs::write(dir.join("peers.json"), &text)?;
    println!("{text}");
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}
