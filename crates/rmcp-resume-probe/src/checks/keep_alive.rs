//! A quiet stream survives the network path: the server's keep-alives come
//! more often than any proxy on the way closes idle connections.

use std::time::Instant;

use super::{Ctx, Judged, finish, millis, verdict};
use crate::session::{Kind, content_kind};
use crate::sse::{FrameReader, Pause};
use crate::verdict::{CheckResult, Evidence, Verdict};

/// The check's name.
pub const ID: &str = "keep-alive";
/// Its promise.
pub const PROMISE: &str = "a quiet standalone stream stays open through the path for --hold";

pub(crate) async fn run(ctx: &Ctx<'_>) -> CheckResult {
    finish(ID, PROMISE, judge(ctx).await)
}

async fn judge(ctx: &Ctx<'_>) -> Judged {
    let hold = ctx.options.hold;
    if hold.is_zero() {
        return verdict(Verdict::NotChecked, "--hold 0");
    }
    let session = ctx.target.open().await?;
    let response = session.get(None).await?;
    let status = response.status();
    if !status.is_success() || !matches!(content_kind(&response), Kind::Sse) {
        return verdict(
            Verdict::NotChecked,
            format!("the standalone GET answered {status} without an event stream"),
        );
    }
    (ctx.waiting)(&format!("holding a quiet stream open for {hold:?}"));
    let started = Instant::now();
    let mut reader = FrameReader::new(response);
    let ended = loop {
        let left = hold.saturating_sub(started.elapsed());
        if left.is_zero() {
            break false;
        }
        match reader.next_within(left).await {
            Ok(_) => {}
            Err(Pause::Silent) => break false,
            Err(Pause::Ended) => break true,
        }
    };
    let lived = reader.age();
    let evidence = |detail: String| Evidence {
        status: Some(status.as_u16()),
        first_bytes: Some(reader.first_bytes()),
        elapsed_ms: Some(millis(lived)),
        detail,
    };
    let silence = reader.longest_silence();
    let comments = reader.comments();
    Ok(if ended {
        (
            Verdict::Fail,
            evidence(format!(
                "the stream was closed after {:.1} s (longest silence {:.1} s, {comments} keep-alives): something in the path cuts idle connections before the server's keep-alive",
                lived.as_secs_f64(),
                silence.as_secs_f64()
            )),
        )
    } else {
        (
            Verdict::Pass,
            evidence(format!(
                "open for {:.1} s; longest silence {:.1} s, {comments} keep-alives",
                lived.as_secs_f64(),
                silence.as_secs_f64()
            )),
        )
    })
}
