//! The streamable-HTTP tower service, with resumption that cannot loop.
//!
//! Same public API as upstream rmcp 3.11.0's `tower` module. The fork answers
//! every stateful `GET` itself and hands everything else (`POST`, stateless
//! and 2026-07-28 requests, session restore) to upstream's service, which it
//! wraps with the same configuration and session manager. What differs:
//!
//! - A `GET` with `Last-Event-ID` never gets `200` with an empty stream:
//!   unknown session → `404`; covered cursor → replay strictly after it, then
//!   live; standalone cursor not covered → a fresh live stream whose first
//!   frame says so; request-stream cursor not covered → `400` with a JSON-RPC
//!   error naming cursor and floor; complete stream already drained → `204`;
//!   malformed cursor → `400`.
//! - Every resume response carries the replay floor in [`REPLAY_FLOOR_HEADER`]
//!   and, as its first frame, a [`ReplayNotice`] event (type
//!   [`REPLAY_NOTICE_EVENT`], no `id`), which peers that do not know it ignore.
//! - A fresh standalone stream's priming id precedes its first event.
//! - `DELETE` answers `200 OK` (upstream: `202`, which some peers log as a failure).
//! - Resume outcomes are counted ([`StreamableHttpService::resume_stats`]) and
//!   a failing resume warns at most once per session per minute.

use std::any::Any;
use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Display;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use sse_stream::Sse;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::session::local::{
    LocalSessionManager, LocalSessionManagerError, ResumedStream, SessionError,
};
use super::session::{EventStream, ServerSseMessage, SessionId, SessionManager, SessionStore};
use crate::model::ProtocolVersion;
use crate::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_MCP_PROTOCOL_VERSION, HEADER_SESSION_ID,
};
use crate::transport::resumption::{
    CursorParseError, EventCursor, REPLAY_FLOOR_HEADER, REPLAY_NOTICE_EVENT, ReplayNotice,
};

use upstream::transport::streamable_http_server::tower as up;

type BoxResponse = Response<BoxBody<Bytes, Infallible>>;

/// How often a failing resume may warn, per session.
const RESUME_WARN_INTERVAL: Duration = Duration::from_secs(60);

/// Configuration of [`StreamableHttpService`]; the same fields and builders as
/// upstream's.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct StreamableHttpServerConfig {
    /// Cancelling this ends every session and stream.
    pub cancellation_token: CancellationToken,
    /// Serve protocol revisions before 2026-07-28 with sessions (and
    /// therefore resumable streams). Later revisions are always stateless.
    pub legacy_session_mode: bool,
    /// External store of session state, for restoring sessions across instances.
    pub session_store: Option<Arc<dyn SessionStore>>,
    /// Interval of SSE keep-alive comments.
    pub sse_keep_alive: Option<Duration>,
    /// Accepted browser `Origin`s; empty disables the check unless
    /// [`enforce_origin_validation`](Self::enforce_origin_validation) was called.
    pub allowed_origins: Vec<String>,
    /// The `retry` sent in priming events.
    pub sse_retry: Option<Duration>,
    /// Accepted `Host` authorities (DNS-rebinding protection); loopback by default.
    pub allowed_hosts: Vec<String>,
    /// In stateless mode, prefer `application/json` responses.
    pub json_response: bool,
    /// Largest accepted POST body, in bytes.
    pub max_request_body_bytes: usize,
    /// Require per-request protocol metadata on stateless requests.
    pub stateless_protocol_metadata_required: bool,
    validate_empty_origin_allowlist: bool,
}

impl Default for StreamableHttpServerConfig {
    fn default() -> Self {
        // Upstream's defaults, read from upstream so they cannot drift.
        let base = up::StreamableHttpServerConfig::default();
        Self {
            sse_keep_alive: base.sse_keep_alive,
            sse_retry: base.sse_retry,
            legacy_session_mode: base.legacy_session_mode,
            json_response: base.json_response,
            cancellation_token: CancellationToken::new(),
            allowed_hosts: base.allowed_hosts,
            allowed_origins: base.allowed_origins,
            validate_empty_origin_allowlist: false,
            session_store: base.session_store,
            max_request_body_bytes: base.max_request_body_bytes,
            stateless_protocol_metadata_required: base.stateless_protocol_metadata_required,
        }
    }
}

