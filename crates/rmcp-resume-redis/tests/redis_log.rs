//! The shared log against a real redis-server.

use std::collections::HashSet;
use std::time::Duration;

use futures::StreamExt;
use rmcp_resume_core::log::Window;
use rmcp_resume_core::resumption::{
    LogView, ResumeAnswer, RmcpEventId, StreamId, StreamLookup, plan,
};
use rmcp_resume_redis::{
    INSTANCE_LOST_ERROR, LeaseOutcome, RedisLog, RedisLogError, TailError, Write,
};
use rmcp_resume_testkit::redis::RedisServer;

mod common;
use common::{LIMIT, config, connect, expire_lease, owned, view};

#[tokio::test]
async fn events_get_contiguous_indices_and_read_strictly_after_a_cursor() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s1");
    let lease = owned(&log, "s1", "a").await;
    for n in 0..5 {
        let appended = session
            .append(
                lease,
                StreamId::Standalone,
                Some(&format!("{{\"n\":{n}}}")),
                false,
            )
            .await
            .expect("append");
        assert_eq!(appended.index, n + 1, "the standalone stream starts at 1");
    }
    let snapshot = session
        .read(StreamId::Standalone, 3, 100)
        .await
        .expect("read");
    assert_eq!(
        view(snapshot.lookup),
        LogView {
            floor: 1,
            head: 6,
            finished: false
        }
    );
    let indices: Vec<u64> = snapshot.events.iter().map(|e| e.index).collect();
    assert_eq!(indices, [3, 4, 5]);
    assert_eq!(snapshot.events[0].data.as_deref(), Some("{\"n\":2}"));
}

#[tokio::test]
async fn two_instances_never_get_the_same_stream_number() {
    let server = RedisServer::start();
    let a = connect(&server, config()).await;
    let b = connect(&server, config()).await;
    let lease = owned(&a, "s", "a").await;
    let open = |log: RedisLog| async move {
        let session = log.session("s");
        let mut numbers = Vec::new();
        for i in 0..50 {
            numbers.push(
                session
                    .open_request(lease, &i.to_string())
                    .await
                    .expect("open"),
            );
        }
        numbers
    };
    let (left, right) = tokio::join!(open(a), open(b));
    let all: HashSet<u64> = left.iter().chain(&right).copied().collect();
    assert_eq!(all.len(), 100, "stream numbers collided");
    assert_eq!(all, (0..100).collect());
}

#[tokio::test]
async fn a_fenced_owner_writes_nothing_and_its_open_calls_end_with_the_terminal_error() {
    let server = RedisServer::start();
    let a = connect(&server, config()).await;
    let b = connect(&server, config()).await;
    let lease_a = owned(&a, "s", "a").await;
    let session_a = a.session("s");
    let m = session_a.open_request(lease_a, "7").await.expect("open");
    let stream = StreamId::Request(m);
    session_a
        .append(lease_a, stream, Some("{\"progress\":1}"), false)
        .await
        .expect("append");

    // B cannot take a lease A holds.
    let held = b.session("s").acquire("b", false).await.expect("acquire");
    assert!(
        matches!(held, LeaseOutcome::HeldBy { epoch, .. } if epoch == lease_a.epoch),
        "{held:?}"
    );

    // A's lease lapses (as when A is paused past it).
    expire_lease(&server, "t:{s}:lease").await;
    let taken = b.session("s").acquire("b", false).await.expect("acquire");
    let LeaseOutcome::Acquired {
        lease: lease_b,
        ended_streams,
    } = taken
    else {
        panic!("B did not take over: {taken:?}");
    };
    assert!(lease_b.epoch > lease_a.epoch, "{lease_b:?}");
    assert_eq!(ended_streams, 1);

    // A, resumed, appends: refused, and nothing of it is visible.
    let late = session_a
        .append(lease_a, stream, Some("{\"late\":true}"), true)
        .await;
    assert!(
        matches!(
            late,
            Err(RedisLogError::Fenced { held, current }) if held == lease_a.epoch && current == lease_b.epoch
        ),
        "{late:?}"
    );
    let late_open = session_a.open_request(lease_a, "8").await;
    assert!(
        matches!(late_open, Err(RedisLogError::Fenced { .. })),
        "{late_open:?}"
    );
    let snapshot = b.session("s").read(stream, 0, 100).await.expect("read");
    assert_eq!(
        view(snapshot.lookup),
        LogView {
            floor: 0,
            head: 2,
            finished: true
        }
    );
    let data: Vec<String> = snapshot.events.into_iter().filter_map(|e| e.data).collect();
    assert_eq!(data[0], "{\"progress\":1}");
    let terminal: serde_json::Value = serde_json::from_str(&data[1]).expect("terminal JSON");
    assert_eq!(terminal["id"], 7);
    assert_eq!(
        terminal["error"],
        serde_json::from_str::<serde_json::Value>(INSTANCE_LOST_ERROR).expect("json")
    );
    assert!(!data.iter().any(|d| d.contains("late")));
}

