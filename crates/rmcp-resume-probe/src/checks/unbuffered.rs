//! A call's events reach the client as the server sends them. A path that
//! holds an event stream back until it ends (a reverse proxy buffering
//! responses) turns progress into one burst at the end, and leaves the
//! client without a cursor for the whole call: a cut then loses all of it.
//!
//! Judged from when each frame of one streaming call arrived, counted from
//! the `POST` ([`judge_arrivals`]):
//!
//! | Arrivals | Verdict |
//! |---|---|
//! | fewer than [`MIN_FRAMES`] frames | NOT CHECKED: too few to tell |
//! | the response within [`MIN_CALL`] | NOT CHECKED: a fast tool and a held-back stream look alike |
//! | the first frame no earlier than [`HELD_SHARE`] of the way to the response | FAIL: held back |
//! | otherwise | PASS |

use std::time::{Duration, Instant};

use super::{Ctx, Judged, finish, millis, verdict};
use crate::session::{Kind, content_kind};
use crate::sse::FrameReader;
use crate::verdict::{CheckResult, Evidence, Verdict};

/// The check's name.
pub const ID: &str = "unbuffered";
/// Its promise.
pub const PROMISE: &str =
    "a call's events reach the client as they are sent, not held back until its response";

/// Fewest frames (priming, progress, response) that can show a spread.
pub const MIN_FRAMES: usize = 3;
/// Shortest call whose spread means anything.
pub const MIN_CALL: Duration = Duration::from_millis(100);
/// The share of the call's time before which a streamed call's first frame
/// arrives, in percent.
pub const HELD_SHARE: u32 = 90;

/// How one call's frames arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrivals {
    /// Too few frames to tell.
    TooFew(usize),
    /// The response came too soon to tell.
    TooQuick(Duration),
    /// Everything came at the end: the first frame at `first`, the response
    /// at `last`.
    HeldBack {
        /// When the first frame arrived.
        first: Duration,
        /// When the response arrived.
        last: Duration,
    },
    /// The frames came as the call went.
    Streamed {
        /// When the first frame arrived.
        first: Duration,
        /// When the response arrived.
        last: Duration,
    },
}

/// Judges arrival times, the response's last (see the module's table).
pub fn judge_arrivals(arrivals: &[Duration]) -> Arrivals {
    let (Some(&first), Some(&last)) = (arrivals.first(), arrivals.last()) else {
        return Arrivals::TooFew(0);
    };
    if arrivals.len() < MIN_FRAMES {
        return Arrivals::TooFew(arrivals.len());
    }
    if last < MIN_CALL {
        return Arrivals::TooQuick(last);
    }
    if first * 100 >= last * HELD_SHARE {
        Arrivals::HeldBack { first, last }
    } else {
        Arrivals::Streamed { first, last }
    }
}

pub(crate) async fn run(ctx: &Ctx<'_>) -> CheckResult {
    finish(ID, PROMISE, judge(ctx).await)
}

async fn judge(ctx: &Ctx<'_>) -> Judged {
    let Some((name, args)) = &ctx.options.tool else {
        return verdict(Verdict::NotChecked, "needs a streaming tool (--tool)");
    };
    let mut session = ctx.target.open().await?;
    let started = Instant::now();
    let (request, response) = session.call(name, args).await?;
    let status = response.status();
    if !status.is_success() || !matches!(content_kind(&response), Kind::Sse) {
        return verdict(
            Verdict::NotChecked,
            format!("tools/call {name} answered {status} without an event stream"),
        );
    }
    (ctx.waiting)("timing a call's events");
    let mut reader = FrameReader::new(response);
    let mut arrivals = Vec::new();
    let answered = loop {
        let left = ctx.target.timeout.saturating_sub(started.elapsed());
        match reader.next_within(left).await {
            Ok(frame) => {
                arrivals.push(started.elapsed());
                if frame.answers(&request) || arrivals.len() >= 10_000 {
                    break frame.answers(&request);
                }
            }
            Err(_) => break false,
        }
    };
    let evidence = |detail: String| Evidence {
        status: Some(status.as_u16()),
        first_bytes: Some(reader.first_bytes()),
        elapsed_ms: arrivals.last().map(|last| millis(*last)),
        detail,
    };
    if !answered {
        return Ok((
            Verdict::NotChecked,
            evidence(format!(
                "the call's stream stopped after {} frames, without its response",
                arrivals.len()
            )),
        ));
    }
    let frames = arrivals.len();
    Ok(match judge_arrivals(&arrivals) {
        Arrivals::TooFew(n) => (
            Verdict::NotChecked,
            evidence(format!("the call sent {n} frames: too few to tell")),
        ),
        Arrivals::TooQuick(last) => (
            Verdict::NotChecked,
            evidence(format!(
                "the call answered in {} ms: too quick to tell a held-back stream from a fast tool",
                millis(last)
            )),
        ),
        Arrivals::HeldBack { first, last } => (
            Verdict::Fail,
            evidence(format!(
                "all {frames} frames arrived at the end: the first after {} ms, the response after {} ms; something in the path buffers event streams (a reverse proxy needs buffering off for text/event-stream, e.g. nginx `proxy_buffering off` or `X-Accel-Buffering: no`)",
                millis(first),
                millis(last)
            )),
        ),
        Arrivals::Streamed { first, last } => (
            Verdict::Pass,
            evidence(format!(
                "{frames} frames as the call went: the first after {} ms, the response after {} ms",
                millis(first),
                millis(last)
            )),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().copied().map(Duration::from_millis).collect()
    }

    #[test]
    fn frames_spread_over_the_call_are_streamed() {
        assert_eq!(
            judge_arrivals(&ms(&[2, 20, 40, 800])),
            Arrivals::Streamed {
                first: Duration::from_millis(2),
                last: Duration::from_millis(800)
            }
        );
    }

    #[test]
    fn frames_that_all_come_at_the_end_are_held_back() {
        assert!(matches!(
            judge_arrivals(&ms(&[1_100, 1_100, 1_101, 1_101])),
            Arrivals::HeldBack { .. }
        ));
        // A flush shortly before the end is still the end.
        assert!(matches!(
            judge_arrivals(&ms(&[900, 950, 1_000])),
            Arrivals::HeldBack { .. }
        ));
    }

    #[test]
    fn short_or_sparse_calls_are_not_judged() {
        assert_eq!(judge_arrivals(&[]), Arrivals::TooFew(0));
        assert_eq!(judge_arrivals(&ms(&[500, 900])), Arrivals::TooFew(2));
        assert_eq!(
            judge_arrivals(&ms(&[1, 2, 50])),
            Arrivals::TooQuick(Duration::from_millis(50))
        );
    }
}
