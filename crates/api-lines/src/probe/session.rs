// The session module's items, with the types and variants upstream gives them.

pub fn keep_alive_timeout()
-> rmcp::transport::streamable_http_server::session::local::LocalSessionWorkerError {
    // 1.8 and 2.2 keep the variant, deprecated.
    #[allow(deprecated)]
    let error = rmcp::transport::streamable_http_server::session::local::LocalSessionWorkerError::KeepAliveTimeout(
        std::time::Duration::from_secs(300),
    );
    error
}

pub fn names_the_keep_alive_timeout(
    error: &rmcp::transport::streamable_http_server::session::local::LocalSessionWorkerError,
) -> Option<std::time::Duration> {
    #[allow(deprecated)]
    match error {
        rmcp::transport::streamable_http_server::session::local::LocalSessionWorkerError::KeepAliveTimeout(after) => Some(*after),
        _ => None,
    }
}
