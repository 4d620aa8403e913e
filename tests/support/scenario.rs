//! The cut-call scenario behind the failure-mode tests and the wedged-stream
//! benchmark, written once for both sides: a server (upstream rmcp 3.11.0 or
//! the fork) behind a cuttable proxy, and a client of the same side.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientConfig, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::proxy::Proxy;
use crate::{DemoServer, serve_at};

/// Which implementation a scenario runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Upstream rmcp 3.11.0, client and server.
    Upstream,
    /// The overlay.
    Fork,
}

impl Side {
    /// Both sides, upstream first.
    pub const BOTH: [Side; 2] = [Side::Upstream, Side::Fork];

    /// `"upstream"` or `"fork"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Upstream => "upstream",
            Self::Fork => "fork",
        }
    }
}

/// Counts the progress notifications a client receives.
#[derive(Clone, Default)]
pub struct Progress(pub Arc<AtomicUsize>);

impl ClientHandler for Progress {
    async fn on_progress(&self, _: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

/// A server of one side behind a proxy that watches for progress.
pub struct World {
    /// The cuttable proxy clients connect through.
    pub proxy: Proxy,
    /// Opens the demo tools' gate.
    pub gate: Arc<Notify>,
    /// Notified when `work` (or `burst`) has produced everything.
    pub finished: Arc<Notify>,
    /// Ends the server and the proxy.
    pub ct: CancellationToken,
}

impl Drop for World {
    fn drop(&mut self) {
        self.ct.cancel();
    }
}

/// How a side's server is configured; the defaults keep the side's own.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// Events each stream retains (`SessionConfig::channel_capacity`).
    pub capacity: Option<usize>,
    /// The SSE `retry` sent in priming events.
    pub retry: Option<Duration>,
    /// Turn SSE keep-alive comments off.
    pub no_keep_alive: bool,
    /// Set `TCP_NODELAY` on accepted connections.
    pub nodelay: bool,
}

/// Serves `factory`'s handlers on a `side` server configured by `setup`, at
/// `/mcp` on 127.0.0.1:0 until `ct` is cancelled.
pub async fn serve_side(
    side: Side,
    factory: impl Fn() -> Result<DemoServer, std::io::Error> + Send + Sync + 'static,
    setup: &Setup,
    ct: &CancellationToken,
) -> std::io::Result<SocketAddr> {
    // The two sides' types differ, their configuration does not: the same
    // steps, once per crate.
    macro_rules! serve_on {
        ($krate:ident) => {{
            let mut manager =
                $krate::transport::streamable_http_server::session::local::LocalSessionManager::default();
            if let Some(capacity) = setup.capacity {
                manager.session_config.channel_capacity = capacity;
            }
            let mut config = $krate::transport::StreamableHttpServerConfig::default()
                .with_cancellation_token(ct.child_token());
            if setup.retry.is_some() {
                config = config.with_sse_retry(setup.retry);
            }
            if setup.no_keep_alive {
                config = config.with_sse_keep_alive(None);
            }
            let service =
                $krate::transport::StreamableHttpService::new(factory, Arc::new(manager), config);
            let addr = SocketAddr::from(([127, 0, 0, 1], 0));
            serve_at(addr, service, ct.clone(), setup.nodelay).await?
        }};
    }
    let served = match side {
        Side::Upstream => serve_on!(upstream),
        Side::Fork => serve_on!(rmcp),
    };
    Ok(served.0)
}

/// One server of `side` with a replay window of `capacity` events, sending
/// `retry` in its priming events (`None`: the side's default).
pub async fn world(side: Side, capacity: usize, retry: Option<Duration>) -> anyhow::Result<World> {
    let ct = CancellationToken::new();
    let (gate, finished) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (g, f) = (gate.clone(), finished.clone());
    let factory = move || Ok(DemoServer::with_signals(g.clone(), f.clone()));
    let setup = Setup {
        capacity: Some(capacity),
        retry,
        ..Setup::default()
    };
    let addr = serve_side(side, factory, &setup, &ct).await?;
    let proxy = Proxy::start(addr, "notifications/progress", ct.clone()).await?;
    Ok(World {
        proxy,
        gate,
        finished,
        ct,
    })
}

/// A client of `side` with `handler`, connected to `url`.
pub async fn connect<H: ClientHandler>(
    side: Side,
    handler: H,
    url: String,
) -> anyhow::Result<RunningService<RoleClient, H>> {
    Ok(match side {
        Side::Upstream => {
            handler
                .serve(upstream::transport::StreamableHttpClientTransport::from_uri(url))
                .await?
        }
        Side::Fork => {
            handler
                .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
                    url,
                ))
                .await?
        }
    })
}

/// A client of `side` connected to `world` through its proxy.
pub async fn client(
    side: Side,
    world: &World,
    progress: Progress,
) -> anyhow::Result<RunningService<RoleClient, Progress>> {
    connect(side, progress, format!("http://{}/mcp", world.proxy.addr)).await
}

/// `tools/call tool {count}` with a progress token.
pub fn call(tool: &str, count: u32) -> anyhow::Result<CallToolRequestParams> {
    Ok(serde_json::from_value(json!({
        "name": tool,
        "arguments": { "count": count },
        "_meta": { "progressToken": "p" }
    }))?)
}

/// How a cut call ended within the watch.
#[derive(Debug)]
pub enum Ending {
    /// The call returned (the text of its first content block, or the error).
    Answered(Result<String, ServiceError>),
    /// The call was still pending when the watch ended.
    StillWaiting,
}

/// Calls `tool`, cuts every connection at its first progress event, lets the
/// tool finish while nothing is connected, and watches the call for `watch`.
/// Returns how it ended and how many progress notifications arrived.
pub async fn cut_call(
    side: Side,
    world: &World,
    tool: &str,
    count: u32,
    watch: Duration,
) -> anyhow::Result<(Ending, usize)> {
    let progress = Progress::default();
    let client = client(side, world, progress.clone()).await?;
    let peer = client.peer().clone();
    let call = peer.call_tool(call(tool, count)?);
    let mut call = std::pin::pin!(call);
    tokio::select! {
        _ = world.proxy.marker_seen() => {}
        early = &mut call => anyhow::bail!("call ended before the cut: {early:?}"),
    }
    world.proxy.cut();
    world.gate.notify_one();
    world.finished.notified().await;
    if tool == "burst" {
        // Let the client resume while the request is still open, then let
        // the tool answer.
        world.proxy.resume_seen().await;
        world.gate.notify_one();
    }
    let ending = match tokio::time::timeout(watch, call).await {
        Ok(result) => Ending::Answered(result.map(|r| {
            r.content
                .first()
                .and_then(|c| c.as_text())
                .map(|t| t.text.clone())
                .unwrap_or_default()
        })),
        Err(_) => Ending::StillWaiting,
    };
    drop(client);
    Ok((ending, progress.0.load(Ordering::SeqCst)))
}
