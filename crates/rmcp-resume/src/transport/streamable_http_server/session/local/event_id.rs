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

crate::line::upstream_non_exhaustive! {
/// Why a string is not an [`EventId`].
#[derive(Debug, Clone, thiserror::Error)]
// `#[non_exhaustive]` where upstream's is (see `line`).
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
    /// Not `N` or `N/M` (empty, extra slashes, overflow, too long, …).
    #[error("Malformed event id: {0}")]
    Malformed(CursorParseError),
}
}

impl std::str::FromStr for EventId {
    type Err = EventIdParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let id: RmcpEventId = s.parse().map_err(EventIdParseError::Malformed)?;
        Self::try_from(id).map_err(|_| {
            EventIdParseError::Malformed(CursorParseError::Overflow { id: s.to_owned() })
        })
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
