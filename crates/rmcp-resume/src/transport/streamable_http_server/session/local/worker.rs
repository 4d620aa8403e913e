//! The worker that runs one session: it routes the handler's messages into
//! the stream logs, and answers the HTTP side's requests for connections.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use futures::StreamExt;
use rmcp_resume_core::log::{Budget, Full, LogReader, Meter, ReaderId, Room, StreamLog, Window};
use rmcp_resume_core::shared::{Gate, MirrorOp};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::compat::{SessionEvent, StreamableHttpMessageReceiver, forward};
use super::handle::refusal;
use super::mirror::Mirror;
use super::routing::{Route, Routes};
use super::{
    EventId, HttpRequestId, LocalSessionHandle, LocalSessionWorkerError, MAX_SHADOW_STREAMS,
    OpenedStream, Resumption, SessionConfig, SessionError,
};
use crate::line::{EventStream, StoreSlot};
use crate::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use crate::transport::WorkerTransport;
use crate::transport::common::server_side_http::SessionId;
use crate::transport::resumption::{ResumeAnswer, StreamId, StreamLookup, plan};
use crate::transport::streamable_http_server::session::ServerSseMessage;
use crate::transport::worker::{Worker, WorkerConfig, WorkerContext, WorkerQuitReason};

/// The transport a session's service runs on.
pub type SessionTransport = WorkerTransport<LocalSessionWorker>;

type Log = Arc<StreamLog<ServerSseMessage>>;

/// Where the handler learns that its message was sent.
type Responder = oneshot::Sender<Result<(), LocalSessionWorkerError>>;

/// A handler's message waiting for its stream's reader to make room. Its
/// handler waits with it; nothing else in the session does.
#[derive(Debug)]
struct Parked {
    event: ServerSseMessage,
    /// The id an event store assigned, so it is stored once.
    id: Option<String>,
    /// Its bytes, for the budgets.
    weight: usize,
    /// Its JSON for the shared log, serialized once (with a shared log).
    data: Option<String>,
    /// The message answers its request.
    completes: bool,
    responder: Responder,
}

/// Creates a session's handle and the worker to spawn for it.
pub fn create_local_session(
    id: impl Into<SessionId>,
    config: SessionConfig,
) -> (LocalSessionHandle, LocalSessionWorker) {
    new_session(
        id.into(),
        config,
        StoreSlot::default(),
        Incarnation::First,
        None,
        None,
    )
}

/// What a frame adds to an event's JSON (its `id:` and `data:` lines).
const FRAME: usize = 32;

/// What an event weighs against the byte budgets: its JSON, plus what its
/// frame adds (the `id:` and `data:` lines).
fn weigh(event: &ServerSseMessage) -> usize {
    /// Counts bytes instead of keeping them.
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(FRAME);
    if let Some(message) = &event.message {
        // Writing to a counter cannot fail.
        let _ = serde_json::to_writer(&mut counter, message.as_ref());
    }
    counter.0
}

/// Which life of a session a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Incarnation {
    /// Created by `initialize`: no cursor of it can exist yet, so its ids
    /// start at the bottom (`1` on the standalone stream, stream `0`).
    First,
    /// Restored from a session store after a restart or on another instance:
    /// its ids start at a random base far above any earlier life's, so an old
    /// cursor can never name one of its events (a standalone cursor is below
    /// the floor, a request cursor names an unknown stream).
    Restored,
    /// Restored on top of a shared log: its standalone ids carry on from the
    /// shared log's head, and its request streams are numbered by the shared
    /// log, so every id stays unique and the standalone stream contiguous.
    Shared {
        /// The shared standalone stream's head.
        standalone_head: u64,
    },
}

impl Incarnation {
    fn base(self) -> u64 {
        match self {
            Self::First => 0,
            Self::Restored => restored_base(),
            Self::Shared { standalone_head } => standalone_head.saturating_sub(1),
        }
    }
}

/// A random multiple of 2³² in `[2³², 2⁶³]`: 2³¹ possible lives, each with
/// 2³² ids of room before the next could begin.
fn restored_base() -> u64 {
    use std::hash::BuildHasher;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let random = std::collections::hash_map::RandomState::new().hash_one(seed);
    ((random >> 33) + 1) << 32
}

