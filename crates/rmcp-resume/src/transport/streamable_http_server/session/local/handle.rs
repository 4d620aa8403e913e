//! A cloneable handle to a session's worker.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::compat::Command;
use super::{
    EventId, ForkSessionError, HttpRequestId, OpenedStream, ResumedStream, Resumption, SessionError,
};
use crate::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use crate::transport::common::server_side_http::SessionId;
use crate::transport::resumption::ResumeAnswer;

/// A cloneable handle to a session's worker. The worker ends once every
/// handle is gone.
#[derive(Debug, Clone)]
pub struct LocalSessionHandle {
    pub(super) id: SessionId,
    pub(super) event_tx: mpsc::Sender<Command>,
    /// Set once the session may take requests: at once for a new session,
    /// and after its handshake replay for a restored one.
    pub(super) published: Arc<AtomicBool>,
    /// The owner's lease in a shared log, if the session has one.
    pub(super) lease: Option<rmcp_resume_core::shared::LeaseWatch>,
}

impl LocalSessionHandle {
    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// Whether this instance may admit a new call of the session: always
    /// without a shared log; with one, while its lease is live by its own
    /// clock (fork-only). Once it is not, another instance may own the
    /// session, and a call run here could never be committed.
    pub fn may_admit(&self) -> bool {
        self.lease
            .as_ref()
            .is_none_or(rmcp_resume_core::shared::LeaseWatch::is_live)
    }

    /// Whether this instance gave the session up in its shared log (its
    /// worker is stopping; fork-only).
    pub fn gave_up(&self) -> bool {
        self.lease
            .as_ref()
            .is_some_and(rmcp_resume_core::shared::LeaseWatch::is_lost)
    }

    /// Whether the session takes requests: a restored session does once
    /// its handshake has been replayed (fork-only; upstream published it
    /// before, so a request racing the restore met an uninitialised
    /// worker).
    pub fn is_published(&self) -> bool {
        self.published.load(Ordering::Acquire)
    }

    /// Lets the session take requests. Called once a restore has handed the
    /// worker its replayed `initialized`: the worker's queue is in order, so
    /// every later request reaches it after the handshake.
    pub(super) fn publish(&self) {
        self.published.store(true, Ordering::Release);
    }

    /// Whether the session's worker is still running.
    pub fn is_live(&self) -> bool {
        !self.event_tx.is_closed()
    }

    /// Waits until the session's worker has stopped (an idle or initialize
    /// timeout, a close, a crash).
    pub async fn stopped(&self) {
        self.event_tx.closed().await;
    }

    async fn send(&self, event: Command) -> Result<(), SessionError> {
        self.event_tx
            .send(event)
            .await
            .map_err(|_| SessionError::SessionServiceTerminated)
    }

    pub(super) async fn ask<T>(
        &self,
        event: impl FnOnce(oneshot::Sender<Result<T, SessionError>>) -> Command,
    ) -> Result<T, SessionError> {
        let (tx, rx) = oneshot::channel();
        self.send(event(tx)).await?;
        rx.await
            .map_err(|_| SessionError::SessionServiceTerminated)?
    }

    /// Ends the session.
    pub async fn close(&self) -> Result<(), SessionError> {
        self.send(Command::Close).await
    }

    /// Hands a client message to the session.
    pub async fn push_message(
        &self,
        message: ClientJsonRpcMessage,
        http_request_id: Option<HttpRequestId>,
    ) -> Result<(), SessionError> {
        self.send(Command::ClientMessage {
            message,
            http_request_id,
        })
        .await
    }

    /// Runs the initialize exchange.
    pub async fn initialize(
        &self,
        request: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionError> {
        self.ask(|responder| Command::InitializeRequest { request, responder })
            .await
    }

    /// Opens a request stream for `message` and hands it to the handler
    /// (fork-only): [`open_request_stream`](Self::open_request_stream) and
    /// [`push_message`](Self::push_message) in one turn of the worker.
    pub async fn open_request(
        &self,
        message: ClientJsonRpcMessage,
    ) -> Result<OpenedStream, SessionError> {
        self.ask(|responder| Command::Request { message, responder })
            .await
    }

    /// Opens a request stream, read straight from its log (fork-only).
    pub async fn open_request_stream(&self) -> Result<OpenedStream, SessionError> {
        self.ask(|responder| Command::OpenRequestStream { responder })
            .await
    }

    /// Opens a standalone connection, read straight from the log: the
    /// primary if none is live, else a shadow (fork-only).
    pub async fn open_standalone_stream(&self) -> Result<OpenedStream, SessionError> {
        self.ask(|responder| Command::OpenStandaloneStream { responder })
            .await
    }

    /// Decides a resume from `last_event_id` with
    /// [`plan`](crate::transport::resumption::plan()), and opens the stream
    /// when the answer has one (fork-only).
    pub async fn plan_resume(&self, last_event_id: EventId) -> Result<Resumption, SessionError> {
        self.ask(|responder| Command::PlanResume {
            last_event_id,
            responder,
        })
        .await
    }

    /// Resumes after `last_event_id`, saying what the replay covers. A
    /// standalone cursor that is not covered still gets a stream (from the
    /// floor, or live), with a notice saying so; a refused request cursor is
    /// an error (fork-only; [`plan_resume`](Self::plan_resume) says the same
    /// without errors).
    pub async fn resume_with_notice(
        &self,
        last_event_id: EventId,
    ) -> Result<ResumedStream, SessionError> {
        let resumption = self.plan_resume(last_event_id.clone()).await?;
        let answer = resumption.answer;
        resumption
            .into_stream()
            .ok_or_else(|| refusal(answer, last_event_id))
    }

    /// Closes a request stream's connection, sending `retry` first (SEP-1699).
    pub async fn close_sse_stream(
        &self,
        http_request_id: HttpRequestId,
        retry_interval: Option<Duration>,
    ) -> Result<(), SessionError> {
        self.ask(|responder| Command::CloseSseStream {
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
        self.ask(|responder| Command::CloseRequestConnection {
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
        self.ask(|responder| Command::CloseSseStream {
            http_request_id: None,
            retry_interval,
            responder,
        })
        .await
    }
}

/// A refused resume as the error the error-based API reports.
pub(super) fn refusal(answer: ResumeAnswer, cursor: EventId) -> SessionError {
    let stream = cursor.stream();
    match answer {
        ResumeAnswer::Complete => ForkSessionError::StreamComplete { cursor }.into(),
        ResumeAnswer::BelowFloor { floor } => match EventId::try_from(stream.event(floor)) {
            Ok(floor) => ForkSessionError::CursorBelowFloor { cursor, floor }.into(),
            Err(_) => SessionError::InvalidEventId,
        },
        ResumeAnswer::UnknownStream => ForkSessionError::UnknownStream { cursor }.into(),
        ResumeAnswer::SessionLost => SessionError::SessionServiceTerminated,
        // A standalone fallback that was not complete, or an unknown event.
        _ => SessionError::InvalidEventId,
    }
}
