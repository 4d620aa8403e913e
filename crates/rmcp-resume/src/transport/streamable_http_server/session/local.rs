//! The in-process session manager, rebuilt around per-stream replay logs.
//!
//! Same public API as upstream rmcp 3.11.0's `session::local`; what differs:
//!
//! - Every stream (the standalone stream and each request's stream) keeps a
//!   bounded log. Resuming replays the events strictly *after* the cursor
//!   (upstream re-sent the cursor event itself), and a cursor the log no
//!   longer covers is reported with the log's floor instead of being replayed
//!   from the floor as if nothing were missing.
//! - A request's stream stays resumable for `completed_cache_ttl` after its
//!   response, so a response produced while the client was away is delivered
//!   on resume.
//! - The worker never awaits a reader: each connection is fed by its own pump
//!   task (see `log`), so a stalled reader stalls nothing else.
//! - The standalone stream's ids start at 1, so the priming id `0` is a true
//!   predecessor of the first event (upstream's collided with it).
//! - When the primary standalone connection goes away, the newest shadow
//!   (#659) is promoted and receives what the primary had not delivered.

mod log;

use std::collections::{HashMap, HashSet, VecDeque};
use std::num::ParseIntError;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use self::log::{Bell, CursorFit, LogReader, ReaderId, StreamLog, ring};
use super::{
    EventStore, EventStoreError, EventStream, RestoreOutcome, ServerSseMessage, SessionManager,
};
use crate::model::{
    ClientJsonRpcMessage, ClientNotification, GetExtensions, GetMeta, JsonRpcMessage,
    ProgressToken, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use crate::transport::WorkerTransport;
use crate::transport::common::server_side_http::{SessionId, session_id};
use crate::transport::resumption::{EventCursor, ReplayNotice, RmcpEventId};
use crate::transport::worker::{Worker, WorkerConfig, WorkerContext, WorkerQuitReason};

/// Shadow streams kept per session; beyond this the oldest is closed.
pub const MAX_SHADOW_STREAMS: usize = 32;

/// Keeps every session of this process in memory.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct LocalSessionManager {
    event_store: Option<Arc<dyn EventStore>>,
    /// Configuration given to each new session.
    pub session_config: SessionConfig,
    /// Live sessions by id.
    pub sessions: tokio::sync::RwLock<HashMap<SessionId, LocalSessionHandle>>,
}

impl LocalSessionManager {
    /// Persists every event in `event_store`, which then assigns event ids and
    /// answers resumes.
    pub fn with_event_store(self, event_store: Arc<dyn EventStore>) -> Self {
        Self {
            event_store: Some(event_store),
            ..self
        }
    }

    async fn handle(&self, id: &SessionId) -> Result<LocalSessionHandle, LocalSessionManagerError> {
        let sessions = self.sessions.read().await;
        sessions
            .get(id)
            .cloned()
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))
    }

    fn spawn_session(&self, id: SessionId) -> (LocalSessionHandle, SessionTransport) {
        let (handle, worker) =
            new_session(id, self.session_config.clone(), self.event_store.clone());
        (handle, WorkerTransport::spawn(worker))
    }

    /// Resumes `cursor` on session `id`, saying what the replay covers.
    ///
    /// Fork-only: the service uses it to answer with a replay floor instead of
    /// an empty stream.
    pub async fn resume_with_notice(
        &self,
        id: &SessionId,
        cursor: &str,
    ) -> Result<ResumedStream, LocalSessionManagerError> {
        if let Some(store) = &self.event_store {
            let stream = store
                .replay_events_after(cursor)
                .await
                .map_err(SessionError::EventStore)?;
            let cursor = EventCursor::parse(cursor).map_err(EventIdParseError::Malformed)?;
            return Ok(ResumedStream {
                notice: ReplayNotice {
                    cursor,
                    floor: None,
                    complete: true,
                },
                stream,
            });
        }
        let event_id: EventId = cursor.parse()?;
        let handle = self.handle(id).await?;
        Ok(handle.resume_with_notice(event_id).await?)
    }
}

/// A resumed stream and what the server can say about its continuity.
#[non_exhaustive]
pub struct ResumedStream {
    /// What the first frame of the response declares.
    pub notice: ReplayNotice,
    /// The events, replayed then live.
    pub stream: EventStream,
}

impl std::fmt::Debug for ResumedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumedStream")
            .field("notice", &self.notice)
            .finish_non_exhaustive()
    }
}

