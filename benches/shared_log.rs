//! The shared log's cost, against the in-process log and against upstream's
//! `EventStore` path with a store in memory, in one run:
//! `cargo bench --bench shared_log` (needs `redis-server` on the `PATH`).
//!
//! - `per_event`: a call streaming 2,000 progress events, from the `POST`
//!   to its response; microseconds per event.
//! - `replay`: a resume replaying those 2,000 events; on the shared log it
//!   is served by a second instance, from Redis.
//! - `calls/s`: `tools/call` round trips with 1, 16 and 64 concurrent
//!   clients, each with its own session.
//!
//! The shared log runs twice, on a Redis reached over a Unix socket and on
//! one reached over 127.0.0.1 TCP. `calls/s` also runs it on a log that
//! takes every commit at once ([`null_log`]): the mirror alone, which
//! splits the shared log's cost between the mirror and the backend.
//!
//! Each figure is the median of interleaved rounds; the ratios are against
//! the in-process log of the same run. Results go to
//! `target/bench-report/shared_log.json`. `-- --quick` shrinks every section.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp_resume_core::log::Window;
use rmcp_resume_redis::{RedisLog, RedisLogConfig, RedisShared};
use rmcp_resume_testkit::event_store::MemoryEventStore;
use rmcp_resume_testkit::raw::{RawSession, SseReader};
use rmcp_resume_testkit::redis::RedisServer;
use rmcp_resume_testkit::server::{Served, Side, TestServer};
use serde_json::json;

#[path = "shared_log/null_log.rs"]
mod null_log;

type AnyResult<T> = anyhow::Result<T>;

/// The ways a server keeps its replay history, and the mirror alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    InProcess,
    Redis,
    RedisTcp,
    EventStore,
    /// The mirror alone: a shared log that takes every commit at once.
    Mirror,
}

impl Backend {
    const ALL: [Self; 4] = [
        Self::InProcess,
        Self::Redis,
        Self::RedisTcp,
        Self::EventStore,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::InProcess => "in-process log",
            Self::Redis => "Redis shared log (Unix socket)",
            Self::RedisTcp => "Redis shared log (127.0.0.1 TCP)",
            Self::EventStore => "upstream EventStore (memory)",
            Self::Mirror => "mirror alone (a shared log that commits at once)",
        }
    }
}

struct Servers {
    in_process: Served,
    redis_a: Served,
    redis_b: Served,
    tcp_a: Served,
    tcp_b: Served,
    store: Served,
    mirror: Served,
}

const EVENTS: u32 = 2_000;

async fn servers(redis: &RedisServer, tcp: &RedisServer) -> AnyResult<Servers> {
    let window = 4_096;
    let mut config = RedisLogConfig::default();
    config.window = Window::events(window);
    config.max_stream_bytes = 64 << 20;
    let shared = |redis: &RedisServer, owner: &str| {
        let owner = owner.to_owned();
        let config = config.clone();
        let url = redis.url();
        async move {
            let log = RedisLog::connect(&url, config).await?;
            AnyResult::Ok(Arc::new(RedisShared::new(log, owner)))
        }
    };
    let base = || {
        TestServer::new(Side::Fork)
            .window(window)
            .replay_bytes(64 << 20, 256 << 20)
            .nodelay()
    };
    Ok(Servers {
        in_process: base().serve().await?,
        redis_a: base().shared_log(shared(redis, "a").await?).serve().await?,
        redis_b: base().shared_log(shared(redis, "b").await?).serve().await?,
        tcp_a: base().shared_log(shared(tcp, "a").await?).serve().await?,
        tcp_b: base().shared_log(shared(tcp, "b").await?).serve().await?,
        store: base()
            .event_store(Arc::new(MemoryEventStore::default()))
            .serve()
            .await?,
        mirror: base()
            .shared_log(Arc::new(null_log::NullLog::default()))
            .serve()
            .await?,
    })
}

