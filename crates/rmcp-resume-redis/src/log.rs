//! The shared log: one Redis stream per MCP stream.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::{Script, Value};
use rmcp_resume_core::resumption::{LogView, StreamId, StreamLookup};

use crate::config::{RedisLogConfig, millis};
use crate::connection::{Backend, Connection};
use crate::error::RedisLogError;
use crate::group::{GroupCommit, query_alone};
use crate::keys::{SessionKeys, StreamField, first_index, stream_field};
use crate::lease::{INSTANCE_LOST_ERROR, Lease, LeaseOutcome};
use crate::quick::QuickCall;
use crate::scripts::Scripts;
pub use rmcp_resume_core::shared::Renewal;

/// A connection to the shared log, cheap to clone.
#[derive(Clone)]
pub struct RedisLog {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    conn: Connection,
    config: RedisLogConfig,
    scripts: Scripts,
    /// Commits leave in groups, on one Redis (see [`crate::group`]).
    group: Option<GroupCommit>,
}

impl std::fmt::Debug for RedisLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLog")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl RedisLog {
    /// Connects to the Redis at `url` (`redis://…`, `rediss://…` or
    /// `unix:///path/to/socket`). The connection reconnects by itself; a
    /// command made while Redis is away fails with
    /// [`RedisLogError::Redis`] after the response timeout. A Redis that
    /// may evict keys is refused ([`RedisLogError::Evicting`], see
    /// [`policy`](crate::policy)).
    pub async fn connect(url: &str, config: RedisLogConfig) -> Result<Self, RedisLogError> {
        Self::on(Backend::single(url)?, config).await
    }

    /// Connects to the Redis Cluster that any of `nodes` belongs to (each
    /// `redis://host:port` or `rediss://host:port`; one reachable node is
    /// enough, the others are found from it).
    ///
    /// Each command or script goes to the primary of its session's slot
    /// (every key of a session shares its hash tag), and follows the slot
    /// when it moves or its primary fails over. A command made while the
    /// slot has no reachable primary fails with [`RedisLogError::Redis`]
    /// after the response timeout. Replication is asynchronous: a failover
    /// may lose writes the old primary had acknowledged.
    pub async fn connect_cluster<I>(nodes: I, config: RedisLogConfig) -> Result<Self, RedisLogError>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let nodes = nodes
            .into_iter()
            .map(|node| node.as_ref().trim().to_owned())
            .filter(|node| !node.is_empty())
            .collect();
        Self::on(Backend::cluster(nodes)?, config).await
    }

    async fn on(backend: Backend, config: RedisLogConfig) -> Result<Self, RedisLogError> {
        let mut conn = backend.shared().await?;
        if let Backend::Single(_) = backend {
            crate::policy::require_noeviction(&mut conn).await?;
        }
        let scripts = Scripts::new();
        let group = match backend {
            Backend::Single(_) => Some(GroupCommit::start(
                conn.clone(),
                vec![scripts.commit.clone(), scripts.quick.clone()],
            )),
            Backend::Cluster { .. } => None,
        };
        Ok(Self {
            inner: Arc::new(Inner {
                backend,
                conn,
                config,
                scripts,
                group,
            }),
        })
    }

    /// The settings.
    pub fn config(&self) -> &RedisLogConfig {
        &self.inner.config
    }

    /// One session's part of the log.
    pub fn session(&self, session: &str) -> SessionLog {
        SessionLog {
            log: self.clone(),
            keys: SessionKeys::new(&self.inner.config.prefix, session),
        }
    }

    /// A connection of its own, for blocking reads that must not hold up
    /// the shared one.
    pub(crate) async fn blocking_connection(&self) -> Result<Connection, RedisLogError> {
        let poll = self.inner.config.tail_poll;
        Ok(self.inner.backend.blocking(poll).await?)
    }

    fn conn(&self) -> Connection {
        self.inner.conn.clone()
    }

    /// The shared connection, for commands of this crate's other parts.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn connection(&self) -> Connection {
        self.conn()
    }
}

