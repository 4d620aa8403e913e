//! Other people's clients against the fork's server: the TypeScript SDK and
//! the Python SDK initialize, list and call tools, and resume a tool call
//! whose connection is cut, meeting the fork's `mcp-replay` notice and
//! replay on the way. And the fork's client against those SDKs' servers,
//! 45 s quiet calls included (the rest of that matrix: tests/peer_matrix.rs).
//! `bash .ci/test` installs both (tests/peers); a missing peer fails the
//! test rather than skipping it.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use rmcp_resume_testkit::matrix;
use rmcp_resume_testkit::proxy::Proxy;
use rmcp_resume_testkit::scenario::first_text;
use rmcp_resume_testkit::{Side, TestServer};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(90);

fn peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

fn require(path: PathBuf, what: &str) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(
        path.exists(),
        "{what} is not installed at {}: run `bash .ci/test`, which installs the peers",
        path.display()
    );
    Ok(path)
}

/// Runs `program args… <url>` against a fork server behind a cuttable proxy;
/// cuts every connection once the `work` call's progress went out, then lets
/// the tool finish. Returns the peer's stdout and the service's resume stats.
async fn run_peer(
    program: PathBuf,
    args: &[PathBuf],
) -> anyhow::Result<(
    String,
    rmcp::transport::streamable_http_server::tower::ResumeStats,
)> {
    let served = TestServer::new(Side::Fork)
        .retry(Some(Duration::from_millis(200)))
        .serve()
        .await?;
    let stdout = drive_peer(program, args, served.addr, &served.gate, &served.ct).await?;
    let stats = served
        .resume_stats()
        .ok_or_else(|| anyhow::anyhow!("a fork server counts its resumes"))?;
    Ok((stdout, stats))
}

/// Runs the peer against `target` through a cuttable proxy, cuts every
/// connection once the `work` call's progress went out, then opens `gate`
/// so the tool finishes; returns the peer's stdout once it succeeded.
async fn drive_peer(
    program: PathBuf,
    args: &[PathBuf],
    target: std::net::SocketAddr,
    gate: &tokio::sync::Notify,
    ct: &CancellationToken,
) -> anyhow::Result<String> {
    let proxy = Proxy::start(target, "notifications/progress", ct.clone()).await?;
    let child = tokio::process::Command::new(&program)
        .args(args)
        .arg(format!("http://{}/mcp", proxy.addr))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let output = child.wait_with_output();
    let mut output = std::pin::pin!(output);
    tokio::select! {
        _ = proxy.marker_seen() => {}
        done = &mut output => anyhow::bail!("peer ended before the cut: {:?}", done.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())),
    }
    proxy.cut();
    gate.notify_one();
    let output = tokio::time::timeout(LIMIT, output).await??;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    anyhow::ensure!(
        output.status.success(),
        "peer failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(stdout)
}

/// The TypeScript SDK's scripted client: the program and its script.
fn typescript_client() -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = peers();
    require(
        dir.join("node_modules/@modelcontextprotocol/sdk"),
        "@modelcontextprotocol/sdk",
    )?;
    Ok((PathBuf::from("node"), dir.join("ts_client.mjs")))
}

/// The Python SDK's scripted client: the venv's python and its script.
fn python_client() -> anyhow::Result<(PathBuf, PathBuf)> {
    let python = require(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/peers-venv/bin/python"),
        "the Python SDK (mcp) virtualenv",
    )?;
    Ok((python, peers().join("py_client.py")))
}

fn assert_scenario(stdout: &str) {
    assert!(
        stdout.contains("tools: announce,build_info,burst,echo,flood,stream,sum,tick,work"),
        "{stdout}"
    );
    assert!(stdout.contains("sum: 42"), "{stdout}");
    assert!(stdout.contains("work: finished 2 steps"), "{stdout}");
}

#[tokio::test]
async fn typescript_sdk_client_resumes_through_the_notice() -> anyhow::Result<()> {
    let (program, script) = typescript_client()?;
    let (stdout, stats) = run_peer(program, &[script]).await?;
    assert_scenario(&stdout);
    assert!(stdout.contains("unexpected-errors: 0"), "{stdout}");
    assert!(
        stats.replayed >= 1,
        "the SDK resumed through the fork's replay: {stats:?}"
    );
    Ok(())
}

