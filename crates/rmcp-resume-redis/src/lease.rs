//! Ownership of a session: one instance at a time, through a lease with an
//! epoch.
//!
//! | Lease in Redis | [`SessionLog::acquire`](crate::SessionLog::acquire) by `owner` |
//! |---|---|
//! | held by `owner` | [`LeaseOutcome::Renewed`]: the same epoch, a fresh expiry |
//! | held by another, not expired | [`LeaseOutcome::HeldBy`]: nothing changes |
//! | free (never taken, or expired) | [`LeaseOutcome::Acquired`]: a new epoch; every request stream the earlier owner left open ends with a terminal error |
//! | no such session, and `create` is false | [`LeaseOutcome::Unknown`]: nothing is written |
//! | deleted (a tombstone) | [`LeaseOutcome::Deleted`]: nothing is written |
//!
//! [`SessionLog::renew_with`](crate::SessionLog::renew_with) by the holder
//! of epoch `E` (`live`: its lease is live by its own clock):
//!
//! | Lease in Redis | Outcome |
//! |---|---|
//! | held by `owner` | [`LeaseOutcome::Renewed`]; a confirmation ends a seeding; a reconcile ends Redis's open calls the owner did not name |
//! | lapsed, epoch still `E` | [`LeaseOutcome::Renewed`]: taken again at `E`, nothing ended (not for the owner's own unconfirmed seeding unless `live`) |
//! | epoch above `E` (taken over since) | [`LeaseOutcome::HeldBy`]: the owner is fenced |
//! | epoch below `E` or missing (Redis lost data), `live` | [`LeaseOutcome::Seeded`]: the session is written again at `E`, provisionally until confirmed; a lower holder is fenced |
//! | epoch below `E` or missing, not `live` | [`LeaseOutcome::HeldBy`]: the owner stops; a stale owner never seeds |
//!
//! [`SessionLog::fence`](crate::SessionLog::fence), by a reader that runs no
//! worker, ends a dead owner's open calls like a takeover but leaves the
//! lease free.
//!
//! Every write of an owner carries its epoch, and a script refuses a write
//! whose epoch is not the session's current one, so an owner that was paused
//! or cut off past its lease writes nothing a client can ever read. Epochs
//! come from Redis's clock (microseconds), never below the current one + 1,
//! so none is handed out twice, also after Redis lost its data.

use std::time::Duration;

/// A session's lease, as held by this instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// The epoch this owner writes under.
    pub epoch: u64,
}

/// What an attempt to acquire a session's lease found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum LeaseOutcome {
    /// This owner already held it; it now lasts another lease period.
    Renewed(Lease),
    /// The lease was free and is now this owner's.
    Acquired {
        /// The new lease.
        lease: Lease,
        /// Request streams of an earlier owner that were ended with the
        /// terminal error.
        ended_streams: u64,
    },
    /// Redis does not know the session (never created, deleted or
    /// expired), and the caller did not ask to create it.
    Unknown,
    /// The session was deleted: nobody may own it again.
    Deleted,
    /// Redis had lost the session; [`SessionLog::renew`](crate::SessionLog::renew)
    /// seeded it again under the owner's epoch.
    Seeded(Lease),
    /// Another instance holds it.
    HeldBy {
        /// The holder's epoch.
        epoch: u64,
        /// How long the holder's lease still runs unless renewed.
        remaining: Duration,
    },
}

impl LeaseOutcome {
    /// The lease, if this owner holds it now.
    pub fn lease(self) -> Option<Lease> {
        match self {
            Self::Renewed(lease) | Self::Acquired { lease, .. } | Self::Seeded(lease) => {
                Some(lease)
            }
            Self::HeldBy { .. } | Self::Unknown | Self::Deleted => None,
        }
    }
}

/// The JSON-RPC error object a request stream gets when its owner is lost.
/// `-32603` is JSON-RPC's internal error: the server cannot say whether the
/// request took effect.
pub const INSTANCE_LOST_ERROR: &str =
    r#"{"code":-32603,"message":"server instance lost; outcome unknown"}"#;
