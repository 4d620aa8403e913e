//! Code written against upstream rmcp's client spellings compiles against the
//! fork and gets the fork's client. Each function below is spelled as an
//! application on upstream 3.11 spells it; the test runs every one of them.
//!
//! Upstream's `StreamableHttpClientTransport<C>` is an alias of
//! `WorkerTransport<StreamableHttpClientWorker<C>>`; the fork's is its own
//! type (a foreign alias cannot carry `from_uri`). What that costs is in
//! docs/client.md, under upstream's spellings; everything here holds.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, ClientConfig, ClientJsonRpcMessage};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpClientWorker,
};
use rmcp::transport::worker::Worker;
use rmcp::transport::{StreamableHttpClientTransport, WorkerTransport};
use rmcp::{RoleClient, ServiceExt};
use rmcp_resume_testkit::scenario::first_text;
use rmcp_resume_testkit::{Side, TestServer};
use tokio_util::sync::CancellationToken;

type Transport = StreamableHttpClientTransport<reqwest::Client>;

fn from_uri(url: &str) -> Transport {
    StreamableHttpClientTransport::from_uri(url.to_owned())
}

fn from_config(url: &str) -> Transport {
    StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(
        Arc::<str>::from(url),
    ))
}

fn with_client(url: &str) -> Transport {
    StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    )
}

fn spawn(url: &str) -> Transport {
    StreamableHttpClientTransport::spawn(StreamableHttpClientWorker::new_simple(url.to_owned()))
}

fn spawn_with_ct(url: &str, ct: CancellationToken) -> Transport {
    let worker = StreamableHttpClientWorker::new(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    );
    StreamableHttpClientTransport::spawn_with_ct(worker, ct)
}

fn worker_transport(url: &str) -> WorkerTransport<StreamableHttpClientWorker<reqwest::Client>> {
    WorkerTransport::spawn(StreamableHttpClientWorker::<reqwest::Client>::new_simple(
        url.to_owned(),
    ))
}

async fn build_info(client: &RunningService<RoleClient, ClientConfig>) -> anyhow::Result<String> {
    let result = client
        .call_tool(CallToolRequestParams::new("build_info"))
        .await?;
    Ok(first_text(&result).unwrap_or_default())
}

#[tokio::test]
async fn every_upstream_constructor_reaches_the_server() -> anyhow::Result<()> {
    let served = TestServer::new(Side::Fork).serve().await?;
    let url = served.url.as_str();
    let ct = CancellationToken::new();
    let transports = [
        ("from_uri", from_uri(url)),
        ("from_config", from_config(url)),
        ("with_client", with_client(url)),
        ("spawn", spawn(url)),
        ("spawn_with_ct", spawn_with_ct(url, ct.child_token())),
    ];
    for (name, transport) in transports {
        let client = ClientConfig::default().serve(transport).await?;
        let text = build_info(&client).await?;
        assert_eq!(text, "rmcp-resume 0.1.0 over rmcp 3.11.0", "{name}");
        client.cancel().await?;
    }
    let client = ClientConfig::default().serve(worker_transport(url)).await?;
    assert_eq!(
        build_info(&client).await?,
        "rmcp-resume 0.1.0 over rmcp 3.11.0"
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn the_token_given_to_spawn_with_ct_stops_the_transport() -> anyhow::Result<()> {
    let served = TestServer::new(Side::Fork).serve().await?;
    let ct = CancellationToken::new();
    let client = ClientConfig::default()
        .serve(spawn_with_ct(served.url.as_str(), ct.clone()))
        .await?;
    assert!(!build_info(&client).await?.is_empty());
    ct.cancel();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(10), client.waiting()).await;
    assert!(ended.is_ok(), "the client outlived its transport's token");
    Ok(())
}

#[test]
fn the_worker_sorts_messages_into_queues_as_upstream_does() {
    type Fork = StreamableHttpClientWorker<reqwest::Client>;
    type Upstream =
        upstream::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client>;
    let messages: [ClientJsonRpcMessage; 4] = [
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "no"}
        })),
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}
        })),
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": 3, "method": "ping"
        })),
    ]
    .map(|m| m.unwrap_or_else(|e| panic!("a client message: {e}")));
    for message in &messages {
        assert_eq!(
            <Fork as Worker>::is_control_message(message),
            <Upstream as Worker>::is_control_message(message),
            "{message:?}"
        );
    }
    assert!(<Fork as Worker>::is_control_message(&messages[2]));
    assert!(!<Fork as Worker>::is_control_message(&messages[3]));
    assert_eq!(
        <Fork as Worker>::supports_request_cancellation(),
        <Upstream as Worker>::supports_request_cancellation()
    );
}
