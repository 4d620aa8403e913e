//! Upstream's message-passing API to a session, kept for source
//! compatibility: the [`SessionEvent`] protocol between handle and worker,
//! channel-based receivers, and the handle methods under upstream's names
//! ("request-wise channel" for a request stream, "common channel" for the
//! standalone stream).

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};

use super::{EventId, HttpRequestId, LocalSessionHandle, OpenedStream, Resumption, SessionError};
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

crate::line::upstream_non_exhaustive! {
/// A message from the HTTP side to a session's worker.
#[derive(Debug)]
// `#[non_exhaustive]` where upstream's is (see `line`).
pub enum SessionEvent {
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
        self.ask(|responder| SessionEvent::EstablishRequestWiseChannel { responder })
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
}
