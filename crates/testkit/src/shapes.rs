//! [`ShapesServer`]: the client peer matrix's tools on an rmcp server, with
//! the names, arguments, answers and progress values of the TypeScript and
//! Python peer servers (`tests/peers/ts_server.mjs`, `ts2_server.mjs`,
//! `py_server.py`), so that one `tools/call` runs unchanged against every
//! row of the matrix (`tests/peer_matrix.rs`).
//!
//! | Tool | Progress | Answer |
//! |---|---|---|
//! | `quick {count}` | `1..=count`, back to back | `quick {count}`, at once |
//! | `quiet {ms}` | `1`, then nothing for `ms`, then `2` | `quiet {ms}` |
//! | `poll {ms}` | `1`, the call's connection closed (SEP-1699), `2` after `ms` | `poll {ms}` |
//! | `stream {count, interval_ms}` | `1..=count`, `interval_ms` apart | `streamed {count}` |
//! | `sample {ms}` | `11`, a `sampling/createMessage` request to the client at once, `12` `ms` later | `sampled {the client's text}` |
//! | `tick {count, interval_ms}` | none: `resources/updated` `tick://1..=count`, `interval_ms` apart, on the standalone stream, from a task of its own | `ticking {count}`, at once |
//!
//! `poll` closes its own request's connection through the fork's
//! `LocalSessionHandle::close_request_connection`, so it polls on the fork's
//! server only ([`ShapesServer::polling`]). Upstream rmcp has no API a tool
//! can use for it: its `close_sse_stream` takes the transport's internal
//! HTTP request number, which a handler is never given. Elsewhere `poll`
//! answers `poll {ms} (stream not closable)`, as the peer scripts do when
//! their SDK offers no way to close.

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::ReplaySessionManager;

use rmcp::{
    Peer, RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ProgressToken, ServerCapabilities},
    schemars, tool, tool_handler, tool_router,
};

use crate::line::{RequestMetaObject, ServerConfig};

/// Arguments of the `quick` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct QuickArgs {
    /// How many progress notifications.
    pub count: u32,
}

/// Arguments of the `quiet` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct QuietArgs {
    /// Milliseconds of silence between the two progress notifications.
    pub ms: u64,
}

/// Arguments of the `poll` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct PollArgs {
    /// Milliseconds between closing the connection and progress 2.
    pub ms: u64,
}

/// Arguments of the `stream` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct StreamArgs {
    /// How many progress notifications.
    pub count: u32,
    /// Milliseconds between them.
    pub interval_ms: u64,
}

/// The matrix's tool server (see the module's table).
#[derive(Debug, Clone)]
pub struct ShapesServer {
    tool_router: ToolRouter<Self>,
    /// The fork's sessions, through which `poll` closes its connection.
    sessions: Option<Arc<ReplaySessionManager>>,
}

/// The SSE `retry` `poll` asks for when it closes its connection (the peer
/// scripts' `retryInterval`).
pub const POLL_RETRY: Duration = Duration::from_millis(200);

impl Default for ShapesServer {
    fn default() -> Self {
        Self::new()
    }
}

/// Sends progress `value` of `total` for `token`; false once the peer is gone.
async fn progress(peer: &Peer<RoleServer>, token: &ProgressToken, value: u32, total: u32) -> bool {
    let param = crate::line::progress(token.clone(), f64::from(value), f64::from(total));
    peer.notify_progress(param).await.is_ok()
}

