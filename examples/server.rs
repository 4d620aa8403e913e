//! A streamable-HTTP MCP server on rmcp-resume, written against the public
//! API only: `cargo run --example server`, then point any MCP client at
//! `http://127.0.0.1:8000/mcp`.
//!
//! Options: `--bind ADDR` (default `127.0.0.1:8000`; port `0` picks one,
//! and the URL is printed on stdout), and `--redis URL` to run as one of
//! several instances sharing their sessions' streams on Redis (fork; see
//! docs/redis.md; `--redis-cluster URL,URL,…`
//! for a Redis Cluster), with `--lease-ms N` for the ownership lease and
//! `--outage-limit-ms N` for how long an owner rides out an unreachable Redis.
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
use rmcp_resume_redis::{RedisLog, RedisLogConfig, RedisSessionStore, RedisShared};
use tokio_util::sync::CancellationToken;

/// Arguments of `announce`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Announce {
    /// How many notifications.
    n: u32,
}

/// Arguments of `count_to`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct CountTo {
    /// The last number.
    n: u32,
    /// Milliseconds between numbers (default 100).
    #[serde(default)]
    interval_ms: Option<u64>,
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
        Parameters(CountTo { n, interval_ms }): Parameters<CountTo>,
    ) -> String {
        let interval = Duration::from_millis(interval_ms.unwrap_or(100));
        for i in 1..=n {
            tokio::time::sleep(interval).await;
            if let Some(token) = meta.get_progress_token() {
                let progress =
                    ProgressNotificationParam::new(token, f64::from(i)).with_total(f64::from(n));
                let _ = peer.notify_progress(progress).await;
            }
        }
        format!("counted to {n}")
    }

    /// Notifications on the session's standalone stream (the GET), not on
    /// the call's own stream.
    #[tool(
        description = "Send n resource-list-changed notifications to the session's standalone stream"
    )]
    async fn announce(
        &self,
        peer: Peer<RoleServer>,
        Parameters(Announce { n }): Parameters<Announce>,
    ) -> String {
        for _ in 0..n {
            let _ = peer.notify_resource_list_changed().await;
        }
        format!("announced {n}")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Counter {
    fn get_info(&self) -> ServerConfig {
        // Tools, and the resource-list notifications that `announce` sends.
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources();
        ServerConfig::new(capabilities.build())
    }
}

/// The value after `name` on the command line.
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
    // fork: `--window N` keeps exactly the last N events of each stream.
    if let Some(window) = option("--window") {
        session.channel_capacity = window.parse()?;
        session.max_replay_events = session.channel_capacity;
    }
    let mut manager = LocalSessionManager::default();
    manager.session_config = session.clone();

    let ct = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        // Sent in every priming event: how long a client waits before it
        // resumes a stream the server closed.
        .with_sse_retry(Some(Duration::from_secs(3)))
        // Keep-alive comments, shorter than any proxy's idle timeout.
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_cancellation_token(ct.child_token());
    // fork: several instances share their sessions on Redis. Resumes are
    // answered by any instance; POSTs go to the session's owner.
    if let Some(url) = option("--redis").or_else(|| option("--redis-cluster")) {
        // The same window per stream as in-process: every instance finds
        // the same floor.
        let mut shared = RedisLogConfig::matching(&session);
        if let Some(lease) = option("--lease-ms") {
            shared.lease = Duration::from_millis(lease.parse()?);
        }
        if let Some(limit) = option("--outage-limit-ms") {
            shared.outage_limit = Duration::from_millis(limit.parse()?);
        }
        let log = match option("--redis-cluster") {
            Some(nodes) => RedisLog::connect_cluster(nodes.split(','), shared).await?,
            None => RedisLog::connect(&url, shared).await?,
        };
        manager = manager.with_shared_log(Arc::new(RedisShared::for_this_process(log.clone())));
        config.session_store = Some(Arc::new(RedisSessionStore::new(log)));
    }
    let service = StreamableHttpService::new(|| Ok(Counter::new()), Arc::new(manager), config);
    // fork: how resumes were answered (replayed, fell back, refused, lost).
    let stats = service.clone();

    let router = axum::Router::new().nest_service("/mcp", service);
    let bind = option("--bind").unwrap_or_else(|| "127.0.0.1:8000".to_owned());
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    println!("listening {url}");
    tracing::info!(
        %url,
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
