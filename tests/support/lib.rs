//! Shared support for the end-to-end tests, examples and benches.
//!
//! It holds one small MCP server written exactly as an application written
//! against upstream rmcp would be (`#[tool_router]`, `#[tool]`,
//! `#[tool_handler]`), and the plumbing to serve it on an ephemeral port.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    schemars, tool, tool_handler, tool_router,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use tokio_util::sync::CancellationToken;

/// Arguments of the `sum` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SumArgs {
    /// Left operand.
    pub a: i64,
    /// Right operand.
    pub b: i64,
}

/// Arguments of the `echo` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// Text returned verbatim.
    pub text: String,
}

/// A tiny tool server used by the examples and the tests.
#[derive(Debug, Clone)]
pub struct DemoServer {
    tool_router: ToolRouter<Self>,
}

impl Default for DemoServer {
    fn default() -> Self {
        Self::new()
    }
}

#[tool_router]
impl DemoServer {
    /// A server with every tool registered.
    pub fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Add two integers")]
    fn sum(&self, Parameters(SumArgs { a, b }): Parameters<SumArgs>) -> String {
        a.saturating_add(b).to_string()
    }

    #[tool(description = "Return the text it is given")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Name the crate that serves this tool (proves the fork is in the build)")]
    fn build_info(&self) -> String {
        format!(
            "{} {} over rmcp {}",
            rmcp::fork::PACKAGE,
            rmcp::fork::FORK_VERSION,
            rmcp::fork::UPSTREAM_VERSION
        )
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions("rmcp-resume demo server")
    }
}

/// The streamable-HTTP service for [`DemoServer`] with a local session manager.
pub fn demo_service(
    ct: &CancellationToken,
) -> StreamableHttpService<DemoServer, LocalSessionManager> {
    StreamableHttpService::new(
        || Ok(DemoServer::new()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(ct.child_token()),
    )
}

/// Serves [`DemoServer`] at `/mcp` on `addr` until `ct` is cancelled.
///
/// Returns the bound address (useful with port 0) and the server task.
pub async fn serve_demo(
    addr: SocketAddr,
    ct: CancellationToken,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let router = axum::Router::new().nest_service("/mcp", demo_service(&ct));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let shutdown = async move { ct.cancelled_owned().await };
        if let Err(error) = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!(%error, "demo server stopped");
        }
    });
    Ok((bound, task))
}

/// Serves [`DemoServer`] on `127.0.0.1:0`.
pub async fn serve_demo_ephemeral(
    ct: CancellationToken,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    serve_demo(SocketAddr::from(([127, 0, 0, 1], 0)), ct).await
}
