//! One session's streams: admission, backpressure, eviction across streams,
//! expiry and stalls, over the [`log`](crate::log)s, with no rmcp in sight.
//!
//! A [`Session`] is driven by one owner (rmcp's session worker, say) through
//! a synchronous API, and time comes in as `now`. The owner routes messages
//! to streams and carries each one's [`Pending::ticket`] (whatever it must
//! do once the message is in its log: tell the handler, write the shared
//! log); the session says when that is.
//!
//! # Admission
//!
//! A message for stream `S` is admitted when its window and the budgets
//! take it. Otherwise, checked in this order:
//!
//! | Situation | Outcome |
//! |---|---|
//! | `S` is gone (expired, closed, never opened) | [`Admission::Gone`] |
//! | messages of `S` already wait | it waits behind them (order is kept) |
//! | `S`'s window is at its cap and `S`'s reader has not read the oldest | it waits for that reader |
//! | bytes are short: evicting the session's oldest evictable events frees them | admitted |
//! | bytes are short, and `S`'s own reader holds unread bytes of `S` | it waits for that reader |
//! | bytes are short, held only by other streams' readers (or other sessions') | admitted over the line: one message, which `S`'s reader then owes |
//!
//! So a handler waits only for a reader of its own stream, and each wait
//! ends within [`Limits::reader_stall_timeout`] of the last progress on that
//! stream (a read, a new connection): a reader that owes progress that long
//! is ended, and its resume is told the floor. A shadow promoted over an
//! ended primary is a connection that has not had its chance yet, so its
//! clock starts then: on the standalone stream the worst case is
//! `(1 + max_shadows) ×` the stall timeout. The price of
//! the last row is bounded: a session's log bytes never exceed its budget
//! plus one message per stream whose reader has read everything else (and
//! the same for the process's budget, summed over sessions).
//!
//! # Expiry
//!
//! An answered request stream is forgotten `completed_ttl` after its answer,
//! or sooner past `max_completed_streams`, oldest first; but not while its
//! reader is reading it (it owes an event and made progress within the
//! stall timeout): then it stays until that reader has read everything, has
//! stalled, or has gone. A reader's slow link never costs it the answer.
//!
//! # Waiting messages
//!
//! At most [`Limits::max_waiting`] messages wait in a session; past it
//! [`Session::can_take`] is `false` and the owner stops taking messages from
//! its handler until readers make room.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::log::{Attached, Budget, Full, LogReader, ReaderId, Room, StreamLog, Window, later};
use crate::resumption::{ResumeAnswer, RmcpEventId, StreamId, StreamLookup, plan};
use keys::ServerKeys;

#[cfg(test)]
mod attack;
mod keys;
#[cfg(all(test, rmcp_resume_loom))]
mod loom_wake;
#[cfg(test)]
mod model;
#[cfg(test)]
mod promises;
#[cfg(test)]
mod tests;

/// A session's limits beyond its window and budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// A reader that owes progress this long is ended.
    pub reader_stall_timeout: Duration,
    /// An answered request stream stays resumable this long.
    pub completed_ttl: Duration,
    /// At most this many answered streams are kept; the oldest go first.
    pub max_completed_streams: usize,
    /// Shadow readers kept on the standalone stream (#659).
    pub max_shadows: usize,
    /// Messages that may wait for readers at once.
    pub max_waiting: usize,
}

impl Limits {
    /// The limits, with [`max_waiting`](Self::max_waiting) at
    /// [`DEFAULT_MAX_WAITING`](Self::DEFAULT_MAX_WAITING).
    pub fn new(
        reader_stall_timeout: Duration,
        completed_ttl: Duration,
        max_completed_streams: usize,
        max_shadows: usize,
    ) -> Self {
        Self {
            reader_stall_timeout,
            completed_ttl,
            max_completed_streams,
            max_shadows,
            max_waiting: Self::DEFAULT_MAX_WAITING,
        }
    }

    /// Default [`max_waiting`](Self::max_waiting).
    pub const DEFAULT_MAX_WAITING: usize = 1024;
}

/// A message on its way into a stream's log.
#[derive(Debug)]
pub struct Pending<E, T> {
    /// The event.
    pub event: E,
    /// The id an event store assigned it, if any.
    pub id: Option<String>,
    /// Its bytes, for the budgets.
    pub weight: usize,
    /// It answers its request: the stream completes once it is in.
    pub completes: bool,
    /// What the owner does once the message is in its log (or its stream
    /// is gone).
    pub ticket: T,
}