#[tokio::test]
async fn the_window_trims_by_count_and_the_plan_sees_the_floor_redis_reports() {
    let server = RedisServer::start();
    let mut config = config();
    config.window = Window::events(4);
    let log = connect(&server, config).await;
    let session = log.session("s");
    let lease = owned(&log, "s", "a").await;
    let m = session.open_request(lease, "1").await.expect("open");
    let stream = StreamId::Request(m);
    for n in 0..10u64 {
        let appended = session
            .append(lease, stream, Some(&n.to_string()), false)
            .await
            .expect("append");
        assert_eq!(appended.floor, n.saturating_sub(3));
    }
    let lookup = session.read(stream, 0, 1).await.expect("read").lookup;
    assert_eq!(
        view(lookup),
        LogView {
            floor: 6,
            head: 10,
            finished: false
        }
    );
    let evicted = plan(lookup, RmcpEventId::on_request_stream(2, m));
    assert_eq!(evicted, ResumeAnswer::BelowFloor { floor: 6 });
    let covered = plan(lookup, RmcpEventId::on_request_stream(7, m));
    assert_eq!(covered, ResumeAnswer::Replay { from: 8, floor: 6 });
    let unknown = session
        .read(StreamId::Request(m + 1), 0, 1)
        .await
        .expect("read")
        .lookup;
    assert_eq!(unknown, StreamLookup::UnknownStream);
}

#[tokio::test]
async fn the_window_trims_by_bytes() {
    let server = RedisServer::start();
    let mut config = config();
    // Each event weighs its data plus 32 frame bytes: 100 + 32.
    config.max_stream_bytes = 3 * 132;
    let log = connect(&server, config).await;
    let session = log.session("s");
    let lease = owned(&log, "s", "a").await;
    let payload = "x".repeat(100);
    for _ in 0..8 {
        session
            .append(lease, StreamId::Standalone, Some(&payload), false)
            .await
            .expect("append");
    }
    let lookup = session
        .read(StreamId::Standalone, 0, 1)
        .await
        .expect("read")
        .lookup;
    assert_eq!(
        view(lookup),
        LogView {
            floor: 6,
            head: 9,
            finished: false
        }
    );
}

#[tokio::test]
async fn a_live_tail_replays_then_follows_until_the_answer() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let reader = connect(&server, config()).await;
    let session = log.session("s");
    let lease = owned(&log, "s", "a").await;
    let m = session.open_request(lease, "1").await.expect("open");
    let stream = StreamId::Request(m);
    for n in 0..3 {
        session
            .append(lease, stream, Some(&n.to_string()), false)
            .await
            .expect("append");
    }
    let mut tail = Box::pin(reader.session("s").tail(stream, 1, None));
    let mut seen = Vec::new();
    for _ in 0..2 {
        let event = tokio::time::timeout(LIMIT, tail.next())
            .await
            .expect("in time");
        seen.push(event.expect("an event").expect("ok").index);
    }
    // Now live: each append reaches the tail.
    let writer = tokio::spawn(async move {
        for n in 3..6 {
            let finish = n == 5;
            session
                .append(lease, stream, Some(&n.to_string()), finish)
                .await
                .expect("append");
        }
    });
    while let Some(event) = tokio::time::timeout(LIMIT, tail.next())
        .await
        .expect("in time")
    {
        seen.push(event.expect("ok").index);
    }
    writer.await.expect("writer");
    assert_eq!(seen, [1, 2, 3, 4, 5], "no gap, no duplicate, then the end");
}

