//! The shared log: one Redis stream per MCP stream.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncConnectionConfig, Client, Value};
use rmcp_resume_core::resumption::{LogView, StreamId, StreamLookup};

use crate::config::{RedisLogConfig, millis};
use crate::error::RedisLogError;
use crate::keys::{SessionKeys, first_index, stream_field};
use crate::lease::{INSTANCE_LOST_ERROR, Lease, LeaseOutcome};
use crate::scripts::Scripts;

/// A connection to the shared log, cheap to clone.
#[derive(Clone)]
pub struct RedisLog {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    conn: ConnectionManager,
    config: RedisLogConfig,
    scripts: Scripts,
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
    /// [`RedisLogError::Redis`] after the response timeout.
    pub async fn connect(url: &str, config: RedisLogConfig) -> Result<Self, RedisLogError> {
        let client = Client::open(url)?;
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(2)))
            .set_number_of_retries(2);
        let conn = client.get_connection_manager_with_config(manager).await?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                conn,
                config,
                scripts: Scripts::new(),
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
    pub(crate) async fn blocking_connection(
        &self,
    ) -> Result<redis::aio::MultiplexedConnection, RedisLogError> {
        let wait = self.inner.config.tail_poll + Duration::from_secs(2);
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(wait));
        Ok(self
            .inner
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await?)
    }

    fn conn(&self) -> ConnectionManager {
        self.inner.conn.clone()
    }

    /// The shared connection, for commands of this crate's other parts.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn connection(&self) -> ConnectionManager {
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
        let config = &self.log.inner.config;
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
            .arg(u8::from(create))
            .invoke_async(&mut self.log.conn())
            .await?;
        let (code, epoch, extra) = triple(&reply)?;
        let epoch = unsigned(epoch)?;
        match code {
            1 => Ok(LeaseOutcome::Renewed(Lease { epoch })),
            2 => Ok(LeaseOutcome::Acquired {
                lease: Lease { epoch },
                ended_streams: unsigned(extra)?,
            }),
            3 => Ok(LeaseOutcome::Unknown),
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
            .invoke_async(&mut self.log.conn())
            .await?;
        let (first, current) = pair(&reply)?;
        if first < 0 {
            return Err(RedisLogError::Fenced {
                held: lease.epoch,
                current: unsigned(current)?,
            });
        }
        unsigned(first)
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
        let index = self
            .commit(lease, &writes)
            .await?
            .ok_or_else(|| RedisLogError::Reply("an append appended nothing".to_owned()))?;
        let floor = match self.read(stream, index, 1).await?.lookup {
            StreamLookup::Found(view) => view.floor,
            other => return Err(RedisLogError::Reply(format!("stream vanished: {other:?}"))),
        };
        Ok(Appended { index, floor })
    }

    /// Commits `writes` in order, in one round trip, under `lease`. Returns
    /// the index of the last event appended, if any.
    pub async fn commit(
        &self,
        lease: Lease,
        writes: &[Write<'_>],
    ) -> Result<Option<u64>, RedisLogError> {
        let config = &self.log.inner.config;
        let script = &self.log.inner.scripts.commit;
        let mut invocation = script.key(self.keys.epoch());
        invocation
            .arg(self.keys.base())
            .arg(lease.epoch)
            .arg(now_millis())
            .arg(config.window.keep_events)
            .arg(config.window.max_events)
            .arg(millis(config.window.retention))
            .arg(config.max_stream_bytes)
            .arg(millis(config.session_ttl));
        for write in writes {
            match write {
                Write::Append {
                    stream,
                    index,
                    data,
                } => {
                    let at = index.map_or_else(|| "*".to_owned(), |i| i.to_string());
                    invocation
                        .arg("a")
                        .arg(stream_field(*stream))
                        .arg(at)
                        .arg(data.unwrap_or(""));
                }
                Write::Open { stream, request_id } => {
                    invocation.arg("o").arg(stream).arg(*request_id).arg("");
                }
                Write::Finish { stream } => {
                    invocation.arg("f").arg(stream).arg("").arg("");
                }
            }
        }
        let reply: Vec<i64> = invocation.invoke_async(&mut self.log.conn()).await?;
        match pair(&reply)? {
            (-1, current) => Err(RedisLogError::Fenced {
                held: lease.epoch,
                current: unsigned(current)?,
            }),
            (-2, _) => Err(RedisLogError::Finished),
            (_, -1) => Ok(None),
            (_, last) => Ok(Some(unsigned(last)?)),
        }
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
            .invoke_async(&mut self.log.conn())
            .await?;
        parse_snapshot(&reply)
    }

    /// Whether Redis knows the session (it has had an owner and was not
    /// deleted or expired).
    pub async fn exists(&self) -> Result<bool, RedisLogError> {
        let found: bool = redis::cmd("EXISTS")
            .arg(self.keys.epoch())
            .query_async(&mut self.log.conn())
            .await?;
        Ok(found)
    }

    /// Forgets the session and every stream of it.
    pub async fn delete(&self) -> Result<(), RedisLogError> {
        let _streams: i64 = self
            .log
            .inner
            .scripts
            .delete
            .key(self.keys.epoch())
            .arg(self.keys.base())
            .invoke_async(&mut self.log.conn())
            .await?;
        Ok(())
    }

    pub(crate) fn keys(&self) -> &SessionKeys {
        &self.keys
    }
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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

fn parse_snapshot(reply: &[Value]) -> Result<Snapshot, RedisLogError> {
    let Some((code, rest)) = reply.split_first() else {
        return Err(RedisLogError::Reply("empty read".to_owned()));
    };
    let lookup = match (integer(code)?, rest) {
        (0, _) => StreamLookup::SessionLost,
        (1, _) => StreamLookup::UnknownStream,
        (2, [floor, head, finished, ..]) => StreamLookup::Found(LogView {
            floor: integer(floor)?,
            head: integer(head)?,
            finished: integer(finished)? == 1,
        }),
        (code, _) => return Err(RedisLogError::Reply(format!("read answered {code}"))),
    };
    let entries = rest.get(3..).unwrap_or_default();
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
    Ok(Snapshot { lookup, events })
}
