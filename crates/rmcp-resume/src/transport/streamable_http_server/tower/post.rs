//! A `POST` of a session kept in a shared log: never an empty `200`.
//!
//! The owner writes a call's events to the shared log before any reader may
//! send them. A call whose events cannot be committed (the owner was fenced,
//! the session deleted, the log unreachable past the outage limit) used to
//! get upstream's `200` head at once and then a stream that ended with no
//! event, which clients read as a graceful close. Here:
//!
//! | When | Answer |
//! |---|---|
//! | this instance runs the session but its lease ran out by its own clock | `503` with `Retry-After`, before the call runs |
//! | the call's stream ends before its first event was committed | `503` with `Retry-After` (the head was held until then) |
//! | no first event committed within the outage limit of the `POST`'s arrival | `503` with `Retry-After`, then: the head's own deadline |
//! | its first event is committed | upstream's `200` and the stream, unchanged |
//!
//! The head waits for the stream's first frame that proves a commit: one
//! that carries a message, or the session's own priming event (its id names
//! the call's request stream, `0/M`), both of which pass the stream's gate
//! only once committed. On a shared log the session opens every call's
//! stream with such a priming event, so the wait is one commit. Frames
//! before it wait with it: the priming frame upstream 0.15-0.17 write
//! themselves ahead of the session's stream (`id: 0`, outside any gate).
//! Keep-alive comments before the head are dropped: they keep alive a
//! connection that has no head yet, and holding them would bound nothing.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use http_body_util::BodyExt;

use super::responses::{BoxResponse, plain};
use crate::transport::common::http_header::EVENT_STREAM_MIME_TYPE;

/// Frames held with the head at most, past which it goes out: only frames
/// that prove nothing and are not comments count (upstream's own priming
/// frame, one per stream).
const MAX_HELD: usize = 8;

/// `503` with a `Retry-After` of `retry` (whole seconds, at least one).
pub(super) fn unavailable(retry: Duration, message: &str) -> BoxResponse {
    let mut response = plain(StatusCode::SERVICE_UNAVAILABLE, message);
    let seconds = retry.as_secs() + u64::from(retry.subsec_nanos() > 0);
    response
        .headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
    response
}

/// Whether `response` is a `200` with an SSE body, the answer whose head
/// is held.
fn is_event_stream(response: &BoxResponse) -> bool {
    response.status() == StatusCode::OK
        && response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with(EVENT_STREAM_MIME_TYPE))
}

