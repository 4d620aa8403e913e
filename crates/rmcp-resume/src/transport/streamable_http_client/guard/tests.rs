use futures::StreamExt;
use sse_stream::Sse;

use super::*;
use crate::transport::common::client_side_sse::ResumeFailureKind;

fn data(json: serde_json::Value) -> Sse {
    Sse {
        event: None,
        data: Some(json.to_string()),
        id: None,
        retry: None,
    }
}

fn progress() -> Sse {
    data(
        serde_json::json!({"jsonrpc":"2.0","method":"notifications/progress",
        "params":{"progressToken":"t","progress":1}}),
    )
}

fn broken() -> SseError {
    SseError::Body(Box::new(std::io::Error::from(
        std::io::ErrorKind::ConnectionReset,
    )))
}

async fn collect(frames: Vec<Result<Sse, SseError>>) -> Vec<Sse> {
    let stream = futures::stream::iter(frames).boxed();
    let guarded = unresumable_request_stream(stream, RequestId::Number(4));
    guarded
        .filter_map(|f| async move { f.ok() })
        .collect()
        .await
}

fn failure_of(sse: &Sse) -> Option<ResumeFailure> {
    let value: serde_json::Value = serde_json::from_str(sse.data.as_deref()?).ok()?;
    let error = value.get("error")?;
    let code = error.get("code")?.as_i64()?;
    ResumeFailure::from_error(i32::try_from(code).ok()?, error.get("data"))
}

#[tokio::test]
async fn a_cut_call_without_resumption_fails_typed() {
    // Under 2026-07-28 a broken stream loses the call; the caller learns
    // that it may have run and was not sent again, not "transport closed".
    let frames = collect(vec![Ok(progress()), Err(broken())]).await;
    assert_eq!(frames.len(), 2, "{frames:?}");
    let failure = failure_of(&frames[1]);
    assert_eq!(
        failure.map(|f| f.kind),
        Some(ResumeFailureKind::NotResumable)
    );
    let ended = collect(vec![Ok(progress())]).await;
    assert_eq!(
        ended.get(1).and_then(failure_of).map(|f| f.kind),
        Some(ResumeFailureKind::NotResumable)
    );
}

#[tokio::test]
async fn an_answered_call_without_resumption_ends_as_it_came() {
    let response = data(serde_json::json!({"jsonrpc":"2.0","id":4,"result":{}}));
    let frames = collect(vec![Ok(progress()), Ok(response), Err(broken())]).await;
    assert_eq!(frames.len(), 2, "no failure after the response: {frames:?}");
    assert!(frames.iter().all(|f| failure_of(f).is_none()));
}
