//! Several instances on one Redis: the `server` example runs as two
//! processes (A and B) sharing a redis-server the test starts itself. POSTs
//! go to the session's owner (A); resumes land on either.

use std::time::{Duration, Instant};

use rmcp::transport::resumption::{EventCursor, REPLAY_NOTICE_EVENT};
use rmcp_resume_testkit::raw::{Frame, RawSession, SseReader};
use rmcp_resume_testkit::redis::{Instance, RedisServer, RoundRobin, server_example};
use serde_json::json;

/// The lease: short, so that a dead owner is replaced quickly.
const LEASE: Duration = Duration::from_millis(1000);

struct Cluster {
    redis: RedisServer,
    a: Instance,
    b: Instance,
}

/// Each stream keeps its last 16 events, on every instance.
const WINDOW: &str = "16";

fn cluster() -> Cluster {
    let redis = RedisServer::start();
    let server = server_example();
    let args = ["--window", WINDOW];
    let a = Instance::start_with(&server, &redis, LEASE, &args);
    let b = Instance::start_with(&server, &redis, LEASE, &args);
    Cluster { redis, a, b }
}

/// `(index, stream)` of an `N/M` id.
fn position(frame: &Frame) -> Option<(u64, Option<u64>)> {
    let id = EventCursor::parse(frame.id.as_deref()?).ok()?;
    let id = id.as_rmcp()?;
    Some((id.index, id.stream))
}

/// Reads a call's stream until `count` progress notifications arrived;
/// returns the last event id and the progress values seen.
async fn read_progress(reader: &mut SseReader, count: usize) -> (String, Vec<f64>) {
    let mut seen = Vec::new();
    let mut last = None;
    while seen.len() < count {
        let frame = reader
            .next()
            .await
            .expect("a frame in time")
            .expect("more frames");
        if frame.id.is_some() {
            last = frame.id.clone();
        }
        if let Some(progress) = frame.json().and_then(|j| j["params"]["progress"].as_f64()) {
            seen.push(progress);
        }
    }
    (last.expect("an event id"), seen)
}

/// Every frame that carries an id, in order, with the frames' JSON.
fn events(frames: &[Frame]) -> Vec<(u64, serde_json::Value)> {
    frames
        .iter()
        .filter(|f| f.event.as_deref() != Some(REPLAY_NOTICE_EVENT))
        .filter_map(|f| Some((position(f)?.0, f.json().unwrap_or_default())))
        .collect()
}

/// A resumed call whose owner died: the progress read before the cut and
/// the replayed progress together count 1, 2, … with none twice, and the
/// last event is the terminal error for the call's id.
fn assert_retained_then_lost(replayed: &[(u64, serde_json::Value)], before: &[f64], id: u64) {
    let (_, last) = replayed.last().expect("a terminal event");
    assert_eq!(last["id"], id, "{last}");
    assert_eq!(
        last["error"]["message"],
        "server instance lost; outcome unknown"
    );
    let progress = replayed
        .iter()
        .filter_map(|(_, j)| j["params"]["progress"].as_f64());
    let all: Vec<f64> = before.iter().copied().chain(progress).collect();
    let expected: Vec<f64> = (1..=all.len()).map(|n| n as f64).collect();
    assert_eq!(all, expected, "the retained events, in order, none twice");
}

