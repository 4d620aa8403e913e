//! The review's findings on the shared log, each kept as the test that
//! showed it: every one of these failed before its fix.

use std::time::Duration;

use futures::StreamExt;
use rmcp_resume_core::resumption::{ResumeAnswer, RmcpEventId, StreamId, plan};
use rmcp_resume_redis::{DELETE_SLICE, LeaseOutcome, RedisLogError, TailError, Write};
use rmcp_resume_testkit::redis::RedisServer;

mod common;
use common::{LIMIT, commit_at, config, connect, expire_lease, owned, raw, view};

/// A progress message parked behind its call's answer reaches the log
/// after the stream's `Finish`: it is dropped and counted, and the session
/// carries on (it used to fail the whole batch, and with it the session).
#[tokio::test]
async fn an_append_after_the_answer_is_dropped_not_fatal() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let lease = owned(&log, "s", "a").await;
    let session = log.session("s");
    let m = session.open_request(lease, "1").await.expect("open");
    let stream = StreamId::Request(m);
    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    let writes = [
        Write::Append {
            stream,
            index: Some(0),
            data: Some(answer),
        },
        Write::Finish { stream: m },
        Write::Append {
            stream,
            index: Some(1),
            data: Some("{\"late\":true}"),
        },
        Write::Append {
            stream: StreamId::Standalone,
            index: Some(1),
            data: Some("{\"other\":1}"),
        },
    ];
    let committed = session.commit(lease, &writes).await.expect("commit");
    assert_eq!(committed.dropped, [m]);
    assert_eq!(committed.last, Some(1), "the standalone append went in");
    let snapshot = session.read(stream, 0, 8).await.expect("read");
    assert_eq!(view(snapshot.lookup).head, 1, "the late write is not kept");
    assert_eq!(snapshot.events.len(), 1);
    // And the session is still writable.
    session
        .append(lease, StreamId::Standalone, Some("{\"after\":1}"), false)
        .await
        .expect("the session lives on");
}

/// A lease that lapsed while nobody took the session (a Redis blip, a
/// long commit retry) is taken again at the same epoch: the owner neither
/// fences itself nor ends its own calls.
#[tokio::test]
async fn an_owner_retakes_its_lapsed_lease_at_the_same_epoch() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let lease = owned(&log, "s", "a").await;
    let session = log.session("s");
    let m = session.open_request(lease, "7").await.expect("open");
    expire_lease(&server, "t:{s}:lease").await;

    let renewed = session.renew("a", lease, 0).await.expect("renew");
    assert_eq!(renewed, LeaseOutcome::Renewed(lease));
    let snapshot = session
        .read(StreamId::Request(m), 0, 8)
        .await
        .expect("read");
    assert!(snapshot.events.is_empty(), "no terminal error was written");
    session
        .append(lease, StreamId::Request(m), Some("{\"p\":1}"), false)
        .await
        .expect("still the owner");
    // Someone else holds it now.
    assert!(matches!(
        session.acquire("b", false).await.expect("acquire"),
        LeaseOutcome::HeldBy { .. }
    ));
}

/// After a takeover, the old owner's renewal is refused: it is fenced.
#[tokio::test]
async fn a_renewal_after_a_takeover_is_refused() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let lease = owned(&log, "s", "a").await;
    let session = log.session("s");
    expire_lease(&server, "t:{s}:lease").await;
    let taken = session.acquire("b", false).await.expect("take");
    let LeaseOutcome::Acquired { lease: b, .. } = taken else {
        panic!("{taken:?}");
    };
    assert!(b.epoch > lease.epoch, "{b:?}");
    expire_lease(&server, "t:{s}:lease").await;
    let renewed = session.renew("a", lease, 0).await.expect("renew");
    assert!(
        matches!(renewed, LeaseOutcome::HeldBy { epoch, .. } if epoch == b.epoch),
        "{renewed:?}"
    );
}