/// Errors of [`LocalSessionManager`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalSessionManagerError {
    /// The `Last-Event-ID` is not an event id of this server.
    #[error("Invalid event id: {0}")]
    InvalidEventId(#[from] EventIdParseError),
    /// No session with this id.
    #[error("Session not found: {0}")]
    SessionNotFound(SessionId),
    /// The session refused the operation.
    #[error("Session error: {0}")]
    SessionError(#[from] SessionError),
}

impl SessionManager for LocalSessionManager {
    type Error = LocalSessionManagerError;
    type Transport = SessionTransport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let id = session_id();
        let (handle, transport) = self.spawn_session(id.clone());
        self.sessions.write().await.insert(id.clone(), handle);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.handle(id).await?.initialize(message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.sessions.read().await.contains_key(id))
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let removed = self.sessions.write().await.remove(id);
        if let Some(handle) = removed {
            match handle.close().await {
                Ok(()) | Err(SessionError::SessionServiceTerminated) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let handle = self.handle(id).await?;
        let opened = handle.open_request_stream().await?;
        handle.push_message(message, opened.http_request_id).await?;
        Ok(opened.stream)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.handle(id).await?.push_message(message, None).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self
            .handle(id)
            .await?
            .open_standalone_stream()
            .await?
            .stream)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // Through upstream's trait a caller cannot see the notice; a cursor
        // that is not covered is an error here, never a silent partial replay.
        let resumed = self.resume_with_notice(id, &last_event_id).await?;
        if !resumed.notice.complete {
            return Err(SessionError::InvalidEventId.into());
        }
        Ok(resumed.stream)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // Held across the check and the insert: concurrent restores of one id
        // must not both spawn a worker.
        let mut sessions = self.sessions.write().await;
        match sessions.entry(id) {
            std::collections::hash_map::Entry::Occupied(_) => Ok(RestoreOutcome::AlreadyPresent),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let (handle, transport) = self.spawn_session(slot.key().clone());
                slot.insert(handle);
                Ok(RestoreOutcome::Restored(transport))
            }
        }
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.event_store.clone()
    }
}

/// The id of an event on one of a session's streams: `index` on the
/// standalone stream, `index/M` on the stream of HTTP request `M`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventId {
    index: usize,
    http_request_id: Option<HttpRequestId>,
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        RmcpEventId {
            index: self.index as u64,
            stream: self.http_request_id,
        }
        .fmt(f)
    }
}

/// Why a string is not an [`EventId`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum EventIdParseError {
    /// The index is not a number.
    #[error("Invalid index: {0}")]
    InvalidIndex(ParseIntError),
    /// The request id is not a number.
    #[error("Invalid numeric request id: {0}")]
    InvalidNumericRequestId(ParseIntError),
    /// Kept for compatibility with upstream; not produced.
    #[error("Missing request id type")]
    InvalidRequestIdType,
    /// Kept for compatibility with upstream; not produced.
    #[error("Missing request id")]
    MissingRequestId,
    /// Not `N` or `N/M` (empty, extra slashes, overflow, too long, …).
    #[error("Malformed event id: {0}")]
    Malformed(crate::transport::resumption::CursorParseError),
}

impl std::str::FromStr for EventId {
    type Err = EventIdParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let id: RmcpEventId = s.parse().map_err(EventIdParseError::Malformed)?;
        let index = usize::try_from(id.index).map_err(|_| {
            EventIdParseError::Malformed(crate::transport::resumption::CursorParseError::Overflow {
                id: s.to_owned(),
            })
        })?;
        Ok(Self {
            http_request_id: id.stream,
            index,
        })
    }
}

impl EventId {
    fn cursor(&self) -> EventCursor {
        EventCursor::Rmcp(RmcpEventId {
            index: self.index as u64,
            stream: self.http_request_id,
        })
    }

    fn on(stream: Option<HttpRequestId>, index: u64) -> EventCursor {
        EventCursor::Rmcp(RmcpEventId { index, stream })
    }
}

type HttpRequestId = u64;

