//! The second review of the shared log: each test states a promise of
//! docs/redis.md that the code under review broke;
//! each failed before its fix.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rmcp_resume_core::resumption::{StreamId, StreamLookup};
use rmcp_resume_core::shared::{Gate, Mirror, MirrorOp, SharedLog};
use rmcp_resume_redis::{LeaseOutcome, RedisShared, Write};
use rmcp_resume_testkit::redis::RedisServer;

mod common;
use common::{config, connect, expire_lease, owned, raw};

async fn mirror_for(shared: Arc<dyn SharedLog>, session: &str) -> Mirror {
    Mirror::start(shared, Arc::from(session), true)
        .await
        .expect("start")
        .expect("owned")
}

/// Finding 1. An append the commit script drops (its stream was already
/// answered in Redis) still opens its gate: the owner's reader sends an
/// event that Redis never committed ("never: an event sent before Redis has
/// it"). In-process this happens when a call is cancelled while messages of
/// it wait for room (`completed()` queues `Finish`, the waiting messages are
/// admitted later), or when the answer of a cancelled call arrives.
#[tokio::test]
async fn a_dropped_append_must_not_open_its_gate() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let shared: Arc<dyn SharedLog> = Arc::new(RedisShared::new(log.clone(), "a"));
    let mut mirror = mirror_for(shared, "s").await;
    let m = mirror.next_stream().await.expect("stream");
    mirror.write(MirrorOp::Open {
        stream: m,
        request_id: "1".to_owned(),
    });
    // The call is cancelled: its Finish is queued first...
    mirror.write(MirrorOp::Finish { stream: m });
    // ...then a message of it that waited for room is admitted in-process.
    let gate = Gate::new(0);
    mirror.append(
        StreamId::Request(m),
        0,
        Some(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#.to_owned()),
        &gate,
    );
    let opened = tokio::time::timeout(Duration::from_secs(5), gate.committed(0))
        .await
        .expect("the gate decides");
    let snapshot = log
        .session("s")
        .read(StreamId::Request(m), 0, 8)
        .await
        .expect("read");
    assert!(
        snapshot.events.is_empty(),
        "Redis dropped the append (head {:?})",
        snapshot.lookup
    );
    assert!(
        !opened,
        "the gate let the reader send event 0/{m}, which Redis does not hold: \
         a resume elsewhere answers its cursor 400 'never produced'"
    );
}

