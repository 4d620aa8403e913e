//! What Redis holds, read directly: the events a stream committed (to check
//! that nothing was sent that Redis did not commit) and its client count
//! (to check that nothing leaks connections).
//!
//! On a Redis Cluster every command goes through a cluster connection, to
//! the primary of its key's slot (a session's keys share its `{session}`
//! hash tag); the client count is the sum over every node.

use std::time::Duration;

use std::sync::Arc;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::history::{Answer, Observation, Probe, Question, Recorder};

/// The key prefix the `server` example uses (`RedisLogConfig`'s default).
pub const PREFIX: &str = "rmcp-resume";

/// How long one Redis command may take here.
const LIMIT: Duration = Duration::from_secs(3);

/// Where the shared log lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// One Redis, at this URL.
    Single(String),
    /// A Redis Cluster: every node's `redis://host:port`, running or not.
    Cluster(Vec<String>),
}

impl Target {
    /// The `server` example's arguments for it.
    pub fn server_args(&self) -> Vec<String> {
        match self {
            Target::Single(url) => vec!["--redis".to_owned(), url.clone()],
            Target::Cluster(nodes) => vec!["--redis-cluster".to_owned(), nodes.join(",")],
        }
    }
}

/// A connection of the checker's own: to one Redis, or routed by slot.
/// Clones share it (both kinds multiplex).
#[derive(Clone)]
pub enum Conn {
    /// One Redis.
    Single(MultiplexedConnection),
    /// A Redis Cluster.
    Cluster(ClusterConnection),
}

/// A connection of the checker's own to one Redis (or one node).
pub async fn connect(url: &str) -> anyhow::Result<MultiplexedConnection> {
    let client = redis::Client::open(url)?;
    let conn = tokio::time::timeout(LIMIT, client.get_multiplexed_async_connection())
        .await
        .map_err(|_| anyhow::anyhow!("no Redis connection within {LIMIT:?}"))??;
    Ok(conn)
}

/// A connection of the checker's own to `target`.
pub async fn connect_to(target: &Target) -> anyhow::Result<Conn> {
    match target {
        Target::Single(url) => Ok(Conn::Single(connect(url).await?)),
        Target::Cluster(nodes) => {
            let client = redis::cluster::ClusterClient::builder(nodes.iter().cloned())
                .connection_timeout(LIMIT)
                .response_timeout(LIMIT)
                .build()?;
            let conn = tokio::time::timeout(LIMIT * 2, client.get_async_connection())
                .await
                .map_err(|_| anyhow::anyhow!("no cluster connection within {:?}", LIMIT * 2))??;
            Ok(Conn::Cluster(conn))
        }
    }
}

async fn query<T: redis::FromRedisValue, C: ConnectionLike + Send>(
    conn: &mut C,
    cmd: &redis::Cmd,
) -> anyhow::Result<T> {
    tokio::time::timeout(LIMIT, cmd.query_async(conn))
        .await
        .map_err(|_| anyhow::anyhow!("Redis did not answer within {LIMIT:?}"))?
        .map_err(Into::into)
}

async fn ask<T: redis::FromRedisValue>(conn: &mut Conn, cmd: &redis::Cmd) -> anyhow::Result<T> {
    match conn {
        Conn::Single(conn) => query(conn, cmd).await,
        Conn::Cluster(conn) => query(conn, cmd).await,
    }
}

/// Redis's normal clients other than the one asking, and the list itself.
pub async fn clients(url: &str) -> anyhow::Result<(usize, String)> {
    let mut conn = connect(url).await?;
    let list: String = query(
        &mut conn,
        redis::cmd("CLIENT").arg("LIST").arg("TYPE").arg("normal"),
    )
    .await?;
    let count = list.lines().filter(|l| !l.trim().is_empty()).count();
    Ok((count.saturating_sub(1), list))
}