/// Errors of one session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The cursor names an event this session never produced.
    #[error("Invalid event id")]
    InvalidEventId,
    /// The event store failed.
    #[error("Event store error: {0}")]
    EventStore(#[source] EventStoreError),
    /// The events after the cursor were evicted from the stream's log.
    #[error("cursor {cursor} is below the replay floor {floor} of its stream")]
    CursorBelowFloor {
        /// The cursor asked for.
        cursor: EventId,
        /// The oldest event still retained.
        floor: EventId,
    },
    /// The cursor's request stream never existed, or its retention expired.
    #[error("cursor {cursor} names a request stream this session does not have")]
    UnknownStream {
        /// The cursor asked for.
        cursor: EventId,
    },
    /// The cursor's request stream is complete and everything was delivered.
    #[error("stream of cursor {cursor} is complete; nothing follows it")]
    StreamComplete {
        /// The cursor asked for.
        cursor: EventId,
    },
    /// I/O failed.
    #[error("IO error: {0}")]
    Io(#[from] std::io::Error),
    /// The session's worker has stopped.
    #[error("Session service terminated")]
    SessionServiceTerminated,
    /// An event id did not parse.
    #[error("Cannot parse event id: {0}")]
    EventIdParseError(#[from] EventIdParseError),
    /// The request's stream is gone.
    #[error("Channel closed: {0:?}")]
    ChannelClosed(Option<HttpRequestId>),
    /// A request id was reused.
    #[error("Invalid request id: {0}")]
    DuplicatedRequestId(HttpRequestId),
}

impl From<SessionError> for std::io::Error {
    fn from(value: SessionError) -> Self {
        match value {
            SessionError::Io(io) => io,
            other => std::io::Error::other(format!("Session error: {other}")),
        }
    }
}

/// The receiving end of one SSE connection.
#[derive(Debug)]
#[non_exhaustive]
pub struct StreamableHttpMessageReceiver {
    /// The request stream it belongs to, or `None` for the standalone stream.
    pub http_request_id: Option<HttpRequestId>,
    /// The events.
    pub inner: mpsc::Receiver<ServerSseMessage>,
}

/// A new connection to one of a session's streams, read straight from the
/// stream's log (fork-only; the `Receiver`-based API adds a task per stream).
#[non_exhaustive]
pub struct OpenedStream {
    /// The request stream, or `None` for the standalone stream.
    pub http_request_id: Option<HttpRequestId>,
    /// The events.
    pub stream: EventStream,
    /// Index of the first event this connection will carry, when it is a
    /// primary; `None` for a keep-alive-only shadow.
    start: Option<u64>,
}

impl OpenedStream {
    /// The id of the event just before the first one this connection will
    /// carry: the honest priming id for a fresh standalone connection.
    /// `None` for a shadow, whose first event is not known yet.
    pub fn priming_event_id(&self) -> Option<String> {
        let before = self.start?.checked_sub(1)?;
        Some(match self.http_request_id {
            Some(m) => format!("{before}/{m}"),
            None => before.to_string(),
        })
    }

    fn into_receiver(self) -> StreamableHttpMessageReceiver {
        StreamableHttpMessageReceiver {
            http_request_id: self.http_request_id,
            inner: forward(self.stream),
        }
    }
}

impl std::fmt::Debug for OpenedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedStream")
            .field("http_request_id", &self.http_request_id)
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

/// A message from the HTTP side to a session's worker.
#[derive(Debug)]
#[non_exhaustive]
pub enum SessionEvent {
    /// Open a request stream read straight from its log (fork-only).
    OpenRequestStream {
        /// Answer.
        responder: oneshot::Sender<Result<OpenedStream, SessionError>>,
    },
    /// Open a standalone connection read straight from the log (fork-only).
    OpenStandaloneStream {
        /// Answer.
        responder: oneshot::Sender<Result<OpenedStream, SessionError>>,
    },
    /// Resume, saying what the replay covers (fork-only).
    ResumeWithNotice {
        /// Answer.
        responder: oneshot::Sender<Result<ResumedStream, SessionError>>,
        /// The cursor.
        last_event_id: EventId,
    },
    /// Close the connection carrying a JSON-RPC request's response, keeping
    /// its stream resumable (fork-only; SEP-1699 from inside a handler).
    CloseRequestConnection {
        /// Answer.
        responder: oneshot::Sender<Result<(), SessionError>>,
        /// The request whose stream's connection closes.
        request_id: RequestId,
        /// The `retry` to send before closing.
        retry_interval: Option<Duration>,
    },
    /// Open a standalone connection.
    EstablishCommonChannel {
        /// Answer.
        responder: oneshot::Sender<Result<StreamableHttpMessageReceiver, SessionError>>,
    },
    /// Close a stream's connection without ending the stream (SEP-1699).
    CloseSseStream {
        /// Answer.
        responder: oneshot::Sender<Result<(), SessionError>>,
        /// The request stream, or `None` for the standalone stream.
        http_request_id: Option<HttpRequestId>,
        /// The `retry` to send before closing.
        retry_interval: Option<Duration>,
    },
    /// End the session.
    Close,
    /// The initialize request.
    InitializeRequest {
        /// Answer.
        responder: oneshot::Sender<Result<ServerJsonRpcMessage, SessionError>>,
        /// The request.
        request: ClientJsonRpcMessage,
    },
    /// Resume from an event id.
    Resume {
        /// Answer.
        responder: oneshot::Sender<Result<StreamableHttpMessageReceiver, SessionError>>,
        /// The cursor.
        last_event_id: EventId,
    },
    /// Forget a request stream.
    CloseRequestWiseChannel {
        /// Answer.
        responder: oneshot::Sender<Result<(), SessionError>>,
        /// The stream.
        id: HttpRequestId,
    },
    /// Open a request stream.
    EstablishRequestWiseChannel {
        /// Answer.
        responder: oneshot::Sender<Result<StreamableHttpMessageReceiver, SessionError>>,
    },
    /// A client message, with the request stream it arrived on.
    ClientMessage {
        /// The message.
        message: ClientJsonRpcMessage,
        /// Its request stream, if it was a request.
        http_request_id: Option<HttpRequestId>,
    },
}

/// Kept for compatibility with upstream; not produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SessionQuitReason {
    /// Cancelled.
    Cancelled,
    /// The handler did not answer `initialize`.
    ExpectInitializeResponse,
    /// The first message was not `initialize`.
    ExpectInitializeRequest,
    /// The client ended the session.
    ClientTerminated,
    /// The service ended.
    ServiceTerminated,
}

/// A cloneable handle to a session's worker.
#[derive(Debug, Clone)]
pub struct LocalSessionHandle {
    id: SessionId,
    // The worker ends once every handle is gone.
    event_tx: mpsc::Sender<SessionEvent>,
}

impl LocalSessionHandle {
    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    async fn send(&self, event: SessionEvent) -> Result<(), SessionError> {
        self.event_tx
            .send(event)
            .await
            .map_err(|_| SessionError::SessionServiceTerminated)
    }

    async fn ask<T>(
        &self,
        event: impl FnOnce(oneshot::Sender<Result<T, SessionError>>) -> SessionEvent,
    ) -> Result<T, SessionError> {
        let (tx, rx) = oneshot::channel();
        self.send(event(tx)).await?;
        rx.await
            .map_err(|_| SessionError::SessionServiceTerminated)?
    }

    /// Ends the session.
    pub async fn close(&self) -> Result<(), SessionError> {
        self.send(SessionEvent::Close).await
    }

    /// Hands a client message to the session.
    pub async fn push_message(
        &self,
        message: ClientJsonRpcMessage,
        http_request_id: Option<HttpRequestId>,
    ) -> Result<(), SessionError> {
        self.send(SessionEvent::ClientMessage {
            message,
            http_request_id,
        })
        .await
    }

    /// Opens a request stream.
    pub async fn establish_request_wise_channel(
        &self,
    ) -> Result<StreamableHttpMessageReceiver, SessionError> {
        self.ask(|responder| SessionEvent::EstablishRequestWiseChannel { responder })
            .await
    }

    /// Opens a request stream, read straight from its log (fork-only).
    pub async fn open_request_stream(&self) -> Result<OpenedStream, SessionError> {
        self.ask(|responder| SessionEvent::OpenRequestStream { responder })
            .await
    }

    /// Opens a standalone connection, read straight from the log: the
    /// primary if none is live, else a shadow (fork-only).
    pub async fn open_standalone_stream(&self) -> Result<OpenedStream, SessionError> {
        self.ask(|responder| SessionEvent::OpenStandaloneStream { responder })
            .await
    }

    /// Forgets a request stream.
    pub async fn close_request_wise_channel(
        &self,
        request_id: HttpRequestId,
    ) -> Result<(), SessionError> {
        self.ask(|responder| SessionEvent::CloseRequestWiseChannel {
            id: request_id,
            responder,
        })
        .await
    }

    /// Opens a standalone connection: the primary if none is live, else a
    /// keep-alive-only shadow.
    pub async fn establish_common_channel(
        &self,
    ) -> Result<StreamableHttpMessageReceiver, SessionError> {
        self.ask(|responder| SessionEvent::EstablishCommonChannel { responder })
            .await
    }

    /// Resumes after `last_event_id`; fails unless every later event is retained.
    pub async fn resume(
        &self,
        last_event_id: EventId,
    ) -> Result<StreamableHttpMessageReceiver, SessionError> {
        self.ask(|responder| SessionEvent::Resume {
            last_event_id,
            responder,
        })
        .await
    }

    /// Resumes after `last_event_id`, saying what the replay covers. A
    /// standalone cursor that is not covered still gets a stream (from the
    /// floor, or live), with a notice saying so; a request cursor fails.
    pub async fn resume_with_notice(
        &self,
        last_event_id: EventId,
    ) -> Result<ResumedStream, SessionError> {
        self.ask(|responder| SessionEvent::ResumeWithNotice {
            last_event_id,
            responder,
        })
        .await
    }

    /// Runs the initialize exchange.
    pub async fn initialize(
        &self,
        request: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionError> {
        self.ask(|responder| SessionEvent::InitializeRequest { request, responder })
            .await
    }

    /// Closes a request stream's connection, sending `retry` first (SEP-1699).
    pub async fn close_sse_stream(
        &self,
        http_request_id: HttpRequestId,
        retry_interval: Option<Duration>,
    ) -> Result<(), SessionError> {
        self.ask(|responder| SessionEvent::CloseSseStream {
            http_request_id: Some(http_request_id),
            retry_interval,
            responder,
        })
        .await
    }

    /// Closes the connection that carries `request_id`'s response, sending
    /// `retry` first (fork-only).
    ///
    /// Upstream's [`close_sse_stream`](Self::close_sse_stream) needs the
    /// transport's internal request-stream number, which a handler never
    /// sees; a handler does know its own JSON-RPC request id. The stream
    /// stays resumable: the client's `GET` with `Last-Event-ID` picks up
    /// everything produced after the cut, the response included.
    pub async fn close_request_connection(
        &self,
        request_id: RequestId,
        retry_interval: Option<Duration>,
    ) -> Result<(), SessionError> {
        self.ask(|responder| SessionEvent::CloseRequestConnection {
            request_id,
            retry_interval,
            responder,
        })
        .await
    }

    /// Closes the standalone connection(s), sending `retry` first.
    pub async fn close_standalone_sse_stream(
        &self,
        retry_interval: Option<Duration>,
    ) -> Result<(), SessionError> {
        self.ask(|responder| SessionEvent::CloseSseStream {
            http_request_id: None,
            retry_interval,
            responder,
        })
        .await
    }
}

/// The transport a session's service runs on.
pub type SessionTransport = WorkerTransport<LocalSessionWorker>;

/// Why a session's worker stopped.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalSessionWorkerError {
    /// The worker task failed.
    #[error("Tokio join error {0}")]
    TokioJoinError(#[from] tokio::task::JoinError),
    /// The transport closed.
    #[error("Transport closed")]
    TransportClosed,
    /// No `initialize` arrived in time.
    #[error("init timeout after {}ms", _0.as_millis())]
    InitTimeout(Duration),
    /// A message from the handler could not be routed.
    #[error("fail to handle message: {0}")]
    FailToHandleMessage(SessionError),
    /// The initialize answer could not be delivered.
    #[error("fail to send initialize request {0}")]
    FailToSendInitializeRequest(SessionError),
    /// Something other than `initialize` came first.
    #[error("unexpected message: {0:?}")]
    UnexpectedEvent(SessionEvent),
    /// Every handle is gone.
    #[error("transport terminated")]
    TransportTerminated,
}

/// Configuration of one session.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionConfig {
    /// How long a request's stream stays resumable after its response.
    pub completed_cache_ttl: Duration,
    /// Events each stream retains for replay (the replay window), and the
    /// depth of the queue from the HTTP side.
    pub channel_capacity: usize,
    /// End the session if `initialize` does not arrive within this.
    pub init_timeout: Option<Duration>,
    /// The `retry` sent in priming events.
    pub sse_retry: Option<Duration>,
    /// End the session after this long without any activity.
    pub keep_alive: Option<Duration>,
    /// Answered request streams kept resumable at once; beyond this the
    /// oldest is forgotten before its `completed_cache_ttl` (fork-only).
    pub max_completed_streams: usize,
}

impl SessionConfig {
    /// Default `completed_cache_ttl`: one minute.
    pub const DEFAULT_COMPLETED_CACHE_TTL: Duration = Duration::from_secs(60);
    /// Default `init_timeout`: one minute.
    pub const DEFAULT_INIT_TIMEOUT: Duration = Self::DEFAULT_COMPLETED_CACHE_TTL;
    /// Default `channel_capacity`.
    pub const DEFAULT_CHANNEL_CAPACITY: usize = 16;
    /// Default `sse_retry`: three seconds.
    pub const DEFAULT_SSE_RETRY: Duration = Duration::from_millis(3_000);
    /// Default `keep_alive`: five minutes.
    pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(5 * 60);
    /// Default `max_completed_streams`.
    pub const DEFAULT_MAX_COMPLETED_STREAMS: usize = 1024;
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            completed_cache_ttl: Self::DEFAULT_COMPLETED_CACHE_TTL,
            channel_capacity: Self::DEFAULT_CHANNEL_CAPACITY,
            init_timeout: Some(Self::DEFAULT_INIT_TIMEOUT),
            sse_retry: Some(Self::DEFAULT_SSE_RETRY),
            keep_alive: Some(Self::DEFAULT_KEEP_ALIVE),
            max_completed_streams: Self::DEFAULT_MAX_COMPLETED_STREAMS,
        }
    }
}

