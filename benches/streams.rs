//! Standalone-stream throughput and resume replay, upstream rmcp 3.11.0
//! against the fork, in the same run (issue: benchmarks).
//!
//! - `notifications/{upstream,fork}`: 256 `tools/list_changed` notifications
//!   from a tool to a reader of the standalone GET stream.
//! - `replay/{N}/{upstream,fork}`: N events retained while no reader is
//!   attached, then a GET with `Last-Event-ID` reads them all.
//!
//! Both servers serve the same handler on 127.0.0.1:0; a plain HTTP client
//! reads the SSE bytes, so only the server differs.

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rmcp_resume_testkit::raw::{RawSession, SseReader};
use rmcp_resume_testkit::{Side, TestServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Serves the demo handler on `side`, retaining `capacity` events per stream.
async fn serve(side: Side, capacity: usize, ct: &CancellationToken) -> String {
    TestServer::new(side)
        .window(capacity)
        .keep_alive(None)
        .cancelled_by(ct)
        .serve()
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"))
        .into_url()
}

async fn announce(session: &mut RawSession, count: u32) {
    let (_, response) = session
        .call("announce", json!({ "count": count }), false)
        .await
        .unwrap_or_else(|e| panic!("announce: {e}"));
    let _ = SseReader::new(response).collect().await;
}

/// Reads `count` notification frames (skipping priming and notices).
async fn read_notifications(reader: &mut SseReader, count: usize) {
    let mut seen = 0;
    while seen < count {
        match reader.next().await {
            Ok(Some(frame)) if frame.data.contains("list_changed") => seen += 1,
            Ok(Some(_)) => {}
            other => panic!("stream ended after {seen} of {count}: {other:?}"),
        }
    }
}

fn notifications(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("runtime: {e}"));
    let ct = CancellationToken::new();
    let mut group = c.benchmark_group("notifications");
    group.throughput(criterion::Throughput::Elements(256));
    for side in [Side::Upstream, Side::Fork] {
        let state = rt.block_on(async {
            let url = serve(side, 512, &ct).await;
            let session = RawSession::open(&url)
                .await
                .unwrap_or_else(|e| panic!("open: {e}"));
            let reader = SseReader::new(
                session
                    .get(None)
                    .await
                    .unwrap_or_else(|e| panic!("get: {e}")),
            );
            Arc::new(tokio::sync::Mutex::new((session, reader)))
        });
        group.bench_function(side.name(), |b| {
            b.to_async(&rt).iter(|| {
                let state = state.clone();
                async move {
                    let mut guard = state.lock().await;
                    let (session, reader) = &mut *guard;
                    announce(session, 256).await;
                    read_notifications(reader, 256).await;
                }
            })
        });
    }
    group.finish();
    ct.cancel();
}

fn replay(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("runtime: {e}"));
    let ct = CancellationToken::new();
    let mut group = c.benchmark_group("replay");
    for n in [16u32, 256, 4096] {
        group.throughput(criterion::Throughput::Elements(u64::from(n)));
        for side in [Side::Upstream, Side::Fork] {
            let url = rt.block_on(serve(side, n as usize, &ct));
            group.bench_with_input(BenchmarkId::new(side.name(), n), &n, |b, &n| {
                b.to_async(&rt).iter_custom(|iters| {
                    let url = url.clone();
                    async move {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            // A fresh session per sample: N events with no
                            // reader attached, then one resume reads them.
                            let mut session = RawSession::open(&url)
                                .await
                                .unwrap_or_else(|e| panic!("open: {e}"));
                            announce(&mut session, n).await;
                            let started = std::time::Instant::now();
                            let response = session
                                .resume("0")
                                .await
                                .unwrap_or_else(|e| panic!("resume: {e}"));
                            let mut reader = SseReader::new(response);
                            read_notifications(&mut reader, n as usize).await;
                            total += started.elapsed();
                        }
                        total
                    }
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
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = notifications, replay
}
criterion_main!(benches);
