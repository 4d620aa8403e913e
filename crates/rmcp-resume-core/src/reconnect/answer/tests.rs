//! [`answer_within`] against a model: generated frames, gaps and waits, on
//! a paused clock.

use std::time::Duration;

use futures::StreamExt;
use proptest::prelude::*;
use sse_stream::Sse;

use super::*;

/// One generated item of a response stream.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Skip,
    Answer(u32),
    Other,
    Broken,
}

fn frame(kind: &Kind) -> Result<Sse, String> {
    let data = match kind {
        Kind::Skip => None,
        Kind::Answer(n) => Some(format!("answer {n}")),
        Kind::Other => Some("other".to_owned()),
        Kind::Broken => return Err("broken".to_owned()),
    };
    Ok(Sse {
        event: None,
        data,
        id: None,
        retry: None,
    })
}

fn classify(sse: &Sse) -> AnswerFrame<u32> {
    match sse.data.as_deref() {
        None => AnswerFrame::Skip,
        Some(data) => match data.strip_prefix("answer ") {
            Some(n) => n.parse().map_or(AnswerFrame::Other, AnswerFrame::Answer),
            None => AnswerFrame::Other,
        },
    }
}

/// The items, each after its gap in milliseconds, then the end after
/// `end_gap`.
fn timed(
    items: Vec<(u64, Kind)>,
    end_gap: u64,
) -> impl futures::Stream<Item = Result<Sse, String>> + Unpin {
    let items = items.into_iter().map(Some).chain([None]);
    futures::stream::iter(items)
        .then(move |item| async move {
            let gap = item.as_ref().map_or(end_gap, |(gap, _)| *gap);
            if gap == 0 {
                // One hand-over: not ready at first, ready once polled
                // again, with no time passing.
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(Duration::from_millis(gap)).await;
            }
            item.map(|(_, kind)| frame(&kind))
        })
        .take_while(|item| futures::future::ready(item.is_some()))
        .filter_map(futures::future::ready)
        .boxed()
}

/// What the model expects: the answer, or the whole stream back, and when
/// the wait ends (in milliseconds from the start).
#[derive(Debug, PartialEq)]
enum Expected {
    Answered(u32, u64),
    Streaming(u64),
}

fn model(items: &[(u64, Kind)], end_gap: u64, wait: u64) -> Expected {
    if wait == 0 {
        return Expected::Streaming(0);
    }
    let mut at = 0;
    for (index, (gap, kind)) in items.iter().enumerate() {
        at += gap;
        // A frame one hand-over away from a frame read at the limit comes
        // after the limit: the stream is not ready when the wait ends.
        if at > wait || (*gap == 0 && at == wait) {
            return Expected::Streaming(wait);
        }
        match kind {
            Kind::Answer(n) => return Expected::Answered(*n, at),
            Kind::Skip if index < MAX_SKIPPED => continue,
            _ => return Expected::Streaming(at),
        }
    }
    at += end_gap;
    Expected::Streaming(at.min(wait))
}

/// A gap: odd, where every wait is even, so that sums of gaps both miss
/// and hit the limit; or none, a frame one hand-over away.
fn odd() -> impl Strategy<Value = u64> {
    prop_oneof![1 => Just(0), 3 => (0u64..6).prop_map(|g| 2 * g + 1)]
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        4 => Just(Kind::Skip),
        2 => (0u32..1000).prop_map(Kind::Answer),
        1 => Just(Kind::Other),
        1 => Just(Kind::Broken),
    ]
}

proptest! {
    #![proptest_config(crate::proptest_config::fixed(512, 0x2026_1205))]

    /// The answer comes back alone exactly when it is the first message,
    /// after at most `MAX_SKIPPED` frames without one (runs of them around
    /// that count are generated on purpose), within the wait;
    /// otherwise every item comes back, in order, and the wait ends at the
    /// first item that is not skipped, at the end, or at its limit. An item
    /// whose timer lands on the limit itself is read, since the stream is
    /// polled first; one a hand-over after such an item is not.
    #[test]
    fn the_answer_alone_or_every_frame_in_order(
        items in (0..MAX_SKIPPED + 3, proptest::collection::vec((odd(), kind()), 0..8))
            .prop_map(|(skips, rest)| [vec![(1, Kind::Skip); skips], rest].concat()),
        end_gap in odd(),
        wait in (0u64..20).prop_map(|w| 2 * w),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let expected = model(&items, end_gap, wait);
            let start = tokio::time::Instant::now();
            let early = answer_within(timed(items.clone(), end_gap), Duration::from_millis(wait), classify).await;
            let took = u64::try_from(start.elapsed().as_millis()).expect("a short run");
            match early {
                EarlyAnswer::Answered(n, _) => prop_assert_eq!(Expected::Answered(n, took), expected),
                EarlyAnswer::Streaming(rest) => {
                    prop_assert_eq!(Expected::Streaming(took), expected);
                    let all: Vec<_> = rest.collect().await;
                    let sent: Vec<_> = items.iter().map(|(_, kind)| frame(kind)).collect();
                    prop_assert_eq!(all, sent);
                }
            }
            Ok(())
        })?;
    }
}

