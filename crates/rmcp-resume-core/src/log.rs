//! Each stream's bounded replay log, and the readers that drain it.
//!
//! The session's worker only appends to a log and rings a [`Bell`]; it never
//! waits for a reader. Each HTTP connection reads through its own
//! [`LogReader`], at the pace its peer reads. A slow or stalled peer therefore
//! stalls only itself. What it has not read stays in the log, from where a
//! resume replays it, or, once evicted, is reported through the replay floor.
//!
//! Readers are *primary* (they receive events) or *shadows* (a second `GET`
//! on one standalone stream, #659: kept open by keep-alives only, so that no
//! event is ever sent on two connections). When the primary goes away the
//! newest shadow is promoted and carries on where the primary stopped.
//!
//! # Backpressure, not loss
//!
//! While a primary is attached, an event it has not read is never evicted:
//! [`StreamLog::try_append`] hands the event back instead, and the producer
//! of that stream (only) waits until the reader makes [`Room`]. A reader that
//! makes no progress for a stall timeout is ended
//! ([`StreamLog::end_stalled`]); only then does the floor move past it, and
//! its resume learns the floor. A stream with no reader keeps its last
//! `capacity` events for a resume, the oldest evicted first.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::resumption::{LogView, RmcpEventId, StreamId};

mod reader;
#[cfg(test)]
mod tests;

pub use reader::{Bell, LogReader, Logged};

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

/// An event the log could not take: a connected reader has not read the
/// oldest retained event yet.
#[derive(Debug)]
pub struct Full<E> {
    /// The event, handed back.
    pub event: E,
    /// Its store-assigned id, handed back.
    pub id: Option<String>,
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
}

#[derive(Debug)]
struct Entry<E> {
    index: u64,
    id: String,
    event: E,
}

/// The retained window of one stream plus its readers.
#[derive(Debug)]
struct LogState<E> {
    entries: VecDeque<Entry<E>>,
    capacity: usize,
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
}

impl<E> LogState<E> {
    fn floor(&self) -> u64 {
        self.entries.front().map_or(self.next_index, |e| e.index)
    }

    fn primary(&mut self) -> Option<&mut Reader> {
        self.readers.iter_mut().find(|r| r.role == Role::Primary)
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
        self.entries.len() >= self.capacity && self.holding_the_floor().is_some()
    }

