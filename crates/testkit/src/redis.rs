//! A redis-server of the test's own, and server instances sharing it.
//!
//! [`RedisServer`] listens on a Unix socket in a temp dir, with no TCP port
//! and persistence off, and is killed when dropped. [`Instance`] runs the
//! `server` example as its own process with `--redis`, so a test can kill,
//! pause and resume it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A redis-server process.
pub struct RedisServer {
    child: Child,
    dir: PathBuf,
    /// Its TCP port on 127.0.0.1, if it listens on one.
    port: Option<u16>,
}

impl RedisServer {
    /// Starts one and returns once it accepts connections (at most 10 s).
    pub fn start() -> Self {
        Self::launch(None)
    }

    /// Starts one that also listens on a TCP port of 127.0.0.1 (for
    /// benches: the port is picked free, then given to Redis, so another
    /// process could take it in between), and [`url`](Self::url) names it.
    pub fn start_tcp() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        Self::launch(Some(port))
    }

    fn launch(port: Option<u16>) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "rmcp-resume-redis-{}-{}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let child = Self::spawn_in(&dir, port);
        Self { child, dir, port }
    }

    /// Restarts it in place, on the same socket and port: it comes back
    /// empty, as a Redis without persistence does after a crash.
    pub fn restart(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(self.dir.join("redis.sock"));
        self.child = Self::spawn_in(&self.dir, self.port);
    }

    /// Sends `signal` (`STOP`, `CONT`) to it: a paused Redis accepts
    /// connections and answers nothing.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{signal}");
    }

    fn spawn_in(dir: &std::path::Path, port: Option<u16>) -> Child {
        let socket = dir.join("redis.sock");
        let tcp = port.map_or_else(|| "0".to_owned(), |p| p.to_string());
        let mut child = Command::new(redis_binary())
            .args(["--bind", "127.0.0.1", "--port", &tcp, "--unixsocket"])
            .arg(&socket)
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--maxmemory-policy", "noeviction", "--dir"])
            .arg(dir)
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
        child
    }

    /// Its URL: the TCP port if it has one, else its socket.
    pub fn url(&self) -> String {
        match self.port {
            Some(port) => format!("redis://127.0.0.1:{port}"),
            None => format!("unix://{}", self.dir.join("redis.sock").display()),
        }
    }

    /// Kills it (SIGKILL) and waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Every key it holds now, as a replica that stops replicating here
    /// would hold them (each with its time to live). (The lines' testkits,
    /// built from these sources, have no Redis client.)
    #[cfg(not(rmcp_line_1))]
    pub async fn replica(&self) -> anyhow::Result<Replica> {
        let mut conn = self.connection().await?;
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query_async(&mut conn).await?;
        let mut held = Vec::new();
        for key in keys {
            let ttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut conn).await?;
            let dump: Option<Vec<u8>> = redis::cmd("DUMP").arg(&key).query_async(&mut conn).await?;
            // A key that expired in between is not held.
            if let Some(dump) = dump
                && ttl != -2
            {
                held.push((key, ttl.max(0), dump));
            }
        }
        Ok(Replica(held))
    }

    /// A failover to `replica`: everything written since it stopped
    /// replicating is gone, and what it held is Redis's state (the same
    /// server stands in for the promoted replica).
    #[cfg(not(rmcp_line_1))]
    pub async fn fail_over_to(&self, replica: &Replica) -> anyhow::Result<()> {
        let mut conn = self.connection().await?;
        let () = redis::cmd("FLUSHALL").query_async(&mut conn).await?;
        for (key, ttl, dump) in &replica.0 {
            let () = redis::cmd("RESTORE")
                .arg(key)
                .arg(*ttl)
                .arg(dump.as_slice())
                .arg("REPLACE")
                .query_async(&mut conn)
                .await?;
        }
        Ok(())
    }

    #[cfg(not(rmcp_line_1))]
    async fn connection(&self) -> anyhow::Result<redis::aio::MultiplexedConnection> {
        Ok(redis::Client::open(self.url())?
            .get_multiplexed_async_connection()
            .await?)
    }
}

/// What a replica held when it stopped replicating ([`RedisServer::replica`]).
#[cfg(not(rmcp_line_1))]
pub struct Replica(Vec<(Vec<u8>, i64, Vec<u8>)>);

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

/// The `server` example, running as its own process on a shared Redis.
pub struct Instance {
    child: Child,
    /// Its `/mcp` URL.
    pub url: String,
    /// Lines it logged.
    logs: mpsc::Receiver<String>,
}

impl Instance {
    /// Starts `server` (a path to the example's binary) on 127.0.0.1, port
    /// 0, sharing `redis`, with a lease of `lease`; returns once it listens
    /// (at most 30 s).
    pub fn start(server: &std::path::Path, redis: &RedisServer, lease: Duration) -> Self {
        Self::start_with(server, redis, lease, &[])
    }

