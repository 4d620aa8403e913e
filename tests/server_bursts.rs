//! A reader that keeps reading never loses an event, however fast its stream's
//! handler produces them: the handler waits for the reader instead of the
//! log evicting what the reader has not read.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp_resume_testkit::progress::ProgressRecorder;
use rmcp_resume_testkit::raw::{RawSession, SseReader};
use rmcp_resume_testkit::scenario::first_text;
use rmcp_resume_testkit::{Side, TestServer};
use serde_json::json;

/// Bound on one run, so a regression fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(120);

/// Runs of each 10,000-event case: `RMCP_RESUME_BURST_RUNS`, else 2 (CI runs
/// the 1,000-event burst 20 times; the closing notes give 20-run figures).
fn runs() -> usize {
    std::env::var("RMCP_RESUME_BURST_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2)
}

/// The window a burst runs against: the defaults (which hold a whole burst
/// of 1,000), or 16 events and nothing kept for time, so the handler must
/// wait for its reader every 16 events.
#[derive(Clone, Copy)]
enum Window {
    Default,
    Tight,
}

fn server(window: Window) -> TestServer {
    match window {
        Window::Default => TestServer::new(Side::Fork),
        Window::Tight => TestServer::new(Side::Fork).window(16),
    }
}

/// One `work` call streaming `count` progress notifications through the
/// fork's client and server; every value arrives, once.
async fn burst(count: u32, window: Window) -> anyhow::Result<()> {
    let served = server(window).serve().await?;
    // The tool answers as soon as its progress is out.
    served.gate.notify_one();
    let recorder = ProgressRecorder::default();
    let client = recorder
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(served.url.clone()))
        .await?;
    let params: CallToolRequestParams = serde_json::from_value(json!({
        "name": "work",
        "arguments": { "count": count },
        "_meta": { "progressToken": "burst" }
    }))?;
    let result = tokio::time::timeout(LIMIT, client.peer().call_tool(params)).await??;
    let text = first_text(&result);
    assert_eq!(text, Some(format!("finished {count} steps")));
    // Notifications ride the request's stream before its response.
    let mut seen: Vec<f64> = recorder
        .until(count as usize, LIMIT)
        .await
        .into_values()
        .flatten()
        .collect();
    seen.sort_by(f64::total_cmp);
    let expected: Vec<f64> = (1..=count).map(f64::from).collect();
    assert_eq!(seen, expected, "every progress value, once");
    client.cancel().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_1000_progress_notifications_arrives_complete() -> anyhow::Result<()> {
    for _ in 0..20 {
        burst(1_000, Window::Default).await?;
        burst(1_000, Window::Tight).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_10000_progress_notifications_arrives_complete() -> anyhow::Result<()> {
    for _ in 0..runs() {
        burst(10_000, Window::Default).await?;
        burst(10_000, Window::Tight).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_standalone_notifications_reach_a_reader_that_keeps_reading()
-> anyhow::Result<()> {
    for _ in 0..runs() {
        standalone(Window::Default).await?;
        standalone(Window::Tight).await?;
    }
    Ok(())
}

async fn standalone(window: Window) -> anyhow::Result<()> {
    const COUNT: usize = 10_000;
    let served = server(window).keep_alive(None).serve().await?;
    let mut session = RawSession::open(&served.url).await?;
    let listening = session.get(None).await?;
    assert_eq!(listening.status(), 200);
    let reader = tokio::spawn(async move {
        let mut reader = SseReader::new(listening);
        let mut ids = Vec::with_capacity(COUNT);
        while ids.len() < COUNT {
            let Some(frame) = reader.next().await? else {
                anyhow::bail!("the stream ended after {} notifications", ids.len());
            };
            if frame
                .json()
                .is_some_and(|j| j["method"] == "notifications/tools/list_changed")
            {
                ids.push(frame.id.unwrap_or_default());
            }
        }
        Ok::<_, anyhow::Error>(ids)
    });
    let (_, response) = session
        .call("announce", json!({ "count": COUNT }), false)
        .await?;
    let frames = SseReader::new(response).collect().await?;
    assert!(
        frames.iter().any(|f| f
            .json()
            .is_some_and(|j| j["result"]["content"][0]["text"] == format!("announced {COUNT}"))),
        "{frames:?}"
    );
    let ids = tokio::time::timeout(LIMIT, reader).await???;
    let expected: Vec<String> = (1..=COUNT).map(|i| i.to_string()).collect();
    assert_eq!(ids, expected, "every notification, once, in order");
    Ok(())
}
