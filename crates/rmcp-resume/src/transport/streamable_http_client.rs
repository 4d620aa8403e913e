//! The streamable-HTTP client, with reconnects that cannot loop or hang.
//!
//! Everything is upstream's except the transport type: the fork's
//! [`StreamableHttpClientTransport`] runs upstream's worker over a
//! [`ResumeGuard`], a [`StreamableHttpClient`] wrapper that takes every SSE
//! stream (a POST's response stream, the standalone GET) and makes the
//! reconnect decisions itself, with
//! [`resuming_sse_frames`]:
//!
//! - a reconnect that closes before any new event is a failed attempt; only
//!   progress resets the count; the retry policy's `max_times` holds;
//! - every reconnect is judged by [`crate::transport::resumption`]: a re-sent
//!   cursor event is dropped, a gap or an unhonoured cursor is an error;
//! - a request whose stream cannot be resumed fails promptly with a JSON-RPC
//!   error naming the cursor (it surfaces as `ServiceError::McpError`), and is
//!   never re-POSTed;
//! - the standalone stream drops a cursor that keeps failing, starts afresh,
//!   and reports a [`Discontinuity`](super::common::client_side_sse::Discontinuity) (one WARN, and
//!   [`ResumeConfig::on_discontinuity`]).
//!
//! The reqwest, auth and unix-socket clients are upstream's, used unchanged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use http::{HeaderName, HeaderValue, StatusCode};
use sse_stream::Sse;

pub use upstream::transport::streamable_http_client::*;

use crate::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId};
use crate::transport::common::client_side_sse::{
    BoxedSseResponse, ReconnectDisposition, ResumeConfig, ResumeStreamError, SseReconnect,
    SseRetryPolicy, StreamScope, resuming_sse_frames,
};
use crate::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION;
use crate::transport::resumption::EventCursor;
use crate::transport::worker::{
    Worker, WorkerConfig, WorkerContext, WorkerQuitReason, WorkerSendRequest,
};
use crate::transport::{Transport, WorkerTransport};
use crate::{RoleClient, service::RxJsonRpcMessage, service::TxJsonRpcMessage};

type UpstreamWorker<C> = upstream::transport::streamable_http_client::StreamableHttpClientWorker<C>;

/// A [`StreamableHttpClient`] that owns the reconnect decisions of every SSE
/// stream the wrapped client opens.
#[derive(Clone)]
pub struct ResumeGuard<C> {
    inner: C,
    retry: Arc<dyn SseRetryPolicy>,
    resume: ResumeConfig,
    /// The session whose standalone stream gave up, so a caller that
    /// reconnects regardless gets a terminal answer instead of a new loop.
    gave_up: Arc<Mutex<Option<Arc<str>>>>,
}

impl<C: std::fmt::Debug> std::fmt::Debug for ResumeGuard<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeGuard")
            .field("inner", &self.inner)
            .field("resume", &self.resume)
            .finish_non_exhaustive()
    }
}

impl<C: StreamableHttpClient> ResumeGuard<C> {
    /// Guards `inner`, retrying with `retry` and judging with `resume`.
    pub fn new(inner: C, retry: Arc<dyn SseRetryPolicy>, resume: ResumeConfig) -> Self {
        Self {
            inner,
            retry,
            resume,
            gave_up: Arc::default(),
        }
    }

    /// The wrapped client.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    fn connector(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> GetConnector<C> {
        GetConnector {
            client: self.inner.clone(),
            uri,
            session_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        }
    }
}

