//! A quick call's commit (`quick.lua`, chosen by the instance, which packs
//! the stream as one string) against the general script (`commit.lua`, which
//! packs it in its state hash) as the reference: the same batch, sent to each
//! on its own session, must read back the same from every position, expire
//! alike and answer the same; a retry, a fence, a lost epoch, a deleted
//! session and another epoch's stream must be told as the general script
//! tells them.

mod common;

use std::time::Duration;

use common::{config, connect, owned, raw};
use redis::aio::MultiplexedConnection;
use rmcp_resume_core::resumption::StreamId;
use rmcp_resume_redis::{Lease, RedisLogConfig, RedisLogError, SessionLog, Write};
use rmcp_resume_testkit::redis::RedisServer;

const COMMIT: &str = include_str!("../src/lua/commit.lua");
const QUICK: &str = include_str!("../src/lua/quick.lua");

/// One batch of the enumeration: `events` appends, the `Open` before the
/// append at `open_at` (or last), indexes given or left to the head.
fn batch<'a>(m: u64, data: &'a [String], open_at: usize, heads: bool) -> Vec<Write<'a>> {
    let mut writes = Vec::new();
    for (k, text) in data.iter().enumerate() {
        if k == open_at {
            writes.push(Write::Open {
                stream: m,
                request_id: "\"r\"",
            });
        }
        writes.push(Write::Append {
            stream: StreamId::Request(m),
            index: (!heads).then_some(k as u64),
            data: (!text.is_empty()).then_some(text.as_str()),
        });
    }
    if open_at >= data.len() {
        writes.push(Write::Open {
            stream: m,
            request_id: "\"r\"",
        });
    }
    writes.push(Write::Finish { stream: m });
    writes
}

