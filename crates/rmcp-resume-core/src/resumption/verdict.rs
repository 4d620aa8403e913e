//! What a reconnect proved: the decision boundary.

use std::fmt;

use http::StatusCode;

use super::cursor::{EventCursor, LostRange, RmcpEventId};

/// What to do when nothing on the reconnect proves continuity yet: the cursor
/// is opaque and the server neither acknowledged it nor declared a floor, or
/// the stream is open and no event has arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum UnprovenPolicy {
    /// Treat missing proof as failure. Right for servers that declare floors,
    /// and for callers that must never act on a partial result.
    Strict,
    /// Accept what cannot be checked. Right for peers whose id scheme is
    /// opaque and who never acknowledge (most other SDKs); the verdict still
    /// says the continuity was [`Proof::Assumed`]. The default, as in the
    /// client's `ResumeConfig`: upstream accepts every such resume.
    #[default]
    Lenient,
}

/// Whether the session behind the reconnect is the one the cursor came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SessionContinuity {
    /// Nothing says otherwise (the common case).
    #[default]
    Durable,
    /// The server re-created the session under the same id (for example after
    /// a restart with no session store): it answers, but remembers no events.
    Recreated,
}

/// The server's in-band statement about the cursor (see [`super::ReplayNotice`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Acknowledgement {
    /// Every event after the cursor will be replayed.
    Honoured,
    /// The cursor could not be honoured; what follows is not a continuation.
    NotHonoured,
}

/// Everything a client observed about one reconnect attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReconnectOutcome {
    /// HTTP status of the GET.
    pub status: StatusCode,
    /// The lowest event the server can still replay on the cursor's stream, as
    /// it declared it (header or in-band notice).
    pub floor: Option<EventCursor>,
    /// The server's in-band acknowledgement of the cursor, if it sent one.
    pub acknowledgement: Option<Acknowledgement>,
    /// Whether the session is the one the cursor belongs to.
    pub session: SessionContinuity,
    /// The first event id received that is not a re-sent copy of the cursor.
    pub first_event: Option<EventCursor>,
    /// Whether the stream ended before `first_event` (or any event) arrived.
    pub closed: bool,
    /// The first event the server said follows the cursor when it is not
    /// the cursor's successor (a notice's `next`: a shared log's new
    /// segment). It vouches for that one event only, and only with the
    /// server's acknowledgement.
    pub next: Option<EventCursor>,
}

impl ReconnectOutcome {
    /// A response with `status` about which nothing else is known yet: open,
    /// durable, no floor, no acknowledgement, no event.
    pub fn new(status: StatusCode) -> Self {
        Self {
            status,
            floor: None,
            acknowledgement: None,
            session: SessionContinuity::Durable,
            first_event: None,
            closed: false,
            next: None,
        }
    }

    /// Sets the declared floor.
    pub fn with_floor(mut self, floor: EventCursor) -> Self {
        self.floor = Some(floor);
        self
    }

    /// Sets the acknowledgement.
    pub fn with_acknowledgement(mut self, ack: Acknowledgement) -> Self {
        self.acknowledgement = Some(ack);
        self
    }

    /// Sets the session continuity.
    pub fn with_session(mut self, session: SessionContinuity) -> Self {
        self.session = session;
        self
    }

    /// Sets the first event received after the cursor.
    pub fn with_first_event(mut self, id: EventCursor) -> Self {
        self.first_event = Some(id);
        self
    }

    /// Sets the declared first event after the cursor.
    pub fn with_next(mut self, next: EventCursor) -> Self {
        self.next = Some(next);
        self
    }

    /// Marks the stream as ended.
    pub fn closed(mut self) -> Self {
        self.closed = true;
        self
    }
}

/// How a [`Verdict::Resumed`] was proven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Proof {
    /// The first event is the cursor's successor in rmcp's scheme.
    Successor,
    /// The server acknowledged the cursor in-band.
    Acknowledged,
    /// Nothing could be checked and the caller chose [`UnprovenPolicy::Lenient`].
    Assumed,
}