/// One server of the bench's configuration on `log` (`local`, `mirror` or
/// a Redis URL), until stdin closes.
async fn serve_alone(log: &str) -> AnyResult<()> {
    use tokio::io::AsyncReadExt;
    let window = 4_096;
    let server = TestServer::new(Side::Fork)
        .window(window)
        .replay_bytes(64 << 20, 256 << 20)
        .nodelay();
    let server = match log {
        "local" => server,
        "mirror" => server.shared_log(Arc::new(null_log::NullLog::default())),
        url => {
            let mut config = RedisLogConfig::default();
            config.window = Window::events(window);
            config.max_stream_bytes = 64 << 20;
            let log = RedisLog::connect(url, config).await?;
            server.shared_log(Arc::new(RedisShared::new(log, "a".to_owned())))
        }
    };
    let served = server.serve().await?;
    println!("{}", served.url);
    let mut sink = Vec::new();
    tokio::io::stdin().read_to_end(&mut sink).await?;
    drop(served);
    Ok(())
}

impl Servers {
    fn owner(&self, backend: Backend) -> &str {
        match backend {
            Backend::InProcess => &self.in_process.url,
            Backend::Redis => &self.redis_a.url,
            Backend::RedisTcp => &self.tcp_a.url,
            Backend::EventStore => &self.store.url,
            Backend::Mirror => &self.mirror.url,
        }
    }

    /// Where a resume goes: another instance for the shared log.
    fn resumer(&self, backend: Backend) -> &str {
        match backend {
            Backend::Redis => &self.redis_b.url,
            Backend::RedisTcp => &self.tcp_b.url,
            other => self.owner(other),
        }
    }
}

/// One streamed call: its duration, and the id of its first progress event.
async fn streamed_call(url: &str) -> AnyResult<(Duration, RawSession, String)> {
    let mut session = RawSession::open(url).await?;
    let started = Instant::now();
    let (_, response) = session
        .call("stream", json!({ "count": EVENTS, "interval_ms": 0 }), true)
        .await?;
    let frames = SseReader::new(response).collect().await?;
    let elapsed = started.elapsed();
    let first = frames
        .iter()
        .find(|f| {
            f.json()
                .is_some_and(|j| j["method"] == "notifications/progress")
        })
        .and_then(|f| f.id.clone())
        .ok_or_else(|| anyhow::anyhow!("no progress event"))?;
    let progress = frames
        .iter()
        .filter(|f| {
            f.json()
                .is_some_and(|j| j["method"] == "notifications/progress")
        })
        .count();
    anyhow::ensure!(progress == EVENTS as usize, "{progress} progress events");
    Ok((elapsed, session, first))
}

/// A resume from `cursor`: the time to read every replayed event.
async fn replay(session: &RawSession, cursor: &str) -> AnyResult<Duration> {
    let started = Instant::now();
    let response = session.resume(cursor).await?;
    anyhow::ensure!(response.status() == 200, "resume: {}", response.status());
    let frames = SseReader::new(response).collect().await?;
    let elapsed = started.elapsed();
    let events = frames
        .iter()
        .filter(|f| {
            f.json()
                .is_some_and(|j| j["method"] == "notifications/progress")
        })
        .count();
    anyhow::ensure!(events + 1 == EVENTS as usize, "replayed {events}");
    Ok(elapsed)
}

