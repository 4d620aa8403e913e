//! A tool call over streamable HTTP in a stateful session (SSE response),
//! upstream rmcp 3.11.0 against the fork, in the same run.
//!
//! `server/*`: the same client calls upstream's server and the fork's.
//! `client/*`: upstream's client and the fork's call the same (fork) server.
//! `concurrent/{1,16,64}/*`: that many clients of one side, each in its own
//! session, call their side's server at once; throughput is calls/s.
//! The claim is fork/upstream <= 1 within noise for every pair.

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use rmcp_resume_e2e::scenario::Side;
use rmcp_resume_e2e::{DemoServer, serve_ephemeral};
use tokio_util::sync::CancellationToken;

async fn client(url: String) -> RunningService<RoleClient, ClientConfig> {
    ClientConfig::default()
        .serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .unwrap_or_else(|e| panic!("client: {e}"))
}

fn call() -> CallToolRequestParams {
    let args = serde_json::json!({ "a": 20, "b": 22 });
    CallToolRequestParams::new("sum").with_arguments(args.as_object().cloned().unwrap_or_default())
}

fn round_trip(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("runtime: {e}"));
    let ct = CancellationToken::new();
    let (upstream_client, fork_client, upstream_side_client) = rt.block_on(async {
        let upstream_service = upstream::transport::StreamableHttpService::new(
            || Ok(DemoServer::new()),
            Arc::new(upstream::transport::streamable_http_server::session::local::LocalSessionManager::default()),
            upstream::transport::StreamableHttpServerConfig::default()
                .with_cancellation_token(ct.child_token()),
        );
        let fork_service = rmcp_resume_e2e::demo_service(&ct);
        let (up_addr, _) = serve_ephemeral(upstream_service, ct.clone())
            .await
            .unwrap_or_else(|e| panic!("bind: {e}"));
        let (fork_addr, _) = serve_ephemeral(fork_service, ct.clone())
            .await
            .unwrap_or_else(|e| panic!("bind: {e}"));
        let upstream_side = ClientConfig::default()
            .serve(upstream::transport::StreamableHttpClientTransport::from_uri(format!(
                "http://{fork_addr}/mcp"
            )))
            .await
            .unwrap_or_else(|e| panic!("client: {e}"));
        (
            client(format!("http://{up_addr}/mcp")).await,
            client(format!("http://{fork_addr}/mcp")).await,
            upstream_side,
        )
    });

    let mut group = c.benchmark_group("round_trip");
    let pairs = [
        ("server/upstream", &upstream_client),
        ("server/fork", &fork_client),
        ("client/upstream", &upstream_side_client),
        ("client/fork", &fork_client),
    ];
    for (name, client) in pairs {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                client
                    .call_tool(call())
                    .await
                    .unwrap_or_else(|e| panic!("call: {e}"))
            })
        });
    }
    group.finish();
    ct.cancel();
}

/// `k` clients of `side` connected to a server of the same side.
async fn fleet(
    side: Side,
    k: usize,
    ct: &CancellationToken,
) -> Vec<RunningService<RoleClient, ClientConfig>> {
    let url = match side {
        Side::Upstream => {
            let service = upstream::transport::StreamableHttpService::new(
                || Ok(DemoServer::new()),
                Arc::new(upstream::transport::streamable_http_server::session::local::LocalSessionManager::default()),
                upstream::transport::StreamableHttpServerConfig::default()
                    .with_cancellation_token(ct.child_token()),
            );
            serve_ephemeral(service, ct.clone()).await
        }
        Side::Fork => serve_ephemeral(rmcp_resume_e2e::demo_service(ct), ct.clone()).await,
    }
    .map(|(addr, _)| format!("http://{addr}/mcp"))
    .unwrap_or_else(|e| panic!("bind: {e}"));
    let mut clients = Vec::with_capacity(k);
    for _ in 0..k {
        let client = match side {
            Side::Upstream => {
                ClientConfig::default()
                    .serve(
                        upstream::transport::StreamableHttpClientTransport::from_uri(url.clone()),
                    )
                    .await
            }
            Side::Fork => {
                ClientConfig::default()
                    .serve(StreamableHttpClientTransport::from_uri(url.clone()))
                    .await
            }
        };
        clients.push(client.unwrap_or_else(|e| panic!("client: {e}")));
    }
    clients
}

fn concurrent(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("runtime: {e}"));
    let ct = CancellationToken::new();
    let mut group = c.benchmark_group("concurrent");
    for k in [1usize, 16, 64] {
        group.throughput(criterion::Throughput::Elements(k as u64));
        for side in Side::BOTH {
            let clients = rt.block_on(fleet(side, k, &ct));
            group.bench_with_input(BenchmarkId::new(side.name(), k), &k, |b, _| {
                b.to_async(&rt).iter(|| {
                    futures::future::join_all(clients.iter().map(|client| async move {
                        client
                            .call_tool(call())
                            .await
                            .unwrap_or_else(|e| panic!("call: {e}"))
                    }))
                })
            });
        }
    }
    group.finish();
    ct.cancel();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(50)
        .measurement_time(std::time::Duration::from_secs(5));
    targets = round_trip
}
criterion_group! {
    name = concurrency;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(4));
    targets = concurrent
}
criterion_main!(benches, concurrency);
