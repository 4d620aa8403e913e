//! One resume's answer as the probe judges it: status, the declared floor,
//! and the frames that came before the body ended or fell silent.

use std::time::{Duration, Instant};

use rmcp_resume_core::resumption::{REPLAY_FLOOR_HEADER, REPLAY_NOTICE_EVENT, ReplayNotice};
use serde_json::Value;

use crate::sse::{Frame, FrameReader, Pause};
use crate::verdict::Evidence;

/// At most this many frames are read from one answer.
const MAX_FRAMES: usize = 10_000;

/// A response, read until it ended, fell silent, or carried what was sought.
#[derive(Debug)]
pub struct Observation {
    /// The status.
    pub status: reqwest::StatusCode,
    /// `Mcp-Replay-Floor`, if sent.
    pub floor_header: Option<String>,
    /// The frames read.
    pub frames: Vec<Frame>,
    /// How reading stopped (`None`: it stopped at the sought frame).
    pub pause: Option<Pause>,
    /// The body's first bytes.
    pub first_bytes: String,
    /// From the request to the end of reading.
    pub elapsed: Duration,
}

impl Observation {
    /// Reads `response` until it ends, stays silent for `quiet`, or a frame
    /// satisfies `stop`.
    pub async fn read(
        response: reqwest::Response,
        started: Instant,
        quiet: Duration,
        stop: impl Fn(&Frame) -> bool,
    ) -> Self {
        let status = response.status();
        let floor_header = response
            .headers()
            .get(REPLAY_FLOOR_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut reader = FrameReader::new(response);
        let mut frames = Vec::new();
        let mut pause = Some(Pause::Silent);
        while frames.len() < MAX_FRAMES {
            match reader.next_within(quiet).await {
                Ok(frame) => {
                    let done = stop(&frame);
                    frames.push(frame);
                    if done {
                        pause = None;
                        break;
                    }
                }
                Err(why) => {
                    pause = Some(why);
                    break;
                }
            }
        }
        Self {
            status,
            floor_header,
            frames,
            pause,
            first_bytes: reader.first_bytes(),
            elapsed: started.elapsed(),
        }
    }

    /// The `mcp-replay` notice, if the answer opened with one.
    pub fn notice(&self) -> Option<ReplayNotice> {
        self.frames
            .iter()
            .find(|f| f.event.as_deref() == Some(REPLAY_NOTICE_EVENT))
            .and_then(|f| ReplayNotice::from_json(&f.data).ok())
    }

    /// Whether the server said where its replay starts.
    pub fn declares_floor(&self) -> bool {
        self.floor_header.is_some() || self.notice().is_some()
    }

    /// Frames that carry MCP messages (not priming events, not notices).
    pub fn messages(&self) -> impl Iterator<Item = (&Frame, Value)> {
        self.frames.iter().filter_map(|f| {
            let is_notice = f.event.as_deref() == Some(REPLAY_NOTICE_EVENT);
            (!is_notice).then(|| f.json().map(|j| (f, j))).flatten()
        })
    }

    /// A `200` that carried no message and ended: upstream rmcp's wedge.
    pub fn is_empty_ok(&self) -> bool {
        self.status == reqwest::StatusCode::OK
            && self.messages().next().is_none()
            && self.notice().is_none()
    }

    /// The evidence, with `detail`.
    pub fn evidence(&self, detail: impl Into<String>) -> Evidence {
        Evidence {
            status: Some(self.status.as_u16()),
            first_bytes: Some(self.first_bytes.clone()),
            elapsed_ms: Some(u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX)),
            detail: detail.into(),
        }
    }

    /// How the body stopped, in words.
    pub fn ending(&self) -> &'static str {
        match self.pause {
            Some(Pause::Ended) => "the body ended",
            Some(Pause::Silent) => "the stream stayed open and silent",
            None => "the sought frame arrived",
        }
    }
}
