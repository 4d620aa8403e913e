//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned in tests/peers) against the fork, server and client; the server
//! suite runs against both rmcp lines.
//!
//! Every run passes an empty `--expected-failures` baseline, so a WARNING
//! fails the scenario as a FAILURE does. The suite needs Node >= 22, which
//! the `node` npm package pins beside it; `bash .ci/test` installs both, and
//! a missing install fails these tests instead of skipping them.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp_resume_testkit::TestServer;
use serde_json::Value;

/// A bound on one suite run; the server suite takes about 5 s here.
const LIMIT: Duration = Duration::from_secs(300);

/// Server scenarios in `--suite all` of conformance 0.1.16.
const SERVER_SCENARIOS: usize = 32;

struct Suite {
    node: PathBuf,
    cli: PathBuf,
    out: PathBuf,
    baseline: PathBuf,
}

impl Suite {
    fn new(name: &str) -> anyhow::Result<Self> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let peers = root.join("tests/peers/node_modules");
        let node = peers.join("node/bin/node");
        let cli = peers.join("@modelcontextprotocol/conformance/dist/index.js");
        for (path, what) in [
            (&node, "node@22"),
            (&cli, "@modelcontextprotocol/conformance"),
        ] {
            anyhow::ensure!(
                path.exists(),
                "{what} is not installed at {}: run `bash .ci/test`, which installs the peers",
                path.display()
            );
        }
        let out = root.join("target/conformance").join(name);
        if out.exists() {
            std::fs::remove_dir_all(&out)?;
        }
        std::fs::create_dir_all(&out)?;
        // Empty: no scenario may fail, and no check may warn.
        let baseline = out.join("expected-failures.yml");
        std::fs::write(&baseline, "")?;
        Ok(Self {
            node,
            cli,
            out,
            baseline,
        })
    }

    /// Lists `scenarios` as the server failures the run expects: the suite
    /// then fails on any other failure, and on a listed one that passes.
    fn expecting_server_failures(self, scenarios: &[&str]) -> anyhow::Result<Self> {
        let mut yaml = String::from("server:\n");
        for scenario in scenarios {
            yaml.push_str(&format!("  - {scenario}\n"));
        }
        std::fs::write(&self.baseline, yaml)?;
        Ok(self)
    }

    async fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        let child = tokio::process::Command::new(&self.node)
            .arg(&self.cli)
            .args(args)
            .arg("--expected-failures")
            .arg(&self.baseline)
            .arg("-o")
            .arg(&self.out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let output = tokio::time::timeout(LIMIT, child.wait_with_output()).await??;
        let log = format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        anyhow::ensure!(
            output.status.success(),
            "conformance {args:?} failed ({}):\n{log}",
            output.status
        );
        Ok(log)
    }

    /// Every check the run recorded, by scenario directory.
    fn checks(&self) -> anyhow::Result<Vec<(String, Vec<Value>)>> {
        let mut scenarios = Vec::new();
        for entry in std::fs::read_dir(&self.out)? {
            let dir = entry?.path();
            let file = dir.join("checks.json");
            if !file.exists() {
                continue;
            }
            let checks: Vec<Value> = serde_json::from_slice(&std::fs::read(&file)?)?;
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            scenarios.push((name, checks));
        }
        scenarios.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(scenarios)
    }
}

fn status<'a>(checks: &'a [Value], id: &str) -> Vec<&'a str> {
    checks
        .iter()
        .filter(|c| c["id"] == id)
        .filter_map(|c| c["status"].as_str())
        .collect()
}

/// No check of any scenario is a FAILURE or a WARNING, and each scenario
/// succeeded at something.
fn assert_clean(scenarios: &[(String, Vec<Value>)]) {
    for (name, checks) in scenarios {
        let bad: Vec<_> = checks
            .iter()
            .filter(|c| matches!(c["status"].as_str(), Some("FAILURE" | "WARNING")))
            .map(|c| format!("{} {}: {}", c["id"], c["status"], c["errorMessage"]))
            .collect();
        assert!(bad.is_empty(), "{name}: {bad:#?}");
        assert!(
            checks.iter().any(|c| c["status"] == "SUCCESS"),
            "{name} recorded no SUCCESS: {checks:#?}"
        );
    }
}

