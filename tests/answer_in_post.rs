//! A request's answer read with its `POST` (rmcp 3.x): the guard hands an
//! answer that comes first, and soon, to the worker as the `POST`'s result,
//! and anything else as the stream it is, with every frame in its place.
//! Driven through the guard's `post_message` over real HTTP, against a
//! scripted server, so that each case's path is what is asserted; then
//! whole calls through upstream's worker, one per path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::Response;
use axum::routing::post;
use futures::StreamExt;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::{FixedInterval, ResumeConfig};
use rmcp::transport::streamable_http_client::{
    ResumeGuard, StreamableHttpClient, StreamableHttpPostResponse,
};
use rmcp_resume_testkit::scripted;
use serde_json::{Value, json};
use tokio::sync::oneshot;

const LIMIT: Duration = Duration::from_secs(30);

/// What the call's stream sends after its priming frame.
#[derive(Clone, Copy, Debug)]
enum Script {
    /// The answer.
    Answer,
    /// A progress notification, then the answer.
    ProgressFirst,
    /// Nothing until the test releases it, then the answer.
    Held,
    /// A response naming another request.
    OtherId,
    /// A frame of another event type, then the answer.
    OtherEvent,
    /// A tool that works for longer than the wait, then answers.
    Slow,
}

type Release = Arc<Mutex<Option<oneshot::Receiver<()>>>>;

fn frame(id: &str, data: &Value) -> String {
    format!("id: {id}\ndata: {data}\n\n")
}

fn answer(id: &Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"done"}]}})
}

/// How long the `Slow` tool works: longer than the default wait.
const SLOW: Duration = Duration::from_millis(60);

async fn handle(
    State((script, release)): State<(Script, Release)>,
    body: axum::body::Bytes,
) -> Response<Body> {
    let message = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    match message.get("method").and_then(Value::as_str) {
        Some("initialize") => return scripted::initialized(&id),
        Some("tools/call") => {}
        _ => {
            return Response::builder()
                .status(axum::http::StatusCode::ACCEPTED)
                .body(Body::empty())
                .unwrap_or_default();
        }
    }
    let priming = "id: 0/1\nretry: 10\ndata:\n\n".to_owned();
    let progress = json!({"jsonrpc":"2.0","method":"notifications/progress",
        "params":{"progressToken":"t","progress":1}});
    let first = match script {
        Script::Answer => format!("{priming}{}", frame("0/2", &answer(&id))),
        Script::ProgressFirst => format!(
            "{priming}{}{}",
            frame("0/2", &progress),
            frame("0/3", &answer(&id))
        ),
        Script::Held => priming,
        Script::Slow => priming,
        Script::OtherId => format!("{priming}{}", frame("0/2", &answer(&json!(99)))),
        Script::OtherEvent => format!(
            "{priming}event: endpoint\ndata: /elsewhere\n\n{}",
            frame("0/3", &answer(&id))
        ),
    };
    let held = release.lock().ok().and_then(|mut r| r.take());
    let rest = futures::stream::once(async move {
        match (held, script) {
            (Some(released), _) => {
                let _ = released.await;
                frame("0/2", &answer(&id))
            }
            (None, Script::Slow) => {
                // The tool's own work, not a synchronisation.
                tokio::time::sleep(SLOW).await;
                frame("0/2", &answer(&id))
            }
            (None, _) => String::new(),
        }
    });
    let body = futures::stream::once(async move { first })
        .chain(rest)
        .map(Ok::<_, std::io::Error>);
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(body))
        .unwrap_or_default()
}

/// Serves `script` on a port of its own; returns its endpoint.
async fn serve(script: Script, release: Release) -> anyhow::Result<String> {
    let app = axum::Router::new()
        .route("/mcp", post(handle))
        .with_state((script, release));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(url)
}

/// Serves `script` and sends one `tools/call` through a guard with
/// `answer_wait`; returns what the `POST` gave, and the release of a held
/// answer.
async fn post_once(
    script: Script,
    answer_wait: Duration,
) -> anyhow::Result<(StreamableHttpPostResponse, Option<oneshot::Sender<()>>)> {
    let (release_tx, release_rx) = oneshot::channel();
    let held = matches!(script, Script::Held);
    let release: Release = Arc::new(Mutex::new(held.then_some(release_rx)));
    let url = serve(script, release).await?;
    let guard = ResumeGuard::new(
        reqwest::Client::new(),
        Arc::new(FixedInterval::default()),
        ResumeConfig::default().with_answer_wait(answer_wait),
    );
    let message: ClientJsonRpcMessage = serde_json::from_value(json!({
        "jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name":"anything","arguments":{}}
    }))?;
    let response = tokio::time::timeout(
        LIMIT,
        guard.post_message(Arc::from(url), message, None, None, HashMap::new()),
    )
    .await??;
    Ok((response, held.then_some(release_tx)))
}

