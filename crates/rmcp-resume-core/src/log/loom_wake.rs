//! A reader parking against the owner's changes on another thread, under
//! loom (issue #43): park, ring, a replaced waker, a promotion.
//!
//! Build with `RUSTFLAGS="--cfg rmcp_resume_loom"` (docs/testing.md). The
//! promise: a reader that found nothing to do is woken by the next change
//! it must see, whichever thread makes it and whenever. The reader parks
//! in the same locked step that found nothing; park after the lock is
//! released, and loom finds the append that falls in between.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Wake, Waker};

use futures::Stream;

use super::*;

/// Counts its wakes (a std counter: loom need not see it, every wake
/// runs on one of the model's threads before the join).
#[derive(Default)]
struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Polls `reader` once with `wakes`' waker: whether it yielded an event.
fn poll_once(reader: &mut LogReader<u64>, wakes: &Arc<Wakes>) -> bool {
    let waker = Waker::from(wakes.clone());
    let mut cx = Context::from_waker(&waker);
    matches!(
        std::pin::Pin::new(reader).poll_next(&mut cx),
        std::task::Poll::Ready(Some(_))
    )
}

/// The log, a primary (reader 1) and a shadow (reader 2) on it.
fn standalone() -> (Arc<StreamLog<u64>>, LogReader<u64>, LogReader<u64>) {
    let log = StreamLog::new(StreamId::Standalone, 1, 8, 2, Room::default());
    assert_eq!(log.attach(1), Some(1));
    assert_eq!(log.attach(2), None);
    let primary = LogReader::new(log.clone(), 1);
    let shadow = LogReader::new(log.clone(), 2);
    (log, primary, shadow)
}

#[test]
fn an_append_on_another_thread_wakes_a_parking_reader() {
    loom::model(|| {
        let (log, mut primary, _shadow) = standalone();
        let owner = {
            let log = log.clone();
            loom::thread::spawn(move || log.append(1, None, 0))
        };
        let wakes = Arc::new(Wakes::default());
        let read = poll_once(&mut primary, &wakes);
        if owner.join().is_err() {
            panic!("the owner's thread panicked");
        }
        assert!(
            read || wakes.0.load(Ordering::SeqCst) == 1,
            "the reader parked and the append did not wake it"
        );
    });
}

#[test]
fn a_waker_replaced_on_another_thread_is_the_one_woken() {
    loom::model(|| {
        let (log, mut primary, _shadow) = standalone();
        let first = Arc::new(Wakes::default());
        assert!(!poll_once(&mut primary, &first), "nothing to read yet");
        let owner = {
            let log = log.clone();
            loom::thread::spawn(move || log.append(1, None, 0))
        };
        // Polled again by another task (a new waker) while the owner
        // appends.
        let second = Arc::new(Wakes::default());
        let read = poll_once(&mut primary, &second);
        if owner.join().is_err() {
            panic!("the owner's thread panicked");
        }
        let woken = first.0.load(Ordering::SeqCst) + second.0.load(Ordering::SeqCst);
        assert!(
            read || second.0.load(Ordering::SeqCst) == 1,
            "the reader parked with its new waker and was not woken (wakes {woken})"
        );
    });
}

#[test]
fn a_shadow_parked_on_another_thread_wakes_when_promoted() {
    loom::model(|| {
        let (log, primary, mut shadow) = standalone();
        log.append(1, None, 0);
        let gone = loom::thread::spawn(move || drop(primary));
        let wakes = Arc::new(Wakes::default());
        let read = poll_once(&mut shadow, &wakes);
        if gone.join().is_err() {
            panic!("the primary's thread panicked");
        }
        assert!(
            read || wakes.0.load(Ordering::SeqCst) >= 1,
            "the shadow parked, was promoted with an event to send, and was not woken"
        );
        drop(log);
    });
}
