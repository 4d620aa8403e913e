//! The fault checker's short run: three instances of the `server` example on
//! one Redis, four recording clients behind cuttable proxies, and a seeded
//! nemesis. Every history must hold (see `rmcp_resume_testkit::faults`);
//! a failure prints its seed: replay it with
//! `cargo bench --bench faults -- --seed S --faults N --kinds ...`.
//!
//! `cargo bench --bench faults` is the long run, with every fault kind
//! (`-- --cluster` on a Redis Cluster).

use std::time::Duration;

use rmcp_resume_testkit::faults::{self, Backend, FaultKind, Report, RunConfig};
use rmcp_resume_testkit::redis::server_example;

/// Runs `seed` with `kinds` and fails with the anomalies in full.
async fn check(seed: u64, faults_count: usize, kinds: &[FaultKind]) {
    check_on(Backend::Redis, seed, faults_count, kinds).await;
}

async fn check_on(backend: Backend, seed: u64, faults_count: usize, kinds: &[FaultKind]) {
    let mut config = RunConfig::new(seed, server_example());
    config.backend = backend;
    config.faults = faults_count;
    config.kinds = kinds.iter().copied().collect();
    config.gap = (Duration::from_millis(300), Duration::from_millis(1200));
    let report = faults::run(&config).await.expect("the run itself");
    println!(
        "{}\n{}\n{}",
        Report::table_header(),
        report.table_row(),
        report.details(3)
    );
    assert!(
        report.calls > 0 && report.events > 0,
        "the clients did nothing: {}",
        report.table_row()
    );
    assert!(
        report.anomalies.is_empty(),
        "{}\n{}",
        report.table_row(),
        report.details(3)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cuts_kills_and_pauses_of_instances_leave_every_history_valid() {
    check(1, 12, &[FaultKind::Cut, FaultKind::Kill, FaultKind::Pause]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_pauses_and_restarts_are_reported_never_silent() {
    check(
        2,
        8,
        &[
            FaultKind::Cut,
            FaultKind::RedisPause,
            FaultKind::RedisStop,
            FaultKind::RedisRestart,
        ],
    )
    .await;
}

/// Three instances on a Redis Cluster (3 primaries, 3 replicas): failovers
/// of a live session's slot (manual or forced) among cuts and kills.
/// Replay: `cargo bench --bench faults -- --cluster --seed 3 --faults 8
/// --kinds cut,kill,failover`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failovers_on_a_redis_cluster_are_reported_never_silent() {
    check_on(
        Backend::Cluster,
        3,
        8,
        &[FaultKind::Cut, FaultKind::Kill, FaultKind::Failover],
    )
    .await;
}
