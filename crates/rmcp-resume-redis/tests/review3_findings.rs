//! A third review of issue 44's fix (the shared log's histories after Redis
//! loses data, the lease clock, D5's reconcile). Each test drives the
//! crate's own scripts (through `SessionLog`, `RedisShared` and the core's
//! `Mirror`) against a real `redis-server`. A test marked `#[ignore]` fails
//! on today's code: it asserts what the fix promises.

use std::sync::Arc;
use std::time::Duration;

use rmcp_resume_core::resumption::{ResumeAnswer, RmcpEventId, StreamId, StreamLookup, plan};
use rmcp_resume_core::shared::{Gate, Mirror, MirrorOp, SharedLog};
use rmcp_resume_redis::{LeaseOutcome, RedisLogError, RedisShared, Renewal, Write};
use rmcp_resume_testkit::redis::RedisServer;

mod common;
use common::{commit_at, config, connect, expire_lease, owned, raw, standalone_head};

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

/// Every key of session `s` under the tests' prefix, as a replica would
/// hold them: (key, ttl in ms or 0, DUMP payload).
async fn snapshot(server: &RedisServer) -> Vec<(String, i64, Vec<u8>)> {
    let mut conn = raw(server).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("t:{s}:*")
        .query_async(&mut conn)
        .await
        .expect("KEYS");
    let mut out = Vec::new();
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .expect("PTTL");
        let dump: Vec<u8> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .expect("DUMP");
        out.push((key, ttl.max(0), dump));
    }
    out
}

/// A failover to a replica that holds `replica`: everything written since
/// is gone, the replica's state is the session's.
async fn fail_over_to(server: &RedisServer, replica: &[(String, i64, Vec<u8>)]) {
    let mut conn = raw(server).await;
    let _: () = redis::cmd("FLUSHALL")
        .query_async(&mut conn)
        .await
        .expect("FLUSHALL");
    for (key, ttl, dump) in replica {
        let _: () = redis::cmd("RESTORE")
            .arg(key)
            .arg(*ttl)
            .arg(dump.as_slice())
            .arg("REPLACE")
            .query_async(&mut conn)
            .await
            .expect("RESTORE");
    }
}

/// Finding 1 (the D5 reconcile against a retried commit). A batch that
/// opens a call (its priming event and its `Open`, committed alone because
/// the tool takes longer than the 5 ms linger) needs a second try (Redis
/// paused past the 2 s response timeout: a blip far below the outage
/// limit). Once the retry lands, `Task::commit` renews at once with the
/// open calls named (`keep(true)`), but the task registers the batch's
/// `Open`s (`Holder::opened`) only after `commit` returns: the renewal names
/// none, and `lease.lua` ends the call the owner is running with the
/// terminal error. The tool's answer is then dropped as a late append and
/// its gate closes: a call that survived such a blip before the D5 commit
/// is lost (the client gets -32603 "instance lost" from the owner itself).
#[tokio::test]
async fn a_call_opened_by_a_retried_batch_is_not_ended_by_the_reconcile() {
    let server = RedisServer::start();
    let mut cfg = config();
    // Long enough that no periodic renewal, and no lapse, falls in the test.
    cfg.lease = Duration::from_secs(30);
    let log = connect(&server, cfg).await;
    let shared: Arc<dyn SharedLog> = Arc::new(RedisShared::new(log.clone(), "a"));
    let mut mirror = match Mirror::start(shared, "s".into(), true).await {
        Ok(Ok(mirror)) => mirror,
        other => panic!("start: {other:?}"),
    };
    let m = mirror.next_stream().await.expect("a stream number");
    let gate = Gate::new(0);
    // Redis pauses for longer than the response timeout (2 s): the first
    // try of the call's opening batch fails, the next lands.
    server.signal("STOP");
    mirror.write(MirrorOp::Open {
        stream: m,
        request_id: "7".into(),
    });
    mirror.append(StreamId::Request(m), 0, None, &gate);
    tokio::time::sleep(Duration::from_millis(2600)).await;
    server.signal("CONT");
    let opened = tokio::time::timeout(Duration::from_secs(10), gate.committed(0))
        .await
        .expect("the opening batch is committed after the blip");
    assert!(opened, "the priming event was never committed");
    // Let the renewal that follows the retried commit land.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let snapshot = log
        .session("s")
        .read(StreamId::Request(m), 0, 8)
        .await
        .expect("read");
    let ended_by_redis = snapshot
        .events
        .iter()
        .any(|e| e.data.as_deref().is_some_and(|d| d.contains("-32603")));
    assert!(
        !ended_by_redis,
        "the running call {m} was ended with the terminal error after a 2.6 s Redis blip: {snapshot:?}"
    );
    // The tool answers: the answer must be committed, not dropped.
    mirror.answer(
        m,
        1,
        Some("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}".into()),
        &gate,
    );
    let answered = tokio::time::timeout(Duration::from_secs(5), gate.committed(1))
        .await
        .expect("the answer's gate opens or closes");
    assert!(answered, "the tool's answer was dropped: the call is lost");
    assert!(!mirror.lost().is_cancelled());
}

