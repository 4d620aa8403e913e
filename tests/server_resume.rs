//! The fork's server over real HTTP: what a resume is answered with, byte for
//! byte, in every case the resumption issue lists.

use rmcp::transport::resumption::{REPLAY_FLOOR_HEADER, REPLAY_NOTICE_EVENT, ReplayNotice};
use rmcp::transport::streamable_http_server::tower::ResumeStats;
use rmcp_resume_testkit::raw::{Frame, RawSession, SseReader};
use rmcp_resume_testkit::{Served, Side, TestServer};
use serde_json::{Value, json};

/// A fork server with a replay window of `capacity` events, no keep-alive
/// comments and no session timers.
fn server(capacity: usize) -> TestServer {
    TestServer::new(Side::Fork)
        .window(capacity)
        .keep_alive(None)
        .without_session_timers()
}

async fn harness(capacity: usize) -> anyhow::Result<Served> {
    Ok(server(capacity).serve().await?)
}

fn stats(h: &Served) -> ResumeStats {
    h.resume_stats()
        .unwrap_or_else(|| panic!("a fork server counts its resumes"))
}

fn notice(frame: &Frame) -> ReplayNotice {
    assert_eq!(
        frame.event.as_deref(),
        Some(REPLAY_NOTICE_EVENT),
        "{frame:?}"
    );
    assert_eq!(frame.id, None, "the notice must never move a cursor");
    ReplayNotice::from_json(&frame.data).unwrap_or_else(|e| panic!("{e}: {frame:?}"))
}

fn result_text(frame: &Frame) -> Option<String> {
    let json = frame.json()?;
    json["result"]["content"][0]["text"]
        .as_str()
        .map(str::to_owned)
}

fn is_progress(frame: &Frame) -> bool {
    frame
        .json()
        .is_some_and(|j| j["method"] == "notifications/progress")
}

async fn error_body(response: reqwest::Response) -> anyhow::Result<Value> {
    Ok(serde_json::from_str(&response.text().await?)?)
}

/// Calls `work` with progress, reads the priming and the progress events,
/// then drops the connection: the tool is still waiting on the gate.
async fn cut_work_call(session: &mut RawSession, steps: u32) -> anyhow::Result<(u64, Vec<Frame>)> {
    let (id, response) = session
        .call("work", json!({ "count": steps }), true)
        .await?;
    let mut reader = SseReader::new(response);
    let mut seen = Vec::new();
    while seen.iter().filter(|f| is_progress(f)).count() < steps as usize {
        let frame = reader
            .next()
            .await?
            .ok_or_else(|| anyhow::anyhow!("stream ended early: {seen:?}"))?;
        seen.push(frame);
    }
    drop(reader);
    Ok((id, seen))
}

#[tokio::test]
async fn response_produced_while_cut_is_replayed_strictly_after_the_cursor() -> anyhow::Result<()> {
    let h = harness(16).await?;
    let mut session = RawSession::open(&h.url).await?;
    let (id, seen) = cut_work_call(&mut session, 3).await?;
    let ids: Vec<_> = seen.iter().filter_map(|f| f.id.clone()).collect();
    // Priming `0/M`, then progress `1/M..3/M`.
    let stream = ids[0]
        .split_once('/')
        .map(|(_, m)| m.to_owned())
        .unwrap_or_default();
    assert_eq!(ids, [0, 1, 2, 3].map(|i| format!("{i}/{stream}")));

    // The tool finishes while nobody is connected.
    h.gate.notify_one();
    let cursor = format!("2/{stream}");
    let response = session.resume(&cursor).await?;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response
            .headers()
            .get(REPLAY_FLOOR_HEADER)
            .and_then(|v| v.to_str().ok()),
        Some(format!("0/{stream}").as_str())
    );
    let frames = SseReader::new(response).collect().await?;
    let first = notice(&frames[0]);
    assert!(first.complete);
    assert_eq!(first.cursor.to_string(), cursor);
    // Strictly after the cursor: 3/M (progress), then the response; then the end.
    assert_eq!(
        frames[1].id.as_deref(),
        Some(format!("3/{stream}").as_str())
    );
    assert!(is_progress(&frames[1]));
    assert_eq!(frames[2].json().map(|j| j["id"].clone()), Some(json!(id)));
    assert_eq!(result_text(&frames[2]).as_deref(), Some("finished 3 steps"));
    assert_eq!(frames.len(), 3, "{frames:?}");
    assert_eq!(stats(&h).replayed, 1);
    Ok(())
}

