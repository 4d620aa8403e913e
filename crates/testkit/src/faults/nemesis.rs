//! The nemesis: applies a schedule's faults one after another to the
//! processes and the network, heals each, and records what it did and when.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::audit;
use super::cluster::{Node, NodeConfig, RedisProc, signal};
use super::control::Control;
use super::history::{Ms, Recorder};
use super::net::Link;
use super::schedule::{Fault, Schedule};

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
}

/// The processes and the network, as the nemesis holds them.
pub struct Cluster {
    /// The shared Redis.
    pub redis: Arc<Mutex<RedisProc>>,
    /// Its URL.
    pub redis_url: String,
    /// Each slot's instance (`None` while it is down).
    pub nodes: Vec<Option<Node>>,
    /// `links[client][slot]`.
    pub links: Vec<Vec<Link>>,
    /// How instances are started.
    pub node_config: NodeConfig,
}

impl Cluster {
    /// Starts Redis, `instances` instances and a proxy per (client,
    /// instance).
    pub async fn start(
        server: std::path::PathBuf,
        instances: usize,
        clients: usize,
        lease: Duration,
        window: Option<usize>,
        ct: CancellationToken,
    ) -> anyhow::Result<Self> {
        let redis = tokio::task::spawn_blocking(RedisProc::start).await??;
        let redis_url = redis.url();
        let node_config = NodeConfig {
            server,
            redis_url: redis_url.clone(),
            lease,
            window,
        };
        let mut nodes = Vec::new();
        for _ in 0..instances {
            let config = node_config.clone();
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
            redis: Arc::new(Mutex::new(redis)),
            redis_url,
            nodes,
            links,
            node_config,
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

    fn redis_pid(&self) -> anyhow::Result<u32> {
        self.redis
            .lock()
            .map(|r| r.pid())
            .map_err(|_| anyhow::anyhow!("redis lock poisoned"))
    }

    async fn start_node(&mut self, slot: usize) -> anyhow::Result<()> {
        let config = self.node_config.clone();
        let node = tokio::task::spawn_blocking(move || Node::start(&config)).await??;
        if let Some(entry) = self.nodes.get_mut(slot) {
            *entry = Some(node);
        }
        self.retarget(slot);
        Ok(())
    }

    async fn restart_redis(&self) -> anyhow::Result<()> {
        let redis = self.redis.clone();
        tokio::task::spawn_blocking(move || match redis.lock() {
            Ok(mut redis) => redis.restart(),
            Err(_) => Err(anyhow::anyhow!("redis lock poisoned")),
        })
        .await?
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
        let result = apply(cluster, &planned.fault, ctl).await;
        let end = rec.now();
        ctl.fault_healed(end);
        applied.push(Applied {
            fault: planned.fault.clone(),
            start,
            end,
            error: result.err().map(|e| e.to_string()),
        });
    }
    applied
}

async fn apply(cluster: &mut Cluster, fault: &Fault, ctl: &Control) -> anyhow::Result<()> {
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
        Fault::RedisPause { hold } => {
            audit::pause_clients(&cluster.redis_url, *hold).await?;
            tokio::time::sleep(*hold).await;
            Ok(())
        }
        Fault::RedisStop { hold } => {
            let pid = cluster.redis_pid()?;
            signal(pid, "STOP")?;
            tokio::time::sleep(*hold).await;
            signal(pid, "CONT")
        }
        Fault::RedisRestart { down } => {
            if let Ok(mut redis) = cluster.redis.lock() {
                redis.kill();
            }
            tokio::time::sleep(*down).await;
            cluster.restart_redis().await
        }
    }
}

/// Brings every slot back (a failed restart is retried once).
pub async fn heal(cluster: &mut Cluster, ctl: &Control) {
    for slot in 0..cluster.nodes.len() {
        if cluster.nodes[slot].is_none() && cluster.start_node(slot).await.is_ok() {
            ctl.set_live(slot, true);
        }
        if let Ok(pid) = cluster.pid(slot) {
            let _ = signal(pid, "CONT");
        }
    }
    if let Ok(pid) = cluster.redis_pid() {
        let _ = signal(pid, "CONT");
    }
}
