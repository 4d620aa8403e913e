//! Each stream's bounded replay log, and the readers that drain it.
//!
//! The session's worker only appends to a log, which wakes its own readers;
//! the worker never waits for a reader. Each HTTP connection reads through its own
//! [`LogReader`], at the pace its peer reads. A slow or stalled peer therefore
//! stalls only itself. What it has not read stays in the log, from where a
//! resume replays it, or, once evicted, is reported through the replay floor.
//!
//! Readers are *primary* (they receive events) or *shadows* (a second `GET`
//! on one standalone stream, #659: kept open by keep-alives only, so that no
//! two connections carry events at once). When the primary goes away the
//! newest shadow is promoted and carries on from the earlier of where the
//! primary stopped and what it had not yet taken when the shadow came: what
//! may have gone into a dead socket since is sent again (a client drops the
//! exact copies; a healthy second tab may get that backlog twice).
//!
//! # Backpressure, not loss
//!
//! While a primary is attached, an event it has not read is never evicted:
//! [`StreamLog::try_append`] hands the event back instead, and the producer
//! of that stream (only) waits until the reader makes [`Room`]. A reader that
//! makes no progress for a stall timeout is ended
//! ([`StreamLog::end_stalled`]); only then does the floor move past it, and
//! its resume learns the floor.
//!
//! # What is kept
//!
//! Each log keeps a [`Window`] of events (the last few, and everything
//! younger than a retention time, within a hard count cap), and counts each
//! event's bytes against its session's and its process's [`Budget`]. The
//! session's owner evicts for the budgets ([`StreamLog::evict_oldest`]);
//! nothing a connected reader still needs is ever evicted.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::resumption::{LogView, ReplayNotice, RmcpEventId, StreamId};

mod budget;
mod reader;
mod sync;

use sync::{Mutex, MutexGuard};
#[cfg(all(test, rmcp_resume_loom))]
mod loom_wake;
#[cfg(test)]
mod room_wake;
#[cfg(test)]
mod tests;

pub use budget::{Budget, Meter, Window};
pub use reader::{LogReader, Logged};

/// Wakes the producer of a session's streams when a reader has read, so an
/// event that did not fit can be appended now.
#[derive(Debug, Clone, Default)]
pub struct Room(Arc<Notify>);

impl Room {
    /// Waits until some reader has made room since the last wait.
    pub async fn made(&self) {
        self.0.notified().await;
    }

    fn notify(&self) {
        self.0.notify_one();
    }
}

/// How a fresh standalone connection was attached
/// ([`StreamLog::attach_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attached {
    /// It receives the stream's events from `start`.
    Primary {
        /// Its first index.
        start: u64,
        /// Where the last primary stopped, when that is below `start`: the
        /// events in between are gone, and the client must be told
        /// (`complete: false`, floor `start`).
        skipped_from: Option<u64>,
    },
    /// A keep-alive-only shadow (#659).
    Shadow,
}

impl Attached {
    /// What the client of a fresh standalone connection that skipped must
    /// be told, as the first frame of its stream: its events stopped at
    /// `skipped_from - 1`, the stream goes on at `start`, and what lies
    /// between is not coming (`complete: false`). `None` when nothing was
    /// skipped.
    pub fn notice(&self) -> Option<ReplayNotice> {
        let Self::Primary {
            start,
            skipped_from: Some(from),
        } = *self
        else {
            return None;
        };
        Some(ReplayNotice {
            cursor: StreamId::Standalone.event(from.saturating_sub(1)).into(),
            floor: Some(StreamId::Standalone.event(start).into()),
            complete: false,
            next: None,
        })
    }
}

/// An event the log could not take: a connected reader has not read the
/// oldest retained event yet.
#[derive(Debug)]
pub struct Full<E> {
    /// The event, handed back.
    pub event: E,
    /// Its store-assigned id, handed back.
    pub id: Option<String>,
}

/// `at + by`, where a `by` too large for the clock means "never": a time
/// some centuries on.
pub(crate) fn later(at: Instant, by: Duration) -> Instant {
    const NEVER: Duration = Duration::from_secs(60 * 60 * 24 * 365 * 100);
    at.checked_add(by)
        .or_else(|| at.checked_add(NEVER))
        .unwrap_or(at)
}

