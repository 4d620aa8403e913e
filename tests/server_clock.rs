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

/// A GET whose body is never polled past its first frame is a reader that
/// has stalled, on any machine: no socket buffer absorbs what it does not read.
#[tokio::test(start_paused = true)]
async fn a_stalled_reader_holds_back_only_its_stream_and_only_until_the_stall_timeout() {
    use http_body_util::BodyExt as _;
    use rmcp::transport::resumption::{REPLAY_NOTICE_EVENT, ReplayNotice};

    const STALL: Duration = Duration::from_secs(5);
    let service = TestServer::new(Side::Fork)
        .window(4)
        .stall_timeout(STALL)
        .without_session_timers()
        .keep_alive(None)
        .demo_service()
        .0;
    let session = open(&service).await;
    let get = service
        .handle(request(http::Method::GET, Some(&session), None))
        .await;
    assert_eq!(get.status(), 200);
    let mut stalled = get.into_body();
    // The priming frame, then nothing is ever read again.
    let priming = stalled.frame().await;
    assert!(priming.is_some());
    let started = tokio::time::Instant::now();

    let flood = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "announce", "arguments": { "count": 50 } } });
    let flooding = service
        .handle(request(http::Method::POST, Some(&session), Some(flood)))
        .await;
    let flood = tokio::spawn(text(flooding));

    // The rest of the session answers while the flood waits for the reader.
    let sum = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "sum", "arguments": { "a": 2, "b": 2 } } });
    let answer = text(
        service
            .handle(request(http::Method::POST, Some(&session), Some(sum)))
            .await,
    )
    .await;
    assert!(answer.contains(r#""text":"4""#), "{answer}");
    assert!(
        started.elapsed() < STALL,
        "answered while the reader stalls"
    );
    assert!(!flood.is_finished(), "the flood waits for its reader");

    // After the stall timeout the reader is ended and the flood goes on.
    let flooded = flood.await.unwrap_or_else(|e| panic!("{e}"));
    assert!(flooded.contains("announced 50"), "{flooded}");
    assert!(started.elapsed() >= STALL, "{:?}", started.elapsed());
    drop(stalled);

    // Its resume is told that the floor moved past it.
    let mut resume = request(http::Method::GET, Some(&session), None);
    resume
        .headers_mut()
        .insert("last-event-id", http::HeaderValue::from_static("0"));
    let response = service.handle(resume).await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let first = match body.frame().await {
        Some(Ok(frame)) => frame.into_data().unwrap_or_default(),
        _ => panic!("no notice"),
    };
    let first = String::from_utf8_lossy(&first).into_owned();
    assert!(
        first.contains(&format!("event: {REPLAY_NOTICE_EVENT}")),
        "{first}"
    );
    let data = first
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("{first}"));
    let notice = ReplayNotice::from_json(data).unwrap_or_else(|e| panic!("{e}"));
    assert!(!notice.complete, "{notice:?}");
}

/// A session whose worker stopped (here: idle past its keep-alive) is gone,
/// whatever asks: `404` everywhere, never `400` or `500`.
#[tokio::test(start_paused = true)]
async fn a_session_whose_worker_stopped_is_404_everywhere() {
    let (service, manager) = TestServer::new(Side::Fork)
        .idle_session(Duration::from_secs(60))
        .keep_alive(None)
        .demo_service();
    let session = open(&service).await;
    let handle = manager
        .handle(&session.as_str().into())
        .await
        .unwrap_or_else(|| panic!("the session is live"));
    let started = tokio::time::Instant::now();
    handle.stopped().await;
    assert!(
        started.elapsed() >= Duration::from_secs(60),
        "stopped by its idle timeout"
    );
    drop(handle);

    let plain = service
        .handle(request(http::Method::GET, Some(&session), None))
        .await;
    assert_eq!(plain.status(), 404);
    let mut resume = request(http::Method::GET, Some(&session), None);
    resume
        .headers_mut()
        .insert("last-event-id", http::HeaderValue::from_static("0"));
    assert_eq!(service.handle(resume).await.status(), 404);
    let ping = json!({ "jsonrpc": "2.0", "id": 9, "method": "ping" });
    let post = service
        .handle(request(http::Method::POST, Some(&session), Some(ping)))
        .await;
    assert_eq!(post.status(), 404);
    let delete = service
        .handle(request(http::Method::DELETE, Some(&session), None))
        .await;
    assert_eq!(delete.status(), 404);
}

