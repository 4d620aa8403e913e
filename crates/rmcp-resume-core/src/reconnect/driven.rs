//! [`Driven`]: a stream whose items one long-lived future produces.
//!
//! `futures::stream::unfold` moves its state out of itself and back for
//! every item, into a fresh future and out of it again. The reconnect
//! machine is several hundred bytes, and a request stream yields two or
//! three items, so that was a dozen copies of it per call, measured at about
//! 1.5 k instructions per call on the client. Here the machine lives in one
//! future for the stream's whole life, pinned in place, and hands each item
//! over through a slot the two share.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::Stream;
use sse_stream::Sse;

/// Where the driver leaves an item for the stream to return.
pub(super) trait Slot<T>: Sized {
    /// The driver's end and the stream's end.
    fn pair() -> (Self, Self);
    /// Leaves `item` for the stream.
    fn put(&self, item: T);
    /// What the driver left, if anything.
    fn take(&self) -> Option<T>;

    /// Hands `item` to the stream; the future ends once the stream has
    /// taken it.
    fn give(&self, item: T) -> Handover {
        self.put(item);
        Handover { yielded: false }
    }
}

/// A slot in one allocation the two ends share, for any item type.
pub(super) struct Shared<T>(Arc<Mutex<Option<T>>>);

impl<T> Slot<T> for Shared<T> {
    fn pair() -> (Self, Self) {
        let shared = Arc::new(Mutex::new(None));
        (Self(shared.clone()), Self(shared))
    }

    fn put(&self, item: T) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(item);
    }

    fn take(&self) -> Option<T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// A slot in a thread-local cell, for SSE frames: a request stream
/// allocates nothing for it.
///
/// The driver puts a frame and returns `Pending` at once ([`Handover`]);
/// the stream takes the frame in the same `poll_next`, on the same thread,
/// before any other code runs. A stream polled inside another's driver
/// takes its frame before that driver goes on, so the cell holds at most
/// one frame at a time, and only within one `poll_next`.
pub(super) struct Local;

thread_local! {
    static FRAME: RefCell<Option<Sse>> = const { RefCell::new(None) };
}

impl Slot<Sse> for Local {
    fn pair() -> (Self, Self) {
        (Self, Self)
    }

    fn put(&self, item: Sse) {
        FRAME.with(|cell| {
            let left = cell.replace(Some(item));
            debug_assert!(left.is_none(), "a frame was left in the slot");
        });
    }

    fn take(&self) -> Option<Sse> {
        FRAME.with(RefCell::take)
    }
}

/// Pending once, without a wakeup: the stream returns the item it finds in
/// the slot, and its caller polls again when it wants the next one.
pub(super) struct Handover {
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
    pub(super) struct Driven<T, F, S = Shared<T>> {
        slot: S,
        item: PhantomData<fn() -> T>,
        #[pin]
        driver: F,
        done: bool,
    }
}

impl<T, F: Future<Output = ()>, S: Slot<T>> Driven<T, F, S> {
    /// The stream of what `drive` gives the slot it is handed.
    pub(super) fn new(drive: impl FnOnce(S) -> F) -> Self {
        let (mine, theirs) = S::pair();
        Self {
            slot: mine,
            item: PhantomData,
            driver: drive(theirs),
            done: false,
        }
    }
}

impl<T, F: Future<Output = ()>, S: Slot<T>> Stream for Driven<T, F, S> {
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

    use super::{Driven, Local, Shared, Slot};

    #[tokio::test]
    async fn items_come_in_order_and_the_stream_ends_with_its_driver() {
        let stream = Driven::new(|slot: Shared<u32>| async move {
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
        let mut stream = std::pin::pin!(Driven::<u32, _>::new(|_slot: Shared<u32>| async {}));
        assert_eq!(stream.next().await, None);
        assert_eq!(stream.next().await, None);
    }

    #[tokio::test]
    async fn the_driver_runs_no_further_than_the_item_asked_for() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicU32, Ordering};
        let made = Arc::new(AtomicU32::new(0));
        let counted = made.clone();
        let mut stream = std::pin::pin!(Driven::new(move |slot: Shared<u32>| async move {
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

    fn frame(id: &str) -> sse_stream::Sse {
        sse_stream::Sse {
            event: None,
            data: Some("{}".to_owned()),
            id: Some(id.to_owned()),
            retry: None,
        }
    }

    /// Two frame streams, one polled inside the other's driver, each get
    /// their own frames in order through the one thread-local cell.
    #[tokio::test]
    async fn nested_frame_streams_keep_their_own_frames() {
        let outer = Driven::new(|slot: Local| async move {
            let mut inner = std::pin::pin!(Driven::new(|slot: Local| async move {
                for i in 0..3 {
                    tokio::task::yield_now().await;
                    slot.give(frame(&format!("in{i}"))).await;
                }
            }));
            while let Some(inner_frame) = inner.next().await {
                let id = inner_frame.id.unwrap_or_default();
                slot.give(frame(&format!("out-{id}"))).await;
            }
        });
        let ids: Vec<String> = outer.filter_map(|f| async move { f.id }).collect().await;
        assert_eq!(ids, ["out-in0", "out-in1", "out-in2"]);
        assert!(Local.take().is_none(), "nothing left in the cell");
    }
}
