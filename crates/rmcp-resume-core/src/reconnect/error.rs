//! Why a resuming stream ended with an error, and why an attempt failed.

use crate::resumption::{ContinuityError, ResumptionError};

/// Why a resuming stream ended with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeStreamError<E: std::error::Error + 'static> {
    /// The reconnect proved the cursor cannot be continued.
    #[error(transparent)]
    Resumption(ResumptionError),
    /// The stream broke mid-way: ids were skipped or changed stream.
    #[error(transparent)]
    Continuity(ContinuityError),
    /// The server refused the cursor.
    #[error("server refused to resume from cursor {cursor}: {source}")]
    CursorRejected {
        /// The cursor.
        cursor: String,
        /// The refusal.
        source: E,
    },
    /// Every attempt failed and the retry policy gave up.
    #[error("gave up after {attempts} failed reconnects (cursor {}): {last}", .cursor.as_deref().unwrap_or("-"))]
    Exhausted {
        /// Consecutive failed attempts.
        attempts: usize,
        /// The cursor they used.
        cursor: Option<String>,
        /// What the last one reported.
        #[source]
        last: Box<Attempt<E>>,
    },
    /// The session is gone.
    #[error("session lost while resuming: {0}")]
    SessionLost(E),
    /// The reconnect failed for good.
    #[error(transparent)]
    Fatal(E),
    /// The stream broke the SSE syntax: resuming would replay the same bytes.
    #[error("malformed SSE stream: {0}")]
    Malformed(sse_stream::Error),
}

/// Why one attempt to read or resume a stream failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Attempt<E: std::error::Error + 'static> {
    /// The `GET` failed.
    #[error(transparent)]
    Connect(E),
    /// A resume sent nothing at all for this long.
    #[error("the resume sent nothing for {0:?}")]
    Silent(std::time::Duration),
    /// The `GET` did not answer in time.
    #[error("the reconnect did not answer within {0:?}")]
    ConnectTimeout(std::time::Duration),
    /// The open stream broke.
    #[error(transparent)]
    Transport(sse_stream::Error),
    /// The open connection carried nothing for `silence`, after keep-alive
    /// comments up to `keepalive` apart: taken for dead (a blackhole).
    #[error(
        "the connection carried nothing for {silence:?}, after keep-alives up to {keepalive:?} apart"
    )]
    Dead {
        /// How long nothing came.
        silence: std::time::Duration,
        /// The longest interval between two keep-alives in a row.
        keepalive: std::time::Duration,
    },
    /// The reconnect proved the cursor cannot be continued.
    #[error(transparent)]
    Resumption(ResumptionError),
    /// The stream broke mid-way.
    #[error(transparent)]
    Continuity(ContinuityError),
    /// The server refused the cursor.
    #[error("server refused to resume from cursor {cursor}: {source}")]
    CursorRejected {
        /// The cursor.
        cursor: String,
        /// The refusal.
        source: E,
    },
    /// An acknowledged poll closed with nothing new.
    #[error("acknowledged, nothing new yet")]
    NothingNew,
    /// The stream closed again before any new event.
    #[error("stream closed without a new event")]
    NoProgress,
    /// The stream ended.
    #[error("the stream ended")]
    Ended,
    /// A request stream went on failing to resume for longer than its
    /// deadline.
    #[error("no resume succeeded within {0:?}")]
    Deadline(std::time::Duration),
    /// The stream's opening request failed, and the retry policy allows no
    /// retry.
    #[error("the opening request failed, and the retry policy allows no retry")]
    OpeningFailed,
    /// A request stream closed before its response, with no reconnect allowed.
    #[error("the stream ended before the response, and the retry policy allows no reconnect")]
    NoReconnect,
    /// A request stream that never carried an event id cannot be resumed: a
    /// `GET` without `Last-Event-ID` would open the standalone stream instead.
    #[error("{}; the stream carried no event id to resume from", .0.as_ref() as &dyn std::fmt::Display)]
    NoCursor(Box<Attempt<E>>),
}

impl<E: std::error::Error + 'static> From<ResumeStreamError<E>> for Attempt<E> {
    fn from(error: ResumeStreamError<E>) -> Self {
        match error {
            ResumeStreamError::Resumption(e) => Self::Resumption(e),
            ResumeStreamError::Continuity(e) => Self::Continuity(e),
            ResumeStreamError::CursorRejected { cursor, source } => {
                Self::CursorRejected { cursor, source }
            }
            ResumeStreamError::Exhausted { last, .. } => *last,
            ResumeStreamError::SessionLost(e) | ResumeStreamError::Fatal(e) => Self::Connect(e),
            ResumeStreamError::Malformed(e) => Self::Transport(e),
        }
    }
}