/// Commits `count` standalone events from the head, as an owner's mirror
/// does with the ids its in-process log gives; returns their ids.
async fn standalone_events(
    session: &rmcp_resume_redis::SessionLog,
    lease: rmcp_resume_redis::Lease,
    by: &str,
    count: u64,
) -> Vec<u64> {
    let head = standalone_head(session).await;
    let mut ids = Vec::new();
    for n in head..head + count {
        commit_at(
            session,
            lease,
            StreamId::Standalone,
            n,
            &format!("{{\"by\":\"{by}\",\"n\":{n}}}"),
        )
        .await
        .expect("a standalone event");
        ids.push(n);
    }
    ids
}

/// Finding 2 (a lossy failover that loses the takeover itself). A owned
/// the session; its lease expired; B took it over (epoch eB, a new block of
/// request stream numbers), answered part of a call and sent standalone
/// events that clients received. The primary fails over to a replica that
/// had none of B's writes (B's takeover came within the replication lag):
/// the replica holds A's epoch and no lease. The first request on any other
/// instance C takes the free lease with a new, higher epoch from the clock;
/// B, the one owner that knows what was lost, is fenced at its next renewal
/// (`current > held`), so the rule "only a live owner seeds" never applies.
/// Each owner gives standalone ids from the head Redis reports when it
/// takes the session, as the server does. Before the fix, C's head was the
/// replica's, so C gave out B's ids again: a client holding B's last
/// standalone id resumed with `200` and C's next event, no floor, no
/// notice (issue 44's silent divergence). Request stream numbers were
/// already apart (a takeover numbers its calls from its epoch).
#[tokio::test]
async fn a_failover_that_lost_a_takeover_never_continues_the_lost_history() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    let by_a = standalone_events(&session, lease_a, "a", 2).await;
    let _a_streams = session
        .reserve_streams(lease_a, 64)
        .await
        .expect("A reserves");
    // A dies; its lease expires. This is what the replica holds when the
    // primary fails.
    expire_lease(&server, "t:{s}:lease").await;
    let replica = snapshot(&server).await;

    // B takes over on the primary, and its writes reach clients.
    let lease_b = match session.acquire("b", false).await.expect("take") {
        LeaseOutcome::Acquired { lease, .. } => lease,
        other => panic!("B did not take over: {other:?}"),
    };
    let by_b = standalone_events(&session, lease_b, "b", 2).await;
    let m_b = session.open_request(lease_b, "7").await.expect("B's call");
    for i in 0..2 {
        commit_at(
            &session,
            lease_b,
            StreamId::Request(m_b),
            i,
            &format!("{{\"by\":\"b\",\"call\":7,\"i\":{i}}}"),
        )
        .await
        .expect("B's call event");
    }

    // The primary fails over to the replica, which lacks all of B's writes.
    fail_over_to(&server, &replica).await;

    // A POST (or a resume) on instance C finds the lease free and takes it.
    let lease_c = match session.acquire("c", false).await.expect("take") {
        LeaseOutcome::Acquired { lease, .. } => lease,
        other => panic!("C found: {other:?}"),
    };
    assert!(lease_c.epoch > lease_b.epoch, "epochs went back");
    // B renews, live: it is fenced, and stops (what it knew is gone).
    let b_renews = session
        .renew_with("b", renewal(lease_b.epoch, by_b[1] + 1, true))
        .await
        .expect("B renews");
    assert!(
        matches!(b_renews, LeaseOutcome::HeldBy { .. }),
        "{b_renews:?}"
    );
    // C writes its own history from the replica's state on.
    let m_c = session.open_request(lease_c, "9").await.expect("C's call");
    for i in 0..3 {
        commit_at(
            &session,
            lease_c,
            StreamId::Request(m_c),
            i,
            &format!("{{\"by\":\"c\",\"call\":9,\"i\":{i}}}"),
        )
        .await
        .expect("C's call event");
    }
    let by_c = standalone_events(&session, lease_c, "c", 3).await;
    // Ids every SDK's client parses exactly (JavaScript numbers).
    assert!(by_c.iter().all(|&n| n < 1 << 53), "{by_c:?}");

    // What a client of B, holding B's last standalone event, is answered
    // on resume: read for its cursor, as every instance does.
    let b_last = by_b[1];
    let standalone = session
        .read(StreamId::Standalone, b_last + 1, 16)
        .await
        .expect("read");
    let after_b = plan(standalone.lookup, RmcpEventId::standalone(b_last));
    let call = session
        .read(StreamId::Request(m_b), 0, 16)
        .await
        .expect("read");
    let after_b_call = plan(call.lookup, RmcpEventId::on_request_stream(1, m_b));
    let continued_standalone = matches!(after_b, ResumeAnswer::Replay { .. });
    let continued_call = matches!(after_b_call, ResumeAnswer::Replay { from: 2, .. });
    assert!(
        !continued_standalone && !continued_call && m_c != m_b,
        "A gave {by_a:?}, B {by_b:?}, C {by_c:?}; a client holding B's standalone \
         cursor {b_last} gets {after_b:?} and C's events {:?}; stream {m_b} (B's call 7), \
         C's call 9 is {m_c}; one holding B's cursor 1/{m_b} gets {after_b_call:?} and \
         events {:?}",
        standalone.events,
        call.events,
    );
    // Told of the floor, at C's first event: what B gave is not there.
    match after_b {
        ResumeAnswer::Fallback { from, floor } => {
            assert_eq!((from, floor), (by_c[0], by_c[0]), "{after_b:?}");
        }
        other => panic!("B's cursor {b_last} got {other:?}"),
    }
    // Every standalone id C gave is above every id B gave.
    assert!(by_c[0] > b_last, "A {by_a:?}, B {by_b:?}, C {by_c:?}");

    // A client that had A's last event and never got B's goes on with C's
    // history: nothing the surviving history holds lies between.
    let a_last = by_a[1];
    let after_a = session
        .read(StreamId::Standalone, a_last + 1, 16)
        .await
        .expect("read");
    let answer = plan(after_a.lookup, RmcpEventId::standalone(a_last));
    assert!(
        matches!(answer, ResumeAnswer::Replay { .. }),
        "A's cursor {a_last} got {answer:?}"
    );
    let replayed: Vec<u64> = after_a.events.iter().map(|e| e.index).collect();
    assert_eq!(
        replayed, by_c,
        "A's cursor {a_last} goes on with C's events"
    );
}

