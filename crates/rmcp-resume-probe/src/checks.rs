//! The promises, one module each, in the order the report lists them.
//!
//! | Check | Needs | Passes when |
//! |---|---|---|
//! | [`priming`] | — | an SSE stream opens with an event id, no data, and `retry` |
//! | [`unbuffered`] | `--tool` | a call's frames arrive as it goes, not all at its end |
//! | [`malformed`] | — | a malformed `Last-Event-ID` gets a `4xx` (not `404`) |
//! | [`unknown`] | — | a cursor the server never issued is refused, or answered as not honoured |
//! | [`request_resume`] | `--tool` | a call's stream cut after its priming event resumes to the response, or is refused clearly |
//! | [`strictly_after`] | `--tool` | a replay starts after the cursor: the cursor event is not sent again |
//! | [`evicted`] | `--tool` | a cursor the window lost is refused or answered with its floor, never skipped silently |
//! | [`two_gets`] | `--notify-tool` | with two GETs on a session, the survivor of a closed one gets each notification once (#659) |
//! | [`sessions`] | — | `DELETE` then `GET` answers `404`; an unknown session answers `404` |
//! | [`keep_alive`] | `--hold` | a quiet stream survives the path for the hold |
//! | [`floor`] | — | a resume declares its replay floor (`Mcp-Replay-Floor` or the `mcp-replay` notice) |

pub mod evicted;
pub mod floor;
pub mod keep_alive;
pub mod malformed;
pub mod priming;
pub mod request_resume;
pub mod sessions;
pub mod strictly_after;
pub mod two_gets;
pub mod unbuffered;
pub mod unknown;

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::ProbeError;
use crate::session::{Kind, Session, Target, content_kind};
use crate::sse::{Frame, FrameReader};
use crate::verdict::{CheckResult, Evidence, Verdict};

/// What the checks may use beyond the endpoint.
#[derive(Clone, Debug)]
pub struct Options {
    /// A tool whose call streams (progress, then a response): name, arguments.
    pub tool: Option<(String, Value)>,
    /// A tool whose call makes the server notify on the standalone stream.
    pub notify: Option<(String, Value)>,
    /// How long [`keep_alive`] holds a stream open (zero: not checked).
    pub hold: Duration,
    /// Silence that ends the reading of an answer.
    pub quiet: Duration,
    /// How long [`evicted`] lets the tool run before resuming.
    pub settle: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            tool: None,
            notify: None,
            hold: Duration::from_secs(30),
            quiet: Duration::from_secs(2),
            settle: Duration::from_secs(2),
        }
    }
}

/// What one check works with.
pub(crate) struct Ctx<'a> {
    pub target: &'a Target,
    pub options: &'a Options,
    /// Told what a long wait is for (a terminal shows it).
    pub waiting: &'a (dyn Fn(&str) + Send + Sync),
}

/// A judgement, or the error that cut the check short (judged a failure:
/// the server stopped answering as it must).
pub(crate) type Judged = Result<(Verdict, Evidence), ProbeError>;

pub(crate) fn finish(id: &'static str, promise: &'static str, judged: Judged) -> CheckResult {
    let (verdict, evidence) = judged.unwrap_or_else(|error| {
        (
            Verdict::Fail,
            Evidence {
                detail: error.to_string(),
                ..Evidence::default()
            },
        )
    });
    CheckResult {
        id,
        promise,
        verdict,
        evidence,
    }
}

pub(crate) fn verdict(verdict: Verdict, detail: impl Into<String>) -> Judged {
    Ok((
        verdict,
        Evidence {
            detail: detail.into(),
            ..Evidence::default()
        },
    ))
}

/// A refusal a client understands: a `4xx` other than `404` (which says the
/// session is gone, and makes a client start over).
pub(crate) fn is_clear_refusal(status: reqwest::StatusCode) -> bool {
    status.is_client_error() && status != reqwest::StatusCode::NOT_FOUND
}

/// A cursor to resume from: the first frame of a stream, when it is a
/// priming event.
pub(crate) struct Primed {
    pub cursor: String,
}

/// Opens the session's standalone stream and reads its first frame.
/// `Ok(None)` when the server offers none (`405`) or sends no id first.
pub(crate) async fn standalone_priming(
    session: &Session,
    quiet: Duration,
) -> Result<Result<Primed, Evidence>, ProbeError> {
    let started = Instant::now();
    let response = session.get(None).await?;
    let status = response.status();
    if !status.is_success() || !matches!(content_kind(&response), Kind::Sse) {
        return Ok(Err(Evidence {
            status: Some(status.as_u16()),
            elapsed_ms: Some(millis(started.elapsed())),
            detail: format!("the standalone GET answered {status} without an event stream"),
            ..Evidence::default()
        }));
    }
    let mut reader = FrameReader::new(response);
    match reader.next_within(quiet).await {
        Ok(Frame {
            id: Some(cursor), ..
        }) => Ok(Ok(Primed { cursor })),
        other => Ok(Err(Evidence {
            status: Some(status.as_u16()),
            first_bytes: Some(reader.first_bytes()),
            elapsed_ms: Some(millis(started.elapsed())),
            detail: format!("the standalone stream opened without an event id ({other:?})"),
        })),
    }
}

/// A streaming call cut where `cut` says: the request id, the frames read
/// before the cut, and the response (dropped, so the connection closes).
pub(crate) struct CutCall {
    pub request: Value,
    pub frames: Vec<Frame>,
}

/// Calls the tool and reads until `cut` is true of a frame (or the call
/// answered, or fell silent); then drops the connection.
pub(crate) async fn cut_call(
    session: &mut Session,
    (name, args): &(String, Value),
    quiet: Duration,
    cut: impl Fn(&Frame) -> bool,
) -> Result<Result<CutCall, String>, ProbeError> {
    let (request, response) = session.call(name, args).await?;
    let status = response.status();
    if !status.is_success() {
        return Ok(Err(format!("tools/call {name} answered {status}")));
    }
    if !matches!(content_kind(&response), Kind::Sse) {
        return Ok(Err(format!(
            "tools/call {name} answered with JSON: no stream to cut"
        )));
    }
    let mut reader = FrameReader::new(response);
    let mut frames = Vec::new();
    for _ in 0..10_000 {
        match reader.next_within(quiet).await {
            Ok(frame) => {
                let done = cut(&frame) || frame.answers(&request);
                frames.push(frame);
                if done {
                    break;
                }
            }
            Err(pause) => {
                return Ok(Err(format!(
                    "the call's stream paused ({pause:?}) after {} frames",
                    frames.len()
                )));
            }
        }
    }
    drop(reader);
    Ok(Ok(CutCall { request, frames }))
}

pub(crate) fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// Describes frames briefly for evidence.
pub(crate) fn describe(frame: &Frame) -> String {
    let data: String = frame.data.chars().take(60).collect();
    format!(
        "{{id: {:?}, event: {:?}, retry: {:?}, data: {data:?}}}",
        frame.id, frame.event, frame.retry
    )
}
