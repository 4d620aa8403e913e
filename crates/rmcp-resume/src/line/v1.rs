//! The 1.8 line: no event store, no SEP-2260 request association, no
//! response size limits, and a GET only with a session.
//!
//! The 2.2 line keeps all of that and is compiled from this file too; it
//! differs from 1.8 only where `cfg(rmcp_line_2)` says: a cancellation whose
//! request id is optional, and its version.
//!
//! The 0.17 line is compiled from this file as well; `cfg(rmcp_line_0_17)`
//! marks what 0.17 lacks beside that: a session store (and so
//! `restore_session`), constructors and `Default` for SSE frames, the
//! worker's idle reason, the client's `SessionExpired`, and an error whose
//! request id may be absent.
//!
//! The 0.16 line is the 0.17 line (its build script sets `cfg(rmcp_line_1)`,
//! `cfg(rmcp_line_0_17)` and `cfg(rmcp_line_0_16)`): 0.16 lacks all that 0.17
//! lacks, so every `cfg(rmcp_line_0_17)` item serves it as it is, and
//! `cfg(rmcp_line_0_16)` marks only what 0.16 lacks beside: the custom
//! headers of the client's `GET` and `DELETE`, the list of known revisions
//! (and a version's name as text), and the server's refusal of a revision it
//! does not know.
//!
//! The 0.15 line is the 0.16 line the same way (`cfg(rmcp_line_0_15)` on top
//! of 0.16's three): 0.15 lacks all that 0.16 lacks, and beside that the
//! custom headers of the client's `POST` (and the config field that holds
//! them), the `MCP-Protocol-Version` header's name, and the client's error for
//! an insufficient scope.

/// The upstream release this line overlays.
#[cfg(not(any(rmcp_line_2, rmcp_line_0_17)))]
pub(crate) const UPSTREAM_VERSION: &str = "1.8.0";

/// The upstream release this line overlays.
#[cfg(all(rmcp_line_0_17, not(rmcp_line_0_16)))]
pub(crate) const UPSTREAM_VERSION: &str = "0.17.0";

/// The upstream release this line overlays.
#[cfg(all(rmcp_line_0_16, not(rmcp_line_0_15)))]
pub(crate) const UPSTREAM_VERSION: &str = "0.16.0";

/// The upstream release this line overlays.
#[cfg(rmcp_line_0_15)]
pub(crate) const UPSTREAM_VERSION: &str = "0.15.0";

