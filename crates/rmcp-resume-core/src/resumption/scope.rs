//! The two kinds of stream a session has.

use super::cursor::RmcpEventId;

/// Which kind of stream an event or a resume belongs to; they fail
/// differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StreamScope {
    /// A request stream carries one JSON-RPC request's response (and the
    /// notifications about it): it must deliver that response or fail.
    Request,
    /// The standalone stream (the session's `GET`) carries everything else:
    /// it may start afresh, losing events, if the application is told.
    Standalone,
}

/// One stream of a session, as named in rmcp's event ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamId {
    /// The standalone stream: ids `N`.
    Standalone,
    /// Request stream `M`: ids `N/M`.
    Request(u64),
}

impl StreamId {
    /// The kind of stream.
    pub const fn scope(self) -> StreamScope {
        match self {
            Self::Standalone => StreamScope::Standalone,
            Self::Request(_) => StreamScope::Request,
        }
    }

    /// The id of event `index` on this stream.
    pub const fn event(self, index: u64) -> RmcpEventId {
        match self {
            Self::Standalone => RmcpEventId::standalone(index),
            Self::Request(m) => RmcpEventId::on_request_stream(index, m),
        }
    }

    /// The request stream's number, or `None` for the standalone stream.
    pub const fn request(self) -> Option<u64> {
        match self {
            Self::Standalone => None,
            Self::Request(m) => Some(m),
        }
    }
}

impl From<Option<u64>> for StreamId {
    fn from(stream: Option<u64>) -> Self {
        stream.map_or(Self::Standalone, Self::Request)
    }
}

impl RmcpEventId {
    /// The stream this id belongs to.
    pub const fn stream_id(self) -> StreamId {
        match self.stream {
            None => StreamId::Standalone,
            Some(m) => StreamId::Request(m),
        }
    }
}
