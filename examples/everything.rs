//! The "everything" server the official MCP conformance suite drives, built
//! on rmcp-resume: `cargo run --example everything -- [PORT]` (default 3001),
//! then `npx @modelcontextprotocol/conformance server --url
//! http://127.0.0.1:PORT/mcp --suite all`. `tests/conformance.rs` runs
//! exactly that in CI.

use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp_resume_e2e::everything::everything_service;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let port: u16 = match std::env::args().nth(1) {
        Some(port) => port.parse()?,
        None => 3001,
    };
    let ct = CancellationToken::new();
    let service = everything_service(
        StreamableHttpServerConfig::default().with_cancellation_token(ct.child_token()),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("everything server on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            ct.cancel();
        })
        .await?;
    Ok(())
}
