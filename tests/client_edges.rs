//! The fork's client over real HTTP against a scripted server, for what only
//! the HTTP layer shows: an event over the client's size limit (fatal at
//! once, no resume), a web page where the endpoint should be (the stream
//! stops, as upstream's does), and a busy server's `Retry-After` (honoured).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Response, StatusCode};
use axum::routing::any;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ResumeFailureKind;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, resume_failure,
};
use rmcp_resume_testkit::scripted;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(30);

/// What the scripted server does beyond the handshake.
#[derive(Clone, Copy)]
enum Script {
    /// The call's stream sends an event of 4 KiB, then stays open.
    Oversize,
    /// The standalone `GET` gets a web page; the call answers at once.
    WebPage,
    /// The call's stream sends one progress event and closes; its resume
    /// gets `503` with `Retry-After: 2`, then the response.
    Busy,
}

/// A `GET` as the server saw it: when, and its `Last-Event-ID`.
type Get = (Instant, Option<String>);

#[derive(Clone)]
struct Scripted {
    script: Script,
    /// Every `GET`.
    gets: Arc<Mutex<Vec<Get>>>,
}

impl Scripted {
    fn gets(&self) -> Vec<Get> {
        self.gets.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

fn sse(body: String) -> Response<Body> {
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("mcp-session-id", scripted::SESSION)
        .body(Body::from(body))
        .unwrap_or_default()
}

/// An SSE body that sends `frames`, then stays open until the test ends.
fn sse_held(frames: String, ct: CancellationToken) -> Response<Body> {
    let stream = futures::stream::once(async move { Ok::<_, std::io::Error>(frames) }).chain(
        futures::stream::once(async move {
            ct.cancelled().await;
            Ok(String::new())
        }),
    );
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("mcp-session-id", scripted::SESSION)
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

use futures::StreamExt;

fn frame(id: &str, data: &Value) -> String {
    format!("id: {id}\ndata: {data}\n\n")
}

async fn handle(
    State((s, ct)): State<(Scripted, CancellationToken)>,
    headers: HeaderMap,
    method: axum::http::Method,
    body: axum::body::Bytes,
) -> Response<Body> {
    if method == axum::http::Method::GET {
        let cursor = headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let resumes_before = s.gets().iter().filter(|(_, c)| c.is_some()).count();
        if let Ok(mut gets) = s.gets.lock() {
            gets.push((Instant::now(), cursor.clone()));
        }
        return match (s.script, cursor) {
            (Script::WebPage, None) => Response::builder()
                .header("content-type", "text/html")
                .body(Body::from("<html><body>welcome</body></html>"))
                .unwrap_or_default(),
            (Script::Busy, Some(_)) if resumes_before == 0 => Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .header("retry-after", "2")
                .body(Body::empty())
                .unwrap_or_default(),
            (Script::Busy, Some(_)) => sse(frame(
                "2/1",
                &json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}}),
            )),
            (_, _) => sse_held(": standalone\n\n".to_owned(), ct.clone()),
        };
    }
    if method == axum::http::Method::DELETE {
        return Response::new(Body::empty());
    }
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .body(Body::empty())
            .unwrap_or_default();
    };
    let id = message.get("id").cloned();
    match message.get("method").and_then(Value::as_str) {
        Some("initialize") => scripted::initialized(id.as_ref().unwrap_or(&Value::Null)),
        Some("tools/call") => {
            let priming = "id: 0/1\nretry: 10\ndata:\n\n".to_owned();
            let progress = json!({"jsonrpc":"2.0","method":"notifications/progress",
                "params":{"progressToken":"t","progress":1}});
            match s.script {
                Script::Oversize => {
                    let big = json!({"jsonrpc":"2.0","method":"notifications/message",
                        "params":{"level":"info","data":"x".repeat(4096)}});
                    sse_held(format!("{priming}{}", frame("1/1", &big)), ct.clone())
                }
                Script::Busy => sse(format!("{priming}{}", frame("1/1", &progress))),
                Script::WebPage => sse(format!(
                    "{priming}{}",
                    frame(
                        "1/1",
                        &json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"done"}]}})
                    )
                )),
            }
        }
        _ => Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Body::empty())
            .unwrap_or_default(),
    }
}

async fn serve(script: Script, ct: &CancellationToken) -> anyhow::Result<(String, Scripted)> {
    let scripted = Scripted {
        script,
        gets: Arc::default(),
    };
    let app = axum::Router::new()
        .route("/mcp", any(handle))
        .with_state((scripted.clone(), ct.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let ct = ct.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { ct.cancelled().await })
            .await;
    });
    Ok((url, scripted))
}