/// Creates a session's handle and the worker to spawn for it.
pub fn create_local_session(
    id: impl Into<SessionId>,
    config: SessionConfig,
) -> (LocalSessionHandle, LocalSessionWorker) {
    new_session(id.into(), config, None)
}

fn new_session(
    id: SessionId,
    config: SessionConfig,
    event_store: Option<Arc<dyn EventStore>>,
) -> (LocalSessionHandle, LocalSessionWorker) {
    let (event_tx, event_rx) = mpsc::channel(config.channel_capacity.max(1));
    let (bell, _) = watch::channel(0u64);
    tracing::debug!(session_id = %id, "create new session");
    let common = StreamLog::new(None, 1, config.channel_capacity, MAX_SHADOW_STREAMS);
    let worker = LocalSessionWorker {
        id: id.clone(),
        config,
        event_store,
        event_rx,
        common,
        requests: HashMap::new(),
        completed: VecDeque::new(),
        routes: HashMap::new(),
        next_http_request_id: 0,
        next_reader: 0,
        bell: Arc::new(bell),
    };
    (LocalSessionHandle { id, event_tx }, worker)
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Route {
    Request(RequestId),
    Progress(ProgressToken),
}

#[derive(Debug)]
struct RequestStream {
    log: Arc<StreamLog>,
    routes: HashSet<Route>,
    completed_at: Option<Instant>,
}

/// Runs one session: routes the handler's messages into stream logs and
/// serves the HTTP side's requests for connections.
pub struct LocalSessionWorker {
    id: SessionId,
    config: SessionConfig,
    event_store: Option<Arc<dyn EventStore>>,
    event_rx: mpsc::Receiver<SessionEvent>,
    common: Arc<StreamLog>,
    requests: HashMap<HttpRequestId, RequestStream>,
    /// Answered request streams in the order they completed, so expiry is
    /// amortised O(1) however many a session has answered.
    completed: VecDeque<(Instant, HttpRequestId)>,
    routes: HashMap<Route, HttpRequestId>,
    next_http_request_id: HttpRequestId,
    next_reader: ReaderId,
    bell: Bell,
}

impl Drop for LocalSessionWorker {
    // However the worker stops, every connection to the session ends.
    fn drop(&mut self) {
        self.common.close();
        for stream in self.requests.values() {
            stream.log.close();
        }
        ring(&self.bell);
    }
}

impl std::fmt::Debug for LocalSessionWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSessionWorker")
            .field("id", &self.id)
            .field("requests", &self.requests.len())
            .finish_non_exhaustive()
    }
}

