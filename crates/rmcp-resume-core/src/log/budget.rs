//! What a log may keep: its window in events and time, and the byte budgets
//! it shares with the rest of its session and its process.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::sync::{AtomicBool, AtomicUsize};
use std::time::Duration;

/// One stream's replay window.
///
/// The oldest event is evicted only when no connected reader still needs it,
/// and then only when one of these holds:
///
/// | Condition | Why |
/// |---|---|
/// | more than `max_events` are retained | the backstop count cap |
/// | more than `keep_events` are retained and the oldest is older than `retention` | the window in time: a resume within `retention` finds its cursor |
/// | the session or the process is over its byte [`Budget`] | memory is bounded (the session's owner evicts, oldest first) |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Window {
    /// Events kept however old they are (within the byte budgets).
    pub keep_events: usize,
    /// The hard cap on retained events.
    pub max_events: usize,
    /// Events younger than this are kept (within the caps and budgets).
    pub retention: Duration,
}

impl Window {
    /// The last `events` events, nothing more: a count window.
    pub fn events(events: usize) -> Self {
        let events = events.max(1);
        Self {
            keep_events: events,
            max_events: events,
            retention: Duration::ZERO,
        }
    }

    /// The last `keep_events` events and every event younger than
    /// `retention`, at most `max_events`.
    pub fn new(keep_events: usize, max_events: usize, retention: Duration) -> Self {
        let keep_events = keep_events.max(1);
        Self {
            keep_events,
            max_events: max_events.max(keep_events),
            retention,
        }
    }
}

/// A byte meter with a limit, shared by the logs it bounds.
#[derive(Debug)]
pub struct Meter {
    used: AtomicUsize,
    limit: usize,
}

impl Meter {
    /// A meter allowing `limit` bytes.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            used: AtomicUsize::new(0),
            limit,
        })
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether `more` bytes would take the meter past its limit.
    pub fn would_exceed(&self, more: usize) -> bool {
        self.used().saturating_add(more) > self.limit
    }

    fn add(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::Relaxed);
    }

    fn sub(&self, bytes: usize) {
        // Every subtraction matches an earlier addition.
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(bytes))
            });
    }
}

/// The byte budgets a log counts against: its session's and, when set, the
/// process's. Cloning shares the meters.
#[derive(Debug, Clone)]
pub struct Budget {
    session: Arc<Meter>,
    process: Option<Arc<Meter>>,
    /// A message of the session waits for bytes to be freed: readers say
    /// when they have read.
    starved: Arc<AtomicBool>,
}

impl Budget {
    /// A session budget of `session` bytes, within `process` when given.
    pub fn new(session: usize, process: Option<Arc<Meter>>) -> Self {
        Self {
            session: Meter::new(session),
            process,
            starved: Arc::new(AtomicBool::new(false)),
        }
    }

    /// No byte limit.
    pub fn unlimited() -> Self {
        Self::new(usize::MAX, None)
    }

    /// The session's meter.
    pub fn session(&self) -> &Meter {
        &self.session
    }

    /// The process's meter, when there is one.
    pub fn process(&self) -> Option<&Meter> {
        self.process.as_deref()
    }

    /// Whether admitting `more` bytes needs an eviction first.
    pub fn would_exceed(&self, more: usize) -> bool {
        self.session.would_exceed(more)
            || self.process.as_ref().is_some_and(|p| p.would_exceed(more))
    }

    /// Marks the session as waiting for readers to free bytes (or not).
    pub fn set_starved(&self, starved: bool) {
        self.starved.store(starved, Ordering::Relaxed);
    }

    /// Whether the session waits for readers to free bytes.
    pub fn is_starved(&self) -> bool {
        self.starved.load(Ordering::Relaxed)
    }

    pub(super) fn add(&self, bytes: usize) {
        self.session.add(bytes);
        if let Some(process) = &self.process {
            process.add(bytes);
        }
    }

    pub(super) fn sub(&self, bytes: usize) {
        self.session.sub(bytes);
        if let Some(process) = &self.process {
            process.sub(bytes);
        }
    }
}
