//! A property test of [`Session`] against a reference model of its promises
//! (issue #24), under generated sequences of operations.
//!
//! # The driver
//!
//! One session, with a small window and byte budgets drawn per case: the
//! session's below the process's in some cases and above it in others, so
//! that every admission path is taken. The generated
//! operations open request streams, deliver messages of random weights to
//! any stream (some answering their request), attach fresh standalone
//! connections (primaries or shadows), resume with the client's own cursor
//! or with a random one, read a few events, make a reader eager (it reads
//! everything, every step), drop connections, close streams and step the
//! clock. After every operation the driver does what the rmcp worker does:
//! expire, flush when a reader made room, end stalled readers at their
//! deadline; with the clock paused, time moves only in [`Op::Advance`] and
//! [`Op::Slow`], in steps that stop at every deadline the session names
//! and at every deadline the model computes for itself (so a deadline the
//! session names late is seen late).
//!
//! # The model's own books
//!
//! The model never reads the session's meters, deadlines or reader
//! positions to decide whether the session was right. It keeps, from the
//! documented rules alone: each admitted event's index, weight and append
//! time; each connection's role (primary or shadow, promoted by the rule
//! of `log`'s module docs), its next index and when it last made progress;
//! what the window (the last 4 events and all younger than 6 s, at most 8)
//! must keep; and the bytes each stream holds. The only thing it observes
//! of the session besides what readers yield is each stream's floor, as a
//! resume would be told it.
//!
//! # The promises, checked after every step
//!
//! - **Content and order.** Every event a reader yields is the one admitted
//!   under that index on that stream, under its rmcp id; a reader never
//!   skips forward (a promoted shadow may go back: exact re-sends, which a
//!   client drops), and a resumed one starts where the answer said.
//! - **Nothing lost silently.** At the end the client catches up from its
//!   own cursor on every stream; every admitted event is then received, or
//!   below a floor a resume answer named, or its stream was closed.
//! - **Retention, both ways.** No stream's floor passes what its primary
//!   has not read, nor (unless the budgets were short since) what the
//!   window keeps. A primary ends only when it owed an event for the stall
//!   timeout with no progress, or its stream ended, or a newer connection
//!   replaced it; and one that owed that long is ended then, not later.
//! - **Budgets.** The bytes the model counts (its own weights, from each
//!   stream's floor) stay within the smaller budget plus one message per
//!   stream.
//! - **Waits.** A message waits only while its own stream's primary (as the
//!   model places it) holds unread bytes, and never longer than the stall
//!   timeout past the last progress on its stream.
//! - **Dead sockets.** A connection may die with events written into it
//!   that its client never gets ([`Op::Die`]): the session counts them as
//!   read, the model does not, and the client (holding the priming event's
//!   id, or its last event's) is owed them again from its own cursor, by a
//!   resume or by a promoted shadow, or told a floor. The model assumes the
//!   default `sse_retry`, under which every fresh standalone `GET` opens
//!   with a priming event; with `sse_retry: None` a client holds no cursor
//!   before its first event, and what a dead socket swallowed before it is
//!   lost without a word (docs/behaviour.md). Events taken into a socket
//!   already dead before a second `GET` joined are not re-sent to that
//!   shadow: only a client that resumes with its cursor gets them.
//! - **Foreign resumes excuse nothing.** Somebody else's resume of the
//!   client's stream moves no floor the model holds the session to; the
//!   client is owed every event from its own cursor until a resume of its
//!   own is told a floor.
//! - **Tickets.** Every message is admitted once, in order per stream, or
//!   returned once as gone (its stream closed).
//!
//! # Reach
//!
//! The run counts, per case, whether it reached each hard case: a
//! lingering answered stream, an expiry over the answered-streams cap, a
//! promotion past the shadow's join point, a slow-but-reading reader; it
//! prints the shares and fails when one falls below a fifth.
//!
//! `PROPTEST_CASES` and `PROPTEST_RNG_SEED` are honoured; the normal run has
//! [`CASES`] cases from a fixed seed. For more:
//!
//! ```text
//! PROPTEST_CASES=20000 cargo nextest run -p rmcp-resume-core session::model
//! ```

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestRunner};
use tokio::time::Instant;

use super::*;
use crate::log::Meter;

/// Cases in the normal test run.
const CASES: u32 = 256;

/// The fixed seed of the normal run.
const SEED: u64 = 0x2024_1224;

const STALL: Duration = Duration::from_secs(10);
const TTL: Duration = Duration::from_secs(30);
const MAX_COMPLETED: usize = 3;
const MAX_SHADOWS: usize = 2;
const MAX_WEIGHT: usize = 400;
/// The window: the last `KEEP` events and all younger than `RETENTION`, at
/// most `MAX_EVENTS`.
const KEEP: usize = 4;
const MAX_EVENTS: usize = 8;
const RETENTION: Duration = Duration::from_secs(6);
/// Each hard case must be reached by at least this share of the cases.
const MIN_REACH: f64 = 0.2;

/// The case's byte budgets.
#[derive(Debug, Clone, Copy)]
struct Budgets {
    session: usize,
    process: usize,
}

fn budgets() -> impl Strategy<Value = Budgets> {
    prop_oneof![
        (800..1_600usize, 1_600..3_000usize),
        (1_600..3_000usize, 800..1_600usize),
    ]
    .prop_map(|(session, process)| Budgets { session, process })
}

