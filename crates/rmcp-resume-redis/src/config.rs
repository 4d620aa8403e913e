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
    /// How long a request stream's events are kept after its answer, or
    /// after a read that still owed its reader events (at most
    /// `session_ttl`): as in-process (`SessionConfig::completed_cache_ttl`),
    /// so that Redis holds a finished call for a minute, not for the
    /// session's hour. A shorter one is taken as `outage_limit`, for
    /// which a commit may be retried: a retry that found its stream
    /// expired would write it again as a new one.
    pub answered_ttl: Duration,
    /// How long an owner retries a commit Redis does not take before it
    /// gives the session up (default 30 s); readers wait meanwhile.
    pub outage_limit: Duration,
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
            outage_limit: rmcp_resume_core::shared::DEFAULT_OUTAGE_LIMIT,
            tail_poll: Duration::from_millis(500),
            read_batch: 256,
        }
    }
}

impl RedisLogConfig {
    /// The shortest `answered_ttl` that `matching` takes
    /// from the in-process `completed_cache_ttl`: longer than the outage
    /// limit, for which a commit may be retried. In-process, a zero keeps
    /// an answered stream only while a reader reads it; Redis cannot see
    /// a reader that has not read yet.
    pub const MIN_MATCHED_ANSWERED_TTL: Duration = Duration::from_secs(60);

    /// `answered_ttl`, at least `outage_limit` and at most `session_ttl`.
    pub(crate) fn answered_ttl(&self) -> Duration {
        self.answered_ttl
            .max(self.outage_limit)
            .min(self.session_ttl)
    }

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
            answered_ttl: session
                .completed_cache_ttl
                .max(Self::MIN_MATCHED_ANSWERED_TTL),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answered_ttl_below_the_outage_limit_is_raised_to_it() {
        let mut config = RedisLogConfig {
            answered_ttl: Duration::from_secs(1),
            ..RedisLogConfig::default()
        };
        assert_eq!(config.answered_ttl(), Duration::from_secs(30));
        config.outage_limit = Duration::from_secs(2);
        assert_eq!(config.answered_ttl(), Duration::from_secs(2));
        config.answered_ttl = Duration::from_secs(90);
        assert_eq!(config.answered_ttl(), Duration::from_secs(90));
        // The session's own lifetime still bounds it.
        config.session_ttl = Duration::from_secs(10);
        assert_eq!(config.answered_ttl(), Duration::from_secs(10));
    }
}