impl LocalSessionWorker {
    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    fn reader(&mut self) -> ReaderId {
        self.next_reader = self.next_reader.wrapping_add(1);
        self.next_reader
    }

    fn connect_primary(&mut self, log: &Arc<StreamLog>, position: u64) -> LogReader {
        let id = self.reader();
        log.attach_primary(id, position);
        ring(&self.bell);
        LogReader::new(log.clone(), id, self.bell.clone())
    }

    fn connect_shadow(&mut self) -> LogReader {
        let id = self.reader();
        self.common.attach_shadow(id);
        ring(&self.bell);
        tracing::debug!(session_id = %self.id, "standalone stream already live; opening a shadow");
        LogReader::new(self.common.clone(), id, self.bell.clone())
    }

    async fn append(
        &mut self,
        log: &Arc<StreamLog>,
        event: ServerSseMessage,
    ) -> Result<(), SessionError> {
        let id = match &self.event_store {
            Some(store) => {
                let stream_id = match log.stream {
                    Some(m) => format!("{}:{m}", self.id),
                    None => format!("{}:common", self.id),
                };
                Some(
                    store
                        .store_event(&stream_id, &event)
                        .await
                        .map_err(SessionError::EventStore)?,
                )
            }
            None => None,
        };
        log.append(event, id);
        ring(&self.bell);
        Ok(())
    }

