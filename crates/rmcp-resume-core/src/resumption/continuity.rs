//! Checking a stream event by event, during and after a resume.

use super::cursor::{EventCursor, LostRange};
use super::verdict::{
    Acknowledgement, ReconnectOutcome, SessionContinuity, Step, UnprovenPolicy, Verdict, decide,
    step,
};

/// How one event relates to the event before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Continuity {
    /// The successor of the previous id.
    Next,
    /// The previous id again: drop it, do not deliver it twice.
    Duplicate,
    /// A new opaque id: nothing to check it against.
    Unchecked,
}

/// A break in a stream that was continuous so far.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContinuityError {
    /// Ids were skipped.
    #[error("gap after event {after}: got {got}; events {lost} are missing")]
    Gap {
        /// The last event delivered.
        after: EventCursor,
        /// The event that arrived.
        got: EventCursor,
        /// The events skipped.
        lost: LostRange,
    },
    /// An earlier id than the last: the server restarted its numbering (a
    /// per-connection counter, or a restart), so what follows is not a
    /// continuation.
    #[error("event {got} rewinds the stream after {after}")]
    Rewind {
        /// The last event delivered.
        after: EventCursor,
        /// The earlier event that arrived.
        got: EventCursor,
    },
    /// The event belongs to another stream or id scheme.
    #[error("event {got} does not belong to the stream of {after}")]
    Unrelated {
        /// The last event delivered.
        after: EventCursor,
        /// The event that arrived.
        got: EventCursor,
    },
}

/// Follows one stream once its resumption is proven: every later id must be
/// the successor of the one before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContinuityChecker {
    last: EventCursor,
}

impl ContinuityChecker {
    /// A checker whose last delivered event is `last`.
    pub fn new(last: EventCursor) -> Self {
        Self { last }
    }

    /// The last event accepted (the cursor to resume from).
    pub fn last(&self) -> &EventCursor {
        &self.last
    }

    /// Checks `id` against the last accepted event and, unless it is an
    /// error or a duplicate, makes it the last. An error leaves the checker as
    /// it was.
    pub fn observe(&mut self, id: &EventCursor) -> Result<Continuity, ContinuityError> {
        let verdict = match (&self.last, id) {
            (EventCursor::Rmcp(prev), EventCursor::Rmcp(next)) => match step(*prev, *next) {
                Step::Next => Continuity::Next,
                Step::Repeat => Continuity::Duplicate,
                Step::Rewind => {
                    return Err(ContinuityError::Rewind {
                        after: self.last.clone(),
                        got: id.clone(),
                    });
                }
                Step::Skip { lost, .. } => {
                    return Err(ContinuityError::Gap {
                        after: self.last.clone(),
                        got: id.clone(),
                        lost,
                    });
                }
                Step::OtherStream => {
                    return Err(ContinuityError::Unrelated {
                        after: self.last.clone(),
                        got: id.clone(),
                    });
                }
            },
            (EventCursor::Opaque(prev), EventCursor::Opaque(next)) if prev == next => {
                Continuity::Duplicate
            }
            (EventCursor::Opaque(_), EventCursor::Opaque(_)) => Continuity::Unchecked,
            _ => {
                return Err(ContinuityError::Unrelated {
                    after: self.last.clone(),
                    got: id.clone(),
                });
            }
        };
        if verdict != Continuity::Duplicate {
            self.last = id.clone();
        }
        Ok(verdict)
    }
}

/// What to do with an event seen while a resume is being verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventAction {
    /// Hand it to the application (once the verdict allows).
    Deliver,
    /// A re-sent copy of the cursor (or an earlier event): drop it.
    SkipDuplicate,
}

/// Builds a [`ReconnectOutcome`] from a reconnect as it is read, and decides
/// it at every step.
///
/// Feed it what the response shows, in order, and ask for the
/// [`verdict`](Self::verdict) after each step.
#[derive(Debug, Clone)]
pub struct ResumeVerifier {
    cursor: EventCursor,
    policy: UnprovenPolicy,
    outcome: ReconnectOutcome,
    duplicates: u64,
}

impl ResumeVerifier {
    /// Starts verifying a reconnect from `cursor` answered with `status`.
    pub fn new(cursor: EventCursor, status: http::StatusCode, policy: UnprovenPolicy) -> Self {
        Self {
            cursor,
            policy,
            outcome: ReconnectOutcome::new(status),
            duplicates: 0,
        }
    }

    /// Records the floor the server declared (header or in-band notice).
    pub fn declare_floor(&mut self, floor: EventCursor) {
        self.outcome.floor = Some(floor);
    }

    /// Records the first event the server said follows the cursor, when it
    /// is not the cursor's successor (a notice's `next`).
    pub fn declare_next(&mut self, next: EventCursor) {
        self.outcome.next = Some(next);
    }

    /// Records the server's in-band acknowledgement.
    pub fn acknowledge(&mut self, ack: Acknowledgement) {
        self.outcome.acknowledgement = Some(ack);
    }

    /// Records that the session was re-created under the same id.
    pub fn session_recreated(&mut self) {
        self.outcome.session = SessionContinuity::Recreated;
    }

    /// Records an event carrying `id`, and says whether to deliver it.
    ///
    /// Events without an id do not move the cursor and decide nothing.
    pub fn on_event(&mut self, id: Option<&EventCursor>) -> EventAction {
        let Some(id) = id else {
            return EventAction::Deliver;
        };
        if self.outcome.first_event.is_some() {
            return EventAction::Deliver;
        }
        let repeat = match (&self.cursor, id) {
            (EventCursor::Rmcp(c), EventCursor::Rmcp(e)) => matches!(step(*c, *e), Step::Repeat),
            (c, e) => c == e,
        };
        if repeat {
            self.duplicates = self.duplicates.saturating_add(1);
            return EventAction::SkipDuplicate;
        }
        self.outcome.first_event = Some(id.clone());
        EventAction::Deliver
    }

    /// Records that the stream ended.
    pub fn on_close(&mut self) {
        self.outcome.closed = true;
    }

    /// What the reconnect means given everything seen so far.
    pub fn verdict(&self) -> Verdict {
        decide(&self.cursor, &self.outcome, self.policy)
    }

    /// What has been observed.
    pub fn outcome(&self) -> &ReconnectOutcome {
        &self.outcome
    }

    /// How many re-sent copies of the cursor (or earlier events) were dropped.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// A checker for the rest of the stream, starting after the first event
    /// (or at the cursor if none arrived yet).
    pub fn into_checker(self) -> ContinuityChecker {
        ContinuityChecker::new(self.outcome.first_event.unwrap_or(self.cursor))
    }
}