/// An event as the log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its index on its stream (`N` in `N/M`).
    pub index: u64,
    /// Its `data:` (the JSON-RPC message), or `None` for a frame that
    /// carries none (a priming event).
    pub data: Option<String>,
}

/// One consistent look at a stream: where it stands and events from a
/// position on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The stream's state, as the resume plan takes it.
    pub lookup: StreamLookup,
    /// Events from the position asked for (or from the floor, if that is
    /// later), oldest first.
    pub events: Vec<StoredEvent>,
    /// Where a reader at the position asked for goes on: that position, or,
    /// on the standalone stream, the first index of the segment a takeover
    /// began when the position follows the last id before it (no event lies
    /// between; see `lua/lease.lua`).
    pub resume_at: u64,
}

/// Where an appended event went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The event's index.
    pub index: u64,
    /// The stream's floor after the append trimmed it.
    pub floor: u64,
}

/// One write of a batch to [`SessionLog::commit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write<'a> {
    /// An event at `index` (`None`: the stream's head); an index already
    /// committed is skipped, so a batch may be retried.
    Append {
        /// The stream.
        stream: StreamId,
        /// Its index.
        index: Option<u64>,
        /// Its `data:`, if it has one.
        data: Option<&'a str>,
    },
    /// Request stream `stream` answers the request whose id is `request_id`.
    Open {
        /// The request stream.
        stream: u64,
        /// The request's id, as JSON.
        request_id: &'a str,
    },
    /// Request stream `stream` was answered.
    Finish {
        /// The request stream.
        stream: u64,
    },
}

/// One session's part of the shared log.
#[derive(Debug, Clone)]
pub struct SessionLog {
    log: RedisLog,
    keys: SessionKeys,
}

impl SessionLog {
    /// The log it belongs to.
    pub fn log(&self) -> &RedisLog {
        &self.log
    }

    /// Acquires or renews the session's lease for `owner`, an id unique to
    /// this instance's life (a restarted instance is a new owner). See
    /// [`lease`](crate::lease) for the table. Only `create` starts a session
    /// Redis does not know: a takeover never brings a deleted one back.
    pub async fn acquire(&self, owner: &str, create: bool) -> Result<LeaseOutcome, RedisLogError> {
        let mode = if create { Mode::Create } else { Mode::Take };
        self.lease(owner, mode).await
    }

    /// Keeps `lease` for `owner`, its current holder, whose lease is live
    /// by its own clock: [`renew_with`](Self::renew_with) with request
    /// stream numbers from `lowest_stream` on, and no standalone stream
    /// known.
    pub async fn renew(
        &self,
        owner: &str,
        lease: Lease,
        lowest_stream: u64,
    ) -> Result<LeaseOutcome, RedisLogError> {
        let renewal = Renewal {
            epoch: lease.epoch,
            lowest_stream,
            standalone_head: 0,
            live: true,
            confirm: false,
            open_calls: None,
        };
        self.renew_with(owner, renewal).await
    }

    /// Keeps the lease of `renewal.epoch` for `owner`, its current holder
    /// (see [`lease`](crate::lease) for the table): a lease that lapsed (a
    /// pause, a Redis blip) is taken again at the same epoch when nobody
    /// took the session since and the owner is live; a session Redis lost
    /// is seeded again at that epoch, provisionally, for a live owner only.
    /// A seeding is continued by nobody until `owner` renews with
    /// [`Renewal::confirm`].
    pub async fn renew_with(
        &self,
        owner: &str,
        renewal: Renewal,
    ) -> Result<LeaseOutcome, RedisLogError> {
        self.lease(owner, Mode::Renew(renewal)).await
    }

    /// Ends the open calls of a session whose owner's lease expired, without
    /// taking the lease: for a reader that runs no worker of the session, so
    /// that the next instance to get a request for it takes it at once.
    /// [`LeaseOutcome::Acquired`] says it fenced; a live lease is left alone.
    pub async fn fence(&self, owner: &str) -> Result<LeaseOutcome, RedisLogError> {
        self.lease(owner, Mode::Fence).await
    }

