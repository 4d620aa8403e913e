//! How resumes were answered: counters, and a log line that a looping peer
//! cannot turn into a flood.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::transport::common::server_side_http::SessionId;

/// How often a failing resume may warn, per session.
const RESUME_WARN_INTERVAL: Duration = Duration::from_secs(60);

/// Sessions remembered for throttling before old entries are swept.
const THROTTLE_SWEEP_AT: usize = 4096;

/// Counts of how `GET` resumes were answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumeStats {
    /// Every event after the cursor was replayed.
    pub replayed: u64,
    /// The cursor could not be honoured; a fresh standalone stream was opened.
    pub fallback: u64,
    /// The cursor was rejected (`400`), or its stream was already complete (`204`).
    pub rejected: u64,
    /// The session was unknown (`404`).
    pub session_lost: u64,
}

/// Which counter an answer adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Counter {
    Replayed,
    Fallback,
    Rejected,
    SessionLost,
}

/// The service's resume counters and warning throttle.
#[derive(Debug, Default)]
pub(super) struct Telemetry {
    replayed: AtomicU64,
    fallback: AtomicU64,
    rejected: AtomicU64,
    session_lost: AtomicU64,
    last_warning: Mutex<Throttle>,
}

/// When each session last warned, swept of stale entries at most once per
/// interval, so a service with many failing sessions does not scan the map
/// on every resume.
#[derive(Debug, Default)]
struct Throttle {
    last: HashMap<SessionId, Instant>,
    swept: Option<Instant>,
}

impl Telemetry {
    pub(super) fn count(&self, counter: Counter) {
        let counter = match counter {
            Counter::Replayed => &self.replayed,
            Counter::Fallback => &self.fallback,
            Counter::Rejected => &self.rejected,
            Counter::SessionLost => &self.session_lost,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn stats(&self) -> ResumeStats {
        ResumeStats {
            replayed: self.replayed.load(Ordering::Relaxed),
            fallback: self.fallback.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            session_lost: self.session_lost.load(Ordering::Relaxed),
        }
    }

    /// Whether `session` may warn now: at most once per interval, so a peer
    /// retrying in a loop cannot flood the log.
    fn may_warn(&self, session: &SessionId) -> bool {
        let now = Instant::now();
        let mut throttle = self.last_warning.lock().unwrap_or_else(|p| p.into_inner());
        let due = throttle
            .swept
            .is_none_or(|at| now.duration_since(at) >= RESUME_WARN_INTERVAL);
        if throttle.last.len() > THROTTLE_SWEEP_AT && due {
            throttle
                .last
                .retain(|_, at| now.duration_since(*at) < RESUME_WARN_INTERVAL);
            throttle.swept = Some(now);
        }
        match throttle.last.get(session) {
            Some(at) if now.duration_since(*at) < RESUME_WARN_INTERVAL => false,
            _ => {
                throttle.last.insert(session.clone(), now);
                true
            }
        }
    }

    /// Forgets a session that ended.
    pub(super) fn forget(&self, session: &SessionId) {
        let mut throttle = self.last_warning.lock().unwrap_or_else(|p| p.into_inner());
        throttle.last.remove(session);
    }

    /// Sessions remembered by the warning throttle.
    #[cfg(test)]
    pub(super) fn remembered(&self) -> usize {
        let throttle = self.last_warning.lock().unwrap_or_else(|p| p.into_inner());
        throttle.last.len()
    }

    /// Logs a resume that could not honour its cursor: WARN at most once per
    /// session per interval, the rest at DEBUG.
    pub(super) fn resume_failed(
        &self,
        session: &SessionId,
        cursor: &str,
        reason: &str,
        floor: Option<&str>,
    ) {
        let floor = floor.unwrap_or("unknown");
        if self.may_warn(session) {
            tracing::warn!(session_id = %session, cursor, reason, floor, "resume could not honour Last-Event-ID");
        } else {
            tracing::debug!(session_id = %session, cursor, reason, floor, "resume could not honour Last-Event-ID (repeat)");
        }
    }
}
