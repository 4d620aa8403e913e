//! The fork's session manager through upstream's `SessionManager` trait,
//! without HTTP in between: what a request's `POST` asks of a session.

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{SessionId, SessionManager};
use rmcp_resume_testkit::demo::DemoServer;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// Every wait in this file ends within this.
const LIMIT: Duration = Duration::from_secs(10);

fn message(value: Value) -> ClientJsonRpcMessage {
    serde_json::from_value(value).expect("a client message")
}

fn call(id: u64, tool: &str, arguments: Value) -> ClientJsonRpcMessage {
    message(json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments }
    }))
}

/// A session past its handshake, served by `server`.
async fn session(manager: &Arc<LocalSessionManager>, server: DemoServer) -> SessionId {
    let (id, transport) = manager.create_session().await.expect("session");
    tokio::spawn(async move {
        if let Ok(running) = server.serve(transport).await {
            let _ = running.waiting().await;
        }
    });
    manager
        .initialize_session(
            &id,
            message(json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": { "name": "session-manager", "version": "0" }
                }
            })),
        )
        .await
        .expect("initialize answered");
    manager
        .accept_message(
            &id,
            message(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })),
        )
        .await
        .expect("initialized accepted");
    id
}

/// The text of request `id`'s response on its stream.
async fn answer(
    manager: &LocalSessionManager,
    session: &SessionId,
    request: ClientJsonRpcMessage,
) -> String {
    let stream = manager
        .create_stream(session, request)
        .await
        .expect("a request stream");
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        let Some(message) = event.message else {
            continue; // a priming event
        };
        if let JsonRpcMessage::Response(response) = message.as_ref() {
            let result = serde_json::to_value(&response.result).expect("json");
            return result["content"][0]["text"]
                .as_str()
                .expect("a text result")
                .to_owned();
        }
    }
    panic!("the stream ended without its response");
}

// A current-thread runtime: the session's worker cannot run while the test
// polls, so the `POST` below stops waiting before the worker sees its
// request, every time.
#[tokio::test(flavor = "current_thread")]
async fn a_post_that_stops_waiting_before_its_stream_opens_does_not_run_its_request() {
    let gate = Arc::new(Notify::new());
    let manager = Arc::new(LocalSessionManager::default());
    let id = session(&manager, DemoServer::with_gate(gate.clone())).await;

    // `work` waits for the gate: run, it would take the one permit below.
    let abandoned = manager.create_stream(&id, call(1, "work", json!({ "count": 0 })));
    // Polled once, then dropped: the request is queued to the worker, and
    // nobody waits for its stream any more.
    match abandoned.now_or_never() {
        None => {}
        Some(Ok(_)) => panic!("the worker answered within one poll"),
        Some(Err(error)) => panic!("refused: {error}"),
    }

    // Later requests on the session are served as usual.
    let sum = answer(&manager, &id, call(2, "sum", json!({ "a": 20, "b": 22 })));
    assert_eq!(
        tokio::time::timeout(LIMIT, sum).await.expect("in time"),
        "42"
    );
    gate.notify_one();
    let work = answer(&manager, &id, call(3, "work", json!({ "count": 0 })));
    let work = tokio::time::timeout(LIMIT, work).await;
    assert_eq!(
        work.expect("the permit went to the abandoned request: it ran"),
        "finished 0 steps"
    );
}

#[tokio::test]
async fn a_request_opens_its_stream_and_reaches_the_handler_in_one_step() {
    // Through the handle, the fork's one-step path; through the manager,
    // the same; both answer, and the streams they open are distinct.
    let manager = Arc::new(LocalSessionManager::default());
    let id = session(&manager, DemoServer::new()).await;
    let handle = manager.handle(&id).await.expect("a live session");
    let mut streams = Vec::new();
    for (n, text) in [(10u64, "a"), (11, "b")] {
        let opened = tokio::time::timeout(
            LIMIT,
            handle.open_request(call(n, "echo", json!({ "text": text }))),
        )
        .await
        .expect("in time")
        .expect("opened");
        streams.push(opened.http_request_id);
        let mut events = opened.stream;
        let mut heard = None;
        while let Some(event) = tokio::time::timeout(LIMIT, events.next())
            .await
            .expect("in time")
        {
            if let Some(message) = event.message
                && let JsonRpcMessage::Response(response) = message.as_ref()
            {
                heard = Some(
                    serde_json::to_value(&response.result).expect("json")["content"][0]["text"]
                        .clone(),
                );
            }
        }
        assert_eq!(heard, Some(json!(text)), "request {n}");
    }
    assert_ne!(streams[0], streams[1]);
    let through_manager = answer(&manager, &id, call(12, "echo", json!({ "text": "c" })));
    assert_eq!(
        tokio::time::timeout(LIMIT, through_manager)
            .await
            .expect("in time"),
        "c"
    );
}

/// Two managers built from clones of one config meter their own replay
/// bytes: a session served on one costs the other nothing (the config
/// carries the manager's state on 0.x, and a clone must not share it).
#[tokio::test]
async fn managers_built_from_one_config_keep_their_own_books() {
    let config = rmcp::transport::streamable_http_server::session::local::SessionConfig::default();
    let mut a = LocalSessionManager::default();
    a.session_config = config.clone();
    let mut b = LocalSessionManager::default();
    b.session_config = config.clone();
    let (a, b) = (Arc::new(a), Arc::new(b));
    let id = tokio::time::timeout(LIMIT, session(&a, DemoServer::new()))
        .await
        .expect("in time");
    let text = tokio::time::timeout(
        LIMIT,
        answer(&a, &id, call(1, "echo", json!({"text": "x"}))),
    )
    .await
    .expect("in time");
    assert!(!text.is_empty());
    assert!(a.replay_bytes() > 0, "a kept its session's events");
    assert_eq!(b.replay_bytes(), 0, "b served nothing and keeps nothing");
}
