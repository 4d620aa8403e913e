//! Unit tests of the session: the rows of the admission table, and the
//! regressions the model found.

use std::time::Duration;

use futures::{FutureExt, StreamExt};
use tokio::time::Instant;

use super::*;
use crate::log::Meter;

const STALL: Duration = Duration::from_secs(10);

type Plain = Session<u64, u64>;

fn session(window: Window, budget: Budget) -> Plain {
    Session::new(
        1,
        window,
        budget,
        Limits::new(STALL, Duration::from_secs(60), 8, 2),
    )
}

fn message(serial: u64, weight: usize) -> Pending<u64, u64> {
    Pending {
        event: serial,
        id: None,
        weight,
        completes: false,
        ticket: serial,
    }
}

fn admitted(admission: Option<Admission<u64>>) -> Option<u64> {
    match admission? {
        Admission::Admitted { ticket, .. } => Some(ticket),
        Admission::Gone { .. } => None,
    }
}

fn read(reader: &mut LogReader<u64>) -> Option<u64> {
    reader.next().now_or_never().flatten().map(|l| l.index)
}

#[test]
fn a_message_waits_only_for_its_own_streams_reader() {
    let mut s = session(Window::events(64), Budget::new(100, None));
    s.open_request(0, ()).unwrap();
    let _stalled = s.connect(StreamId::Request(0), 0).unwrap();
    let (_standalone, _) = s.attach_standalone();
    // Request 0's reader holds 90 unread bytes of the 100.
    assert_eq!(
        admitted(s.deliver(StreamId::Request(0), message(1, 90))),
        Some(1)
    );
    // Another stream is not held back by it: admitted over the line.
    assert_eq!(
        admitted(s.deliver(StreamId::Standalone, message(2, 30))),
        Some(2)
    );
    // Request 0's own next message waits for its reader.
    assert!(s.deliver(StreamId::Request(0), message(3, 30)).is_none());
    assert!(s.has_waiting());
    // The standalone reader now owes its 30 bytes, so its next one waits.
    assert!(s.deliver(StreamId::Standalone, message(4, 30)).is_none());
    let used = s.budget().session().used();
    assert!(
        used <= 100 + 30,
        "budget plus one message per stream: {used}"
    );
}

#[test]
fn over_the_process_budget_a_session_evicts_what_was_read_first() {
    let process = Meter::new(100);
    let mut s = session(
        Window::events(64),
        Budget::new(1_000, Some(process.clone())),
    );
    let (mut reader, _) = s.attach_standalone();
    for serial in 1..=4 {
        assert!(admitted(s.deliver(StreamId::Standalone, message(serial, 25))).is_some());
        assert_eq!(read(&mut reader), Some(serial));
    }
    // Everything read is evictable: a fifth message fits by evicting.
    assert_eq!(
        admitted(s.deliver(StreamId::Standalone, message(5, 25))),
        Some(5)
    );
    assert!(process.used() <= 100, "{}", process.used());
    assert_eq!(s.standalone().view().floor, 2);
}

#[tokio::test(start_paused = true)]
async fn a_wait_ends_within_the_stall_timeout_of_the_readers_last_progress() {
    let mut s = session(Window::events(2), Budget::unlimited());
    let (mut reader, _) = s.attach_standalone();
    for serial in 1..=2 {
        assert!(admitted(s.deliver(StreamId::Standalone, message(serial, 1))).is_some());
    }
    assert!(s.deliver(StreamId::Standalone, message(3, 1)).is_none());
    tokio::time::advance(Duration::from_secs(6)).await;
    // Progress restarts the clock.
    assert_eq!(read(&mut reader), Some(1));
    assert_eq!(admitted(s.flush().pop()), Some(3));
    assert!(s.deliver(StreamId::Standalone, message(4, 1)).is_none());
    let deadline = s.stall_deadline().unwrap();
    assert_eq!(deadline, Instant::now() + STALL);
    tokio::time::advance(STALL).await;
    let now = Instant::now();
    let admitted_now: Vec<_> = s.end_stalled(now).into_iter().map(Some).collect();
    assert_eq!(admitted_now.len(), 1);
    assert!(read(&mut reader).is_none(), "the stalled reader was ended");
}

