//! The server's decision on a resume: what a `GET` with `Last-Event-ID` gets.
//!
//! [`plan`] is pure: it sees a snapshot of the cursor's stream and the cursor,
//! and says what to answer. The transport turns the [`ResumeAnswer`] into the
//! HTTP status, the body, the counter and the log line in one `match`.
//!
//! # Decision table
//!
//! Checked in this order; the first that matches decides. `floor` is the
//! lowest event the stream still retains (the next index when it retains
//! none), `head` the index the next event will get.
//!
//! | The cursor's stream | Cursor | [`ResumeAnswer`] | HTTP |
//! |---|---|---|---|
//! | the session is gone | any | `SessionLost` | `404` |
//! | no such request stream (never existed, or expired) | request | `UnknownStream` | `400` |
//! | found | `cursor + 1 < floor` (evicted) | request: `BelowFloor`; standalone: `Fallback` from the floor | `400`; `200`, notice `complete: false` |
//! | found | `cursor >= head` (never produced) | request: `BeyondHead`; standalone: `Fallback` from the head | `400`; `200`, notice `complete: false` |
//! | request stream answered, everything up to the cursor's successor sent | covered | `Complete` | `204` |
//! | found | covered | `Replay` strictly after the cursor, then live | `200`, notice `complete: true` |
//!
//! On a shared log (several instances, `rmcp-resume-redis`) a takeover
//! starts the standalone stream's ids at a base derived from its epoch, so
//! that a failover which loses a whole takeover cannot let the next owner
//! give the lost owner's ids again: the stream is a list of segments, one
//! per owner, with a jump between. The backend reads the stream *for the
//! cursor* ([`SharedSnapshot::resume_at`](crate::shared::SharedSnapshot)),
//! and [`plan`] decides on that view:
//!
//! | Standalone cursor on a shared log | View the backend gives | Answer |
//! |---|---|---|
//! | an id the surviving history holds | the stream's | as above |
//! | the last id before a segment (or that segment's priming id, its start − 1) | floor at most the cursor's successor; events from the segment's start | `Replay` from the segment's start; the notice names it in `next` |
//! | strictly between those two (an id of an owner whose writes the backend lost) | floor at least the segment's start | `Fallback` from there, notice `complete: false` |
//!
//! A request stream's cursor that cannot be honoured is refused: its
//! response cannot be recovered any other way, so the client must learn at
//! once. The standalone stream carries on afresh instead, and its first frame
//! (the notice) names what was lost.

use http::StatusCode;

use super::cursor::{EventCursor, RmcpEventId};
use super::notice::ReplayNotice;
use super::scope::StreamScope;

/// Why a standalone resume fell back to a fresh stream, for logs.
pub const FALLBACK_REASON: &str = "cursor not covered; opened a fresh standalone stream";

/// A snapshot of one stream's log, as [`plan`] needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogView {
    /// The lowest index still retained, or `head` when none is.
    pub floor: u64,
    /// The index the next event will get.
    pub head: u64,
    /// No event will ever be appended (the request was answered).
    pub finished: bool,
}

/// What the server found for the cursor's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamLookup {
    /// The session is not known.
    SessionLost,
    /// The session has no stream with the cursor's number.
    UnknownStream,
    /// The stream's log.
    Found(LogView),
}

/// What a resume gets. See the [module docs](self) for the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum ResumeAnswer {
    /// Replay every event from `from` (the cursor's successor, or on a
    /// shared log the first index of the segment a takeover began after the
    /// cursor: see [`ReplayNotice::next`]), then go live.
    Replay {
        /// First index sent.
        from: u64,
        /// The stream's floor, declared to the client.
        floor: u64,
    },
    /// Standalone stream only: the cursor cannot be honoured; send from
    /// `from` (the floor, or the head) and say so in the notice.
    Fallback {
        /// First index sent.
        from: u64,
        /// The stream's floor, declared to the client.
        floor: u64,
    },
    /// The request stream was answered and nothing follows the cursor.
    Complete,
    /// Events after the cursor were evicted from the request stream.
    BelowFloor {
        /// The lowest index still retained.
        floor: u64,
    },
    /// The cursor names an event the request stream never produced.
    BeyondHead {
        /// The index the next event will get.
        head: u64,
    },
    /// The session has no such request stream.
    UnknownStream,
    /// The session is gone.
    SessionLost,
}

/// Decides what a resume from `cursor` gets, given its stream.
pub fn plan(stream: StreamLookup, cursor: RmcpEventId) -> ResumeAnswer {
    let log = match stream {
        StreamLookup::SessionLost => return ResumeAnswer::SessionLost,
        StreamLookup::UnknownStream => return ResumeAnswer::UnknownStream,
        StreamLookup::Found(log) => log,
    };
    let scope = cursor.stream_id().scope();
    let next = cursor.index.saturating_add(1);
    if next < log.floor {
        return match scope {
            StreamScope::Request => ResumeAnswer::BelowFloor { floor: log.floor },
            StreamScope::Standalone => ResumeAnswer::Fallback {
                from: log.floor,
                floor: log.floor,
            },
        };
    }
    if cursor.index >= log.head {
        return match scope {
            StreamScope::Request => ResumeAnswer::BeyondHead { head: log.head },
            StreamScope::Standalone => ResumeAnswer::Fallback {
                from: log.head,
                floor: log.floor,
            },
        };
    }
    if scope == StreamScope::Request && log.finished && next >= log.head {
        return ResumeAnswer::Complete;
    }
    ResumeAnswer::Replay {
        from: next,
        floor: log.floor,
    }
}

impl ResumeAnswer {
    /// The HTTP status the answer is sent with.
    pub const fn status(&self) -> StatusCode {
        match self {
            Self::Replay { .. } | Self::Fallback { .. } => StatusCode::OK,
            Self::Complete => StatusCode::NO_CONTENT,
            Self::BelowFloor { .. } | Self::BeyondHead { .. } | Self::UnknownStream => {
                StatusCode::BAD_REQUEST
            }
            Self::SessionLost => StatusCode::NOT_FOUND,
        }
    }

    /// Where a stream answer starts reading the log, or `None` when the
    /// answer carries no stream.
    pub const fn start(&self) -> Option<u64> {
        match self {
            Self::Replay { from, .. } | Self::Fallback { from, .. } => Some(*from),
            _ => None,
        }
    }

    /// The first frame of a stream answer, for the cursor it answers.
    pub fn notice(&self, cursor: RmcpEventId) -> Option<ReplayNotice> {
        let (floor, complete, next) = match self {
            Self::Replay { floor, from } => {
                let jump = *from != cursor.index.saturating_add(1);
                (*floor, true, jump.then(|| cursor.with_index(*from)))
            }
            Self::Fallback { floor, .. } => (*floor, false, None),
            _ => return None,
        };
        Some(ReplayNotice {
            cursor: EventCursor::Rmcp(cursor),
            floor: Some(EventCursor::Rmcp(cursor.with_index(floor))),
            complete,
            next: next.map(EventCursor::Rmcp),
        })
    }

    /// The answer in words, for the error body and the log.
    pub const fn reason(&self) -> &'static str {
        match self {
            Self::Replay { .. } => "every event after the cursor is replayed",
            Self::Fallback { .. } => FALLBACK_REASON,
            Self::Complete => "the stream is complete and nothing follows the cursor",
            Self::BelowFloor { .. } => "events after the cursor were evicted",
            Self::BeyondHead { .. } => "the cursor names an event this stream never produced",
            Self::UnknownStream => "no such request stream (never existed, or expired)",
            Self::SessionLost => "session not found",
        }
    }
}

#[cfg(test)]
mod tests;
