//! A request stream that a cancellation overtook while the guard waited for
//! its answer.
//!
//! Under the 2025 revisions upstream's worker keeps a cancelled request's
//! stream open, unread, until its `notifications/cancelled` has been sent:
//! a server's adapter may find the call by its open stream, and refuse a
//! cancellation it cannot match. The worker drops a `POST` it is still
//! waiting on instead, so while the guard waits for an answer there
//! ([`answer_within`](rmcp_resume_core::reconnect::answer_within)), the
//! stream is [`Held`]: dropped before it is handed on, it goes to [`Kept`]
//! until the cancellation's `POST` is done, or [`KEEP_LIMIT`] passes. The
//! guard cannot tell why the worker dropped it: a session's recovery timing
//! out, or the transport closing, also keeps an open stream that long,
//! where upstream closes it at once; a stream that has ended is not kept.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use sse_stream::Sse;

use super::SseError;
use crate::model::RequestId;

/// A request's stream of frames, as the worker takes it.
pub(super) type Frames = BoxStream<'static, Result<Sse, SseError>>;

/// The longest a stream is kept: a cancellation not sent by then will not
/// be (upstream's control requests time out after 5 s by default).
pub(super) const KEEP_LIMIT: Duration = Duration::from_secs(5);

/// Streams kept, unread, for cancellations not yet sent, by request.
#[derive(Default)]
pub(super) struct Kept(Mutex<HashMap<RequestId, Frames>>);

impl Kept {
    fn keep(self: Arc<Self>, request: RequestId, frames: Frames) {
        let replaced = self.map().insert(request.clone(), frames);
        drop(replaced);
        // Without a runtime there is no timer: the stream goes with its
        // cancellation, or with the guard.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let kept = Arc::downgrade(&self);
            runtime.spawn(async move {
                tokio::time::sleep(KEEP_LIMIT).await;
                if let Some(kept) = kept.upgrade() {
                    kept.release(&request);
                }
            });
        }
    }

    /// Closes the stream kept for `request`, if any: its cancellation has
    /// been sent.
    pub(super) fn release(&self, request: &RequestId) {
        let released = self.map().remove(request);
        drop(released);
    }

    /// The map; a panic elsewhere while it was locked leaves it usable.
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Frames>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[cfg(test)]
    pub(super) fn holds(&self, request: &RequestId) -> bool {
        self.map().contains_key(request)
    }
}

/// A request stream while the guard waits for its answer: kept on drop
/// until [`into_frames`](Self::into_frames) hands it on.
pub(super) struct Held {
    frames: Option<Frames>,
    /// Where the stream goes if dropped while held; `None` under a revision
    /// whose cancellation is the stream's close (2026-07-28).
    keep: Option<(RequestId, Arc<Kept>)>,
}

impl Held {
    pub(super) fn new(frames: Frames, keep: Option<(RequestId, Arc<Kept>)>) -> Self {
        Self {
            frames: Some(frames),
            keep,
        }
    }

    /// The stream, handed on: no longer kept when dropped.
    pub(super) fn into_frames(mut self) -> Frames {
        self.keep = None;
        self.frames
            .take()
            .unwrap_or_else(|| futures::stream::empty().boxed())
    }
}

impl Stream for Held {
    type Item = Result<Sse, SseError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(frames) = self.frames.as_mut() else {
            return Poll::Ready(None);
        };
        let item = std::task::ready!(frames.poll_next_unpin(cx));
        if item.is_none() {
            // Ended: nothing left to keep open.
            self.frames = None;
        }
        Poll::Ready(item)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let (Some(frames), Some((request, kept))) = (self.frames.take(), self.keep.take()) {
            kept.keep(request, frames);
        }
    }
}

#[cfg(test)]
mod tests;