#[tool_router]
impl ShapesServer {
    /// A server with every tool registered; its `poll` cannot close.
    pub fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
            sessions: None,
        }
    }

    /// A server of the fork's `sessions`, whose `poll` closes its own
    /// request's connection.
    pub fn polling(sessions: Arc<ReplaySessionManager>) -> Self {
        Self {
            sessions: Some(sessions),
            ..Self::new()
        }
    }

    /// Closes the connection carrying `context`'s response; false when this
    /// server cannot, or the session is not found.
    async fn close_own_connection(&self, context: &RequestContext<RoleServer>) -> bool {
        let Some(sessions) = &self.sessions else {
            return false;
        };
        let Some(session) = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
        else {
            return false;
        };
        let handle = sessions.sessions.read().await.get(session).cloned();
        match handle {
            Some(handle) => handle
                .close_request_connection(context.id.clone(), Some(POLL_RETRY))
                .await
                .is_ok(),
            None => false,
        }
    }

    #[tool(description = "Report `count` progress steps back to back, then answer at once")]
    async fn quick(
        &self,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        Parameters(QuickArgs { count }): Parameters<QuickArgs>,
    ) -> String {
        if let Some(token) = meta.get_progress_token() {
            for step in 1..=count {
                if !progress(&peer, &token, step, count).await {
                    break;
                }
            }
        }
        format!("quick {count}")
    }

    #[tool(
        description = "Report progress 1, stay quiet for `ms` milliseconds, report progress 2, answer"
    )]
    async fn quiet(
        &self,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        Parameters(QuietArgs { ms }): Parameters<QuietArgs>,
    ) -> String {
        let token = meta.get_progress_token();
        if let Some(token) = &token {
            progress(&peer, token, 1, 2).await;
        }
        tokio::time::sleep(Duration::from_millis(ms)).await;
        if let Some(token) = &token {
            progress(&peer, token, 2, 2).await;
        }
        format!("quiet {ms}")
    }

    #[tool(
        description = "Report progress 1, close this call's connection (SEP-1699 polling), report progress 2 after `ms` milliseconds, answer"
    )]
    async fn poll(
        &self,
        context: RequestContext<RoleServer>,
        Parameters(PollArgs { ms }): Parameters<PollArgs>,
    ) -> String {
        let token = context.meta.get_progress_token();
        if let Some(token) = &token {
            progress(&context.peer, token, 1, 2).await;
        }
        let closed = self.close_own_connection(&context).await;
        tokio::time::sleep(Duration::from_millis(ms)).await;
        if let Some(token) = &token {
            progress(&context.peer, token, 2, 2).await;
        }
        let note = if closed { "" } else { " (stream not closable)" };
        format!("poll {ms}{note}")
    }

    #[tool(description = "Report `count` progress steps, `interval_ms` apart, then answer")]
    async fn stream(
        &self,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        Parameters(StreamArgs { count, interval_ms }): Parameters<StreamArgs>,
    ) -> String {
        if let Some(token) = meta.get_progress_token() {
            for step in 1..=count {
                if !progress(&peer, &token, step, count).await {
                    break;
                }
                if step < count && interval_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(interval_ms)).await;
                }
            }
        }
        format!("streamed {count}")
    }

    #[tool(
        description = "Progress 11, a sampling/createMessage request to the client at once, progress 12 `ms` later (once the client answered), then `sampled {the client's text}`"
    )]
    async fn sample(
        &self,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        Parameters(QuietArgs { ms }): Parameters<QuietArgs>,
    ) -> String {
        let token = meta.get_progress_token();
        if let Some(token) = &token {
            progress(&peer, token, 11, 12).await;
        }
        let asked = serde_json::from_value(serde_json::json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": "sample" } }],
            "maxTokens": 8,
        }));
        #[allow(deprecated)]
        let text = match asked {
            Ok(params) => match peer.create_message(params).await {
                Ok(result) => serde_json::to_value(&result)
                    .ok()
                    .and_then(|v| v["content"]["text"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| "(no text)".to_owned()),
                Err(error) => format!("(sampling failed: {error})"),
            },
            Err(error) => format!("(no request: {error})"),
        };
        tokio::time::sleep(Duration::from_millis(ms)).await;
        if let Some(token) = &token {
            progress(&peer, token, 12, 12).await;
        }
        format!("sampled {text}")
    }

    #[tool(
        description = "Send `count` resources/updated notifications `tick://1`, `tick://2`, … `interval_ms` apart on the standalone stream, from a task of their own; answer at once"
    )]
    fn tick(
        &self,
        peer: Peer<RoleServer>,
        Parameters(StreamArgs { count, interval_ms }): Parameters<StreamArgs>,
    ) -> String {
        crate::demo::spawn_ticks(peer, count, interval_ms);
        format!("ticking {count}")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ShapesServer {
    fn get_info(&self) -> ServerConfig {
        crate::line::server_info(
            ServerCapabilities::builder().enable_tools().build(),
            "rmcp-resume peer matrix server",
        )
    }
}
