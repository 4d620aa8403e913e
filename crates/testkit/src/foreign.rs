//! A scripted MCP server whose event ids follow schemes the spec allows but
//! rmcp does not use: one counter for the whole session (a stream sees
//! `1, 3, 6, …`), or a counter per connection (a resume numbers its replay
//! from `1` again).
//!
//! It speaks just enough of MCP for one client: `initialize` (JSON), the
//! notifications (`202`), `tools/call` of any tool (an SSE stream of
//! `steps` progress notifications and then the result), resumes of that
//! stream by `GET` with `Last-Event-ID`, and `405` for the standalone `GET`.
//! With `cut_after`, the `POST` stream closes after that many events,
//! without its response, and the client must resume to get the rest.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::any;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How the server numbers events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdScheme {
    /// One counter for the session, shared by every stream: a request stream
    /// sees the triangular numbers `1, 3, 6, 10, …`.
    SessionWide,
    /// A counter per HTTP response: every resume numbers its events from 1.
    PerConnection,
}

/// What to start.
#[derive(Debug, Clone, Copy)]
pub struct ForeignServer {
    /// The id scheme.
    pub ids: IdScheme,
    /// Progress notifications per call.
    pub steps: usize,
    /// Events the `POST` stream carries before it closes without its
    /// response; `None` sends everything.
    pub cut_after: Option<usize>,
}

/// A running [`ForeignServer`]; stops when dropped.
#[derive(Debug)]
pub struct ForeignServed {
    /// The MCP endpoint.
    pub url: String,
    /// Every `Last-Event-ID` the server was sent, in order.
    cursors: Arc<Mutex<Vec<String>>>,
    _stop: tokio_util::sync::DropGuard,
}

impl ForeignServed {
    /// The `Last-Event-ID`s of the resumes so far.
    pub fn cursors(&self) -> Vec<String> {
        self.cursors.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

#[derive(Default)]
struct Call {
    /// Every event of the call's stream, the response last.
    events: Vec<String>,
    /// Where the last response's per-connection numbering started.
    base: usize,
}

#[derive(Clone)]
struct Shared {
    config: ForeignServer,
    call: Arc<Mutex<Call>>,
    cursors: Arc<Mutex<Vec<String>>>,
}

const SESSION: &str = "foreign-session";

impl ForeignServer {
    /// Serves on 127.0.0.1, port 0.
    pub async fn serve(self) -> anyhow::Result<ForeignServed> {
        let shared = Shared {
            config: self,
            call: Arc::default(),
            cursors: Arc::default(),
        };
        let cursors = shared.cursors.clone();
        let app = Router::new().route("/mcp", any(handle)).with_state(shared);
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            let serving =
                axum::serve(listener, app).with_graceful_shutdown(stopped.cancelled_owned());
            if let Err(error) = serving.await {
                tracing::debug!(%error, "foreign server stopped");
            }
        });
        Ok(ForeignServed {
            url: format!("http://{addr}/mcp"),
            cursors,
            _stop: stop.drop_guard(),
        })
    }
}

async fn handle(
    State(shared): State<Shared>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match method {
        Method::POST => post(&shared, &body),
        Method::GET => match headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
            Some(cursor) => resume(&shared, cursor),
            None => status(StatusCode::METHOD_NOT_ALLOWED),
        },
        Method::DELETE => status(StatusCode::NO_CONTENT),
        _ => status(StatusCode::METHOD_NOT_ALLOWED),
    }
}

fn status(code: StatusCode) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = code;
    response
}

fn post(shared: &Shared, body: &[u8]) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return status(StatusCode::BAD_REQUEST);
    };
    let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
        // A notification, or a response to the server.
        return status(StatusCode::ACCEPTED);
    };
    match method {
        "initialize" => {
            // A server of the 2025 revisions, which have resumable streams.
            let version = "2025-11-25";
            let result = json!({
                "jsonrpc": "2.0", "id": id,
                "result": {
                    "protocolVersion": version,
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": "foreign", "version": "0" }
                }
            });
            let mut response = Response::new(Body::from(result.to_string()));
            let headers = response.headers_mut();
            headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            headers.insert("mcp-session-id", http::HeaderValue::from_static(SESSION));
            response
        }
        "tools/call" => {
            let token = message["params"]["_meta"]["progressToken"].clone();
            let steps = shared.config.steps;
            let mut events: Vec<String> = (1..=steps)
                .map(|step| {
                    json!({
                        "jsonrpc": "2.0", "method": "notifications/progress",
                        "params": { "progressToken": token, "progress": step, "total": steps }
                    })
                    .to_string()
                })
                .collect();
            events.push(
                json!({
                    "jsonrpc": "2.0", "id": id,
                    "result": { "content": [{ "type": "text", "text": format!("{steps} steps") }] }
                })
                .to_string(),
            );
            let end = shared
                .config
                .cut_after
                .unwrap_or(events.len())
                .min(events.len());
            let frames = frames(shared.config.ids, &events, 0, end);
            if let Ok(mut call) = shared.call.lock() {
                *call = Call { events, base: 0 };
            }
            sse(frames)
        }
        _ => {
            let error = json!({
                "jsonrpc": "2.0", "id": id,
                "error": { "code": -32601, "message": "method not found" }
            });
            let mut response = Response::new(Body::from(error.to_string()));
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            response
        }
    }
}

/// The id of the call's `index`-th event (from 0), on a connection whose
/// numbering starts at event `base`.
fn event_id(ids: IdScheme, index: usize, base: usize) -> usize {
    match ids {
        IdScheme::SessionWide => (index + 1) * (index + 2) / 2,
        IdScheme::PerConnection => index.saturating_sub(base) + 1,
    }
}

/// The index of the event a cursor names, if the server issued it.
fn position(ids: IdScheme, cursor: &str, call: &Call) -> Option<usize> {
    let cursor: usize = cursor.parse().ok()?;
    // A per-connection id names an event of the last connection only.
    let first = match ids {
        IdScheme::SessionWide => 0,
        IdScheme::PerConnection => call.base,
    };
    (first..call.events.len()).find(|&i| event_id(ids, i, call.base) == cursor)
}

/// Events `from..to`, as SSE frames; the first one sets a short `retry`.
fn frames(ids: IdScheme, events: &[String], from: usize, to: usize) -> String {
    let mut out = String::new();
    for (index, event) in events.iter().enumerate().take(to).skip(from) {
        if index == from {
            out.push_str("retry: 50\n");
        }
        let id = event_id(ids, index, from);
        out.push_str(&format!("id: {id}\ndata: {event}\n\n"));
    }
    out
}

fn resume(shared: &Shared, cursor: &str) -> Response {
    if let Ok(mut cursors) = shared.cursors.lock() {
        cursors.push(cursor.to_owned());
    }
    let ids = shared.config.ids;
    let Ok(mut call) = shared.call.lock() else {
        return status(StatusCode::INTERNAL_SERVER_ERROR);
    };
    let Some(at) = position(ids, cursor, &call) else {
        return status(StatusCode::BAD_REQUEST);
    };
    let from = at + 1;
    call.base = from;
    sse(frames(ids, &call.events, from, call.events.len()))
}

fn sse(frames: String) -> Response {
    let body = futures::stream::once(async move { Ok::<_, Infallible>(Bytes::from(frames)) });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert("mcp-session-id", http::HeaderValue::from_static(SESSION));
    response
}
