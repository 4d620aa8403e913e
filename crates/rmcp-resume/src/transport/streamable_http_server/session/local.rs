//! The in-process session manager, built on the core's per-stream replay logs.
//!
//! Same public API as upstream rmcp 3.11.0's `session::local`; what differs:
//!
//! - Every stream (the standalone stream and each request stream) keeps a
//!   bounded log. A resume is decided by
//!   [`plan`](crate::transport::resumption::plan()): it replays the events
//!   strictly *after* the cursor (upstream re-sent the cursor event itself),
//!   and a cursor the log no longer covers is reported with the log's floor
//!   instead of being replayed from the floor as if nothing were missing.
//! - A request stream stays resumable for `completed_cache_ttl` after its
//!   response, so a response produced while the client was away is delivered
//!   on resume.
//! - The worker never awaits a reader: each connection reads the log at its
//!   own pace, so a stalled reader stalls nothing else.
//! - The standalone stream's ids start at 1, so the priming id `0` is a true
//!   predecessor of the first event (upstream's collided with it).
//! - When the primary standalone connection goes away, the newest shadow
//!   (#659) is promoted and receives what the primary had not delivered.
//!
//! | File | Concern |
//! |---|---|
//! | `manager.rs` | [`LocalSessionManager`]: the session table, upstream's `SessionManager` trait |
//! | `handle.rs` | [`LocalSessionHandle`]: asking a session's worker for streams and resumes |
//! | `worker.rs` | [`LocalSessionWorker`]: the session's logs, and what the worker does with events |
//! | `store_id.rs` | event ids on the event-store path, scoped to their session |
//! | `mirror.rs` | with a shared log: the task that commits each event before a reader may send it, and renews the lease |
//! | `routing.rs` | which request stream a server message belongs to |
//! | `streams.rs` | what opening or resuming a stream hands back |
//! | `event_id.rs` | [`EventId`], the session's `N` / `N/M` ids |
//! | `config.rs` | [`SessionConfig`] |
//! | `error.rs` | [`SessionError`], [`LocalSessionWorkerError`] |
//! | `compat.rs` | upstream's message-passing API (`SessionEvent`, channel receivers), kept for source compatibility |

mod compat;
mod config;
mod error;
mod event_id;
mod frames;
mod handle;
mod incarnation;
mod manager;
mod manager_state;
mod routing;
crate::line::with_event_store! {
    pub(crate) mod store_id;
}
mod streams;
mod worker;

pub use compat::{SessionEvent, SessionQuitReason, StreamableHttpMessageReceiver};
pub use config::{ReplaySettings, SessionConfig};
pub use error::{ForkSessionError, LocalSessionWorkerError, SessionError};
pub use event_id::{EventId, EventIdParseError};
pub use handle::LocalSessionHandle;
pub use manager::{LocalSessionManager, LocalSessionManagerError, ReplaySessionManager};
pub use streams::{OpenedStream, ResumedStream, Resumption};
pub use worker::{LocalSessionWorker, SessionTransport, create_local_session};

/// Shadow streams kept per session; beyond this the oldest is closed.
pub const MAX_SHADOW_STREAMS: usize = 32;

/// The number of one of a session's request streams (`M` in `N/M`).
type HttpRequestId = u64;