/// Re-issues the GET through the wrapped client.
struct GetConnector<C> {
    client: C,
    uri: Arc<str>,
    session_id: Option<Arc<str>>,
    auth_header: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
    max_sse_event_size: usize,
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
            client
                .get_stream_with_max_sse_event_size(
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

/// The HTTP status behind an error of the built-in clients, where one is known.
fn status_of<E: std::error::Error + Send + Sync + 'static>(
    error: &StreamableHttpError<E>,
) -> Option<StatusCode> {
    match error {
        StreamableHttpError::HttpStatus(status) => StatusCode::from_u16(status.status).ok(),
        StreamableHttpError::UnexpectedServerResponse(text) => unix_socket_status(text),
        #[cfg(feature = "__reqwest")]
        StreamableHttpError::Client(inner) => (inner as &(dyn std::error::Error + 'static))
            .downcast_ref::<reqwest::Error>()
            .and_then(reqwest::Error::status),
        _ => None,
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

/// The frame that fails `request` with `reason`: the request ends with a
/// JSON-RPC error instead of waiting for a response that will not come.
fn failure_frame(request: &RequestId, reason: &str) -> Sse {
    let error = crate::model::ErrorData::internal_error(
        format!("streamable HTTP resumption failed: {reason}"),
        None,
    );
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": request, "error": error });
    Sse {
        event: None,
        data: Some(body.to_string()),
        id: None,
        retry: None,
    }
}

/// A request's response stream: judged reconnects, then exactly one of the
/// response or a failure frame, then the end.
fn guard_request_stream<C: StreamableHttpClient>(
    frames: impl Stream<Item = Result<Sse, ResumeStreamError<StreamableHttpError<C::Error>>>>
    + Send
    + 'static,
    request: RequestId,
) -> BoxStream<'static, Result<Sse, SseError>> {
    // The resuming stream ends a request stream only after its response
    // (having read it to its end) or with an error; an error becomes the
    // request's JSON-RPC failure, and then the stream ends.
    futures::stream::unfold(Some(Box::pin(frames)), move |state| {
        let request = request.clone();
        async move {
            let mut frames = state?;
            match frames.next().await? {
                Ok(sse) => Some((Ok(sse), Some(frames))),
                Err(error) => {
                    tracing::debug!(%error, %request, "request stream could not be resumed");
                    Some((Ok(failure_frame(&request, &error.to_string())), None))
                }
            }
        }
    })
    .boxed()
}

impl<C: StreamableHttpClient> ResumeGuard<C> {
    fn guard_post(
        &self,
        response: StreamableHttpPostResponse,
        request: Option<RequestId>,
        connector: GetConnector<C>,
    ) -> StreamableHttpPostResponse {
        // Only a request's stream carries a response to protect.
        let Some(request) = request else {
            return response;
        };
        let StreamableHttpPostResponse::Sse(stream, session) = response else {
            return response;
        };
        let frames = resuming_sse_frames(
            Some(stream),
            None,
            connector,
            StreamScope::Request,
            self.retry.clone(),
            self.resume.clone(),
        );
        StreamableHttpPostResponse::Sse(guard_request_stream::<C>(frames, request), session)
    }
}

/// Whether the request is sent under a revision with resumable streams (the
/// 2025 revisions; an absent header means 2025-03-26).
fn speaks_resumable_revision(headers: &HashMap<HeaderName, HeaderValue>) -> bool {
    let version = headers
        .iter()
        .find(|(name, _)| {
            name.as_str()
                .eq_ignore_ascii_case(HEADER_MCP_PROTOCOL_VERSION)
        })
        .and_then(|(_, value)| value.to_str().ok());
    // An unknown version is left to the server; the fork guards it.
    version.is_none_or(|v| {
        crate::model::ProtocolVersion::KNOWN_VERSIONS
            .iter()
            .find(|known| known.as_str() == v)
            .is_none_or(crate::model::ProtocolVersion::has_initialize)
    })
}

fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Request(request) => Some(request.id.clone()),
        _ => None,
    }
}

type PostResult<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;
type GetResult<E> = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<E>>;

// The trait's futures must be `Send` while `C` need not be `Sync`: each
// method starts the wrapped client's call (whose future the trait already
// requires to be `Send`) and moves an owned clone of the guard into the rest.
impl<C: StreamableHttpClient> StreamableHttpClient for ResumeGuard<C> {
    type Error = C::Error;

    fn post_message(
        &self,
        endpoint: Arc<str>,
        msg: ClientJsonRpcMessage,
        sid: Option<Arc<str>>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = PostResult<Self::Error>> + Send + '_ {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(endpoint, msg, sid, bearer, headers, limits)
    }

    fn post_message_with_max_sse_event_size(
        &self,
        endpoint: Arc<str>,
        msg: ClientJsonRpcMessage,
        sid: Option<Arc<str>>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        event_limit: usize,
    ) -> impl Future<Output = PostResult<Self::Error>> + Send + '_ {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = event_limit;
        self.post_message_with_response_limits(endpoint, msg, sid, bearer, headers, limits)
    }

    fn post_message_with_response_limits(
        &self,
        endpoint: Arc<str>,
        msg: ClientJsonRpcMessage,
        sid: Option<Arc<str>>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = PostResult<Self::Error>> + Send + '_ {
        let this = self.clone();
        // Revisions from 2026-07-28 have no resumption: a broken stream loses
        // the request by definition, and upstream reports it as such.
        let request = request_id(&msg).filter(|_| speaks_resumable_revision(&headers));
        let event_limit = limits.max_sse_event_size;
        let posting = self.inner.post_message_with_response_limits(
            endpoint.clone(),
            msg,
            sid.clone(),
            bearer.clone(),
            headers.clone(),
            limits,
        );
        async move {
            let response = posting.await?;
            // Resumes use the session the server named in its answer, if any.
            let session = match &response {
                StreamableHttpPostResponse::Sse(_, Some(named)) => Some(Arc::from(named.as_str())),
                _ => sid,
            };
            let connector = this.connector(endpoint, session, bearer, headers, event_limit);
            Ok(this.guard_post(response, request, connector))
        }
    }

    fn delete_session(
        &self,
        endpoint: Arc<str>,
        sid: Arc<str>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.inner.delete_session(endpoint, sid, bearer, headers)
    }

    fn get_stream(
        &self,
        endpoint: Arc<str>,
        sid: Option<Arc<str>>,
        cursor: Option<String>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = GetResult<Self::Error>> + Send + '_ {
        let limit = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.get_stream_with_max_sse_event_size(endpoint, sid, cursor, bearer, headers, limit)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        endpoint: Arc<str>,
        sid: Option<Arc<str>>,
        cursor: Option<String>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        event_limit: usize,
    ) -> impl Future<Output = GetResult<Self::Error>> + Send + '_ {
        let this = self.clone();
        let gave_up = self.gave_up.lock().map(|g| g.clone()).unwrap_or_default();
        let refused = gave_up.is_some() && gave_up == sid;
        // The first connection's errors are upstream's to classify (401, 403
        // and 405 keep their meaning); reconnects after it are ours.
        let opening = self.inner.get_stream_with_max_sse_event_size(
            endpoint.clone(),
            sid.clone(),
            cursor.clone(),
            bearer.clone(),
            headers.clone(),
            event_limit,
        );
        async move {
            if refused {
                // This session's standalone stream already exhausted the
                // retry policy; answer as a server without SSE, which ends
                // the listener instead of starting another round.
                return Err(StreamableHttpError::ServerDoesNotSupportSse);
            }
            let first = opening.await?;
            // Upstream reconnects request streams through here too; their
            // ids (`N/M`) say so.
            let scope = cursor
                .as_deref()
                .and_then(|id| EventCursor::parse(id).ok())
                .and_then(|id| id.as_rmcp())
                .map_or(StreamScope::Standalone, |id| id.stream_id().scope());
            let connector = this.connector(endpoint, sid.clone(), bearer, headers, event_limit);
            let frames = resuming_sse_frames(
                Some(first),
                cursor,
                connector,
                scope,
                this.retry.clone(),
                this.resume.clone(),
            );
            let gave_up = this.gave_up.clone();
            let frames = frames.filter_map(move |frame| {
                let outcome = match frame {
                    Ok(sse) => Some(Ok(sse)),
                    Err(error) => {
                        tracing::debug!(%error, "SSE stream stopped resuming");
                        if let Ok(mut slot) = gave_up.lock() {
                            *slot = sid.clone();
                        }
                        None
                    }
                };
                futures::future::ready(outcome)
            });
            Ok(frames.boxed())
        }
    }
}