/// Finding 2. A session Redis lost is seeded again by the mirror's
/// *renewal* (a quiet session renews before it commits): the renewal path
/// never re-registers the open calls (only the commit path's `Lost` branch
/// does). When that owner later goes away, the takeover ends none of them,
/// so their readers elsewhere wait with no end instead of getting -32603.
#[tokio::test]
async fn seeding_by_a_renewal_keeps_the_open_calls() {
    let server = RedisServer::start();
    let mut short = config();
    short.lease = Duration::from_millis(300);
    let log = connect(&server, short).await;
    let shared: Arc<dyn SharedLog> = Arc::new(RedisShared::new(log.clone(), "a"));
    let mut mirror = mirror_for(shared, "s").await;
    let m = mirror.next_stream().await.expect("stream");
    let stream = StreamId::Request(m);
    let gate = Gate::new(0);
    mirror.write(MirrorOp::Open {
        stream: m,
        request_id: "\"call\"".to_owned(),
    });
    mirror.append(stream, 0, None, &gate);
    assert!(gate.committed(0).await);

    // Redis restarts without persistence; the quiet owner's renewal comes first.
    let mut conn = raw(&server).await;
    let () = redis::cmd("FLUSHALL")
        .query_async(&mut conn)
        .await
        .expect("flush");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(log.session("s").exists().await.expect("exists"), "seeded");
    // The call makes progress, then its owner goes away.
    mirror.append(
        stream,
        1,
        Some(r#"{"jsonrpc":"2.0","method":"p"}"#.to_owned()),
        &gate,
    );
    assert!(gate.committed(1).await);
    drop(mirror);
    tokio::time::sleep(Duration::from_millis(400)).await;

    let taken = log.session("s").acquire("b", false).await.expect("acquire");
    let ended = match taken {
        LeaseOutcome::Acquired { ended_streams, .. } => ended_streams,
        other => panic!("{other:?}"),
    };
    let tail = log.session("s").tail(stream, 2, Some("c".to_owned()));
    let items = tokio::time::timeout(Duration::from_secs(3), tail.collect::<Vec<_>>()).await;
    assert!(
        ended == 1 && items.is_ok(),
        "the takeover ended {ended} calls (1 was open); the call's reader {}",
        if items.is_ok() {
            "ended"
        } else {
            "still waits after 3 s (12 fences)"
        }
    );
}

/// Finding 3. A reader's tail on a session nobody owns any more fences it
/// at every poll, and each fence INCRs the epoch *and PEXPIREs the epoch
/// key*: the session's keys expire (`session_ttl`) but its epoch never
/// does, so the tail never sees the session gone, holds its Redis
/// connection and the client's GET forever, and a dead session stays
/// "known" (the epoch counter grows twice a second per reader).
#[tokio::test]
async fn a_tail_does_not_keep_a_dead_session_alive() {
    let server = RedisServer::start();
    let mut short = config();
    short.session_ttl = Duration::from_millis(800);
    let log = connect(&server, short).await;
    let lease = owned(&log, "s", "a").await;
    let session = log.session("s");
    session
        .append(lease, StreamId::Standalone, Some("{}"), false)
        .await
        .expect("append");
    // The owner shuts down cleanly (its worker idled out).
    assert!(session.release("a").await.expect("release"));
    let tail = session.tail(StreamId::Standalone, 2, Some("b".to_owned()));
    let ended = tokio::time::timeout(Duration::from_secs(4), tail.collect::<Vec<_>>()).await;
    let mut conn = raw(&server).await;
    let epoch: Option<u64> = redis::cmd("GET")
        .arg("t:{s}:epoch")
        .query_async(&mut conn)
        .await
        .expect("GET");
    assert!(
        ended.is_ok(),
        "the tail outlived the session by 5 TTLs; epoch now {epoch:?} (was {})",
        lease.epoch
    );
}

/// Finding 4. A cancelled call's `Finish` refreshes the stream's meta but
/// not its events (`commit.lua` 'f' PEXPIREs `m:` only): the events expire
/// first, and meanwhile the stream claims `floor < head` with no events.
/// A resume is planned `Replay` (notice `complete: true`), and its tail
/// finds nothing, waits, and ends with "gone" instead of a floor: neither
/// an eviction notice nor a refusal, and a hang for the whole gap.
#[tokio::test]
async fn a_stream_never_claims_events_it_no_longer_has() {
    let server = RedisServer::start();
    let mut short = config();
    short.session_ttl = Duration::from_millis(1000);
    let log = connect(&server, short).await;
    let lease = owned(&log, "s", "a").await;
    let session = log.session("s");
    let m = session.open_request(lease, "1").await.expect("open");
    let stream = StreamId::Request(m);
    session
        .commit(
            lease,
            &[Write::Append {
                stream,
                index: Some(0),
                data: Some(r#"{"jsonrpc":"2.0","method":"p"}"#),
            }],
        )
        .await
        .expect("append");
    tokio::time::sleep(Duration::from_millis(600)).await;
    // Cancelled 600 ms later: Finish alone.
    session
        .commit(lease, &[Write::Finish { stream: m }])
        .await
        .expect("finish");
    // The owner's renewal keeps the session known (commits leave that to
    // it); the finished stream is no open call, so it keeps its own expiry.
    let renewed = session.renew("a", lease, 0).await.expect("renew");
    assert_eq!(renewed, LeaseOutcome::Renewed(lease));
    tokio::time::sleep(Duration::from_millis(550)).await;
    let snapshot = session.read(stream, 0, 8).await.expect("read");
    let StreamLookup::Found(found) = snapshot.lookup else {
        panic!(
            "the stream is gone 550 ms after its answer: {:?}",
            snapshot.lookup
        );
    };
    assert!(
        found.floor >= found.head || !snapshot.events.is_empty(),
        "the stream claims events [{}, {}) but returns none",
        found.floor,
        found.head
    );
}

/// Finding 5. Once the mirror has given the session up, a write the worker
/// hands it before noticing (a request stream opened in that moment: its
/// priming event) is silently discarded by `Mirror::send`, and its gate is
/// never closed: the reader waits at it for ever (its `Gate` clone keeps the
/// watch channel alive, so even the worker's exit does not end it).
#[tokio::test]
async fn a_write_after_the_loss_closes_its_gate() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let shared: Arc<dyn SharedLog> = Arc::new(RedisShared::new(log.clone(), "a"));
    let mut mirror = mirror_for(shared, "s").await;
    // Another instance takes the session over.
    expire_lease(&server, "t:{s}:lease").await;
    let taken = log.session("s").acquire("b", false).await.expect("take");
    assert!(matches!(taken, LeaseOutcome::Acquired { .. }), "{taken:?}");
    let standalone = Gate::new(1);
    mirror.append(StreamId::Standalone, 1, None, &standalone);
    assert!(!standalone.committed(1).await, "fenced");
    tokio::time::timeout(Duration::from_secs(5), mirror.lost().cancelled())
        .await
        .expect("lost");
    tokio::task::yield_now().await;
    // The worker has not seen `lost` yet: no new call is admitted, and a
    // write it hands the mirror for a stream it had closes that one's gate.
    assert!(
        mirror.next_stream().await.is_err(),
        "a call admitted after the session was lost"
    );
    let m = 5;
    let gate = Gate::new(0);
    mirror.append(StreamId::Request(m), 0, None, &gate);
    let decided = tokio::time::timeout(Duration::from_secs(3), gate.committed(0)).await;
    assert!(
        decided.is_ok(),
        "the reader of {m} waits at its gate for ever"
    );
}
