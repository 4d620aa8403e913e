//! A Redis Cluster of the test's own, on 127.0.0.1.
//!
//! [`RedisCluster::start`] runs three primaries,
//! [`RedisCluster::start_with_replicas`] three primaries with one replica
//! each; every node is a `redis-server` with persistence off and a node
//! timeout of 1 s, so that a replica takes over a dead primary within a few
//! seconds. Nodes are killed when the cluster is dropped. Every wait is
//! bounded; the commands go through `redis-cli`.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a node may take to start, and a `redis-cli` command to answer.
const NODE_LIMIT: Duration = Duration::from_secs(10);
/// How long the cluster may take to form, or a failover to finish.
const CLUSTER_LIMIT: Duration = Duration::from_secs(60);

/// A running Redis Cluster.
pub struct RedisCluster {
    nodes: Vec<Node>,
    dir: PathBuf,
}

struct Node {
    port: u16,
    child: Option<Child>,
}

/// How [`RedisCluster::fail_over`] moves a slot to its replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failover {
    /// `CLUSTER FAILOVER` on the replica: the primary stops writes until
    /// the replica caught up, so nothing acknowledged is lost.
    Manual,
    /// `CLUSTER FAILOVER TAKEOVER` on the replica: no agreement with the
    /// primary or the other primaries; the old primary is demoted.
    Takeover,
    /// `kill -9` of the primary: the other primaries mark it failed after
    /// the node timeout and elect its replica.
    Kill,
}

/// Who serves a key's slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotOwner {
    /// The slot.
    pub slot: u16,
    /// Its primary's port.
    pub primary: u16,
    /// A replica of that primary, if it has one.
    pub replica: Option<u16>,
}

/// One node's line of `CLUSTER NODES`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// Its id.
    pub id: String,
    /// Its port.
    pub port: u16,
    /// Its flags (`myself`, `master`, `slave`, `fail`, …).
    pub flags: Vec<String>,
    /// Its primary's id, if it is a replica.
    pub primary: Option<String>,
    /// The slot ranges it serves, inclusive.
    pub slots: Vec<(u16, u16)>,
}

impl NodeInfo {
    /// Whether it is a primary the cluster does not think failed.
    pub fn is_live_primary(&self) -> bool {
        self.has("master") && !self.has("fail") && !self.has("fail?")
    }

    /// Whether it has flag `flag`.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Whether it serves `slot`.
    pub fn serves(&self, slot: u16) -> bool {
        self.slots.iter().any(|&(lo, hi)| (lo..=hi).contains(&slot))
    }
}

impl RedisCluster {
    /// Three primaries, no replica; returns once every node says
    /// `cluster_state:ok` (at most a minute).
    pub fn start() -> Self {
        Self::start_nodes(3, 0)
    }

    /// Three primaries with one replica each; returns once every node says
    /// `cluster_state:ok` and every replica's link to its primary is up.
    pub fn start_with_replicas() -> Self {
        Self::start_nodes(6, 1)
    }