/// Finding 3 (the contested lease, but on a commit). D1's race exactly as
/// the fix's own test describes it: A's periodic renewal was sent while its
/// lease was live and lands after B took over, committed, and Redis lost
/// everything; it seeds the session at A's (lower) epoch, provisionally.
/// The docs say "the higher epoch wins" — but only a renewal by B gets that
/// rule. B's next commit (or reservation) usually comes first, and
/// `commit.lua` answers `-1` (fenced) for any other current epoch, lower
/// included; the mirror takes `Fenced` as terminal and the healthy owner
/// B stops. A stops too (its seeding came back after its lease: `Lapsed`),
/// and once A's lease expires nobody may take the unconfirmed seeding: the
/// session is gone on every instance, where B would have kept it.
#[tokio::test]
async fn a_lower_epochs_provisional_seeding_does_not_fence_the_live_owner() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    commit_at(&session, lease_a, StreamId::Standalone, 1, "{\"by\":\"a\"}")
        .await
        .expect("A's event 1");
    expire_lease(&server, "t:{s}:lease").await;
    let lease_b = match session.acquire("b", false).await.expect("take") {
        LeaseOutcome::Acquired { lease, .. } => lease,
        other => panic!("{other:?}"),
    };
    // B's ids start where the takeover put the head (its segment).
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
    let mut conn = raw(&server).await;
    let _: () = redis::cmd("FLUSHALL")
        .query_async(&mut conn)
        .await
        .expect("FLUSHALL");
    // A's renewal, sent live before the pause, lands now.
    let a_raced = session
        .renew_with("a", renewal(lease_a.epoch, 2, true))
        .await
        .expect("A's in-flight renewal");
    assert!(matches!(a_raced, LeaseOutcome::Seeded(_)), "{a_raced:?}");
    // B, healthy and live, commits its next event before its next renewal.
    let b_commits = commit_at(
        &session,
        lease_b,
        StreamId::Standalone,
        b_first + 1,
        "{\"by\":\"b\"}",
    )
    .await;
    let b_reserves = session.reserve_streams(lease_b, 64).await;
    assert!(
        !matches!(b_commits, Err(RedisLogError::Fenced { current, .. }) if current < lease_b.epoch)
            && !matches!(b_reserves, Err(RedisLogError::Fenced { current, .. }) if current < lease_b.epoch),
        "the live owner at epoch {} was fenced by a lower epoch {}: commit {b_commits:?}, \
         reserve {b_reserves:?}",
        lease_b.epoch,
        lease_a.epoch,
    );
}