/// Every session-wide key lives as long as the owner renews: the state,
/// the stream counter and the standalone stream no longer expire an hour
/// after they were written while the session is in use.
#[tokio::test]
async fn renewal_keeps_every_session_key_alive() {
    let server = RedisServer::start();
    let mut short = config();
    short.session_ttl = Duration::from_millis(1500);
    let log = connect(&server, short).await;
    let lease = owned(&log, "s", "a").await;
    let session = log.session("s");
    session.open_request(lease, "1").await.expect("open");
    session
        .append(lease, StreamId::Standalone, Some("{}"), false)
        .await
        .expect("append");
    let mut conn = raw(&server).await;
    let () = redis::cmd("SET")
        .arg("t:{s}:state")
        .arg("{}")
        .arg("PX")
        .arg(1500)
        .query_async(&mut conn)
        .await
        .expect("state");
    // Three periods of renewals, and no write at all.
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let renewed = session.renew("a", lease, 0).await.expect("renew");
        assert_eq!(renewed, LeaseOutcome::Renewed(lease));
    }
    for key in ["epoch", "state", "next", "open", "m:s", "x:s", "m:0"] {
        let exists: bool = redis::cmd("EXISTS")
            .arg(format!("t:{{s}}:{key}"))
            .query_async(&mut conn)
            .await
            .expect("exists");
        assert!(exists, "{key} expired although the session was renewed");
    }
}

/// Redis lost the last events of a stream (a failover to a lagging
/// replica): the owner's next append finds the hole, and the floor moves
/// above it. A resume from before the hole is answered with that floor (a notice),
/// never replayed across it.
#[tokio::test]
async fn a_hole_left_by_lost_events_becomes_the_floor() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let lease = owned(&log, "s", "a").await;
    let session = log.session("s");
    let stream = StreamId::Standalone;
    for i in 1..=5 {
        let data = format!("{{\"n\":{i}}}");
        commit_at(&session, lease, stream, i, &data)
            .await
            .expect("commit");
    }
    // Redis forgets events 4 and 5, as a lagging replica would.
    let mut conn = raw(&server).await;
    let () = redis::pipe()
        .cmd("XDEL")
        .arg("t:{s}:x:s")
        .arg("4-1")
        .arg("5-1")
        .ignore()
        .cmd("HSET")
        .arg("t:{s}:m:s")
        .arg("head")
        .arg(4)
        .ignore()
        .query_async(&mut conn)
        .await
        .expect("lose");
    let committed = commit_at(&session, lease, stream, 6, "{\"n\":6}")
        .await
        .expect("commit");
    assert_eq!(committed.holes, 1);
    let snapshot = session.read(stream, 0, 16).await.expect("read");
    let found = view(snapshot.lookup);
    assert_eq!(found.floor, 6);
    // The standalone stream's answer to a cursor below its floor: a fresh
    // stream from the floor, with a notice naming it.
    let answer = plan(snapshot.lookup, RmcpEventId::standalone(2));
    assert!(
        matches!(answer, ResumeAnswer::Fallback { floor: 6, .. }),
        "{answer:?}"
    );
    let indices: Vec<u64> = snapshot.events.iter().map(|e| e.index).collect();
    assert_eq!(indices, [6], "nothing from before the hole is served");
}

/// A tail that meets a hole inside what it reads ends with the floor after
/// sending what came before it, never skipping.
#[tokio::test]
async fn a_tail_reports_a_hole_inside_a_batch() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let lease = owned(&log, "s", "a").await;
    let session = log.session("s");
    let stream = StreamId::Standalone;
    for i in 1..=6 {
        session
            .append(lease, stream, Some(&format!("{{\"n\":{i}}}")), false)
            .await
            .expect("append");
    }
    let mut conn = raw(&server).await;
    let _: i64 = redis::cmd("XDEL")
        .arg("t:{s}:x:s")
        .arg("4-1")
        .query_async(&mut conn)
        .await
        .expect("XDEL");
    let items: Vec<_> = tokio::time::timeout(LIMIT, session.tail(stream, 2, None).collect())
        .await
        .expect("the tail ends");
    let got: Vec<String> = items
        .iter()
        .map(|item| match item {
            Ok(event) => event.index.to_string(),
            Err(TailError::Evicted { from, floor }) => format!("evicted {from}->{floor}"),
            Err(other) => format!("{other}"),
        })
        .collect();
    assert_eq!(got, ["2", "3", "evicted 4->5"]);
}

