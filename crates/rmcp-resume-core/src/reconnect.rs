//! The client's reconnecting SSE stream, whose reconnects are judged, not
//! trusted.
//!
//! A reconnect that returns 200 proves nothing. This stream:
//!
//! - counts a reconnect that closes before any new event as a failed attempt
//!   (the retry policy's backoff and limit apply), and resets the count only
//!   on progress: something new, or a connection the server held;
//! - decides every reconnect with [`crate::resumption`]: copies of events
//!   already delivered are dropped, a gap or an unhonoured cursor is
//!   reported, an acknowledged empty poll is a delay, not a failure;
//! - asks a quiet server ever more rarely (see `quiet.rs`), and waits a
//!   `409` out by time (see `conflict.rs`);
//! - takes a connection that stops its keep-alives for dead, and resumes
//!   it (see `liveness.rs`);
//! - on a request stream, ends with an error naming the cursor instead of
//!   retrying a resume that cannot succeed;
//! - on the standalone stream, drops the cursor after repeated failures and
//!   starts afresh, telling the application through a [`Discontinuity`].
//!
//! It is generic over a [`Connector`] (what issues the `GET`) and a
//! [`RetryPolicy`], so any HTTP client and any SDK can drive it.

mod answer;
mod config;
mod conflict;
mod connector;
mod delivered;
mod error;
mod failure;
mod handshake;
mod liveness;
mod machine;
mod probe;
mod quiet;
mod retry_after;
#[cfg(test)]
mod tests;

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use sse_stream::Sse;

pub use answer::{
    AnswerFrame, DRAIN_LIMIT, EarlyAnswer, MAX_SKIPPED, Replayed, answer_within, drain_answered,
};
pub use config::{Discontinuity, DiscontinuityObserver, IdRules, ResumeConfig};
pub use connector::{Connector, ReconnectDisposition, RetryPolicy, SseFrames, or_parent};
pub use error::{Attempt, ResumeStreamError};
pub use failure::{RESUME_FAILED_CODE, RESUME_FAILURE_KEY, ResumeFailure, ResumeFailureKind};
pub use handshake::resend_handshake;
pub use probe::is_response;
pub use retry_after::retry_after_delay;

use crate::resumption::StreamScope;

/// The resuming stream of SSE frames, already judged: the replay notice and
/// re-sent events are removed, and ids are checked.
///
/// `first` is the stream already open (a POST response or the first GET),
/// `cursor` the `Last-Event-ID` it starts from. Each log line of the stream
/// is under a span the connector makes for it ([`Connector::span`]), itself
/// under the span that is current when this is called. Message frames
/// and priming frames (an id or a `retry` without data) pass through, except
/// that a request stream's priming frame leaves its id with the machine: it
/// goes on as its `retry` alone, or not at all without one. Other event
/// types are dropped.
pub fn resuming_frames<C: Connector, P: RetryPolicy + 'static>(
    first: Option<SseFrames>,
    cursor: Option<String>,
    connector: C,
    scope: StreamScope,
    policy: P,
    config: ResumeConfig,
) -> impl Stream<Item = Result<Sse, ResumeStreamError<C::Error>>> + Send + 'static {
    Frames {
        machine: machine::Machine::new(first, cursor, connector, scope, policy, config),
    }
}

/// [`resuming_frames`] for a request stream, which ends at its first error:
/// `on_error` turns that error into the stream's last frame.
///
/// The same as mapping [`resuming_frames`] and stopping after an error, in
/// one stream. Both poll the machine in place: a frame of an open stream is
/// one call through it, with no future, slot or allocation of its own.
pub fn resuming_frames_ending<C, P, F>(
    first: Option<SseFrames>,
    cursor: Option<String>,
    connector: C,
    scope: StreamScope,
    policy: P,
    config: ResumeConfig,
    on_error: F,
) -> impl Stream<Item = Sse> + Send + 'static
where
    C: Connector,
    P: RetryPolicy + 'static,
    F: FnOnce(ResumeStreamError<C::Error>) -> Sse + Send + 'static,
{
    FramesEnding {
        machine: machine::Machine::new(first, cursor, connector, scope, policy, config),
        on_error: Some(on_error),
    }
}

pin_project_lite::pin_project! {
    /// [`resuming_frames`]' stream: the machine, polled in place.
    struct Frames<C: Connector, P: RetryPolicy> {
        machine: machine::Machine<C, P>,
    }
}

impl<C: Connector, P: RetryPolicy> Stream for Frames<C, P> {
    type Item = Result<Sse, ResumeStreamError<C::Error>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.project().machine.poll_next(cx)
    }
}

pin_project_lite::pin_project! {
    /// [`resuming_frames_ending`]'s stream: after the error's frame, nothing.
    struct FramesEnding<C: Connector, P: RetryPolicy, F> {
        machine: machine::Machine<C, P>,
        // `None` once the stream has ended.
        on_error: Option<F>,
    }
}

impl<C, P, F> Stream for FramesEnding<C, P, F>
where
    C: Connector,
    P: RetryPolicy,
    F: FnOnce(ResumeStreamError<C::Error>) -> Sse,
{
    type Item = Sse;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Sse>> {
        let this = self.project();
        if this.on_error.is_none() {
            return Poll::Ready(None);
        }
        match this.machine.poll_next(cx) {
            Poll::Ready(Some(Ok(sse))) => Poll::Ready(Some(sse)),
            Poll::Ready(Some(Err(error))) => {
                Poll::Ready(this.on_error.take().map(|on_error| on_error(error)))
            }
            Poll::Ready(None) => {
                *this.on_error = None;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
