//! The `GET` a resuming stream reconnects with, through the wrapped client,
//! and what its failures mean.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use http::{HeaderName, HeaderValue, StatusCode};

use super::{StreamableHttpClient, StreamableHttpError};
use crate::transport::common::client_side_sse::{
    BoxedSseResponse, ReconnectDisposition, SseReconnect,
};

#[cfg(test)]
mod tests;

/// Re-issues the GET through the wrapped client.
pub(super) struct GetConnector<C> {
    pub(super) client: C,
    pub(super) uri: Arc<str>,
    pub(super) session_id: Option<Arc<str>>,
    pub(super) auth_header: Option<String>,
    pub(super) custom_headers: HashMap<HeaderName, HeaderValue>,
    pub(super) max_sse_event_size: usize,
}

impl<C: StreamableHttpClient> SseReconnect for GetConnector<C> {
    type Error = StreamableHttpError<C::Error>;

    fn connect(
        &mut self,
        last_event_id: Option<&str>,
    ) -> BoxFuture<'static, Result<BoxedSseResponse, Self::Error>> {
        let client = self.client.clone();
        let (uri, session_id) = (self.uri.clone(), self.session_id.clone());
        let (auth_header, custom_headers) = (self.auth_header.clone(), self.custom_headers.clone());
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

    fn classify(&self, error: &Self::Error) -> ReconnectDisposition {
        match error {
            StreamableHttpError::ServerDoesNotSupportSse
            | StreamableHttpError::AuthRequired(_)
            | StreamableHttpError::InsufficientScope(_) => ReconnectDisposition::Terminate,
            // 204 and friends: nothing follows the cursor.
            StreamableHttpError::UnexpectedContentType(None) => {
                ReconnectDisposition::CursorRejected
            }
            StreamableHttpError::SessionExpired => ReconnectDisposition::SessionLost,
            other => status_of(other).map_or(
                ReconnectDisposition::Retry,
                ReconnectDisposition::for_status,
            ),
        }
    }
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