/// An answer one hand-over after a frame read at the very limit is not
/// waited for (the case the property test's first CI run found): the
/// stream is handed back whole.
#[tokio::test(start_paused = true)]
async fn an_answer_one_hand_over_past_the_limit_is_handed_back() {
    let items = [vec![(1, Kind::Skip); 6], vec![(0, Kind::Answer(0))]].concat();
    let early = answer_within(timed(items.clone(), 0), Duration::from_millis(6), classify).await;
    let EarlyAnswer::Streaming(rest) = early else {
        panic!("read an answer past the limit");
    };
    let sent: Vec<_> = items.iter().map(|(_, kind)| frame(kind)).collect();
    assert_eq!(rest.collect::<Vec<_>>().await, sent);
}

/// A server that sends nothing but priming frames cannot hold the wait:
/// it stops after `MAX_SKIPPED` of them, and hands all of them back.
#[tokio::test(start_paused = true)]
async fn frames_without_a_message_do_not_hold_the_wait() {
    let skips = vec![(1, Kind::Skip); MAX_SKIPPED + 3];
    let early = answer_within(timed(skips.clone(), 1), Duration::from_secs(3600), classify).await;
    let EarlyAnswer::Streaming(rest) = early else {
        panic!("answered from priming frames alone");
    };
    assert_eq!(rest.size_hint().0, MAX_SKIPPED + 1);
    assert_eq!(rest.count().await, skips.len());
}

/// What follows an answer is read to its end: at once when it is there,
/// by a task when it comes later, and never for longer than `DRAIN_LIMIT`.
#[tokio::test(start_paused = true)]
async fn the_rest_of_an_answered_stream_is_read_to_its_end_within_the_limit() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    for (gap, read_to_end) in [
        (0, true),
        (5, true),
        (DRAIN_LIMIT.as_millis() as u64 + 5, false),
    ] {
        let ended = Arc::new(AtomicBool::new(false));
        let seen = ended.clone();
        let rest = timed(vec![(gap, Kind::Skip)], 0)
            .chain(futures::stream::poll_fn(move |_| {
                seen.store(true, Ordering::SeqCst);
                std::task::Poll::Ready(None)
            }))
            .boxed();
        drain_answered(rest);
        tokio::time::sleep(DRAIN_LIMIT * 2).await;
        assert_eq!(ended.load(Ordering::SeqCst), read_to_end, "gap {gap} ms");
    }
}

/// A stream handed back says how many items it holds: those read, plus
/// what the rest says of itself.
#[tokio::test(start_paused = true)]
async fn a_handed_back_stream_counts_what_it_read_and_what_is_left() {
    let items = [Kind::Other, Kind::Skip, Kind::Answer(1)];
    let stream = futures::stream::iter(items.iter().map(frame).collect::<Vec<_>>());
    let early = answer_within(stream, Duration::from_secs(1), classify).await;
    let EarlyAnswer::Streaming(rest) = early else {
        panic!("answered past a message that is not the answer");
    };
    assert_eq!(rest.size_hint(), (3, Some(3)));
    assert_eq!(rest.count().await, 3);
}

/// How each ending reads in a log line: the answer itself, or how many
/// frames were read before the stream was handed back.
#[tokio::test(start_paused = true)]
async fn an_early_answer_says_what_it_holds_in_debug() {
    let answered = answer_within(
        futures::stream::iter([frame(&Kind::Skip), frame(&Kind::Answer(7))]),
        Duration::from_secs(1),
        classify,
    )
    .await;
    assert_eq!(format!("{answered:?}"), "Answered(7)");
    let streaming = answer_within(
        futures::stream::iter([frame(&Kind::Skip), frame(&Kind::Other)]),
        Duration::from_secs(1),
        classify,
    )
    .await;
    assert_eq!(format!("{streaming:?}"), "Streaming { read: 2, .. }");
}
