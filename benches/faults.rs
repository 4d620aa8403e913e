//! The fault checker at length: `cargo bench --bench faults -- --seeds K
//! --faults N --instances I` runs seeds 1..=K (or `--seed S` alone), each
//! with N faults of every kind (or `--kinds cut,kill,...`), and prints a
//! markdown table (seed, faults applied by kind, calls, events received,
//! anomalies by kind), then every anomaly with its seed and history.
//!
//! `--cluster` runs the instances on a Redis Cluster (3 primaries, 3
//! replicas) instead of one Redis: there the kinds `failover` and
//! `primary-kill` apply, `redis-pause` stops one primary, `redis-stop`
//! every node, and `redis-restart` is skipped (see
//! `rmcp_resume_testkit::faults`).
//!
//! Other flags: `--clients C` (4), `--lease-ms L` (1000), `--window W` (32),
//! `--post-first P` (percent of resumes, 35), `--no-standalone`,
//! `--details D` (anomalies shown per kind, 3), `--server PATH`,
//! `--min-per-kind K` (each kind switched on applied at least K times, 1),
//! `--outage-limit-ms O` (the instances' outage limit, which
//! `redis-outage` faults hold Redis past; the server's 30 s if unset),
//! `--delete-percent D` (sessions ended by a `DELETE` on another
//! instance, 0), `--min-takeovers T` (1), `--min-post-first P` (1): a run short of a
//! minimum reports a `coverage` anomaly (see docs/fault-checker.md).
//! Exit code 1 when any anomaly was found.

use std::path::PathBuf;
use std::time::Duration;

use rmcp_resume_testkit::faults::{self, Backend, FaultKind, Report, RunConfig};

struct Args {
    seeds: Vec<u64>,
    faults: usize,
    instances: usize,
    clients: usize,
    kinds: std::collections::BTreeSet<FaultKind>,
    lease: Duration,
    window: Option<usize>,
    post_first: u64,
    standalone: bool,
    details: usize,
    server: Option<PathBuf>,
    backend: Backend,
    minimums: faults::checker::Minimums,
    delete_percent: u64,
    outage_limit: Option<Duration>,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        seeds: (1..=3).collect(),
        faults: 30,
        instances: 3,
        clients: 4,
        kinds: FaultKind::ALL.into_iter().collect(),
        lease: Duration::from_millis(1000),
        window: Some(32),
        post_first: 35,
        standalone: true,
        details: 3,
        server: None,
        backend: Backend::Redis,
        minimums: faults::checker::Minimums {
            per_kind: 1,
            takeovers: 1,
            post_first: 1,
            outages_in_flight: 0,
        },
        delete_percent: 0,
        outage_limit: None,
    };
    let mut it = std::env::args().skip(1);
    let number = |name: &str, value: Option<String>| -> Result<u64, String> {
        value
            .ok_or_else(|| format!("{name} needs a value"))?
            .parse()
            .map_err(|e| format!("{name}: {e}"))
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seeds" => args.seeds = (1..=number("--seeds", it.next())?).collect(),
            "--seed" => args.seeds = vec![number("--seed", it.next())?],
            "--faults" => args.faults = number("--faults", it.next())? as usize,
            "--instances" => args.instances = number("--instances", it.next())? as usize,
            "--clients" => args.clients = number("--clients", it.next())? as usize,
            "--lease-ms" => args.lease = Duration::from_millis(number("--lease-ms", it.next())?),
            "--window" => args.window = Some(number("--window", it.next())? as usize),
            "--post-first" => args.post_first = number("--post-first", it.next())?,
            "--details" => args.details = number("--details", it.next())? as usize,
            "--no-standalone" => args.standalone = false,
            "--cluster" => args.backend = Backend::Cluster,
            "--outage-limit-ms" => {
                args.outage_limit = Some(Duration::from_millis(number(
                    "--outage-limit-ms",
                    it.next(),
                )?))
            }
            "--delete-percent" => args.delete_percent = number("--delete-percent", it.next())?,
            "--min-per-kind" => {
                args.minimums.per_kind = number("--min-per-kind", it.next())? as usize
            }
            "--min-takeovers" => {
                args.minimums.takeovers = number("--min-takeovers", it.next())? as usize
            }
            "--min-post-first" => {
                args.minimums.post_first = number("--min-post-first", it.next())? as usize
            }
            "--kinds" => {
                args.kinds = FaultKind::parse_list(&it.next().ok_or("--kinds needs a value")?)?
            }
            "--server" => args.server = Some(it.next().ok_or("--server needs a path")?.into()),
            // What cargo bench passes to every bench.
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// The `server` example beside this bench, built if missing.
fn server() -> Result<PathBuf, String> {
    if let Some(path) = faults::cluster::server_binary() {
        return Ok(path);
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .ok_or("no target dir")?;
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(other) => other,
        None => "release",
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = std::process::Command::new(cargo)
        .args(["build", "-j2", "--example", "server", "--profile", profile])
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("cargo build --example server failed".to_owned());
    }
    faults::cluster::server_binary().ok_or_else(|| "the server example is still missing".to_owned())
}

fn main() {
    let args = match parse() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(2);
        }
    };
    let server = match args.server.clone().map(Ok).unwrap_or_else(server) {
        Ok(server) => server,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("tokio runtime: {error}");
            std::process::exit(2);
        }
    };
    let cluster = args.backend == Backend::Cluster;
    let kinds: Vec<&str> = args
        .kinds
        .iter()
        .filter(|k| k.applies_to(cluster))
        .map(|k| k.name())
        .collect();
    println!(
        "fault checker{}: seeds {:?}, {} faults each ({}), {} instances, {} clients, lease {:?}, window {:?}\n",
        if cluster {
            " on a Redis Cluster (3 primaries, 3 replicas)"
        } else {
            ""
        },
        args.seeds,
        args.faults,
        kinds.join(","),
        args.instances,
        args.clients,
        args.lease,
        args.window
    );
    let mut reports = Vec::new();
    println!("{}", Report::table_header());
    for seed in &args.seeds {
        let mut config = RunConfig::new(*seed, server.clone());
        config.faults = args.faults;
        config.instances = args.instances;
        config.clients = args.clients;
        config.kinds = args.kinds.clone();
        config.lease = args.lease;
        config.window = args.window;
        config.post_first_percent = args.post_first;
        config.standalone = args.standalone;
        config.backend = args.backend;
        config.minimums = args.minimums.clone();
        config.delete_percent = args.delete_percent;
        config.outage_limit = args.outage_limit;
        match runtime.block_on(faults::run(&config)) {
            Ok(report) => {
                println!("{}", report.table_row());
                reports.push(report);
            }
            Err(error) => println!("| {seed} | run failed: {error} | | | | | | | | | |"),
        }
    }
    if cluster {
        println!();
        for report in &reports {
            println!("{}", report.fault_summary());
        }
    }
    let mut found = false;
    for report in &reports {
        if !report.anomalies.is_empty() {
            found = true;
            println!("\n{}", report.details(args.details));
        }
    }
    if found {
        std::process::exit(1);
    }
}
