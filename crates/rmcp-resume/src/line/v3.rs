//! The 3.11 line: upstream has everything the glue asks for.

/// The upstream release this line overlays.
pub(crate) const UPSTREAM_VERSION: &str = "3.11.0";

/// Marks the item it wraps `#[non_exhaustive]`, as upstream 3.11 marks its
/// counterpart (the 0.x lines leave it open; see `line/v1.rs`).
#[allow(unused_macros)]
macro_rules! upstream_non_exhaustive {
    ($($item:tt)*) => { #[non_exhaustive] $($item)* };
}
#[allow(unused_imports)]
pub(crate) use upstream_non_exhaustive;

/// Declares an enum with upstream's variants (the first braces) and the
/// fork's (the second), through the line macro named first: both here, as
/// upstream's is `#[non_exhaustive]` (0.x keeps upstream's alone; see
/// `line/v1.rs`).
#[allow(unused_macros)]
macro_rules! with_fork_variants {
    ($wrap:ident; $(#[$meta:meta])* $vis:vis enum $name:ident { $($up:tt)* } + { $($fork:tt)* }) => {
        $crate::line::$wrap! { $(#[$meta])* $vis enum $name { $($up)* $($fork)* } }
    };
}
#[allow(unused_imports)]
pub(crate) use with_fork_variants;

/// Declares a struct with upstream's fields (the first braces) and the
/// fork's (the second): both here, `#[non_exhaustive]`.
#[allow(unused_macros)]
macro_rules! with_fork_fields {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($up:tt)* } + { $($fork:tt)* }) => {
        $(#[$meta])* #[non_exhaustive] $vis struct $name { $($up)* $($fork)* }
    };
}
#[allow(unused_imports)]
pub(crate) use with_fork_fields;

/// Declares the enum of the messages a session's handle sends its worker:
/// upstream's variants and the fork's in the public enum
/// (`#[non_exhaustive]`), which the worker's channel carries (`$cmd` names
/// it; 0.x keeps the two apart, see `line/v1.rs`).
#[allow(unused_macros)]
macro_rules! with_fork_command {
    ($cmd:ident; $(#[$meta:meta])* $vis:vis enum $name:ident { $($up:tt)* } + { $($fork:tt)* }) => {
        $(#[$meta])* #[non_exhaustive] $vis enum $name { $($up)* $($fork)* }
        pub(crate) type $cmd = $name;
    };
}
#[allow(unused_imports)]
pub(crate) use with_fork_command;

/// Keeps the second braces' items (after `else`): 3.11 is not 0.x.
#[allow(unused_macros)]
macro_rules! plain_0x {
    ({ $($plain:tt)* } else { $($later:tt)* }) => { $($later)* };
}
#[allow(unused_imports)]
pub(crate) use plain_0x;

/// Declares the session manager with 3.11's event-store slot as one more
/// private field: upstream's manager is `#[non_exhaustive]`, so no
/// application's literal can miss it.
#[allow(unused_macros)]
macro_rules! with_store_field {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($fields:tt)* }) => {
        $(#[$meta])*
        #[non_exhaustive]
        $vis struct $name {
            event_store: $crate::line::StoreSlot,
            $($fields)*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use with_store_field;

/// The event store a session manager writes through.
#[allow(unused_macros)]
macro_rules! store_of {
    ($manager:expr) => {
        $manager.event_store.clone()
    };
}
#[allow(unused_imports)]
pub(crate) use store_of;

/// Expands the items it wraps: on 3.11 the client transport is the fork's
/// own type (`docs/client.md`).
#[allow(unused_macros)]
macro_rules! with_transport_struct {
    ($($item:tt)*) => { $($item)* };
}
#[allow(unused_imports)]
pub(crate) use with_transport_struct;

/// Drops the items it wraps: 3.11 keeps upstream's worker transport, and its
/// client transport is a type of its own.
#[allow(unused_macros)]
macro_rules! with_transport_alias {
    ($($item:tt)*) => {};
}
#[allow(unused_imports)]
pub(crate) use with_transport_alias;

/// Declares `SessionService`, the handler bound of the streamable-HTTP
/// service, with this line's supertrait (`fork.rs` calls it, so that the
/// bound has a public path).
#[allow(unused_macros)]
macro_rules! session_service {
    () => {
        /// What a [`StreamableHttpService`](crate::transport::StreamableHttpService)
        /// serves: on 3.11 a `ServerHandler`, as upstream 3.11 asks (its
        /// stateless path reads the handler's info). Every `ServerHandler`
        /// is one, through the blanket impl; nothing else need implement it.
        pub trait SessionService: crate::ServerHandler {}

        impl<S: crate::ServerHandler> SessionService for S {}
    };
}
#[allow(unused_imports)]
pub(crate) use session_service;

// Upstream's `transport` and `service` modules exist only with `client` or
// `server` (as this crate's `transport`, see lib.rs), so everything below is
// gated on one of them too: a transport feature alone compiles, as upstream
// does (`cargo hack` in `.ci/test --extended` checks the combinations).

/// Whether `version` has `initialize`, and so sessions and resumable streams.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server"
    )
))]
pub(crate) fn has_initialize(version: &crate::model::ProtocolVersion) -> bool {
    version.has_initialize()
}

/// The revision named `text`, if this line knows it.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server"
    )
))]
pub(crate) fn known_version(text: &str) -> Option<crate::model::ProtocolVersion> {
    crate::model::ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|known| known.as_str() == text)
        .cloned()
}