/// Marks the item it wraps `#[non_exhaustive]` where upstream marks its
/// counterpart so: 1.8 and 2.2 do.
#[cfg(not(rmcp_line_0_17))]
#[allow(unused_macros)]
macro_rules! upstream_non_exhaustive {
    ($($item:tt)*) => { #[non_exhaustive] $($item)* };
}
/// 0.x marks none of the session's types, nor the client's worker: its
/// applications write struct literals (`SessionConfig { keep_alive: None,
/// ..Default::default() }`) and exhaustive matches, and must keep compiling.
#[cfg(rmcp_line_0_17)]
#[allow(unused_macros)]
macro_rules! upstream_non_exhaustive {
    ($($item:tt)*) => { $($item)* };
}
#[allow(unused_imports)]
pub(crate) use upstream_non_exhaustive;

/// Declares an enum with upstream's variants (the first braces) and the
/// fork's (the second), through the line macro named first: on 1.8 and 2.2
/// both, as upstream's is `#[non_exhaustive]`.
#[cfg(not(rmcp_line_0_17))]
#[allow(unused_macros)]
macro_rules! with_fork_variants {
    ($wrap:ident; $(#[$meta:meta])* $vis:vis enum $name:ident { $($up:tt)* } + { $($fork:tt)* }) => {
        $crate::line::$wrap! { $(#[$meta])* $vis enum $name { $($up)* $($fork)* } }
    };
}
/// 0.x: upstream's variants alone, so that an application's exhaustive
/// `match` compiles; the fork's cases travel as the enum's documentation
/// says.
#[cfg(rmcp_line_0_17)]
#[allow(unused_macros)]
macro_rules! with_fork_variants {
    ($wrap:ident; $(#[$meta:meta])* $vis:vis enum $name:ident { $($up:tt)* } + { $($fork:tt)* }) => {
        $crate::line::$wrap! { $(#[$meta])* $vis enum $name { $($up)* } }
    };
}
#[allow(unused_imports)]
pub(crate) use with_fork_variants;

/// Declares a struct with upstream's fields (the first braces) and the
/// fork's (the second): on 1.8 and 2.2 both, `#[non_exhaustive]`.
#[cfg(not(rmcp_line_0_17))]
#[allow(unused_macros)]
macro_rules! with_fork_fields {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($up:tt)* } + { $($fork:tt)* }) => {
        $(#[$meta])* #[non_exhaustive] $vis struct $name { $($up)* $($fork)* }
    };
}
/// 0.x: upstream's fields alone, so that a full literal and a destructure
/// compile.
#[cfg(rmcp_line_0_17)]
#[allow(unused_macros)]
macro_rules! with_fork_fields {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($up:tt)* } + { $($fork:tt)* }) => {
        $(#[$meta])* $vis struct $name { $($up)* }
    };
}
#[allow(unused_imports)]
pub(crate) use with_fork_fields;

/// Declares the enum of the messages a session's handle sends its worker:
/// on 1.8 and 2.2 upstream's variants and the fork's in the public enum
/// (`#[non_exhaustive]`), which the worker's channel carries (`$cmd` names
/// it).
#[cfg(not(rmcp_line_0_17))]
#[allow(unused_macros)]
macro_rules! with_fork_command {
    ($cmd:ident; $(#[$meta:meta])* $vis:vis enum $name:ident { $($up:tt)* } + { $($fork:tt)* }) => {
        $(#[$meta])* #[non_exhaustive] $vis enum $name { $($up)* $($fork)* }
        pub(crate) type $cmd = $name;
    };
}
/// 0.x: the public enum is upstream's variants alone; the worker's channel
/// carries `$cmd`, a crate-private enum of both.
#[cfg(rmcp_line_0_17)]
#[allow(unused_macros)]
macro_rules! with_fork_command {
    ($cmd:ident; $(#[$meta:meta])* $vis:vis enum $name:ident { $($up:tt)* } + { $($fork:tt)* }) => {
        $(#[$meta])* $vis enum $name { $($up)* }
        $(#[$meta])* pub(crate) enum $cmd { $($up)* $($fork)* }
    };
}
#[allow(unused_imports)]
pub(crate) use with_fork_command;

/// Keeps the first braces' items on 0.x, the second's (after `else`) on
/// 1.8 and 2.2.
#[cfg(not(rmcp_line_0_17))]
#[allow(unused_macros)]
macro_rules! plain_0x {
    ({ $($plain:tt)* } else { $($later:tt)* }) => { $($later)* };
}
#[cfg(rmcp_line_0_17)]
#[allow(unused_macros)]
macro_rules! plain_0x {
    ({ $($plain:tt)* } else { $($later:tt)* }) => { $($plain)* };
}
#[allow(unused_imports)]
pub(crate) use plain_0x;

/// Declares the session manager as it is: these lines have no event store,
/// so on 0.x it has upstream's two public fields and no other.
#[allow(unused_macros)]
macro_rules! with_store_field {
    ($($item:tt)*) => { $crate::line::upstream_non_exhaustive! { $($item)* } };
}
#[allow(unused_imports)]
pub(crate) use with_store_field;

/// The event store a session manager writes through: never one here.
#[allow(unused_macros)]
macro_rules! store_of {
    ($manager:expr) => {
        $crate::line::StoreSlot::default()
    };
}
#[allow(unused_imports)]
pub(crate) use store_of;

/// Drops the items it wraps: on 0.15 to 2.2 the client transport is
/// upstream's alias of the worker transport.
#[allow(unused_macros)]
macro_rules! with_transport_struct {
    ($($item:tt)*) => {};
}
#[allow(unused_imports)]
pub(crate) use with_transport_struct;

/// Expands the items it wraps: 0.15 to 2.2 spell the client transport as
/// upstream's alias, `WorkerTransport<StreamableHttpClientWorker<C>>`, over
/// the fork's worker transport (`transport/worker.rs`).
#[allow(unused_macros)]
macro_rules! with_transport_alias {
    ($($item:tt)*) => { $($item)* };
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
        /// serves: on 0.15 to 2.2 any `Service<RoleServer>`, as upstream
        /// asks (a router, a boxed `into_dyn()` service, a hand-written
        /// one). Every such service is one, through the blanket impl;
        /// nothing else need implement it.
        pub trait SessionService: crate::Service<crate::RoleServer> {}

        impl<S: crate::Service<crate::RoleServer>> SessionService for S {}
    };
}
#[allow(unused_imports)]
pub(crate) use session_service;

/// The header that names a request's revision.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server"
    ),
    not(rmcp_line_0_15)
))]
pub(crate) use crate::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION;

/// The header that names a request's revision: 0.15 has no constant for it
/// (its client sends none, its server reads none), but the fork's server
/// reads it and its client's guard looks for it among the custom headers.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server"
    ),
    rmcp_line_0_15
))]
pub(crate) const HEADER_MCP_PROTOCOL_VERSION: &str = "MCP-Protocol-Version";

/// The upstream release this line overlays.
#[cfg(rmcp_line_2)]
pub(crate) const UPSTREAM_VERSION: &str = "2.2.0";

/// The request an error answers, if it names one.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server-session"
    ),
    not(rmcp_line_0_17)
))]
pub(crate) fn error_request_id(
    error: &crate::model::JsonRpcError,
) -> Option<crate::model::RequestId> {
    error.id.clone()
}

