//! The Redis log behind the core's [`SharedLog`] interface, for one
//! instance.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use rmcp_resume_core::resumption::StreamId;
use rmcp_resume_core::shared::{
    MirrorOp, Ownership, Renewal, SharedEvent, SharedLog, SharedLogError, SharedSnapshot,
};

use crate::error::RedisLogError;
use crate::lease::{Lease, LeaseOutcome};
use crate::log::{RedisLog, StoredEvent, Write};
use crate::tail::TailError;

/// One server instance's view of the Redis log: the log and the owner id
/// this instance's life holds leases under.
#[derive(Debug, Clone)]
pub struct RedisShared {
    log: RedisLog,
    owner: String,
    dropped: Arc<AtomicU64>,
}

impl RedisShared {
    /// This instance, as `owner` (unique to this process's life: a
    /// restarted instance is a new owner).
    pub fn new(log: RedisLog, owner: impl Into<String>) -> Self {
        Self {
            log,
            owner: owner.into(),
            dropped: Arc::new(AtomicU64::new(0)),
        }
    }

    /// This instance, under an owner id made from the host's clock and
    /// the process id.
    pub fn for_this_process(log: RedisLog) -> Self {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Self::new(log, format!("{}-{started:x}", std::process::id()))
    }

    /// The owner id.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The log.
    pub fn log(&self) -> &RedisLog {
        &self.log
    }

    /// Appends dropped so far because their stream had already been
    /// answered (a message that lost the race with its call's answer).
    pub fn dropped_late_appends(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl From<RedisLogError> for SharedLogError {
    fn from(error: RedisLogError) -> Self {
        match error {
            RedisLogError::Fenced { current, .. } => Self::Fenced { current },
            RedisLogError::Deleted => Self::Gone,
            RedisLogError::Lost => Self::Lost,
            RedisLogError::Diverged { stream, index } => Self::Diverged { stream, index },
            other => Self::Backend(Box::new(other)),
        }
    }
}

impl From<TailError> for SharedLogError {
    fn from(error: TailError) -> Self {
        match error {
            TailError::Evicted { from, floor } => Self::Evicted { from, floor },
            TailError::SessionGone | TailError::StreamGone => Self::Gone,
            TailError::NewSegment { after, next } => Self::NewSegment { after, next },
            TailError::Log(log) => log.into(),
        }
    }
}

fn ownership(outcome: LeaseOutcome) -> Ownership {
    match outcome {
        LeaseOutcome::Renewed(lease) | LeaseOutcome::Acquired { lease, .. } => {
            Ownership::Owned { epoch: lease.epoch }
        }
        LeaseOutcome::Seeded(lease) => Ownership::Seeded { epoch: lease.epoch },
        LeaseOutcome::HeldBy { .. } => Ownership::HeldElsewhere,
        LeaseOutcome::Unknown | LeaseOutcome::Deleted => Ownership::Unknown,
    }
}

fn shared(event: StoredEvent) -> SharedEvent {
    SharedEvent {
        index: event.index,
        data: event.data,
    }
}

impl SharedLog for RedisShared {
    fn acquire<'a>(
        &'a self,
        session: &'a str,
        create: bool,
    ) -> BoxFuture<'a, Result<Ownership, SharedLogError>> {
        Box::pin(async move {
            let outcome = self
                .log
                .session(session)
                .acquire(&self.owner, create)
                .await?;
            if let LeaseOutcome::Acquired {
                lease,
                ended_streams,
            } = outcome
                && ended_streams > 0
            {
                tracing::info!(session_id = %session, epoch = lease.epoch, ended_streams, "took over a session");
            }
            Ok(ownership(outcome))
        })
    }

    fn renew<'a>(
        &'a self,
        session: &'a str,
        renewal: Renewal,
    ) -> BoxFuture<'a, Result<Ownership, SharedLogError>> {
        Box::pin(async move {
            let epoch = renewal.epoch;
            let outcome = self
                .log
                .session(session)
                .renew_with(&self.owner, renewal)
                .await?;
            match outcome {
                LeaseOutcome::Seeded(_) => {
                    tracing::warn!(session_id = %session, epoch, "redis had lost the session; seeded it again (each stream's floor starts after the loss)");
                }
                LeaseOutcome::Deleted => return Err(SharedLogError::Gone),
                _ => {}
            }
            Ok(ownership(outcome))
        })
    }

    fn release<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), SharedLogError>> {
        Box::pin(async move {
            self.log.session(session).release(&self.owner).await?;
            Ok(())
        })
    }

    fn reserve_streams<'a>(
        &'a self,
        session: &'a str,
        epoch: u64,
        count: u64,
        lowest: u64,
    ) -> BoxFuture<'a, Result<u64, SharedLogError>> {
        Box::pin(async move {
            Ok(self
                .log
                .session(session)
                .reserve_streams_from(Lease { epoch }, count, lowest)
                .await?)
        })
    }

    fn commit<'a>(
        &'a self,
        session: &'a str,
        epoch: u64,
        ops: &'a [MirrorOp],
    ) -> BoxFuture<'a, Result<Vec<u64>, SharedLogError>> {
        Box::pin(async move {
            let writes: Vec<Write<'_>> = ops
                .iter()
                .map(|op| match op {
                    MirrorOp::Append {
                        stream,
                        index,
                        data,
                    } => Write::Append {
                        stream: *stream,
                        index: Some(*index),
                        data: data.as_deref(),
                    },
                    MirrorOp::Open { stream, request_id } => Write::Open {
                        stream: *stream,
                        request_id,
                    },
                    MirrorOp::Finish { stream } => Write::Finish { stream: *stream },
                })
                .collect();
            let committed = self
                .log
                .session(session)
                .commit(Lease { epoch }, &writes)
                .await?;
            if !committed.dropped.is_empty() {
                let count = committed.dropped.len() as u64;
                self.dropped.fetch_add(count, Ordering::Relaxed);
                tracing::debug!(session_id = %session, dropped = count, "appends behind their stream's answer dropped");
            }
            if committed.holes > 0 {
                tracing::warn!(session_id = %session, streams = committed.holes, "redis had lost committed events; those streams now start at a new floor");
            }
            Ok(committed.dropped)
        })
    }

    fn read<'a>(
        &'a self,
        session: &'a str,
        stream: StreamId,
        from: u64,
        count: usize,
    ) -> BoxFuture<'a, Result<SharedSnapshot, SharedLogError>> {
        Box::pin(async move {
            let snapshot = self.log.session(session).read(stream, from, count).await?;
            Ok(SharedSnapshot {
                lookup: snapshot.lookup,
                events: snapshot.events.into_iter().map(shared).collect(),
                resume_at: snapshot.resume_at,
            })
        })
    }

    fn tail(
        &self,
        session: &str,
        stream: StreamId,
        from: u64,
    ) -> BoxStream<'static, Result<SharedEvent, SharedLogError>> {
        self.log
            .session(session)
            .tail(stream, from, Some(self.owner.clone()))
            .map(|item| item.map(shared).map_err(SharedLogError::from))
            .boxed()
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), SharedLogError>> {
        Box::pin(async move {
            self.log.session(session).delete().await?;
            Ok(())
        })
    }

    fn renew_every(&self) -> Duration {
        self.log.config().lease / 3
    }

    fn lease(&self) -> Duration {
        self.log.config().lease
    }

    fn outage_limit(&self) -> Duration {
        self.log.config().outage_limit
    }
}