#[tokio::test]
async fn python_sdk_client_resumes_through_the_notice() -> anyhow::Result<()> {
    let (program, script) = python_client()?;
    let (stdout, stats) = run_peer(program, &[script]).await?;
    assert_scenario(&stdout);
    assert!(
        stats.replayed >= 1,
        "the SDK resumed through the fork's replay: {stats:?}"
    );
    Ok(())
}

/// Runs a peer server (`program args…`, which prints `listening <port>` and
/// releases its `work` tool on `GET /release`) and resumes a cut call against
/// it with the fork's client. Returns the number of resume requests made.
async fn resume_against_peer_server(program: PathBuf, args: &[PathBuf]) -> anyhow::Result<usize> {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ClientConfig};
    use tokio::io::AsyncBufReadExt;

    let mut server = tokio::process::Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = server
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(LIMIT, lines.next_line())
        .await??
        .ok_or_else(|| anyhow::anyhow!("server printed nothing"))?;
    let port: u16 = line
        .strip_prefix("listening ")
        .and_then(|p| p.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("unexpected first line {line:?}"))?;
    let target = std::net::SocketAddr::from(([127, 0, 0, 1], port));

    let ct = CancellationToken::new();
    let proxy = Proxy::start(target, "notifications/progress", ct.clone()).await?;
    let client = ClientConfig::default()
        .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
            format!("http://{}/mcp", proxy.addr),
        ))
        .await?;
    let params: CallToolRequestParams = serde_json::from_value(serde_json::json!({
        "name": "work", "arguments": { "count": 2 }, "_meta": { "progressToken": 7 }
    }))?;
    let peer = client.peer().clone();
    let call = peer.call_tool(params);
    let mut call = std::pin::pin!(call);
    tokio::select! {
        _ = proxy.marker_seen() => {}
        early = &mut call => anyhow::bail!("call ended before the cut: {early:?}"),
    }
    proxy.cut();
    // The tool finishes while nothing is connected.
    let released = reqwest::get(format!("http://{target}/release")).await?;
    anyhow::ensure!(released.status() == 200, "release: {}", released.status());
    let result = tokio::time::timeout(LIMIT, call).await??;
    let text = first_text(&result);
    assert_eq!(text.as_deref(), Some("finished 2 steps"));
    drop(client);
    ct.cancel();
    Ok(proxy.resumes())
}

/// The fork's client against the TypeScript SDK's server with its event
/// store: a call whose connection is cut while the tool finishes resumes
/// with the server's opaque event ids.
#[tokio::test]
async fn fork_client_resumes_against_the_typescript_sdk_server() -> anyhow::Result<()> {
    let dir = peers();
    require(
        dir.join("node_modules/@modelcontextprotocol/sdk"),
        "@modelcontextprotocol/sdk",
    )?;
    let resumes =
        resume_against_peer_server(PathBuf::from("node"), &[dir.join("ts_server.mjs")]).await?;
    assert!((1..=3).contains(&resumes), "{resumes} resumes");
    Ok(())
}

/// The same against the Python SDK's server with an event store.
#[tokio::test]
async fn fork_client_resumes_against_the_python_sdk_server() -> anyhow::Result<()> {
    let dir = peers();
    let python = require(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/peers-venv/bin/python"),
        "the Python SDK (mcp) virtualenv",
    )?;
    let resumes = resume_against_peer_server(python, &[dir.join("py_server.py")]).await?;
    assert!((1..=3).contains(&resumes), "{resumes} resumes");
    Ok(())
}

