//! A call whose stream is cut right after its priming event resumes to the
//! call's response (or is refused clearly, so the caller can fail fast).

use std::time::Instant;

use super::{Ctx, Judged, cut_call, finish, is_clear_refusal, verdict};
use crate::observe::Observation;
use crate::verdict::{CheckResult, Verdict};

/// The check's name.
pub const ID: &str = "request-resume";
/// Its promise.
pub const PROMISE: &str =
    "a call's stream cut after its priming event resumes to the response, or is refused clearly";

pub(crate) async fn run(ctx: &Ctx<'_>) -> CheckResult {
    finish(ID, PROMISE, judge(ctx).await)
}

async fn judge(ctx: &Ctx<'_>) -> Judged {
    let Some(tool) = &ctx.options.tool else {
        return verdict(Verdict::NotChecked, "needs a streaming tool (--tool)");
    };
    let mut session = ctx.target.open().await?;
    let cut = match cut_call(&mut session, tool, ctx.options.quiet, |_| true).await? {
        Ok(cut) => cut,
        Err(why) => return verdict(Verdict::NotChecked, why),
    };
    let Some(first) = cut.frames.first() else {
        return verdict(Verdict::NotChecked, "the call's stream sent nothing");
    };
    if first.answers(&cut.request) {
        return verdict(
            Verdict::NotChecked,
            "the call answered in its first frame: nothing to cut",
        );
    }
    let Some(cursor) = first.id.clone() else {
        return verdict(
            Verdict::Fail,
            "the call's stream opened without an event id: a cut loses the call",
        );
    };
    let started = Instant::now();
    let response = session.get(Some(&cursor)).await?;
    let request = cut.request.clone();
    let seen = Observation::read(response, started, ctx.target.timeout, |f| {
        f.answers(&request)
    })
    .await;
    let status = seen.status;
    Ok(if seen.pause.is_none() {
        (
            Verdict::Pass,
            seen.evidence(format!(
                "resumed from {cursor:?}; the response arrived after {} frames",
                seen.frames.len()
            )),
        )
    } else if is_clear_refusal(status) {
        (
            Verdict::Pass,
            seen.evidence(format!("resume from {cursor:?} refused with {status}")),
        )
    } else if seen.is_empty_ok() {
        (
            Verdict::Fail,
            seen.evidence(format!(
                "resume from {cursor:?} got a 200 with nothing in it; {}",
                seen.ending()
            )),
        )
    } else {
        (
            Verdict::Fail,
            seen.evidence(format!(
                "resume from {cursor:?} answered {status} without the response; {}",
                seen.ending()
            )),
        )
    })
}