    fn start_nodes(count: usize, replicas: usize) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "rmcp-resume-redis-cluster-{}-{}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut cluster = Self {
            nodes: Vec::new(),
            dir,
        };
        for _ in 0..count {
            let node = cluster.start_node();
            cluster.nodes.push(node);
        }
        let mut create = Command::new(cli_binary());
        create.arg("--cluster").arg("create");
        for node in &cluster.nodes {
            create.arg(format!("127.0.0.1:{}", node.port));
        }
        create
            .args(["--cluster-replicas", &replicas.to_string()])
            .arg("--cluster-yes");
        let created = run_bounded(&mut create, CLUSTER_LIMIT)
            .expect("redis-cli --cluster create did not finish within a minute");
        assert!(
            created.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&created.stdout),
            String::from_utf8_lossy(&created.stderr)
        );
        cluster.wait_ok(CLUSTER_LIMIT);
        if replicas > 0 {
            let deadline = Instant::now() + CLUSTER_LIMIT;
            for port in cluster.ports() {
                if cluster
                    .nodes_seen_by(port)
                    .iter()
                    .any(|n| n.port == port && n.has("slave"))
                {
                    cluster.wait_replica_link(port, deadline);
                }
            }
        }
        cluster
    }

    fn start_node(&self) -> Node {
        for attempt in 0..64u64 {
            let Some(port) = free_port_pair(attempt) else {
                continue;
            };
            if let Some(child) = self.spawn(port) {
                return Node {
                    port,
                    child: Some(child),
                };
            }
        }
        panic!("no redis-server cluster node started on 127.0.0.1");
    }

    /// A redis-server on `port` with this cluster's settings and its own
    /// cluster config file; `None` if it did not answer `PING` within 10 s
    /// (or exited: the port or the bus port was taken).
    fn spawn(&self, port: u16) -> Option<Child> {
        let mut child = Command::new(server_binary())
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--cluster-enabled", "yes", "--cluster-config-file"])
            .arg(self.dir.join(format!("nodes-{port}.conf")))
            .args(["--cluster-node-timeout", "1000"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--maxmemory-policy", "noeviction", "--dir"])
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (the Debian package redis-server) must be installed");
        let deadline = Instant::now() + NODE_LIMIT;
        loop {
            if let Ok(Some(_)) = child.try_wait() {
                return None;
            }
            if cli(port, &["PING"]).is_some_and(|pong| pong.trim() == "PONG") {
                return Some(child);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts the killed node on `port` again, on the same port with its
    /// cluster config file (and no data: persistence is off). It rejoins
    /// the cluster; if its slots were failed over meanwhile it comes back
    /// as a replica of their new primary. Returns whether it answers
    /// (at most 10 s); a node still running is left alone.
    pub fn restart(&mut self, port: u16) -> bool {
        if self.node(port).child.is_some() {
            return true;
        }
        let child = self.spawn(port);
        let started = child.is_some();
        self.node(port).child = child;
        started
    }

    /// The ports of every node, running or killed.
    pub fn all_ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// The process id of the node on `port`, if it is running.
    pub fn pid(&self, port: u16) -> Option<u32> {
        self.nodes
            .iter()
            .find(|n| n.port == port)
            .and_then(|n| n.child.as_ref())
            .map(Child::id)
    }

    /// The ports of the nodes still running.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| n.port)
            .collect()
    }

    /// `redis://127.0.0.1:PORT` of every node still running: the seed
    /// nodes for a cluster client.
    pub fn urls(&self) -> Vec<String> {
        self.ports()
            .into_iter()
            .map(|port| format!("redis://127.0.0.1:{port}"))
            .collect()
    }

    /// Runs `redis-cli` with `args` against the node on `port`; its
    /// output, or `None` if it failed or took more than 10 s.
    pub fn cli(&self, port: u16, args: &[&str]) -> Option<String> {
        cli(port, args)
    }

    /// The slot of `key`.
    pub fn keyslot(&self, key: &str) -> u16 {
        let port = self.any_port();
        cli(port, &["CLUSTER", "KEYSLOT", key])
            .and_then(|slot| slot.trim().parse().ok())
            .expect("CLUSTER KEYSLOT")
    }

    /// `CLUSTER NODES` as the node on `port` sees it (empty if it does not
    /// answer).
    pub fn nodes_seen_by(&self, port: u16) -> Vec<NodeInfo> {
        cli(port, &["CLUSTER", "NODES"])
            .map(|text| parse_nodes(&text))
            .unwrap_or_default()
    }

    /// Who serves `key`'s slot, as a running node sees it.
    pub fn slot_owner(&self, key: &str) -> SlotOwner {
        let slot = self.keyslot(key);
        let nodes = self.nodes_seen_by(self.any_port());
        let primary = nodes
            .iter()
            .find(|n| n.is_live_primary() && n.serves(slot))
            .unwrap_or_else(|| panic!("no live primary serves slot {slot}: {nodes:?}"));
        let replica = nodes
            .iter()
            .find(|n| {
                n.has("slave")
                    && !n.has("fail")
                    && n.primary.as_deref() == Some(primary.id.as_str())
            })
            .map(|n| n.port);
        SlotOwner {
            slot,
            primary: primary.port,
            replica,
        }
    }

    /// Moves `key`'s slot to its primary's replica, `how`, and returns once
    /// the replica is the slot's primary and every running node says
    /// `cluster_state:ok` (at most a minute). Returns who served the slot
    /// before.
    pub fn fail_over(&mut self, key: &str, how: Failover) -> SlotOwner {
        let owner = self.slot_owner(key);
        let replica = owner
            .replica
            .unwrap_or_else(|| panic!("slot {} has no replica", owner.slot));
        let deadline = Instant::now() + CLUSTER_LIMIT;
        self.wait_replica_link(replica, deadline);
        match how {
            Failover::Manual => self.expect_ok(replica, &["CLUSTER", "FAILOVER"]),
            Failover::Takeover => self.expect_ok(replica, &["CLUSTER", "FAILOVER", "TAKEOVER"]),
            Failover::Kill => self.kill(owner.primary),
        }
        self.wait_promoted(replica, owner.slot, deadline);
        owner
    }

    /// Waits (until `deadline`) for the node on `port` to be the primary of
    /// `slot` for every running node, and for the cluster to be ok.
    pub fn wait_promoted(&self, port: u16, slot: u16, deadline: Instant) {
        loop {
            let promoted = self.ports().into_iter().all(|seer| {
                self.nodes_seen_by(seer)
                    .iter()
                    .any(|n| n.port == port && n.is_live_primary() && n.serves(slot))
            });
            if promoted && self.all_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "node {port} did not become the primary of slot {slot} in time: {:?}",
                self.nodes_seen_by(port)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sends `signal` (`STOP`, `CONT`, `KILL`) to the node on `port`.
    pub fn signal(&mut self, port: u16, signal: &str) {
        if signal == "KILL" {
            self.kill(port);
            return;
        }
        let node = self.node(port);
        let child = node.child.as_ref().expect("a running node");
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Kills the node on `port` (SIGKILL) and waits for it to be gone.
    pub fn kill(&mut self, port: u16) {
        if let Some(mut child) = self.node(port).child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits for every running node to say `cluster_state:ok`.
    fn wait_ok(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.all_ok() {
            assert!(
                Instant::now() < deadline,
                "the cluster was not ok within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn all_ok(&self) -> bool {
        self.ports().into_iter().all(|port| {
            cli(port, &["CLUSTER", "INFO"]).is_some_and(|info| info.contains("cluster_state:ok"))
        })
    }

    fn wait_replica_link(&self, replica: u16, deadline: Instant) {
        loop {
            let up = cli(replica, &["INFO", "replication"])
                .is_some_and(|info| info.contains("master_link_status:up"));
            if up {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "replica {replica}'s link to its primary is not up"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn expect_ok(&self, port: u16, args: &[&str]) {
        let answer = cli(port, args);
        assert!(
            answer.as_deref().is_some_and(|a| a.trim() == "OK"),
            "{args:?} on {port}: {answer:?}"
        );
    }

    fn node(&mut self, port: u16) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|n| n.port == port)
            .unwrap_or_else(|| panic!("no node on port {port}"))
    }

    fn any_port(&self) -> u16 {
        *self.ports().first().expect("a running node")
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                // A stopped node must run again to die promptly.
                let _ = Command::new("kill")
                    .arg("-CONT")
                    .arg(child.id().to_string())
                    .status();
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Parses `CLUSTER NODES`.
pub fn parse_nodes(text: &str) -> Vec<NodeInfo> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 8 {
                return None;
            }
            let addr = fields[1].split('@').next()?;
            let port = addr.rsplit(':').next()?.parse().ok()?;
            let slots = fields[8..]
                .iter()
                .filter(|s| !s.starts_with('['))
                .filter_map(|s| match s.split_once('-') {
                    Some((lo, hi)) => Some((lo.parse().ok()?, hi.parse().ok()?)),
                    None => {
                        let one = s.parse().ok()?;
                        Some((one, one))
                    }
                })
                .collect();
            Some(NodeInfo {
                id: fields[0].to_owned(),
                port,
                flags: fields[2].split(',').map(str::to_owned).collect(),
                primary: (fields[3] != "-").then(|| fields[3].to_owned()),
                slots,
            })
        })
        .collect()
}

fn cli(port: u16, args: &[&str]) -> Option<String> {
    let mut command = Command::new(cli_binary());
    command
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args);
    let output = run_bounded(&mut command, NODE_LIMIT)?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs `command` to its end, or kills it after `limit`.
fn run_bounded(command: &mut Command, limit: Duration) -> Option<Output> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-cli (the Debian package redis-tools) must be installed");
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().ok(),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// A port whose cluster bus port (`+10000`) looks free too; varied by the
/// process and `attempt`, so parallel tests rarely pick the same.
fn free_port_pair(attempt: u64) -> Option<u16> {
    let seed = u64::from(std::process::id())
        .wrapping_mul(7919)
        .wrapping_add(unique().wrapping_mul(104_729))
        .wrapping_add(attempt.wrapping_mul(15_485_863));
    let port = 20_000 + u16::try_from(seed % 10_000).ok()?;
    let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
    (free(port) && free(port + 10_000)).then_some(port)
}

fn server_binary() -> PathBuf {
    std::env::var_os("REDIS_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("redis-server"))
}

fn cli_binary() -> PathBuf {
    std::env::var_os("REDIS_CLI")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("redis-cli"))
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_nodes_lines_are_parsed() {
        let text = "\
a1 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 [5461->-b2]
b2 127.0.0.1:30002@40002 master,fail - 0 0 2 connected 5461-10922 12000
c3 127.0.0.1:30004@40004 slave a1 0 0 1 connected
";
        let nodes = parse_nodes(text);
        assert_eq!(nodes.len(), 3);
        assert!(nodes[0].is_live_primary() && nodes[0].serves(5460));
        assert!(!nodes[0].serves(5461));
        assert_eq!(nodes[1].slots, [(5461, 10922), (12000, 12000)]);
        assert!(!nodes[1].is_live_primary());
        assert_eq!(
            (nodes[2].port, nodes[2].primary.as_deref()),
            (30004, Some("a1"))
        );
    }
}
