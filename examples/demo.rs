//! The fix in action, side by side with upstream rmcp 3.11.0:
//! `cargo run --example demo`.
//!
//! 1. **A wedged stream.** A tool call's connections are cut after its first
//!    progress event; the tool answers while nobody is connected; the client
//!    resumes with `Last-Event-ID`. Upstream's server answers every resume
//!    with an empty `200`, its client counts that as success and resumes
//!    again, and the call never returns. The fork replays the response.
//! 2. **An evicted cursor.** The server keeps 4 events per stream; a client
//!    resumes its standalone stream from a cursor older than that. Upstream
//!    replays from the window's floor with a plain `200`, so events are lost
//!    and nobody is told. The fork replays the same events, but its first
//!    frame (`mcp-replay`) and the `mcp-replay-floor` header say which were
//!    lost; a request stream's cursor would be refused with `400`.
//!
//! Everything here is public API: rmcp's (`rmcp` is rmcp-resume, renamed;
//! `upstream` is crates.io's rmcp 3.11.0), axum's, reqwest's and sse-stream's.
//! The cut is an axum middleware that ends every open SSE response at once.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{
    CallToolRequestParams, ClientConfig, ProgressNotificationParam, RequestMetaObject,
    ServerCapabilities, ServerConfig,
};
use rmcp::{
    Peer, RoleServer, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router,
};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How long upstream's side is watched before the demo says it hangs.
const WATCH: Duration = Duration::from_secs(5);
/// The `retry` both servers send, so that loops show quickly.
const RETRY: Duration = Duration::from_millis(500);
/// The protocol revision the raw client of part 2 speaks.
const PROTOCOL: &str = "2025-11-25";

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Steps {
    /// How many progress notifications.
    steps: u32,
}

/// The tools both servers run, unchanged: the same handler type implements
/// upstream's `ServerHandler`, because the fork re-exports upstream's traits.
#[derive(Debug, Clone)]
struct Tools {
    tool_router: ToolRouter<Self>,
    /// Notified when a tool has answered.
    answered: Arc<Notify>,
}

#[tool_router]
impl Tools {
    fn new(answered: Arc<Notify>) -> Self {
        Self {
            tool_router: Self::tool_router(),
            answered,
        }
    }

    #[tool(description = "Send `steps` tools/list_changed notifications on the standalone stream")]
    async fn announce(
        &self,
        peer: Peer<RoleServer>,
        Parameters(Steps { steps }): Parameters<Steps>,
    ) -> String {
        for _ in 0..steps {
            let _ = peer.notify_tool_list_changed().await;
        }
        format!("announced {steps}")
    }

