//! One session attacking another's cursors, over real HTTP: session B sends
//! every variation of session A's `Last-Event-ID` it can build (copied,
//! re-tagged, forged, truncated, flipped, from another server), on the
//! event-store path and on the in-process path. B must never be served any
//! of A's events, every refusal must be as clear as an unknown cursor's,
//! and A's own resume must still find everything afterwards. Then `DELETE`
//! with a session store: unknown is `404`, restorable is deleted.

use std::sync::Arc;

use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::resumption::{REPLAY_NOTICE_EVENT, ReplayNotice};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::store::SessionStore;
use rmcp_resume_testkit::DemoServer;
use rmcp_resume_testkit::event_store::MemoryEventStore;
use rmcp_resume_testkit::raw::{Frame, RawSession, SseReader};
use rmcp_resume_testkit::store::MemoryStore;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What marks A's events: no event of B's ever carries it.
const A_MARK: &str = "A-secret-7f3c";

/// A fork server on 127.0.0.1:0 over `manager`; dropping it stops it.
struct Server {
    url: String,
    ct: CancellationToken,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.ct.cancel();
    }
}

async fn serve(
    manager: LocalSessionManager,
    sessions: Option<Arc<MemoryStore>>,
) -> anyhow::Result<Server> {
    let ct = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(ct.clone());
    config.session_store = sessions.map(|s| s as Arc<dyn SessionStore>);
    let service = StreamableHttpService::new(|| Ok(DemoServer::new()), Arc::new(manager), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let stop = ct.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
    });
    Ok(Server {
        url: format!("http://{addr}/mcp"),
        ct,
    })
}

fn with_store(store: &Arc<MemoryEventStore>, secret: Option<[u8; 32]>) -> LocalSessionManager {
    let manager = LocalSessionManager::default().with_event_store(store.clone());
    match secret {
        Some(secret) => manager.with_event_id_secret(secret),
        None => manager,
    }
}

