//! The fault checker's short run: three instances of the `server` example on
//! one Redis (or a Redis Cluster), four recording clients behind cuttable
//! proxies, and a seeded nemesis. Every history must hold (see
//! `rmcp_resume_testkit::faults`), every fault must apply, and each run
//! must reach its minimums (each kind at least twice, takeovers and
//! POST-first resumes where the kinds cause them); a failure prints its
//! seed: replay it with
//! `cargo bench --bench faults -- --seed S --faults N --kinds ...`.
//!
//! Across the seeds every fault kind is applied at least twice:
//!
//! | test | backend | faults | kinds (each at least) |
//! |---|---|---|---|
//! | instances | Redis | 9 | cut, kill, pause (3) |
//! | redis | Redis | 8 | cut, redis-pause, redis-stop, redis-restart (2) |
//! | mixed | Redis | 8 | pause, kill, redis-stop, redis-restart (2) |
//! | cluster | Redis Cluster | 10 | cut, redis-pause (a primary), redis-stop (every node), failover, primary-kill (2) |
//! | partition | Redis | 6 | partition (an instance from Redis), cut (3) |
//! | stale owner | Redis | 4 | stale-owner (an owner stopped while Redis restarts empty), cut (2) |
//!
//! `cargo bench --bench faults` is the long run, with every fault kind
//! (`-- --cluster` on a Redis Cluster).

use std::time::Duration;

use rmcp_resume_testkit::faults::audit::Sabotage;
use rmcp_resume_testkit::faults::checker::{Anomaly, Minimums};
use rmcp_resume_testkit::faults::{self, Backend, FaultKind, Report, RunConfig};
use rmcp_resume_testkit::redis::server_example;

/// Runs `seed` with `kinds` and fails with the anomalies in full. Each
/// kind must apply at least twice; `takeovers` and POST-first resumes at
/// least once where asked (a run of Redis faults alone moves no session).
async fn check_on(
    backend: Backend,
    seed: u64,
    faults_count: usize,
    kinds: &[FaultKind],
    takeovers: usize,
) {
    check(config_on(backend, seed, faults_count, kinds, takeovers)).await;
}

/// The settings of [`check_on`]'s run, which a broken build's test runs
/// too: the unbroken run of the same settings is its control.
fn config_on(
    backend: Backend,
    seed: u64,
    faults_count: usize,
    kinds: &[FaultKind],
    takeovers: usize,
) -> RunConfig {
    let mut config = RunConfig::new(seed, server_example());
    config.backend = backend;
    config.faults = faults_count;
    config.kinds = kinds.iter().copied().collect();
    config.gap = (Duration::from_millis(300), Duration::from_millis(1200));
    config.minimums = Minimums {
        per_kind: 2,
        takeovers,
        post_first: 1,
        outages_in_flight: 0,
    };
    if backend == Backend::Cluster {
        // A cluster's faults are Redis's, so only the two cuts give a
        // client a call to resume: resuming with a `POST` more often
        // keeps the run's minimum of one POST-first resume (CI's run of
        // 2026-12-06 10:40 made none at 35%).
        config.post_first_percent = 70;
        // A lease the owner keeps through a starved machine's scheduling
        // stalls: six Redis nodes and three instances on CI's two loaded
        // cores left an owner unscheduled past its 1 s lease (renewals
        // every third of it), and a healthy session was taken over with
        // no fault applied (`unexplained-error`, 2 runs of 5). A process
        // that is not scheduled is a paused one, and a takeover is then
        // the product's answer: the checker stays strict, the lease grows.
        // Up to 2 s the schedule draws the same faults (Redis holds are
        // 200 ms to `max(lease + 1 s, 3 s)`), several of them past it.
        // Under two busy loops at the test's priority (+4 nice), 5 runs:
        // with 1 s, one run with `unexplained-error 2`; with 2 s, none.
        // (Both still had `unexplained-drop` runs: a POST's head not sent
        // within the client's 3 s read timeout, not a lease matter.)
        config.lease = Duration::from_secs(2);
    }
    config
}