/// In 0.17 an error always names its request.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server-session"
    ),
    rmcp_line_0_17
))]
pub(crate) fn error_request_id(
    error: &crate::model::JsonRpcError,
) -> Option<crate::model::RequestId> {
    Some(error.id.clone())
}

// Upstream's `transport` and `service` modules exist only with `client` or
// `server` (as this crate's `transport`, see lib.rs), so everything below is
// gated on one of them too: a transport feature alone compiles, as upstream
// does (`cargo hack` in `.ci/test --extended` checks the combinations).

/// 1.8 serves every revision it knows with `initialize` and sessions.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server"
    )
))]
pub(crate) fn has_initialize(_version: &crate::model::ProtocolVersion) -> bool {
    true
}

/// The revision named `text`, if this line knows it.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server"
    ),
    not(rmcp_line_0_16)
))]
pub(crate) fn known_version(text: &str) -> Option<crate::model::ProtocolVersion> {
    crate::model::ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|known| known.as_str() == text)
        .cloned()
}

/// The revision named `text`, if 0.16 knows it (it has no list of them, nor
/// a version's name as text).
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server"
    ),
    rmcp_line_0_16
))]
pub(crate) fn known_version(text: &str) -> Option<crate::model::ProtocolVersion> {
    use crate::model::ProtocolVersion;
    match text {
        "2024-11-05" => Some(ProtocolVersion::V_2024_11_05),
        "2025-03-26" => Some(ProtocolVersion::V_2025_03_26),
        "2025-06-18" => Some(ProtocolVersion::V_2025_06_18),
        _ => None,
    }
}

/// What a request naming a revision this line does not know speaks: none,
/// it is refused (`400`), as upstream refuses it.
#[cfg(all(
    any(feature = "client", feature = "server"),
    feature = "transport-streamable-http-server",
    not(feature = "local"),
    not(rmcp_line_0_16)
))]
pub(crate) fn unknown_version() -> Option<crate::model::ProtocolVersion> {
    None
}

/// 0.16 reads no `MCP-Protocol-Version` header: a revision it does not know
/// is served as every other, with `initialize` and sessions.
#[cfg(all(
    any(feature = "client", feature = "server"),
    feature = "transport-streamable-http-server",
    rmcp_line_0_16
))]
pub(crate) fn unknown_version() -> Option<crate::model::ProtocolVersion> {
    Some(crate::model::ProtocolVersion::V_2025_03_26)
}

/// In 1.8 a cancellation always names its request.
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server-session"
    ),
    not(rmcp_line_2)
))]
pub(crate) fn cancelled_request(
    params: &crate::model::CancelledNotificationParam,
) -> Option<crate::model::RequestId> {
    Some(params.request_id.clone())
}

/// In 2.2 a cancellation may name no request (as in 3.11).
#[cfg(all(
    any(feature = "client", feature = "server"),
    any(
        feature = "transport-streamable-http-client",
        feature = "transport-streamable-http-server-session"
    ),
    rmcp_line_2
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

