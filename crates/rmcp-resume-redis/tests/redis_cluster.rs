//! The shared log on a Redis Cluster: the single-Redis operations on
//! sessions spread over every primary, and a session whose slot fails over
//! to its replica.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rmcp_resume_core::log::Window;
use rmcp_resume_core::resumption::{
    LogView, ResumeAnswer, RmcpEventId, StreamId, StreamLookup, plan,
};
use rmcp_resume_redis::{
    INSTANCE_LOST_ERROR, Lease, LeaseOutcome, RedisLog, RedisLogConfig, RedisLogError, TailError,
    Write,
};
use rmcp_resume_testkit::redis_cluster::{Failover, RedisCluster};

const LIMIT: Duration = Duration::from_secs(20);

/// Session ids whose slots fall on every primary of a three-node cluster.
const SESSIONS: [&str; 9] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
];

fn config() -> RedisLogConfig {
    let mut config = RedisLogConfig::with_prefix("t");
    config.tail_poll = Duration::from_millis(100);
    config
}

async fn connect(cluster: &RedisCluster, config: RedisLogConfig) -> RedisLog {
    RedisLog::connect_cluster(cluster.urls(), config)
        .await
        .expect("connect to the cluster")
}

async fn owned(log: &RedisLog, session: &str, owner: &str) -> Lease {
    log.session(session)
        .acquire(owner, true)
        .await
        .expect("acquire")
        .lease()
        .expect("the lease is free")
}

fn view(lookup: StreamLookup) -> LogView {
    match lookup {
        StreamLookup::Found(view) => view,
        other => panic!("stream not found: {other:?}"),
    }
}

/// The key every script of `session` is routed by.
fn epoch_key(session: &str) -> String {
    format!("t:{{{session}}}:epoch")
}

/// The primaries serving `sessions`, by port: a test on several sessions
/// covers every primary.
fn primaries(cluster: &RedisCluster, sessions: &[&str]) -> HashMap<u16, Vec<String>> {
    let mut by_primary: HashMap<u16, Vec<String>> = HashMap::new();
    for session in sessions {
        let owner = cluster.slot_owner(&epoch_key(session));
        by_primary
            .entry(owner.primary)
            .or_default()
            .push((*session).to_owned());
    }
    by_primary
}

/// Runs blocking test-kit work (processes, sleeps) off the runtime's
/// workers.
fn blocking<T>(work: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(work)
}

