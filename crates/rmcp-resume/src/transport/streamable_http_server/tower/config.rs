//! The service's configuration: upstream's fields and builders.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::up;
use crate::transport::streamable_http_server::session::SessionStore;

/// Configuration of [`StreamableHttpService`](super::StreamableHttpService); the same fields and builders as
/// upstream's.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct StreamableHttpServerConfig {
    /// Cancelling this ends every session and stream.
    pub cancellation_token: CancellationToken,
    /// Serve protocol revisions before 2026-07-28 with sessions (and
    /// therefore resumable streams). Later revisions are always stateless.
    pub legacy_session_mode: bool,
    /// External store of session state, for restoring sessions across instances.
    pub session_store: Option<Arc<dyn SessionStore>>,
    /// Interval of SSE keep-alive comments.
    pub sse_keep_alive: Option<Duration>,
    /// Accepted browser `Origin`s; empty disables the check unless
    /// [`enforce_origin_validation`](Self::enforce_origin_validation) was called.
    pub allowed_origins: Vec<String>,
    /// The `retry` sent in priming events.
    pub sse_retry: Option<Duration>,
    /// Accepted `Host` authorities (DNS-rebinding protection); loopback by default.
    pub allowed_hosts: Vec<String>,
    /// In stateless mode, prefer `application/json` responses.
    pub json_response: bool,
    /// Largest accepted POST body, in bytes.
    pub max_request_body_bytes: usize,
    /// Require per-request protocol metadata on stateless requests.
    pub stateless_protocol_metadata_required: bool,
    validate_empty_origin_allowlist: bool,
}

impl Default for StreamableHttpServerConfig {
    fn default() -> Self {
        // Upstream's defaults, read from upstream so they cannot drift.
        let base = up::StreamableHttpServerConfig::default();
        Self {
            sse_keep_alive: base.sse_keep_alive,
            sse_retry: base.sse_retry,
            legacy_session_mode: base.legacy_session_mode,
            json_response: base.json_response,
            cancellation_token: CancellationToken::new(),
            allowed_hosts: base.allowed_hosts,
            allowed_origins: base.allowed_origins,
            validate_empty_origin_allowlist: false,
            session_store: base.session_store,
            max_request_body_bytes: base.max_request_body_bytes,
            stateless_protocol_metadata_required: base.stateless_protocol_metadata_required,
        }
    }
}

impl StreamableHttpServerConfig {
    /// Sets the accepted `Host` authorities.
    pub fn with_allowed_hosts(self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let allowed_hosts = hosts.into_iter().map(Into::into).collect();
        Self {
            allowed_hosts,
            ..self
        }
    }

    /// Accepts any `Host` (not recommended for public deployments).
    pub fn disable_allowed_hosts(self) -> Self {
        Self {
            allowed_hosts: Vec::new(),
            ..self
        }
    }

    /// Sets the accepted `Origin`s.
    pub fn with_allowed_origins(
        self,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let allowed_origins = origins.into_iter().map(Into::into).collect();
        Self {
            allowed_origins,
            ..self
        }
    }

    /// Validates `Origin` even with an empty allow-list (rejecting every Origin).
    pub fn enforce_origin_validation(self) -> Self {
        Self {
            validate_empty_origin_allowlist: true,
            ..self
        }
    }

    /// Accepts any `Origin`.
    pub fn disable_allowed_origins(self) -> Self {
        Self {
            allowed_origins: Vec::new(),
            validate_empty_origin_allowlist: false,
            ..self
        }
    }

    /// Sets the keep-alive interval.
    pub fn with_sse_keep_alive(self, sse_keep_alive: Option<Duration>) -> Self {
        Self {
            sse_keep_alive,
            ..self
        }
    }

    /// Sets the priming `retry`.
    pub fn with_sse_retry(self, sse_retry: Option<Duration>) -> Self {
        Self { sse_retry, ..self }
    }

    /// Enables or disables sessions for pre-2026 revisions.
    pub fn with_legacy_session_mode(self, legacy_session_mode: bool) -> Self {
        Self {
            legacy_session_mode,
            ..self
        }
    }

    /// Prefers JSON responses in stateless mode.
    pub fn with_json_response(self, json_response: bool) -> Self {
        Self {
            json_response,
            ..self
        }
    }

    /// Sets the cancellation token.
    pub fn with_cancellation_token(self, cancellation_token: CancellationToken) -> Self {
        Self {
            cancellation_token,
            ..self
        }
    }

    /// Sets the largest accepted POST body.
    pub fn with_max_request_body_bytes(self, max_request_body_bytes: usize) -> Self {
        Self {
            max_request_body_bytes,
            ..self
        }
    }

    /// Requires per-request protocol metadata on stateless requests.
    pub fn with_stateless_protocol_metadata_required(self, required: bool) -> Self {
        Self {
            stateless_protocol_metadata_required: required,
            ..self
        }
    }

    pub(super) fn to_upstream(&self) -> up::StreamableHttpServerConfig {
        let mut config = up::StreamableHttpServerConfig::default();
        config.sse_keep_alive = self.sse_keep_alive;
        config.sse_retry = self.sse_retry;
        config.legacy_session_mode = self.legacy_session_mode;
        config.json_response = self.json_response;
        config.cancellation_token = self.cancellation_token.clone();
        config.allowed_hosts = self.allowed_hosts.clone();
        config.allowed_origins = self.allowed_origins.clone();
        config.session_store = self.session_store.clone();
        config.max_request_body_bytes = self.max_request_body_bytes;
        config.stateless_protocol_metadata_required = self.stateless_protocol_metadata_required;
        if self.validate_empty_origin_allowlist {
            config = config.enforce_origin_validation();
        }
        config
    }
}
