//! The nemesis: applies a schedule's faults one after another to the
//! processes and the network, heals each, and records what it did and when.
//!
//! On a Redis Cluster a fault aims at the slot of a session under way (the
//! last chains' sessions, chosen by the fault's `pick`), or at any slot if
//! there is none; after each Redis fault the nemesis waits (bounded) for
//! every node to say `cluster_state:ok`, and records which slots changed
//! primary in a way that may have lost acknowledged writes.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::audit::{self, Target};
use super::cluster::{Knobs, Node, NodeConfig, RedisProc, signal};
use super::control::Control;
use super::history::{Ms, Recorder};
use super::net::{Link, RedisLink};
use super::schedule::{Fault, FaultKind, Schedule};
use crate::redis_cluster::{NodeInfo, RedisCluster};

/// A fault as applied.
#[derive(Debug, Clone)]
pub struct Applied {
    /// What.
    pub fault: Fault,
    /// When it began.
    pub start: Ms,
    /// When it healed.
    pub end: Ms,
    /// What went wrong applying or healing it, if anything.
    pub error: Option<String>,
    /// Redis Cluster: the slot ranges (inclusive) whose primary changed in
    /// a way that may have lost writes it had acknowledged (a forced
    /// failover, a killed or stopped primary replaced by its replica). A
    /// manual failover, which waits for the replica, loses nothing.
    pub lost_slots: Vec<(u16, u16)>,
    /// Redis Cluster: what happened to the slots (who served them before
    /// and after), for the report.
    pub note: Option<String>,
    /// Redis Cluster: the slot ranges (inclusive) of the primary a fault
    /// aimed at; `None` for a fault that touches every session's keys
    /// (any fault on a single Redis, every node stopped) or none (a fault
    /// of an instance or of the clients' network).
    pub touched: Option<Vec<(u16, u16)>>,
}

impl Applied {
    /// Whether the writes `session` had acknowledged may have been lost
    /// by this fault (a single Redis's restart: every session's).
    pub fn lost(&self, session: &str) -> bool {
        if matches!(
            self.fault.kind(),
            FaultKind::RedisRestart | FaultKind::StaleOwner
        ) {
            return true;
        }
        let slot = audit::session_slot(session);
        self.lost_slots
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&slot))
    }

    /// When this fault could first have lost data: its start, except for a
    /// stale owner, whose Redis is killed only at the end of the instance's
    /// stop (the nemesis's own schedule: `hold - down` in, which its sleep
    /// overruns by milliseconds at most); until then nothing is lost, and
    /// the successors' takeover writes must hold.
    pub fn loss_began(&self) -> Ms {
        match &self.fault {
            Fault::StaleOwner { hold, down, .. } => {
                let before_kill = hold.saturating_sub(*down + STALE_RESTART);
                self.start
                    .saturating_add(u64::try_from(before_kill.as_millis()).unwrap_or(u64::MAX))
            }
            _ => self.start,
        }
    }

    /// Whether this fault reached `session`'s keys in Redis at all (lost,
    /// delayed or refused their commands): on a single Redis every Redis
    /// fault reaches every session; on a cluster a fault aimed at one
    /// primary reaches only the sessions of its slots, and a fault of an
    /// instance or of the clients' network reaches none.
    pub fn touches_keys(&self, session: &str) -> bool {
        match self.fault.kind() {
            FaultKind::Kill | FaultKind::Pause | FaultKind::Cut | FaultKind::Partition => false,
            _ => match &self.touched {
                None => true,
                Some(ranges) => {
                    let slot = audit::session_slot(session);
                    ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&slot)) || self.lost(session)
                }
            },
        }
    }

    /// Whether this fault was applied without error.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

/// The shared log's Redis, as the nemesis holds it.
pub enum Redis {
    /// One redis-server.
    Single(Arc<Mutex<RedisProc>>),
    /// A Redis Cluster, 3 primaries with a replica each.
    Cluster(Arc<Mutex<RedisCluster>>),
}