    async fn open_request_stream(&mut self) -> Result<OpenedStream, SessionError> {
        let m = self.next_http_request_id;
        self.next_http_request_id = m.wrapping_add(1);
        if self.requests.contains_key(&m) {
            return Err(SessionError::DuplicatedRequestId(m));
        }
        let log = StreamLog::new(Some(m), 0, self.config.channel_capacity, 0);
        if let Some(retry) = self.config.sse_retry {
            self.append(&log, ServerSseMessage::retry(retry)).await?;
        }
        self.requests.insert(
            m,
            RequestStream {
                log: log.clone(),
                routes: HashSet::new(),
                completed_at: None,
            },
        );
        let reader = self.connect_primary(&log, 0);
        Ok(OpenedStream {
            http_request_id: Some(m),
            stream: Box::pin(reader),
            start: Some(0),
        })
    }

    fn open_common(&mut self) -> OpenedStream {
        let (reader, start) = if self.common.lock().has_primary() {
            (self.connect_shadow(), None)
        } else {
            let common = self.common.clone();
            let position = common.resume_position();
            (self.connect_primary(&common, position), Some(position))
        };
        OpenedStream {
            http_request_id: None,
            stream: Box::pin(reader),
            start,
        }
    }

    fn resume(&mut self, cursor: EventId) -> Result<ResumedStream, SessionError> {
        let index = cursor.index as u64;
        match cursor.http_request_id {
            Some(m) => {
                let log = self
                    .requests
                    .get(&m)
                    .map(|r| r.log.clone())
                    .ok_or_else(|| SessionError::UnknownStream {
                        cursor: cursor.clone(),
                    })?;
                let (fit, floor, head, finished) = {
                    let state = log.lock();
                    (
                        state.fit(index),
                        state.floor(),
                        state.next_index(),
                        state.is_finished(),
                    )
                };
                match fit {
                    CursorFit::Covered if finished && index.saturating_add(1) >= head => {
                        Err(SessionError::StreamComplete { cursor })
                    }
                    CursorFit::Covered => {
                        let inner = self.connect_primary(&log, index.saturating_add(1));
                        Ok(ResumedStream {
                            notice: ReplayNotice {
                                cursor: cursor.cursor(),
                                floor: Some(EventId::on(Some(m), floor)),
                                complete: true,
                            },
                            stream: Box::pin(inner),
                        })
                    }
                    CursorFit::BelowFloor => Err(SessionError::CursorBelowFloor {
                        cursor,
                        floor: EventId {
                            http_request_id: Some(m),
                            index: usize::try_from(floor).unwrap_or(usize::MAX),
                        },
                    }),
                    CursorFit::BeyondHead => Err(SessionError::InvalidEventId),
                }
            }
            None => {
                let common = self.common.clone();
                let (fit, floor, head) = {
                    let state = common.lock();
                    (state.fit(index), state.floor(), state.next_index())
                };
                // The peer says it lost its standalone connection, so it takes
                // over as primary; an old primary, if still open, is demoted to
                // a shadow rather than killed (no leapfrog, #659).
                let (position, complete) = match fit {
                    CursorFit::Covered => (index.saturating_add(1), true),
                    // Deliver what is retained after the gap; the notice tells
                    // the peer what is missing.
                    CursorFit::BelowFloor => (floor, false),
                    // Not an id of this incarnation of the session: go live.
                    CursorFit::BeyondHead => (head, false),
                };
                let inner = self.connect_primary(&common, position);
                Ok(ResumedStream {
                    notice: ReplayNotice {
                        cursor: cursor.cursor(),
                        floor: Some(EventId::on(None, floor)),
                        complete,
                    },
                    stream: Box::pin(inner),
                })
            }
        }
    }

