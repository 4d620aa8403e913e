//! SSE streams open with a priming event: an event id and no data, so a
//! client that loses the connection at once still has a cursor; and a
//! `retry`, so it knows when to come back.

use std::time::Instant;

use super::{Ctx, Judged, describe, finish, millis, verdict};
use crate::session::{Kind, content_kind};
use crate::sse::FrameReader;
use crate::verdict::{CheckResult, Evidence, Verdict};

/// The check's name.
pub const ID: &str = "priming";
/// Its promise.
pub const PROMISE: &str = "SSE streams open with a priming event (an id, no data) and a retry";

pub(crate) async fn run(ctx: &Ctx<'_>) -> CheckResult {
    finish(ID, PROMISE, judge(ctx).await)
}

async fn judge(ctx: &Ctx<'_>) -> Judged {
    let mut session = ctx.target.open().await?;
    let started = Instant::now();
    let (what, response) = match &ctx.options.tool {
        Some(tool) => (
            "the tool call's stream",
            session.call(&tool.0, &tool.1).await?.1,
        ),
        None => ("the standalone stream", session.get(None).await?),
    };
    let status = response.status();
    if status == reqwest::StatusCode::METHOD_NOT_ALLOWED {
        return verdict(
            Verdict::NotChecked,
            "no standalone stream (GET answered 405) and no --tool to open a call's stream",
        );
    }
    if !status.is_success() {
        return verdict(Verdict::Fail, format!("{what} answered {status}"));
    }
    if !matches!(content_kind(&response), Kind::Sse) {
        return verdict(
            Verdict::NotChecked,
            format!("{what} came as JSON: there is no SSE stream to prime"),
        );
    }
    let mut reader = FrameReader::new(response);
    let first = reader.next_within(ctx.options.quiet).await;
    let evidence = |detail: String| Evidence {
        status: Some(status.as_u16()),
        first_bytes: Some(reader.first_bytes()),
        elapsed_ms: Some(millis(started.elapsed())),
        detail,
    };
    let judged = match first {
        Ok(frame) if frame.is_priming() && frame.retry.is_some() => (
            Verdict::Pass,
            evidence(format!(
                "{what} opened with id {:?} and retry {} ms",
                frame.id.unwrap_or_default(),
                frame.retry.unwrap_or_default()
            )),
        ),
        Ok(frame) if frame.is_priming() => (
            Verdict::Fail,
            evidence(format!(
                "{what}'s priming event has no retry: {}",
                describe(&frame)
            )),
        ),
        Ok(frame) => (
            Verdict::Fail,
            evidence(format!("{what} opened with {}", describe(&frame))),
        ),
        Err(pause) => (
            Verdict::Fail,
            evidence(format!("{what} sent no frame ({pause:?})")),
        ),
    };
    Ok(judged)
}