/// The processes and the network, as the nemesis holds them.
pub struct Cluster {
    /// The shared Redis, or Redis Cluster.
    pub redis: Redis,
    /// Where the instances and the audit find it.
    pub target: Target,
    /// Each slot's instance (`None` while it is down).
    pub nodes: Vec<Option<Node>>,
    /// `links[client][slot]`.
    pub links: Vec<Vec<Link>>,
    /// How instances are started.
    pub node_config: NodeConfig,
    /// On a single Redis: each slot's own proxy to it (the partition
    /// fault's), through which its instance reaches Redis.
    pub redis_links: Vec<RedisLink>,
}

impl Cluster {
    /// Starts Redis (or a Redis Cluster with replicas, if `redis_cluster`),
    /// `instances` instances and a proxy per (client, instance).
    pub async fn start(
        server: std::path::PathBuf,
        instances: usize,
        clients: usize,
        knobs: Knobs,
        redis_cluster: bool,
        ct: CancellationToken,
    ) -> anyhow::Result<Self> {
        let (redis, target) = if redis_cluster {
            let kit = tokio::task::spawn_blocking(RedisCluster::start_with_replicas)
                .await
                .map_err(|e| anyhow::anyhow!("the Redis Cluster did not start: {e}"))?;
            let nodes = kit
                .all_ports()
                .into_iter()
                .map(|port| format!("redis://127.0.0.1:{port}"))
                .collect();
            (
                Redis::Cluster(Arc::new(Mutex::new(kit))),
                Target::Cluster(nodes),
            )
        } else {
            let redis = tokio::task::spawn_blocking(RedisProc::start).await??;
            let url = redis.url();
            (
                Redis::Single(Arc::new(Mutex::new(redis))),
                Target::Single(url),
            )
        };
        let node_config = NodeConfig {
            server,
            redis: target.clone(),
            lease: knobs.lease,
            window: knobs.window,
            outage_limit: knobs.outage_limit,
            broken: knobs.broken,
        };
        // On a single Redis each instance reaches it through a proxy of
        // its own, beside Redis's socket (removed with it).
        let mut redis_links = Vec::new();
        if let Target::Single(url) = &target
            && let Some(socket) = url.strip_prefix("unix://").map(std::path::PathBuf::from)
            && let Some(dir) = socket.parent()
        {
            for slot in 0..instances {
                redis_links.push(RedisLink::start(
                    dir.join(format!("instance-{slot}.sock")),
                    socket.clone(),
                    ct.clone(),
                )?);
            }
        }
        let mut nodes = Vec::new();
        for slot in 0..instances {
            let config = config_for(&node_config, &redis_links, slot);
            nodes.push(Some(
                tokio::task::spawn_blocking(move || Node::start(&config)).await??,
            ));
        }
        let mut links = Vec::new();
        for _ in 0..clients {
            let mut row = Vec::new();
            for node in nodes.iter().flatten() {
                row.push(Link::start(node.addr, ct.clone()).await?);
            }
            links.push(row);
        }
        Ok(Self {
            redis,
            target,
            nodes,
            links,
            node_config,
            redis_links,
        })
    }

    /// Client `client`'s URL of each slot.
    pub fn urls(&self, client: usize) -> Vec<String> {
        self.links
            .get(client)
            .map(|row| row.iter().map(Link::url).collect())
            .unwrap_or_default()
    }

    fn retarget(&self, slot: usize) {
        let addr = self
            .nodes
            .get(slot)
            .and_then(|n| n.as_ref())
            .map(|n| n.addr);
        for row in &self.links {
            if let Some(link) = row.get(slot) {
                link.retarget(addr);
            }
        }
    }

    fn pid(&self, slot: usize) -> anyhow::Result<u32> {
        self.nodes
            .get(slot)
            .and_then(|n| n.as_ref())
            .map(Node::pid)
            .ok_or_else(|| anyhow::anyhow!("instance {slot} is down"))
    }

