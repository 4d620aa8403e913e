// The failure modes of one 0.x line of rmcp, shared by
// `tests/failure_modes_0_17.rs`, `_0_16.rs` and `_0_15.rs`, which
// `include!` it after naming the line's crates: `line_rmcp` (its overlay),
// `line_kit` (its testkit), `line_reqwest` (the reqwest its upstream is
// built on) and `UPSTREAM` (the release, for messages). Each 0.x line has
// the same proofs: the wedge of the original report ends within the budget
// (at most 3 resume requests in 20 s), the call answers or fails with an
// error naming its cursor, a cut request stream resumes, and a gap is
// reported once; upstream under the same wedge leaves the call pending.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use line_rmcp::ServiceExt;
use line_rmcp::model::CallToolRequestParams;
use line_rmcp::service::{RoleClient, RunningService, ServiceError};
use line_rmcp::transport::common::client_side_sse::{Discontinuity, ResumeConfig};
use line_rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, resume_failure,
};
use line_kit::progress::ProgressRecorder;
use line_kit::scenario::{self, Ending, World, cut_call};
use line_kit::{Side, TestServer};
use serde_json::json;

type Client = RunningService<RoleClient, ProgressRecorder>;

/// How long upstream's side is watched for a loop or a hang.
const WINDOW: Duration = Duration::from_secs(5);
/// How long the fork's side is watched for resumes: the budget is
/// at most 3 in this time.
const BUDGET_WATCH: Duration = Duration::from_secs(20);
/// Most resume requests the fork may spend in `BUDGET_WATCH`.
const BUDGET: usize = 3;
/// The `retry` both servers prime with, so that loops show quickly.
const RETRY: Duration = Duration::from_millis(200);
/// What must end ends within this.
const LIMIT: Duration = Duration::from_secs(60);
/// Ticks `tick://1..=TICKS` on the standalone stream.
const TICKS: u32 = 300;

fn endpoint(world: &World) -> String {
    format!("http://{}/mcp", world.proxy.addr)
}

fn tool(name: &str, arguments: serde_json::Value) -> anyhow::Result<CallToolRequestParams> {
    Ok(serde_json::from_value(
        json!({ "name": name, "arguments": arguments }),
    )?)
}

/// The session still serves a call.
async fn still_serves(client: &Client) -> anyhow::Result<()> {
    let call = tool("sum", json!({ "a": 20, "b": 22 }))?;
    let result = tokio::time::timeout(LIMIT, client.peer().call_tool(call)).await??;
    let body = serde_json::to_string(&result)?;
    anyhow::ensure!(body.contains("42"), "unexpected sum: {body}");
    Ok(())
}

/// A server of `server` whose resumes fail while its sessions live, and a
/// client of `client` whose standalone stream is cut at tick 3 and resumed.
async fn wedged_standalone(
    server: Side,
    client: Side,
) -> anyhow::Result<(World, Client, ProgressRecorder)> {
    let server = TestServer::new(server)
        .window(16)
        .retry(Some(RETRY))
        .wedged_resumes();
    let world = scenario::world_of(server, "tick://3\"").await?;
    let recorder = ProgressRecorder::default();
    let running = scenario::connect(client, recorder.clone(), endpoint(&world)).await?;
    let marker = world.proxy.marker_seen();
    running
        .peer()
        .call_tool(tool("tick", json!({ "count": TICKS, "interval_ms": 2 }))?)
        .await?;
    tokio::time::timeout(LIMIT, marker).await?;
    world.proxy.cut();
    tokio::time::timeout(LIMIT, world.proxy.resume_seen()).await?;
    Ok((world, running, recorder))
}

/// Waits until `world`'s proxy has seen `count` resumes, for at most `watch`.
async fn resumes_reach(world: &World, count: usize, watch: Duration) -> bool {
    tokio::time::timeout(watch, async {
        while world.proxy.resumes() < count {
            world.proxy.resume_seen().await;
        }
    })
    .await
    .is_ok()
}

#[tokio::test]
async fn wedged_standalone_fork_reopens_and_stays_in_budget() -> anyhow::Result<()> {
    let (world, client, recorder) = wedged_standalone(Side::Fork, Side::Fork).await?;
    // A fresh standalone stream answers the failed resume (its notice says
    // `complete:false`), and the later ticks come on it.
    let ticks = recorder.until_tick(TICKS, LIMIT).await;
    assert!(ticks.contains(&TICKS), "no tick after the cut: {ticks:?}");
    still_serves(&client).await?;
    assert!(
        !resumes_reach(&world, BUDGET + 1, BUDGET_WATCH).await,
        "{} resumes in {BUDGET_WATCH:?}",
        world.proxy.resumes()
    );
    Ok(())
}

#[tokio::test]
async fn wedged_standalone_fork_client_stops_against_upstream() -> anyhow::Result<()> {
    let (world, client, _) = wedged_standalone(Side::Upstream, Side::Fork).await?;
    // Upstream's server answers the resume `500`: a failed resume (issue
    // #42; it was once taken for an unreachable server, and the cursor kept
    // for ever). After `max_failed_resumes` (3) of them the client reports
    // the loss and reopens the standalone stream without the cursor, while
    // the session goes on serving calls.
    still_serves(&client).await?;
    assert!(
        !resumes_reach(&world, BUDGET + 2, BUDGET_WATCH).await,
        "{} resumes in {BUDGET_WATCH:?}",
        world.proxy.resumes()
    );
    still_serves(&client).await?;
    Ok(())
}