impl StreamableHttpServerConfig {
    /// Sets the accepted `Host` authorities.
    pub fn with_allowed_hosts(self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let allowed_hosts = hosts.into_iter().map(Into::into).collect();
        Self {
            allowed_hosts,
            ..self
        }
    }

    /// Accepts any `Host` (not recommended for public deployments).
    pub fn disable_allowed_hosts(self) -> Self {
        Self {
            allowed_hosts: Vec::new(),
            ..self
        }
    }

    /// Sets the accepted `Origin`s.
    pub fn with_allowed_origins(
        self,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let allowed_origins = origins.into_iter().map(Into::into).collect();
        Self {
            allowed_origins,
            ..self
        }
    }

    /// Validates `Origin` even with an empty allow-list (rejecting every Origin).
    pub fn enforce_origin_validation(self) -> Self {
        Self {
            validate_empty_origin_allowlist: true,
            ..self
        }
    }

    /// Accepts any `Origin`.
    pub fn disable_allowed_origins(self) -> Self {
        Self {
            allowed_origins: Vec::new(),
            validate_empty_origin_allowlist: false,
            ..self
        }
    }

    /// Sets the keep-alive interval.
    pub fn with_sse_keep_alive(self, sse_keep_alive: Option<Duration>) -> Self {
        Self {
            sse_keep_alive,
            ..self
        }
    }

    /// Sets the priming `retry`.
    pub fn with_sse_retry(self, sse_retry: Option<Duration>) -> Self {
        Self { sse_retry, ..self }
    }

    /// Enables or disables sessions for pre-2026 revisions.
    pub fn with_legacy_session_mode(self, legacy_session_mode: bool) -> Self {
        Self {
            legacy_session_mode,
            ..self
        }
    }

    /// Prefers JSON responses in stateless mode.
    pub fn with_json_response(self, json_response: bool) -> Self {
        Self {
            json_response,
            ..self
        }
    }

    /// Sets the cancellation token.
    pub fn with_cancellation_token(self, cancellation_token: CancellationToken) -> Self {
        Self {
            cancellation_token,
            ..self
        }
    }

    /// Sets the largest accepted POST body.
    pub fn with_max_request_body_bytes(self, max_request_body_bytes: usize) -> Self {
        Self {
            max_request_body_bytes,
            ..self
        }
    }

    /// Requires per-request protocol metadata on stateless requests.
    pub fn with_stateless_protocol_metadata_required(self, required: bool) -> Self {
        Self {
            stateless_protocol_metadata_required: required,
            ..self
        }
    }

    fn to_upstream(&self) -> up::StreamableHttpServerConfig {
        let mut config = up::StreamableHttpServerConfig::default();
        config.sse_keep_alive = self.sse_keep_alive;
        config.sse_retry = self.sse_retry;
        config.legacy_session_mode = self.legacy_session_mode;
        config.json_response = self.json_response;
        config.cancellation_token = self.cancellation_token.clone();
        config.allowed_hosts = self.allowed_hosts.clone();
        config.allowed_origins = self.allowed_origins.clone();
        config.session_store = self.session_store.clone();
        config.max_request_body_bytes = self.max_request_body_bytes;
        config.stateless_protocol_metadata_required = self.stateless_protocol_metadata_required;
        if self.validate_empty_origin_allowlist {
            config = config.enforce_origin_validation();
        }
        config
    }
}

/// Counts of how `GET` resumes were answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumeStats {
    /// Every event after the cursor was replayed.
    pub replayed: u64,
    /// The cursor could not be honoured; a fresh standalone stream was opened.
    pub fallback: u64,
    /// The cursor was rejected (`400`), or its stream was already complete (`204`).
    pub rejected: u64,
    /// The session was unknown (`404`).
    pub session_lost: u64,
}

#[derive(Debug, Default)]
struct Telemetry {
    replayed: AtomicU64,
    fallback: AtomicU64,
    rejected: AtomicU64,
    session_lost: AtomicU64,
    last_warning: Mutex<HashMap<SessionId, Instant>>,
}