/// [`clients`] of `target`. On a cluster: the count of the busiest node
/// (each instance's cluster connection holds at most one connection per
/// node, and keeps the one to a primary demoted by a failover, so the sum
/// grows with failovers while no node exceeds one per instance), and the
/// lists of every node that answers, after the sum (a node that does not
/// answer is reported there).
pub async fn clients_of(target: &Target) -> anyhow::Result<(usize, String)> {
    match target {
        Target::Single(url) => clients(url).await,
        Target::Cluster(nodes) => {
            let mut total = 0;
            let mut busiest = 0;
            let mut lists = String::new();
            let mut answered = 0;
            for node in nodes {
                match clients(node).await {
                    Ok((count, list)) => {
                        answered += 1;
                        total += count;
                        busiest = busiest.max(count);
                        let role = role(node).await.unwrap_or_else(|e| e.to_string());
                        for line in list.lines().filter(|l| !l.trim().is_empty()) {
                            lists.push_str(&format!("{node} ({role}): {line}\n"));
                        }
                    }
                    Err(error) => lists.push_str(&format!("{node}: no answer: {error}\n")),
                }
            }
            anyhow::ensure!(answered > 0, "no cluster node answered: {lists}");
            Ok((
                busiest,
                format!("{total} clients over {answered} nodes (busiest {busiest})\n{lists}"),
            ))
        }
    }
}

/// A node's role (`master`, `slave`).
async fn role(url: &str) -> anyhow::Result<String> {
    let mut conn = connect(url).await?;
    let role: Vec<redis::Value> = query(&mut conn, &redis::cmd("ROLE")).await?;
    match role.first() {
        Some(redis::Value::BulkString(bytes)) => Ok(String::from_utf8_lossy(bytes).into_owned()),
        Some(redis::Value::SimpleString(text)) => Ok(text.clone()),
        other => Ok(format!("{other:?}")),
    }
}

/// `CLIENT PAUSE ms ALL`.
pub async fn pause_clients(url: &str, hold: Duration) -> anyhow::Result<()> {
    let mut conn = connect(url).await?;
    let () = query(
        &mut conn,
        redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(u64::try_from(hold.as_millis()).unwrap_or(u64::MAX))
            .arg("ALL"),
    )
    .await?;
    Ok(())
}

