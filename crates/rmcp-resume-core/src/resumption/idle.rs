//! When silence may be called a stall.

use std::time::Duration;

/// An idle timeout that is invalid for the server it is used against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdleTimeoutError {
    /// Not strictly greater than keep-alive interval plus write stall: a
    /// healthy but back-pressured stream would be judged stalled.
    #[error(
        "idle timeout {idle:?} must exceed the keep-alive interval {keep_alive:?} plus the allowed write stall {write_stall:?}"
    )]
    TooShort {
        /// The rejected idle timeout.
        idle: Duration,
        /// The server's keep-alive interval.
        keep_alive: Duration,
        /// The longest single write the server may block on.
        write_stall: Duration,
    },
    /// The server sends no keep-alives, so silence proves nothing.
    #[error("idle timeout {idle:?} is meaningless: the server sends no keep-alives")]
    NoKeepAlive {
        /// The rejected idle timeout.
        idle: Duration,
    },
}

/// An idle timeout proven long enough for the server's keep-alive: a stream
/// may be judged stalled only after this much time without an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct IdleTimeout(Duration);

impl IdleTimeout {
    /// Validates `idle` against the server's keep-alive interval (`None` when
    /// it sends none) and the longest write stall to tolerate.
    pub fn new(
        idle: Duration,
        keep_alive: Option<Duration>,
        write_stall: Duration,
    ) -> Result<Self, IdleTimeoutError> {
        let Some(keep_alive) = keep_alive else {
            return Err(IdleTimeoutError::NoKeepAlive { idle });
        };
        // An overflowing sum is larger than any `Duration`, so nothing exceeds it.
        match keep_alive.checked_add(write_stall) {
            Some(bound) if idle > bound => Ok(Self(idle)),
            _ => Err(IdleTimeoutError::TooShort {
                idle,
                keep_alive,
                write_stall,
            }),
        }
    }

    /// The validated duration.
    pub fn get(self) -> Duration {
        self.0
    }
}
