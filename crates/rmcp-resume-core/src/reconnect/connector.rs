//! What the reconnect machine needs from the outside: a way to issue the
//! `GET`, and a retry policy.

use std::fmt::Debug;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use http::StatusCode;
use sse_stream::Sse;

use crate::resumption::StreamScope;

/// An open SSE response, as parsed frames.
pub type SseFrames = BoxStream<'static, Result<Sse, sse_stream::Error>>;

/// What a failed reconnect means for the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReconnectDisposition {
    /// Transient: try again, at once the first time, then after the
    /// policy's delay.
    Retry,
    /// The server still counts the stream's previous connection as open
    /// (`409`): try again, spaced ever wider, until it lets go or
    /// `conflict_wait` runs out. Not counted toward
    /// `max_transport_failures`: it ends by time, not by count.
    Conflict,
    /// The server is overloaded or limiting the rate (`429`, `503`): wait
    /// its `Retry-After`, else the policy's delay, before trying again;
    /// never at once.
    Busy,
    /// The server refused the cursor (for example `400`): resuming with it
    /// again cannot succeed.
    CursorRejected,
    /// The server failed (a `5xx` other than a gateway's `502`, `503` or
    /// `504`). To a resume, that is a failed resume, counted toward
    /// `max_failed_resumes`: upstream rmcp 0.15 to 0.17 answer a cursor
    /// they cannot replay with a `500`. To a `GET` without a cursor, it is
    /// transient, as `Retry`.
    ServerError,
    /// The session is gone (`404`): the caller must re-initialize.
    SessionLost,
    /// Nothing will help (authentication, `405`, …): stop.
    Terminate,
}

impl ReconnectDisposition {
    /// What an HTTP status on a reconnect means.
    ///
    /// | Status | Disposition |
    /// |---|---|
    /// | `404`, `410` | `SessionLost` |
    /// | `401`, `403`, `405` | `Terminate` |
    /// | `409` | `Conflict` |
    /// | `408`, `425` | `Retry` |
    /// | `429`, `503` | `Busy` |
    /// | any other `4xx` (`400` for a refused cursor, …) | `CursorRejected` |
    /// | `502`, `504` (a gateway's) | `Retry` |
    /// | any other `5xx` | `ServerError` |
    /// | anything else | `Retry` |
    ///
    /// `409` is the TypeScript SDK's answer while it still counts the cut
    /// connection of the same stream as open: for a moment while it cleans
    /// it up, or until it finds a half-open connection dead.
    pub fn for_status(status: StatusCode) -> Self {
        match status {
            StatusCode::NOT_FOUND | StatusCode::GONE => Self::SessionLost,
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::METHOD_NOT_ALLOWED => {
                Self::Terminate
            }
            StatusCode::CONFLICT => Self::Conflict,
            StatusCode::REQUEST_TIMEOUT | StatusCode::TOO_EARLY => Self::Retry,
            StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => Self::Busy,
            status if status.is_client_error() => Self::CursorRejected,
            StatusCode::BAD_GATEWAY | StatusCode::GATEWAY_TIMEOUT => Self::Retry,
            status if status.is_server_error() => Self::ServerError,
            _ => Self::Retry,
        }
    }
}

/// Opens the SSE stream again, resuming from a cursor when given one.
pub trait Connector: Send + 'static {
    /// Why a reconnect failed.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Issues the `GET`, with `Last-Event-ID: cursor` when present.
    fn connect(
        &mut self,
        cursor: Option<&str>,
    ) -> BoxFuture<'static, Result<SseFrames, Self::Error>>;

    /// Classifies a failed reconnect.
    fn classify(&self, _error: &Self::Error) -> ReconnectDisposition {
        ReconnectDisposition::Retry
    }

    /// How long the server asked the client to wait (`Retry-After`), where
    /// the failed reconnect says.
    fn retry_after(&self, _error: &Self::Error) -> Option<Duration> {
        None
    }

    /// Whether a broken stream broke for good: the same bytes would break
    /// it again (an event over the client's size limit, say), so resuming
    /// cannot help. Breaks in transit are not final.
    fn break_is_final(&self, _error: &sse_stream::Error) -> bool {
        false
    }

    /// The span of one line the stream of `scope` logs, under `parent` (the
    /// span current when the stream started). Made per line, not per
    /// stream: a healthy stream logs nothing, and a span at the level of its
    /// warnings would cost every call its creation (and a formatting
    /// subscriber its fields) for nothing. Override to add fields (the
    /// session, the request), and pass the span through [`or_parent`], so
    /// that a filter that leaves it out does not make the line a root.
    fn span(&self, scope: StreamScope, parent: &tracing::Span) -> tracing::Span {
        or_parent(
            tracing::warn_span!(parent: parent, "sse_stream", stream = ?scope),
            parent,
        )
    }
}

/// `span`, or `parent` where a filter disabled `span`: a line made a child of
/// a disabled span would be a root, and lose the caller's context too.
pub fn or_parent(span: tracing::Span, parent: &tracing::Span) -> tracing::Span {
    if span.is_disabled() {
        parent.clone()
    } else {
        span
    }
}

/// The largest count passed to a retry policy. The default policy of rmcp
/// 0.15 to 2.2 multiplies its base by two raised to the count in `u32`,
/// unchecked, so a count of 32 overflows (a panic in a debug build, a
/// wrapped delay in a release one); the standalone stream's count can grow
/// that far while a server stays unreachable. At 16 that policy asks for
/// 65 536 times its base, far above any `max_delay`. A policy's `max_times`
/// above this count is never reached; the machine's own counts and the
/// request deadline bound request streams first.
pub(super) const MAX_POLICY_COUNT: usize = 16;

/// How long to wait before the next attempt, given the failures so far;
/// `None` gives up. The count the client passes is at most 16 (see the
/// client's docs): a policy that gives up later than that never gives up.
pub trait RetryPolicy: Debug + Send + Sync {
    /// The delay before attempt `failures + 1`.
    fn retry(&self, failures: usize) -> Option<Duration>;
}

impl<P: RetryPolicy + ?Sized> RetryPolicy for std::sync::Arc<P> {
    fn retry(&self, failures: usize) -> Option<Duration> {
        (**self).retry(failures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `for_status`'s table, row by row, with a status from each range the
    /// table leaves to its last rows.
    #[test]
    fn each_status_has_the_tables_disposition() {
        use ReconnectDisposition::*;
        let rows = [
            (404, SessionLost),
            (410, SessionLost),
            (401, Terminate),
            (403, Terminate),
            (405, Terminate),
            (408, Retry),
            (409, Conflict),
            (425, Retry),
            (429, Busy),
            (503, Busy),
            (400, CursorRejected),
            (422, CursorRejected),
            (502, Retry),
            (504, Retry),
            (500, ServerError),
            (501, ServerError),
            (599, ServerError),
            (200, Retry),
            (204, Retry),
            (302, Retry),
            (101, Retry),
        ];
        for (code, disposition) in rows {
            let status = StatusCode::from_u16(code).map(ReconnectDisposition::for_status);
            assert_eq!(status.ok(), Some(disposition), "{code}");
        }
    }
}
