//! A third review of issue 44's fix, over HTTP on the older lines: the
//! shared glue is the 3.11 line's sources compiled over each upstream.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp_resume_redis::{RedisLog, RedisLogConfig, RedisShared};
use rmcp_resume_testkit::raw::RawSession;
use rmcp_resume_testkit::redis::RedisServer;
use serde_json::json;

/// Finding 5 (D2 on the 0.15-0.17 lines). `tower/post.rs` holds a POST's
/// head until the stream's first frame that is not a comment, trusting that
/// frame to be the call's priming event, committed through its gate. On
/// 0.x the session writes no priming event (`SESSION_SSE_RETRY` is `None`):
/// upstream 0.15-0.17's own `POST` path prepends one (`id: 0`, `retry:`)
/// to the stream, outside any gate, whenever the service's `sse_retry` is
/// set (its default: 3 s). That frame releases the head at once, so with
/// Redis stopped the call on the owner is answered `200`, the tool runs, and
/// the stream ends at the outage limit with no event: the review's D2,
/// unchanged on three of the six lines.
#[tokio::test]
async fn on_0_17_a_post_with_redis_stopped_is_a_503_never_an_empty_200() -> anyhow::Result<()> {
    use rmcp_resume_testkit_0_17::raw::{RawSession, SseReader};
    use rmcp_resume_testkit_0_17::{Side, TestServer};
    let redis = RedisServer::start();
    let mut config = RedisLogConfig::default();
    config.outage_limit = Duration::from_secs(3);
    let log = RedisLog::connect(&redis.url(), config).await?;
    let served = TestServer::new(Side::Fork)
        .shared_log(Arc::new(RedisShared::new(log, "a")))
        .serve()
        .await?;
    let session = RawSession::open(&served.url).await?;
    redis.signal("STOP");
    let started = Instant::now();
    let response = session
        .post(json!({
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": { "name": "add", "arguments": { "a": 1, "b": 2 } }
        }))
        .await?;
    let head_after = started.elapsed();
    let status = response.status();
    let frames = if status == 200 {
        tokio::time::timeout(Duration::from_secs(20), SseReader::new(response).collect())
            .await
            .map_err(|_| anyhow::anyhow!("the stream never ended"))??
    } else {
        Vec::new()
    };
    redis.signal("CONT");
    let with_data = frames.iter().filter(|f| f.json().is_some()).count();
    assert!(
        status == 503 || with_data > 0,
        "200 after {head_after:?}, then {} frame(s) with no event: {frames:?}",
        frames.len(),
    );
    Ok(())
}

/// What held: the same call on the 3.x line (the session's own priming
/// event goes through the gate) is a 503.
#[tokio::test]
async fn on_3_x_a_post_with_redis_stopped_is_a_503() -> anyhow::Result<()> {
    use rmcp_resume_testkit::server::{Side, TestServer};
    let redis = RedisServer::start();
    let mut config = RedisLogConfig::default();
    config.outage_limit = Duration::from_secs(3);
    let log = RedisLog::connect(&redis.url(), config).await?;
    let served = TestServer::new(Side::Fork)
        .shared_log(Arc::new(RedisShared::new(log, "a")))
        .serve()
        .await?;
    let session = RawSession::open(&served.url).await?;
    redis.signal("STOP");
    let response = session
        .post(json!({
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": { "name": "add", "arguments": { "a": 1, "b": 2 } }
        }))
        .await?;
    redis.signal("CONT");
    assert_eq!(response.status(), 503);
    Ok(())
}

/// Time from a `tools/call` POST of a tool that sends nothing for `quiet`
/// (no priming: `sse_retry` off) to its response head, on 0.17 with
/// keep-alives every second; with a shared log or without.
async fn head_wait_0_17(shared: bool, quiet: Duration) -> anyhow::Result<Option<Duration>> {
    use rmcp_resume_testkit_0_17::raw::RawSession;
    use rmcp_resume_testkit_0_17::{Side, TestServer};
    let redis = RedisServer::start();
    let mut server = TestServer::new(Side::Fork)
        .retry(None)
        .keep_alive(Some(Duration::from_secs(1)));
    if shared {
        let log = RedisLog::connect(&redis.url(), RedisLogConfig::default()).await?;
        server = server.shared_log(Arc::new(RedisShared::new(log, "a")));
    }
    let gate = server.gate();
    let served = server.serve().await?;
    let session = RawSession::open(&served.url).await?;
    let opener = tokio::spawn(async move {
        tokio::time::sleep(quiet).await;
        gate.notify_one();
    });
    let started = Instant::now();
    let head = tokio::time::timeout(
        quiet / 2,
        session.post(json!({
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": { "name": "work", "arguments": { "count": 0 } }
        })),
    )
    .await;
    let took = head.is_ok().then(|| started.elapsed());
    opener.await?;
    Ok(took)
}

/// Finding 6 (the held head without a priming event). With `sse_retry`
/// off (0.x's `StreamableHttpServerConfig::sse_retry = None`, or the 3.x
/// line's `SessionConfig::sse_retry = None`), a call's first event is its
/// first message: `post.rs` holds the head, and every keep-alive comment,
/// until the tool speaks, up to 64 comments (16 minutes at upstream's 15 s).
/// A proxy or client with a response-header or read timeout (nginx's and
/// ALB's 60 s) cuts a quiet tool's POST that the same server without a
/// shared log (and upstream) keeps alive with its head and keep-alives, and
/// the client has no event id to resume from: a call lost that used to
/// survive.
#[tokio::test]
async fn a_quiet_call_gets_its_head_and_keep_alives_as_without_a_shared_log() -> anyhow::Result<()>
{
    let quiet = Duration::from_secs(6);
    let in_process = head_wait_0_17(false, quiet).await?;
    let shared = head_wait_0_17(true, quiet).await?;
    assert!(in_process.is_some(), "control: {in_process:?}");
    assert!(
        shared.is_some(),
        "in-process the head came after {in_process:?}; with the shared log no head within {:?} \
         (the tool was quiet for {quiet:?}, keep-alives every second held back)",
        quiet / 2
    );
    Ok(())
}
