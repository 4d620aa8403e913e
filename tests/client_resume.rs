//! The fork's client over real HTTP, through a proxy that cuts connections:
//! a tool call whose POST stream is cut, and whose tool finishes while the
//! client is away, ends with the response or a clear error, in a bounded
//! number of requests. Against the fork's server and against upstream's.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ResumeFailureKind;
use rmcp::transport::streamable_http_client::resume_failure;
use rmcp::{ServiceError, ServiceExt};
use rmcp_resume_testkit::proxy::Proxy;
use rmcp_resume_testkit::scenario::first_text;
use rmcp_resume_testkit::{Served, Side, TestServer};
use serde_json::json;

/// Bound on the whole scenario, so a regression fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(60);

/// A `side` server priming `retry: 100`, behind a proxy that marks progress.
async fn behind_proxy(side: Side) -> anyhow::Result<(Served, Proxy)> {
    let served = TestServer::new(side)
        .retry(Some(Duration::from_millis(100)))
        .serve()
        .await?;
    let proxy = Proxy::start(served.addr, "notifications/progress", served.ct.clone()).await?;
    Ok((served, proxy))
}

fn work_call() -> CallToolRequestParams {
    serde_json::from_value(json!({
        "name": "work",
        "arguments": { "count": 2 },
        "_meta": { "progressToken": "cut-me" }
    }))
    .unwrap_or_else(|e| panic!("params: {e}"))
}

/// Calls `work`, cuts every connection once its progress went out, lets the
/// tool finish while nothing is connected, and returns how the call ended.
async fn cut_call(proxy: &Proxy, s: &Served) -> anyhow::Result<Result<String, ServiceError>> {
    let client = ClientConfig::default()
        .serve(StreamableHttpClientTransport::from_uri(format!(
            "http://{}/mcp",
            proxy.addr
        )))
        .await?;
    let peer = client.peer().clone();
    let call = peer.call_tool(work_call());
    let mut call = std::pin::pin!(call);
    tokio::select! {
        _ = proxy.marker_seen() => {}
        early = &mut call => anyhow::bail!("call ended before the cut: {early:?}"),
    }
    proxy.cut();
    s.gate.notify_one();
    s.finished.notified().await;
    let outcome = tokio::time::timeout(LIMIT, call).await?;
    drop(client);
    Ok(outcome.map(|r| first_text(&r).unwrap_or_default()))
}

#[tokio::test]
async fn fork_server_delivers_the_response_produced_while_cut() -> anyhow::Result<()> {
    let (s, proxy) = behind_proxy(Side::Fork).await?;
    let outcome = cut_call(&proxy, &s).await?;
    assert_eq!(outcome.ok().as_deref(), Some("finished 2 steps"));
    assert!(proxy.resumes() <= 3, "{} resumes", proxy.resumes());
    let stats = s.resume_stats();
    assert!(stats.is_some_and(|stats| stats.replayed >= 1), "{stats:?}");
    Ok(())
}

#[tokio::test]
async fn upstream_server_gives_a_clear_error_in_bounded_requests() -> anyhow::Result<()> {
    // Upstream drops a request's stream once answered, then answers the
    // resume with an empty 200: the loop that motivated the fork.
    let (s, proxy) = behind_proxy(Side::Upstream).await?;
    let outcome = cut_call(&proxy, &s).await?;
    let error = match outcome {
        Ok(text) => anyhow::bail!("a lost response cannot arrive, got {text:?}"),
        Err(error) => error,
    };
    // A typed failure the caller can match, not an internal error.
    let failure = resume_failure(&error);
    let kind = failure.as_ref().map(|f| f.kind);
    assert_eq!(kind, Some(ResumeFailureKind::Exhausted), "{error}");
    assert!(
        failure.is_some_and(|f| f.cursor.is_some()),
        "the failure names its cursor: {error}"
    );
    assert!(proxy.resumes() <= 4, "{} resumes", proxy.resumes());
    Ok(())
}