    #[tool(description = "Report `steps` progress notifications, then answer")]
    async fn report(
        &self,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        Parameters(Steps { steps }): Parameters<Steps>,
    ) -> String {
        for step in 1..=steps {
            if let Some(token) = meta.get_progress_token() {
                let progress = ProgressNotificationParam::new(token, f64::from(step));
                let _ = peer.notify_progress(progress).await;
            }
        }
        // Long enough for the cut to land before the answer exists.
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.answered.notify_one();
        format!("reported {steps} steps")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// One resume as the network saw it.
#[derive(Debug, Default, Clone)]
struct Resume {
    cursor: String,
    status: u16,
    bytes: usize,
}

/// The network between client and server: cuts on demand, and watches resumes.
#[derive(Clone, Default)]
struct Wire {
    /// Every SSE response open when this fires ends at once.
    cut: Arc<Mutex<CancellationToken>>,
    /// Cut when the first progress event goes out.
    cut_on_progress: Arc<AtomicBool>,
    resumes: Arc<Mutex<Vec<Resume>>>,
}

impl Wire {
    fn cut_now(&self) {
        if let Ok(mut cut) = self.cut.lock() {
            cut.cancel();
            *cut = CancellationToken::new();
        }
    }

    fn resumes(&self) -> Vec<Resume> {
        self.resumes.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

async fn network(State(wire): State<Wire>, request: Request, next: Next) -> Response {
    let cursor = request
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let response = next.run(request).await;
    let record = cursor.map(|cursor| {
        let mut resumes = wire.resumes.lock().unwrap_or_else(|p| p.into_inner());
        resumes.push(Resume {
            cursor,
            status: response.status().as_u16(),
            bytes: 0,
        });
        resumes.len() - 1
    });
    let cut = wire.cut.lock().map(|c| c.clone()).unwrap_or_default();
    let (parts, body) = response.into_parts();
    let watched = wire.clone();
    let body = body
        .into_data_stream()
        .take_until(cut.cancelled_owned())
        .inspect(move |chunk| {
            let Ok(chunk) = chunk else { return };
            if let (Some(at), Ok(mut resumes)) = (record, watched.resumes.lock())
                && let Some(resume) = resumes.get_mut(at)
            {
                resume.bytes += chunk.len();
            }
            let progress = chunk
                .windows(b"notifications/progress".len())
                .any(|w| w == b"notifications/progress");
            if progress && watched.cut_on_progress.swap(false, Ordering::SeqCst) {
                watched.cut_now();
            }
        });
    Response::from_parts(parts, axum::body::Body::from_stream(body))
}

/// Serves `service` at `/mcp` behind the [`Wire`]; returns the URL.
async fn serve<S>(service: S, wire: &Wire, ct: &CancellationToken) -> anyhow::Result<String>
where
    S: tower_service::Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Response: axum::response::IntoResponse,
    S::Future: Send + 'static,
{
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(wire.clone(), network));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let ct = ct.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(ct.cancelled_owned())
            .await;
    });
    Ok(url)
}

/// A window of exactly `events` events. The fork also keeps every event of
/// the last few seconds (twice `retry`); the demo turns that off so both
/// sides evict at the same count, and the difference is what each says.
trait StrictWindow {
    fn strict_window(&mut self, events: usize);
}

impl StrictWindow for rmcp::transport::streamable_http_server::session::local::SessionConfig {
    fn strict_window(&mut self, events: usize) {
        self.channel_capacity = events;
        self.max_replay_events = events;
        self.replay_retention = Some(Duration::ZERO);
    }
}

impl StrictWindow for upstream::transport::streamable_http_server::session::local::SessionConfig {
    fn strict_window(&mut self, events: usize) {
        self.channel_capacity = events;
    }
}

/// The same server on each side: a replay window of `window` events.
macro_rules! server {
    ($krate:ident, $window:expr, $answered:expr, $ct:expr) => {{
        use $krate::transport::streamable_http_server::session::local::LocalSessionManager;
        let mut manager = LocalSessionManager::default();
        manager.session_config.strict_window($window);
        // Request streams prime with the session's `retry`.
        manager.session_config.sse_retry = Some(RETRY);
        let config = $krate::transport::StreamableHttpServerConfig::default()
            .with_sse_retry(Some(RETRY))
            .with_cancellation_token($ct.child_token());
        let answered = $answered.clone();
        $krate::transport::StreamableHttpService::new(
            move || Ok(Tools::new(answered.clone())),
            Arc::new(manager),
            config,
        )
    }};
}

fn report(steps: u32) -> anyhow::Result<CallToolRequestParams> {
    Ok(serde_json::from_value(json!({
        "name": "report",
        "arguments": { "steps": steps },
        "_meta": { "progressToken": "demo" }
    }))?)
}

fn describe(resumes: &[Resume]) -> String {
    let mut lines: Vec<String> = resumes
        .iter()
        .take(4)
        .map(|r| {
            format!(
                "    GET Last-Event-ID: {} -> {} ({} bytes)",
                r.cursor, r.status, r.bytes
            )
        })
        .collect();
    if resumes.len() > 4 {
        lines.push(format!("    … {} more, the same", resumes.len() - 4));
    }
    lines.join("\n")
}

/// Part 1 on one side: `$krate` is the server's and the client's crate.
macro_rules! wedged {
    ($name:literal, $krate:ident) => {{
        let ct = CancellationToken::new();
        let (wire, answered) = (Wire::default(), Arc::new(Notify::new()));
        let url = serve(server!($krate, 16, answered, ct), &wire, &ct).await?;
        let client = ClientConfig::default()
            .serve($krate::transport::StreamableHttpClientTransport::from_uri(
                url,
            ))
            .await?;
        wire.cut_on_progress.store(true, Ordering::SeqCst);
        let started = Instant::now();
        let call = client.peer().call_tool(report(1)?);
        let outcome = tokio::time::timeout(WATCH, call).await;
        let resumes = wire.resumes();
        match outcome {
            Ok(Ok(result)) => {
                let text = result
                    .content
                    .first()
                    .and_then(|c| c.as_text())
                    .map(|t| t.text.clone());
                println!(
                    "  {:<8} answered {:?} after {} ms, {} resume(s):",
                    $name,
                    text.unwrap_or_default(),
                    started.elapsed().as_millis(),
                    resumes.len()
                );
            }
            Ok(Err(error)) => println!(
                "  {:<8} failed after {} ms: {error}",
                $name,
                started.elapsed().as_millis()
            ),
            Err(_) => println!(
                "  {:<8} still waiting after {} s, {} resumes:",
                $name,
                WATCH.as_secs(),
                resumes.len()
            ),
        }
        println!("{}", describe(&resumes));
        ct.cancel();
    }};
}

/// A raw MCP session (part 2 needs to choose its own `Last-Event-ID`).
struct Raw {
    http: reqwest::Client,
    url: String,
    session: String,
}

impl Raw {
    async fn post(&self, session: Option<&str>, body: Value) -> anyhow::Result<reqwest::Response> {
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL)
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        Ok(request.send().await?)
    }

