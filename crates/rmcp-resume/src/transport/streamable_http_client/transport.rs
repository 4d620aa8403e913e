//! [`StreamableHttpClientTransport`]: upstream's worker over a
//! [`ResumeGuard`].

use tokio_util::sync::CancellationToken;

use super::{
    ResumeGuard, StreamableHttpClient, StreamableHttpClientTransportConfig,
    StreamableHttpClientWorker, StreamableHttpError,
};
use crate::transport::common::client_side_sse::ResumeConfig;
use crate::transport::{Transport, WorkerTransport};
use crate::{RoleClient, service::RxJsonRpcMessage, service::TxJsonRpcMessage};

type UpstreamWorker<C> = upstream::transport::streamable_http_client::StreamableHttpClientWorker<C>;

/// The streamable-HTTP client transport: upstream's worker over a
/// [`ResumeGuard`]. Drop-in for upstream's type of the same name.
pub struct StreamableHttpClientTransport<C: StreamableHttpClient> {
    inner: WorkerTransport<UpstreamWorker<ResumeGuard<C>>>,
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
        Self::spawn_parts(client, config, resume, CancellationToken::new())
    }

    /// Runs `worker`. Upstream's spelling, where this type is an alias of
    /// `WorkerTransport<StreamableHttpClientWorker<C>>`.
    pub fn spawn(worker: StreamableHttpClientWorker<C>) -> Self {
        Self::spawn_with_ct(worker, CancellationToken::new())
    }

    /// Runs `worker` until `ct` is cancelled. Upstream's spelling, as
    /// [`spawn`](Self::spawn).
    pub fn spawn_with_ct(worker: StreamableHttpClientWorker<C>, ct: CancellationToken) -> Self {
        let StreamableHttpClientWorker {
            client,
            config,
            resume,
        } = worker;
        Self::spawn_parts(client, config, resume, ct)
    }

    fn spawn_parts(
        client: C,
        config: StreamableHttpClientTransportConfig,
        resume: ResumeConfig,
        ct: CancellationToken,
    ) -> Self {
        let guard = ResumeGuard::new(client, config.retry_config.clone(), resume);
        let worker = UpstreamWorker::new(guard, config);
        Self {
            inner: WorkerTransport::spawn_with_ct(worker, ct),
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

#[cfg(feature = "transport-streamable-http-client-reqwest")]
impl StreamableHttpClientTransport<reqwest::Client> {
    /// A transport to `uri` over the default reqwest client.
    pub fn from_uri(uri: impl Into<std::sync::Arc<str>>) -> Self {
        Self::from_config(StreamableHttpClientTransportConfig::with_uri(uri))
    }

    /// A transport from `config` over the default reqwest client.
    pub fn from_config(config: StreamableHttpClientTransportConfig) -> Self {
        Self::with_client(default_reqwest_client(), config)
    }
}

/// Like upstream's default client: no idle pooling (a half-read SSE body in
/// the pool costs a delayed-ACK stall), and only same-origin 307/308
/// redirects, which keep the POST body and do not leak headers to another host.
#[cfg(feature = "transport-streamable-http-client-reqwest")]
fn default_reqwest_client() -> reqwest::Client {
    const HOPS: usize = 10;
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = [
            reqwest::StatusCode::TEMPORARY_REDIRECT,
            reqwest::StatusCode::PERMANENT_REDIRECT,
        ]
        .contains(&attempt.status());
        let origin = attempt.previous().first().map(|u| u.origin());
        if !keeps_body || origin.as_ref() != Some(&attempt.url().origin()) {
            return attempt.stop();
        }
        if attempt.previous().len() > HOPS {
            return attempt.error(format!("more than {HOPS} redirects"));
        }
        attempt.follow()
    });
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        .build()
        .unwrap_or_else(|error| {
            tracing::error!(%error, "default HTTP client failed to build; using reqwest's defaults");
            reqwest::Client::new()
        })
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
