//! The SSE response body, and the frames and bodies the fork adds to the wire.
//!
//! - [`SseWire`] writes every frame that is ready together as one chunk, and a
//!   keep-alive comment (`:\n\n`) on each idle interval.
//! - [`notice_frame`] is the first frame of every resumed stream.
//! - [`cursor_error_body`] is the JSON-RPC error body of a refused resume.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::ReadyChunks;
use futures::{Stream, StreamExt};
use sse_stream::Sse;
use tokio::time::{Instant, Sleep};

use crate::resumption::{REPLAY_NOTICE_EVENT, ReplayNotice};

#[cfg(test)]
mod tests;

/// Most events written in one body frame.
pub const READY_BATCH: usize = 256;

/// JSON-RPC's "Invalid Request" error code, used for refused cursors.
pub const INVALID_REQUEST: i64 = -32600;

/// The keep-alive comment.
pub const KEEP_ALIVE: &[u8] = b":\n\n";

type Frames = Pin<Box<dyn Stream<Item = Bytes> + Send + Sync>>;

/// An SSE response body.
///
/// Every frame that is ready together is written as one chunk, so a replay
/// reaches the socket in one piece. (One chunk per event lets hyper flush
/// mid-replay, in rounds of 16 frames, and Nagle's algorithm then holds the
/// remainder for a delayed ACK: about 40 ms.) While idle, a keep-alive
/// comment goes out every interval.
pub struct SseWire {
    events: ReadyChunks<Frames>,
    keep_alive: Option<(Duration, Pin<Box<Sleep>>)>,
}

impl SseWire {
    /// Encodes `frames`, with a keep-alive comment after each idle
    /// `keep_alive` when given.
    pub fn new(
        frames: impl Stream<Item = Sse> + Send + Sync + 'static,
        keep_alive: Option<Duration>,
    ) -> Self {
        Self::from_bytes(frames.map(Bytes::from), keep_alive)
    }

    fn from_bytes(
        frames: impl Stream<Item = Bytes> + Send + Sync + 'static,
        keep_alive: Option<Duration>,
    ) -> Self {
        let frames: Frames = Box::pin(frames);
        Self {
            events: frames.ready_chunks(READY_BATCH),
            keep_alive: keep_alive.map(|every| (every, Box::pin(tokio::time::sleep(every)))),
        }
    }
}

impl std::fmt::Debug for SseWire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseWire")
            .field(
                "keep_alive",
                &self.keep_alive.as_ref().map(|(every, _)| every),
            )
            .finish_non_exhaustive()
    }
}

impl Stream for SseWire {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = &mut *self;
        match this.events.poll_next_unpin(cx) {
            Poll::Ready(Some(batch)) => {
                if let Some((every, sleep)) = this.keep_alive.as_mut() {
                    sleep.as_mut().reset(Instant::now() + *every);
                }
                Poll::Ready(Some(batch.concat().into()))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let Some((every, sleep)) = this.keep_alive.as_mut() else {
                    return Poll::Pending;
                };
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                sleep.as_mut().reset(Instant::now() + *every);
                Poll::Ready(Some(Bytes::from_static(KEEP_ALIVE)))
            }
        }
    }
}

/// The notice as an SSE frame: event type [`REPLAY_NOTICE_EVENT`], no `id`,
/// so it never moves a client's cursor and peers that do not know it ignore it.
pub fn notice_frame(notice: &ReplayNotice) -> Sse {
    Sse {
        event: Some(REPLAY_NOTICE_EVENT.to_owned()),
        data: Some(notice.to_json()),
        id: None,
        retry: None,
    }
}

/// The body of a `400` for a cursor the server will not resume: a JSON-RPC
/// error with no request id (a `GET` has none), naming the cursor and the
/// floor in `data`.
pub fn cursor_error_body(message: &str, cursor: &str, floor: Option<&str>) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": INVALID_REQUEST,
            "message": message,
            "data": { "cursor": cursor, "floor": floor },
        },
    })
    .to_string()
}