#[tokio::test]
async fn a_tail_on_another_instance_takes_over_a_dead_owner_and_ends_with_the_error() {
    let server = RedisServer::start();
    let mut short = config();
    short.lease = Duration::from_millis(300);
    let a = connect(&server, short.clone()).await;
    let b = connect(&server, short).await;
    let lease = owned(&a, "s", "a").await;
    let session = a.session("s");
    let m = session
        .open_request(lease, "\"call-1\"")
        .await
        .expect("open");
    let stream = StreamId::Request(m);
    session
        .append(lease, stream, Some("{\"progress\":1}"), false)
        .await
        .expect("append");
    drop(session);
    drop(a); // A dies: it never renews.

    let started = std::time::Instant::now();
    let tail = b.session("s").tail(stream, 0, Some("b".to_owned()));
    let events: Vec<_> = tokio::time::timeout(LIMIT, tail.collect::<Vec<_>>())
        .await
        .expect("the tail ends");
    let data: Vec<String> = events
        .into_iter()
        .map(|e| e.expect("ok").data.expect("data"))
        .collect();
    assert_eq!(data.len(), 2, "{data:?}");
    assert_eq!(data[0], "{\"progress\":1}");
    assert!(data[1].contains("\"id\":\"call-1\"") && data[1].contains("outcome unknown"));
    // The lease (300 ms) bounds it, plus one poll (100 ms) and slack.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_tail_that_falls_below_the_floor_ends_with_an_error_not_a_gap() {
    let server = RedisServer::start();
    let mut config = config();
    config.window = Window::events(2);
    let log = connect(&server, config).await;
    let session = log.session("s");
    let lease = owned(&log, "s", "a").await;
    for n in 0..6 {
        session
            .append(lease, StreamId::Standalone, Some(&n.to_string()), false)
            .await
            .expect("append");
    }
    let mut tail = Box::pin(session.tail(StreamId::Standalone, 2, None));
    let first = tokio::time::timeout(LIMIT, tail.next())
        .await
        .expect("in time");
    assert!(
        matches!(first, Some(Err(TailError::Evicted { from: 2, floor: 5 }))),
        "{first:?}"
    );
    assert!(tail.next().await.is_none());
}

#[tokio::test]
async fn a_deleted_session_is_gone_for_every_reader() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease = owned(&log, "s", "a").await;
    let m = session.open_request(lease, "1").await.expect("open");
    session
        .append(lease, StreamId::Request(m), Some("1"), false)
        .await
        .expect("append");
    assert!(session.exists().await.expect("exists"));
    session.delete().await.expect("delete");
    assert!(!session.exists().await.expect("exists"));
    let lookup = session
        .read(StreamId::Request(m), 0, 1)
        .await
        .expect("read")
        .lookup;
    assert_eq!(lookup, StreamLookup::SessionLost);
    let mut tail = Box::pin(session.tail(StreamId::Standalone, 1, None));
    let ended = tokio::time::timeout(LIMIT, tail.next())
        .await
        .expect("in time");
    assert!(
        matches!(ended, Some(Err(TailError::SessionGone))),
        "{ended:?}"
    );
}

