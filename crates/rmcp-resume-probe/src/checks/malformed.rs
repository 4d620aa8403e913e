//! A `Last-Event-ID` no server could have issued gets a `4xx`: a `200` with
//! an empty stream is what makes rmcp's client loop.

use std::time::Instant;

use super::{Ctx, Judged, finish, is_clear_refusal, verdict};
use crate::observe::Observation;
use crate::verdict::{CheckResult, Verdict};

/// The check's name.
pub const ID: &str = "malformed-cursor";
/// Its promise.
pub const PROMISE: &str = "a malformed Last-Event-ID gets a 4xx, not a 200";

/// Printable, so every HTTP stack sends it, and shaped like no id scheme.
pub const MALFORMED: &str = "probe: not a cursor \"%%\" /../";

pub(crate) async fn run(ctx: &Ctx<'_>) -> CheckResult {
    finish(ID, PROMISE, judge(ctx).await)
}

async fn judge(ctx: &Ctx<'_>) -> Judged {
    let session = ctx.target.open().await?;
    let started = Instant::now();
    let response = session.get(Some(MALFORMED)).await?;
    if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
        return verdict(Verdict::NotChecked, "GET answered 405: no stream to resume");
    }
    let seen = Observation::read(response, started, ctx.options.quiet, |_| true).await;
    let status = seen.status;
    Ok(if is_clear_refusal(status) {
        (
            Verdict::Pass,
            seen.evidence(format!("refused with {status}")),
        )
    } else if status == reqwest::StatusCode::NOT_FOUND {
        (
            Verdict::Fail,
            seen.evidence("answered 404, which tells a client its session is gone"),
        )
    } else {
        (
            Verdict::Fail,
            seen.evidence(format!("answered {status}; {}", seen.ending())),
        )
    })
}