/// Every frame of a finished call.
async fn call(session: &mut RawSession, name: &str, arguments: Value) -> Vec<Frame> {
    let (_, response) = session
        .call(name, arguments, true)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    SseReader::new(response)
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A's traffic: a streamed call, then an echo of its mark. Returns the
/// frames of the streamed call and every id A was given.
async fn a_traffic(a: &mut RawSession) -> (Vec<Frame>, Vec<String>) {
    let streamed = call(a, "stream", json!({ "count": 4, "interval_ms": 0 })).await;
    let echoed = call(a, "echo", json!({ "text": A_MARK })).await;
    assert!(echoed.iter().any(|f| f.data.contains(A_MARK)), "{echoed:?}");
    let mut all = ids(&streamed);
    all.extend(ids(&echoed));
    (streamed, all)
}

/// `replayed` is exactly what followed `streamed`'s first event.
fn assert_replays_the_rest(replayed: &[Frame], streamed: &[Frame]) {
    let expected: Vec<(&Option<String>, &str)> = streamed[1..]
        .iter()
        .map(|f| (&f.id, f.data.as_str()))
        .collect();
    let got: Vec<(&Option<String>, &str)> =
        replayed.iter().map(|f| (&f.id, f.data.as_str())).collect();
    assert_eq!(got, expected);
}

fn ids(frames: &[Frame]) -> Vec<String> {
    frames.iter().filter_map(|f| f.id.clone()).collect()
}

/// 64-bit FNV-1a, in hex: the session tag of the scheme this fork used
/// before its ids carried a MAC.
fn old_tag(session: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in session.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The tag and the escaped store id of a MAC-scoped id.
fn split(id: &str) -> (&str, &str) {
    id.split_once('~')
        .unwrap_or_else(|| panic!("not a scoped id: {id}"))
}

/// `id` with the last hex digit of its tag flipped by one bit.
fn flipped(id: &str) -> String {
    let (tag, rest) = split(id);
    let mut tag = tag.as_bytes().to_vec();
    if let Some(last) = tag.last_mut() {
        *last = if *last == b'0' { b'1' } else { b'0' };
    }
    format!("{}~{rest}", String::from_utf8_lossy(&tag))
}

/// What B got for one cursor: status, body text, frames if it was a stream.
struct Answer {
    status: u16,
    body: String,
    frames: Vec<Frame>,
}

/// Sends `cursor` on `session`'s GET. An SSE answer is read only up to its
/// first frame (a refused standalone cursor opens a live stream), so this
/// never waits on a stream that does not end.
async fn resume(session: &RawSession, cursor: &[u8]) -> Answer {
    let response = session
        .get(Some(cursor))
        .await
        .unwrap_or_else(|e| panic!("GET: {e}"));
    let status = response.status().as_u16();
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !sse {
        let body = response.text().await.unwrap_or_default();
        return Answer {
            status,
            body,
            frames: Vec::new(),
        };
    }
    let mut reader = SseReader::new(response);
    let first = reader.next().await.unwrap_or_else(|e| panic!("{e}"));
    Answer {
        status,
        body: String::new(),
        frames: first.into_iter().collect(),
    }
}

/// B received nothing of A's: no frame, and no body, carries A's mark or a
/// progress notification (B never asked for progress), nor any of A's ids.
fn assert_nothing_of_a(answer: &Answer, a_ids: &[String], what: &str) {
    assert!(!answer.body.contains(A_MARK), "{what}: {}", answer.body);
    for frame in &answer.frames {
        assert!(!frame.data.contains(A_MARK), "{what}: {frame:?}");
        assert!(
            !frame.data.contains("notifications/progress"),
            "{what}: {frame:?}"
        );
        if let Some(id) = &frame.id {
            assert!(!a_ids.contains(id), "{what}: {frame:?}");
        }
    }
}

/// A refusal with the cursor taken out of it, so that two refusals of
/// different cursors compare equal when their reason is the same.
fn refusal(answer: &Answer, cursor: &str) -> Value {
    assert_eq!(answer.status, 400, "{cursor:?}: {}", answer.body);
    let mut body: Value = serde_json::from_str(&answer.body)
        .unwrap_or_else(|e| panic!("{cursor:?}: {e}: {}", answer.body));
    assert_eq!(body["error"]["data"]["cursor"], cursor, "{}", answer.body);
    body["error"]["data"]["cursor"] = json!("<cursor>");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    let message = message.replace(&format!("{cursor:?}"), "\"<cursor>\"");
    body["error"]["message"] = json!(message);
    body
}

/// A `400` for a cursor that is not even well formed: never echoed back.
fn assert_malformed(answer: &Answer, what: &str) {
    assert_eq!(answer.status, 400, "{what}: {}", answer.body);
    let body: Value = serde_json::from_str(&answer.body)
        .unwrap_or_else(|e| panic!("{what}: {e}: {}", answer.body));
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("malformed Last-Event-ID"),
        "{what}: {message}"
    );
    assert_eq!(body["error"]["data"]["cursor"], "", "{what}");
}

/// Sends the envelope attacks (empty, 16 KiB, not UTF-8) on `b`.
async fn envelope_attacks(b: &RawSession, a_ids: &[String]) {
    let oversized = vec![b'e'; 16 * 1024];
    let cases: [(&str, &[u8]); 3] = [
        ("empty", b""),
        ("16 KiB", &oversized),
        ("not UTF-8", b"\xff\xfe~e1"),
    ];
    for (what, cursor) in cases {
        let answer = resume(b, cursor).await;
        assert_nothing_of_a(&answer, a_ids, what);
        assert_malformed(&answer, what);
    }
}

#[tokio::test]
async fn on_the_event_store_path_no_variation_of_a_cursor_reaches_another_session() {
    let store = Arc::new(MemoryEventStore::default());
    let server = serve(with_store(&store, None), None).await.expect("serve");
    let mut a = RawSession::open(&server.url).await.expect("A");
    let (streamed, a_ids) = a_traffic(&mut a).await;
    assert!(a_ids.len() >= 7, "{a_ids:?}");

    // B's own traffic, and B's own drained cursor: the store holds nothing
    // after it. That is the answer every attack below must get.
    let mut b = RawSession::open(&server.url).await.expect("B");
    let b_frames = call(&mut b, "echo", json!({ "text": "B" })).await;
    let b_last = ids(&b_frames).pop().expect("B's ids");
    let unknown = refusal(&resume(&b, b_last.as_bytes()).await, &b_last);
    assert!(
        unknown["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("holds nothing after")),
        "{unknown}"
    );
    let (b_tag, _) = split(&b_last);

    // A cursor of the same store issued by another server with another
    // secret (another process): its session there is C.
    let elsewhere = serve(with_store(&store, Some([9; 32])), None)
        .await
        .expect("serve");
    let mut c = RawSession::open(&elsewhere.url).await.expect("C");
    let c_ids = ids(&call(&mut c, "echo", json!({ "text": "C" })).await);

    let mut attacks: Vec<(String, String)> = Vec::new();
    for id in &a_ids {
        let (tag, store_id) = split(id);
        attacks.push(("exact copy".into(), id.clone()));
        attacks.push((
            "re-tagged with B's old-style tag".into(),
            format!("{}~{store_id}", old_tag(&b.session)),
        ));
        attacks.push((
            "B's tag on A's store id".into(),
            format!("{b_tag}~{store_id}"),
        ));
        attacks.push((
            "truncated MAC".into(),
            format!("{}~{store_id}", &tag[..tag.len() - 2]),
        ));
        attacks.push(("flipped bit".into(), flipped(id)));
        attacks.push(("bare store id".into(), store_id.to_owned()));
    }
    for id in &c_ids {
        attacks.push(("another server's cursor".into(), id.clone()));
    }
    for (what, cursor) in &attacks {
        let answer = resume(&b, cursor.as_bytes()).await;
        assert_nothing_of_a(&answer, &a_ids, what);
        assert_eq!(
            refusal(&answer, cursor),
            unknown,
            "{what} ({cursor}) is not answered as an unknown cursor"
        );
    }
    envelope_attacks(&b, &a_ids).await;

    // A lost nothing: from its first cursor, every later event of that
    // call, strictly after it, in order.
    let response = a.resume(&a_ids[0]).await.expect("A's resume");
    assert_eq!(response.status(), 200);
    let replayed = SseReader::new(response).collect().await.expect("replay");
    assert_replays_the_rest(&replayed, &streamed);
}

#[tokio::test]
async fn with_a_shared_secret_a_restored_session_resumes_on_another_instance_and_without_it_is_refused()
 {
    let store = Arc::new(MemoryEventStore::default());
    let sessions: Arc<MemoryStore> = Arc::default();
    let secret = [42u8; 32];
    let first = serve(with_store(&store, Some(secret)), Some(sessions.clone()))
        .await
        .expect("serve");
    let same_secret = serve(with_store(&store, Some(secret)), Some(sessions.clone()))
        .await
        .expect("serve");
    let other_secret = serve(with_store(&store, Some([1; 32])), Some(sessions))
        .await
        .expect("serve");
    let mut a = RawSession::open(&first.url).await.expect("A");
    let streamed = call(&mut a, "stream", json!({ "count": 3, "interval_ms": 0 })).await;
    let a_ids = ids(&streamed);

    // Another process's key: refused as an unknown cursor, nothing served.
    let foreign = a.at(&other_secret.url);
    let answer = resume(&foreign, a_ids[0].as_bytes()).await;
    let refused = refusal(&answer, &a_ids[0]);
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("holds nothing after")),
        "{refused}"
    );

    // The same secret: the restored session replays what followed.
    let shared = a.at(&same_secret.url);
    let response = shared.resume(&a_ids[0]).await.expect("resume");
    assert_eq!(response.status(), 200);
    let replayed = SseReader::new(response).collect().await.expect("replay");
    assert_replays_the_rest(&replayed, &streamed);
}

