//! How each session is configured.

use std::time::Duration;

crate::line::upstream_non_exhaustive! {
/// Configuration of one session.
#[derive(Debug, Clone)]
// `#[non_exhaustive]` where upstream's is (see `line`).
pub struct SessionConfig {
    /// How long a request stream stays resumable after its response.
    pub completed_cache_ttl: Duration,
    /// Events each stream keeps for replay however old they are, and the
    /// depth of the queue from the HTTP side. The fork keeps more within
    /// its budgets: every event younger than [`replay_retention`](Self::replay_retention),
    /// up to [`max_replay_events`](Self::max_replay_events).
    pub channel_capacity: usize,
    /// End the session if `initialize` does not arrive within this. Default:
    /// one minute; `None` on 0.x, whose sessions have no such deadline.
    pub init_timeout: Option<Duration>,
    /// The `retry` sent in priming events. Default: three seconds; `None`
    /// on 0.x, where the service's `sse_retry` is the one sent.
    pub sse_retry: Option<Duration>,
    /// End the session after this long without any activity; a connected
    /// standalone `GET` counts as activity. Default: five minutes; `None`
    /// on 0.x, whose sessions live until deleted.
    pub keep_alive: Option<Duration>,
    /// Answered request streams kept resumable at once; beyond this the
    /// oldest is forgotten before its `completed_cache_ttl` (fork-only).
    pub max_completed_streams: usize,
    /// How long a connected reader may hold its stream back without reading
    /// before its connection is ended (fork-only). Until then its stream's
    /// handler waits instead of losing an event the reader has not read; the
    /// rest of the session is not held back.
    pub reader_stall_timeout: Duration,
    /// Each stream keeps every event younger than this, so a client that
    /// reconnects within the `retry` it was told finds its cursor (within
    /// the byte budgets). `None`: twice `sse_retry`, or
    /// [`DEFAULT_REPLAY_RETENTION`](Self::DEFAULT_REPLAY_RETENTION) without
    /// one (fork-only).
    pub replay_retention: Option<Duration>,
    /// The hard cap on events one stream keeps (fork-only).
    pub max_replay_events: usize,
    /// Bytes of events one session keeps for replay, across its streams
    /// (fork-only). Past it the session's oldest events go first; a message
    /// whose bytes only unread events hold waits for its readers.
    pub max_replay_bytes: usize,
    /// Bytes of events all sessions of one [`LocalSessionManager`](super::LocalSessionManager)
    /// keep for replay (fork-only). Past it, a session evicts its own oldest
    /// events before adding one, never another session's.
    pub max_replay_bytes_total: usize,
    /// What the manager's sessions share (its shared log, its replay
    /// meter): here, not in the manager, because 0.x's manager literal
    /// names two fields only. Filled by `..Default::default()`.
    #[doc(hidden)]
    pub __manager: super::manager_state::ManagerState,
}
}

impl SessionConfig {
    /// Default `completed_cache_ttl`: one minute.
    pub const DEFAULT_COMPLETED_CACHE_TTL: Duration = Duration::from_secs(60);
    /// `init_timeout` on 1.8 and later: one minute.
    pub const DEFAULT_INIT_TIMEOUT: Duration = Self::DEFAULT_COMPLETED_CACHE_TTL;
    /// Default `channel_capacity`.
    pub const DEFAULT_CHANNEL_CAPACITY: usize = 16;
    /// `sse_retry` on 1.8 and later: three seconds.
    pub const DEFAULT_SSE_RETRY: Duration = Duration::from_millis(3_000);
    /// `keep_alive` on 1.8 and later: five minutes.
    pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(5 * 60);
    /// Default `max_completed_streams`.
    pub const DEFAULT_MAX_COMPLETED_STREAMS: usize = 1024;
    /// Default `reader_stall_timeout`: ten seconds.
    pub const DEFAULT_READER_STALL_TIMEOUT: Duration = Duration::from_secs(10);
    /// `replay_retention` without an `sse_retry`: six seconds.
    pub const DEFAULT_REPLAY_RETENTION: Duration = Duration::from_secs(6);
    /// Default `max_replay_events`.
    pub const DEFAULT_MAX_REPLAY_EVENTS: usize = 4096;
    /// Default `max_replay_bytes`: 2 MiB.
    pub const DEFAULT_MAX_REPLAY_BYTES: usize = 2 << 20;
    /// Default `max_replay_bytes_total`: 256 MiB.
    pub const DEFAULT_MAX_REPLAY_BYTES_TOTAL: usize = 256 << 20;

    /// The retention in effect: [`replay_retention`](Self::replay_retention),
    /// else twice `sse_retry`, else the default.
    pub fn effective_replay_retention(&self) -> Duration {
        self.replay_retention.unwrap_or_else(|| {
            self.sse_retry
                .map_or(Self::DEFAULT_REPLAY_RETENTION, |retry| {
                    retry.saturating_mul(2)
                })
        })
    }
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            completed_cache_ttl: Self::DEFAULT_COMPLETED_CACHE_TTL,
            channel_capacity: Self::DEFAULT_CHANNEL_CAPACITY,
            // Upstream's per line: 1.8 and later set all three; 0.x sets
            // none (its sessions live until deleted, and its `retry` is the
            // service's `sse_retry`, which the POST path writes).
            init_timeout: crate::line::SESSION_INIT_TIMEOUT,
            sse_retry: crate::line::SESSION_SSE_RETRY,
            keep_alive: crate::line::SESSION_KEEP_ALIVE,
            max_completed_streams: Self::DEFAULT_MAX_COMPLETED_STREAMS,
            reader_stall_timeout: Self::DEFAULT_READER_STALL_TIMEOUT,
            replay_retention: None,
            max_replay_events: Self::DEFAULT_MAX_REPLAY_EVENTS,
            max_replay_bytes: Self::DEFAULT_MAX_REPLAY_BYTES,
            max_replay_bytes_total: Self::DEFAULT_MAX_REPLAY_BYTES_TOTAL,
            __manager: Default::default(),
        }
    }
}
