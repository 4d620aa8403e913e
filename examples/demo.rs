//! One process, one server, one client: a round trip through the fork.
//!
//! `cargo run --example demo`
//!
//! The server and the client both come from `rmcp-resume`; the client calls
//! the `build_info` tool, whose answer names the crate that served it.

use rmcp::{
    ServiceExt,
    model::{CallToolRequestParams, ClientConfig},
    transport::StreamableHttpClientTransport,
};
use rmcp_resume_e2e::serve_demo_ephemeral;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let ct = CancellationToken::new();
    let (addr, server) = serve_demo_ephemeral(ct.clone()).await?;
    let url = format!("http://{addr}/mcp");
    println!("server : listening on {url}");

    let transport = StreamableHttpClientTransport::from_uri(url.as_str());
    let client = ClientConfig::default().serve(transport).await?;
    println!(
        "client : initialized; server says {:?}",
        client.peer_info().and_then(|i| i.instructions.clone())
    );

    let tools = client.list_all_tools().await?;
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    println!("client : tools/list -> {names:?}");

    let result = client
        .call_tool(CallToolRequestParams::new("build_info"))
        .await?;
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    println!("client : tools/call build_info -> {text:?}");
    println!(
        "local  : rmcp::fork::PACKAGE = {:?}, pinned upstream = {}",
        rmcp::fork::PACKAGE,
        rmcp::fork::UPSTREAM_VERSION
    );

    client.cancel().await?;
    ct.cancel();
    server.await?;
    println!("done   : round trip complete");
    Ok(())
}