    fn route_of(&self, message: &ServerJsonRpcMessage) -> (Option<HttpRequestId>, bool) {
        let by = |route: Route| self.routes.get(&route).copied();
        match message {
            JsonRpcMessage::Response(response) => (by(Route::Request(response.id.clone())), true),
            JsonRpcMessage::Error(error) => {
                (error.id.clone().and_then(|id| by(Route::Request(id))), true)
            }
            JsonRpcMessage::Notification(notification) => match &notification.notification {
                ServerNotification::ProgressNotification(progress) => (
                    by(Route::Progress(progress.params.progress_token.clone())),
                    false,
                ),
                ServerNotification::CancelledNotification(cancelled) => (
                    cancelled
                        .params
                        .request_id
                        .clone()
                        .and_then(|id| by(Route::Request(id))),
                    false,
                ),
                _ => (None, false),
            },
            // SEP-2260: a server request made on behalf of a client request
            // rides that request's stream.
            JsonRpcMessage::Request(request) => (
                request
                    .request
                    .extensions()
                    .get::<crate::service::OriginatingRequestId>()
                    .and_then(|origin| by(Route::Request(origin.0.clone()))),
                false,
            ),
        }
    }

    async fn deliver(&mut self, message: ServerJsonRpcMessage) -> Result<(), SessionError> {
        let (target, completes) = self.route_of(&message);
        let event = ServerSseMessage::from_message(message);
        let Some(m) = target else {
            let common = self.common.clone();
            return self.append(&common, event).await;
        };
        let Some(stream) = self.requests.get(&m) else {
            return Err(SessionError::ChannelClosed(Some(m)));
        };
        let log = stream.log.clone();
        self.append(&log, event).await?;
        if completes {
            self.complete(m);
        }
        Ok(())
    }

    /// The request is answered (or cancelled): its stream ends for readers
    /// but stays resumable until `completed_cache_ttl` passes.
    fn complete(&mut self, m: HttpRequestId) {
        if let Some(stream) = self.requests.get_mut(&m) {
            stream.log.finish();
            if stream.completed_at.is_none() {
                let now = Instant::now();
                stream.completed_at = Some(now);
                self.completed.push_back((now, m));
            }
            for route in stream.routes.drain() {
                self.routes.remove(&route);
            }
            ring(&self.bell);
        }
    }

    fn register(&mut self, message: &ClientJsonRpcMessage, m: HttpRequestId) {
        let JsonRpcMessage::Request(request) = message else {
            return;
        };
        let mut routes = vec![Route::Request(request.id.clone())];
        if let Some(token) = request.request.get_meta().get_progress_token() {
            routes.push(Route::Progress(token));
        }
        if let Some(stream) = self.requests.get_mut(&m) {
            for route in routes {
                stream.routes.insert(route.clone());
                self.routes.insert(route, m);
            }
        }
    }

    fn observe_cancellation(&mut self, message: &ClientJsonRpcMessage) {
        if let JsonRpcMessage::Notification(notification) = message
            && let ClientNotification::CancelledNotification(cancelled) = &notification.notification
            && let Some(request_id) = cancelled.params.request_id.clone()
            && let Some(m) = self.routes.get(&Route::Request(request_id)).copied()
        {
            self.complete(m);
        }
    }

    fn evict_expired(&mut self) {
        let ttl = self.config.completed_cache_ttl;
        let now = Instant::now();
        while let Some(&(at, m)) = self.completed.front() {
            let over_cap = self.completed.len() > self.config.max_completed_streams;
            if !over_cap && now.duration_since(at) < ttl {
                break;
            }
            self.completed.pop_front();
            self.requests.remove(&m);
        }
    }

    async fn close_connection(
        &mut self,
        http_request_id: Option<HttpRequestId>,
        retry: Option<Duration>,
    ) -> Result<(), SessionError> {
        let log = match http_request_id {
            Some(m) => self
                .requests
                .get(&m)
                .map(|r| r.log.clone())
                .ok_or(SessionError::ChannelClosed(Some(m)))?,
            None => self.common.clone(),
        };
        if let Some(retry) = retry {
            self.append(&log, ServerSseMessage::retry(retry)).await?;
        }
        log.end_readers();
        ring(&self.bell);
        Ok(())
    }