    /// Removes reader `at`. A primary leaves its position for the next one:
    /// the newest shadow is promoted there, so nothing it had not delivered
    /// is skipped.
    fn remove(&mut self, at: usize, now: Instant) -> Reader {
        let gone = self.readers.remove(at);
        if gone.role == Role::Primary {
            self.resume_position = gone.position;
            let position = gone.position.max(self.floor());
            if let Some(newest) = self
                .readers
                .iter_mut()
                .rev()
                .find(|r| r.role == Role::Shadow)
            {
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
    Send(u64, Logged<E>),
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
        Arc::new(Self {
            state: Mutex::new(LogState {
                // Grown on demand: most request streams hold two or three
                // events, and answered ones stay retained for a while.
                entries: VecDeque::new(),
                capacity: capacity.max(1),
                next_index: first_index,
                finished: false,
                readers: Vec::new(),
                resume_position: first_index,
                max_shadows,
                blocked: false,
            }),
            stream,
            room,
        })
    }

    /// A panic while holding the lock cannot leave the state half-updated in
    /// a way later readers would misread (every update is a single push or
    /// assignment), so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, LogState<E>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
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

    /// Appends an event under the next index and returns that index,
    /// evicting the oldest event even if a reader still needs it (that
    /// reader then ends and learns the floor on resume). For the server's own
    /// control frames; events go through [`try_append`](Self::try_append).
    /// Its wire id is `id` when given (event stores assign their own), else
    /// the rmcp id of the index.
    pub fn append(&self, event: E, id: Option<String>) -> u64 {
        let mut state = self.lock();
        if state.entries.len() >= state.capacity {
            state.entries.pop_front();
        }
        self.push(&mut state, event, id)
    }

    /// Appends an event unless a connected reader has not yet read the
    /// oldest retained one and the log is at capacity; then the event comes
    /// back, and [`Room`] is told once that reader has read.
    pub fn try_append(&self, event: E, id: Option<String>) -> Result<u64, Full<E>> {
        let mut state = self.lock();
        if state.is_full() {
            state.blocked = true;
            return Err(Full { event, id });
        }
        state.blocked = false;
        if state.entries.len() >= state.capacity {
            state.entries.pop_front();
        }
        Ok(self.push(&mut state, event, id))
    }

    fn push(&self, state: &mut LogState<E>, event: E, id: Option<String>) -> u64 {
        let index = state.next_index;
        let id = id.unwrap_or_else(|| self.event_id(index).to_string());
        state.entries.push_back(Entry { index, id, event });
        state.next_index = index.saturating_add(1);
        index
    }

    /// When the reader holding a full log back will have made no progress
    /// for `stall`; `None` when nothing holds it back.
    pub fn stall_deadline(&self, stall: Duration) -> Option<Instant> {
        let state = self.lock();
        if !state.is_full() {
            return None;
        }
        let reader = state.holding_the_floor()?;
        Some(reader.progressed_at + stall)
    }

    /// Ends the reader holding a full log back if it has made no progress
    /// for `stall` by `now`. Returns whether one was ended; the floor may
    /// then move past it, and its resume is told so.
    pub fn end_stalled(&self, now: Instant, stall: Duration) -> bool {
        let mut state = self.lock();
        if !state.is_full() {
            return false;
        }
        let Some(at) = state.holding_the_floor().and_then(|stalled| {
            let id = stalled.id;
            (now.duration_since(stalled.progressed_at) >= stall)
                .then(|| state.readers.iter().position(|r| r.id == id))
                .flatten()
        }) else {
            return false;
        };
        let gone = state.remove(at, now);
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
        self.lock().finished = true;
    }

    /// Whether a primary reader is attached.
    pub fn has_primary(&self) -> bool {
        self.lock().readers.iter().any(|r| r.role == Role::Primary)
    }

    /// Attaches a reader that receives events from `position` on. Any other
    /// primary becomes a shadow on the standalone stream, or is ended on a
    /// request stream (a request has one consumer; the newest resume wins).
    pub fn attach_primary(&self, id: ReaderId, position: u64) {
        let mut state = self.lock();
        Self::push_primary(&mut state, self.stream, id, position);
    }

    fn push_primary(state: &mut LogState<E>, stream: StreamId, id: ReaderId, position: u64) {
        match stream {
            StreamId::Request(_) => state.readers.clear(),
            StreamId::Standalone => {
                // A primary the server was already closing (SEP-1699) ends
                // now; a live one stays open as a shadow (no leapfrog, #659).
                state
                    .readers
                    .retain(|r| r.role != Role::Primary || r.end_at.is_none());
                if let Some(old) = state.primary() {
                    old.role = Role::Shadow;
                }
            }
        }
        state.readers.push(Reader {
            id,
            role: Role::Primary,
            position,
            end_at: None,
            progressed_at: Instant::now(),
        });
        state.enforce_shadow_limit();
    }

    /// Attaches a fresh connection to the standalone stream in one step: the
    /// primary, from where the last one stopped, if none is attached, else a
    /// keep-alive-only shadow. Returns the primary's first index, or `None`
    /// for a shadow.
    pub fn attach(&self, id: ReaderId) -> Option<u64> {
        let mut state = self.lock();
        if state.readers.iter().any(|r| r.role == Role::Primary) {
            Self::push_shadow(&mut state, id);
            return None;
        }
        let position = state.resume_position.max(state.floor());
        Self::push_primary(&mut state, self.stream, id, position);
        Some(position)
    }

    /// Attaches a keep-alive-only reader, whatever else is attached.
    #[cfg(test)]
    fn attach_shadow(&self, id: ReaderId) {
        let mut state = self.lock();
        Self::push_shadow(&mut state, id);
    }

    fn push_shadow(state: &mut LogState<E>, id: ReaderId) {
        state.readers.push(Reader {
            id,
            role: Role::Shadow,
            position: 0,
            end_at: None,
            progressed_at: Instant::now(),
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
    }

    /// Ends every reader at once (the session is over).
    pub fn close(&self) {
        let mut state = self.lock();
        state.finished = true;
        state.readers.clear();
    }

    /// Removes a reader whose connection is gone, promoting the newest shadow
    /// if it was the primary. Returns whether anything changed.
    fn detach(&self, id: ReaderId) -> bool {
        let mut state = self.lock();
        let Some(at) = state.readers.iter().position(|r| r.id == id) else {
            return false;
        };
        let gone = state.remove(at, Instant::now());
        tracing::trace!(reader = id, position = gone.position, role = ?gone.role, "reader detached");
        if state.blocked {
            self.room.notify();
        }
        true
    }

    fn step(&self, id: ReaderId) -> Step<E> {
        let state = self.lock();
        let Some(reader) = state.readers.iter().find(|r| r.id == id) else {
            return Step::Done;
        };
        if reader.end_at.is_some_and(|end| reader.position >= end) {
            return Step::Done;
        }
        if reader.role == Role::Shadow {
            return Step::Wait;
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
            return Step::Done;
        }
        let offset = reader.position - floor;
        match usize::try_from(offset)
            .ok()
            .and_then(|o| state.entries.get(o))
        {
            Some(entry) => Step::Send(
                entry.index,
                Logged {
                    id: entry.id.clone(),
                    event: entry.event.clone(),
                },
            ),
            None if state.finished => Step::Done,
            None => Step::Wait,
        }
    }

    fn delivered(&self, id: ReaderId, index: u64) {
        let mut state = self.lock();
        if let Some(reader) = state.readers.iter_mut().find(|r| r.id == id)
            && reader.role == Role::Primary
            && reader.position == index
        {
            reader.position = index.saturating_add(1);
            reader.progressed_at = Instant::now();
            if state.blocked && !state.is_full() {
                self.room.notify();
            }
        }
    }
}
