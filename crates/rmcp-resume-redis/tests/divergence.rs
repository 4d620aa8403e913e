//! Issue 44: histories that cannot diverge silently when Redis loses data.
//! Each test drives the crate's own scripts through `SessionLog` against a
//! real `redis-server` (a `FLUSHALL` stands for a restart without
//! persistence), and each failed on the scripts before the fix.

use futures::StreamExt;
use rmcp_resume_core::resumption::{ResumeAnswer, RmcpEventId, StreamId, plan};
use rmcp_resume_redis::{LeaseOutcome, RedisLogError, Renewal};
use rmcp_resume_testkit::redis::RedisServer;

mod common;
use common::{
    commit_at, config, connect, expire_lease, lose_everything, owned, raw, standalone_head,
    take_over,
};

fn renewal(epoch: u64, standalone_head: u64, live: bool) -> Renewal {
    Renewal {
        epoch,
        lowest_stream: 0,
        standalone_head,
        live,
        confirm: false,
        open_calls: None,
    }
}

/// The review's D1, step by step: A owns the session and is paused past
/// its lease; B takes over and commits standalone event 2, which a client
/// receives; Redis restarts empty; A wakes and renews; B renews. A must
/// not own the session again, and the client holding B's event 2 must never
/// be continued with A's history.
#[tokio::test]
async fn a_stale_owner_is_never_re_elected_after_redis_loses_its_data() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    commit_at(
        &session,
        lease_a,
        StreamId::Standalone,
        1,
        "{\"by\":\"a\",\"n\":1}",
    )
    .await
    .expect("A's event 1");
    // A is paused past its lease; B takes over.
    let lease_b = take_over(&server, &log, "s", "b").await;
    // B's ids start where its takeover put the head (its segment).
    let b2 = standalone_head(&session).await;
    commit_at(
        &session,
        lease_b,
        StreamId::Standalone,
        b2,
        "{\"by\":\"b\",\"n\":2}",
    )
    .await
    .expect("B's event 2, which a client receives");
    lose_everything(&server).await;

    // A wakes: by its own clock its lease ran out, so it renews as not live.
    let a_wakes = session
        .renew_with("a", renewal(lease_a.epoch, 2, false))
        .await
        .expect("A renews");
    assert!(
        a_wakes.lease().is_none(),
        "the stale owner owns again: {a_wakes:?}"
    );
    // Even were A's renewal in flight from before its lease ran out (sent
    // as live), B's higher epoch wins when B renews.
    let a_raced = session
        .renew_with("a", renewal(lease_a.epoch, 2, true))
        .await
        .expect("A's in-flight renewal");
    assert!(matches!(a_raced, LeaseOutcome::Seeded(_)), "{a_raced:?}");
    let b_renews = session
        .renew_with("b", renewal(lease_b.epoch, b2 + 1, true))
        .await
        .expect("B renews");
    assert_eq!(b_renews, LeaseOutcome::Seeded(lease_b), "B must win");
    let confirmed = session
        .renew_with(
            "b",
            Renewal {
                confirm: true,
                ..renewal(lease_b.epoch, b2 + 1, true)
            },
        )
        .await
        .expect("B confirms");
    assert_eq!(confirmed, LeaseOutcome::Renewed(lease_b));
    // A's write is refused, not skipped and not kept.
    let a_writes = commit_at(
        &session,
        lease_a,
        StreamId::Standalone,
        2,
        "{\"by\":\"a\",\"n\":2}",
    )
    .await;
    assert!(
        matches!(a_writes, Err(RedisLogError::Fenced { .. })),
        "{a_writes:?}"
    );
    // A client holding B's event 2 continues with B's history; one holding
    // event 1 is told that what came after it is gone.
    let lookup = session
        .read(StreamId::Standalone, 0, 8)
        .await
        .expect("read")
        .lookup;
    let after_b = plan(lookup, RmcpEventId::standalone(b2));
    assert!(
        matches!(after_b, ResumeAnswer::Replay { from, .. } if from == b2 + 1),
        "{after_b:?}"
    );
    let after_a = plan(lookup, RmcpEventId::standalone(1));
    assert!(
        matches!(after_a, ResumeAnswer::Fallback { floor, .. } if floor == b2 + 1),
        "a cursor before the loss is continued as if nothing was lost: {after_a:?}"
    );
    commit_at(
        &session,
        lease_b,
        StreamId::Standalone,
        b2 + 1,
        "{\"by\":\"b\",\"n\":3}",
    )
    .await
    .expect("B goes on");
}

