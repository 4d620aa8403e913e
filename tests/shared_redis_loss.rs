//! Issue 44 over HTTP: the `server` example as separate processes on one
//! redis-server the test starts, restarts empty and pauses. What a client
//! sees when Redis loses its data or stops answering: never a continuation
//! of another writer's history, never an empty `200`.

use std::time::{Duration, Instant};

use rmcp::transport::resumption::{EventCursor, REPLAY_FLOOR_HEADER, REPLAY_NOTICE_EVENT};
use rmcp_resume_testkit::raw::{Frame, RawSession, SseReader};
use rmcp_resume_testkit::redis::{Instance, RedisServer, server_example};
use serde_json::json;

/// Short, so that the tests wait for leases briefly.
const LEASE: Duration = Duration::from_millis(1000);

fn instance(redis: &RedisServer, outage_ms: &str) -> Instance {
    Instance::start_with(
        &server_example(),
        redis,
        LEASE,
        &["--window", "16", "--outage-limit-ms", outage_ms],
    )
}

/// The standalone index of a frame's id, if it is a standalone event.
fn standalone_index(frame: &Frame) -> Option<u64> {
    let id = EventCursor::parse(frame.id.as_deref()?).ok()?;
    let id = id.as_rmcp()?;
    id.stream.is_none().then_some(id.index)
}

/// Reads `reader` until `count` standalone events with data arrived;
/// returns their indices.
async fn standalone_events(reader: &mut SseReader, count: usize) -> Vec<u64> {
    let mut seen = Vec::new();
    while seen.len() < count {
        let frame = reader
            .next()
            .await
            .expect("in time")
            .expect("a standalone event");
        if let (Some(index), Some(_)) = (standalone_index(&frame), frame.json()) {
            seen.push(index);
        }
    }
    seen
}

/// Announces `n` standalone notifications through a call on `session`.
async fn announce(session: &mut RawSession, n: u64) {
    let (_, call) = session
        .call("announce", json!({ "n": n }), false)
        .await
        .expect("announce");
    assert_eq!(call.status(), 200);
    SseReader::new(call).collect().await.expect("the call");
}

