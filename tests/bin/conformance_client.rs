//! The fork's client as the official conformance suite's client under test:
//! `conformance client --command "<this binary>" --scenario S` runs it with
//! the scenario server's URL as its argument and the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`. `tests/conformance.rs` drives it.

#[path = "conformance_client/first_get.rs"]
mod first_get;

use std::time::Duration;

use anyhow::{Context, bail};
use rmcp::{
    ErrorData, RoleClient, ServiceExt,
    handler::client::ClientHandler,
    model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
        ElicitationAction, Implementation, ProtocolVersion,
    },
    service::RequestContext,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Map, Value, json};

/// Accepts every form elicitation with each field's schema default filled in
/// (SEP-1034), which is what a user who presses "accept" at once gets.
#[derive(Debug, Clone, Default)]
struct Client;

fn defaults(schema: &Value) -> Value {
    let mut content = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    Value::Object(content)
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({ "elicitation": { "form": {} } })).unwrap_or_default();
        // The suite's scenarios speak the 2025 revisions; rmcp's default
        // offer is 2026-07-28, which has no sessions and no resumption.
        ClientConfig::new(
            capabilities,
            Implementation::new("rmcp-resume-conformance-client", rmcp::fork::FORK_VERSION),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = serde_json::to_value(&request)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let content = defaults(&request["requestedSchema"]);
        let mut result = ElicitResult::new(ElicitationAction::Accept);
        result.content = Some(content);
        Ok(result)
    }
}

fn call(name: &str, arguments: Value) -> anyhow::Result<CallToolRequestParams> {
    let Value::Object(arguments) = arguments else {
        bail!("tool arguments must be an object");
    };
    Ok(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rmcp_resume_testkit::init_tracing("warn");
    let url = std::env::args()
        .nth(1)
        .context("usage: conformance_client <server-url>")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let client = if scenario == "sse-retry" {
        // That scenario's server answers a pending call on the next GET it
        // gets, whichever: a standalone stream opened after the call would
        // take the answer the resuming GET is there to fetch. The call waits
        // for it, as on a client that has been up for a while. Watching the
        // GET takes a client of our own, without pooling as the default.
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()?;
        let (http, mut opened) = first_get::FirstGet::new(http);
        let config = StreamableHttpClientTransportConfig::with_uri(url);
        let client = Client
            .serve(StreamableHttpClientTransport::with_client(http, config))
            .await?;
        tokio::time::timeout(Duration::from_secs(10), opened.wait_for(|open| *open))
            .await
            .context("the standalone stream did not open within 10 s")??;
        client
    } else {
        Client
            .serve(StreamableHttpClientTransport::from_uri(url))
            .await?
    };
    let tools = client.list_all_tools().await?;
    eprintln!("scenario {scenario:?}: server lists {} tools", tools.len());
    let calls = match scenario.as_str() {
        "tools_call" => vec![call("add_numbers", json!({ "a": 5, "b": 3 }))?],
        "sse-retry" => vec![call("test_reconnection", json!({}))?],
        "elicitation-sep1034-client-defaults" => {
            vec![call("test_client_elicitation_defaults", json!({}))?]
        }
        _ => Vec::new(),
    };
    for request in calls {
        let name = request.name.clone();
        let result = client.call_tool(request).await?;
        eprintln!("tools/call {name}: {:?}", result.content);
    }
    client.cancel().await?;
    Ok(())
}
