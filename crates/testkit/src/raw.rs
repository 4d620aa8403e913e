//! A deliberately plain HTTP client for asserting exactly what the server
//! sends: statuses, headers and SSE frames, with no MCP client in between.

use std::time::Duration;

use bytes::BytesMut;
use futures::StreamExt;
use serde_json::{Value, json};

/// Protocol revision the raw client speaks (resumable streams exist in it).
#[cfg(not(rmcp_line_0_17))]
pub const PROTOCOL: &str = "2025-11-25";
/// The protocol revision the raw session speaks: 0.17 knows none newer
/// than 2025-06-18, and refuses a header naming one.
#[cfg(rmcp_line_0_17)]
pub const PROTOCOL: &str = "2025-06-18";

/// How long any single read may take before the test fails instead of hanging.
pub const READ_LIMIT: Duration = Duration::from_secs(10);

/// One SSE frame, parsed as the probe parses it.
pub use rmcp_resume_probe::sse::Frame;
use rmcp_resume_probe::sse::{normalize, parse_block};

/// Reads SSE frames from a response body, skipping keep-alive comments.
pub struct SseReader {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: BytesMut,
    /// A chunk ended in `\r` (see [`normalize`]).
    pending_cr: bool,
    done: bool,
}

impl SseReader {
    /// Wraps a response whose body is an event stream.
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            body: response.bytes_stream().boxed(),
            buf: BytesMut::new(),
            pending_cr: false,
            done: false,
        }
    }

    fn take_block(&mut self) -> Option<String> {
        let text = std::str::from_utf8(&self.buf).ok()?;
        let end = text.find("\n\n")?;
        let block = text[..end].to_owned();
        let _ = self.buf.split_to(end + 2);
        Some(block)
    }

    /// The next frame, `Ok(None)` at the end of the stream, `Err` if nothing
    /// arrives within [`READ_LIMIT`].
    pub async fn next(&mut self) -> anyhow::Result<Option<Frame>> {
        loop {
            while let Some(block) = self.take_block() {
                if let Some(frame) = parse_block(&block) {
                    return Ok(Some(frame));
                }
            }
            if self.done {
                return Ok(None);
            }
            match tokio::time::timeout(READ_LIMIT, self.body.next()).await {
                Err(_) => anyhow::bail!("no SSE frame within {READ_LIMIT:?}"),
                Ok(None) => self.done = true,
                Ok(Some(chunk)) => match chunk {
                    // Other SDKs end lines with CRLF, as SSE allows.
                    Ok(bytes) => normalize(&mut self.pending_cr, &bytes, &mut self.buf),
                    // A reset connection ends the stream as far as a test cares.
                    Err(_) => self.done = true,
                },
            }
        }
    }

    /// Every remaining frame until the server ends the stream.
    pub async fn collect(mut self) -> anyhow::Result<Vec<Frame>> {
        let mut frames = Vec::new();
        for _ in 0..10_000 {
            match self.next().await? {
                Some(frame) => frames.push(frame),
                None => return Ok(frames),
            }
        }
        anyhow::bail!("stream did not end after 10000 frames")
    }
}

/// A session opened by hand.
pub struct RawSession {
    http: reqwest::Client,
    /// The endpoint URL.
    pub url: String,
    /// `Mcp-Session-Id`.
    pub session: String,
    next_id: u64,
}

impl RawSession {
    /// The same session, spoken to at another `url` (another instance).
    pub fn at(&self, url: &str) -> Self {
        Self {
            http: self.http.clone(),
            url: url.to_owned(),
            session: self.session.clone(),
            next_id: self.next_id + 1_000,
        }
    }

    /// Initializes a session at `url`.
    pub async fn open(url: &str) -> anyhow::Result<Self> {
        Self::open_with(reqwest::Client::new(), url).await
    }

    /// An idle session at `url`: initialized, its standalone `GET` stream
    /// open and returned unread (what the memory benches hold by the
    /// thousand).
    pub async fn open_idle(
        http: reqwest::Client,
        url: &str,
    ) -> anyhow::Result<(Self, reqwest::Response)> {
        let session = Self::open_with(http, url).await?;
        let stream = session.get(None).await?;
        anyhow::ensure!(stream.status() == 200, "GET: {}", stream.status());
        Ok((session, stream))
    }

