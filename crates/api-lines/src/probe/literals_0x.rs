// What 0.x allows and 1.x took away with `#[non_exhaustive]`: struct
// literals, whole or with `..Default::default()`, destructures, and
// exhaustive matches of every public session enum (no `_` arm).

pub fn session_config_literal()
-> rmcp::transport::streamable_http_server::session::local::SessionConfig {
    rmcp::transport::streamable_http_server::session::local::SessionConfig {
        keep_alive: None,
        channel_capacity: 16,
        ..Default::default()
    }
}

pub fn client_worker_literal(
    url: &str,
) -> rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client> {
    rmcp::transport::streamable_http_client::StreamableHttpClientWorker {
        client: reqwest::Client::new(),
        config:
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                url.to_owned(),
            ),
    }
}

pub fn receiver_literal(
    inner: tokio::sync::mpsc::Receiver<
        rmcp::transport::streamable_http_server::session::ServerSseMessage,
    >,
) -> rmcp::transport::streamable_http_server::session::local::StreamableHttpMessageReceiver {
    rmcp::transport::streamable_http_server::session::local::StreamableHttpMessageReceiver {
        http_request_id: Some(1),
        inner,
    }
}

pub fn quit_reason(
    reason: &rmcp::transport::streamable_http_server::session::local::SessionQuitReason,
) -> &'static str {
    use rmcp::transport::streamable_http_server::session::local::SessionQuitReason as R;
    match reason {
        R::ServiceTerminated => "service",
        R::ClientTerminated => "client",
        R::ExpectInitializeRequest => "expected initialize",
        R::ExpectInitializeResponse => "expected its answer",
        R::Cancelled => "cancelled",
    }
}

/// 0.x's service names its manager type by default, and its retry
/// policies include one that never retries.
pub fn defaults_of_0x<S: rmcp::Service<rmcp::RoleServer> + Send + 'static>(
    service: rmcp::transport::StreamableHttpService<S>,
) -> rmcp::transport::StreamableHttpService<
    S,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    fn policy<P: rmcp::transport::common::client_side_sse::SseRetryPolicy + 'static>(_: P) {}
    policy(rmcp::transport::common::client_side_sse::NeverRetry);
    service
}

/// 0.x's manager is two public fields; applications build it whole.
pub fn manager_literal(
    session_config: rmcp::transport::streamable_http_server::session::local::SessionConfig,
) -> rmcp::transport::streamable_http_server::session::local::LocalSessionManager {
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager {
        sessions: tokio::sync::RwLock::new(std::collections::HashMap::new()),
        session_config,
    }
}

/// 0.x's config is plain data: unwind-safe, and a clone is independent.
pub fn config_is_plain_data() {
    fn plain<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe + Clone + Send + Sync>() {}
    plain::<rmcp::transport::streamable_http_server::session::local::SessionConfig>();
}

/// 0.x's config is exactly two fields: a literal may name both and nothing
/// else (a Kubernetes-pod proxy with its own manager writes this).
pub fn session_config_full_literal()
-> rmcp::transport::streamable_http_server::session::local::SessionConfig {
    rmcp::transport::streamable_http_server::session::local::SessionConfig {
        channel_capacity: 16,
        keep_alive: None,
    }
}

/// ... and a destructure names both, without `..`.
pub fn session_config_destructure(
    config: rmcp::transport::streamable_http_server::session::local::SessionConfig,
) -> (usize, Option<std::time::Duration>) {
    let rmcp::transport::streamable_http_server::session::local::SessionConfig {
        channel_capacity,
        keep_alive,
    } = config;
    (channel_capacity, keep_alive)
}

/// Every public session enum of 0.x matched without a `_` arm, each
/// payload bound at upstream's type.
pub fn manager_error(
    error: &rmcp::transport::streamable_http_server::session::local::LocalSessionManagerError,
) -> &'static str {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManagerError as E;
    match error {
        E::SessionNotFound(id) => {
            let _: &rmcp::transport::streamable_http_server::session::SessionId = id;
            "not found"
        }
        E::SessionError(error) => {
            let _: &rmcp::transport::streamable_http_server::session::local::SessionError = error;
            "session"
        }
        E::InvalidEventId(error) => {
            let _: &rmcp::transport::streamable_http_server::session::local::EventIdParseError =
                error;
            "event id"
        }
    }
}