/// One generated step.
#[derive(Debug, Clone)]
enum Op {
    /// Opens the next request stream, with its POST's connection at 0.
    Open,
    /// A handler's message for stream `pick` (0 is the standalone stream).
    Deliver {
        pick: u8,
        weight: usize,
        completes: bool,
    },
    /// A fresh `GET` on the standalone stream, or the client's own resume
    /// of it when it has a cursor and no connection is live.
    Get,
    /// The client resumes stream `pick` from its own cursor.
    Resume { pick: u8 },
    /// Somebody resumes stream `pick` from `cursor`, right or wrong.
    Foreign { pick: u8, cursor: u8 },
    /// Reader `reader` reads up to `n` events.
    Read { reader: u8, n: u8 },
    /// Reader `reader` reads one event every `gap_ms` (under the stall
    /// timeout), `rounds` times: slow, but reading.
    Slow { reader: u8, rounds: u8, gap_ms: u32 },
    /// Reader `reader` reads everything, every step, from now on.
    Eager { reader: u8 },
    /// A call streams `events` small events and its answer, and its
    /// connection reads one every `gap_ms`: it is still reading at the TTL.
    Linger { events: u8, gap_ms: u32 },
    /// `calls` calls, each answered at once: more than the cap.
    Burst { calls: u8 },
    /// A second `GET` joins the standalone stream as a shadow, the primary
    /// reads `events` more and goes: the shadow goes on from where it
    /// joined (#659's hand-over).
    Handover { events: u8 },
    /// Reader `reader`'s connection goes away.
    Drop { reader: u8 },
    /// Reader `reader`'s connection dies with up to `n` more events written
    /// into it: the session hands them over, the client never gets them
    /// (a reset socket's send buffer), and must be given them again from
    /// its own cursor, or told a floor. The socket dies and its reader goes
    /// in one step: a connection half-open while a second `GET` joins, read
    /// into until the server notices, is not generated (see the module's
    /// docs).
    Die { reader: u8, n: u8 },
    /// Request stream `pick` is closed by the HTTP side.
    Close { pick: u8 },
    /// The clock moves by `ms`.
    Advance { ms: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Open),
        8 => (any::<u8>(), 1..=MAX_WEIGHT, prop::bool::weighted(0.25))
            .prop_map(|(pick, weight, completes)| Op::Deliver { pick, weight, completes }),
        3 => Just(Op::Get),
        2 => any::<u8>().prop_map(|pick| Op::Resume { pick }),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(pick, cursor)| Op::Foreign { pick, cursor }),
        5 => (any::<u8>(), 1..4u8).prop_map(|(reader, n)| Op::Read { reader, n }),
        3 => (any::<u8>(), 2..10u8, 1_000..9_000u32)
            .prop_map(|(reader, rounds, gap_ms)| Op::Slow { reader, rounds, gap_ms }),
        1 => any::<u8>().prop_map(|reader| Op::Eager { reader }),
        1 => (6..12u8, 4_000..7_000u32).prop_map(|(events, gap_ms)| Op::Linger { events, gap_ms }),
        1 => (4..7u8).prop_map(|calls| Op::Burst { calls }),
        1 => (1..6u8).prop_map(|events| Op::Handover { events }),
        2 => any::<u8>().prop_map(|reader| Op::Drop { reader }),
        2 => (any::<u8>(), 1..6u8).prop_map(|(reader, n)| Op::Die { reader, n }),
        1 => any::<u8>().prop_map(|pick| Op::Close { pick }),
        3 => prop_oneof![1..2_000u32, 2_000..40_000u32].prop_map(|ms| Op::Advance { ms }),
    ]
}

/// What the model knows of one stream.
#[derive(Debug)]
struct Stream {
    id: StreamId,
    /// The index the next admitted message gets.
    next_index: u64,
    /// Admitted events: index → the message's serial (the event itself).
    admitted: BTreeMap<u64, u64>,
    /// Each admitted event's weight and append time.
    books: BTreeMap<u64, (usize, Instant)>,
    /// Delivered, not yet admitted: serial, when delivered, whether it
    /// answers, its weight.
    waiting: VecDeque<(u64, Instant, bool, usize)>,
    /// The last progress on the stream: a read, an attach, a detach, an
    /// admission.
    activity: Instant,
    completed_at: Option<Instant>,
    closed: bool,
    /// What was delivered on the session's connections (the client's, or
    /// somebody else's resuming with the session).
    received: BTreeSet<u64>,
    /// The client's cursor: the highest index it received.
    cursor: Option<u64>,
    /// Events below this were declared lost to the client, by a resume
    /// answer to the client's own cursor.
    declared: u64,
    /// Events up to this one's predecessor were claimed by somebody else's
    /// resume (its cursor: "I hold everything up to here"), which the
    /// server cannot tell from the client's. Only the cursor counts: the
    /// floor that resume was told excuses nothing.
    claimed: u64,
    /// The client owes events from here on (the standalone stream: from
    /// where its first connection started).
    owed_from: Option<u64>,
    /// The lowest index the window keeps by the documented rules, ignoring
    /// budgets (its readers are counted separately).
    window_floor: u64,
    /// A connection of it was ever a shadow: from then on the window's
    /// check is left to the pin of its primary (which promotion makes the
    /// model's weakest guess), not to the window.
    had_shadow: bool,
}

impl Stream {
    fn new(id: StreamId, first: u64, now: Instant) -> Self {
        Self {
            id,
            next_index: first,
            admitted: BTreeMap::new(),
            books: BTreeMap::new(),
            waiting: VecDeque::new(),
            activity: now,
            completed_at: None,
            closed: false,
            received: BTreeSet::new(),
            cursor: None,
            declared: 0,
            claimed: 0,
            owed_from: match id {
                StreamId::Standalone => None,
                StreamId::Request(_) => Some(first),
            },
            window_floor: first,
            had_shadow: false,
        }
    }

    fn finished(&self) -> bool {
        self.completed_at.is_some()
    }

    /// One more event at `now`: the window's rule as `Window`'s docs state
    /// it (count cap first, then the last `KEEP` and the young), applied
    /// before the append, stopping at what a primary has not read.
    fn append(&mut self, index: u64, serial: u64, weight: usize, now: Instant, pinned: u64) {
        loop {
            let retained = self.next_index - self.window_floor;
            let Some(&(_, at)) = self.books.get(&self.window_floor) else {
                break;
            };
            let over_cap = retained >= MAX_EVENTS as u64;
            let aged = retained >= KEEP as u64 && now.saturating_duration_since(at) >= RETENTION;
            if self.window_floor >= pinned || !(over_cap || aged) {
                break;
            }
            self.window_floor += 1;
        }
        self.admitted.insert(index, serial);
        self.books.insert(index, (weight, now));
        self.next_index = index + 1;
    }
}

/// What a connection is to its stream, as the model places it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Primary,
    /// Kept open by keep-alives; `since` is where it goes on from if
    /// promoted (the head when it attached, or where it stopped as a
    /// demoted primary).
    Shadow {
        since: u64,
    },
}

/// One connection.
struct Reader {
    stream: usize,
    /// Dropped once it ends, as the HTTP body is.
    reader: Option<LogReader<u64>>,
    role: Role,
    /// The index the model says it reads next (a primary's).
    next: u64,
    /// The index its next event must have, when exact (a promoted shadow
    /// may be sent again what its client already has).
    expect: Option<u64>,
    last: Option<u64>,
    eager: bool,
    /// Somebody else's connection: what it reads is not the client's.
    foreign: bool,
    /// A newer connection replaced it, or the shadow cap closed it: its
    /// end is no fault.
    superseded: bool,
    ended: bool,
    /// When it last read an event, attached, or was promoted.
    progressed: Instant,
}

/// What the cases reached, counted over a run.
#[derive(Default)]
struct Reach {
    lingering: bool,
    over_cap: bool,
    promoted_past_join: bool,
    slow_reading: bool,
    /// A client's primary died with events in its socket, and no shadow
    /// waited: the client is owed them from its own cursor.
    dead_socket: bool,
}

static CASES_RUN: AtomicU32 = AtomicU32::new(0);
static LINGERING: AtomicU32 = AtomicU32::new(0);
static OVER_CAP: AtomicU32 = AtomicU32::new(0);
static PROMOTED_PAST_JOIN: AtomicU32 = AtomicU32::new(0);
static SLOW_READING: AtomicU32 = AtomicU32::new(0);
static DEAD_SOCKET: AtomicU32 = AtomicU32::new(0);
static OPS_ON_ENDED: AtomicU32 = AtomicU32::new(0);
static OPS: AtomicU32 = AtomicU32::new(0);

struct Driver {
    session: Session<u64, u64>,
    budgets: Budgets,
    streams: Vec<Stream>,
    readers: Vec<Reader>,
    next_serial: u64,
    next_request: u64,
    /// The last time an admission found the budgets short: the events
    /// appended before it may have been evicted for bytes.
    short_at: Option<Instant>,
    reach: Reach,
    /// Each stream's floor and head at the last check: what was evicted
    /// since, and what was there to evict instead.
    seen: Vec<(u64, u64)>,
    log: Vec<String>,
}

