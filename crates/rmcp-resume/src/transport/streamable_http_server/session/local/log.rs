//! Per-stream event logs and the readers that drain them.
//!
//! The session worker only ever appends to a log and bumps a version counter;
//! it never awaits a reader. Each HTTP connection gets a *pump* task that
//! copies events from the log into that connection's channel at the pace the
//! peer reads. A slow or stalled peer therefore stalls only its own pump, and
//! whatever it has not read stays in the log, from where a resume replays it
//! (or, once evicted, is reported as lost via the replay floor).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

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
                entries: VecDeque::with_capacity(capacity.min(64)),
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

/// Wakes every pump of a session when any of its logs changes.
pub(super) type Bell = Arc<watch::Sender<u64>>;

pub(super) fn ring(bell: &Bell) {
    bell.send_modify(|v| *v = v.wrapping_add(1));
}

/// Spawns the task that feeds one connection from `log`, returning the
/// connection's receiving end.
pub(super) fn spawn_pump(
    log: Arc<StreamLog>,
    id: ReaderId,
    bell: Bell,
    session_ct: CancellationToken,
) -> mpsc::Receiver<ServerSseMessage> {
    // One slot: anything the connection has not taken stays in the log, where
    // a promoted shadow or a resume can still find it.
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(pump(log, id, bell, session_ct, tx));
    rx
}

struct DetachOnDrop {
    log: Arc<StreamLog>,
    id: ReaderId,
    bell: Bell,
}

impl Drop for DetachOnDrop {
    fn drop(&mut self) {
        if self.log.detach(self.id) {
            ring(&self.bell);
        }
    }
}

async fn pump(
    log: Arc<StreamLog>,
    id: ReaderId,
    bell: Bell,
    session_ct: CancellationToken,
    tx: mpsc::Sender<ServerSseMessage>,
) {
    let mut changes = bell.subscribe();
    let guard = DetachOnDrop {
        log: log.clone(),
        id,
        bell,
    };
    loop {
        // Mark the current version seen *before* reading the state, so a
        // change made after the read is never missed.
        changes.borrow_and_update();
        match log.step(id) {
            Step::Send(index, event) => {
                tokio::select! {
                    sent = tx.send(event) => {
                        if sent.is_err() {
                            break;
                        }
                        log.delivered(id, index);
                    }
                    _ = session_ct.cancelled() => break,
                }
            }
            Step::Wait => {
                tokio::select! {
                    changed = changes.changed() => {
                        if changed.is_err() {
                            break;
                        }
                    }
                    _ = tx.closed() => break,
                    _ = session_ct.cancelled() => break,
                }
            }
            Step::Done => break,
        }
    }
    drop(guard);
}