/// A seeding the owner never confirmed (its answer came back after the
/// owner's lease ran out, or the owner died) is continued by nobody: the
/// next instance finds the session unknown, rather than taking over a
/// history nobody vouches for.
#[tokio::test]
async fn an_unconfirmed_seeding_is_continued_by_nobody() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    lose_everything(&server).await;
    let seeded = session
        .renew_with("a", renewal(lease_a.epoch, 5, true))
        .await
        .expect("seed");
    assert_eq!(seeded, LeaseOutcome::Seeded(lease_a));
    expire_lease(&server, "t:{s}:lease").await;
    let taken = session.acquire("c", false).await.expect("take");
    assert_eq!(taken, LeaseOutcome::Unknown, "{taken:?}");
    // Nor does the late owner get it back without a live lease.
    let late = session
        .renew_with(
            "a",
            Renewal {
                confirm: true,
                ..renewal(lease_a.epoch, 5, false)
            },
        )
        .await
        .expect("late confirmation");
    assert!(late.lease().is_none(), "{late:?}");
}

/// Epochs come from Redis's clock: after Redis lost everything, a new
/// owner's epoch is still above every epoch handed out before.
#[tokio::test]
async fn epochs_never_go_back_after_redis_loses_its_data() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let first = owned(&log, "s", "a").await;
    lose_everything(&server).await;
    let second = owned(&log, "s", "b").await;
    assert!(second.epoch > first.epoch, "{first:?} then {second:?}");
    // And a lagging replica's older epoch is passed too.
    let mut conn = raw(&server).await;
    let _: () = redis::cmd("SET")
        .arg("t:{s}:epoch")
        .arg(first.epoch)
        .query_async(&mut conn)
        .await
        .expect("SET");
    let third = take_over(&server, &log, "s", "c").await;
    assert!(third.epoch > second.epoch, "{second:?} then {third:?}");
}

/// The review's D4: an index of a stream that another epoch wrote was taken
/// as an earlier try of the batch, so the batch "committed" an event Redis
/// does not hold. Now the batch is refused, and nothing of it is written.
#[tokio::test]
async fn an_index_another_epoch_wrote_is_refused_not_skipped() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    commit_at(&session, lease_a, StreamId::Standalone, 1, "{\"by\":\"a\"}")
        .await
        .expect("A's event 1");
    commit_at(&session, lease_a, StreamId::Standalone, 2, "{\"by\":\"a\"}")
        .await
        .expect("A's event 2");
    let lease_b = take_over(&server, &log, "s", "b").await;
    // B believes index 2 is its own (its history diverged from Redis's).
    let refused = commit_at(&session, lease_b, StreamId::Standalone, 2, "{\"by\":\"b\"}").await;
    assert!(
        matches!(
            refused,
            Err(RedisLogError::Diverged {
                stream: StreamId::Standalone,
                index: 2
            })
        ),
        "{refused:?}"
    );
    let events = session
        .read(StreamId::Standalone, 0, 8)
        .await
        .expect("read")
        .events;
    assert!(
        events
            .iter()
            .all(|e| e.data.as_deref() == Some("{\"by\":\"a\"}")),
        "{events:?}"
    );
    // A retry of B's own batch is still a retry (B's ids start at its
    // segment, where its takeover put the head).
    let b_first = standalone_head(&session).await;
    commit_at(
        &session,
        lease_b,
        StreamId::Standalone,
        b_first,
        "{\"by\":\"b\"}",
    )
    .await
    .expect("B's first event");
    let retried = commit_at(
        &session,
        lease_b,
        StreamId::Standalone,
        b_first,
        "{\"by\":\"b\"}",
    )
    .await
    .expect("B's retry");
    assert_eq!(retried.last, None, "the retry wrote again: {retried:?}");
}

