//! `rmcp-resume-probe` against other SDKs' servers, each with its event
//! store: the TypeScript SDK's and the Python SDK's. Their verdicts are
//! asserted, so a change in a peer shows up here; each report is written to
//! `target/probe/`, from which `.ci/probe-table.py` makes docs/probe.md.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use rmcp_resume_probe::{Options, Report, Target, Verdict, checks, probe};
use tokio::io::AsyncBufReadExt;

const LIMIT: Duration = Duration::from_secs(60);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn require(path: PathBuf, what: &str) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(
        path.exists(),
        "{what} is not installed at {}: run `bash .ci/test`, which installs the peers",
        path.display()
    );
    Ok(path)
}

/// Starts `program script` (which prints `listening <port>`), probes it,
/// and saves the report as `target/probe/{name}.json`.
async fn probe_peer(name: &str, program: PathBuf, script: &str) -> anyhow::Result<Report> {
    let mut server = tokio::process::Command::new(program)
        .arg(root().join("tests/peers").join(script))
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
        .ok_or_else(|| anyhow::anyhow!("{name} printed nothing"))?;
    let port: u16 = line
        .strip_prefix("listening ")
        .and_then(|p| p.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("unexpected first line {line:?}"))?;
    let target = Target::new(
        &format!("http://127.0.0.1:{port}/mcp"),
        &[],
        Duration::from_secs(10),
    )?;
    let report = tokio::time::timeout(LIMIT, probe(&target, &peer_options(), &|_| {})).await??;
    save(name, &report)?;
    eprintln!("{}", report.to_text());
    Ok(report)
}

/// The options every server in the comparison is probed with (the same as
/// tests/probe.rs's).
fn peer_options() -> Options {
    Options {
        tool: Some((
            "stream".to_owned(),
            serde_json::json!({ "count": 40, "interval_ms": 20 }),
        )),
        notify: Some(("announce".to_owned(), serde_json::json!({ "count": 1 }))),
        hold: Duration::from_secs(1),
        quiet: Duration::from_millis(1500),
        settle: Duration::from_secs(2),
    }
}

/// Writes `report` where `.ci/probe-table.py` reads it.
fn save(name: &str, report: &Report) -> anyhow::Result<()> {
    let dir = root().join("target/probe");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(format!("{name}.json")), report.to_json())?;
    Ok(())
}

fn verdicts(report: &Report) -> Vec<(&'static str, Verdict)> {
    report.checks.iter().map(|c| (c.id, c.verdict)).collect()
}

/// What both SDKs' servers do with their event stores (measured): resumes
/// of real cursors are exact, but a cursor they cannot serve gets an empty
/// `200`, no replay floor is ever declared, and a second GET is refused
/// with `409`. Their stores keep every event, so nothing is evicted to see.
fn expected_for_sdk_servers() -> Vec<(&'static str, Verdict)> {
    use Verdict::{Fail, NotChecked, Pass};
    vec![
        (checks::priming::ID, Pass),
        (checks::unbuffered::ID, Pass),
        (checks::malformed::ID, Fail),
        (checks::unknown::ID, Fail),
        (checks::request_resume::ID, Pass),
        (checks::strictly_after::ID, Pass),
        (checks::evicted::ID, NotChecked),
        (checks::two_gets::ID, Pass),
        (checks::sessions::DELETED, Pass),
        (checks::sessions::UNKNOWN, Pass),
        (checks::floor::ID, Fail),
        (checks::keep_alive::ID, Pass),
    ]
}

#[tokio::test]
async fn typescript_sdk_server_verdicts() -> anyhow::Result<()> {
    require(
        root().join("tests/peers/node_modules/@modelcontextprotocol/sdk"),
        "@modelcontextprotocol/sdk",
    )?;
    let report = probe_peer("typescript-sdk", PathBuf::from("node"), "ts_server.mjs").await?;
    // The TypeScript SDK's example store replays in the order of its ids,
    // `{stream}_{millisecond}_{random}`: events stored in the cursor's
    // millisecond sort before or after it by chance, and those before it are
    // never replayed. When that happens the probe sees the progress jump
    // with a 200 and no floor, and fails the check; otherwise nothing was
    // lost and it is not checked.
    let (evicted, others): (Vec<_>, Vec<_>) = verdicts(&report)
        .into_iter()
        .partition(|(id, _)| *id == checks::evicted::ID);
    let expected: Vec<_> = expected_for_sdk_servers()
        .into_iter()
        .filter(|(id, _)| *id != checks::evicted::ID)
        .collect();
    assert_eq!(others, expected);
    let check = report.get(checks::evicted::ID).expect("evicted-cursor ran");
    match evicted.first().map(|(_, v)| *v) {
        Some(Verdict::NotChecked) => {}
        Some(Verdict::Fail) => assert!(check.evidence.detail.contains("jumps"), "{check:#?}"),
        other => panic!("evicted-cursor: {other:?}: {check:#?}"),
    }
    Ok(())
}

#[tokio::test]
async fn python_sdk_server_verdicts() -> anyhow::Result<()> {
    let python = require(
        root().join("target/peers-venv/bin/python"),
        "the Python SDK (mcp) virtualenv",
    )?;
    let report = probe_peer("python-sdk", python, "py_server.py").await?;
    assert_eq!(verdicts(&report), expected_for_sdk_servers());
    Ok(())
}
