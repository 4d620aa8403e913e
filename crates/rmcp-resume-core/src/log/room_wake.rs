//! D3 of issue #43: the producer's [`Room`] is told outside the log's lock.
//!
//! The log's own rule (see [`StreamLog::wake`]) is that no waker runs while
//! its lock is held: a waker may lock the log again (an executor that polls
//! in `wake`, or the last handle to a task owning a reader of this log).
//! The producer's waker, registered through [`Room::made`], is such a waker
//! too. Each test registers one that, when woken, tries the log's lock and
//! counts the times it found it held; a re-locking waker would deadlock
//! there, so a count above zero is the deadlock seen without hanging.

use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::task::{Context, Wake, Waker};

use futures::{FutureExt, StreamExt};

use super::*;

/// The producer's waker: it looks at the log's lock when woken.
#[derive(Default)]
struct Producer {
    log: Mutex<Option<Arc<StreamLog<u64>>>>,
    woken: AtomicUsize,
    under_lock: AtomicUsize,
}

impl Wake for Producer {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.fetch_add(1, Ordering::SeqCst);
        let log = self.log.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(log) = log
            && matches!(log.state.try_lock(), Err(TryLockError::WouldBlock))
        {
            self.under_lock.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A starved session's log with a primary (reader 1) that holds one unread
/// event, and the producer parked on the log's room.
fn starved() -> (Arc<StreamLog<u64>>, LogReader<u64>, Room) {
    let room = Room::default();
    let budget = Budget::new(100, None);
    let log = StreamLog::with_limits(
        StreamId::Standalone,
        1,
        Window::events(8),
        2,
        room.clone(),
        budget.clone(),
    );
    assert_eq!(log.attach(1), Some(1));
    log.append(1, None, 60);
    budget.set_starved(true);
    let reader = LogReader::new(log.clone(), 1);
    (log, reader, room)
}

/// Parks a producer on `room` (as the session's owner does) and runs
/// `change`; returns (times woken, times woken under the log's lock).
fn producer_woken_by(
    log: &Arc<StreamLog<u64>>,
    room: &Room,
    change: impl FnOnce(),
) -> (usize, usize) {
    let producer = Arc::new(Producer::default());
    *producer.log.lock().unwrap_or_else(|p| p.into_inner()) = Some(log.clone());
    let waker = Waker::from(producer.clone());
    let mut made = pin!(room.made());
    assert!(
        made.as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending(),
        "no stale permit"
    );
    change();
    (
        producer.woken.load(Ordering::SeqCst),
        producer.under_lock.load(Ordering::SeqCst),
    )
}

#[test]
fn a_read_tells_the_producer_outside_the_lock() {
    let (log, mut reader, room) = starved();
    let (woken, under_lock) = producer_woken_by(&log, &room, || {
        assert_eq!(
            reader.next().now_or_never().flatten().map(|l| l.event),
            Some(1)
        );
    });
    assert_eq!(woken, 1, "the read made room");
    assert_eq!(under_lock, 0, "the producer was woken under the log's lock");
}

#[test]
fn a_new_primary_tells_the_producer_outside_the_lock() {
    let (log, _reader, room) = starved();
    let (woken, under_lock) = producer_woken_by(&log, &room, || log.attach_primary(2, 1));
    assert_eq!(
        woken, 1,
        "the replaced primary may have held the message back"
    );
    assert_eq!(under_lock, 0, "the producer was woken under the log's lock");
}

#[test]
fn a_detach_tells_the_producer_outside_the_lock() {
    let (log, reader, room) = starved();
    let (woken, under_lock) = producer_woken_by(&log, &room, || drop(reader));
    assert_eq!(woken, 1, "the gone reader held the message back");
    assert_eq!(under_lock, 0, "the producer was woken under the log's lock");
}
