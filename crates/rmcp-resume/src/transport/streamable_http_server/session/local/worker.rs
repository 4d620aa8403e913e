//! The worker that runs one session: it routes the handler's messages and
//! the HTTP side's requests onto the core's [`Session`], which holds the
//! streams, their logs and every rule about admission, stalls and expiry.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rmcp_resume_core::log::{Attached, Budget, Meter, Window};
use rmcp_resume_core::session::{Admission, Limits, Pending, Session};
use rmcp_resume_core::shared::{Gate, MirrorOp};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::compat::Command;
use super::frames::{FRAME, data_of, events, weigh};
use super::incarnation::Incarnation;
use super::routing::{Route, Routes};
use super::{
    EventId, HttpRequestId, LocalSessionHandle, LocalSessionWorkerError, MAX_SHADOW_STREAMS,
    OpenedStream, ReplaySettings, Resumption, SessionConfig, SessionError,
};
use crate::line::StoreSlot;
use crate::model::ServerJsonRpcMessage;
use crate::transport::WorkerTransport;
use crate::transport::common::server_side_http::SessionId;
use crate::transport::resumption::StreamId;
use crate::transport::streamable_http_server::session::ServerSseMessage;
use rmcp_resume_core::shared::Mirror;

mod alarm;
mod http;
mod run;

/// The transport a session's service runs on.
pub type SessionTransport = WorkerTransport<LocalSessionWorker>;

/// Where the handler learns that its message was sent.
type Responder = oneshot::Sender<Result<(), LocalSessionWorkerError>>;

/// What the worker does once a handler's message is in its log.
#[derive(Debug)]
struct Ticket {
    responder: Responder,
    /// Its JSON for the shared log, serialized once (with a shared log).
    data: Option<String>,
}

/// What the worker keeps per request stream, beside the core's log.
#[derive(Debug, Default)]
struct RequestRoutes {
    routes: HashSet<Route>,
    /// Persist, then send: the commit mark of the shared log, if any.
    gate: Option<Gate>,
}

/// Creates a session's handle and the worker to spawn for it.
pub fn create_local_session(
    id: impl Into<SessionId>,
    config: SessionConfig,
) -> (LocalSessionHandle, LocalSessionWorker) {
    let replay = config.replay_settings();
    new_session(
        id.into(),
        config,
        replay,
        StoreSlot::default(),
        Incarnation::First,
        None,
        None,
    )
}

pub(super) fn new_session(
    id: SessionId,
    config: SessionConfig,
    replay: ReplaySettings,
    event_store: StoreSlot,
    incarnation: Incarnation,
    process: Option<Arc<Meter>>,
    mirror: Option<Mirror>,
) -> (LocalSessionHandle, LocalSessionWorker) {
    let base = incarnation.base();
    let (event_tx, event_rx) = mpsc::channel(config.channel_capacity.max(1));
    tracing::debug!(session_id = %id, ?incarnation, "create new session");
    let window = Window::new(
        config.channel_capacity,
        replay.max_replay_events,
        replay.effective_replay_retention(),
    );
    let limits = Limits::new(
        replay.reader_stall_timeout,
        replay.completed_cache_ttl,
        replay.max_completed_streams,
        MAX_SHADOW_STREAMS,
    );
    let budget = Budget::new(replay.max_replay_bytes, process);
    let session = Session::new(base.saturating_add(1), window, budget, limits);
    let standalone_gate = mirror.as_ref().map(|_| Gate::new(base.saturating_add(1)));
    let published = Arc::new(AtomicBool::new(incarnation == Incarnation::First));
    let lease = mirror.as_ref().map(Mirror::lease);
    let worker = LocalSessionWorker {
        mirror,
        standalone_gate,
        id: id.clone(),
        config,
        replay,
        event_store,
        event_rx,
        session,
        routes: Routes::default(),
        next_http_request_id: base,
    };
    let handle = LocalSessionHandle {
        id,
        event_tx,
        published,
        lease,
    };
    (handle, worker)
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
    /// The fork's settings (on 1.8 and later, a copy of `config`'s).
    replay: ReplaySettings,
    event_store: StoreSlot,
    event_rx: mpsc::Receiver<Command>,
    session: Session<ServerSseMessage, Ticket, RequestRoutes>,
    routes: Routes,
    next_http_request_id: HttpRequestId,
}