/// What became of a message.
#[derive(Debug)]
pub enum Admission<T> {
    /// In its log under `index`.
    Admitted {
        /// Its stream.
        stream: StreamId,
        /// Its index there.
        index: u64,
        /// The message completed its request stream just now.
        completed: bool,
        /// Its ticket.
        ticket: T,
    },
    /// Its stream is gone; nothing was logged.
    Gone {
        /// The stream.
        stream: StreamId,
        /// Its ticket.
        ticket: T,
    },
}

/// A resume's decision, and the reader attached when it is a stream.
pub struct Resumed<E: Clone> {
    /// What [`plan`](crate::resumption::plan()) decided.
    pub answer: ResumeAnswer,
    /// The resuming connection's reader, when the answer is a stream.
    pub reader: Option<LogReader<E>>,
}

impl<E: Clone> std::fmt::Debug for Resumed<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumed")
            .field("answer", &self.answer)
            .field("reader", &self.reader.is_some())
            .finish()
    }
}

/// The stream was already opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("request stream {0} is already open")]
pub struct AlreadyOpen(pub u64);

struct RequestStream<E, T, X> {
    log: Arc<StreamLog<E>>,
    waiting: VecDeque<Pending<E, T>>,
    completed_at: Option<Instant>,
    extra: X,
}

/// One session's streams. `E` is the event, `T` a message's ticket, `X`
/// what the owner keeps per request stream.
pub struct Session<E: Clone, T, X = ()> {
    standalone: Arc<StreamLog<E>>,
    standalone_waiting: VecDeque<Pending<E, T>>,
    requests: HashMap<u64, RequestStream<E, T, X>, ServerKeys>,
    /// The streams with waiting messages, so nothing scans every stream.
    waiting: HashSet<StreamId, ServerKeys>,
    waiting_count: usize,
    /// Answered streams in the order they completed: expiry is amortised
    /// O(1).
    completed: VecDeque<(Instant, u64)>,
    /// Answered streams due to expire whose reader is still reading them,
    /// each with when to look again.
    lingering: Vec<(Instant, u64)>,
    /// Request streams a reader was attached to, and maybe still is: the
    /// only ones whose readers can owe an event, so the stall rule looks at
    /// these and the standalone stream, not at every answered stream kept
    /// for resumes (up to `max_completed_streams`, scanned once per turn of
    /// the owner). Readers attach only through this type; an entry goes
    /// once its log has no reader at all.
    watched: Vec<u64>,
    next_reader: ReaderId,
    room: Room,
    window: Window,
    budget: Budget,
    limits: Limits,
}

impl<E: Clone, T, X> std::fmt::Debug for Session<E, T, X> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("requests", &self.requests.len())
            .field("waiting", &self.waiting_count)
            .finish_non_exhaustive()
    }
}

impl<E: Clone, T, X> Drop for Session<E, T, X> {
    // However the owner stops, every connection ends and every byte returns.
    fn drop(&mut self) {
        self.standalone.close();
        for stream in self.requests.values() {
            stream.log.close();
        }
    }
}

impl<E: Clone, T, X> Session<E, T, X> {
    /// A session whose standalone stream's first event gets index
    /// `standalone_first`.
    pub fn new(standalone_first: u64, window: Window, budget: Budget, limits: Limits) -> Self {
        let room = Room::default();
        let standalone = StreamLog::with_limits(
            StreamId::Standalone,
            standalone_first,
            window,
            limits.max_shadows,
            room.clone(),
            budget.clone(),
        );
        Self {
            standalone,
            standalone_waiting: VecDeque::new(),
            requests: HashMap::default(),
            waiting: HashSet::default(),
            waiting_count: 0,
            completed: VecDeque::new(),
            lingering: Vec::new(),
            watched: Vec::new(),
            next_reader: 0,
            room,
            window,
            budget,
            limits,
        }
    }

    /// Wakes when a reader has made room for waiting messages.
    pub fn room(&self) -> &Room {
        &self.room
    }

    /// The session's budgets.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The standalone stream's log.
    pub fn standalone(&self) -> &Arc<StreamLog<E>> {
        &self.standalone
    }

    /// A stream's log, if the stream is retained.
    pub fn log(&self, stream: StreamId) -> Option<&Arc<StreamLog<E>>> {
        match stream {
            StreamId::Standalone => Some(&self.standalone),
            StreamId::Request(m) => self.requests.get(&m).map(|r| &r.log),
        }
    }

