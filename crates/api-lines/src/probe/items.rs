// Every public item of upstream's streamable-HTTP modules that 0.15 to 2.2
// share, used as an application uses it: types named, functions coerced to
// their exact signatures, methods called and their results typed, traits
// used as bounds. An item the overlay lacks or spells differently fails
// here, at its name.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::session::local::{
    EventId, EventIdParseError, LocalSessionHandle, LocalSessionManager, LocalSessionManagerError,
    LocalSessionWorker, LocalSessionWorkerError, SessionConfig, SessionError, SessionEvent,
    SessionQuitReason, SessionTransport, StreamableHttpMessageReceiver,
};

/// The session module's free function, at its exact signature.
pub fn local_session_items() {
    let _: fn(SessionId, SessionConfig) -> (LocalSessionHandle, LocalSessionWorker) =
        rmcp::transport::streamable_http_server::session::local::create_local_session;
    let _: usize = SessionConfig::DEFAULT_CHANNEL_CAPACITY;
    let _: fn(&LocalSessionWorker) -> &SessionId = LocalSessionWorker::id;
    let _: fn(&LocalSessionHandle) -> &SessionId = LocalSessionHandle::id;
    // The session's transport is upstream's worker transport of its worker.
    let _: fn(SessionTransport) -> rmcp::transport::WorkerTransport<LocalSessionWorker> = |t| t;
    fn transport<T: rmcp::transport::Transport<rmcp::RoleServer>>() {}
    transport::<SessionTransport>();
    fn worker<
        W: rmcp::transport::worker::Worker<Error = LocalSessionWorkerError, Role = rmcp::RoleServer>,
    >() {
    }
    worker::<LocalSessionWorker>();
}

/// The handle's methods, with upstream's arguments and results.
pub async fn handle_methods(
    handle: &LocalSessionHandle,
    message: ClientJsonRpcMessage,
    id: EventId,
) {
    let _: Result<(), SessionError> = handle.close().await;
    let _: Result<(), SessionError> = handle.push_message(message.clone(), Some(1u64)).await;
    let _: Result<StreamableHttpMessageReceiver, SessionError> =
        handle.establish_request_wise_channel().await;
    let _: Result<(), SessionError> = handle.close_request_wise_channel(1u64).await;
    let _: Result<StreamableHttpMessageReceiver, SessionError> =
        handle.establish_common_channel().await;
    let _: Result<StreamableHttpMessageReceiver, SessionError> = handle.resume(id).await;
    let _: Result<ServerJsonRpcMessage, SessionError> = handle.initialize(message).await;
    let _: Result<(), SessionError> = handle
        .close_sse_stream(1u64, Some(Duration::from_secs(1)))
        .await;
    let _: Result<(), SessionError> = handle.close_standalone_sse_stream(None).await;
}

/// The receiver's public fields.
pub fn receiver_fields(receiver: StreamableHttpMessageReceiver) {
    let _: Option<u64> = receiver.http_request_id;
    let _: tokio::sync::mpsc::Receiver<ServerSseMessage> = receiver.inner;
}

/// The manager's public fields and its `SessionManager` impl.
pub async fn manager(manager: &LocalSessionManager, id: &SessionId, message: ClientJsonRpcMessage) {
    use rmcp::transport::streamable_http_server::session::SessionManager;
    let _: &SessionConfig = &manager.session_config;
    let _: &tokio::sync::RwLock<std::collections::HashMap<SessionId, LocalSessionHandle>> =
        &manager.sessions;
    fn manages<
        M: SessionManager<Error = LocalSessionManagerError, Transport = SessionTransport>,
    >() {
    }
    manages::<LocalSessionManager>();
    let _: Result<(SessionId, SessionTransport), LocalSessionManagerError> =
        manager.create_session().await;
    let _: Result<ServerJsonRpcMessage, LocalSessionManagerError> =
        manager.initialize_session(id, message.clone()).await;
    let _: Result<bool, LocalSessionManagerError> = manager.has_session(id).await;
    let _: Result<(), LocalSessionManagerError> = manager.close_session(id).await;
    let _: Result<(), LocalSessionManagerError> = manager.accept_message(id, message.clone()).await;
    if let Ok(stream) = manager.create_stream(id, message).await {
        sse_stream(stream);
    }
    if let Ok(stream) = manager.create_standalone_stream(id).await {
        sse_stream(stream);
    }
    if let Ok(stream) = manager.resume(id, "0".to_owned()).await {
        sse_stream(stream);
    }
}

