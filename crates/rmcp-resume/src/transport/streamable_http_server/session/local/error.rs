//! Errors of a session and of its worker.

use std::time::Duration;

use super::compat::SessionEvent;
use super::{EventId, EventIdParseError, HttpRequestId};

crate::line::with_event_store_variant! {
    /// Errors of one session.
    ///
    /// A refused resume is not an error on the fork's own path (it is a
    /// [`ResumeAnswer`](crate::transport::resumption::ResumeAnswer)); the
    /// `CursorBelowFloor`, `UnknownStream` and `StreamComplete` variants exist
    /// for callers of [`LocalSessionHandle::resume_with_notice`](super::LocalSessionHandle::resume_with_notice)
    /// and upstream's `resume`.
    // `#[non_exhaustive]` where upstream's is (see `line`).
    #[derive(Debug, thiserror::Error)]
    pub enum SessionError {
        /// The cursor names an event this session never produced.
        #[error("Invalid event id")]
        InvalidEventId,
        // 3.11's `EventStore(EventStoreError)` comes here (see `line`).
        /// The events after the cursor were evicted from the stream's log.
        #[error("cursor {cursor} is below the replay floor {floor} of its stream")]
        CursorBelowFloor {
            /// The cursor asked for.
            cursor: EventId,
            /// The oldest event still retained.
            floor: EventId,
        },
        /// The cursor's request stream never existed, or its retention expired.
        #[error("cursor {cursor} names a request stream this session does not have")]
        UnknownStream {
            /// The cursor asked for.
            cursor: EventId,
        },
        /// The cursor's request stream is complete and everything was delivered.
        #[error("stream of cursor {cursor} is complete; nothing follows it")]
        StreamComplete {
            /// The cursor asked for.
            cursor: EventId,
        },
        /// I/O failed.
        #[error("IO error: {0}")]
        Io(#[from] std::io::Error),
        /// The session's worker has stopped.
        #[error("Session service terminated")]
        SessionServiceTerminated,
        /// An event id did not parse.
        #[error("Cannot parse event id: {0}")]
        EventIdParseError(#[from] EventIdParseError),
        /// The request stream is gone.
        #[error("Channel closed: {0:?}")]
        ChannelClosed(Option<HttpRequestId>),
        /// A request stream number was reused.
        #[error("Invalid request id: {0}")]
        DuplicatedRequestId(HttpRequestId),
        /// The cursor was issued to another session (fork-only).
        #[error("the cursor was issued to another session")]
        ForeignCursor,
        /// The event store holds nothing after the cursor: it is unknown to
        /// the store, was evicted, or its stream is drained; the store cannot
        /// say which (fork-only).
        #[error("the event store holds nothing after the cursor (unknown, evicted or drained)")]
        StoreHasNothingAfter,
        /// The shared log failed, or another instance owns the session now
        /// (fork-only).
        #[error("shared log: {0}")]
        Shared(#[from] rmcp_resume_core::shared::SharedLogError),
    }
}

impl From<SessionError> for std::io::Error {
    fn from(value: SessionError) -> Self {
        match value {
            SessionError::Io(io) => io,
            other => std::io::Error::other(format!("Session error: {other}")),
        }
    }
}

crate::line::with_keep_alive_variant! {
/// Why a session's worker stopped.
#[allow(clippy::large_enum_variant)]
// `#[non_exhaustive]` where upstream's is (see `line`).
#[derive(Debug, thiserror::Error)]
pub enum LocalSessionWorkerError {
    /// The transport closed.
    #[error("Transport closed")]
    TransportClosed,
    // 0.15 to 2.2's `KeepAliveTimeout(Duration)` comes here (see `line`).
    /// The worker task failed.
    #[error("Tokio join error {0}")]
    TokioJoinError(#[from] tokio::task::JoinError),
    /// No `initialize` arrived in time.
    #[error("init timeout after {}ms", _0.as_millis())]
    InitTimeout(Duration),
    /// A message from the handler could not be routed.
    #[error("fail to handle message: {0}")]
    FailToHandleMessage(SessionError),
    /// The initialize answer could not be delivered.
    #[error("fail to send initialize request {0}")]
    FailToSendInitializeRequest(SessionError),
    /// Something other than `initialize` came first.
    #[error("unexpected message: {0:?}")]
    UnexpectedEvent(SessionEvent),
    /// Every handle is gone.
    #[error("transport terminated")]
    TransportTerminated,
    /// Another instance took the session over, or the shared log stayed
    /// unreachable: this instance may no longer write it (fork-only).
    #[error("this instance no longer owns the session")]
    OwnershipLost,
}
}