/// The wedge on a request stream: the call's connection is cut at
/// its first progress event, the tool answers while nothing is connected,
/// and the server's resumes fail while the session lives.
async fn wedged_call(side: Side, watch: Duration) -> anyhow::Result<(World, Ending)> {
    let server = TestServer::new(side)
        .window(16)
        .retry(Some(RETRY))
        .wedged_resumes();
    let world = scenario::world_of(server, "notifications/progress").await?;
    let (ending, _) = cut_call(side, &world, "work", 2, watch).await?;
    Ok((world, ending))
}

#[tokio::test]
async fn wedged_call_upstream_stays_pending() -> anyhow::Result<()> {
    let (_world, ending) = wedged_call(Side::Upstream, WINDOW).await?;
    assert!(
        matches!(ending, Ending::StillWaiting),
        "upstream {UPSTREAM} was expected to leave the call pending: {ending:?}"
    );
    Ok(())
}

#[tokio::test]
async fn wedged_call_fork_fails_clearly_within_budget() -> anyhow::Result<()> {
    let started = tokio::time::Instant::now();
    let (world, ending) = wedged_call(Side::Fork, LIMIT).await?;
    eprintln!(
        "the fork under the wedge: {ending:?}, {} resumes",
        world.proxy.resumes()
    );
    match ending {
        // Whichever way it ends, it ends: answered, or an error that names
        // the cursor it could not resume.
        Ending::Answered(Ok(text)) => assert_eq!(text, "finished 2 steps"),
        Ending::Answered(Err(ServiceError::McpError(error))) => {
            let failure = resume_failure(&ServiceError::McpError(error.clone()));
            assert!(failure.is_some(), "not a resume failure: {error:?}");
        }
        other => anyhow::bail!("the call neither answered nor failed clearly: {other:?}"),
    }
    let remaining = BUDGET_WATCH.saturating_sub(started.elapsed());
    assert!(
        !resumes_reach(&world, BUDGET + 1, remaining).await,
        "{} resumes in {BUDGET_WATCH:?}",
        world.proxy.resumes()
    );
    Ok(())
}

#[tokio::test]
async fn cut_call_fork_resumes_and_answers() -> anyhow::Result<()> {
    let world = scenario::world(Side::Fork, 16, Some(RETRY)).await?;
    let (ending, progress) = cut_call(Side::Fork, &world, "work", 2, LIMIT).await?;
    match ending {
        Ending::Answered(Ok(text)) => assert_eq!(text, "finished 2 steps"),
        other => anyhow::bail!("expected the response: {other:?}"),
    }
    assert_eq!(progress, 2);
    assert!(
        world.proxy.resumes() <= BUDGET,
        "{} resumes",
        world.proxy.resumes()
    );
    Ok(())
}

/// A server of `side` whose proxy cuts the standalone stream at tick 10 and
/// refuses the first resume, so that more than the 16-event window passes
/// before the client is back. Returns the ticks that arrived and the gaps
/// the fork's client reported.
async fn ticks_over_a_gap(side: Side) -> anyhow::Result<(Vec<u32>, Vec<Discontinuity>)> {
    let server = TestServer::new(side).window(16).retry(Some(RETRY));
    let world = scenario::world_of(server, "tick://10\"").await?;
    let recorder = ProgressRecorder::default();
    let gaps: Arc<Mutex<Vec<Discontinuity>>> = Arc::default();
    let client = match side {
        Side::Upstream => scenario::connect(side, recorder.clone(), endpoint(&world)).await?,
        Side::Fork => {
            let sink = gaps.clone();
            let resume = ResumeConfig::default().on_discontinuity(move |gap| {
                sink.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(gap.clone());
            });
            let transport = line_rmcp::transport::StreamableHttpClientTransport::with_resume_config(
                line_reqwest::Client::new(),
                StreamableHttpClientTransportConfig::with_uri(endpoint(&world)),
                resume,
            );
            recorder.clone().serve(transport).await?
        }
    };
    let marker = world.proxy.marker_seen();
    client
        .peer()
        .call_tool(tool("tick", json!({ "count": TICKS, "interval_ms": 2 }))?)
        .await?;
    tokio::time::timeout(LIMIT, marker).await?;
    world.proxy.refuse_gets(1);
    world.proxy.cut();
    let ticks = recorder.until_tick(TICKS, LIMIT).await;
    let gaps = gaps.lock().unwrap_or_else(|p| p.into_inner()).clone();
    drop(client);
    Ok((ticks, gaps))
}

fn lost(ticks: &[u32]) -> Vec<u32> {
    (1..=TICKS).filter(|n| !ticks.contains(n)).collect()
}

#[tokio::test]
async fn silent_gap_fork_is_reported_once() -> anyhow::Result<()> {
    let (ticks, gaps) = ticks_over_a_gap(Side::Fork).await?;
    assert!(ticks.contains(&TICKS), "never came back: {ticks:?}");
    assert!(!lost(&ticks).is_empty(), "the window kept everything");
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    let mut unique = ticks.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ticks.len(), "a tick came twice: {ticks:?}");
    Ok(())
}

#[tokio::test]
async fn leapfrog_fork_notifies_the_surviving_stream() -> anyhow::Result<()> {
    assert!(scenario::survivor_gets_notified(Side::Fork, WINDOW).await?);
    Ok(())
}
