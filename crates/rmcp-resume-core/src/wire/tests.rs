use futures::StreamExt;

use super::*;

fn wire(events: Vec<&'static str>, then_pending: bool, keep_alive: Option<Duration>) -> SseWire {
    let ready = futures::stream::iter(events.into_iter().map(|e| Bytes::from_static(e.as_bytes())));
    if then_pending {
        SseWire::from_bytes(ready.chain(futures::stream::pending()), keep_alive)
    } else {
        SseWire::from_bytes(ready, keep_alive)
    }
}

#[tokio::test(start_paused = true)]
async fn ready_events_leave_in_one_chunk() {
    let mut wire = wire(vec!["id: 1\n\n", "id: 2\n\n", "id: 3\n\n"], false, None);
    assert_eq!(
        wire.next().await.as_deref(),
        Some(&b"id: 1\n\nid: 2\n\nid: 3\n\n"[..])
    );
    assert_eq!(wire.next().await, None);
}

#[tokio::test(start_paused = true)]
async fn idle_streams_get_keep_alive_comments_on_the_interval() {
    let every = Duration::from_secs(15);
    let mut wire = wire(vec!["id: 1\n\n"], true, Some(every));
    assert_eq!(wire.next().await.as_deref(), Some(&b"id: 1\n\n"[..]));
    let start = Instant::now();
    assert_eq!(wire.next().await.as_deref(), Some(&b":\n\n"[..]));
    assert_eq!(start.elapsed(), every);
    assert_eq!(wire.next().await.as_deref(), Some(&b":\n\n"[..]));
    assert_eq!(start.elapsed(), every * 2);
}

#[test]
fn the_notice_frame_has_a_type_and_no_id() {
    let notice = ReplayNotice::from_json(r#"{"cursor":"4/2","floor":"3/2","complete":true}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    let frame = notice_frame(&notice);
    assert_eq!(frame.event.as_deref(), Some(REPLAY_NOTICE_EVENT));
    assert_eq!(frame.id, None);
    assert_eq!(
        String::from_utf8_lossy(&Bytes::from(frame)),
        "event: mcp-replay\ndata: {\"cursor\":\"4/2\",\"floor\":\"3/2\",\"complete\":true}\n\n"
    );
}

#[test]
fn cursor_errors_are_json_rpc_invalid_request() {
    let body: serde_json::Value =
        serde_json::from_str(&cursor_error_body("no", "5/1", Some("9/1"))).unwrap_or_default();
    assert_eq!(body["error"]["code"], INVALID_REQUEST);
    assert_eq!(body["error"]["data"]["floor"], "9/1");
    assert_eq!(body["id"], serde_json::Value::Null);
}