#[tokio::test]
async fn drained_complete_stream_answers_204_not_an_empty_200() -> anyhow::Result<()> {
    let h = harness(16).await?;
    let mut session = RawSession::open(&h.url).await?;
    let (_, response) = session
        .call("sum", json!({ "a": 1, "b": 2 }), false)
        .await?;
    let frames = SseReader::new(response).collect().await?;
    let last = frames
        .iter()
        .rev()
        .find_map(|f| f.id.clone())
        .ok_or_else(|| anyhow::anyhow!("no ids in {frames:?}"))?;
    let response = session.resume(&last).await?;
    assert_eq!(response.status(), 204, "nothing follows the response");
    assert_eq!(stats(&h).rejected, 1);
    Ok(())
}

#[tokio::test]
async fn request_cursor_below_the_floor_is_rejected_with_the_floor() -> anyhow::Result<()> {
    // A log of 4 events: priming + 9 progress steps evict the early ones.
    let h = harness(4).await?;
    let mut session = RawSession::open(&h.url).await?;
    let (_, seen) = cut_work_call(&mut session, 9).await?;
    let stream = seen[0]
        .id
        .as_deref()
        .and_then(|i| i.split_once('/'))
        .map(|(_, m)| m.to_owned())
        .unwrap_or_default();
    let cursor = format!("1/{stream}");
    let response = session.resume(&cursor).await?;
    assert_eq!(response.status(), 400);
    let body = error_body(response).await?;
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["error"]["data"]["cursor"], json!(cursor));
    assert_eq!(body["error"]["data"]["floor"], json!(format!("6/{stream}")));
    h.gate.notify_one();
    Ok(())
}

#[tokio::test]
async fn standalone_cursor_below_the_floor_falls_back_to_a_declared_fresh_stream()
-> anyhow::Result<()> {
    let h = harness(4).await?;
    let mut session = RawSession::open(&h.url).await?;
    // Ten notifications with no standalone reader: the log keeps 7..=10.
    let (_, response) = session
        .call("announce", json!({ "count": 10 }), false)
        .await?;
    let done = SseReader::new(response).collect().await?;
    assert!(
        done.iter()
            .any(|f| result_text(f).as_deref() == Some("announced 10"))
    );

    let response = session.resume("2").await?;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response
            .headers()
            .get(REPLAY_FLOOR_HEADER)
            .and_then(|v| v.to_str().ok()),
        Some("7")
    );
    let mut reader = SseReader::new(response);
    let first = reader.next().await?.map(|f| notice(&f));
    let first = first.ok_or_else(|| anyhow::anyhow!("no notice"))?;
    assert!(!first.complete, "the cursor was not honoured");
    assert_eq!(first.floor.map(|f| f.to_string()).as_deref(), Some("7"));
    // What is retained after the gap still arrives, then the stream stays live.
    for expected in 7..=10 {
        let frame = reader
            .next()
            .await?
            .ok_or_else(|| anyhow::anyhow!("ended"))?;
        assert_eq!(frame.id, Some(expected.to_string()));
    }
    let (_, response) = session
        .call("announce", json!({ "count": 1 }), false)
        .await?;
    let _ = SseReader::new(response).collect().await?;
    let live = reader
        .next()
        .await?
        .ok_or_else(|| anyhow::anyhow!("ended"))?;
    assert_eq!(live.id.as_deref(), Some("11"));
    assert_eq!(stats(&h).fallback, 1);
    Ok(())
}

