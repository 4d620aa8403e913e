//! The budget promises of issue #43, each shown broken by a test before its
//! fix: an answered stream that lingers gives up what its reader has read
//! (D1), a reader that owes an event and reads nothing for the stall
//! timeout is ended whether or not a message waits (D2), and the
//! `max_completed_streams` cap forgets the oldest answered stream.
//!
//! Each test keeps its own expectations (indices, floors, times) from the
//! documented rules; none asks the session when it should have acted.

use std::time::Duration;

use futures::{FutureExt, StreamExt};
use tokio::time::Instant;

use super::*;
use crate::log::Attached;

const STALL: Duration = Duration::from_secs(10);
const TTL: Duration = Duration::from_secs(60);

type Plain = Session<u64, u64>;

fn session_with(budget: Budget, max_completed: usize) -> Plain {
    // The default window: the last 16 events, everything younger than 6 s.
    let window = Window::new(16, 4_096, Duration::from_secs(6));
    Session::new(1, window, budget, Limits::new(STALL, TTL, max_completed, 2))
}

fn message(serial: u64, weight: usize, completes: bool) -> Pending<u64, u64> {
    Pending {
        event: serial,
        id: None,
        weight,
        completes,
        ticket: serial,
    }
}

fn admitted(admission: Option<Admission<u64>>) -> Option<u64> {
    match admission? {
        Admission::Admitted { index, .. } => Some(index),
        Admission::Gone { .. } => None,
    }
}

/// One poll: `Some(Some(event))` read, `Some(None)` ended, `None` pending.
fn poll(reader: &mut LogReader<u64>) -> Option<Option<u64>> {
    reader.next().now_or_never().map(|l| l.map(|l| l.event))
}

/// **D1.** Request stream 0 is answered with 13 events of 50 bytes; its
/// reader reads one every 5 s, so at the TTL (60 s) it still owes the
/// last and the stream lingers. The 600 bytes it has read are nobody's
/// any more: they must be the first to go when the session needs bytes.
/// The standalone stream then takes 7 events of 100 bytes (1,350 of a
/// 1,000-byte budget): evicting stream 0's read events is enough, so the
/// standalone stream keeps all 7 and a resume from 3 replays from 4.
#[tokio::test(start_paused = true)]
async fn a_lingering_stream_gives_up_what_its_reader_has_read() {
    let mut s = session_with(Budget::new(1_000, None), 1_024);
    s.open_request(0, ()).unwrap();
    let mut slow = s.connect(StreamId::Request(0), 0).unwrap();
    for serial in 0..13 {
        let last = serial == 12;
        assert_eq!(
            admitted(s.deliver(StreamId::Request(0), message(serial, 50, last))),
            Some(serial)
        );
    }
    for read in 0..12 {
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(s.expire(Instant::now()).is_empty());
        assert_eq!(poll(&mut slow), Some(Some(read)));
    }
    // 60 s after the answer: past the TTL, but its reader read just now.
    assert!(s.expire(Instant::now()).is_empty());
    assert!(
        s.log(StreamId::Request(0)).is_some(),
        "it lingers for its reader"
    );

    let (mut eager, start) = s.attach_standalone();
    assert_eq!(start, Some(1));
    for serial in 1..=7 {
        assert_eq!(
            admitted(s.deliver(StreamId::Standalone, message(100 + serial, 100, false))),
            Some(serial),
            "nothing waits: the standalone reader reads every event"
        );
        assert_eq!(poll(&mut eager), Some(Some(100 + serial)));
    }
    assert!(
        s.budget().session().used() <= 1_000,
        "{} bytes of a 1,000-byte budget",
        s.budget().session().used()
    );
    drop(eager);
    let resumed = s.resume(StreamId::Standalone.event(3));
    assert_eq!(
        resumed.answer,
        ResumeAnswer::Replay { from: 4, floor: 1 },
        "the standalone stream paid for bytes another stream's reader had read"
    );
    // The lingering reader still gets its answer.
    assert_eq!(poll(&mut slow), Some(Some(12)));
}