/// Runs the whole server suite against `url`; every scenario must be clean,
/// and the SEP-1699 polling scenario must have had its response replayed on
/// the resuming GET. Returns the suite's log.
async fn server_suite(name: &str, url: &str) -> anyhow::Result<String> {
    let suite = Suite::new(name)?;
    let log = suite
        .run(&["server", "--url", url, "--suite", "all"])
        .await?;
    assert!(log.contains("0 failed"), "{log}");

    let scenarios = suite.checks()?;
    assert_eq!(scenarios.len(), SERVER_SCENARIOS, "{log}");
    assert_clean(&scenarios);

    // SEP-1699 polling: the tool closes its own stream and answers before
    // the client reconnects; the response must arrive on the resuming GET.
    // Upstream rmcp 3.11.0 answers that GET with an empty 200 (a WARNING).
    let (_, polling) = scenarios
        .iter()
        .find(|(name, _)| name.starts_with("server-server-sse-polling-"))
        .ok_or_else(|| anyhow::anyhow!("no server-sse-polling results:\n{log}"))?;
    assert_eq!(
        status(polling, "server-sse-disconnect-resume"),
        ["SUCCESS"],
        "{polling:#?}"
    );
    assert_eq!(status(polling, "server-sse-priming-event"), ["SUCCESS"]);
    assert_eq!(status(polling, "server-sse-retry-field"), ["SUCCESS"]);
    // The server really did cut the POST stream: its response came on the GET.
    let on_post = polling
        .iter()
        .any(|c| c["description"] == "Received tool response on POST stream");
    assert!(
        !on_post,
        "the response came on the POST stream: {polling:#?}"
    );
    Ok(log)
}

#[tokio::test]
async fn everything_server_passes_the_whole_server_suite() -> anyhow::Result<()> {
    let served = TestServer::everything().serve().await?;
    server_suite("server", &served.url).await?;
    let stats = served.resume_stats();
    assert!(stats.is_some_and(|stats| stats.replayed >= 1), "{stats:?}");
    Ok(())
}

/// The same suite, the same empty baseline, against the everything server
/// built on the 1.x line (`rmcp-resume-1` over rmcp 1.8.0).
#[tokio::test]
async fn everything_server_1_passes_the_whole_server_suite() -> anyhow::Result<()> {
    let served = rmcp_resume_testkit_1::TestServer::everything()
        .serve()
        .await?;
    server_suite("server-1", &served.url).await?;
    let stats = served.resume_stats();
    assert!(stats.is_some_and(|stats| stats.replayed >= 1), "{stats:?}");
    Ok(())
}

/// The same suite, the same empty baseline, against the everything server
/// built on the 2.x line (`rmcp-resume-2` over rmcp 2.2.0).
#[tokio::test]
async fn everything_server_2_passes_the_whole_server_suite() -> anyhow::Result<()> {
    let served = rmcp_resume_testkit_2::TestServer::everything()
        .serve()
        .await?;
    server_suite("server-2", &served.url).await?;
    let stats = served.resume_stats();
    assert!(stats.is_some_and(|stats| stats.replayed >= 1), "{stats:?}");
    Ok(())
}

/// What upstream 0.17.0 lacks that the server suite checks: the fork's
/// everything server fails these scenarios on the 0.17 line only.
const LACKING_0_17: [(&str, &str); 3] = [
    (
        "dns-rebinding-protection",
        "0.17's service has no Host or Origin validation (allowed_hosts came later)",
    ),
    (
        "elicitation-sep1330-enums",
        "0.17's elicitation schema has no legacy titled enum (enumNames)",
    ),
    (
        "prompts-get-embedded-resource",
        "0.17's prompt content cannot carry the suite's embedded resource",
    ),
];

/// The server suite against `url` with `lacking` as its baseline: exactly
/// those scenarios fail, every other is clean, and the SEP-1699 polling
/// response comes on the resuming GET.
async fn passes_but_what_it_lacks(
    name: &str,
    url: &str,
    lacking: &[(&str, &str)],
) -> anyhow::Result<()> {
    let lacking: Vec<&str> = lacking.iter().map(|(scenario, _)| *scenario).collect();
    let suite = Suite::new(name)?.expecting_server_failures(&lacking)?;
    let log = suite
        .run(&["server", "--url", url, "--suite", "all"])
        .await?;
    let scenarios = suite.checks()?;
    assert_eq!(scenarios.len(), SERVER_SCENARIOS, "{log}");
    let (lacked, rest): (Vec<_>, Vec<_>) = scenarios.into_iter().partition(|(name, _)| {
        lacking
            .iter()
            .any(|scenario| name.starts_with(&format!("server-{scenario}-")))
    });
    assert_eq!(lacked.len(), lacking.len(), "{log}");
    assert_clean(&rest);
    let (_, polling) = rest
        .iter()
        .find(|(name, _)| name.starts_with("server-server-sse-polling-"))
        .ok_or_else(|| anyhow::anyhow!("no server-sse-polling results:\n{log}"))?;
    assert_eq!(
        status(polling, "server-sse-disconnect-resume"),
        ["SUCCESS"],
        "{polling:#?}"
    );
    Ok(())
}

/// The same suite against the everything server built on the 0.17 line
/// (`rmcp-resume-0-17` over rmcp 0.17.0), with a baseline of exactly what
/// 0.17 lacks ([`LACKING_0_17`]).
#[tokio::test]
async fn everything_server_0_17_passes_the_server_suite_but_what_0_17_lacks() -> anyhow::Result<()>
{
    let served = rmcp_resume_testkit_0_17::TestServer::everything()
        .serve()
        .await?;
    passes_but_what_it_lacks("server-0-17", &served.url, &LACKING_0_17).await?;
    let stats = served.resume_stats();
    assert!(stats.is_some_and(|stats| stats.replayed >= 1), "{stats:?}");
    Ok(())
}