fn pick_live(readers: &[Reader], at: u8) -> Option<usize> {
    let live: Vec<usize> = (0..readers.len()).filter(|i| !readers[*i].ended).collect();
    (!live.is_empty()).then(|| live[usize::from(at) % live.len()])
}

fn pick<T>(items: &[T], at: u8) -> Option<usize> {
    (!items.is_empty()).then(|| usize::from(at) % items.len())
}

impl Driver {
    fn new(budgets: Budgets) -> Self {
        let process = Meter::new(budgets.process);
        let budget = Budget::new(budgets.session, Some(process));
        let window = Window::new(KEEP, MAX_EVENTS, RETENTION);
        let limits = Limits::new(STALL, TTL, MAX_COMPLETED, MAX_SHADOWS);
        let session = Session::new(1, window, budget, limits);
        let now = Instant::now();
        Self {
            session,
            budgets,
            streams: vec![Stream::new(StreamId::Standalone, 1, now)],
            readers: Vec::new(),
            next_serial: 1,
            next_request: 0,
            short_at: None,
            reach: Reach::default(),
            seen: Vec::new(),
            log: Vec::new(),
        }
    }

    fn fail(&self, what: String) -> TestCaseError {
        let tail: Vec<&String> = self.log.iter().rev().take(30).rev().collect();
        TestCaseError::fail(format!("{what}\nlast steps:\n{tail:#?}"))
    }

    fn stream_index(&self, id: StreamId) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    /// The stream's primary, as the model places it (one promoted below
    /// the floor is about to end, and holds nothing).
    fn primary(&self, stream: usize) -> Option<usize> {
        self.readers.iter().rposition(|r| {
            r.stream == stream && !r.ended && !r.superseded && r.role == Role::Primary
        })
    }

    /// The lowest index a primary of the stream has not read.
    fn pinned(&self, stream: usize) -> u64 {
        self.primary(stream)
            .map_or(u64::MAX, |at| self.readers[at].next)
    }

    /// When reader `at` began to owe progress, if it owes an event: its
    /// last progress, or the append of the first event it has not read,
    /// whichever is later.
    fn owing_since(&self, at: usize) -> Option<Instant> {
        let r = &self.readers[at];
        if r.ended || r.role != Role::Primary {
            return None;
        }
        let s = &self.streams[r.stream];
        if s.closed || r.next >= s.next_index {
            return None;
        }
        let appended = s.books.get(&r.next).map(|(_, at)| *at);
        Some(appended.map_or(r.progressed, |at| at.max(r.progressed)))
    }