/// `writes` as the general script takes them, straight to Redis, as the
/// instance sent every commit before quick.lua: its integer reply.
async fn general(
    redis: &mut MultiplexedConnection,
    config: &RedisLogConfig,
    session: &str,
    lease: Lease,
    writes: &[Write<'_>],
) -> Vec<i64> {
    let base = format!("{}:{{{session}}}:", config.prefix);
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(COMMIT)
        .arg(1)
        .arg(format!("{base}epoch"))
        .arg(&base)
        .arg(lease.epoch)
        .arg(1_765_000_000_000_u64)
        .arg(config.window.keep_events)
        .arg(config.window.max_events)
        .arg(config.window.retention.as_millis() as u64)
        .arg(config.max_stream_bytes)
        .arg(config.session_ttl.as_millis() as u64)
        .arg(config.answered_ttl.as_millis() as u64);
    for write in writes {
        match write {
            Write::Append {
                stream,
                index,
                data,
            } => {
                let m = stream.request().expect("a request stream");
                cmd.arg("a").arg(m);
                match index {
                    Some(index) => cmd.arg(index),
                    None => cmd.arg("*"),
                };
                cmd.arg(data.unwrap_or(""));
            }
            Write::Open { stream, request_id } => {
                cmd.arg("o").arg(stream).arg(*request_id).arg("");
            }
            Write::Finish { stream } => {
                cmd.arg("f").arg(stream).arg("").arg("");
            }
        }
    }
    cmd.query_async(redis).await.expect("commit.lua")
}

/// The reply the general script gives for what `commit` returned.
fn as_reply(result: &Result<rmcp_resume_redis::Committed, RedisLogError>) -> Vec<i64> {
    match result {
        Ok(committed) => {
            let last = committed.last.map_or(-1, |last| last as i64);
            let mut reply = vec![0, last, committed.holes as i64];
            reply.extend(committed.dropped.iter().map(|&m| m as i64));
            reply
        }
        Err(RedisLogError::Deleted) => vec![-4, 0, 0, 0],
        Err(RedisLogError::Lost) => vec![-3, 0, 0, 0],
        Err(RedisLogError::Fenced { current, .. }) => vec![-1, *current as i64, 0, 0],
        Err(other) => panic!("commit failed: {other}"),
    }
}

/// Whether `key` expires within `ttl`.
async fn expires_within(redis: &mut MultiplexedConnection, key: &str, ttl: Duration) -> bool {
    let pttl: i64 = redis::cmd("PTTL")
        .arg(key)
        .query_async(redis)
        .await
        .expect("PTTL");
    pttl > 0 && pttl <= ttl.as_millis() as i64
}

async fn exists(redis: &mut MultiplexedConnection, key: &str) -> bool {
    let n: i64 = redis::cmd("EXISTS")
        .arg(key)
        .query_async(redis)
        .await
        .expect("EXISTS");
    n == 1
}

/// Stream `m` read from both sessions, from every position up to past its
/// head and in slices of every size: the same snapshots.
async fn same_reads(quick: &SessionLog, reference: &SessionLog, m: u64, events: usize) {
    let stream = StreamId::Request(m);
    for from in (0..=events as u64 + 1).chain([u64::MAX]) {
        for count in [1, 2, events.max(1), 256] {
            let got = quick.read(stream, from, count).await.expect("read");
            let want = reference.read(stream, from, count).await.expect("read");
            assert_eq!(got, want, "stream {m} from {from}, {count} at most");
        }
    }
}

/// The hashes of the scripts the server ran since the slow log was reset,
/// oldest first.
async fn scripts_run(redis: &mut MultiplexedConnection) -> Vec<String> {
    let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(redis)
        .await
        .expect("SLOWLOG");
    let _: () = redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async(redis)
        .await
        .expect("SLOWLOG RESET");
    // The slow log lists the newest first.
    entries
        .into_iter()
        .rev()
        .filter_map(|entry| {
            let redis::Value::Array(fields) = entry else {
                return None;
            };
            let redis::Value::Array(args) = fields.get(3)? else {
                return None;
            };
            let name: String = redis::from_redis_value(args.first()?.clone()).ok()?;
            (name.eq_ignore_ascii_case("evalsha"))
                .then(|| redis::from_redis_value(args.get(1)?.clone()).ok())
                .flatten()
        })
        .collect()
}

/// Logs every command in the slow log, with the scripts loaded first: a
/// first `EVALSHA` answered `NOSCRIPT` would log it twice.
async fn watch_scripts(redis: &mut MultiplexedConnection) {
    for script in [COMMIT, QUICK] {
        let _: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(script)
            .query_async(redis)
            .await
            .expect("SCRIPT LOAD");
    }
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .query_async(redis)
        .await
        .expect("slowlog");
}

fn sha(script: &str) -> String {
    redis::Script::new(script).get_hash().to_owned()
}

/// Two sessions owned under one epoch, so that what they store compares
/// field for field (each state hash names the epoch that wrote it).
async fn pair(
    log: &rmcp_resume_redis::RedisLog,
    redis: &mut MultiplexedConnection,
    names: (&str, &str),
) -> ((SessionLog, Lease), (SessionLog, Lease)) {
    let a = owned(log, names.0, "a").await;
    let _ = owned(log, names.1, "b").await;
    let _: () = redis::cmd("SET")
        .arg(format!("t:{{{}}}:epoch", names.1))
        .arg(a.epoch)
        .query_async(redis)
        .await
        .expect("SET");
    ((log.session(names.0), a), (log.session(names.1), a))
}

/// Every shape of quick call the instance sends as one (1 to 16 events,
/// the `Open` anywhere, indexes given or left to the head, empty and
/// multibyte data): the same hash, expiry and reply as the general
/// script's, and quick.lua, not commit.lua, ran for it.
#[tokio::test]
async fn a_quick_call_reads_as_the_general_scripts_layout_does() {
    let server = RedisServer::start();
    let config = config();
    let log = connect(&server, config.clone()).await;
    let mut redis = raw(&server).await;
    watch_scripts(&mut redis).await;
    let ((quick, quick_lease), (reference, reference_lease)) =
        pair(&log, &mut redis, ("q", "g")).await;
    let mut cases = 0;
    for events in 1..=16_usize {
        let data: Vec<String> = (0..events)
            .map(|k| match k % 3 {
                0 => String::new(),
                1 => format!("{{\"k\":{k},\"é\":\"ü\"}}"),
                _ => "x".repeat(k * 37),
            })
            .collect();
        for open_at in [0, events / 2, events] {
            for heads in [false, true] {
                let m = quick
                    .reserve_streams(quick_lease, 1)
                    .await
                    .expect("reserve");
                let n = reference
                    .reserve_streams(reference_lease, 1)
                    .await
                    .expect("reserve");
                assert_eq!(m, n, "both sessions number their streams alike");
                let writes = batch(m, &data, open_at, heads);
                let _ = scripts_run(&mut redis).await;
                let got = quick.commit(quick_lease, &writes).await;
                assert_eq!(
                    scripts_run(&mut redis).await,
                    [sha(QUICK)],
                    "{events} events, open at {open_at}: sent as a quick call"
                );
                let want = general(&mut redis, &config, "g", reference_lease, &writes).await;
                assert_eq!(as_reply(&got), want, "{events} events, open at {open_at}");
                // Before any read, which may push the expiry out.
                let key = format!("t:{{q}}:p:{m}");
                assert!(
                    expires_within(&mut redis, &key, config.answered_ttl).await,
                    "{key}: kept answered_ttl"
                );
                same_reads(&quick, &reference, m, events).await;
                for gone in [format!("t:{{q}}:m:{m}"), format!("t:{{q}}:x:{m}")] {
                    assert!(!exists(&mut redis, &gone).await, "{gone}: one key a call");
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 16 * 3 * 2);
}

/// A retried quick call is this owner's own: `quick.lua` takes it again
/// without writing, and `commit.lua`, given the same batch or a late append
/// on the packed stream, skips or drops it as it does on a stream of its
/// own layout, and never writes that stream in its layout beside it.
#[tokio::test]
async fn a_retried_quick_call_writes_nothing_twice() {
    let server = RedisServer::start();
    let config = config();
    let log = connect(&server, config.clone()).await;
    let mut redis = raw(&server).await;
    watch_scripts(&mut redis).await;
    let ((quick, lease), (reference, _)) = pair(&log, &mut redis, ("q", "g")).await;
    let m = quick.reserve_streams(lease, 1).await.expect("reserve");
    let _ = reference.reserve_streams(lease, 1).await.expect("reserve");
    let data = [String::new(), "{\"answer\":1}".to_owned()];
    let writes = batch(m, &data, 1, false);
    let first = general(&mut redis, &config, "g", lease, &writes).await;
    for attempt in 0..2 {
        let _ = scripts_run(&mut redis).await;
        let got = quick.commit(lease, &writes).await;
        assert_eq!(as_reply(&got), first, "attempt {attempt}");
        assert_eq!(
            scripts_run(&mut redis).await,
            [sha(QUICK)],
            "attempt {attempt}"
        );
        same_reads(&quick, &reference, m, data.len()).await;
    }
    let late = [Write::Append {
        stream: StreamId::Request(m),
        index: Some(2),
        data: Some("late"),
    }];
    for (case, writes) in [
        ("the batch again", &writes[..]),
        ("a late append", &late[..]),
    ] {
        let want = general(&mut redis, &config, "g", lease, writes).await;
        let got = general(&mut redis, &config, "q", lease, writes).await;
        assert_eq!(got, want, "{case}");
        same_reads(&quick, &reference, m, data.len()).await;
        for gone in [format!("t:{{q}}:m:{m}"), format!("t:{{q}}:x:{m}")] {
            assert!(!exists(&mut redis, &gone).await, "{case}: {gone} written");
        }
    }
}

/// A quick call under an epoch that is not the session's writes nothing
/// and is refused as the general script refuses it: fenced by a higher
/// epoch, lost when Redis holds a lower one or none, deleted after the
/// session's tombstone.
#[tokio::test]
async fn a_quick_call_is_fenced_as_any_commit_is() {
    let server = RedisServer::start();
    let config = config();
    let log = connect(&server, config.clone()).await;
    let mut redis = raw(&server).await;
    let ((quick, lease), (_, reference_lease)) = pair(&log, &mut redis, ("q", "g")).await;
    let data = [String::new(), "{}".to_owned()];
    let admin = redis.clone();
    let set_epoch = |session: &'static str, epoch: Option<u64>| {
        let mut redis = admin.clone();
        async move {
            let key = format!("t:{{{session}}}:epoch");
            let _: () = match epoch {
                Some(epoch) => {
                    redis::cmd("SET")
                        .arg(key)
                        .arg(epoch)
                        .query_async(&mut redis)
                        .await
                }
                None => redis::cmd("DEL")
                    .arg(key)
                    .query_async(&mut redis)
                    .await
                    .map(|_: i64| ()),
            }
            .expect("epoch");
        }
    };
    type Expected = fn(&RedisLogError) -> bool;
    let cases: [(&str, Option<u64>, Expected); 3] = [
        (
            "a higher epoch",
            Some(lease.epoch.max(reference_lease.epoch) + 10),
            |e| matches!(e, RedisLogError::Fenced { .. }),
        ),
        ("a lower epoch", Some(1), |e| {
            matches!(e, RedisLogError::Lost)
        }),
        ("no epoch", None, |e| matches!(e, RedisLogError::Lost)),
    ];
    for (m, (case, epoch, expected)) in (100_u64..).zip(cases) {
        set_epoch("q", epoch).await;
        set_epoch("g", epoch).await;
        let writes = batch(m, &data, 1, false);
        let got = quick.commit(lease, &writes).await;
        let want = general(&mut redis, &config, "g", reference_lease, &writes).await;
        let error = got.as_ref().expect_err(case);
        assert!(expected(error), "{case}: {error}");
        assert_eq!(as_reply(&got), want, "{case}");
        for key in [format!("t:{{q}}:m:{m}"), format!("t:{{q}}:p:{m}")] {
            assert!(!exists(&mut redis, &key).await, "{case}: {key} written");
        }
    }
    set_epoch("q", Some(lease.epoch)).await;
    quick.delete().await.expect("delete");
    let got = quick.commit(lease, &batch(200, &data, 1, false)).await;
    assert!(matches!(got, Err(RedisLogError::Deleted)), "{got:?}");
}

/// A stream two epochs both wrote (two owners numbered the same stream:
/// Redis lost the reservation, or a stale owner wrote on) is reported as
/// two histories, whichever script each write went to, and the first
/// history is what a read still finds.
#[tokio::test]
async fn a_stream_another_epoch_wrote_is_a_divergence_in_either_layout() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("d");
    let first = owned(&log, "d", "a").await;
    // Numbers from 1: a divergence must name its stream, not stream 0.
    let streams = 1 + session.reserve_streams(first, 5).await.expect("reserve");
    let (packed, later, hashed) = (streams, streams + 1, streams + 2);
    let ours = [String::new(), "{\"by\":\"a\"}".to_owned()];
    for m in [packed, later] {
        session
            .commit(first, &batch(m, &ours, 1, false))
            .await
            .expect("packed by the first owner");
    }
    // Two calls in one batch are not a quick call: the general script packs
    // `hashed` in its state hash.
    let two: Vec<Write<'_>> = batch(hashed, &ours, 1, false)
        .into_iter()
        .chain(batch(streams + 3, &ours, 1, false))
        .collect();
    session
        .commit(first, &two)
        .await
        .expect("two calls by the first owner");
    let mut redis = raw(&server).await;
    assert!(
        exists(&mut redis, &format!("t:{{d}}:m:{hashed}")).await,
        "the general layout"
    );
    let second = common::take_over(&server, &log, "d", "b").await;
    assert!(second.epoch > first.epoch);
    let theirs = [String::new(), "{\"by\":\"b\"}".to_owned()];
    let not_quick = [Write::Append {
        stream: StreamId::Request(later),
        index: Some(0),
        data: Some("{\"by\":\"b\"}"),
    }];
    let cases: [(&str, u64, Vec<Write<'_>>); 3] = [
        (
            "quick over packed",
            packed,
            batch(packed, &theirs, 1, false),
        ),
        ("general over packed", later, not_quick.to_vec()),
        (
            "quick over general",
            hashed,
            batch(hashed, &theirs, 1, false),
        ),
    ];
    for (case, m, writes) in cases {
        let got = session.commit(second, &writes).await;
        assert!(
            matches!(got, Err(RedisLogError::Diverged { stream, index: 0 }) if stream == StreamId::Request(m)),
            "{case}: {got:?}"
        );
        let read = session
            .read(StreamId::Request(m), 0, 16)
            .await
            .expect("read");
        let kept: Vec<Option<&str>> = read.events.iter().map(|e| e.data.as_deref()).collect();
        assert!(
            !kept.contains(&Some("{\"by\":\"b\"}")),
            "{case}: the second history was written: {kept:?}"
        );
    }
}

/// A packed call lives `answered_ttl` past a read that still owed its
/// reader events, not past one that owed none, and goes with its session.
#[tokio::test]
async fn a_packed_call_lives_while_it_is_read_and_goes_with_its_session() {
    let server = RedisServer::start();
    let config = config();
    let log = connect(&server, config.clone()).await;
    let mut redis = raw(&server).await;
    let session = log.session("e");
    let lease = owned(&log, "e", "a").await;
    let m = session.reserve_streams(lease, 1).await.expect("reserve");
    let data = [String::new(), "{}".to_owned()];
    session
        .commit(lease, &batch(m, &data, 1, false))
        .await
        .expect("commit");
    let key = format!("t:{{e}}:p:{m}");
    let shorten = |mut redis: MultiplexedConnection, key: String| async move {
        let _: i64 = redis::cmd("PEXPIRE")
            .arg(key)
            .arg(5_000)
            .query_async(&mut redis)
            .await
            .expect("PEXPIRE");
    };
    let stream = StreamId::Request(m);
    shorten(redis.clone(), key.clone()).await;
    session
        .read(stream, 2, 16)
        .await
        .expect("read past the end");
    assert!(
        expires_within(&mut redis, &key, Duration::from_secs(5)).await,
        "a read that owed nothing keeps the expiry"
    );
    session.read(stream, 1, 16).await.expect("read");
    let pttl: i64 = redis::cmd("PTTL")
        .arg(&key)
        .query_async(&mut redis)
        .await
        .expect("PTTL");
    assert!(
        pttl > 5_000 && pttl <= config.answered_ttl.as_millis() as i64,
        "a read that owed an event keeps it answered_ttl: {pttl}"
    );
    session.delete().await.expect("delete");
    assert!(!exists(&mut redis, &key).await, "deleted with its session");
}

/// A packed call that Redis still names open (the open-call hash kept,
/// its state lost: the open entry and `m:` went different ways) is not
/// ended again by a takeover: its answer is what a read finds, and no
/// second history is written beside it.
#[tokio::test]
async fn a_takeover_never_ends_a_packed_call_again() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let mut redis = raw(&server).await;
    let session = log.session("o");
    let lease = owned(&log, "o", "a").await;
    let m = 1 + session.reserve_streams(lease, 2).await.expect("reserve");
    let data = [String::new(), "{\"answer\":1}".to_owned()];
    session
        .commit(lease, &batch(m, &data, 1, false))
        .await
        .expect("commit");
    let _: i64 = redis::cmd("HSET")
        .arg("t:{o}:open")
        .arg(m)
        .arg("1")
        .query_async(&mut redis)
        .await
        .expect("HSET");
    let _ = common::take_over(&server, &log, "o", "b").await;
    let read = session
        .read(StreamId::Request(m), 0, 16)
        .await
        .expect("read");
    let got: Vec<Option<&str>> = read.events.iter().map(|e| e.data.as_deref()).collect();
    assert_eq!(got, [None, Some("{\"answer\":1}")]);
    assert!(
        !exists(&mut redis, &format!("t:{{o}}:m:{m}")).await,
        "no second history"
    );
    let open: Vec<String> = redis::cmd("HKEYS")
        .arg("t:{o}:open")
        .query_async(&mut redis)
        .await
        .expect("HKEYS");
    assert!(open.is_empty(), "{open:?}");
}
