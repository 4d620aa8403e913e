//! A resume says where its replay starts (`Mcp-Replay-Floor`, or the
//! `mcp-replay` notice): without it a client cannot tell a whole replay from
//! one with a hole.

use std::time::Instant;

use super::{Ctx, Judged, cut_call, finish, standalone_priming};
use crate::observe::Observation;
use crate::verdict::{CheckResult, Verdict};

/// The check's name.
pub const ID: &str = "floor-declared";
/// Its promise.
pub const PROMISE: &str =
    "a resume declares its replay floor (Mcp-Replay-Floor or the mcp-replay notice)";

pub(crate) async fn run(ctx: &Ctx<'_>) -> CheckResult {
    finish(ID, PROMISE, judge(ctx).await)
}

async fn judge(ctx: &Ctx<'_>) -> Judged {
    let mut session = ctx.target.open().await?;
    // The standalone stream's priming id; failing that, a call's.
    let cursor = match standalone_priming(&session, ctx.options.quiet).await? {
        Ok(primed) => primed.cursor,
        Err(evidence) => {
            let Some(tool) = &ctx.options.tool else {
                return Ok((Verdict::NotChecked, evidence));
            };
            let cut = cut_call(&mut session, tool, ctx.options.quiet, |_| true).await?;
            match cut
                .ok()
                .and_then(|c| c.frames.first().filter(|f| f.is_priming()).cloned())
            {
                Some(frame) => frame.id.unwrap_or_default(),
                None => return Ok((Verdict::NotChecked, evidence)),
            }
        }
    };
    let started = Instant::now();
    let response = session.get(Some(&cursor)).await?;
    let seen = Observation::read(response, started, ctx.options.quiet, |_| true).await;
    let cursor = &cursor;
    if !seen.status.is_success() {
        return Ok((
            Verdict::Fail,
            seen.evidence(format!(
                "refused {cursor:?}, a cursor it issued itself, with {}",
                seen.status
            )),
        ));
    }
    Ok(match (&seen.floor_header, seen.notice()) {
        (Some(floor), _) => (
            Verdict::Pass,
            seen.evidence(format!("Mcp-Replay-Floor: {floor}")),
        ),
        (None, Some(notice)) => (
            Verdict::Pass,
            seen.evidence(format!("mcp-replay notice: {}", notice.to_json())),
        ),
        (None, None) => (
            Verdict::Fail,
            seen.evidence(format!(
                "resume from {cursor:?} declared no floor: a client cannot tell a whole replay from one with a hole"
            )),
        ),
    })
}
