//! The shared log on the 1.x line: two `rmcp-resume-1` servers in this
//! process share a redis-server the test starts itself. The glue is the 3.11
//! line's sources compiled over rmcp 1.8.0, so these pin that the shared path
//! holds there too: a call cut on A resumes exactly on B, and A's standalone
//! notifications reach a `GET` on B.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::resumption::{EventCursor, REPLAY_NOTICE_EVENT};
use rmcp_resume_redis::{RedisLog, RedisLogConfig, RedisShared};
use rmcp_resume_testkit::raw::{Frame, RawSession, SseReader};
use rmcp_resume_testkit::redis::RedisServer;
use rmcp_resume_testkit_1::{Served, Side, TestServer};
use serde_json::json;

/// Bounds each read, so a regression fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

/// A 1.x-line fork server sharing `redis` as instance `owner`.
async fn instance(redis: &RedisServer, owner: &str) -> anyhow::Result<Served> {
    let log = RedisLog::connect(&redis.url(), RedisLogConfig::default()).await?;
    Ok(TestServer::new(Side::Fork)
        .shared_log(Arc::new(RedisShared::new(log, owner)))
        .serve()
        .await?)
}

/// The index of an `N/M` (or `N`) id.
fn index(frame: &Frame) -> Option<u64> {
    let cursor = EventCursor::parse(frame.id.as_deref()?).ok()?;
    Some(cursor.as_rmcp()?.index)
}

async fn next(reader: &mut SseReader) -> anyhow::Result<Frame> {
    tokio::time::timeout(LIMIT, reader.next())
        .await??
        .ok_or_else(|| anyhow::anyhow!("the stream ended"))
}

#[tokio::test]
async fn a_call_cut_on_a_resumes_on_b_strictly_after_the_cursor() -> anyhow::Result<()> {
    let redis = RedisServer::start();
    let (a, b) = (instance(&redis, "a").await?, instance(&redis, "b").await?);
    let mut on_a = RawSession::open(&a.url).await?;
    let (id, response) = on_a
        .call("stream", json!({ "count": 30, "interval_ms": 5 }), true)
        .await?;
    let mut reader = SseReader::new(response);
    let mut before = Vec::new();
    let mut cursor = None;
    while before.len() < 5 {
        let frame = next(&mut reader).await?;
        if frame.id.is_some() {
            cursor = Some(frame.clone());
        }
        if let Some(progress) = frame.json().and_then(|j| j["params"]["progress"].as_f64()) {
            before.push(progress);
        }
    }
    drop(reader); // the cut
    let cursor = cursor.ok_or_else(|| anyhow::anyhow!("no event id before the cut"))?;
    let from = index(&cursor).ok_or_else(|| anyhow::anyhow!("not an rmcp id: {cursor:?}"))?;

    let resumed = on_a
        .at(&b.url)
        .resume(cursor.id.as_deref().unwrap_or_default())
        .await?;
    assert_eq!(resumed.status(), 200);
    let frames = tokio::time::timeout(LIMIT, SseReader::new(resumed).collect()).await??;
    assert_eq!(frames[0].event.as_deref(), Some(REPLAY_NOTICE_EVENT));
    let events: Vec<&Frame> = frames.iter().filter(|f| index(f).is_some()).collect();
    let indices: Vec<u64> = events.iter().filter_map(|f| index(f)).collect();
    let expected: Vec<u64> = (from + 1..from + 1 + indices.len() as u64).collect();
    assert_eq!(indices, expected, "strictly after the cursor, contiguous");
    let after = events
        .iter()
        .filter_map(|f| f.json().and_then(|j| j["params"]["progress"].as_f64()));
    let all: Vec<f64> = before.iter().copied().chain(after).collect();
    assert_eq!(all, (1..=30).map(f64::from).collect::<Vec<_>>());
    let last = events
        .last()
        .and_then(|f| f.json())
        .ok_or_else(|| anyhow::anyhow!("no response"))?;
    assert_eq!(last["id"], id);
    assert_eq!(last["result"]["content"][0]["text"], "streamed 30");
    let stats = b.resume_stats();
    assert!(stats.is_some_and(|s| s.replayed >= 1), "{stats:?}");
    Ok(())
}

#[tokio::test]
async fn standalone_notifications_of_a_reach_a_get_on_b_with_contiguous_ids() -> anyhow::Result<()>
{
    let redis = RedisServer::start();
    let (a, b) = (instance(&redis, "a").await?, instance(&redis, "b").await?);
    let mut on_a = RawSession::open(&a.url).await?;
    let mut on_b = SseReader::new(on_a.at(&b.url).get(None).await?);
    // B's stream is open once it primed; what A sends after reaches it.
    let priming = next(&mut on_b).await?;
    assert!(priming.id.is_some(), "{priming:?}");
    let (_, answered) = on_a.call("announce", json!({ "count": 3 }), false).await?;
    drop(answered);
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let frame = next(&mut on_b).await?;
        let method = frame.json().map(|j| j["method"].clone());
        if method.is_some_and(|m| m == "notifications/tools/list_changed") {
            seen.push(index(&frame).ok_or_else(|| anyhow::anyhow!("no id: {frame:?}"))?);
        }
    }
    assert!(seen.windows(2).all(|w| w[1] == w[0] + 1), "{seen:?}");
    Ok(())
}