    fn single(&self) -> anyhow::Result<&Arc<Mutex<RedisProc>>> {
        match &self.redis {
            Redis::Single(redis) => Ok(redis),
            Redis::Cluster(_) => anyhow::bail!("a single-Redis fault on a Redis Cluster"),
        }
    }

    fn redis_pid(&self) -> anyhow::Result<u32> {
        self.single()?
            .lock()
            .map(|r| r.pid())
            .map_err(|_| anyhow::anyhow!("redis lock poisoned"))
    }

    async fn start_node(&mut self, slot: usize) -> anyhow::Result<()> {
        let config = config_for(&self.node_config, &self.redis_links, slot);
        let node = tokio::task::spawn_blocking(move || Node::start(&config)).await??;
        if let Some(entry) = self.nodes.get_mut(slot) {
            *entry = Some(node);
        }
        self.retarget(slot);
        Ok(())
    }

    async fn restart_redis(&self) -> anyhow::Result<()> {
        let redis = self.single()?.clone();
        tokio::task::spawn_blocking(move || match redis.lock() {
            Ok(mut redis) => redis.restart(),
            Err(_) => Err(anyhow::anyhow!("redis lock poisoned")),
        })
        .await?
    }

    /// Runs `work` on the Redis Cluster kit, off the runtime; a panic of
    /// the kit (a bounded wait that ran out) is an error.
    async fn on_kit<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut RedisCluster) -> anyhow::Result<T> + Send + 'static,
    ) -> anyhow::Result<T> {
        let Redis::Cluster(kit) = &self.redis else {
            anyhow::bail!("a Redis Cluster fault on a single Redis");
        };
        let kit = kit.clone();
        tokio::task::spawn_blocking(move || {
            let mut kit = kit.lock().unwrap_or_else(PoisonError::into_inner);
            work(&mut kit)
        })
        .await
        .map_err(|e| anyhow::anyhow!("the Redis Cluster kit failed: {e}"))?
    }

    /// Log lines of every instance up now containing `needle`.
    pub fn log_lines(&self, needle: &str) -> Vec<String> {
        self.nodes
            .iter()
            .enumerate()
            .flat_map(|(slot, node)| {
                node.iter()
                    .flat_map(move |n| n.log_lines(needle))
                    .map(move |line| format!("[{slot}] {line}"))
            })
            .collect()
    }
}

/// How slot `slot`'s instance is started: through its own proxy to Redis
/// if it has one.
fn config_for(config: &NodeConfig, links: &[RedisLink], slot: usize) -> NodeConfig {
    let mut config = config.clone();
    if let Some(link) = links.get(slot) {
        config.redis = Target::Single(link.url());
    }
    config
}

/// How long the cluster may take to settle (every node `cluster_state:ok`)
/// after a fault, or a replica to be promoted.
const SETTLE: Duration = Duration::from_secs(20);

/// Chains whose sessions a cluster fault may aim at.
const RECENT_CHAINS: usize = 8;

/// What a fault did to a Redis Cluster.
#[derive(Debug, Default)]
struct ClusterEffect {
    lost_slots: Vec<(u16, u16)>,
    note: Option<String>,
    touched: Option<Vec<(u16, u16)>>,
}

/// Applies `schedule` to `cluster`, one fault at a time; stops early (with
/// everything healed) when `abort` is cancelled.
pub async fn run(
    cluster: &mut Cluster,
    schedule: &Schedule,
    ctl: &Control,
    rec: &Recorder,
    abort: &CancellationToken,
) -> Vec<Applied> {
    let mut applied = Vec::new();
    for planned in &schedule.faults {
        tokio::select! {
            _ = tokio::time::sleep(planned.after) => {}
            _ = abort.cancelled() => break,
        }
        ctl.fault_started();
        let start = rec.now();
        let sessions = rec.recent_sessions(RECENT_CHAINS);
        let mut effect = ClusterEffect::default();
        let result = apply(cluster, &planned.fault, ctl, &sessions, &mut effect).await;
        let end = rec.now();
        ctl.fault_healed(end);
        applied.push(Applied {
            fault: planned.fault.clone(),
            start,
            end,
            error: result.err().map(|e| e.to_string()),
            lost_slots: effect.lost_slots,
            note: effect.note,
            touched: effect.touched,
        });
    }
    applied
}

