//! The fix in action, in one process: `cargo run --example demo`.
//!
//! 1. An rmcp client calls a tool on an rmcp-resume server (a plain round trip).
//! 2. A tool call's stream is cut after its progress events; the tool finishes
//!    while nobody is connected; a resume with `Last-Event-ID` delivers the
//!    missed progress and the response, after a notice declaring the replay
//!    complete. Upstream rmcp 3.11.0 answers that resume with an empty `200`.
//! 3. A cursor whose events were evicted is refused with `400` naming the
//!    cursor and the floor, instead of an empty `200` that loops forever.

use std::sync::Arc;

use rmcp::{
    ServiceExt,
    model::{CallToolRequestParams, ClientConfig},
    transport::StreamableHttpClientTransport,
    transport::resumption::{REPLAY_FLOOR_HEADER, REPLAY_NOTICE_EVENT},
    transport::streamable_http_server::{
        StreamableHttpServerConfig, session::local::SessionConfig,
    },
};
use rmcp_resume_e2e::raw::{Frame, RawSession, SseReader};
use rmcp_resume_e2e::{demo_service_with, serve_ephemeral};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

fn describe(frame: &Frame) -> String {
    if frame.event.as_deref() == Some(REPLAY_NOTICE_EVENT) {
        return format!("event: {REPLAY_NOTICE_EVENT}  {}", frame.data);
    }
    let id = frame.id.as_deref().unwrap_or("-");
    match frame.json() {
        None => format!("id: {id:<5} priming (retry {:?} ms)", frame.retry),
        Some(json) if json["method"] == "notifications/progress" => format!(
            "id: {id:<5} progress {}/{}",
            json["params"]["progress"], json["params"]["total"]
        ),
        Some(json) => format!(
            "id: {id:<5} response {}",
            json["result"]["content"][0]["text"]
        ),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let ct = CancellationToken::new();
    let gate = Arc::new(Notify::new());
    let mut session_config = SessionConfig::default();
    // A small replay window, so that part 3 can show an evicted cursor.
    session_config.channel_capacity = 8;
    let service = demo_service_with(
        gate.clone(),
        session_config,
        StreamableHttpServerConfig::default().with_cancellation_token(ct.child_token()),
    );
    let (addr, server) = serve_ephemeral(service.clone(), ct.clone()).await?;
    let url = format!("http://{addr}/mcp");
    println!(
        "server : {} {} listening on {url}",
        rmcp::fork::PACKAGE,
        rmcp::fork::FORK_VERSION
    );

    println!("\n-- 1. a plain round trip ------------------------------------------");
    let client = ClientConfig::default()
        .serve(StreamableHttpClientTransport::from_uri(url.as_str()))
        .await?;
    let info = client
        .call_tool(CallToolRequestParams::new("build_info"))
        .await?;
    let text = info
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone());
    println!(
        "client : tools/call build_info -> {}",
        text.unwrap_or_default()
    );
    client.cancel().await?;

    println!("\n-- 2. a response produced while the stream is cut -------------------");
    let mut session = RawSession::open(&url).await?;
    let (_, response) = session.call("work", json!({ "count": 3 }), true).await?;
    let mut reader = SseReader::new(response);
    let mut last_id = None;
    for _ in 0..4 {
        let Some(frame) = reader.next().await? else {
            break;
        };
        println!("  POST  {}", describe(&frame));
        last_id = frame.id.clone().or(last_id);
    }
    drop(reader);
    let cursor = last_id.unwrap_or_default();
    println!("  ---- connection cut after {cursor}; the tool finishes while nobody listens");
    gate.notify_one();
    let response = session.resume(&cursor).await?;
    let floor = response
        .headers()
        .get(REPLAY_FLOOR_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_owned();
    println!(
        "  GET   Last-Event-ID: {cursor} -> {} ({REPLAY_FLOOR_HEADER}: {floor})",
        response.status()
    );
    for frame in SseReader::new(response).collect().await? {
        println!("  GET   {}", describe(&frame));
    }

    println!("\n-- 3. a cursor the server can no longer honour -----------------------");
    let (_, response) = session.call("work", json!({ "count": 12 }), true).await?;
    let mut reader = SseReader::new(response);
    let mut first_progress = None;
    for _ in 0..13 {
        let Some(frame) = reader.next().await? else {
            break;
        };
        if first_progress.is_none() && frame.json().is_some() {
            first_progress = frame.id.clone();
        }
    }
    drop(reader);
    gate.notify_one();
    let stale = first_progress.unwrap_or_default();
    let response = session.resume(&stale).await?;
    println!("  GET   Last-Event-ID: {stale} -> {}", response.status());
    println!("        {}", response.text().await?);
    println!(
        "        (upstream rmcp 3.11.0: 200 with an empty stream, and its client reconnects every second)"
    );

    let stats = service.resume_stats();
    println!("\nserver : resume outcomes {stats:?}");
    ct.cancel();
    server.await?;
    Ok(())
}
