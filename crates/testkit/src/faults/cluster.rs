//! The processes under test: one redis-server on a Unix socket that can be
//! restarted in place (persistence off), and instances of the `server`
//! example (on it, or on a Redis Cluster) that can be killed, stopped and
//! replaced.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// Log lines kept per instance, for anomaly reports.
const LOG_LINES: usize = 400;

/// Sends `signal` (`STOP`, `CONT`, `KILL`) to process `pid`.
pub fn signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "kill -{signal} {pid} failed");
    Ok(())
}

/// A redis-server on a Unix socket in a temp dir, persistence off.
pub struct RedisProc {
    child: Child,
    dir: PathBuf,
}

impl RedisProc {
    /// Starts one in a new temp dir; returns once it accepts connections.
    pub fn start() -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!(
            "rmcp-resume-faults-{}-{}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(&dir)?;
        let child = Self::spawn(&dir)?;
        Ok(Self { child, dir })
    }

    fn spawn(dir: &Path) -> anyhow::Result<Child> {
        let binary = std::env::var_os("REDIS_SERVER").unwrap_or_else(|| "redis-server".into());
        let mut child = Command::new(binary)
            .args(["--port", "0", "--unixsocket"])
            .arg(dir.join("redis.sock"))
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--maxmemory-policy", "noeviction", "--dir"])
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| anyhow::anyhow!("redis-server must be installed: {e}"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("redis-server's stdout"))?;
        let (ready_tx, ready_rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.contains("ready to accept connections") {
                    let _ = ready_tx.send(());
                }
            }
        });
        if ready_rx.recv_timeout(Duration::from_secs(10)).is_err() {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("redis-server did not get ready within 10 s");
        }
        Ok(child)
    }

    /// The URL of its socket (the same across restarts).
    pub fn url(&self) -> String {
        format!("unix://{}", self.dir.join("redis.sock").display())
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`, and waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts a new, empty redis-server on the same socket (after
    /// [`kill`](Self::kill)).
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        let _ = std::fs::remove_file(self.dir.join("redis.sock"));
        self.child = Self::spawn(&self.dir)?;
        Ok(())
    }
}

impl Drop for RedisProc {
    fn drop(&mut self) {
        let _ = signal(self.child.id(), "CONT");
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// How every instance is started.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The `server` example's binary.
    pub server: PathBuf,
    /// The shared Redis, or Redis Cluster.
    pub redis: super::audit::Target,
    /// `--lease-ms`.
    pub lease: Duration,
    /// `--window`, if set.
    pub window: Option<usize>,
    /// `--outage-limit-ms`, if set (else the server's default, 30 s).
    pub outage_limit: Option<Duration>,
    /// The deliberate breaks every instance runs with (the value of
    /// `rmcp_resume_core::sabotage::VARIABLE`), if any.
    pub broken: Option<&'static str>,
}

/// The instances' settings besides where Redis is.
#[derive(Debug, Clone, Copy)]
pub struct Knobs {
    /// `--lease-ms`.
    pub lease: Duration,
    /// `--window`, if set.
    pub window: Option<usize>,
    /// `--outage-limit-ms`, if set.
    pub outage_limit: Option<Duration>,
    /// The deliberate breaks every instance runs with, if any.
    pub broken: Option<&'static str>,
}

/// One instance of the `server` example.
pub struct Node {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    logs: Arc<Mutex<VecDeque<String>>>,
}

impl Node {
    /// Starts one on 127.0.0.1, port 0; returns once it listens (at most
    /// 30 s).
    pub fn start(config: &NodeConfig) -> anyhow::Result<Self> {
        let mut command = Command::new(&config.server);
        if let Some(window) = config.window {
            command.arg("--window").arg(window.to_string());
        }
        if let Some(limit) = config.outage_limit {
            command
                .arg("--outage-limit-ms")
                .arg(limit.as_millis().to_string());
        }
        // Never inherited: a variable left in a developer's shell would
        // break every run that expects the product whole.
        match config.broken {
            Some(broken) => command.env(rmcp_resume_core::sabotage::VARIABLE, broken),
            None => command.env_remove(rmcp_resume_core::sabotage::VARIABLE),
        };
        let mut child = command
            .args(["--bind", "127.0.0.1:0"])
            .args(config.redis.server_args())
            .arg("--lease-ms")
            .arg(config.lease.as_millis().to_string())
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| anyhow::anyhow!("start {}: {e}", config.server.display()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("the server's stdout"))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| anyhow::anyhow!("the server's stderr"))?;
        let logs: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let (url_tx, url_rx) = mpsc::channel();
        for (reader, url_tx) in [
            (
                Box::new(stdout) as Box<dyn std::io::Read + Send>,
                Some(url_tx),
            ),
            (Box::new(stderr), None),
        ] {
            let logs = logs.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(reader).lines() {
                    let Ok(line) = line else { break };
                    if let (Some(tx), Some(url)) = (&url_tx, line.strip_prefix("listening ")) {
                        let _ = tx.send(url.to_owned());
                    }
                    if let Ok(mut logs) = logs.lock() {
                        if logs.len() == LOG_LINES {
                            logs.pop_front();
                        }
                        logs.push_back(line);
                    }
                }
            });
        }
        let url = match url_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                anyhow::bail!("the server example did not listen within 30 s");
            }
        };
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .parse()?;
        Ok(Self { child, addr, logs })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`, and waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Logged lines (the last few hundred) containing `needle`.
    pub fn log_lines(&self, needle: &str) -> Vec<String> {
        self.logs
            .lock()
            .map(|logs| {
                logs.iter()
                    .filter(|l| l.contains(needle))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = signal(self.child.id(), "CONT");
        self.kill();
    }
}

/// The `server` example's binary beside the running test or bench binary
/// (`target/<profile>/examples/server`), if it is there.
pub fn server_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile = exe.parent()?.parent()?;
    let path = profile.join("examples").join("server");
    path.exists().then_some(path)
}
