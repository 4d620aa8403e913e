//! Tools over streamable HTTP on 127.0.0.1:8000, served by the fork.
//!
//! `cargo run --example server`, then point any MCP client at
//! `http://127.0.0.1:8000/mcp`.

use std::net::SocketAddr;

use rmcp_resume_e2e::{init_tracing, serve_demo};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_tracing("info");
    let ct = CancellationToken::new();
    let (addr, task) = serve_demo(SocketAddr::from(([127, 0, 0, 1], 8000)), ct.clone()).await?;
    tracing::info!(
        url = %format!("http://{addr}/mcp"),
        fork = rmcp::fork::PACKAGE,
        upstream = rmcp::fork::UPSTREAM_VERSION,
        "serving; Ctrl-C to stop"
    );
    tokio::signal::ctrl_c().await?;
    ct.cancel();
    task.await?;
    Ok(())
}