/// What upstream 0.16.0 lacks that the server suite checks: 0.17's three
/// ([`LACKING_0_17`]), and the defaults of string, integer and number fields
/// in an elicitation schema (0.17 added them; enum and boolean had them).
const LACKING_0_16: [(&str, &str); 4] = [
    (
        "elicitation-sep1034-defaults",
        "0.16's elicitation schema drops a string, integer or number field's default (0.17 added them)",
    ),
    (
        "dns-rebinding-protection",
        "0.16's service has no Host or Origin validation (allowed_hosts came later)",
    ),
    (
        "elicitation-sep1330-enums",
        "0.16's elicitation schema has no legacy titled enum (enumNames)",
    ),
    (
        "prompts-get-embedded-resource",
        "0.16's prompt content cannot carry the suite's embedded resource",
    ),
];

/// The same suite against the everything server built on the 0.16 line
/// (`rmcp-resume-0-16` over rmcp 0.16.0), with a baseline of exactly what
/// 0.16 lacks ([`LACKING_0_16`]).
#[tokio::test]
async fn everything_server_0_16_passes_the_server_suite_but_what_0_16_lacks() -> anyhow::Result<()>
{
    let served = rmcp_resume_testkit_0_16::TestServer::everything()
        .serve()
        .await?;
    passes_but_what_it_lacks("server-0-16", &served.url, &LACKING_0_16).await?;
    let stats = served.resume_stats();
    assert!(stats.is_some_and(|stats| stats.replayed >= 1), "{stats:?}");
    Ok(())
}

/// What upstream 0.15.0 lacks that the server suite checks: the same four
/// as 0.16 ([`LACKING_0_16`]), nothing more.
const LACKING_0_15: [(&str, &str); 4] = [
    (
        "elicitation-sep1034-defaults",
        "0.15's elicitation schema drops a string, integer or number field's default (0.17 added them)",
    ),
    (
        "dns-rebinding-protection",
        "0.15's service has no Host or Origin validation (allowed_hosts came later)",
    ),
    (
        "elicitation-sep1330-enums",
        "0.15's elicitation schema has no legacy titled enum (enumNames)",
    ),
    (
        "prompts-get-embedded-resource",
        "0.15's prompt content cannot carry the suite's embedded resource",
    ),
];

/// The same suite against the everything server built on the 0.15 line
/// (`rmcp-resume-0-15` over rmcp 0.15.0, the original report's release),
/// with a baseline of exactly what 0.15 lacks ([`LACKING_0_15`]).
#[tokio::test]
async fn everything_server_0_15_passes_the_server_suite_but_what_0_15_lacks() -> anyhow::Result<()>
{
    let served = rmcp_resume_testkit_0_15::TestServer::everything()
        .serve()
        .await?;
    passes_but_what_it_lacks("server-0-15", &served.url, &LACKING_0_15).await?;
    let stats = served.resume_stats();
    assert!(stats.is_some_and(|stats| stats.replayed >= 1), "{stats:?}");
    Ok(())
}

async fn client_scenario(scenario: &str, expected_checks: &[&str]) -> anyhow::Result<()> {
    let suite = Suite::new(&format!("client-{scenario}"))?;
    let command = env!("CARGO_BIN_EXE_conformance-client");
    suite
        .run(&["client", "--command", command, "--scenario", scenario])
        .await?;
    let scenarios = suite.checks()?;
    assert_eq!(scenarios.len(), 1, "{scenarios:#?}");
    assert_clean(&scenarios);
    let checks = &scenarios[0].1;
    for id in expected_checks {
        assert_eq!(status(checks, id), ["SUCCESS"], "{id}: {checks:#?}");
    }
    Ok(())
}

#[tokio::test]
async fn fork_client_passes_initialize() -> anyhow::Result<()> {
    client_scenario("initialize", &["mcp-client-initialization"]).await
}

#[tokio::test]
async fn fork_client_passes_tools_call() -> anyhow::Result<()> {
    client_scenario("tools_call", &["tool-add-numbers"]).await
}

#[tokio::test]
async fn fork_client_passes_sse_retry() -> anyhow::Result<()> {
    client_scenario(
        "sse-retry",
        &[
            "client-sse-graceful-reconnect",
            "client-sse-retry-timing",
            "client-sse-last-event-id",
        ],
    )
    .await
}

#[tokio::test]
async fn fork_client_passes_elicitation_defaults() -> anyhow::Result<()> {
    client_scenario(
        "elicitation-sep1034-client-defaults",
        &[
            "client-elicitation-sep1034-string-default",
            "client-elicitation-sep1034-integer-default",
            "client-elicitation-sep1034-number-default",
            "client-elicitation-sep1034-enum-default",
            "client-elicitation-sep1034-boolean-default",
        ],
    )
    .await
}