/// The header that names a request's revision.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server"
    )
))]
pub(crate) use crate::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION;

/// The request an error answers, if it names one.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server-session"
    )
))]
pub(crate) fn error_request_id(
    error: &crate::model::JsonRpcError,
) -> Option<crate::model::RequestId> {
    error.id.clone()
}

/// What a request naming a revision this line does not know speaks: none,
/// it is refused (`400`), as upstream refuses it.
#[cfg(all(
    any(feature = "client", feature = "server"),
    feature = "transport-streamable-http-server",
    not(feature = "local")
))]
pub(crate) fn unknown_version() -> Option<crate::model::ProtocolVersion> {
    None
}

/// The request a cancellation names, if it names one.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server-session"
    )
))]
pub(crate) fn cancelled_request(
    params: &crate::model::CancelledNotificationParam,
) -> Option<crate::model::RequestId> {
    params.request_id.clone()
}

#[cfg(all(
    any(feature = "client", feature = "server"),
    feature = "transport-streamable-http-server-session"
))]
pub(crate) use server::*;

#[cfg(all(
    any(feature = "client", feature = "server"),
    feature = "transport-streamable-http-server-session"
))]
mod server {
    use std::sync::Arc;

    use crate::model::ServerJsonRpcMessage;
    use crate::model::{GetExtensions, RequestId, ServerRequest};
    use crate::transport::common::server_side_http::SessionId;
    #[cfg(not(feature = "local"))]
    use crate::transport::streamable_http_server::session::SessionManager;
    use crate::transport::streamable_http_server::session::local::SessionError;
    use crate::transport::streamable_http_server::session::local::store_id::EventIdKey;
    use crate::transport::streamable_http_server::session::{EventStore, ServerSseMessage};
    pub(crate) use crate::transport::streamable_http_server::session::{
        EventStoreError, EventStream,
    };
    use crate::transport::worker::WorkerQuitReason;

    /// Expands the items it wraps: upstream has `SessionStore`, so its
    /// session managers restore sessions.
    macro_rules! with_session_store {
        ($($item:tt)*) => { $($item)* };
    }
    pub(crate) use with_session_store;