    /// The model's own stall deadlines.
    fn stall_deadlines(&self) -> impl Iterator<Item = Instant> + '_ {
        (0..self.readers.len())
            .filter_map(|at| self.owing_since(at))
            .map(|since| since + STALL)
    }

    /// A newer connection of `stream` attached.
    fn attach(&mut self, stream: usize, reader: LogReader<u64>, start: Option<u64>, foreign: bool) {
        let now = Instant::now();
        let head = self.streams[stream].next_index;
        match (self.streams[stream].id, start) {
            // A request stream has one reader: the newest.
            (StreamId::Request(_), _) => {
                for r in self.readers.iter_mut().filter(|r| r.stream == stream) {
                    r.superseded = true;
                    r.role = Role::Shadow { since: 0 };
                }
            }
            // A fresh standalone shadow.
            (StreamId::Standalone, None) => {}
            // A standalone primary: the old one stays as a shadow that goes
            // on from where it stopped, if promoted.
            (StreamId::Standalone, Some(_)) => {
                if let Some(old) = self.primary(stream) {
                    let next = self.readers[old].next;
                    self.readers[old].role = Role::Shadow { since: next };
                    self.readers[old].expect = None;
                }
            }
        }
        // A fresh shadow goes on, if promoted, from the earlier of the head
        // and what the primary had not yet read when it came (docs/behaviour.md:
        // what may sit in a dead socket is sent again, never skipped).
        let joined = self
            .primary(stream)
            .map_or(head, |p| self.readers[p].next.min(head));
        let role = match start {
            Some(_) => Role::Primary,
            None => Role::Shadow { since: joined },
        };
        if let (StreamId::Standalone, true) = (
            self.streams[stream].id,
            self.readers.iter().any(|r| r.stream == stream && !r.ended),
        ) {
            self.streams[stream].had_shadow = true;
        }
        self.streams[stream].activity = now;
        self.readers.push(Reader {
            stream,
            reader: Some(reader),
            role,
            next: start.unwrap_or(head),
            expect: start,
            last: None,
            eager: false,
            foreign,
            superseded: false,
            ended: false,
            progressed: now,
        });
        self.enforce_shadow_cap(stream);
    }

    /// Past `MAX_SHADOWS`, the oldest shadow is closed.
    fn enforce_shadow_cap(&mut self, stream: usize) {
        loop {
            let shadows: Vec<usize> = (0..self.readers.len())
                .filter(|i| {
                    let r = &self.readers[*i];
                    r.stream == stream
                        && !r.ended
                        && !r.superseded
                        && matches!(r.role, Role::Shadow { .. })
                })
                .collect();
            if shadows.len() <= MAX_SHADOWS {
                return;
            }
            self.readers[shadows[0]].superseded = true;
        }
    }

    /// The primary of `stream` is gone: the newest shadow goes on from
    /// where the primary stopped or where it joined, whichever is earlier.
    fn promote(&mut self, stream: usize, gone_next: u64) -> Option<usize> {
        let at = self.readers.iter().rposition(|r| {
            r.stream == stream && !r.ended && !r.superseded && matches!(r.role, Role::Shadow { .. })
        })?;
        let Role::Shadow { since } = self.readers[at].role else {
            return None;
        };
        if gone_next > since {
            self.reach.promoted_past_join = true;
        }
        let next = gone_next.min(since);
        // Below what the log still holds, it is ended so that its client
        // resumes and is told the floor (`log`'s docs): no fault of it.
        let floor = self
            .session
            .log(self.streams[stream].id)
            .map_or(0, |log| log.view().floor);
        self.log.push(format!(
            "  promoted {at} at {next} (gone at {gone_next}, joined {since}, floor {floor})"
        ));
        let r = &mut self.readers[at];
        r.role = Role::Primary;
        r.next = next;
        r.expect = None;
        r.progressed = Instant::now();
        r.superseded = next < floor;
        Some(at)
    }

    fn handle(&mut self, admissions: Vec<Admission<u64>>) -> Result<(), TestCaseError> {
        for admission in admissions {
            self.admit(admission)?;
        }
        Ok(())
    }

    fn admit(&mut self, admission: Admission<u64>) -> Result<(), TestCaseError> {
        match admission {
            Admission::Admitted {
                stream,
                index,
                completed,
                ticket,
            } => {
                let at = self
                    .stream_index(stream)
                    .ok_or_else(|| self.fail(format!("admitted to unknown {stream:?}")))?;
                let pinned = self.pinned(at);
                let now = Instant::now();
                let s = &mut self.streams[at];
                let front = s.waiting.pop_front();
                let Some((serial, _, completes, weight)) = front else {
                    return Err(self.fail(format!("{stream:?}: admitted {ticket} never waited")));
                };
                if serial != ticket || index != s.next_index {
                    let expected = s.next_index;
                    return Err(self.fail(format!(
                        "{stream:?}: admitted {ticket} at {index}, expected {serial} at {expected}"
                    )));
                }
                s.append(index, ticket, weight, now, pinned);
                s.activity = now;
                let floor = s.window_floor;
                self.log.push(format!(
                    "  admitted {stream:?} {index}, pinned {pinned}, window {floor}"
                ));
                let s = &mut self.streams[at];
                if completed != (completes && s.completed_at.is_none()) {
                    return Err(
                        self.fail(format!("{stream:?}: completed {completed} for {ticket}"))
                    );
                }
                if completed {
                    s.completed_at = Some(now);
                }
            }
            Admission::Gone { stream, ticket } => {
                let at = self
                    .stream_index(stream)
                    .ok_or_else(|| self.fail(format!("gone from unknown {stream:?}")))?;
                let s = &mut self.streams[at];
                let Some(position) = s.waiting.iter().position(|(serial, ..)| *serial == ticket)
                else {
                    return Err(self.fail(format!("{stream:?}: {ticket} gone twice")));
                };
                s.waiting.remove(position);
                if self.session.log(stream).is_some() {
                    return Err(self.fail(format!("{stream:?}: {ticket} gone from a live stream")));
                }
            }
        }
        Ok(())
    }

    /// Polls reader `at` once; whether it yielded an event.
    fn poll(&mut self, at: usize) -> Result<bool, TestCaseError> {
        self.poll_to(at, true)
    }

    /// Polls reader `at` once; whether it yielded an event. An event that
    /// does not `arrive` was written into a dead socket: the session
    /// counts it as read, the client never had it.
    fn poll_to(&mut self, at: usize, arrive: bool) -> Result<bool, TestCaseError> {
        let r = &mut self.readers[at];
        if r.ended {
            return Ok(false);
        }
        let Some(next) = r
            .reader
            .as_mut()
            .and_then(|reader| reader.next().now_or_never())
        else {
            return Ok(false);
        };
        let stream = r.stream;
        let Some(logged) = next else {
            return self.ended(at).map(|()| false);
        };
        let s = &self.streams[stream];
        let admitted = s.admitted.get(&logged.index).copied();
        if admitted != Some(logged.event) || logged.id != s.id.event(logged.index).to_string() {
            return Err(self.fail(format!(
                "{:?}: read {} ({}) at {}, admitted {admitted:?}",
                s.id, logged.event, logged.id, logged.index
            )));
        }
        let r = &self.readers[at];
        if r.role != Role::Primary || logged.index != r.next {
            let (role, next) = (r.role, r.next);
            return Err(self.fail(format!(
                "{:?}: read {} on a connection the model has as {role:?} at {next}",
                s.id, logged.index
            )));
        }
        let order = match (r.expect, r.last) {
            (Some(expect), _) => logged.index == expect,
            (None, Some(last)) => logged.index <= last + 1,
            (None, None) => true,
        };
        if !order {
            let (expect, last) = (r.expect, r.last);
            return Err(self.fail(format!(
                "{:?}: read {} after {last:?}, expected {expect:?}",
                self.streams[stream].id, logged.index
            )));
        }
        let now = Instant::now();
        let r = &mut self.readers[at];
        r.last = Some(logged.index);
        r.next = logged.index + 1;
        r.progressed = now;
        r.expect = r.expect.map(|_| logged.index + 1);
        let foreign = r.foreign;
        let s = &mut self.streams[stream];
        s.activity = now;
        // Delivered to the session whoever read it: the server cannot tell
        // another holder of the session from the client, and promotes on
        // from where any primary stopped. Only the client's own reads move
        // its cursor.
        if !arrive {
            return Ok(true);
        }
        s.received.insert(logged.index);
        if !foreign {
            s.cursor = s.cursor.max(Some(logged.index));
            s.owed_from.get_or_insert(logged.index);
        }
        Ok(true)
    }

    /// Reader `at` reads everything from now on.
    fn make_eager(&mut self, at: usize) -> Result<(), TestCaseError> {
        while self.poll(at)? {}
        self.readers[at].eager = !self.readers[at].ended;
        Ok(())
    }

    /// Reader `at`'s connection ended: legitimate when a newer connection
    /// replaced it, its stream ended (answered and drained, closed,
    /// expired), or it owed an event for the stall timeout with no
    /// progress. It is dropped, as the HTTP body is; a primary's going
    /// promotes a shadow.
    fn ended(&mut self, at: usize) -> Result<(), TestCaseError> {
        let now = Instant::now();
        let owing = self.owing_since(at);
        let r = &self.readers[at];
        let s = &self.streams[r.stream];
        let excused = r.superseded
            || s.closed
            || self.session.log(s.id).is_none()
            || matches!(r.role, Role::Shadow { .. })
            || (s.finished() && r.next >= s.next_index);
        if !excused {
            match owing {
                Some(since) if now.saturating_duration_since(since) >= STALL => {}
                Some(since) => {
                    return Err(self.fail(format!(
                        "{:?}: a reader owing {} was ended {:?} after it began to owe \
                         (stall timeout {STALL:?})",
                        s.id,
                        r.next,
                        now.saturating_duration_since(since)
                    )));
                }
                None => {
                    return Err(self.fail(format!(
                        "{:?}: a reader that owed nothing was ended at {} (head {})",
                        s.id, r.next, s.next_index
                    )));
                }
            }
        }
        self.drop_reader(at);
        Ok(())
    }

    /// Reader `at` goes, as a dropped connection does. A primary's going
    /// promotes the newest shadow; one promoted below the floor is rung,
    /// and its body, polled, ends at once (no peer's read is needed for
    /// that), which promotes the next.
    fn drop_reader(&mut self, at: usize) {
        let mut going = Some(at);
        while let Some(at) = going.take() {
            let r = &mut self.readers[at];
            r.ended = true;
            r.eager = false;
            r.reader = None;
            let (stream, role, next) = (r.stream, r.role, r.next);
            self.streams[stream].activity = Instant::now();
            if role != Role::Primary {
                continue;
            }
            let Some(promoted) = self.promote(stream, next) else {
                continue;
            };
            let r = &mut self.readers[promoted];
            if !r.superseded {
                continue;
            }
            let done = r
                .reader
                .as_mut()
                .and_then(|reader| reader.next().now_or_never())
                .is_some_and(|next| next.is_none());
            if done {
                going = Some(promoted);
            }
        }
    }

    fn deliver(
        &mut self,
        pick_at: u8,
        weight: usize,
        completes: bool,
    ) -> Result<(), TestCaseError> {
        let Some(at) = pick(&self.streams, pick_at) else {
            return Ok(());
        };
        self.deliver_to(at, weight, completes)
    }

    fn deliver_to(
        &mut self,
        at: usize,
        weight: usize,
        completes: bool,
    ) -> Result<(), TestCaseError> {
        // A handler sends nothing on a request it already answered.
        let at = if self.streams[at].finished() || self.streams[at].closed {
            0
        } else {
            at
        };
        let stream = self.streams[at].id;
        let completes = completes && matches!(stream, StreamId::Request(_));
        let serial = self.next_serial;
        self.next_serial += 1;
        let now = Instant::now();
        let held = self.bytes();
        if held + weight > self.budgets.session.min(self.budgets.process) {
            self.short_at = Some(now);
        }
        self.streams[at]
            .waiting
            .push_back((serial, now, completes, weight));
        let pending = Pending {
            event: serial,
            id: None,
            weight,
            completes,
            ticket: serial,
        };
        if let Some(admission) = self.session.deliver_at(stream, pending, now) {
            self.admit(admission)?;
        }
        Ok(())
    }

    /// The client (`own`) or somebody else resumes stream `at` from
    /// `cursor`.
    fn resume(&mut self, at: usize, cursor: u64, own: bool) -> Result<(), TestCaseError> {
        self.expire()?;
        let id = self.streams[at].id;
        let resumed = self.session.resume_at(id.event(cursor), Instant::now());
        let answer = resumed.answer;
        self.log.push(format!("  -> {answer:?}"));
        let plan_floor = match answer {
            ResumeAnswer::Replay { from, floor } => {
                if from != cursor + 1 {
                    return Err(self.fail(format!("{id:?}: replay of {cursor} from {from}")));
                }
                Some(floor)
            }
            ResumeAnswer::Fallback { floor, .. } => Some(floor),
            // A refusal: the call fails, and says why; nothing more of the
            // stream is owed.
            ResumeAnswer::BelowFloor { .. } => Some(u64::MAX),
            _ => None,
        };
        // Only the client's own resume tells the client anything; somebody
        // else's claims what its cursor names, no more.
        let s = &mut self.streams[at];
        match (own, plan_floor, answer) {
            (true, Some(floor), _) => s.declared = s.declared.max(floor),
            (false, _, ResumeAnswer::Replay { .. } | ResumeAnswer::Fallback { .. }) => {
                s.claimed = s.claimed.max(cursor + 1);
            }
            _ => {}
        }
        if let Some(reader) = resumed.reader {
            let start = answer.start();
            self.attach(at, reader, start, !own);
            if own {
                self.streams[at].owed_from.get_or_insert(start.unwrap_or(0));
            }
        }
        Ok(())
    }

    fn get(&mut self) -> Result<(), TestCaseError> {
        if let (Some(cursor), None) = (self.streams[0].cursor, self.primary(0)) {
            return self.resume(0, cursor, true);
        }
        let (reader, attached) = self.session.attach_standalone_at(Instant::now());
        let start = match attached {
            crate::log::Attached::Primary {
                start,
                skipped_from,
            } => {
                let expected = self.readers.iter().all(|r| r.stream != 0 || r.ended)
                    || self.primary(0).is_none();
                if !expected {
                    return Err(
                        self.fail("a fresh GET became the primary beside a live one".into())
                    );
                }
                if let Some(from) = skipped_from {
                    // Told: the client resumes nothing below the start.
                    let s = &mut self.streams[0];
                    s.declared = s.declared.max(start);
                    self.log
                        .push(format!("  -> skipped from {from} to {start}, told"));
                }
                Some(start)
            }
            crate::log::Attached::Shadow => None,
        };
        if start.is_some()
            && self.streams[0].cursor.is_none()
            && self.streams[0].owed_from.is_none()
        {
            self.streams[0].owed_from = start;
        }
        // The response's first frame is the priming event (the worker's
        // `retry` hint, on by default), whose id is one below the start:
        // a client with no cursor holds that one from now on, and resumes
        // with it rather than asking afresh.
        if let Some(start) = start
            && self.streams[0].cursor.is_none()
        {
            self.streams[0].cursor = start.checked_sub(1);
        }
        self.attach(0, reader, start, false);
        Ok(())
    }

    fn open(&mut self) -> Result<(), TestCaseError> {
        let m = self.next_request;
        self.next_request += 1;
        if self.session.open_request(m, ()).is_err() {
            return Err(self.fail(format!("request stream {m} opened twice")));
        }
        let id = StreamId::Request(m);
        let now = Instant::now();
        self.streams.push(Stream::new(id, 0, now));
        let at = self.streams.len() - 1;
        // The priming event (rmcp's `retry` hint) gives the client its
        // first cursor, with the response's headers.
        let serial = self.next_serial;
        self.next_serial += 1;
        if self.session.append_control_at(id, serial, None, 0, now) != Some(0) {
            return Err(self.fail(format!("{id:?}: priming not at 0")));
        }
        self.streams[at].append(0, serial, 0, now, u64::MAX);
        let Some(reader) = self.session.connect_at(id, 0, now) else {
            return Err(self.fail(format!("{id:?}: no reader at open")));
        };
        self.attach(at, reader, Some(0), false);
        let last = self.readers.len() - 1;
        if !self.poll(last)? {
            return Err(self.fail(format!("{id:?}: no priming event")));
        }
        Ok(())
    }

    /// Whether stream `at`'s primary is reading it: it owes an event and
    /// made progress within the stall timeout.
    fn reading(&self, at: usize, now: Instant) -> bool {
        self.primary(at)
            .and_then(|r| self.owing_since(r))
            .is_some_and(|since| now.saturating_duration_since(since) < STALL)
    }

    fn expire(&mut self) -> Result<(), TestCaseError> {
        // An expiry that frees a stream flushes what waits.
        self.note_shortage();
        let now = Instant::now();
        // Before: which answered streams are within their TTL, oldest first.
        let gone = self.session.expire(now);
        for at in 0..self.streams.len() {
            let s = &self.streams[at];
            if !s.closed && self.session.log(s.id).is_none() {
                self.expired(at, now)?;
                self.streams[at].closed = true;
            }
        }
        self.handle(gone)?;
        for at in 0..self.streams.len() {
            let s = &self.streams[at];
            let Some(completed) = s.completed_at else {
                continue;
            };
            if s.closed || now.saturating_duration_since(completed) < TTL {
                continue;
            }
            if self.reading(at, now) {
                self.reach.lingering = true;
                continue;
            }
            return Err(self.fail(format!(
                "{:?}: answered, retained past its TTL with no reader reading it",
                s.id
            )));
        }
        let answered = self
            .streams
            .iter()
            .filter(|s| s.finished() && !s.closed)
            .filter(|s| now.saturating_duration_since(s.completed_at.unwrap_or(now)) < TTL)
            .count();
        if answered > MAX_COMPLETED {
            // Only readers still reading keep streams over the cap.
            let reading = (0..self.streams.len())
                .filter(|at| {
                    let s = &self.streams[*at];
                    s.finished() && !s.closed && self.reading(*at, now)
                })
                .count();
            if answered > MAX_COMPLETED + reading {
                return Err(self.fail(format!(
                    "{answered} answered streams kept, cap {MAX_COMPLETED}, {reading} being read"
                )));
            }
        }
        Ok(())
    }

    /// Stream `at` just expired: it was answered, and its primary, if it
    /// owed an event, owed it for the stall timeout.
    fn expired(&mut self, at: usize, now: Instant) -> Result<(), TestCaseError> {
        let s = &self.streams[at];
        let Some(completed) = s.completed_at else {
            return Err(self.fail(format!("{:?}: expired, never answered", s.id)));
        };
        if now.saturating_duration_since(completed) < TTL {
            self.reach.over_cap = true;
        }
        if self.reading(at, now) {
            let s = &self.streams[at];
            return Err(self.fail(format!(
                "{:?}: expired under a reader still reading it",
                s.id
            )));
        }
        Ok(())
    }

    /// Stream `at`'s connections, for a failure's message.
    fn describe(&self, at: usize) -> String {
        let readers: Vec<String> = self
            .readers
            .iter()
            .filter(|r| r.stream == at)
            .map(|r| {
                format!(
                    "{:?} next {} ended {} superseded {} foreign {}",
                    r.role, r.next, r.ended, r.superseded, r.foreign
                )
            })
            .collect();
        let view = self.session.log(self.streams[at].id).map(|log| log.view());
        format!("readers {readers:?}, view {view:?}")
    }

    /// The bytes the model counts: each retained stream's events from the
    /// floor a resume would be told.
    fn bytes(&self) -> usize {
        self.streams
            .iter()
            .filter(|s| !s.closed)
            .filter_map(|s| {
                let floor = self.session.log(s.id)?.view().floor;
                Some(s.books.range(floor..).map(|(_, (w, _))| *w).sum::<usize>())
            })
            .sum()
    }

    /// A waiting message that the bytes do not take makes the session evict
    /// for bytes when it is tried again (a flush, an expiry, an end).
    fn note_shortage(&mut self) {
        let held = self.bytes();
        let limit = self.budgets.session.min(self.budgets.process);
        // A flush admits queue after queue: what waits in all of them may
        // need evictions on the way.
        let waiting: usize = self
            .streams
            .iter()
            .flat_map(|s| s.waiting.iter())
            .map(|(.., weight)| *weight)
            .sum();
        let short = waiting > 0 && held + waiting > limit;
        if short {
            self.short_at = Some(Instant::now());
        }
    }

    /// What the rmcp worker does between two events, then the checks.
    fn settle(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..1_000 {
            let mut moved = false;
            self.note_shortage();
            self.expire()?;
            self.note_shortage();
            if self.session.room().made().now_or_never().is_some() {
                let admitted = self.session.flush_at(Instant::now());
                moved |= !admitted.is_empty();
                self.handle(admitted)?;
            }
            let now = Instant::now();
            if let Some(deadline) = self.session.stall_deadline()
                && deadline <= now
            {
                self.note_shortage();
                let admitted = self.session.end_stalled(now);
                moved |= !admitted.is_empty();
                self.handle(admitted)?;
            }
            // A reader that has owed an event for the stall timeout by the
            // model's own clock must be ended by now, whatever the session's
            // deadline said: polled, it ends, and yields nothing.
            for at in 0..self.readers.len() {
                let Some(since) = self.owing_since(at) else {
                    continue;
                };
                if since + STALL > now {
                    continue;
                }
                let owed = self.readers[at].next;
                if self.poll(at)? {
                    let id = self.streams[self.readers[at].stream].id;
                    return Err(self.fail(format!(
                        "{id:?}: a reader that owed {owed} for {:?} was not ended, and read it",
                        now.saturating_duration_since(since)
                    )));
                }
                // Its end detached it, which may have made room.
                moved |= self.readers[at].ended;
            }
            for at in 0..self.readers.len() {
                if self.readers[at].eager {
                    while self.poll(at)? {
                        moved = true;
                    }
                    // Its end detached it, which may have made room.
                    moved |= self.readers[at].ended;
                }
            }
            if !moved {
                self.check()?;
                return self.check_eviction_order();
            }
        }
        let now = Instant::now();
        let session = self
            .session
            .stall_deadline()
            .map(|d| d.saturating_duration_since(now));
        let all: Vec<String> = (0..self.streams.len())
            .map(|at| self.describe(at))
            .collect();
        Err(self.fail(format!(
            "the session never settled (its stall deadline in {session:?}, waiting {}; {all:?})",
            self.session.has_waiting()
        )))
    }

    /// Whether stream `at` is one the session evicts from for bytes, oldest
    /// event first across them: the standalone stream, an open call, an
    /// answered call kept past its TTL for its reader (the earliest other
    /// answered call is one too, but which one is earliest depends on what
    /// the others hold, so the model leaves them out).
    fn evicts_for_bytes(&self, at: usize, now: Instant) -> bool {
        let s = &self.streams[at];
        if s.closed || s.had_shadow {
            return false;
        }
        match s.completed_at {
            None => true,
            Some(completed) => now.saturating_duration_since(completed) >= TTL,
        }
    }

    /// An event the budgets evicted since the last check (past the window's
    /// own floor) must have been the oldest evictable one: no older event,
    /// already there at the last check and read by its stream's primary,
    /// may still be kept on another stream the session evicts from.
    fn check_eviction_order(&mut self) -> Result<(), TestCaseError> {
        let now = Instant::now();
        let floors: Vec<Option<u64>> = self
            .streams
            .iter()
            .map(|s| self.session.log(s.id).map(|log| log.view().floor))
            .collect();
        for (b, floor) in floors.iter().enumerate() {
            let (Some(floor), Some(&(was, _))) = (floor, self.seen.get(b)) else {
                continue;
            };
            let stream = &self.streams[b];
            let evicted = (was.max(stream.window_floor))..*floor;
            for e in evicted {
                let Some(&(_, appended)) = stream.books.get(&e) else {
                    continue;
                };
                for (a, a_floor) in floors.iter().enumerate() {
                    let (Some(a_floor), Some(&(_, a_head))) = (a_floor, self.seen.get(a)) else {
                        continue;
                    };
                    if a == b || !self.evicts_for_bytes(a, now) || !self.evicts_for_bytes(b, now) {
                        continue;
                    }
                    let front = *a_floor;
                    let older = self.streams[a]
                        .books
                        .get(&front)
                        .is_some_and(|(_, at)| *at < appended);
                    if older && front < a_head && front < self.pinned(a) {
                        return Err(self.fail(format!(
                            "{:?}: {e} was evicted for bytes while {:?} kept {front}, \
                             older and read",
                            stream.id, self.streams[a].id
                        )));
                    }
                }
            }
        }
        self.seen = floors
            .iter()
            .zip(&self.streams)
            .map(|(floor, s)| (floor.unwrap_or(s.next_index), s.next_index))
            .collect();
        Ok(())
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let streams = self.streams.iter().filter(|s| !s.closed).count();
        let slack = streams * MAX_WEIGHT;
        let used = self.bytes();
        let limit = self.budgets.session.min(self.budgets.process);
        if used > limit + slack {
            return Err(self.fail(format!(
                "{used} bytes held, over {limit} + {slack} ({:?})",
                self.budgets
            )));
        }
        let now = Instant::now();
        for (at, s) in self.streams.iter().enumerate() {
            if s.closed {
                continue;
            }
            let Some(floor) = self.session.log(s.id).map(|log| log.view().floor) else {
                continue;
            };
            // Nothing a primary has not read is gone.
            let pinned = self.pinned(at);
            if floor > pinned && pinned < s.next_index {
                return Err(self.fail(format!(
                    "{:?}: floor {floor} passed its primary's next event {pinned} ({})",
                    s.id,
                    self.describe(at)
                )));
            }
            // Nothing the window keeps is gone, unless bytes were short
            // since it was appended.
            let protected = s.window_floor;
            if floor > protected && !s.had_shadow {
                let evictable = s.books.get(&protected).is_some_and(|(_, appended)| {
                    self.short_at.is_some_and(|short| short >= *appended)
                });
                if !evictable {
                    let ages: Vec<(u64, usize, Duration)> = s
                        .books
                        .iter()
                        .map(|(i, (w, at))| (*i, *w, now.saturating_duration_since(*at)))
                        .collect();
                    return Err(self.fail(format!(
                        "{:?}: floor {floor} passed the window's {protected} with no shortage                          of bytes (held {}, {:?}, short {:?} ago, books {ages:?}, {})",
                        s.id,
                        self.bytes(),
                        self.budgets,
                        self.short_at.map(|at| now.saturating_duration_since(at)),
                        self.describe(at)
                    )));
                }
            }
            // A primary that owed an event for the stall timeout is gone.
            if let Some(r) = self.primary(at)
                && let Some(since) = self.owing_since(r)
                && now.saturating_duration_since(since) > STALL
            {
                return Err(self.fail(format!(
                    "{:?}: a reader owing {} for {:?} is still attached",
                    s.id,
                    self.readers[r].next,
                    now.saturating_duration_since(since)
                )));
            }
            let Some(&(serial, since, ..)) = s.waiting.front() else {
                continue;
            };
            let unread: usize = self.primary(at).map_or(0, |r| {
                s.books
                    .range(self.readers[r].next..)
                    .map(|(_, (w, _))| *w)
                    .sum()
            });
            if unread == 0 {
                return Err(self.fail(format!(
                    "{:?}: {serial} waits, but no reader of its stream holds unread bytes ({})",
                    s.id,
                    self.describe(at)
                )));
            }
            let waited = now.saturating_duration_since(since.max(s.activity));
            if waited > STALL {
                return Err(self.fail(format!(
                    "{:?}: {serial} waited {waited:?} with no progress on its stream",
                    s.id
                )));
            }
        }
        if self.session.has_waiting() != self.streams.iter().any(|s| !s.waiting.is_empty()) {
            return Err(self.fail("the session and the model disagree on waiting".into()));
        }
        // A quiet owner wakes for an expiry only at the time the session
        // names: it must be no later than the model's earliest TTL.
        // Past its TTL, a stream kept for a reader still reading it is due
        // when that reader will have owed its next event for the stall
        // timeout. (Over the cap, a stream's due time depends on which
        // others linger; the cap itself is checked in `expire`.)
        let answered = self
            .streams
            .iter()
            .filter(|s| !s.closed && s.finished())
            .count();
        let due = (0..self.streams.len())
            .filter(|_| answered <= MAX_COMPLETED)
            .filter(|at| !self.streams[*at].closed)
            .filter_map(|at| {
                let ttl = self.streams[at].completed_at? + TTL;
                if ttl > now {
                    return Some(ttl);
                }
                let since = self.primary(at).and_then(|r| self.owing_since(r))?;
                Some(since + STALL)
            })
            .min();
        if let Some(due) = due {
            let named = self.session.next_expiry();
            if named.is_none_or(|named| named > due.max(now)) {
                return Err(self.fail(format!(
                    "an answered stream is due to expire in {:?}, the session names {:?}",
                    due.saturating_duration_since(now),
                    named.map(|n| n.saturating_duration_since(now))
                )));
            }
        }
        Ok(())
    }

    /// Moves the clock by `by`, stopping at every deadline on the way, the
    /// session's and the model's own.
    async fn advance(&mut self, by: Duration) -> Result<(), TestCaseError> {
        let target = Instant::now() + by;
        for _ in 0..1_000 {
            let now = Instant::now();
            if now >= target {
                return Ok(());
            }
            let model: Vec<Instant> = self.stall_deadlines().collect();
            let next = [self.session.stall_deadline(), self.session.next_expiry()]
                .into_iter()
                .flatten()
                .chain(model)
                .filter(|at| *at > now)
                .fold(target, Instant::min);
            tokio::time::advance(next - now).await;
            self.settle()?;
        }
        Err(self.fail("the clock never reached its target".into()))
    }

    /// Reader `at` reads one event every `gap`, `rounds` times.
    async fn slow(&mut self, at: usize, rounds: u8, gap: Duration) -> Result<(), TestCaseError> {
        let mut read = 0;
        for _ in 0..rounds {
            if self.readers[at].ended {
                break;
            }
            if self.poll(at)? {
                read += 1;
            }
            self.settle()?;
            self.advance(gap).await?;
        }
        if read >= 2 {
            self.reach.slow_reading = true;
        }
        Ok(())
    }

    async fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        self.log.push(format!("{op:?}"));
        OPS.fetch_add(1, Ordering::Relaxed);
        match *op {
            Op::Open => self.open()?,
            Op::Deliver {
                pick: at,
                weight,
                completes,
            } => self.deliver(at, weight, completes)?,
            Op::Get => self.get()?,
            Op::Resume { pick: at } => {
                if let Some(at) = pick(&self.streams, at)
                    && let Some(cursor) = self.streams[at].cursor
                    && !self.streams[at].closed
                {
                    self.resume(at, cursor, true)?;
                }
            }
            Op::Foreign { pick: at, cursor } => {
                if let Some(at) = pick(&self.streams, at) {
                    let head = self.streams[at].next_index;
                    self.resume(at, u64::from(cursor) % (head + 3), false)?;
                }
            }
            Op::Read { reader, n } => {
                if let Some(at) = pick_live(&self.readers, reader) {
                    for _ in 0..n {
                        self.poll(at)?;
                    }
                }
            }
            Op::Slow {
                reader,
                rounds,
                gap_ms,
            } => {
                if let Some(at) = pick_live(&self.readers, reader) {
                    let gap = Duration::from_millis(u64::from(gap_ms));
                    self.slow(at, rounds, gap).await?;
                }
            }
            Op::Eager { reader } => {
                if let Some(at) = pick_live(&self.readers, reader) {
                    self.make_eager(at)?;
                }
            }
            Op::Linger { events, gap_ms } => {
                self.open()?;
                let (stream, reader) = (self.streams.len() - 1, self.readers.len() - 1);
                for n in 0..=events {
                    self.deliver_to(stream, 10, n == events)?;
                }
                self.settle()?;
                let gap = Duration::from_millis(u64::from(gap_ms));
                self.slow(reader, events + 2, gap).await?;
            }
            Op::Handover { events } => {
                if self.primary(0).is_none() {
                    self.get()?;
                    self.settle()?;
                }
                if let Some(primary) = self.primary(0) {
                    self.get()?;
                    for _ in 0..events {
                        self.deliver_to(0, 10, false)?;
                    }
                    while self.poll(primary)? {}
                    self.settle()?;
                    if !self.readers[primary].ended {
                        self.drop_reader(primary);
                    }
                }
            }
            Op::Burst { calls } => {
                for _ in 0..calls {
                    self.open()?;
                    let stream = self.streams.len() - 1;
                    self.deliver_to(stream, 10, true)?;
                    self.settle()?;
                }
            }
            Op::Drop { reader } => {
                if let Some(at) = pick_live(&self.readers, reader) {
                    self.drop_reader(at);
                }
            }
            Op::Die { reader, n } => {
                if let Some(at) = pick_live(&self.readers, reader) {
                    let foreign = self.readers[at].foreign;
                    for _ in 0..n {
                        if !self.poll_to(at, false)? {
                            break;
                        }
                        if !foreign {
                            self.reach.dead_socket = true;
                        }
                    }
                    if !self.readers[at].ended {
                        self.drop_reader(at);
                    }
                }
            }
            Op::Close { pick: at } => {
                if let Some(at) = pick(&self.streams, at)
                    && let StreamId::Request(m) = self.streams[at].id
                    && !self.streams[at].closed
                {
                    self.note_shortage();
                    let Some(((), gone)) = self.session.close_request_at(m, Instant::now()) else {
                        return Err(self.fail(format!("request stream {m} not retained")));
                    };
                    self.streams[at].closed = true;
                    self.handle(gone)?;
                }
            }
            Op::Advance { ms } => self.advance(Duration::from_millis(u64::from(ms))).await?,
        }
        if matches!(
            op,
            Op::Read { .. } | Op::Eager { .. } | Op::Drop { .. } | Op::Die { .. } | Op::Slow { .. }
        ) && self.readers.iter().all(|r| r.ended)
        {
            OPS_ON_ENDED.fetch_add(1, Ordering::Relaxed);
        }
        self.settle()
    }

    /// Whether the client holds every event of stream `at` it is owed.
    fn caught_up(&self, at: usize) -> bool {
        let s = &self.streams[at];
        let Some(from) = s.owed_from else {
            return true;
        };
        s.admitted
            .range(from.max(s.declared).max(s.claimed)..)
            .all(|(index, _)| s.received.contains(index))
    }

    /// The client reads every connection it has, then catches up on every
    /// stream from its own cursor; every admitted event must then be
    /// received, declared lost to the client, or on a closed stream.
    async fn finish(&mut self) -> Result<(), TestCaseError> {
        // Somebody else's connections go first: what they read was never
        // the client's, and the client's own shadow goes on when promoted.
        for at in 0..self.readers.len() {
            if self.readers[at].foreign && !self.readers[at].ended {
                self.drop_reader(at);
            }
        }
        self.settle()?;
        for at in 0..self.readers.len() {
            self.make_eager(at)?;
        }
        self.settle()?;
        for at in 0..self.streams.len() {
            for _ in 0..8 {
                let s = &self.streams[at];
                if s.closed || self.session.log(s.id).is_none() || self.caught_up(at) {
                    break;
                }
                let readers = self.readers.len();
                match (s.cursor, s.owed_from) {
                    (Some(cursor), _) => self.resume(at, cursor, true)?,
                    // Owed events and no cursor: only the standalone stream's
                    // first connection can be there; a fresh GET starts where it
                    // stopped, or says where it skipped from.
                    (None, Some(_)) if at == 0 => {
                        if self.primary(0).is_some() {
                            break;
                        }
                        self.get()?;
                    }
                    _ => break,
                }
                if self.readers.len() == readers {
                    break;
                }
                self.make_eager(readers)?;
                self.settle()?;
            }
        }
        if self.session.has_waiting() {
            return Err(self.fail("messages still wait, though every reader read".into()));
        }
        for at in 0..self.streams.len() {
            let s = &self.streams[at];
            if s.closed || self.caught_up(at) {
                continue;
            }
            let missing: Vec<u64> = s
                .admitted
                .keys()
                .filter(|i| **i >= s.declared.max(s.claimed) && !s.received.contains(i))
                .copied()
                .collect();
            return Err(self.fail(format!(
                "{:?}: events {missing:?} never received and never declared lost \
                 (owed from {:?}, declared floor {}, cursor {:?}, view {:?})",
                s.id,
                s.owed_from,
                s.declared,
                s.cursor,
                self.session.log(s.id).map(|l| l.view())
            )));
        }
        Ok(())
    }
}

