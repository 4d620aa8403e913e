//! SSE frames read off a response body exactly as they arrived: no MCP
//! client in between, so what a server (or a proxy) sent is what is judged.

use std::time::{Duration, Instant};

use bytes::BytesMut;
use futures::StreamExt;
use serde_json::Value;

/// How many raw bytes of a body a reader keeps as evidence.
const FIRST_BYTES: usize = 160;

/// One SSE frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frame {
    /// `event:` (absent means `message`).
    pub event: Option<String>,
    /// `id:`.
    pub id: Option<String>,
    /// `data:` lines joined by `\n`.
    pub data: String,
    /// `retry:`, in milliseconds.
    pub retry: Option<u64>,
}

impl Frame {
    /// The data as JSON, if it is.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }

    /// A priming event: an id and no data.
    pub fn is_priming(&self) -> bool {
        self.id.is_some() && self.data.trim().is_empty()
    }

    /// The JSON-RPC response to request `id`, if this frame is it.
    pub fn answers(&self, id: &Value) -> bool {
        self.json().is_some_and(|j| {
            &j["id"] == id && (j.get("result").is_some() || j.get("error").is_some())
        })
    }
}

/// Parses one SSE block (the lines between blank lines); `None` for a block
/// of comments only.
pub fn parse_block(block: &str) -> Option<Frame> {
    let mut frame = Frame::default();
    let mut fields = 0;
    let mut data: Vec<&str> = Vec::new();
    for line in block.lines() {
        if line.starts_with(':') {
            continue;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        fields += 1;
        match name {
            "event" => frame.event = Some(value.to_owned()),
            "id" => frame.id = Some(value.to_owned()),
            "data" => data.push(value),
            "retry" => frame.retry = value.parse().ok(),
            _ => fields -= 1,
        }
    }
    frame.data = data.join("\n");
    (fields > 0).then_some(frame)
}

/// Appends `bytes` to `out` with every line ending (`\r\n`, `\r` and
/// `\n`, all three allowed by SSE) made `\n`. `pending_cr` carries a `\r`
/// that ended the previous chunk, whose `\n` may start this one.
pub fn normalize(pending_cr: &mut bool, bytes: &[u8], out: &mut BytesMut) {
    let mut rest = bytes;
    if std::mem::take(pending_cr) {
        out.extend_from_slice(b"\n");
        if let Some(b'\n') = rest.first() {
            rest = &rest[1..];
        }
    }
    let mut at = 0;
    while at < rest.len() {
        match rest[at] {
            b'\r' if at + 1 == rest.len() => *pending_cr = true,
            b'\r' => {
                out.extend_from_slice(b"\n");
                if rest[at + 1] == b'\n' {
                    at += 1;
                }
            }
            byte => out.extend_from_slice(&[byte]),
        }
        at += 1;
    }
}

/// How a read of the next frame ended without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    /// The body ended (the server, or something in the path, closed it).
    Ended,
    /// Nothing but keep-alive comments (or nothing at all) for the limit.
    Silent,
}

/// Reads SSE frames from a response body, noting every byte's arrival so
/// that keep-alive comments count as life even though they are not frames.
pub struct FrameReader {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: BytesMut,
    done: bool,
    first: Vec<u8>,
    /// A chunk ended in `\r`: the next may start with the `\n` of a CRLF.
    pending_cr: bool,
    opened: Instant,
    last_bytes: Instant,
    longest_silence: Duration,
    comments: usize,
}

impl FrameReader {
    /// Wraps a response whose body is an event stream.
    pub fn new(response: reqwest::Response) -> Self {
        let now = Instant::now();
        Self {
            body: response.bytes_stream().boxed(),
            buf: BytesMut::new(),
            done: false,
            first: Vec::new(),
            pending_cr: false,
            opened: now,
            last_bytes: now,
            longest_silence: Duration::ZERO,
            comments: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        normalize(&mut self.pending_cr, bytes, &mut self.buf);
    }

    fn take_block(&mut self) -> Option<String> {
        let text = std::str::from_utf8(&self.buf).ok()?;
        let end = text.find("\n\n")?;
        let block = text[..end].to_owned();
        let _ = self.buf.split_to(end + 2);
        Some(block)
    }

    /// The next frame, or why none came within `limit`.
    pub async fn next_within(&mut self, limit: Duration) -> Result<Frame, Pause> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            while let Some(block) = self.take_block() {
                match parse_block(&block) {
                    Some(frame) => return Ok(frame),
                    None => self.comments += 1,
                }
            }
            if self.done {
                return Err(Pause::Ended);
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Err(_) => return Err(Pause::Silent),
                Ok(Some(Ok(bytes))) => {
                    let now = Instant::now();
                    self.longest_silence = self.longest_silence.max(now - self.last_bytes);
                    self.last_bytes = now;
                    let room = FIRST_BYTES.saturating_sub(self.first.len());
                    self.first
                        .extend_from_slice(&bytes[..room.min(bytes.len())]);
                    self.push(&bytes);
                }
                // A reset connection ends the stream as far as a reader can tell.
                Ok(None) | Ok(Some(Err(_))) => {
                    self.push(b"");
                    self.done = true;
                }
            }
        }
    }

    /// Every frame until the body ends or stays silent for `quiet`, at most
    /// `max` frames; and how the reading stopped.
    pub async fn drain(&mut self, quiet: Duration, max: usize) -> (Vec<Frame>, Pause) {
        let mut frames = Vec::new();
        while frames.len() < max {
            match self.next_within(quiet).await {
                Ok(frame) => frames.push(frame),
                Err(pause) => return (frames, pause),
            }
        }
        (frames, Pause::Silent)
    }

    /// The body's first bytes, as text with control characters escaped.
    pub fn first_bytes(&self) -> String {
        String::from_utf8_lossy(&self.first)
            .escape_debug()
            .to_string()
    }

    /// How long since the body was opened.
    pub fn age(&self) -> Duration {
        self.opened.elapsed()
    }

    /// The longest time without bytes so far, the current silence included.
    pub fn longest_silence(&self) -> Duration {
        self.longest_silence.max(self.last_bytes.elapsed())
    }

    /// Comment-only blocks (keep-alives) seen so far.
    pub fn comments(&self) -> usize {
        self.comments
    }
}

#[cfg(test)]
mod tests {
    use super::{normalize, parse_block};

    #[test]
    fn every_line_ending_becomes_lf_across_chunk_splits() {
        let text = b"id: 1\r\ndata: a\r\n\r\nid: 2\rdata: b\r\r";
        for split in 0..=text.len() {
            let mut out = bytes::BytesMut::new();
            let mut pending = false;
            normalize(&mut pending, &text[..split], &mut out);
            normalize(&mut pending, &text[split..], &mut out);
            normalize(&mut pending, b"", &mut out);
            assert_eq!(
                &out[..],
                b"id: 1\ndata: a\n\nid: 2\ndata: b\n\n",
                "split at {split}"
            );
        }
    }

    #[test]
    fn a_block_of_comments_is_no_frame() {
        assert_eq!(parse_block(": keep-alive"), None);
    }

    #[test]
    fn fields_are_read_and_data_lines_joined() {
        let frame = parse_block("id: 4/2\nevent: message\nretry: 300\ndata: a\ndata: b");
        let frame = frame.expect("a frame");
        assert_eq!(frame.id.as_deref(), Some("4/2"));
        assert_eq!(frame.retry, Some(300));
        assert_eq!(frame.data, "a\nb");
        assert!(!frame.is_priming());
        assert!(parse_block("id: 0\ndata:").is_some_and(|f| f.is_priming()));
    }
}