    /// What the owner keeps for request stream `m`.
    pub fn extra_mut(&mut self, m: u64) -> Option<&mut X> {
        self.requests.get_mut(&m).map(|r| &mut r.extra)
    }

    /// Request streams retained (open or answered and not yet expired).
    pub fn request_count(&self) -> usize {
        self.requests.len()
    }

    /// Opens request stream `m`. `m` is a number the server made (its
    /// counter, a block a shared log reserved), never one a peer chose: the
    /// stream maps hash it without SipHash's defence against collisions.
    pub fn open_request(&mut self, m: u64, extra: X) -> Result<Arc<StreamLog<E>>, AlreadyOpen> {
        if self.requests.contains_key(&m) {
            return Err(AlreadyOpen(m));
        }
        let log = StreamLog::with_limits(
            StreamId::Request(m),
            0,
            self.window,
            0,
            self.room.clone(),
            self.budget.clone(),
        );
        self.requests.insert(
            m,
            RequestStream {
                log: log.clone(),
                waiting: VecDeque::new(),
                completed_at: None,
                extra,
            },
        );
        Ok(log)
    }

    /// Forgets request stream `m` at once; its waiting messages are gone,
    /// and what waited for the bytes it held is admitted.
    /// Reads the clock; see [`close_request_at`](Self::close_request_at).
    pub fn close_request(&mut self, m: u64) -> Option<(X, Vec<Admission<T>>)> {
        self.close_request_at(m, Instant::now())
    }

    /// [`close_request`](Self::close_request) at `now`.
    pub fn close_request_at(&mut self, m: u64, now: Instant) -> Option<(X, Vec<Admission<T>>)> {
        self.completed.retain(|(_, x)| *x != m);
        self.lingering.retain(|(_, x)| *x != m);
        let (extra, mut gone) = self.remove_request(m)?;
        gone.extend(self.flush_at(now));
        Some((extra, gone))
    }

    fn remove_request(&mut self, m: u64) -> Option<(X, Vec<Admission<T>>)> {
        let stream = self.requests.remove(&m)?;
        self.watched.retain(|w| *w != m);
        self.waiting.remove(&StreamId::Request(m));
        self.waiting_count -= stream.waiting.len();
        stream.log.close();
        let gone = gone(StreamId::Request(m), stream.waiting);
        Some((stream.extra, gone))
    }

    fn reader_id(&mut self) -> ReaderId {
        self.next_reader = self.next_reader.wrapping_add(1);
        self.next_reader
    }

    /// Attaches a reader to `stream` from `position` as its primary.
    /// Reads the clock; see [`connect_at`](Self::connect_at).
    pub fn connect(&mut self, stream: StreamId, position: u64) -> Option<LogReader<E>> {
        self.connect_at(stream, position, Instant::now())
    }

    /// [`connect`](Self::connect) at `now`: the reader's stall clock starts
    /// there.
    pub fn connect_at(
        &mut self,
        stream: StreamId,
        position: u64,
        now: Instant,
    ) -> Option<LogReader<E>> {
        let id = self.reader_id();
        let log = self.log(stream)?.clone();
        log.attach_primary_at(id, position, now);
        if let StreamId::Request(m) = stream {
            self.watch(m);
        }
        Some(LogReader::new(log, id))
    }

    /// A fresh standalone connection: the primary, from where the last one
    /// stopped, if none is attached (its first index returned), else a
    /// keep-alive-only shadow (`None`). Reads the clock, and does not say
    /// when the start skips: see
    /// [`attach_standalone_at`](Self::attach_standalone_at).
    pub fn attach_standalone(&mut self) -> (LogReader<E>, Option<u64>) {
        let (reader, attached) = self.attach_standalone_at(Instant::now());
        let start = match attached {
            Attached::Primary { start, .. } => Some(start),
            Attached::Shadow => None,
        };
        (reader, start)
    }

    /// A fresh standalone connection at `now`, and how it was attached:
    /// when the last primary stopped below the floor, the new one starts at
    /// the floor and [`Attached::Primary::skipped_from`] says where the
    /// client's events stopped, so the owner tells the client
    /// ([`Attached::notice`]) instead of skipping silently.
    pub fn attach_standalone_at(&mut self, now: Instant) -> (LogReader<E>, Attached) {
        let id = self.reader_id();
        let attached = self.standalone.attach_at(id, now);
        (LogReader::new(self.standalone.clone(), id), attached)
    }

