//! The standalone stream's segments (issue 44, review 3, finding 2): a
//! takeover starts the standalone ids at its epoch, and every reader crosses
//! the jump only where a resume's notice can name it.

use futures::StreamExt;
use rmcp_resume_core::log::Window;
use rmcp_resume_core::resumption::{ResumeAnswer, RmcpEventId, StreamId, plan};
use rmcp_resume_redis::TailError;
use rmcp_resume_testkit::redis::RedisServer;

mod common;
use common::{LIMIT, commit_at, config, connect, owned, standalone_head, take_over, view};

/// A tail reading A's events when C takes the session over ends at C's
/// segment instead of sending the jump; the reader's resume from A's last
/// event goes on at C's first, nothing lost.
#[tokio::test]
async fn a_live_tail_ends_at_a_new_owners_segment_and_the_resume_goes_on_there() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    for n in 1..=2 {
        commit_at(&session, lease_a, StreamId::Standalone, n, "{\"by\":\"a\"}")
            .await
            .expect("A's event");
    }
    let mut tail = Box::pin(session.tail(StreamId::Standalone, 1, None));
    for n in 1..=2 {
        let event = tokio::time::timeout(LIMIT, tail.next())
            .await
            .expect("in time")
            .expect("an item")
            .expect("A's event");
        assert_eq!(event.index, n);
    }
    let lease_c = take_over(&server, &log, "s", "c").await;
    let c_first = standalone_head(&session).await;
    assert!(c_first >= lease_c.epoch && c_first < 1 << 53, "{c_first}");
    commit_at(
        &session,
        lease_c,
        StreamId::Standalone,
        c_first,
        "{\"by\":\"c\"}",
    )
    .await
    .expect("C's event");
    let ended = tokio::time::timeout(LIMIT, tail.next())
        .await
        .expect("in time");
    assert!(
        matches!(ended, Some(Err(TailError::NewSegment { after: 2, next })) if next == c_first),
        "{ended:?}"
    );
    assert!(tail.next().await.is_none());

    // The resume from A's last event: C's first follows, the floor is no
    // higher than the cursor's successor.
    let snapshot = session
        .read(StreamId::Standalone, 3, 8)
        .await
        .expect("read");
    assert_eq!(snapshot.resume_at, c_first);
    let answer = plan(snapshot.lookup, RmcpEventId::standalone(2));
    assert!(matches!(answer, ResumeAnswer::Replay { .. }), "{answer:?}");
    let events: Vec<u64> = snapshot.events.iter().map(|e| e.index).collect();
    assert_eq!(events, [c_first]);
    // A tail from C's segment reads on without a jump.
    let mut tail = Box::pin(session.tail(StreamId::Standalone, c_first, None));
    let event = tokio::time::timeout(LIMIT, tail.next())
        .await
        .expect("in time")
        .expect("an item")
        .expect("C's event");
    assert_eq!(event.index, c_first);
    // A cursor in the jump that no owner Redis knows of gave: the floor.
    let snapshot = session
        .read(StreamId::Standalone, 11, 8)
        .await
        .expect("read");
    let answer = plan(snapshot.lookup, RmcpEventId::standalone(10));
    assert_eq!(
        answer,
        ResumeAnswer::Fallback {
            from: c_first,
            floor: c_first
        }
    );
    // C's priming id (its segment's start - 1) is a position of C's.
    let snapshot = session
        .read(StreamId::Standalone, c_first, 8)
        .await
        .expect("read");
    let answer = plan(snapshot.lookup, RmcpEventId::standalone(c_first - 1));
    assert!(
        matches!(answer, ResumeAnswer::Replay { from, .. } if from == c_first),
        "{answer:?}"
    );
}

/// The window counts the standalone stream's events, not its ids: a
/// segment's jump neither empties the window nor makes a commit walk the
/// ids between.
#[tokio::test]
async fn the_standalone_window_counts_events_across_a_segment() {
    let server = RedisServer::start();
    let mut config = config();
    config.window = Window::events(4);
    let log = connect(&server, config).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    for n in 1..=3 {
        commit_at(&session, lease_a, StreamId::Standalone, n, "{\"by\":\"a\"}")
            .await
            .expect("A's event");
    }
    let lease_b = take_over(&server, &log, "s", "b").await;
    let b_first = standalone_head(&session).await;
    let started = std::time::Instant::now();
    for n in b_first..b_first + 3 {
        commit_at(&session, lease_b, StreamId::Standalone, n, "{\"by\":\"b\"}")
            .await
            .expect("B's event");
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let snapshot = session
        .read(StreamId::Standalone, 0, 16)
        .await
        .expect("read");
    let events: Vec<u64> = snapshot.events.iter().map(|e| e.index).collect();
    assert_eq!(events, [3, b_first, b_first + 1, b_first + 2]);
    let floor = view(snapshot.lookup).floor;
    assert_eq!(floor, 3);
    // A's evicted event is below the floor; A's last goes on at B's.
    let lookup = session
        .read(StreamId::Standalone, 2, 1)
        .await
        .expect("read")
        .lookup;
    assert!(matches!(
        plan(lookup, RmcpEventId::standalone(1)),
        ResumeAnswer::Fallback { .. }
    ));
    let snapshot = session
        .read(StreamId::Standalone, 4, 1)
        .await
        .expect("read");
    assert_eq!(snapshot.resume_at, b_first);
    assert!(matches!(
        plan(snapshot.lookup, RmcpEventId::standalone(3)),
        ResumeAnswer::Replay { .. }
    ));
}

/// A segment its owner wrote nothing into before the next takeover: a
/// resume from the id before it goes on at the first segment that can hold
/// events, not at the empty one, whose tail would end at once at the next
/// jump and leave the reader on the same cursor for ever (the long fault
/// run's loop: a standalone `GET` with cursor `0` answered, every 100 ms,
/// with a stream that ended within a millisecond).
#[tokio::test]
async fn a_resume_before_an_empty_segment_goes_on_past_it() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    for n in 1..=2 {
        commit_at(&session, lease_a, StreamId::Standalone, n, "{\"by\":\"a\"}")
            .await
            .expect("A's event");
    }
    let _lease_b = take_over(&server, &log, "s", "b").await;
    let b_first = standalone_head(&session).await;
    let lease_c = take_over(&server, &log, "s", "c").await;
    let c_first = standalone_head(&session).await;
    assert!(c_first > b_first, "{b_first} {c_first}");
    commit_at(
        &session,
        lease_c,
        StreamId::Standalone,
        c_first,
        "{\"by\":\"c\"}",
    )
    .await
    .expect("C's event");
    let snapshot = session
        .read(StreamId::Standalone, 3, 8)
        .await
        .expect("read");
    assert_eq!(snapshot.resume_at, c_first, "B's segment is empty");
    let answer = plan(snapshot.lookup, RmcpEventId::standalone(2));
    assert!(matches!(answer, ResumeAnswer::Replay { .. }), "{answer:?}");
    // The tail from there reads C's event instead of ending at C's jump.
    let mut tail = Box::pin(session.tail(StreamId::Standalone, snapshot.resume_at, None));
    let event = tokio::time::timeout(LIMIT, tail.next())
        .await
        .expect("in time")
        .expect("an item")
        .expect("C's event");
    assert_eq!(event.index, c_first);
    // B's priming id (its segment's start - 1) goes on at C's too.
    let snapshot = session
        .read(StreamId::Standalone, b_first, 8)
        .await
        .expect("read");
    assert_eq!(snapshot.resume_at, c_first);
}