async fn call(
    url: &str,
    max_sse_event_size: usize,
) -> anyhow::Result<Result<String, rmcp::ServiceError>> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.max_sse_event_size = max_sse_event_size;
    let client = ClientConfig::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await?;
    let params: CallToolRequestParams = serde_json::from_value(json!({
        "name": "anything", "arguments": {}, "_meta": {"progressToken": "t"}
    }))?;
    let outcome = tokio::time::timeout(LIMIT, client.peer().call_tool(params)).await?;
    let _ = client.cancel().await;
    Ok(outcome.map(|r| {
        r.content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default()
    }))
}

#[tokio::test]
async fn an_event_over_the_size_limit_fails_the_call_at_once() -> anyhow::Result<()> {
    let ct = CancellationToken::new();
    let (url, scripted) = serve(Script::Oversize, &ct).await?;
    let outcome = call(&url, 1024).await?;
    let error = outcome
        .err()
        .ok_or_else(|| anyhow::anyhow!("the call succeeded"))?;
    let failure = resume_failure(&error).ok_or_else(|| anyhow::anyhow!("untyped: {error}"))?;
    assert_eq!(failure.kind, ResumeFailureKind::Fatal, "{error}");
    let resumes: Vec<_> = scripted
        .gets()
        .into_iter()
        .filter(|(_, c)| c.is_some())
        .collect();
    assert!(resumes.is_empty(), "resumed {} times", resumes.len());
    ct.cancel();
    Ok(())
}

#[tokio::test]
async fn a_web_page_where_the_stream_should_be_is_not_retried() -> anyhow::Result<()> {
    let ct = CancellationToken::new();
    let (url, scripted) = serve(Script::WebPage, &ct).await?;
    let outcome = call(&url, 1 << 20).await?;
    assert_eq!(outcome.ok().as_deref(), Some("done"));
    // Absence can only be watched for: the policy's first retries would
    // come within this window (1 s, then 2 s later with upstream's default).
    tokio::time::sleep(Duration::from_secs(4)).await;
    let standalone = scripted
        .gets()
        .into_iter()
        .filter(|(_, c)| c.is_none())
        .count();
    assert!(standalone <= 1, "a web page was retried: {standalone} GETs");
    ct.cancel();
    Ok(())
}

#[tokio::test]
async fn a_busy_servers_retry_after_is_honoured() -> anyhow::Result<()> {
    let ct = CancellationToken::new();
    let (url, scripted) = serve(Script::Busy, &ct).await?;
    let outcome = call(&url, 1 << 20).await?;
    assert_eq!(outcome.ok().as_deref(), Some("done"));
    let resumes: Vec<Instant> = scripted
        .gets()
        .into_iter()
        .filter_map(|(at, c)| c.map(|_| at))
        .collect();
    assert_eq!(resumes.len(), 2, "the 503, then the resume that answers");
    let waited = resumes[1] - resumes[0];
    assert!(
        waited >= Duration::from_secs(2),
        "Retry-After: 2 honoured: waited {waited:?}"
    );
    ct.cancel();
    Ok(())
}

/// The `sse_stream` spans made while a client ran: each one's fields.
#[derive(Clone, Default)]
struct StreamSpans(Arc<Mutex<Vec<std::collections::BTreeMap<String, String>>>>);

struct Fields<'a>(&'a mut std::collections::BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for StreamSpans {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().name() != "sse_stream" {
            return;
        }
        let mut fields = std::collections::BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        if let Ok(mut spans) = self.0.lock() {
            spans.push(fields);
        }
    }
}

impl StreamSpans {
    /// The fields of the request streams' spans.
    fn of_requests(&self) -> Vec<std::collections::BTreeMap<String, String>> {
        let spans = self.0.lock().map(|s| s.clone()).unwrap_or_default();
        spans
            .into_iter()
            .filter(|f| f.get("stream").map(String::as_str) == Some("Request"))
            .collect()
    }
}

/// Under a subscriber that records spans (any that shows warnings), an
/// answered call makes no span for its stream, and a call whose stream
/// logs gets its lines under one with the session and the request. The
/// runtime is single-threaded, so the subscriber sees every task.
#[tokio::test]
async fn a_calls_stream_makes_a_span_only_for_what_it_logs() -> anyhow::Result<()> {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = StreamSpans::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    let ct = CancellationToken::new();

    let (url, _) = serve(Script::WebPage, &ct).await?;
    let outcome = call(&url, 1 << 20).await?;
    assert_eq!(outcome.ok().as_deref(), Some("done"));
    assert_eq!(spans.of_requests(), vec![], "an answered call logs nothing");

    let (url, _) = serve(Script::Busy, &ct).await?;
    let outcome = call(&url, 1 << 20).await?;
    assert_eq!(outcome.ok().as_deref(), Some("done"));
    let logged = spans.of_requests();
    assert!(!logged.is_empty(), "a resumed call logs its resume");
    for fields in &logged {
        assert_eq!(
            fields.get("session_id").map(String::as_str),
            Some(scripted::SESSION)
        );
        assert_eq!(fields.get("request").map(String::as_str), Some("1"));
    }
    ct.cancel();
    Ok(())
}