/// `tools/call` round trips per second with `clients` sessions for `window`.
async fn calls_per_second(url: &str, clients: usize, window: Duration) -> AnyResult<f64> {
    let mut sessions = Vec::with_capacity(clients);
    for _ in 0..clients {
        sessions.push(RawSession::open(url).await?);
    }
    let deadline = Instant::now() + window;
    let tasks = sessions.into_iter().map(|mut session| {
        tokio::spawn(async move {
            let mut calls = 0u64;
            while Instant::now() < deadline {
                let (_, response) = session
                    .call("sum", json!({ "a": 1, "b": 2 }), false)
                    .await?;
                SseReader::new(response).collect().await?;
                calls += 1;
            }
            // Ended, so that a window's sessions do not renew their leases
            // through the next windows, whichever backend those measure.
            let ended = session.delete().await?.status();
            anyhow::ensure!(ended.is_success(), "DELETE: {ended}");
            AnyResult::Ok(calls)
        })
    });
    let mut total = 0;
    for task in futures::future::join_all(tasks).await {
        total += task??;
    }
    Ok(total as f64 / window.as_secs_f64())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> AnyResult<()> {
    // `--serve local|mirror|REDIS_URL`: the bench's fork server alone on
    // that log, its URL on stdout, serving until stdin closes, for
    // `benches/callgrind/shared_log.sh` (the shared log's instructions per
    // call in the server).
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        return serve_alone(args.get(i + 1).map_or("local", String::as_str)).await;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 3 } else { 7 };
    let window = Duration::from_millis(if quick { 500 } else { 2_000 });
    let redis = RedisServer::start();
    let tcp = RedisServer::start_tcp();
    let servers = servers(&redis, &tcp).await?;
    // `--profile-calls N [BACKEND]`: only one backend's calls/s with N
    // clients, three windows of 5 s in a row (the later ones on a log that
    // holds the earlier ones' calls), for a profiler attached to this
    // process and to `redis-server`. BACKEND is `redis` (the default),
    // `tcp`, `local` or `mirror`.
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--profile-calls") {
        let clients = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(16);
        let backend = match args.get(i + 2).map(String::as_str) {
            Some("local") => Backend::InProcess,
            Some("tcp") => Backend::RedisTcp,
            Some("mirror") => Backend::Mirror,
            _ => Backend::Redis,
        };
        for _ in 0..3 {
            let rate =
                calls_per_second(servers.owner(backend), clients, Duration::from_secs(5)).await?;
            println!(
                "{clients} clients: {rate:.0} calls/s on the {}",
                backend.name()
            );
        }
        return Ok(());
    }

    let mut per_event: Vec<(Backend, Vec<f64>)> =
        Backend::ALL.iter().map(|b| (*b, Vec::new())).collect();
    let mut replayed: Vec<(Backend, Vec<f64>)> = per_event.clone();
    for _ in 0..rounds {
        for (i, backend) in Backend::ALL.iter().enumerate() {
            let (elapsed, session, first) = streamed_call(servers.owner(*backend)).await?;
            per_event[i]
                .1
                .push(elapsed.as_secs_f64() * 1e6 / f64::from(EVENTS));
            let resumer = session.at(servers.resumer(*backend));
            let elapsed = replay(&resumer, &first).await?;
            replayed[i]
                .1
                .push(elapsed.as_secs_f64() * 1e6 / f64::from(EVENTS - 1));
        }
    }
    // Interleaved rounds, each backend's median.
    const RATED: [Backend; 4] = [
        Backend::InProcess,
        Backend::Mirror,
        Backend::Redis,
        Backend::RedisTcp,
    ];
    let mut throughput = Vec::new();
    for clients in [1, 16, 64] {
        let mut rates: [Vec<f64>; 4] = Default::default();
        for round in 0..rounds {
            for k in (0..RATED.len()).map(|k| (k + round) % RATED.len()) {
                rates[k].push(calls_per_second(servers.owner(RATED[k]), clients, window).await?);
            }
        }
        let [local, mirror, unix, tcp] = rates.map(median);
        throughput.push((clients, local, mirror, unix, tcp));
    }

    let base_event = median(per_event[0].1.clone());
    let base_replay = median(replayed[0].1.clone());
    println!(
        "| Backend | µs per event (streamed call) | ratio | µs per event (resume replay) | ratio |"
    );
    println!("|---|---|---|---|---|");
    let mut rows = Vec::new();
    for ((backend, events), (_, replays)) in per_event.iter().zip(&replayed) {
        let (e, r) = (median(events.clone()), median(replays.clone()));
        println!(
            "| {} | {e:.1} | {:.2}× | {r:.1} | {:.2}× |",
            backend.name(),
            e / base_event,
            r / base_replay
        );
        rows.push(json!({ "backend": backend.name(), "per_event_us": e, "replay_us": r }));
    }
    println!();
    println!(
        "| Clients | in-process calls/s | mirror alone calls/s | ratio | Redis (Unix socket) calls/s | ratio | Redis (TCP) calls/s | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (clients, local, mirror, unix, tcp) in &throughput {
        println!(
            "| {clients} | {local:.0} | {mirror:.0} | {:.2}× | {unix:.0} | {:.2}× | {tcp:.0} | {:.2}× |",
            mirror / local,
            unix / local,
            tcp / local
        );
    }
    let report = json!({
        "rounds": rounds,
        "events": EVENTS,
        "per_event": rows,
        "throughput": throughput.iter().map(|(c, l, m, u, t)| json!({ "clients": c, "in_process": l, "mirror_alone": m, "redis_unix": u, "redis_tcp": t })).collect::<Vec<_>>(),
    });
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-report");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("shared_log.json"),
        serde_json::to_vec_pretty(&report)?,
    )?;
    Ok(())
}