#[tokio::test]
async fn a_call_cut_on_a_resumes_on_b_with_exact_replay_then_a_live_events() {
    let cluster = cluster();
    let mut on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    let (id, response) = on_a
        .call("count_to", json!({ "n": 30 }), true)
        .await
        .expect("call");
    let mut reader = SseReader::new(response);
    let (cursor, before) = read_progress(&mut reader, 5).await;
    drop(reader); // the cut

    let on_b = on_a.at(&cluster.b.url);
    let resumed = on_b.resume(&cursor).await.expect("resume on B");
    assert_eq!(resumed.status(), 200);
    let frames = SseReader::new(resumed).collect().await.expect("frames");
    let notice = frames[0].json().expect("the notice first");
    assert_eq!(frames[0].event.as_deref(), Some(REPLAY_NOTICE_EVENT));
    assert_eq!(notice["complete"], true, "{notice}");

    let replayed = events(&frames);
    let (from, _) = position(&Frame {
        id: Some(cursor.clone()),
        ..frames[0].clone()
    })
    .expect("cursor");
    let indices: Vec<u64> = replayed.iter().map(|(i, _)| *i).collect();
    let expected: Vec<u64> = (from + 1..from + 1 + indices.len() as u64).collect();
    assert_eq!(indices, expected, "strictly after the cursor, contiguous");
    let progress: Vec<f64> = replayed
        .iter()
        .filter_map(|(_, j)| j["params"]["progress"].as_f64())
        .collect();
    let all: Vec<f64> = before.iter().chain(&progress).copied().collect();
    assert_eq!(
        all,
        (1..=30).map(f64::from).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    let (_, last) = replayed.last().expect("the response");
    assert_eq!(last["id"], id);
    assert_eq!(last["result"]["content"][0]["text"], "counted to 30");
}

#[tokio::test]
async fn kill_9_of_the_owner_mid_call_ends_the_call_with_the_terminal_error() {
    let mut cluster = cluster();
    let mut on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    let (id, response) = on_a
        .call("count_to", json!({ "n": 200 }), true)
        .await
        .expect("call");
    let mut reader = SseReader::new(response);
    let (cursor, before) = read_progress(&mut reader, 3).await;
    cluster.a.signal("KILL");
    let killed = Instant::now();

    let on_b = on_a.at(&cluster.b.url);
    let resumed = on_b.resume(&cursor).await.expect("resume on B");
    assert_eq!(resumed.status(), 200);
    let frames = SseReader::new(resumed)
        .collect()
        .await
        .expect("the stream ends");
    let waited = killed.elapsed();
    assert_retained_then_lost(&events(&frames), &before, id);
    assert!(
        waited < LEASE + Duration::from_secs(3),
        "the caller learned after {waited:?}"
    );
}

#[tokio::test]
async fn a_cursor_below_the_floor_gets_the_same_400_and_floor_from_a_and_b() {
    let cluster = cluster();
    let mut on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    // More events than either window keeps.
    let (_, response) = on_a
        .call("count_to", json!({ "n": 40, "interval_ms": 1 }), true)
        .await
        .expect("call");
    let frames = SseReader::new(response).collect().await.expect("the call");
    let (_, stream) = frames.iter().find_map(position).expect("an id");
    let stream = stream.expect("a request stream");
    let cursor = format!("1/{stream}");
    let mut answers = Vec::new();
    for session in [on_a.at(&cluster.a.url), on_a.at(&cluster.b.url)] {
        let response = session.resume(&cursor).await.expect("resume");
        let status = response.status();
        let body: serde_json::Value = response.json().await.expect("a JSON error");
        answers.push((status, body["error"]["data"].clone()));
    }
    assert_eq!(answers[0].0, 400, "{answers:?}");
    // 40 progress events, the priming event and the response: 42 events,
    // the last 16 retained.
    let floor = format!("26/{stream}");
    assert_eq!(answers[0].1, json!({ "cursor": cursor, "floor": floor }));
    assert_eq!(answers[0], answers[1], "A and B answer alike");
}

#[tokio::test]
async fn a_standalone_notification_sent_by_a_is_read_on_b_with_contiguous_ids() {
    let cluster = cluster();
    let mut on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    let on_b = on_a.at(&cluster.b.url);
    let get = on_b.get(None).await.expect("GET on B");
    assert_eq!(get.status(), 200);
    let mut standalone = SseReader::new(get);
    let priming = standalone.next().await.expect("in time").expect("priming");
    let (primed, _) = position(&priming).expect("a priming id");

    let (_, call) = on_a
        .call("announce", json!({ "n": 5 }), false)
        .await
        .expect("call");
    SseReader::new(call).collect().await.expect("the call");
    let mut ids = Vec::new();
    while ids.len() < 5 {
        let frame = standalone
            .next()
            .await
            .expect("in time")
            .expect("a notification");
        if let Some((index, None)) = position(&frame) {
            assert_eq!(
                frame.json().expect("json")["method"],
                "notifications/resources/list_changed"
            );
            ids.push(index);
        }
    }
    assert_eq!(ids, (primed + 1..primed + 6).collect::<Vec<_>>());

    // And a resume on A from B's last id finds nothing twice.
    drop(standalone);
    let resumed = on_a.resume(&ids[2].to_string()).await.expect("resume on A");
    assert_eq!(resumed.status(), 200);
    let mut reader = SseReader::new(resumed);
    let notice = reader.next().await.expect("in time").expect("notice");
    assert_eq!(notice.event.as_deref(), Some(REPLAY_NOTICE_EVENT));
    let mut replayed = Vec::new();
    while replayed.len() < 2 {
        let frame = reader.next().await.expect("in time").expect("an event");
        if let Some((index, None)) = position(&frame) {
            replayed.push(index);
        }
    }
    assert_eq!(replayed, ids[3..].to_vec());
}

#[tokio::test]
async fn a_paused_owner_taken_over_never_gets_its_late_events_to_a_client() {
    let mut cluster = cluster();
    let mut on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    let (id, response) = on_a
        .call("count_to", json!({ "n": 200 }), true)
        .await
        .expect("call");
    let mut on_a_stream = SseReader::new(response);
    let (cursor, _) = read_progress(&mut on_a_stream, 3).await;
    cluster.a.signal("STOP");

    // B takes over once A's lease lapses; the call ends with the error.
    let on_b = on_a.at(&cluster.b.url);
    let resumed = on_b.resume(&cursor).await.expect("resume on B");
    let frames = SseReader::new(resumed)
        .collect()
        .await
        .expect("the stream ends");
    let replayed = events(&frames);
    let (terminal, last) = replayed.last().expect("a terminal event").clone();
    assert_eq!(last["id"], id);
    assert!(last["error"].is_object(), "{last}");

    // A wakes up and carries on counting: fenced, it stops.
    cluster.a.signal("CONT");
    assert!(
        cluster
            .a
            .logged("no longer writes the session", Duration::from_secs(20))
            .is_some(),
        "A never noticed it was fenced"
    );
    // Nothing of A's after the takeover reached its own client...
    let late = on_a_stream.collect().await.expect("A's stream ends");
    for frame in &late {
        if let Some((index, _)) = position(frame) {
            assert!(
                index < terminal,
                "A sent {index} after the takeover at {terminal}"
            );
        }
    }
    // ...nor the shared log: the terminal error is still the last event.
    let (from, _) = replayed[0];
    let again = on_b
        .resume(&format!(
            "{}/{}",
            from - 1,
            position(&frames[1]).and_then(|p| p.1).expect("stream")
        ))
        .await
        .expect("resume again");
    let again = events(&SseReader::new(again).collect().await.expect("frames"));
    assert_eq!(again.last().map(|(i, _)| *i), Some(terminal));

    // The session itself lives on: A stopping is no `DELETE` (A's stop used
    // to delete it from Redis, and every instance then answered 404).
    let mut on_b = on_b;
    let deadline = Instant::now() + LEASE + Duration::from_secs(5);
    loop {
        let answer = on_b
            .post(json!({ "jsonrpc": "2.0", "id": 90, "method": "tools/list" }))
            .await
            .expect("an answer");
        match answer.status().as_u16() {
            200 => break,
            503 if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => panic!("the session is gone for B: {other}"),
        }
    }
    // A call spanning A's whole shutdown (its service ends seconds after
    // the fence) and many renewal periods: a deleted session would end it.
    let (_, response) = on_b
        .call("count_to", json!({ "n": 30, "interval_ms": 300 }), false)
        .await
        .expect("a call on B");
    let frames = SseReader::new(response).collect().await.expect("frames");
    let answer = frames
        .iter()
        .filter_map(Frame::json)
        .find(|j| j.get("id").is_some())
        .expect("an answer");
    assert_eq!(
        answer["result"]["content"][0]["text"], "counted to 30",
        "{answer}"
    );
}

#[tokio::test]
async fn with_redis_killed_answers_are_clear_errors_never_an_empty_200() {
    let mut cluster = cluster();
    let on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    let on_b = on_a.at(&cluster.b.url);
    cluster.redis.kill();
    for cursor in [None, Some("1")] {
        let response = match cursor {
            Some(cursor) => on_b.resume(cursor).await,
            None => on_b.get(None).await,
        }
        .expect("an answer");
        assert_eq!(response.status(), 503, "{cursor:?}");
        let body = response.text().await.expect("body");
        assert!(body.contains("shared replay log"), "{body}");
    }
    let fresh = RawSession::open(&cluster.b.url).await;
    assert!(fresh.is_err(), "a new session cannot start without Redis");
}

#[tokio::test]
async fn a_deleted_session_is_404_on_every_instance() {
    let cluster = cluster();
    let on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    let deleted = on_a.delete().await.expect("DELETE");
    assert_eq!(deleted.status(), 200);
    for session in [on_a.at(&cluster.a.url), on_a.at(&cluster.b.url)] {
        assert_eq!(session.get(None).await.expect("GET").status(), 404);
        assert_eq!(session.resume("1").await.expect("GET").status(), 404);
    }
}

#[tokio::test]
async fn a_post_to_an_instance_that_does_not_own_the_session_is_refused_clearly() {
    let cluster = cluster();
    let mut on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    let on_b = on_a.at(&cluster.b.url);
    let refused = on_b
        .post(json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/list" }))
        .await
        .expect("an answer");
    assert_eq!(refused.status(), 503);
    let body = refused.text().await.expect("body");
    assert!(body.contains("another instance"), "{body}");
    // The owner still answers.
    let (_, response) = on_a
        .call("count_to", json!({ "n": 1, "interval_ms": 1 }), false)
        .await
        .expect("call on A");
    let frames = SseReader::new(response).collect().await.expect("frames");
    assert!(
        frames
            .iter()
            .any(|f| f.json().is_some_and(|j| j["result"].is_object()))
    );
}

#[tokio::test]
async fn resumes_through_a_round_robin_proxy_are_exact_on_either_instance() {
    let cluster = cluster();
    let proxy = RoundRobin::start(vec![cluster.a.addr(), cluster.b.addr()])
        .await
        .expect("proxy");
    let mut on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    // POSTs keep affinity (straight to A); GETs go through the proxy, a new
    // connection each, so they alternate between A and B.
    let (_, call) = on_a
        .call("announce", json!({ "n": 10 }), false)
        .await
        .expect("call");
    SseReader::new(call).collect().await.expect("the call");
    for cursor in 1..=8u64 {
        let response = on_a
            .at(&proxy.url)
            .resume(&cursor.to_string())
            .await
            .expect("resume");
        assert_eq!(response.status(), 200, "cursor {cursor}");
        let mut reader = SseReader::new(response);
        let notice = reader.next().await.expect("in time").expect("notice");
        assert_eq!(notice.json().expect("json")["complete"], true);
        let next = reader
            .next()
            .await
            .expect("in time")
            .expect("the next event");
        assert_eq!(
            position(&next),
            Some((cursor + 1, None)),
            "strictly after {cursor}"
        );
    }
    let served = proxy.served();
    assert!(
        served.iter().all(|n| *n >= 4),
        "both instances answered: {served:?}"
    );
}

#[tokio::test]
async fn a_drained_call_is_204_and_an_evicted_standalone_cursor_is_noticed_on_either_instance() {
    let cluster = cluster();
    let mut on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    let (_, call) = on_a
        .call("count_to", json!({ "n": 2, "interval_ms": 1 }), true)
        .await
        .expect("call");
    let frames = SseReader::new(call).collect().await.expect("the call");
    let last = frames
        .iter()
        .rev()
        .find_map(|f| f.id.clone())
        .expect("the response's id");
    // More standalone events than the window keeps.
    let (_, call) = on_a
        .call("announce", json!({ "n": 40 }), false)
        .await
        .expect("call");
    SseReader::new(call).collect().await.expect("the call");
    for url in [&cluster.a.url, &cluster.b.url] {
        let session = on_a.at(url);
        let drained = session.resume(&last).await.expect("resume");
        assert_eq!(drained.status(), 204, "{url}");
        let response = session.resume("1").await.expect("resume");
        assert_eq!(response.status(), 200, "{url}");
        let mut reader = SseReader::new(response);
        let notice = reader.next().await.expect("in time").expect("notice");
        assert_eq!(notice.event.as_deref(), Some(REPLAY_NOTICE_EVENT));
        let notice = notice.json().expect("json");
        assert_eq!(notice["complete"], false, "{notice}");
        assert_eq!(notice["floor"], "25", "{notice}");
        let first = reader.next().await.expect("in time").expect("an event");
        assert_eq!(position(&first), Some((25, None)));
    }
}

/// Redis's connected clients, through `redis-cli` on the test's socket.
fn redis_clients(redis: &RedisServer) -> usize {
    let url = redis.url();
    let socket = url.trim_start_matches("unix://");
    let out = std::process::Command::new("redis-cli")
        .args(["-s", socket, "CLIENT", "LIST"])
        .output()
        .expect("redis-cli (the Debian package redis-tools) must be installed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|line| line.starts_with("id="))
        .count()
}

/// Dropped GETs on a non-owner once left a tail (and its Redis connection)
/// behind for up to the session's TTL: each now ends with its reader, and
/// Redis's client count comes back to where it was.
#[tokio::test]
async fn dropped_gets_on_a_non_owner_leave_no_redis_connection_behind() {
    let cluster = cluster();
    let on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    let on_b = on_a.at(&cluster.b.url);
    // Each instance connected to Redis when it started; a tail adds one.
    let baseline = redis_clients(&cluster.redis);
    for _ in 0..12 {
        let response = on_b.get(None).await.expect("GET on B");
        assert_eq!(response.status(), 200);
        let mut reader = SseReader::new(response);
        // The priming frame: the tail is running.
        let _ = tokio::time::timeout(Duration::from_millis(500), reader.next()).await;
        drop(reader);
    }
    // The count can see a tail: a connected reader's is there.
    let live = SseReader::new(on_b.get(None).await.expect("GET on B"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while redis_clients(&cluster.redis) <= baseline {
        assert!(Instant::now() < deadline, "a live tail never showed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(live);
    // A tail ends within one poll of its reader (500 ms) and its blocking
    // read (bounded by the same poll) with it.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut now = redis_clients(&cluster.redis);
    while now > baseline && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        now = redis_clients(&cluster.redis);
    }
    assert!(now <= baseline, "{now} clients, {baseline} before the GETs");
}

/// Kill -9 of the owner, then a POST for the session on another instance
/// (which takes it over), then the cut call's resume there: the events the
/// dead owner committed strictly after the cursor, then the call's terminal
/// error. The takeover's worker used to answer `400`: its own logs do not
/// know the call's stream.
#[tokio::test]
async fn after_a_post_first_takeover_a_cut_call_resumes_with_its_retained_events() {
    let mut cluster = cluster();
    let mut on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    let (id, response) = on_a
        .call("count_to", json!({ "n": 200 }), true)
        .await
        .expect("call");
    let mut reader = SseReader::new(response);
    let (cursor, before) = read_progress(&mut reader, 5).await;
    drop(reader);
    cluster.a.signal("KILL");

    let on_b = on_a.at(&cluster.b.url);
    // A's lease runs out first: until then B refuses with 503.
    let deadline = Instant::now() + LEASE + Duration::from_secs(10);
    let status = loop {
        let answer = on_b
            .post(json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/list" }))
            .await
            .expect("an answer");
        let status = answer.status();
        if status != 503 || Instant::now() > deadline {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status, 200, "B took the session over");

    let resumed = on_b.resume(&cursor).await.expect("resume on B");
    let status = resumed.status();
    if status != 200 {
        let body = resumed.text().await.unwrap_or_default();
        panic!("resume of {cursor} on B: {status} {body}");
    }
    let frames = SseReader::new(resumed)
        .collect()
        .await
        .expect("the stream ends");
    let replayed = events(&frames);
    let (from, _) = position(&Frame {
        id: Some(cursor.clone()),
        ..frames[0].clone()
    })
    .expect("cursor");
    let indices: Vec<u64> = replayed.iter().map(|(i, _)| *i).collect();
    let expected: Vec<u64> = (from + 1..from + 1 + indices.len() as u64).collect();
    assert_eq!(indices, expected, "strictly after the cursor, contiguous");
    assert_retained_then_lost(&replayed, &before, id);
}

/// Redis stops answering for four lease periods while a call streams: the
/// owner's commits wait, its lease lapses, and when Redis is back the owner
/// takes its lease again at the same epoch and carries on. It used to fence
/// itself (a new epoch), end its own call with the terminal error, and drop
/// the session.
#[tokio::test]
async fn a_redis_pause_longer_than_the_lease_costs_the_owner_nothing() {
    let cluster = cluster();
    let mut on_a = RawSession::open(&cluster.a.url)
        .await
        .expect("session on A");
    let (id, response) = on_a
        .call("count_to", json!({ "n": 30, "interval_ms": 200 }), true)
        .await
        .expect("call");
    let mut reader = SseReader::new(response);
    let (_, mut seen) = read_progress(&mut reader, 3).await;
    let url = cluster.redis.url();
    let paused = std::process::Command::new("redis-cli")
        .args(["-s", url.trim_start_matches("unix://")])
        .args(["CLIENT", "PAUSE", "4000", "ALL"])
        .output()
        .expect("redis-cli");
    assert!(paused.status.success());
    let frames = reader.collect().await.expect("the stream ends");
    seen.extend(
        frames
            .iter()
            .filter_map(|f| f.json().and_then(|j| j["params"]["progress"].as_f64())),
    );
    assert_eq!(seen, (1..=30).map(f64::from).collect::<Vec<_>>());
    let last = frames.last().and_then(Frame::json).expect("the answer");
    assert_eq!(last["id"], id, "{last}");
    assert_eq!(last["result"]["content"][0]["text"], "counted to 30");
    // And the session lives on.
    let (_, response) = on_a
        .call("count_to", json!({ "n": 1, "interval_ms": 1 }), false)
        .await
        .expect("another call");
    assert_eq!(response.status(), 200);
}
