//! The responses the fork writes itself: SSE bodies, refusals and errors.

use std::convert::Infallible;
use std::fmt::Display;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::{HeaderValue, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use rmcp_resume_core::wire::{SseWire, cursor_error_body};
use sse_stream::Sse;
use tokio_util::sync::CancellationToken;

use crate::transport::common::http_header::EVENT_STREAM_MIME_TYPE;
use crate::transport::resumption::{CursorParseError, REPLAY_FLOOR_HEADER};
use crate::transport::streamable_http_server::session::ServerSseMessage;

pub(super) type BoxResponse = Response<BoxBody<Bytes, Infallible>>;

/// An SSE response carrying `frames`, with keep-alive comments and the
/// replay floor header when given.
pub(super) fn sse(
    frames: impl Stream<Item = Sse> + Send + Sync + 'static,
    cancel: &CancellationToken,
    keep_alive: Option<Duration>,
    floor: Option<String>,
) -> BoxResponse {
    let wire = SseWire::new(
        frames.take_until(cancel.child_token().cancelled_owned()),
        keep_alive,
    );
    let body = http_body_util::StreamBody::new(
        wire.map(|bytes| Ok::<_, Infallible>(http_body::Frame::data(bytes))),
    );
    let mut response = Response::new(BodyExt::boxed(body));
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(EVENT_STREAM_MIME_TYPE),
    );
    headers.insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    // Tells nginx-style proxies not to buffer the stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    if let Some(floor) = floor.and_then(|f| HeaderValue::from_str(&f).ok()) {
        headers.insert(REPLAY_FLOOR_HEADER, floor);
    }
    response
}

/// rmcp's SSE message as a wire frame.
pub(super) fn frame(event: ServerSseMessage) -> Sse {
    let data = match &event.message {
        // Serializing a JSON-RPC message cannot fail; an empty `data` would
        // at worst read as a priming event.
        Some(message) => serde_json::to_string(message.as_ref()).unwrap_or_default(),
        None => String::new(),
    };
    Sse {
        event: None,
        data: Some(data),
        id: event.event_id,
        retry: event
            .retry
            .map(|r| u64::try_from(r.as_millis()).unwrap_or(u64::MAX)),
    }
}

pub(super) fn plain(status: StatusCode, message: &str) -> BoxResponse {
    let mut response = Response::new(Full::new(Bytes::from(message.to_owned())).boxed());
    *response.status_mut() = status;
    response
}

pub(super) fn not_found() -> BoxResponse {
    plain(StatusCode::NOT_FOUND, "Not Found: Session not found")
}

pub(super) fn internal_error(context: &str, error: &dyn Display) -> BoxResponse {
    tracing::error!(context, %error, "internal error in streamable HTTP service");
    plain(
        StatusCode::INTERNAL_SERVER_ERROR,
        &format!("Encounter an error when {context}: {error}"),
    )
}

pub(super) fn malformed_cursor(error: &CursorParseError) -> BoxResponse {
    // The input itself is not echoed: it may be huge or not text.
    cursor_error(&format!("malformed Last-Event-ID: {error}"), "", None)
}

/// `400` for a `Last-Event-ID` where there are no streams to resume: a
/// stateless server, or a revision without sessions (2026-07-28). Upstream
/// answered such a `GET` with an empty `200`, which clients resume forever.
pub(super) fn stateless_resume() -> BoxResponse {
    cursor_error(
        "cannot resume: this server keeps no streams for this protocol revision (no sessions)",
        "",
        None,
    )
}

/// `400` with a JSON-RPC error body naming the cursor and the floor.
pub(super) fn cursor_error(message: &str, cursor: &str, floor: Option<&str>) -> BoxResponse {
    let body = cursor_error_body(message, cursor, floor);
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
