use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use sse_stream::Sse;

use super::*;
use crate::transport::common::client_side_sse::{ResumeFailureKind, SseReconnect};

/// A connector that must never be asked: these streams have no cursor.
struct NoResume;

#[derive(Debug, thiserror::Error)]
#[error("no resume")]
struct Never;

impl SseReconnect for NoResume {
    type Error = StreamableHttpError<Never>;

    fn connect(
        &mut self,
        _cursor: Option<&str>,
    ) -> BoxFuture<
        'static,
        Result<crate::transport::common::client_side_sse::BoxedSseResponse, Self::Error>,
    > {
        Box::pin(async { Err(StreamableHttpError::Client(Never)) })
    }
}

fn data(json: serde_json::Value) -> Sse {
    Sse {
        event: None,
        data: Some(json.to_string()),
        id: None,
        retry: None,
    }
}

fn progress() -> Sse {
    data(
        serde_json::json!({"jsonrpc":"2.0","method":"notifications/progress",
        "params":{"progressToken":"t","progress":1}}),
    )
}

fn broken() -> SseError {
    SseError::Body(Box::new(std::io::Error::from(
        std::io::ErrorKind::ConnectionReset,
    )))
}

#[derive(Debug)]
struct Fixed;

impl crate::transport::common::client_side_sse::SseRetryPolicy for Fixed {
    fn retry(&self, _: usize) -> Option<Duration> {
        Some(Duration::from_millis(1))
    }
}

/// The guarded request stream of `frames` under a revision that does (or
/// does not) resume, as the worker sees it.
async fn guarded(frames: Vec<Result<Sse, SseError>>, revision_resumes: bool) -> Vec<Sse> {
    let first = futures::stream::iter(frames).boxed();
    let stream = guard_request_stream(
        first,
        NoResume,
        crate::transport::common::client_side_sse::Policy(Arc::new(Fixed)),
        ResumeConfig::default(),
        RequestId::Number(4),
        revision_resumes,
        Some(Arc::from("s-77")),
    );
    stream.filter_map(|f| async move { f.ok() }).collect().await
}

/// An event's message and its `session_id` field.
type Logged = (String, Option<String>);

/// Each event as logged.
#[derive(Clone, Default)]
struct SessionIds(Arc<Mutex<Vec<Logged>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SessionIds {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        #[derive(Default)]
        struct Fields(String, Option<String>);
        impl tracing::field::Visit for Fields {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "session_id" {
                    self.1 = Some(value.to_owned());
                }
            }
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let Ok(mut seen) = self.0.lock() {
            seen.push((fields.0, fields.1));
        }
    }
}