/// The streamable-HTTP client transport: upstream's worker over a
/// [`ResumeGuard`]. Drop-in for upstream's type of the same name.
pub struct StreamableHttpClientTransport<C: StreamableHttpClient> {
    inner: WorkerTransport<UpstreamWorker<ResumeGuard<C>>>,
}

impl<C: StreamableHttpClient> std::fmt::Debug for StreamableHttpClientTransport<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttpClientTransport")
            .finish_non_exhaustive()
    }
}

impl<C: StreamableHttpClient> StreamableHttpClientTransport<C> {
    /// A transport over `client`, with the fork's default [`ResumeConfig`].
    pub fn with_client(client: C, config: StreamableHttpClientTransportConfig) -> Self {
        Self::with_resume_config(client, config, ResumeConfig::default())
    }

    /// A transport over `client` with explicit resumption knobs (fork-only).
    pub fn with_resume_config(
        client: C,
        config: StreamableHttpClientTransportConfig,
        resume: ResumeConfig,
    ) -> Self {
        let guard = ResumeGuard::new(client, config.retry_config.clone(), resume);
        let worker = UpstreamWorker::new(guard, config);
        Self {
            inner: WorkerTransport::spawn(worker),
        }
    }

    /// Cancels the transport's worker when cancelled.
    pub fn cancel_token(&self) -> tokio_util::sync::CancellationToken {
        self.inner.cancel_token()
    }
}

impl<C: StreamableHttpClient> Transport<RoleClient> for StreamableHttpClientTransport<C> {
    type Error = StreamableHttpError<C::Error>;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(feature = "transport-streamable-http-client-reqwest")]
impl StreamableHttpClientTransport<reqwest::Client> {
    /// A transport to `uri` over the default reqwest client.
    pub fn from_uri(uri: impl Into<Arc<str>>) -> Self {
        let mut config = StreamableHttpClientTransportConfig::default();
        config.uri = uri.into();
        Self::from_config(config)
    }

    /// A transport from `config` over the default reqwest client.
    pub fn from_config(config: StreamableHttpClientTransportConfig) -> Self {
        Self::with_client(default_reqwest_client(), config)
    }
}

