//! Upstream's `EventStore` path, made honest: ids scoped to their session,
//! no completeness claimed without proof, no empty `200` for a cursor the
//! store cannot answer, no stream-id collisions across restores, and a
//! restored session published only after its handshake replay.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::transport::resumption::REPLAY_NOTICE_EVENT;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, SessionManager};
use rmcp_resume_testkit::demo::DemoServer;
use rmcp_resume_testkit::event_store::MemoryEventStore;
use rmcp_resume_testkit::raw::{Frame, RawSession, SseReader};
use rmcp_resume_testkit::server::{Served, Side, TestServer};
use rmcp_resume_testkit::store::MemoryStore;
use serde_json::json;

async fn served(store: &Arc<MemoryEventStore>) -> Served {
    TestServer::new(Side::Fork)
        .event_store(store.clone())
        .serve()
        .await
        .expect("serve")
}

/// A streamed call cut after `keep` progress events: the last id read.
async fn cut_call(session: &mut RawSession, count: u32, keep: usize) -> String {
    let (_, response) = session
        .call("stream", json!({ "count": count, "interval_ms": 1 }), true)
        .await
        .expect("call");
    let mut reader = SseReader::new(response);
    let mut last = None;
    let mut progress = 0;
    while progress < keep {
        let frame = reader.next().await.expect("in time").expect("a frame");
        last = frame.id.clone().or(last);
        if frame
            .json()
            .is_some_and(|j| j["method"] == "notifications/progress")
        {
            progress += 1;
        }
    }
    last.expect("an id")
}

async fn error_message(response: reqwest::Response) -> String {
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.expect("JSON error");
    body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_replay_through_the_store_is_strictly_after_and_claims_no_completeness() {
    let store = Arc::new(MemoryEventStore::default());
    let server = served(&store).await;
    let mut session = RawSession::open(&server.url).await.expect("session");
    let cursor = cut_call(&mut session, 6, 2).await;
    let response = session.resume(&cursor).await.expect("resume");
    assert_eq!(response.status(), 200);
    let frames: Vec<Frame> = SseReader::new(response).collect().await.expect("frames");
    // A store proves nothing and follows no rules of rmcp's: no notice
    // vouches for its replay (a `complete:false` one told the fork's client
    // the cursor was refused).
    assert!(
        frames
            .iter()
            .all(|f| f.event.as_deref() != Some(REPLAY_NOTICE_EVENT)),
        "{frames:?}"
    );
    let progress: Vec<f64> = frames
        .iter()
        .filter_map(|f| f.json()?["params"]["progress"].as_f64())
        .collect();
    assert_eq!(progress, [3.0, 4.0, 5.0, 6.0], "strictly after the cursor");
    assert!(
        frames
            .iter()
            .all(|f| f.id.as_deref() != Some(cursor.as_str()))
    );
}

#[tokio::test]
async fn an_unknown_or_evicted_cursor_is_400_never_an_empty_200() {
    let store = Arc::new(MemoryEventStore::default());
    let server = served(&store).await;
    let mut session = RawSession::open(&server.url).await.expect("session");
    let cursor = cut_call(&mut session, 4, 1).await;
    let (tag, _) = cursor.split_once('~').expect("a scoped id");

    let unknown = session
        .resume(&format!("{tag}~e999999"))
        .await
        .expect("resume");
    assert!(error_message(unknown).await.contains("holds nothing after"));

    store.evict_all_but(0);
    let evicted = session.resume(&cursor).await.expect("resume");
    assert!(error_message(evicted).await.contains("holds nothing after"));

    let malformed = session.resume("e1").await.expect("resume");
    assert_eq!(malformed.status(), 400);
}

#[tokio::test]
async fn a_cursor_of_another_session_is_refused_before_the_store_is_asked() {
    let store = Arc::new(MemoryEventStore::default());
    let server = served(&store).await;
    let mut first = RawSession::open(&server.url).await.expect("session");
    let cursor = cut_call(&mut first, 4, 1).await;
    let second = RawSession::open(&server.url).await.expect("session");
    let foreign = second.resume(&cursor).await.expect("resume");
    // Answered exactly as a cursor the store does not know: a refusal that
    // says whose cursor it was would tell a prober that it guessed a MAC.
    assert!(error_message(foreign).await.contains("holds nothing after"));
}

#[tokio::test]
async fn a_restored_worker_never_reuses_a_stream_key_of_the_first() {
    let store = Arc::new(MemoryEventStore::default());
    let sessions: Arc<MemoryStore> = Arc::default();
    let first = TestServer::new(Side::Fork)
        .event_store(store.clone())
        .session_store(sessions.clone())
        .serve()
        .await
        .expect("serve");
    let mut on_first = RawSession::open(&first.url).await.expect("session");
    cut_call(&mut on_first, 2, 2).await;
    let before = store.streams();

    // Another instance (or the same after a restart) restores the session.
    let second = TestServer::new(Side::Fork)
        .event_store(store.clone())
        .session_store(sessions)
        .serve()
        .await
        .expect("serve");
    let mut on_second = on_first.at(&second.url);
    let (_, response) = on_second
        .call("stream", json!({ "count": 2, "interval_ms": 1 }), true)
        .await
        .expect("call on the restored session");
    SseReader::new(response).collect().await.expect("the call");
    let after = store.streams();
    assert_eq!(after.len(), before.len() + 1, "{before:?} then {after:?}");
    assert!(!before.contains(&after[after.len() - 1]));
}

#[tokio::test]
async fn a_restored_session_takes_requests_only_after_its_handshake_replay() {
    let manager = Arc::new(LocalSessionManager::default());
    let id: rmcp::transport::streamable_http_server::session::SessionId = "restored".into();
    let RestoreOutcome::Restored(transport) =
        manager.restore_session(id.clone()).await.expect("restore")
    else {
        panic!("not restored");
    };
    tokio::spawn(async move {
        if let Ok(running) = DemoServer::new().serve(transport).await {
            let _ = running.waiting().await;
        }
    });
    assert!(!manager.has_session(&id).await.expect("has_session"));
    let initialize = serde_json::from_value(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "restore", "version": "0" }
        }
    }))
    .expect("initialize");
    manager
        .initialize_session(&id, initialize)
        .await
        .expect("initialize answered");
    assert!(
        !manager.has_session(&id).await.expect("has_session"),
        "published before the handshake finished"
    );
    let initialized =
        serde_json::from_value(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .expect("initialized");
    manager
        .accept_message(&id, initialized)
        .await
        .expect("initialized accepted");
    assert!(manager.has_session(&id).await.expect("has_session"));
}

#[tokio::test]
async fn the_forks_client_resumes_a_cut_call_through_the_store() {
    // The fork's own client against the fork's server with a store: the
    // replay is judged as any other server's and the call answers whole.
    use rmcp_resume_testkit::scenario::{Ending, cut_call, world_of};
    let store = Arc::new(MemoryEventStore::default());
    let server = TestServer::new(Side::Fork).event_store(store);
    let world = world_of(server, "notifications/progress")
        .await
        .expect("world");
    let (ending, progress) = cut_call(
        Side::Fork,
        &world,
        "work",
        3,
        std::time::Duration::from_secs(30),
    )
    .await
    .expect("scenario");
    match ending {
        Ending::Answered(Ok(text)) => assert_eq!(text, "finished 3 steps"),
        other => panic!("expected the response: {other:?}"),
    }
    assert_eq!(progress, 3);
}