/// What held: after finding 3's race, should both owners stop (A never
/// confirms; B, told that Redis lost its writes, dies before it renews),
/// nobody may take the unconfirmed seeding, so the session is lost
/// everywhere (404), told, not silent.
#[tokio::test]
async fn after_finding_3_the_session_is_unknown_everywhere_not_continued() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    expire_lease(&server, "t:{s}:lease").await;
    let lease_b = session
        .acquire("b", false)
        .await
        .expect("take")
        .lease()
        .expect("B takes");
    let mut conn = raw(&server).await;
    let _: () = redis::cmd("FLUSHALL")
        .query_async(&mut conn)
        .await
        .expect("FLUSHALL");
    let seeded = session
        .renew_with("a", renewal(lease_a.epoch, 2, true))
        .await
        .expect("A's in-flight renewal");
    assert!(matches!(seeded, LeaseOutcome::Seeded(_)));
    let fenced = commit_at(&session, lease_b, StreamId::Standalone, 2, "{}").await;
    assert!(matches!(fenced, Err(RedisLogError::Lost)), "{fenced:?}");
    expire_lease(&server, "t:{s}:lease").await;
    let taken = session.acquire("c", false).await.expect("take");
    assert_eq!(taken, LeaseOutcome::Unknown);
}

/// What held: the packed quick path and a stream the takeover ended. The
/// old owner's quick-call batch (priming, answer, finish), retried under
/// its stale epoch after the takeover wrote the terminal error at index 0,
/// is fenced before any write: the quick path never packs over it.
#[tokio::test]
async fn the_takeovers_error_event_is_never_overwritten_by_a_quick_batch() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    let m = session.open_request(lease_a, "7").await.expect("open");
    expire_lease(&server, "t:{s}:lease").await;
    let lease_b = session
        .acquire("b", false)
        .await
        .expect("take")
        .lease()
        .expect("B takes");
    // A's quick batch (priming, answer, finish) arrives late: fenced.
    let late = session
        .commit(
            lease_a,
            &[
                Write::Append {
                    stream: StreamId::Request(m),
                    index: Some(0),
                    data: None,
                },
                Write::Append {
                    stream: StreamId::Request(m),
                    index: Some(1),
                    data: Some("{\"by\":\"a\"}"),
                },
                Write::Finish { stream: m },
            ],
        )
        .await;
    assert!(
        matches!(late, Err(RedisLogError::Fenced { .. })),
        "{late:?}"
    );
    let _ = lease_b;
    let read = session
        .read(StreamId::Request(m), 0, 8)
        .await
        .expect("read");
    assert!(
        matches!(read.lookup, StreamLookup::Found(v) if v.finished && v.head == 1),
        "{read:?}"
    );
}