    /// Calls `tool` with `steps` and reads its answer.
    async fn call(&self, id: u64, tool: &str, steps: u32) -> anyhow::Result<()> {
        let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool, "arguments": { "steps": steps } } });
        self.post(Some(&self.session), call).await?.bytes().await?;
        Ok(())
    }

    /// Opens the standalone stream, resuming from `cursor` when given.
    async fn get(&self, cursor: Option<&str>) -> anyhow::Result<reqwest::Response> {
        let mut request = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", PROTOCOL)
            .header("mcp-session-id", &self.session);
        if let Some(cursor) = cursor {
            request = request.header("last-event-id", cursor);
        }
        Ok(request.send().await?)
    }

    async fn open(url: &str) -> anyhow::Result<Self> {
        let mut raw = Self {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            session: String::new(),
        };
        let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": { "name": "demo", "version": "0" } } });
        let response = raw.post(None, init).await?;
        raw.session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| anyhow::anyhow!("no session id"))?
            .to_owned();
        response.bytes().await?;
        let ready = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        raw.post(Some(&raw.session), ready).await?;
        Ok(raw)
    }

    fn events(response: reqwest::Response) -> impl futures::Stream<Item = sse_stream::Sse> {
        sse_stream::SseStream::from_bytes_stream(response.bytes_stream())
            .filter_map(|frame| async move { frame.ok() })
    }
}

/// Part 2 on one side.
macro_rules! evicted {
    ($name:literal, $krate:ident) => {{
        let ct = CancellationToken::new();
        let (wire, answered) = (Wire::default(), Arc::new(Notify::new()));
        let url = serve(server!($krate, 4, answered, ct), &wire, &ct).await?;
        let raw = Raw::open(&url).await?;
        // The standalone stream sees one notification; its id is the cursor.
        let cursor = {
            let listening = raw.get(None).await?;
            raw.call(1, "announce", 1).await?;
            let mut events = std::pin::pin!(Raw::events(listening));
            let mut cursor = None;
            while let Some(event) = events.next().await {
                if event
                    .data
                    .as_deref()
                    .is_some_and(|d| d.contains("list_changed"))
                {
                    cursor = event.id;
                    break;
                }
            }
            cursor.ok_or_else(|| anyhow::anyhow!("no notification"))?
        };
        // Gone; ten more are sent meanwhile, and only four are kept.
        raw.call(2, "announce", 10).await?;
        let resume = raw.get(Some(&cursor)).await?;
        let floor = resume
            .headers()
            .get("mcp-replay-floor")
            .and_then(|v| v.to_str().ok())
            .map_or_else(|| "none".to_owned(), str::to_owned);
        println!(
            "  {:<8} GET Last-Event-ID: {cursor} -> {} (mcp-replay-floor: {floor})",
            $name,
            resume.status()
        );
        let frames: Vec<String> = Raw::events(resume)
            .take_until(tokio::time::sleep(Duration::from_millis(500)))
            .map(|e| match (e.event.as_deref(), e.id) {
                (Some("mcp-replay"), _) => format!("mcp-replay {}", e.data.unwrap_or_default()),
                (_, Some(id)) => format!("id {id}"),
                (_, None) => "no id".to_owned(),
            })
            .collect()
            .await;
        println!("           then: {}", frames.join(", "));
        ct.cancel();
    }};
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    println!(
        "{} {} over rmcp {}, against crates.io's rmcp {}\n",
        rmcp::fork::PACKAGE,
        rmcp::fork::FORK_VERSION,
        rmcp::fork::UPSTREAM_VERSION,
        rmcp::fork::UPSTREAM_VERSION
    );
    println!("1. A tool call's connections are cut after its first progress event;");
    println!("   it answers while nobody is connected, and the client resumes.");
    wedged!("upstream", upstream);
    wedged!("fork", rmcp);

    println!("\n2. The server keeps 4 events per stream. The client's standalone stream");
    println!("   saw one notification, went away while 10 more were sent, and resumes.");
    evicted!("upstream", upstream);
    evicted!("fork", rmcp);
    Ok(())
}
