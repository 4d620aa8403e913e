//! The commit path's two savings keep what they save on: a batch that
//! trims once leaves a stream exactly as appends committed one by one do,
//! and commits grouped into one pipeline each get their own session's
//! answer.

mod common;

use std::time::Duration;

use common::{config, connect, expire_lease, owned, raw};
use rmcp_resume_core::log::Window;
use rmcp_resume_core::resumption::StreamId;
use rmcp_resume_redis::{RedisLogError, Snapshot, Write};
use rmcp_resume_testkit::redis::RedisServer;

/// A small deterministic generator: the cases repeat from run to run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below.max(1)
    }
}

fn payload(rng: &mut Lcg, n: u64) -> String {
    let pad = "x".repeat(rng.next(120) as usize);
    format!(r#"{{"n":{n},"pad":"{pad}"}}"#)
}

/// 40 generated cases: a stream of up to 40 events under a count window
/// (keep 3, at most 6) and a byte cap that some cases cross, committed in
/// random chunks on one session and one event per commit on another. The
/// two streams' floors, heads and events are equal after every chunk.
#[tokio::test]
async fn a_batch_trims_as_appends_one_by_one_do() {
    let server = RedisServer::start();
    let mut windowed = config();
    // Events younger than an hour are kept past `keep`: the time rule reads
    // the oldest event without evicting it, which the count cap then does.
    windowed.window = Window::new(3, 6, Duration::from_secs(3600));
    windowed.max_stream_bytes = 700;
    let log = connect(&server, windowed).await;
    let mut rng = Lcg(0x5eed);
    for case in 0..40 {
        let (batched, single) = (format!("b{case}"), format!("o{case}"));
        let lease_b = owned(&log, &batched, "a").await;
        let lease_o = owned(&log, &single, "a").await;
        let (session_b, session_o) = (log.session(&batched), log.session(&single));
        let stream = if rng.next(2) == 0 {
            StreamId::Standalone
        } else {
            StreamId::Request(
                session_b
                    .reserve_streams(lease_b, 1)
                    .await
                    .expect("reserve"),
            )
        };
        let other = match stream {
            StreamId::Standalone => StreamId::Standalone,
            StreamId::Request(_) => StreamId::Request(
                session_o
                    .reserve_streams(lease_o, 1)
                    .await
                    .expect("reserve"),
            ),
        };
        let first = match stream {
            StreamId::Standalone => 1,
            StreamId::Request(_) => 0,
        };
        let total = 1 + rng.next(40);
        let events: Vec<String> = (0..total).map(|n| payload(&mut rng, n)).collect();
        let mut at = 0;
        while at < events.len() {
            let chunk = (1 + rng.next(12) as usize).min(events.len() - at);
            let writes: Vec<Write<'_>> = (at..at + chunk)
                .map(|i| Write::Append {
                    stream,
                    index: Some(first + i as u64),
                    data: Some(&events[i]),
                })
                .collect();
            session_b.commit(lease_b, &writes).await.expect("batch");
            for (i, event) in events.iter().enumerate().skip(at).take(chunk) {
                session_o
                    .commit(
                        lease_o,
                        &[Write::Append {
                            stream: other,
                            index: Some(first + i as u64),
                            data: Some(event),
                        }],
                    )
                    .await
                    .expect("one by one");
            }
            at += chunk;
            let (b, o): (Snapshot, Snapshot) = (
                session_b.read(stream, 0, 100).await.expect("read"),
                session_o.read(other, 0, 100).await.expect("read"),
            );
            assert_eq!(b, o, "case {case}: after {at} of {total} events");
        }
    }
}

/// 24 sessions commit at once, so their commits share pipelines; one of
/// them was taken over meanwhile. Each gets its own answer: the fenced one
/// is refused and wrote nothing, every other one committed its own event.
#[tokio::test]
async fn grouped_commits_each_get_their_own_answer() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let mut leases = Vec::new();
    for n in 0..24 {
        leases.push(owned(&log, &format!("g{n}"), "a").await);
    }
    expire_lease(&server, "t:{g7}:lease").await;
    let taken = log.session("g7").acquire("b", false).await.expect("take");
    assert!(taken.lease().is_some(), "{taken:?}");
    for round in 0..5_u64 {
        let commits = leases.iter().enumerate().map(|(n, lease)| {
            let log = log.clone();
            let lease = *lease;
            async move {
                let data = format!(r#"{{"session":{n},"round":{round}}}"#);
                let session = log.session(&format!("g{n}"));
                let committed = session
                    .commit(
                        lease,
                        &[Write::Append {
                            stream: StreamId::Standalone,
                            index: Some(1 + round),
                            data: Some(&data),
                        }],
                    )
                    .await;
                (n, committed)
            }
        });
        for (n, committed) in futures::future::join_all(commits).await {
            match (n, committed) {
                (7, Err(RedisLogError::Fenced { .. })) => {}
                (7, other) => panic!("the fenced session committed: {other:?}"),
                (_, Ok(committed)) => assert_eq!(committed.last, Some(1 + round), "g{n}"),
                (_, Err(error)) => panic!("g{n}: {error}"),
            }
        }
    }
    for n in [0, 7, 23] {
        let snapshot = log
            .session(&format!("g{n}"))
            .read(StreamId::Standalone, 0, 10)
            .await
            .expect("read");
        let datas: Vec<String> = snapshot.events.into_iter().filter_map(|e| e.data).collect();
        if n == 7 {
            assert!(datas.is_empty(), "g7 kept {datas:?}");
        } else {
            let expected: Vec<String> = (0..5)
                .map(|round| format!(r#"{{"session":{n},"round":{round}}}"#))
                .collect();
            assert_eq!(datas, expected, "g{n}");
        }
    }
}

/// Redis forgot its scripts (a restart, `SCRIPT FLUSH`): a lone commit and
/// a group of them load the script again and commit, once each.
#[tokio::test]
async fn commits_survive_a_script_flush() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let mut leases = Vec::new();
    for n in 0..8 {
        leases.push(owned(&log, &format!("f{n}"), "a").await);
    }
    let mut conn = raw(&server).await;
    for (round, group) in [1_usize, 8].into_iter().enumerate() {
        let () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async(&mut conn)
            .await
            .expect("flush");
        let commits = leases.iter().take(group).enumerate().map(|(n, lease)| {
            let session = log.session(&format!("f{n}"));
            let lease = *lease;
            async move {
                session
                    .commit(
                        lease,
                        &[Write::Append {
                            stream: StreamId::Standalone,
                            index: Some(1 + round as u64),
                            data: Some("{}"),
                        }],
                    )
                    .await
            }
        });
        for committed in futures::future::join_all(commits).await {
            assert_eq!(committed.expect("commit").last, Some(1 + round as u64));
        }
    }
    let snapshot = log
        .session("f0")
        .read(StreamId::Standalone, 0, 10)
        .await
        .expect("read");
    assert_eq!(snapshot.events.len(), 2, "{snapshot:?}");
}

/// A call already registered open, then opened again and answered in one
/// batch (a retry after a seeding): the batch's answer takes it off the
/// open-call hash, so no takeover ever adds an error after its answer.
#[tokio::test]
async fn an_answer_in_the_batch_that_reopens_its_call_closes_it() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let lease = owned(&log, "r", "a").await;
    let session = log.session("r");
    let m = session.open_request(lease, "7").await.expect("open");
    session
        .commit(
            lease,
            &[
                Write::Open {
                    stream: m,
                    request_id: "7",
                },
                Write::Append {
                    stream: StreamId::Request(m),
                    index: Some(0),
                    data: Some(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
                },
                Write::Finish { stream: m },
            ],
        )
        .await
        .expect("answer");
    let mut conn = raw(&server).await;
    let open: Vec<String> = redis::cmd("HKEYS")
        .arg("t:{r}:open")
        .query_async(&mut conn)
        .await
        .expect("HKEYS");
    assert!(open.is_empty(), "still open after its answer: {open:?}");
    // A fresh call opened and answered in one batch never enters it.
    let n = session.reserve_streams(lease, 1).await.expect("reserve");
    session
        .commit(
            lease,
            &[
                Write::Append {
                    stream: StreamId::Request(n),
                    index: Some(0),
                    data: None,
                },
                Write::Open {
                    stream: n,
                    request_id: "8",
                },
                Write::Append {
                    stream: StreamId::Request(n),
                    index: Some(1),
                    data: Some(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#),
                },
                Write::Finish { stream: n },
            ],
        )
        .await
        .expect("quick call");
    let open: Vec<String> = redis::cmd("HKEYS")
        .arg("t:{r}:open")
        .query_async(&mut conn)
        .await
        .expect("HKEYS");
    assert!(open.is_empty(), "{open:?}");
    let snapshot = session
        .read(StreamId::Request(n), 0, 8)
        .await
        .expect("read");
    assert_eq!(snapshot.events.len(), 2, "{snapshot:?}");
}

/// 60 generated quick calls: a request stream opened, given up to 24 events
/// and answered in one batch on one session (kept packed when it is small
/// and nothing is trimmed), and the same writes committed one by one on
/// another (a Redis stream). Every read of the two (each `from`, short and
/// long pages) is equal, after a retry of the whole batch too, and a late
/// append is dropped by both. Both layouts occur. A third session commits
/// the batch with its `Open` twice, which is not a quick call: what the two
/// leave in Redis (the stream's hash, its stream key, the open-call hash)
/// is equal, unless the first went to `quick.lua`, which leaves one string.
#[tokio::test]
async fn a_call_answered_in_one_batch_reads_as_one_committed_write_by_write() {
    let server = RedisServer::start();
    let mut windowed = config();
    windowed.window = Window::new(8, 12, Duration::from_secs(3600));
    windowed.max_stream_bytes = 900;
    let log = connect(&server, windowed).await;
    let mut redis = raw(&server).await;
    let mut rng = Lcg(0xca11);
    let (mut packed, mut streamed, mut quick_path) = (0, 0, 0);
    for case in 0..60 {
        let (quick, slow, general) = (format!("q{case}"), format!("s{case}"), format!("g{case}"));
        let lease_q = owned(&log, &quick, "a").await;
        let lease_s = owned(&log, &slow, "a").await;
        let lease_g = owned(&log, &general, "a").await;
        let (session_q, session_s) = (log.session(&quick), log.session(&slow));
        let session_g = log.session(&general);
        let m_q = session_q
            .reserve_streams(lease_q, 1)
            .await
            .expect("reserve");
        let m_s = session_s
            .reserve_streams(lease_s, 1)
            .await
            .expect("reserve");
        let m_g = session_g
            .reserve_streams(lease_g, 1)
            .await
            .expect("reserve");
        let total = 1 + rng.next(24);
        let events: Vec<Option<String>> = (0..total)
            .map(|n| (n > 0 || rng.next(2) == 0).then(|| payload(&mut rng, n)))
            .collect();
        let opened = rng.next(2) == 0;
        // Where the call's `Open` goes among its events: a server commits
        // its priming event first.
        let open_at = rng.next(total + 1) as usize;
        let writes = |m: u64| -> Vec<Write<'_>> {
            let mut writes: Vec<Write<'_>> = events
                .iter()
                .enumerate()
                .map(|(i, data)| Write::Append {
                    stream: StreamId::Request(m),
                    index: Some(i as u64),
                    data: data.as_deref(),
                })
                .collect();
            if opened {
                let open = Write::Open {
                    stream: m,
                    request_id: "7",
                };
                writes.insert(open_at, open);
            }
            writes.push(Write::Finish { stream: m });
            writes
        };
        let before = common::command_calls(&mut redis, "hmget").await;
        let committed = session_q
            .commit(lease_q, &writes(m_q))
            .await
            .expect("batch");
        // The quick-call path reads no stream state, and packs the stream
        // as one string, not in a state hash.
        let by_quick_path = common::command_calls(&mut redis, "hmget").await == before;
        if by_quick_path {
            quick_path += 1;
        }
        // The same batch with its `Open` twice, which the quick-call path
        // does not take.
        let mut twice = writes(m_g);
        if opened {
            twice.insert(
                0,
                Write::Open {
                    stream: m_g,
                    request_id: "7",
                },
            );
        }
        let by_general = session_g
            .commit(lease_g, &twice)
            .await
            .expect("batch with its open twice");
        assert_eq!(committed, by_general, "case {case}");
        if by_quick_path {
            let (hash, entries, open, ..) = stored(&mut redis, &quick, m_q).await;
            assert!(
                hash.is_empty() && entries == 0 && open.is_none(),
                "case {case}"
            );
        } else {
            assert_eq!(
                stored(&mut redis, &quick, m_q).await,
                stored(&mut redis, &general, m_g).await,
                "case {case}"
            );
        }
        for write in writes(m_s) {
            session_s
                .commit(lease_s, &[write])
                .await
                .expect("one write");
        }
        let key = format!("t:{{{quick}}}:x:{m_q}");
        let exists: i64 = redis::cmd("EXISTS")
            .arg(&key)
            .query_async(&mut redis)
            .await
            .expect("EXISTS");
        if exists == 0 {
            packed += 1;
        } else {
            streamed += 1;
        }
        for pass in ["committed", "retried", "late append"] {
            match pass {
                "retried" => {
                    session_q
                        .commit(lease_q, &writes(m_q))
                        .await
                        .expect("retry");
                }
                "late append" => {
                    for (session, lease, m) in
                        [(&session_q, lease_q, m_q), (&session_s, lease_s, m_s)]
                    {
                        let late = [Write::Append {
                            stream: StreamId::Request(m),
                            index: Some(total),
                            data: Some("{\"late\":true}"),
                        }];
                        let committed = session.commit(lease, &late).await.expect("late");
                        assert_eq!(committed.dropped, vec![m], "case {case}");
                    }
                }
                _ => {}
            }
            for from in 0..=total + 1 {
                for count in [1, 3, 100] {
                    let q = session_q
                        .read(StreamId::Request(m_q), from, count)
                        .await
                        .expect("read");
                    let s = session_s
                        .read(StreamId::Request(m_s), from, count)
                        .await
                        .expect("read");
                    assert_eq!(q, s, "case {case}, {pass}: from {from}, count {count}");
                }
            }
        }
    }
    assert!(
        packed >= 10 && streamed >= 10 && quick_path >= 5,
        "packed {packed}, streamed {streamed}, by the quick-call path {quick_path}"
    );
}

/// What Redis holds of request stream `m` of `session`: its state hash, its
/// stream's entry count, its entry in the open-call hash, and whether
/// either key is held forever.
async fn stored(
    redis: &mut redis::aio::MultiplexedConnection,
    session: &str,
    m: u64,
) -> (Vec<(String, String)>, usize, Option<String>, bool, bool) {
    let base = format!("t:{{{session}}}:");
    let (meta, key) = (format!("{base}m:{m}"), format!("{base}x:{m}"));
    let mut hash: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg(&meta)
        .query_async(redis)
        .await
        .expect("HGETALL");
    // The writer's epoch differs from session to session by design.
    hash.retain(|(field, _)| field != "e");
    hash.sort();
    let entries: usize = redis::cmd("XLEN")
        .arg(&key)
        .query_async(redis)
        .await
        .expect("XLEN");
    let open: Option<String> = redis::cmd("HGET")
        .arg(format!("{base}open"))
        .arg(m)
        .query_async(redis)
        .await
        .expect("HGET");
    let mut expires = [false; 2];
    for (at, key) in [&meta, &key].into_iter().enumerate() {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(redis)
            .await
            .expect("PTTL");
        // -1: a key that never expires; -2: no key.
        expires[at] = ttl != -1;
    }
    (hash, entries, open, expires[0], expires[1])
}
