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
