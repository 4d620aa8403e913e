//! What can go wrong between an instance and Redis.

/// Errors of the Redis log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisLogError {
    /// Redis did not answer, or refused the command.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// Another instance took the session over: this instance's lease epoch
    /// is no longer the session's, and nothing it writes is kept.
    #[error(
        "fenced: this instance holds epoch {held} of the session, which is now at epoch {current}"
    )]
    Fenced {
        /// The epoch this instance held.
        held: u64,
        /// The session's epoch now.
        current: u64,
    },
    /// The session was deleted.
    #[error("the session was deleted")]
    Deleted,
    /// Redis no longer holds the session although its lease epoch is live
    /// (a restart without persistence, a failover to a lagging replica):
    /// the owner seeds it again with [`SessionLog::renew`](crate::SessionLog::renew).
    #[error("redis lost the session's data")]
    Lost,
    /// Redis holds another epoch's event at an index this batch writes:
    /// the stream has two histories (a lossy failover), and nothing was
    /// written.
    #[error("another writer's event holds index {index} of {stream:?}")]
    Diverged {
        /// The stream.
        stream: rmcp_resume_core::resumption::StreamId,
        /// The index both histories claim.
        index: u64,
    },
    /// Redis may evict keys (`maxmemory-policy` is not `noeviction`): an
    /// evicted event or state would be a silent gap. See [`crate::policy`].
    #[error(
        "redis's maxmemory-policy is {policy:?}: set it to noeviction (an evicted key would be a silent gap)"
    )]
    Evicting {
        /// The policy Redis reported.
        policy: String,
    },
    /// The stream was already answered; nothing more may be appended.
    #[error("the stream is finished")]
    Finished,
    /// Redis answered something the scripts never return.
    #[error("unexpected reply from redis: {0}")]
    Reply(String),
}
