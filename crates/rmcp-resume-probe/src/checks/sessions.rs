//! Ended and unknown sessions answer `404`, the spec's signal to start a new
//! session; anything else leaves a client retrying a session that is gone.

use std::time::Instant;

use super::{Ctx, Judged, finish, millis, verdict};
use crate::verdict::{CheckResult, Evidence, Verdict};

/// The deleted-session check's name.
pub const DELETED: &str = "deleted-session";
/// Its promise.
pub const DELETED_PROMISE: &str = "after DELETE, a GET on the session answers 404";
/// The unknown-session check's name.
pub const UNKNOWN: &str = "unknown-session";
/// Its promise.
pub const UNKNOWN_PROMISE: &str = "a GET with an unknown session id answers 404";

pub(crate) async fn deleted(ctx: &Ctx<'_>) -> CheckResult {
    finish(DELETED, DELETED_PROMISE, judge_deleted(ctx).await)
}

pub(crate) async fn unknown(ctx: &Ctx<'_>) -> CheckResult {
    finish(UNKNOWN, UNKNOWN_PROMISE, judge_unknown(ctx).await)
}

async fn judge_deleted(ctx: &Ctx<'_>) -> Judged {
    let session = ctx.target.open().await?;
    let deleted = session.delete().await?.status();
    if deleted == reqwest::StatusCode::METHOD_NOT_ALLOWED {
        return verdict(
            Verdict::NotChecked,
            "DELETE answered 405: sessions cannot be ended",
        );
    }
    let started = Instant::now();
    let status = session.get(None).await?.status();
    let evidence = |detail: String| Evidence {
        status: Some(status.as_u16()),
        elapsed_ms: Some(millis(started.elapsed())),
        detail,
        ..Evidence::default()
    };
    Ok(if status == reqwest::StatusCode::NOT_FOUND {
        (
            Verdict::Pass,
            evidence(format!("DELETE answered {deleted}, then GET 404")),
        )
    } else {
        (
            Verdict::Fail,
            evidence(format!("DELETE answered {deleted}, then GET {status}")),
        )
    })
}

async fn judge_unknown(ctx: &Ctx<'_>) -> Judged {
    let session = ctx.target.open().await?;
    let started = Instant::now();
    let stranger = format!("{}-probe-unknown", session.id);
    let status = session.get_as(&stranger).await?.status();
    let evidence = |detail: String| Evidence {
        status: Some(status.as_u16()),
        elapsed_ms: Some(millis(started.elapsed())),
        detail,
        ..Evidence::default()
    };
    Ok(if status == reqwest::StatusCode::NOT_FOUND {
        (Verdict::Pass, evidence("404".to_owned()))
    } else {
        (Verdict::Fail, evidence(format!("answered {status}")))
    })
}
