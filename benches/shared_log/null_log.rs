//! A shared log that takes every commit at once and keeps nothing: with it
//! a server runs its mirror, its gates and its lease bookkeeping, but no
//! backend. The distance between it and the in-process log is the mirror's
//! own cost; between it and Redis, the backend's (client library, round
//! trip, `redis-server`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use rmcp_resume_core::resumption::{StreamId, StreamLookup};
use rmcp_resume_core::shared::{
    MirrorOp, Ownership, Renewal, SharedEvent, SharedLog, SharedLogError, SharedSnapshot,
};
use rmcp_resume_redis::RedisLogConfig;

/// See the [module docs](self). It holds nothing, so a read finds no
/// stream and a tail ends at once: only an owner's own calls measure it.
#[derive(Debug, Default)]
pub struct NullLog {
    /// One counter for every session: stream numbers need only be unique
    /// within a session, and Redis counts per session, so ids here run a
    /// digit or two longer, a few bytes a frame.
    next_stream: AtomicU64,
}

impl SharedLog for NullLog {
    fn acquire<'a>(
        &'a self,
        _session: &'a str,
        _create: bool,
    ) -> BoxFuture<'a, Result<Ownership, SharedLogError>> {
        Box::pin(async { Ok(Ownership::Owned { epoch: 1 }) })
    }

    fn renew<'a>(
        &'a self,
        _session: &'a str,
        renewal: Renewal,
    ) -> BoxFuture<'a, Result<Ownership, SharedLogError>> {
        Box::pin(async move {
            Ok(Ownership::Owned {
                epoch: renewal.epoch,
            })
        })
    }

    fn release<'a>(&'a self, _session: &'a str) -> BoxFuture<'a, Result<(), SharedLogError>> {
        Box::pin(async { Ok(()) })
    }

    fn reserve_streams<'a>(
        &'a self,
        _session: &'a str,
        _epoch: u64,
        count: u64,
        _lowest: u64,
    ) -> BoxFuture<'a, Result<u64, SharedLogError>> {
        let first = self.next_stream.fetch_add(count, Ordering::Relaxed);
        Box::pin(async move { Ok(first) })
    }

    fn commit<'a>(
        &'a self,
        _session: &'a str,
        _epoch: u64,
        _ops: &'a [MirrorOp],
    ) -> BoxFuture<'a, Result<Vec<u64>, SharedLogError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn read<'a>(
        &'a self,
        _session: &'a str,
        _stream: StreamId,
        from: u64,
        _count: usize,
    ) -> BoxFuture<'a, Result<SharedSnapshot, SharedLogError>> {
        Box::pin(async move {
            Ok(SharedSnapshot {
                lookup: StreamLookup::UnknownStream,
                events: Vec::new(),
                resume_at: from,
            })
        })
    }

    fn tail(
        &self,
        _session: &str,
        _stream: StreamId,
        _from: u64,
    ) -> BoxStream<'static, Result<SharedEvent, SharedLogError>> {
        Box::pin(futures::stream::once(async { Err(SharedLogError::Gone) }))
    }

    fn delete<'a>(&'a self, _session: &'a str) -> BoxFuture<'a, Result<(), SharedLogError>> {
        Box::pin(async { Ok(()) })
    }

    /// As often as the Redis log renews with its default lease.
    fn renew_every(&self) -> Duration {
        RedisLogConfig::default().lease / 3
    }
}
