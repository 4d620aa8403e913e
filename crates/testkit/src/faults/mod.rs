//! A seeded, bounded, Jepsen-style fault checker for several server
//! instances sharing one Redis, or one Redis Cluster ([`Backend`]).
//!
//! | Part | What |
//! |---|---|
//! | [`rng`] | the seeded generator everything is drawn from |
//! | [`schedule`] | the fault schedule: kinds (each switchable), targets, durations |
//! | [`cluster`] | redis-server (restartable in place) and instances of the `server` example (`--redis` or `--redis-cluster`) |
//! | [`net`] | a proxy per (client, instance) that follows restarts and can be cut; on a single Redis a proxy per instance to Redis that can be blackholed or cut (the partition fault) |
//! | [`control`] | what the nemesis and the clients share: the lease, faults under way (for the clients' patience), stop; the instances up (for the leak check only: clients find dead instances as a load balancer does) |
//! | [`nemesis`] | applies the schedule and heals |
//! | [`client`] | recording raw HTTP/SSE clients: calls, standalone streams, GET-first and POST-first resumes |
//! | [`history`] | what the clients saw, step by step |
//! | [`checker`] | what must hold, and anomalies as values; its rules and excuses are in `docs/fault-checker.md` |
//! | [`audit`] | Redis read directly (routed by slot on a cluster): each received event and claimed floor as the client saw it (the live audit), committed events at the end, client counts |
//! | [`report`] | the markdown row and the anomalies in full |
//!
//! [`run`] runs one seed: Redis, the instances, the proxies, the clients,
//! the live audit and the nemesis, then heals everything, lets the calls
//! end, checks the histories, what Redis held when the clients saw it and
//! at the end, its client count, and that the run reached its
//! [`checker::Minimums`].
//!
//! # On a Redis Cluster
//!
//! With [`Backend::Cluster`] the log is on 3 primaries with a replica each
//! ([`crate::redis_cluster`]); the instances run with `--redis-cluster`, the
//! audit reads each session's keys from the primary of their slot (a
//! cluster connection routes by the `{session}` hash tag), and the client
//! count is read from every node. The Redis fault kinds mean
//! ([`FaultKind::applies_to`]):
//!
//! | kind | on a Redis Cluster |
//! |---|---|
//! | `redis-pause` | `SIGSTOP` of the primary of a live session's slot, `SIGCONT` after 0.2–3 s (beyond the 1 s node timeout its replica takes over) |
//! | `redis-stop` | `SIGSTOP` of every node at once, `SIGCONT` after 0.2–3 s |
//! | `redis-restart` | skipped (`primary-kill` is a primary losing its data) |
//! | `failover` | `CLUSTER FAILOVER` (manual, half the time) or `CLUSTER FAILOVER TAKEOVER` on the replica of a live session's slot |
//! | `primary-kill` | `kill -9` of that primary, a wait for its replica's promotion, then the node started again (empty: it rejoins as a replica) |
//!
//! The leak check (rule 5) holds per node: no node has more clients than
//! its share of the live instances at the start (one each); the table's
//! "Redis clients" is then the busiest node's count.
//!
//! `failover` and `primary-kill` are skipped on a single Redis, and
//! `partition`, `stale-owner` and `redis-outage` (Redis stopped past the instances'
//! outage limit, [`RunConfig::outage_limit`]) on a cluster. After each
//! Redis fault the nemesis waits (at most 20 s) for the cluster to settle.
//! Replication is asynchronous: a forced failover, or a killed or stopped
//! primary replaced by its replica, may lose writes the old primary had
//! acknowledged. For a session whose slot changed primary that way, the
//! checker allows what it allows every session after a single Redis's
//! restart (a `404`, a `400` without a floor, the session or an event gone
//! from Redis), only for what happened after the failover began; every
//! other rule holds. A manual failover loses nothing, so it allows nothing.

pub mod audit;
pub mod checker;
pub mod client;
pub mod cluster;
pub mod control;
pub mod history;
pub mod nemesis;
pub mod net;
pub mod report;
pub mod rng;
pub mod schedule;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

pub use checker::Anomaly;
pub use report::Report;
pub use schedule::{FaultKind, Schedule, ScheduleConfig};

/// Where the instances share their log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// One redis-server (`--redis`).
    #[default]
    Redis,
    /// A Redis Cluster of 3 primaries with a replica each
    /// (`--redis-cluster`).
    Cluster,
}

/// The server's outage limit when `--outage-limit-ms` is not given
/// (`rmcp_resume_core::shared::DEFAULT_OUTAGE_LIMIT`).
const DEFAULT_OUTAGE_LIMIT: Duration = Duration::from_secs(30);

