//! Time-dependent server behaviour on tokio's paused clock: the service is
//! driven in-process through `handle`, so no socket wait can make the paused
//! clock jump.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp_resume_testkit::raw::PROTOCOL;
use rmcp_resume_testkit::{DemoServer, Side, TestServer};
use serde_json::{Value, json};

type Service = StreamableHttpService<DemoServer, LocalSessionManager>;

fn service(ttl: Duration) -> Service {
    TestServer::new(Side::Fork)
        .completed_ttl(ttl)
        .without_session_timers()
        .keep_alive(None)
        .demo_service()
        .0
}

fn request(
    method: http::Method,
    session: Option<&str>,
    body: Option<Value>,
) -> http::Request<Full<Bytes>> {
    let mut builder = http::Request::builder()
        .method(method)
        .uri("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", PROTOCOL);
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    let body = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
    builder
        .body(Full::new(body))
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn text(response: http::Response<BoxBody<Bytes, Infallible>>) -> String {
    match response.into_body().collect().await {
        Ok(body) => String::from_utf8_lossy(&body.to_bytes()).into_owned(),
        Err(never) => match never {},
    }
}

fn event_ids(sse: &str) -> Vec<String> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
        .collect()
}

async fn open(service: &Service) -> String {
    let init = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } }
    });
    let response = service
        .handle(request(http::Method::POST, None, Some(init)))
        .await;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no session id"));
    let _ = text(response).await;
    let ack = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let response = service
        .handle(request(http::Method::POST, Some(&session), Some(ack)))
        .await;
    assert_eq!(response.status(), 202);
    session
}

#[tokio::test(start_paused = true)]
async fn completed_request_stream_is_resumable_until_its_ttl_then_rejected() {
    let service = service(Duration::from_secs(30));
    let session = open(&service).await;
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "sum", "arguments": { "a": 1, "b": 2 } } });
    let response = service
        .handle(request(http::Method::POST, Some(&session), Some(call)))
        .await;
    let sse = text(response).await;
    let priming = event_ids(&sse)
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("no ids: {sse}"));

    // Within the TTL: the response is replayed after the priming cursor.
    tokio::time::advance(Duration::from_secs(29)).await;
    let mut get = request(http::Method::GET, Some(&session), None);
    get.headers_mut().insert(
        "last-event-id",
        priming.parse().unwrap_or_else(|e| panic!("{e}")),
    );
    let response = service.handle(get).await;
    assert_eq!(response.status(), 200);
    let replay = text(response).await;
    assert!(replay.contains(r#""text":"3""#), "{replay}");

    // Past the TTL (observed at the session's next event): 400, never 200.
    tokio::time::advance(Duration::from_secs(2)).await;
    let ping = json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" });
    let _ = text(
        service
            .handle(request(http::Method::POST, Some(&session), Some(ping)))
            .await,
    )
    .await;
    let mut get = request(http::Method::GET, Some(&session), None);
    get.headers_mut().insert(
        "last-event-id",
        priming.parse().unwrap_or_else(|e| panic!("{e}")),
    );
    let response = service.handle(get).await;
    assert_eq!(response.status(), 400);
    let body: Value = serde_json::from_str(&text(response).await).unwrap_or_default();
    assert_eq!(body["error"]["data"]["cursor"], json!(priming));
}