pub fn event_id_parse_error(
    error: &rmcp::transport::streamable_http_server::session::local::EventIdParseError,
) -> &'static str {
    use rmcp::transport::streamable_http_server::session::local::EventIdParseError as E;
    match error {
        E::InvalidIndex(e) => {
            let _: &std::num::ParseIntError = e;
            "index"
        }
        E::InvalidNumericRequestId(e) => {
            let _: &std::num::ParseIntError = e;
            "request id"
        }
        E::InvalidRequestIdType => "request id type",
        E::MissingRequestId => "missing request id",
    }
}

pub fn session_error(
    error: &rmcp::transport::streamable_http_server::session::local::SessionError,
) -> &'static str {
    use rmcp::transport::streamable_http_server::session::local::SessionError as E;
    match error {
        E::DuplicatedRequestId(id) => {
            let _: &u64 = id;
            "duplicated"
        }
        E::ChannelClosed(id) => {
            let _: &Option<u64> = id;
            "closed"
        }
        E::EventIdParseError(e) => {
            let _: &rmcp::transport::streamable_http_server::session::local::EventIdParseError = e;
            "event id"
        }
        E::SessionServiceTerminated => "terminated",
        E::InvalidEventId => "invalid event id",
        E::Io(e) => {
            let _: &std::io::Error = e;
            "io"
        }
    }
}

pub fn worker_error(
    error: &rmcp::transport::streamable_http_server::session::local::LocalSessionWorkerError,
) -> &'static str {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionWorkerError as E;
    match error {
        E::TransportTerminated => "terminated",
        E::UnexpectedEvent(event) => {
            let _: &rmcp::transport::streamable_http_server::session::local::SessionEvent = event;
            "unexpected"
        }
        E::FailToSendInitializeRequest(e) | E::FailToHandleMessage(e) => {
            let _: &rmcp::transport::streamable_http_server::session::local::SessionError = e;
            "failed"
        }
        E::KeepAliveTimeout(d) => {
            let _: &std::time::Duration = d;
            "keep-alive"
        }
        E::TransportClosed => "closed",
        E::TokioJoinError(e) => {
            let _: &tokio::task::JoinError = e;
            "join"
        }
    }
}

pub fn session_event(
    event: rmcp::transport::streamable_http_server::session::local::SessionEvent,
) -> &'static str {
    use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
    use rmcp::transport::streamable_http_server::session::local::{
        EventId, SessionError, SessionEvent as E, StreamableHttpMessageReceiver,
    };
    use tokio::sync::oneshot::Sender;
    match event {
        E::ClientMessage {
            message,
            http_request_id,
        } => {
            let _: (ClientJsonRpcMessage, Option<u64>) = (message, http_request_id);
            "message"
        }
        E::EstablishRequestWiseChannel { responder } => {
            let _: Sender<Result<StreamableHttpMessageReceiver, SessionError>> = responder;
            "request stream"
        }
        E::CloseRequestWiseChannel { id, responder } => {
            let _: (u64, Sender<Result<(), SessionError>>) = (id, responder);
            "close request stream"
        }
        E::Resume {
            last_event_id,
            responder,
        } => {
            let _: (
                EventId,
                Sender<Result<StreamableHttpMessageReceiver, SessionError>>,
            ) = (last_event_id, responder);
            "resume"
        }
        E::InitializeRequest { request, responder } => {
            let _: (
                ClientJsonRpcMessage,
                Sender<Result<ServerJsonRpcMessage, SessionError>>,
            ) = (request, responder);
            "initialize"
        }
        E::Close => "close",
        E::CloseSseStream {
            http_request_id,
            retry_interval,
            responder,
        } => {
            let _: (
                Option<u64>,
                Option<std::time::Duration>,
                Sender<Result<(), SessionError>>,
            ) = (http_request_id, retry_interval, responder);
            "close sse"
        }
    }
}
