//! Proof (a): an application that renames `rmcp-resume` to `rmcp` compiles
//! unchanged, macros included, and talks streamable HTTP through the fork.
//!
//! The root package and the test kit depend on `rmcp = { package =
//! "rmcp-resume", … }`, and the kit's demo server defines its tools with
//! `#[tool_router]`, `#[tool]` and `#[tool_handler]`, so this binary is
//! exactly such an application.

use rmcp::{
    ServiceExt,
    model::{CallToolRequestParams, ClientConfig},
    transport::StreamableHttpClientTransport,
};
use rmcp_resume_testkit::scenario::first_text;
use rmcp_resume_testkit::{Side, TestServer};

#[tokio::test]
async fn renamed_dependency_serves_macro_tools_through_the_fork() -> anyhow::Result<()> {
    // The fork-only item resolves, and names the renamed package.
    assert_eq!(rmcp::fork::PACKAGE, "rmcp-resume");
    assert_eq!(rmcp::fork::UPSTREAM_VERSION, "3.11.0");

    let served = TestServer::new(Side::Fork).serve().await?;
    let transport = StreamableHttpClientTransport::from_uri(served.url.clone());
    let client = ClientConfig::default().serve(transport).await?;

    let tools = client.list_all_tools().await?;
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "announce",
            "build_info",
            "burst",
            "echo",
            "flood",
            "stream",
            "sum",
            "tick",
            "work"
        ]
    );

    let args = serde_json::json!({ "a": 40, "b": 2 });
    let sum = client
        .call_tool(
            CallToolRequestParams::new("sum")
                .with_arguments(args.as_object().cloned().unwrap_or_default()),
        )
        .await?;
    assert_eq!(first_text(&sum).as_deref(), Some("42"));

    // The server side of the call also ran fork code.
    let info = client
        .call_tool(CallToolRequestParams::new("build_info"))
        .await?;
    assert_eq!(
        first_text(&info).as_deref(),
        Some("rmcp-resume 0.1.0 over rmcp 3.11.0")
    );

    client.cancel().await?;
    Ok(())
}

#[test]
fn macro_exported_helpers_resolve_through_the_rename() {
    // `object!` is a `#[macro_export]` macro of upstream's, reached via the glob.
    let obj = rmcp::object!({ "k": 1 });
    assert_eq!(obj.get("k"), Some(&serde_json::json!(1)));
}
