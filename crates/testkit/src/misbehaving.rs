//! A scripted server that breaks one promise of resumption on purpose, so
//! that each probe check has a FAIL case no real SDK happens to provide.
//!
//! Everything it does right is the minimum: `initialize` (JSON, with a
//! session id), `202` for notifications, `tools/call` as an SSE stream (a
//! priming event, `steps` progress notifications, the result), the
//! standalone `GET` (a priming event, then open and silent), resumes that
//! replay strictly after the cursor, and `DELETE`. The [`Fault`] replaces
//! one of those.

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

/// The one promise the server breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Streams open with a message, not a priming event.
    NoPriming,
    /// Every resume gets `200` and an empty body (upstream rmcp's wedge).
    EmptyResume,
    /// `DELETE` answers `200` but the session lives on.
    KeepsDeletedSessions,
    /// An unknown session gets `400` instead of `404`.
    UnknownSession400,
    /// Every request gets `401` with a bearer challenge.
    Unauthorized,
    /// Every request gets an HTML page: not an MCP endpoint.
    NotMcp,
    /// A resume replays the cursor event itself, then the rest.
    ReplaysCursor,
    /// A resume skips the two events after the cursor and says nothing.
    SkipsSilently,
    /// Notifications go to the session's first GET only, even once it is
    /// gone (upstream rmcp's #659).
    StarvesSecondGet,
    /// A call's stream sends nothing until its response is ready, then
    /// everything at once (what a buffering proxy makes of any server).
    HoldsBack,
}

/// How long a [`Fault::HoldsBack`] call holds its stream back.
pub const HELD_FOR: std::time::Duration = std::time::Duration::from_millis(400);

const STEPS: u64 = 5;

/// One session's state; its id is `s{index}` in [`Shared::sessions`].
#[derive(Default)]
struct Book {
    deleted: bool,
    /// The frames of each call's stream, by the stream's number.
    streams: Vec<Vec<(String, String)>>,
    /// The standalone GETs, oldest first.
    standalone: Vec<tokio::sync::mpsc::UnboundedSender<Bytes>>,
}

#[derive(Clone)]
struct Shared {
    fault: Fault,
    sessions: Arc<Mutex<Vec<Book>>>,
}

/// A running scripted server; dropping it stops the server.
#[derive(Debug)]
pub struct Misbehaving {
    /// Its MCP endpoint.
    pub url: String,
    ct: CancellationToken,
}

impl Drop for Misbehaving {
    fn drop(&mut self) {
        self.ct.cancel();
    }
}

impl Misbehaving {
    /// Serves `fault` on 127.0.0.1:0.
    pub async fn serve(fault: Fault) -> std::io::Result<Self> {
        let shared = Shared {
            fault,
            sessions: Arc::default(),
        };
        let router = Router::new().route("/mcp", any(handle)).with_state(shared);
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let ct = CancellationToken::new();
        let stop = ct.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await;
        });
        Ok(Self {
            url: format!("http://{addr}/mcp"),
            ct,
        })
    }
}

fn respond(status: StatusCode, kind: &str, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    if let Ok(kind) = kind.parse() {
        response.headers_mut().insert("content-type", kind);
    }
    response
}

fn empty(status: StatusCode) -> Response {
    respond(status, "text/plain", Body::empty())
}

fn sse(frames: &[(String, String)], stay_open: bool) -> Response {
    let text: String = frames
        .iter()
        .map(|(id, data)| match id.as_str() {
            "" => format!("data: {data}\n\n"),
            id if data.is_empty() => format!("id: {id}\nretry: 1000\ndata: \n\n"),
            id => format!("id: {id}\ndata: {data}\n\n"),
        })
        .collect();
    let head = futures::stream::iter([Ok::<_, Infallible>(Bytes::from(text))]);
    let body = if stay_open {
        Body::from_stream(futures::StreamExt::chain(head, futures::stream::pending()))
    } else {
        Body::from_stream(head)
    };
    respond(StatusCode::OK, "text/event-stream", body)
}