    async fn lease(&self, owner: &str, mode: Mode) -> Result<LeaseOutcome, RedisLogError> {
        let config = &self.log.inner.config;
        let idle = Renewal {
            epoch: 0,
            lowest_stream: 0,
            standalone_head: 0,
            live: true,
            confirm: false,
            open_calls: None,
        };
        let (name, renewal) = match mode {
            Mode::Create => ("create", idle),
            Mode::Take => ("take", idle),
            Mode::Renew(renewal) => ("renew", renewal),
            Mode::Fence => ("fence", idle),
        };
        let reply: Vec<i64> = self
            .log
            .inner
            .scripts
            .lease
            .key(self.keys.epoch())
            .arg(self.keys.base())
            .arg(owner)
            .arg(millis(config.lease))
            .arg(millis(config.session_ttl))
            .arg(now_millis())
            .arg(INSTANCE_LOST_ERROR)
            .arg(name)
            .arg(renewal.epoch)
            .arg(renewal.lowest_stream)
            .arg(renewal.standalone_head)
            .arg(u8::from(renewal.live))
            .arg(u8::from(renewal.confirm))
            .arg(u8::from(renewal.open_calls.is_some()))
            .arg(open_list(renewal.open_calls.as_deref()))
            .invoke_async(&mut self.log.conn())
            .await?;
        let (code, epoch, extra) = triple(&reply)?;
        let epoch = unsigned(epoch)?;
        match code {
            1 if extra > 0 => {
                tracing::info!(
                    epoch,
                    ended = extra,
                    "ended calls whose answers redis had lost"
                );
                Ok(LeaseOutcome::Renewed(Lease { epoch }))
            }
            1 => Ok(LeaseOutcome::Renewed(Lease { epoch })),
            2 => Ok(LeaseOutcome::Acquired {
                lease: Lease { epoch },
                ended_streams: unsigned(extra)?,
            }),
            3 => Ok(LeaseOutcome::Unknown),
            4 => Ok(LeaseOutcome::Deleted),
            5 => Ok(LeaseOutcome::Seeded(Lease { epoch })),
            0 => Ok(LeaseOutcome::HeldBy {
                epoch,
                remaining: Duration::from_millis(unsigned(extra.max(0))?),
            }),
            other => Err(RedisLogError::Reply(format!("lease answered {other}"))),
        }
    }

    /// Gives the lease back if `owner` holds it (a clean shutdown), so that
    /// the next instance need not wait for it to expire.
    pub async fn release(&self, owner: &str) -> Result<bool, RedisLogError> {
        let released: i64 = self
            .log
            .inner
            .scripts
            .release
            .key(self.keys.epoch())
            .arg(self.keys.base())
            .arg(owner)
            .invoke_async(&mut self.log.conn())
            .await?;
        Ok(released == 1)
    }

    /// Reserves `count` request stream numbers, unique in the session
    /// across every instance and every life of it; returns the first.
    pub async fn reserve_streams(&self, lease: Lease, count: u64) -> Result<u64, RedisLogError> {
        self.reserve_streams_from(lease, count, 0).await
    }

    /// [`reserve_streams`](Self::reserve_streams), none below `lowest`: an
    /// owner passes the end of its earlier reservations, so that a counter
    /// Redis lost (a lossy failover) never hands one of them out again.
    pub async fn reserve_streams_from(
        &self,
        lease: Lease,
        count: u64,
        lowest: u64,
    ) -> Result<u64, RedisLogError> {
        let reply: Vec<i64> = self
            .log
            .inner
            .scripts
            .reserve
            .key(self.keys.epoch())
            .arg(self.keys.base())
            .arg(lease.epoch)
            .arg(count.max(1))
            .arg(millis(self.log.inner.config.session_ttl))
            .arg(lowest)
            .invoke_async(&mut self.log.conn())
            .await?;
        match pair(&reply)? {
            (-4, _) => Err(RedisLogError::Deleted),
            (-3, _) => Err(RedisLogError::Lost),
            (-1, current) => Err(RedisLogError::Fenced {
                held: lease.epoch,
                current: unsigned(current)?,
            }),
            (first, _) => unsigned(first),
        }
    }