/// Identifies one reader (one HTTP connection) of a log.
pub type ReaderId = u64;

/// What a reader is to its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Receives the log's events.
    Primary,
    /// Kept open by keep-alives only (#659).
    Shadow,
}

#[derive(Debug)]
struct Reader {
    id: ReaderId,
    role: Role,
    /// Index of the next event to hand to the connection.
    position: u64,
    /// End the connection once `position` reaches this index.
    end_at: Option<u64>,
    /// When this reader last took an event (or attached).
    progressed_at: Instant,
    /// A shadow's: the earlier of the head and what the primary had not
    /// yet taken when it attached; promoted later, it starts no later than
    /// here. A demoted primary's: where it stopped.
    since: u64,
}

#[derive(Debug)]
struct Entry<E> {
    index: u64,
    id: String,
    event: E,
    /// Bytes counted against the budgets.
    weight: usize,
    /// When it was appended.
    at: Instant,
}

/// The retained window of one stream plus its readers.
#[derive(Debug)]
struct LogState<E> {
    entries: VecDeque<Entry<E>>,
    window: Window,
    /// The weights of `entries`.
    bytes: usize,
    next_index: u64,
    /// No event will ever be appended again (the request was answered).
    finished: bool,
    readers: Vec<Reader>,
    /// Where the next primary starts when none is attached: the position of
    /// the last primary, so events it never delivered are not lost.
    resume_position: u64,
    max_shadows: usize,
    /// A producer is waiting for room.
    blocked: bool,
    /// The readers that found nothing to do, with their wakers: woken (and
    /// forgotten) by the next change a reader must see. Kept apart from
    /// `readers` so that a reader removed meanwhile is woken too, and sees
    /// that it is done.
    parked: Vec<(ReaderId, Waker)>,
}

impl<E> LogState<E> {
    /// Parks reader `id` with `waker`; returns the waker it replaces, to be
    /// dropped once the lock is released (see [`StreamLog::wake`]).
    fn park(&mut self, id: ReaderId, waker: &Waker) -> Option<Waker> {
        match self.parked.iter_mut().find(|(reader, _)| *reader == id) {
            Some((_, parked)) if parked.will_wake(waker) => None,
            Some((_, parked)) => Some(std::mem::replace(parked, waker.clone())),
            None => {
                self.parked.push((id, waker.clone()));
                None
            }
        }
    }

    /// Forgets reader `id`'s waker; returned, to be dropped once the lock
    /// is released.
    fn unpark(&mut self, id: ReaderId) -> Option<Waker> {
        let at = self.parked.iter().position(|(reader, _)| *reader == id)?;
        Some(self.parked.swap_remove(at).1)
    }

    fn floor(&self) -> u64 {
        self.entries.front().map_or(self.next_index, |e| e.index)
    }

    fn primary(&mut self) -> Option<&mut Reader> {
        self.readers.iter_mut().find(|r| r.role == Role::Primary)
    }

    /// When `reader` began to owe progress: its last read, or the append of
    /// the first event it has not read, whichever is later. A reader with
    /// nothing to read owes nothing, however long it has been idle.
    fn owing_since(&self, reader: &Reader) -> Instant {
        let floor = self.floor();
        let appended = reader
            .position
            .checked_sub(floor)
            .and_then(|offset| usize::try_from(offset).ok())
            .and_then(|offset| self.entries.get(offset))
            .map(|e| e.at);
        appended.map_or(reader.progressed_at, |at| at.max(reader.progressed_at))
    }

    /// The primary that still needs the oldest retained event, if any.
    fn holding_the_floor(&self) -> Option<&Reader> {
        let floor = self.entries.front()?.index;
        self.readers
            .iter()
            .find(|r| r.role == Role::Primary && r.position <= floor)
    }

    /// Whether the next append must wait for a reader.
    fn is_full(&self) -> bool {
        self.entries.len() >= self.window.max_events && self.holding_the_floor().is_some()
    }