pub(super) fn new_session(
    id: SessionId,
    config: SessionConfig,
    event_store: StoreSlot,
    incarnation: Incarnation,
    process: Option<Arc<Meter>>,
    mirror: Option<Mirror>,
) -> (LocalSessionHandle, LocalSessionWorker) {
    let base = incarnation.base();
    let (event_tx, event_rx) = mpsc::channel(config.channel_capacity.max(1));
    tracing::debug!(session_id = %id, ?incarnation, "create new session");
    let room = Room::default();
    let window = Window::new(
        config.channel_capacity,
        config.max_replay_events,
        config.effective_replay_retention(),
    );
    let budget = Budget::new(config.max_replay_bytes, process);
    let standalone = StreamLog::with_limits(
        StreamId::Standalone,
        base.saturating_add(1),
        window,
        MAX_SHADOW_STREAMS,
        room.clone(),
        budget.clone(),
    );
    let standalone_gate = mirror.as_ref().map(|_| Gate::new(base.saturating_add(1)));
    let published = Arc::new(AtomicBool::new(incarnation == Incarnation::First));
    let worker = LocalSessionWorker {
        mirror,
        standalone_gate,
        id: id.clone(),
        config,
        event_store,
        event_rx,
        standalone,
        standalone_parked: VecDeque::new(),
        requests: HashMap::new(),
        waiting: HashSet::new(),
        completed: VecDeque::new(),
        routes: Routes::default(),
        next_http_request_id: base,
        next_reader: 0,
        room,
        window,
        budget,
    };
    let handle = LocalSessionHandle {
        id,
        event_tx,
        published,
    };
    (handle, worker)
}

#[derive(Debug)]
struct RequestStream {
    log: Log,
    parked: VecDeque<Parked>,
    routes: HashSet<Route>,
    completed_at: Option<Instant>,
    /// Persist, then send: the commit mark of the shared log, if any.
    gate: Option<Gate>,
}

/// Runs one session: routes the handler's messages into stream logs and
/// serves the HTTP side's requests for connections.
pub struct LocalSessionWorker {
    /// The session's shared log, when several instances share it.
    mirror: Option<Mirror>,
    /// The standalone stream's commit mark, with a shared log.
    standalone_gate: Option<Gate>,
    id: SessionId,
    config: SessionConfig,
    event_store: StoreSlot,
    event_rx: mpsc::Receiver<SessionEvent>,
    standalone: Log,
    standalone_parked: VecDeque<Parked>,
    requests: HashMap<HttpRequestId, RequestStream>,
    /// The streams with parked messages, so the worker's loop never scans
    /// every retained stream.
    waiting: HashSet<StreamId>,
    /// Answered request streams in the order they completed, so expiry is
    /// amortised O(1) however many a session has answered.
    completed: VecDeque<(Instant, HttpRequestId)>,
    routes: Routes,
    next_http_request_id: HttpRequestId,
    next_reader: ReaderId,
    room: Room,
    window: Window,
    budget: Budget,
}