#[tokio::test]
async fn fresh_standalone_priming_id_precedes_the_first_event() -> anyhow::Result<()> {
    let h = harness(16).await?;
    let mut session = RawSession::open(&h.url).await?;
    let mut reader = SseReader::new(session.get(None).await?);
    let priming = reader
        .next()
        .await?
        .ok_or_else(|| anyhow::anyhow!("ended"))?;
    assert_eq!(priming.id.as_deref(), Some("0"));
    assert_eq!(priming.data, "");
    let (_, response) = session
        .call("announce", json!({ "count": 2 }), false)
        .await?;
    let _ = SseReader::new(response).collect().await?;
    let a = reader
        .next()
        .await?
        .ok_or_else(|| anyhow::anyhow!("ended"))?;
    let b = reader
        .next()
        .await?
        .ok_or_else(|| anyhow::anyhow!("ended"))?;
    assert_eq!((a.id.as_deref(), b.id.as_deref()), (Some("1"), Some("2")));
    Ok(())
}

#[tokio::test]
async fn shadow_is_promoted_when_the_primary_goes_away() -> anyhow::Result<()> {
    let h = harness(16).await?;
    let mut session = RawSession::open(&h.url).await?;
    let mut primary = SseReader::new(session.get(None).await?);
    assert!(primary.next().await?.is_some(), "priming");
    let shadow_response = session.get(None).await?;
    assert_eq!(
        shadow_response.status(),
        200,
        "a second GET is a shadow, not a 409"
    );
    let mut shadow = SseReader::new(shadow_response);
    let retry_only = shadow
        .next()
        .await?
        .ok_or_else(|| anyhow::anyhow!("ended"))?;
    assert_eq!(
        retry_only.id, None,
        "a shadow's first event is unknown, so no cursor"
    );

    let (_, response) = session
        .call("announce", json!({ "count": 1 }), false)
        .await?;
    let _ = SseReader::new(response).collect().await?;
    assert_eq!(
        primary.next().await?.and_then(|f| f.id).as_deref(),
        Some("1")
    );

    // The primary's connection goes away. The server cannot know what its
    // socket still held, so the promoted shadow goes on from where it
    // joined: event 1 comes again rather than not at all, then 2 and 3.
    drop(primary);
    let (_, response) = session
        .call("announce", json!({ "count": 2 }), false)
        .await?;
    let _ = SseReader::new(response).collect().await?;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(shadow.next().await?.and_then(|f| f.id));
    }
    let ids: Vec<Option<&str>> = ids.iter().map(Option::as_deref).collect();
    assert_eq!(ids, [Some("1"), Some("2"), Some("3")]);
    Ok(())
}

#[tokio::test]
async fn stalled_standalone_reader_does_not_block_the_session() -> anyhow::Result<()> {
    let h = harness(4).await?;
    let mut session = RawSession::open(&h.url).await?;
    // Opened and never read.
    let stalled = session.get(None).await?;
    assert_eq!(stalled.status(), 200);
    // Far more notifications than any buffer between worker and socket holds.
    let (_, response) = session
        .call("announce", json!({ "count": 20000 }), false)
        .await?;
    let frames = SseReader::new(response).collect().await?;
    assert!(
        frames
            .iter()
            .any(|f| result_text(f).as_deref() == Some("announced 20000"))
    );
    let (_, response) = session
        .call("sum", json!({ "a": 2, "b": 2 }), false)
        .await?;
    let frames = SseReader::new(response).collect().await?;
    assert!(
        frames
            .iter()
            .any(|f| result_text(f).as_deref() == Some("4"))
    );
    drop(stalled);
    Ok(())
}

#[tokio::test]
async fn bad_cursors_get_a_clear_4xx_and_the_session_survives() -> anyhow::Result<()> {
    let h = harness(16).await?;
    let mut session = RawSession::open(&h.url).await?;
    let mib = vec![b'7'; 1 << 20];
    let cases: [(&str, &[u8]); 7] = [
        ("letters", b"abc"),
        ("empty", b""),
        ("extra slash", b"1/2/3"),
        ("overflow", b"99999999999999999999999"),
        ("non-utf8", &[0xff, 0xfe, 0x31]),
        ("never-existed stream", b"0/999"),
        ("one MiB", &mib),
    ];
    for (name, cursor) in cases {
        let response = session.get(Some(cursor)).await;
        let status = match response {
            Ok(response) => response.status().as_u16(),
            // An oversized header may be refused before any response line.
            Err(error) => {
                assert_eq!(name, "one MiB", "{name}: {error}");
                431
            }
        };
        assert!((400..500).contains(&status), "{name}: got {status}");
        assert_ne!(status, 404, "{name}: a bad cursor is not a lost session");
    }
    // The session is intact.
    let (_, response) = session
        .call("sum", json!({ "a": 20, "b": 22 }), false)
        .await?;
    let frames = SseReader::new(response).collect().await?;
    assert!(
        frames
            .iter()
            .any(|f| result_text(f).as_deref() == Some("42"))
    );
    Ok(())
}