/// The review's D1 over HTTP: A owns the session and is paused past its
/// lease; B takes it over and sends standalone events a client reads;
/// Redis restarts empty; A wakes. A must never own the session again, and
/// the client holding B's last event continues with B's history, while a
/// cursor from before the loss is told of the floor.
#[tokio::test]
async fn after_redis_restarts_empty_a_stale_owner_never_continues_anothers_history() {
    let mut redis = RedisServer::start();
    let mut a = instance(&redis, "30000");
    let b = instance(&redis, "30000");
    let on_a = RawSession::open(&a.url).await.expect("session on A");
    let mut on_b = on_a.at(&b.url);
    a.signal("STOP");
    std::thread::sleep(LEASE + LEASE / 2);

    // B takes the session over with a POST, and a client reads its events.
    // (The POST comes first: a takeover starts the standalone stream's ids
    // at a new segment, and a stream opened before it ends there.)
    announce(&mut on_b, 0).await;
    let get = on_b.get(None).await.expect("GET on B");
    assert_eq!(get.status(), 200);
    let mut standalone = SseReader::new(get);
    let primed = standalone
        .next()
        .await
        .expect("in time")
        .and_then(|f| standalone_index(&f))
        .expect("a priming id");
    announce(&mut on_b, 2).await;
    let by_b = standalone_events(&mut standalone, 2).await;
    assert_eq!(by_b, [primed + 1, primed + 2]);
    drop(standalone);

    redis.restart();
    a.signal("CONT");
    // A wakes past its lease: it gives the session up instead of seeding
    // it again with its own, older history.
    assert!(
        a.logged("no longer writes the session", Duration::from_secs(10))
            .is_some(),
        "A kept the session"
    );
    // B, live, seeds it again from its own history; any instance resumes
    // B's last event with B's next one.
    let last = by_b[1];
    let deadline = Instant::now() + Duration::from_secs(10);
    let resumed = loop {
        let resumed = on_a.resume(&last.to_string()).await.expect("resume on A");
        if resumed.status() == 200 || Instant::now() > deadline {
            break resumed;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(resumed.status(), 200);
    let mut reader = SseReader::new(resumed);
    let notice = reader.next().await.expect("in time").expect("notice");
    assert_eq!(notice.event.as_deref(), Some(REPLAY_NOTICE_EVENT));
    let notice = notice.json().expect("notice json");
    assert_eq!(notice["complete"], true, "{notice}");
    announce(&mut on_b, 1).await;
    let next = standalone_events(&mut reader, 1).await;
    assert_eq!(next, [last + 1], "B's history goes on where the client is");

    // A cursor from before the loss: from Redis (on A) it is told what it
    // missed; the owner B still holds its own events and replays them whole.
    let old = on_a
        .resume(&primed.to_string())
        .await
        .expect("resume from before the loss on A");
    assert_eq!(old.status(), 200);
    assert!(old.headers().contains_key(REPLAY_FLOOR_HEADER));
    let mut reader = SseReader::new(old);
    let notice = reader.next().await.expect("in time").expect("notice");
    let notice = notice.json().expect("notice json");
    assert_eq!(notice["complete"], false, "{notice}");
    let old = on_a
        .at(&b.url)
        .resume(&primed.to_string())
        .await
        .expect("resume from before the loss on B");
    assert_eq!(old.status(), 200);
    let mut reader = SseReader::new(old);
    let notice = reader.next().await.expect("in time").expect("notice");
    let notice = notice.json().expect("notice json");
    assert_eq!(notice["complete"], true, "{notice}");
    let replayed = standalone_events(&mut reader, 3).await;
    assert_eq!(replayed, [primed + 1, primed + 2, primed + 3]);
}

/// Review 3, finding 2, over HTTP: three instances of the `server` example
/// on one redis-server. A owns the session, a client reads A's standalone
/// events, and A dies. B takes the session over with a `POST`, a client
/// reads B's events, and B dies. The primary then fails over to a replica
/// that never got B's takeover (the test puts back the keys Redis held
/// before it, as such a replica would hold them). C takes the session over
/// and sends its own events. Before the fix, C gave out B's standalone ids
/// again: a client holding B's last event resumed on C with `200`, a
/// complete notice and C's next event. Now it is told of the floor
/// (`complete:false`); a client holding A's last event, which never got
/// B's, goes on with C's events, the notice naming the jump (`next`).
#[tokio::test]
async fn after_a_failover_that_lost_a_takeover_the_lost_owners_cursor_gets_the_floor() {
    let redis = RedisServer::start();
    let mut a = instance(&redis, "30000");
    let mut b = instance(&redis, "30000");
    let c = instance(&redis, "30000");
    let mut on_a = RawSession::open(&a.url).await.expect("session on A");
    let get = on_a.get(None).await.expect("GET on A");
    assert_eq!(get.status(), 200);
    let mut reader = SseReader::new(get);
    reader
        .next()
        .await
        .expect("in time")
        .expect("A's priming frame");
    announce(&mut on_a, 2).await;
    let by_a = standalone_events(&mut reader, 2).await;
    drop(reader);
    a.signal("KILL");
    std::thread::sleep(LEASE + LEASE / 2);
    // What the replica holds: A's history, A's lease expired.
    let replica = redis.replica().await.expect("the replica's keys");

    // B takes the session over; a client reads B's events.
    let mut on_b = on_a.at(&b.url);
    announce(&mut on_b, 0).await;
    let get = on_b.get(None).await.expect("GET on B");
    assert_eq!(get.status(), 200);
    let mut reader = SseReader::new(get);
    reader
        .next()
        .await
        .expect("in time")
        .expect("B's priming frame");
    announce(&mut on_b, 2).await;
    let by_b = standalone_events(&mut reader, 2).await;
    drop(reader);
    b.signal("KILL");

    // The failover: B's takeover and events never reached the replica.
    redis.fail_over_to(&replica).await.expect("fail over");

    // C takes the session over and sends its own events.
    let mut on_c = on_a.at(&c.url);
    announce(&mut on_c, 0).await;
    let get = on_c.get(None).await.expect("GET on C");
    assert_eq!(get.status(), 200);
    let mut reader = SseReader::new(get);
    reader
        .next()
        .await
        .expect("in time")
        .expect("C's priming frame");
    announce(&mut on_c, 3).await;
    let by_c = standalone_events(&mut reader, 3).await;
    drop(reader);
    assert!(by_c.iter().all(|&n| n < 1 << 53), "{by_c:?}");

    // A client holding B's last event: told of the floor, never continued.
    let b_last = by_b[1];
    let resumed = on_c
        .resume(&b_last.to_string())
        .await
        .expect("resume B's cursor on C");
    assert_eq!(resumed.status(), 200);
    let mut reader = SseReader::new(resumed);
    let notice = reader.next().await.expect("in time").expect("notice");
    assert_eq!(notice.event.as_deref(), Some(REPLAY_NOTICE_EVENT));
    let notice = notice.json().expect("notice json");
    assert_eq!(
        notice["complete"], false,
        "A gave {by_a:?}, B {by_b:?}, C {by_c:?}; B's cursor {b_last} on C: {notice}"
    );
    assert!(
        by_c[0] > b_last,
        "C gave B's ids again: A {by_a:?}, B {by_b:?}, C {by_c:?}"
    );

    // A client holding A's last event goes on with C's events.
    let a_last = by_a[1];
    let resumed = on_c
        .resume(&a_last.to_string())
        .await
        .expect("resume A's cursor on C");
    assert_eq!(resumed.status(), 200);
    let mut reader = SseReader::new(resumed);
    let notice = reader.next().await.expect("in time").expect("notice");
    let notice = notice.json().expect("notice json");
    assert_eq!(notice["complete"], true, "A's cursor {a_last}: {notice}");
    assert_eq!(
        notice["next"].as_str(),
        Some(by_c[0].to_string().as_str()),
        "{notice}"
    );
    let replayed = standalone_events(&mut reader, 3).await;
    assert_eq!(
        replayed, by_c,
        "A's cursor {a_last} goes on with C's events"
    );
}

/// A quick `tools/call` with id `id`.
fn call(id: u64) -> serde_json::Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": { "name": "count_to", "arguments": { "n": 1, "interval_ms": 1 } }
    })
}