    /// Opens a request stream answering the JSON-RPC request whose id is
    /// `request_id` (its JSON), with a newly reserved number.
    pub async fn open_request(&self, lease: Lease, request_id: &str) -> Result<u64, RedisLogError> {
        let m = self.reserve_streams(lease, 1).await?;
        self.commit(
            lease,
            &[Write::Open {
                stream: m,
                request_id,
            }],
        )
        .await?;
        Ok(m)
    }

    /// Commits one event to `stream` at its head under `lease`, trimming
    /// the stream to its window; `finish` marks the stream answered. The
    /// event is in Redis when this returns, so it may be sent.
    ///
    /// The head is Redis's: after Redis lost data it may hand out an index
    /// given before. A writer that keeps its own indices commits them with
    /// [`commit`](Self::commit), which turns such a loss into a floor (the
    /// server's mirror does).
    pub async fn append(
        &self,
        lease: Lease,
        stream: StreamId,
        data: Option<&str>,
        finish: bool,
    ) -> Result<Appended, RedisLogError> {
        let append = Write::Append {
            stream,
            index: None,
            data,
        };
        let finish = stream
            .request()
            .filter(|_| finish)
            .map(|m| Write::Finish { stream: m });
        let writes: Vec<Write<'_>> = std::iter::once(append).chain(finish).collect();
        let committed = self.commit(lease, &writes).await?;
        if !committed.dropped.is_empty() {
            return Err(RedisLogError::Finished);
        }
        let index = committed
            .last
            .ok_or_else(|| RedisLogError::Reply("an append appended nothing".to_owned()))?;
        let floor = match self.read(stream, index, 1).await?.lookup {
            StreamLookup::Found(view) => view.floor,
            other => return Err(RedisLogError::Reply(format!("stream vanished: {other:?}"))),
        };
        Ok(Appended { index, floor })
    }