#[tokio::test]
async fn unknown_session_is_404_and_counted() -> anyhow::Result<()> {
    let h = harness(16).await?;
    let mut session = RawSession::open(&h.url).await?;
    session.session = "not-a-session".into();
    let response = session.resume("3").await?;
    assert_eq!(response.status(), 404);
    assert_eq!(stats(&h).session_lost, 1);
    Ok(())
}

#[tokio::test]
async fn cursor_from_another_session_never_yields_its_events() -> anyhow::Result<()> {
    let h = harness(16).await?;
    let mut a = RawSession::open(&h.url).await?;
    let b = RawSession::open(&h.url).await?;
    // Session A has standalone events 1..=3; B has none.
    let (_, response) = a.call("announce", json!({ "count": 3 }), false).await?;
    let _ = SseReader::new(response).collect().await?;
    let mut reader = SseReader::new(b.resume("1").await?);
    let first = reader.next().await?.map(|f| notice(&f));
    assert_eq!(
        first.map(|n| n.complete),
        Some(false),
        "B never produced event 1"
    );
    // Nothing of A's arrives on B: the next frame only comes from B's own event.
    let (_, response) = a.call("announce", json!({ "count": 1 }), false).await?;
    let _ = SseReader::new(response).collect().await?;
    let mut b = b;
    let (_, response) = b.call("announce", json!({ "count": 1 }), false).await?;
    let _ = SseReader::new(response).collect().await?;
    let next = reader
        .next()
        .await?
        .ok_or_else(|| anyhow::anyhow!("ended"))?;
    assert_eq!(next.id.as_deref(), Some("1"), "B's own first event");
    Ok(())
}

#[tokio::test]
async fn concurrent_resumes_of_one_cursor_leave_one_live_reader() -> anyhow::Result<()> {
    let h = harness(16).await?;
    let mut session = RawSession::open(&h.url).await?;
    let (_, seen) = cut_work_call(&mut session, 1).await?;
    let cursor = seen[1].id.clone().unwrap_or_default();
    let first = session.resume(&cursor).await?;
    let second = session.resume(&cursor).await?;
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    h.gate.notify_one();
    // The newest resume gets the response; the older connection just ends.
    let older = SseReader::new(first).collect().await?;
    let newer = SseReader::new(second).collect().await?;
    let answered = |frames: &[Frame]| frames.iter().any(|f| result_text(f).is_some());
    assert!(answered(&newer), "{newer:?}");
    assert!(
        !answered(&older),
        "the response must reach exactly one stream: {older:?}"
    );
    Ok(())
}

#[tokio::test]
async fn delete_answers_200_and_ends_the_session() -> anyhow::Result<()> {
    let h = harness(16).await?;
    let session = RawSession::open(&h.url).await?;
    let response = session.delete().await?;
    assert_eq!(response.status(), 200);
    assert_eq!(session.resume("1").await?.status(), 404);
    Ok(())
}

#[tokio::test]
async fn resume_keeps_upstream_request_validation() -> anyhow::Result<()> {
    let h = harness(16).await?;
    let session = RawSession::open(&h.url).await?;
    let http = reqwest::Client::new();
    let get = |headers: &[(&str, &str)]| {
        let accept = headers
            .iter()
            .find(|(n, _)| *n == "accept")
            .map_or("text/event-stream", |(_, v)| *v);
        let mut request = http
            .get(&h.url)
            .header("accept", accept)
            .header("mcp-session-id", &session.session)
            .header("last-event-id", "0");
        for (name, value) in headers.iter().filter(|(n, _)| *n != "accept") {
            request = request.header(*name, *value);
        }
        request.send()
    };
    // DNS-rebinding protection runs before any resume logic.
    assert_eq!(get(&[("host", "evil.example.com")]).await?.status(), 403);
    assert_eq!(get(&[("accept", "application/json")]).await?.status(), 406);
    assert_eq!(
        get(&[("mcp-protocol-version", "1999-01-01")])
            .await?
            .status(),
        400
    );
    assert_eq!(stats(&h), Default::default(), "nothing was resumed");
    Ok(())
}

