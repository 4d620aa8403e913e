//! A TCP proxy on 127.0.0.1:0 whose connections a test can cut, and which
//! counts requests and watches the bytes it forwards.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// How long a blackholed connection's sockets are held open.
const BLACKHOLE_HOLD: Duration = Duration::from_secs(900);

/// A cuttable proxy in front of one server.
#[derive(Clone)]
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    cut: Arc<watch::Sender<u64>>,
    gets: Arc<AtomicUsize>,
    resumes: Arc<AtomicUsize>,
    resumed: Arc<Notify>,
    marker: Arc<(Vec<u8>, Notify)>,
    refuse_gets: Arc<AtomicUsize>,
    lose_posts: Arc<std::sync::Mutex<(Vec<u8>, usize)>>,
    churn: Arc<std::sync::Mutex<Option<Churn>>>,
    cuts: Arc<AtomicUsize>,
    cut_connections: Arc<AtomicUsize>,
    blackhole: Arc<watch::Sender<u64>>,
    /// How long a cut keeps the server's side open, in milliseconds.
    half_open_ms: Arc<std::sync::atomic::AtomicU64>,
    conflicts: Arc<AtomicUsize>,
}

/// Random connection lifetimes from a seed, so a failing run can be replayed.
#[derive(Debug)]
struct Churn {
    state: u64,
    min: Duration,
    max: Duration,
}

impl Churn {
    /// The next lifetime, uniform in `[min, max]` (xorshift64*).
    fn next(&mut self) -> Duration {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let random = self.state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let span = self.max.saturating_sub(self.min).as_millis().max(1) as u64;
        self.min + Duration::from_millis(random % span)
    }
}

