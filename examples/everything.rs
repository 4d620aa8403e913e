//! The "everything" server the official MCP conformance suite drives, built
//! on rmcp-resume: `cargo run --example everything -- [PORT]` (default 3001),
//! then `npx @modelcontextprotocol/conformance server --url
//! http://127.0.0.1:PORT/mcp --suite all`. `tests/conformance.rs` runs
//! exactly that in CI.

use std::net::SocketAddr;

use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp_resume_e2e::everything::everything_service;
use rmcp_resume_e2e::{init_tracing, serve_at};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_tracing("info");
    let port: u16 = match std::env::args().nth(1) {
        Some(port) => port.parse()?,
        None => 3001,
    };
    let ct = CancellationToken::new();
    let service = everything_service(
        StreamableHttpServerConfig::default().with_cancellation_token(ct.child_token()),
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let (addr, task) = serve_at(addr, service, ct.clone(), false).await?;
    println!("everything server on http://{addr}/mcp");
    tokio::signal::ctrl_c().await?;
    ct.cancel();
    task.await?;
    Ok(())
}
