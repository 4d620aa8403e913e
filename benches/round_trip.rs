//! A tool call over streamable HTTP in a stateful session (SSE response),
//! upstream rmcp 3.11.0 against the fork, in the same run.
//!
//! `server/*`: the same client calls upstream's server and the fork's.
//! `client/*`: upstream's client and the fork's call the same (fork) server.
//! `concurrent/{1,16,64}/*`: that many clients of one side, each in its own
//! session, call their side's server at once; throughput is calls/s.
//! The claim is fork/upstream <= 1 within noise for every pair.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::RunningService;
use rmcp_resume_testkit::scenario::connect;
use rmcp_resume_testkit::{Side, TestServer};
use tokio_util::sync::CancellationToken;

/// The demo handler on a `side` server with its defaults; returns the URL.
async fn serve(side: Side, ct: &CancellationToken) -> String {
    TestServer::new(side)
        .cancelled_by(ct)
        .serve()
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"))
        .into_url()
}

async fn client(side: Side, url: &str) -> RunningService<RoleClient, ClientConfig> {
    connect(side, ClientConfig::default(), url.to_owned())
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
        let (up_url, fork_url) = (
            serve(Side::Upstream, &ct).await,
            serve(Side::Fork, &ct).await,
        );
        (
            client(Side::Fork, &up_url).await,
            client(Side::Fork, &fork_url).await,
            client(Side::Upstream, &fork_url).await,
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
    let url = serve(side, ct).await;
    let mut clients = Vec::with_capacity(k);
    for _ in 0..k {
        clients.push(client(side, &url).await);
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