    /// Commits `writes` in order, in one round trip, under `lease`. An
    /// append to an answered stream is dropped and reported in
    /// [`Committed::dropped`], never fatal: a message that lost the race
    /// with its call's answer has no reader.
    pub async fn commit(
        &self,
        lease: Lease,
        writes: &[Write<'_>],
    ) -> Result<Committed, RedisLogError> {
        let config = &self.log.inner.config;
        if let Some(quick) = QuickCall::of(writes, config) {
            let script = &self.log.inner.scripts.quick;
            let cmd = quick.command(
                script.get_hash(),
                &self.keys,
                lease.epoch,
                millis(config.answered_ttl()),
            );
            match self.query(script, cmd).await?.as_slice() {
                [0] => return Ok(quick.committed()),
                // Redis holds the stream in the general layout: only the
                // general script tells a retry from another epoch's history.
                [-6] => {}
                [-5] => {
                    return Err(RedisLogError::Diverged {
                        stream: StreamId::Request(quick.stream()),
                        index: 0,
                    });
                }
                other => return verdict(other, lease),
            }
        }
        let script = &self.log.inner.scripts.commit;
        // Sized once: a command grows its buffers by doubling, and on a busy
        // instance the reallocations showed in the commit's profile.
        let (args, bytes) = writes.iter().fold(
            (13, 160 + 2 * self.keys.base().len()),
            |(args, bytes), write| {
                let data = match write {
                    Write::Append { data, .. } => data.map_or(0, str::len),
                    Write::Open { request_id, .. } => request_id.len(),
                    Write::Finish { .. } => 0,
                };
                (args + 4, bytes + 24 + data)
            },
        );
        let mut cmd = redis::Cmd::with_capacity(args, bytes);
        cmd.arg("EVALSHA")
            .arg(script.get_hash())
            .arg(1)
            .arg(self.keys.epoch_arg())
            .arg(self.keys.base())
            .arg(lease.epoch)
            .arg(now_millis())
            .arg(config.window.keep_events)
            .arg(config.window.max_events)
            .arg(millis(config.window.retention))
            .arg(config.max_stream_bytes)
            .arg(millis(config.session_ttl))
            .arg(millis(config.answered_ttl()));
        for write in writes {
            match write {
                Write::Append {
                    stream,
                    index,
                    data,
                } => {
                    cmd.arg("a").arg(StreamField(*stream));
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
        let reply = self.query(script, cmd).await?;
        verdict(&reply, lease)
    }

    /// `cmd`, an `EVALSHA` of `script`, in the instance's next group (on
    /// one Redis) or alone (on a cluster), and its reply.
    async fn query(&self, script: &Script, cmd: redis::Cmd) -> Result<Vec<i64>, RedisLogError> {
        let value = match &self.log.inner.group {
            Some(group) => group.query(cmd).await?,
            None => query_alone(&mut self.log.conn(), std::slice::from_ref(script), &cmd).await?,
        };
        redis::from_redis_value(value).map_err(|error| RedisLogError::Reply(error.to_string()))
    }

    /// Reads `stream`: its state and up to `count` events from `from` on,
    /// in one atomic look. The floor is Redis's own, never assumed.
    pub async fn read(
        &self,
        stream: StreamId,
        from: u64,
        count: usize,
    ) -> Result<Snapshot, RedisLogError> {
        let reply: Vec<Value> = self
            .log
            .inner
            .scripts
            .read
            .key(self.keys.epoch())
            .arg(self.keys.base())
            .arg(stream_field(stream))
            .arg(first_index(stream))
            .arg(from)
            .arg(count.max(1))
            .arg(millis(self.log.inner.config.answered_ttl()))
            .invoke_async(&mut self.log.conn())
            .await?;
        parse_snapshot(&reply, from)
    }

    /// Whether Redis knows the session (it has had an owner and was not
    /// deleted or expired).
    pub async fn exists(&self) -> Result<bool, RedisLogError> {
        let (found, gone): (bool, bool) = redis::pipe()
            .cmd("EXISTS")
            .arg(self.keys.epoch())
            .cmd("EXISTS")
            .arg(self.keys.gone())
            .query_async(&mut self.log.conn())
            .await?;
        Ok(found && !gone)
    }

    /// Forgets the session and every stream of it. The first round trip
    /// leaves a tombstone that fences the owner, wherever it runs; the
    /// streams then go [`DELETE_SLICE`] per round trip, so that a session
    /// with many calls never blocks Redis.
    pub async fn delete(&self) -> Result<(), RedisLogError> {
        let ttl = millis(self.log.inner.config.session_ttl);
        let mut from = 0_u64;
        // Each slice moves `from` forward; the stream counter bounds them.
        loop {
            let next: i64 = self
                .log
                .inner
                .scripts
                .delete
                .key(self.keys.epoch())
                .arg(self.keys.base())
                .arg(from)
                .arg(DELETE_SLICE)
                .arg(ttl)
                .invoke_async(&mut self.log.conn())
                .await?;
            match u64::try_from(next) {
                Ok(next) if next > from => from = next,
                Ok(_) => return Err(RedisLogError::Reply(format!("delete stuck at {from}"))),
                Err(_) => return Ok(()),
            }
        }
    }

    pub(crate) fn keys(&self) -> &SessionKeys {
        &self.keys
    }
}

/// Request streams one round trip of [`SessionLog::delete`] forgets.
pub const DELETE_SLICE: u64 = 512;

/// How [`SessionLog::lease`] asks for the lease.
#[derive(Debug, Clone)]
enum Mode {
    Create,
    Take,
    Renew(Renewal),
    Fence,
}

/// What one [`SessionLog::commit`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Committed {
    /// The index of the last event appended, if any.
    pub last: Option<u64>,
    /// The request stream of each append dropped because the stream was
    /// already answered: such an event is not in Redis, so it must not be
    /// sent.
    pub dropped: Vec<u64>,
    /// Streams on which Redis had lost committed events: each one's floor
    /// now starts at the first event committed after the loss.
    pub holes: u64,
}

/// What a commit script's reply says: the commit, or why it was refused.
fn verdict(reply: &[i64], lease: Lease) -> Result<Committed, RedisLogError> {
    match reply {
        [-4, ..] => Err(RedisLogError::Deleted),
        [-3, ..] => Err(RedisLogError::Lost),
        [-1, current, ..] => Err(RedisLogError::Fenced {
            held: lease.epoch,
            current: unsigned(*current)?,
        }),
        [-5, stream, index, ..] => Err(RedisLogError::Diverged {
            stream: match u64::try_from(*stream) {
                Ok(m) => StreamId::Request(m),
                Err(_) => StreamId::Standalone,
            },
            index: unsigned(*index)?,
        }),
        [0, last, holes, dropped @ ..] => Ok(Committed {
            last: (*last >= 0).then(|| unsigned(*last)).transpose()?,
            holes: unsigned(*holes)?,
            dropped: dropped
                .iter()
                .map(|m| unsigned(*m))
                .collect::<Result<_, _>>()?,
        }),
        other => Err(RedisLogError::Reply(format!("commit answered {other:?}"))),
    }
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Request stream numbers as the lease script reads them.
fn open_list(open: Option<&[u64]>) -> String {
    let mut out = String::new();
    for m in open.unwrap_or_default() {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(&m.to_string());
    }
    out
}

fn pair(reply: &[i64]) -> Result<(i64, i64), RedisLogError> {
    match reply {
        [a, b] => Ok((*a, *b)),
        other => Err(RedisLogError::Reply(format!("{other:?}"))),
    }
}

fn triple(reply: &[i64]) -> Result<(i64, i64, i64), RedisLogError> {
    match reply {
        [a, b, c] => Ok((*a, *b, *c)),
        other => Err(RedisLogError::Reply(format!("{other:?}"))),
    }
}

fn unsigned(value: i64) -> Result<u64, RedisLogError> {
    u64::try_from(value).map_err(|_| RedisLogError::Reply(format!("negative number {value}")))
}

fn integer(value: &Value) -> Result<u64, RedisLogError> {
    match value {
        Value::Int(n) => unsigned(*n),
        Value::BulkString(bytes) => std::str::from_utf8(bytes)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| RedisLogError::Reply(format!("not a number: {bytes:?}"))),
        other => Err(RedisLogError::Reply(format!("not a number: {other:?}"))),
    }
}

fn text(value: &Value) -> Result<String, RedisLogError> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone())
            .map_err(|_| RedisLogError::Reply("event data is not UTF-8".to_owned())),
        other => Err(RedisLogError::Reply(format!("not a string: {other:?}"))),
    }
}

