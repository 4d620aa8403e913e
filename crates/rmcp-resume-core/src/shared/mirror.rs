//! The owner's side of a shared log: every event the worker puts in an
//! in-process log is committed to the shared log by this session's mirror
//! task, in order and in batches, before any reader may send it.
//!
//! The worker never waits for the shared log: it hands each write to the
//! task and carries on. A reader waits at its stream's [`Gate`] until the
//! task has committed the event. If the session is taken over (fenced) or
//! deleted, or the shared log stays unreachable past
//! [`SharedLog::outage_limit`], the task closes every gate and cancels
//! [`Mirror::lost`]: the worker stops, and readers end without sending
//! anything that was not committed.
//!
//! | The shared log says | The task |
//! |---|---|
//! | committed | opens the batch's gates |
//! | unreachable, timed out | retries the batch, pausing 50 ms doubling to 1 s, until the outage limit |
//! | lost the session ([`SharedLogError::Lost`]) | seeds it again ([`SharedLog::renew`]), registers its open calls again, and retries: each stream's floor then starts after the loss |
//! | committed, but an append dropped (its stream was answered) | closes that stream's gate: its reader ends instead of sending an event the log lacks |
//! | fenced, deleted, diverged | stops: the session is lost here |
//! | a batch, and the lease not live by this owner's clock | renews first; commits only if the lease is still this owner's ([`holder`](super::holder)) |
//! | renewal: owned at this epoch | carries on (a lapsed lease is taken again only if nobody took it and this owner still holds it) |
//! | renewal: seeded again | confirms it if the lease was live when the answer came, and registers the open calls again; else stops |
//! | renewal: Redis holds a call open that this owner answered (its answer lost in a failover) | the backend ends it with the terminal error: its readers stop waiting |
//! | renewal: unreachable | carries on, trying again after 50 ms doubling to 1 s (so that it renews while its lease is live), until renewals have failed for the outage limit (an idle owner gives up too) |
//! | renewal: anything else | stops |
//!
//! A batch of control frames alone (a call's priming event, its opening)
//! waits up to 5 ms for the next write, usually the call's first message:
//! a quick call then costs one round trip, not two.
//!
//! An answer and its stream's `Finish` travel as one write, so no batch
//! boundary falls between them: a takeover never adds an error to a call
//! whose answer Redis already holds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::holder::Holder;
use super::{Gate, MirrorOp, Ownership, SharedLog, SharedLogError};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::resumption::StreamId;

/// A session's id, as rmcp spells it.
type SessionId = Arc<str>;

/// Writes one batch holds at most.
const BATCH: usize = 256;
/// The longest pause between two tries of a batch.
const MAX_PAUSE: Duration = Duration::from_secs(1);
/// Request stream numbers reserved at once.
pub const RESERVE: u64 = 64;
/// How long a batch of control frames alone waits for a message.
const LINGER: Duration = Duration::from_millis(5);
/// The first pause before a failed renewal is tried again.
const RETRY_FIRST: Duration = Duration::from_millis(50);

/// One write, and the gate it opens once committed.
#[derive(Debug)]
struct Pending {
    op: MirrorOp,
    /// The request stream this write answers: its `Finish` goes in the same
    /// batch.
    finish: Option<u64>,
    gate: Option<(Gate, u64)>,
}

impl Pending {
    /// A write that carries no message: a control frame (a call's priming
    /// event, a retry hint) or a call's opening. Asked only before the
    /// commit, which moves each event's data out.
    fn is_control(&self) -> bool {
        self.finish.is_none()
            && matches!(
                self.op,
                MirrorOp::Append { data: None, .. } | MirrorOp::Open { .. }
            )
    }
}

/// The worker's end of its session's mirror.
pub struct Mirror {
    holder: Arc<Holder>,
    writes: mpsc::UnboundedSender<Pending>,
    lost: CancellationToken,
    /// Reserved request stream numbers not yet used: `next..end`.
    next: u64,
    end: u64,
}

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mirror")
            .field("session", &self.holder.session)
            .field("epoch", &self.holder.epoch)
            .finish_non_exhaustive()
    }
}