/// Runs `config` and fails with the anomalies in full.
async fn check(config: RunConfig) {
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

/// Seed 1: cuts, kills and pauses of instances. The control of
/// [`a_build_whose_remote_resumes_skip_an_event_is_reported`], which runs
/// the same settings broken.
fn instances_seed() -> RunConfig {
    config_on(
        Backend::Redis,
        1,
        9,
        &[FaultKind::Cut, FaultKind::Kill, FaultKind::Pause],
        1,
    )
}

/// Seed 2: cuts, and Redis paused, stopped and restarted. The control of
/// [`a_build_that_sends_before_the_commit_is_reported`], which runs the
/// same settings broken.
fn redis_seed() -> RunConfig {
    let mut config = config_on(
        Backend::Redis,
        2,
        8,
        &[
            FaultKind::Cut,
            FaultKind::RedisPause,
            FaultKind::RedisStop,
            FaultKind::RedisRestart,
        ],
        0,
    );
    // Its two cuts are the only faults that leave a call to resume, and
    // they need not fall while one is in flight: CI's run of 2026-12-06
    // 17:11 made no POST-first resume, and so did one local run of three
    // with the share at 70% (11 resumes, all after Redis faults). The
    // instances, mixed, cluster and partition seeds keep the minimum.
    config.minimums.post_first = 0;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cuts_kills_and_pauses_of_instances_leave_every_history_valid() {
    check(instances_seed()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_pauses_stops_and_restarts_are_reported_never_silent() {
    check(redis_seed()).await;
}

/// Instance faults and Redis faults in one run: a pause or a kill of an
/// owner next to a restart or a stop of Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instance_and_redis_faults_mixed_are_reported_never_silent() {
    check_on(
        Backend::Redis,
        4,
        8,
        &[
            FaultKind::Pause,
            FaultKind::Kill,
            FaultKind::RedisStop,
            FaultKind::RedisRestart,
        ],
        1,
    )
    .await;
}

/// Review 2026-12-06's D1 as a fault of the nemesis: an instance stopped
/// past its lease, Redis restarted empty while it is stopped (its sessions
/// taken over meanwhile), then the stale owner woken. No client may be
/// handed another writer's history without a floor, and every call must
/// end as the checker's rules allow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_owner_woken_after_redis_lost_its_data_is_reported_never_silent() {
    let mut config = config_on(
        Backend::Redis,
        23,
        4,
        &[FaultKind::StaleOwner, FaultKind::Cut],
        1,
    );
    // Redis forgets every session twice: a resume that POSTs first has
    // little left to find (0 or 1 in a run); other seeds keep that minimum.
    config.minimums.post_first = 0;
    check(config).await;
}

/// Three instances on a Redis Cluster (3 primaries, 3 replicas): a stopped
/// primary, every node stopped, failovers (manual or forced) and a killed
/// primary of a live session's slot, among cuts.
/// Replay: `cargo bench --bench faults -- --cluster --seed 3 --faults 10
/// --kinds cut,redis-pause,redis-stop,failover,primary-kill`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failovers_and_primary_faults_on_a_redis_cluster_are_reported_never_silent() {
    check_on(
        Backend::Cluster,
        3,
        10,
        &[
            FaultKind::Cut,
            FaultKind::RedisPause,
            FaultKind::RedisStop,
            FaultKind::Failover,
            FaultKind::PrimaryKill,
        ],
        0,
    )
    .await;
}

/// One instance at a time cut off from Redis by the proxy between them
/// (blackholed or cut, half the time past the lease), among cuts of the
/// clients' links: the owner must stop on its own while another takes
/// over, and a call it cannot commit must be refused, not answered empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_of_an_instance_from_redis_are_reported_never_silent() {
    // Seed 19: a blackhole past the lease, a cut past it, a short blackhole.
    check_on(
        Backend::Redis,
        19,
        6,
        &[FaultKind::Partition, FaultKind::Cut],
        1,
    )
    .await;
}

