//! The failure modes on the rmcp 1.x line, each run twice with the same
//! scenario code: against upstream rmcp 1.8.0 (client and server), where the
//! bug must show, and against `rmcp-resume-1`, where it must not.
//!
//! 1.8.0 differs from 3.11.0 in how the bugs show: its client never resumes
//! a request (POST) stream, so a cut call hangs instead of looping; the loop
//! shows on the standalone stream, and so does the silent gap.
//!
//! Upstream's side is observed over a bounded window: a loop or a hang is
//! proven by what happens within it, and the window ends the test.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp_1::ServiceExt;
use rmcp_1::model::CallToolRequestParams;
use rmcp_1::service::{RoleClient, RunningService};
use rmcp_1::transport::common::client_side_sse::{Discontinuity, ResumeConfig};
use rmcp_1::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp_resume_testkit_1::progress::ProgressRecorder;
use rmcp_resume_testkit_1::scenario::{self, Ending, World, cut_call};
use rmcp_resume_testkit_1::{Side, TestServer};
use serde_json::json;

type Client = RunningService<RoleClient, ProgressRecorder>;

/// How long upstream's side is watched for a loop or a hang.
const WINDOW: Duration = Duration::from_secs(5);
/// Priming `retry` both servers send, so loops show quickly.
const RETRY: Duration = Duration::from_millis(200);
/// A bound on what must end.
const LIMIT: Duration = Duration::from_secs(60);

fn url(world: &World) -> String {
    format!("http://{}/mcp", world.proxy.addr)
}

fn call(name: &str, arguments: serde_json::Value) -> anyhow::Result<CallToolRequestParams> {
    Ok(serde_json::from_value(
        serde_json::json!({ "name": name, "arguments": arguments }),
    )?)
}

/// A client of `client` on a server of `server` whose resumes fail while the
/// session lives (the bug report's condition). Ticks flow on the standalone
/// stream, which is cut at tick 3, so that the client resumes it.
async fn wedged(server: Side, client: Side) -> anyhow::Result<(World, Client, ProgressRecorder)> {
    let server = TestServer::new(server)
        .window(16)
        .retry(Some(RETRY))
        .wedged_resumes();
    let world = scenario::world_of(server, "tick://3\"").await?;
    let recorder = ProgressRecorder::default();
    let running = scenario::connect(client, recorder.clone(), url(&world)).await?;
    let marker = world.proxy.marker_seen();
    let ticks = json!({ "count": COUNT, "interval_ms": 2 });
    running.peer().call_tool(call("tick", ticks)?).await?;
    tokio::time::timeout(LIMIT, marker).await?;
    world.proxy.cut();
    tokio::time::timeout(LIMIT, world.proxy.resume_seen()).await?;
    Ok((world, running, recorder))
}

/// The session still answers a call.
async fn answers(client: &Client) -> anyhow::Result<()> {
    let sum = call("sum", json!({ "a": 1, "b": 2 }))?;
    let result = tokio::time::timeout(LIMIT, client.peer().call_tool(sum)).await??;
    let text = serde_json::to_value(&result)?;
    anyhow::ensure!(text.to_string().contains('3'), "unexpected sum: {text}");
    Ok(())
}

#[tokio::test]
async fn wedged_standalone_upstream_1_resumes_without_end() -> anyhow::Result<()> {
    let (world, client, recorder) = wedged(Side::Upstream, Side::Upstream).await?;
    // Each resume gets an empty 200, which the client takes for a graceful
    // close: it comes back with the same cursor, the server's retry once,
    // then every second, for as long as the session lives.
    let counted = tokio::time::timeout(WINDOW, async {
        while world.proxy.resumes() < 4 {
            world.proxy.resume_seen().await;
        }
    })
    .await;
    assert!(
        counted.is_ok(),
        "only {} resumes in {WINDOW:?}",
        world.proxy.resumes()
    );
    assert!(
        !recorder.ticks().contains(&COUNT),
        "the wedged stream delivered"
    );
    drop(client);
    Ok(())
}

#[tokio::test]
async fn wedged_standalone_fork_1_reopens_the_stream_and_delivers() -> anyhow::Result<()> {
    let (world, client, recorder) = wedged(Side::Fork, Side::Fork).await?;
    // The fork's server answers the failed resume with a fresh standalone
    // stream (its first event says the replay is incomplete), so later ticks
    // arrive on it.
    let ticks = recorder.until_tick(COUNT, LIMIT).await;
    assert!(ticks.contains(&COUNT), "no tick after the cut: {ticks:?}");
    answers(&client).await?;
    assert!(
        world.proxy.resumes() <= 3,
        "{} resumes",
        world.proxy.resumes()
    );
    Ok(())
}

#[tokio::test]
async fn wedged_standalone_fork_client_1_stops_against_upstream_1() -> anyhow::Result<()> {
    let (world, client, _) = wedged(Side::Upstream, Side::Fork).await?;
    // Upstream's server keeps answering with empty 200s; the fork's client
    // counts them as failures, backs off, and gives up the standalone stream
    // while the session goes on answering calls.
    answers(&client).await?;
    // Watched as long as upstream's loop is: no loop.
    tokio::time::sleep(WINDOW).await;
    assert!(
        world.proxy.resumes() <= 3,
        "{} resumes in {WINDOW:?}",
        world.proxy.resumes()
    );
    answers(&client).await?;
    Ok(())
}

#[tokio::test]
async fn cut_request_stream_upstream_1_hangs() -> anyhow::Result<()> {
    let world = scenario::world(Side::Upstream, 16, Some(RETRY)).await?;
    let (ending, _) = cut_call(Side::Upstream, &world, "work", 2, WINDOW).await?;
    assert!(
        matches!(ending, Ending::StillWaiting),
        "upstream 1.8.0 was expected to hang: {ending:?}"
    );
    Ok(())
}