/// Found by the model: a resume replacing the reader that held a message
/// back made room without saying so, and the message waited until
/// something unrelated woke its session.
#[test]
fn a_resume_replacing_the_reader_that_held_a_message_back_makes_room() {
    let mut s = session(Window::events(2), Budget::unlimited());
    let (_old, _) = s.attach_standalone();
    for serial in 1..=2 {
        assert!(admitted(s.deliver(StreamId::Standalone, message(serial, 1))).is_some());
    }
    assert!(s.deliver(StreamId::Standalone, message(3, 1)).is_none());
    // Drain any stale permit, then resume past everything the old one held.
    let _ = s.room().made().now_or_never();
    let resumed = s.resume(StreamId::Standalone.event(2));
    assert!(resumed.reader.is_some());
    assert!(
        s.room().made().now_or_never().is_some(),
        "the producer is woken"
    );
    assert_eq!(admitted(s.flush().pop()), Some(3));
}

/// Found by the model: a primary demoted to a shadow by a resume, promoted
/// again later, went on from where it had first attached, skipping what it
/// had not delivered.
#[test]
fn a_demoted_primary_promoted_again_goes_on_from_its_own_position() {
    let mut s = session(Window::events(16), Budget::unlimited());
    assert!(admitted(s.deliver(StreamId::Standalone, message(1, 1))).is_some());
    let (mut first, start) = s.attach_standalone();
    assert_eq!(start, Some(1));
    assert!(admitted(s.deliver(StreamId::Standalone, message(2, 1))).is_some());
    // A resume from 1 takes over; `first` never read event 1.
    let second = s.resume(StreamId::Standalone.event(1)).reader.unwrap();
    assert_eq!(read(&mut first), None, "a shadow reads nothing");
    drop(second);
    assert_eq!(read(&mut first), Some(1), "not 2: event 1 never reached it");
    assert_eq!(read(&mut first), Some(2));
}

#[test]
fn past_the_waiting_cap_the_owner_stops_taking_messages() {
    let mut limits = Limits::new(STALL, Duration::from_secs(60), 8, 2);
    limits.max_waiting = 3;
    let mut s: Plain = Session::new(1, Window::events(1), Budget::unlimited(), limits);
    let (_reader, _) = s.attach_standalone();
    assert!(admitted(s.deliver(StreamId::Standalone, message(1, 1))).is_some());
    for serial in 2..=4 {
        assert!(s.can_take());
        assert!(
            s.deliver(StreamId::Standalone, message(serial, 1))
                .is_none()
        );
    }
    assert!(!s.can_take());
}

#[tokio::test(start_paused = true)]
async fn an_expired_stream_gives_back_its_bytes_and_its_waiting_messages() {
    let mut s = session(Window::events(1), Budget::new(1_000, None));
    s.open_request(7, ()).unwrap();
    let _reader = s.connect(StreamId::Request(7), 0).unwrap();
    assert!(admitted(s.deliver(StreamId::Request(7), message(1, 100))).is_some());
    assert!(s.deliver(StreamId::Request(7), message(2, 100)).is_none());
    assert!(s.complete(7, Instant::now()));
    tokio::time::advance(Duration::from_secs(61)).await;
    let gone = s.expire(Instant::now());
    assert!(matches!(
        gone.as_slice(),
        [Admission::Gone { ticket: 2, .. }]
    ));
    assert_eq!(s.budget().session().used(), 0, "though its reader is alive");
    assert!(!s.has_waiting());
}

/// What the owner keeps per request stream is its own to read and change,
/// and comes back when the stream is closed; the session counts the
/// streams it retains, and its `Debug` says how many and what waits.
#[test]
fn the_owner_finds_its_streams_and_what_it_keeps_for_each() {
    let mut s: Session<u64, u64, String> = Session::new(
        1,
        Window::events(1),
        Budget::unlimited(),
        Limits::new(STALL, Duration::from_secs(60), 8, 2),
    );
    assert_eq!(s.request_count(), 0);
    s.open_request(3, "three".to_owned()).unwrap();
    s.open_request(4, "four".to_owned()).unwrap();
    assert_eq!(s.request_count(), 2);
    s.extra_mut(3).unwrap().push('!');
    assert_eq!(s.extra_mut(4).map(|x| x.as_str()), Some("four"));
    assert_eq!(s.extra_mut(5), None);
    let _reader = s.connect(StreamId::Request(4), 0).unwrap();
    assert!(admitted(s.deliver(StreamId::Request(4), message(1, 1))).is_some());
    assert!(s.deliver(StreamId::Request(4), message(2, 1)).is_none());
    assert_eq!(format!("{s:?}"), "Session { requests: 2, waiting: 1, .. }");
    let (extra, _) = s.close_request(3).unwrap();
    assert_eq!(extra, "three!");
    assert_eq!(s.request_count(), 1);
    let resumed = s.resume(StreamId::Request(4).event(0));
    assert!(format!("{resumed:?}").ends_with("reader: true }"));
    assert!(format!("{resumed:?}").starts_with("Resumed { answer: Replay"));
}