fn sse_stream<S: futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static>(_: S) {}

/// The event id: parsed from text, printed back, compared, hashed.
pub fn event_id(text: &str) -> Result<String, EventIdParseError> {
    let id: EventId = text.parse()?;
    let copy = id.clone();
    fn key<K: std::hash::Hash + Eq + std::fmt::Debug + std::fmt::Display>(_: &K) {}
    key(&copy);
    Ok(id.to_string())
}

/// The parse error's variants (the fork adds `Malformed`, so a match
/// needs a last arm).
pub fn event_id_error(error: &EventIdParseError) -> &'static str {
    #[allow(unreachable_patterns)]
    match error {
        EventIdParseError::InvalidIndex(_) => "index",
        EventIdParseError::InvalidNumericRequestId(_) => "request id",
        EventIdParseError::InvalidRequestIdType => "request id type",
        EventIdParseError::MissingRequestId => "no request id",
        _ => "other",
    }
}

/// The errors are errors, each convertible as upstream's is.
pub fn errors(parse: EventIdParseError, session: SessionError) {
    fn error<E: std::error::Error + Send + 'static>(_: &E) {}
    error(&parse);
    error(&session);
    let _: SessionError = SessionError::from(parse.clone());
    let _: LocalSessionManagerError = LocalSessionManagerError::from(parse);
    let _: std::io::Error = std::io::Error::from(session);
    let _: LocalSessionManagerError = LocalSessionManagerError::from(SessionError::InvalidEventId);
    let _: LocalSessionWorkerError =
        LocalSessionWorkerError::from(tokio::task::JoinError::from(never()));
    fn never<T>() -> T {
        unreachable!("only its type is used")
    }
}

/// Each variant upstream's session enums have, with its fields.
pub fn variants(
    manager: LocalSessionManagerError,
    session: SessionError,
    worker: LocalSessionWorkerError,
    event: SessionEvent,
    quit: SessionQuitReason,
) -> usize {
    use LocalSessionManagerError as M;
    use LocalSessionWorkerError as W;
    use SessionError as S;
    #[allow(unreachable_patterns)]
    let a = match manager {
        M::SessionNotFound(id) => id.len(),
        M::SessionError(_) => 1,
        M::InvalidEventId(_) => 2,
        _ => 0,
    };
    #[allow(unreachable_patterns)]
    let b = match session {
        S::DuplicatedRequestId(id) => id as usize,
        S::ChannelClosed(id) => id.unwrap_or_default() as usize,
        S::EventIdParseError(_) => 1,
        S::SessionServiceTerminated => 2,
        S::InvalidEventId => 3,
        S::Io(_) => 4,
        _ => 0,
    };
    #[allow(unreachable_patterns, deprecated)]
    let c = match worker {
        W::TransportTerminated => 1,
        W::UnexpectedEvent(_) => 2,
        W::FailToSendInitializeRequest(_) => 3,
        W::FailToHandleMessage(_) => 4,
        W::KeepAliveTimeout(after) => after.as_secs() as usize,
        W::TransportClosed => 5,
        W::TokioJoinError(_) => 6,
        _ => 0,
    };
    #[allow(unreachable_patterns)]
    let d = match event {
        SessionEvent::ClientMessage {
            message,
            http_request_id,
        } => {
            drop(message);
            http_request_id.unwrap_or_default() as usize
        }
        SessionEvent::EstablishRequestWiseChannel { responder } => {
            let _: tokio::sync::oneshot::Sender<
                Result<StreamableHttpMessageReceiver, SessionError>,
            > = responder;
            1
        }
        SessionEvent::CloseRequestWiseChannel { id, responder } => {
            let _: tokio::sync::oneshot::Sender<Result<(), SessionError>> = responder;
            id as usize
        }
        SessionEvent::Resume {
            last_event_id,
            responder,
        } => {
            let _: EventId = last_event_id;
            let _: tokio::sync::oneshot::Sender<
                Result<StreamableHttpMessageReceiver, SessionError>,
            > = responder;
            2
        }
        SessionEvent::InitializeRequest { request, responder } => {
            let _: ClientJsonRpcMessage = request;
            let _: tokio::sync::oneshot::Sender<Result<ServerJsonRpcMessage, SessionError>> =
                responder;
            3
        }
        SessionEvent::Close => 4,
        SessionEvent::CloseSseStream {
            http_request_id,
            retry_interval,
            responder,
        } => {
            let _: Option<Duration> = retry_interval;
            let _: tokio::sync::oneshot::Sender<Result<(), SessionError>> = responder;
            http_request_id.unwrap_or_default() as usize
        }
        _ => 0,
    };
    #[allow(unreachable_patterns)]
    let e = match quit {
        SessionQuitReason::ServiceTerminated => 1,
        SessionQuitReason::ClientTerminated => 2,
        SessionQuitReason::ExpectInitializeRequest => 3,
        SessionQuitReason::ExpectInitializeResponse => 4,
        SessionQuitReason::Cancelled => 5,
        _ => 0,
    };
    a + b + c + d + e
}