#[tokio::test]
async fn completed_streams_beyond_the_cap_are_forgotten_oldest_first() -> anyhow::Result<()> {
    let h = server(16).max_completed_streams(2).serve().await?;
    let mut session = RawSession::open(&h.url).await?;
    let mut primings = Vec::new();
    for _ in 0..3 {
        let (_, response) = session
            .call("sum", json!({ "a": 1, "b": 1 }), false)
            .await?;
        let frames = SseReader::new(response).collect().await?;
        primings.push(frames[0].id.clone().unwrap_or_default());
    }
    // One more event lets the worker apply the cap.
    let (_, response) = session
        .call("sum", json!({ "a": 1, "b": 1 }), false)
        .await?;
    let _ = SseReader::new(response).collect().await?;
    assert_eq!(
        session.resume(&primings[0]).await?.status(),
        400,
        "oldest forgotten"
    );
    assert_eq!(
        session.resume(&primings[2]).await?.status(),
        200,
        "newest kept"
    );
    Ok(())
}

#[tokio::test]
async fn handler_side_close_by_request_id_keeps_the_stream_resumable() -> anyhow::Result<()> {
    use rmcp::model::RequestId;

    let h = harness(16).await?;
    let manager = h
        .manager()
        .ok_or_else(|| anyhow::anyhow!("a fork server has a manager"))?;
    let mut session = RawSession::open(&h.url).await?;
    let (id, response) = session.call("work", json!({ "count": 1 }), true).await?;
    let mut reader = SseReader::new(response);
    let priming = reader
        .next()
        .await?
        .ok_or_else(|| anyhow::anyhow!("no priming"))?;
    assert!(priming.id.is_some(), "{priming:?}");

    let handle = manager
        .handle(&session.session.as_str().into())
        .await
        .ok_or_else(|| anyhow::anyhow!("session not registered"))?;
    // A request the session never saw is an error, and changes nothing.
    assert!(
        handle
            .close_request_connection(RequestId::Number(9_999), None)
            .await
            .is_err()
    );
    handle
        .close_request_connection(
            RequestId::Number(i64::try_from(id)?),
            Some(std::time::Duration::from_millis(300)),
        )
        .await?;
    // The connection ends after the progress step and the `retry` event.
    let rest = reader.collect().await?;
    let retry = rest
        .last()
        .ok_or_else(|| anyhow::anyhow!("nothing after priming"))?;
    assert_eq!(retry.retry, Some(300), "{rest:?}");
    let cursor = retry
        .id
        .clone()
        .ok_or_else(|| anyhow::anyhow!("retry without id: {rest:?}"))?;

    // The tool finishes while nobody is connected; the resume carries it.
    h.gate.notify_one();
    let frames = SseReader::new(session.resume(&cursor).await?)
        .collect()
        .await?;
    let text: Vec<_> = frames.iter().filter_map(result_text).collect();
    assert_eq!(text, ["finished 1 steps"], "{frames:?}");
    Ok(())
}

#[tokio::test]
async fn delete_of_an_unknown_or_deleted_session_is_404() -> anyhow::Result<()> {
    let h = harness(16).await?;
    let session = RawSession::open(&h.url).await?;
    assert_eq!(session.delete().await?.status(), 200);
    assert_eq!(session.delete().await?.status(), 404, "already deleted");
    let stranger = reqwest::Client::new()
        .delete(&h.url)
        .header("mcp-session-id", "no-such-session")
        .header("mcp-protocol-version", rmcp_resume_testkit::raw::PROTOCOL)
        .send()
        .await?;
    assert_eq!(stranger.status(), 404);
    Ok(())
}

