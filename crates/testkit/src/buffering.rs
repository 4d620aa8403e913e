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

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A buffering reverse proxy in front of one server (see the module).
#[derive(Clone, Debug)]
pub struct BufferingProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
}

impl BufferingProxy {
    /// How much a response may gather before it is passed on: nginx's
    /// default `proxy_buffers` (8 × 8 KiB) on one connection.
    pub const BUFFER: usize = 64 * 1024;

    /// Starts a proxy to `target` on 127.0.0.1:0, until `ct` is cancelled.
    pub async fn start(target: SocketAddr, ct: CancellationToken) -> std::io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
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
                tokio::spawn(async move {
                    tokio::select! {
                        _ = relay(client, server) => {}
                        _ = ct.cancelled() => {}
                    }
                });
            }
        });
        Ok(Self { addr })
    }
}

async fn relay(client: TcpStream, server: TcpStream) {
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let requests = tokio::spawn(requests(client_read, server_write));
    responses(server_read, client_write).await;
    requests.abort();
}

/// Client to server: the request line says HTTP/1.0 and is followed by
/// `Connection: close`; everything else passes as it comes.
async fn requests(mut client: OwnedReadHalf, mut server: OwnedWriteHalf) {
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
/// the server's connection ends.
async fn responses(mut server: OwnedReadHalf, mut client: OwnedWriteHalf) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut held = Vec::new();
    loop {
        let n = match server.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        held.extend_from_slice(&buf[..n]);
        if held.len() >= BufferingProxy::BUFFER {
            if client.write_all(&held).await.is_err() {
                return;
            }
            held.clear();
        }
    }
    let _ = client.write_all(&held).await;
    let _ = client.shutdown().await;
}