/// Runs `program args… <url> <clients> <calls>` against a fork server behind
/// a proxy that closes every connection after 50–600 ms (seed `seed`), and
/// returns the peer's tally and how many connections were cut.
async fn churn_peer(
    program: PathBuf,
    args: &[PathBuf],
    seed: u64,
) -> anyhow::Result<(serde_json::Value, usize)> {
    const CLIENTS: usize = 8;
    const CALLS: usize = 6;
    let served = TestServer::new(Side::Fork).serve().await?;
    let proxy = Proxy::start(served.addr, "", served.ct.clone()).await?;
    proxy.churn(seed, Duration::from_millis(50), Duration::from_millis(600));
    let child = tokio::process::Command::new(&program)
        .args(args)
        .arg(format!("http://{}/mcp", proxy.addr))
        .arg(CLIENTS.to_string())
        .arg(CALLS.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    // Every call has its own 60 s limit inside the peer; this bounds the lot.
    let output = tokio::time::timeout(Duration::from_secs(600), child.wait_with_output()).await??;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let tally = stdout
        .lines()
        .find_map(|l| l.strip_prefix("tally "))
        .and_then(|t| serde_json::from_str(t).ok())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no tally ({}):\n{stdout}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )
        })?;
    Ok((tally, proxy.cuts()))
}

fn assert_churn(peer: &str, tally: &serde_json::Value, cuts: usize) {
    eprintln!("{peer} under churn: {tally} ({cuts} connections cut)");
    assert!(cuts > 0, "{peer}: the proxy never cut a connection");
    assert_eq!(tally["calls"], 48, "{peer}: {tally}");
    // A POST whose connection is cut before any response byte leaves the
    // client no cursor; the TypeScript SDK does not retry it. Such calls are
    // tallied apart ("unsent"), bounded, and every other call must be whole.
    // Likewise a handshake POST cut in transit: neither SDK sends it again
    // (the fork's client does), so the peer connects anew; bounded too.
    let handshakes_lost = tally["handshakes_lost"].as_u64().unwrap_or(0);
    assert!(
        handshakes_lost <= 2,
        "{peer}: too many handshakes lost: {tally}"
    );
    let unsent = tally["unsent"].as_u64().unwrap_or(0);
    assert!(
        unsent <= 2,
        "{peer}: too many POSTs lost before a response: {tally}"
    );
    assert_eq!(
        tally["whole"].as_u64().map(|whole| whole + unsent),
        Some(48),
        "{peer}: every call whole: {tally}"
    );
}

/// The TypeScript SDK's clients (which wait the server's `retry` before each
/// resume) under the churn soak's cuts: the fork's server keeps their cursors
/// for twice `retry`, so every call completes whole.
#[tokio::test]
async fn typescript_sdk_clients_complete_every_call_under_churn() -> anyhow::Result<()> {
    let dir = peers();
    require(
        dir.join("node_modules/@modelcontextprotocol/sdk"),
        "@modelcontextprotocol/sdk",
    )?;
    let (tally, cuts) = churn_peer(PathBuf::from("node"), &[dir.join("ts_churn.mjs")], 1).await?;
    assert_churn("typescript", &tally, cuts);
    Ok(())
}

/// The same with the Python SDK's clients.
#[tokio::test]
async fn python_sdk_clients_complete_every_call_under_churn() -> anyhow::Result<()> {
    let dir = peers();
    let python = require(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/peers-venv/bin/python"),
        "the Python SDK (mcp) virtualenv",
    )?;
    let (tally, cuts) = churn_peer(python, &[dir.join("py_churn.py")], 1).await?;
    assert_churn("python", &tally, cuts);
    Ok(())
}

/// [`run_peer`]'s scenario across two instances sharing a redis-server: the
/// peer's `POST`s go to A (affinity) and its `GET`s, the resume included,
/// to B, which answers from Redis. Returns the peer's stdout and B's stats.
async fn run_peer_across_instances(
    program: PathBuf,
    args: &[PathBuf],
) -> anyhow::Result<(
    String,
    rmcp::transport::streamable_http_server::tower::ResumeStats,
)> {
    use rmcp_resume_redis::{RedisLog, RedisLogConfig, RedisShared};
    use rmcp_resume_testkit::redis::{RedisServer, SplitProxy};
    let redis = RedisServer::start();
    let instance = |owner: &'static str| {
        let url = redis.url();
        async move {
            let log = RedisLog::connect(&url, RedisLogConfig::default()).await?;
            TestServer::new(Side::Fork)
                .retry(Some(Duration::from_millis(200)))
                .shared_log(std::sync::Arc::new(RedisShared::new(log, owner)))
                .serve()
                .await
                .map_err(anyhow::Error::from)
        }
    };
    let (a, b) = (instance("a").await?, instance("b").await?);
    let split = SplitProxy::start(a.url.clone(), b.url.clone()).await?;
    let stdout = drive_peer(program, args, split.addr, &a.gate, &a.ct).await?;
    let stats = b
        .resume_stats()
        .ok_or_else(|| anyhow::anyhow!("a fork server counts its resumes"))?;
    Ok((stdout, stats))
}

