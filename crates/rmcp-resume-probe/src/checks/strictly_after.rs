//! A replay starts strictly after the cursor: the event the client already
//! has is not sent again.

use std::time::Instant;

use super::{Ctx, Judged, cut_call, finish, verdict};
use crate::observe::Observation;
use crate::verdict::{CheckResult, Verdict};

/// The check's name.
pub const ID: &str = "strictly-after";
/// Its promise.
pub const PROMISE: &str = "a replay starts strictly after the cursor (no event sent twice)";

pub(crate) async fn run(ctx: &Ctx<'_>) -> CheckResult {
    finish(ID, PROMISE, judge(ctx).await)
}

async fn judge(ctx: &Ctx<'_>) -> Judged {
    let Some(tool) = &ctx.options.tool else {
        return verdict(Verdict::NotChecked, "needs a streaming tool (--tool)");
    };
    let mut session = ctx.target.open().await?;
    // Cut at the first message with an id: the cursor names an event the
    // client has really received.
    let is_event = |f: &crate::sse::Frame| f.id.is_some() && !f.is_priming();
    let cut = match cut_call(&mut session, tool, ctx.options.quiet, is_event).await? {
        Ok(cut) => cut,
        Err(why) => return verdict(Verdict::NotChecked, why),
    };
    let Some(event) = cut
        .frames
        .last()
        .filter(|f| is_event(f) && !f.answers(&cut.request))
    else {
        return verdict(
            Verdict::NotChecked,
            "the tool sent no event with an id before its response",
        );
    };
    let cursor = event.id.clone().unwrap_or_default();
    let started = Instant::now();
    let response = session.get(Some(&cursor)).await?;
    let request = cut.request.clone();
    let seen = Observation::read(response, started, ctx.target.timeout, |f| {
        f.answers(&request)
    })
    .await;
    if !seen.status.is_success() {
        return Ok((
            Verdict::NotChecked,
            seen.evidence(format!(
                "the resume was refused ({}); see request-resume",
                seen.status
            )),
        ));
    }
    let again = seen.frames.iter().find(|f| {
        f.id.as_deref() == Some(cursor.as_str()) || (f.data == event.data && !f.data.is_empty())
    });
    Ok(match again {
        Some(frame) => (
            Verdict::Fail,
            seen.evidence(format!(
                "the cursor event {cursor:?} was sent again (as id {:?})",
                frame.id
            )),
        ),
        None if seen.messages().next().is_none() => (
            Verdict::NotChecked,
            seen.evidence("nothing followed the cursor"),
        ),
        None => (
            Verdict::Pass,
            seen.evidence(format!(
                "{} frames after {cursor:?}, none of them the cursor event",
                seen.frames.len()
            )),
        ),
    })
}