/// The cluster slot of a session's keys (CRC16/XMODEM of its hash tag,
/// modulo 16384).
pub fn session_slot(session: &str) -> u16 {
    let mut crc: u16 = 0;
    for byte in session.bytes() {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

/// How a stream's key is named: `s` for the standalone stream, else `M`.
pub fn stream_field(stream: Option<u64>) -> String {
    stream.map_or_else(|| "s".to_owned(), |m| m.to_string())
}

/// Whether Redis still knows `session` (its epoch key), and whether it
/// holds its deletion tombstone.
pub async fn session_known(conn: &mut Conn, session: &str) -> anyhow::Result<(bool, bool)> {
    let base = format!("{PREFIX}:{{{session}}}:");
    let epoch: bool = ask(conn, redis::cmd("EXISTS").arg(format!("{base}epoch"))).await?;
    let gone: bool = ask(conn, redis::cmd("EXISTS").arg(format!("{base}gone"))).await?;
    Ok((epoch, gone))
}

/// The session's epoch (how many owners it has had, takeovers included),
/// if Redis knows it.
pub async fn epoch(conn: &mut Conn, session: &str) -> anyhow::Result<Option<u64>> {
    ask(
        conn,
        redis::cmd("GET").arg(format!("{PREFIX}:{{{session}}}:epoch")),
    )
    .await
}

/// The `floor` field of a stream's state (`None`: no state for it); 0 for
/// a quick call packed as one string, which keeps every event it had.
pub async fn stream_floor(
    conn: &mut Conn,
    session: &str,
    stream: Option<u64>,
) -> anyhow::Result<Option<u64>> {
    let field = stream_field(stream);
    let floor: Option<u64> = ask(
        conn,
        redis::cmd("HGET")
            .arg(format!("{PREFIX}:{{{session}}}:m:{field}"))
            .arg("floor"),
    )
    .await?;
    if floor.is_some() || stream.is_none() {
        return Ok(floor);
    }
    let packed: bool = ask(
        conn,
        redis::cmd("EXISTS").arg(format!("{PREFIX}:{{{session}}}:p:{field}")),
    )
    .await?;
    Ok(packed.then_some(0))
}

/// The standalone stream's floor for a reader at `cursor`, from what Redis
/// holds: its first entry after the cursor (never below the stream's
/// `floor`), or `u64::MAX` when it holds none after it (no claim can hide
/// an event then). `None`: no state for the stream. Ids jump where a
/// takeover began a segment, so the ids between two entries may be no
/// events at all: only an entry proves one.
pub async fn standalone_floor_after(
    conn: &mut Conn,
    session: &str,
    cursor: u64,
) -> anyhow::Result<Option<u64>> {
    let base = format!("{PREFIX}:{{{session}}}:");
    let Some(floor) = stream_floor(conn, session, None).await? else {
        return Ok(None);
    };
    let first: Vec<(String, Vec<(String, String)>)> = ask(
        conn,
        redis::cmd("XRANGE")
            .arg(format!("{base}x:s"))
            .arg(format!("{}-1", cursor.saturating_add(1)))
            .arg("+")
            .arg("COUNT")
            .arg(1),
    )
    .await?;
    let held = first
        .first()
        .and_then(|(id, _)| id.split('-').next()?.parse::<u64>().ok());
    Ok(Some(held.map_or(u64::MAX, |index| index.max(floor))))
}

/// The first id in `from..=to` at which the standalone stream holds an
/// event with data (`None`: none, or no stream). A priming entry has no
/// data: skipping it loses nothing.
pub async fn standalone_held(
    conn: &mut Conn,
    session: &str,
    from: u64,
    to: u64,
) -> anyhow::Result<Option<u64>> {
    let entries: Vec<(String, Vec<(String, String)>)> = ask(
        conn,
        redis::cmd("XRANGE")
            .arg(format!("{PREFIX}:{{{session}}}:x:{}", stream_field(None)))
            .arg(from)
            .arg(to)
            .arg("COUNT")
            .arg(64),
    )
    .await?;
    Ok(entries
        .into_iter()
        .find(|(_, fields)| fields.iter().any(|(k, _)| k == "d"))
        .and_then(|(id, _)| id.split('-').next()?.parse::<u64>().ok()))
}

/// How many reads the live audit has in flight at once.
const LIVE_READERS: usize = 4;
/// How often one question is retried while Redis does not answer.
const LIVE_TRIES: usize = 20;

/// The live audit: answers each [`Probe`] the recorder hands it (an event
/// a client received, a floor a refusal or notice claimed) by reading
/// Redis at once, and records the answer with when it was asked. Runs
/// until `finish` is cancelled, then answers what is already queued
/// (within `drain`).
///
/// A question Redis does not answer (stopped, restarting) is asked again
/// later: the answer is still evidence, since it is read after the client
/// saw the step; only its chance of finding the event trimmed grows.
pub async fn live(
    target: Target,
    probes: mpsc::UnboundedReceiver<Probe>,
    rec: Recorder,
    finish: CancellationToken,
    drain: Duration,
) {
    let probes = Arc::new(tokio::sync::Mutex::new(probes));
    let conn: Arc<tokio::sync::Mutex<Option<Conn>>> = Arc::default();
    let mut readers = Vec::new();
    for _ in 0..LIVE_READERS {
        let (probes, conn, rec, finish, target) = (
            probes.clone(),
            conn.clone(),
            rec.clone(),
            finish.clone(),
            target.clone(),
        );
        readers.push(tokio::spawn(async move {
            let mut deadline: Option<tokio::time::Instant> = None;
            loop {
                let next = {
                    let mut probes = probes.lock().await;
                    if finish.is_cancelled() {
                        let until =
                            *deadline.get_or_insert_with(|| tokio::time::Instant::now() + drain);
                        if tokio::time::Instant::now() >= until {
                            // What is left was never asked: say so, so
                            // that no rule takes silence for an answer.
                            while let Ok((session, question)) = probes.try_recv() {
                                rec.observe(Observation::unanswered(session, question, rec.now()));
                            }
                            return;
                        }
                        probes.try_recv().ok()
                    } else {
                        tokio::select! {
                            next = probes.recv() => next,
                            _ = finish.cancelled() => continue,
                        }
                    }
                };
                let Some((session, question)) = next else {
                    if finish.is_cancelled() {
                        return;
                    }
                    continue;
                };
                let mut answered = false;
                for _ in 0..LIVE_TRIES {
                    let mut current = conn.lock().await.clone();
                    if current.is_none() {
                        current = connect_to(&target).await.ok();
                        (*conn.lock().await).clone_from(&current);
                    }
                    let Some(mut c) = current else {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    };
                    let asked = rec.now();
                    let answer = match &question {
                        Question::Event { stream, index, .. } => {
                            stored_event(&mut c, &session, *stream, *index)
                                .await
                                .map(Answer::Event)
                        }
                        Question::Floor {
                            stream: None,
                            cursor: Some(cursor),
                            ..
                        } => standalone_floor_after(&mut c, &session, *cursor)
                            .await
                            .map(Answer::Floor),
                        Question::Floor { stream, .. } => stream_floor(&mut c, &session, *stream)
                            .await
                            .map(Answer::Floor),
                        Question::Skipped { from, to, .. } => {
                            standalone_held(&mut c, &session, *from, *to)
                                .await
                                .map(Answer::Held)
                        }
                    };
                    let at = rec.now();
                    let answer = match answer {
                        Ok(answer) => epoch(&mut c, &session).await.map(|e| (answer, e)),
                        Err(error) => Err(error),
                    };
                    match answer {
                        Ok((answer, epoch)) => {
                            rec.observe(Observation {
                                session: session.clone(),
                                question: question.clone(),
                                asked,
                                answered: at,
                                answer,
                                epoch,
                            });
                            answered = true;
                            break;
                        }
                        Err(_) => {
                            // A connection to a restarted Redis may be dead:
                            // the next try opens a new one.
                            *conn.lock().await = None;
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                    }
                }
                if !answered {
                    rec.observe(Observation::unanswered(session, question, rec.now()));
                }
            }
        }));
    }
    for reader in readers {
        let _ = reader.await;
    }
}

/// What [`sabotage`] breaks behind the product's back, and how often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sabotage {
    /// The newest entry of each session's Redis stream (`x:`) is deleted
    /// (`XDEL`), so an event a client has just received is often gone when
    /// the live audit reads it.
    StreamEntries {
        /// The pause between two rounds.
        every: Duration,
    },
    /// Every quick call packed as one string (`p:`, see the shared log's
    /// `quick.lua`) is deleted, so a call's answer a client has just
    /// received is gone when the live audit reads it.
    PackedCalls {
        /// The pause between two rounds.
        every: Duration,
    },
}

/// Breaks Redis behind the product's back until `stop`, as `what` says,
/// for a run that proves the checker sees it. Single Redis only.
pub async fn sabotage(target: Target, what: Sabotage, stop: CancellationToken) {
    let Target::Single(url) = target else { return };
    let (every, pattern) = match what {
        Sabotage::StreamEntries { every } => (every, "x"),
        Sabotage::PackedCalls { every } => (every, "p"),
    };
    let mut conn = None;
    while !stop.is_cancelled() {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.cancelled() => return,
        }
        if conn.is_none() {
            conn = connect(&url).await.ok();
        }
        let Some(c) = conn.as_mut() else { continue };
        let keys: Vec<String> = match query(
            c,
            redis::cmd("KEYS").arg(format!("{PREFIX}:{{*}}:{pattern}:*")),
        )
        .await
        {
            Ok(keys) => keys,
            Err(_) => {
                conn = None;
                continue;
            }
        };
        for key in keys {
            if let Sabotage::PackedCalls { .. } = what {
                let _: Result<u64, _> = query(c, redis::cmd("DEL").arg(&key)).await;
                continue;
            }
            let newest: Vec<(String, Vec<(String, String)>)> = match query(
                c,
                redis::cmd("XREVRANGE")
                    .arg(&key)
                    .arg("+")
                    .arg("-")
                    .arg("COUNT")
                    .arg(1),
            )
            .await
            {
                Ok(newest) => newest,
                Err(_) => continue,
            };
            for (id, _) in newest {
                let _: Result<u64, _> = query(c, redis::cmd("XDEL").arg(&key).arg(id)).await;
            }
        }
    }
}

/// One stored event as Redis has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// Entry `N-1` exists; its `d` field.
    Event(Option<String>),
    /// No entry, and the stream's floor is above `N`: trimmed.
    Trimmed { floor: u64 },
    /// No entry, though the floor does not explain it.
    Missing { floor: Option<u64> },
}