impl Drop for LocalSessionWorker {
    // However the worker stops, every connection to the session ends.
    fn drop(&mut self) {
        self.standalone.close();
        for stream in self.requests.values() {
            stream.log.close();
        }
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

/// A reader's events as rmcp's SSE messages, each stamped with its id;
/// with a shared log, each waits for its commit first.
fn events(reader: LogReader<ServerSseMessage>, gate: Option<Gate>) -> EventStream {
    let stamp = |logged: rmcp_resume_core::log::Logged<ServerSseMessage>| {
        let mut event = logged.event;
        event.event_id = Some(logged.id);
        event
    };
    match gate {
        None => Box::pin(reader.map(stamp)),
        Some(gate) => Box::pin(
            reader
                .then(move |logged| {
                    let gate = gate.clone();
                    async move { gate.committed(logged.index).await.then(|| stamp(logged)) }
                })
                .take_while(|event| std::future::ready(event.is_some()))
                .filter_map(std::future::ready),
        ),
    }
}

/// The id sent for a store's id: bound to the session by the MAC keyed in
/// `config` on the 3.x line (the 1.x line has no event store).
fn scoped_id(config: &SessionConfig, session: &SessionId, store_id: &str) -> String {
    #[cfg(not(rmcp_line_1))]
    return config.event_id_key.scoped(session, store_id);
    #[cfg(rmcp_line_1)]
    {
        let _ = (config, session);
        store_id.to_owned()
    }
}

/// The JSON a shared log keeps of an event: its message, if it has one.
fn data_of(event: &ServerSseMessage) -> Option<String> {
    let message = event.message.as_ref()?;
    serde_json::to_string(message.as_ref()).ok()
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

    fn connect_primary(&mut self, log: &Log, position: u64) -> EventStream {
        let id = self.reader();
        log.attach_primary(id, position);
        events(LogReader::new(log.clone(), id), self.gate(log.stream()))
    }

    /// The commit mark of `stream`, with a shared log.
    fn gate(&self, stream: StreamId) -> Option<Gate> {
        match stream {
            StreamId::Standalone => self.standalone_gate.clone(),
            StreamId::Request(m) => self.requests.get(&m).and_then(|r| r.gate.clone()),
        }
    }

    /// Hands an event now in its log to the shared log, if there is one.
    fn mirror(&self, stream: StreamId, index: u64, data: Option<String>) {
        if let (Some(mirror), Some(gate)) = (&self.mirror, self.gate(stream)) {
            mirror.append(stream, index, data, &gate);
        }
    }

    /// Appends one of the server's own control frames (a priming `retry`),
    /// which never waits for room.
    async fn append(&mut self, log: &Log, event: ServerSseMessage) -> Result<(), SessionError> {
        let id = self.store(log.stream(), &event).await?;
        let weight = weigh(&event);
        let index = log.append(event, id, weight);
        self.mirror(log.stream(), index, None);
        Ok(())
    }

    async fn open_request_stream(&mut self) -> Result<OpenedStream, SessionError> {
        let m = match &mut self.mirror {
            Some(mirror) => mirror.next_stream().await?,
            None => {
                let m = self.next_http_request_id;
                self.next_http_request_id = m.wrapping_add(1);
                m
            }
        };
        if self.requests.contains_key(&m) {
            return Err(SessionError::DuplicatedRequestId(m));
        }
        let log = StreamLog::with_limits(
            StreamId::Request(m),
            0,
            self.window,
            0,
            self.room.clone(),
            self.budget.clone(),
        );
        self.requests.insert(
            m,
            RequestStream {
                log: log.clone(),
                parked: VecDeque::new(),
                routes: HashSet::new(),
                completed_at: None,
                gate: self.mirror.as_ref().map(|_| Gate::new(0)),
            },
        );
        if let Some(retry) = self.config.sse_retry
            && let Err(error) = self.append(&log, crate::line::retry_hint(retry)).await
        {
            self.requests.remove(&m);
            return Err(error);
        }
        let stream = self.connect_primary(&log, 0);
        Ok(OpenedStream {
            http_request_id: Some(m),
            stream,
            start: Some(0),
        })
    }

    /// A fresh standalone connection: the primary if none is live, else a
    /// shadow, decided in one step with the log's lock held, so a primary
    /// that leaves meanwhile cannot leave a shadow alone.
    fn open_standalone(&mut self) -> OpenedStream {
        let id = self.reader();
        let start = self.standalone.attach(id);
        if start.is_none() {
            tracing::debug!(session_id = %self.id, "standalone stream already live; opening a shadow");
        }
        let stream = events(
            LogReader::new(self.standalone.clone(), id),
            self.standalone_gate.clone(),
        );
        OpenedStream {
            http_request_id: None,
            stream,
            start,
        }
    }

    /// Decides a resume with the core's [`plan`] and, when the answer is a
    /// stream, attaches the resuming connection as the stream's primary. On
    /// the standalone stream an old primary still open is demoted to a
    /// shadow rather than ended (no leapfrog, #659).
    fn plan_resume(&mut self, cursor: &EventId) -> Resumption {
        // The expiry timer may be due in the same turn as this resume.
        self.evict_expired();
        let cursor = cursor.rmcp();
        let log = match cursor.stream_id() {
            StreamId::Standalone => Some(self.standalone.clone()),
            StreamId::Request(m) => self.requests.get(&m).map(|r| r.log.clone()),
        };
        let lookup = log.as_ref().map_or(StreamLookup::UnknownStream, |log| {
            StreamLookup::Found(log.view())
        });
        let answer = plan(lookup, cursor);
        let stream = match (answer.start(), log) {
            (Some(position), Some(log)) => Some(self.connect_primary(&log, position)),
            _ => None,
        };
        Resumption {
            cursor,
            answer,
            stream,
        }
    }

    /// Routes a handler's message into its stream's log. If the stream's
    /// reader has not read the oldest retained event and the log is full, the
    /// message is parked, and `responder` answers once it is in the log: the
    /// handler waits, the session does not.
    async fn deliver(&mut self, message: ServerJsonRpcMessage, responder: Responder) {
        let destination = self.routes.destination(&message);
        let event = ServerSseMessage::from_message(message);
        let stream = match destination.stream {
            None => StreamId::Standalone,
            Some(m) if self.requests.contains_key(&m) => StreamId::Request(m),
            Some(m) => {
                let closed = SessionError::ChannelClosed(Some(m));
                let _ = responder.send(Err(LocalSessionWorkerError::FailToHandleMessage(closed)));
                return;
            }
        };
        let id = match self.store(stream, &event).await {
            Ok(id) => id,
            Err(error) => {
                let _ = responder.send(Err(LocalSessionWorkerError::FailToHandleMessage(error)));
                return;
            }
        };
        // With a shared log the JSON is needed anyway: its length is the
        // weight, so the event is serialized once.
        let data = self.mirror.as_ref().and_then(|_| data_of(&event));
        let weight = data
            .as_ref()
            .map_or_else(|| weigh(&event), |d| d.len() + FRAME);
        let Some((_, queue)) = self.outbox(stream) else {
            return;
        };
        let parked = Parked {
            event,
            id,
            weight,
            data,
            completes: destination.completes,
            responder,
        };
        // The common case: nothing waits before it, and there is room.
        let parked = if queue.is_empty() {
            match self.try_admit(stream, parked) {
                Ok(()) => return,
                Err(parked) => parked,
            }
        } else {
            parked
        };
        if let Some((_, queue)) = self.outbox(stream) {
            queue.push_back(parked);
            self.waiting.insert(stream);
        }
    }

    /// Puts a message into its stream's log if the window and the budgets
    /// let it in (evicting the session's oldest retained events for bytes);
    /// hands it back when it must wait for a reader.
    fn try_admit(&mut self, stream: StreamId, parked: Parked) -> Result<(), Parked> {
        if !self.make_room(stream, parked.weight) {
            self.budget.set_starved(true);
            return Err(parked);
        }
        let Some((log, _)) = self.outbox(stream) else {
            // The stream is gone; its handler hears so.
            let closed = SessionError::ChannelClosed(stream.request());
            let _ = parked
                .responder
                .send(Err(LocalSessionWorkerError::FailToHandleMessage(closed)));
            return Ok(());
        };
        let Parked {
            event,
            id,
            weight,
            data,
            completes,
            responder,
        } = parked;
        match log.try_append(event, id, weight) {
            Ok(index) => {
                self.mirror(stream, index, data);
                self.admitted(stream, completes, responder);
                Ok(())
            }
            Err(Full { event, id }) => Err(Parked {
                event,
                id,
                weight,
                data,
                completes,
                responder,
            }),
        }
    }

    /// Evicts the session's oldest retained events, ones no connected
    /// reader needs, until `weight` more bytes fit its budget. `false` when
    /// they cannot: the bytes are held by readers that have not read them.
    /// Over the process's budget a session evicts only its own events, and
    /// then proceeds: one session's flood never evicts another's history.
    fn make_room(&mut self, stream: StreamId, weight: usize) -> bool {
        while self.budget.would_exceed(weight) {
            if self.evict_oldest(stream) {
                continue;
            }
            let session = self.budget.session();
            // A session holding nothing still takes one event, however big.
            return !session.would_exceed(weight) || session.used() == 0;
        }
        true
    }

    /// Evicts the session's oldest evictable event: of the standalone
    /// stream, the request streams still open, and the earliest answered
    /// stream that holds any. Returns whether one was evicted.
    fn evict_oldest(&mut self, appending: StreamId) -> bool {
        let answered = self
            .completed
            .iter()
            .filter_map(|(_, m)| self.requests.get(m))
            .find(|r| r.log.oldest_evictable().is_some())
            .map(|r| &r.log);
        let open = self
            .requests
            .values()
            .filter(|r| r.completed_at.is_none())
            .map(|r| &r.log);
        let oldest = std::iter::once(&self.standalone)
            .chain(open)
            .chain(answered)
            .filter_map(|log| log.oldest_evictable().map(|at| (at, log)))
            .min_by_key(|(at, _)| *at);
        match oldest {
            Some((_, log)) => {
                let evicted = log.evict_oldest().is_some();
                if evicted {
                    tracing::trace!(session_id = %self.id, ?appending, evicted = ?log.stream(), "evicted for the byte budget");
                }
                evicted
            }
            None => false,
        }
    }

    /// A handler's message is in its log: the handler hears so, and a
    /// response ends its request.
    fn admitted(&mut self, stream: StreamId, completes: bool, responder: Responder) {
        if responder.send(Ok(())).is_err() {
            tracing::debug!(?stream, "handler stopped waiting for a send result");
        }
        if let (true, StreamId::Request(m)) = (completes, stream) {
            self.complete(m);
        }
    }

    /// Persists `event` in the event store, if there is one; returns its id.
    async fn store(
        &self,
        stream: StreamId,
        event: &ServerSseMessage,
    ) -> Result<Option<String>, SessionError> {
        if !self.event_store.is_set() {
            return Ok(None);
        }
        let stream_id = match stream {
            StreamId::Request(m) => format!("{}:{m}", self.id),
            // Upstream's key, so stores written by upstream stay readable.
            StreamId::Standalone => format!("{}:common", self.id),
        };
        match self.event_store.store(&stream_id, event).await {
            Some(stored) => stored
                .map(|id| Some(scoped_id(&self.config, &self.id, &id)))
                .map_err(crate::line::store_failed),
            None => Ok(None),
        }
    }

    /// A stream's log and its parked messages.
    fn outbox(&mut self, stream: StreamId) -> Option<(&Log, &mut VecDeque<Parked>)> {
        match stream {
            StreamId::Standalone => Some((&self.standalone, &mut self.standalone_parked)),
            StreamId::Request(m) => self.requests.get_mut(&m).map(|r| (&r.log, &mut r.parked)),
        }
    }

    /// Moves parked messages into `stream`'s log, oldest first, while it has
    /// room.
    fn flush(&mut self, stream: StreamId) {
        let waiting = loop {
            let Some(parked) = self.outbox(stream).and_then(|(_, queue)| queue.pop_front()) else {
                break false;
            };
            match self.try_admit(stream, parked) {
                Ok(()) => {}
                Err(parked) => {
                    if let Some((_, queue)) = self.outbox(stream) {
                        queue.push_front(parked);
                    }
                    break true;
                }
            }
        };
        if !waiting {
            self.waiting.remove(&stream);
        }
        if self.waiting.is_empty() {
            self.budget.set_starved(false);
        }
    }

    /// Every stream with parked messages.
    fn parked_streams(&self) -> Vec<StreamId> {
        self.waiting.iter().copied().collect()
    }

    /// The logs whose readers may hold a parked message back: those of the
    /// streams with parked messages, or, while the session waits for bytes,
    /// every log (any unread event holds bytes).
    fn holding_logs(&self) -> Box<dyn Iterator<Item = &Log> + '_> {
        if self.budget.is_starved() {
            return Box::new(
                std::iter::once(&self.standalone).chain(self.requests.values().map(|r| &r.log)),
            );
        }
        Box::new(self.waiting.iter().filter_map(|stream| match stream {
            StreamId::Standalone => Some(&self.standalone),
            StreamId::Request(m) => self.requests.get(m).map(|r| &r.log),
        }))
    }

    /// When the earliest reader holding a parked message back will count as
    /// stalled.
    fn stall_deadline(&self) -> Option<Instant> {
        if self.waiting.is_empty() {
            return None;
        }
        let stall = self.config.reader_stall_timeout;
        self.holding_logs()
            .filter_map(|log| log.stall_deadline(stall))
            .min()
    }

    /// Ends readers that held parked messages back for the stall timeout,
    /// then lets the parked messages in.
    fn end_stalled(&mut self) {
        let (now, stall) = (Instant::now(), self.config.reader_stall_timeout);
        for log in self.holding_logs() {
            if log.end_stalled(now, stall) {
                let stream = log.stream();
                tracing::debug!(session_id = %self.id, ?stream, ?stall, "ended a stalled reader");
            }
        }
        for stream in self.parked_streams() {
            self.flush(stream);
        }
    }

    /// When the earliest answered stream expires.
    fn next_expiry(&self) -> Option<Instant> {
        let (at, _) = self.completed.front()?;
        Some(*at + self.config.completed_cache_ttl)
    }

    /// The request is answered (or cancelled): its stream ends for readers
    /// but stays resumable until `completed_cache_ttl` passes.
    fn complete(&mut self, m: HttpRequestId) {
        if let Some(stream) = self.requests.get_mut(&m) {
            stream.log.finish();
            if let (Some(mirror), None) = (&self.mirror, stream.completed_at) {
                mirror.write(MirrorOp::Finish { stream: m });
            }
            if stream.completed_at.is_none() {
                let now = Instant::now();
                stream.completed_at = Some(now);
                self.completed.push_back((now, m));
            }
            self.routes.remove(stream.routes.drain());
        }
    }

    fn register(&mut self, message: &ClientJsonRpcMessage, m: HttpRequestId) {
        if let Some(stream) = self.requests.get_mut(&m) {
            stream.routes.extend(self.routes.register(message, m));
        }
        if let (Some(mirror), crate::model::JsonRpcMessage::Request(request)) =
            (&self.mirror, message)
            && let Ok(request_id) = serde_json::to_string(&request.id)
        {
            mirror.write(MirrorOp::Open {
                stream: m,
                request_id,
            });
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
            self.waiting.remove(&StreamId::Request(m));
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
            None => self.standalone.clone(),
        };
        if let Some(retry) = retry {
            self.append(&log, crate::line::retry_hint(retry)).await?;
        }
        log.end_readers();
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
                if let Some(m) = self.routes.cancelled(&message) {
                    self.complete(m);
                }
                context.send_to_handler(message).await?;
            }
            SessionEvent::EstablishRequestWiseChannel { responder } => {
                let opened = self.open_request_stream().await;
                let _ = responder.send(opened.map(StreamableHttpMessageReceiver::from));
            }
            SessionEvent::EstablishCommonChannel { responder } => {
                let _ = responder.send(Ok(self.open_standalone().into()));
            }
            SessionEvent::OpenRequestStream { responder } => {
                let _ = responder.send(self.open_request_stream().await);
            }
            SessionEvent::OpenStandaloneStream { responder } => {
                let _ = responder.send(Ok(self.open_standalone()));
            }
            SessionEvent::CloseRequestWiseChannel { id, responder } => {
                self.waiting.remove(&StreamId::Request(id));
                if let Some(stream) = self.requests.remove(&id) {
                    self.routes.remove(stream.routes);
                }
                let _ = responder.send(Ok(()));
            }
            SessionEvent::Resume {
                last_event_id,
                responder,
            } => {
                let resumption = self.plan_resume(&last_event_id);
                let result = match (resumption.answer, resumption.stream) {
                    // Upstream's API has no notice: only a complete replay
                    // is a stream.
                    (ResumeAnswer::Replay { .. }, Some(stream)) => {
                        Ok(StreamableHttpMessageReceiver {
                            http_request_id: resumption.cursor.stream,
                            inner: forward(stream),
                        })
                    }
                    (answer, _) => Err(refusal(answer, last_event_id)),
                };
                let _ = responder.send(result);
            }
            SessionEvent::PlanResume {
                last_event_id,
                responder,
            } => {
                let _ = responder.send(Ok(self.plan_resume(&last_event_id)));
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
                let closed = match self.routes.request(request_id) {
                    Some(m) => self.close_connection(Some(m), retry_interval).await,
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
        let lost = self.mirror.as_ref().map(Mirror::lost);
        loop {
            self.evict_expired();
            let parked = !self.waiting.is_empty();
            let stall_at = self.stall_deadline();
            let expiry = self.next_expiry();
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
                    self.deliver(sent.message, sent.responder).await;
                }
                _ = self.room.made(), if parked => {
                    for stream in self.parked_streams() {
                        self.flush(stream);
                    }
                }
                _ = tokio::time::sleep_until(stall_at.unwrap_or_else(Instant::now)), if stall_at.is_some() => {
                    self.end_stalled();
                }
                // Answered streams expire on time, even in a quiet session.
                _ = tokio::time::sleep_until(expiry.unwrap_or_else(Instant::now)), if expiry.is_some() => {}
                _ = ct.cancelled() => return Err(WorkerQuitReason::Cancelled),
                _ = async { match &lost {
                    Some(lost) => lost.cancelled().await,
                    None => std::future::pending().await,
                } } => return Err(WorkerQuitReason::fatal(
                    LocalSessionWorkerError::OwnershipLost,
                    "writing the shared log",
                )),
                _ = tokio::time::sleep(idle) => return Err(WorkerQuitReason::IdleTimeout(idle)),
            }
        }
    }
}
