//! How long things live in Redis, and how much each stream keeps.

use std::time::Duration;

use rmcp_resume_core::log::Window;

/// Settings of a [`RedisLog`](crate::RedisLog).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RedisLogConfig {
    /// Prefix of every key (default `rmcp-resume`).
    pub prefix: String,
    /// Each stream's window, in events and time: the same rules as the
    /// in-process log.
    pub window: Window,
    /// Bytes one stream keeps at most (the oldest go first).
    pub max_stream_bytes: usize,
    /// How long an owner holds a session without renewing its lease. An
    /// owner that dies is replaced no sooner than this.
    pub lease: Duration,
    /// How long a session's keys outlive its owner's last lease renewal
    /// (a finished call's, its answer): a session nobody uses is forgotten
    /// by Redis itself. Keep it well above `lease`: the owner renews every
    /// third of it.
    pub session_ttl: Duration,
    /// How long a request stream's events are kept after its answer (at
    /// most `session_ttl`): as long as the in-process log keeps an answered
    /// stream (`SessionConfig::completed_cache_ttl`), so that Redis holds a
    /// finished call for a minute, not for the session's hour.
    pub answered_ttl: Duration,
    /// How long one blocking read of a live tail waits before it looks at
    /// the lease again.
    pub tail_poll: Duration,
    /// Events one read returns at most.
    pub read_batch: usize,
}

impl Default for RedisLogConfig {
    fn default() -> Self {
        Self {
            prefix: "rmcp-resume".to_owned(),
            window: Window::new(64, 4096, Duration::from_secs(300)),
            max_stream_bytes: 4 << 20,
            lease: Duration::from_secs(10),
            session_ttl: Duration::from_secs(3600),
            answered_ttl: Duration::from_secs(60),
            tail_poll: Duration::from_millis(500),
            read_batch: 256,
        }
    }
}

impl RedisLogConfig {
    /// The defaults, with `prefix` for every key.
    pub fn with_prefix(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            ..Self::default()
        }
    }
}

#[cfg(feature = "rmcp")]
impl RedisLogConfig {
    /// The defaults, with the same window, byte cap per stream and
    /// answered-stream lifetime as the in-process logs of sessions
    /// configured by `session`, so that a resume finds the same floor on
    /// every instance.
    pub fn matching(
        session: &rmcp::transport::streamable_http_server::session::local::SessionConfig,
    ) -> Self {
        Self {
            window: Window::new(
                session.channel_capacity,
                session.max_replay_events,
                session.effective_replay_retention(),
            ),
            max_stream_bytes: session.max_replay_bytes,
            answered_ttl: session.completed_cache_ttl,
            ..Self::default()
        }
    }
}

/// Milliseconds, as Redis takes them; at least 1.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}
