use std::task::Waker;
use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::resumption::{ResumeAnswer, StreamLookup, plan};

fn filled(capacity: usize, events: u64) -> Arc<StreamLog<()>> {
    let log = StreamLog::new(StreamId::Standalone, 1, capacity, 2, Room::default());
    for _ in 0..events {
        log.append((), None, 0);
    }
    log
}

fn answer(log: &StreamLog<()>, index: u64) -> ResumeAnswer {
    plan(StreamLookup::Found(log.view()), log.event_id(index))
}

#[test]
fn floor_and_plan_follow_eviction() {
    let log = filled(4, 10);
    let view = log.view();
    assert_eq!((view.floor, view.head), (7, 11));
    assert_eq!(
        answer(&log, 6),
        ResumeAnswer::Replay { from: 7, floor: 7 },
        "6's successor 7 is retained"
    );
    assert_eq!(
        answer(&log, 5),
        ResumeAnswer::Fallback { from: 7, floor: 7 }
    );
    assert_eq!(
        answer(&log, 10),
        ResumeAnswer::Replay { from: 11, floor: 7 },
        "nothing after the head yet"
    );
    assert_eq!(
        answer(&log, 11),
        ResumeAnswer::Fallback { from: 11, floor: 7 }
    );
}

#[test]
fn empty_log_floor_is_the_next_index() {
    let log = filled(4, 0);
    assert_eq!(log.view().floor, 1);
    assert_eq!(answer(&log, 0), ResumeAnswer::Replay { from: 1, floor: 1 });
    assert_eq!(
        answer(&log, 1),
        ResumeAnswer::Fallback { from: 1, floor: 1 }
    );
}

#[test]
fn ids_carry_the_stream() {
    let log = StreamLog::new(StreamId::Request(7), 0, 4, 0, Room::default());
    log.append((), None, 0);
    assert_eq!(log.event_id(0).to_string(), "0/7");
    assert_eq!(log.event_id(3).to_string(), "3/7");
    assert!(
        matches!(log.step(99), Step::Done),
        "an unknown reader is done"
    );
}

#[test]
fn newest_shadow_is_promoted_from_the_old_primary_position() {
    let log = filled(8, 3);
    log.attach_primary(1, 1);
    assert!(matches!(log.step(1), Step::Send(Logged { index: 1, .. })));
    log.attach_shadow(2);
    log.attach_shadow(3);
    assert!(matches!(log.step(3), Step::Wait), "shadows get nothing");
    log.detach(1);
    assert!(
        matches!(log.step(3), Step::Send(Logged { index: 2, .. })),
        "resumes after what was delivered"
    );
    assert!(matches!(log.step(2), Step::Wait), "only one primary");
}

#[test]
fn shadow_limit_drops_the_oldest() {
    let log = filled(8, 0);
    log.attach_primary(1, 1);
    for id in 2..=5 {
        log.attach_shadow(id);
    }
    let state = log.lock();
    assert_eq!(state.shadow_count(), 2);
    let ids: Vec<_> = state.readers.iter().map(|r| r.id).collect();
    assert_eq!(ids, [1, 4, 5]);
}

#[test]
fn control_frames_never_evict_what_a_reader_needs() {
    let log = filled(2, 1);
    log.attach_primary(1, 1);
    // The server's own frames (a `retry` before a close) do not wait for
    // room, so the log holds more than its cap instead of losing an event.
    for _ in 0..5 {
        log.append((), None, 0);
    }
    let mut read = Vec::new();
    while let Step::Send(logged) = log.step(1) {
        read.push(logged.index);
    }
    assert_eq!(read, [1, 2, 3, 4, 5, 6], "nothing skipped");
    // Read, they go at the next append.
    log.append((), None, 0);
    assert_eq!(log.view().floor, 6);
}

#[test]
fn an_unread_event_is_never_evicted_while_its_reader_is_attached() {
    let log = filled(2, 0);
    log.attach_primary(1, 1);
    assert!(log.try_append((), None, 0).is_ok());
    assert!(log.try_append((), None, 0).is_ok());
    let full = log.try_append((), None, 0);
    assert!(
        full.is_err(),
        "the reader has read nothing: the third waits"
    );
    assert_eq!(log.view().floor, 1, "nothing was evicted");
    // Reading one event makes room for exactly one more.
    assert!(matches!(log.step(1), Step::Send(Logged { index: 1, .. })));
    assert!(log.try_append((), None, 0).is_ok());
    assert!(log.try_append((), None, 0).is_err());
    assert_eq!(log.view().floor, 2);
}

