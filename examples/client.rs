//! A client on rmcp-resume's public API: `cargo run --example client`, with
//! the `server` example running (`cargo run --example server`), or
//! `--url URL` for any MCP server with a `count_to` tool.
//!
//! It calls `count_to` with a progress token and prints each progress value.
//! Cut the connection while it counts (stop a proxy in between, restart a
//! load balancer): the stream is resumed with `Last-Event-ID` and the call
//! still answers. When a stream cannot be resumed, the call fails with a
//! typed [`ResumeFailure`](rmcp::transport::common::client_side_sse::ResumeFailure)
//! that says why and whether retrying may repeat the tool's effects.
//!
//! Options: `--url URL` (default `http://127.0.0.1:8000/mcp`), `--n N`
//! (default 50), `--interval-ms MS` (default 100).

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
use rmcp::service::NotificationContext;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ResumeConfig;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, resume_failure,
};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;

/// Prints every progress notification as it arrives.
#[derive(Debug, Clone, Default)]
struct Progress;

impl ClientHandler for Progress {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let total = params.total.map_or_else(String::new, |t| format!("/{t}"));
        println!("progress {}{total}", params.progress);
    }
}

fn option(name: &str) -> Option<String> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == name {
            return args.next();
        }
    }
    None
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = option("--url").unwrap_or_else(|| "http://127.0.0.1:8000/mcp".to_owned());
    let n: u32 = option("--n").map_or(Ok(50), |n| n.parse())?;
    let interval: u64 = option("--interval-ms").map_or(Ok(100), |ms| ms.parse())?;

    // fork: the resume knobs. Each wait and count has an end; docs/client.md
    // gives the defaults.
    let resume = ResumeConfig::default()
        .with_max_failed_resumes(3)
        .with_silent_resume_timeout(Duration::from_secs(10))
        // The standalone stream restarted and the server said which events
        // it could not replay: the client is told, never silently short.
        .on_discontinuity(|gap| eprintln!("standalone stream restarted: {gap}"));
    let transport = StreamableHttpClientTransport::with_resume_config(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(url.as_str()),
        resume,
    );
    let client = Progress.serve(transport).await?;

    let call: CallToolRequestParams = serde_json::from_value(json!({
        "name": "count_to",
        "arguments": { "n": n, "interval_ms": interval },
        "_meta": { "progressToken": "client-example" }
    }))?;
    match client.peer().call_tool(call).await {
        Ok(result) => {
            let text = result
                .content
                .first()
                .and_then(|c| c.as_text())
                .map(|t| t.text.clone())
                .unwrap_or_default();
            println!("answered: {text}");
        }
        Err(error) => match resume_failure(&error) {
            // fork: why the stream could not be resumed, the cursor, the
            // events known lost, and how many attempts were made.
            Some(failure) => {
                eprintln!(
                    "the call's stream could not be resumed: {:?} (cursor {:?}, lost {:?}, attempts {:?})",
                    failure.kind, failure.cursor, failure.lost, failure.attempts
                );
            }
            None => eprintln!("the call failed: {error}"),
        },
    }
    client.cancel().await?;
    Ok(())
}
