//! The failure modes that motivated the fork, each run twice with the same
//! scenario code: against upstream rmcp 3.11.0 (client and server), where the
//! bug must show, and against the fork, where it must not.
//!
//! Upstream's side is observed over a bounded window: a loop or a hang is
//! proven by what happens within it, and the window ends the test.

use std::time::Duration;

use rmcp_resume_testkit::Side;
use rmcp_resume_testkit::scenario::{self, Ending, World, cut_call};

/// How long upstream's side is watched for a loop or a hang.
const WINDOW: Duration = Duration::from_secs(5);
/// Priming `retry` both servers send, so loops show quickly.
const RETRY: Duration = Duration::from_millis(200);

/// One server of `side` with a replay window of `capacity`, behind a proxy.
async fn world(side: Side, capacity: usize) -> anyhow::Result<World> {
    scenario::world(side, capacity, Some(RETRY)).await
}

#[tokio::test]
async fn wedged_stream_upstream_loops_and_hangs() -> anyhow::Result<()> {
    let world = world(Side::Upstream, 16).await?;
    let (ending, _) = cut_call(Side::Upstream, &world, "work", 2, WINDOW).await?;
    assert!(
        matches!(ending, Ending::StillWaiting),
        "upstream was expected to hang: {ending:?}"
    );
    // Empty 200s, each followed by another resume with the same cursor
    // (about one a second), and no end in sight.
    assert!(
        world.proxy.resumes() >= 2,
        "only {} resumes in {WINDOW:?}",
        world.proxy.resumes()
    );
    Ok(())
}

#[tokio::test]
async fn wedged_stream_fork_answers_in_at_most_three_resumes() -> anyhow::Result<()> {
    let world = world(Side::Fork, 16).await?;
    let (ending, _) = cut_call(Side::Fork, &world, "work", 2, Duration::from_secs(60)).await?;
    match ending {
        Ending::Answered(Ok(text)) => assert_eq!(text, "finished 2 steps"),
        other => anyhow::bail!("expected the response: {other:?}"),
    }
    assert!(
        world.proxy.resumes() <= 3,
        "{} resumes",
        world.proxy.resumes()
    );
    Ok(())
}

#[tokio::test]
async fn silent_gap_upstream_returns_ok_with_missing_progress() -> anyhow::Result<()> {
    // 40 progress steps into a 16-event window while the client is away.
    let world = world(Side::Upstream, 16).await?;
    let (ending, progress) =
        cut_call(Side::Upstream, &world, "burst", 40, Duration::from_secs(30)).await?;
    match ending {
        Ending::Answered(Ok(text)) => assert_eq!(text, "burst of 40"),
        other => anyhow::bail!("upstream was expected to answer Ok: {other:?}"),
    }
    assert!(
        progress < 40,
        "upstream delivered all {progress} steps; no gap to show"
    );
    Ok(())
}

#[tokio::test]
async fn silent_gap_fork_reports_it_to_the_caller() -> anyhow::Result<()> {
    let world = world(Side::Fork, 16).await?;
    let (ending, progress) =
        cut_call(Side::Fork, &world, "burst", 40, Duration::from_secs(60)).await?;
    match ending {
        // Either every step arrived, or the caller was told what was lost.
        Ending::Answered(Ok(_)) => assert_eq!(progress, 40, "Ok with missing progress"),
        Ending::Answered(Err(error)) => {
            // The server refuses the evicted cursor with 400; the caller is
            // told which cursor could not be resumed, and why.
            let text = error.to_string();
            let failure = rmcp::transport::streamable_http_client::resume_failure(&error);
            assert!(
                failure.is_some_and(|f| f.cursor.is_some_and(|c| c.starts_with("1/"))),
                "{text}"
            );
            assert!(
                ["floor", "lost", "400"].iter().any(|w| text.contains(w)),
                "{text}"
            );
        }
        Ending::StillWaiting => anyhow::bail!("the fork must not hang"),
    }
    Ok(())
}

#[tokio::test]
async fn leapfrog_upstream_loses_notifications_when_the_primary_goes() -> anyhow::Result<()> {
    assert!(
        !scenario::survivor_gets_notified(Side::Upstream, WINDOW).await?,
        "upstream never promotes shadows"
    );
    Ok(())
}

#[tokio::test]
async fn leapfrog_fork_delivers_to_the_surviving_stream() -> anyhow::Result<()> {
    assert!(scenario::survivor_gets_notified(Side::Fork, WINDOW).await?);
    Ok(())
}
