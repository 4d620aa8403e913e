//! [`StreamableHttpClientTransport`]: upstream's worker over a
//! [`ResumeGuard`].
//!
//! On 3.11 the transport is a type of its own; on 0.15 to 2.2 it is
//! upstream's alias, `WorkerTransport<StreamableHttpClientWorker<C>>`, over
//! the fork's worker transport (`transport/worker.rs`), because those lines'
//! applications name both spellings. Either way a transport built by the
//! constructors here runs upstream's worker over the guard, with no relay.

use tokio_util::sync::CancellationToken;

use super::{
    ResumeGuard, StreamableHttpClient, StreamableHttpClientTransportConfig,
    StreamableHttpClientWorker,
};
use crate::transport::common::client_side_sse::ResumeConfig;

type UpstreamWorker<C> = upstream::transport::streamable_http_client::StreamableHttpClientWorker<C>;

/// What does the work: upstream's worker over the guard, spawned by
/// upstream's worker transport.
pub(super) type Direct<C> =
    upstream::transport::worker::WorkerTransport<UpstreamWorker<ResumeGuard<C>>>;

/// Spawns the [`Direct`] transport for `client`, stopped by `ct`.
pub(super) fn direct<C: StreamableHttpClient>(
    client: C,
    config: StreamableHttpClientTransportConfig,
    resume: ResumeConfig,
    ct: CancellationToken,
) -> Direct<C> {
    let guard = ResumeGuard::new(client, config.retry_config.clone(), resume);
    upstream::transport::worker::WorkerTransport::spawn_with_ct(
        UpstreamWorker::new(guard, config),
        ct,
    )
}

crate::line::with_transport_struct! {
    use super::StreamableHttpError;
    use crate::transport::Transport;
    use crate::{RoleClient, service::RxJsonRpcMessage, service::TxJsonRpcMessage};

    /// The streamable-HTTP client transport: upstream's worker over a
    /// [`ResumeGuard`]. Drop-in for upstream's type of the same name.
    pub struct StreamableHttpClientTransport<C: StreamableHttpClient> {
        inner: Direct<C>,
    }

    impl<C: StreamableHttpClient> std::fmt::Debug for StreamableHttpClientTransport<C> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("StreamableHttpClientTransport")
                .finish_non_exhaustive()
        }
    }

    impl<C: StreamableHttpClient> StreamableHttpClientTransport<C> {
        /// A transport over `client`, with the fork's default [`ResumeConfig`].
        pub fn with_client(client: C, config: StreamableHttpClientTransportConfig) -> Self {
            Self::with_resume_config(client, config, ResumeConfig::default())
        }

        /// A transport over `client` with explicit resumption knobs (fork-only).
        pub fn with_resume_config(
            client: C,
            config: StreamableHttpClientTransportConfig,
            resume: ResumeConfig,
        ) -> Self {
            Self {
                inner: direct(client, config, resume, CancellationToken::new()),
            }
        }

        /// Runs `worker`. Upstream's spelling, where this type is an alias of
        /// `WorkerTransport<StreamableHttpClientWorker<C>>`.
        pub fn spawn(worker: StreamableHttpClientWorker<C>) -> Self {
            Self::spawn_with_ct(worker, CancellationToken::new())
        }

        /// Runs `worker` until `ct` is cancelled. Upstream's spelling, as
        /// [`spawn`](Self::spawn).
        pub fn spawn_with_ct(worker: StreamableHttpClientWorker<C>, ct: CancellationToken) -> Self {
            let (client, config, resume) = worker.into_parts();
            Self {
                inner: direct(client, config, resume, ct),
            }
        }

        /// Cancels the transport's worker when cancelled.
        pub fn cancel_token(&self) -> CancellationToken {
            self.inner.cancel_token()
        }
    }

    impl<C: StreamableHttpClient> Transport<RoleClient> for StreamableHttpClientTransport<C> {
        type Error = StreamableHttpError<C::Error>;

        fn send(
            &mut self,
            item: TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            self.inner.send(item)
        }

        fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
            self.inner.receive()
        }

        fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
            self.inner.close()
        }
    }
}

crate::line::with_transport_alias! {
    /// The streamable-HTTP client transport, spelled as upstream spells it:
    /// the worker transport of [`StreamableHttpClientWorker`]. Built by the
    /// constructors below, it runs upstream's worker over a [`ResumeGuard`]
    /// directly; spawned from a worker, it relays through the worker's queues.
    pub type StreamableHttpClientTransport<C> =
        crate::transport::worker::WorkerTransport<StreamableHttpClientWorker<C>>;

    impl<C: StreamableHttpClient> StreamableHttpClientTransport<C> {
        /// A transport over `client`, with the fork's default [`ResumeConfig`].
        pub fn with_client(client: C, config: StreamableHttpClientTransportConfig) -> Self {
            Self::with_resume_config(client, config, ResumeConfig::default())
        }

        /// A transport over `client` with explicit resumption knobs (fork-only).
        pub fn with_resume_config(
            client: C,
            config: StreamableHttpClientTransportConfig,
            resume: ResumeConfig,
        ) -> Self {
            let ct = CancellationToken::new();
            Self::direct(direct(client, config, resume, ct.clone()), ct)
        }
    }
}

#[cfg(feature = "transport-streamable-http-client-reqwest")]
impl StreamableHttpClientTransport<reqwest::Client> {
    /// A transport to `uri` over the default reqwest client.
    pub fn from_uri(uri: impl Into<std::sync::Arc<str>>) -> Self {
        Self::from_config(StreamableHttpClientTransportConfig::with_uri(uri))
    }

    /// A transport from `config` over the default reqwest client.
    pub fn from_config(config: StreamableHttpClientTransportConfig) -> Self {
        Self::with_client(crate::line::default_http_client(), config)
    }
}

#[cfg(all(unix, feature = "transport-streamable-http-client-unix-socket"))]
impl StreamableHttpClientTransport<crate::transport::UnixSocketHttpClient> {
    /// A transport through the Unix socket at `socket_path` (`@name` for an
    /// abstract socket); `uri` gives the Host header and path.
    pub fn from_unix_socket(socket_path: &str, uri: impl Into<std::sync::Arc<str>>) -> Self {
        let mut config = StreamableHttpClientTransportConfig::default();
        config.uri = uri.into();
        Self::from_unix_socket_with_config(socket_path, config)
    }

    /// A transport through the Unix socket at `socket_path`, with `config`.
    pub fn from_unix_socket_with_config(
        socket_path: &str,
        config: StreamableHttpClientTransportConfig,
    ) -> Self {
        let client = crate::transport::UnixSocketHttpClient::new(socket_path, &config.uri);
        Self::with_client(client, config)
    }
}