/// Every session ends after a few calls with a `DELETE` on an instance
/// other than the one it last used, among kills and cuts: the owner's
/// streams must end within the lease's third, and nothing of the session
/// may come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_on_non_owners_stop_the_owner_within_the_lease_s_third() {
    let mut config = RunConfig::new(7, server_example());
    config.faults = 4;
    config.kinds = [FaultKind::Cut, FaultKind::Kill].into_iter().collect();
    config.delete_percent = 100;
    config.minimums = Minimums {
        per_kind: 2,
        takeovers: 0,
        post_first: 0,
        outages_in_flight: 0,
    };
    let report = faults::run(&config).await.expect("the run itself");
    println!(
        "{}\n{}\n{}",
        Report::table_header(),
        report.table_row(),
        report.details(3)
    );
    assert!(
        report.deletes > 0,
        "no DELETE answered: {}",
        report.table_row()
    );
    assert!(
        report.anomalies.is_empty(),
        "{}\n{}",
        report.table_row(),
        report.details(3)
    );
}

/// Redis stopped past the instances' outage limit (2 s here) while calls
/// are in flight, among cuts: every call must still end with its result,
/// the instance-lost error or a `503` with `Retry-After`, never an empty
/// `200`, and nothing may be sent that Redis did not commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_past_the_outage_limit_is_reported_never_silent() {
    check(outage_seed()).await;
}

/// Seed 8: Redis stopped past a 2 s outage limit, among cuts. The control
/// of [`events_deleted_from_redis_behind_the_instances_are_reported`],
/// which runs the same settings with a saboteur.
fn outage_seed() -> RunConfig {
    let mut config = RunConfig::new(8, server_example());
    config.faults = 4;
    config.kinds = [FaultKind::RedisOutage, FaultKind::Cut]
        .into_iter()
        .collect();
    config.outage_limit = Some(Duration::from_secs(2));
    config.gap = (Duration::from_millis(300), Duration::from_millis(1200));
    config.minimums = Minimums {
        per_kind: 2,
        takeovers: 0,
        post_first: 0,
        outages_in_flight: 2,
    };
    config
}

/// The checker can fail: with the newest entry of every stream deleted
/// from Redis every 50 ms behind the instances' backs, events the clients
/// received are missing when the live audit reads them, and it says so.
/// Its control is [`redis_down_past_the_outage_limit_is_reported_never_silent`]:
/// the same settings without the saboteur, with no anomaly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_deleted_from_redis_behind_the_instances_are_reported() {
    let mut config = outage_seed();
    config.minimums = Minimums::default();
    config.sabotage = Some(Sabotage::StreamEntries {
        every: Duration::from_millis(50),
    });
    let report = faults::run(&config).await.expect("the run itself");
    println!("{}\n{}", Report::table_header(), report.table_row());
    let early = report
        .anomalies
        .iter()
        .filter(|a| matches!(a.kind(), "early" | "not-committed"))
        .count();
    assert!(
        early > 0,
        "no event reported missing from Redis: {}\n{}",
        report.table_row(),
        report.details(3)
    );
}

/// The checker reads a quick call packed as one string on its own: with
/// every packed call deleted from Redis every 50 ms behind the instances'
/// backs, answers the clients received are missing from their request
/// streams when the live audit reads them, and it says so. Its control is
/// [`quick_calls_under_an_outage_are_never_reported_falsely`]: the same
/// settings without the saboteur, with no anomaly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_calls_deleted_from_redis_behind_the_instances_are_reported() {
    let mut config = outage_seed();
    config.minimums = Minimums::default();
    config.quick_percent = 60;
    config.sabotage = Some(Sabotage::PackedCalls {
        every: Duration::from_millis(50),
    });
    let report = faults::run(&config).await.expect("the run itself");
    println!("{}\n{}", Report::table_header(), report.table_row());
    let on_calls = report
        .anomalies
        .iter()
        .filter(|a| {
            matches!(a, Anomaly::Early { key, .. } | Anomaly::NotCommitted { key, .. }
                if !key.ends_with(":x:s"))
        })
        .count();
    assert!(
        on_calls > 0,
        "no call's answer reported missing from Redis: {}\n{}",
        report.table_row(),
        report.details(3)
    );
}