#[tokio::test]
async fn a_resume_without_sessions_is_refused_not_an_empty_200() -> anyhow::Result<()> {
    // A stateless server keeps no streams.
    let stateless = TestServer::new(Side::Fork).stateless().serve().await?;
    let response = reqwest::Client::new()
        .get(&stateless.url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", rmcp_resume_testkit::raw::PROTOCOL)
        .header("last-event-id", "3")
        .send()
        .await?;
    assert_eq!(response.status(), 400);
    let body = error_body(response).await?;
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no sessions")),
        "{body}"
    );

    // Neither does a stateful server under a revision without sessions.
    let h = harness(16).await?;
    let session = RawSession::open(&h.url).await?;
    let response = reqwest::Client::new()
        .get(&h.url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-session-id", session.session.as_str())
        .header("last-event-id", "3")
        .send()
        .await?;
    assert_eq!(response.status(), 400);
    Ok(())
}

#[tokio::test]
async fn a_restored_session_never_reuses_an_id_of_its_earlier_life() -> anyhow::Result<()> {
    use std::sync::Arc;

    use rmcp_resume_testkit::store::MemoryStore;

    let store = Arc::new(MemoryStore::default());
    let first = server(16).session_store(store.clone()).serve().await?;
    let mut before = RawSession::open(&first.url).await?;
    // The first life's standalone stream: three notifications, cursor 3.
    let mut reader = SseReader::new(before.get(None).await?);
    let (_, response) = before
        .call("announce", json!({ "count": 3 }), false)
        .await?;
    SseReader::new(response).collect().await?;
    let mut cursor = None;
    while cursor.as_deref() != Some("3") {
        let frame = reader
            .next()
            .await?
            .ok_or_else(|| anyhow::anyhow!("ended"))?;
        cursor = frame.id.or(cursor);
    }
    drop(reader);
    drop(first);

    // Another instance (or this one restarted) restores the session from the
    // store, and its new life sends five notifications.
    let second = server(16).session_store(store).serve().await?;
    let mut after = before.at(&second.url);
    let (_, response) = after.call("announce", json!({ "count": 5 }), false).await?;
    SseReader::new(response).collect().await?;

    // The old cursor must not pass for one of the new life's events.
    let response = after.resume("3").await?;
    assert_eq!(response.status(), 200);
    let mut frames = SseReader::new(response);
    let first_frame = frames
        .next()
        .await?
        .ok_or_else(|| anyhow::anyhow!("no notice"))?;
    let notice = notice(&first_frame);
    assert!(
        !notice.complete,
        "a cursor of another life is not honoured: {notice:?}"
    );
    // And a request stream's cursor of the old life names no stream now.
    let response = after.resume("1/0").await?;
    assert_eq!(response.status(), 400);
    Ok(())
}

/// A fresh standalone `GET` (no cursor) after the client's last one went
/// away having read event 1, while the server sent 20 more with no reader
/// and a window of 4: the new stream starts at the window's floor, and its
/// first frame says so (`complete: false`, the cursor where the client's
/// events stopped, the floor), instead of skipping silently.
#[tokio::test]
async fn a_fresh_standalone_stream_that_skips_says_so_first() -> anyhow::Result<()> {
    let h = harness(4).await?;
    let mut session = RawSession::open(&h.url).await?;
    let mut first = SseReader::new(session.get(None).await?);
    let (_, response) = session
        .call("announce", json!({ "count": 1 }), false)
        .await?;
    SseReader::new(response).collect().await?;
    let read = loop {
        let frame = first
            .next()
            .await?
            .ok_or_else(|| anyhow::anyhow!("the standalone stream ended"))?;
        if frame.json().is_some() {
            break frame;
        }
    };
    let last = read.id.clone().expect("a standalone event carries its id");
    drop(first);
    let (_, response) = session
        .call("announce", json!({ "count": 20 }), false)
        .await?;
    SseReader::new(response).collect().await?;
    let mut fresh = SseReader::new(session.get(None).await?);
    let frame = fresh
        .next()
        .await?
        .ok_or_else(|| anyhow::anyhow!("the fresh stream ended"))?;
    let told = notice(&frame);
    assert!(!told.complete, "{told:?}");
    assert_eq!(told.cursor.to_string(), last, "{told:?}");
    let floor = told.floor.expect("the floor the stream goes on from");
    assert!(floor.to_string() != last, "{floor}");
    Ok(())
}