/// What held: TIME-based epochs in microseconds survive Lua's doubles and
/// `%.14g`: the epoch the take hands out, stored with `%d`, is the one a
/// commit under it compares, and the 'e' a commit stores is the string the
/// next commit compares (a retry is still a retry at 16 digits).
#[tokio::test]
async fn sixteen_digit_epochs_round_trip_through_the_scripts() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("s");
    let lease = owned(&log, "s", "a").await;
    assert!(lease.epoch > 1_000_000_000_000_000, "{lease:?}");
    let mut conn = raw(&server).await;
    let stored: String = redis::cmd("GET")
        .arg("t:{s}:epoch")
        .query_async(&mut conn)
        .await
        .expect("GET");
    assert_eq!(stored, lease.epoch.to_string());
    commit_at(&session, lease, StreamId::Standalone, 1, "{}")
        .await
        .expect("commit");
    let retried = commit_at(&session, lease, StreamId::Standalone, 1, "{}")
        .await
        .expect("a retry is a retry");
    assert_eq!(retried.last, None);
    // A takeover's epoch is above it by the clock, not by %.14g rounding.
    expire_lease(&server, "t:{s}:lease").await;
    let next = session
        .acquire("b", false)
        .await
        .expect("take")
        .lease()
        .expect("B takes");
    assert!(next.epoch > lease.epoch);
    let e: String = redis::cmd("HGET")
        .arg("t:{s}:m:s")
        .arg("e")
        .query_async(&mut conn)
        .await
        .expect("HGET");
    assert_eq!(e, lease.epoch.to_string());
}

/// `RedisShared`, but the first confirmation of a seeding never comes back
/// (a Redis blip, a response timeout: the renewal after it goes through).
struct LoseFirstConfirm {
    inner: RedisShared,
    lost: std::sync::atomic::AtomicBool,
}

impl SharedLog for LoseFirstConfirm {
    fn acquire<'a>(
        &'a self,
        session: &'a str,
        create: bool,
    ) -> futures::future::BoxFuture<
        'a,
        Result<rmcp_resume_core::shared::Ownership, rmcp_resume_core::shared::SharedLogError>,
    > {
        self.inner.acquire(session, create)
    }

    fn renew<'a>(
        &'a self,
        session: &'a str,
        renewal: Renewal,
    ) -> futures::future::BoxFuture<
        'a,
        Result<rmcp_resume_core::shared::Ownership, rmcp_resume_core::shared::SharedLogError>,
    > {
        if renewal.confirm && !self.lost.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Box::pin(async {
                Err(rmcp_resume_core::shared::SharedLogError::Backend(
                    "response timed out".into(),
                ))
            });
        }
        self.inner.renew(session, renewal)
    }

    fn release<'a>(
        &'a self,
        session: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<(), rmcp_resume_core::shared::SharedLogError>> {
        self.inner.release(session)
    }

    fn reserve_streams<'a>(
        &'a self,
        session: &'a str,
        epoch: u64,
        count: u64,
        lowest: u64,
    ) -> futures::future::BoxFuture<'a, Result<u64, rmcp_resume_core::shared::SharedLogError>> {
        self.inner.reserve_streams(session, epoch, count, lowest)
    }

    fn commit<'a>(
        &'a self,
        session: &'a str,
        epoch: u64,
        ops: &'a [MirrorOp],
    ) -> futures::future::BoxFuture<'a, Result<Vec<u64>, rmcp_resume_core::shared::SharedLogError>>
    {
        self.inner.commit(session, epoch, ops)
    }

    fn read<'a>(
        &'a self,
        session: &'a str,
        stream: StreamId,
        from: u64,
        count: usize,
    ) -> futures::future::BoxFuture<
        'a,
        Result<rmcp_resume_core::shared::SharedSnapshot, rmcp_resume_core::shared::SharedLogError>,
    > {
        self.inner.read(session, stream, from, count)
    }

    fn tail(
        &self,
        session: &str,
        stream: StreamId,
        from: u64,
    ) -> futures::stream::BoxStream<
        'static,
        Result<rmcp_resume_core::shared::SharedEvent, rmcp_resume_core::shared::SharedLogError>,
    > {
        self.inner.tail(session, stream, from)
    }

    fn delete<'a>(
        &'a self,
        session: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<(), rmcp_resume_core::shared::SharedLogError>> {
        self.inner.delete(session)
    }

    fn renew_every(&self) -> Duration {
        self.inner.renew_every()
    }

    fn lease(&self) -> Duration {
        self.inner.lease()
    }

    fn outage_limit(&self) -> Duration {
        self.inner.outage_limit()
    }
}