/// Parses a frame the guard's probe judged a response, as upstream parses
/// any server message. The 3.11 line reads a tool call's answer by a
/// shortcut; these lines' unions were not checked for it.
#[cfg(all(
    any(feature = "client", feature = "server"),
    feature = "transport-streamable-http-client"
))]
pub(crate) fn parse_response(data: &str) -> serde_json::Result<crate::model::ServerJsonRpcMessage> {
    serde_json::from_str(data)
}

#[cfg(all(
    any(feature = "client", feature = "server"),
    feature = "transport-streamable-http-server-session"
))]
mod server {
    use std::pin::Pin;

    use futures::Stream;

    use crate::model::{RequestId, ServerRequest};
    use crate::transport::streamable_http_server::session::ServerSseMessage;
    #[cfg(not(feature = "local"))]
    use crate::transport::streamable_http_server::session::SessionManager;
    use crate::transport::streamable_http_server::session::local::SessionError;

    use crate::model::ServerJsonRpcMessage;
    use crate::transport::worker::WorkerQuitReason;

    /// Expands the items it wraps: 1.8 and 2.2 have `SessionStore`, so
    /// their session managers restore sessions.
    #[cfg(not(rmcp_line_0_17))]
    macro_rules! with_session_store {
        ($($item:tt)*) => { $($item)* };
    }
    /// Drops the items it wraps: 0.17 has no `SessionStore`, and its
    /// `SessionManager` no `restore_session`.
    #[cfg(rmcp_line_0_17)]
    macro_rules! with_session_store {
        ($($item:tt)*) => {};
    }
    pub(crate) use with_session_store;