/// Whether an SSE frame carries only comments (`:` lines), as keep-alives do.
fn only_comments(bytes: &Bytes) -> bool {
    bytes
        .split(|b| *b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .all(|line| line.is_empty() || line.starts_with(b":"))
}

/// Whether an SSE frame passed the session's gate: it carries a message (a
/// `data:` line with content), or its id names a request stream (`N/M`, the
/// session's own ids). Comments, and a priming frame with another id, prove
/// nothing.
fn proves_commit(bytes: &Bytes) -> bool {
    bytes
        .split(|b| *b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .any(|line| {
            if let Some(data) = line.strip_prefix(b"data:") {
                return !data.strip_prefix(b" ").unwrap_or(data).is_empty();
            }
            let Some(id) = line.strip_prefix(b"id:") else {
                return false;
            };
            let id = id.strip_prefix(b" ").unwrap_or(id);
            crate::transport::resumption::EventCursor::from_bytes(id)
                .ok()
                .and_then(|cursor| cursor.as_rmcp())
                .is_some_and(|id| id.stream.is_some())
        })
}

/// Upstream's answer to a `POST`, with an SSE stream's head held until its
/// first event: a stream that ends (or fails) before one, or that has none
/// by `deadline`, becomes a `503` with `Retry-After`. Other answers pass
/// unchanged.
///
/// The deadline is the head's own: the owner gives a call up once Redis has
/// not taken its batch for the outage limit, but only after the command in
/// flight then times out (and a try may be a renewal and a commit), so the
/// stream's end alone could come a few command timeouts past the limit.
pub(super) async fn hold_head(
    response: BoxResponse,
    retry: Duration,
    deadline: tokio::time::Instant,
) -> BoxResponse {
    if !is_event_stream(&response) {
        return response;
    }
    let (parts, mut body) = response.into_parts();
    let mut held: Vec<http_body::Frame<Bytes>> = Vec::new();
    loop {
        let Ok(frame) = tokio::time::timeout_at(deadline, body.frame()).await else {
            tracing::info!(
                held = held.len(),
                "a call's first event was not committed by the head's deadline"
            );
            return unavailable(
                retry,
                "Service Unavailable: the call could not be committed to the shared \
                 replay log in time; retry shortly",
            );
        };
        match frame {
            Some(Ok(frame)) => {
                if frame.data_ref().is_some_and(only_comments) {
                    continue;
                }
                let event = frame.data_ref().is_none_or(proves_commit);
                held.push(frame);
                if event || held.len() >= MAX_HELD {
                    break;
                }
            }
            Some(Err(never)) => match never {},
            None => {
                tracing::debug!("a call's stream ended before its first event was committed");
                return unavailable(
                    retry,
                    "Service Unavailable: the call could not be committed to the shared \
                     replay log; retry shortly",
                );
            }
        }
    }
    let first = futures::stream::iter(held.into_iter().map(Ok));
    let rest = http_body_util::BodyStream::new(body);
    let body = http_body_util::StreamBody::new(futures::StreamExt::chain(first, rest));
    http::Response::from_parts(parts, BodyExt::boxed(body))
}

/// `response`, or under the `empty-post` break (see
/// `rmcp_resume_core::sabotage`) every third SSE answer's head with no
/// event after it: the empty `200` the checker must report.
pub(super) fn emptied_if_broken(response: BoxResponse) -> BoxResponse {
    use rmcp_resume_core::sabotage::{Break, on};
    use std::sync::atomic::{AtomicU64, Ordering};
    static ANSWERS: AtomicU64 = AtomicU64::new(0);
    // The break first: outside the workspace's tests it is a constant
    // `false`, and no `POST` pays for the header read.
    if !on(Break::EmptyPost)
        || !is_event_stream(&response)
        || !ANSWERS.fetch_add(1, Ordering::Relaxed).is_multiple_of(3)
    {
        return response;
    }
    let (parts, _) = response.into_parts();
    http::Response::from_parts(parts, BodyExt::boxed(http_body_util::Empty::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{Full, StreamBody};
    use std::convert::Infallible;

    fn sse(frames: Vec<&'static str>) -> BoxResponse {
        let stream = futures::stream::iter(
            frames
                .into_iter()
                .map(|f| Ok::<_, Infallible>(http_body::Frame::data(Bytes::from(f)))),
        );
        let mut response = http::Response::new(BodyExt::boxed(StreamBody::new(stream)));
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(EVENT_STREAM_MIME_TYPE),
        );
        response
    }

    /// A deadline no test reaches.
    fn far() -> tokio::time::Instant {
        tokio::time::Instant::now() + Duration::from_secs(3600)
    }

    async fn body(response: BoxResponse) -> String {
        let bytes = response
            .into_body()
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test]
    async fn a_stream_that_ends_before_an_event_is_a_503_with_retry_after() {
        let response = hold_head(sse(vec![":\n\n"]), Duration::from_millis(3300), far()).await;
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response.headers().get(http::header::RETRY_AFTER),
            Some(&HeaderValue::from_static("4"))
        );
        let empty = hold_head(sse(vec![]), Duration::ZERO, far()).await;
        assert_eq!(empty.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            empty.headers().get(http::header::RETRY_AFTER),
            Some(&HeaderValue::from_static("1"))
        );
    }

    #[tokio::test]
    async fn a_priming_frame_of_no_request_stream_does_not_release_the_head() {
        // Upstream 0.15-0.17 prime the stream themselves, outside the gate.
        let response = hold_head(
            sse(vec!["id: 0\nretry: 3000\ndata: \n\n"]),
            Duration::ZERO,
            far(),
        )
        .await;
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let frames = vec!["id: 0\nretry: 3000\ndata: \n\n", "id: 1/5\ndata: {}\n\n"];
        let response = hold_head(sse(frames), Duration::ZERO, far()).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            body(response).await,
            "id: 0\nretry: 3000\ndata: \n\nid: 1/5\ndata: {}\n\n"
        );
    }

    #[tokio::test]
    async fn a_stream_with_an_event_passes_whole_but_for_comments_before_its_head() {
        let frames = vec![
            ":\n\n",
            ":\n\n",
            "id: 0/3\nretry: 3000\ndata: \n\n",
            ":\n\n",
            "data: {}\n\n",
        ];
        let response = hold_head(sse(frames), Duration::from_secs(1), far()).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            body(response).await,
            "id: 0/3\nretry: 3000\ndata: \n\n:\n\ndata: {}\n\n"
        );
    }

    #[tokio::test]
    async fn any_number_of_keep_alives_never_release_the_head_alone() {
        let frames = vec![":\n\n"; 1000];
        let response = hold_head(sse(frames), Duration::ZERO, far()).await;
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    /// A commit that never comes back (a Redis command hung past the
    /// outage limit) must not hold the head past its deadline: without one,
    /// this waits for ever.
    #[tokio::test(start_paused = true)]
    async fn a_head_with_no_first_event_by_its_deadline_is_a_503_then() {
        let keep_alives = futures::stream::iter(
            [":\n\n", "id: 0\nretry: 3000\ndata: \n\n"]
                .map(|f| Ok::<_, Infallible>(http_body::Frame::data(Bytes::from(f)))),
        );
        let never = futures::StreamExt::chain(keep_alives, futures::stream::pending());
        let mut hung = http::Response::new(BodyExt::boxed(StreamBody::new(never)));
        hung.headers_mut().insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(EVENT_STREAM_MIME_TYPE),
        );
        let started = tokio::time::Instant::now();
        let limit = Duration::from_secs(2);
        let response = tokio::time::timeout(
            limit * 10,
            hold_head(hung, Duration::from_millis(333), started + limit),
        )
        .await
        .unwrap_or_else(|_| panic!("the head was still held {:?} after its deadline", limit * 9));
        assert_eq!(started.elapsed(), limit);
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response.headers().get(http::header::RETRY_AFTER),
            Some(&HeaderValue::from_static("1"))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_first_event_ready_at_a_past_deadline_still_wins() {
        let frames = vec!["id: 0/1\nretry: 3000\ndata: \n\n"];
        let past = tokio::time::Instant::now();
        tokio::time::advance(Duration::from_secs(1)).await;
        let response = hold_head(sse(frames), Duration::ZERO, past).await;
        assert_eq!(response.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn other_answers_pass_unchanged() {
        let json = http::Response::new(BodyExt::boxed(Full::new(Bytes::from_static(b"{}"))));
        let response = hold_head(json, Duration::from_secs(1), far()).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(body(response).await, "{}");
    }

    #[test]
    fn comments_are_told_from_events() {
        assert!(only_comments(&Bytes::from_static(b":\n\n")));
        assert!(only_comments(&Bytes::from_static(b": keep-alive\r\n\r\n")));
        assert!(!only_comments(&Bytes::from_static(b"id: 1\ndata: \n\n")));
    }

    #[test]
    fn frames_that_prove_a_commit_are_told_from_the_rest() {
        for (frame, proves) in [
            (&b":\n\n"[..], false),
            (b": keep-alive\r\n\r\n", false),
            (b"id: 0\nretry: 3000\ndata: \n\n", false),
            (b"id: 7\ndata:\n\n", false),
            (b"id: 0/3\nretry: 3000\ndata: \n\n", true),
            (b"id:0/3\r\ndata:\r\n\r\n", true),
            (b": x\ndata: {}\n\n", true),
            (b"data:{}\n\n", true),
        ] {
            assert_eq!(
                proves_commit(&Bytes::from_static(frame)),
                proves,
                "{:?}",
                String::from_utf8_lossy(frame)
            );
        }
    }
}