#[tokio::test]
async fn a_request_stream_that_cannot_be_resumed_logs_its_session() {
    use tracing_subscriber::layer::SubscriberExt;
    let ids = SessionIds::default();
    let subscriber = tracing_subscriber::registry().with(ids.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let frames = guarded(vec![Ok(progress()), Err(broken())], true).await;
    assert!(frames.get(1).and_then(failure_of).is_some(), "{frames:?}");
    let seen = ids.0.lock().map(|seen| seen.clone()).unwrap_or_default();
    let line = seen
        .iter()
        .find(|(message, _)| message.contains("could not be resumed"));
    assert_eq!(line.and_then(|l| l.1.as_deref()), Some("s-77"), "{seen:?}");
}

fn failure_of(sse: &Sse) -> Option<ResumeFailure> {
    let value: serde_json::Value = serde_json::from_str(sse.data.as_deref()?).ok()?;
    let error = value.get("error")?;
    let code = error.get("code")?.as_i64()?;
    ResumeFailure::from_error(i32::try_from(code).ok()?, error.get("data"))
}

#[tokio::test]
async fn a_cut_call_without_resumption_fails_typed() {
    // Under 2026-07-28 a broken stream loses the call; the caller learns
    // that it may have run and was not sent again, not "transport closed".
    let frames = guarded(vec![Ok(progress()), Err(broken())], false).await;
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(
        failure_of(&frames[1]).map(|f| f.kind),
        Some(ResumeFailureKind::NotResumable)
    );
    let ended = guarded(vec![Ok(progress())], false).await;
    assert_eq!(
        ended.get(1).and_then(failure_of).map(|f| f.kind),
        Some(ResumeFailureKind::NotResumable)
    );
    // The same stream under a resumable revision failed for want of a cursor.
    let frames = guarded(vec![Ok(progress()), Err(broken())], true).await;
    assert_eq!(
        frames.get(1).and_then(failure_of).map(|f| f.kind),
        Some(ResumeFailureKind::Exhausted)
    );
}

#[tokio::test]
async fn an_answered_call_without_resumption_ends_as_it_came() {
    let response = data(serde_json::json!({"jsonrpc":"2.0","id":4,"result":{}}));
    let frames = guarded(vec![Ok(progress()), Ok(response), Err(broken())], false).await;
    assert_eq!(frames.len(), 2, "no failure after the response: {frames:?}");
    assert!(frames.iter().all(|f| failure_of(f).is_none()));
}

/// Upstream's worker moves each call's `POST` future by value (into its box,
/// through its `select!`), so every byte the guard adds to that future is
/// copied several times per call. The guard may add its own state, but it
/// must not hold the wrapped client's future twice (an `async` block that
/// awaits it does) nor inline a second `POST` (the handshake's resend):
/// either doubles the copy (3,120 bytes added over reqwest's 2,432 before).
#[cfg(feature = "transport-streamable-http-client-reqwest")]
#[test]
fn the_guarded_post_future_stays_close_to_the_inner_one() {
    let inner = reqwest::Client::new();
    let guard = ResumeGuard::new(inner.clone(), Arc::new(Fixed), ResumeConfig::default());
    let message: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "sum", "arguments": {} },
    }))
    .expect("a valid request");
    let endpoint: Arc<str> = Arc::from("http://127.0.0.1:1/mcp");
    let limits = ResponseLimits::default();
    let plain = std::mem::size_of_val(&line::post(
        &inner,
        endpoint.clone(),
        message.clone(),
        None,
        None,
        HashMap::new(),
        limits,
    ));
    let guarded = std::mem::size_of_val(&line::post(
        &guard,
        endpoint,
        message,
        None,
        None,
        HashMap::new(),
        limits,
    ));
    eprintln!("POST future: reqwest's {plain} bytes, guarded {guarded} bytes");
    assert!(
        guarded < plain + 512,
        "the guard adds {} bytes to each call's POST future (reqwest's alone: {plain})",
        guarded - plain
    );
}

/// A session's requests share one copy of their custom headers for their
/// resumes, and a change of headers (or of a value's sensitivity) is never
/// hidden behind the shared copy.
#[cfg(feature = "transport-streamable-http-client-reqwest")]
#[test]
fn requests_share_their_headers_until_they_change() {
    let guard = ResumeGuard::new(
        reqwest::Client::new(),
        Arc::new(Fixed),
        ResumeConfig::default(),
    );
    let version = |v: &'static str| {
        HashMap::from([(
            HeaderName::from_static("mcp-protocol-version"),
            HeaderValue::from_static(v),
        )])
    };
    let first = guard.kept_headers(&version("2025-11-25"));
    let again = guard.kept_headers(&version("2025-11-25"));
    assert!(Arc::ptr_eq(&first, &again), "the same headers are shared");

    let changed = guard.kept_headers(&version("2025-06-18"));
    assert_eq!(*changed, version("2025-06-18"));
    assert!(!Arc::ptr_eq(&first, &changed));

    let mut secret = version("2025-06-18");
    for value in secret.values_mut() {
        value.set_sensitive(true);
    }
    let sensitive = guard.kept_headers(&secret);
    assert!(
        !Arc::ptr_eq(&changed, &sensitive),
        "sensitivity is part of a header"
    );
    assert!(sensitive.values().all(HeaderValue::is_sensitive));

    let none = guard.kept_headers(&HashMap::new());
    assert!(none.is_empty());
}
