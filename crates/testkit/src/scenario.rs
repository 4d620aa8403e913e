//! The cut-call scenario behind the failure-mode tests and the wedged-stream
//! benchmark, written once for both sides: a server (upstream rmcp 3.11.0 or
//! the fork) behind a cuttable proxy, and a client of the same side.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::line::ClientConfig;
use crate::proxy::Proxy;
use crate::raw::{RawSession, SseReader};
use crate::server::{Side, TestServer};

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
    /// The server, kept alive as long as the world (a [`Served`](crate::Served), or the
    /// served value of another rmcp line's testkit).
    _server: Box<dyn std::any::Any + Send + Sync>,
}

impl Drop for World {
    fn drop(&mut self) {
        self.ct.cancel();
    }
}

/// One server of `side` with a replay window of `capacity` events, sending
/// `retry` in its priming events (`None`: the side's default).
pub async fn world(side: Side, capacity: usize, retry: Option<Duration>) -> anyhow::Result<World> {
    let mut server = TestServer::new(side).window(capacity);
    if let Some(retry) = retry {
        server = server.retry(Some(retry));
    }
    world_of(server, "notifications/progress").await
}

/// `server`, served behind a proxy whose marker is `marker`.
pub async fn world_of(server: TestServer, marker: &str) -> anyhow::Result<World> {
    let served = server.serve().await?;
    let signals = Signals {
        addr: served.addr,
        gate: served.gate.clone(),
        finished: served.finished.clone(),
        ct: served.ct.clone(),
    };
    world_around(signals, Box::new(served), marker).await
}

/// What a scenario needs of a running demo server, whichever testkit (and
/// so whichever rmcp line) started it.
#[derive(Clone, Debug)]
pub struct Signals {
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    /// Opens its demo tools' gate.
    pub gate: Arc<Notify>,
    /// Notified when its `work` (or `burst`) has produced everything.
    pub finished: Arc<Notify>,
    /// Stops it.
    pub ct: CancellationToken,
}

/// A world around a server started elsewhere (another line's testkit): a
/// proxy in front of `signals.addr` whose marker is `marker`. `server` is
/// kept alive as long as the world.
pub async fn world_around(
    signals: Signals,
    server: Box<dyn std::any::Any + Send + Sync>,
    marker: &str,
) -> anyhow::Result<World> {
    let proxy = Proxy::start(signals.addr, marker, signals.ct.clone()).await?;
    Ok(World {
        proxy,
        gate: signals.gate,
        finished: signals.finished,
        ct: signals.ct,
        _server: server,
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

/// The text of a tool result's first content block.
pub fn first_text(result: &CallToolResult) -> Option<String> {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
}

/// `tools/call tool {count}` with a progress token.
pub fn call(tool: &str, count: u32) -> anyhow::Result<CallToolRequestParams> {
    Ok(serde_json::from_value(crate::line::call_params(
        tool,
        json!({ "count": count }),
        "p",
    ))?)
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
        Ok(result) => Ending::Answered(result.map(|r| first_text(&r).unwrap_or_default())),
        Err(_) => Ending::StillWaiting,
    };
    drop(client);
    Ok((ending, progress.0.load(Ordering::SeqCst)))
}

/// Two GET streams of one session on a server of `side` with a 16-event
/// window; the first goes away like a closed tab. Returns whether the
/// surviving stream received the next notification within `watch` (#659).
pub async fn survivor_gets_notified(side: Side, watch: Duration) -> anyhow::Result<bool> {
    let world = world(side, 16, None).await?;
    let mut session = RawSession::open(&format!("http://{}/mcp", world.proxy.addr)).await?;
    let mut first = SseReader::new(session.get(None).await?);
    let _priming = first.next().await?;
    let mut second = SseReader::new(session.get(None).await?);
    let _ = second.next().await?;
    drop(first);
    let (_, response) = session
        .call("announce", json!({ "count": 1 }), false)
        .await?;
    let _ = SseReader::new(response).collect().await?;
    let got = tokio::time::timeout(watch, async {
        loop {
            match second.next().await {
                Ok(Some(frame)) if frame.data.contains("list_changed") => return true,
                Ok(Some(_)) => {}
                _ => return false,
            }
        }
    })
    .await
    .unwrap_or(false);
    Ok(got)
}