#[tokio::test]
async fn typescript_sdk_client_resumes_a_cut_call_on_another_instance() -> anyhow::Result<()> {
    let (program, script) = typescript_client()?;
    let (stdout, stats) = run_peer_across_instances(program, &[script]).await?;
    assert_scenario(&stdout);
    assert!(stdout.contains("unexpected-errors: 0"), "{stdout}");
    assert!(
        stats.replayed >= 1,
        "B answered the resume from Redis: {stats:?}"
    );
    Ok(())
}

#[tokio::test]
async fn python_sdk_client_resumes_a_cut_call_on_another_instance() -> anyhow::Result<()> {
    let (program, script) = python_client()?;
    let (stdout, stats) = run_peer_across_instances(program, &[script]).await?;
    assert_scenario(&stdout);
    assert!(
        stats.replayed >= 1,
        "B answered the resume from Redis: {stats:?}"
    );
    Ok(())
}

/// The fork's client in its default configuration (`from_uri`) against the
/// TypeScript SDK 1.32.2 server, with upstream's client beside it for the
/// record: `quiet 45000` (one progress, 45 s of silence, another progress,
/// the answer) through `path`, cut once `cut` after the first progress if
/// given. The fork must answer whole; the record goes to
/// `target/peer-matrix/<row>.json`, a row of the peer matrix's table.
async fn quiet_45s(
    row: &'static str,
    label: &'static str,
    shape: &'static str,
    path: matrix::PathKind,
    cut: Option<Duration>,
) -> anyhow::Result<()> {
    let dir = peers();
    require(
        dir.join("node_modules/@modelcontextprotocol/sdk"),
        "@modelcontextprotocol/sdk",
    )?;
    let node = require(
        dir.join("node_modules/node/bin/node"),
        "node 22 (npm package `node`)",
    )?;
    let server = matrix::spawn_peer(&node, &dir.join("ts_server.mjs"), &[]).await?;
    let plan = matrix::Plan {
        path,
        calls: vec![matrix::quiet(45_000)],
        cut_after_first_progress: cut,
        limit: LIMIT,
        server: matrix::Delivers::Everything,
        // 45 s: one cut, or a close every 20 s, of the call's stream and
        // the standalone stream; room for a server's `409`s, far below a
        // reconnect loop's.
        max_gets: 12,
        ticks: None,
        together: false,
        samplings: 0,
        settle: Duration::ZERO,
    };
    let cell = matrix::run_cell(shape, server.addr, &plan, matrix::ForkConfig::Default).await;
    let record = matrix::RowRecord {
        row,
        label,
        cells: vec![cell],
    };
    let records = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/peer-matrix");
    matrix::write_record(&records, &record)?;
    matrix::report(&record)
}

/// One cut, 1 s into the 45 s of silence: the call answers with both
/// progress values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_client_answers_a_45s_quiet_call_cut_once_by_the_typescript_sdk_server()
-> anyhow::Result<()> {
    quiet_45s(
        "typescript-1.32.2-45s-cut",
        "TypeScript SDK 1.32.2: `quiet 45000`, cut once; the fork's default config",
        "quiet",
        matrix::PathKind::Plain,
        Some(Duration::from_secs(1)),
    )
    .await
}

/// The same call through a proxy that closes every connection 20 s after
/// it opened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_client_answers_a_45s_quiet_call_through_a_20s_connection_lifetime()
-> anyhow::Result<()> {
    quiet_45s(
        "typescript-1.32.2-45s-lifetime",
        "TypeScript SDK 1.32.2: `quiet 45000`, 20 s connection lifetime; the fork's default config",
        "lifetime",
        matrix::PathKind::Lifetime(Duration::from_secs(20)),
        None,
    )
    .await
}
