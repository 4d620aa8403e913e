//! A streamable-HTTP MCP server on rmcp-resume, written against the public
//! API only: `cargo run --example server`, then point any MCP client at
//! `http://127.0.0.1:8000/mcp`.
//!
//! An application on upstream rmcp 3.11.0 looks exactly like this; with the
//! dependency renamed (`rmcp = { package = "rmcp-resume", … }`) it gets the
//! fork's resumption. The knobs marked "fork" below exist only in the fork;
//! the rest are upstream's.

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{ProgressNotificationParam, RequestMetaObject, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{Peer, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use tokio_util::sync::CancellationToken;

/// Arguments of `count_to`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct CountTo {
    /// The last number.
    n: u32,
}

/// The tools.
#[derive(Debug, Clone)]
struct Counter {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Counter {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// Long-running, with progress: the kind of call whose stream a network
    /// blip cuts, and which a resume must finish.
    #[tool(description = "Count to n, one number every 100 ms, reporting progress")]
    async fn count_to(
        &self,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        Parameters(CountTo { n }): Parameters<CountTo>,
    ) -> String {
        for i in 1..=n {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if let Some(token) = meta.get_progress_token() {
                let progress =
                    ProgressNotificationParam::new(token, f64::from(i)).with_total(f64::from(n));
                let _ = peer.notify_progress(progress).await;
            }
        }
        format!("counted to {n}")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Counter {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();

    // Each session's streams: how much is kept for replay, and for how long.
    let mut session = SessionConfig::default();
    // The replay window: events each stream retains for a resume.
    session.channel_capacity = 64;
    // How long an answered request stays resumable (a client cut before its
    // response still gets it on resume).
    session.completed_cache_ttl = Duration::from_secs(60);
    // fork: answered request streams kept per session at most.
    session.max_completed_streams = 256;
    let mut manager = LocalSessionManager::default();
    manager.session_config = session;

    let ct = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        // Sent in every priming event: how long a client waits before it
        // resumes a stream the server closed.
        .with_sse_retry(Some(Duration::from_secs(3)))
        // Keep-alive comments, shorter than any proxy's idle timeout.
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_cancellation_token(ct.child_token());
    let service = StreamableHttpService::new(|| Ok(Counter::new()), Arc::new(manager), config);
    // fork: how resumes were answered (replayed, fell back, refused, lost).
    let stats = service.clone();

    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
    tracing::info!(
        url = %format!("http://{}/mcp", listener.local_addr()?),
        fork = rmcp::fork::PACKAGE,
        upstream = rmcp::fork::UPSTREAM_VERSION,
        "serving; Ctrl-C to stop"
    );
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            ct.cancel();
        })
        .await?;
    tracing::info!(resumes = ?stats.resume_stats(), "stopped");
    Ok(())
}