#[test]
fn without_a_reader_the_oldest_event_is_evicted() {
    let log = filled(2, 0);
    for _ in 0..5 {
        assert!(log.try_append((), None, 0).is_ok());
    }
    assert_eq!(log.view().floor, 4);
    log.attach_shadow(9);
    assert!(log.try_append((), None, 0).is_ok(), "shadows read nothing");
}

#[tokio::test]
async fn a_reader_that_reads_wakes_the_waiting_producer() {
    let room = Room::default();
    let log = StreamLog::new(StreamId::Standalone, 1, 1, 0, room.clone());
    log.attach_primary(1, 1);
    assert!(log.try_append((), None, 0).is_ok());
    assert!(log.try_append((), None, 0).is_err());
    let mut made = std::pin::pin!(room.made());
    assert!(futures::poll!(made.as_mut()).is_pending(), "no room yet");
    assert!(matches!(log.step(1), Step::Send(Logged { index: 1, .. })));
    assert!(futures::poll!(made).is_ready(), "the producer is woken");
    assert!(log.try_append((), None, 0).is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_stalled_reader_is_ended_after_the_stall_timeout_and_not_before() {
    let stall = Duration::from_secs(10);
    let log = filled(2, 0);
    log.attach_primary(1, 1);
    log.try_append((), None, 0)
        .unwrap_or_else(|_| panic!("room"));
    log.try_append((), None, 0)
        .unwrap_or_else(|_| panic!("room"));
    assert!(log.try_append((), None, 0).is_err());
    let deadline = log
        .stall_deadline(stall)
        .unwrap_or_else(|| panic!("a full log has a deadline"));
    assert_eq!(deadline, Instant::now() + stall);
    tokio::time::advance(stall - Duration::from_millis(1)).await;
    assert!(!log.end_stalled(Instant::now(), stall), "not yet");
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(log.end_stalled(Instant::now(), stall));
    assert!(!log.has_primary());
    assert!(matches!(log.step(1), Step::Done), "its connection ends");
    assert!(
        log.try_append((), None, 0).is_ok(),
        "the floor moves past it"
    );
    assert_eq!(log.view().floor, 2);
    assert_eq!(log.stall_deadline(stall), None);
}

#[tokio::test(start_paused = true)]
async fn a_promoted_shadow_gets_a_fresh_stall_window() {
    let stall = Duration::from_secs(10);
    let log = filled(1, 0);
    log.attach_primary(1, 1);
    log.attach_shadow(2);
    log.try_append((), None, 0)
        .unwrap_or_else(|_| panic!("room"));
    assert!(log.try_append((), None, 0).is_err());
    tokio::time::advance(stall).await;
    assert!(log.end_stalled(Instant::now(), stall));
    assert!(log.has_primary(), "the shadow took over");
    assert_eq!(log.stall_deadline(stall), Some(Instant::now() + stall));
    assert!(
        matches!(log.step(2), Step::Send(Logged { index: 1, .. })),
        "from where 1 stopped"
    );
}

#[test]
fn request_stream_has_one_reader_and_finishes() {
    let log = StreamLog::new(StreamId::Request(0), 0, 8, 0, Room::default());
    log.append((), None, 0);
    log.attach_primary(1, 0);
    log.attach_primary(2, 0);
    assert!(matches!(log.step(1), Step::Done), "the older resume ends");
    log.finish();
    assert!(matches!(log.step(2), Step::Send(Logged { index: 0, .. })));
    assert!(matches!(log.step(2), Step::Done));
}

#[test]
fn store_assigned_ids_are_kept() {
    let log = StreamLog::new(StreamId::Request(0), 0, 8, 0, Room::default());
    log.append((), Some("store-17".to_owned()), 0);
    log.attach_primary(1, 0);
    match log.step(1) {
        Step::Send(logged) => assert_eq!((logged.index, logged.id.as_str()), (0, "store-17")),
        _ => panic!("the event is ready"),
    }
}

#[tokio::test]
async fn a_reader_streams_what_is_appended_and_ends_when_finished() {
    use futures::StreamExt;
    let log = StreamLog::new(StreamId::Request(4), 0, 8, 0, Room::default());
    log.attach_primary(1, 0);
    let mut reader = LogReader::new(log.clone(), 1);
    // The log wakes its own readers: nothing else rings.
    log.append("a", None, 0);
    let first = reader.next().await.map(|l| (l.id, l.event));
    assert_eq!(first, Some(("0/4".to_owned(), "a")));
    log.append("b", None, 0);
    log.finish();
    let second = reader.next().await.map(|l| l.event);
    assert_eq!(second, Some("b"));
    assert!(reader.next().await.is_none());
    drop(reader);
    assert!(!log.has_primary(), "dropping the reader detaches it");
}

#[test]
fn attach_decides_primary_or_shadow_in_one_step() {
    let log = filled(8, 3);
    assert_eq!(
        log.attach(1),
        Some(1),
        "no primary yet: from the first event"
    );
    assert!(matches!(log.step(1), Step::Send(Logged { index: 1, .. })));
    assert_eq!(log.attach(2), None, "a second GET is a shadow");
    log.detach(1);
    // The shadow took over from where the primary stopped.
    assert!(matches!(log.step(2), Step::Send(Logged { index: 2, .. })));
    assert_eq!(log.attach(3), None);
}

#[test]
fn a_primary_being_closed_ends_when_a_resume_replaces_it() {
    let log = filled(8, 3);
    log.attach_primary(1, 1);
    // The server closes the connection (SEP-1699): it drains, then ends.
    log.end_readers();
    // The client has already resumed on a new connection.
    log.attach_primary(2, 2);
    assert!(
        matches!(log.step(1), Step::Done),
        "the closing one ends now"
    );
    // Had it been kept as a shadow, its stale end would end it the moment
    // it was promoted; instead the live primary simply carries on.
    log.detach(2);
    assert!(!log.has_primary(), "nothing stale is promoted");
    assert_eq!(
        log.attach(4),
        Some(2),
        "a new primary starts where 2 stopped"
    );
}

fn windowed(window: Window, budget: Budget) -> Arc<StreamLog<()>> {
    StreamLog::with_limits(StreamId::Standalone, 1, window, 2, Room::default(), budget)
}

#[tokio::test(start_paused = true)]
async fn the_window_keeps_every_event_younger_than_its_retention() {
    let log = windowed(
        Window::new(2, 100, Duration::from_secs(5)),
        Budget::unlimited(),
    );
    for _ in 0..10 {
        log.append((), None, 0);
    }
    assert_eq!(log.view().floor, 1, "all ten are young: none evicted");
    tokio::time::advance(Duration::from_secs(6)).await;
    log.append((), None, 0);
    let view = log.view();
    assert_eq!(
        (view.floor, view.head),
        (10, 12),
        "aged out down to the last two"
    );
}

#[tokio::test(start_paused = true)]
async fn the_count_cap_holds_however_young_the_events() {
    let log = windowed(
        Window::new(2, 4, Duration::from_secs(3_600)),
        Budget::unlimited(),
    );
    for _ in 0..10 {
        log.append((), None, 0);
    }
    let view = log.view();
    assert_eq!((view.floor, view.head), (7, 11));
}

#[test]
fn bytes_are_counted_on_both_meters_and_returned_on_eviction_and_drop() {
    let process = Meter::new(1_000);
    let budget = Budget::new(100, Some(process.clone()));
    let log = windowed(Window::new(2, 100, Duration::from_secs(60)), budget.clone());
    for _ in 0..4 {
        log.append((), None, 30);
    }
    assert_eq!((budget.session().used(), process.used()), (120, 120));
    assert!(budget.would_exceed(0), "over the session's 100");
    assert_eq!(log.evict_oldest(), Some(30));
    assert_eq!(log.view().floor, 2, "the floor moves with the eviction");
    assert_eq!((budget.session().used(), log.bytes()), (90, 90));
    // A connected reader that has not read the oldest event keeps it.
    log.attach_primary(1, 2);
    assert_eq!(log.evict_oldest(), None);
    assert_eq!(log.oldest_evictable(), None);
    drop(log);
    assert_eq!((budget.session().used(), process.used()), (0, 0));
}

/// A budget says what it allows and which process meter it counts
/// against: the one it was given, shared, not a copy.
#[test]
fn a_budget_reports_its_limits_and_shares_the_process_meter() {
    let process = Meter::new(1_000);
    let budget = Budget::new(100, Some(process.clone()));
    assert_eq!(budget.session().limit(), 100);
    let shared = budget.process().expect("the process's meter");
    assert!(std::ptr::eq(shared, &*process));
    assert_eq!(shared.limit(), 1_000);
    assert!(Budget::new(100, None).process().is_none());
    assert_eq!(Budget::unlimited().session().limit(), usize::MAX);
}

/// A reader owing an event holds its bytes whether or not the session is
/// starved, so its stall deadline runs either way (D2 of issue #43).
#[tokio::test(start_paused = true)]
async fn a_reader_owing_an_event_has_a_deadline_starved_or_not() {
    let budget = Budget::new(10, None);
    let log = windowed(Window::new(16, 16, Duration::ZERO), budget.clone());
    log.append((), None, 8);
    log.attach_primary(1, 1);
    let stall = Duration::from_secs(10);
    let due = Instant::now() + stall;
    assert_eq!(
        log.stall_deadline(stall),
        Some(due),
        "not full, not starved"
    );
    budget.set_starved(true);
    assert_eq!(log.stall_deadline(stall), Some(due), "starved");
    assert!(!log.end_stalled(Instant::now(), stall), "not stalled yet");
    assert!(log.end_stalled(Instant::now() + stall, stall));
    assert_eq!(
        log.evict_oldest(),
        Some(8),
        "evictable once its reader ended"
    );
}

#[test]
fn an_event_wakes_only_the_readers_of_its_own_stream() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll, Wake, Waker};

    use futures::Stream;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let room = Room::default();
    let quiet = StreamLog::new(StreamId::Request(1), 0, 8, 0, room.clone());
    let busy = StreamLog::new(StreamId::Request(2), 0, 8, 0, room);
    quiet.attach_primary(1, 0);
    let mut reader = std::pin::pin!(LogReader::new(quiet.clone(), 1));
    let wakes = Arc::new(Count(AtomicUsize::new(0)));
    let waker = Waker::from(wakes.clone());
    let mut cx = Context::from_waker(&waker);
    assert!(reader.as_mut().poll_next(&mut cx).is_pending());
    for _ in 0..100 {
        busy.append("other", None, 0);
    }
    assert_eq!(wakes.0.load(Ordering::SeqCst), 0, "another stream's events");
    quiet.append("mine", None, 0);
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "its own event");
    assert!(matches!(
        reader.as_mut().poll_next(&mut cx),
        Poll::Ready(Some(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn an_idle_reader_owes_progress_only_from_the_event_it_has_not_read() {
    // Review finding: the stall clock ran from the reader's last event, so
    // a reader idle for a minute was ended the instant one event reached
    // it. It runs from that event's append instead.
    let stall = Duration::from_secs(10);
    let log = filled(1, 0);
    log.attach_primary(1, 1);
    tokio::time::advance(Duration::from_secs(60)).await;
    assert!(log.try_append((), None, 0).is_ok());
    assert!(
        log.try_append((), None, 0).is_err(),
        "full: the producer waits"
    );
    assert_eq!(log.stall_deadline(stall), Some(Instant::now() + stall));
    assert!(
        !log.end_stalled(Instant::now(), stall),
        "idle is not stalled"
    );
    tokio::time::advance(stall).await;
    assert!(log.end_stalled(Instant::now(), stall), "now it is");
}

#[test]
fn a_promoted_shadow_is_sent_again_what_the_dead_primary_took_since_it_attached() {
    // Review finding: a promoted shadow went on from what the dead primary
    // had taken; whatever sat in its socket was never sent. Now it starts
    // where it attached, and its client drops the exact re-sends.
    let log = filled(8, 1);
    log.attach_primary(1, 1);
    assert!(matches!(log.step(1), Step::Send(Logged { index: 1, .. })));
    log.attach_shadow(2);
    for _ in 0..3 {
        log.append((), None, 0);
    }
    let mut taken = Vec::new();
    while let Step::Send(logged) = log.step(1) {
        taken.push(logged.index);
    }
    assert_eq!(taken, [2, 3, 4]);
    log.detach(1);
    assert!(
        matches!(log.step(2), Step::Send(Logged { index: 2, .. })),
        "from the shadow's attach"
    );
}

#[test]
fn a_promoted_shadow_is_sent_again_what_the_primary_had_not_taken_when_it_came() {
    // The session model's dead socket: event 1 waited for the primary when
    // a second GET came, the primary then took it into a socket that was
    // dead, and the promoted shadow went on from 2 (its attach), so the
    // client never had 1. It goes on from what the primary had not taken.
    let log = filled(8, 1);
    log.attach_primary(1, 1);
    log.attach_shadow(2);
    log.append((), None, 0);
    let mut taken = Vec::new();
    while let Step::Send(logged) = log.step(1) {
        taken.push(logged.index);
    }
    assert_eq!(taken, [1, 2]);
    log.detach(1);
    assert!(
        matches!(log.step(2), Step::Send(Logged { index: 1, .. })),
        "from what the primary had not taken when the shadow came"
    );
}

#[test]
fn a_promoted_shadow_below_the_floor_is_ended_not_skipped_ahead() {
    let log = filled(2, 1);
    log.attach_primary(1, 1);
    log.attach_shadow(2);
    for _ in 0..3 {
        log.append((), None, 0);
        while let Step::Send(_) = log.step(1) {}
    }
    log.append((), None, 0);
    assert!(log.view().floor > 2, "the shadow's start was evicted");
    log.detach(1);
    assert!(matches!(log.step(2), Step::Done), "its client must resume");
}

#[test]
fn closing_a_log_returns_its_bytes_though_a_reader_still_holds_it() {
    // Review finding: an expired stream's reader kept its events' bytes
    // for as long as its connection lived (forever, for a zero window).
    let budget = Budget::new(1_000, None);
    let log = StreamLog::with_limits(
        StreamId::Request(1),
        0,
        Window::events(8),
        0,
        Room::default(),
        budget.clone(),
    );
    log.attach_primary(1, 0);
    let reader = LogReader::new(log.clone(), 1);
    log.append((), None, 300);
    assert_eq!(budget.session().used(), 300);
    log.close();
    assert_eq!(budget.session().used(), 0);
    assert!(matches!(log.step(1), Step::Done));
    drop(reader);
    drop(log);
    assert_eq!(budget.session().used(), 0, "not returned twice");
}

/// Counts the times it was woken.
#[derive(Default)]
struct Wakes(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Wakes {
    fn count(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Reader `id` finds nothing to do and parks; what wakes it is counted.
fn park(log: &StreamLog<()>, id: ReaderId) -> Arc<Wakes> {
    let wakes = Arc::new(Wakes::default());
    let waker = Waker::from(wakes.clone());
    assert!(matches!(log.step_or_park(id, &waker), Step::Wait));
    wakes
}

type Change = fn(&StreamLog<()>);

#[test]
fn every_change_a_parked_reader_must_see_wakes_it_once() {
    let changes: [(&str, Change, bool); 6] = [
        (
            "an event",
            |log| {
                log.append((), None, 0);
            },
            false,
        ),
        (
            "a bounded event",
            |log| drop(log.try_append((), None, 0)),
            false,
        ),
        ("the answer's end", StreamLog::finish, true),
        ("the stream's expiry", StreamLog::close, true),
        ("a server-initiated close", StreamLog::end_readers, true),
        (
            "a resume that replaces it",
            |log| log.attach_primary(2, 0),
            true,
        ),
    ];
    for (change, apply, ends) in changes {
        let log = StreamLog::new(StreamId::Request(1), 0, 4, 0, Room::default());
        log.attach_primary(1, 0);
        let wakes = park(&log, 1);
        // Polled again with the same waker before anything changed: still
        // one wake, not one per poll.
        drop(park(&log, 1));
        let again = Waker::from(wakes.clone());
        assert!(matches!(log.step_or_park(1, &again), Step::Wait));
        apply(&log);
        assert_eq!(wakes.count(), 1, "{change} wakes the parked reader once");
        let next = log.step(1);
        assert_eq!(matches!(next, Step::Done), ends, "{change}: what it sees");
        assert_eq!(
            matches!(next, Step::Send(_)),
            !ends,
            "{change}: what it sees"
        );
    }
}

#[test]
fn a_parked_shadow_wakes_when_it_is_promoted_and_a_detached_reader_is_forgotten() {
    let log = StreamLog::new(StreamId::Standalone, 0, 4, 2, Room::default());
    assert_eq!(log.attach(1), Some(0));
    assert_eq!(log.attach(2), None, "a shadow");
    let shadow = park(&log, 2);
    let primary = park(&log, 1);
    log.detach(1);
    assert_eq!(shadow.count(), 1, "promoted: it must look again");
    assert_eq!(
        Arc::strong_count(&primary),
        1,
        "the detached reader's waker is not kept"
    );
    log.append((), None, 0);
    assert!(matches!(log.step(2), Step::Send(Logged { index: 0, .. })));
}

/// A shadow that goes promotes nobody, so no wake sweeps the parked
/// list: its own detach must forget its waker (the gone connection's
/// task), and the next event wakes only the reader still there.
#[test]
fn a_detached_shadow_is_forgotten_though_nothing_else_changes() {
    let log = StreamLog::new(StreamId::Standalone, 0, 4, 2, Room::default());
    assert_eq!(log.attach(1), Some(0));
    assert_eq!(log.attach(2), None, "a shadow");
    let primary = park(&log, 1);
    let shadow = park(&log, 2);
    log.detach(2);
    assert_eq!(
        Arc::strong_count(&shadow),
        1,
        "the detached shadow's waker is not kept"
    );
    log.append((), None, 0);
    assert_eq!(shadow.count(), 0, "a gone reader is not woken");
    assert_eq!(primary.count(), 1, "the primary is");
}

/// Drains `reader` on a task of its own: what it received, in order.
fn drain(reader: LogReader<u64>) -> tokio::task::JoinHandle<Vec<u64>> {
    use futures::StreamExt;
    tokio::spawn(reader.map(|l| l.event).collect::<Vec<_>>())
}

/// Appends `events` on a task of its own, waiting for [`Room`] whenever the
/// log is full; yields now and then, so readers park in between.
fn produce(
    log: &Arc<StreamLog<u64>>,
    room: &Room,
    events: std::ops::Range<u64>,
) -> tokio::task::JoinHandle<()> {
    let (log, room) = (log.clone(), room.clone());
    tokio::spawn(async move {
        for mut event in events {
            while let Err(full) = log.try_append(event, None, 0) {
                event = full.event;
                room.made().await;
            }
            if event % 3 == 0 {
                tokio::task::yield_now().await;
            }
        }
    })
}

/// Appends `events` without ever waiting, on a task of its own.
fn flood(log: &Arc<StreamLog<u64>>, events: std::ops::Range<u64>) -> tokio::task::JoinHandle<()> {
    let log = log.clone();
    tokio::spawn(async move {
        for event in events {
            log.append(event, None, 0);
            if event % 5 == 0 {
                tokio::task::yield_now().await;
            }
        }
    })
}

fn assert_prefix(got: &[u64], what: &str) {
    assert!(
        got.iter().copied().eq(0..got.len() as u64),
        "{what}: an exact prefix, no gap or duplicate: {got:?}"
    );
}

/// One round of every change a parked reader must see, each made from
/// other threads while the reader drains; every reader must end, and
/// receive every event it is owed exactly once, in order.
async fn round(round: u64) {
    const N: u64 = 300;
    // A backpressured producer and a flooding one, then the answer's end.
    let room = Room::default();
    let log = StreamLog::new(StreamId::Request(1), 0, 2, 0, room.clone());
    log.attach_primary(1, 0);
    let reader = drain(LogReader::new(log.clone(), 1));
    let (a, b) = (produce(&log, &room, 0..N), flood(&log, 1_000..1_000 + N));
    a.await.unwrap();
    b.await.unwrap();
    log.finish();
    let got = reader.await.unwrap();
    let (low, high): (Vec<u64>, Vec<u64>) = got.iter().partition(|&&e| e < 1_000);
    assert!(low.iter().copied().eq(0..N), "finish: {got:?}");
    assert!(high.iter().copied().eq(1_000..1_000 + N), "finish: {got:?}");

    // The stream expires while events arrive.
    let log = StreamLog::new(StreamId::Request(1), 0, 4, 0, Room::default());
    log.attach_primary(1, 0);
    let reader = drain(LogReader::new(log.clone(), 1));
    let producer = flood(&log, 0..N);
    for _ in 0..round % 7 {
        tokio::task::yield_now().await;
    }
    log.close();
    producer.await.unwrap();
    assert_prefix(&reader.await.unwrap(), "close");

    // A server-initiated close: during the appends, or after them.
    let log = StreamLog::new(StreamId::Standalone, 0, 4, 2, Room::default());
    assert_eq!(log.attach(1), Some(0));
    let reader = drain(LogReader::new(log.clone(), 1));
    let producer = flood(&log, 0..N);
    if round.is_multiple_of(2) {
        producer.await.unwrap();
        log.end_readers();
        assert_eq!(reader.await.unwrap().len() as u64, N, "end_readers after");
    } else {
        log.end_readers();
        producer.await.unwrap();
        assert_prefix(&reader.await.unwrap(), "end_readers during");
    }

    // A resume replaces the reader; the new one replays from the start.
    let log = StreamLog::new(StreamId::Request(1), 0, N as usize, 0, Room::default());
    log.attach_primary(1, 0);
    let old = drain(LogReader::new(log.clone(), 1));
    let producer = flood(&log, 0..N);
    for _ in 0..round % 5 {
        tokio::task::yield_now().await;
    }
    log.attach_primary(2, 0);
    let new = drain(LogReader::new(log.clone(), 2));
    assert_prefix(&old.await.unwrap(), "replaced");
    producer.await.unwrap();
    log.finish();
    assert!(new.await.unwrap().into_iter().eq(0..N), "the resume");

    // The primary goes away once every event is in (in odd rounds, while
    // they arrive): the parked shadow is promoted and drains them all
    // before the stream ends, woken by the promotion alone.
    let log = StreamLog::new(StreamId::Standalone, 0, N as usize, 2, Room::default());
    assert_eq!(log.attach(1), Some(0));
    assert_eq!(log.attach(2), None);
    let (tx, mut received) = tokio::sync::mpsc::unbounded_channel();
    let shadow = {
        use futures::StreamExt;
        let mut reader = LogReader::new(log.clone(), 2);
        tokio::spawn(async move {
            while let Some(logged) = reader.next().await {
                let _ = tx.send(logged.event);
            }
        })
    };
    let (go, gone) = tokio::sync::oneshot::channel::<()>();
    let primary = {
        use futures::StreamExt;
        let mut reader = LogReader::new(log.clone(), 1);
        let take = usize::try_from(round % 11).unwrap();
        tokio::spawn(async move {
            for _ in 0..take {
                reader.next().await;
            }
            let _ = gone.await;
        })
    };
    let producer = flood(&log, 0..N);
    if round % 2 == 1 {
        drop(go);
        producer.await.unwrap();
    } else {
        producer.await.unwrap();
        drop(go);
    }
    primary.await.unwrap();
    for expected in 0..N {
        assert_eq!(received.recv().await, Some(expected), "promoted");
    }
    log.finish();
    shadow.await.unwrap();
    assert_eq!(received.recv().await, None, "promoted: then ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_draining_against_producers_on_other_threads_are_always_woken() {
    let started = std::time::Instant::now();
    for n in 0..300 {
        tokio::time::timeout(Duration::from_secs(10), round(n))
            .await
            .unwrap_or_else(|_| panic!("round {n}: a reader or producer hung"));
        if started.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
}

/// A waker that reads its log when woken or dropped, as an executor that
/// polls in `wake` would, or the last handle to a task owning a reader.
struct Reenters {
    log: Arc<StreamLog<()>>,
    wakes: std::sync::atomic::AtomicUsize,
}

impl std::task::Wake for Reenters {
    fn wake(self: Arc<Self>) {
        let _ = self.log.view();
        self.wakes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for Reenters {
    fn drop(&mut self) {
        let _ = self.log.view();
    }
}

#[test]
fn a_waker_may_lock_the_log_again_when_woken_or_dropped() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let changes: [Change; 8] = [
            |log| {
                log.append((), None, 0);
            },
            |log| drop(log.try_append((), None, 0)),
            StreamLog::finish,
            StreamLog::close,
            StreamLog::end_readers,
            |log| log.attach_primary(3, 0),
            |log| {
                let _ = log.attach(3);
            },
            |log| log.detach(1),
        ];
        for (n, apply) in changes.into_iter().enumerate() {
            let log = StreamLog::new(StreamId::Standalone, 0, 4, 2, Room::default());
            assert_eq!(log.attach(1), Some(0));
            assert_eq!(log.attach(2), None);
            let waker = |log: &Arc<StreamLog<()>>| {
                let reenters = Arc::new(Reenters {
                    log: log.clone(),
                    wakes: Default::default(),
                });
                (Waker::from(reenters.clone()), reenters)
            };
            // Parked, then parked again with another waker: the first is
            // dropped (its last handle) and locks the log.
            let (first, _) = waker(&log);
            assert!(matches!(log.step_or_park(2, &first), Step::Wait));
            drop(first);
            let (second, shadow) = waker(&log);
            assert!(matches!(log.step_or_park(2, &second), Step::Wait));
            drop(second);
            let (primary, _) = waker(&log);
            assert!(matches!(log.step_or_park(1, &primary), Step::Wait));
            drop(primary);
            apply(&log);
            if n == 7 {
                assert_eq!(shadow.wakes.load(std::sync::atomic::Ordering::SeqCst), 1);
            }
            // A reader forgotten on detach: its waker dropped, once more.
            let (third, _) = waker(&log);
            let _ = log.step_or_park(2, &third);
            drop(third);
            log.detach(2);
        }
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(Duration::from_secs(10))
        .expect("a waker that locks the log again deadlocked it");
}

#[test]
fn a_reader_polled_again_by_another_task_is_woken_there() {
    let log = StreamLog::new(StreamId::Request(1), 0, 4, 0, Room::default());
    log.attach_primary(1, 0);
    let first = park(&log, 1);
    let second = park(&log, 1);
    log.append((), None, 0);
    assert_eq!(second.count(), 1, "the waker of the latest poll is woken");
    assert_eq!(first.count(), 0);
    assert_eq!(
        Arc::strong_count(&first),
        1,
        "the one it replaced is not kept"
    );
}

/// A primary the server is closing (SEP-1699) owes only what precedes its
/// end: past it, events appended later are for the next connection, and it
/// has no stall deadline however long it waits.
#[tokio::test(start_paused = true)]
async fn a_primary_being_closed_owes_only_up_to_its_end() {
    let stall = Duration::from_secs(10);
    let log = StreamLog::new(StreamId::Standalone, 1, 8, 2, Room::default());
    assert_eq!(log.attach(1), Some(1));
    log.append((), None, 0);
    log.end_readers();
    log.append((), None, 0);
    let attached = Instant::now();
    assert_eq!(
        log.stall_deadline(stall),
        Some(attached + stall),
        "it owes event 1, before its end"
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(matches!(log.step(1), Step::Send(_)));
    assert_eq!(
        log.stall_deadline(stall),
        None,
        "at its end it owes nothing, though event 2 is unread"
    );
    tokio::time::advance(stall).await;
    assert!(!log.end_stalled(Instant::now(), stall));
    assert!(matches!(log.step(1), Step::Done));
}

/// A read tells the producer only when it waits (blocked on this log, or
/// the session starved of bytes): a wake for nothing costs the owner a turn.
#[tokio::test]
async fn a_read_wakes_the_producer_only_when_it_waits() {
    use futures::FutureExt;
    let room = Room::default();
    let log = StreamLog::new(StreamId::Standalone, 1, 4, 2, room.clone());
    assert_eq!(log.attach(1), Some(1));
    log.append((), None, 0);
    assert!(matches!(log.step(1), Step::Send(_)));
    assert!(
        room.made().now_or_never().is_none(),
        "nobody waits, nobody is told"
    );
    for _ in 0..4 {
        log.append((), None, 0);
    }
    assert!(
        log.try_append((), None, 0).is_err(),
        "full: the producer waits"
    );
    assert!(matches!(log.step(1), Step::Send(_)));
    assert!(room.made().now_or_never().is_some(), "the read made room");
}