/// The review's D2: with Redis stopped, a call `POST`ed to the owner got
/// `200` and a stream with no event once the outage limit passed (the tool
/// had run). Now: a `503` with `Retry-After`, within the outage limit of
/// the `POST`'s arrival (the head's own deadline). Without it the `503`
/// came only when the owner gave the call up: the limit plus the Redis
/// commands in flight then (a commit, then a renewal of the lapsed lease,
/// each timing out after 2 s), about 4 s here.
#[tokio::test]
async fn a_post_on_the_owner_with_redis_stopped_is_a_503_never_an_empty_200() {
    const OUTAGE_LIMIT: Duration = Duration::from_millis(2500);
    let redis = RedisServer::start();
    let a = instance(&redis, "2500");
    let on_a = RawSession::open(&a.url).await.expect("session on A");
    redis.signal("STOP");
    let started = Instant::now();
    let response = on_a.post(call(7)).await.expect("an answer");
    let took = started.elapsed();
    redis.signal("CONT");
    assert_eq!(response.status(), 503, "after {took:?}");
    assert!(
        response
            .headers()
            .contains_key(reqwest::header::RETRY_AFTER),
        "{:?}",
        response.headers()
    );
    // The limit, with room for a slow machine's scheduling.
    assert!(took < OUTAGE_LIMIT + Duration::from_millis(900), "{took:?}");
}

/// A takeover's owner holds only its own segment of the standalone stream;
/// the earlier owner's events are in Redis. Cut off from Redis, it answered
/// a resume from before its segment from its own log: `200` with a notice
/// that the events up to its segment were lost (`complete:false`), while
/// Redis held them (the long fault run's `floor-disagrees` at 462b66d). Now
/// `503`, as an instance that cannot read Redis answers any resume.
#[tokio::test]
async fn an_owner_cut_off_from_redis_claims_no_loss_of_an_earlier_owners_events() {
    let redis = RedisServer::start();
    let mut a = instance(&redis, "30000");
    let b = instance(&redis, "30000");
    let mut on_a = RawSession::open(&a.url).await.expect("session on A");
    announce(&mut on_a, 2).await;
    a.signal("STOP");
    std::thread::sleep(LEASE + LEASE / 2);
    let mut on_b = on_a.at(&b.url);
    // B takes the session over: its standalone stream is a new segment.
    announce(&mut on_b, 1).await;
    redis.signal("STOP");
    let response = on_b.resume("0").await.expect("resume on B");
    redis.signal("CONT");
    a.signal("KILL");
    let status = response.status();
    if status == 200 {
        // A live stream: its first frame says what it claimed.
        let first = SseReader::new(response).next().await;
        panic!("200, first frame {first:?}");
    }
    assert_eq!(status, 503);
}

