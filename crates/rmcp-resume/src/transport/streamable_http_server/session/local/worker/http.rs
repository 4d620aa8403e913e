//! The HTTP side's requests: a message from the client, a new connection,
//! a resume, a close.

use std::time::Duration;

use tokio::time::Instant;

use super::super::compat::{Command, StreamableHttpMessageReceiver, forward};
use super::super::handle::refusal;
use super::super::{HttpRequestId, LocalSessionWorkerError, SessionError};
use super::LocalSessionWorker;
use crate::model::ClientJsonRpcMessage;
use crate::transport::resumption::{ResumeAnswer, StreamId};
use crate::transport::worker::{WorkerContext, WorkerQuitReason};
use rmcp_resume_core::shared::MirrorOp;

impl LocalSessionWorker {
    fn register(&mut self, message: &ClientJsonRpcMessage, m: HttpRequestId) {
        if let Some(extra) = self.session.extra_mut(m) {
            extra.routes.extend(self.routes.register(message, m));
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

    async fn close_connection(
        &mut self,
        http_request_id: Option<HttpRequestId>,
        retry: Option<Duration>,
    ) -> Result<(), SessionError> {
        let stream = http_request_id.map_or(StreamId::Standalone, StreamId::Request);
        let log = self
            .session
            .log(stream)
            .cloned()
            .ok_or(SessionError::ChannelClosed(http_request_id))?;
        if let Some(retry) = retry {
            self.append(stream, crate::line::retry_hint(retry)).await?;
        }
        log.end_readers();
        Ok(())
    }

    /// A client's message, on request stream `http_request_id` if it is a
    /// request, goes to the handler.
    async fn client_message(
        &mut self,
        message: ClientJsonRpcMessage,
        http_request_id: Option<HttpRequestId>,
        context: &mut WorkerContext<Self>,
    ) -> Result<(), WorkerQuitReason<LocalSessionWorkerError>> {
        if let Some(m) = http_request_id {
            self.register(&message, m);
        }
        if let Some(m) = self.routes.cancelled(&message)
            && self.session.complete(m, Instant::now())
        {
            self.completed(m);
        }
        context.send_to_handler(message).await
    }

    /// Request stream `id` goes, answered or not.
    fn forget_request_stream(&mut self, id: HttpRequestId) {
        if let Some((extra, gone)) = self.session.close_request(id) {
            self.routes.remove(extra.routes);
            self.settle_all(gone);
            // Closed, answered or not: a takeover has nothing to end.
            self.finish_shared(id);
        }
    }

    pub(super) async fn on_http(
        &mut self,
        event: Command,
        context: &mut WorkerContext<Self>,
    ) -> Result<bool, WorkerQuitReason<LocalSessionWorkerError>> {
        match event {
            Command::Request { message, responder } => {
                let opened = match self.open_request_stream().await {
                    Ok(opened) => opened,
                    Err(error) => {
                        let _ = responder.send(Err(error));
                        return Ok(true);
                    }
                };
                let m = opened.http_request_id;
                // The `POST` hears first, so that it writes its headers
                // while the handler runs. One that stopped waiting has no
                // reader and never will: its request is not run, as when
                // a `POST` stops between opening and pushing upstream.
                if responder.send(Ok(opened)).is_err() {
                    if let Some(m) = m {
                        self.forget_request_stream(m);
                    }
                    return Ok(true);
                }
                self.client_message(message, m, context).await?;
            }
            Command::ClientMessage {
                message,
                http_request_id,
            } => {
                self.client_message(message, http_request_id, context)
                    .await?
            }
            Command::EstablishRequestWiseChannel { responder } => {
                let opened = self.open_request_stream().await;
                let _ = responder.send(opened.map(StreamableHttpMessageReceiver::from));
            }
            Command::EstablishCommonChannel { responder } => {
                let _ = responder.send(Ok(self.open_standalone().into()));
            }
            Command::OpenRequestStream { responder } => {
                let _ = responder.send(self.open_request_stream().await);
            }
            Command::OpenStandaloneStream { responder } => {
                let _ = responder.send(Ok(self.open_standalone()));
            }
            Command::CloseRequestWiseChannel { id, responder } => {
                self.forget_request_stream(id);
                let _ = responder.send(Ok(()));
            }
            Command::Resume {
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
            Command::PlanResume {
                last_event_id,
                responder,
            } => {
                let _ = responder.send(Ok(self.plan_resume(&last_event_id)));
            }
            Command::CloseSseStream {
                http_request_id,
                retry_interval,
                responder,
            } => {
                let _ =
                    responder.send(self.close_connection(http_request_id, retry_interval).await);
            }
            Command::CloseRequestConnection {
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
            Command::Close => return Ok(false),
            Command::InitializeRequest { responder, .. } => {
                // Only the first message may initialize.
                let _ = responder.send(Err(SessionError::InvalidEventId));
            }
        }
        Ok(true)
    }
}