fn parse_snapshot(reply: &[Value], from: u64) -> Result<Snapshot, RedisLogError> {
    let Some((code, rest)) = reply.split_first() else {
        return Err(RedisLogError::Reply("empty read".to_owned()));
    };
    let (lookup, resume_at) = match (integer(code)?, rest) {
        (0, _) => (StreamLookup::SessionLost, from),
        (1, _) => (StreamLookup::UnknownStream, from),
        (2, [floor, head, finished, at, ..]) => (
            StreamLookup::Found(LogView {
                floor: integer(floor)?,
                head: integer(head)?,
                finished: integer(finished)? == 1,
            }),
            integer(at)?,
        ),
        (code, _) => return Err(RedisLogError::Reply(format!("read answered {code}"))),
    };
    let entries = rest.get(4..).unwrap_or_default();
    let events = entries
        .chunks(2)
        .map(|chunk| match chunk {
            [index, data] => {
                let data = text(data)?;
                Ok(StoredEvent {
                    index: integer(index)?,
                    data: (!data.is_empty()).then_some(data),
                })
            }
            _ => Err(RedisLogError::Reply("odd event list".to_owned())),
        })
        .collect::<Result<_, _>>()?;
    Ok(Snapshot {
        lookup,
        events,
        resume_at,
    })
}