    /// The service's session store, if it has one.
    #[cfg(all(
        feature = "transport-streamable-http-server",
        not(feature = "local"),
        not(rmcp_line_0_17)
    ))]
    pub(crate) fn session_store(
        config: &crate::transport::StreamableHttpServerConfig,
    ) -> Option<&std::sync::Arc<dyn crate::transport::streamable_http_server::session::SessionStore>>
    {
        config.session_store.as_ref()
    }

    /// 0.17 has no session store; this stands for one that is never there.
    #[cfg(rmcp_line_0_17)]
    pub(crate) enum NoSessionStore {}

    #[cfg(rmcp_line_0_17)]
    impl NoSessionStore {
        pub(crate) async fn load(
            &self,
            _session: &str,
        ) -> Result<Option<()>, std::convert::Infallible> {
            match *self {}
        }
    }

    /// 0.17 has no session store.
    #[cfg(all(feature = "transport-streamable-http-server", rmcp_line_0_17))]
    pub(crate) fn session_store(
        _config: &crate::transport::StreamableHttpServerConfig,
    ) -> Option<&NoSessionStore> {
        None
    }

    /// Why a session's worker stops after `idle` without activity.
    #[cfg(not(rmcp_line_0_17))]
    pub(crate) fn idle_quit<E>(idle: std::time::Duration) -> WorkerQuitReason<E> {
        WorkerQuitReason::IdleTimeout(idle)
    }

    /// 0.x's worker has no idle reason; it quits with its own error,
    /// `KeepAliveTimeout`, as upstream 0.x's does.
    #[cfg(rmcp_line_0_17)]
    pub(crate) fn idle_quit(
        idle: std::time::Duration,
    ) -> WorkerQuitReason<
        crate::transport::streamable_http_server::session::local::LocalSessionWorkerError,
    > {
        WorkerQuitReason::fatal(
            crate::transport::streamable_http_server::session::local::LocalSessionWorkerError::KeepAliveTimeout(idle),
            "the session's keep-alive passed",
        )
    }

    /// An event with an id.
    // Only the tower service (no `local` build) writes these.
    #[cfg(not(feature = "local"))]
    pub(crate) fn sse_event(id: String, message: ServerJsonRpcMessage) -> ServerSseMessage {
        frame(Some(id), Some(message), None)
    }

    /// A message without an id (the log assigns it).
    pub(crate) fn sse_message(message: ServerJsonRpcMessage) -> ServerSseMessage {
        frame(None, Some(message), None)
    }

    /// A priming frame: an id and the client's reconnect delay.
    #[cfg(not(feature = "local"))]
    pub(crate) fn priming(id: String, retry: std::time::Duration) -> ServerSseMessage {
        frame(Some(id), None, Some(retry))
    }

    /// 1.8 and 2.2 have no constructor for every shape of frame.
    #[cfg(not(rmcp_line_0_17))]
    fn frame(
        event_id: Option<String>,
        message: Option<ServerJsonRpcMessage>,
        retry: Option<std::time::Duration>,
    ) -> ServerSseMessage {
        let mut frame = ServerSseMessage::default();
        frame.event_id = event_id;
        frame.message = message.map(std::sync::Arc::new);
        frame.retry = retry;
        frame
    }

    /// 0.17's frame has no `Default`, and its fields are all public.
    #[cfg(rmcp_line_0_17)]
    fn frame(
        event_id: Option<String>,
        message: Option<ServerJsonRpcMessage>,
        retry: Option<std::time::Duration>,
    ) -> ServerSseMessage {
        ServerSseMessage {
            event_id,
            message: message.map(std::sync::Arc::new),
            retry,
        }
    }

    /// A stream of SSE events, as 3.11 names it.
    pub(crate) type EventStream =
        Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync + 'static>>;

    /// Drops the items it wraps: 1.8 has no `EventStore`, nor the session
    /// manager's API around it.
    macro_rules! with_event_store {
        ($($item:tt)*) => {};
    }
    pub(crate) use with_event_store;

    /// Declares the enum it wraps without an event-store variant (1.8 has
    /// none), `#[non_exhaustive]` where upstream's is.
    macro_rules! with_event_store_variant {
        ($($item:tt)*) => { $crate::line::upstream_non_exhaustive! { $($item)* } };
    }
    pub(crate) use with_event_store_variant;

    /// Declares the worker's error with upstream's `KeepAliveTimeout` after
    /// its first variant: 0.15 to 2.2 have it (1.8 and 2.2 deprecate it, and
    /// quit an idle worker with `IdleTimeout`), and matches name it.
    macro_rules! with_keep_alive_variant {
        (
            $(#[$meta:meta])*
            $vis:vis enum $name:ident {
                $(#[$first_meta:meta])*
                $first:ident,
                $($rest:tt)*
            }
        ) => {
            $crate::line::upstream_non_exhaustive! {
            $(#[$meta])*
            $vis enum $name {
                $(#[$first_meta])*
                $first,
                /// The session saw no activity for its whole `keep_alive`.
                #[error("no activity for the session's keep-alive of {0:?}")]
                KeepAliveTimeout(std::time::Duration),
                $($rest)*
            }
            }
        };
    }
    pub(crate) use with_keep_alive_variant;

    /// `SessionConfig::default()`'s timeouts and `retry`, 1.8's and 2.2's:
    /// sessions end five minutes after their last activity and one minute
    /// without `initialize`; priming frames ask for three seconds.
    #[cfg(not(rmcp_line_0_17))]
    pub(crate) const SESSION_KEEP_ALIVE: Option<std::time::Duration> =
        Some(std::time::Duration::from_secs(5 * 60));
    #[cfg(not(rmcp_line_0_17))]
    pub(crate) const SESSION_INIT_TIMEOUT: Option<std::time::Duration> =
        Some(std::time::Duration::from_secs(60));
    #[cfg(not(rmcp_line_0_17))]
    pub(crate) const SESSION_SSE_RETRY: Option<std::time::Duration> =
        Some(std::time::Duration::from_secs(3));

    /// 0.x's sessions have no keep-alive and no `initialize` deadline
    /// unless the application sets one: an idle session lives until its
    /// client deletes it, as with upstream 0.x (whose clients cannot recover
    /// a session the server forgot).
    #[cfg(rmcp_line_0_17)]
    pub(crate) const SESSION_KEEP_ALIVE: Option<std::time::Duration> = None;
    #[cfg(rmcp_line_0_17)]
    pub(crate) const SESSION_INIT_TIMEOUT: Option<std::time::Duration> = None;
    /// 0.x's `retry` is the service's (`StreamableHttpServerConfig::sse_retry`),
    /// which upstream's `POST` path already writes into each request stream;
    /// the session adds none of its own, so the application's value (or its
    /// `None`) is the only one the client sees.
    #[cfg(rmcp_line_0_17)]
    pub(crate) const SESSION_SSE_RETRY: Option<std::time::Duration> = None;

    /// 1.8 has no event store, so there is never one to write through.
    #[derive(Clone, Debug, Default)]
    pub(crate) struct StoreSlot(());

    impl StoreSlot {
        pub(crate) fn is_set(&self) -> bool {
            false
        }

        pub(crate) async fn store(
            &self,
            _session: &crate::transport::common::server_side_http::SessionId,
            _key: &str,
            _event: &ServerSseMessage,
        ) -> Option<Result<String, std::convert::Infallible>> {
            None
        }
    }

    pub(crate) fn store_failed(never: std::convert::Infallible) -> SessionError {
        match never {}
    }

    /// A frame that sets the client's reconnect delay and nothing else
    /// (1.8 has no constructor for it).
    pub(crate) fn retry_hint(retry: std::time::Duration) -> ServerSseMessage {
        frame(None, None, Some(retry))
    }

    /// 1.8 names the session switch `stateful_mode`.
    #[cfg(all(feature = "transport-streamable-http-server", not(feature = "local")))]
    pub(crate) fn session_mode(config: &crate::transport::StreamableHttpServerConfig) -> bool {
        config.stateful_mode
    }

    #[cfg(not(feature = "local"))]
    pub(crate) fn has_event_store<M: SessionManager>(_manager: &M) -> bool {
        false
    }

    /// 1.8 does not tell which client request a server request serves; it
    /// goes to the standalone stream, as upstream 1.8 sends it.
    pub(crate) fn originating_request(_request: &ServerRequest) -> Option<RequestId> {
        None
    }
}

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
    use std::collections::HashMap;
    use std::sync::Arc;

    use futures::FutureExt;
    use futures::future::Either;
    use futures::stream::BoxStream;
    use http::{HeaderName, HeaderValue};
    use sse_stream::{Error as SseError, Sse};

    use crate::model::ClientJsonRpcMessage;
    use tokio::sync::mpsc::Receiver;

    use crate::transport::streamable_http_client::{
        StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    };
    use crate::transport::worker::{Worker, WorkerContext, WorkerSendRequest};

    /// 0.x's default client is reqwest's own: connections pooled, and up to
    /// ten redirects followed to any origin (an `http` to `https` 307
    /// included), as upstream 0.x builds it; and the fork's TCP keepalive.
    #[cfg(all(feature = "transport-streamable-http-client-reqwest", rmcp_line_0_17))]
    pub(crate) fn default_http_client() -> reqwest::Client {
        crate::line::with_tcp_keepalive(reqwest::Client::builder())
            .build()
            .unwrap_or_else(|error| {
                // Only a TLS backend that cannot start fails here; the
                // request that needs it will say so.
                tracing::error!(%error, "default HTTP client failed to build; using reqwest's defaults");
                reqwest::Client::new()
            })
    }

    /// 1.8's default client: no idle pooling (a half-read SSE body in the
    /// pool costs a delayed-ACK stall), reqwest's redirects (up to ten, any
    /// origin); 2.2's follows no redirect at all, so custom headers never
    /// reach another host. Each as its upstream builds it, with the fork's
    /// TCP keepalive.
    #[cfg(all(
        feature = "transport-streamable-http-client-reqwest",
        not(rmcp_line_0_17)
    ))]
    pub(crate) fn default_http_client() -> reqwest::Client {
        let builder = reqwest::Client::builder().pool_max_idle_per_host(0);
        let builder = crate::line::with_tcp_keepalive(builder);
        #[cfg(rmcp_line_2)]
        let builder = builder.redirect(reqwest::redirect::Policy::none());
        builder.build().unwrap_or_else(|error| {
            // Only a TLS backend that cannot start fails here; the request
            // that needs it will say so.
            tracing::error!(%error, "default HTTP client failed to build; using reqwest's defaults");
            reqwest::Client::new()
        })
    }

    /// Drops the items it wraps: 1.8's client calls take no response
    /// limits.
    macro_rules! with_response_limits {
        ($($item:tt)*) => {};
    }
    pub(crate) use with_response_limits;

    /// Drops the items it wraps: 1.8's worker has one queue and no request
    /// cancellation.
    macro_rules! with_control_queue {
        ($($item:tt)*) => {};
    }
    pub(crate) use with_control_queue;

    /// The session parameter of `StreamableHttpClient::get_stream`: 1.8
    /// opens a GET only with a session.
    macro_rules! get_session_type {
        () => { std::sync::Arc<str> };
    }
    pub(crate) use get_session_type;

    /// The guard's `StreamableHttpClient::delete_session` (forwarded) and
    /// `get_stream` (to `ResumeGuard::get_default`), as upstream's trait
    /// declares them: both take the custom headers.
    #[cfg(not(rmcp_line_0_16))]
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
    /// 0.16's `delete_session` and `get_stream` take no custom headers: the
    /// guard forwards the deletion as it is, and its `GET`s carry none (as
    /// upstream 0.16's).
    #[cfg(rmcp_line_0_16)]
    macro_rules! delete_and_get_stream {
        () => {
            fn delete_session(
                &self,
                endpoint: std::sync::Arc<str>,
                sid: std::sync::Arc<str>,
                bearer: Option<String>,
            ) -> impl Future<
                Output = Result<
                    (),
                    crate::transport::streamable_http_client::StreamableHttpError<Self::Error>,
                >,
            > + Send
            + '_ {
                self.inner().delete_session(endpoint, sid, bearer)
            }

            fn get_stream(
                &self,
                endpoint: std::sync::Arc<str>,
                sid: crate::line::get_session_type!(),
                cursor: Option<String>,
                bearer: Option<String>,
            ) -> impl Future<
                Output = Result<
                    futures::stream::BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
                    crate::transport::streamable_http_client::StreamableHttpError<Self::Error>,
                >,
            > + Send
            + '_ {
                let sid = crate::line::get_session(sid);
                self.get_default(endpoint, sid, cursor, bearer, Default::default())
            }
        };
    }
    pub(crate) use delete_and_get_stream;

    /// The guard's `StreamableHttpClient::post_message` (to
    /// `ResumeGuard::post_default`), as upstream's trait declares it: with
    /// the custom headers.
    #[cfg(not(rmcp_line_0_15))]
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
    /// 0.15's `post_message` takes no custom headers (nor does its config
    /// hold any): the guard posts with none, as upstream 0.15's client does.
    #[cfg(rmcp_line_0_15)]
    macro_rules! post_message {
        () => {
            fn post_message(
                &self,
                endpoint: std::sync::Arc<str>,
                msg: crate::model::ClientJsonRpcMessage,
                sid: Option<std::sync::Arc<str>>,
                bearer: Option<String>,
            ) -> impl Future<
                Output = Result<
                    crate::transport::streamable_http_client::StreamableHttpPostResponse,
                    crate::transport::streamable_http_client::StreamableHttpError<Self::Error>,
                >,
            > + Send
            + '_ {
                self.post_default(endpoint, msg, sid, bearer, Default::default())
            }
        };
    }
    pub(crate) use post_message;

    /// Whether the server refused the client's credentials: no retry helps.
    #[cfg(not(rmcp_line_0_15))]
    pub(crate) fn refuses_credentials<E: std::error::Error + Send + Sync + 'static>(
        error: &StreamableHttpError<E>,
    ) -> bool {
        matches!(
            error,
            StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_)
        )
    }

    /// 0.15's client has no error for an insufficient scope; a `403` is
    /// read from the status instead.
    #[cfg(rmcp_line_0_15)]
    pub(crate) fn refuses_credentials<E: std::error::Error + Send + Sync + 'static>(
        error: &StreamableHttpError<E>,
    ) -> bool {
        matches!(error, StreamableHttpError::AuthRequired(_))
    }

    /// The session of a `get_stream` call.
    pub(crate) fn get_session(session: Arc<str>) -> Option<Arc<str>> {
        Some(session)
    }

    /// Whether the server said the session is gone (`404`).
    #[cfg(not(rmcp_line_0_17))]
    pub(crate) fn is_session_expired<E: std::error::Error + Send + Sync + 'static>(
        error: &StreamableHttpError<E>,
    ) -> bool {
        matches!(error, StreamableHttpError::SessionExpired)
    }

    /// 0.17's client has no error for a lost session; its `404` is read
    /// from the status instead.
    #[cfg(rmcp_line_0_17)]
    pub(crate) fn is_session_expired<E: std::error::Error + Send + Sync + 'static>(
        _error: &StreamableHttpError<E>,
    ) -> bool {
        false
    }

    /// 1.8's errors carry no HTTP status of their own.
    pub(crate) fn http_status<E: std::error::Error + Send + Sync + 'static>(
        _error: &StreamableHttpError<E>,
    ) -> Option<http::StatusCode> {
        None
    }

    /// 1.8 has no subscriptions.
    pub(crate) fn is_subscription(_request: &crate::model::ClientRequest) -> bool {
        false
    }

    /// 1.8's errors carry no `Retry-After`.
    pub(crate) fn retry_after<E: std::error::Error + Send + Sync + 'static>(
        _error: &StreamableHttpError<E>,
    ) -> Option<std::time::Duration> {
        None
    }

    /// 1.8 reads SSE events of any size.
    #[derive(Clone, Copy, Debug, Default)]
    pub(crate) struct ResponseLimits(());

    /// None: these lines' workers await each `POST` before the next
    /// message, so a wait for the answer there would hold every request of
    /// the session behind it.
    pub(crate) fn answer_wait(
        _resume: &crate::transport::common::client_side_sse::ResumeConfig,
    ) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    pub(crate) fn event_limit(_limits: &ResponseLimits) -> usize {
        usize::MAX
    }

    pub(crate) fn post<C: StreamableHttpClient>(
        client: &C,
        endpoint: Arc<str>,
        message: ClientJsonRpcMessage,
        session: Option<Arc<str>>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        _limits: ResponseLimits,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>>>
    + Send
    + '_ {
        post_with_headers(client, endpoint, message, session, bearer, headers)
    }

    /// A `POST`, with the custom headers.
    #[cfg(not(rmcp_line_0_15))]
    fn post_with_headers<C: StreamableHttpClient>(
        client: &C,
        endpoint: Arc<str>,
        message: ClientJsonRpcMessage,
        session: Option<Arc<str>>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>>>
    + Send
    + '_ {
        client.post_message(endpoint, message, session, bearer, headers)
    }

    /// 0.15's `POST` takes no custom headers; it sends none, as upstream
    /// 0.15's client does.
    #[cfg(rmcp_line_0_15)]
    fn post_with_headers<C: StreamableHttpClient>(
        client: &C,
        endpoint: Arc<str>,
        message: ClientJsonRpcMessage,
        session: Option<Arc<str>>,
        bearer: Option<String>,
        _headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>>>
    + Send
    + '_ {
        client.post_message(endpoint, message, session, bearer)
    }

    /// The GET. Without a session 1.8's client cannot send one (a stateless
    /// server's request stream): the resume ends as a server without SSE.
    pub(crate) fn get<C: StreamableHttpClient>(
        client: &C,
        endpoint: Arc<str>,
        session: Option<Arc<str>>,
        cursor: Option<String>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        _event_limit: usize,
    ) -> impl Future<
        Output = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<C::Error>>,
    > + Send
    + '_ {
        match session {
            Some(session) => Either::Left(get_with_session(
                client, endpoint, session, cursor, bearer, headers,
            )),
            None => Either::Right(
                futures::future::ready(Err(StreamableHttpError::ServerDoesNotSupportSse)).boxed(),
            ),
        }
    }

    /// A `GET` on `session`, with the custom headers.
    #[cfg(not(rmcp_line_0_16))]
    fn get_with_session<C: StreamableHttpClient>(
        client: &C,
        endpoint: Arc<str>,
        session: Arc<str>,
        cursor: Option<String>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<
        Output = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<C::Error>>,
    > + Send
    + '_ {
        client.get_stream(endpoint, session, cursor, bearer, headers)
    }

    /// 0.16's `GET` takes no custom headers; it sends none, as upstream
    /// 0.16's client does.
    #[cfg(rmcp_line_0_16)]
    fn get_with_session<C: StreamableHttpClient>(
        client: &C,
        endpoint: Arc<str>,
        session: Arc<str>,
        cursor: Option<String>,
        bearer: Option<String>,
        _headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<
        Output = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<C::Error>>,
    > + Send
    + '_ {
        client.get_stream(endpoint, session, cursor, bearer)
    }

    /// 1.8's worker has a single queue: there is no control queue.
    pub(crate) fn take_control<W: Worker>(
        _context: &mut WorkerContext<W>,
    ) -> Option<Receiver<WorkerSendRequest<W>>> {
        None
    }

    /// 1.8 has no request cancellation in the worker.
    pub(crate) fn cancelled_before_sending<W: Worker>(_request: &WorkerSendRequest<W>) -> bool {
        false
    }
}