impl std::fmt::Debug for LocalSessionWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSessionWorker")
            .field("id", &self.id)
            .field("requests", &self.session.request_count())
            .finish_non_exhaustive()
    }
}

impl LocalSessionWorker {
    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The commit mark of `stream`, with a shared log.
    fn gate(&mut self, stream: StreamId) -> Option<Gate> {
        match stream {
            StreamId::Standalone => self.standalone_gate.clone(),
            StreamId::Request(m) => self.session.extra_mut(m).and_then(|r| r.gate.clone()),
        }
    }

    /// Hands an event now in its log to the shared log, if there is one.
    fn mirror(&mut self, stream: StreamId, index: u64, data: Option<String>) {
        if self.mirror.is_none() {
            return;
        }
        if let (Some(gate), Some(mirror)) = (self.gate(stream), &self.mirror) {
            mirror.append(stream, index, data, &gate);
        }
    }

    /// Hands request `m`'s answer to the shared log with the stream's end,
    /// in one write: no takeover can come between them.
    fn mirror_answer(&mut self, m: HttpRequestId, index: u64, data: Option<String>) {
        if self.mirror.is_none() {
            return;
        }
        if let (Some(gate), Some(mirror)) = (self.gate(StreamId::Request(m)), &self.mirror) {
            mirror.answer(m, index, data, &gate);
        }
    }

    /// Appends one of the server's own control frames (a priming `retry`),
    /// which never waits for room.
    async fn append(
        &mut self,
        stream: StreamId,
        event: ServerSseMessage,
    ) -> Result<(), SessionError> {
        let id = self.store(stream, &event).await?;
        let weight = weigh(&event);
        let closed = SessionError::ChannelClosed(stream.request());
        let index = self
            .session
            .append_control(stream, event, id, weight)
            .ok_or(closed)?;
        self.mirror(stream, index, None);
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
        let gate = self.mirror.as_ref().map(|_| Gate::new(0));
        let extra = RequestRoutes {
            routes: HashSet::new(),
            gate: gate.clone(),
        };
        self.session
            .open_request(m, extra)
            .map_err(|_| SessionError::DuplicatedRequestId(m))?;
        let stream = StreamId::Request(m);
        // On a shared log a call's stream always opens with a priming event,
        // committed with the call's opening: the `POST`'s head waits for it
        // (never an empty `200`), and a quiet call still gets its head and an
        // id to resume from. Without the app's `retry` it carries none.
        let priming = match (self.replay.sse_retry, &self.mirror) {
            (Some(retry), _) => Some(crate::line::retry_hint(retry)),
            (None, Some(_)) => {
                let mut frame = crate::line::retry_hint(std::time::Duration::ZERO);
                frame.retry = None;
                Some(frame)
            }
            (None, None) => None,
        };
        if let Some(priming) = priming
            && let Err(error) = self.append(stream, priming).await
        {
            self.session.close_request(m);
            self.finish_shared(m);
            return Err(error);
        }
        let reader = self
            .session
            .connect(stream, 0)
            .ok_or(SessionError::ChannelClosed(Some(m)))?;
        Ok(OpenedStream {
            http_request_id: Some(m),
            stream: events(reader, gate),
            start: Some(0),
            skipped: None,
        })
    }