async fn apply(
    cluster: &mut Cluster,
    fault: &Fault,
    ctl: &Control,
    sessions: &[String],
    effect: &mut ClusterEffect,
) -> anyhow::Result<()> {
    match fault {
        Fault::Kill { slot, down } => {
            ctl.set_live(*slot, false);
            if let Some(node) = cluster.nodes.get_mut(*slot).and_then(Option::take) {
                drop(node); // SIGCONT (a no-op here), then kill -9 and wait.
            }
            cluster.retarget(*slot);
            tokio::time::sleep(*down).await;
            let started = cluster.start_node(*slot).await;
            ctl.set_live(*slot, started.is_ok());
            started
        }
        Fault::Pause { slot, hold } => {
            let pid = cluster.pid(*slot)?;
            signal(pid, "STOP")?;
            tokio::time::sleep(*hold).await;
            signal(pid, "CONT")
        }
        Fault::Cut { client, slot, hold } => {
            for (c, row) in cluster.links.iter().enumerate() {
                if client.is_none_or(|only| only == c)
                    && let Some(link) = row.get(*slot)
                {
                    link.cut(*hold);
                }
            }
            tokio::time::sleep(*hold).await;
            Ok(())
        }
        Fault::Partition {
            slot,
            hold,
            blackhole,
        } => {
            let link = cluster
                .redis_links
                .get(*slot)
                .ok_or_else(|| anyhow::anyhow!("instance {slot} has no proxy to Redis"))?;
            link.partition(*hold, *blackhole).await;
            Ok(())
        }
        Fault::RedisPause { hold } => {
            let Target::Single(url) = &cluster.target else {
                anyhow::bail!("CLIENT PAUSE of a single Redis on a Redis Cluster");
            };
            audit::pause_clients(url, *hold).await?;
            tokio::time::sleep(*hold).await;
            Ok(())
        }
        Fault::RedisStop { hold } | Fault::RedisOutage { hold } => {
            let pid = cluster.redis_pid()?;
            signal(pid, "STOP")?;
            tokio::time::sleep(*hold).await;
            signal(pid, "CONT")
        }
        Fault::RedisRestart { down } => restart_redis(cluster, *down).await,
        Fault::StaleOwner { slot, hold, down } => {
            let pid = cluster.pid(*slot)?;
            signal(pid, "STOP")?;
            let lease_passes = hold.saturating_sub(*down + STALE_RESTART);
            tokio::time::sleep(lease_passes).await;
            let restarted = restart_redis(cluster, *down).await;
            tokio::time::sleep(hold.saturating_sub(lease_passes + *down)).await;
            // Woken whatever became of Redis: a fault leaves nothing stopped.
            let woke = signal(pid, "CONT");
            restarted.and(woke)
        }
        Fault::PrimaryPause { .. }
        | Fault::ClusterStop { .. }
        | Fault::Failover { .. }
        | Fault::PrimaryKill { .. } => {
            let before = cluster.on_kit(|kit| Ok(primaries(kit))).await?;
            let mut killed = None;
            let mut touched = None;
            let result = apply_cluster(cluster, fault, sessions, &mut killed, &mut touched).await;
            // Whatever happened, the next fault starts on a settled
            // cluster with every node running.
            let settled = cluster
                .on_kit(|kit| settle(kit, Instant::now() + SETTLE))
                .await;
            let after = cluster.on_kit(|kit| Ok(primaries(kit))).await?;
            let manual = matches!(
                fault,
                Fault::Failover {
                    takeover: false,
                    ..
                }
            );
            *effect = compare(&before, &after, manual);
            effect.touched = touched;
            // A killed primary loses its data even if no replica took
            // over (it comes back empty).
            if let Some(port) = killed
                && let Some(killed) = before.iter().find(|n| n.port == port)
            {
                for range in &killed.slots {
                    if !effect.lost_slots.contains(range) {
                        effect.lost_slots.push(*range);
                    }
                }
            }
            if let (Err(error), Some(note)) = (&settled, &mut effect.note) {
                note.push_str(&format!("; not settled: {error}"));
            }
            result.and(settled)
        }
    }
}

