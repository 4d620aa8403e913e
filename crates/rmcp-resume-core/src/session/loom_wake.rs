//! The owner's byte wait against a reader on another thread, under loom
//! (issue #43): every interleaving of the two, not the one a test happens
//! to schedule.
//!
//! Build with `RUSTFLAGS="--cfg rmcp_resume_loom"` (docs/testing.md). The
//! promise: when the owner decides that a message waits for its own
//! stream's reader, and that reader reads meanwhile, the owner is woken.
//! The decision marks the session starved and then looks at the reader's
//! unread bytes; a read either comes before the look (nothing unread: the
//! message is admitted) or sees the mark (and tells [`Room`]). Look first
//! and mark after, and loom finds the read that falls in between: the
//! message waits with nothing to wake the owner.

use futures::{FutureExt, StreamExt};

use super::*;
use crate::log::Budget;

type Plain = Session<u64, u64>;

fn message(serial: u64, weight: usize) -> Pending<u64, u64> {
    Pending {
        event: serial,
        id: None,
        weight,
        completes: false,
        ticket: serial,
    }
}

#[test]
fn a_read_racing_a_byte_wait_always_wakes_the_owner() {
    loom::model(|| {
        let limits = Limits::new(Duration::from_secs(10), Duration::from_secs(60), 8, 2);
        let mut s: Plain = Session::new(1, Window::events(64), Budget::new(100, None), limits);
        let (mut reader, _) = s.attach_standalone();
        assert!(s.deliver(StreamId::Standalone, message(1, 60)).is_some());
        let peer = loom::thread::spawn(move || {
            let read = reader.next().now_or_never().flatten().map(|l| l.event);
            (read, reader)
        });
        // 60 unread bytes of 100: a second 60 fits only once they are read.
        let waits = s.deliver(StreamId::Standalone, message(2, 60)).is_none();
        let (read, reader) = match peer.join() {
            Ok(joined) => joined,
            Err(_) => panic!("the reader's thread panicked"),
        };
        assert_eq!(read, Some(1), "the reader reads what it was handed");
        if waits {
            assert!(
                s.room().made().now_or_never().is_some(),
                "message 2 waits for a reader that has read everything, \
                 and nothing wakes the owner"
            );
        }
        drop(reader);
    });
}
