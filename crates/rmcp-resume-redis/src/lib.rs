//! A replay log on Redis Streams for rmcp-resume's streamable-HTTP server:
//! each MCP stream of a session is one Redis stream that every server
//! instance reads and the session's owner writes.
//!
//! Events keep the ids the in-process log gives them (`N` on the standalone
//! stream, `N/M` on request stream `M`), so a resume that lands on any
//! instance is decided by the same
//! [`plan`](rmcp_resume_core::resumption::plan()) from a
//! [`Snapshot`] that Redis gives in one atomic read.
//!
//! # Keys
//!
//! Every key of a session carries the session id as its hash tag, so a
//! session sits in one Redis Cluster slot: on a cluster
//! ([`RedisLog::connect_cluster`]) each script is routed by the session's
//! epoch key to that slot's primary, where every key it builds lives too.
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `P:{S}:epoch` | integer | the lease epoch; present while Redis knows the session |
//! | `P:{S}:lease` | hash | `owner`, `epoch`; expires after the lease period |
//! | `P:{S}:next` | integer | the next request stream number (`M`) |
//! | `P:{S}:jumps` | hash | where `next` jumped (a takeover, a seeding) → where it went on: numbers never given, which a delete steps over |
//! | `P:{S}:open` | hash | `M` → the JSON-RPC id each unanswered request stream answers |
//! | `P:{S}:m:M` | hash | `head`, `floor`, `finished`, `bytes` of stream `M` (`s`: standalone); a packed stream adds `packed` = 1 and its events, field `N` for event `N` |
//! | `P:{S}:x:M` | stream | the events of a stream that is not packed; entry id `N-1` holds event `N` |
//! | `P:{S}:p:M` | string | a quick call packed alone, with no `m:M`: `<epoch>\n<count>\n<bytes>\n`, then each event's data after its length and `\n` |
//! | `P:{S}:state` | string | the session's handshake, for restores elsewhere |
//! | `P:{S}:gone` | string | a deleted session's tombstone: every script obeys it |
//!
//! A request stream answered in the batch that starts it (a quick call),
//! small and with nothing to trim, is *packed*: its events live in its
//! state hash, with no Redis stream, whose first node alone preallocates
//! 4 KiB. A batch that is one quick call and nothing else (the commit of
//! nearly every tool call) is packed tighter still, as one string written
//! by one `SET` (`quick.lua`): an answer over 64 bytes makes a hash a
//! hashtable, a dict entry per field. An answered stream never changes
//! again, so the three layouts read the same.
//!
//! Every key expires `session_ttl` after the session's last activity: the
//! owner's lease renewal refreshes the session-wide keys and each open
//! call's, and a write refreshes what it writes. An answered request
//! stream's keys expire `answered_ttl` (a minute, as in-process) after its
//! answer, or after a read that still owed its reader events, whichever is
//! later; a call ended by a takeover's error keeps `session_ttl`.
//!
//! # Rules
//!
//! - **Persist, then send.** [`SessionLog::append`] returns once the event
//!   is committed; only then may it be sent.
//! - **Fencing.** Every write carries the writer's lease epoch and a script
//!   refuses it unless that is the session's epoch (see [`lease`]).
//! - **The window.** Each append trims its stream by the same count, time
//!   and byte rules as the in-process log
//!   ([`Window`](rmcp_resume_core::log::Window)), oldest first. Redis cannot
//!   see which readers are connected, so unlike in-process a slow reader
//!   may find its next event trimmed: [`SessionLog::tail`] then ends with
//!   [`TailError::Evicted`] rather than skip it.
//! - **Holes are fail-stop.** When Redis lost events an owner had committed
//!   (a restart without persistence, a failover to a lagging replica), the
//!   owner's next append to that stream drops what Redis still holds of it
//!   and sets the floor to its own index; a tail checks every event's index.
//!   A resume across the hole is answered with the floor, never replayed.
//! - **Redis settings.** `maxmemory-policy noeviction`: an evicted key
//!   would be a silent gap.
#![warn(missing_docs)]

mod config;
mod connection;
mod error;
mod group;
mod keys;
pub mod lease;
mod log;
pub mod policy;
mod quick;
mod scripts;
#[cfg(feature = "rmcp")]
mod session_store;
mod shared;
mod tail;

pub use config::RedisLogConfig;
pub use error::RedisLogError;
pub use lease::{INSTANCE_LOST_ERROR, Lease, LeaseOutcome};
pub use log::{
    Appended, Committed, DELETE_SLICE, RedisLog, Renewal, SessionLog, Snapshot, StoredEvent, Write,
};
#[cfg(feature = "rmcp")]
pub use session_store::RedisSessionStore;
pub use shared::RedisShared;
pub use tail::TailError;
