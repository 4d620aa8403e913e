//! A request's answer, read while its `POST` is still being answered.
//!
//! A client worker that hands each response stream to a task of its own
//! pays, per call, for the task, a channel hop to the worker and a second
//! parse of the answer. A call whose answer follows its response head
//! closely can skip all three: the `POST` waits a little longer, reads the
//! answer itself, and returns it as a message. What follows the answer (the
//! stream's end, as a rule) is still read, by [`drain_answered`], so that an
//! HTTP/1.1 connection goes back to its pool as it would have. [`answer_within`] is that
//! wait. It never loses or reorders a frame: when the answer is not the
//! first message, or does not come in time, the caller gets the stream back
//! with every frame it read put back in front.
//!
//! | What the stream yields next | Then |
//! |---|---|
//! | the answer ([`AnswerFrame::Answer`]) | [`EarlyAnswer::Answered`], with the rest of the stream for [`drain_answered`]; the frames skipped before it (priming, `retry`) are dropped |
//! | a frame without a message ([`AnswerFrame::Skip`]) | kept, and the wait goes on, for at most [`MAX_SKIPPED`] such frames |
//! | any other frame ([`AnswerFrame::Other`]), an error, the end | [`EarlyAnswer::Streaming`], with what was read first |
//! | nothing before the wait ends | the same; a frame ready when the wait ends is still read, since the stream is polled first (the wait never runs longer for it) |

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use sse_stream::Sse;

/// What one frame is to a request waiting for its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerFrame<T> {
    /// No message: a priming frame, a `retry`. The wait goes on.
    Skip,
    /// The request's answer, ready for the caller.
    Answer(T),
    /// A message that is not the answer (a notification, a server request),
    /// or a frame the caller's usual path must see. The wait stops.
    Other,
}

/// How [`answer_within`] ended.
pub enum EarlyAnswer<T, S: Stream> {
    /// The answer came first; the rest of the stream is for
    /// [`drain_answered`].
    Answered(T, S),
    /// The stream, with the frames read so far in front of the rest.
    Streaming(Replayed<S>),
}

impl<T: std::fmt::Debug, S: Stream> std::fmt::Debug for EarlyAnswer<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Answered(answer, _) => f.debug_tuple("Answered").field(answer).finish(),
            Self::Streaming(replayed) => f
                .debug_struct("Streaming")
                .field("read", &replayed.read.len())
                .finish_non_exhaustive(),
        }
    }
}

/// The most frames without a message the wait goes on after: a server that
/// sends nothing else cannot make it hold longer (the next such frame is
/// read, and handed back with the others).
pub const MAX_SKIPPED: usize = 8;

/// What the wait does after a frame: a pure function of the frame's kind
/// and how many frames were skipped before it (the table in the module's
/// documentation).
fn after<T>(frame: AnswerFrame<T>, skipped: usize) -> Next<T> {
    match frame {
        AnswerFrame::Answer(answer) => Next::Answered(answer),
        AnswerFrame::Skip if skipped < MAX_SKIPPED => Next::Wait,
        AnswerFrame::Skip | AnswerFrame::Other => Next::HandBack,
    }
}

enum Next<T> {
    Answered(T),
    Wait,
    HandBack,
}

/// Reads `stream` for at most `wait`, until the request's answer or the
/// first frame that is not one ([`classify`] decides; see the module's
/// table). With a zero `wait` it reads nothing.
///
/// [`classify`]: AnswerFrame
pub async fn answer_within<S, T, E, F>(
    stream: S,
    wait: Duration,
    mut classify: F,
) -> EarlyAnswer<T, S>
where
    S: Stream<Item = Result<Sse, E>> + Unpin,
    F: FnMut(&Sse) -> AnswerFrame<T>,
{
    let mut stream = stream;
    let mut read = Vec::new();
    let mut ended = false;
    if !wait.is_zero() {
        let deadline = tokio::time::sleep(wait);
        tokio::pin!(deadline);
        loop {
            let item = tokio::select! {
                biased;
                item = stream.next() => item,
                () = &mut deadline => break,
            };
            let Some(item) = item else {
                ended = true;
                break;
            };
            let next = match &item {
                Ok(sse) => after(classify(sse), read.len()),
                Err(_) => Next::HandBack,
            };
            match next {
                Next::Answered(answer) => return EarlyAnswer::Answered(answer, stream),
                Next::Wait => read.push(item),
                Next::HandBack => {
                    read.push(item);
                    break;
                }
            }
        }
    }
    EarlyAnswer::Streaming(Replayed {
        read: read.into_iter(),
        rest: (!ended).then_some(stream),
    })
}

/// How long [`drain_answered`] reads after an answer, as upstream's worker
/// does for a stream it read the answer from.
pub const DRAIN_LIMIT: Duration = Duration::from_millis(50);

/// Reads what follows an answer to the stream's end, for at most
/// [`DRAIN_LIMIT`], so that the connection closes cleanly, or goes back to
/// its pool. An end already received is read at once; otherwise a task
/// waits for it, where there is a runtime to run one. What it reads is
/// dropped: the request is answered, and its stream ends with its answer.
pub fn drain_answered<S>(mut rest: S)
where
    S: Stream + Unpin + Send + 'static,
{
    for _ in 0..=MAX_SKIPPED {
        match rest.next().now_or_never() {
            Some(Some(_)) => continue,
            Some(None) => return,
            None => break,
        }
    }
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let _ =
                tokio::time::timeout(DRAIN_LIMIT, async { while rest.next().await.is_some() {} })
                    .await;
        });
    }
}

/// A stream handed back by [`answer_within`]: the frames it read, then the
/// rest of the stream, in their order.
pub struct Replayed<S: Stream> {
    read: std::vec::IntoIter<S::Item>,
    /// `None` once the stream has ended.
    rest: Option<S>,
}

impl<S: Stream> Replayed<S> {
    /// The same frames, with the rest of the stream passed through `f`.
    pub fn map_rest<R: Stream<Item = S::Item>>(self, f: impl FnOnce(S) -> R) -> Replayed<R> {
        Replayed {
            read: self.read,
            rest: self.rest.map(f),
        }
    }
}

impl<S: Stream + Unpin> Stream for Replayed<S>
where
    S::Item: Unpin,
{
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        if let Some(item) = self.read.next() {
            return Poll::Ready(Some(item));
        }
        let Some(rest) = self.rest.as_mut() else {
            return Poll::Ready(None);
        };
        let item = std::task::ready!(rest.poll_next_unpin(cx));
        if item.is_none() {
            self.rest = None;
        }
        Poll::Ready(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let read = self.read.len();
        match &self.rest {
            Some(rest) => {
                let (low, high) = rest.size_hint();
                (read + low, high.and_then(|h| h.checked_add(read)))
            }
            None => (read, Some(read)),
        }
    }
}

#[cfg(test)]
mod tests;