    /// Decides a resume from `cursor` and, when the answer is a stream,
    /// attaches the resuming connection as the stream's primary. Call
    /// [`expire`](Self::expire) first: an expiry may be due in the same turn.
    /// Reads the clock; see [`resume_at`](Self::resume_at).
    pub fn resume(&mut self, cursor: RmcpEventId) -> Resumed<E> {
        self.resume_at(cursor, Instant::now())
    }

    /// [`resume`](Self::resume) at `now`.
    pub fn resume_at(&mut self, cursor: RmcpEventId, now: Instant) -> Resumed<E> {
        let stream = cursor.stream_id();
        let lookup = self.log(stream).map_or(StreamLookup::UnknownStream, |log| {
            StreamLookup::Found(log.view())
        });
        let answer = plan(lookup, cursor);
        let reader = answer
            .start()
            .and_then(|position| self.connect_at(stream, position, now));
        Resumed { answer, reader }
    }

    /// Whether the owner may take another message from its handler.
    pub fn can_take(&self) -> bool {
        self.waiting_count < self.limits.max_waiting.max(1)
    }

    /// Whether messages wait for readers.
    pub fn has_waiting(&self) -> bool {
        self.waiting_count > 0
    }

    /// Appends one of the server's own control frames, which never waits.
    /// Reads the clock; see [`append_control_at`](Self::append_control_at).
    pub fn append_control(
        &mut self,
        stream: StreamId,
        event: E,
        id: Option<String>,
        weight: usize,
    ) -> Option<u64> {
        self.append_control_at(stream, event, id, weight, Instant::now())
    }

    /// [`append_control`](Self::append_control) at `now`.
    pub fn append_control_at(
        &mut self,
        stream: StreamId,
        event: E,
        id: Option<String>,
        weight: usize,
        now: Instant,
    ) -> Option<u64> {
        Some(self.log(stream)?.append_at(event, id, weight, now))
    }

    /// Routes a message into `stream`'s log; `None` when it waits (its
    /// admission comes out of a later [`flush`](Self::flush)). Reads the
    /// clock; see [`deliver_at`](Self::deliver_at).
    pub fn deliver(&mut self, stream: StreamId, pending: Pending<E, T>) -> Option<Admission<T>> {
        self.deliver_at(stream, pending, Instant::now())
    }

    /// [`deliver`](Self::deliver) at `now`: the event's age and, when it
    /// answers its request, the stream's TTL count from there.
    pub fn deliver_at(
        &mut self,
        stream: StreamId,
        pending: Pending<E, T>,
        now: Instant,
    ) -> Option<Admission<T>> {
        let Some(queue) = self.queue(stream) else {
            return Some(Admission::Gone {
                stream,
                ticket: pending.ticket,
            });
        };
        let pending = if queue.is_empty() {
            match self.try_admit(stream, pending, now) {
                Ok(admission) => return Some(admission),
                Err(pending) => pending,
            }
        } else {
            pending
        };
        if let Some(queue) = self.queue(stream) {
            queue.push_back(pending);
            self.waiting.insert(stream);
            self.waiting_count += 1;
        }
        None
    }

    /// Admits waiting messages, oldest first per stream, while they fit.
    /// Reads the clock; see [`flush_at`](Self::flush_at).
    pub fn flush(&mut self) -> Vec<Admission<T>> {
        self.flush_at(Instant::now())
    }

    /// [`flush`](Self::flush) at `now`.
    pub fn flush_at(&mut self, now: Instant) -> Vec<Admission<T>> {
        let mut admitted = Vec::new();
        let streams: Vec<StreamId> = self.waiting.iter().copied().collect();
        for stream in streams {
            self.flush_stream(stream, &mut admitted, now);
        }
        if self.waiting.is_empty() {
            self.budget.set_starved(false);
        }
        admitted
    }

    fn flush_stream(&mut self, stream: StreamId, admitted: &mut Vec<Admission<T>>, now: Instant) {
        loop {
            let Some(pending) = self.queue(stream).and_then(VecDeque::pop_front) else {
                self.waiting.remove(&stream);
                return;
            };
            self.waiting_count -= 1;
            match self.try_admit(stream, pending, now) {
                Ok(admission) => admitted.push(admission),
                Err(pending) => {
                    if let Some(queue) = self.queue(stream) {
                        queue.push_front(pending);
                        self.waiting_count += 1;
                    }
                    return;
                }
            }
        }
    }

