//! Upstream's message-passing API to a session, kept for source
//! compatibility: the [`SessionEvent`] protocol between handle and worker,
//! channel-based receivers, and the handle methods under upstream's names
//! ("request-wise channel" for a request stream, "common channel" for the
//! standalone stream).

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};

use super::{
    EventId, HttpRequestId, LocalSessionHandle, LocalSessionWorkerError, OpenedStream, Resumption,
    SessionError,
};
use crate::line::EventStream;
use crate::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use crate::transport::streamable_http_server::session::ServerSseMessage;

crate::line::upstream_non_exhaustive! {
/// The receiving end of one SSE connection.
#[derive(Debug)]
// `#[non_exhaustive]` where upstream's is (see `line`).
pub struct StreamableHttpMessageReceiver {
    /// The request stream it belongs to, or `None` for the standalone stream.
    pub http_request_id: Option<HttpRequestId>,
    /// The events.
    pub inner: mpsc::Receiver<ServerSseMessage>,
}
}

impl From<OpenedStream> for StreamableHttpMessageReceiver {
    fn from(opened: OpenedStream) -> Self {
        Self {
            http_request_id: opened.http_request_id,
            inner: forward(opened.stream),
        }
    }
}

/// Feeds a stream into a channel, for the `Receiver`-based API. The task ends
/// when either side does.
pub(super) fn forward(mut stream: EventStream) -> mpsc::Receiver<ServerSseMessage> {
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

crate::line::with_fork_command! {
Command;
/// A message from the HTTP side to a session's worker.
///
/// On 0.x this is upstream's exact (exhaustive) enum, and the fork's own
/// messages (the variants 1.8 and later list after `CloseSseStream`) travel
/// apart from it. Such a message arriving before `initialize` ends the
/// worker with a `FailToHandleMessage` whose [`SessionError::Io`] wraps a
/// [`ForkSessionError::UnexpectedMessage`](super::ForkSessionError::UnexpectedMessage)
/// there, where 1.8 and later report `UnexpectedEvent`.
#[derive(Debug)]
pub enum SessionEvent {
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
} + {
    /// Open a standalone connection (upstream's on 3.11; the fork's on
    /// 1.8 and 2.2).
    EstablishCommonChannel {
        /// Answer.
        responder: oneshot::Sender<Result<StreamableHttpMessageReceiver, SessionError>>,
    },
    /// Open a request stream for a client's request and hand the request
    /// to the handler, in one turn of the worker (fork-only): a `POST`
    /// waits for the worker once, not twice.
    Request {
        /// The request.
        message: ClientJsonRpcMessage,
        /// Answer: the stream the response will be read from.
        responder: oneshot::Sender<Result<OpenedStream, SessionError>>,
    },
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
    /// Decide a resume and open its stream if it gets one (fork-only).
    PlanResume {
        /// Answer.
        responder: oneshot::Sender<Result<Resumption, SessionError>>,
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
}
}

crate::line::plain_0x! {
    {
        /// Why the worker stops when `first` is not `initialize`.
        pub(super) fn unexpected(first: Command) -> LocalSessionWorkerError {
            let event = match first {
                Command::ClientMessage {
                    message,
                    http_request_id,
                } => SessionEvent::ClientMessage {
                    message,
                    http_request_id,
                },
                Command::EstablishRequestWiseChannel { responder } => {
                    SessionEvent::EstablishRequestWiseChannel { responder }
                }
                Command::CloseRequestWiseChannel { id, responder } => {
                    SessionEvent::CloseRequestWiseChannel { id, responder }
                }
                Command::Resume {
                    last_event_id,
                    responder,
                } => SessionEvent::Resume {
                    last_event_id,
                    responder,
                },
                Command::InitializeRequest { request, responder } => {
                    SessionEvent::InitializeRequest { request, responder }
                }
                Command::Close => SessionEvent::Close,
                Command::CloseSseStream {
                    http_request_id,
                    retry_interval,
                    responder,
                } => SessionEvent::CloseSseStream {
                    http_request_id,
                    retry_interval,
                    responder,
                },
                fork => {
                    let message = format!("{fork:?}");
                    return super::ForkSessionError::UnexpectedMessage(message).into();
                }
            };
            LocalSessionWorkerError::UnexpectedEvent(event)
        }
    } else {
        /// Why the worker stops when `first` is not `initialize`.
        pub(super) fn unexpected(first: Command) -> LocalSessionWorkerError {
            LocalSessionWorkerError::UnexpectedEvent(first)
        }
    }
}

crate::line::upstream_non_exhaustive! {
/// Kept for compatibility with upstream; not produced.
#[derive(Debug, Clone)]
// `#[non_exhaustive]` where upstream's is (see `line`).
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
}

/// Upstream's names for opening and forgetting streams.
impl LocalSessionHandle {
    /// Opens a request stream.
    pub async fn establish_request_wise_channel(
        &self,
    ) -> Result<StreamableHttpMessageReceiver, SessionError> {
        self.ask(|responder| Command::EstablishRequestWiseChannel { responder })
            .await
    }

    /// Forgets a request stream.
    pub async fn close_request_wise_channel(
        &self,
        request_id: HttpRequestId,
    ) -> Result<(), SessionError> {
        self.ask(|responder| Command::CloseRequestWiseChannel {
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
        self.ask(|responder| Command::EstablishCommonChannel { responder })
            .await
    }

    /// Resumes after `last_event_id`; fails unless every later event is retained.
    pub async fn resume(
        &self,
        last_event_id: EventId,
    ) -> Result<StreamableHttpMessageReceiver, SessionError> {
        self.ask(|responder| Command::Resume {
            last_event_id,
            responder,
        })
        .await
    }
}
