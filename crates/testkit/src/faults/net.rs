//! The network between clients and instances: one TCP proxy per (client,
//! instance) pair on 127.0.0.1:0, whose target follows the instance across
//! restarts and whose connections the nemesis can drop.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long a proxy waits to connect to its instance.
const CONNECT_LIMIT: Duration = Duration::from_secs(1);

struct LinkState {
    target: Mutex<Option<SocketAddr>>,
    cut: watch::Sender<u64>,
    blocked_until: Mutex<Option<Instant>>,
}

/// A proxy between one client and one instance.
#[derive(Clone)]
pub struct Link {
    /// Where the client connects.
    pub addr: SocketAddr,
    state: Arc<LinkState>,
}

impl Link {
    /// Starts a proxy to `target`, stopped by `ct`.
    pub async fn start(target: SocketAddr, ct: CancellationToken) -> std::io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let (cut, _) = watch::channel(0u64);
        let link = Self {
            addr: listener.local_addr()?,
            state: Arc::new(LinkState {
                target: Mutex::new(Some(target)),
                cut,
                blocked_until: Mutex::new(None),
            }),
        };
        let accepting = link.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = ct.cancelled() => break,
                };
                let Ok((client, _)) = accepted else { break };
                let link = accepting.clone();
                let ct = ct.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = link.relay(client) => {}
                        _ = ct.cancelled() => {}
                    }
                });
            }
        });
        Ok(link)
    }

    /// The client's URL of `/mcp` through this proxy.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    async fn relay(self, mut client: TcpStream) {
        // Subscribed before anything else: a cut from now on reaches it.
        let mut cut = self.state.cut.subscribe();
        let blocked = self
            .state
            .blocked_until
            .lock()
            .ok()
            .and_then(|until| *until)
            .is_some_and(|until| Instant::now() < until);
        let target = self.state.target.lock().ok().and_then(|t| *t);
        let Some(target) = target.filter(|_| !blocked) else {
            // Cut off or down: the connection closes unanswered.
            return;
        };
        let Ok(Ok(mut server)) =
            tokio::time::timeout(CONNECT_LIMIT, TcpStream::connect(target)).await
        else {
            return;
        };
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
            _ = cut.changed() => {}
        }
    }

    /// Points the proxy at `target` (a restarted instance), or nowhere.
    pub fn retarget(&self, target: Option<SocketAddr>) {
        if let Ok(mut current) = self.state.target.lock() {
            *current = target;
        }
    }

    /// Drops every connection open now, and refuses new ones for `hold`.
    pub fn cut(&self, hold: Duration) {
        if let Ok(mut until) = self.state.blocked_until.lock() {
            *until = Some(Instant::now() + hold);
        }
        self.state.cut.send_modify(|v| *v += 1);
    }
}

/// What a [`RedisLink`] does to the bytes between an instance and Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Passes them.
    Open,
    /// Holds them: connections stay up and nothing crosses, as when a
    /// network drops packets silently (the instance learns of it only
    /// from its own timeouts).
    Blackhole,
    /// Drops every connection and refuses new ones.
    Cut,
}

struct RedisLinkState {
    flow: watch::Sender<Flow>,
}

/// A proxy between one instance and Redis, on a Unix socket of its own:
/// the instance connects to it as to Redis. The nemesis can blackhole it
/// (nothing crosses, connections stay up) or cut it (connections dropped,
/// new ones refused) for a while: a partition of that instance alone.
#[derive(Clone)]
pub struct RedisLink {
    /// The socket the instance connects to.
    pub path: std::path::PathBuf,
    state: Arc<RedisLinkState>,
}

impl RedisLink {
    /// Starts a proxy at `path` to the Redis socket `redis`, stopped by
    /// `ct`.
    pub fn start(
        path: std::path::PathBuf,
        redis: std::path::PathBuf,
        ct: CancellationToken,
    ) -> std::io::Result<Self> {
        let _ = std::fs::remove_file(&path);
        let listener = tokio::net::UnixListener::bind(&path)?;
        let (flow, _) = watch::channel(Flow::Open);
        let link = Self {
            path,
            state: Arc::new(RedisLinkState { flow }),
        };
        let state = link.state.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = ct.cancelled() => break,
                };
                let Ok((instance, _)) = accepted else { break };
                let (state, redis, ct) = (state.clone(), redis.clone(), ct.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        _ = relay_redis(instance, &redis, &state) => {}
                        _ = ct.cancelled() => {}
                    }
                });
            }
        });
        Ok(link)
    }

    /// The URL the instance is given for Redis.
    pub fn url(&self) -> String {
        format!("unix://{}", self.path.display())
    }

    /// Holds every byte for `hold`, connections kept (`blackhole`), or
    /// drops them and refuses new ones for `hold`; then opens again.
    pub async fn partition(&self, hold: Duration, blackhole: bool) {
        let flow = if blackhole {
            Flow::Blackhole
        } else {
            Flow::Cut
        };
        self.state.flow.send_replace(flow);
        tokio::time::sleep(hold).await;
        self.state.flow.send_replace(Flow::Open);
    }
}

/// Relays one connection while the flow is open; holds it while
/// blackholed; ends it when cut.
async fn relay_redis(
    instance: tokio::net::UnixStream,
    redis: &std::path::Path,
    state: &RedisLinkState,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut flow = state.flow.subscribe();
    // A connection opened during a partition waits for it to end (a
    // blackhole) or is dropped (a cut).
    loop {
        let now = *flow.borrow_and_update();
        match now {
            Flow::Open => break,
            Flow::Cut => return,
            Flow::Blackhole => {
                if flow.changed().await.is_err() {
                    return;
                }
            }
        }
    }
    let Ok(Ok(server)) =
        tokio::time::timeout(CONNECT_LIMIT, tokio::net::UnixStream::connect(redis)).await
    else {
        return;
    };
    let (mut from_instance, mut to_instance) = instance.into_split();
    let (mut from_redis, mut to_redis) = server.into_split();
    // One direction at a time, each chunk passed on only while the flow is
    // open: a blackhole holds the chunk read (and so everything after it).
    async fn pump(
        from: &mut (impl AsyncReadExt + Unpin),
        to: &mut (impl AsyncWriteExt + Unpin),
        mut flow: watch::Receiver<Flow>,
    ) {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = tokio::select! {
                read = from.read(&mut buf) => match read {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                },
                changed = flow.changed() => {
                    if changed.is_err() || *flow.borrow() == Flow::Cut {
                        return;
                    }
                    continue;
                }
            };
            loop {
                let now = *flow.borrow_and_update();
                match now {
                    Flow::Open => break,
                    Flow::Cut => return,
                    Flow::Blackhole => {
                        if flow.changed().await.is_err() {
                            return;
                        }
                    }
                }
            }
            if to.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    }
    let up = state.flow.subscribe();
    let down = state.flow.subscribe();
    tokio::select! {
        _ = pump(&mut from_instance, &mut to_redis, up) => {}
        _ = pump(&mut from_redis, &mut to_instance, down) => {}
    }
}
