//! The protocol's floor: what a tool call costs on this machine with the
//! same HTTP stack (axum on hyper 1, tokio, reqwest) and no MCP at all.
//!
//! The server answers `POST /mcp` carrying a JSON-RPC request on a kept
//! session with an SSE stream of one event, the request's answer, as a
//! streamable-HTTP server does; the client sends the request, reads the
//! stream to its end and parses the event's JSON. Nothing else: no session
//! table, no replay log, no handler dispatch. Upstream and the fork are
//! then reported as multiples of it, measured in the same run.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The session id the floor's server hands out and expects.
const SESSION: &str = "floor";

/// Serves the floor on 127.0.0.1, port 0, until `ct` is cancelled; its
/// sockets set `TCP_NODELAY`, as the harness's rmcp servers do.
pub async fn serve(ct: &CancellationToken) -> anyhow::Result<String> {
    use axum::serve::ListenerExt;
    let router = axum::Router::new().route("/mcp", axum::routing::post(answer));
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let addr = listener.local_addr()?;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let ct = ct.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(ct.cancelled_owned())
            .await;
    });
    Ok(format!("http://{addr}/mcp"))
}

/// One request in, one SSE event out: the answer to `sum`, by its id.
async fn answer(headers: HeaderMap, body: Bytes) -> Response {
    if headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) != Some(SESSION) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let sum = request["params"]["arguments"]["a"].as_i64().unwrap_or(0)
        + request["params"]["arguments"]["b"].as_i64().unwrap_or(0);
    let reply = json!({
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": { "content": [{ "type": "text", "text": sum.to_string() }], "isError": false },
    });
    let event = format!("id: 0\ndata: {reply}\n\n");
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        event,
    )
        .into_response()
}

/// The floor's client: one pooled HTTP client, as rmcp's reqwest client is.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    url: String,
}

impl Client {
    /// A client of the floor's server at `url`.
    pub fn new(url: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: url.to_owned(),
        }
    }

    /// One `sum` call: the request, the stream read to its end, the
    /// event's JSON parsed and its answer checked.
    pub async fn call(&self, id: u64) -> anyhow::Result<()> {
        let request = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": { "name": "sum", "arguments": { "a": 20, "b": 22 } },
        });
        let body = self
            .http
            .post(&self.url)
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::CONTENT_TYPE, "application/json")
            .header("mcp-session-id", SESSION)
            .body(serde_json::to_vec(&request)?)
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
        let text = std::str::from_utf8(&body)?;
        let data = text
            .lines()
            .find_map(|line| line.strip_prefix("data: "))
            .ok_or_else(|| anyhow::anyhow!("floor: no event in {text:?}"))?;
        let reply: Value = serde_json::from_str(data)?;
        anyhow::ensure!(
            reply["id"] == id && reply["result"]["content"][0]["text"] == "42",
            "floor: wrong answer {reply}"
        );
        Ok(())
    }
}
