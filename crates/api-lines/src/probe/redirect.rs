// The default HTTP client of `from_uri`, as an application meets it: does a
// client pointed at a URL that answers `307` to another origin get through?
// Upstream 0.x's (reqwest's default) and 1.8's follow; 2.2's follows none.

pub mod redirect {
    use super::rmcp;

    /// Whether a client built by `from_uri(url)` initializes within 10 s.
    pub async fn initializes(url: String) -> bool {
        use rmcp::ServiceExt;
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
        let serving = rmcp::model::ClientInfo::default().serve(transport);
        match tokio::time::timeout(std::time::Duration::from_secs(10), serving).await {
            Ok(Ok(client)) => {
                let _ = client.cancel().await;
                true
            }
            _ => false,
        }
    }
}