/// However its owner stops, a dropped session ends every connection and
/// gives every byte back to the process's budget at once, though a
/// connection that stopped reading still holds its log.
#[test]
fn a_dropped_session_ends_its_readers_and_returns_its_bytes() {
    let process = Meter::new(1_000);
    let mut s = session(Window::events(8), Budget::new(1_000, Some(process.clone())));
    s.open_request(0, ()).unwrap();
    let mut call = s.connect(StreamId::Request(0), 0).unwrap();
    let (mut standalone, _) = s.attach_standalone();
    assert!(admitted(s.deliver(StreamId::Request(0), message(1, 100))).is_some());
    assert!(admitted(s.deliver(StreamId::Standalone, message(2, 50))).is_some());
    assert_eq!(process.used(), 150);
    drop(s);
    assert_eq!(process.used(), 0, "though both readers are alive");
    assert!(
        matches!(call.next().now_or_never(), Some(None)),
        "the call's reader ends"
    );
    assert!(
        matches!(standalone.next().now_or_never(), Some(None)),
        "the standalone reader ends"
    );
}

/// An answered stream whose reader held its bytes unread is forgotten
/// at its TTL, or, if its reader was still reading then, once that reader
/// stalls; either way the message that waited for those bytes on another
/// stream is admitted by that same expiry, not at some later turn.
#[tokio::test(start_paused = true)]
async fn an_expiry_admits_what_waited_for_the_bytes_it_freed() {
    for lingers in [false, true] {
        let mut s = session(Window::events(8), Budget::new(100, None));
        s.open_request(0, ()).unwrap();
        let mut call = s.connect(StreamId::Request(0), 0).unwrap();
        let answered = Instant::now();
        assert!(admitted(s.deliver(StreamId::Request(0), message(1, 5))).is_some());
        let answer = Pending {
            completes: true,
            ..message(2, 55)
        };
        assert!(admitted(s.deliver(StreamId::Request(0), answer)).is_some());
        let (_standalone, _) = s.attach_standalone();
        assert!(admitted(s.deliver(StreamId::Standalone, message(3, 30))).is_some());
        // 120 of 100 bytes, every one held by a reader that has not read it.
        assert!(s.deliver(StreamId::Standalone, message(4, 30)).is_none());
        let ttl = answered + Duration::from_secs(60);
        if lingers {
            tokio::time::advance(Duration::from_secs(59)).await;
            // What it read (5 bytes) is evictable now, but too little.
            assert_eq!(read(&mut call), Some(0));
            tokio::time::advance(Duration::from_secs(1)).await;
            assert!(s.expire(ttl).is_empty(), "its reader is reading");
            assert!(s.log(StreamId::Request(0)).is_some());
            tokio::time::advance(STALL).await;
        } else {
            tokio::time::advance(Duration::from_secs(60)).await;
        }
        let admissions = s.expire(Instant::now());
        assert!(s.log(StreamId::Request(0)).is_none(), "lingers: {lingers}");
        assert!(
            matches!(
                admissions.as_slice(),
                [Admission::Admitted { ticket: 4, .. }]
            ),
            "lingers: {lingers}: {admissions:?}"
        );
        assert!(!s.has_waiting());
    }
}

/// A session is idle only when no connection reads it: a standalone
/// reader counts, and so does a call's, even one that has drained its
/// answered stream but is still open; once they are gone, nobody does.
#[test]
fn a_connected_reader_is_one_whose_connection_is_open() {
    let mut s = session(Window::events(8), Budget::unlimited());
    assert!(!s.has_connected_reader(), "a fresh session");
    let (standalone, _) = s.attach_standalone();
    assert!(s.has_connected_reader(), "a standalone reader");
    drop(standalone);
    assert!(!s.has_connected_reader(), "its connection closed");
    s.open_request(0, ()).unwrap();
    assert!(!s.has_connected_reader(), "an open call with no connection");
    let mut call = s.connect(StreamId::Request(0), 0).unwrap();
    assert!(s.has_connected_reader(), "a call's reader");
    let answer = Pending {
        completes: true,
        ..message(1, 1)
    };
    assert!(admitted(s.deliver(StreamId::Request(0), answer)).is_some());
    assert_eq!(read(&mut call), Some(0));
    assert_eq!(read(&mut call), None, "drained");
    assert!(s.has_connected_reader(), "its connection is still open");
    drop(call);
    assert!(!s.has_connected_reader(), "every connection closed");
}