    /// The primary that owes its connection an event, and when it will
    /// count as stalled: `stall` past [`owing_since`](Self::owing_since).
    /// Whether a message waits behind it does not matter: what it has not
    /// read is held for it either way (D2 of issue #43).
    fn stalls_at(&self, stall: Duration) -> Option<(ReaderId, Instant)> {
        let reader = self.readers.iter().find(|r| {
            r.role == Role::Primary
                && r.position < self.next_index
                && r.end_at.is_none_or(|end| r.position < end)
        })?;
        Some((reader.id, later(self.owing_since(reader), stall)))
    }

    /// Evicts what the window no longer covers before one more event is
    /// appended, oldest first, stopping at the first event a connected
    /// reader still needs. Returns the bytes freed.
    fn trim(&mut self, now: Instant) -> usize {
        let mut freed = 0;
        while let Some(front) = self.entries.front() {
            if self.holding_the_floor().is_some() {
                break;
            }
            let len = self.entries.len();
            let over_cap = len >= self.window.max_events;
            let aged = len >= self.window.keep_events
                && now.saturating_duration_since(front.at) >= self.window.retention;
            if !(over_cap || aged) {
                break;
            }
            freed += self.pop_front();
        }
        freed
    }

    /// Drops the oldest event; returns its weight.
    fn pop_front(&mut self) -> usize {
        let weight = self.entries.pop_front().map_or(0, |e| e.weight);
        self.bytes = self.bytes.saturating_sub(weight);
        weight
    }

    /// Removes reader `at`. A primary leaves its position for the next
    /// fresh connection. The newest shadow is promoted from where the gone
    /// primary stopped or where the shadow attached, whichever is earlier:
    /// what the primary took since the shadow attached may still have sat in
    /// its dead socket, so it is sent again (a client drops an exact
    /// re-send). A promoted shadow below the floor is ended, so that its
    /// client resumes and is told the floor. Nothing is skipped silently.
    fn remove(&mut self, at: usize, now: Instant) -> Reader {
        let gone = self.readers.remove(at);
        if gone.role == Role::Primary {
            self.resume_position = gone.position;
            if let Some(newest) = self
                .readers
                .iter_mut()
                .rev()
                .find(|r| r.role == Role::Shadow)
            {
                let position = gone.position.min(newest.since);
                newest.role = Role::Primary;
                newest.position = position;
                newest.progressed_at = now;
                tracing::debug!(
                    reader = newest.id,
                    position,
                    "promoted shadow stream to primary"
                );
            }
        }
        gone
    }

    fn shadow_count(&self) -> usize {
        self.readers
            .iter()
            .filter(|r| r.role == Role::Shadow)
            .count()
    }

    fn enforce_shadow_limit(&mut self) {
        while self.shadow_count() > self.max_shadows {
            // The oldest shadow is the likeliest to be a dead connection.
            match self.readers.iter().position(|r| r.role == Role::Shadow) {
                Some(at) => drop(self.readers.remove(at)),
                None => break,
            }
        }
    }
}

/// What a reader should do next.
enum Step<E> {
    Send(Logged<E>),
    Wait,
    Done,
}

/// One stream's log, shared between the session's worker and the stream's
/// readers.
#[derive(Debug)]
pub struct StreamLog<E> {
    state: Mutex<LogState<E>>,
    stream: StreamId,
    room: Room,
    budget: Budget,
}

impl<E> Drop for StreamLog<E> {
    fn drop(&mut self) {
        let bytes = self
            .state
            .get_mut()
            .map_or_else(|p| p.get_ref().bytes, |s| s.bytes);
        self.budget.sub(bytes);
    }
}

impl<E: Clone> StreamLog<E> {
    /// A log whose first event gets index `first_index`, retaining at most
    /// `capacity` events (at least one) and `max_shadows` shadow readers;
    /// readers tell `room` when they make room.
    pub fn new(
        stream: StreamId,
        first_index: u64,
        capacity: usize,
        max_shadows: usize,
        room: Room,
    ) -> Arc<Self> {
        let window = Window::events(capacity);
        Self::with_limits(
            stream,
            first_index,
            window,
            max_shadows,
            room,
            Budget::unlimited(),
        )
    }