    fn queue(&mut self, stream: StreamId) -> Option<&mut VecDeque<Pending<E, T>>> {
        match stream {
            StreamId::Standalone => Some(&mut self.standalone_waiting),
            StreamId::Request(m) => self.requests.get_mut(&m).map(|r| &mut r.waiting),
        }
    }

    /// Puts a message into its log if the window and budgets let it in
    /// (evicting the session's oldest evictable events for bytes); hands it
    /// back when it must wait for its own stream's reader.
    fn try_admit(
        &mut self,
        stream: StreamId,
        pending: Pending<E, T>,
        now: Instant,
    ) -> Result<Admission<T>, Pending<E, T>> {
        let Some(log) = self.log(stream).cloned() else {
            return Ok(Admission::Gone {
                stream,
                ticket: pending.ticket,
            });
        };
        if !self.make_room(&log, pending.weight) {
            return Err(pending);
        }
        let Pending {
            event,
            id,
            weight,
            completes,
            ticket,
        } = pending;
        match log.try_append_at(event, id, weight, now) {
            Ok(index) => {
                let completed = match (completes, stream) {
                    (true, StreamId::Request(m)) => self.complete(m, now),
                    _ => false,
                };
                Ok(Admission::Admitted {
                    stream,
                    index,
                    completed,
                    ticket,
                })
            }
            Err(Full { event, id }) => Err(Pending {
                event,
                id,
                weight,
                completes,
                ticket,
            }),
        }
    }

    /// Evicts the session's oldest evictable events until `weight` more
    /// bytes fit the budgets. `false` when they cannot and `log`'s own
    /// reader holds unread bytes of it: the message waits for that reader.
    /// Bytes held only elsewhere let the message in over the line (see the
    /// module's table).
    fn make_room(&mut self, log: &StreamLog<E>, weight: usize) -> bool {
        while self.budget.would_exceed(weight) {
            if !self.evict_oldest() {
                // Starved first, then the check: a read racing the check
                // either is seen by it or sees the flag, and wakes us.
                self.budget.set_starved(true);
                let free = log.unread_bytes() == 0;
                if free && self.waiting.is_empty() {
                    self.budget.set_starved(false);
                }
                return free;
            }
        }
        true
    }

    /// Evicts the session's oldest evictable event: of the standalone
    /// stream, the open request streams, every lingering stream (past its
    /// TTL, kept only for what its reader has not read: what it has read
    /// is nobody's, D1 of issue #43) and the earliest answered stream that
    /// holds any. Returns whether one was evicted.
    fn evict_oldest(&mut self) -> bool {
        let answered = self
            .completed
            .iter()
            .filter_map(|(_, m)| self.requests.get(m))
            .find(|r| r.log.oldest_evictable().is_some())
            .map(|r| &r.log);
        let lingering = self
            .lingering
            .iter()
            .filter_map(|(_, m)| self.requests.get(m))
            .map(|r| &r.log);
        let open = self
            .requests
            .values()
            .filter(|r| r.completed_at.is_none())
            .map(|r| &r.log);
        std::iter::once(&self.standalone)
            .chain(open)
            .chain(lingering)
            .chain(answered)
            .filter_map(|log| log.oldest_evictable().map(|at| (at, log)))
            .min_by_key(|(at, _)| *at)
            .is_some_and(|(_, log)| log.evict_oldest().is_some())
    }

    /// Marks request stream `m` answered (or cancelled): its readers end
    /// once drained, and it stays resumable for the completed TTL. Returns
    /// whether this completed it (`false`: unknown, or already).
    pub fn complete(&mut self, m: u64, now: Instant) -> bool {
        let Some(stream) = self.requests.get_mut(&m) else {
            return false;
        };
        stream.log.finish();
        if stream.completed_at.is_some() {
            return false;
        }
        stream.completed_at = Some(now);
        self.completed.push_back((now, m));
        true
    }

    /// When the next answered stream may expire.
    pub fn next_expiry(&self) -> Option<Instant> {
        let first = self
            .completed
            .front()
            .map(|(at, _)| later(*at, self.limits.completed_ttl));
        let lingering = self.lingering.iter().map(|(at, _)| *at).min();
        first.into_iter().chain(lingering).min()
    }