    /// A fresh standalone connection: the primary if none is live, else a
    /// shadow, decided in one step by the log.
    fn open_standalone(&mut self) -> OpenedStream {
        let (reader, attached) = self.session.attach_standalone_at(Instant::now());
        let start = match attached {
            Attached::Primary { start, .. } => Some(start),
            Attached::Shadow => {
                tracing::debug!(session_id = %self.id, "standalone stream already live; opening a shadow");
                None
            }
        };
        let skipped = attached.notice();
        if let Some(notice) = &skipped {
            tracing::debug!(
                session_id = %self.id,
                cursor = %notice.cursor,
                "fresh standalone stream starts past the client's last event; telling it"
            );
        }
        OpenedStream {
            http_request_id: None,
            stream: events(reader, self.standalone_gate.clone()),
            start,
            skipped,
        }
    }

    /// Decides a resume with the core and, when the answer is a stream,
    /// hands back the resuming connection's events.
    fn plan_resume(&mut self, cursor: &EventId) -> Resumption {
        self.expire();
        let cursor = cursor.rmcp();
        let resumed = self.session.resume(cursor);
        let gate = self.gate(cursor.stream_id());
        Resumption {
            cursor,
            answer: resumed.answer,
            stream: resumed.reader.map(|reader| events(reader, gate)),
        }
    }

    /// Routes a handler's message into its stream's log; the handler hears
    /// once it is in (it may wait for its own stream's reader).
    async fn deliver(&mut self, message: ServerJsonRpcMessage, responder: Responder) {
        let destination = self.routes.destination(&message);
        let event = crate::line::sse_message(message);
        let stream = match destination.stream {
            None => StreamId::Standalone,
            Some(m) => StreamId::Request(m),
        };
        if self.session.log(stream).is_none() {
            let closed = SessionError::ChannelClosed(stream.request());
            let _ = responder.send(Err(LocalSessionWorkerError::FailToHandleMessage(closed)));
            return;
        }
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
        let pending = Pending {
            event,
            id,
            weight,
            completes: destination.completes,
            ticket: Ticket { responder, data },
        };
        if let Some(admission) = self.session.deliver(stream, pending) {
            self.settle(admission);
        }
    }

    /// Finishes a message's way: the shared log gets it, its handler hears.
    fn settle(&mut self, admission: Admission<Ticket>) {
        match admission {
            Admission::Admitted {
                stream,
                index,
                completed,
                ticket,
            } => {
                let answered = match (completed, stream) {
                    (true, StreamId::Request(m)) => Some(m),
                    _ => None,
                };
                match answered {
                    Some(m) => self.mirror_answer(m, index, ticket.data),
                    None => self.mirror(stream, index, ticket.data),
                }
                if ticket.responder.send(Ok(())).is_err() {
                    tracing::debug!(session_id = %self.id, ?stream, "handler stopped waiting for a send result");
                }
                if let Some(m) = answered {
                    self.forget_routes(m);
                }
            }
            Admission::Gone { stream, ticket } => {
                let closed = SessionError::ChannelClosed(stream.request());
                let _ = ticket
                    .responder
                    .send(Err(LocalSessionWorkerError::FailToHandleMessage(closed)));
            }
        }
    }

    fn settle_all(&mut self, admissions: Vec<Admission<Ticket>>) {
        for admission in admissions {
            self.settle(admission);
        }
    }

    /// Request `m` was cancelled: the shared log hears, and its routes go.
    fn completed(&mut self, m: HttpRequestId) {
        self.finish_shared(m);
        self.forget_routes(m);
    }

    /// Request stream `m` takes no more events: the shared log hears.
    fn finish_shared(&self, m: HttpRequestId) {
        if let Some(mirror) = &self.mirror {
            mirror.write(MirrorOp::Finish { stream: m });
        }
    }

    /// Request `m` is over: its routes go.
    fn forget_routes(&mut self, m: HttpRequestId) {
        if let Some(extra) = self.session.extra_mut(m) {
            let routes = std::mem::take(&mut extra.routes);
            self.routes.remove(routes);
        }
    }

    fn expire(&mut self) {
        let gone = self.session.expire(Instant::now());
        self.settle_all(gone);
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
        match self.event_store.store(&self.id, &stream_id, event).await {
            Some(stored) => stored.map(Some).map_err(crate::line::store_failed),
            None => Ok(None),
        }
    }
}