impl Mirror {
    /// Takes `session`'s lease and starts its mirror task; `Err` with what
    /// the shared log said when this instance may not own it.
    pub async fn start(
        shared: Arc<dyn SharedLog>,
        session: SessionId,
        create: bool,
    ) -> Result<Result<Self, Ownership>, SharedLogError> {
        let sent = Instant::now();
        let epoch = match shared.acquire(&session, create).await? {
            Ownership::Owned { epoch } | Ownership::Seeded { epoch } => epoch,
            other => return Ok(Err(other)),
        };
        let holder = Arc::new(Holder::new(shared, session, epoch, sent));
        let first = holder.reserve(RESERVE).await?;
        let (writes, rx) = mpsc::unbounded_channel();
        let lost = CancellationToken::new();
        tokio::spawn(Task::new(holder.clone()).run(rx, lost.clone()));
        Ok(Ok(Self {
            holder,
            writes,
            lost,
            next: first,
            end: first.saturating_add(RESERVE),
        }))
    }

    /// Fires when this instance may no longer write the session.
    pub fn lost(&self) -> CancellationToken {
        self.lost.clone()
    }

    /// The standalone stream's next index when this instance took the
    /// session: should the backend lose the session, no later owner gives
    /// out an id below it.
    pub fn standalone_from(&self, head: u64) {
        self.holder.standalone_from(head);
    }

    /// A view of this owner's lease, for admitting calls.
    pub fn lease(&self) -> LeaseWatch {
        LeaseWatch(self.holder.clone(), self.lost.clone())
    }

    /// The next request stream number, reserving more when the block is
    /// used up (one round trip per [`RESERVE`] streams).
    pub async fn next_stream(&mut self) -> Result<u64, SharedLogError> {
        // A new call is admitted only while this owner may write it.
        if self.lost.is_cancelled() {
            return Err(SharedLogError::Gone);
        }
        self.holder.live().await?;
        if self.next >= self.end {
            let first = match self.holder.reserve(RESERVE).await {
                // The backend lost the session: seed it again above every
                // number this owner used, then reserve.
                Err(SharedLogError::Lost) => {
                    self.holder.keep(false).await?;
                    self.holder.reserve(RESERVE).await?
                }
                other => other?,
            };
            self.next = first;
            self.end = first.saturating_add(RESERVE);
        }
        let m = self.next;
        self.next = m.saturating_add(1);
        Ok(m)
    }

    /// Queues event `index` of `stream`; `gate` opens past it once it is
    /// committed.
    pub fn append(&self, stream: StreamId, index: u64, data: Option<String>, gate: &Gate) {
        self.append_then(stream, index, data, gate, None);
    }

    /// Queues event `index` of request stream `m`, its answer, with the
    /// stream's `Finish` in the same batch.
    pub fn answer(&self, m: u64, index: u64, data: Option<String>, gate: &Gate) {
        self.append_then(StreamId::Request(m), index, data, gate, Some(m));
    }

    fn append_then(
        &self,
        stream: StreamId,
        index: u64,
        data: Option<String>,
        gate: &Gate,
        finish: Option<u64>,
    ) {
        self.send(Pending {
            op: MirrorOp::Append {
                stream,
                index,
                data,
            },
            finish,
            gate: Some((gate.clone(), index.saturating_add(1))),
        });
    }

    /// Queues a write that opens no gate.
    pub fn write(&self, op: MirrorOp) {
        self.send(Pending {
            op,
            finish: None,
            gate: None,
        });
    }

    fn send(&self, pending: Pending) {
        // The task is gone only once the session is lost: nothing will be
        // committed, so a reader waiting for this write ends now.
        if let Err(mpsc::error::SendError(pending)) = self.writes.send(pending)
            && let Some((gate, _)) = pending.gate
        {
            gate.close();
        }
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        // A worker that ends cleanly hands the session on at once; the task
        // has committed what it was given before it sees the channel close.
        let holder = self.holder.clone();
        let lost = self.lost.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if !lost.is_cancelled() {
                    let _ = holder.shared.release(&holder.session).await;
                }
            });
        }
    }
}

/// Takes what is queued, up to a batch.
fn drain(writes: &mut mpsc::UnboundedReceiver<Pending>, batch: &mut Vec<Pending>) {
    while batch.len() < BATCH {
        match writes.try_recv() {
            Ok(write) => batch.push(write),
            Err(_) => break,
        }
    }
}

/// Whether an owner's lease is live by its own clock (see
/// [`Mirror::lease`]). Cheap to clone.
#[derive(Clone)]
pub struct LeaseWatch(Arc<Holder>, CancellationToken);

