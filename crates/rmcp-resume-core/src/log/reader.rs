//! One connection's view of a log, as a stream.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;

use super::{ReaderId, Step, StreamLog};

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
    done: bool,
}

impl<E: Clone> LogReader<E> {
    /// Reads `log` as reader `id`, which must already be attached.
    pub fn new(log: Arc<StreamLog<E>>, id: ReaderId) -> Self {
        Self {
            log,
            id,
            done: false,
        }
    }
}

impl<E: Clone> Stream for LogReader<E> {
    type Item = Logged<E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        while !this.done {
            // Parked in the same locked step that found nothing to do, so a
            // change made after it wakes this reader.
            match this.log.step_or_park(this.id, cx.waker()) {
                Step::Send(event) => return Poll::Ready(Some(event)),
                Step::Done => this.done = true,
                Step::Wait => return Poll::Pending,
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