/// A reconnect that cannot be a continuation of the cursor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumptionError {
    /// The server declared a floor above the cursor's successor.
    #[error("cursor {cursor} is below the replay floor {floor}: events {lost} are lost")]
    BelowFloor {
        /// The client's cursor.
        cursor: EventCursor,
        /// The declared floor.
        floor: EventCursor,
        /// The events between them.
        lost: LostRange,
    },
    /// The server said in-band that it could not honour the cursor.
    #[error("server did not honour cursor {cursor}{}", fmt_floor(.floor))]
    NotHonoured {
        /// The client's cursor.
        cursor: EventCursor,
        /// The floor the server declared with it, if any.
        floor: Option<EventCursor>,
    },
    /// The session was re-created under the same id and keeps no events.
    #[error("session was re-created under the same id; cursor {cursor} cannot be honoured")]
    SessionRecreated {
        /// The client's cursor.
        cursor: EventCursor,
    },
    /// The stream ended without a single event after the cursor.
    #[error("reconnect for cursor {cursor} ended before any event; continuity is not proven")]
    EmptyStream {
        /// The client's cursor.
        cursor: EventCursor,
    },
    /// The first event after the cursor is not its successor.
    #[error("gap after cursor {cursor}: expected {expected}, got {got}; events {lost} are missing")]
    Gap {
        /// The client's cursor.
        cursor: EventCursor,
        /// The successor that should have come first.
        expected: EventCursor,
        /// What came first.
        got: EventCursor,
        /// The events skipped.
        lost: LostRange,
    },
    /// The first event belongs to another stream, or goes backwards.
    #[error("reconnect for cursor {cursor} continued with unrelated event {got}")]
    Discontinuous {
        /// The client's cursor.
        cursor: EventCursor,
        /// What came first.
        got: EventCursor,
    },
    /// Nothing proved continuity and the policy is [`UnprovenPolicy::Strict`].
    #[error(
        "reconnect for cursor {cursor} cannot prove continuity (no acknowledgement, floor or checkable id)"
    )]
    Unproven {
        /// The client's cursor.
        cursor: EventCursor,
    },
    /// The server answered with a status other than 200, 404 or 410.
    #[error("reconnect for cursor {cursor} was answered with HTTP {}", status.as_u16())]
    Status {
        /// The client's cursor.
        cursor: EventCursor,
        /// The HTTP status.
        status: StatusCode,
    },
}

fn fmt_floor(floor: &Option<EventCursor>) -> String {
    match floor {
        Some(floor) => format!(" (replay floor {floor})"),
        None => String::new(),
    }
}

impl ResumptionError {
    /// The events known to be lost, where the scheme lets them be named.
    pub fn lost(&self) -> Option<LostRange> {
        match self {
            Self::BelowFloor { lost, .. } | Self::Gap { lost, .. } => Some(*lost),
            _ => None,
        }
    }

    /// The cursor the failed reconnect was for.
    pub fn cursor(&self) -> &EventCursor {
        match self {
            Self::BelowFloor { cursor, .. }
            | Self::NotHonoured { cursor, .. }
            | Self::SessionRecreated { cursor }
            | Self::EmptyStream { cursor }
            | Self::Gap { cursor, .. }
            | Self::Discontinuous { cursor, .. }
            | Self::Unproven { cursor }
            | Self::Status { cursor, .. } => cursor,
        }
    }
}

/// The session is gone: the server answered 404 or 410.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("session lost: HTTP {} on resume of cursor {cursor}; re-initialize", status.as_u16())]
pub struct SessionLost {
    /// The client's cursor.
    pub cursor: EventCursor,
    /// 404 or 410.
    pub status: StatusCode,
}

/// What a reconnect means. Exactly one holds; see the module docs for what a
/// caller should do with each.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Verdict {
    /// Continuity is proven (or assumed, by policy): deliver events.
    Resumed(Proof),
    /// The cursor is inside the retained window but nothing new has arrived:
    /// wait (on an open stream) or poll again later (on a closed one).
    Delayed,
    /// The reconnect cannot continue the cursor: escalate.
    ResumptionFailed(ResumptionError),
    /// The session is gone: re-initialize.
    SessionLost(SessionLost),
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Resumed(proof) => write!(f, "resumed ({proof:?})"),
            Self::Delayed => f.write_str("delayed"),
            Self::ResumptionFailed(e) => write!(f, "resumption failed: {e}"),
            Self::SessionLost(e) => e.fmt(f),
        }
    }
}

/// What the declared floor says about the cursor.
enum FloorCheck {
    Covers,
    Lost(EventCursor, LostRange),
    Unknown,
}

fn check_floor(cursor: &EventCursor, floor: Option<&EventCursor>) -> FloorCheck {
    let (Some(c), Some(EventCursor::Rmcp(f))) = (cursor.as_rmcp(), floor) else {
        return FloorCheck::Unknown;
    };
    if !c.same_stream(*f) {
        // A floor for another stream proves nothing about this cursor.
        return FloorCheck::Unknown;
    }
    match LostRange::between(c, f.index) {
        Some(lost) => FloorCheck::Lost(EventCursor::Rmcp(*f), lost),
        None => FloorCheck::Covers,
    }
}