#[tokio::test]
async fn on_the_in_process_path_another_sessions_cursor_names_nothing_of_its() {
    let server = serve(LocalSessionManager::default(), None)
        .await
        .expect("serve");
    let mut a = RawSession::open(&server.url).await.expect("A");
    let (streamed, a_ids) = a_traffic(&mut a).await;
    let b = RawSession::open(&server.url).await.expect("B");
    // A request stream B never had: the in-process path's unknown cursor.
    let unknown = refusal(&resume(&b, b"1/99").await, "1/99");

    let elsewhere = serve(LocalSessionManager::default(), None)
        .await
        .expect("serve");
    let mut c = RawSession::open(&elsewhere.url).await.expect("C");
    let c_ids = ids(&call(&mut c, "echo", json!({ "text": "C" })).await);

    // A's ids and another server's name request streams of their own
    // session: in B they are unknown streams.
    for (what, cursor) in a_ids
        .iter()
        .map(|id| ("exact copy", id))
        .chain(c_ids.iter().map(|id| ("another server's cursor", id)))
    {
        let answer = resume(&b, cursor.as_bytes()).await;
        assert_nothing_of_a(&answer, &a_ids, what);
        assert_eq!(refusal(&answer, cursor), unknown, "{what} ({cursor})");
    }
    // Re-tagged, truncated or bit-flipped ids: a scheme this server never
    // gives out, or a malformed id of its own; `400` either way.
    for (what, cursor) in a_ids.iter().flat_map(|id| {
        let mut flipped = id.clone().into_bytes();
        if let Some(last) = flipped.last_mut() {
            *last ^= 0x40;
        }
        [
            ("old-style tag", format!("{}~{id}", old_tag(&b.session))),
            ("truncated", id[..id.len() - 1].to_owned()),
            (
                "bit flipped",
                String::from_utf8_lossy(&flipped).into_owned(),
            ),
        ]
    }) {
        let answer = resume(&b, cursor.as_bytes()).await;
        assert_nothing_of_a(&answer, &a_ids, what);
        assert_eq!(answer.status, 400, "{what} ({cursor}): {}", answer.body);
        let body: Value = serde_json::from_str(&answer.body).expect("a JSON-RPC error");
        assert!(body["error"]["message"].is_string(), "{what}: {body}");
    }
    // A standalone cursor of A's (the standalone stream's ids are numbers):
    // B's own standalone stream answers it, refused or fresh with the
    // `complete:false` notice, never with A's events.
    let answer = resume(&b, b"2").await;
    assert_nothing_of_a(&answer, &a_ids, "standalone");
    if answer.status == 200 {
        let notice = answer.frames.first().expect("a notice");
        assert_eq!(notice.event.as_deref(), Some(REPLAY_NOTICE_EVENT));
        let notice = ReplayNotice::from_json(&notice.data).expect("notice");
        assert!(!notice.complete);
    } else {
        assert_eq!(answer.status, 400, "{}", answer.body);
    }
    envelope_attacks(&b, &a_ids).await;

    // A lost nothing: its stream call resumes from its first cursor.
    let response = a.resume(&a_ids[0]).await.expect("A's resume");
    assert_eq!(response.status(), 200);
    let replayed = SseReader::new(response).collect().await.expect("replay");
    let notice = ReplayNotice::from_json(&replayed[0].data).expect("notice");
    assert!(notice.complete);
    assert_replays_the_rest(&replayed[1..], &streamed);
}