#[tokio::test]
async fn with_redis_killed_every_operation_fails_clearly_and_in_time() {
    let mut server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease = owned(&log, "s", "a").await;
    server.kill();
    let started = std::time::Instant::now();
    let append = session
        .append(lease, StreamId::Standalone, Some("1"), false)
        .await;
    assert!(matches!(append, Err(RedisLogError::Redis(_))), "{append:?}");
    let read = session.read(StreamId::Standalone, 0, 1).await;
    assert!(matches!(read, Err(RedisLogError::Redis(_))), "{read:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_takeover_never_brings_back_a_session_redis_does_not_know() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("never-created");
    let outcome = session.acquire("b", false).await.expect("acquire");
    assert_eq!(outcome, LeaseOutcome::Unknown);
    assert!(
        !session.exists().await.expect("exists"),
        "nothing was written"
    );
    assert!(
        session
            .acquire("a", true)
            .await
            .expect("acquire")
            .lease()
            .is_some()
    );
}

/// An answered call is kept `answered_ttl`, an open one `session_ttl`, in
/// both layouts (a quick call packed in one batch, a call answered in a
/// later batch); a read that still owes its reader events keeps it
/// `answered_ttl` longer; once expired, a read finds no such stream, as
/// in-process.
#[tokio::test]
async fn an_answered_call_is_kept_answered_ttl_and_an_open_one_session_ttl() {
    let server = RedisServer::start();
    let mut short = config();
    short.answered_ttl = Duration::from_secs(3);
    // Kept at least as long as a commit may be retried.
    short.outage_limit = Duration::from_secs(2);
    let log = connect(&server, short).await;
    let redis = common::raw(&server).await;
    let lease = owned(&log, "k", "a").await;
    let session = log.session("k");
    let quick = session.reserve_streams(lease, 1).await.expect("reserve");
    let slow = session.reserve_streams(lease, 1).await.expect("reserve");
    let append = |m: u64, index: u64, data: &'static str| Write::Append {
        stream: StreamId::Request(m),
        index: Some(index),
        data: Some(data),
    };
    session
        .commit(
            lease,
            &[
                append(quick, 0, ""),
                append(quick, 1, "{\"a\":1}"),
                Write::Finish { stream: quick },
                append(slow, 0, ""),
            ],
        )
        .await
        .expect("commit");
    let pttl = |key: String| {
        let mut redis = redis.clone();
        async move {
            let ms: i64 = redis::cmd("PTTL")
                .arg(key)
                .query_async(&mut redis)
                .await
                .expect("PTTL");
            ms
        }
    };
    let quick_ttl = pttl(format!("t:{{k}}:m:{quick}")).await;
    assert!((1..=3_000).contains(&quick_ttl), "packed: {quick_ttl}");
    assert_eq!(
        pttl(format!("t:{{k}}:x:{quick}")).await,
        -2,
        "packed: no stream"
    );
    for key in [format!("t:{{k}}:m:{slow}"), format!("t:{{k}}:x:{slow}")] {
        let ttl = pttl(key.clone()).await;
        assert!(ttl > 60_000, "open {key}: {ttl}");
    }
    session
        .commit(
            lease,
            &[append(slow, 1, "{\"b\":2}"), Write::Finish { stream: slow }],
        )
        .await
        .expect("answer");
    for key in [format!("t:{{k}}:m:{slow}"), format!("t:{{k}}:x:{slow}")] {
        let ttl = pttl(key.clone()).await;
        assert!((1..=3_000).contains(&ttl), "answered {key}: {ttl}");
    }
    // A reader still reading: its read pushes the expiry out again; a read
    // past the end does not.
    let short_lived = |key: String| {
        let mut redis = redis.clone();
        async move {
            let _: i64 = redis::cmd("PEXPIRE")
                .arg(key)
                .arg(200)
                .query_async(&mut redis)
                .await
                .expect("PEXPIRE");
        }
    };
    for key in [format!("t:{{k}}:m:{slow}"), format!("t:{{k}}:x:{slow}")] {
        short_lived(key).await;
    }
    session
        .read(StreamId::Request(slow), 2, 10)
        .await
        .expect("read past the end");
    assert!(
        pttl(format!("t:{{k}}:m:{slow}")).await <= 200,
        "no events owed"
    );
    session
        .read(StreamId::Request(slow), 1, 10)
        .await
        .expect("read");
    for key in [format!("t:{{k}}:m:{slow}"), format!("t:{{k}}:x:{slow}")] {
        let ttl = pttl(key.clone()).await;
        // Above the 200 ms it had: only a refresh puts it there, whatever
        // a stalled machine took since.
        assert!(ttl > 200, "read {key}: {ttl}");
    }
    // Expiry is Redis's clock: poll, bounded, past the end (a read that
    // owes events would keep the stream).
    let deadline = std::time::Instant::now() + LIMIT;
    for m in [quick, slow] {
        loop {
            let lookup = session
                .read(StreamId::Request(m), 2, 10)
                .await
                .expect("read")
                .lookup;
            if lookup == StreamLookup::UnknownStream {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "stream {m} never expired"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