/// The notice a resume opens with, and the ids of the events after it.
async fn resume_from(service: &Service, session: &str, cursor: &str) -> (Value, Vec<String>) {
    let mut get = request(http::Method::GET, Some(session), None);
    get.headers_mut().insert(
        "last-event-id",
        cursor.parse().unwrap_or_else(|e| panic!("{e}")),
    );
    let response = service.handle(get).await;
    assert_eq!(response.status(), 200, "resume of {cursor}");
    // The stream stays open for live events: read what is ready, then stop.
    let mut body = response.into_body();
    let mut sse = String::new();
    while let Ok(Some(Ok(frame))) =
        tokio::time::timeout(Duration::from_millis(10), body.frame()).await
    {
        if let Ok(data) = frame.into_data() {
            sse.push_str(&String::from_utf8_lossy(&data));
        }
    }
    let notice = sse
        .lines()
        .find_map(|l| l.strip_prefix("data: {\"cursor\""))
        .map(|rest| format!("{{\"cursor\"{rest}"))
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or_else(|| panic!("no notice in {sse}"));
    (notice, event_ids(&sse))
}

async fn announce(service: &Service, session: &str, id: u64, count: usize) {
    let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "announce", "arguments": { "count": count } } });
    let answer = text(
        service
            .handle(request(http::Method::POST, Some(session), Some(call)))
            .await,
    )
    .await;
    assert!(answer.contains(&format!("announced {count}")), "{answer}");
}

#[tokio::test(start_paused = true)]
async fn a_resume_within_the_retention_finds_its_cursor_past_the_count_window() {
    // Defaults: 16 events kept however old, and every event younger than
    // twice the 3 s `retry`. 100 notifications while the client is away
    // for a second are all replayed.
    let service = TestServer::new(Side::Fork)
        .without_session_timers()
        .keep_alive(None)
        .demo_service()
        .0;
    let session = open(&service).await;
    announce(&service, &session, 1, 100).await;
    tokio::time::advance(Duration::from_secs(1)).await;
    let (notice, ids) = resume_from(&service, &session, "0").await;
    assert_eq!(notice["complete"], json!(true), "{notice}");
    assert_eq!(ids.len(), 100, "{ids:?}");
    assert_eq!(ids.first().map(String::as_str), Some("1"));

    // Past the retention only the last 16 are kept, and the resume says so.
    tokio::time::advance(Duration::from_secs(6)).await;
    announce(&service, &session, 2, 1).await;
    let (notice, ids) = resume_from(&service, &session, "0").await;
    assert_eq!(notice["complete"], json!(false), "{notice}");
    assert_eq!(ids.len(), 16, "{ids:?}");
}

#[tokio::test(start_paused = true)]
async fn a_session_keeps_at_most_its_byte_budget_and_a_flood_spares_other_sessions() {
    const SESSION: usize = 8 << 10;
    const TOTAL: usize = 12 << 10;
    let (service, manager) = TestServer::new(Side::Fork)
        .replay_bytes(SESSION, TOTAL)
        .without_session_timers()
        .keep_alive(None)
        .demo_service();
    let quiet = open(&service).await;
    announce(&service, &quiet, 1, 20).await;
    let quiet_bytes = manager.replay_bytes();
    assert!(quiet_bytes > 0 && quiet_bytes < SESSION, "{quiet_bytes}");

    // A flood with no reader: the flooding session evicts its own history.
    let flooding = open(&service).await;
    announce(&service, &flooding, 1, 2_000).await;
    let total = manager.replay_bytes();
    // Each session within its budget (one event of slack), the flood's
    // share cut down to what the total leaves it.
    assert!(total <= TOTAL + 256, "{total} bytes retained");
    let (notice, ids) = resume_from(&service, &flooding, "0").await;
    assert_eq!(
        notice["complete"],
        json!(false),
        "the flood's floor moved: {notice}"
    );
    assert!(
        !ids.is_empty() && ids.len() < 2_000,
        "{} replayed",
        ids.len()
    );

    // The quiet session's history is intact.
    let (notice, ids) = resume_from(&service, &quiet, "0").await;
    assert_eq!(notice["complete"], json!(true), "{notice}");
    assert_eq!(ids.len(), 20);
}