    /// The service's session store, if it has one.
    #[cfg(all(feature = "transport-streamable-http-server", not(feature = "local")))]
    pub(crate) fn session_store(
        config: &crate::transport::StreamableHttpServerConfig,
    ) -> Option<&Arc<dyn crate::transport::streamable_http_server::session::SessionStore>> {
        config.session_store.as_ref()
    }

    /// Why a session's worker stops after `idle` without activity.
    pub(crate) fn idle_quit<E>(idle: std::time::Duration) -> WorkerQuitReason<E> {
        WorkerQuitReason::IdleTimeout(idle)
    }

    /// An event with an id.
    // Only the tower service (no `local` build) writes these.
    #[cfg(not(feature = "local"))]
    pub(crate) fn sse_event(id: String, message: ServerJsonRpcMessage) -> ServerSseMessage {
        ServerSseMessage::new(id, message)
    }

    /// A message without an id (the log assigns it).
    pub(crate) fn sse_message(message: ServerJsonRpcMessage) -> ServerSseMessage {
        ServerSseMessage::from_message(message)
    }

    /// A priming frame: an id and the client's reconnect delay.
    // Only the tower service (no `local` build) writes these.
    #[cfg(not(feature = "local"))]
    pub(crate) fn priming(id: String, retry: std::time::Duration) -> ServerSseMessage {
        ServerSseMessage::priming(id, retry)
    }

    /// `SessionConfig::default()`'s timeouts and `retry`, 3.11's: sessions
    /// end five minutes after their last activity and one minute without
    /// `initialize`; priming frames ask for three seconds.
    pub(crate) const SESSION_KEEP_ALIVE: Option<std::time::Duration> =
        Some(std::time::Duration::from_secs(5 * 60));
    pub(crate) const SESSION_INIT_TIMEOUT: Option<std::time::Duration> =
        Some(std::time::Duration::from_secs(60));
    pub(crate) const SESSION_SSE_RETRY: Option<std::time::Duration> =
        Some(std::time::Duration::from_secs(3));

