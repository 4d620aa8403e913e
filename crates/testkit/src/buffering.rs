//! [`BufferingProxy`]: a reverse proxy that buffers responses, as nginx does
//! with `proxy_buffering on` (its default): what the server sends is held
//! until 64 KiB have gathered or the server's connection ends, so an event
//! stream reaches the client in one piece at its end, or not at all while it
//! stays open.
//!
//! Like nginx's default upstream settings (`proxy_http_version 1.0`, no
//! upstream keep-alive), every request reaches the server as HTTP/1.0 with
//! `Connection: close`, so the server ends its connection with its response
//! (it cannot use chunked encoding, and must not keep the connection, even
//! where its response says `Connection: keep-alive`, as the TypeScript
//! SDK's event streams do): a call's stream arrives whole once answered,
//! and a standalone `GET` stream, which never ends, delivers nothing.
//! [`BufferingProxy::start_with`] adds a response timeout: what has passed
//! nothing on by then is answered `504`, as nginx's `proxy_read_timeout`
//! (60 s) or a load balancer's response timeout does.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A buffering reverse proxy in front of one server (see the module).
#[derive(Clone, Debug)]
pub struct BufferingProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    gets: Arc<AtomicUsize>,
}

impl BufferingProxy {
    /// How much a response may gather before it is passed on: nginx's
    /// default `proxy_buffers` (8 × 8 KiB) on one connection.
    pub const BUFFER: usize = 64 * 1024;

    /// Starts a proxy to `target` on 127.0.0.1:0, until `ct` is cancelled.
    pub async fn start(target: SocketAddr, ct: CancellationToken) -> std::io::Result<Self> {
        Self::start_with(target, ct, None).await
    }

    /// [`start`](Self::start), answering `504 Gateway Timeout` in place of
    /// any response that has passed nothing on `timeout` after its request
    /// (nginx's `proxy_read_timeout` of 60 s over a buffered response, a
    /// load balancer's response timeout), and closing both sides.
    pub async fn start_with(
        target: SocketAddr,
        ct: CancellationToken,
        timeout: Option<Duration>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let gets = Arc::new(AtomicUsize::new(0));
        let counted = gets.clone();
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
                let ct = ct.clone();
                let gets = counted.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = relay(client, server, gets, timeout) => {}
                        _ = ct.cancelled() => {}
                    }
                });
            }
        });
        Ok(Self { addr, gets })
    }

    /// `GET`s relayed so far.
    pub fn gets(&self) -> usize {
        self.gets.load(Ordering::SeqCst)
    }
}

async fn relay(
    client: TcpStream,
    server: TcpStream,
    gets: Arc<AtomicUsize>,
    timeout: Option<Duration>,
) {
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let requests = tokio::spawn(requests(client_read, server_write, gets));
    responses(server_read, client_write, timeout).await;
    requests.abort();
}

/// Client to server: the request line says HTTP/1.0 and is followed by
/// `Connection: close`; everything else passes as it comes.
async fn requests(mut client: OwnedReadHalf, mut server: OwnedWriteHalf, gets: Arc<AtomicUsize>) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut head = Vec::new();
    loop {
        let n = match client.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = head.windows(2).position(|w| w == b"\r\n") {
            let (line, rest) = head.split_at(end);
            if line.starts_with(b"GET ") {
                gets.fetch_add(1, Ordering::SeqCst);
            }
            let mut out = match line.strip_suffix(b"HTTP/1.1") {
                Some(method_and_target) => [method_and_target, b"HTTP/1.0"].concat(),
                None => line.to_vec(),
            };
            out.extend_from_slice(b"\r\nConnection: close");
            // `rest` starts with the request line's CRLF.
            out.extend_from_slice(rest);
            if server.write_all(&out).await.is_err() {
                return;
            }
            break;
        }
    }
    let _ = tokio::io::copy(&mut client, &mut server).await;
    let _ = server.shutdown().await;
}

/// Server to client: held until [`BufferingProxy::BUFFER`] bytes gather or
/// the server's connection ends; with a `timeout`, a response that has
/// passed nothing on by then is answered `504` instead.
async fn responses(
    mut server: OwnedReadHalf,
    mut client: OwnedWriteHalf,
    timeout: Option<Duration>,
) {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let mut buf = vec![0u8; 16 * 1024];
    let mut held = Vec::new();
    let mut passed = false;
    loop {
        let read = server.read(&mut buf);
        let read = match deadline.filter(|_| !passed) {
            Some(at) => match tokio::time::timeout_at(at, read).await {
                Ok(read) => read,
                Err(_) => {
                    let body = "504 Gateway Timeout: the upstream response did not complete";
                    let answer = format!(
                        "HTTP/1.1 504 Gateway Timeout\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = client.write_all(answer.as_bytes()).await;
                    let _ = client.shutdown().await;
                    return;
                }
            },
            None => read.await,
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        held.extend_from_slice(&buf[..n]);
        if held.len() >= BufferingProxy::BUFFER {
            if client.write_all(&held).await.is_err() {
                return;
            }
            passed = true;
            held.clear();
        }
    }
    let _ = client.write_all(&held).await;
    let _ = client.shutdown().await;
}
