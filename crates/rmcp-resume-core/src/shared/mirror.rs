//! The owner's side of a shared log: every event the worker puts in an
//! in-process log is committed to the shared log by this session's mirror
//! task, in order and in batches, before any reader may send it.
//!
//! The worker never waits for the shared log: it hands each write to the
//! task and carries on. A reader waits at its stream's [`Gate`] until the
//! task has committed the event. If the session is taken over (fenced), or
//! the shared log stays unreachable past the retries, the task closes every
//! gate and cancels [`Mirror::lost`]: the worker stops, and readers end
//! without sending anything that was not committed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::{Gate, MirrorOp, Ownership, SharedLog, SharedLogError};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::resumption::StreamId;

/// A session's id, as rmcp spells it.
type SessionId = Arc<str>;

/// Writes one batch holds at most.
const BATCH: usize = 256;
/// Tries of one batch before the session is given up on this instance.
const TRIES: u32 = 4;
/// Request stream numbers reserved at once.
pub const RESERVE: u64 = 64;

/// One write, and the gate it opens once committed.
#[derive(Debug)]
struct Pending {
    op: MirrorOp,
    gate: Option<(Gate, u64)>,
}

/// The worker's end of its session's mirror.
pub struct Mirror {
    shared: Arc<dyn SharedLog>,
    session: SessionId,
    epoch: u64,
    writes: mpsc::UnboundedSender<Pending>,
    lost: CancellationToken,
    /// Reserved request stream numbers not yet used: `next..end`.
    next: u64,
    end: u64,
}

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mirror")
            .field("session", &self.session)
            .field("epoch", &self.epoch)
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
        let epoch = match shared.acquire(&session, create).await? {
            Ownership::Owned { epoch } => epoch,
            other => return Ok(Err(other)),
        };
        let first = shared.reserve_streams(&session, epoch, RESERVE).await?;
        let (writes, rx) = mpsc::unbounded_channel();
        let lost = CancellationToken::new();
        tokio::spawn(run(
            shared.clone(),
            session.clone(),
            epoch,
            rx,
            lost.clone(),
        ));
        Ok(Ok(Self {
            shared,
            session,
            epoch,
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

    /// The next request stream number, reserving more when the block is
    /// used up (one round trip per [`RESERVE`] streams).
    pub async fn next_stream(&mut self) -> Result<u64, SharedLogError> {
        if self.next >= self.end {
            let first = self
                .shared
                .reserve_streams(&self.session, self.epoch, RESERVE)
                .await?;
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
        self.send(Pending {
            op: MirrorOp::Append {
                stream,
                index,
                data,
            },
            gate: Some((gate.clone(), index.saturating_add(1))),
        });
    }

    /// Queues a write that opens no gate.
    pub fn write(&self, op: MirrorOp) {
        self.send(Pending { op, gate: None });
    }

    fn send(&self, pending: Pending) {
        // The task is gone only once the session is lost, and then every
        // gate is closed: nothing queued now would be sent anyway.
        let _ = self.writes.send(pending);
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        // A worker that ends cleanly hands the session on at once; the task
        // has committed what it was given before it sees the channel close.
        let shared = self.shared.clone();
        let session = self.session.clone();
        let lost = self.lost.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if !lost.is_cancelled() {
                    let _ = shared.release(&session).await;
                }
            });
        }
    }
}

/// The mirror task: commits writes in order, in batches, and renews the
/// lease.
async fn run(
    shared: Arc<dyn SharedLog>,
    session: SessionId,
    epoch: u64,
    mut writes: mpsc::UnboundedReceiver<Pending>,
    lost: CancellationToken,
) {
    let mut gates: HashMap<StreamId, Gate> = HashMap::new();
    let mut renew = tokio::time::interval(shared.renew_every().max(Duration::from_millis(10)));
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let outcome = loop {
        let first = tokio::select! {
            write = writes.recv() => match write {
                Some(write) => write,
                None => break Ok(()),
            },
            _ = renew.tick() => {
                match shared.acquire(&session, false).await {
                    Ok(Ownership::Owned { epoch: held }) if held == epoch => continue,
                    Ok(_) => break Err(SharedLogError::Fenced { current: 0 }),
                    // Redis away for a moment: the commits will tell.
                    Err(error) => {
                        tracing::debug!(session_id = %session, %error, "lease renewal failed");
                        continue;
                    }
                }
            }
        };
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match writes.try_recv() {
                Ok(write) => batch.push(write),
                Err(_) => break,
            }
        }
        if let Err(error) = commit(&*shared, &session, epoch, &batch).await {
            for (gate, _) in batch.iter().filter_map(|p| p.gate.as_ref()) {
                gate.close();
            }
            break Err(error);
        }
        for pending in batch {
            if let Some((gate, mark)) = pending.gate {
                gate.raise(mark);
                if let MirrorOp::Append { stream, .. } = pending.op {
                    gates.entry(stream).or_insert(gate);
                }
            }
            if let MirrorOp::Finish { stream } = pending.op {
                gates.remove(&StreamId::Request(stream));
            }
        }
    };
    if let Err(error) = outcome {
        tracing::info!(session_id = %session, %error, "this instance no longer writes the session");
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

/// Commits one batch, retrying a failing backend with a growing pause; a
/// fenced instance stops at once.
async fn commit(
    shared: &dyn SharedLog,
    session: &str,
    epoch: u64,
    batch: &[Pending],
) -> Result<(), SharedLogError> {
    let ops: Vec<MirrorOp> = batch.iter().map(|p| p.op.clone()).collect();
    let mut pause = Duration::from_millis(50);
    let mut tries = 0;
    loop {
        tries += 1;
        match shared.commit(session, epoch, ops.clone()).await {
            Ok(()) => return Ok(()),
            Err(error @ SharedLogError::Fenced { .. }) => return Err(error),
            Err(error) if tries >= TRIES => return Err(error),
            Err(error) => {
                tracing::debug!(session_id = %session, %error, tries, "commit failed; retrying");
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
        }
    }
}