/// One run's settings.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Everything random follows from it.
    pub seed: u64,
    /// One Redis or a Redis Cluster.
    pub backend: Backend,
    /// The `server` example's binary.
    pub server: PathBuf,
    /// Instances.
    pub instances: usize,
    /// Clients (each with its own proxies).
    pub clients: usize,
    /// Faults to apply.
    pub faults: usize,
    /// Which kinds.
    pub kinds: BTreeSet<FaultKind>,
    /// `--lease-ms`.
    pub lease: Duration,
    /// `--window` (events each stream keeps), if set.
    pub window: Option<usize>,
    /// `--outage-limit-ms`, if set (else the server's 30 s): how long an
    /// owner rides out an unreachable Redis; `redis-outage` faults hold
    /// Redis stopped past it.
    pub outage_limit: Option<Duration>,
    /// Beyond the lease, how long a call may take after its nominal end
    /// and after the last fault.
    pub slack: Duration,
    /// Quiet time between faults, drawn in this range.
    pub gap: (Duration, Duration),
    /// Percent of resumes that POST (`ping`) to the instance first.
    pub post_first_percent: u64,
    /// Whether clients keep a standalone stream per session.
    pub standalone: bool,
    /// Percent of sessions that end after a few calls with a `DELETE` to
    /// an instance other than the one last used (0: sessions last the run).
    pub delete_percent: u64,
    /// Percent of calls that answer at once, with no notification: quick
    /// calls, which the shared log packs as one string.
    pub quick_percent: u64,
    /// How long the Redis client count may take to return to its baseline.
    pub leak_wait: Duration,
    /// Where to write the whole history, one step a line (`None`: the
    /// environment variable `FAULTS_HISTORY`, a directory, if set).
    pub history_dir: Option<PathBuf>,
    /// What the run must have done to mean anything (rule 6): a run short
    /// of it fails like one with an anomaly.
    pub minimums: checker::Minimums,
    /// Breaks Redis on purpose while the run goes on ([`audit::sabotage`]):
    /// only for a test that the checker reports it.
    pub sabotage: Option<audit::Sabotage>,
    /// Runs every instance broken on purpose, as named
    /// (`rmcp_resume_core::sabotage`): only for a test that the checker
    /// reports the break.
    pub broken: Option<&'static str>,
}

impl RunConfig {
    /// Settings for `seed`, with the safe defaults of a CI run.
    pub fn new(seed: u64, server: PathBuf) -> Self {
        Self {
            seed,
            backend: Backend::Redis,
            server,
            instances: 3,
            clients: 4,
            faults: 10,
            kinds: FaultKind::ALL.into_iter().collect(),
            lease: Duration::from_millis(1000),
            window: Some(32),
            outage_limit: None,
            slack: Duration::from_secs(10),
            gap: (Duration::from_millis(300), Duration::from_millis(1500)),
            post_first_percent: 35,
            standalone: true,
            delete_percent: 0,
            quick_percent: 10,
            leak_wait: Duration::from_secs(8),
            history_dir: std::env::var_os("FAULTS_HISTORY").map(PathBuf::from),
            minimums: checker::Minimums {
                per_kind: 1,
                takeovers: 1,
                post_first: 1,
                outages_in_flight: 0,
            },
            sabotage: None,
            broken: None,
        }
    }

    /// The kinds switched on that apply to the backend: those the
    /// schedule draws and the minimums count.
    pub fn kinds_applied(&self) -> Vec<FaultKind> {
        let cluster = self.backend == Backend::Cluster;
        self.kinds
            .iter()
            .copied()
            .filter(|k| k.applies_to(cluster))
            .collect()
    }
}

/// Runs one seed and checks it.
pub async fn run(config: &RunConfig) -> anyhow::Result<Report> {
    let began = Instant::now();
    let (probes, questions) = tokio::sync::mpsc::unbounded_channel();
    let rec = history::Recorder::with_probes(began, probes);
    let proxies = CancellationToken::new();
    let mut cluster = nemesis::Cluster::start(
        config.server.clone(),
        config.instances,
        config.clients,
        cluster::Knobs {
            lease: config.lease,
            window: config.window,
            outage_limit: config.outage_limit,
            broken: config.broken,
        },
        config.backend == Backend::Cluster,
        proxies.clone(),
    )
    .await?;
    let result = run_on(config, &mut cluster, &rec, questions, began).await;
    proxies.cancel();
    drop(cluster);
    result
}

