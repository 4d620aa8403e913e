//! Per-stream event logs and the readers that drain them.
//!
//! The session worker only ever appends to a log and bumps a version counter;
//! it never awaits a reader. Each HTTP connection reads the log through its
//! own [`LogReader`] at the pace the peer reads. A slow or stalled peer
//! therefore stalls only itself, and whatever it has not read stays in the
//! log, from where a resume replays it (or, once evicted, is reported as lost
//! via the replay floor).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use tokio::sync::watch;
use tokio_stream::wrappers::WatchStream;

use super::super::ServerSseMessage;

/// Identifies one reader (one HTTP connection) of a log.
pub(super) type ReaderId = u64;

/// What a reader is to its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Receives the log's events.
    Primary,
    /// Kept open by keep-alives only (#659): never receives events, so no
    /// message is ever sent on two streams.
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
}

#[derive(Debug)]
struct Entry {
    index: u64,
    event: ServerSseMessage,
}

/// The retained window of one stream plus its readers.
#[derive(Debug)]
pub(super) struct LogState {
    entries: VecDeque<Entry>,
    capacity: usize,
    next_index: u64,
    /// No event will ever be appended again (the request was answered).
    finished: bool,
    readers: Vec<Reader>,
    /// Where the next primary starts when none is attached: the position of
    /// the last primary, so events it never delivered are not lost.
    resume_position: u64,
    max_shadows: usize,
}

/// Where the next event of a stream stands relative to a cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CursorFit {
    /// Every event after the cursor is retained.
    Covered,
    /// Events between the cursor and the floor were evicted.
    BelowFloor,
    /// The cursor names an event this stream never produced.
    BeyondHead,
}

impl LogState {
    /// The lowest index still retained, or the next index when none is.
    pub(super) fn floor(&self) -> u64 {
        self.entries.front().map_or(self.next_index, |e| e.index)
    }

    pub(super) fn next_index(&self) -> u64 {
        self.next_index
    }

    pub(super) fn is_finished(&self) -> bool {
        self.finished
    }

    pub(super) fn fit(&self, cursor: u64) -> CursorFit {
        if cursor >= self.next_index {
            CursorFit::BeyondHead
        } else if cursor.saturating_add(1) < self.floor() {
            CursorFit::BelowFloor
        } else {
            CursorFit::Covered
        }
    }

    fn primary(&mut self) -> Option<&mut Reader> {
        self.readers.iter_mut().find(|r| r.role == Role::Primary)
    }

    pub(super) fn has_primary(&self) -> bool {
        self.readers.iter().any(|r| r.role == Role::Primary)
    }

    pub(super) fn shadow_count(&self) -> usize {
        self.readers
            .iter()
            .filter(|r| r.role == Role::Shadow)
            .count()
    }
}

/// One stream's log, shared between the worker and the stream's pumps.
#[derive(Debug)]
pub(super) struct StreamLog {
    state: Mutex<LogState>,
    /// Suffix of event ids (`/M` for request streams).
    pub(super) stream: Option<u64>,
}

/// What a pump should do next.
enum Step {
    Send(u64, ServerSseMessage),
    Wait,
    Done,
}

impl StreamLog {
    pub(super) fn new(
        stream: Option<u64>,
        first_index: u64,
        capacity: usize,
        max_shadows: usize,
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
            }),
            stream,
        })
    }

    /// Locks the state. A panic while holding the lock cannot leave the
    /// state half-updated in a way later readers would misread (every update
    /// is a single push or assignment), so poisoning is ignored.
    pub(super) fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The wire id of event `index` on this stream.
    pub(super) fn event_id(&self, index: u64) -> String {
        match self.stream {
            Some(m) => format!("{index}/{m}"),
            None => index.to_string(),
        }
    }

    /// Appends an event, assigning it the next index; returns that index.
    /// `id` overrides the wire id (event stores assign their own).
    pub(super) fn append(&self, mut event: ServerSseMessage, id: Option<String>) -> u64 {
        let mut state = self.lock();
        let index = state.next_index;
        event.event_id = Some(id.unwrap_or_else(|| self.event_id(index)));
        if state.entries.len() >= state.capacity {
            state.entries.pop_front();
        }
        state.entries.push_back(Entry { index, event });
        state.next_index = index.saturating_add(1);
        index
    }

    /// Marks the stream as complete: readers end once they have drained it.
    pub(super) fn finish(&self) {
        self.lock().finished = true;
    }

    /// Attaches a reader that receives events from `position` on. Any other
    /// primary becomes a shadow on a common stream, or is ended on a request
    /// stream (a request has one consumer; the newest resume wins).
    pub(super) fn attach_primary(&self, id: ReaderId, position: u64) {
        let mut state = self.lock();
        let request_stream = self.stream.is_some();
        if request_stream {
            state.readers.clear();
        } else if let Some(old) = state.primary() {
            old.role = Role::Shadow;
        }
        state.readers.push(Reader {
            id,
            role: Role::Primary,
            position,
            end_at: None,
        });
        Self::enforce_shadow_limit(&mut state);
    }

    /// Attaches a keep-alive-only reader.
    pub(super) fn attach_shadow(&self, id: ReaderId) {
        let mut state = self.lock();
        state.readers.push(Reader {
            id,
            role: Role::Shadow,
            position: 0,
            end_at: None,
        });
        Self::enforce_shadow_limit(&mut state);
    }

    fn enforce_shadow_limit(state: &mut LogState) {
        while state.shadow_count() > state.max_shadows {
            // The oldest shadow is the likeliest to be a dead connection.
            if let Some(at) = state.readers.iter().position(|r| r.role == Role::Shadow) {
                state.readers.remove(at);
            }
        }
    }

    /// Where a new primary should start when nothing says otherwise.
    pub(super) fn resume_position(&self) -> u64 {
        let state = self.lock();
        state.resume_position.max(state.floor())
    }

    /// Ends every reader: the primary after it has drained what is already in
    /// the log, shadows at once (server-initiated close, SEP-1699).
    pub(super) fn end_readers(&self) {
        let mut state = self.lock();
        let head = state.next_index;
        state.readers.retain(|r| r.role == Role::Primary);
        if let Some(primary) = state.primary() {
            primary.end_at = Some(head);
        }
    }

    /// Ends every reader at once (the session is over).
    pub(super) fn close(&self) {
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
        let gone = state.readers.remove(at);
        if gone.role == Role::Primary {
            state.resume_position = gone.position;
            let position = gone.position.max(state.floor());
            if let Some(newest) = state
                .readers
                .iter_mut()
                .rev()
                .find(|r| r.role == Role::Shadow)
            {
                newest.role = Role::Primary;
                newest.position = position;
                tracing::debug!(
                    reader = newest.id,
                    position,
                    "promoted shadow stream to primary"
                );
            }
        }
        true
    }

    fn step(&self, id: ReaderId) -> Step {
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
            Some(entry) => Step::Send(entry.index, entry.event.clone()),
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
        }
    }
}

