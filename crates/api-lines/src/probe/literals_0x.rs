// What 0.x allows and 1.x took away with `#[non_exhaustive]`: struct
// literals (with `..Default::default()` where the fork adds fields of its
// own) and exhaustive matches of the enums whose variants the fork keeps.

pub fn session_config_literal()
-> rmcp::transport::streamable_http_server::session::local::SessionConfig {
    rmcp::transport::streamable_http_server::session::local::SessionConfig {
        keep_alive: None,
        channel_capacity: 16,
        ..Default::default()
    }
}

pub fn client_worker_literal(
    url: &str,
) -> rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client> {
    rmcp::transport::streamable_http_client::StreamableHttpClientWorker {
        client: reqwest::Client::new(),
        config:
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                url.to_owned(),
            ),
    }
}

pub fn receiver_literal(
    inner: tokio::sync::mpsc::Receiver<
        rmcp::transport::streamable_http_server::session::ServerSseMessage,
    >,
) -> rmcp::transport::streamable_http_server::session::local::StreamableHttpMessageReceiver {
    rmcp::transport::streamable_http_server::session::local::StreamableHttpMessageReceiver {
        http_request_id: Some(1),
        inner,
    }
}

pub fn quit_reason(
    reason: &rmcp::transport::streamable_http_server::session::local::SessionQuitReason,
) -> &'static str {
    use rmcp::transport::streamable_http_server::session::local::SessionQuitReason as R;
    match reason {
        R::ServiceTerminated => "service",
        R::ClientTerminated => "client",
        R::ExpectInitializeRequest => "expected initialize",
        R::ExpectInitializeResponse => "expected its answer",
        R::Cancelled => "cancelled",
    }
}

/// 0.x's service names its manager type by default, and its retry
/// policies include one that never retries.
pub fn defaults_of_0x<S: rmcp::Service<rmcp::RoleServer> + Send + 'static>(
    service: rmcp::transport::StreamableHttpService<S>,
) -> rmcp::transport::StreamableHttpService<
    S,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    fn policy<P: rmcp::transport::common::client_side_sse::SseRetryPolicy + 'static>(_: P) {}
    policy(rmcp::transport::common::client_side_sse::NeverRetry);
    service
}

/// 0.x's manager is two public fields; applications build it whole.
pub fn manager_literal(
    session_config: rmcp::transport::streamable_http_server::session::local::SessionConfig,
) -> rmcp::transport::streamable_http_server::session::local::LocalSessionManager {
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager {
        sessions: tokio::sync::RwLock::new(std::collections::HashMap::new()),
        session_config,
    }
}

/// 0.x's config is plain data: unwind-safe, and a clone is independent.
pub fn config_is_plain_data() {
    fn plain<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe + Clone + Send + Sync>() {}
    plain::<rmcp::transport::streamable_http_server::session::local::SessionConfig>();
}
