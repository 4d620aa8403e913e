//! A property test of [`Session`] against a reference model of its promises
//! (issue #24), under generated sequences of operations.
//!
//! # The driver
//!
//! One session, with a small window, a byte budget and a process budget
//! smaller than it, so that every admission path is taken. The generated
//! operations open request streams, deliver messages of random weights to
//! any stream (some answering their request), attach fresh standalone
//! connections (primaries or shadows), resume with the client's own cursor
//! or with a random one, read a few events, make a reader eager (it reads
//! everything, every step), drop connections, close streams and step the
//! clock. After every operation the driver does what the rmcp worker does:
//! expire, flush when a reader made room, end stalled readers at their
//! deadline; with the clock paused, time moves only in [`Op::Advance`], in
//! steps that stop at every deadline the session names.
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
//! - **No eviction under a reading reader.** A reader that reads every step
//!   ends only when its stream ends (answered and drained, or closed), or a
//!   newer connection of its stream replaced it.
//! - **Budgets.** The session's and the process's bytes stay within their
//!   limits plus one message per stream.
//! - **Waits.** A message waits only while its own stream's reader holds
//!   unread bytes, and never longer than the stall timeout past the last
//!   progress on its stream.
//! - **Tickets.** Every message is admitted once, in order per stream, or
//!   returned once as gone (its stream closed).
//!
//! `PROPTEST_CASES` and `PROPTEST_RNG_SEED` are honoured; the normal run has
//! [`CASES`] cases from a fixed seed. For more:
//!
//! ```text
//! PROPTEST_CASES=20000 cargo nextest run -p rmcp-resume-core session::model
//! ```

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use proptest::prelude::*;
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
const SESSION_BYTES: usize = 2_000;
const PROCESS_BYTES: usize = 1_500;

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
    /// Reader `reader` reads everything, every step, from now on.
    Eager { reader: u8 },
    /// Reader `reader`'s connection goes away.
    Drop { reader: u8 },
    /// Request stream `pick` is closed by the HTTP side.
    Close { pick: u8 },
    /// The clock moves by `ms`.
    Advance { ms: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Open),
        8 => (any::<u8>(), 1..=MAX_WEIGHT, prop::bool::weighted(0.15))
            .prop_map(|(pick, weight, completes)| Op::Deliver { pick, weight, completes }),
        2 => Just(Op::Get),
        2 => any::<u8>().prop_map(|pick| Op::Resume { pick }),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(pick, cursor)| Op::Foreign { pick, cursor }),
        5 => (any::<u8>(), 1..4u8).prop_map(|(reader, n)| Op::Read { reader, n }),
        1 => any::<u8>().prop_map(|reader| Op::Eager { reader }),
        2 => any::<u8>().prop_map(|reader| Op::Drop { reader }),
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
    /// When each admitted event was appended.
    appended_at: BTreeMap<u64, Instant>,
    /// Delivered, not yet admitted: serial, when delivered, whether it
    /// answers.
    waiting: VecDeque<(u64, Instant, bool)>,
    /// The last progress on the stream: a read, an attach, a detach, an
    /// admission.
    activity: Instant,
    completed_at: Option<Instant>,
    closed: bool,
    /// What the client received, by any connection.
    received: BTreeSet<u64>,
    /// The client's cursor: the highest index it received.
    cursor: Option<u64>,
    /// Events below this were declared lost by a resume answer.
    declared: u64,
    /// The client owes events from here on (the standalone stream: from
    /// where its first connection started).
    owed_from: Option<u64>,
}

impl Stream {
    fn new(id: StreamId, first: u64, now: Instant) -> Self {
        Self {
            id,
            next_index: first,
            admitted: BTreeMap::new(),
            appended_at: BTreeMap::new(),
            waiting: VecDeque::new(),
            activity: now,
            completed_at: None,
            closed: false,
            received: BTreeSet::new(),
            cursor: None,
            declared: 0,
            owed_from: match id {
                StreamId::Standalone => None,
                StreamId::Request(_) => Some(first),
            },
        }
    }

    fn finished(&self) -> bool {
        self.completed_at.is_some()
    }
}

