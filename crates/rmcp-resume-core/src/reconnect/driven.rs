//! [`Driven`]: a stream whose items one long-lived future produces.
//!
//! `futures::stream::unfold` moves its state out of itself and back for
//! every item, into a fresh future and out of it again. The reconnect
//! machine is several hundred bytes, and a request stream yields two or
//! three items, so that was a dozen copies of it per call, measured at about
//! 1.5 k instructions per call on the client. Here the machine lives in one
//! future for the stream's whole life, pinned in place, and hands each item
//! over through a slot the two share.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::Stream;

/// Where the future leaves an item for the stream to return.
pub(super) struct Slot<T>(Arc<Mutex<Option<T>>>);

impl<T> Slot<T> {
    fn new() -> (Self, Self) {
        let shared = Arc::new(Mutex::new(None));
        (Self(shared.clone()), Self(shared))
    }

    fn take(&self) -> Option<T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// Hands `item` to the stream, and returns once the stream has taken it.
    pub(super) async fn give(&self, item: T) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(item);
        Handover { yielded: false }.await;
    }
}

/// Pending once, without a wakeup: the stream returns the item it finds in
/// the slot, and its caller polls again when it wants the next one.
struct Handover {
    yielded: bool,
}

impl Future for Handover {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        Poll::Pending
    }
}

pin_project_lite::pin_project! {
    /// The items `driver` gives its [`Slot`], in order; the stream ends when
    /// `driver` does.
    pub(super) struct Driven<T, F> {
        slot: Slot<T>,
        #[pin]
        driver: F,
        done: bool,
    }
}

impl<T, F: Future<Output = ()>> Driven<T, F> {
    /// The stream of what `drive` gives the slot it is handed.
    pub(super) fn new(drive: impl FnOnce(Slot<T>) -> F) -> Self {
        let (mine, theirs) = Slot::new();
        Self {
            slot: mine,
            driver: drive(theirs),
            done: false,
        }
    }
}

impl<T, F: Future<Output = ()>> Stream for Driven<T, F> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        match this.driver.poll(cx) {
            // The driver never ends with an item still in the slot (`give`
            // waits for it to be taken), but if it did, the item is not lost.
            Poll::Ready(()) => {
                *this.done = true;
                Poll::Ready(this.slot.take())
            }
            Poll::Pending => match this.slot.take() {
                Some(item) => Poll::Ready(Some(item)),
                None => Poll::Pending,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::Driven;

    #[tokio::test]
    async fn items_come_in_order_and_the_stream_ends_with_its_driver() {
        let stream = Driven::new(|slot| async move {
            for i in 0..5u32 {
                // A real wait between items, as a read from the network is.
                tokio::task::yield_now().await;
                slot.give(i).await;
            }
        });
        let items: Vec<u32> = stream.collect().await;
        assert_eq!(items, vec![0, 1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn a_driver_that_gives_nothing_is_an_empty_stream_that_stays_ended() {
        let mut stream = std::pin::pin!(Driven::<u32, _>::new(|_slot| async {}));
        assert_eq!(stream.next().await, None);
        assert_eq!(stream.next().await, None);
    }

    #[tokio::test]
    async fn the_driver_runs_no_further_than_the_item_asked_for() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicU32, Ordering};
        let made = Arc::new(AtomicU32::new(0));
        let counted = made.clone();
        let mut stream = std::pin::pin!(Driven::new(move |slot| async move {
            for i in 0..3u32 {
                counted.fetch_add(1, Ordering::SeqCst);
                slot.give(i).await;
            }
        }));
        assert_eq!(stream.next().await, Some(0));
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert_eq!(stream.next().await, Some(1));
        assert_eq!(made.load(Ordering::SeqCst), 2);
    }
}