/// The review's D4: after a lossy failover the stream counter may lag the
/// numbers an owner already used; a reservation never goes below them.
#[tokio::test]
async fn a_reservation_never_hands_out_an_owners_number_again() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease = owned(&log, "s", "a").await;
    let first = session.reserve_streams(lease, 64).await.expect("reserve");
    // The counter goes back, as on a replica that missed the reservation.
    let mut conn = raw(&server).await;
    let _: () = redis::cmd("SET")
        .arg("t:{s}:next")
        .arg(first)
        .query_async(&mut conn)
        .await
        .expect("SET");
    let again = session
        .reserve_streams_from(lease, 64, first + 64)
        .await
        .expect("reserve again");
    assert!(again >= first + 64, "{first} then {again}");
}

/// The review's D5: a failover to a lagging replica lost a call's answer
/// and its end. Redis still holds the call open, the owner (which answered
/// it) never writes it again, and its lease keeps the stream alive: a
/// resume on another instance tailed it for ever. The owner's next renewal
/// names its open calls, and Redis ends the others with the terminal error.
#[tokio::test]
async fn a_call_whose_answer_redis_lost_ends_at_the_owners_next_renewal() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease = owned(&log, "s", "a").await;
    let lost = session.open_request(lease, "7").await.expect("open");
    let kept = session.open_request(lease, "8").await.expect("open");
    commit_at(
        &session,
        lease,
        StreamId::Request(lost),
        0,
        "{\"progress\":1}",
    )
    .await
    .expect("progress");
    // A reader on another instance tails the call whose answer is lost.
    let mut tail = Box::pin(log.session("s").tail(
        StreamId::Request(lost),
        0,
        Some("b".to_owned()),
    ));
    let first = tail.next().await.expect("an event").expect("progress");
    assert_eq!(first.index, 0);
    let renewed = session
        .renew_with(
            "a",
            Renewal {
                open_calls: Some(vec![kept]),
                ..renewal(lease.epoch, 0, true)
            },
        )
        .await
        .expect("renew");
    assert_eq!(renewed, LeaseOutcome::Renewed(lease));
    let end = tokio::time::timeout(std::time::Duration::from_secs(5), tail.next())
        .await
        .expect("the tail ends")
        .expect("the terminal error")
        .expect("an event");
    let data = end.data.expect("data");
    assert!(
        data.contains("\"id\":7") && data.contains("-32603"),
        "{data}"
    );
    // The call the owner still runs is left alone.
    let still = session
        .read(StreamId::Request(kept), 0, 8)
        .await
        .expect("read");
    assert!(
        matches!(still.lookup, rmcp_resume_core::resumption::StreamLookup::Found(v) if !v.finished),
        "{still:?}"
    );
}

/// An owner stalled past its own lease (a slow Redis, a busy CPU) whose
/// session nobody took takes its lease again at the same epoch, as the epoch
/// proves; it is refused once another instance took over, and it never
/// seeds a session Redis lost.
#[tokio::test]
async fn a_lapsed_owner_takes_its_lease_again_only_where_nobody_took_it() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    expire_lease(&server, "t:{s}:lease").await;
    let again = session
        .renew_with("a", renewal(lease_a.epoch, 0, false))
        .await
        .expect("renew");
    assert_eq!(again, LeaseOutcome::Renewed(lease_a));
    let lease_b = take_over(&server, &log, "s", "b").await;
    let refused = session
        .renew_with("a", renewal(lease_a.epoch, 0, false))
        .await
        .expect("renew");
    assert!(refused.lease().is_none(), "{refused:?} after {lease_b:?}");
    lose_everything(&server).await;
    let no_seed = session
        .renew_with("b", renewal(lease_b.epoch, 0, false))
        .await
        .expect("renew");
    assert!(no_seed.lease().is_none(), "{no_seed:?}");
}