/// Finding 4 (a seeding whose confirmation is lost stays provisional for
/// good). Redis loses the session; the live owner's periodic renewal seeds
/// it; the confirmation's answer is lost (any backend error). `Holder::keep`
/// returns the error and never sends a confirmation again: its later
/// renewals take `lease.lua`'s `holder == owner` branch, which deletes the
/// `seeding` key only on `confirm`, and whose `refresh()` keeps it alive
/// with the session. The owner serves on (it commits, opens calls) but the
/// session can no longer change hands: once the owner hands it on (a clean
/// shutdown, a rolling deploy) or dies, every instance finds it unknown
/// (`404`: the session is lost where it used to be taken over), the calls
/// it had open were never registered again (the re-registration waits for
/// the confirmation), and a resume tailing a call it opened after the
/// seeding waits for the session's TTL (an hour by default), since a
/// reader's fence of a provisional seeding is a no-op.
#[tokio::test]
async fn a_seeding_whose_confirmation_was_lost_is_confirmed_later() {
    use futures::StreamExt;
    let server = RedisServer::start();
    let mut cfg = config();
    cfg.lease = Duration::from_millis(1500);
    let log = connect(&server, cfg).await;
    let shared: Arc<dyn SharedLog> = Arc::new(LoseFirstConfirm {
        inner: RedisShared::new(log.clone(), "a"),
        lost: std::sync::atomic::AtomicBool::new(false),
    });
    let mut mirror = match Mirror::start(shared, "s".into(), true).await {
        Ok(Ok(mirror)) => mirror,
        other => panic!("start: {other:?}"),
    };
    let mut conn = raw(&server).await;
    let _: () = redis::cmd("FLUSHALL")
        .query_async(&mut conn)
        .await
        .expect("FLUSHALL");
    // Periodic renewals every 500 ms: the first seeds, its confirmation is
    // lost, the next ones go through.
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert!(!mirror.lost().is_cancelled(), "the owner stopped");
    // The owner goes on serving: a new call opens.
    let m = mirror.next_stream().await.expect("a stream number");
    let gate = Gate::new(0);
    mirror.write(MirrorOp::Open {
        stream: m,
        request_id: "7".into(),
    });
    mirror.append(StreamId::Request(m), 0, None, &gate);
    assert!(gate.committed(0).await, "the call's opening");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let provisional: i64 = redis::cmd("EXISTS")
        .arg("t:{s}:seeding")
        .query_async(&mut conn)
        .await
        .expect("EXISTS");
    // A reader on another instance tails the open call.
    let mut tail = Box::pin(
        log.session("s")
            .tail(StreamId::Request(m), 1, Some("b".to_owned())),
    );
    // The owner hands the session on (a clean shutdown), or dies.
    drop(mirror);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _ = expire_lease(&server, "t:{s}:lease").await;
    let taken = log.session("s").acquire("c", false).await.expect("take");
    let ended = tokio::time::timeout(Duration::from_secs(5), tail.next()).await;
    assert!(
        provisional == 0 && taken.lease().is_some() && ended.is_ok(),
        "seeding still provisional after several renewals: {}; the next instance's take: \
         {taken:?}; the tail of call {m} ended within 5 s (lease 1.5 s): {}",
        provisional == 1,
        ended.is_ok(),
    );
}

/// Finding 7 (an idle owner gives its sessions up after a Redis restart
/// shorter than its lease). Renewals come every lease/3 and a failed one is
/// not retried before the next period; the owner's own lease is 0.9 lease
/// from its last successful renewal. A restart without persistence that
/// spans two renewal ticks (here 2 s, lease 3 s: Redis is back while the
/// owner's lease is live for another half second) leaves the next renewal
/// outside the owner's lease: it goes as not live, Redis (empty) refuses to
/// seed, and the owner stops (`Lapsed`). Every idle session of every
/// instance is lost (`404`), where before the fix the renewal seeded it;
/// a busy one survives only because a commit in the window renews at once.
/// With the default 10 s lease, an outage from 3.4 s (aligned) to 9 s
/// does it: "an owner cut off past its lease" (docs/redis.md) in practice
/// means past a third of it.
#[tokio::test]
async fn an_idle_owner_keeps_its_session_through_a_restart_shorter_than_its_lease() {
    let mut server = RedisServer::start();
    let mut cfg = config();
    cfg.lease = Duration::from_secs(3);
    let log = connect(&server, cfg).await;
    let shared: Arc<dyn SharedLog> = Arc::new(RedisShared::new(log.clone(), "a"));
    let mirror = match Mirror::start(shared, "s".into(), true).await {
        Ok(Ok(mirror)) => mirror,
        other => panic!("start: {other:?}"),
    };
    let started = std::time::Instant::now();
    // Just after the first periodic renewal (1 s in), Redis dies; it comes
    // back empty 2 s later, 0.55 s before the owner's own lease ends.
    tokio::time::sleep(Duration::from_millis(1150)).await;
    server.kill();
    tokio::time::sleep(Duration::from_millis(2000)).await;
    server.restart();
    let back = started.elapsed();
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let epoch: Option<String> = redis::cmd("GET")
        .arg("t:{s}:epoch")
        .query_async(&mut raw(&server).await)
        .await
        .expect("GET");
    assert!(
        !mirror.lost().is_cancelled() && epoch.is_some(),
        "Redis was away 2 s (back at {back:?}, lease 3 s): the idle owner gave the session up \
         (lost: {}), Redis holds {epoch:?}",
        mirror.lost().is_cancelled(),
    );
}