async fn handle(
    State(shared): State<Shared>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match shared.fault {
        Fault::Unauthorized => {
            let mut response = empty(StatusCode::UNAUTHORIZED);
            if let Ok(challenge) = "Bearer realm=\"scripted\"".parse() {
                response.headers_mut().insert("www-authenticate", challenge);
            }
            return response;
        }
        Fault::NotMcp => {
            return respond(
                StatusCode::OK,
                "text/html",
                Body::from("<html>hello</html>"),
            );
        }
        _ => {}
    }
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if message["method"] == "initialize" {
        let mut sessions = shared.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let id = format!("s{}", sessions.len());
        sessions.push(Book::default());
        let result = json!({
            "jsonrpc": "2.0", "id": message["id"],
            "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "misbehaving", "version": "0" }
            }
        });
        let mut response = respond(
            StatusCode::OK,
            "application/json",
            Body::from(result.to_string()),
        );
        if let Ok(id) = id.parse() {
            response.headers_mut().insert("mcp-session-id", id);
        }
        return response;
    }
    let index = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix('s'))
        .and_then(|n| n.parse::<usize>().ok());
    let mut sessions = shared.sessions.lock().unwrap_or_else(|p| p.into_inner());
    let book = index.and_then(|i| sessions.get_mut(i));
    let Some(book) = book.filter(|b| !b.deleted || shared.fault == Fault::KeepsDeletedSessions)
    else {
        return empty(if shared.fault == Fault::UnknownSession400 {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::NOT_FOUND
        });
    };
    match method {
        Method::DELETE => {
            book.deleted = true;
            empty(StatusCode::OK)
        }
        Method::POST if message.get("id").is_none() => empty(StatusCode::ACCEPTED),
        Method::POST => call(shared.fault, book, &message),
        Method::GET => get(shared.fault, book, &headers),
        _ => empty(StatusCode::METHOD_NOT_ALLOWED),
    }
}

/// `announce`: one `tools/list_changed` on a standalone GET (the newest that
/// is still open, or under [`Fault::StarvesSecondGet`] the first), then the
/// result.
fn announce(fault: Fault, book: &mut Book, message: &Value) -> Response {
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" });
    let frame = Bytes::from(format!("data: {note}\n\n"));
    let _ = match fault {
        Fault::StarvesSecondGet => book.standalone.first().map(|tx| tx.send(frame)),
        _ => book
            .standalone
            .iter()
            .rev()
            .find(|tx| !tx.is_closed())
            .map(|tx| tx.send(frame)),
    };
    let result = json!({
        "jsonrpc": "2.0", "id": message["id"],
        "result": { "content": [{ "type": "text", "text": "announced" }] }
    });
    sse(&[(String::new(), result.to_string())], false)
}

fn call(fault: Fault, book: &mut Book, message: &Value) -> Response {
    if message["params"]["name"] == "announce" {
        return announce(fault, book, message);
    }
    let stream = book.streams.len();
    let token = message["params"]["_meta"]["progressToken"].clone();
    let mut frames = Vec::new();
    if fault != Fault::NoPriming {
        frames.push((format!("0/{stream}"), String::new()));
    }
    for step in 1..=STEPS {
        let note = json!({
            "jsonrpc": "2.0", "method": "notifications/progress",
            "params": { "progressToken": token, "progress": step }
        });
        frames.push((format!("{step}/{stream}"), note.to_string()));
    }
    let result = json!({
        "jsonrpc": "2.0", "id": message["id"],
        "result": { "content": [{ "type": "text", "text": "done" }] }
    });
    frames.push((format!("{}/{stream}", STEPS + 1), result.to_string()));
    book.streams.push(frames.clone());
    if fault == Fault::NoPriming {
        // Ids stay, so only the first frame breaks the promise.
        frames[0].0 = String::new();
    }
    if fault == Fault::HoldsBack {
        let response = sse(&frames, false);
        let (parts, body) = response.into_parts();
        let held = futures::stream::once(async move {
            tokio::time::sleep(HELD_FOR).await;
            axum::body::to_bytes(body, usize::MAX).await
        });
        return Response::from_parts(parts, Body::from_stream(held));
    }
    sse(&frames, false)
}

fn get(fault: Fault, book: &mut Book, headers: &HeaderMap) -> Response {
    let cursor = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let Some(cursor) = cursor else {
        if fault == Fault::NoPriming {
            return sse(&[("".to_owned(), "{}".to_owned())], true);
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        book.standalone.push(tx);
        let priming = Bytes::from("id: 0\nretry: 1000\ndata: \n\n");
        let live = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv()
                .await
                .map(|bytes| (Ok::<_, Infallible>(bytes), rx))
        });
        let body = futures::StreamExt::chain(futures::stream::iter([Ok(priming)]), live);
        return respond(StatusCode::OK, "text/event-stream", Body::from_stream(body));
    };
    if fault == Fault::EmptyResume {
        return sse(&[], false);
    }
    let parsed = cursor
        .split_once('/')
        .and_then(|(n, s)| Some((n.parse::<usize>().ok()?, s.parse::<usize>().ok()?)));
    let Some((after, stream)) = parsed else {
        return empty(StatusCode::BAD_REQUEST);
    };
    match book.streams.get(stream) {
        Some(frames) => {
            let from = match fault {
                Fault::ReplaysCursor => after,
                Fault::SkipsSilently => after + 3,
                _ => after + 1,
            };
            let rest: Vec<_> = frames.iter().skip(from).cloned().collect();
            sse(&rest, false)
        }
        None => empty(StatusCode::BAD_REQUEST),
    }
}
