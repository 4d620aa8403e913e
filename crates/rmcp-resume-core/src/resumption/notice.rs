//! The wire format in which a server declares its replay floor.

use super::cursor::{CursorParseError, EventCursor};
use super::verdict::Acknowledgement;

/// Response header carrying the replay floor on every SSE response to a resume.
pub const REPLAY_FLOOR_HEADER: &str = "mcp-replay-floor";

/// SSE event type of the in-band notice. Not `message`, so peers that do not
/// know it ignore it; it never carries an `id`, so it never moves a cursor.
pub const REPLAY_NOTICE_EVENT: &str = "mcp-replay";

/// A malformed replay notice.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NoticeError {
    /// The data is not the expected JSON object.
    #[error("replay notice is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A cursor or floor in it is not a valid event id.
    #[error("replay notice carries an invalid event id: {0}")]
    Cursor(#[from] CursorParseError),
}

/// The first frame of a resumed stream: which cursor the server was asked
/// for, the lowest event it can still replay, and whether what follows is a
/// complete continuation of the cursor.
///
/// On the wire (`data` of an `mcp-replay` event):
/// `{"cursor":"4/2","floor":"3/2","complete":true}`; `floor` is `null`
/// when the server retains nothing for that stream. A complete replay whose
/// first event is not the cursor's successor names it in `next`
/// (`{"cursor":"4","floor":"2","complete":true,"next":"1796000000000000"}`):
/// on a shared log, a takeover starts the standalone stream's ids at a new
/// base, and a cursor that is the last id before it goes on there with
/// nothing in between. A notice without `next` is the notice as it always
/// was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayNotice {
    /// The `Last-Event-ID` the server received.
    pub cursor: EventCursor,
    /// The lowest event id it can still replay on the cursor's stream.
    pub floor: Option<EventCursor>,
    /// `true` when every event after the cursor follows.
    pub complete: bool,
    /// On a complete replay, the first event's id when it is not the
    /// cursor's successor: the ids jump there (a new owner's segment on a
    /// shared log) and no event lies between.
    pub next: Option<EventCursor>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Wire {
    cursor: String,
    floor: Option<String>,
    complete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

impl ReplayNotice {
    /// Encodes the notice as SSE `data`.
    pub fn to_json(&self) -> String {
        let wire = Wire {
            cursor: self.cursor.to_string(),
            floor: self.floor.as_ref().map(ToString::to_string),
            complete: self.complete,
            next: self.next.as_ref().map(ToString::to_string),
        };
        // Serializing a struct of strings and a bool cannot fail.
        serde_json::to_string(&wire).unwrap_or_default()
    }

    /// Decodes SSE `data`.
    pub fn from_json(data: &str) -> Result<Self, NoticeError> {
        let wire: Wire = serde_json::from_str(data)?;
        Ok(Self {
            cursor: EventCursor::parse(&wire.cursor)?,
            floor: wire.floor.as_deref().map(EventCursor::parse).transpose()?,
            complete: wire.complete,
            next: wire.next.as_deref().map(EventCursor::parse).transpose()?,
        })
    }

    /// The notice as an [`Acknowledgement`].
    pub fn acknowledgement(&self) -> Acknowledgement {
        if self.complete {
            Acknowledgement::Honoured
        } else {
            Acknowledgement::NotHonoured
        }
    }
}