/// What held (finding 7's control): the same restart within one renewal
/// period (0.5 s) is survived: the next renewal, still live, seeds.
#[tokio::test]
async fn an_idle_owner_keeps_its_session_through_a_restart_within_one_period() {
    let mut server = RedisServer::start();
    let mut cfg = config();
    cfg.lease = Duration::from_secs(3);
    let log = connect(&server, cfg).await;
    let shared: Arc<dyn SharedLog> = Arc::new(RedisShared::new(log.clone(), "a"));
    let mirror = match Mirror::start(shared, "s".into(), true).await {
        Ok(Ok(mirror)) => mirror,
        other => panic!("start: {other:?}"),
    };
    tokio::time::sleep(Duration::from_millis(1150)).await;
    server.kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.restart();
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let epoch: Option<String> = redis::cmd("GET")
        .arg("t:{s}:epoch")
        .query_async(&mut raw(&server).await)
        .await
        .expect("GET");
    assert!(
        !mirror.lost().is_cancelled() && epoch.is_some(),
        "{epoch:?}"
    );
}

/// Finding 8 (a tail on a seeding nobody will confirm). The owner seeds a
/// session Redis lost, commits on it (a call opens: commits do not wait
/// for the confirmation), and dies before its confirmation lands (or its
/// answer came back after its lease: `Lapsed`). Nobody may take an
/// unconfirmed seeding, and a reader's fence of it is a no-op (`{3}`), so
/// the call is never ended: a resume of it on another instance tails until
/// the session's keys expire (`session_ttl`, an hour by default), where
/// D5's promise is an end within a lease. The window is narrow (a crash
/// within a round trip of the seeding), the wait long.
#[tokio::test]
async fn a_tail_on_a_seeding_nobody_confirms_ends_within_a_few_leases() {
    use futures::StreamExt;
    let server = RedisServer::start();
    let mut cfg = config();
    cfg.lease = Duration::from_millis(900);
    let log = connect(&server, cfg).await;
    let session = log.session("s");
    let lease_a = owned(&log, "s", "a").await;
    let mut conn = raw(&server).await;
    let _: () = redis::cmd("FLUSHALL")
        .query_async(&mut conn)
        .await
        .expect("FLUSHALL");
    let seeded = session
        .renew_with("a", renewal(lease_a.epoch, 1, true))
        .await
        .expect("seed");
    assert!(matches!(seeded, LeaseOutcome::Seeded(_)), "{seeded:?}");
    // Before its confirmation, the owner's mirror commits a call's opening.
    let m = session.open_request(lease_a, "7").await.expect("open");
    commit_at(
        &session,
        lease_a,
        StreamId::Request(m),
        0,
        "{\"progress\":1}",
    )
    .await
    .expect("progress");
    // The owner dies; its lease runs out.
    expire_lease(&server, "t:{s}:lease").await;
    let mut tail = Box::pin(
        log.session("s")
            .tail(StreamId::Request(m), 1, Some("b".to_owned())),
    );
    let ended = tokio::time::timeout(Duration::from_secs(5), tail.next()).await;
    let ttl: i64 = redis::cmd("PTTL")
        .arg(format!("t:{{s}}:x:{m}"))
        .query_async(&mut conn)
        .await
        .expect("PTTL");
    assert!(
        ended.is_ok(),
        "the resume of call {m} still waits after 5 s (lease 0.9 s); its events live {ttl} ms more"
    );
}