/// One connection.
struct Reader {
    stream: usize,
    /// Dropped once it ends, as the HTTP body is.
    reader: Option<LogReader<u64>>,
    /// The index its next event must have, when known.
    expect: Option<u64>,
    last: Option<u64>,
    eager: bool,
    /// A newer connection of its stream attached after it, or it was a
    /// shadow (promoted below the floor, it ends so that its client
    /// resumes and is told the floor).
    superseded: bool,
    ended: bool,
    /// When it last read an event (or attached).
    progressed: Instant,
}

struct Driver {
    session: Session<u64, u64>,
    process: Arc<Meter>,
    streams: Vec<Stream>,
    readers: Vec<Reader>,
    next_serial: u64,
    next_request: u64,
    log: Vec<String>,
}

fn pick<T>(items: &[T], at: u8) -> Option<usize> {
    (!items.is_empty()).then(|| usize::from(at) % items.len())
}

impl Driver {
    fn new() -> Self {
        let process = Meter::new(PROCESS_BYTES);
        let budget = Budget::new(SESSION_BYTES, Some(process.clone()));
        let window = Window::new(4, 8, Duration::from_secs(6));
        let limits = Limits::new(STALL, TTL, MAX_COMPLETED, MAX_SHADOWS);
        let session = Session::new(1, window, budget, limits);
        let now = Instant::now();
        Self {
            session,
            process,
            streams: vec![Stream::new(StreamId::Standalone, 1, now)],
            readers: Vec::new(),
            next_serial: 1,
            next_request: 0,
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

    fn attach(&mut self, stream: usize, reader: LogReader<u64>, expect: Option<u64>) {
        for r in self.readers.iter_mut().filter(|r| r.stream == stream) {
            r.superseded = true;
        }
        self.streams[stream].activity = Instant::now();
        self.readers.push(Reader {
            stream,
            reader: Some(reader),
            expect,
            last: None,
            eager: false,
            superseded: false,
            ended: false,
            progressed: Instant::now(),
        });
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
                let s = &mut self.streams[at];
                let front = s.waiting.pop_front();
                let Some((serial, _, completes)) = front else {
                    return Err(self.fail(format!("{stream:?}: admitted {ticket} never waited")));
                };
                if serial != ticket || index != s.next_index {
                    let expected = s.next_index;
                    return Err(self.fail(format!(
                        "{stream:?}: admitted {ticket} at {index}, expected {serial} at {expected}"
                    )));
                }
                s.next_index += 1;
                s.admitted.insert(index, ticket);
                s.appended_at.insert(index, Instant::now());
                s.activity = Instant::now();
                if completed != (completes && s.completed_at.is_none()) {
                    return Err(
                        self.fail(format!("{stream:?}: completed {completed} for {ticket}"))
                    );
                }
                if completed {
                    s.completed_at = Some(Instant::now());
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
            r.ended = true;
            // Dropping it detaches it, which may promote a shadow: a new
            // connection, whose stall clock starts now.
            r.reader = None;
            self.streams[stream].activity = Instant::now();
            let r = &mut self.readers[at];
            let was_eager = std::mem::replace(&mut r.eager, false);
            return self.ended(at, was_eager).map(|()| false);
        };
        let s = &self.streams[stream];
        let admitted = s.admitted.get(&logged.index).copied();
        if admitted != Some(logged.event) || logged.id != s.id.event(logged.index).to_string() {
            return Err(self.fail(format!(
                "{:?}: read {} ({}) at {}, admitted {admitted:?}",
                s.id, logged.event, logged.id, logged.index
            )));
        }
        let r = &mut self.readers[at];
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
        r.last = Some(logged.index);
        r.progressed = Instant::now();
        r.expect = r.expect.map(|_| logged.index + 1);
        let s = &mut self.streams[stream];
        s.received.insert(logged.index);
        s.cursor = s.cursor.max(Some(logged.index));
        s.owed_from.get_or_insert(logged.index);
        s.activity = Instant::now();
        Ok(true)
    }

    /// Reader `at` reads everything from now on; what ended it before
    /// shows now, and was not its fault.
    fn make_eager(&mut self, at: usize) -> Result<(), TestCaseError> {
        while self.poll(at)? {}
        self.readers[at].eager = !self.readers[at].ended;
        Ok(())
    }

    /// Reader `at` just ended: legitimate unless it read every step and
    /// nothing ended or replaced its stream.
    fn ended(&mut self, at: usize, eager: bool) -> Result<(), TestCaseError> {
        let r = &self.readers[at];
        let s = &self.streams[r.stream];
        if !eager || r.superseded || s.closed || self.session.log(s.id).is_none() {
            return Ok(());
        }
        let drained = r.last.map_or(r.expect, |last| Some(last + 1)) == Some(s.next_index);
        if s.finished() && drained {
            return Ok(());
        }
        Err(self.fail(format!(
            "{:?}: a reader that read every step was ended at {:?} (head {})",
            s.id, r.last, s.next_index
        )))
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
        self.streams[at].waiting.push_back((serial, now, completes));
        let pending = Pending {
            event: serial,
            id: None,
            weight,
            completes,
            ticket: serial,
        };
        if let Some(admission) = self.session.deliver(stream, pending) {
            self.admit(admission)?;
        }
        Ok(())
    }

    /// The client resumes stream `at` from `cursor`.
    fn resume(&mut self, at: usize, cursor: u64, own: bool) -> Result<(), TestCaseError> {
        self.expire()?;
        let id = self.streams[at].id;
        let resumed = self.session.resume(id.event(cursor));
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
        let s = &mut self.streams[at];
        match (own, plan_floor, answer) {
            (true, Some(floor), _) => s.declared = s.declared.max(floor),
            // Whoever resumed at a cursor of their own choosing says they
            // hold everything up to it.
            (false, _, ResumeAnswer::Replay { from, .. } | ResumeAnswer::Fallback { from, .. }) => {
                s.declared = s.declared.max(from)
            }
            _ => {}
        }
        if let Some(reader) = resumed.reader {
            let start = answer.start();
            if at == 0 {
                // A demoted primary, promoted later, may go back: re-sends.
                for r in self.readers.iter_mut().filter(|r| r.stream == 0) {
                    r.expect = None;
                }
            }
            self.attach(at, reader, start);
            if own {
                self.streams[at].owed_from.get_or_insert(start.unwrap_or(0));
            }
        }
        Ok(())
    }

    fn get(&mut self) -> Result<(), TestCaseError> {
        if let (Some(cursor), false) = (
            self.streams[0].cursor,
            self.session.standalone().has_primary(),
        ) {
            return self.resume(0, cursor, true);
        }
        let (reader, start) = self.session.attach_standalone();
        if start.is_none() {
            // The shadow cap may close the oldest shadow.
            for r in self.readers.iter_mut().filter(|r| r.stream == 0) {
                r.superseded = true;
            }
        } else if self.streams[0].cursor.is_none() {
            self.streams[0].owed_from = start;
        }
        self.attach(0, reader, start);
        if let (None, Some(r)) = (start, self.readers.last_mut()) {
            r.superseded = true;
        }
        Ok(())
    }

    fn open(&mut self) -> Result<(), TestCaseError> {
        let m = self.next_request;
        self.next_request += 1;
        if self.session.open_request(m, ()).is_err() {
            return Err(self.fail(format!("request stream {m} opened twice")));
        }
        let id = StreamId::Request(m);
        self.streams.push(Stream::new(id, 0, Instant::now()));
        let at = self.streams.len() - 1;
        // The priming event (rmcp's `retry` hint) gives the client its
        // first cursor, with the response's headers.
        let serial = self.next_serial;
        self.next_serial += 1;
        if self.session.append_control(id, serial, None, 0) != Some(0) {
            return Err(self.fail(format!("{id:?}: priming not at 0")));
        }
        let s = &mut self.streams[at];
        s.admitted.insert(0, serial);
        s.appended_at.insert(0, Instant::now());
        s.next_index = 1;
        let Some(reader) = self.session.connect(id, 0) else {
            return Err(self.fail(format!("{id:?}: no reader at open")));
        };
        self.attach(at, reader, Some(0));
        let last = self.readers.len() - 1;
        if !self.poll(last)? {
            return Err(self.fail(format!("{id:?}: no priming event")));
        }
        Ok(())
    }

    fn expire(&mut self) -> Result<(), TestCaseError> {
        let now = Instant::now();
        let gone = self.session.expire(now);
        for at in 0..self.streams.len() {
            let s = &self.streams[at];
            if !s.closed && self.session.log(s.id).is_none() {
                self.expired(at, now)?;
                self.streams[at].closed = true;
            }
        }
        self.handle(gone)?;
        for s in &self.streams {
            let reading = self
                .session
                .log(s.id)
                .and_then(|log| log.reading_until(STALL))
                .is_some_and(|until| until > now);
            if let Some(at) = s.completed_at
                && !s.closed
                && now.saturating_duration_since(at) >= TTL
                && !reading
            {
                return Err(self.fail(format!(
                    "{:?}: answered, retained past its TTL with no reader reading it",
                    s.id
                )));
            }
        }
        Ok(())
    }

    /// Stream `at` just expired: its connected reader, if it owed an event,
    /// must have owed it for the stall timeout.
    fn expired(&self, at: usize, now: Instant) -> Result<(), TestCaseError> {
        let s = &self.streams[at];
        if s.completed_at.is_none() {
            return Err(self.fail(format!("{:?}: expired, never answered", s.id)));
        }
        let live = self
            .readers
            .iter()
            .filter(|r| r.stream == at && !r.ended && !r.superseded);
        for r in live {
            let next = r.last.map_or(r.expect, |last| Some(last + 1));
            let Some(next) = next.filter(|n| *n < s.next_index) else {
                continue;
            };
            let owed = s.appended_at.get(&next).copied().unwrap_or(now);
            let since = r.progressed.max(owed);
            if now.saturating_duration_since(since) < STALL {
                return Err(self.fail(format!(
                    "{:?}: expired under a reader still reading (owes {next}, progress {:?} ago)",
                    s.id,
                    now.saturating_duration_since(since)
                )));
            }
        }
        Ok(())
    }

    /// What the rmcp worker does between two events, then the checks.
    fn settle(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..1_000 {
            let mut moved = false;
            self.expire()?;
            if self.session.room().made().now_or_never().is_some() {
                let admitted = self.session.flush();
                moved |= !admitted.is_empty();
                self.handle(admitted)?;
            }
            let now = Instant::now();
            if let Some(deadline) = self.session.stall_deadline()
                && deadline <= now
            {
                // A shadow promoted over a stalled primary is a connection
                // that has had no chance to read yet: its clock starts now.
                let standalone = self.session.standalone();
                if standalone.stall_deadline(STALL).is_some_and(|at| at <= now) {
                    self.streams[0].activity = now;
                }
                let admitted = self.session.end_stalled(now);
                moved |= !admitted.is_empty();
                self.handle(admitted)?;
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
                return self.check();
            }
        }
        Err(self.fail("the session never settled".into()))
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let streams = self.streams.iter().filter(|s| !s.closed).count();
        let slack = streams * MAX_WEIGHT;
        let used = self.session.budget().session().used();
        if used > SESSION_BYTES + slack {
            return Err(self.fail(format!(
                "session bytes {used} over {SESSION_BYTES} + {slack}"
            )));
        }
        if self.process.used() > PROCESS_BYTES + slack {
            let used = self.process.used();
            return Err(self.fail(format!(
                "process bytes {used} over {PROCESS_BYTES} + {slack}"
            )));
        }
        let now = Instant::now();
        for s in &self.streams {
            let Some(&(serial, since, _)) = s.waiting.front() else {
                continue;
            };
            let unread = self.session.log(s.id).map_or(0, |log| log.unread_bytes());
            if unread == 0 {
                return Err(self.fail(format!(
                    "{:?}: {serial} waits, but no reader of its stream holds unread bytes",
                    s.id
                )));
            }
            let waited = now.saturating_duration_since(since.max(s.activity));
            if waited > STALL {
                let deadline = self.session.stall_deadline().map(|d| d - since);
                let log = self
                    .session
                    .log(s.id)
                    .map(|l| (l.view(), l.stall_deadline(STALL).map(|d| d - since)));
                return Err(self.fail(format!(
                    "{:?}: {serial} waited {waited:?} with no progress on its stream \
                     (session deadline {deadline:?}, log {log:?}, starved {})",
                    s.id,
                    self.session.budget().is_starved()
                )));
            }
        }
        if self.session.has_waiting() != self.streams.iter().any(|s| !s.waiting.is_empty()) {
            return Err(self.fail("the session and the model disagree on waiting".into()));
        }
        Ok(())
    }

    /// Moves the clock by `by`, stopping at every deadline on the way.
    async fn advance(&mut self, by: Duration) -> Result<(), TestCaseError> {
        let target = Instant::now() + by;
        for _ in 0..1_000 {
            let now = Instant::now();
            if now >= target {
                return Ok(());
            }
            let next = [self.session.stall_deadline(), self.session.next_expiry()]
                .into_iter()
                .flatten()
                .filter(|at| *at > now)
                .fold(target, Instant::min);
            tokio::time::advance(next - now).await;
            self.settle()?;
        }
        Err(self.fail("the clock never reached its target".into()))
    }

    async fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        self.log.push(format!("{op:?}"));
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
                if let Some(at) = pick(&self.readers, reader) {
                    for _ in 0..n {
                        self.poll(at)?;
                    }
                }
            }
            Op::Eager { reader } => {
                if let Some(at) = pick(&self.readers, reader) {
                    self.make_eager(at)?;
                }
            }
            Op::Drop { reader } => {
                if let Some(at) = pick(&self.readers, reader) {
                    let gone = self.readers.remove(at);
                    self.streams[gone.stream].activity = Instant::now();
                }
            }
            Op::Close { pick: at } => {
                if let Some(at) = pick(&self.streams, at)
                    && let StreamId::Request(m) = self.streams[at].id
                    && let Some(((), gone)) = self.session.close_request(m)
                {
                    self.streams[at].closed = true;
                    self.handle(gone)?;
                }
            }
            Op::Advance { ms } => self.advance(Duration::from_millis(u64::from(ms))).await?,
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
            .range(from.max(s.declared)..)
            .all(|(index, _)| s.received.contains(index))
    }

