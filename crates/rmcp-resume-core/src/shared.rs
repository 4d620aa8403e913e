//! A replay log shared by several server instances (for example on Redis),
//! behind one object-safe interface the session glue writes and reads.
//!
//! The owner of a session keeps its in-process logs, which decide ids,
//! windows and backpressure as in one process, and mirrors every event into
//! the shared log *before* a reader may send it ([`Gate`]).
//! Any instance answers a resume from the shared log with the same
//! [`plan`](crate::resumption::plan()), because the shared log keeps the
//! in-process ids.
//!
//! [`Mirror`] is the owner's side: its task commits the worker's writes in
//! order and in batches, renews the lease, and opens each [`Gate`].
//!
//! | Operation | Who | When |
//! |---|---|---|
//! | [`SharedLog::acquire`] | an instance about to run a session's worker | creating or restoring the session |
//! | [`SharedLog::renew`] | the owner's mirror task | every [`SharedLog::renew_every`], and when the backend lost the session |
//! | [`SharedLog::reserve_streams`] | the owner | before it numbers request streams: numbers are unique across instances |
//! | [`SharedLog::commit`] | the owner's mirror task | a batch of [`MirrorOp`]s, one round trip |
//! | [`SharedLog::read`] / [`SharedLog::tail`] | any instance | answering a resume |
//! | [`SharedLog::delete`] | the instance that ends the session | `DELETE`, or the session's end |

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use crate::resumption::{StreamId, StreamLookup};

/// What the shared log says of a session's ownership.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// This instance owns the session and writes under `epoch`.
    Owned {
        /// The lease epoch.
        epoch: u64,
    },
    /// This instance owns the session at `epoch`, and the backend had lost
    /// it (a restart without persistence, a failover to a lagging replica):
    /// it was written again, provisionally. The owner confirms it with a
    /// [`Renewal::confirm`] if its lease was still live when this answer
    /// came back, then registers its open calls again.
    Seeded {
        /// The lease epoch, unchanged.
        epoch: u64,
    },
    /// Another instance owns it and its lease is live.
    HeldElsewhere,
    /// The shared log does not know the session (and was not asked to
    /// create it).
    Unknown,
}

/// One write of the owner's mirror.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MirrorOp {
    /// Event `index` of `stream`; `data` is its `data:` line, `None` for a
    /// frame without one (a priming event).
    Append {
        /// The stream.
        stream: StreamId,
        /// The index the in-process log gave it.
        index: u64,
        /// The payload.
        data: Option<String>,
    },
    /// Request stream `stream` answers the JSON-RPC request whose id is
    /// `request_id` (JSON): if the owner is lost before it answers, a
    /// takeover ends it with an error for that id.
    Open {
        /// The request stream.
        stream: u64,
        /// The request's id, as JSON.
        request_id: String,
    },
    /// The request stream was answered: nothing more will be appended.
    Finish {
        /// The request stream.
        stream: u64,
    },
}

/// An event read back from the shared log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedEvent {
    /// Its index.
    pub index: u64,
    /// Its `data:`, if it has one.
    pub data: Option<String>,
}

/// A consistent look at one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedSnapshot {
    /// Where the stream stands, for [`plan`](crate::resumption::plan()).
    pub lookup: StreamLookup,
    /// Events from the position asked for on.
    pub events: Vec<SharedEvent>,
    /// Where a reader at the position asked for goes on: that position, or,
    /// on the standalone stream, the first index of the segment a takeover
    /// began when the position follows the last id before that segment (a
    /// backend whose ids jump at a takeover: no event lies between). A
    /// backend whose ids never jump answers the position asked for.
    pub resume_at: u64,
}

/// Errors of a shared log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SharedLogError {
    /// Another instance took the session over; this one must stop writing.
    #[error("fenced: another instance owns the session now (epoch {current})")]
    Fenced {
        /// The session's epoch now.
        current: u64,
    },
    /// Events a reader still needed were trimmed.
    #[error("events from {from} on were trimmed; the floor is now {floor}")]
    Evicted {
        /// The next event the reader needed.
        from: u64,
        /// The floor.
        floor: u64,
    },
    /// The session (or the stream) is gone.
    #[error("the session or stream is gone")]
    Gone,
    /// The backend lost the session's data although its epoch is live (a
    /// restart without persistence, a failover to a lagging replica); the
    /// owner seeds it again with [`SharedLog::renew`].
    #[error("the shared log lost the session's data")]
    Lost,
    /// This instance's lease ran out by its own clock before a renewal
    /// was confirmed (a pause, a cut to the backend): another instance may
    /// own the session now, so this one must stop writing.
    #[error("this instance's lease ran out by its own clock")]
    Lapsed,
    /// Two histories of the session exist: the backend holds another
    /// epoch's event at an index this owner writes, or handed out a request
    /// stream number this owner already had (a lossy failover). This owner
    /// stops rather than continue either.
    #[error("another writer's event holds index {index} of {stream:?}")]
    Diverged {
        /// The stream.
        stream: StreamId,
        /// The index both histories claim.
        index: u64,
    },
    /// The standalone stream's next event begins a takeover's segment: its
    /// id jumps from `after` to `next`. A live tail ends there, so that the
    /// reader's resume from `after` is answered with a notice naming the
    /// jump (see [`ReplayNotice::next`](crate::resumption::ReplayNotice::next)).
    #[error("a new owner's segment follows event {after}, starting at {next}")]
    NewSegment {
        /// The last id before the segment.
        after: u64,
        /// The segment's first index.
        next: u64,
    },
    /// The backend failed (unreachable, timed out, refused).
    #[error("shared log: {0}")]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