/// How long before a stale owner wakes Redis is back: none, so that its
/// overdue renewal is likely to reach the empty Redis before its
/// successor's next one (D1's order).
const STALE_RESTART: Duration = Duration::ZERO;

/// Kills the single redis-server and starts a new, empty one after `down`.
async fn restart_redis(cluster: &mut Cluster, down: Duration) -> anyhow::Result<()> {
    if let Ok(mut redis) = cluster.single()?.lock() {
        redis.kill();
    }
    tokio::time::sleep(down).await;
    cluster.restart_redis().await
}

/// The slot a cluster fault aims at: a recent session's, else any.
fn aimed_slot(pick: u64, sessions: &[String]) -> u16 {
    if sessions.is_empty() {
        return u16::try_from(pick % 16384).unwrap_or(0);
    }
    let index = usize::try_from(pick % sessions.len() as u64).unwrap_or(0);
    audit::session_slot(&sessions[index])
}

/// Applies a Redis Cluster fault; sets `killed` to the port of the
/// primary it killed, if it did, and `touched` to the slot ranges of the
/// primary it aimed at (left `None` when it stopped every node).
async fn apply_cluster(
    cluster: &mut Cluster,
    fault: &Fault,
    sessions: &[String],
    killed: &mut Option<u16>,
    touched: &mut Option<Vec<(u16, u16)>>,
) -> anyhow::Result<()> {
    if let Fault::PrimaryPause { pick, .. }
    | Fault::Failover { pick, .. }
    | Fault::PrimaryKill { pick, .. } = fault
    {
        let slot = aimed_slot(*pick, sessions);
        // Read before the fault: afterwards the slots may have moved.
        *touched = Some(
            cluster
                .on_kit(move |kit| Ok(owner(kit, slot)?.0.slots))
                .await
                .unwrap_or_else(|_| vec![(slot, slot)]),
        );
    }
    match fault {
        Fault::PrimaryPause { pick, hold } => {
            let slot = aimed_slot(*pick, sessions);
            let pid = cluster
                .on_kit(move |kit| {
                    let (primary, _) = owner(kit, slot)?;
                    kit.pid(primary.port)
                        .ok_or_else(|| anyhow::anyhow!("primary {} is not running", primary.port))
                })
                .await?;
            signal(pid, "STOP")?;
            tokio::time::sleep(*hold).await;
            signal(pid, "CONT")
        }
        Fault::ClusterStop { hold } => {
            let pids = cluster
                .on_kit(|kit| {
                    Ok(kit
                        .ports()
                        .iter()
                        .filter_map(|p| kit.pid(*p))
                        .collect::<Vec<_>>())
                })
                .await?;
            let stopped: Vec<u32> = pids
                .into_iter()
                .filter(|pid| signal(*pid, "STOP").is_ok())
                .collect();
            tokio::time::sleep(*hold).await;
            for pid in stopped {
                signal(pid, "CONT")?;
            }
            Ok(())
        }
        Fault::Failover { pick, takeover } => {
            let slot = aimed_slot(*pick, sessions);
            let takeover = *takeover;
            cluster
                .on_kit(move |kit| {
                    let deadline = Instant::now() + SETTLE;
                    let (_, replica) = owner(kit, slot)?;
                    let replica =
                        replica.ok_or_else(|| anyhow::anyhow!("slot {slot} has no replica"))?;
                    wait_link(kit, replica.port, deadline)?;
                    let mut args = vec!["CLUSTER", "FAILOVER"];
                    if takeover {
                        args.push("TAKEOVER");
                    }
                    let answer = kit.cli(replica.port, &args);
                    anyhow::ensure!(
                        answer.as_deref().is_some_and(|a| a.trim() == "OK"),
                        "{args:?} on {}: {answer:?}",
                        replica.port
                    );
                    wait_promoted(kit, replica.port, slot, deadline)
                })
                .await
        }
        Fault::PrimaryKill { pick, down } => {
            let slot = aimed_slot(*pick, sessions);
            let (port, replica) = cluster
                .on_kit(move |kit| {
                    let (primary, replica) = owner(kit, slot)?;
                    let replica =
                        replica.ok_or_else(|| anyhow::anyhow!("slot {slot} has no replica"))?;
                    kit.kill(primary.port);
                    Ok((primary.port, replica.port))
                })
                .await?;
            *killed = Some(port);
            let promoted = cluster
                .on_kit(move |kit| wait_promoted(kit, replica, slot, Instant::now() + SETTLE))
                .await;
            tokio::time::sleep(*down).await;
            // Started again after its replica's promotion, it rejoins as a
            // replica of it (with no data: persistence is off); `settle`
            // restarts it too if this fails.
            let restarted = cluster
                .on_kit(move |kit| {
                    anyhow::ensure!(kit.restart(port), "node {port} did not start again");
                    Ok(())
                })
                .await;
            promoted.and(restarted)
        }
        _ => Ok(()),
    }
}