/// Like upstream's default client: no idle pooling (a half-read SSE body in
/// the pool costs a delayed-ACK stall), and only same-origin 307/308
/// redirects, which keep the POST body and do not leak headers to another host.
#[cfg(feature = "transport-streamable-http-client-reqwest")]
fn default_reqwest_client() -> reqwest::Client {
    const HOPS: usize = 10;
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = [
            reqwest::StatusCode::TEMPORARY_REDIRECT,
            reqwest::StatusCode::PERMANENT_REDIRECT,
        ]
        .contains(&attempt.status());
        let origin = attempt.previous().first().map(|u| u.origin());
        if !keeps_body || origin.as_ref() != Some(&attempt.url().origin()) {
            return attempt.stop();
        }
        if attempt.previous().len() > HOPS {
            return attempt.error(format!("more than {HOPS} redirects"));
        }
        attempt.follow()
    });
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        .build()
        .unwrap_or_else(|error| {
            tracing::error!(%error, "default HTTP client failed to build; using reqwest's defaults");
            reqwest::Client::new()
        })
}

#[cfg(all(unix, feature = "transport-streamable-http-client-unix-socket"))]
impl StreamableHttpClientTransport<crate::transport::UnixSocketHttpClient> {
    /// A transport through the Unix socket at `socket_path` (`@name` for an
    /// abstract socket); `uri` gives the Host header and path.
    pub fn from_unix_socket(socket_path: &str, uri: impl Into<Arc<str>>) -> Self {
        let mut config = StreamableHttpClientTransportConfig::default();
        config.uri = uri.into();
        Self::from_unix_socket_with_config(socket_path, config)
    }

    /// A transport through the Unix socket at `socket_path`, with `config`.
    pub fn from_unix_socket_with_config(
        socket_path: &str,
        config: StreamableHttpClientTransportConfig,
    ) -> Self {
        let client = crate::transport::UnixSocketHttpClient::new(socket_path, &config.uri);
        Self::with_client(client, config)
    }
}

/// The streamable-HTTP client as a [`Worker`], for callers that spawn it with
/// [`WorkerTransport::spawn`] themselves. Drop-in for upstream's type: same
/// public fields and constructors.
///
/// It relays between its own queues and a [`StreamableHttpClientTransport`],
/// which does the work; [`StreamableHttpClientTransport::with_client`] skips
/// that relay and is the faster way to the same behaviour.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct StreamableHttpClientWorker<C: StreamableHttpClient> {
    /// The HTTP client.
    pub client: C,
    /// Upstream's transport configuration.
    pub config: StreamableHttpClientTransportConfig,
    /// The fork's resumption knobs.
    pub resume: ResumeConfig,
}

impl<C: StreamableHttpClient + Default> StreamableHttpClientWorker<C> {
    /// A worker for `url` over a default client.
    pub fn new_simple(url: impl Into<Arc<str>>) -> Self {
        Self::new(
            C::default(),
            StreamableHttpClientTransportConfig::with_uri(url),
        )
    }
}

impl<C: StreamableHttpClient> StreamableHttpClientWorker<C> {
    /// A worker over `client`.
    pub fn new(client: C, config: StreamableHttpClientTransportConfig) -> Self {
        Self {
            client,
            config,
            resume: ResumeConfig::default(),
        }
    }
}

impl<C: StreamableHttpClient> Worker for StreamableHttpClientWorker<C> {
    type Error = StreamableHttpError<C::Error>;
    type Role = RoleClient;

    fn err_closed() -> Self::Error {
        StreamableHttpError::TransportChannelClosed
    }

    fn err_join(e: tokio::task::JoinError) -> Self::Error {
        StreamableHttpError::TokioJoinError(e)
    }

    fn config(&self) -> WorkerConfig {
        let mut config = WorkerConfig::default();
        config.name = Some("StreamableHttpClientWorker".into());
        config.channel_buffer_capacity = self.config.channel_buffer_capacity;
        config
    }

    async fn run(
        self,
        mut context: WorkerContext<Self>,
    ) -> Result<(), WorkerQuitReason<Self::Error>> {
        let mut transport = StreamableHttpClientTransport::with_resume_config(
            self.client,
            self.config,
            self.resume,
        );
        let mut sending = futures::stream::FuturesUnordered::new();
        let ct = context.cancellation_token.clone();
        loop {
            tokio::select! {
                request = context.recv_from_handler() => {
                    let WorkerSendRequest { message, responder, .. } = request?;
                    let send = transport.send(message);
                    sending.push(async move {
                        let _ = responder.send(send.await);
                    });
                }
                Some(()) = sending.next(), if !sending.is_empty() => {}
                received = transport.receive() => match received {
                    Some(message) => context.send_to_handler(message).await?,
                    None => return Err(WorkerQuitReason::TransportClosed),
                },
                _ = ct.cancelled() => {
                    let _ = transport.close().await;
                    return Err(WorkerQuitReason::Cancelled);
                }
            }
        }
    }
}