impl Telemetry {
    fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Logs a resume failure: WARN at most once per session per interval, the
    /// rest at DEBUG, so a peer retrying in a loop cannot flood the log.
    fn resume_failed(&self, session: &SessionId, cursor: &str, reason: &str, floor: Option<&str>) {
        let now = Instant::now();
        let loud = {
            let mut last = self.last_warning.lock().unwrap_or_else(|p| p.into_inner());
            if last.len() > 4096 {
                last.retain(|_, at| now.duration_since(*at) < RESUME_WARN_INTERVAL);
            }
            match last.get(session) {
                Some(at) if now.duration_since(*at) < RESUME_WARN_INTERVAL => false,
                _ => {
                    last.insert(session.clone(), now);
                    true
                }
            }
        };
        let floor = floor.unwrap_or("unknown");
        if loud {
            tracing::warn!(session_id = %session, cursor, reason, floor, "resume could not honour Last-Event-ID");
        } else {
            tracing::debug!(session_id = %session, cursor, reason, floor, "resume could not honour Last-Event-ID (repeat)");
        }
    }
}

/// Serves MCP over streamable HTTP; a drop-in for upstream's service.
pub struct StreamableHttpService<S, M = LocalSessionManager> {
    /// The configuration the service was built with.
    pub config: StreamableHttpServerConfig,
    // Shared: axum clones the service for every request, and upstream's
    // clone copies its whole config; one copy per request is upstream's cost.
    inner: Arc<up::StreamableHttpService<S, M>>,
    session_manager: Arc<M>,
    telemetry: Arc<Telemetry>,
}

impl<S, M> Clone for StreamableHttpService<S, M> {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
            inner: self.inner.clone(),
            session_manager: self.session_manager.clone(),
            telemetry: self.telemetry.clone(),
        }
    }
}

impl<B, S, M> tower_service::Service<Request<B>> for StreamableHttpService<S, M>
where
    M: SessionManager,
    S: crate::ServerHandler + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send + 'static,
    B::Error: Display,
{
    type Response = BoxResponse;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if self.owns(req.method()) {
            let service = self.clone();
            Box::pin(async move { Ok(service.handle(req).await) })
        } else {
            // Delegated traffic (every POST) takes only upstream's service,
            // without a second copy of the config's host and origin lists.
            let inner = self.inner.clone();
            Box::pin(async move { Ok(inner.handle(req).await) })
        }
    }

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
}