/// The live primaries, as the first node that answers sees them.
fn primaries(kit: &RedisCluster) -> Vec<NodeInfo> {
    for port in kit.ports() {
        let nodes = kit.nodes_seen_by(port);
        if !nodes.is_empty() {
            return nodes
                .into_iter()
                .filter(NodeInfo::is_live_primary)
                .collect();
        }
    }
    Vec::new()
}

/// The primary serving `slot` and one of its replicas that is up.
fn owner(kit: &RedisCluster, slot: u16) -> anyhow::Result<(NodeInfo, Option<NodeInfo>)> {
    let running = kit.ports();
    for port in &running {
        let nodes = kit.nodes_seen_by(*port);
        let Some(primary) = nodes
            .iter()
            .find(|n| n.is_live_primary() && n.serves(slot))
            .cloned()
        else {
            continue;
        };
        let replica = nodes.into_iter().find(|n| {
            n.has("slave")
                && !n.has("fail")
                && !n.has("fail?")
                && n.primary.as_deref() == Some(primary.id.as_str())
                && running.contains(&n.port)
        });
        return Ok((primary, replica));
    }
    anyhow::bail!("no node knows a live primary of slot {slot}")
}

/// Slot ranges whose primary changed from `before` to `after` (none if
/// `manual`: a manual failover waits for the replica), and a note.
fn compare(before: &[NodeInfo], after: &[NodeInfo], manual: bool) -> ClusterEffect {
    let mut effect = ClusterEffect::default();
    let mut notes = Vec::new();
    for old in before {
        for &(lo, hi) in &old.slots {
            let kept = after.iter().any(|n| n.id == old.id && n.serves(lo));
            if kept {
                continue;
            }
            let new = after
                .iter()
                .find(|n| n.serves(lo))
                .map_or_else(|| "none".to_owned(), |n| n.port.to_string());
            notes.push(format!("slots {lo}-{hi}: {} -> {new}", old.port));
            if !manual {
                effect.lost_slots.push((lo, hi));
            }
        }
    }
    if !notes.is_empty() {
        let how = if manual {
            " (manual: nothing lost)"
        } else {
            ""
        };
        effect.note = Some(format!("{}{how}", notes.join(", ")));
    }
    effect
}

fn all_ok(kit: &RedisCluster) -> bool {
    kit.ports().into_iter().all(|port| {
        kit.cli(port, &["CLUSTER", "INFO"])
            .is_some_and(|info| info.contains("cluster_state:ok"))
    })
}