    /// A log keeping `window`, counting its events' bytes against `budget`.
    pub fn with_limits(
        stream: StreamId,
        first_index: u64,
        window: Window,
        max_shadows: usize,
        room: Room,
        budget: Budget,
    ) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(LogState {
                // Grown on demand: most request streams hold two or three
                // events, and answered ones stay retained for a while.
                entries: VecDeque::new(),
                window,
                bytes: 0,
                next_index: first_index,
                finished: false,
                readers: Vec::new(),
                resume_position: first_index,
                max_shadows,
                blocked: false,
                parked: Vec::new(),
            }),
            stream,
            room,
            budget,
        })
    }

    /// A panic while holding the lock cannot leave the state half-updated in
    /// a way later readers would misread (every update is a single push or
    /// assignment), so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, LogState<E>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the readers parked on this log: after every change one of
    /// them must see (an event, an end, a reader promoted or ended). Only
    /// this log's readers wake, and only those that are waiting.
    fn ring(&self) {
        Self::wake(self.lock());
    }

    /// Wakes (and forgets) the readers parked in `state` once its lock is
    /// released: a waker may run code that locks this log again (an
    /// executor that polls in `wake`, or the last handle to a task that
    /// owns a reader of this log), which would deadlock under the lock.
    fn wake(mut state: MutexGuard<'_, LogState<E>>) {
        match state.parked.len() {
            0 => {}
            // The usual case, one reader: its list keeps its allocation.
            1 => {
                let parked = state.parked.pop();
                drop(state);
                if let Some((_, waker)) = parked {
                    waker.wake();
                }
            }
            _ => {
                let parked = std::mem::take(&mut state.parked);
                drop(state);
                for (_, waker) in parked {
                    waker.wake();
                }
            }
        }
    }

    /// The stream this log holds.
    pub fn stream(&self) -> StreamId {
        self.stream
    }

    /// The rmcp id of event `index` on this stream.
    pub fn event_id(&self, index: u64) -> RmcpEventId {
        self.stream.event(index)
    }

    /// What [`plan`](crate::resumption::plan()) needs to know of this log.
    pub fn view(&self) -> LogView {
        let state = self.lock();
        LogView {
            floor: state.floor(),
            head: state.next_index,
            finished: state.finished,
        }
    }

    /// Appends one of the server's own control frames (a `retry` before a
    /// close) under the next index and returns that index. It never waits:
    /// if the window is at its cap and a reader still needs the oldest
    /// event, the log holds one more event than the cap rather than lose
    /// that one. Its wire id is `id` when given (event stores assign their
    /// own), else the rmcp id of the index. Reads the clock; the session's
    /// owner passes its own `now` to [`append_at`](Self::append_at).
    pub fn append(&self, event: E, id: Option<String>, weight: usize) -> u64 {
        self.append_at(event, id, weight, Instant::now())
    }

    /// [`append`](Self::append) at `now`: the event's age for the window
    /// counts from there.
    pub fn append_at(&self, event: E, id: Option<String>, weight: usize, now: Instant) -> u64 {
        let mut state = self.lock();
        let freed = state.trim(now);
        self.budget.sub(freed);
        let index = self.push(&mut state, event, id, weight, now);
        Self::wake(state);
        index
    }

    /// Appends an event unless a connected reader has not yet read the
    /// oldest retained one and the log is at capacity; then the event comes
    /// back, and [`Room`] is told once that reader has read. Reads the
    /// clock; see [`try_append_at`](Self::try_append_at).
    pub fn try_append(&self, event: E, id: Option<String>, weight: usize) -> Result<u64, Full<E>> {
        self.try_append_at(event, id, weight, Instant::now())
    }

    /// [`try_append`](Self::try_append) at `now`.
    pub fn try_append_at(
        &self,
        event: E,
        id: Option<String>,
        weight: usize,
        now: Instant,
    ) -> Result<u64, Full<E>> {
        let mut state = self.lock();
        let freed = state.trim(now);
        self.budget.sub(freed);
        if state.is_full() {
            state.blocked = true;
            return Err(Full { event, id });
        }
        state.blocked = false;
        let index = self.push(&mut state, event, id, weight, now);
        Self::wake(state);
        Ok(index)
    }

    fn push(
        &self,
        state: &mut LogState<E>,
        event: E,
        id: Option<String>,
        weight: usize,
        at: Instant,
    ) -> u64 {
        let index = state.next_index;
        let id = id.unwrap_or_else(|| self.event_id(index).encode());
        state.entries.push_back(Entry {
            index,
            id,
            event,
            weight,
            at,
        });
        state.bytes = state.bytes.saturating_add(weight);
        self.budget.add(weight);
        state.next_index = index.saturating_add(1);
        index
    }

    /// Evicts the oldest event if no connected reader still needs it, for
    /// the byte budgets; returns the bytes freed. The floor moves with it.
    pub fn evict_oldest(&self) -> Option<usize> {
        let mut state = self.lock();
        if state.entries.is_empty() || state.holding_the_floor().is_some() {
            return None;
        }
        let freed = state.pop_front();
        self.budget.sub(freed);
        Some(freed)
    }

    /// When the oldest event that could be evicted now was appended.
    pub fn oldest_evictable(&self) -> Option<Instant> {
        let state = self.lock();
        if state.holding_the_floor().is_some() {
            return None;
        }
        state.entries.front().map(|e| e.at)
    }

    /// Bytes this log holds.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Bytes of the events its primary reader has not read yet (none
    /// without a primary): what only that reader can free.
    pub fn unread_bytes(&self) -> usize {
        let state = self.lock();
        let Some(position) = state
            .readers
            .iter()
            .find(|r| r.role == Role::Primary)
            .map(|r| r.position)
        else {
            return 0;
        };
        state
            .entries
            .iter()
            .filter(|e| e.index >= position)
            .map(|e| e.weight)
            .sum()
    }

    /// When this log's primary, which owes its connection an event, will
    /// have owed it for `stall` with no progress; `None` when it owes
    /// nothing (or there is none).
    pub fn stall_deadline(&self, stall: Duration) -> Option<Instant> {
        self.lock().stalls_at(stall).map(|(_, at)| at)
    }

    /// Until when this log's primary counts as reading it: while it owes an
    /// event and has made progress within `stall`. `None` when no primary
    /// owes anything (it read everything, or there is none).
    pub fn reading_until(&self, stall: Duration) -> Option<Instant> {
        let state = self.lock();
        let floor = state.floor();
        let reader = state.readers.iter().find(|r| {
            r.role == Role::Primary
                && r.position >= floor
                && r.position < state.next_index
                && r.end_at.is_none_or(|end| r.position < end)
        })?;
        Some(later(state.owing_since(reader), stall))
    }

    /// Ends this log's primary if by `now` it has owed its connection an
    /// event for `stall` with no progress: exactly when
    /// [`stall_deadline`](Self::stall_deadline) is due, so an owner that
    /// sleeps until that deadline never wakes for nothing twice. Returns
    /// whether one was ended; the floor may then move past it, and its
    /// resume is told so.
    pub fn end_stalled(&self, now: Instant, stall: Duration) -> bool {
        let mut state = self.lock();
        let Some(at) = state
            .stalls_at(stall)
            .filter(|(_, due)| *due <= now)
            .and_then(|(id, _)| state.readers.iter().position(|r| r.id == id))
        else {
            return false;
        };
        let gone = state.remove(at, now);
        Self::wake(state);
        tracing::debug!(
            reader = gone.id,
            position = gone.position,
            ?stall,
            "ended a reader that made no progress"
        );
        true
    }

    /// Marks the stream as complete: readers end once they have drained it.
    pub fn finish(&self) {
        let mut state = self.lock();
        state.finished = true;
        Self::wake(state);
    }

    /// Whether any reader, primary or shadow, is attached.
    pub fn has_readers(&self) -> bool {
        !self.lock().readers.is_empty()
    }

    /// Whether a primary reader is attached.
    pub fn has_primary(&self) -> bool {
        self.lock().readers.iter().any(|r| r.role == Role::Primary)
    }

    /// Attaches a reader that receives events from `position` on. Any other
    /// primary becomes a shadow on the standalone stream, or is ended on a
    /// request stream (a request has one consumer; the newest resume wins).
    /// Reads the clock; see [`attach_primary_at`](Self::attach_primary_at).
    pub fn attach_primary(&self, id: ReaderId, position: u64) {
        self.attach_primary_at(id, position, Instant::now());
    }

    /// [`attach_primary`](Self::attach_primary) at `now`: the reader's
    /// stall clock starts there.
    pub fn attach_primary_at(&self, id: ReaderId, position: u64, now: Instant) {
        let mut state = self.lock();
        Self::push_primary(&mut state, self.stream, id, position, now);
        // The reader it replaced may have been what held a message back.
        let tell = state.blocked || self.budget.is_starved();
        drop(state);
        // Outside the lock: the producer's waker may lock this log (D3).
        if tell {
            self.room.notify();
        }
        // A reader it ended or demoted must look again.
        self.ring();
    }

    fn push_primary(
        state: &mut LogState<E>,
        stream: StreamId,
        id: ReaderId,
        position: u64,
        now: Instant,
    ) {
        match stream {
            StreamId::Request(_) => state.readers.clear(),
            StreamId::Standalone => {
                // A primary the server was already closing (SEP-1699) ends
                // now; a live one stays open as a shadow (no leapfrog, #659).
                state
                    .readers
                    .retain(|r| r.role != Role::Primary || r.end_at.is_none());
                // Its client may not have received what it took: promoted
                // again, it goes on from there (see `remove`).
                if let Some(old) = state.primary() {
                    old.role = Role::Shadow;
                    old.since = old.position;
                }
            }
        }
        let since = state.next_index;
        state.readers.push(Reader {
            id,
            role: Role::Primary,
            position,
            end_at: None,
            progressed_at: now,
            since,
        });
        state.enforce_shadow_limit();
    }

    /// Attaches a fresh connection to the standalone stream in one step: the
    /// primary, from where the last one stopped, if none is attached, else a
    /// keep-alive-only shadow. Returns the primary's first index, or `None`
    /// for a shadow. Reads the clock; see [`attach_at`](Self::attach_at),
    /// which also says when the start skips.
    pub fn attach(&self, id: ReaderId) -> Option<u64> {
        match self.attach_at(id, Instant::now()) {
            Attached::Primary { start, .. } => Some(start),
            Attached::Shadow => None,
        }
    }

    /// [`attach`](Self::attach) at `now`. When the last primary stopped
    /// below what the log still holds (it was ended, or promoted below the
    /// floor), the fresh primary starts at the floor and says so: its
    /// client has no cursor to resume with, and must be told rather than
    /// skipped silently.
    pub fn attach_at(&self, id: ReaderId, now: Instant) -> Attached {
        let mut state = self.lock();
        if state.readers.iter().any(|r| r.role == Role::Primary) {
            Self::push_shadow(&mut state, id, now);
            drop(state);
            // The shadow limit may have ended the oldest shadow.
            self.ring();
            return Attached::Shadow;
        }
        let floor = state.floor();
        let stopped = state.resume_position;
        let start = stopped.max(floor);
        let skipped_from = (stopped < start).then_some(stopped);
        Self::push_primary(&mut state, self.stream, id, start, now);
        Self::wake(state);
        if let Some(from) = skipped_from {
            tracing::debug!(
                reader = id,
                from,
                start,
                "a fresh primary starts past events it never had"
            );
        }
        Attached::Primary {
            start,
            skipped_from,
        }
    }

    /// Attaches a keep-alive-only reader, whatever else is attached.
    #[cfg(test)]
    fn attach_shadow(&self, id: ReaderId) {
        let mut state = self.lock();
        Self::push_shadow(&mut state, id, Instant::now());
    }

    fn push_shadow(state: &mut LogState<E>, id: ReaderId, now: Instant) {
        // A second connection says the client may have given the primary
        // up: what the primary had not taken yet may go into a dead socket
        // from now on, so a promotion goes on from there (exact re-sends,
        // which a client drops, rather than a skip).
        let taken = state.primary().map(|p| p.position);
        let since = taken.map_or(state.next_index, |p| p.min(state.next_index));
        state.readers.push(Reader {
            id,
            role: Role::Shadow,
            position: 0,
            end_at: None,
            progressed_at: now,
            since,
        });
        state.enforce_shadow_limit();
    }

    /// Ends every reader: the primary after it has drained what is already in
    /// the log, shadows at once (a server-initiated close, SEP-1699).
    pub fn end_readers(&self) {
        let mut state = self.lock();
        let head = state.next_index;
        state.readers.retain(|r| r.role == Role::Primary);
        if let Some(primary) = state.primary() {
            primary.end_at = Some(head);
        }
        Self::wake(state);
    }

    /// Ends every reader at once and releases every retained event (the
    /// stream expired, or the session is over). A reader whose peer stopped
    /// reading may keep this log alive for as long as its connection lasts;
    /// the events' bytes go back to the budgets now, not then.
    pub fn close(&self) {
        let mut state = self.lock();
        state.finished = true;
        state.readers.clear();
        let freed = std::mem::replace(&mut state.bytes, 0);
        state.entries.clear();
        state.entries.shrink_to_fit();
        drop(state);
        self.budget.sub(freed);
        self.ring();
    }

    /// Removes a reader whose connection is gone, promoting the newest shadow
    /// if it was the primary.
    fn detach(&self, id: ReaderId) {
        let mut state = self.lock();
        let forgotten = state.unpark(id);
        let Some(at) = state.readers.iter().position(|r| r.id == id) else {
            drop(state);
            drop(forgotten);
            return;
        };
        // A drop is the connection's act, with no owner's turn to take the
        // time from: the promoted shadow's stall clock starts now.
        let gone = state.remove(at, Instant::now());
        tracing::trace!(reader = id, position = gone.position, role = ?gone.role, "reader detached");
        let tell = state.blocked || self.budget.is_starved();
        let promoted = gone.role == Role::Primary;
        drop(state);
        drop(forgotten);
        // Outside the lock: the producer's waker may lock this log (D3).
        if tell {
            self.room.notify();
        }
        if promoted {
            self.ring();
        }
    }

    /// What reader `id` does next; an event it is handed is taken in the
    /// same step, so a resume that replaces the reader meanwhile cannot see
    /// it unread and send it on the new connection too.
    #[cfg(test)]
    fn step(&self, id: ReaderId) -> Step<E> {
        let (step, tell) = self.step_in(&mut self.lock(), id);
        if tell {
            self.room.notify();
        }
        step
    }

    /// [`step`](Self::step), parking the reader with `waker` when it has
    /// nothing to do, under the same lock, so no change can slip between.
    fn step_or_park(&self, id: ReaderId, waker: &Waker) -> Step<E> {
        let mut state = self.lock();
        let (step, tell) = self.step_in(&mut state, id);
        let replaced = match step {
            Step::Wait => state.park(id, waker),
            _ => None,
        };
        drop(state);
        drop(replaced);
        // Outside the lock: the producer's waker may lock this log (D3).
        if tell {
            self.room.notify();
        }
        step
    }

    /// The reader's next step, and whether the producer must be told that
    /// it made room (which the caller does once the lock is released).
    fn step_in(&self, state: &mut LogState<E>, id: ReaderId) -> (Step<E>, bool) {
        let Some(reader) = state.readers.iter().find(|r| r.id == id) else {
            return (Step::Done, false);
        };
        if reader.end_at.is_some_and(|end| reader.position >= end) {
            return (Step::Done, false);
        }
        if reader.role == Role::Shadow {
            return (Step::Wait, false);
        }
        let floor = state.floor();
        if reader.position < floor {
            // Evicted before this connection read it: end the connection so
            // the peer resumes and is told the floor, never a silent skip.
            tracing::debug!(
                reader = id,
                position = reader.position,
                floor,
                "reader fell below the replay floor"
            );
            return (Step::Done, false);
        }
        let offset = reader.position - floor;
        let logged = match usize::try_from(offset)
            .ok()
            .and_then(|o| state.entries.get(o))
        {
            Some(entry) => Logged {
                index: entry.index,
                id: entry.id.clone(),
                event: entry.event.clone(),
            },
            None if state.finished => return (Step::Done, false),
            None => return (Step::Wait, false),
        };
        if let Some(reader) = state.readers.iter_mut().find(|r| r.id == id) {
            reader.position = logged.index.saturating_add(1);
            // A read is the peer's act, polled by its HTTP body, not by the
            // owner: it is stamped when it happens.
            reader.progressed_at = Instant::now();
        }
        let tell = (state.blocked && !state.is_full()) || self.budget.is_starved();
        (Step::Send(logged), tell)
    }
}