/// Event `index` of `stream` of `session`.
pub async fn stored_event(
    conn: &mut Conn,
    session: &str,
    stream: Option<u64>,
    index: u64,
) -> anyhow::Result<Stored> {
    let field = stream_field(stream);
    let base = format!("{PREFIX}:{{{session}}}:");
    let entry = format!("{index}-1");
    let entries: Vec<(String, Vec<(String, String)>)> = ask(
        conn,
        redis::cmd("XRANGE")
            .arg(format!("{base}x:{field}"))
            .arg(&entry)
            .arg(&entry),
    )
    .await?;
    if let Some((_, fields)) = entries.into_iter().next() {
        let data = fields.into_iter().find(|(k, _)| k == "d").map(|(_, v)| v);
        return Ok(Stored::Event(data));
    }
    // A quick call may be kept packed in its state hash instead: field
    // `packed` is 1 and each event is the field named by its index.
    let (floor, packed, data): (Option<u64>, Option<String>, Option<String>) = ask(
        conn,
        redis::cmd("HMGET")
            .arg(format!("{base}m:{field}"))
            .arg("floor")
            .arg("packed")
            .arg(index),
    )
    .await?;
    if packed.as_deref() == Some("1")
        && let Some(data) = data
    {
        return Ok(Stored::Event(Some(data)));
    }
    // Or packed as one string by quick.lua (no state hash then): its count,
    // then each event's data after its length.
    if floor.is_none()
        && stream.is_some()
        && let Some(string) =
            ask::<Option<Vec<u8>>>(conn, redis::cmd("GET").arg(format!("{base}p:{field}"))).await?
    {
        return Ok(
            match unpack(&string).and_then(|events| events.into_iter().nth(index as usize)) {
                Some(data) => Stored::Event(Some(data)),
                None => Stored::Missing { floor: Some(0) },
            },
        );
    }
    Ok(match floor {
        Some(floor) if floor > index => Stored::Trimmed { floor },
        floor => Stored::Missing { floor },
    })
}