    /// Declares the worker's error without a keep-alive variant (3.11
    /// dropped it: an idle session's worker quits with `IdleTimeout`),
    /// `#[non_exhaustive]` as upstream's.
    macro_rules! with_keep_alive_variant {
        ($($item:tt)*) => { #[non_exhaustive] $($item)* };
    }
    pub(crate) use with_keep_alive_variant;

    /// Expands the items it wraps: 3.11 has `EventStore`, and so the
    /// session manager's API around it.
    macro_rules! with_event_store {
        ($($item:tt)*) => { $($item)* };
    }
    pub(crate) use with_event_store;

    /// Declares the enum it wraps with 3.11's `EventStore` variant after
    /// the first variant (where upstream has it).
    macro_rules! with_event_store_variant {
        (
            $(#[$meta:meta])*
            $vis:vis enum $name:ident {
                $(#[$first_meta:meta])*
                $first:ident,
                $($rest:tt)*
            }
        ) => {
            $(#[$meta])*
            #[non_exhaustive]
            $vis enum $name {
                $(#[$first_meta])*
                $first,
                /// The event store failed.
                #[error("Event store error: {0}")]
                EventStore(#[source] $crate::line::EventStoreError),
                $($rest)*
            }
        };
    }
    pub(crate) use with_event_store_variant;

    /// The event store a local session manager writes through, if any, and
    /// the key that binds the ids it hands out to their session.
    #[derive(Clone, Default)]
    pub(crate) struct StoreSlot {
        store: Option<Arc<dyn EventStore>>,
        key: EventIdKey,
    }

    impl std::fmt::Debug for StoreSlot {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("StoreSlot")
                .field("store", &self.store.is_some())
                .field("key", &self.key)
                .finish()
        }
    }

    impl StoreSlot {
        pub(crate) fn with_store(self, store: Arc<dyn EventStore>) -> Self {
            Self {
                store: Some(store),
                ..self
            }
        }

        pub(crate) fn with_secret(self, secret: &[u8; 32]) -> Self {
            Self {
                key: EventIdKey::from_secret(secret),
                ..self
            }
        }

        pub(crate) fn get(&self) -> Option<Arc<dyn EventStore>> {
            self.store.clone()
        }

        pub(crate) fn is_set(&self) -> bool {
            self.store.is_some()
        }

        pub(crate) fn key(&self) -> &EventIdKey {
            &self.key
        }

        /// Persists `event` of `session` under `key`, and gives the id to
        /// send for it (bound to `session`); `None` when there is no store.
        pub(crate) async fn store(
            &self,
            session: &SessionId,
            key: &str,
            event: &ServerSseMessage,
        ) -> Option<Result<String, EventStoreError>> {
            let store = self.store.as_ref()?;
            Some(
                store
                    .store_event(key, event)
                    .await
                    .map(|id| self.key.scoped(session, &id)),
            )
        }

        /// The store's events after `cursor`; `None` when there is no store.
        pub(crate) async fn replay_after(
            &self,
            cursor: &str,
        ) -> Option<Result<EventStream, EventStoreError>> {
            match &self.store {
                Some(store) => Some(store.replay_events_after(cursor).await),
                None => None,
            }
        }
    }

    /// The session's error for a failed write to the store.
    pub(crate) fn store_failed(error: EventStoreError) -> SessionError {
        SessionError::EventStore(error)
    }

    /// A frame that sets the client's reconnect delay and nothing else.
    pub(crate) fn retry_hint(retry: std::time::Duration) -> ServerSseMessage {
        ServerSseMessage::retry(retry)
    }

    /// Whether the service keeps sessions for the revisions that have them.
    #[cfg(all(feature = "transport-streamable-http-server", not(feature = "local")))]
    pub(crate) fn session_mode(config: &crate::transport::StreamableHttpServerConfig) -> bool {
        config.legacy_session_mode
    }

    /// Whether `manager` answers resumes from a shared event store.
    #[cfg(not(feature = "local"))]
    pub(crate) fn has_event_store<M: SessionManager>(manager: &M) -> bool {
        manager.event_store().is_some()
    }

    /// The client request a server request was issued while handling.
    pub(crate) fn originating_request(request: &ServerRequest) -> Option<RequestId> {
        request
            .extensions()
            .get::<crate::service::OriginatingRequestId>()
            .map(|origin| origin.0.clone())
    }
}

// 3.11's `ServerResult` is the union the shortcut's table was read from.
#[cfg(all(
    any(feature = "client", feature = "server"),
    feature = "transport-streamable-http-client"
))]
#[path = "tool_answer.rs"]
mod tool_answer;

#[cfg(all(
    any(feature = "client", feature = "server"),
    feature = "transport-streamable-http-client"
))]
pub(crate) use client::*;

#[cfg(all(
    any(feature = "client", feature = "server"),
    feature = "transport-streamable-http-client"
))]
mod client {
    pub(crate) use super::tool_answer::parse_response;
    use std::collections::HashMap;
    use std::sync::Arc;

    use http::{HeaderName, HeaderValue};

    use crate::model::ClientJsonRpcMessage;
    pub(crate) use crate::transport::streamable_http_client::StreamableHttpResponseLimits as ResponseLimits;
    use crate::transport::streamable_http_client::{
        StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    };
    use futures::stream::BoxStream;
    use sse_stream::{Error as SseError, Sse};

    use tokio::sync::mpsc::Receiver;

    use crate::transport::worker::{Worker, WorkerContext, WorkerSendRequest};

    /// 3.11's default client: no idle pooling (a half-read SSE body in the
    /// pool costs a delayed-ACK stall), and only same-origin 307/308
    /// redirects, which keep the POST body and do not leak headers to
    /// another host; and the fork's TCP keepalive.
    #[cfg(feature = "transport-streamable-http-client-reqwest")]
    pub(crate) fn default_http_client() -> reqwest::Client {
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
        let builder = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(policy);
        crate::line::with_tcp_keepalive(builder)
            .build()
            .unwrap_or_else(|error| {
                tracing::error!(%error, "default HTTP client failed to build; using reqwest's defaults");
                reqwest::Client::new()
            })
    }