    /// Forgets answered streams past their TTL or over the count cap,
    /// ending their readers and returning their bytes at once. A stream
    /// whose reader is still reading it (it owes an event and made progress
    /// within the stall timeout) stays until that reader is done or stalls:
    /// nothing a reading reader has not read goes.
    pub fn expire(&mut self, now: Instant) -> Vec<Admission<T>> {
        let mut gone = Vec::new();
        let mut closed = false;
        while let Some(&(at, m)) = self.completed.front() {
            let over_cap = self.completed.len() > self.limits.max_completed_streams;
            if !over_cap && later(at, self.limits.completed_ttl) > now {
                break;
            }
            self.completed.pop_front();
            match self.reading_until(m, now) {
                Some(until) => self.lingering.push((until, m)),
                None => closed |= self.expire_one(m, &mut gone),
            }
        }
        // Few streams linger, and a reader that left frees its stream at
        // the next turn, not at its stall deadline.
        let mut i = 0;
        while i < self.lingering.len() {
            let (_, m) = self.lingering[i];
            match self.reading_until(m, now) {
                Some(until) => {
                    self.lingering[i].0 = until;
                    i += 1;
                }
                None => {
                    self.lingering.swap_remove(i);
                    closed |= self.expire_one(m, &mut gone);
                }
            }
        }
        if closed && self.has_waiting() {
            gone.extend(self.flush_at(now));
        }
        gone
    }

    /// Until when request stream `m`'s reader counts as reading it, if it
    /// does past `now`.
    fn reading_until(&self, m: u64, now: Instant) -> Option<Instant> {
        let log = &self.requests.get(&m)?.log;
        log.reading_until(self.limits.reader_stall_timeout)
            .filter(|until| *until > now)
    }

    fn expire_one(&mut self, m: u64, gone: &mut Vec<Admission<T>>) -> bool {
        let Some((_, waiting)) = self.remove_request(m) else {
            return false;
        };
        gone.extend(waiting);
        true
    }

    /// Notes that request stream `m` has a reader, and forgets the
    /// streams whose readers have all gone: the list stays as long as the
    /// connections that are open, not as the streams kept for resumes.
    fn watch(&mut self, m: u64) {
        let requests = &self.requests;
        self.watched
            .retain(|w| *w == m || requests.get(w).is_some_and(|r| r.log.has_readers()));
        if !self.watched.contains(&m) {
            self.watched.push(m);
        }
    }

    /// The logs whose readers can owe an event: the standalone stream's and
    /// every watched request stream's. A reader that owes an event holds it
    /// whether or not a message waits behind it, so the stall rule looks at
    /// each (D2 of issue #43), once per turn of the owner: one lock per
    /// open connection, not per retained stream.
    fn logs(&self) -> impl Iterator<Item = &Arc<StreamLog<E>>> {
        std::iter::once(&self.standalone).chain(
            self.watched
                .iter()
                .filter_map(|m| self.requests.get(m).map(|r| &r.log)),
        )
    }

    /// Whether a connection reads from the session now: a standalone
    /// reader, or a reader of a request stream (one still draining an
    /// answered stream too). A session with one is not idle, however quiet:
    /// its client is there, waiting for what the server sends.
    pub fn has_connected_reader(&self) -> bool {
        self.logs().any(|log| log.has_readers())
    }

    /// When the earliest reader that owes its connection an event will
    /// have owed it for the stall timeout with no progress.
    pub fn stall_deadline(&self) -> Option<Instant> {
        let stall = self.limits.reader_stall_timeout;
        self.logs()
            .filter_map(|log| log.stall_deadline(stall))
            .min()
    }

    /// Ends the readers that by `now` owed an event for the stall timeout
    /// with no progress, whether or not a message waits for them, then
    /// admits what waited.
    pub fn end_stalled(&mut self, now: Instant) -> Vec<Admission<T>> {
        let stall = self.limits.reader_stall_timeout;
        for log in self.logs() {
            if log.end_stalled(now, stall) {
                tracing::debug!(stream = ?log.stream(), ?stall, "ended a stalled reader");
            }
        }
        self.flush_at(now)
    }
}

/// Every waiting message of a stream that is gone.
fn gone<E, T>(stream: StreamId, waiting: VecDeque<Pending<E, T>>) -> Vec<Admission<T>> {
    waiting
        .into_iter()
        .map(|pending| Admission::Gone {
            stream,
            ticket: pending.ticket,
        })
        .collect()
}