impl<S: crate::ServerHandler + Send + 'static, M: SessionManager> StreamableHttpService<S, M> {
    /// Builds the service; `service_factory` makes one handler per session.
    pub fn new(
        service_factory: impl Fn() -> Result<S, std::io::Error> + Send + Sync + 'static,
        session_manager: Arc<M>,
        config: StreamableHttpServerConfig,
    ) -> Self {
        let inner = up::StreamableHttpService::new(
            service_factory,
            session_manager.clone(),
            config.to_upstream(),
        );
        Self {
            config,
            inner: Arc::new(inner),
            session_manager,
            telemetry: Arc::default(),
        }
    }

    /// How resumes have been answered so far.
    pub fn resume_stats(&self) -> ResumeStats {
        let t = &self.telemetry;
        ResumeStats {
            replayed: t.replayed.load(Ordering::Relaxed),
            fallback: t.fallback.load(Ordering::Relaxed),
            rejected: t.rejected.load(Ordering::Relaxed),
            session_lost: t.session_lost.load(Ordering::Relaxed),
        }
    }

    /// Whether the fork answers requests of `method` itself, rather than
    /// upstream's service.
    fn owns(&self, method: &Method) -> bool {
        self.config.legacy_session_mode && (method == Method::GET || method == Method::DELETE)
    }

    /// Handles one HTTP request.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<BoxBody<Bytes, Infallible>>
    where
        B: Body + Send + 'static,
        B::Error: Display,
    {
        if !self.owns(request.method()) {
            return self.inner.handle(request).await;
        }
        if request.method() == Method::GET {
            return self.handle_get(request).await;
        }
        let mut response = self.inner.handle(request).await;
        // DELETE: every peer SDK reads 200 as a successful termination; some
        // log upstream's 202 as a failure.
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        response
    }

    /// Runs upstream's Host/Origin checks without running a handler: an
    /// `OPTIONS` request that passes them is answered 405 and nothing else.
    async fn dns_rebinding_check(&self, parts: &http::request::Parts) -> Option<BoxResponse> {
        let mut probe = Request::new(Full::new(Bytes::new()));
        *probe.method_mut() = Method::OPTIONS;
        *probe.uri_mut() = parts.uri.clone();
        *probe.headers_mut() = parts.headers.clone();
        let response = self.inner.handle(probe).await;
        (response.status() != StatusCode::METHOD_NOT_ALLOWED).then_some(response)
    }

    async fn handle_get<B>(&self, request: Request<B>) -> BoxResponse
    where
        B: Body + Send + 'static,
        B::Error: Display,
    {
        let (parts, body) = request.into_parts();
        if let Some(rejected) = self.dns_rebinding_check(&parts).await {
            return rejected;
        }
        if !accepts_event_stream(&parts.headers) {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable: Client must accept text/event-stream",
            );
        }
        let version = match protocol_version(&parts.headers) {
            Ok(version) => version,
            Err(message) => return plain(StatusCode::BAD_REQUEST, &message),
        };
        let session = parts
            .headers
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(SessionId::from);
        let (Some(session), true) = (session, version.has_initialize()) else {
            // Stateless revisions, and the missing-session answer, are upstream's.
            return self.inner.handle(Request::from_parts(parts, body)).await;
        };
        let cursor = match parts.headers.get(HEADER_LAST_EVENT_ID) {
            None => None,
            Some(raw) => match EventCursor::from_bytes(raw.as_bytes()) {
                Ok(cursor) => Some(cursor),
                Err(error) => {
                    Telemetry::count(&self.telemetry.rejected);
                    return malformed_cursor(&error);
                }
            },
        };

        let present = match self.session_manager.has_session(&session).await {
            Ok(present) => present,
            Err(error) => return internal_error("check session", &error),
        };
        if !present {
            if self.config.session_store.is_none() {
                if cursor.is_some() {
                    Telemetry::count(&self.telemetry.session_lost);
                }
                return plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
            }
            // Restoring a session replays its handshake, which only upstream
            // can do; it does so for a plain GET, whose stream is discarded.
            let mut plain_get = Request::from_parts(parts.clone(), body);
            plain_get.headers_mut().remove(HEADER_LAST_EVENT_ID);
            let restored = self.inner.handle(plain_get).await;
            if cursor.is_none() || restored.status() != StatusCode::OK {
                if restored.status() == StatusCode::NOT_FOUND {
                    Telemetry::count(&self.telemetry.session_lost);
                }
                return restored;
            }
            drop(restored);
        }

        let local =
            (self.session_manager.as_ref() as &dyn Any).downcast_ref::<LocalSessionManager>();
        match (cursor, local) {
            (None, Some(local)) => self.fresh_local_stream(local, &session).await,
            (None, None) => {
                let request = Request::from_parts(parts, Full::new(Bytes::new()));
                self.inner.handle(request).await
            }
            (Some(cursor), Some(local)) => self.resume_local(local, &session, cursor).await,
            (Some(cursor), None) => self.resume_generic(&session, cursor).await,
        }
    }

    async fn fresh_local_stream(
        &self,
        local: &LocalSessionManager,
        session: &SessionId,
    ) -> BoxResponse {
        let handle = local.sessions.read().await.get(session).cloned();
        let Some(handle) = handle else {
            return plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
        };
        let opened = match handle.open_standalone_stream().await {
            Ok(opened) => opened,
            Err(error) => return internal_error("create standalone stream", &error),
        };
        let priming = match (self.config.sse_retry, opened.priming_event_id()) {
            (Some(retry), Some(id)) => Some(ServerSseMessage::priming(id, retry)),
            // A shadow's first event is unknown: prime the retry, not a cursor.
            (Some(retry), None) => Some(ServerSseMessage::retry(retry)),
            (None, _) => None,
        };
        let frames = futures::stream::iter(priming)
            .chain(opened.stream)
            .map(frame);
        self.sse(frames, None)
    }

    async fn resume_local(
        &self,
        local: &LocalSessionManager,
        session: &SessionId,
        cursor: EventCursor,
    ) -> BoxResponse {
        let raw = cursor.to_string();
        match local.resume_with_notice(session, &raw).await {
            Ok(ResumedStream { notice, stream, .. }) => self.resumed(session, notice, stream),
            Err(LocalSessionManagerError::SessionNotFound(_)) => {
                Telemetry::count(&self.telemetry.session_lost);
                plain(StatusCode::NOT_FOUND, "Not Found: Session not found")
            }
            Err(LocalSessionManagerError::SessionError(SessionError::StreamComplete {
                ..
            })) => {
                // Nothing follows the cursor and nothing ever will: 204 is the
                // one answer that makes EventSource stop reconnecting.
                Telemetry::count(&self.telemetry.rejected);
                plain(StatusCode::NO_CONTENT, "")
            }
            Err(LocalSessionManagerError::SessionError(SessionError::CursorBelowFloor {
                floor,
                ..
            })) => self.rejected(
                session,
                &raw,
                "events after the cursor were evicted",
                Some(&floor.to_string()),
            ),
            Err(LocalSessionManagerError::SessionError(SessionError::UnknownStream { .. })) => self
                .rejected(
                    session,
                    &raw,
                    "no such request stream (never existed, or expired)",
                    None,
                ),
            Err(LocalSessionManagerError::InvalidEventId(error)) => {
                Telemetry::count(&self.telemetry.rejected);
                cursor_error(
                    &format!("malformed Last-Event-ID {raw:?}: {error}"),
                    &raw,
                    None,
                )
            }
            Err(error) => self.rejected(session, &raw, &error.to_string(), None),
        }
    }

    async fn resume_generic(&self, session: &SessionId, cursor: EventCursor) -> BoxResponse {
        let raw = cursor.to_string();
        match self.session_manager.resume(session, raw.clone()).await {
            Ok(stream) => {
                Telemetry::count(&self.telemetry.replayed);
                // A foreign session manager says nothing about its floor.
                self.sse(stream.map(frame), None)
            }
            Err(error) => {
                let standalone = matches!(cursor.as_rmcp(), Some(id) if id.stream.is_none());
                if !standalone {
                    return self.rejected(session, &raw, &error.to_string(), None);
                }
                match self.session_manager.create_standalone_stream(session).await {
                    Ok(stream) => {
                        let notice = ReplayNotice {
                            cursor,
                            floor: None,
                            complete: false,
                        };
                        self.resumed(session, notice, Box::pin(stream))
                    }
                    Err(error) => internal_error("create standalone stream", &error),
                }
            }
        }
    }

    fn resumed(
        &self,
        session: &SessionId,
        notice: ReplayNotice,
        stream: EventStream,
    ) -> BoxResponse {
        let floor = notice.floor.as_ref().map(ToString::to_string);
        if notice.complete {
            Telemetry::count(&self.telemetry.replayed);
        } else {
            Telemetry::count(&self.telemetry.fallback);
            self.telemetry.resume_failed(
                session,
                &notice.cursor.to_string(),
                "cursor not covered; opened a fresh standalone stream",
                floor.as_deref(),
            );
        }
        let first = Sse {
            event: Some(REPLAY_NOTICE_EVENT.to_owned()),
            data: Some(notice.to_json()),
            id: None,
            retry: None,
        };
        let frames = futures::stream::once(async move { first }).chain(stream.map(frame));
        self.sse(frames, floor)
    }

    fn rejected(
        &self,
        session: &SessionId,
        cursor: &str,
        reason: &str,
        floor: Option<&str>,
    ) -> BoxResponse {
        Telemetry::count(&self.telemetry.rejected);
        self.telemetry.resume_failed(session, cursor, reason, floor);
        let message = match floor {
            Some(floor) => format!(
                "cannot resume from Last-Event-ID {cursor:?}: {reason} (replay floor {floor})"
            ),
            None => format!("cannot resume from Last-Event-ID {cursor:?}: {reason}"),
        };
        cursor_error(&message, cursor, floor)
    }

    fn sse(
        &self,
        frames: impl Stream<Item = Sse> + Send + Sync + 'static,
        floor: Option<String>,
    ) -> BoxResponse {
        let ct = self.config.cancellation_token.child_token();
        let encoded: Pin<Box<dyn Stream<Item = Bytes> + Send + Sync>> =
            Box::pin(frames.take_until(ct.cancelled_owned()).map(Bytes::from));
        let wire = SseWire {
            events: encoded.ready_chunks(READY_BATCH),
            keep_alive: self
                .config
                .sse_keep_alive
                .map(|every| (every, Box::pin(tokio::time::sleep(every)))),
        };
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
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
        if let Some(floor) = floor.and_then(|f| HeaderValue::from_str(&f).ok()) {
            headers.insert(REPLAY_FLOOR_HEADER, floor);
        }
        response
    }
}