#[tokio::test(start_paused = true)]
async fn an_answered_stream_expires_on_time_in_a_quiet_session() {
    let (service, manager) = TestServer::new(Side::Fork)
        .completed_ttl(Duration::from_secs(30))
        .without_session_timers()
        .keep_alive(None)
        .demo_service();
    let session = open(&service).await;
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "sum", "arguments": { "a": 1, "b": 2 } } });
    let sse = text(
        service
            .handle(request(http::Method::POST, Some(&session), Some(call)))
            .await,
    )
    .await;
    let priming = event_ids(&sse)
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("no ids: {sse}"));
    let answered = manager.replay_bytes();
    // Nothing else happens in the session: its worker's timer frees the
    // answered stream. The clock is paused, so the worker runs only when
    // this task yields; it needs a turn or two.
    tokio::time::advance(Duration::from_secs(31)).await;
    for _ in 0..100 {
        if manager.replay_bytes() < answered {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(
        manager.replay_bytes() < answered,
        "still {} bytes of {answered}",
        manager.replay_bytes()
    );
    let mut get = request(http::Method::GET, Some(&session), None);
    get.headers_mut().insert(
        "last-event-id",
        priming.parse().unwrap_or_else(|e| panic!("{e}")),
    );
    assert_eq!(service.handle(get).await.status(), 400);
}

/// The session's idle timeout counts from its last activity: a request
/// part-way through the timeout moves the end, and a session left alone
/// ends on time (its worker re-arms one timer per quiet period, not one per
/// turn, so both edges are checked). Answered streams are kept longer than
/// the test runs, so no expiry falls inside it.
#[tokio::test(start_paused = true)]
async fn an_idle_session_ends_its_timeout_after_its_last_request_not_before() {
    use rmcp::transport::common::server_side_http::SessionId;

    const IDLE: Duration = Duration::from_secs(60);
    let (service, manager) = TestServer::new(Side::Fork)
        .completed_ttl(Duration::from_secs(3_600))
        .idle_session(IDLE)
        .keep_alive(None)
        .demo_service();
    let session = open(&service).await;
    let id: SessionId = session.as_str().into();
    let handle = manager
        .handle(&id)
        .await
        .unwrap_or_else(|| panic!("no session {session}"));
    let started = tokio::time::Instant::now();

    // Activity at 50 s and 100 s: the first deadline (60 s) passes quietly.
    for _ in 0..2 {
        tokio::time::advance(Duration::from_secs(50)).await;
        let ping = json!({ "jsonrpc": "2.0", "id": 9, "method": "ping" });
        let answer = service
            .handle(request(http::Method::POST, Some(&session), Some(ping)))
            .await;
        assert_eq!(answer.status(), 200);
        let _ = text(answer).await;
    }
    let last = tokio::time::Instant::now();
    tokio::time::advance(IDLE - Duration::from_secs(1)).await;
    assert!(
        handle.is_live(),
        "ended {:?} after its last request, before its idle timeout",
        last.elapsed()
    );

    // Left alone, it ends one idle timeout after its last request.
    handle.stopped().await;
    let ended = last.elapsed();
    assert!(
        (IDLE..IDLE + Duration::from_secs(1)).contains(&ended),
        "ended {ended:?} after its last request ({:?} after opening)",
        started.elapsed()
    );
    let ping = json!({ "jsonrpc": "2.0", "id": 10, "method": "ping" });
    let gone = service
        .handle(request(http::Method::POST, Some(&session), Some(ping)))
        .await;
    assert_eq!(gone.status(), 404);
}

/// An answered stream expiring in a quiet session is nobody's activity: the
/// session still ends one idle timeout after its last request, not that
/// plus the stream's TTL (issue 43: expiry rings counted as activity, so
/// every idle session outlived its `keep_alive` by up to the TTL).
#[tokio::test(start_paused = true)]
async fn an_answered_stream_expiring_does_not_keep_an_idle_session() {
    use rmcp::transport::common::server_side_http::SessionId;

    const IDLE: Duration = Duration::from_secs(60);
    const TTL: Duration = Duration::from_secs(30);
    let (service, manager) = TestServer::new(Side::Fork)
        .completed_ttl(TTL)
        .idle_session(IDLE)
        .keep_alive(None)
        .demo_service();
    let session = open(&service).await;
    let id: SessionId = session.as_str().into();
    let handle = manager
        .handle(&id)
        .await
        .unwrap_or_else(|| panic!("no session {session}"));
    let ping = json!({ "jsonrpc": "2.0", "id": 9, "method": "ping" });
    let answer = service
        .handle(request(http::Method::POST, Some(&session), Some(ping)))
        .await;
    assert_eq!(answer.status(), 200);
    let _ = text(answer).await;
    let last = tokio::time::Instant::now();

    handle.stopped().await;
    let ended = last.elapsed();
    assert!(
        (IDLE..IDLE + Duration::from_secs(1)).contains(&ended),
        "ended {ended:?} after its last request: the idle timeout is {IDLE:?}, the answered \
         stream expired {TTL:?} after it"
    );
}

/// The idle timeout of the two tests below.
const QUIET_IDLE: Duration = Duration::from_secs(60);

/// A session with a [`QUIET_IDLE`] idle timeout, its handle, the demo
/// tools' gate, and the body of a `work` call (held by its gate) read up to
/// its priming event, so that its reader owes nothing while the tool is
/// quiet.
async fn a_quiet_call() -> (
    rmcp::transport::streamable_http_server::session::local::LocalSessionHandle,
    std::sync::Arc<tokio::sync::Notify>,
    BoxBody<Bytes, Infallible>,
) {
    use rmcp::transport::common::server_side_http::SessionId;

    let server = TestServer::new(Side::Fork)
        .completed_ttl(Duration::from_secs(3_600))
        .idle_session(QUIET_IDLE)
        .keep_alive(None);
    let gate = server.gate();
    let (service, manager) = server.demo_service();
    let session = open(&service).await;
    let id: SessionId = session.as_str().into();
    let handle = manager
        .handle(&id)
        .await
        .unwrap_or_else(|| panic!("no session {session}"));
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "work", "arguments": { "count": 0 } }
    });
    let response = service
        .handle(request(http::Method::POST, Some(&session), Some(call)))
        .await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let priming = match body.frame().await {
        Some(Ok(frame)) => frame.into_data().unwrap_or_default(),
        other => panic!("no priming event: {other:?}"),
    };
    assert!(
        String::from_utf8_lossy(&priming).contains("id:"),
        "{priming:?}"
    );
    (handle, gate, body)
}

