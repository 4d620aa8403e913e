//! A reader that keeps reading never loses an event, however fast its stream's
//! handler produces them: the handler waits for the reader instead of the
//! log evicting what the reader has not read.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientConfig, ProgressNotificationParam};
use rmcp::service::NotificationContext;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use rmcp_resume_testkit::raw::{RawSession, SseReader};
use rmcp_resume_testkit::{Side, TestServer};
use serde_json::json;
use tokio::sync::Notify;

/// Bound on one run, so a regression fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(120);

/// Records every progress value. rmcp's client runs each notification's
/// handler in a task of its own, so the record's order is not the wire's.
/// A handler may still be running when the call returns, so `recorded`
/// is told of each one.
#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<f64>>>,
    recorded: Arc<Notify>,
}

impl Recorder {
    fn seen(&self) -> Vec<f64> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Waits until `count` values are recorded (or `LIMIT` passes).
    async fn until(&self, count: usize) -> Vec<f64> {
        let waiting = async {
            loop {
                let recorded = self.recorded.notified();
                if self.seen().len() >= count {
                    return;
                }
                recorded.await;
            }
        };
        let _ = tokio::time::timeout(LIMIT, waiting).await;
        self.seen()
    }
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        param: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(param.progress);
        }
        self.recorded.notify_waiters();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

/// One `work` call streaming `count` progress notifications through the
/// fork's client and server (default 16-event window); every value arrives,
/// once.
async fn burst(count: u32) -> anyhow::Result<()> {
    let served = TestServer::new(Side::Fork).serve().await?;
    // The tool answers as soon as its progress is out.
    served.gate.notify_one();
    let recorder = Recorder::default();
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
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone());
    assert_eq!(text, Some(format!("finished {count} steps")));
    // Notifications ride the request's stream before its response.
    let mut seen = recorder.until(count as usize).await;
    seen.sort_by(f64::total_cmp);
    let expected: Vec<f64> = (1..=count).map(f64::from).collect();
    assert_eq!(seen, expected, "every progress value, once");
    client.cancel().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_1000_progress_notifications_arrives_complete() -> anyhow::Result<()> {
    for _ in 0..20 {
        burst(1_000).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_10000_progress_notifications_arrives_complete() -> anyhow::Result<()> {
    burst(10_000).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_standalone_notifications_reach_a_reader_that_keeps_reading()
-> anyhow::Result<()> {
    const COUNT: usize = 10_000;
    let served = TestServer::new(Side::Fork).keep_alive(None).serve().await?;
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
