//! Errors of a session and of its worker.

use std::time::Duration;

use super::compat::SessionEvent;
use super::{EventId, EventIdParseError, HttpRequestId};

crate::line::with_fork_variants! {
    with_event_store_variant;
    /// Errors of one session.
    ///
    /// A refused resume is not an error on the fork's own path (it is a
    /// [`ResumeAnswer`](crate::transport::resumption::ResumeAnswer)); the
    /// `CursorBelowFloor`, `UnknownStream` and `StreamComplete` cases exist
    /// for callers of [`LocalSessionHandle::resume_with_notice`](super::LocalSessionHandle::resume_with_notice)
    /// and upstream's `resume`.
    ///
    /// On 0.x this is upstream's exact (exhaustive) enum, and the fork's
    /// cases (those of [`ForkSessionError`]) are each an `Io` whose
    /// `io::Error` (kind `Other`) wraps the [`ForkSessionError`]; on 1.8
    /// and later (`#[non_exhaustive]`) each is a variant of its own.
    #[derive(Debug, thiserror::Error)]
    pub enum SessionError {
        /// The cursor names an event this session never produced.
        #[error("Invalid event id")]
        InvalidEventId,
        // 3.11's `EventStore(EventStoreError)` comes here (see `line`).
        /// I/O failed; on 0.x, also each of the fork's cases (see above).
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
    } + {
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

crate::line::with_fork_variants! {
with_keep_alive_variant;
/// Why a session's worker stopped.
///
/// On 0.x this is upstream's exact (exhaustive) enum: a missing
/// `initialize` and a lost ownership (the fork's `InitTimeout` and
/// `OwnershipLost`, 1.8 and later) are each a `FailToHandleMessage` whose
/// [`SessionError::Io`] wraps the [`ForkSessionError`].
#[allow(clippy::large_enum_variant)]
#[derive(Debug, thiserror::Error)]
pub enum LocalSessionWorkerError {
    /// The transport closed.
    #[error("Transport closed")]
    TransportClosed,
    // 0.15 to 2.2's `KeepAliveTimeout(Duration)` comes here (see `line`).
    /// The worker task failed.
    #[error("Tokio join error {0}")]
    TokioJoinError(#[from] tokio::task::JoinError),
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
} + {
    /// No `initialize` arrived in time (upstream's from 1.8 on).
    #[error("init timeout after {}ms", _0.as_millis())]
    InitTimeout(Duration),
    /// Another instance took the session over, or the shared log stayed
    /// unreachable: this instance may no longer write it (fork-only).
    #[error("this instance no longer owns the session")]
    OwnershipLost,
}
}

/// The fork's own cases of [`SessionError`], [`LocalSessionWorkerError`]
/// and [`LocalSessionManagerError`](super::LocalSessionManagerError)
/// (fork-only).
///
/// On 1.8 and later each converts into its enum's variant of the same name
/// (a case its enum lacks, into that enum's `Io` or `SessionError(Io)`). On
/// 0.x, whose enums are upstream's exact variants, each converts into an
/// [`SessionError::Io`] (kind `Other`) that wraps it, carried as
/// `LocalSessionManagerError::SessionError` and
/// `LocalSessionWorkerError::FailToHandleMessage` there; find it with
/// `io.get_ref().and_then(|e| e.downcast_ref::<ForkSessionError>())`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForkSessionError {
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
    /// The shared log failed, or another instance owns the session now.
    #[error("shared log: {0}")]
    Shared(#[from] rmcp_resume_core::shared::SharedLogError),
    /// Another instance owns the session: route its `POST`s there.
    #[error("session {0} is owned by another instance")]
    OwnedElsewhere(crate::transport::common::server_side_http::SessionId),
    /// No `initialize` arrived in time.
    #[error("init timeout after {}ms", _0.as_millis())]
    InitTimeout(Duration),
    /// Another instance took the session over, or the shared log stayed
    /// unreachable: this instance may no longer write it.
    #[error("this instance no longer owns the session")]
    OwnershipLost,
    /// On 0.x: one of the fork's messages to the worker (`{0}`, its debug
    /// form) came before `initialize`.
    #[error("unexpected message: {0}")]
    UnexpectedMessage(String),
}

impl ForkSessionError {
    /// The fork's case an `io::Error` carries, if it is one (on 0.x, what
    /// a [`SessionError::Io`] holds for the fork's cases).
    pub fn of_io(error: &std::io::Error) -> Option<&Self> {
        error.get_ref()?.downcast_ref::<Self>()
    }
}

crate::line::plain_0x! {
    {
        impl From<ForkSessionError> for SessionError {
            fn from(value: ForkSessionError) -> Self {
                Self::Io(std::io::Error::other(value))
            }
        }

        impl From<ForkSessionError> for LocalSessionWorkerError {
            fn from(value: ForkSessionError) -> Self {
                Self::FailToHandleMessage(value.into())
            }
        }

        impl From<rmcp_resume_core::shared::SharedLogError> for SessionError {
            fn from(value: rmcp_resume_core::shared::SharedLogError) -> Self {
                ForkSessionError::Shared(value).into()
            }
        }
    } else {
        impl From<ForkSessionError> for SessionError {
            fn from(value: ForkSessionError) -> Self {
                match value {
                    ForkSessionError::CursorBelowFloor { cursor, floor } => {
                        Self::CursorBelowFloor { cursor, floor }
                    }
                    ForkSessionError::UnknownStream { cursor } => Self::UnknownStream { cursor },
                    ForkSessionError::StreamComplete { cursor } => Self::StreamComplete { cursor },
                    ForkSessionError::Shared(error) => Self::Shared(error),
                    other => Self::Io(std::io::Error::other(other)),
                }
            }
        }

        impl From<ForkSessionError> for LocalSessionWorkerError {
            fn from(value: ForkSessionError) -> Self {
                match value {
                    ForkSessionError::InitTimeout(after) => Self::InitTimeout(after),
                    ForkSessionError::OwnershipLost => Self::OwnershipLost,
                    other => Self::FailToHandleMessage(other.into()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On every line a case of the fork's is found again where it travels:
    /// a variant of its own on 1.8 and later, inside `Io` on 0.x.
    #[test]
    fn fork_cases_are_never_lost() {
        let error = SessionError::from(ForkSessionError::OwnershipLost);
        let SessionError::Io(io) = &error else {
            panic!("not carried as Io: {error:?}");
        };
        assert!(matches!(
            ForkSessionError::of_io(io),
            Some(ForkSessionError::OwnershipLost)
        ));
        let after = Duration::from_secs(1);
        let worker = LocalSessionWorkerError::from(ForkSessionError::InitTimeout(after));
        assert!(
            worker.to_string().contains("init timeout after 1000ms"),
            "{worker}"
        );
        let cursor: EventId = "3/1".parse().expect("an event id");
        let floor: EventId = "5/1".parse().expect("an event id");
        let below = SessionError::from(ForkSessionError::CursorBelowFloor { cursor, floor });
        assert!(
            below.to_string().contains("below the replay floor 5/1"),
            "{below}"
        );
    }

    /// A malformed id is an error on every line; on 0.x upstream's variant,
    /// `InvalidIndex` for either part, and upstream's spellings (a leading
    /// `+` or zero) are ids there as upstream reads them.
    #[test]
    fn malformed_event_ids_are_refused() {
        for text in ["", "x", "7/x", "1/2/3", "-1"] {
            let error = text.parse::<EventId>().expect_err(text);
            assert!(!error.to_string().is_empty());
            crate::line::plain_0x! {
                {
                    assert!(
                        matches!(error, super::super::EventIdParseError::InvalidIndex(_)),
                        "{text}: {error:?}"
                    );
                } else {}
            }
        }
        crate::line::plain_0x! {
            {
                for (text, same) in [("05", "5"), ("+5", "5"), ("0/07", "0/7")] {
                    let parsed = text.parse::<EventId>().expect(text);
                    assert_eq!(parsed, same.parse::<EventId>().expect(same), "{text}");
                }
            } else {}
        }
    }
}
