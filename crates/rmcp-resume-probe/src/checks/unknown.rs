//! A well-formed cursor the server never issued is refused, or answered as
//! not honoured; never a `200` that says nothing.

use std::time::Instant;

use super::{Ctx, Judged, finish, is_clear_refusal, standalone_priming, verdict};
use crate::observe::Observation;
use crate::verdict::{CheckResult, Verdict};

/// The check's name.
pub const ID: &str = "unknown-cursor";
/// Its promise.
pub const PROMISE: &str = "a cursor the server never issued is refused clearly, never a silent 200";

pub(crate) async fn run(ctx: &Ctx<'_>) -> CheckResult {
    finish(ID, PROMISE, judge(ctx).await)
}

/// A cursor of the same shape as `issued`, far beyond anything issued yet:
/// counters move up by a million, opaque ids get a suffix.
pub fn beyond(issued: &str) -> String {
    let bump = |n: &str| n.parse::<u64>().ok().map(|n| n.saturating_add(1_000_000));
    if let Some(n) = bump(issued) {
        return n.to_string();
    }
    if let Some((n, stream)) = issued.split_once('/')
        && let Some(n) = bump(n)
    {
        return format!("{n}/{stream}");
    }
    format!("{issued}-never-issued")
}

async fn judge(ctx: &Ctx<'_>) -> Judged {
    let session = ctx.target.open().await?;
    let cursor = match standalone_priming(&session, ctx.options.quiet).await? {
        Ok(primed) => beyond(&primed.cursor),
        Err(_) => "probe-never-issued".to_owned(),
    };
    let started = Instant::now();
    let response = session.get(Some(&cursor)).await?;
    if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
        return verdict(Verdict::NotChecked, "GET answered 405: no stream to resume");
    }
    let seen = Observation::read(response, started, ctx.options.quiet, |_| true).await;
    let status = seen.status;
    let notice = seen.notice();
    Ok(if is_clear_refusal(status) {
        (
            Verdict::Pass,
            seen.evidence(format!("cursor {cursor:?} refused with {status}")),
        )
    } else if notice.as_ref().is_some_and(|n| !n.complete) {
        (
            Verdict::Pass,
            seen.evidence(format!(
                "cursor {cursor:?} answered as not honoured (complete:false)"
            )),
        )
    } else if notice.is_some() {
        (
            Verdict::Fail,
            seen.evidence(format!("cursor {cursor:?} answered as a complete replay")),
        )
    } else if status == reqwest::StatusCode::NOT_FOUND {
        (
            Verdict::Fail,
            seen.evidence("answered 404, which tells a client its session is gone"),
        )
    } else if seen.is_empty_ok() {
        (
            Verdict::Fail,
            seen.evidence(format!(
                "cursor {cursor:?} got a 200 with nothing in it; {}",
                seen.ending()
            )),
        )
    } else {
        (
            Verdict::Fail,
            seen.evidence(format!(
                "cursor {cursor:?} answered {status} with events and no word that it was unknown"
            )),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::beyond;

    #[test]
    fn counters_move_far_ahead_and_opaque_ids_get_a_suffix() {
        assert_eq!(beyond("7"), "1000007");
        assert_eq!(beyond("3/12"), "1000003/12");
        assert_eq!(beyond("abc-1"), "abc-1-never-issued");
    }
}
