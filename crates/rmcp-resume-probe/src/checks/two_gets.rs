//! Two GETs on one session: when the first goes away, the second still
//! gets every notification, once (rust-sdk#659).

use std::time::Instant;

use super::{Ctx, Judged, finish, verdict};
use crate::observe::Observation;
use crate::session::{Kind, content_kind};
use crate::sse::FrameReader;
use crate::verdict::{CheckResult, Verdict};

/// The check's name.
pub const ID: &str = "two-gets";
/// Its promise.
pub const PROMISE: &str = "two GETs on one session: no notification lost or delivered twice";

pub(crate) async fn run(ctx: &Ctx<'_>) -> CheckResult {
    finish(ID, PROMISE, judge(ctx).await)
}

async fn judge(ctx: &Ctx<'_>) -> Judged {
    let Some((tool, args)) = &ctx.options.notify else {
        return verdict(
            Verdict::NotChecked,
            "needs a tool that notifies on the standalone stream (--notify-tool)",
        );
    };
    let mut session = ctx.target.open().await?;
    let first = session.get(None).await?;
    if !first.status().is_success() || !matches!(content_kind(&first), Kind::Sse) {
        return verdict(
            Verdict::NotChecked,
            format!("the standalone GET answered {}", first.status()),
        );
    }
    let mut first = FrameReader::new(first);
    let _ = first.next_within(ctx.options.quiet).await;
    let second = session.get(None).await?;
    if second.status() == reqwest::StatusCode::CONFLICT {
        return verdict(
            Verdict::Pass,
            "a second GET is refused (409): one stream per session, nothing to lose between two",
        );
    }
    if !second.status().is_success() {
        return verdict(
            Verdict::Fail,
            format!("the second GET answered {}", second.status()),
        );
    }
    drop(first);
    let (request, response) = session.call(tool, args).await?;
    let answered = Observation::read(response, Instant::now(), ctx.target.timeout, |f| {
        f.answers(&request)
    })
    .await;
    if answered.pause.is_some() {
        return Ok((
            Verdict::NotChecked,
            answered.evidence("the notify tool did not answer"),
        ));
    }
    let started = Instant::now();
    let seen = Observation::read(second, started, ctx.options.quiet, |_| false).await;
    let notifications: Vec<String> = seen
        .messages()
        .filter(|(_, j)| j.get("method").is_some() && j.get("id").is_none())
        .map(|(f, _)| f.data.clone())
        .collect();
    let mut unique = notifications.clone();
    unique.sort();
    unique.dedup();
    Ok(if notifications.is_empty() {
        (
            Verdict::Fail,
            seen.evidence("after the first GET closed, the second got no notification: lost"),
        )
    } else if unique.len() < notifications.len() {
        (
            Verdict::Fail,
            seen.evidence(format!(
                "{} notifications, {} distinct: delivered twice",
                notifications.len(),
                unique.len()
            )),
        )
    } else {
        (
            Verdict::Pass,
            seen.evidence(format!(
                "the surviving GET got {} notification(s), each once",
                notifications.len()
            )),
        )
    })
}