/// **D2.** A standalone reader that is handed an event and reads nothing
/// for the stall timeout is ended, though no message waits behind it, and
/// not a moment before.
#[tokio::test(start_paused = true)]
async fn a_reader_owing_an_event_is_ended_at_the_stall_timeout_though_nothing_waits() {
    let mut s = session_with(Budget::new(2 << 20, None), 1_024);
    let (mut stalled, start) = s.attach_standalone();
    assert_eq!(start, Some(1));
    tokio::time::advance(Duration::from_secs(30)).await;
    let owed_at = Instant::now();
    assert_eq!(
        admitted(s.deliver(StreamId::Standalone, message(1, 1_500_000, false))),
        Some(1)
    );
    assert!(!s.has_waiting());
    let due = owed_at + STALL;
    assert_eq!(
        s.stall_deadline(),
        Some(due),
        "the reader owes event 1 from {owed_at:?}"
    );
    tokio::time::advance(STALL - Duration::from_millis(1)).await;
    assert!(s.end_stalled(Instant::now()).is_empty());
    assert!(
        s.standalone().has_primary(),
        "ended before its stall timeout"
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(s.end_stalled(Instant::now()).is_empty());
    assert!(
        !s.standalone().has_primary(),
        "still attached at its stall timeout"
    );
    assert_eq!(poll(&mut stalled), Some(None), "its connection ends");
    assert_eq!(s.stall_deadline(), None, "nobody owes anything any more");
}

/// **D2**, on a request stream: the POST's reader is handed progress and
/// reads nothing for the stall timeout; it is ended, and its resume is told
/// what the stream still holds.
#[tokio::test(start_paused = true)]
async fn a_request_reader_owing_an_event_is_ended_at_the_stall_timeout() {
    let mut s = session_with(Budget::new(2 << 20, None), 1_024);
    s.open_request(0, ()).unwrap();
    let mut stalled = s.connect(StreamId::Request(0), 0).unwrap();
    assert_eq!(
        admitted(s.deliver(StreamId::Request(0), message(1, 10, false))),
        Some(0)
    );
    let due = Instant::now() + STALL;
    assert_eq!(s.stall_deadline(), Some(due));
    tokio::time::advance(STALL).await;
    let _ = s.end_stalled(Instant::now());
    assert_eq!(poll(&mut stalled), Some(None));
}

/// A reader that reads everything it is handed owes nothing, however long
/// it is idle: no deadline, never ended.
#[tokio::test(start_paused = true)]
async fn a_reader_that_owes_nothing_has_no_deadline() {
    let mut s = session_with(Budget::new(2 << 20, None), 1_024);
    let (mut idle, _) = s.attach_standalone();
    assert_eq!(
        admitted(s.deliver(StreamId::Standalone, message(1, 10, false))),
        Some(1)
    );
    assert_eq!(poll(&mut idle), Some(Some(1)));
    assert_eq!(s.stall_deadline(), None);
    tokio::time::advance(Duration::from_secs(600)).await;
    assert!(s.end_stalled(Instant::now()).is_empty());
    assert_eq!(poll(&mut idle), None, "still attached, nothing to read");
}

/// **The cap.** With `max_completed_streams` at 2, a third answered stream
/// forgets the first, though all three are well within their TTL and none
/// has a reader.
#[tokio::test(start_paused = true)]
async fn the_completed_cap_forgets_the_oldest_answered_stream() {
    let mut s = session_with(Budget::new(2 << 20, None), 2);
    for m in 0..3 {
        s.open_request(m, ()).unwrap();
    }
    for m in 0..3 {
        assert_eq!(
            admitted(s.deliver(StreamId::Request(m), message(m, 10, true))),
            Some(0)
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        let _ = s.expire(Instant::now());
    }
    let kept: Vec<bool> = (0..3)
        .map(|m| s.log(StreamId::Request(m)).is_some())
        .collect();
    assert_eq!(kept, [false, true, true], "answered streams kept (cap 2)");
    assert_eq!(
        s.resume(StreamId::Request(0).event(0)).answer,
        ResumeAnswer::UnknownStream
    );
}

/// A fresh standalone `GET` (no cursor: its client never received an
/// event) after the last primary was ended below what the log still holds
/// starts at the floor, and says so: the owner sends the notice as the
/// stream's first frame, so the client learns events 1 to 4 are not coming.
#[tokio::test(start_paused = true)]
async fn a_fresh_start_past_the_floor_tells_the_client() {
    let limits = Limits::new(STALL, TTL, 8, 2);
    let mut s: Plain = Session::new(1, Window::events(4), Budget::unlimited(), limits);
    let (mut first, attached) = s.attach_standalone_at(Instant::now());
    assert_eq!(
        attached,
        Attached::Primary {
            start: 1,
            skipped_from: None
        }
    );
    assert_eq!(attached.notice(), None);
    assert_eq!(
        admitted(s.deliver_at(StreamId::Standalone, message(1, 1, false), Instant::now())),
        Some(1)
    );
    tokio::time::advance(STALL).await;
    let _ = s.end_stalled(Instant::now());
    assert_eq!(poll(&mut first), Some(None), "ended at its stall timeout");
    drop(first);
    for serial in 2..=8 {
        let now = Instant::now();
        assert_eq!(
            admitted(s.deliver_at(StreamId::Standalone, message(serial, 1, false), now)),
            Some(serial)
        );
    }
    // A window of 4: events 5 to 8 are kept.
    let (_second, attached) = s.attach_standalone_at(Instant::now());
    assert_eq!(
        attached,
        Attached::Primary {
            start: 5,
            skipped_from: Some(1)
        }
    );
    let notice = attached.notice().expect("a skip is told");
    assert_eq!(
        notice.cursor.to_string(),
        StreamId::Standalone.event(0).to_string()
    );
    assert_eq!(
        notice.floor.map(|f| f.to_string()),
        Some(StreamId::Standalone.event(5).to_string())
    );
    assert!(!notice.complete);
}

/// A quiet owner wakes for an expiry only when [`Session::next_expiry`]
/// says: an answered stream's TTL, and a lingering stream's reader's stall
/// deadline.
#[tokio::test(start_paused = true)]
async fn the_next_expiry_is_the_ttl_then_the_lingering_readers_deadline() {
    let mut s = session_with(Budget::new(2 << 20, None), 1_024);
    assert_eq!(s.next_expiry(), None);
    s.open_request(0, ()).unwrap();
    let mut slow = s.connect(StreamId::Request(0), 0).unwrap();
    let answered = Instant::now();
    assert_eq!(
        admitted(s.deliver(StreamId::Request(0), message(0, 10, false))),
        Some(0)
    );
    assert_eq!(
        admitted(s.deliver(StreamId::Request(0), message(1, 10, true))),
        Some(1)
    );
    assert_eq!(s.next_expiry(), Some(answered + TTL));
    // Its reader reads the first event just before the TTL: it lingers
    // until it has owed the answer for the stall timeout.
    tokio::time::advance(TTL - Duration::from_secs(1)).await;
    assert_eq!(poll(&mut slow), Some(Some(0)));
    let read = Instant::now();
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(s.expire(Instant::now()).is_empty());
    assert!(s.log(StreamId::Request(0)).is_some(), "it lingers");
    assert_eq!(s.next_expiry(), Some(read + STALL));
}

/// A control frame goes in under the stream's next index at once, for a
/// stream the session still holds, and nowhere for one it does not.
#[tokio::test(start_paused = true)]
async fn a_control_frame_takes_the_next_index_and_never_waits() {
    let mut s = session_with(Budget::new(100, None), 8);
    s.open_request(0, ()).unwrap();
    let mut reader = s.connect(StreamId::Request(0), 0).unwrap();
    assert_eq!(s.append_control(StreamId::Request(0), 7, None, 0), Some(0));
    assert_eq!(
        admitted(s.deliver(StreamId::Request(0), message(8, 100, false))),
        Some(1)
    );
    // Over the budget with its reader owing: a message would wait, a
    // control frame does not.
    assert_eq!(s.append_control(StreamId::Request(0), 9, None, 10), Some(2));
    assert_eq!(s.append_control(StreamId::Request(5), 9, None, 0), None);
    for expected in [7, 8, 9] {
        assert_eq!(poll(&mut reader), Some(Some(expected)));
    }
}

/// The stall rule costs one look per open connection, not one per stream
/// kept for resumes: after 500 answered calls whose readers read
/// everything and left, only the one stream with a reader is looked at,
/// and that reader, owing its call's answer and reading nothing, is still
/// ended at the stall timeout.
#[tokio::test(start_paused = true)]
async fn the_stall_rule_looks_only_at_streams_with_readers() {
    let mut s = session_with(Budget::new(2 << 20, None), 1_024);
    for m in 0..500 {
        s.open_request(m, ()).unwrap();
        let mut reader = s
            .connect(StreamId::Request(m), 0)
            .expect("the stream is open");
        assert_eq!(
            admitted(s.deliver(StreamId::Request(m), message(m, 10, true))),
            Some(0)
        );
        assert_eq!(poll(&mut reader), Some(Some(m)));
        assert_eq!(poll(&mut reader), Some(None), "answered and drained");
    }
    s.open_request(500, ()).unwrap();
    let mut stalled = s.connect(StreamId::Request(500), 0).expect("open");
    assert!(
        s.watched.len() <= 2,
        "{} streams looked at per turn for one open connection",
        s.watched.len()
    );
    let owed_at = Instant::now();
    assert_eq!(
        admitted(s.deliver(StreamId::Request(500), message(500, 10, true))),
        Some(0)
    );
    assert_eq!(s.stall_deadline(), Some(owed_at + STALL));
    tokio::time::advance(STALL).await;
    let _ = s.end_stalled(Instant::now());
    assert_eq!(
        poll(&mut stalled),
        Some(None),
        "the stalled reader is ended"
    );
}

/// A request stream's reader that the server is closing (SEP-1699) reads
/// it only up to its end: its answered stream lingers past the TTL while
/// that reader still owes an event before its end, and goes as soon as it
/// has read up to it, though the answer after the end is unread: that was
/// for the client's next connection, which the TTL, now past, waited for.
#[tokio::test(start_paused = true)]
async fn a_reader_being_closed_keeps_its_stream_only_up_to_its_end() {
    let mut s = session_with(Budget::new(2 << 20, None), 1_024);
    s.open_request(0, ()).unwrap();
    let mut closing = s.connect(StreamId::Request(0), 0).unwrap();
    for serial in [0, 1] {
        assert_eq!(
            admitted(s.deliver(StreamId::Request(0), message(serial, 10, false))),
            Some(serial)
        );
    }
    s.log(StreamId::Request(0)).unwrap().end_readers();
    assert_eq!(
        admitted(s.deliver(StreamId::Request(0), message(2, 10, true))),
        Some(2)
    );
    tokio::time::advance(TTL - Duration::from_secs(1)).await;
    assert_eq!(poll(&mut closing), Some(Some(0)));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(s.expire(Instant::now()).is_empty());
    assert!(
        s.log(StreamId::Request(0)).is_some(),
        "it lingers: its reader owes event 1, before its end"
    );
    assert_eq!(poll(&mut closing), Some(Some(1)));
    assert!(s.expire(Instant::now()).is_empty());
    assert!(
        s.log(StreamId::Request(0)).is_none(),
        "at its end its reader owes nothing: the stream goes at once"
    );
    assert_eq!(poll(&mut closing), Some(None));
}