    /// The client reads every connection it has, then catches up on every
    /// stream from its own cursor; every admitted event must then be
    /// received, declared lost, or on a closed stream.
    async fn finish(&mut self) -> Result<(), TestCaseError> {
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
                    // stopped, or at the floor it declares.
                    (None, Some(from)) if at == 0 => {
                        if self.session.standalone().has_primary() {
                            break;
                        }
                        let floor = self.session.standalone().view().floor;
                        let (reader, start) = self.session.attach_standalone();
                        let owed = from.max(floor).max(self.streams[0].declared);
                        if start.is_some_and(|start| start > owed) {
                            return Err(self.fail(format!(
                                "a fresh GET skipped from {from} to {start:?}, floor {floor}"
                            )));
                        }
                        self.streams[0].declared = self.streams[0].declared.max(floor);
                        self.attach(0, reader, start);
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
                .filter(|i| **i >= s.declared && !s.received.contains(i))
                .copied()
                .collect();
            let readers: Vec<String> = self
                .readers
                .iter()
                .filter(|r| r.stream == at)
                .map(|r| format!("expect {:?} last {:?} ended {}", r.expect, r.last, r.ended))
                .collect();
            return Err(self.fail(format!(
                "{:?}: events {missing:?} never received and never declared lost \
                 (owed from {:?}, declared floor {}, cursor {:?}, view {:?}, readers {readers:?})",
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

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| TestCaseError::fail(format!("runtime: {e}")))?;
    runtime.block_on(async {
        let mut driver = Driver::new();
        for op in ops {
            driver.step(op).await?;
        }
        driver.finish().await
    })
}

proptest! {
    #![proptest_config(crate::proptest_config::fixed(CASES, SEED))]

    #[test]
    fn model_the_session_keeps_its_promises(ops in prop::collection::vec(op(), 1..120)) {
        run(&ops)?;
    }
}