#[tokio::test]
async fn cut_request_stream_fork_1_resumes_and_answers() -> anyhow::Result<()> {
    let world = scenario::world(Side::Fork, 16, Some(RETRY)).await?;
    let (ending, progress) = cut_call(Side::Fork, &world, "work", 2, LIMIT).await?;
    match ending {
        Ending::Answered(Ok(text)) => assert_eq!(text, "finished 2 steps"),
        other => anyhow::bail!("expected the response: {other:?}"),
    }
    assert_eq!(progress, 2);
    assert!(
        world.proxy.resumes() <= 3,
        "{} resumes",
        world.proxy.resumes()
    );
    Ok(())
}

/// Ticks `tick://1..=COUNT` flow on the standalone stream; the stream is cut
/// at tick 10 and the first resume is lost in transit, so that more than the
/// 16-event window goes by before the client is back.
const COUNT: u32 = 300;

/// A server of `side` whose proxy cuts at tick 10, and a client of `side`.
/// Returns the ticks received once tick `COUNT` is in (or `LIMIT` passed),
/// and the discontinuities the fork's client reported.
async fn ticks_across_a_cut(side: Side) -> anyhow::Result<(Vec<u32>, Vec<Discontinuity>)> {
    let server = TestServer::new(side).window(16).retry(Some(RETRY));
    let world = scenario::world_of(server, "tick://10\"").await?;
    let recorder = ProgressRecorder::default();
    let reported: Arc<Mutex<Vec<Discontinuity>>> = Arc::default();
    let client = match side {
        Side::Upstream => scenario::connect(side, recorder.clone(), url(&world)).await?,
        Side::Fork => {
            let seen = reported.clone();
            let config = ResumeConfig::default().on_discontinuity(move |gap| {
                seen.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(gap.clone());
            });
            let transport = rmcp_1::transport::StreamableHttpClientTransport::with_resume_config(
                reqwest::Client::new(),
                StreamableHttpClientTransportConfig::with_uri(url(&world)),
                config,
            );
            recorder.clone().serve(transport).await?
        }
    };
    let tick = call("tick", json!({ "count": COUNT, "interval_ms": 2 }))?;
    let marker = world.proxy.marker_seen();
    client.peer().call_tool(tick).await?;
    tokio::time::timeout(LIMIT, marker).await?;
    world.proxy.refuse_gets(1);
    world.proxy.cut();
    let ticks = recorder.until_tick(COUNT, LIMIT).await;
    let reported = reported.lock().unwrap_or_else(|p| p.into_inner()).clone();
    drop(client);
    Ok((ticks, reported))
}

fn missing(ticks: &[u32]) -> Vec<u32> {
    (1..=COUNT).filter(|n| !ticks.contains(n)).collect()
}

#[tokio::test]
async fn silent_gap_upstream_1_loses_standalone_events_unreported() -> anyhow::Result<()> {
    let (ticks, _) = ticks_across_a_cut(Side::Upstream).await?;
    assert!(
        ticks.contains(&COUNT),
        "the stream never came back: {ticks:?}"
    );
    let lost = missing(&ticks);
    assert!(!lost.is_empty(), "no gap to show");
    assert!(
        lost.iter().all(|&n| n > 10),
        "lost before the cut: {lost:?}"
    );
    Ok(())
}

#[tokio::test]
async fn silent_gap_fork_1_reports_what_the_window_lost() -> anyhow::Result<()> {
    let (ticks, reported) = ticks_across_a_cut(Side::Fork).await?;
    assert!(
        ticks.contains(&COUNT),
        "the stream never came back: {ticks:?}"
    );
    let lost = missing(&ticks);
    // Every loss is reported: a discontinuity whose floor lies past the
    // cursor the client resumed from.
    assert!(
        !lost.is_empty(),
        "the window held everything; no gap to report"
    );
    assert_eq!(reported.len(), 1, "{reported:?}");
    let mut sorted = ticks.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), ticks.len(), "a tick arrived twice: {ticks:?}");
    Ok(())
}

#[tokio::test]
async fn leapfrog_upstream_1_loses_notifications_when_the_primary_goes() -> anyhow::Result<()> {
    assert!(
        !scenario::survivor_gets_notified(Side::Upstream, WINDOW).await?,
        "upstream 1.8.0 never promotes shadows"
    );
    Ok(())
}

#[tokio::test]
async fn leapfrog_fork_1_delivers_to_the_surviving_stream() -> anyhow::Result<()> {
    assert!(scenario::survivor_gets_notified(Side::Fork, WINDOW).await?);
    Ok(())
}

/// A client of `side` connects to the fork's server while the proxy loses
/// its first `initialize` (delivered, then the connection closed before any
/// answer), and calls a tool on the session it got.
async fn connect_through_a_lost_initialize(side: Side) -> anyhow::Result<()> {
    let world = scenario::world_of(TestServer::new(Side::Fork), "").await?;
    world.proxy.lose_posts("\"method\":\"initialize\"", 1);
    let recorder = ProgressRecorder::default();
    let client =
        tokio::time::timeout(LIMIT, scenario::connect(side, recorder, url(&world))).await??;
    answers(&client).await
}

#[tokio::test]
async fn lost_initialize_upstream_1_fails_the_connect() {
    let outcome = connect_through_a_lost_initialize(Side::Upstream).await;
    assert!(
        outcome.is_err(),
        "upstream 1.8.0 connected through the loss"
    );
}

#[tokio::test]
async fn lost_initialize_fork_1_is_sent_again_and_connects() -> anyhow::Result<()> {
    connect_through_a_lost_initialize(Side::Fork).await
}
