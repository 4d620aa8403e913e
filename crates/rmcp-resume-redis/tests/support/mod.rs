//! A redis-server of the test's own: on a Unix socket in a temp dir, no TCP
//! port, persistence off; killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct RedisServer {
    child: Child,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts one and returns once it accepts connections (at most 10 s).
    pub fn start() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "rmcp-resume-redis-{}-{}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let socket = dir.join("redis.sock");
        let mut child = Command::new(redis_binary())
            .args(["--port", "0", "--unixsocket"])
            .arg(&socket)
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--maxmemory-policy", "noeviction", "--dir"])
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (the Debian package redis-server) must be installed");
        let stdout = child.stdout.take().expect("piped stdout");
        let (ready_tx, ready_rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.contains("ready to accept connections") {
                    let _ = ready_tx.send(());
                }
            }
        });
        ready_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("redis-server did not get ready within 10 s");
        Self { child, dir }
    }

    /// The URL of its socket.
    pub fn url(&self) -> String {
        format!("unix://{}", self.dir.join("redis.sock").display())
    }

    /// Kills it (SIGKILL) and waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn redis_binary() -> PathBuf {
    std::env::var_os("REDIS_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("redis-server"))
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