fn run(budgets: Budgets, ops: &[Op]) -> Result<Reach, TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| TestCaseError::fail(format!("runtime: {e}")))?;
    runtime.block_on(async {
        let mut driver = Driver::new(budgets);
        for op in ops {
            driver.step(op).await?;
        }
        driver.finish().await?;
        Ok(std::mem::take(&mut driver.reach))
    })
}

/// `PROPTEST_CASES` and `PROPTEST_RNG_SEED` over the fixed run.
fn config() -> proptest::test_runner::Config {
    let mut config = crate::proptest_config::fixed(CASES, SEED);
    if let Some(cases) = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
    {
        config.cases = cases;
    }
    if let Some(seed) = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|c| c.parse().ok())
    {
        config.rng_seed = RngSeed::Fixed(seed);
    }
    config
}

#[test]
fn model_the_session_keeps_its_promises() {
    let config = config();
    let mut runner = TestRunner::new(config.clone());
    let cases = (budgets(), prop::collection::vec(op(), 1..120));
    let result = runner.run(&cases, |(budgets, ops)| {
        let reach = run(budgets, &ops)?;
        CASES_RUN.fetch_add(1, Ordering::Relaxed);
        for (reached, count) in [
            (reach.lingering, &LINGERING),
            (reach.over_cap, &OVER_CAP),
            (reach.promoted_past_join, &PROMOTED_PAST_JOIN),
            (reach.slow_reading, &SLOW_READING),
            (reach.dead_socket, &DEAD_SOCKET),
        ] {
            if reached {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    });
    if let Err(error) = result {
        panic!("{error}");
    }
    // Shrinking reruns cases: the shares are of the cases run, which with
    // no failure are the configured ones.
    let run = f64::from(CASES_RUN.load(Ordering::Relaxed).max(1));
    let shares = [
        ("lingering answered stream", &LINGERING),
        ("expiry over the answered cap", &OVER_CAP),
        ("promotion past the join point", &PROMOTED_PAST_JOIN),
        ("slow but reading reader", &SLOW_READING),
        ("events lost in a dead socket", &DEAD_SOCKET),
    ]
    .map(|(what, count)| (what, f64::from(count.load(Ordering::Relaxed)) / run));
    let wasted = f64::from(OPS_ON_ENDED.load(Ordering::Relaxed))
        / f64::from(OPS.load(Ordering::Relaxed).max(1));
    eprintln!(
        "model reach over {run} cases: {shares:?}; reader ops with no live reader: {wasted:.3}"
    );
    for (what, share) in shares {
        assert!(
            share >= MIN_REACH,
            "{what}: reached in {share:.3} of the cases, under {MIN_REACH}"
        );
    }
}