#[tokio::test]
async fn worker_spawned_by_hand_is_the_forks() -> anyhow::Result<()> {
    use rmcp::transport::WorkerTransport;
    use rmcp::transport::streamable_http_client::{
        StreamableHttpClientTransportConfig, StreamableHttpClientWorker,
    };
    let served = TestServer::new(Side::Fork).serve().await?;
    let worker = StreamableHttpClientWorker::new(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(served.url.clone()),
    );
    // The fork's worker carries the fork-only knobs.
    assert_eq!(worker.resume.max_failed_resumes, 3);
    let client = ClientConfig::default()
        .serve(WorkerTransport::spawn(worker))
        .await?;
    let result = client
        .call_tool(CallToolRequestParams::new("build_info"))
        .await?;
    let text = first_text(&result);
    assert_eq!(text.as_deref(), Some("rmcp-resume 0.1.0 over rmcp 3.11.0"));
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_first_standalone_get_lost_in_transit_is_retried() -> anyhow::Result<()> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rmcp::ClientHandler;
    use rmcp::service::NotificationContext;
    use tokio::sync::Notify;

    /// Counts `tools/list_changed`, which rides the standalone stream.
    #[derive(Clone, Default)]
    struct Listener(Arc<(AtomicUsize, Notify)>);

    impl ClientHandler for Listener {
        async fn on_tool_list_changed(&self, _: NotificationContext<rmcp::RoleClient>) {
            self.0.0.fetch_add(1, Ordering::SeqCst);
            self.0.1.notify_one();
        }

        fn get_info(&self) -> ClientConfig {
            ClientConfig::default()
        }
    }

    let served = TestServer::new(Side::Fork).serve().await?;
    let proxy = Proxy::start(served.addr, "", served.ct.clone()).await?;
    proxy.refuse_gets(1);
    let listener = Listener::default();
    let client = listener
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(format!(
            "http://{}/mcp",
            proxy.addr
        )))
        .await?;
    // Whenever the retried GET attaches, it starts from the first retained
    // event, so one notification suffices.
    let announce: CallToolRequestParams =
        serde_json::from_value(json!({ "name": "announce", "arguments": { "count": 1 } }))?;
    client.peer().call_tool(announce).await?;
    let heard = tokio::time::timeout(LIMIT, listener.0.1.notified()).await;
    assert!(heard.is_ok(), "no standalone notification ever arrived");
    assert!(proxy.gets() >= 1, "the GET was retried");
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn an_idle_timeout_shorter_than_the_tool_does_not_fail_the_call() -> anyhow::Result<()> {
    // The client sees events, not the server's keep-alive comments, so a
    // slow tool's quiet stream looks idle: each idle timeout resumes it.
    // On the fork's server a resume of a connected stream takes it over, so
    // the call still gets its response, however many times that happens.
    use rmcp::transport::common::client_side_sse::ResumeConfig;
    use rmcp::transport::resumption::IdleTimeout;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let keep_alive = Duration::from_millis(100);
    let served = TestServer::new(Side::Fork)
        .retry(Some(Duration::from_millis(100)))
        .keep_alive(Some(keep_alive))
        .serve()
        .await?;
    let proxy = Proxy::start(served.addr, "notifications/progress", served.ct.clone()).await?;
    let idle = IdleTimeout::new(Duration::from_millis(400), Some(keep_alive), keep_alive)?;
    let transport = StreamableHttpClientTransport::with_resume_config(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", proxy.addr)),
        ResumeConfig::default().with_idle_timeout(idle),
    );
    let client = ClientConfig::default().serve(transport).await?;
    let peer = client.peer().clone();
    let call = peer.call_tool(work_call());
    let mut call = std::pin::pin!(call);
    // Both streams go quiet while the tool waits at its gate: at least two
    // rounds of idle resumes, then the answer.
    while proxy.resumes() < 4 {
        tokio::select! {
            _ = proxy.resume_seen() => {}
            early = &mut call => anyhow::bail!("call ended while the tool waited: {early:?}"),
        }
    }
    served.gate.notify_one();
    let result = tokio::time::timeout(LIMIT, call).await??;
    let text = first_text(&result);
    assert_eq!(text.as_deref(), Some("finished 2 steps"));
    let stats = served.resume_stats();
    assert!(stats.is_some_and(|s| s.rejected == 0), "{stats:?}");
    client.cancel().await?;
    Ok(())
}

/// Connects a `side` client while the proxy loses the first `count` POSTs
/// carrying `method`: each reached the server, and its connection closed
/// before any answer. Then calls `sum` on the session it got.
async fn handshake_through_losses(side: Side, method: &str, count: usize) -> anyhow::Result<()> {
    let served = TestServer::new(side).serve().await?;
    let proxy = Proxy::start(served.addr, "", served.ct.clone()).await?;
    proxy.lose_posts(method, count);
    let url = format!("http://{}/mcp", proxy.addr);
    let client = tokio::time::timeout(
        LIMIT,
        rmcp_resume_testkit::scenario::connect(side, ClientConfig::default(), url),
    )
    .await??;
    let params: CallToolRequestParams =
        serde_json::from_value(json!({ "name": "sum", "arguments": { "a": 2, "b": 3 } }))?;
    let result = tokio::time::timeout(LIMIT, client.peer().call_tool(params)).await??;
    assert_eq!(first_text(&result).as_deref(), Some("5"));
    drop(client);
    Ok(())
}