/// Wakes every reader of a session when any of its logs changes.
pub(super) type Bell = Arc<watch::Sender<u64>>;

pub(super) fn ring(bell: &Bell) {
    bell.send_modify(|v| *v = v.wrapping_add(1));
}

/// One connection's view of a log, as a stream.
///
/// Polling takes whatever the log already holds for this reader, so events
/// that are ready together reach the socket together; there is no task or
/// channel hop between the log and the HTTP body.
pub(super) struct LogReader {
    log: Arc<StreamLog>,
    id: ReaderId,
    bell: Bell,
    changes: WatchStream<u64>,
    done: bool,
}

impl LogReader {
    pub(super) fn new(log: Arc<StreamLog>, id: ReaderId, bell: Bell) -> Self {
        // Subscribed before the first poll reads the log, so no change
        // between the two can be missed.
        let changes = WatchStream::from_changes(bell.subscribe());
        Self {
            log,
            id,
            bell,
            changes,
            done: false,
        }
    }
}

impl Stream for LogReader {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        while !this.done {
            match this.log.step(this.id) {
                Step::Send(index, event) => {
                    this.log.delivered(this.id, index);
                    return Poll::Ready(Some(event));
                }
                Step::Done => this.done = true,
                Step::Wait => match this.changes.poll_next_unpin(cx) {
                    Poll::Ready(Some(_)) => {}
                    Poll::Ready(None) => this.done = true,
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
        Poll::Ready(None)
    }
}

impl Drop for LogReader {
    fn drop(&mut self) {
        if self.log.detach(self.id) {
            ring(&self.bell);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(capacity: usize, events: u64) -> Arc<StreamLog> {
        let log = StreamLog::new(None, 1, capacity, 2);
        for _ in 0..events {
            log.append(ServerSseMessage::default(), None);
        }
        log
    }

    #[test]
    fn floor_and_fit_follow_eviction() {
        let log = filled(4, 10);
        let state = log.lock();
        assert_eq!((state.floor(), state.next_index()), (7, 11));
        assert_eq!(
            state.fit(6),
            CursorFit::Covered,
            "6's successor 7 is retained"
        );
        assert_eq!(state.fit(5), CursorFit::BelowFloor);
        assert_eq!(
            state.fit(10),
            CursorFit::Covered,
            "nothing after the head yet"
        );
        assert_eq!(state.fit(11), CursorFit::BeyondHead);
    }

    #[test]
    fn empty_log_floor_is_the_next_index() {
        let log = filled(4, 0);
        let state = log.lock();
        assert_eq!(state.floor(), 1);
        assert_eq!(state.fit(0), CursorFit::Covered);
        assert_eq!(state.fit(1), CursorFit::BeyondHead);
    }

    #[test]
    fn ids_carry_the_stream() {
        let log = StreamLog::new(Some(7), 0, 4, 0);
        log.append(ServerSseMessage::default(), None);
        assert_eq!(log.event_id(0), "0/7");
        assert_eq!(log.event_id(3), "3/7");
    }

    #[test]
    fn newest_shadow_is_promoted_from_the_old_primary_position() {
        let log = filled(8, 3);
        log.attach_primary(1, 1);
        log.attach_shadow(2);
        log.attach_shadow(3);
        assert!(matches!(log.step(1), Step::Send(1, _)));
        log.delivered(1, 1);
        assert!(matches!(log.step(3), Step::Wait), "shadows get nothing");
        assert!(log.detach(1));
        assert!(
            matches!(log.step(3), Step::Send(2, _)),
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
    fn a_reader_behind_the_floor_is_ended_not_skipped() {
        let log = filled(2, 1);
        log.attach_primary(1, 1);
        for _ in 0..5 {
            log.append(ServerSseMessage::default(), None);
        }
        assert!(matches!(log.step(1), Step::Done));
    }

    #[test]
    fn request_stream_has_one_reader_and_finishes() {
        let log = StreamLog::new(Some(0), 0, 8, 0);
        log.append(ServerSseMessage::default(), None);
        log.attach_primary(1, 0);
        log.attach_primary(2, 0);
        assert!(matches!(log.step(1), Step::Done), "the older resume ends");
        log.finish();
        assert!(matches!(log.step(2), Step::Send(0, _)));
        log.delivered(2, 0);
        assert!(matches!(log.step(2), Step::Done));
    }
}