/// The messages of a streamed answer, as upstream's worker reads them.
async fn messages(response: StreamableHttpPostResponse) -> anyhow::Result<Vec<Value>> {
    let StreamableHttpPostResponse::Sse(stream, _) = response else {
        anyhow::bail!("expected a stream, got {response:?}");
    };
    let frames = tokio::time::timeout(LIMIT, stream.collect::<Vec<_>>()).await?;
    let mut out = Vec::new();
    for frame in frames {
        let frame = frame?;
        let is_message = matches!(frame.event.as_deref(), None | Some("" | "message"));
        if let Some(data) = frame.data.filter(|d| is_message && !d.trim().is_empty()) {
            out.push(serde_json::from_str(&data)?);
        }
    }
    Ok(out)
}

/// Asserts that `response` is the answer to request 7 itself.
fn assert_answered(response: StreamableHttpPostResponse) {
    match response {
        StreamableHttpPostResponse::Json(message, _) => assert!(is_answer_to(&message, 7)),
        other => panic!("expected the answer itself, got {other:?}"),
    }
}

/// Asserts that `response` is a stream whose one message answers `id`.
async fn assert_streamed_answer(
    response: StreamableHttpPostResponse,
    id: i64,
) -> anyhow::Result<()> {
    let got = messages(response).await?;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].get("id"), Some(&json!(id)));
    Ok(())
}

fn is_answer_to(message: &ServerJsonRpcMessage, id: i64) -> bool {
    matches!(message, JsonRpcMessage::Response(r) if r.id == RequestId::Number(id))
}

#[tokio::test]
async fn an_answer_that_comes_first_is_the_posts_result() -> anyhow::Result<()> {
    let (response, _) = post_once(Script::Answer, ResumeConfig::DEFAULT_ANSWER_WAIT).await?;
    assert_answered(response);
    Ok(())
}

#[tokio::test]
async fn a_notification_before_the_answer_keeps_the_stream_in_order() -> anyhow::Result<()> {
    let (response, _) = post_once(Script::ProgressFirst, ResumeConfig::DEFAULT_ANSWER_WAIT).await?;
    let got = messages(response).await?;
    let methods: Vec<_> = got.iter().map(|m| m.get("method").cloned()).collect();
    assert_eq!(
        methods,
        [Some(json!("notifications/progress")), None],
        "{got:?}"
    );
    assert_eq!(got[1].get("id"), Some(&json!(7)));
    Ok(())
}

/// An answer later than the wait comes on the stream, after the `POST` has
/// returned: the server holds it until the test has the `POST`'s result.
#[tokio::test]
async fn an_answer_after_the_wait_comes_on_the_stream() -> anyhow::Result<()> {
    let (response, release) = post_once(Script::Held, Duration::from_millis(20)).await?;
    assert!(matches!(response, StreamableHttpPostResponse::Sse(..)));
    if let Some(release) = release {
        let _ = release.send(());
    }
    assert_streamed_answer(response, 7).await?;
    Ok(())
}

#[tokio::test]
async fn a_response_to_another_request_is_left_to_the_worker() -> anyhow::Result<()> {
    let (response, _) = post_once(Script::OtherId, ResumeConfig::DEFAULT_ANSWER_WAIT).await?;
    assert_streamed_answer(response, 99).await?;
    Ok(())
}

/// A frame of another event type never reaches the worker: the resuming
/// stream drops it on either path, so the answer after it is still first.
#[tokio::test]
async fn another_event_type_does_not_stand_before_the_answer() -> anyhow::Result<()> {
    let (response, _) = post_once(Script::OtherEvent, ResumeConfig::DEFAULT_ANSWER_WAIT).await?;
    assert_answered(response);
    Ok(())
}

#[tokio::test]
async fn a_zero_wait_never_reads_the_answer() -> anyhow::Result<()> {
    let (response, _) = post_once(Script::Answer, Duration::ZERO).await?;
    assert_streamed_answer(response, 7).await?;
    Ok(())
}

/// Whole calls through upstream's worker: answered in the `POST`, after a
/// notification, and after a tool that works past the wait. Each returns
/// its answer, and the notification reaches the handler.
#[tokio::test]
async fn calls_through_the_worker_are_answered_on_every_path() -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp_resume_testkit::progress::ProgressRecorder;

    for script in [Script::Answer, Script::ProgressFirst, Script::Slow] {
        let url = serve(script, Release::default()).await?;
        let recorder = ProgressRecorder::default();
        let client = recorder
            .clone()
            .serve(StreamableHttpClientTransport::from_uri(url))
            .await?;
        let params: CallToolRequestParams = serde_json::from_value(json!({
            "name": "anything", "arguments": {}, "_meta": {"progressToken": "t"}
        }))?;
        let result = tokio::time::timeout(LIMIT, client.peer().call_tool(params)).await??;
        let text = result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone());
        assert_eq!(text.as_deref(), Some("done"), "{script:?}");
        if matches!(script, Script::ProgressFirst) {
            let seen = recorder.until(1, LIMIT).await;
            assert_eq!(
                seen.get("t").map(Vec::as_slice),
                Some(&[1.0][..]),
                "{script:?}"
            );
        }
        client.cancel().await?;
    }
    Ok(())
}