/// Retries `op` until it succeeds or `limit` passes; returns the last
/// result and the errors seen before it.
async fn retry<T, F, Fut>(limit: Duration, mut op: F) -> (Result<T, RedisLogError>, Vec<String>)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, RedisLogError>>,
{
    let deadline = Instant::now() + limit;
    let mut errors = Vec::new();
    loop {
        let result = match tokio::time::timeout(LIMIT, op()).await {
            Ok(result) => result,
            Err(_) => Err(RedisLogError::Reply("no answer within 20 s".to_owned())),
        };
        match result {
            Ok(value) => return (Ok(value), errors),
            Err(error) if Instant::now() < deadline => {
                errors.push(error.to_string());
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(error) => return (Err(error), errors),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_events_round_trip_on_sessions_spread_over_every_primary() {
    let cluster = blocking(RedisCluster::start);
    let spread = blocking(|| primaries(&cluster, &SESSIONS));
    assert_eq!(
        spread.len(),
        3,
        "the sessions cover every primary: {spread:?}"
    );
    let log = connect(&cluster, config()).await;
    for session_id in SESSIONS {
        let session = log.session(session_id);
        let lease = owned(&log, session_id, "a").await;
        for n in 0..5 {
            let appended = session
                .append(
                    lease,
                    StreamId::Standalone,
                    Some(&format!("{{\"s\":\"{session_id}\",\"n\":{n}}}")),
                    false,
                )
                .await
                .expect("append");
            assert_eq!(appended.index, n + 1, "the standalone stream starts at 1");
        }
        let m = session.open_request(lease, "1").await.expect("open");
        session
            .append(lease, StreamId::Request(m), Some("\"answer\""), true)
            .await
            .expect("append");
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
        assert_eq!(
            snapshot.events[0].data.as_deref(),
            Some(format!("{{\"s\":\"{session_id}\",\"n\":2}}").as_str())
        );
        let request = session
            .read(StreamId::Request(m), 0, 100)
            .await
            .expect("read");
        assert_eq!(
            view(request.lookup),
            LogView {
                floor: 0,
                head: 1,
                finished: true
            }
        );
        assert!(session.exists().await.expect("exists"));
    }
    // Every key a script built from its `base` sits in its session's slot,
    // on the primary the script was routed to.
    blocking(|| {
        for session_id in SESSIONS {
            let owner = cluster.slot_owner(&epoch_key(session_id));
            let slot = owner.slot.to_string();
            let count = cluster
                .cli(
                    owner.primary,
                    &["CLUSTER", "COUNTKEYSINSLOT", slot.as_str()],
                )
                .and_then(|n| n.trim().parse::<u64>().ok())
                .expect("COUNTKEYSINSLOT");
            assert!(count >= 6, "{session_id}: {count} keys in slot {slot}");
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_two_instances_never_get_the_same_stream_number() {
    let cluster = blocking(RedisCluster::start);
    let a = connect(&cluster, config()).await;
    let b = connect(&cluster, config()).await;
    for session_id in ["alpha", "bravo", "charlie"] {
        let lease = owned(&a, session_id, "a").await;
        let open = |log: RedisLog| async move {
            let session = log.session(session_id);
            let mut numbers = Vec::new();
            for i in 0..20 {
                numbers.push(
                    session
                        .open_request(lease, &i.to_string())
                        .await
                        .expect("open"),
                );
            }
            numbers
        };
        let (left, right) = tokio::join!(open(a.clone()), open(b.clone()));
        let all: HashSet<u64> = left.iter().chain(&right).copied().collect();
        assert_eq!(
            all,
            (0..40).collect(),
            "{session_id}: stream numbers collided"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_the_window_trims_by_count_and_by_bytes() {
    let cluster = blocking(RedisCluster::start);
    let mut by_count = config();
    by_count.window = Window::events(4);
    let log = connect(&cluster, by_count).await;
    for session_id in ["alpha", "delta", "golf"] {
        let session = log.session(session_id);
        let lease = owned(&log, session_id, "a").await;
        let m = session.open_request(lease, "1").await.expect("open");
        let stream = StreamId::Request(m);
        for n in 0..10u64 {
            let appended = session
                .append(lease, stream, Some(&n.to_string()), false)
                .await
                .expect("append");
            assert_eq!(appended.floor, n.saturating_sub(3));
        }
        let snapshot = session.read(stream, 0, 100).await.expect("read");
        assert_eq!(
            view(snapshot.lookup),
            LogView {
                floor: 6,
                head: 10,
                finished: false
            }
        );
        let indices: Vec<u64> = snapshot.events.iter().map(|e| e.index).collect();
        assert_eq!(indices, [6, 7, 8, 9]);
    }

    let mut by_bytes = config();
    // Each event weighs its data plus 32 frame bytes: 100 + 32.
    by_bytes.max_stream_bytes = 3 * 132;
    let log = connect(&cluster, by_bytes).await;
    for session_id in ["bravo", "echo", "hotel"] {
        let session = log.session(session_id);
        let lease = owned(&log, session_id, "a").await;
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_the_lease_is_renewed_held_and_taken_over_ending_open_calls() {
    let cluster = blocking(RedisCluster::start);
    let a = connect(&cluster, config()).await;
    let b = connect(&cluster, config()).await;
    for session_id in ["charlie", "foxtrot", "india"] {
        let lease_a = owned(&a, session_id, "a").await;
        // Epochs come from Redis's clock, so none is handed out twice.
        assert!(lease_a.epoch > 1_700_000_000_000_000, "{lease_a:?}");
        let session_a = a.session(session_id);
        let renewed = session_a.acquire("a", false).await.expect("renew");
        assert_eq!(renewed, LeaseOutcome::Renewed(lease_a));
        let m = session_a.open_request(lease_a, "7").await.expect("open");
        let stream = StreamId::Request(m);
        session_a
            .append(lease_a, stream, Some("{\"progress\":1}"), false)
            .await
            .expect("append");

        let held = b
            .session(session_id)
            .acquire("b", false)
            .await
            .expect("acquire");
        assert!(
            matches!(held, LeaseOutcome::HeldBy { epoch, .. } if epoch == lease_a.epoch),
            "{held:?}"
        );

        // A's lease lapses (as when A is paused past it).
        let lease_key = format!("t:{{{session_id}}}:lease");
        blocking(|| {
            let owner = cluster.slot_owner(&lease_key);
            let deleted = cluster.cli(owner.primary, &["DEL", lease_key.as_str()]);
            assert_eq!(deleted.as_deref().map(str::trim), Some("1"));
        });
        let taken = b
            .session(session_id)
            .acquire("b", false)
            .await
            .expect("acquire");
        let LeaseOutcome::Acquired {
            lease: lease_b,
            ended_streams,
        } = taken
        else {
            panic!("B did not take over: {taken:?}");
        };
        assert!(lease_b.epoch > lease_a.epoch, "{lease_b:?}");
        assert_eq!(ended_streams, 1);

        // A, resumed, is fenced.
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
        let snapshot = b
            .session(session_id)
            .read(stream, 0, 100)
            .await
            .expect("read");
        assert!(view(snapshot.lookup).finished);
        let data: Vec<String> = snapshot.events.into_iter().filter_map(|e| e.data).collect();
        assert_eq!(data.len(), 2, "{data:?}");
        assert_eq!(data[0], "{\"progress\":1}");
        let terminal: serde_json::Value = serde_json::from_str(&data[1]).expect("terminal JSON");
        assert_eq!(terminal["id"], 7);
        assert_eq!(
            terminal["error"],
            serde_json::from_str::<serde_json::Value>(INSTANCE_LOST_ERROR).expect("json")
        );
        assert!(b.session(session_id).release("b").await.expect("release"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_a_live_tail_follows_and_ends_a_dead_owners_call() {
    let cluster = blocking(RedisCluster::start);
    let log = connect(&cluster, config()).await;
    let reader = connect(&cluster, config()).await;
    // Live tails on sessions of different primaries at once: each blocking
    // read has a connection of its own.
    let mut tails = Vec::new();
    for session_id in ["alpha", "bravo", "charlie", "delta"] {
        let session = log.session(session_id);
        let lease = owned(&log, session_id, "a").await;
        let m = session.open_request(lease, "1").await.expect("open");
        let stream = StreamId::Request(m);
        session
            .append(lease, stream, Some("0"), false)
            .await
            .expect("append");
        let tail = Box::pin(reader.session(session_id).tail(stream, 0, None));
        tails.push((session, lease, stream, tail));
    }
    for (_, _, _, tail) in &mut tails {
        let first = tokio::time::timeout(LIMIT, tail.next())
            .await
            .expect("in time");
        assert_eq!(first.expect("an event").expect("ok").index, 0);
    }
    let writers: Vec<_> = tails
        .iter()
        .map(|(session, lease, stream, _)| {
            let (session, lease, stream) = (session.clone(), *lease, *stream);
            tokio::spawn(async move {
                for n in 1..4 {
                    tokio::time::sleep(Duration::from_millis(150)).await;
                    session
                        .append(lease, stream, Some(&n.to_string()), n == 3)
                        .await
                        .expect("append");
                }
            })
        })
        .collect();
    for (_, _, _, tail) in &mut tails {
        let mut seen = Vec::new();
        while let Some(event) = tokio::time::timeout(LIMIT, tail.next())
            .await
            .expect("in time")
        {
            seen.push(event.expect("ok").index);
        }
        assert_eq!(seen, [1, 2, 3], "no gap, no duplicate, then the end");
    }
    for writer in writers {
        writer.await.expect("writer");
    }

    // A dead owner: a tail elsewhere ends its open call with the error.
    let mut short = config();
    short.lease = Duration::from_millis(300);
    let a = connect(&cluster, short.clone()).await;
    let b = connect(&cluster, short).await;
    for session_id in ["echo", "foxtrot", "golf"] {
        let lease = owned(&a, session_id, "a").await;
        let session = a.session(session_id);
        let m = session
            .open_request(lease, "\"call-1\"")
            .await
            .expect("open");
        let stream = StreamId::Request(m);
        session
            .append(lease, stream, Some("{\"progress\":1}"), false)
            .await
            .expect("append");
        let started = Instant::now();
        let tail = b.session(session_id).tail(stream, 0, Some("b".to_owned()));
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
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_a_deleted_session_is_gone_for_every_reader() {
    let cluster = blocking(RedisCluster::start);
    let log = connect(&cluster, config()).await;
    for session_id in ["alpha", "echo", "india"] {
        let session = log.session(session_id);
        let lease = owned(&log, session_id, "a").await;
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
    // The other sessions' keys are untouched.
    let other = log.session("bravo");
    owned(&log, "bravo", "a").await;
    assert!(other.exists().await.expect("exists"));
}

/// A graceful failover of a session's slot: the owner keeps writing, a
/// tail elsewhere keeps reading, and nothing acknowledged is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_a_manual_failover_of_a_sessions_slot_keeps_the_log_working() {
    fail_over_keeps_the_log_working("alpha", Failover::Manual).await;
}

/// A forced takeover by the replica, without the primary's agreement: the
/// log keeps working the same (the replica was in sync).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_a_takeover_of_a_sessions_slot_keeps_the_log_working() {
    fail_over_keeps_the_log_working("charlie", Failover::Takeover).await;
}

async fn fail_over_keeps_the_log_working(session_id: &str, how: Failover) {
    let mut cluster = blocking(RedisCluster::start_with_replicas);
    let log = connect(&cluster, config()).await;
    let reader = connect(&cluster, config()).await;
    let session = log.session(session_id);
    let lease = owned(&log, session_id, "a").await;
    let m = session.open_request(lease, "1").await.expect("open");
    let stream = StreamId::Request(m);
    for n in 0..5 {
        session
            .append(lease, stream, Some(&n.to_string()), false)
            .await
            .expect("append");
    }
    let mut tail = Box::pin(reader.session(session_id).tail(stream, 0, None));
    for expected in 0..5 {
        let event = tokio::time::timeout(LIMIT, tail.next())
            .await
            .expect("in time");
        assert_eq!(event.expect("an event").expect("ok").index, expected);
    }
    // The tail now waits in a blocking read on the slot's primary.
    tokio::time::sleep(Duration::from_millis(50)).await;

    let started = Instant::now();
    let before = blocking(|| cluster.fail_over(&epoch_key(session_id), how));
    let after = blocking(|| cluster.slot_owner(&epoch_key(session_id)));
    assert_eq!(after.primary, before.replica.expect("a replica"));
    eprintln!(
        "{how:?}: slot {} moved {} -> {} in {:?}",
        before.slot,
        before.primary,
        after.primary,
        started.elapsed()
    );

    // The owner's next write succeeds (or is clearly refused, then
    // succeeds once the client follows the slot). A forced takeover may
    // elect a replica that never got the session (replication is
    // asynchronous, and a loaded machine lags): the write then says `Lost`,
    // and the owner seeds the session again, as its mirror does.
    let (appended, errors) = retry(LIMIT, || async {
        match session.append(lease, stream, Some("5"), false).await {
            Err(RedisLogError::Lost) if how == Failover::Takeover => {
                let seeded = session.renew("a", lease, m + 1).await?;
                eprintln!("{how:?}: the elected replica lacked the session: {seeded:?}");
                Err(RedisLogError::Lost)
            }
            other => other,
        }
    })
    .await;
    let appended = appended.expect("the owner writes after the failover");
    eprintln!("{how:?}: first append after it: {appended:?}, errors before it: {errors:?}");
    let snapshot = session.read(stream, 0, 100).await.expect("read");
    let indices: Vec<u64> = snapshot.events.iter().map(|e| e.index).collect();
    eprintln!("{how:?}: the stream after it: {indices:?}");
    if how == Failover::Manual {
        assert_eq!(appended.index, 5, "nothing acknowledged was lost");
        assert_eq!(indices, [0, 1, 2, 3, 4, 5]);
    }
    // The lease survived: the owner renews it.
    let renewed = session.acquire("a", false).await;
    eprintln!("{how:?}: the owner's lease after it: {renewed:?}");
    if how == Failover::Manual {
        assert_eq!(renewed.expect("renew"), LeaseOutcome::Renewed(lease));
    }

    // The tail that was blocked on the old primary.
    let next = tokio::time::timeout(LIMIT, tail.next()).await;
    match &next {
        Ok(Some(Ok(event))) => {
            assert_eq!(event.index, 5, "no gap, no duplicate");
            eprintln!("{how:?}: the blocked tail went on with event 5");
        }
        other => eprintln!("{how:?}: the blocked tail ended: {other:?}"),
    }
    // A new tail reads what the stream holds.
    let mut fresh = Box::pin(reader.session(session_id).tail(stream, 0, None));
    for expected in indices {
        let event = tokio::time::timeout(LIMIT, fresh.next())
            .await
            .expect("in time");
        assert_eq!(event.expect("an event").expect("ok").index, expected);
    }
}

/// A session's primary dies (`kill -9`) while its replica lags (stopped,
/// so that what the primary acknowledged never reached it): the replica is
/// elected and the log answers for the session again. What was lost is
/// reported, not asserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_a_failover_to_a_lagging_replica_turns_the_lost_events_into_a_floor() {
    let mut cluster = blocking(RedisCluster::start_with_replicas);
    let mut big = config();
    big.window = Window::events(100_000);
    big.max_stream_bytes = 256 << 20;
    let log = connect(&cluster, big.clone()).await;
    let reader = connect(&cluster, big).await;
    let session_id = "bravo";
    let session = log.session(session_id);
    let lease = owned(&log, session_id, "a").await;
    let stream = StreamId::Standalone;
    for n in 0..5 {
        session
            .append(lease, stream, Some(&n.to_string()), false)
            .await
            .expect("append");
    }
    let owner = blocking(|| cluster.slot_owner(&epoch_key(session_id)));
    let replica = owner.replica.expect("a replica");
    blocking(|| {
        let deadline = Instant::now() + LIMIT;
        // Its replica is in sync with the first five.
        while !cluster
            .cli(replica, &["INFO", "replication"])
            .is_some_and(|info| info.contains("master_link_status:up"))
        {
            assert!(Instant::now() < deadline, "replica link");
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    blocking(|| cluster.signal(replica, "STOP"));

    // More than the sockets between them hold: the rest stays in the
    // primary's buffer for its replica.
    let payload = "x".repeat(64 << 10);
    let mut acknowledged = 5u64;
    for _ in 0..400 {
        let appended = session
            .append(lease, stream, Some(&payload), false)
            .await
            .expect("append while the replica lags");
        acknowledged = appended.index;
    }
    blocking(|| {
        cluster.kill(owner.primary);
        cluster.signal(replica, "CONT");
    });
    let started = Instant::now();

    // While the slot has no primary, every operation fails clearly and in
    // time.
    let during = tokio::time::timeout(LIMIT, session.read(stream, 1, 1)).await;
    eprintln!("kill -9: a read right after the kill: {during:?}");
    assert!(during.is_ok(), "a read during the failover answers in time");

    blocking(|| cluster.wait_promoted(replica, owner.slot, Instant::now() + LIMIT * 3));
    eprintln!(
        "kill -9: replica {replica} is the primary of slot {} {:?} after the kill",
        owner.slot,
        started.elapsed()
    );

    // Reads answer.
    let read_by = reader.session(session_id);
    let (snapshot, read_errors) = retry(LIMIT, || read_by.read(stream, 1, 1)).await;
    let snapshot = snapshot.expect("a read answers after the failover");
    eprintln!(
        "kill -9: acknowledged head {} ; after the failover Redis reports {:?} (errors before: {read_errors:?})",
        acknowledged + 1,
        snapshot.lookup
    );
    let lease_after = session.acquire("a", false).await;
    eprintln!("kill -9: the owner's lease after the failover: {lease_after:?}");
    assert!(lease_after.is_ok(), "{lease_after:?}");

    // As the server writes (`RedisShared`): at the index the owner gives
    // it, the one after the last it had acknowledged.
    let explicit = tokio::time::timeout(
        LIMIT,
        session.commit(
            lease,
            &[Write::Append {
                stream,
                index: Some(acknowledged + 1),
                data: Some("\"explicit\""),
            }],
        ),
    )
    .await
    .expect("a commit answers in time");
    let view_after = reader.session(session_id).read(stream, 1, 1).await;
    eprintln!(
        "kill -9: the owner's commit at index {} after the failover: {explicit:?}; the stream then: {:?}",
        acknowledged + 1,
        view_after.as_ref().map(|s| s.lookup)
    );
    // The hole rule: what the replica lacked becomes the floor, and a
    // resume from before it is told so, never replayed across it.
    let lost = match snapshot.lookup {
        StreamLookup::Found(view) => view.head <= acknowledged,
        _ => true,
    };
    let committed = explicit.expect("the owner's commit after the failover");
    let after = match view_after.expect("read").lookup {
        StreamLookup::Found(view) => view,
        other => panic!("the stream after the commit: {other:?}"),
    };
    if lost {
        assert_eq!(committed.holes, 1, "the hole is found");
        assert_eq!(after.floor, acknowledged + 1, "and becomes the floor");
        let answer = plan(StreamLookup::Found(after), RmcpEventId::standalone(2));
        assert!(
            matches!(answer, ResumeAnswer::Fallback { floor, .. } if floor == acknowledged + 1),
            "{answer:?}"
        );
    } else {
        assert_eq!(committed.holes, 0, "nothing was lost: no hole");
    }

    // The owner writes: it succeeds, or is clearly refused.
    let (appended, append_errors) = retry(LIMIT, || {
        session.append(lease, stream, Some("\"after\""), false)
    })
    .await;
    eprintln!(
        "kill -9: the owner's append after the failover: {appended:?} (errors before: {append_errors:?})"
    );
    match appended {
        Ok(appended) => {
            let snapshot = reader
                .session(session_id)
                .read(stream, appended.index, 1)
                .await
                .expect("read");
            let event = snapshot.events.first().expect("the new event");
            assert_eq!(
                (event.index, event.data.as_deref()),
                (appended.index, Some("\"after\""))
            );
            eprintln!(
                "kill -9: the new event got index {} ({} acknowledged before the kill)",
                appended.index, acknowledged
            );
        }
        Err(error @ (RedisLogError::Redis(_) | RedisLogError::Reply(_))) => {
            panic!("the owner's append failed unclearly: {error}")
        }
        // Refused by a script: fenced, or the session's data lost.
        Err(_) => {}
    }
}
