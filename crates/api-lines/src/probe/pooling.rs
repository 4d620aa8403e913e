// The default HTTP client of `from_uri`, as an application meets it: are
// the requests of one session sent over pooled connections? Upstream 0.x's
// (reqwest's default) keeps idle connections; 1.8's and 2.2's keep none.

pub mod pooling {
    use super::rmcp;

    /// Initializes a client built by `from_uri(url)` and keeps it until
    /// `done` resolves (at most 10 s in all): whether it initialized.
    pub async fn initializes_until(
        url: String,
        done: impl std::future::Future<Output = ()>,
    ) -> bool {
        use rmcp::ServiceExt;
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
        let serving = rmcp::model::ClientInfo::default().serve(transport);
        let run = async {
            let client = serving.await.ok()?;
            done.await;
            let _ = client.cancel().await;
            Some(())
        };
        matches!(
            tokio::time::timeout(std::time::Duration::from_secs(10), run).await,
            Ok(Some(()))
        )
    }
}