async fn run_on(
    config: &RunConfig,
    cluster: &mut nemesis::Cluster,
    rec: &history::Recorder,
    questions: tokio::sync::mpsc::UnboundedReceiver<history::Probe>,
    began: Instant,
) -> anyhow::Result<Report> {
    let finish = CancellationToken::new();
    let auditor = tokio::spawn(audit::live(
        cluster.target.clone(),
        questions,
        rec.clone(),
        finish.clone(),
        Duration::from_secs(20),
    ));
    let ctl = Arc::new(control::Control::new(
        config.instances,
        config.lease,
        config.slack,
    ));
    let (baseline, _) = audit::clients_of(&cluster.target).await?;
    let per_instance = baseline.div_ceil(config.instances.max(1));
    let schedule = Schedule::generate(
        config.seed,
        &ScheduleConfig {
            faults: config.faults,
            kinds: config.kinds.clone(),
            instances: config.instances,
            clients: config.clients,
            lease: config.lease,
            gap: config.gap,
            cluster: config.backend == Backend::Cluster,
            outage_limit: config.outage_limit.unwrap_or(DEFAULT_OUTAGE_LIMIT),
        },
    );
    let mut tasks = Vec::new();
    for id in 0..config.clients {
        let cfg = client::ClientConfig {
            id,
            seed: config.seed,
            urls: cluster.urls(id),
            post_first_percent: config.post_first_percent,
            standalone: config.standalone,
            delete_percent: config.delete_percent,
            quick_percent: config.quick_percent,
        };
        tasks.push(tokio::spawn(client::run(cfg, ctl.clone(), rec.clone())));
    }
    let saboteur = config.sabotage.map(|what| {
        tokio::spawn(audit::sabotage(
            cluster.target.clone(),
            what,
            ctl.stop.clone(),
        ))
    });
    let abort = CancellationToken::new();
    let applied = nemesis::run(cluster, &schedule, &ctl, rec, &abort).await;
    nemesis::heal(cluster, &ctl).await;
    // Let the calls under way end; start no new ones.
    ctl.stop.cancel();
    let limit = config.lease + config.slack + Duration::from_secs(10);
    for task in tasks {
        let abort = task.abort_handle();
        if tokio::time::timeout(limit, task).await.is_err() {
            // Its open chain has no end: the checker reports it.
            abort.abort();
        }
    }
    if let Some(saboteur) = saboteur {
        let _ = saboteur.await;
    }
    // The live audit answers what is still queued, then stops (before the
    // leak check: its connection is one of Redis's clients).
    finish.cancel();
    let _ = auditor.await;
    // Rule 5: the clients are gone; Redis's client count returns to each
    // live instance's steady connections (on a cluster: on every node).
    let live = ctl.live_slots().len();
    let expected = per_instance * live;
    let deadline = Instant::now() + config.leak_wait;
    let mut after = (usize::MAX, String::new());
    for _ in 0..200 {
        match audit::clients_of(&cluster.target).await {
            Ok(now) => after = now,
            Err(error) => after = (usize::MAX, error.to_string()),
        }
        if after.0 <= expected || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let history = rec.snapshot();
    if let Some(dir) = &config.history_dir {
        let text: String = history.entries.iter().map(|e| format!("{e}\n")).collect();
        let path = dir.join(format!("faults-seed-{}.log", config.seed));
        if std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&path, text))
            .is_ok()
        {
            println!("history: {}", path.display());
        }
    }
    let bounds = checker::Bounds {
        lease: config.lease,
        slack: config.slack,
    };
    let mut anomalies = checker::check(&history, &applied, bounds);
    anomalies.extend(checker::commits(&history, &applied, &cluster.target, rec.now()).await?);
    let takeovers = checker::takeovers(&history);
    anomalies.extend(checker::coverage(
        &history,
        &applied,
        &config.kinds_applied(),
        takeovers,
        &config.minimums,
    ));
    if after.0 > expected {
        anomalies.push(Anomaly::Leak {
            baseline: expected,
            after: after.0,
            clients: after.1.clone(),
        });
    }
    let (calls, outcomes, events, resumes) = Report::count(&history);
    Ok(Report {
        seed: config.seed,
        instances: config.instances,
        faults: applied,
        calls,
        outcomes,
        events,
        resumes,
        redis_clients: (expected, after.0),
        takeovers,
        deletes: checker::deletes(&history).len(),
        post_first: checker::post_first_resumes(&history),
        audits: (
            history.audits.len(),
            history
                .audits
                .iter()
                .filter(|o| {
                    matches!(
                        o.answer,
                        history::Answer::Event(audit::Stored::Event(Some(_)))
                    )
                })
                .count(),
        ),
        unconfirmed: Report::unconfirmed(&history),
        anomalies,
        wall: began.elapsed(),
    })
}