/// The review's D3: an owner cut off from Redis kept admitting calls after
/// its lease ran out. Now, once its lease is over by its own clock, a call
/// is refused at once (`503`, `Retry-After`) and never run.
#[tokio::test]
async fn an_owner_past_its_lease_admits_no_call() {
    let redis = RedisServer::start();
    let a = instance(&redis, "30000");
    let on_a = RawSession::open(&a.url).await.expect("session on A");
    redis.signal("STOP");
    std::thread::sleep(LEASE + LEASE / 2);
    let started = Instant::now();
    let response = on_a.post(call(7)).await.expect("an answer");
    let took = started.elapsed();
    redis.signal("CONT");
    assert_eq!(response.status(), 503);
    assert!(
        response
            .headers()
            .contains_key(reqwest::header::RETRY_AFTER)
    );
    let body = response.text().await.expect("body");
    assert!(body.contains("lease"), "{body}");
    assert!(
        took < Duration::from_secs(1),
        "not refused at once: {took:?}"
    );
}

/// An idle owner whose Redis stays away past the outage limit gives the
/// session up (it used to keep it for ever), and says so.
#[tokio::test]
async fn an_idle_owner_gives_the_session_up_after_the_outage_limit() {
    let redis = RedisServer::start();
    let a = instance(&redis, "2000");
    let _on_a = RawSession::open(&a.url).await.expect("session on A");
    redis.signal("STOP");
    let gave_up = a.logged("no longer writes the session", Duration::from_secs(10));
    redis.signal("CONT");
    assert!(gave_up.is_some(), "the idle owner kept the session");
}

/// docs/redis.md: "`DELETE` on any instance: `404` everywhere; the owner
/// stops within one renewal (lease / 3)".
#[tokio::test]
async fn a_delete_on_a_non_owner_stops_the_owner_within_a_renewal() {
    let redis = RedisServer::start();
    let a = instance(&redis, "30000");
    let b = instance(&redis, "30000");
    let on_a = RawSession::open(&a.url).await.expect("session on A");
    let started = Instant::now();
    let deleted = on_a.at(&b.url).delete().await.expect("DELETE on B");
    assert_eq!(deleted.status(), 200);
    let stopped = a.logged("no longer writes the session", LEASE);
    let took = started.elapsed();
    assert!(stopped.is_some(), "the owner still runs the session");
    // One renewal period, with room for a slow machine's scheduling.
    assert!(took < LEASE / 3 + Duration::from_millis(400), "{took:?}");
    let response = on_a.post(call(9)).await.expect("POST on A");
    assert_eq!(response.status(), 404);
}

/// docs/redis.md: "`404` for a deleted or expired session": once a dead
/// owner's session has expired from Redis (its keys gone, as `session_ttl`
/// does), every instance answers `404`, never a `200`.
#[tokio::test]
async fn an_expired_session_is_404_on_every_instance() {
    let redis = RedisServer::start();
    let mut a = instance(&redis, "30000");
    let b = instance(&redis, "30000");
    let on_a = RawSession::open(&a.url).await.expect("session on A");
    a.signal("KILL");
    let sock = redis.url().trim_start_matches("unix://").to_owned();
    let keys = std::process::Command::new("redis-cli")
        .args(["-s", &sock, "--scan"])
        .output()
        .expect("redis-cli");
    let keys = String::from_utf8_lossy(&keys.stdout).into_owned();
    assert!(!keys.is_empty(), "the session wrote nothing to Redis");
    for key in keys.lines() {
        let deleted = std::process::Command::new("redis-cli")
            .args(["-s", &sock, "DEL", key])
            .status()
            .expect("redis-cli");
        assert!(deleted.success());
    }
    let on_b = on_a.at(&b.url);
    assert_eq!(on_b.get(None).await.expect("GET").status(), 404);
    assert_eq!(on_b.resume("1").await.expect("resume").status(), 404);
    assert_eq!(on_b.post(call(3)).await.expect("POST").status(), 404);
}