/// Redis restarted without persistence: the owner's next write finds the
/// session unknown, seeds it again at its own epoch (never at a number an
/// earlier call used), and every stream starts at a floor above the loss.
#[tokio::test]
async fn a_session_redis_lost_is_seeded_again_with_floors() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let lease = owned(&log, "s", "a").await;
    let session = log.session("s");
    let first = session.reserve_streams(lease, 64).await.expect("reserve");
    session
        .append(lease, StreamId::Standalone, Some("{\"n\":1}"), false)
        .await
        .expect("append");
    let mut conn = raw(&server).await;
    let () = redis::cmd("FLUSHALL")
        .query_async(&mut conn)
        .await
        .expect("flush");
    let error = commit_at(&session, lease, StreamId::Standalone, 2, "{\"n\":2}")
        .await
        .expect_err("Redis lost it");
    assert!(matches!(error, RedisLogError::Lost), "{error}");
    let seeded = session.renew("a", lease, first + 64).await.expect("renew");
    assert_eq!(seeded, LeaseOutcome::Seeded(lease));
    let committed = commit_at(&session, lease, StreamId::Standalone, 2, "{\"n\":2}")
        .await
        .expect("commit after seeding");
    assert_eq!(committed.holes, 1);
    let lookup = session
        .read(StreamId::Standalone, 0, 1)
        .await
        .expect("read")
        .lookup;
    assert_eq!(view(lookup).floor, 2);
    let next = session.reserve_streams(lease, 1).await.expect("reserve");
    assert!(next >= first + 64, "stream {next} may have been used");
}

/// A reader's tail that finds a dead owner ends its calls but leaves the
/// lease free: the next instance to get a request takes the session at
/// once (a tail used to keep the lease with no worker behind it).
#[tokio::test]
async fn a_tail_fences_a_dead_owner_without_keeping_the_lease() {
    let server = RedisServer::start();
    let mut short = config();
    short.lease = Duration::from_millis(300);
    let a = connect(&server, short.clone()).await;
    let b = connect(&server, short).await;
    let lease = owned(&a, "s", "a").await;
    let m = a
        .session("s")
        .open_request(lease, "\"c\"")
        .await
        .expect("open");
    drop(a);
    let tail = b
        .session("s")
        .tail(StreamId::Request(m), 0, Some("b".to_owned()));
    let items: Vec<_> = tokio::time::timeout(LIMIT, tail.collect())
        .await
        .expect("the tail ends");
    assert_eq!(items.len(), 1, "the terminal error");
    let taken = b.session("s").acquire("c", false).await.expect("acquire");
    assert!(
        matches!(
            taken,
            LeaseOutcome::Acquired {
                ended_streams: 0,
                ..
            }
        ),
        "{taken:?}"
    );
}

/// `DELETE` of a session with many calls runs in slices, leaves nothing
/// behind, and fences its owner wherever it runs.
#[tokio::test]
async fn delete_runs_in_slices_and_fences_the_owner() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let lease = owned(&log, "s", "a").await;
    let session = log.session("s");
    let streams = DELETE_SLICE * 2 + 7;
    let first = session
        .reserve_streams(lease, streams)
        .await
        .expect("reserve");
    for m in [first, first + DELETE_SLICE + 3, first + streams - 1] {
        session
            .commit(
                lease,
                &[Write::Open {
                    stream: m,
                    request_id: "1",
                }],
            )
            .await
            .expect("open");
    }
    log.session("s").delete().await.expect("delete");
    let mut conn = raw(&server).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("t:{s}:*")
        .query_async(&mut conn)
        .await
        .expect("keys");
    assert_eq!(keys, ["t:{s}:gone"]);
    let error = session
        .append(lease, StreamId::Standalone, Some("{}"), false)
        .await
        .expect_err("deleted");
    assert!(matches!(error, RedisLogError::Deleted), "{error}");
    assert_eq!(
        session.renew("a", lease, 0).await.expect("renew"),
        LeaseOutcome::Deleted
    );
    assert!(!session.exists().await.expect("exists"));
}