/// Mostly quick calls (each packed as one string by the shared log)
/// through Redis outages and cuts: no anomaly. The control of
/// [`packed_calls_deleted_from_redis_behind_the_instances_are_reported`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_calls_under_an_outage_are_never_reported_falsely() {
    let mut config = outage_seed();
    config.quick_percent = 60;
    let report = faults::run(&config).await.expect("the run itself");
    println!("{}\n{}", Report::table_header(), report.table_row());
    assert!(
        report.anomalies.is_empty(),
        "{}\n{}",
        report.table_row(),
        report.details(5)
    );
}

/// Runs `config` against instances broken on purpose (`broken`, see
/// `rmcp_resume_core::sabotage`) and asserts that the checker reports at
/// least one anomaly of the kinds that break must cause.
async fn check_catches_break(mut config: RunConfig, broken: &'static str, kinds: &[&str]) {
    config.broken = Some(broken);
    config.minimums = Minimums::default();
    let report = faults::run(&config).await.expect("the run itself");
    println!(
        "{}\n{}\n{}",
        Report::table_header(),
        report.table_row(),
        report.details(3)
    );
    let caught = report
        .anomalies
        .iter()
        .filter(|a| kinds.contains(&a.kind()))
        .count();
    assert!(
        caught > 0,
        "the product was broken ({broken}) and the checker reported no {kinds:?}: {}\n{}",
        report.table_row(),
        report.details(3)
    );
}

/// The checker catches a build whose readers do not wait for the shared
/// log's commit: under Redis pauses, stops and restarts, clients receive
/// events Redis did not hold. Its control is
/// [`redis_pauses_stops_and_restarts_are_reported_never_silent`]: the same
/// settings unbroken, with no anomaly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_that_sends_before_the_commit_is_reported() {
    check_catches_break(redis_seed(), "open-gates", &["early", "not-committed"]).await;
}

/// The checker catches a build whose resumes, served from Redis by an
/// instance that does not own the session, skip one event: among kills,
/// pauses and cuts, clients see gaps nobody announced. Its control is
/// [`cuts_kills_and_pauses_of_instances_leave_every_history_valid`]: the
/// same settings unbroken, with no anomaly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_whose_remote_resumes_skip_an_event_is_reported() {
    check_catches_break(instances_seed(), "replay-skips", &["silent-gap"]).await;
}

/// The checker catches a build whose standalone resumes, served from Redis
/// by an instance that does not own the session, skip one event. No client
/// received the skipped event, so the clients' books alone take the jump
/// for a new owner's segment; the live audit finds the event in Redis. Its
/// control is [`cuts_kills_and_pauses_of_instances_leave_every_history_valid`]:
/// the same settings unbroken, with no anomaly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_whose_remote_standalone_resumes_skip_an_event_is_reported() {
    check_catches_break(instances_seed(), "standalone-skips", &["silent-gap"]).await;
}

/// The checker catches a build that answers a `POST` `200` with a stream
/// that carries no event (review of issue 44: such a `POST` was bucketed
/// "unconfirmed" and excused). Its control is
/// [`cuts_kills_and_pauses_of_instances_leave_every_history_valid`]: the
/// same settings unbroken, with no anomaly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_that_answers_a_post_with_no_event_is_reported() {
    check_catches_break(instances_seed(), "empty-post", &["empty-200"]).await;
}

/// The checker catches a build whose remote resumes claim a floor the
/// shared log does not back (review of issue 44: claimed floors were
/// believed). Its control is
/// [`cuts_kills_and_pauses_of_instances_leave_every_history_valid`]: the
/// same settings unbroken, with no anomaly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_that_claims_a_floor_redis_does_not_hold_is_reported() {
    check_catches_break(instances_seed(), "false-floor", &["floor-disagrees"]).await;
}