fn frame(event: ServerSseMessage) -> Sse {
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

/// Most events written in one body frame.
const READY_BATCH: usize = 256;

/// An SSE response body: every frame that is ready together is written as
/// one chunk, so a replay reaches the socket in one piece. (One chunk per
/// event lets hyper flush mid-replay, in rounds of 16 frames, and Nagle's
/// algorithm then holds the remainder for a delayed ACK: about 40 ms.)
/// While idle, a keep-alive comment goes out every interval.
struct SseWire {
    events: futures::stream::ReadyChunks<Pin<Box<dyn Stream<Item = Bytes> + Send + Sync>>>,
    keep_alive: Option<(Duration, Pin<Box<tokio::time::Sleep>>)>,
}

impl Stream for SseWire {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = &mut *self;
        match this.events.poll_next_unpin(cx) {
            Poll::Ready(Some(batch)) => {
                if let Some((every, sleep)) = this.keep_alive.as_mut() {
                    sleep.as_mut().reset(Instant::now() + *every);
                }
                Poll::Ready(Some(batch.concat().into()))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let Some((every, sleep)) = this.keep_alive.as_mut() else {
                    return Poll::Pending;
                };
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                sleep.as_mut().reset(Instant::now() + *every);
                Poll::Ready(Some(Bytes::from_static(b":\n\n")))
            }
        }
    }
}