/// What an owner's lease renewal tells the backend. See
/// [`SharedLog::renew`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renewal {
    /// The epoch the owner holds.
    pub epoch: u64,
    /// If the session is seeded again: request stream numbers from here on
    /// (past every number the owner reserved).
    pub lowest_stream: u64,
    /// If the session is seeded again: the standalone stream's next index
    /// as the owner knows it, so that no later owner gives out an id this
    /// one gave.
    pub standalone_head: u64,
    /// The owner's lease is live by its own clock. Only then may the
    /// backend seed a session it lost, or take the lease again: an owner
    /// paused or cut off past its lease may have a successor it never saw.
    pub live: bool,
    /// Confirms a seeding this owner's previous renewal made
    /// ([`Ownership::Seeded`]), once the owner has checked that its lease
    /// was still live when the answer came back.
    pub confirm: bool,
    /// Every request stream the owner has open, when it says so: the
    /// backend ends any other call it holds open with the terminal error.
    /// Such a call's answer was lost (a failover to a lagging replica) and
    /// nobody would ever write it again, so its readers would wait for ever.
    pub open_calls: Option<Vec<u64>>,
}

/// A replay log shared by several instances. See the [module docs](self).
pub trait SharedLog: Send + Sync + 'static {
    /// Takes or renews `session`'s lease for this instance. A free lease is
    /// taken with a new epoch; the backend then ends every request stream
    /// the earlier owner left open with a terminal error. Only `create`
    /// starts a session the log does not know.
    fn acquire<'a>(
        &'a self,
        session: &'a str,
        create: bool,
    ) -> BoxFuture<'a, Result<Ownership, SharedLogError>>;

    /// Keeps the lease this instance holds at `renewal.epoch`. A lapsed
    /// lease nobody took since is taken again at that epoch when the owner
    /// is [`live`](Renewal::live); a session the backend lost is written
    /// again at it, provisionally ([`Ownership::Seeded`]), with request
    /// stream numbers from `lowest_stream` on and the standalone stream
    /// from `standalone_head` on, again only for a live owner. A backend
    /// must never continue a provisional seeding the owner did not
    /// [`confirm`](Renewal::confirm). `Owned` at another epoch, or any
    /// other answer, means the holder was fenced.
    fn renew<'a>(
        &'a self,
        session: &'a str,
        renewal: Renewal,
    ) -> BoxFuture<'a, Result<Ownership, SharedLogError>>;

    /// Gives `session`'s lease back, if this instance holds it.
    fn release<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), SharedLogError>>;

    /// Reserves `count` request stream numbers, none below `lowest` (the
    /// end of the owner's earlier reservations: after a lossy failover the
    /// backend's counter may lag them); returns the first.
    fn reserve_streams<'a>(
        &'a self,
        session: &'a str,
        epoch: u64,
        count: u64,
        lowest: u64,
    ) -> BoxFuture<'a, Result<u64, SharedLogError>>;

    /// Commits `ops` in order, in one round trip, fenced by `epoch`.
    /// Returns the request streams whose appends were dropped because the
    /// stream was already answered: those events are not in the log, so
    /// they must not be sent.
    fn commit<'a>(
        &'a self,
        session: &'a str,
        epoch: u64,
        ops: &'a [MirrorOp],
    ) -> BoxFuture<'a, Result<Vec<u64>, SharedLogError>>;

    /// Reads `stream`'s state and up to `count` events from `from` on.
    fn read<'a>(
        &'a self,
        session: &'a str,
        stream: StreamId,
        from: u64,
        count: usize,
    ) -> BoxFuture<'a, Result<SharedSnapshot, SharedLogError>>;

    /// `stream`'s events from `from` on, then live until it is answered.
    /// While it waits, an instance may take over a session whose owner's
    /// lease expired (which ends the stream with the terminal error).
    fn tail(
        &self,
        session: &str,
        stream: StreamId,
        from: u64,
    ) -> BoxStream<'static, Result<SharedEvent, SharedLogError>>;

    /// Forgets `session` and its streams.
    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), SharedLogError>>;

    /// How often an owner renews its lease.
    fn renew_every(&self) -> std::time::Duration;

    /// How long a lease lasts from a renewal. The owner counts it on its
    /// own clock from the moment it sent the renewal, less a tenth for
    /// clock drift, and writes nothing once it has passed unrenewed.
    fn lease(&self) -> std::time::Duration {
        self.renew_every() * 3
    }

    /// How long an owner keeps retrying a batch the backend does not take
    /// (unreachable, timing out) before it gives the session up. Readers
    /// wait at their gates meanwhile: nothing uncommitted is sent.
    fn outage_limit(&self) -> std::time::Duration {
        DEFAULT_OUTAGE_LIMIT
    }
}

/// [`SharedLog::outage_limit`] unless a backend says otherwise: 30 s.
pub const DEFAULT_OUTAGE_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

mod gate;
mod holder;
mod mirror;
pub use gate::Gate;
pub use mirror::{LeaseWatch, Mirror, RESERVE};