#[tokio::test]
async fn a_lost_initialize_is_sent_again_and_the_client_connects() -> anyhow::Result<()> {
    handshake_through_losses(Side::Fork, "\"method\":\"initialize\"", 2).await?;
    // Upstream's client gives up on the first loss: the test's loss is real.
    let upstream = handshake_through_losses(Side::Upstream, "\"method\":\"initialize\"", 1).await;
    assert!(
        upstream.is_err(),
        "upstream connected through a lost initialize"
    );
    Ok(())
}

#[tokio::test]
async fn a_lost_initialized_notification_is_sent_again() -> anyhow::Result<()> {
    handshake_through_losses(Side::Fork, "notifications/initialized", 1).await?;
    let upstream = handshake_through_losses(Side::Upstream, "notifications/initialized", 1).await;
    assert!(
        upstream.is_err(),
        "upstream connected through a lost initialized"
    );
    Ok(())
}

#[tokio::test]
async fn handshake_losses_past_the_transport_limit_fail_the_connect() -> anyhow::Result<()> {
    use rmcp::transport::common::client_side_sse::SseRetryPolicy;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let served = TestServer::new(Side::Fork).serve().await?;
    let proxy = Proxy::start(served.addr, "", served.ct.clone()).await?;
    // One more loss than `max_transport_failures` (5) allows.
    proxy.lose_posts("\"method\":\"initialize\"", 6);
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", proxy.addr));
    /// Never out of tries, and quick: only the transport limit can end it.
    #[derive(Debug)]
    struct Quick;
    impl SseRetryPolicy for Quick {
        fn retry(&self, _current_times: usize) -> Option<Duration> {
            Some(Duration::from_millis(10))
        }
    }
    config.retry_config = std::sync::Arc::new(Quick);
    let connected = tokio::time::timeout(
        LIMIT,
        ClientConfig::default().serve(StreamableHttpClientTransport::from_config(config)),
    )
    .await?;
    assert!(connected.is_err(), "connected through 6 lost initializes");
    // The sixth was never sent: the client stopped at its limit.
    assert_eq!(
        proxy.posts_to_lose(),
        1,
        "the client sent more than its limit"
    );
    Ok(())
}

/// Counts `tools/list_changed` (the standalone stream's notifications).
#[derive(Clone, Default)]
struct ListChanged(std::sync::Arc<(std::sync::atomic::AtomicUsize, tokio::sync::Notify)>);

impl ListChanged {
    fn count(&self) -> usize {
        self.0.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until at least `n` arrived (bounded by `LIMIT`).
    async fn until(&self, n: usize) -> usize {
        let wait = async {
            loop {
                let notified = self.0.1.notified();
                if self.count() >= n {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(LIMIT, wait).await;
        self.count()
    }
}

impl rmcp::ClientHandler for ListChanged {
    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        self.0.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.0.1.notify_waiters();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

#[tokio::test]
async fn an_unreachable_upstream_server_costs_the_standalone_stream_nothing() -> anyhow::Result<()>
{
    // Upstream rmcp 3.11's server answers a GET without a cursor by replaying
    // everything it holds. The standalone stream is cut and its resumes are
    // refused more times than the transport limit allows; it keeps its
    // cursor, so nothing is delivered twice and nothing is reported lost.
    use rmcp::transport::common::client_side_sse::{FixedInterval, ResumeConfig};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let served = TestServer::new(Side::Upstream)
        .keep_alive(None)
        .serve()
        .await?;
    let proxy = Proxy::start(served.addr, "", served.ct.clone()).await?;
    let gaps = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = gaps.clone();
    let resume = ResumeConfig::default().on_discontinuity(move |_| {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    });
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", proxy.addr));
    let mut policy = FixedInterval::default();
    policy.max_times = None;
    policy.duration = Duration::from_millis(50);
    config.retry_config = std::sync::Arc::new(policy);
    let listener = ListChanged::default();
    let client = listener
        .clone()
        .serve(StreamableHttpClientTransport::with_resume_config(
            reqwest::Client::new(),
            config,
            resume,
        ))
        .await?;
    let announce = |count: u32| -> anyhow::Result<CallToolRequestParams> {
        Ok(serde_json::from_value(
            json!({ "name": "announce", "arguments": { "count": count } }),
        )?)
    };
    client.peer().call_tool(announce(10)?).await?;
    assert_eq!(listener.until(10).await, 10);
    proxy.refuse_gets(7);
    proxy.cut();
    // Seven refusals (uncounted by the proxy), more than
    // `max_transport_failures` (5), then the resume, with the cursor.
    tokio::time::timeout(LIMIT, proxy.resume_seen()).await?;
    assert_eq!(proxy.resumes(), 1);
    client.peer().call_tool(announce(1)?).await?;
    assert_eq!(
        listener.until(11).await,
        11,
        "one new notification, none twice"
    );
    assert_eq!(
        gaps.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing was lost"
    );
    client.cancel().await?;
    Ok(())
}
