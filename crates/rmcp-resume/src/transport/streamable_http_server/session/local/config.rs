//! How each session is configured.

use std::time::Duration;

crate::line::with_fork_fields! {
/// Configuration of one session.
///
/// On 0.x exactly upstream's two fields, so that an application's full
/// literal and destructure compile; the fork's settings are then
/// [`ReplaySettings`], given with
/// [`LocalSessionManager::with_replay_settings`](super::LocalSessionManager::with_replay_settings).
/// On 1.8 and later (`#[non_exhaustive]` there) the fork's settings are
/// fields here as well, as [`ReplaySettings`] documents them.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Events each stream keeps for replay however old they are, and the
    /// depth of the queue from the HTTP side. The fork keeps more within
    /// its budgets (see [`ReplaySettings`]).
    pub channel_capacity: usize,
    /// End the session after this long without any activity; a connected
    /// standalone `GET` counts as activity. Default: five minutes; `None`
    /// on 0.x, whose sessions live until deleted.
    pub keep_alive: Option<Duration>,
} + {
    /// See [`ReplaySettings::completed_cache_ttl`].
    pub completed_cache_ttl: Duration,
    /// See [`ReplaySettings::init_timeout`].
    pub init_timeout: Option<Duration>,
    /// See [`ReplaySettings::sse_retry`].
    pub sse_retry: Option<Duration>,
    /// See [`ReplaySettings::max_completed_streams`].
    pub max_completed_streams: usize,
    /// See [`ReplaySettings::reader_stall_timeout`].
    pub reader_stall_timeout: Duration,
    /// See [`ReplaySettings::replay_retention`].
    pub replay_retention: Option<Duration>,
    /// See [`ReplaySettings::max_replay_events`].
    pub max_replay_events: usize,
    /// See [`ReplaySettings::max_replay_bytes`].
    pub max_replay_bytes: usize,
    /// See [`ReplaySettings::max_replay_bytes_total`].
    pub max_replay_bytes_total: usize,
    /// What the manager's sessions share (its shared log, its replay
    /// meter): here, not in the manager, because the manager is
    /// `#[non_exhaustive]` only from 1.8 on, and one source serves every
    /// line. Filled by `Default`.
    #[doc(hidden)]
    pub __manager: super::manager_state::ManagerState,
}
}

/// The fork's settings of a manager's sessions, beside upstream's
/// [`SessionConfig`] (fork-only).
///
/// On 0.x, whose `SessionConfig` has upstream's two fields only, these are
/// given with [`LocalSessionManager::with_replay_settings`](super::LocalSessionManager::with_replay_settings);
/// a manager built without them (a literal, `default()`) runs with
/// `ReplaySettings::default()`. On 1.8 and later they are `SessionConfig`'s
/// fields too, and `with_replay_settings` sets those.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReplaySettings {
    /// How long a request stream stays resumable after its response.
    /// Default: [`SessionConfig::DEFAULT_COMPLETED_CACHE_TTL`].
    pub completed_cache_ttl: Duration,
    /// End the session if `initialize` does not arrive within this. Default:
    /// one minute; `None` on 0.x, whose sessions have no such deadline.
    pub init_timeout: Option<Duration>,
    /// The `retry` sent in priming events. Default: three seconds; `None`
    /// on 0.x, where the service's `sse_retry` is the one sent.
    pub sse_retry: Option<Duration>,
    /// Answered request streams kept resumable at once; beyond this the
    /// oldest is forgotten before its `completed_cache_ttl`.
    pub max_completed_streams: usize,
    /// How long a connected reader may hold its stream back without reading
    /// before its connection is ended. Until then its stream's handler
    /// waits instead of losing an event the reader has not read; the rest
    /// of the session is not held back.
    pub reader_stall_timeout: Duration,
    /// Each stream keeps every event younger than this, so a client that
    /// reconnects within the `retry` it was told finds its cursor (within
    /// the byte budgets). `None`: twice `sse_retry`, or
    /// [`SessionConfig::DEFAULT_REPLAY_RETENTION`] without one.
    pub replay_retention: Option<Duration>,
    /// The hard cap on events one stream keeps.
    pub max_replay_events: usize,
    /// Bytes of events one session keeps for replay, across its streams.
    /// Past it the session's oldest events go first; a message whose bytes
    /// only unread events hold waits for its readers.
    pub max_replay_bytes: usize,
    /// Bytes of events all sessions of one manager keep for replay. Past
    /// it, a session evicts its own oldest events before adding one, never
    /// another session's. On 0.x, the managers built without
    /// `with_replay_settings` share one such budget per process.
    pub max_replay_bytes_total: usize,
}