    /// Expands the items it wraps: 3.11's client calls take response
    /// limits.
    macro_rules! with_response_limits {
        ($($item:tt)*) => { $($item)* };
    }
    pub(crate) use with_response_limits;

    /// Expands the items it wraps: 3.11's worker has a control queue and
    /// request cancellation.
    macro_rules! with_control_queue {
        ($($item:tt)*) => { $($item)* };
    }
    pub(crate) use with_control_queue;

    /// The session parameter of `StreamableHttpClient::get_stream`: 3.11
    /// opens a GET without a session too (a stateless server's request
    /// stream).
    macro_rules! get_session_type {
        () => { Option<std::sync::Arc<str>> };
    }
    pub(crate) use get_session_type;

    /// The guard's `StreamableHttpClient::delete_session` (forwarded) and
    /// `get_stream` (to `ResumeGuard::get_default`), as upstream's trait
    /// declares them: both take the custom headers.
    macro_rules! delete_and_get_stream {
        () => {
            fn delete_session(
                &self,
                endpoint: std::sync::Arc<str>,
                sid: std::sync::Arc<str>,
                bearer: Option<String>,
                headers: std::collections::HashMap<http::HeaderName, http::HeaderValue>,
            ) -> impl Future<
                Output = Result<
                    (),
                    crate::transport::streamable_http_client::StreamableHttpError<Self::Error>,
                >,
            > + Send
            + '_ {
                self.inner().delete_session(endpoint, sid, bearer, headers)
            }

            fn get_stream(
                &self,
                endpoint: std::sync::Arc<str>,
                sid: crate::line::get_session_type!(),
                cursor: Option<String>,
                bearer: Option<String>,
                headers: std::collections::HashMap<http::HeaderName, http::HeaderValue>,
            ) -> impl Future<
                Output = Result<
                    futures::stream::BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
                    crate::transport::streamable_http_client::StreamableHttpError<Self::Error>,
                >,
            > + Send
            + '_ {
                let sid = crate::line::get_session(sid);
                self.get_default(endpoint, sid, cursor, bearer, headers)
            }
        };
    }
    pub(crate) use delete_and_get_stream;

    /// The guard's `StreamableHttpClient::post_message` (to
    /// `ResumeGuard::post_default`), as upstream's trait declares it: with
    /// the custom headers.
    macro_rules! post_message {
        () => {
            fn post_message(
                &self,
                endpoint: std::sync::Arc<str>,
                msg: crate::model::ClientJsonRpcMessage,
                sid: Option<std::sync::Arc<str>>,
                bearer: Option<String>,
                headers: std::collections::HashMap<http::HeaderName, http::HeaderValue>,
            ) -> impl Future<
                Output = Result<
                    crate::transport::streamable_http_client::StreamableHttpPostResponse,
                    crate::transport::streamable_http_client::StreamableHttpError<Self::Error>,
                >,
            > + Send
            + '_ {
                self.post_default(endpoint, msg, sid, bearer, headers)
            }
        };
    }
    pub(crate) use post_message;

    /// Whether the server refused the client's credentials: no retry helps.
    pub(crate) fn refuses_credentials<E: std::error::Error + Send + Sync + 'static>(
        error: &StreamableHttpError<E>,
    ) -> bool {
        matches!(
            error,
            StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_)
        )
    }

    /// The session of a `get_stream` call.
    pub(crate) fn get_session(session: Option<Arc<str>>) -> Option<Arc<str>> {
        session
    }

    /// Whether the server said the session is gone (`404`).
    pub(crate) fn is_session_expired<E: std::error::Error + Send + Sync + 'static>(
        error: &StreamableHttpError<E>,
    ) -> bool {
        matches!(error, StreamableHttpError::SessionExpired)
    }

    /// The HTTP status a client error reports in its own variant.
    pub(crate) fn http_status<E: std::error::Error + Send + Sync + 'static>(
        error: &StreamableHttpError<E>,
    ) -> Option<http::StatusCode> {
        match error {
            StreamableHttpError::HttpStatus(status) => {
                http::StatusCode::from_u16(status.status).ok()
            }
            _ => None,
        }
    }

    /// Whether `request` opens a subscription (`subscriptions/listen`,
    /// 2026-07-28), whose stream's end upstream reports itself.
    pub(crate) fn is_subscription(request: &crate::model::ClientRequest) -> bool {
        matches!(
            request,
            crate::model::ClientRequest::SubscriptionsListenRequest(_)
        )
    }

    /// The `Retry-After` a client error carries, as a delay from now.
    pub(crate) fn retry_after<E: std::error::Error + Send + Sync + 'static>(
        error: &StreamableHttpError<E>,
    ) -> Option<std::time::Duration> {
        match error {
            StreamableHttpError::HttpStatus(status) => {
                status.retry_after.as_deref().and_then(|v| {
                    rmcp_resume_core::reconnect::retry_after_delay(v, std::time::SystemTime::now())
                })
            }
            _ => None,
        }
    }

    /// How long a request's `POST` waits for its answer after the response
    /// head. 3.11's worker runs its `POST`s beside each other, so the wait
    /// holds this request's slot (one of `max_concurrent_requests`), and
    /// what waits for every `POST` to finish (an ordering barrier such as a
    /// fallback `initialize`, a session's recovery) by at most as long; an
    /// answer read there skips the task and channel the worker gives a
    /// response stream.
    pub(crate) fn answer_wait(
        resume: &crate::transport::common::client_side_sse::ResumeConfig,
    ) -> std::time::Duration {
        resume.answer_wait
    }

    /// The largest SSE event the client accepts under `limits`.
    pub(crate) fn event_limit(limits: &ResponseLimits) -> usize {
        limits.max_sse_event_size
    }

    /// The POST, under `limits`.
    pub(crate) fn post<C: StreamableHttpClient>(
        client: &C,
        endpoint: Arc<str>,
        message: ClientJsonRpcMessage,
        session: Option<Arc<str>>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        limits: ResponseLimits,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>>>
    + Send
    + '_ {
        client
            .post_message_with_response_limits(endpoint, message, session, bearer, headers, limits)
    }

    /// The GET, with events of at most `event_limit` bytes.
    pub(crate) fn get<C: StreamableHttpClient>(
        client: &C,
        endpoint: Arc<str>,
        session: Option<Arc<str>>,
        cursor: Option<String>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        event_limit: usize,
    ) -> impl Future<
        Output = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<C::Error>>,
    > + Send
    + '_ {
        client.get_stream_with_max_sse_event_size(
            endpoint,
            session,
            cursor,
            bearer,
            headers,
            event_limit,
        )
    }

    /// The queue of control messages (responses, cancellations), which the
    /// worker sends before requests; taken out of `context` so that both
    /// queues can be awaited at once.
    pub(crate) fn take_control<W: Worker>(
        context: &mut WorkerContext<W>,
    ) -> Option<Receiver<WorkerSendRequest<W>>> {
        let (_, closed) = tokio::sync::mpsc::channel(1);
        Some(std::mem::replace(
            &mut context.control_from_handler_rx,
            closed,
        ))
    }

    /// Whether the request was cancelled before the worker got to it.
    pub(crate) fn cancelled_before_sending<W: Worker>(request: &WorkerSendRequest<W>) -> bool {
        request
            .cancellation_token()
            .is_some_and(|token| token.is_cancelled())
    }
}
