//! The ids of a session's events: `N` on the standalone stream, `N/M` on
//! request stream `M`.

use std::num::ParseIntError;

use super::HttpRequestId;
use crate::transport::resumption::{CursorParseError, RmcpEventId, StreamId};

/// The id of an event on one of a session's streams: `index` on the
/// standalone stream, `index/M` on request stream `M`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventId {
    index: usize,
    http_request_id: Option<HttpRequestId>,
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.rmcp().fmt(f)
    }
}

crate::line::with_fork_variants! {
upstream_non_exhaustive;
/// Why a string is not an [`EventId`].
///
/// On 0.x this is upstream's exact (exhaustive) enum, and [`EventId`]
/// parses as upstream 0.x does: every failure is `InvalidIndex`, with the
/// `ParseIntError` of the part that is not a number. On 1.8 and later an
/// id that is not `N` or `N/M` is `Malformed`. The fork's own reason is
/// what parsing it as a [`RmcpEventId`] returns.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EventIdParseError {
    /// The index is not a number.
    #[error("Invalid index: {0}")]
    InvalidIndex(ParseIntError),
    /// The request id is not a number.
    #[error("Invalid numeric request id: {0}")]
    InvalidNumericRequestId(ParseIntError),
    /// Kept for compatibility with upstream; not produced.
    #[error("Missing request id type")]
    InvalidRequestIdType,
    /// Kept for compatibility with upstream; not produced.
    #[error("Missing request id")]
    MissingRequestId,
} + {
    /// Not `N` or `N/M` (empty, extra slashes, overflow, too long, …).
    #[error("Malformed event id: {0}")]
    Malformed(CursorParseError),
}
}

impl std::str::FromStr for EventId {
    type Err = EventIdParseError;

    crate::line::plain_0x! {
        {
            /// Upstream 0.x's parse, as it is: `usize` and `u64` as the
            /// standard library reads them (a leading `+` or zero is
            /// accepted), and every failure `InvalidIndex`. The fork's
            /// server reads `Last-Event-ID` as an [`RmcpEventId`] before
            /// this, which refuses those spellings.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let (index, request) = match s.split_once('/') {
                    Some((index, request)) => (index, Some(request)),
                    None => (s, None),
                };
                let index = index
                    .parse::<usize>()
                    .map_err(EventIdParseError::InvalidIndex)?;
                let http_request_id = request
                    .map(str::parse::<HttpRequestId>)
                    .transpose()
                    .map_err(EventIdParseError::InvalidIndex)?;
                Ok(Self {
                    index,
                    http_request_id,
                })
            }
        } else {
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let id: RmcpEventId = s
                    .parse()
                    .map_err(|cause| EventIdParseError::malformed(s, cause))?;
                Self::try_from(id).map_err(|_| {
                    EventIdParseError::malformed(s, CursorParseError::Overflow { id: s.to_owned() })
                })
            }
        }
    }
}

impl EventIdParseError {
    crate::line::plain_0x! {
        {
            /// `text` is no event id: upstream's report of it, always
            /// `InvalidIndex` (see the enum).
            pub(crate) fn malformed(text: &str, _cause: CursorParseError) -> Self {
                let (index, request) = match text.split_once('/') {
                    Some((index, request)) => (index, Some(request)),
                    None => (text, None),
                };
                let error = index
                    .parse::<u64>()
                    .err()
                    .or_else(|| request.and_then(|r| r.parse::<u64>().err()))
                    .unwrap_or_else(|| {
                        // Both parts are numbers, yet the id is refused (too
                        // long): reported as upstream reports a bad digit.
                        match "x".parse::<u64>() {
                            Err(error) => error,
                            Ok(_) => unreachable!("\"x\" is no number"),
                        }
                    });
                Self::InvalidIndex(error)
            }
        } else {
            /// `text` is no event id, for `cause`.
            pub(crate) fn malformed(_text: &str, cause: CursorParseError) -> Self {
                Self::Malformed(cause)
            }
        }
    }
}

impl TryFrom<RmcpEventId> for EventId {
    type Error = std::num::TryFromIntError;

    fn try_from(id: RmcpEventId) -> Result<Self, Self::Error> {
        Ok(Self {
            index: usize::try_from(id.index)?,
            http_request_id: id.stream,
        })
    }
}

impl EventId {
    /// The id in the core's terms.
    pub fn rmcp(&self) -> RmcpEventId {
        RmcpEventId {
            index: self.index as u64,
            stream: self.http_request_id,
        }
    }

    /// The stream the id belongs to.
    pub fn stream(&self) -> StreamId {
        self.http_request_id.into()
    }
}