impl Default for ReplaySettings {
    fn default() -> Self {
        Self {
            completed_cache_ttl: SessionConfig::DEFAULT_COMPLETED_CACHE_TTL,
            // Upstream's per line: 1.8 and later set both; 0.x sets
            // neither (its `retry` is the service's `sse_retry`, which the
            // POST path writes).
            init_timeout: crate::line::SESSION_INIT_TIMEOUT,
            sse_retry: crate::line::SESSION_SSE_RETRY,
            max_completed_streams: SessionConfig::DEFAULT_MAX_COMPLETED_STREAMS,
            reader_stall_timeout: SessionConfig::DEFAULT_READER_STALL_TIMEOUT,
            replay_retention: None,
            max_replay_events: SessionConfig::DEFAULT_MAX_REPLAY_EVENTS,
            max_replay_bytes: SessionConfig::DEFAULT_MAX_REPLAY_BYTES,
            max_replay_bytes_total: SessionConfig::DEFAULT_MAX_REPLAY_BYTES_TOTAL,
        }
    }
}

impl ReplaySettings {
    /// The retention in effect: [`replay_retention`](Self::replay_retention),
    /// else twice `sse_retry`, else the default.
    pub fn effective_replay_retention(&self) -> Duration {
        self.replay_retention.unwrap_or_else(|| {
            self.sse_retry
                .map_or(SessionConfig::DEFAULT_REPLAY_RETENTION, |retry| {
                    retry.saturating_mul(2)
                })
        })
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
}

crate::line::plain_0x! {
    {
        impl Default for SessionConfig {
            fn default() -> Self {
                Self {
                    channel_capacity: Self::DEFAULT_CHANNEL_CAPACITY,
                    keep_alive: crate::line::SESSION_KEEP_ALIVE,
                }
            }
        }

        impl SessionConfig {
            /// The fork's settings a manager built from this alone runs with:
            /// the defaults (0.x's config has no room for them).
            pub(crate) fn replay_settings(&self) -> ReplaySettings {
                ReplaySettings::default()
            }
        }
    } else {
        impl Default for SessionConfig {
            fn default() -> Self {
                let ReplaySettings {
                    completed_cache_ttl,
                    init_timeout,
                    sse_retry,
                    max_completed_streams,
                    reader_stall_timeout,
                    replay_retention,
                    max_replay_events,
                    max_replay_bytes,
                    max_replay_bytes_total,
                } = ReplaySettings::default();
                Self {
                    channel_capacity: Self::DEFAULT_CHANNEL_CAPACITY,
                    keep_alive: crate::line::SESSION_KEEP_ALIVE,
                    completed_cache_ttl,
                    init_timeout,
                    sse_retry,
                    max_completed_streams,
                    reader_stall_timeout,
                    replay_retention,
                    max_replay_events,
                    max_replay_bytes,
                    max_replay_bytes_total,
                    __manager: Default::default(),
                }
            }
        }

        impl SessionConfig {
            /// The retention in effect: [`replay_retention`](Self::replay_retention),
            /// else twice `sse_retry`, else the default.
            pub fn effective_replay_retention(&self) -> Duration {
                self.replay_settings().effective_replay_retention()
            }

            /// The fork's settings, as this config's fields hold them.
            pub(crate) fn replay_settings(&self) -> ReplaySettings {
                ReplaySettings {
                    completed_cache_ttl: self.completed_cache_ttl,
                    init_timeout: self.init_timeout,
                    sse_retry: self.sse_retry,
                    max_completed_streams: self.max_completed_streams,
                    reader_stall_timeout: self.reader_stall_timeout,
                    replay_retention: self.replay_retention,
                    max_replay_events: self.max_replay_events,
                    max_replay_bytes: self.max_replay_bytes,
                    max_replay_bytes_total: self.max_replay_bytes_total,
                }
            }

            /// Sets the fork's fields from `settings`.
            pub(crate) fn set_replay_settings(&mut self, settings: ReplaySettings) {
                let ReplaySettings {
                    completed_cache_ttl,
                    init_timeout,
                    sse_retry,
                    max_completed_streams,
                    reader_stall_timeout,
                    replay_retention,
                    max_replay_events,
                    max_replay_bytes,
                    max_replay_bytes_total,
                } = settings;
                self.completed_cache_ttl = completed_cache_ttl;
                self.init_timeout = init_timeout;
                self.sse_retry = sse_retry;
                self.max_completed_streams = max_completed_streams;
                self.reader_stall_timeout = reader_stall_timeout;
                self.replay_retention = replay_retention;
                self.max_replay_events = max_replay_events;
                self.max_replay_bytes = max_replay_bytes;
                self.max_replay_bytes_total = max_replay_bytes_total;
            }
        }
    }
}