/// Whether `Accept` admits `text/event-stream` (a `q=0` entry excludes it).
fn accepts_event_stream(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let mut params = range.split(';');
            let essence = params.next().unwrap_or_default().trim();
            let excluded = params.any(|p| {
                let p = p.trim();
                p.strip_prefix("q=")
                    .or_else(|| p.strip_prefix("Q="))
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            !excluded && essence.eq_ignore_ascii_case(EVENT_STREAM_MIME_TYPE)
        })
}

/// The revision a GET speaks: its header, or 2025-03-26 when absent.
fn protocol_version(headers: &http::HeaderMap) -> Result<ProtocolVersion, String> {
    let Some(value) = headers.get(HEADER_MCP_PROTOCOL_VERSION) else {
        return Ok(ProtocolVersion::V_2025_03_26);
    };
    let Ok(text) = value.to_str() else {
        return Err("Bad Request: Invalid MCP-Protocol-Version header encoding".to_owned());
    };
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|known| known.as_str() == text)
        .cloned()
        .ok_or_else(|| format!("Bad Request: Unsupported MCP-Protocol-Version: {text}"))
}

fn plain(status: StatusCode, message: &str) -> BoxResponse {
    let mut response = Response::new(Full::new(Bytes::from(message.to_owned())).boxed());
    *response.status_mut() = status;
    response
}

fn internal_error(context: &str, error: &dyn Display) -> BoxResponse {
    tracing::error!(context, %error, "internal error in streamable HTTP service");
    plain(
        StatusCode::INTERNAL_SERVER_ERROR,
        &format!("Encounter an error when {context}: {error}"),
    )
}

fn malformed_cursor(error: &CursorParseError) -> BoxResponse {
    // The input itself is not echoed: it may be huge or not text.
    cursor_error(&format!("malformed Last-Event-ID: {error}"), "", None)
}