/// The server side's shared pieces and the service's configuration.
pub fn server_items() {
    let _: fn() -> SessionId = rmcp::transport::common::server_side_http::session_id;
    let _: Duration = rmcp::transport::common::server_side_http::DEFAULT_AUTO_PING_INTERVAL;
    let _: &str = rmcp::transport::common::http_header::HEADER_SESSION_ID;
    let _: &str = rmcp::transport::common::http_header::HEADER_LAST_EVENT_ID;
    let _: &str = rmcp::transport::common::http_header::EVENT_STREAM_MIME_TYPE;
    let _: &str = rmcp::transport::common::http_header::JSON_MIME_TYPE;
    let config = rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default();
    let _: Option<Duration> = config.sse_keep_alive;
    let _: Option<Duration> = config.sse_retry;
    let _: bool = config.stateful_mode;
    let _: tokio_util::sync::CancellationToken = config.cancellation_token.clone();
    // The same types at the module's re-exports.
    let _: fn(
        rmcp::transport::streamable_http_server::StreamableHttpServerConfig,
    ) -> rmcp::transport::StreamableHttpServerConfig = |c| c;
    let _: fn(
        rmcp::transport::streamable_http_server::SessionId,
    ) -> rmcp::transport::streamable_http_server::session::SessionId = |s| s;
    let _: fn(Arc<str>) -> SessionId = |s| s;
}

/// The service's methods: `handle`
/// over any body, `Clone`.
pub async fn service_methods<S>(
    service: rmcp::transport::StreamableHttpService<S, LocalSessionManager>,
    request: http::Request<String>,
) where
    S: rmcp::Service<rmcp::RoleServer> + Send + 'static,
{
    let copy: rmcp::transport::StreamableHttpService<S, LocalSessionManager> = service.clone();
    let _: http::Response<
        http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>,
    > = copy.handle(request).await;
}

/// The client's public items.
pub fn client_items<C: rmcp::transport::streamable_http_client::StreamableHttpClient>(
    worker: rmcp::transport::streamable_http_client::StreamableHttpClientWorker<C>,
) -> rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig {
    use rmcp::transport::streamable_http_client as client;
    let _: C = worker.client.clone();
    let config: client::StreamableHttpClientTransportConfig = worker.config.clone();
    let _: Arc<str> = config.uri.clone();
    let _: Arc<dyn rmcp::transport::common::client_side_sse::SseRetryPolicy> =
        config.retry_config.clone();
    let _: usize = config.channel_buffer_capacity;
    let _: bool = config.allow_stateless;
    let _: Option<String> = config.auth_header.clone();
    let with_auth: client::StreamableHttpClientTransportConfig =
        client::StreamableHttpClientTransportConfig::with_uri("http://localhost/mcp")
            .auth_header("token");
    let _ = client::StreamableHttpClientTransportConfig::default();
    let _: fn(
        client::StreamableHttpPostResponse,
    ) -> Result<ServerJsonRpcMessage, client::StreamableHttpError<C::Error>> = |r| r.expect_json();
    fn worker_of<W: rmcp::transport::worker::Worker<Role = rmcp::RoleClient>>() {}
    worker_of::<client::StreamableHttpClientWorker<C>>();
    let _: Option<client::SseError> = None;
    let _: Option<client::AuthRequiredError> = None;
    let _: Option<client::StreamableHttpProtocolError> = None;
    with_auth
}

/// The reconnect policies of the client side's SSE.
pub fn sse_items() {
    use rmcp::transport::common::client_side_sse as sse;
    fn policy<P: sse::SseRetryPolicy + 'static>(_: P) {}
    policy(sse::FixedInterval::default());
    policy(sse::ExponentialBackoff::default());
    let _: Duration = sse::FixedInterval::DEFAULT_MIN_DURATION;
    let _: Duration = sse::ExponentialBackoff::DEFAULT_DURATION;
    let _: Option<sse::BoxedSseResponse> = None;
}
