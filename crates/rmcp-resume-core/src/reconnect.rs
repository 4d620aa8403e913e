//! The client's reconnecting SSE stream, whose reconnects are judged, not
//! trusted.
//!
//! A reconnect that returns 200 proves nothing. This stream:
//!
//! - counts a reconnect that closes before any new event as a failed attempt
//!   (the retry policy's backoff and limit apply), and resets the count only
//!   on progress: a new event id, or a message;
//! - decides every reconnect with [`crate::resumption`]: re-sent copies of the
//!   cursor event are dropped, a gap or an unhonoured cursor is reported, an
//!   acknowledged empty poll is a delay, not a failure;
//! - on a request stream, ends with an error naming the cursor instead of
//!   retrying a resume that cannot succeed;
//! - on the standalone stream, drops the cursor after repeated failures and
//!   starts afresh, telling the application through a [`Discontinuity`].
//!
//! It is generic over a [`Connector`] (what issues the `GET`) and a
//! [`RetryPolicy`], so any HTTP client and any SDK can drive it.

mod config;
mod connector;
mod driven;
mod error;
mod failure;
mod handshake;
mod machine;
mod probe;
mod retry_after;
#[cfg(test)]
mod tests;

use futures::Stream;
use sse_stream::Sse;

pub use config::{Discontinuity, DiscontinuityObserver, IdRules, ResumeConfig};
pub use connector::{Connector, ReconnectDisposition, RetryPolicy, SseFrames};
pub use error::{Attempt, ResumeStreamError};
pub use failure::{RESUME_FAILED_CODE, RESUME_FAILURE_KEY, ResumeFailure, ResumeFailureKind};
pub use handshake::resend_handshake;
pub use probe::is_response;
pub use retry_after::retry_after_delay;

use crate::resumption::StreamScope;
use driven::Slot as _;

/// The resuming stream of SSE frames, already judged: the replay notice and
/// re-sent events are removed, and ids are checked.
///
/// `first` is the stream already open (a POST response or the first GET),
/// `cursor` the `Last-Event-ID` it starts from. The stream's log lines are
/// children of the span that is current when this is called. Message frames
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
    let mut machine = machine::Machine::new(first, cursor, connector, scope, policy, config);
    driven::Driven::new(move |slot: driven::Shared<_>| async move {
        while let Some(item) = machine.next().await {
            slot.give(item).await;
        }
    })
}

/// [`resuming_frames`] for a request stream, which ends at its first error:
/// `on_error` turns that error into the stream's last frame.
///
/// The same as mapping [`resuming_frames`] and stopping after an error,
/// with the machine held in the stream itself rather than pinned in a box
/// of its own, and its frames handed over without a shared allocation: two
/// allocations less per request. Both keep the machine in
/// place for the stream's life (see `driven`).
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
    let mut machine = machine::Machine::new(first, cursor, connector, scope, policy, config);
    // Frames, so they pass through a thread-local slot: no allocation.
    driven::Driven::new(move |slot: driven::Local| async move {
        while let Some(item) = machine.next().await {
            match item {
                Ok(sse) => slot.give(sse).await,
                Err(error) => return slot.give(on_error(error)).await,
            }
        }
    })
}