    /// Initializes a session at `url` through `http`, whose connection pool
    /// may be shared with other sessions.
    pub async fn open_with(http: reqwest::Client, url: &str) -> anyhow::Result<Self> {
        let response = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .json(&json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": { "name": "raw-test", "version": "0" }
                }
            }))
            .send()
            .await?;
        anyhow::ensure!(
            response.status() == 200,
            "initialize: {}",
            response.status()
        );
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| anyhow::anyhow!("no Mcp-Session-Id"))?;
        let frames = SseReader::new(response).collect().await?;
        anyhow::ensure!(
            frames
                .iter()
                .any(|f| f.json().is_some_and(|j| j["id"] == 0)),
            "no initialize result in {frames:?}"
        );
        let this = Self {
            http,
            url: url.to_owned(),
            session,
            next_id: 1,
        };
        let ack = this
            .post(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        anyhow::ensure!(ack.status() == 202, "initialized: {}", ack.status());
        Ok(this)
    }

    /// Opens this session's standalone GET on a socket with a tiny receive
    /// buffer, reads the response head, and never reads again: a reader
    /// that has stalled, whatever the machine's socket buffer sizes.
    pub async fn stalled_get(&self) -> anyhow::Result<tokio::net::TcpStream> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let url = reqwest::Url::parse(&self.url)?;
        let addr = url
            .socket_addrs(|| None)?
            .into_iter()
            .next()
            .ok_or_else(|| anyhow::anyhow!("no address for {url}"))?;
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.set_recv_buffer_size(4096)?;
        let mut stream = socket.connect(addr).await?;
        let head = format!(
            "GET {} HTTP/1.1\r\nhost: {addr}\r\naccept: text/event-stream\r\nmcp-session-id: {}\r\nmcp-protocol-version: {PROTOCOL}\r\n\r\n",
            url.path(),
            self.session
        );
        stream.write_all(head.as_bytes()).await?;
        let mut buf = [0u8; 1024];
        let n = stream.read(&mut buf).await?;
        let head = String::from_utf8_lossy(&buf[..n]);
        anyhow::ensure!(head.starts_with("HTTP/1.1 200"), "GET: {head}");
        Ok(stream)
    }

    /// POSTs a JSON-RPC message in this session.
    pub async fn post(&self, body: Value) -> anyhow::Result<reqwest::Response> {
        Ok(self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", PROTOCOL)
            .json(&body)
            .send()
            .await?)
    }

    /// Calls tool `name`, returning the response whose body streams the call.
    /// `progress` asks for progress notifications.
    pub async fn call(
        &mut self,
        name: &str,
        arguments: Value,
        progress: bool,
    ) -> anyhow::Result<(u64, reqwest::Response)> {
        let id = self.next_id;
        self.next_id += 1;
        let mut params = json!({ "name": name, "arguments": arguments });
        if progress {
            params["_meta"] = json!({ "progressToken": format!("p{id}") });
        }
        let response = self
            .post(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }))
            .await?;
        anyhow::ensure!(
            response.status() == 200,
            "tools/call: {}",
            response.status()
        );
        Ok((id, response))
    }

    /// GETs the session's stream, optionally resuming from `last_event_id`
    /// (raw bytes, so tests can send what a string cannot hold).
    pub async fn get(&self, last_event_id: Option<&[u8]>) -> anyhow::Result<reqwest::Response> {
        let mut request = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", PROTOCOL);
        if let Some(id) = last_event_id {
            request = request.header(
                "last-event-id",
                reqwest::header::HeaderValue::from_bytes(id)?,
            );
        }
        Ok(request.send().await?)
    }

    /// GETs with a textual cursor.
    pub async fn resume(&self, cursor: &str) -> anyhow::Result<reqwest::Response> {
        self.get(Some(cursor.as_bytes())).await
    }

    /// DELETEs the session.
    pub async fn delete(&self) -> anyhow::Result<reqwest::Response> {
        Ok(self
            .http
            .delete(&self.url)
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", PROTOCOL)
            .send()
            .await?)
    }
}