#[tokio::test]
async fn with_a_session_store_delete_is_404_for_an_unknown_session_and_deletes_a_restorable_one() {
    let sessions: Arc<MemoryStore> = Arc::default();
    let first = serve(LocalSessionManager::default(), Some(sessions.clone()))
        .await
        .expect("serve");
    let second = serve(LocalSessionManager::default(), Some(sessions.clone()))
        .await
        .expect("serve");

    // Never existed.
    let mut ghost = RawSession::open(&first.url).await.expect("session");
    ghost.session = "no-such-session".to_owned();
    assert_eq!(ghost.delete().await.expect("DELETE").status(), 404);

    // Live here: deleted, then unknown.
    let live = RawSession::open(&first.url).await.expect("session");
    assert_eq!(live.delete().await.expect("DELETE").status(), 200);
    assert_eq!(live.delete().await.expect("DELETE").status(), 404);
    assert!(sessions.load(&live.session).await.expect("load").is_none());

    // Live on the first instance, restorable on the second: deleted there,
    // its record with it; then unknown everywhere the store is asked.
    let restorable = RawSession::open(&first.url).await.expect("session");
    assert!(
        sessions
            .load(&restorable.session)
            .await
            .expect("load")
            .is_some()
    );
    let on_second = restorable.at(&second.url);
    assert_eq!(on_second.delete().await.expect("DELETE").status(), 200);
    assert!(
        sessions
            .load(&restorable.session)
            .await
            .expect("load")
            .is_none()
    );
    assert_eq!(on_second.delete().await.expect("DELETE").status(), 404);
}