/// Waits (until `deadline`) for the node on `port` to serve `slot` for
/// every running node, and for every node to be ok.
fn wait_promoted(
    kit: &RedisCluster,
    port: u16,
    slot: u16,
    deadline: Instant,
) -> anyhow::Result<()> {
    for _ in 0..1000 {
        let promoted = kit.ports().into_iter().all(|seer| {
            kit.nodes_seen_by(seer)
                .iter()
                .any(|n| n.port == port && n.is_live_primary() && n.serves(slot))
        });
        if promoted && all_ok(kit) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    anyhow::bail!("node {port} did not become the primary of slot {slot} in time")
}

/// Waits (until `deadline`) for the replica on `port` to have its link to
/// its primary up.
fn wait_link(kit: &RedisCluster, port: u16, deadline: Instant) -> anyhow::Result<()> {
    for _ in 0..1000 {
        let up = kit
            .cli(port, &["INFO", "replication"])
            .is_some_and(|info| info.contains("master_link_status:up"));
        if up {
            return Ok(());
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    anyhow::bail!("replica {port}'s link to its primary is not up")
}

/// Continues every stopped node, starts every killed one again, and waits
/// (until `deadline`) for every node to say `cluster_state:ok` and every
/// replica's link to be up.
fn settle(kit: &mut RedisCluster, deadline: Instant) -> anyhow::Result<()> {
    for port in kit.ports() {
        if let Some(pid) = kit.pid(port) {
            let _ = signal(pid, "CONT");
        }
    }
    let running = kit.ports();
    for port in kit.all_ports() {
        if !running.contains(&port) {
            anyhow::ensure!(kit.restart(port), "node {port} did not start again");
        }
    }
    for _ in 0..1000 {
        let replicas_up = kit.ports().into_iter().all(|port| {
            kit.cli(port, &["INFO", "replication"]).is_some_and(|info| {
                info.contains("role:master") || info.contains("master_link_status:up")
            })
        });
        if replicas_up && all_ok(kit) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    anyhow::bail!("the cluster did not settle within {SETTLE:?}")
}

/// Brings every slot back (a failed restart is retried once), and every
/// Redis process.
pub async fn heal(cluster: &mut Cluster, ctl: &Control) {
    for slot in 0..cluster.nodes.len() {
        if cluster.nodes[slot].is_none() && cluster.start_node(slot).await.is_ok() {
            ctl.set_live(slot, true);
        }
        if let Ok(pid) = cluster.pid(slot) {
            let _ = signal(pid, "CONT");
        }
    }
    match &cluster.redis {
        Redis::Single(_) => {
            if let Ok(pid) = cluster.redis_pid() {
                let _ = signal(pid, "CONT");
            }
        }
        Redis::Cluster(_) => {
            let _ = cluster
                .on_kit(|kit| settle(kit, Instant::now() + SETTLE))
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis_cluster::parse_nodes;

    #[test]
    fn a_changed_primary_loses_its_slots_unless_the_failover_was_manual() {
        let before = parse_nodes(
            "a 127.0.0.1:1@2 master - 0 0 1 connected 0-5460\n\
             b 127.0.0.1:3@4 master - 0 0 2 connected 5461-16383\n",
        );
        let after = parse_nodes(
            "c 127.0.0.1:5@6 master - 0 0 3 connected 0-5460\n\
             b 127.0.0.1:3@4 master - 0 0 2 connected 5461-16383\n",
        );
        let forced = compare(&before, &after, false);
        assert_eq!(forced.lost_slots, [(0, 5460)]);
        assert_eq!(forced.note.as_deref(), Some("slots 0-5460: 1 -> 5"));
        let manual = compare(&before, &after, true);
        assert!(manual.lost_slots.is_empty() && manual.note.is_some());
        assert!(compare(&before, &before, false).note.is_none());
    }
}