    async fn on_http(
        &mut self,
        event: SessionEvent,
        context: &mut WorkerContext<Self>,
    ) -> Result<bool, WorkerQuitReason<LocalSessionWorkerError>> {
        match event {
            SessionEvent::ClientMessage {
                message,
                http_request_id,
            } => {
                if let Some(m) = http_request_id {
                    self.register(&message, m);
                }
                self.observe_cancellation(&message);
                context.send_to_handler(message).await?;
            }
            SessionEvent::EstablishRequestWiseChannel { responder } => {
                let opened = self.open_request_stream().await;
                let _ = responder.send(opened.map(OpenedStream::into_receiver));
            }
            SessionEvent::EstablishCommonChannel { responder } => {
                let _ = responder.send(Ok(self.open_common().into_receiver()));
            }
            SessionEvent::OpenRequestStream { responder } => {
                let _ = responder.send(self.open_request_stream().await);
            }
            SessionEvent::OpenStandaloneStream { responder } => {
                let _ = responder.send(Ok(self.open_common()));
            }
            SessionEvent::CloseRequestWiseChannel { id, responder } => {
                if let Some(stream) = self.requests.remove(&id) {
                    for route in stream.routes {
                        self.routes.remove(&route);
                    }
                }
                let _ = responder.send(Ok(()));
            }
            SessionEvent::Resume {
                last_event_id,
                responder,
            } => {
                let stream = last_event_id.http_request_id;
                let result = self.resume(last_event_id).and_then(|resumed| {
                    if resumed.notice.complete {
                        Ok(StreamableHttpMessageReceiver {
                            http_request_id: stream,
                            inner: forward(resumed.stream),
                        })
                    } else {
                        Err(SessionError::InvalidEventId)
                    }
                });
                let _ = responder.send(result);
            }
            SessionEvent::ResumeWithNotice {
                last_event_id,
                responder,
            } => {
                let _ = responder.send(self.resume(last_event_id));
            }
            SessionEvent::CloseSseStream {
                http_request_id,
                retry_interval,
                responder,
            } => {
                let _ =
                    responder.send(self.close_connection(http_request_id, retry_interval).await);
            }
            SessionEvent::CloseRequestConnection {
                request_id,
                retry_interval,
                responder,
            } => {
                let closed = match self.routes.get(&Route::Request(request_id)) {
                    Some(&m) => self.close_connection(Some(m), retry_interval).await,
                    None => Err(SessionError::ChannelClosed(None)),
                };
                let _ = responder.send(closed);
            }
            SessionEvent::Close => return Ok(false),
            SessionEvent::InitializeRequest { responder, .. } => {
                // Only the first message may initialize.
                let _ = responder.send(Err(SessionError::InvalidEventId));
            }
        }
        Ok(true)
    }
}

/// Feeds a stream into a channel, for the handle's `Receiver`-based API. The
/// task ends when either side does.
fn forward(mut stream: EventStream) -> mpsc::Receiver<ServerSseMessage> {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                _ = tx.closed() => None,
            };
            let Some(event) = event else { break };
            if tx.send(event).await.is_err() {
                break;
            }
        }
    });
    rx
}

impl Worker for LocalSessionWorker {
    type Error = LocalSessionWorkerError;
    type Role = crate::RoleServer;

    fn err_closed() -> Self::Error {
        LocalSessionWorkerError::TransportClosed
    }

    fn err_join(e: tokio::task::JoinError) -> Self::Error {
        LocalSessionWorkerError::TokioJoinError(e)
    }

    fn config(&self) -> WorkerConfig {
        let mut config = WorkerConfig::default();
        config.name = Some(format!("streamable-http-session-{}", self.id));
        config.channel_buffer_capacity = self.config.channel_capacity.max(1);
        config
    }

    async fn run(
        mut self,
        mut context: WorkerContext<Self>,
    ) -> Result<(), WorkerQuitReason<Self::Error>> {
        let init_timeout = self.config.init_timeout.unwrap_or(Duration::MAX);
        let first = tokio::select! {
            event = self.event_rx.recv() => event.ok_or_else(|| WorkerQuitReason::fatal(
                LocalSessionWorkerError::TransportTerminated,
                "waiting for initialize",
            ))?,
            _ = context.cancellation_token.cancelled() => return Err(WorkerQuitReason::Cancelled),
            _ = tokio::time::sleep(init_timeout) => return Err(WorkerQuitReason::fatal(
                LocalSessionWorkerError::InitTimeout(init_timeout),
                "waiting for initialize",
            )),
        };
        let SessionEvent::InitializeRequest { request, responder } = first else {
            return Err(WorkerQuitReason::fatal(
                LocalSessionWorkerError::UnexpectedEvent(first),
                "waiting for initialize",
            ));
        };
        context.send_to_handler(request).await?;
        let answer = context.recv_from_handler().await?;
        responder.send(Ok(answer.message)).map_err(|_| {
            WorkerQuitReason::fatal(
                LocalSessionWorkerError::FailToSendInitializeRequest(
                    SessionError::SessionServiceTerminated,
                ),
                "answering initialize",
            )
        })?;
        answer
            .responder
            .send(Ok(()))
            .map_err(|_| WorkerQuitReason::HandlerTerminated)?;

        let idle = self.config.keep_alive.unwrap_or(Duration::MAX);
        let ct = context.cancellation_token.clone();
        loop {
            self.evict_expired();
            tokio::select! {
                event = self.event_rx.recv() => {
                    let Some(event) = event else {
                        return Err(WorkerQuitReason::fatal(
                            LocalSessionWorkerError::TransportTerminated,
                            "waiting for the next session event",
                        ));
                    };
                    if !self.on_http(event, &mut context).await? {
                        return Err(WorkerQuitReason::TransportClosed);
                    }
                }
                sent = context.recv_from_handler() => {
                    let sent = sent?;
                    let result = self
                        .deliver(sent.message)
                        .await
                        .map_err(LocalSessionWorkerError::FailToHandleMessage);
                    if sent.responder.send(result).is_err() {
                        tracing::debug!(session_id = %self.id, "handler stopped waiting for a send result");
                    }
                }
                _ = ct.cancelled() => return Err(WorkerQuitReason::Cancelled),
                _ = tokio::time::sleep(idle) => return Err(WorkerQuitReason::IdleTimeout(idle)),
            }
        }
    }
}