/// A call whose tool stays quiet longer than the idle timeout, with its
/// `POST` stream still open, is not an idle session: the client is there,
/// waiting for the answer. Ending the session would lose the call.
#[tokio::test(start_paused = true)]
async fn a_quiet_call_with_its_post_open_keeps_its_session() {
    let (handle, gate, mut body) = a_quiet_call().await;
    tokio::time::advance(QUIET_IDLE * 3).await;
    assert!(
        handle.is_live(),
        "the session ended while its call's POST stream was open"
    );

    gate.notify_one();
    let mut rest = String::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    rest.push_str(&String::from_utf8_lossy(&data));
                }
            }
            Err(never) => match never {},
        }
    }
    assert!(rest.contains("finished 0 steps"), "{rest}");
}

/// The other side of the rule above: once the call's `POST` stream is
/// dropped (its client gone), nothing keeps the session; it ends one idle
/// timeout later though its tool still runs.
#[tokio::test(start_paused = true)]
async fn a_dropped_post_stream_no_longer_keeps_its_session() {
    let (handle, _gate, body) = a_quiet_call().await;
    drop(body);
    let dropped = tokio::time::Instant::now();

    // Bounded: a session kept for ever must fail the test, not hang it.
    if tokio::time::timeout(QUIET_IDLE * 10, handle.stopped())
        .await
        .is_err()
    {
        panic!(
            "the session still runs {:?} after its only connection went",
            QUIET_IDLE * 10
        );
    }
    let ended = dropped.elapsed();
    assert!(
        ended < QUIET_IDLE + Duration::from_secs(1),
        "the session outlived its idle timeout by {:?} after its only connection went",
        ended.saturating_sub(QUIET_IDLE)
    );
}
