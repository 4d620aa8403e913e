//! [`StreamableHttpClientWorker`]: the client as a [`Worker`], for callers
//! that spawn it themselves.

use std::sync::Arc;

use futures::StreamExt;

use super::{StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError};
use crate::RoleClient;
use crate::transport::Transport;
use crate::transport::common::client_side_sse::ResumeConfig;
use crate::transport::worker::{
    Worker, WorkerConfig, WorkerContext, WorkerQuitReason, WorkerSendRequest,
};

crate::line::with_transport_struct! {
    /// The streamable-HTTP client as a [`Worker`], for callers that spawn it with
    /// [`WorkerTransport::spawn`](crate::transport::WorkerTransport::spawn) themselves. Drop-in for upstream's type: same
    /// public fields and constructors.
    ///
    /// It relays between its own queues and a [`StreamableHttpClientTransport`](super::StreamableHttpClientTransport),
    /// which does the work; [`StreamableHttpClientTransport::with_client`](super::StreamableHttpClientTransport::with_client) skips
    /// that relay and is the faster way to the same behaviour.
    #[derive(Debug, Clone, Default)]
    #[non_exhaustive]
    pub struct StreamableHttpClientWorker<C: StreamableHttpClient> {
        /// The HTTP client.
        pub client: C,
        /// Upstream's transport configuration.
        pub config: StreamableHttpClientTransportConfig,
        /// The fork's resumption knobs.
        pub resume: ResumeConfig,
    }

    impl<C: StreamableHttpClient> StreamableHttpClientWorker<C> {
        /// A worker over `client`.
        pub fn new(client: C, config: StreamableHttpClientTransportConfig) -> Self {
            Self {
                client,
                config,
                resume: ResumeConfig::default(),
            }
        }

        pub(super) fn into_parts(self) -> (C, StreamableHttpClientTransportConfig, ResumeConfig) {
            (self.client, self.config, self.resume)
        }
    }
}

crate::line::with_transport_alias! {
    crate::line::upstream_non_exhaustive! {
    /// The streamable-HTTP client as a [`Worker`], for callers that spawn it with
    /// [`WorkerTransport::spawn`](crate::transport::WorkerTransport::spawn) themselves. Drop-in for upstream's type: the
    /// same public fields (0.x: a struct literal compiles) and constructors.
    ///
    /// Spawned, it relays between its own queues and a transport that does
    /// the work; [`StreamableHttpClientTransport::with_client`](super::StreamableHttpClientTransport::with_client) skips that
    /// relay and is the faster way to the same behaviour, and
    /// [`with_resume_config`](super::StreamableHttpClientTransport::with_resume_config) sets the fork's
    /// resumption knobs (a worker takes their defaults).
    #[derive(Debug, Clone, Default)]
    // `#[non_exhaustive]` where upstream's is (see `line`).
    pub struct StreamableHttpClientWorker<C: StreamableHttpClient> {
        /// The HTTP client.
        pub client: C,
        /// Upstream's transport configuration.
        pub config: StreamableHttpClientTransportConfig,
    }
    }

    impl<C: StreamableHttpClient> StreamableHttpClientWorker<C> {
        /// A worker over `client`.
        pub fn new(client: C, config: StreamableHttpClientTransportConfig) -> Self {
            Self { client, config }
        }

        pub(super) fn into_parts(self) -> (C, StreamableHttpClientTransportConfig, ResumeConfig) {
            (self.client, self.config, ResumeConfig::default())
        }
    }
}

impl<C: StreamableHttpClient + Default> StreamableHttpClientWorker<C> {
    /// A worker for `url` over a default client.
    pub fn new_simple(url: impl Into<Arc<str>>) -> Self {
        Self::new(
            C::default(),
            StreamableHttpClientTransportConfig::with_uri(url),
        )
    }
}

crate::line::with_control_queue! {
    type Upstream<C> = upstream::transport::streamable_http_client::StreamableHttpClientWorker<C>;
}

impl<C: StreamableHttpClient> Worker for StreamableHttpClientWorker<C> {
    type Error = StreamableHttpError<C::Error>;
    type Role = RoleClient;

    // The relay hands every message to a transport whose worker is
    // upstream's, so it sorts messages into queues by upstream's rules
    // (3.x; 1.x's worker has one queue).
    crate::line::with_control_queue! {
        fn is_control_message(message: &crate::model::ClientJsonRpcMessage) -> bool {
            <Upstream<C> as Worker>::is_control_message(message)
        }

        fn supports_request_cancellation() -> bool {
            <Upstream<C> as Worker>::supports_request_cancellation()
        }
    }

    fn err_closed() -> Self::Error {
        StreamableHttpError::TransportChannelClosed
    }

    fn err_join(e: tokio::task::JoinError) -> Self::Error {
        StreamableHttpError::TokioJoinError(e)
    }

    fn config(&self) -> WorkerConfig {
        let mut config = WorkerConfig::default();
        config.name = Some("StreamableHttpClientWorker".into());
        config.channel_buffer_capacity = self.config.channel_buffer_capacity;
        config
    }

    async fn run(
        self,
        mut context: WorkerContext<Self>,
    ) -> Result<(), WorkerQuitReason<Self::Error>> {
        // The worker's own token stops the loop; the transport's is its own,
        // closed below.
        let (client, config, resume) = self.into_parts();
        let mut transport = super::transport::direct(client, config, resume, Default::default());
        let mut sending = futures::stream::FuturesUnordered::new();
        let ct = context.cancellation_token.clone();
        let mut control = crate::line::take_control(&mut context);
        loop {
            tokio::select! {
                // In order: a cancellation at once; control messages
                // (responses, cancellations) before requests, as in
                // upstream's worker; what the server sent before what the
                // handler sends, so a busy handler cannot starve it.
                biased;
                _ = ct.cancelled() => {
                    let _ = transport.close().await;
                    return Err(WorkerQuitReason::Cancelled);
                }
                request = next_control(&mut control) => {
                    let request = request.ok_or(WorkerQuitReason::HandlerTerminated)?;
                    relay(&mut transport, &mut sending, request);
                }
                received = transport.receive() => match received {
                    Some(message) => context.send_to_handler(message).await?,
                    None => return Err(WorkerQuitReason::TransportClosed),
                },
                Some(()) = sending.next(), if !sending.is_empty() => {}
                request = context.from_handler_rx.recv() => {
                    let request = request.ok_or(WorkerQuitReason::HandlerTerminated)?;
                    relay(&mut transport, &mut sending, request);
                }
            }
        }
    }
}

/// The next control message; never, where the line has no control queue.
async fn next_control<T>(queue: &mut Option<tokio::sync::mpsc::Receiver<T>>) -> Option<T> {
    match queue {
        Some(queue) => queue.recv().await,
        None => std::future::pending().await,
    }
}

/// Hands one message to the transport; a request cancelled before it got
/// here is answered without being sent, as upstream's worker does.
fn relay<C: StreamableHttpClient>(
    transport: &mut super::transport::Direct<C>,
    sending: &mut futures::stream::FuturesUnordered<futures::future::BoxFuture<'static, ()>>,
    request: WorkerSendRequest<StreamableHttpClientWorker<C>>,
) {
    if crate::line::cancelled_before_sending(&request) {
        let _ = request.responder.send(Ok(()));
        return;
    }
    let WorkerSendRequest {
        message, responder, ..
    } = request;
    let send = transport.send(message);
    sending.push(Box::pin(async move {
        let _ = responder.send(send.await);
    }));
}
