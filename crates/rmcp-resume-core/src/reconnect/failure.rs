//! What a request learns when its stream could not be resumed: a JSON-RPC
//! error with a code and a `data` member a caller can match on, instead of a
//! generic internal error.

use serde::{Deserialize, Serialize};

use super::{Attempt, ResumeStreamError};
use crate::resumption::{ContinuityError, LostRange, ResumptionError};

/// The JSON-RPC error code of a request whose stream could not be resumed.
///
/// `-32000` is the first implementation-defined server error; the
/// TypeScript SDK uses the same code for "connection closed", which is what
/// the caller of such a request has in effect seen.
pub const RESUME_FAILED_CODE: i32 = -32000;

/// The key under which a [`ResumeFailure`] sits in the error's `data`.
pub const RESUME_FAILURE_KEY: &str = "resumeFailure";

/// Why a request's stream could not be resumed, in the error's `data`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResumeFailure {
    /// What went wrong.
    pub kind: ResumeFailureKind,
    /// The cursor the last resume used, if the stream had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// The events known to be lost, where the id scheme names them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<LostRange>,
    /// Consecutive failed attempts, when the limits ran out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<usize>,
}

/// The kinds of [`ResumeFailure`].
///
/// | Kind | Meaning | Retrying the request |
/// |---|---|---|
/// | `refused` | the server refused the cursor (`400`, `204`, an evicted cursor) | may repeat its effects |
/// | `lost` | events before the response are missing (a floor, a gap) | may repeat its effects |
/// | `exhausted` | every attempt failed, or the deadline passed | may repeat its effects |
/// | `sessionLost` | the session is gone (`404`) | after a new session |
/// | `fatal` | authentication, `405`, an SSE stream the client cannot parse | will fail again |
/// | `notResumable` | the stream broke under a revision without resumption (2026-07-28); the request may have run, and was not sent again | may repeat its effects |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ResumeFailureKind {
    /// The server refused the cursor.
    Refused,
    /// Events the request's stream carried are known to be missing.
    Lost,
    /// The attempts, or the time, allowed for resuming ran out.
    Exhausted,
    /// The session is gone.
    SessionLost,
    /// Nothing will help.
    Fatal,
    /// The request's stream broke under a revision that has no resumption.
    NotResumable,
}

impl ResumeFailure {
    /// Describes `error`.
    pub fn of<E: std::error::Error + 'static>(error: &ResumeStreamError<E>) -> Self {
        let (kind, cursor, lost, attempts) = match error {
            ResumeStreamError::Resumption(e) => (
                resumption_kind(e),
                Some(e.cursor().to_string()),
                e.lost(),
                None,
            ),
            ResumeStreamError::Continuity(e) => {
                let lost = match e {
                    ContinuityError::Gap { lost, .. } => Some(*lost),
                    _ => None,
                };
                (ResumeFailureKind::Lost, None, lost, None)
            }
            ResumeStreamError::CursorRejected { cursor, .. } => {
                (ResumeFailureKind::Refused, Some(cursor.clone()), None, None)
            }
            ResumeStreamError::Exhausted {
                attempts,
                cursor,
                last,
            } => {
                let kind = match **last {
                    Attempt::Resumption(ref e) => resumption_kind(e),
                    _ => ResumeFailureKind::Exhausted,
                };
                (kind, cursor.clone(), None, Some(*attempts))
            }
            ResumeStreamError::SessionLost(_) => (ResumeFailureKind::SessionLost, None, None, None),
            ResumeStreamError::Fatal(_) | ResumeStreamError::Malformed(_) => {
                (ResumeFailureKind::Fatal, None, None, None)
            }
        };
        Self {
            kind,
            cursor,
            lost,
            attempts,
        }
    }

    /// A request whose stream broke under a revision without resumption
    /// (2026-07-28): the server may have run it; it was not sent again.
    pub fn not_resumable() -> Self {
        Self {
            kind: ResumeFailureKind::NotResumable,
            cursor: None,
            lost: None,
            attempts: None,
        }
    }

    /// The error's `data` member: `{"resumeFailure": {...}}`.
    pub fn to_data(&self) -> serde_json::Value {
        serde_json::json!({ RESUME_FAILURE_KEY: self })
    }

    /// Reads a failure back from a JSON-RPC error's code and `data`; `None`
    /// for any other error.
    pub fn from_error(code: i32, data: Option<&serde_json::Value>) -> Option<Self> {
        if code != RESUME_FAILED_CODE {
            return None;
        }
        let failure = data?.get(RESUME_FAILURE_KEY)?;
        Self::deserialize(failure).ok()
    }
}

fn resumption_kind(error: &ResumptionError) -> ResumeFailureKind {
    match error {
        ResumptionError::SessionRecreated { .. } => ResumeFailureKind::SessionLost,
        ResumptionError::EmptyStream { .. } | ResumptionError::Unproven { .. } => {
            ResumeFailureKind::Exhausted
        }
        ResumptionError::NotHonoured { .. } | ResumptionError::Status { .. } => {
            ResumeFailureKind::Refused
        }
        _ => ResumeFailureKind::Lost,
    }
}
