//! One connection's view of a log, as a stream.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use tokio::sync::watch;
use tokio_stream::wrappers::WatchStream;

use super::{ReaderId, Step, StreamLog};

/// Wakes the readers of one log when it changes: an event, an end, a
/// reader promoted or ended. Readers of other streams sleep on.
#[derive(Debug, Clone)]
pub(crate) struct Bell(Arc<watch::Sender<u64>>);

impl Default for Bell {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(0)))
    }
}

impl Bell {
    /// Tells the log's readers to look at it again.
    pub(crate) fn ring(&self) {
        self.0.send_modify(|v| *v = v.wrapping_add(1));
    }
}

/// An event as a reader receives it: the stored event and its wire id.
#[derive(Debug, Clone)]
pub struct Logged<E> {
    /// The event's index on its stream.
    pub index: u64,
    /// The event's id on the wire.
    pub id: String,
    /// The event.
    pub event: E,
}

/// One connection's view of a log.
///
/// Polling takes whatever the log already holds for this reader, so events
/// that are ready together reach the socket together: there is no task or
/// channel hop between the log and the HTTP body. Dropping the reader
/// detaches it (promoting a shadow if it was the primary).
pub struct LogReader<E: Clone> {
    log: Arc<StreamLog<E>>,
    id: ReaderId,
    changes: WatchStream<u64>,
    done: bool,
}

impl<E: Clone> LogReader<E> {
    /// Reads `log` as reader `id`, which must already be attached.
    pub fn new(log: Arc<StreamLog<E>>, id: ReaderId) -> Self {
        // Subscribed before the first poll reads the log, so no change
        // between the two can be missed.
        let changes = WatchStream::from_changes(log.bell.0.subscribe());
        Self {
            log,
            id,
            changes,
            done: false,
        }
    }
}

impl<E: Clone> Stream for LogReader<E> {
    type Item = Logged<E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        while !this.done {
            match this.log.step(this.id) {
                Step::Send(event) => return Poll::Ready(Some(event)),
                Step::Done => this.done = true,
                Step::Wait => match this.changes.poll_next_unpin(cx) {
                    Poll::Ready(Some(_)) => {}
                    Poll::Ready(None) => this.done = true,
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
        Poll::Ready(None)
    }
}

impl<E: Clone> Drop for LogReader<E> {
    fn drop(&mut self) {
        self.log.detach(self.id);
    }
}
