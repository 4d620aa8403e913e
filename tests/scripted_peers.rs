//! The fork's client against scripted servers whose event ids follow schemes
//! the spec allows and rmcp does not use. Ids are only unique within a
//! session: a client that judged them by rmcp's per-stream counter would call
//! `1, 3, 6` a gap, and a numbering that restarts on a resume a duplicate.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp_resume_testkit::foreign::{ForeignServer, IdScheme};
use rmcp_resume_testkit::progress::ProgressRecorder;
use rmcp_resume_testkit::scenario::first_text;

const STEPS: usize = 8;
const LIMIT: Duration = Duration::from_secs(30);

/// Calls the tool once and returns its text and the progress values seen.
async fn call(
    ids: IdScheme,
    cut_after: Option<usize>,
) -> anyhow::Result<(String, Vec<f64>, Vec<String>)> {
    let served = ForeignServer {
        ids,
        steps: STEPS,
        cut_after,
    }
    .serve()
    .await?;
    let recorder = ProgressRecorder::default();
    let client = recorder
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(served.url.clone()))
        .await?;
    let params = CallToolRequestParams::new("anything");
    let result = tokio::time::timeout(LIMIT, client.peer().call_tool(params)).await??;
    let text = first_text(&result).unwrap_or_default();
    let seen = recorder.until(STEPS, LIMIT).await;
    let mut values: Vec<f64> = seen.into_values().flatten().collect();
    values.sort_by(f64::total_cmp);
    client.cancel().await?;
    Ok((text, values, served.cursors()))
}

fn every_step() -> Vec<f64> {
    (1..=STEPS).map(|s| s as f64).collect()
}

#[tokio::test]
async fn session_wide_ids_complete_a_call() -> anyhow::Result<()> {
    let (text, progress, cursors) = call(IdScheme::SessionWide, None).await?;
    assert_eq!(text, format!("{STEPS} steps"));
    assert_eq!(progress, every_step());
    assert!(cursors.is_empty(), "no resume was needed: {cursors:?}");
    Ok(())
}

#[tokio::test]
async fn session_wide_ids_resume_after_a_close() -> anyhow::Result<()> {
    // Ids 1, 3, 6 went out before the close; the resume names 6 and the
    // replay continues with 10, 15, …
    let (text, progress, cursors) = call(IdScheme::SessionWide, Some(3)).await?;
    assert_eq!(text, format!("{STEPS} steps"));
    assert_eq!(progress, every_step(), "each step exactly once");
    assert_eq!(cursors, ["6"]);
    Ok(())
}

#[tokio::test]
async fn per_connection_ids_resume_after_a_close() -> anyhow::Result<()> {
    // Ids 1, 2, 3 went out; the resume with cursor 3 is answered from 1
    // again. Nothing vouches for rmcp's rules, so that is not a duplicate
    // to drop: every step arrives once.
    let (text, progress, cursors) = call(IdScheme::PerConnection, Some(3)).await?;
    assert_eq!(text, format!("{STEPS} steps"));
    assert_eq!(progress, every_step(), "each step exactly once");
    assert_eq!(cursors, ["3"]);
    Ok(())
}