/// `400` with a JSON-RPC error body (no request id: a GET has none) naming the
/// cursor and the floor in `data`.
fn cursor_error(message: &str, cursor: &str, floor: Option<&str>) -> BoxResponse {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": crate::model::ErrorCode::INVALID_REQUEST.0,
            "message": message,
            "data": { "cursor": cursor, "floor": floor },
        },
    });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use tracing::Level;
    use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt};

    use super::*;

    /// Counts events by level.
    #[derive(Clone, Default)]
    struct Levels(Arc<[AtomicUsize; 2]>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Levels {
        fn on_event(&self, event: &tracing::Event<'_>, _: LayerContext<'_, S>) {
            match *event.metadata().level() {
                Level::WARN => self.0[0].fetch_add(1, Ordering::SeqCst),
                Level::DEBUG => self.0[1].fetch_add(1, Ordering::SeqCst),
                _ => 0,
            };
        }
    }

    #[tokio::test(start_paused = true)]
    async fn resume_failures_warn_once_per_session_per_minute() {
        let levels = Levels::default();
        let subscriber = tracing_subscriber::registry().with(levels.clone());
        let _guard = tracing::subscriber::set_default(subscriber);
        let telemetry = Telemetry::default();
        let (a, b): (SessionId, SessionId) = ("a".into(), "b".into());
        let counts = || {
            (
                levels.0[0].load(Ordering::SeqCst),
                levels.0[1].load(Ordering::SeqCst),
            )
        };

        // A peer looping on a bad cursor: one WARN, the rest at DEBUG.
        for _ in 0..100 {
            telemetry.resume_failed(&a, "5", "evicted", Some("9"));
        }
        assert_eq!(counts(), (1, 99));
        // Another session has its own budget.
        telemetry.resume_failed(&b, "5", "evicted", None);
        assert_eq!(counts(), (2, 99));
        // Still inside the minute for `a`.
        tokio::time::advance(Duration::from_secs(59)).await;
        telemetry.resume_failed(&a, "5", "evicted", Some("9"));
        assert_eq!(counts(), (2, 100));
        // A minute after the last WARN, `a` may warn again.
        tokio::time::advance(Duration::from_secs(2)).await;
        telemetry.resume_failed(&a, "5", "evicted", Some("9"));
        assert_eq!(counts(), (3, 100));
    }

    #[test]
    fn accept_header_parsing_honours_q_zero() {
        let accepts = |value: &str| {
            let mut headers = http::HeaderMap::new();
            headers.insert(
                http::header::ACCEPT,
                HeaderValue::from_str(value).unwrap_or_else(|e| panic!("{e}")),
            );
            accepts_event_stream(&headers)
        };
        assert!(accepts("text/event-stream"));
        assert!(accepts("application/json, TEXT/EVENT-STREAM;q=0.5"));
        assert!(!accepts("text/event-stream;q=0"));
        assert!(!accepts("application/json"));
        assert!(!accepts("text/*"));
    }

    #[test]
    fn config_round_trips_into_upstream() {
        let config = StreamableHttpServerConfig::default()
            .with_sse_keep_alive(Some(Duration::from_secs(7)))
            .with_allowed_hosts(["example.com"])
            .with_max_request_body_bytes(1234)
            .enforce_origin_validation();
        let upstream = config.to_upstream();
        assert_eq!(upstream.sse_keep_alive, Some(Duration::from_secs(7)));
        assert_eq!(upstream.allowed_hosts, ["example.com"]);
        assert_eq!(upstream.max_request_body_bytes, 1234);
        let defaults = StreamableHttpServerConfig::default();
        assert!(defaults.legacy_session_mode);
        assert_eq!(defaults.sse_retry, Some(Duration::from_secs(3)));
    }
}

#[cfg(test)]
mod wire_tests {
    use futures::StreamExt;

    use super::*;

    fn wire(
        events: Vec<&'static str>,
        then_pending: bool,
        keep_alive: Option<Duration>,
    ) -> SseWire {
        let ready =
            futures::stream::iter(events.into_iter().map(|e| Bytes::from_static(e.as_bytes())));
        let events: Pin<Box<dyn Stream<Item = Bytes> + Send + Sync>> = if then_pending {
            Box::pin(ready.chain(futures::stream::pending()))
        } else {
            Box::pin(ready)
        };
        SseWire {
            events: events.ready_chunks(READY_BATCH),
            keep_alive: keep_alive.map(|every| (every, Box::pin(tokio::time::sleep(every)))),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn ready_events_leave_in_one_chunk() {
        let mut wire = wire(vec!["id: 1\n\n", "id: 2\n\n", "id: 3\n\n"], false, None);
        assert_eq!(
            wire.next().await.as_deref(),
            Some(&b"id: 1\n\nid: 2\n\nid: 3\n\n"[..])
        );
        assert_eq!(wire.next().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn idle_streams_get_keep_alive_comments_on_the_interval() {
        let every = Duration::from_secs(15);
        let mut wire = wire(vec!["id: 1\n\n"], true, Some(every));
        assert_eq!(wire.next().await.as_deref(), Some(&b"id: 1\n\n"[..]));
        let start = Instant::now();
        assert_eq!(wire.next().await.as_deref(), Some(&b":\n\n"[..]));
        assert_eq!(start.elapsed(), every);
        assert_eq!(wire.next().await.as_deref(), Some(&b":\n\n"[..]));
        assert_eq!(start.elapsed(), every * 2);
    }
}