/// How an event relates to the one before it on an rmcp-style stream.
pub(super) enum Step {
    /// The successor.
    Next,
    /// The same id again.
    Repeat,
    /// An earlier id on the same stream: the server rewound its numbering.
    Rewind,
    /// A later id on the same stream, skipping `lost`.
    Skip {
        expected: RmcpEventId,
        lost: LostRange,
    },
    /// An id on another stream.
    OtherStream,
}

pub(super) fn step(prev: RmcpEventId, next: RmcpEventId) -> Step {
    if !prev.same_stream(next) {
        return Step::OtherStream;
    }
    if next.index == prev.index {
        return Step::Repeat;
    }
    if next.index < prev.index {
        return Step::Rewind;
    }
    match (prev.successor(), LostRange::between(prev, next.index)) {
        (Some(expected), Some(lost)) => Step::Skip { expected, lost },
        _ => Step::Next,
    }
}

/// Decides what a reconnect from `cursor` means.
///
/// The order of the checks is the order of their authority: the HTTP status,
/// then what the server declared (floor, acknowledgement, session), then what
/// the stream itself shows.
pub fn decide(cursor: &EventCursor, outcome: &ReconnectOutcome, policy: UnprovenPolicy) -> Verdict {
    use ResumptionError as E;
    let fail = Verdict::ResumptionFailed;
    let cursor_owned = || cursor.clone();

    match outcome.status {
        StatusCode::OK => {}
        StatusCode::NOT_FOUND | StatusCode::GONE => {
            return Verdict::SessionLost(SessionLost {
                cursor: cursor_owned(),
                status: outcome.status,
            });
        }
        status => {
            return fail(E::Status {
                cursor: cursor_owned(),
                status,
            });
        }
    }

    let floor = check_floor(cursor, outcome.floor.as_ref());
    if let FloorCheck::Lost(floor, lost) = floor {
        return fail(E::BelowFloor {
            cursor: cursor_owned(),
            floor,
            lost,
        });
    }
    if outcome.acknowledgement == Some(Acknowledgement::NotHonoured) {
        return fail(E::NotHonoured {
            cursor: cursor_owned(),
            floor: outcome.floor.clone(),
        });
    }
    if outcome.session == SessionContinuity::Recreated {
        return fail(E::SessionRecreated {
            cursor: cursor_owned(),
        });
    }
    let acknowledged = outcome.acknowledgement == Some(Acknowledgement::Honoured);

    let Some(first) = &outcome.first_event else {
        // No event after the cursor. Only an acknowledgement proves that the
        // server has nothing newer (a poll with nothing new, SEP-1699); a floor
        // alone says events are retained, not that none were skipped.
        if outcome.closed {
            return if acknowledged {
                Verdict::Delayed
            } else {
                fail(E::EmptyStream {
                    cursor: cursor_owned(),
                })
            };
        }
        return match (acknowledged, &floor, policy) {
            (true, _, _) | (_, FloorCheck::Covers, _) | (_, _, UnprovenPolicy::Lenient) => {
                Verdict::Delayed
            }
            _ => fail(E::Unproven {
                cursor: cursor_owned(),
            }),
        };
    };

    match (cursor.as_rmcp(), first.as_rmcp()) {
        (Some(c), Some(f)) => match step(c, f) {
            Step::Next => Verdict::Resumed(Proof::Successor),
            // The jump the server announced with its acknowledgement: the
            // ids between are no events (a shared log's new segment).
            Step::Skip { .. } if acknowledged && outcome.next.as_ref() == Some(first) => {
                Verdict::Resumed(Proof::Acknowledged)
            }
            Step::Skip { expected, lost } => fail(E::Gap {
                cursor: cursor_owned(),
                expected: EventCursor::Rmcp(expected),
                got: first.clone(),
                lost,
            }),
            // `first_event` excludes re-sent copies of the cursor, so an
            // earlier id here is the server rewinding, not a duplicate.
            Step::Repeat | Step::Rewind | Step::OtherStream => fail(E::Discontinuous {
                cursor: cursor_owned(),
                got: first.clone(),
            }),
        },
        // Ids that cannot be compared: the server's word, or the policy.
        _ if acknowledged => Verdict::Resumed(Proof::Acknowledged),
        _ => match policy {
            UnprovenPolicy::Lenient => Verdict::Resumed(Proof::Assumed),
            UnprovenPolicy::Strict => fail(E::Unproven {
                cursor: cursor_owned(),
            }),
        },
    }
}
