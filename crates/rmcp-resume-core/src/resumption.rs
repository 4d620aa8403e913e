//! Resumption decisions for both sides, with no I/O and no async.
//!
//! - The **server** decides what a `GET` with `Last-Event-ID` gets with
//!   [`plan()`]; its decision table is in [its module](mod@plan).
//! - The **client** decides what a reconnect proved with [`decide`] (and,
//!   event by event, [`ResumeVerifier`] and [`ContinuityChecker`]); its
//!   decision table is below.
//!
//! A 200 OK on a reconnect proves nothing. Continuity is proven only by the
//! server's acknowledgement of the cursor, by a declared replay floor at or
//! below the cursor's successor, or (for rmcp's own ids) by the first event
//! being that successor.
//!
//! # The client's decision table
//!
//! Checked in this order; the first that matches decides.
//!
//! | Observation | [`Verdict`] | What the caller should do |
//! |---|---|---|
//! | HTTP 404 or 410 | `SessionLost` | re-initialize the session |
//! | any other non-200 (e.g. 400 for a rejected cursor) | `ResumptionFailed(Status)` | escalate: fail the pending request, keep the status |
//! | declared floor above the cursor's successor | `ResumptionFailed(BelowFloor)` | escalate, naming the lost ids |
//! | server says the cursor was not honoured | `ResumptionFailed(NotHonoured)` | escalate (a standalone stream may carry on as a fresh stream) |
//! | session re-created under the same id | `ResumptionFailed(SessionRecreated)` | re-issue under a new session |
//! | closed before any new event, acknowledged | `Delayed` | nothing new yet: poll again after the backoff |
//! | closed before any new event, not acknowledged | `ResumptionFailed(EmptyStream)` | count a failed attempt; never a success |
//! | open, no new event, acknowledged or floor covers the cursor | `Delayed` | wait; silence is backpressure |
//! | open, no new event, nothing proven | `Delayed` if [`UnprovenPolicy::Lenient`], else `ResumptionFailed(Unproven)` | wait, or escalate |
//! | first new rmcp id is the successor | `Resumed(Successor)` | deliver, then check each id with [`ContinuityChecker`] |
//! | first new rmcp id skips ids to the `next` an acknowledging notice named (a shared log's new segment) | `Resumed(Acknowledged)` | deliver, then check each id |
//! | first new rmcp id skips ids | `ResumptionFailed(Gap)` | escalate, naming the lost ids |
//! | first new rmcp id is on another stream or earlier (a rewind) | `ResumptionFailed(Discontinuous)` | escalate |
//! | opaque ids, acknowledged | `Resumed(Acknowledged)` | deliver |
//! | opaque ids, nothing proven | `Resumed(Assumed)` if lenient, else `ResumptionFailed(Unproven)` | deliver, or escalate |
//!
//! A re-sent copy of the cursor event (upstream rmcp servers send one) is
//! never "the first new event": [`ResumeVerifier::on_event`] skips it as a
//! duplicate. Only an exact copy is a duplicate; an earlier id is a rewind.
//!
//! "rmcp id" means an id judged by rmcp's per-stream counter rules (`N`,
//! `N/M`: the next is `N+1`). Ids that merely look like that may come from a
//! session-wide counter, where a stream sees `1, 3, 6`. The reconnect machine
//! applies the rules only once the server vouches for them, with an
//! `mcp-replay` notice, or when configured to
//! ([`IdRules`](crate::reconnect::IdRules)); until then it judges every id
//! with [`EventCursor::into_opaque`].
//!
//! # Example
//!
//! ```
//! use http::StatusCode;
//! use rmcp_resume_core::resumption::{
//!     EventAction, EventCursor, ResumeVerifier, ResumptionError, UnprovenPolicy, Verdict,
//! };
//!
//! // The client last saw event 41 of request stream 7 and reconnects.
//! let cursor: EventCursor = "41/7".parse()?;
//! let mut resume = ResumeVerifier::new(cursor.clone(), StatusCode::OK, UnprovenPolicy::Strict);
//!
//! // An upstream server re-sends the cursor event first: dropped, not a gap.
//! assert_eq!(resume.on_event(Some(&cursor)), EventAction::SkipDuplicate);
//!
//! // Then it jumps to event 130: 42..=129 were evicted and the 200 hid it.
//! resume.on_event(Some(&"130/7".parse()?));
//! let Verdict::ResumptionFailed(err @ ResumptionError::Gap { .. }) = resume.verdict() else {
//!     panic!("a jump must never count as a resume");
//! };
//! assert_eq!(err.lost().map(|l| l.len()), Some(88));
//! assert_eq!(
//!     err.to_string(),
//!     "gap after cursor 41/7: expected 42/7, got 130/7; events 42/7..=129/7 (88 events) are missing"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod continuity;
mod cursor;
mod idle;
mod notice;
pub mod plan;
mod scope;
mod verdict;

#[cfg(test)]
mod tests;

pub use continuity::{Continuity, ContinuityChecker, ContinuityError, EventAction, ResumeVerifier};
pub use cursor::{
    CursorParseError, EventCursor, LostRange, MAX_CURSOR_LEN, OpaqueEventId, RmcpEventId,
};
pub use idle::{IdleTimeout, IdleTimeoutError};
pub use notice::{NoticeError, REPLAY_FLOOR_HEADER, REPLAY_NOTICE_EVENT, ReplayNotice};
pub use plan::{LogView, ResumeAnswer, StreamLookup, plan};
pub use scope::{StreamId, StreamScope};
pub use verdict::{
    Acknowledgement, Proof, ReconnectOutcome, ResumptionError, SessionContinuity, SessionLost,
    UnprovenPolicy, Verdict, decide,
};