impl Proxy {
    /// Starts a proxy to `target`; `marker` is a byte string to watch for in
    /// what the server sends (see [`Proxy::marker_seen`]).
    pub async fn start(
        target: SocketAddr,
        marker: &str,
        ct: CancellationToken,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let (cut, _) = watch::channel(0u64);
        let (blackhole, _) = watch::channel(0u64);
        let proxy = Self {
            addr: listener.local_addr()?,
            cut: Arc::new(cut),
            gets: Arc::default(),
            resumes: Arc::default(),
            resumed: Arc::default(),
            marker: Arc::new((marker.as_bytes().to_vec(), Notify::new())),
            refuse_gets: Arc::default(),
            lose_posts: Arc::default(),
            churn: Arc::default(),
            cuts: Arc::default(),
            cut_connections: Arc::default(),
            blackhole: Arc::new(blackhole),
            half_open_ms: Arc::default(),
            conflicts: Arc::default(),
        };
        let accepting = proxy.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = ct.cancelled() => break,
                };
                let Ok((client, _)) = accepted else { break };
                let Ok(server) = TcpStream::connect(target).await else {
                    continue;
                };
                tokio::spawn(accepting.clone().relay(client, server));
            }
        });
        Ok(proxy)
    }

    async fn relay(self, client: TcpStream, server: TcpStream) {
        let mut cut = self.cut.subscribe();
        let mut blackhole = self.blackhole.subscribe();
        let lifetime = self
            .churn
            .lock()
            .ok()
            .and_then(|mut churn| churn.as_mut().map(Churn::next));
        let (mut client_read, mut client_write) = client.into_split();
        let (mut server_read, mut server_write) = server.into_split();
        let upstream = async {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                let n = match client_read.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                if chunk.starts_with(b"GET ") {
                    let refuse = self
                        .refuse_gets
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok();
                    if refuse {
                        // Lost in transit: the connection closes unanswered.
                        break;
                    }
                    self.gets.fetch_add(1, Ordering::SeqCst);
                    let lower = String::from_utf8_lossy(chunk).to_ascii_lowercase();
                    if lower.contains("\r\nlast-event-id:") {
                        self.resumes.fetch_add(1, Ordering::SeqCst);
                        self.resumed.notify_one();
                    }
                }
                let lose = self.loses(chunk);
                if server_write.write_all(chunk).await.is_err() || lose {
                    break;
                }
            }
        };
        let downstream = async {
            let mut buf = vec![0u8; 16 * 1024];
            // The last bytes of the previous read: a marker split across
            // two reads is still seen (else a cell's cut never happens).
            let mut carry: Vec<u8> = Vec::new();
            loop {
                let n = match server_read.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                if chunk.starts_with(b"HTTP/1.1 409") {
                    self.conflicts.fetch_add(1, Ordering::SeqCst);
                }
                let (marker, seen) = &*self.marker;
                if !marker.is_empty() {
                    carry.extend_from_slice(chunk);
                    if carry.windows(marker.len()).any(|w| w == marker.as_slice()) {
                        // One waiter at a time; a permit keeps an early sighting.
                        seen.notify_one();
                    }
                    let keep = marker.len().saturating_sub(1).min(carry.len());
                    carry.drain(..carry.len() - keep);
                }
                if client_write.write_all(chunk).await.is_err() {
                    break;
                }
            }
        };
        let expiry = async {
            match lifetime {
                Some(lifetime) => tokio::time::sleep(lifetime).await,
                None => std::future::pending().await,
            }
        };
        let mut was_cut = false;
        let mut blackholed = false;
        tokio::select! {
            _ = upstream => {}
            _ = downstream => {}
            _ = blackhole.changed() => blackholed = true,
            _ = cut.changed() => {
                was_cut = true;
                self.cut_connections.fetch_add(1, Ordering::SeqCst);
            }
            _ = expiry => {
                self.cuts.fetch_add(1, Ordering::SeqCst);
            }
        }
        if blackholed {
            // Nothing crosses any more, and neither side is told: both
            // sockets stay open (a NAT or load balancer that dropped its
            // state, a laptop asleep), for longer than any test runs.
            self.cut_connections.fetch_add(1, Ordering::SeqCst);
            let _held = (client_read, client_write, server_read, server_write);
            tokio::time::sleep(BLACKHOLE_HOLD).await;
            return;
        }
        let hold = Duration::from_millis(self.half_open_ms.load(Ordering::SeqCst));
        if was_cut && !hold.is_zero() {
            // The client's side goes now; the server's stays open, so the
            // server still thinks its stream connected.
            drop((client_read, client_write));
            tokio::time::sleep(hold).await;
        }
    }

    /// From now on, closes every new connection after a random lifetime in
    /// `[min, max]`, drawn from `seed`.
    pub fn churn(&self, seed: u64, min: Duration, max: Duration) {
        if let Ok(mut churn) = self.churn.lock() {
            *churn = Some(Churn {
                state: seed.max(1),
                min,
                max,
            });
        }
    }

    /// From now on, closes every new connection `lifetime` after it opened,
    /// as a load balancer with a maximum connection lifetime does.
    pub fn lifetime(&self, lifetime: Duration) {
        // A churn from `lifetime` to `lifetime`: every draw is `lifetime`.
        self.churn(1, lifetime, lifetime);
    }

    /// Connections closed by churn (or [`Proxy::lifetime`]) so far.
    pub fn cuts(&self) -> usize {
        self.cuts.load(Ordering::SeqCst)
    }

    /// Connections closed by [`Proxy::cut`] or [`Proxy::cut_client_side`]
    /// so far: a test whose cut closed nothing proved nothing.
    pub fn cut_connections(&self) -> usize {
        self.cut_connections.load(Ordering::SeqCst)
    }

    /// Closes, unanswered, the connections of the next `count` `GET`s.
    pub fn refuse_gets(&self, count: usize) {
        self.refuse_gets.store(count, Ordering::SeqCst);
    }

    /// Forwards the next `count` requests whose bytes contain `marker` (a
    /// JSON-RPC method, say), then closes their connections before any
    /// answer: the server got each, the client learns nothing.
    pub fn lose_posts(&self, marker: &str, count: usize) {
        if let Ok(mut lose) = self.lose_posts.lock() {
            *lose = (marker.as_bytes().to_vec(), count);
        }
    }

    /// Losses told of by [`Proxy::lose_posts`] still to come.
    pub fn posts_to_lose(&self) -> usize {
        self.lose_posts.lock().map(|lose| lose.1).unwrap_or(0)
    }

    /// Whether `chunk` is a request to lose, counting it if so.
    fn loses(&self, chunk: &[u8]) -> bool {
        let Ok(mut lose) = self.lose_posts.lock() else {
            return false;
        };
        let (marker, count) = &mut *lose;
        if *count == 0
            || marker.is_empty()
            || !chunk.windows(marker.len()).any(|w| w == marker.as_slice())
        {
            return false;
        }
        *count -= 1;
        true
    }

    /// Closes the client's side of every connection open now, and the
    /// server's side `hold` later: a path that loses a connection without the
    /// server noticing (a NAT timeout, a dead proxy), so that a resume meets
    /// a server that still counts the old stream as connected.
    pub fn cut_client_side(&self, hold: Duration) {
        let ms = u64::try_from(hold.as_millis()).unwrap_or(u64::MAX);
        self.half_open_ms.store(ms, Ordering::SeqCst);
        self.cut.send_modify(|v| *v += 1);
    }

    /// Blackholes every connection open now: nothing more crosses it either
    /// way and neither end is told; later connections are unaffected.
    pub fn blackhole(&self) {
        self.blackhole.send_modify(|v| *v += 1);
    }

    /// Closes every connection open now; later ones are unaffected.
    pub fn cut(&self) {
        self.half_open_ms.store(0, Ordering::SeqCst);
        self.cut.send_modify(|v| *v += 1);
    }

    /// Waits until the server has sent the marker through the proxy.
    pub async fn marker_seen(&self) {
        self.marker.1.notified().await;
    }

    /// Waits for a `GET` carrying `Last-Event-ID` (one that arrived before the
    /// call counts).
    pub async fn resume_seen(&self) {
        self.resumed.notified().await;
    }

    /// `409 Conflict` answers forwarded so far.
    pub fn conflicts(&self) -> usize {
        self.conflicts.load(Ordering::SeqCst)
    }

    /// `GET` requests forwarded so far.
    pub fn gets(&self) -> usize {
        self.gets.load(Ordering::SeqCst)
    }

    /// `GET` requests that carried `Last-Event-ID`.
    pub fn resumes(&self) -> usize {
        self.resumes.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A marker the server writes in two pieces, flushed apart, is seen:
    /// a cell's cut waits on it.
    #[tokio::test]
    async fn a_marker_split_across_two_reads_is_seen() {
        let server = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("bind");
        let target = server.local_addr().expect("addr");
        let ct = CancellationToken::new();
        let proxy = Proxy::start(target, "notifications/progress", ct.clone())
            .await
            .expect("proxy");
        let (first_sent_tx, first_sent) = tokio::sync::oneshot::channel();
        let serving = tokio::spawn(async move {
            let (mut conn, _) = server.accept().await.expect("accept");
            conn.write_all(b"data: {\"method\":\"notifications/pro")
                .await
                .expect("first half");
            conn.flush().await.expect("flush");
            first_sent.await.expect("go on");
            conn.write_all(b"gress\"}\n\n").await.expect("second half");
            conn
        });
        let mut client = TcpStream::connect(proxy.addr).await.expect("connect");
        let mut buf = [0u8; 64];
        let n = client.read(&mut buf).await.expect("first half through");
        assert!(n > 0 && !buf[..n].ends_with(b"gress\"}\n\n"));
        first_sent_tx.send(()).expect("server waits");
        tokio::time::timeout(Duration::from_secs(5), proxy.marker_seen())
            .await
            .expect("the split marker was not seen");
        let _conn = serving.await.expect("server");
        proxy.cut();
        let closed = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match client.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(closed.is_ok(), "the cut did not close the connection");
        assert_eq!(proxy.cut_connections(), 1);
        ct.cancel();
    }
}
