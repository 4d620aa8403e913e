//! A seeded soak under connection churn: several clients of the fork call a
//! tool that streams progress, through a proxy that closes every connection
//! after a random lifetime. Every call must complete with every progress
//! value exactly once: no hang, no duplicate, no gap.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp_resume_testkit::progress::ProgressRecorder;
use rmcp_resume_testkit::proxy::Proxy;
use rmcp_resume_testkit::{Side, TestServer};
use serde_json::json;

/// Bound on one call, so a hang fails the test.
const CALL_LIMIT: Duration = Duration::from_secs(60);
/// Progress notifications per call.
const STEPS: u32 = 20;

/// One soak's shape.
#[derive(Clone, Copy)]
struct Churn {
    clients: usize,
    calls: usize,
    /// Between two progress notifications.
    interval: Duration,
    /// Connection lifetimes.
    lifetimes: (Duration, Duration),
}

async fn soak(seed: u64, churn: Churn) -> anyhow::Result<()> {
    let served = TestServer::new(Side::Fork).serve().await?;
    let proxy = Proxy::start(served.addr, "", served.ct.clone()).await?;
    proxy.churn(seed, churn.lifetimes.0, churn.lifetimes.1);
    let url = format!("http://{}/mcp", proxy.addr);
    let mut clients = tokio::task::JoinSet::new();
    for client in 0..churn.clients {
        let url = url.clone();
        clients.spawn(async move {
            let recorder = ProgressRecorder::default();
            let service = recorder
                .clone()
                .serve(StreamableHttpClientTransport::from_uri(url))
                .await?;
            for call in 0..churn.calls {
                let token = format!("client {client}, call {call}");
                recorder.clear();
                let params: CallToolRequestParams = serde_json::from_value(json!({
                    "name": "stream",
                    "arguments": { "count": STEPS, "interval_ms": churn.interval.as_millis() as u64 },
                }))?;
                let result =
                    tokio::time::timeout(CALL_LIMIT, service.peer().call_tool(params)).await;
                let result = result.map_err(|_| anyhow::anyhow!("seed {seed}: {token} hung"))??;
                let text = result
                    .content
                    .first()
                    .and_then(|c| c.as_text())
                    .map(|t| t.text.clone());
                anyhow::ensure!(
                    text == Some(format!("streamed {STEPS}")),
                    "seed {seed}: {token}: {text:?}"
                );
                let seen = recorder.until(STEPS as usize, Duration::from_secs(10)).await;
                anyhow::ensure!(seen.len() == 1, "seed {seed}: {token}: tokens {seen:?}");
                let mut values: Vec<f64> = seen.into_values().flatten().collect();
                values.sort_by(f64::total_cmp);
                let expected: Vec<f64> = (1..=STEPS).map(f64::from).collect();
                anyhow::ensure!(
                    values == expected,
                    "seed {seed}: {token}: progress {values:?}"
                );
            }
            service.cancel().await?;
            Ok::<_, anyhow::Error>(())
        });
    }
    while let Some(done) = clients.join_next().await {
        done??;
    }
    anyhow::ensure!(
        proxy.cuts() > 0,
        "seed {seed}: the proxy never cut a connection"
    );
    eprintln!("seed {seed}: {} connections cut", proxy.cuts());
    Ok(())
}

/// Five seeds of one shape.
async fn soak_seeds(churn: Churn) -> anyhow::Result<()> {
    for seed in 1..=5 {
        soak(seed, churn).await?;
    }
    Ok(())
}

/// The churn issue's setup: 8 clients × 6 calls of 20 progress
/// notifications 25 ms apart, every connection closed after 50–600 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_complete_whole_under_random_cuts() -> anyhow::Result<()> {
    let churn = Churn {
        clients: 8,
        calls: 6,
        interval: Duration::from_millis(25),
        lifetimes: (Duration::from_millis(50), Duration::from_millis(600)),
    };
    soak_seeds(churn).await
}

/// Harsher: 16 clients, connections living 20–300 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_complete_whole_under_harsher_cuts() -> anyhow::Result<()> {
    let churn = Churn {
        clients: 16,
        calls: 3,
        interval: Duration::from_millis(10),
        lifetimes: (Duration::from_millis(20), Duration::from_millis(300)),
    };
    soak_seeds(churn).await
}
