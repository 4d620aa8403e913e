//! A cursor that fell out of the server's replay window is reported (a
//! refusal, or the floor), never skipped over with a `200` that looks whole.
//!
//! The probe resumes from a call's priming event after the tool has run for
//! `--settle`, and reads the progress values that come back: a jump in them
//! is a loss, and it must have been declared.

use std::time::Instant;

use serde_json::Value;

use super::{Ctx, Judged, cut_call, finish, is_clear_refusal, verdict};
use crate::observe::Observation;
use crate::verdict::{CheckResult, Verdict};

/// The check's name.
pub const ID: &str = "evicted-cursor";
/// Its promise.
pub const PROMISE: &str =
    "an evicted cursor is reported (refusal or floor), never silently skipped";

pub(crate) async fn run(ctx: &Ctx<'_>) -> CheckResult {
    finish(ID, PROMISE, judge(ctx).await)
}

/// The first jump in a run of progress values: `(before, after)` where the
/// step between them is larger than the run's usual step, or the run starts
/// above its first step.
pub fn first_gap(values: &[f64]) -> Option<(f64, f64)> {
    let step = values
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0.0)
        .fold(f64::INFINITY, f64::min);
    if !step.is_finite() {
        return None;
    }
    if let Some(&first) = values.first()
        && first > step + f64::EPSILON
    {
        return Some((0.0, first));
    }
    values
        .windows(2)
        .find(|w| w[1] - w[0] > step * 1.5)
        .map(|w| (w[0], w[1]))
}

fn progress_values(seen: &Observation) -> Vec<f64> {
    seen.messages()
        .filter(|(_, j)| j["method"] == "notifications/progress")
        .filter_map(|(_, j)| j["params"]["progress"].as_f64())
        .collect()
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
    let Some(cursor) = cut
        .frames
        .first()
        .filter(|f| f.is_priming())
        .and_then(|f| f.id.clone())
    else {
        return verdict(
            Verdict::NotChecked,
            "the call's stream opened without a priming event",
        );
    };
    (ctx.waiting)(&format!(
        "letting the tool run for {:?} past the cut",
        ctx.options.settle
    ));
    tokio::time::sleep(ctx.options.settle).await;
    let started = Instant::now();
    let response = session.get(Some(&cursor)).await?;
    let request: Value = cut.request.clone();
    let seen = Observation::read(response, started, ctx.target.timeout, |f| {
        f.answers(&request)
    })
    .await;
    let status = seen.status;
    if is_clear_refusal(status) {
        return Ok((
            Verdict::Pass,
            seen.evidence(format!("refused with {status}")),
        ));
    }
    let notice = seen.notice();
    if notice.as_ref().is_some_and(|n| !n.complete) {
        return Ok((
            Verdict::Pass,
            seen.evidence("answered with complete:false and its floor"),
        ));
    }
    if !status.is_success() {
        return Ok((Verdict::Fail, seen.evidence(format!("answered {status}"))));
    }
    let values = progress_values(&seen);
    Ok(match first_gap(&values) {
        Some((before, after)) => (
            Verdict::Fail,
            seen.evidence(format!(
                "progress jumps from {before} to {after} after a 200{}: events lost silently",
                if notice.is_some() { " that claimed a complete replay" } else { "" }
            )),
        ),
        None if seen.pause.is_some() && values.is_empty() => (
            Verdict::Fail,
            seen.evidence(format!(
                "a 200 with neither the replay nor the response ({}): the loss was not reported",
                seen.ending()
            )),
        ),
        None => (
            Verdict::NotChecked,
            seen.evidence(format!(
                "the server kept all {} progress events: its window was not exceeded (use a tool that sends more, or a longer --settle)",
                values.len()
            )),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::first_gap;

    #[test]
    fn an_unbroken_run_has_no_gap() {
        assert_eq!(first_gap(&[1.0, 2.0, 3.0, 4.0]), None);
        assert_eq!(first_gap(&[0.0, 0.5, 1.0]), None);
        assert_eq!(first_gap(&[]), None);
    }

    #[test]
    fn a_jump_is_a_gap() {
        assert_eq!(first_gap(&[1.0, 2.0, 7.0, 8.0]), Some((2.0, 7.0)));
    }

    #[test]
    fn a_run_that_starts_late_lost_its_head() {
        assert_eq!(first_gap(&[25.0, 26.0, 27.0]), Some((0.0, 25.0)));
    }
}
