//! The `GET` a resuming stream reconnects with, through the wrapped client,
//! and what its failures mean.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use http::{HeaderName, HeaderValue, StatusCode};

use super::{StreamableHttpClient, StreamableHttpError};
use crate::model::RequestId;
use crate::transport::common::client_side_sse::{
    BoxedSseResponse, ReconnectDisposition, SseReconnect, StreamScope,
};

#[cfg(test)]
mod tests;

/// The span a stream's log lines carry: WARN, so that its fields are there
/// whenever a warning is. Made per line ([`SseReconnect::span`]).
pub(super) fn stream_span(
    parent: &tracing::Span,
    session: Option<&Arc<str>>,
    stream: StreamScope,
    request: Option<&RequestId>,
) -> tracing::Span {
    let session_id = session.map(|s| s.as_ref()).unwrap_or("-");
    let span = match request {
        Some(request) => {
            tracing::warn_span!(parent: parent, "sse_stream", session_id, ?stream, %request)
        }
        None => tracing::warn_span!(parent: parent, "sse_stream", session_id, ?stream),
    };
    rmcp_resume_core::reconnect::or_parent(span, parent)
}

/// Re-issues the GET through the wrapped client.
pub(super) struct GetConnector<C> {
    pub(super) client: C,
    pub(super) uri: Arc<str>,
    pub(super) session_id: Option<Arc<str>>,
    pub(super) auth_header: Option<String>,
    /// Shared with the guard's other requests: copied only when a
    /// reconnect sends them.
    pub(super) custom_headers: Arc<HashMap<HeaderName, HeaderValue>>,
    pub(super) max_sse_event_size: usize,
    /// The request whose stream this is; `None` for the standalone stream.
    pub(super) request: Option<RequestId>,
}

impl<C: StreamableHttpClient> SseReconnect for GetConnector<C> {
    type Error = StreamableHttpError<C::Error>;

    fn connect(
        &mut self,
        last_event_id: Option<&str>,
    ) -> BoxFuture<'static, Result<BoxedSseResponse, Self::Error>> {
        let client = self.client.clone();
        let (uri, session_id) = (self.uri.clone(), self.session_id.clone());
        let auth_header = self.auth_header.clone();
        let custom_headers = HashMap::clone(&self.custom_headers);
        let (cursor, limit) = (last_event_id.map(str::to_owned), self.max_sse_event_size);
        Box::pin(async move {
            crate::line::get(
                &client,
                uri,
                session_id,
                cursor,
                auth_header,
                custom_headers,
                limit,
            )
            .await
        })
    }

    fn span(&self, stream: StreamScope, parent: &tracing::Span) -> tracing::Span {
        stream_span(
            parent,
            self.session_id.as_ref(),
            stream,
            self.request.as_ref(),
        )
    }

    fn retry_after(&self, error: &Self::Error) -> Option<std::time::Duration> {
        crate::line::retry_after(error)
    }

    fn break_is_final(&self, error: &sse_stream::Error) -> bool {
        over_size_limit(error)
    }

    fn classify(&self, error: &Self::Error) -> ReconnectDisposition {
        match error {
            StreamableHttpError::ServerDoesNotSupportSse => ReconnectDisposition::Terminate,
            refused if crate::line::refuses_credentials(refused) => ReconnectDisposition::Terminate,
            // 204 and friends: nothing follows the cursor.
            StreamableHttpError::UnexpectedContentType(None) => {
                ReconnectDisposition::CursorRejected
            }
            expired if crate::line::is_session_expired(expired) => {
                ReconnectDisposition::SessionLost
            }
            other => status_of(other).map_or(
                ReconnectDisposition::Retry,
                ReconnectDisposition::for_status,
            ),
        }
    }
}

/// What upstream's event size limit (`max_sse_event_size`) says when an
/// event passes it.
const OVER_SIZE_LIMIT: &str = "SSE event exceeded the maximum size";

/// Whether `error` is the event size limit of upstream's clients, whichever
/// client the transport wraps. Upstream's reqwest, unix-socket and
/// authorizing clients read every body through one bounded stream, whose
/// limit error is private to upstream: it is known by what it says and by
/// having no cause beneath it (a break in transit always carries its
/// transport's error). The client's type cannot tell: `AuthClient`, or a
/// caller's own wrapper of reqwest, hides it, and the event was downloaded
/// again on every resume.
fn over_size_limit(error: &sse_stream::Error) -> bool {
    matches!(
        error,
        sse_stream::Error::Body(inner)
            if inner.source().is_none() && inner.to_string().starts_with(OVER_SIZE_LIMIT)
    )
}

/// Whether a failed opening `GET` is the fork's to retry: lost in transit,
/// or a status that says "later". Anything else (a wrong content type, say:
/// a web page where the endpoint should be) is upstream's to decide, which
/// stops the stream as upstream does.
pub(super) fn opening_retryable<C: StreamableHttpClient>(
    connector: &GetConnector<C>,
    error: &StreamableHttpError<C::Error>,
) -> bool {
    if matches!(error, StreamableHttpError::UnexpectedContentType(_)) {
        return false;
    }
    lost_in_transit(error)
        || matches!(
            connector.classify(error),
            ReconnectDisposition::Retry
                | ReconnectDisposition::Conflict
                | ReconnectDisposition::Busy
                | ReconnectDisposition::ServerError
        )
}

/// Whether a `POST` failed in transit, with no HTTP answer: the connection
/// could not be made, or broke before the response's head arrived.
pub(super) fn lost_in_transit<E: std::error::Error + Send + Sync + 'static>(
    error: &StreamableHttpError<E>,
) -> bool {
    match error {
        StreamableHttpError::Io(_) => true,
        #[cfg(feature = "__reqwest")]
        StreamableHttpError::Client(inner) => (inner as &(dyn std::error::Error + 'static))
            .downcast_ref::<reqwest::Error>()
            .is_some_and(|e| {
                e.status().is_none() && (e.is_connect() || e.is_request() || e.is_timeout())
            }),
        _ => false,
    }
}

/// The HTTP status behind an error of the built-in clients, where one is known.
fn status_of<E: std::error::Error + Send + Sync + 'static>(
    error: &StreamableHttpError<E>,
) -> Option<StatusCode> {
    match error {
        StreamableHttpError::UnexpectedServerResponse(text) => unix_socket_status(text),
        #[cfg(feature = "__reqwest")]
        StreamableHttpError::Client(inner) => (inner as &(dyn std::error::Error + 'static))
            .downcast_ref::<reqwest::Error>()
            .and_then(reqwest::Error::status),
        other => crate::line::http_status(other),
    }
}

/// The status in upstream's unix-socket client's error, which carries it
/// only as text (`"get_stream returned 404 Not Found"`). This is the one
/// place the fork reads a status out of text; it goes once upstream's
/// client reports `HttpStatus` like the reqwest client does.
fn unix_socket_status(text: &str) -> Option<StatusCode> {
    let (_, rest) = text.split_once("returned ")?;
    StatusCode::from_bytes(rest.get(..3)?.as_bytes()).ok()
}
