//! [`Wedged`]: a session manager whose resumes fail while its sessions live.
//!
//! This is the condition of the original bug report: a session's channel is
//! closed but its entry still exists, so every `GET` with `Last-Event-ID`
//! fails on the server while the session answers everything else. Upstream
//! answers such a resume with an empty `200`; what a client then does is the
//! wedge the tests measure.

use std::sync::Arc;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

/// Why a [`Wedged`] manager failed.
#[derive(Debug, thiserror::Error)]
pub enum WedgedError<E: std::error::Error + 'static> {
    /// The wrapped manager failed.
    #[error(transparent)]
    Inner(E),
    /// Every resume fails this way, as the report's sessions did.
    #[error("channel closed")]
    ChannelClosed,
}

/// Wraps a session manager and fails every resume with
/// [`WedgedError::ChannelClosed`]; everything else is the wrapped manager's.
#[derive(Debug)]
pub struct Wedged<M> {
    inner: Arc<M>,
}

impl<M> Wedged<M> {
    /// Wedges `inner`'s resumes; whoever else holds `inner` sees the same
    /// sessions.
    pub fn new(inner: Arc<M>) -> Self {
        Self { inner }
    }
}

impl<M: SessionManager> SessionManager for Wedged<M> {
    type Error = WedgedError<M::Error>;
    type Transport = M::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner
            .create_session()
            .await
            .map_err(WedgedError::Inner)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        (self.inner.initialize_session(id, message).await).map_err(WedgedError::Inner)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await.map_err(WedgedError::Inner)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.inner
            .close_session(id)
            .await
            .map_err(WedgedError::Inner)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        (self.inner.create_stream(id, message).await).map_err(WedgedError::Inner)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        (self.inner.accept_message(id, message).await).map_err(WedgedError::Inner)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        (self.inner.create_standalone_stream(id).await).map_err(WedgedError::Inner)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if self
            .inner
            .has_session(id)
            .await
            .map_err(WedgedError::Inner)?
        {
            return Err(WedgedError::ChannelClosed);
        }
        // An unknown session fails as the wrapped manager fails it.
        (self.inner.resume(id, last_event_id).await).map_err(WedgedError::Inner)
    }
}
