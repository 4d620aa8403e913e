//! The "everything" server the official MCP conformance suite drives, built
//! on rmcp-resume: `cargo run -p rmcp-resume-testkit --bin everything --
//! [PORT]` (default 3001), then `npx @modelcontextprotocol/conformance server
//! --url http://127.0.0.1:PORT/mcp --suite all`. `tests/conformance.rs` runs
//! exactly that in CI.

use std::net::SocketAddr;

use rmcp_resume_testkit::{TestServer, init_tracing};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_tracing("info");
    let port: u16 = match std::env::args().nth(1) {
        Some(port) => port.parse()?,
        None => 3001,
    };
    let served = TestServer::everything()
        .at(SocketAddr::from(([127, 0, 0, 1], port)))
        .serve()
        .await?;
    println!("everything server on {}", served.url);
    tokio::signal::ctrl_c().await?;
    Ok(())
}