    /// [`start`](Self::start), with more command-line arguments.
    pub fn start_with(
        server: &std::path::Path,
        redis: &RedisServer,
        lease: Duration,
        args: &[&str],
    ) -> Self {
        let mut child = Command::new(server)
            .args(args)
            .args(["--bind", "127.0.0.1:0", "--redis"])
            .arg(redis.url())
            .arg("--lease-ms")
            .arg(lease.as_millis().to_string())
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the server example");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (url_tx, url_rx) = mpsc::channel();
        let (log_tx, logs) = mpsc::channel();
        // Its logs go to stdout (tracing's default) or stderr: both are read.
        let stdout_logs = log_tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("listening ") {
                    let _ = url_tx.send(url.to_owned());
                }
                let _ = stdout_logs.send(line);
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = log_tx.send(line);
            }
        });
        let url = url_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the server example did not listen within 30 s");
        Self { child, url, logs }
    }

    /// Waits (at most `limit`) for a logged line containing `needle`.
    pub fn logged(&self, needle: &str, limit: Duration) -> Option<String> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let left = deadline.checked_duration_since(std::time::Instant::now())?;
            match self.logs.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Every line it logged since the last look, without waiting.
    pub fn drain_logs(&self) -> Vec<String> {
        self.logs.try_iter().collect()
    }

    /// Sends the process `signal` (`KILL`, `STOP`, `CONT`).
    pub fn signal(&mut self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{signal} failed");
        if signal == "KILL" {
            let _ = self.child.wait();
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-CONT")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `server` example's binary, built beside the test binaries (cargo
/// builds examples with the tests).
pub fn server_example() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let debug = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let path = debug.join("examples").join("server");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build --example server`",
        path.display()
    );
    path
}

/// A TCP proxy on 127.0.0.1 that hands each new connection to the next
/// backend in turn: a load balancer without affinity.
pub struct RoundRobin {
    /// Its `/mcp` URL.
    pub url: String,
    served: std::sync::Arc<Vec<std::sync::atomic::AtomicUsize>>,
    task: tokio::task::JoinHandle<()>,
}

impl RoundRobin {
    /// Starts one in front of `backends` (`host:port` each).
    pub async fn start(backends: Vec<std::net::SocketAddr>) -> std::io::Result<Self> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/mcp", listener.local_addr()?);
        let served: std::sync::Arc<Vec<AtomicUsize>> =
            std::sync::Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let counts = served.clone();
        let task = tokio::spawn(async move {
            let mut next = 0usize;
            while let Ok((mut client, _)) = listener.accept().await {
                let i = next % backends.len();
                next += 1;
                counts[i].fetch_add(1, Ordering::Relaxed);
                let backend = backends[i];
                tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(backend).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        Ok(Self { url, served, task })
    }

    /// Connections handed to each backend so far.
    pub fn served(&self) -> Vec<usize> {
        self.served
            .iter()
            .map(|n| n.load(std::sync::atomic::Ordering::Relaxed))
            .collect()
    }
}

impl Drop for RoundRobin {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Instance {
    /// Its address.
    pub fn addr(&self) -> std::net::SocketAddr {
        let authority = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        authority.parse().expect("a socket address")
    }
}

/// An HTTP proxy on 127.0.0.1 that sends every `GET` to one backend and
/// everything else to another: `POST`s keep their affinity to the session's
/// owner while every resume lands on the other instance.
pub struct SplitProxy {
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl SplitProxy {
    /// `GET`s go to `gets`, the rest to `posts` (each an `/mcp` URL).
    pub async fn start(posts: String, gets: String) -> std::io::Result<Self> {
        use axum::body::Body;
        use axum::extract::Request;
        use axum::response::Response;
        let client = reqwest::Client::new();
        let forward = move |request: Request| {
            let client = client.clone();
            let target = if request.method() == http::Method::GET {
                gets.clone()
            } else {
                posts.clone()
            };
            async move {
                let (parts, body) = request.into_parts();
                let bad_gateway = |error: String| {
                    let mut response = Response::new(Body::from(error));
                    *response.status_mut() = http::StatusCode::BAD_GATEWAY;
                    response
                };
                let Ok(body) = axum::body::to_bytes(body, 16 << 20).await else {
                    return bad_gateway("request body".to_owned());
                };
                let mut headers = parts.headers.clone();
                headers.remove(http::header::HOST);
                let sent = client
                    .request(parts.method.clone(), &target)
                    .headers(headers)
                    .body(body)
                    .send()
                    .await;
                let upstream = match sent {
                    Ok(upstream) => upstream,
                    Err(error) => return bad_gateway(error.to_string()),
                };
                let status = upstream.status();
                let headers = upstream.headers().clone();
                let mut response = Response::new(Body::from_stream(upstream.bytes_stream()));
                *response.status_mut() = status;
                for (name, value) in &headers {
                    if name != http::header::CONTENT_LENGTH
                        && name != http::header::TRANSFER_ENCODING
                    {
                        response.headers_mut().insert(name.clone(), value.clone());
                    }
                }
                response
            }
        };
        let router = axum::Router::new().fallback(forward);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(Self { addr, task })
    }
}

impl Drop for SplitProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