impl LeaseWatch {
    /// Whether this instance may admit a new call: its lease is live by
    /// its own clock, and it has not given the session up. Once it is not,
    /// another instance may own the session.
    pub fn is_live(&self) -> bool {
        !self.is_lost() && self.0.is_live()
    }

    /// Whether this instance gave the session up (fenced, deleted,
    /// unreachable past the outage limit): its worker is stopping.
    pub fn is_lost(&self) -> bool {
        self.1.is_cancelled()
    }
}

impl std::fmt::Debug for LeaseWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseWatch")
            .field("live", &self.is_live())
            .finish()
    }
}

/// The mirror task's state.
struct Task(Arc<Holder>, Mutex<Option<Instant>>);

impl Task {
    fn new(holder: Arc<Holder>) -> Self {
        Self(holder, Mutex::new(None))
    }

    /// Renewals have failed since this moment, if they are failing.
    fn failing_since(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.1.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Commits writes in order, in batches, and renews the lease.
    async fn run(self, mut writes: mpsc::UnboundedReceiver<Pending>, lost: CancellationToken) {
        let mut gates: HashMap<StreamId, Gate> = HashMap::new();
        // Kept from batch to batch, as its capacity is.
        let mut batch: Vec<Pending> = Vec::new();
        let every = self.0.shared.renew_every().max(Duration::from_millis(10));
        // The lease was just taken: the first renewal is one period away.
        let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut retry = RETRY_FIRST;
        let outcome = loop {
            let first = tokio::select! {
                write = writes.recv() => match write {
                    Some(write) => write,
                    None => break Ok(()),
                },
                _ = renew.tick() => match self.renew().await {
                    Ok(true) => {
                        retry = RETRY_FIRST;
                        continue;
                    }
                    // A failed renewal is tried again soon, pausing 50 ms
                    // doubling to 1 s: an owner must renew while its lease is
                    // still live by its own clock, or it may never seed a
                    // session Redis lost in the meantime.
                    Ok(false) => {
                        renew.reset_at(tokio::time::Instant::now() + retry.min(every));
                        retry = (retry * 2).min(MAX_PAUSE);
                        continue;
                    }
                    Err(error) => break Err(error),
                },
            };
            batch.push(first);
            drain(&mut writes, &mut batch);
            // A call's stream opens with its priming event, and its first
            // message (for a quick tool, the answer) follows within the
            // tool's run: waiting a moment for it commits both in one round
            // trip instead of two. A priming event carries no message: what
            // it costs is its arrival, up to `LINGER` later.
            let linger = tokio::time::Instant::now() + LINGER;
            while batch.len() < BATCH && batch.iter().all(Pending::is_control) {
                match tokio::time::timeout_at(linger, writes.recv()).await {
                    Ok(Some(next)) => {
                        batch.push(next);
                        drain(&mut writes, &mut batch);
                    }
                    Ok(None) | Err(_) => break,
                }
            }
            // The batch's calls count as open from now on: a renewal during
            // or right after its commit names them, so that the reconcile
            // never ends a call this batch opens. Naming one Redis does not
            // hold yet is harmless.
            for pending in &batch {
                if let MirrorOp::Open { stream, request_id } = &pending.op {
                    self.0.opened(*stream, request_id);
                }
            }
            let dropped = match self.commit(&mut batch).await {
                Ok(dropped) => dropped,
                Err(error) => {
                    for (gate, _) in batch.iter().filter_map(|p| p.gate.as_ref()) {
                        gate.close();
                    }
                    break Err(error);
                }
            };
            for pending in batch.drain(..) {
                if let Some((gate, mark)) = pending.gate {
                    // An event the log dropped (its stream was answered) is
                    // not committed: its reader ends rather than send it.
                    let kept = match &pending.op {
                        MirrorOp::Append {
                            stream: StreamId::Request(m),
                            ..
                        } => !dropped.contains(m),
                        _ => true,
                    };
                    if !kept {
                        gate.close();
                    } else {
                        gate.raise(mark);
                        if let MirrorOp::Append { stream, .. } = pending.op {
                            gates.entry(stream).or_insert(gate);
                        }
                    }
                }
                if let MirrorOp::Append {
                    stream: StreamId::Standalone,
                    index,
                    ..
                } = pending.op
                {
                    self.0.standalone_committed(index);
                }
                let finished = match pending.op {
                    MirrorOp::Finish { stream } => Some(stream),
                    _ => pending.finish,
                };
                if let Some(m) = finished {
                    gates.remove(&StreamId::Request(m));
                    self.0.finished(m);
                }
            }
        };
        if let Err(error) = outcome {
            tracing::info!(session_id = %self.0.session, %error, "this instance no longer writes the session");
            lost.cancel();
            for gate in gates.values() {
                gate.close();
            }
            // Writes still queued carry gates not seen yet.
            writes.close();
            while let Ok(pending) = writes.try_recv() {
                if let Some((gate, _)) = pending.gate {
                    gate.close();
                }
            }
        }
    }

    /// Keeps the lease: `Err` when this instance may no longer write, else
    /// whether the renewal went through.
    async fn renew(&self) -> Result<bool, SharedLogError> {
        match self.0.keep(true).await {
            Ok(()) => {
                *self.failing_since() = None;
                Ok(true)
            }
            Err(error) if terminal(&error) => Err(error),
            // The backend away for a moment: the next renewal or commit
            // tells. An idle owner has no commit to give up on, so its
            // renewals count the outage themselves.
            Err(error) => {
                let now = Instant::now();
                let since = *self.failing_since().get_or_insert(now);
                if now.duration_since(since) >= self.0.shared.outage_limit() {
                    return Err(error);
                }
                tracing::debug!(session_id = %self.0.session, %error, "lease renewal failed");
                Ok(false)
            }
        }
    }

    /// Commits one batch, retrying while the backend is away, for at most
    /// the outage limit; a fenced or deleted session stops at once. Each
    /// event's data moves into the batch's ops (nothing reads it after the
    /// commit), and every try sends the same ops.
    async fn commit(&self, batch: &mut [Pending]) -> Result<Vec<u64>, SharedLogError> {
        let answers = batch.iter().filter(|p| p.finish.is_some()).count();
        let mut ops: Vec<MirrorOp> = Vec::with_capacity(batch.len() + answers);
        for pending in batch.iter_mut() {
            ops.push(match &mut pending.op {
                MirrorOp::Append {
                    stream,
                    index,
                    data,
                } => MirrorOp::Append {
                    stream: *stream,
                    index: *index,
                    data: data.take(),
                },
                other => other.clone(),
            });
            if let Some(stream) = pending.finish {
                ops.push(MirrorOp::Finish { stream });
            }
        }
        let deadline = tokio::time::Instant::now() + self.0.shared.outage_limit();
        let mut pause = Duration::from_millis(50);
        let mut tries: u32 = 0;
        loop {
            tries = tries.saturating_add(1);
            // Nothing is committed once the lease has run out by this
            // owner's clock, unless a renewal says it still holds it.
            let live = match self.0.live().await {
                Ok(()) => Ok(()),
                Err(error) if terminal(&error) => return Err(error),
                Err(error) => Err(error),
            };
            let result = match live {
                Ok(()) => {
                    self.0
                        .shared
                        .commit(&self.0.session, self.0.epoch, &ops)
                        .await
                }
                Err(error) => Err(error),
            };
            let error = match result {
                Ok(dropped) => {
                    // Back after an outage: the lease may have lapsed
                    // meanwhile, so it is taken again now, not a period
                    // later, leaving the least time to a takeover.
                    if tries > 1 {
                        self.renew().await?;
                    }
                    return Ok(dropped);
                }
                Err(error) if terminal(&error) => return Err(error),
                Err(SharedLogError::Lost) => {
                    tracing::info!(session_id = %self.0.session, epoch = self.0.epoch, "the shared log lost the session; seeding it again");
                    // Seeding registers the open calls again (see `renew`).
                    self.renew().await?;
                    SharedLogError::Lost
                }
                Err(error) => error,
            };
            if tokio::time::Instant::now() + pause > deadline {
                return Err(error);
            }
            tracing::debug!(session_id = %self.0.session, %error, tries, "commit failed; retrying");
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }
}

#[cfg(test)]
mod tests;

/// Whether `error` means this instance may no longer write the session.
fn terminal(error: &SharedLogError) -> bool {
    matches!(
        error,
        SharedLogError::Fenced { .. }
            | SharedLogError::Gone
            | SharedLogError::Lapsed
            | SharedLogError::Diverged { .. }
    )
}