/// The events of a stream `quick.lua` packed as one string
/// (`<epoch>\n<count>\n<bytes>\n`, then each event's data after its
/// length and `\n`), read here without the product's code; `None` if the
/// string is not one.
fn unpack(string: &[u8]) -> Option<Vec<String>> {
    let mut rest = string;
    let number = |rest: &mut &[u8]| -> Option<usize> {
        let end = rest.iter().position(|&b| b == b'\n')?;
        let n = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
        *rest = &rest[end + 1..];
        Some(n)
    };
    let _epoch = number(&mut rest)?;
    let count = number(&mut rest)?;
    let _bytes = number(&mut rest)?;
    let mut events = Vec::with_capacity(count);
    for _ in 0..count {
        let size = number(&mut rest)?;
        let data = rest.get(..size)?;
        events.push(String::from_utf8(data.to_vec()).ok()?);
        rest = &rest[size..];
    }
    rest.is_empty().then_some(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::cluster::RedisProc;

    #[tokio::test]
    async fn reads_an_event_as_the_log_stores_it_and_tells_trimmed_from_missing() {
        let redis = RedisProc::start().expect("redis-server");
        let mut raw = connect(&redis.url()).await.expect("connect");
        let mut conn = Conn::Single(raw.clone());
        let base = format!("{PREFIX}:{{s1}}:");
        let () = redis::cmd("XADD")
            .arg(format!("{base}x:3"))
            .arg("5-1")
            .arg("d")
            .arg(r#"{"a":1}"#)
            .arg("t")
            .arg("1")
            .query_async(&mut raw)
            .await
            .map(|_: String| ())
            .expect("XADD");
        let () = redis::cmd("HSET")
            .arg(format!("{base}m:3"))
            .arg("floor")
            .arg(5)
            .query_async(&mut raw)
            .await
            .map(|_: u64| ())
            .expect("HSET");
        assert_eq!(
            stored_event(&mut conn, "s1", Some(3), 5)
                .await
                .expect("read"),
            Stored::Event(Some(r#"{"a":1}"#.to_owned()))
        );
        assert_eq!(
            stored_event(&mut conn, "s1", Some(3), 4)
                .await
                .expect("read"),
            Stored::Trimmed { floor: 5 }
        );
        assert_eq!(
            stored_event(&mut conn, "s1", Some(3), 6)
                .await
                .expect("read"),
            Stored::Missing { floor: Some(5) }
        );
        // A quick call packed in its state hash (commit.lua's layout).
        let () = redis::cmd("HSET")
            .arg(format!("{base}m:4"))
            .arg(&["floor", "0", "head", "2", "finished", "1", "packed", "1"])
            .arg(&["0", "", "1", r#"{"b":2}"#])
            .query_async(&mut raw)
            .await
            .map(|_: u64| ())
            .expect("HSET");
        assert_eq!(
            stored_event(&mut conn, "s1", Some(4), 1)
                .await
                .expect("read"),
            Stored::Event(Some(r#"{"b":2}"#.to_owned()))
        );
        assert_eq!(
            stored_event(&mut conn, "s1", Some(4), 2)
                .await
                .expect("read"),
            Stored::Missing { floor: Some(0) }
        );
        // A quick call packed as one string (quick.lua's layout).
        let () = redis::cmd("SET")
            .arg(format!("{base}p:5"))
            .arg("9\n2\n68\n0\n7\n{\"c\":3}")
            .query_async(&mut raw)
            .await
            .expect("SET");
        assert_eq!(
            stored_event(&mut conn, "s1", Some(5), 1)
                .await
                .expect("read"),
            Stored::Event(Some(r#"{"c":3}"#.to_owned()))
        );
        assert_eq!(
            stored_event(&mut conn, "s1", Some(5), 0)
                .await
                .expect("read"),
            Stored::Event(Some(String::new()))
        );
        assert_eq!(
            stored_event(&mut conn, "s1", Some(5), 2)
                .await
                .expect("read"),
            Stored::Missing { floor: Some(0) }
        );
        let (count, _) = clients(&redis.url()).await.expect("clients");
        assert_eq!(count, 1, "this test's own connection");
    }

    /// `PING` through `url`, within 500 ms.
    async fn ping(url: &str) -> Result<String, String> {
        let client = redis::Client::open(url).map_err(|e| e.to_string())?;
        let work = async {
            let mut conn = client.get_multiplexed_async_connection().await?;
            redis::cmd("PING").query_async::<String>(&mut conn).await
        };
        match tokio::time::timeout(Duration::from_millis(500), work).await {
            Err(_) => Err("no answer".to_owned()),
            Ok(result) => result.map_err(|e| e.to_string()),
        }
    }

    /// An instance's proxy to Redis (the partition fault's) passes
    /// commands, holds them while blackholed, refuses them while cut, and
    /// passes them again after. Named for CI's list of tests that need
    /// redis-server.
    #[tokio::test]
    async fn reads_an_event_through_a_redis_link_that_passes_holds_and_cuts() {
        let redis = RedisProc::start().expect("redis-server");
        let socket = std::path::PathBuf::from(
            redis
                .url()
                .strip_prefix("unix://")
                .expect("a socket URL")
                .to_owned(),
        );
        let dir = socket.parent().expect("its dir").to_owned();
        let ct = CancellationToken::new();
        let link =
            crate::faults::net::RedisLink::start(dir.join("instance-0.sock"), socket, ct.clone())
                .expect("the proxy");
        assert_eq!(ping(&link.url()).await.as_deref(), Ok("PONG"));
        for blackhole in [true, false] {
            let partition = {
                let link = link.clone();
                tokio::spawn(async move {
                    link.partition(Duration::from_millis(800), blackhole).await;
                })
            };
            tokio::time::sleep(Duration::from_millis(50)).await;
            let during = ping(&link.url()).await;
            assert!(during.is_err(), "blackhole {blackhole}: {during:?}");
            partition.await.expect("the partition");
            assert_eq!(ping(&link.url()).await.as_deref(), Ok("PONG"));
        }
        ct.cancel();
    }

    #[test]
    fn a_session_slot_is_the_cluster_keyslot_of_its_hash_tag() {
        // CLUSTER KEYSLOT values from Redis's documentation and tests.
        assert_eq!(session_slot("123456789"), 0x31C3);
        assert_eq!(session_slot("foo"), 12182);
        assert_eq!(session_slot("somekey"), 11058);
    }
}
