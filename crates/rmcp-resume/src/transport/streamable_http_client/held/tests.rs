use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

/// A stream that never yields, and says when it is dropped.
struct Watched(Arc<AtomicBool>);

impl Stream for Watched {
    type Item = Result<Sse, SseError>;

    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Pending
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn watched() -> (Frames, Arc<AtomicBool>) {
    let dropped = Arc::new(AtomicBool::new(false));
    (Watched(dropped.clone()).boxed(), dropped)
}

#[tokio::test(start_paused = true)]
async fn a_held_stream_the_worker_drops_stays_open_until_its_cancellation_is_sent() {
    let kept = Arc::new(Kept::default());
    let request = RequestId::Number(3);
    let (frames, dropped) = watched();
    drop(Held::new(frames, Some((request.clone(), kept.clone()))));
    assert!(
        !dropped.load(Ordering::SeqCst),
        "closed before its cancellation"
    );
    assert!(kept.holds(&request));
    kept.release(&RequestId::Number(4));
    assert!(!dropped.load(Ordering::SeqCst), "another request's release");
    kept.release(&request);
    assert!(dropped.load(Ordering::SeqCst));
    assert!(!kept.holds(&request));
}

#[tokio::test(start_paused = true)]
async fn a_kept_stream_closes_after_the_limit_without_a_cancellation() {
    let kept = Arc::new(Kept::default());
    let (frames, dropped) = watched();
    drop(Held::new(
        frames,
        Some((RequestId::Number(3), kept.clone())),
    ));
    tokio::time::sleep(KEEP_LIMIT - Duration::from_millis(1)).await;
    assert!(!dropped.load(Ordering::SeqCst));
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_stream_handed_on_or_not_to_be_kept_closes_when_dropped() {
    let kept = Arc::new(Kept::default());
    let (frames, dropped) = watched();
    let handed = Held::new(frames, Some((RequestId::Number(3), kept.clone()))).into_frames();
    drop(handed);
    assert!(dropped.load(Ordering::SeqCst));
    assert!(!kept.holds(&RequestId::Number(3)));

    let (frames, dropped) = watched();
    drop(Held::new(frames, None));
    assert!(
        dropped.load(Ordering::SeqCst),
        "a 2026-07-28 stream closes at once"
    );
}

/// A stream that ended while held has no connection left to keep.
#[tokio::test]
async fn a_held_stream_that_ended_is_not_kept() {
    let kept = Arc::new(Kept::default());
    let mut held = Held::new(
        futures::stream::empty().boxed(),
        Some((RequestId::Number(3), kept.clone())),
    );
    assert!(held.next().await.is_none());
    drop(held);
    assert!(!kept.holds(&RequestId::Number(3)));
}
