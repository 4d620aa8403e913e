//! Issue #42: the findings of the 2026-12-06 review, each a scripted server
//! on the paused clock that failed on the machine before its fix. Each
//! assertion names the `GET`s it counted, so that a failure says how far
//! off the machine is.

use super::*;

const HOUR: Duration = Duration::from_secs(3600);

/// The arithmetic of the default retry policy of rmcp 0.15 to 2.2, written
/// out here with its own names: the base (1 s by default, and no limit on
/// the count) times two raised to the count as a `u32`, nothing saturated.
/// From a count of 32 the power overflows: a panic in a debug build, a
/// wrapped delay in a release one. Tests elsewhere use a saturating policy,
/// which hides that.
#[derive(Debug)]
struct OldLineDefault {
    max_times: Option<usize>,
    base: Duration,
}

impl RetryPolicy for OldLineDefault {
    fn retry(&self, count: usize) -> Option<Duration> {
        if self.max_times.is_some_and(|most| count >= most) {
            return None;
        }
        // Deliberately unchecked: the shape of the lines' own policy.
        let factor = 2u32.pow(count as u32);
        Some(self.base * factor)
    }
}

fn old_line_default() -> Arc<dyn RetryPolicy> {
    Arc::new(OldLineDefault {
        max_times: None,
        base: Duration::from_secs(1),
    })
}

/// A standalone stream resuming from cursor `41`, under the old lines'
/// default policy.
fn standalone_from_41(
    script: Script,
    config: ResumeConfig,
) -> impl futures::Stream<Item = Result<Sse, ResumeStreamError<Status>>> {
    resuming_sse_stream(
        None,
        cut_after("41"),
        script,
        StreamScope::Standalone,
        old_line_default(),
        config,
    )
}

/// A standalone stream opened without a cursor, under the old lines'
/// default policy and the default config.
fn fresh_standalone(
    script: Script,
) -> impl futures::Stream<Item = Result<Sse, ResumeStreamError<Status>>> {
    resuming_sse_stream(
        None,
        None,
        script,
        StreamScope::Standalone,
        old_line_default(),
        ResumeConfig::default(),
    )
}

/// How many of `log`'s `GET`s carried a cursor.
fn resumes(log: &Log) -> usize {
    log.cursors().iter().filter(|c| c.is_some()).count()
}

#[tokio::test(start_paused = true)]
async fn a_standalone_resume_answered_500_is_a_failed_resume_and_reported() {
    // Finding 1: upstream rmcp 0.15 to 0.17 answer a resume they cannot
    // replay with a 500. Counted as the server being unreachable, the
    // cursor was kept for ever and nothing was reported.
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(vec![], || Answer::Status(500));
    let script = script.with_fresh(|| Answer::Stall(vec![]));
    let stream = standalone_from_41(script, config);
    let (_, error) = read_for(stream, HOUR).await;
    assert!(error.is_none(), "{error:?}");
    let max = ResumeConfig::default().max_failed_resumes;
    assert_eq!(
        (resumes(&log), log.entries().len()),
        (max, max + 1),
        "(GETs with the cursor, all GETs) in an hour"
    );
    assert_eq!(log.cursors().last(), Some(&None), "reopened without it");
    let gaps = seen(&gaps);
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].cursor.as_deref(), Some("41"));
}

#[tokio::test(start_paused = true)]
async fn a_request_resume_answered_500_counts_as_a_failed_resume() {
    // Finding 1, request side: a 500 to a resume fails it like an empty
    // close, within `max_failed_resumes`, not `max_transport_failures`.
    let (script, log) = Script::new(vec![], || Answer::Status(500));
    let stream = resuming_sse_stream(
        None,
        cut_after("41"),
        script,
        StreamScope::Request,
        old_line_default(),
        ResumeConfig::default(),
    );
    let (_, error) = tokio::time::timeout(HOUR, drain(stream))
        .await
        .unwrap_or_else(|_| panic!("still resuming after an hour: {} GETs", log.entries().len()));
    assert!(error.is_some());
    assert_eq!(
        log.entries().len(),
        ResumeConfig::default().max_failed_resumes
    );
}

#[tokio::test(start_paused = true)]
async fn a_gateways_5xx_keeps_the_standalone_cursor() {
    // 502 and 504 are a proxy's answer, not the server's: the cursor is
    // kept, as for any failure in transit.
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(
        vec![
            Answer::Status(502),
            Answer::Status(504),
            Answer::Status(502),
            Answer::Status(504),
            Answer::Status(502),
            Answer::Status(504),
        ],
        || Answer::Stall(vec![]),
    );
    let stream = standalone_from_41(script, config);
    let (_, error) = read_for(stream, Duration::from_secs(600)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(log.cursors()[..7], vec![cut_after("41"); 7]);
    assert!(seen(&gaps).is_empty(), "{:?}", seen(&gaps));
}

#[tokio::test(start_paused = true)]
async fn the_old_lines_default_policy_survives_hours_of_an_unreachable_server() {
    // Finding 2: after about 14 minutes unreachable, the standalone
    // stream's count reached 32 and the old lines' policy overflowed.
    let (script, log) = Script::new(vec![], || Answer::Status(502));
    let stream = standalone_from_41(script, ResumeConfig::default());
    let (_, error) = read_for(stream, 2 * HOUR).await;
    assert!(error.is_none(), "{error:?}");
    let gaps = log.gaps();
    let max = ResumeConfig::DEFAULT_MAX_DELAY;
    assert!(
        gaps.iter().all(|gap| *gap <= max),
        "{} GETs: {gaps:?}",
        gaps.len() + 1
    );
    // Once the backoff reached the cap, it stays there: no wrap to 1 s.
    let late: Vec<_> = gaps.iter().skip(20).collect();
    assert!(late.iter().all(|gap| **gap == max), "{late:?}");
    let gets = log.entries().len();
    assert!(gets <= 2 * 3600 / 30 + 20, "{gets} GETs");
}

#[tokio::test(start_paused = true)]
async fn a_long_lived_fresh_standalone_stream_reconnects_at_once_every_time() {
    // Finding 3: a standalone stream without ids behind a proxy that cuts
    // idle connections at 60 s. Each connection lived a minute: each cut
    // is resumed at once, as upstream's client does, never backed off.
    let (script, log) = Script::new(vec![], || {
        Answer::BreakAfter(vec![], Duration::from_secs(60))
    });
    let stream = fresh_standalone(script);
    // The opening `GET` (which this stream stands for) failed: its retry is
    // the policy's first delay, 1 s in.
    let (_, error) = read_for(stream, Duration::from_secs(630)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        log.gaps(),
        [Duration::from_secs(60); 10],
        "{} GETs in 10 minutes",
        log.entries().len()
    );
}

#[tokio::test(start_paused = true)]
async fn copies_from_the_first_event_closed_cleanly_end_the_call() {
    // Finding 4, clean closes: a server that never vouched answers every
    // resume with its first two events again and closes. Copies are
    // dropped, are never progress, and the call ends.
    let (script, log) = Script::new(vec![], || {
        Answer::Frames(vec![progress("0/1", 0), progress("1/1", 1)])
    });
    let stream = resuming_sse_stream(
        None,
        cut_after("1/1"),
        script,
        StreamScope::Request,
        fixed(None, 1000),
        ResumeConfig::default(),
    );
    let start = Instant::now();
    let (messages, error) = tokio::time::timeout(Duration::from_secs(600), drain(stream))
        .await
        .unwrap_or_else(|_| panic!("still resuming after 600 s: {} GETs", log.entries().len()));
    assert!(error.is_some(), "ended with an error");
    let config = ResumeConfig::default();
    assert!(
        log.entries().len() <= config.max_failed_resumes + 1,
        "{} GETs in {:?}; delivered {:?}",
        log.entries().len(),
        start.elapsed(),
        ids(&messages)
    );
    assert!(
        !ids(&messages).contains(&"1/1".to_owned()),
        "{:?}",
        ids(&messages)
    );
}

#[tokio::test(start_paused = true)]
async fn a_copy_is_dropped_wherever_it_comes_on_an_unvouched_stream() {
    // Finding 4, on an open stream: opaque ids prove no order, but an id
    // already delivered on this stream is a copy wherever it comes.
    let (script, _log) = Script::new(vec![], || Answer::Stall(vec![]));
    let first = opened(vec![
        list_changed("a"),
        list_changed("b"),
        list_changed("a"),
        list_changed("c"),
        list_changed("b"),
    ]);
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Standalone,
        fixed(None, 1000),
        ResumeConfig::default(),
    );
    let (messages, error) = read_for(stream, Duration::from_secs(1)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["a", "b", "c"]);
}

#[tokio::test(start_paused = true)]
async fn a_silent_accept_is_refreshed_ever_more_rarely() {
    // Finding 5: a resume the server accepts and leaves silent (a quiet
    // call on a server that never vouched) was refreshed every 10 s for
    // ever. The refreshes now back off, from the silence timeout upward.
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        fixed(Some(3), 1000),
        ResumeConfig::default(),
    );
    let (_, error) = read_for(stream, HOUR).await;
    assert!(error.is_none(), "{error:?}");
    let gets = log.entries().len();
    assert!(gets <= 12, "{gets} GETs in an hour: {:?}", log.gaps());
    let gaps = log.gaps();
    assert_eq!(
        gaps.first(),
        Some(&ResumeConfig::DEFAULT_SILENT_RESUME_TIMEOUT)
    );
    assert!(gaps.windows(2).all(|w| w[0] <= w[1]), "{gaps:?}");
}

#[tokio::test(start_paused = true)]
async fn a_resume_held_then_broken_with_nothing_new_backs_off() {
    // Finding 5: a resume held 6 s and then cut, with nothing delivered,
    // every time. Each hold spares the call's counts (a proxy's connection
    // lifetime is no failure), but it brought nothing: the `GET`s of such
    // a run are spaced ever further apart, up to `max_delay`.
    let (script, log) = Script::new(vec![], || {
        Answer::BreakAfter(vec![], Duration::from_secs(6))
    });
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        fixed(Some(3), 1000),
        ResumeConfig::default(),
    );
    let (_, error) = read_for(stream, HOUR / 2).await;
    assert!(error.is_none(), "{error:?}");
    let gets = log.entries().len();
    assert!(gets <= 70, "{gets} GETs in 30 minutes: {:?}", log.gaps());
    // Spaced start to start, never more than `max_delay` apart.
    let max = ResumeConfig::DEFAULT_MAX_DELAY;
    assert!(log.gaps().iter().all(|gap| *gap <= max), "{:?}", log.gaps());
}

#[tokio::test(start_paused = true)]
async fn an_idle_standalone_stream_costs_a_handful_of_gets_an_hour() {
    // Finding 6: an idle session against the TypeScript or Python server,
    // after one cut: every refresh of its silent resume was 10 s after the
    // last, 360 `GET`s an hour.
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("_GET_stream_9"),
        script,
        StreamScope::Standalone,
        old_line_default(),
        config,
    );
    let (_, error) = read_for(stream, HOUR).await;
    assert!(error.is_none(), "{error:?}");
    let gets = log.entries().len();
    assert!(gets <= 12, "{gets} GETs in an hour: {:?}", log.gaps());
    assert_eq!(log.cursors(), vec![cut_after("_GET_stream_9"); gets]);
    assert!(seen(&gaps).is_empty(), "{:?}", seen(&gaps));
}

#[tokio::test(start_paused = true)]
async fn a_refresh_that_hears_something_starts_the_backoff_over() {
    // What ends a run of quiet refreshes: an event. After it, the next
    // silence is waited on for the timeout again, not the grown wait.
    let (script, log) = Script::new(
        vec![
            Answer::Stall(vec![]),
            Answer::Stall(vec![]),
            Answer::Break(vec![progress("7f3a_2", 2)]),
        ],
        || Answer::Stall(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        fixed(Some(3), 1000),
        ResumeConfig::default(),
    );
    let (messages, error) = read_for(stream, Duration::from_secs(200)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["7f3a_2"]);
    let s = ResumeConfig::DEFAULT_SILENT_RESUME_TIMEOUT;
    assert_eq!(
        log.gaps(),
        [s, 2 * s, Duration::ZERO, s, 2 * s, 4 * s, 8 * s]
    );
    let mut cursors = vec![cut_after("7f3a_1"); 3];
    cursors.extend(vec![cut_after("7f3a_2"); 5]);
    assert_eq!(log.cursors(), cursors);
}

/// A fresh standalone `GET` (no cursor) that the server opens with a
/// `complete: false` notice (it starts past events the client never got):
/// the application hears of the loss, and the stream goes on.
#[tokio::test(start_paused = true)]
async fn a_fresh_standalone_stream_that_starts_past_lost_events_is_reported() {
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, _log) = Script::new(
        vec![Answer::Stall(vec![
            notice("3", Some("8"), false),
            list_changed("8"),
        ])],
        || Answer::Stall(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        None,
        script,
        StreamScope::Standalone,
        fixed(None, 100),
        config,
    );
    let (messages, error) = read_for(stream, Duration::from_secs(5)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["8"]);
    let told = seen(&gaps);
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].cursor.as_deref(), Some("3"));
    assert_eq!(told[0].stream, StreamScope::Standalone);
}

/// The most `GET`s answered `409` in a run, by the bound `conflict.rs`
/// states, worked out here on its own: `2 + ⌈log₂(C / 1 s)⌉ + ⌈W / C⌉`,
/// where `W` is the wait and `C` the spacing's cap, 10 s or `max_delay`
/// if less.
fn conflict_bound(wait: Duration, max_delay: Duration) -> usize {
    let cap = max_delay.min(Duration::from_secs(10)).as_secs().max(1);
    let doubling = cap.next_power_of_two().trailing_zeros() as usize;
    2 + doubling + usize::try_from(wait.as_secs().div_ceil(cap)).unwrap_or(usize::MAX)
}

/// The conflict wait's default (2 min), written out: a test that read it
/// from the config would follow it anywhere.
const CONFLICT_WAIT: Duration = Duration::from_secs(120);

/// What a server that answers `409` for the script's first `half_open`
/// then answers with `then`.
fn half_open(half_open: Duration, then: Answer) -> Answer {
    Answer::StatusFor(409, half_open, Box::new(then))
}

#[tokio::test(start_paused = true)]
async fn a_minute_of_conflicts_is_waited_out_and_the_call_answers() {
    // Finding 9: the client's side of a call's connection went, the
    // server's stayed up, and the TypeScript SDK 2.x answers every resume
    // `409` until it finds that connection dead (a minute here). Counted as
    // failures in transit, the 409s ended the call typed after 14 s.
    const HALF_OPEN: Duration = Duration::from_secs(60);
    let (script, log) = Script::new(vec![], || {
        half_open(
            HALF_OPEN,
            Answer::Frames(vec![progress("7f3a_2", 2), response("7f3a_3")]),
        )
    });
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        backoff(None, 1000),
        ResumeConfig::default(),
    );
    let start = Instant::now();
    let (messages, error) = drain(stream).await;
    let (gets, took) = (log.entries().len(), start.elapsed());
    assert!(error.is_none(), "{error:?} after {took:?} and {gets} GETs");
    assert_eq!(ids(&messages), ["7f3a_2", "7f3a_3"]);
    let conflicts = log
        .entries()
        .iter()
        .filter(|(at, _)| *at < HALF_OPEN)
        .count();
    let bound = conflict_bound(HALF_OPEN, ResumeConfig::DEFAULT_MAX_DELAY);
    assert!(
        conflicts <= bound,
        "{conflicts} GETs met 409 (bound {bound})"
    );
    assert_eq!(gets, conflicts + 1, "{:?}", log.gaps());
    // Resumed within the spacing's cap of the server letting go.
    assert!(took <= HALF_OPEN + Duration::from_secs(10), "{took:?}");
    assert!(log.cursors().iter().all(|c| c.as_deref() == Some("7f3a_1")));
}

#[tokio::test(start_paused = true)]
async fn conflicts_for_ever_end_the_call_typed_at_its_deadline() {
    // Finding 9, the other side: a server that never lets go. The call is
    // given the conflict wait (2 min, the resume deadline too), then fails
    // typed, `exhausted`, within the formula's `GET`s; not after 14 s.
    let (script, log) = Script::new(vec![], || Answer::Status(409));
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        backoff(None, 1000),
        ResumeConfig::default(),
    );
    let start = Instant::now();
    let (_, error) = drain(stream).await;
    let (gets, took) = (log.entries().len(), start.elapsed());
    let kind = error.as_ref().map(|e| ResumeFailure::of(e).kind);
    assert_eq!(kind, Some(ResumeFailureKind::Exhausted), "{error:?}");
    let bound = conflict_bound(CONFLICT_WAIT, ResumeConfig::DEFAULT_MAX_DELAY);
    assert!(
        gets <= bound,
        "{gets} GETs (bound {bound}): {:?}",
        log.gaps()
    );
    // Given up no sooner than a spacing before the wait's end, and no later
    // than the deadline.
    let deadline = ResumeConfig::DEFAULT_RESUME_DEADLINE;
    assert!(
        took >= CONFLICT_WAIT - Duration::from_secs(10) && took <= deadline,
        "gave up after {took:?} and {gets} GETs"
    );
}

#[tokio::test(start_paused = true)]
async fn conflicts_for_ever_end_at_the_conflict_wait_under_a_longer_deadline() {
    // With a longer resume deadline, the conflict wait itself ends the
    // call: at the first 409 answered 2 min or more after the first, and
    // the failure names the 409.
    let (script, log) = Script::new(vec![], || Answer::Status(409));
    let config = ResumeConfig::default().with_resume_deadline(Duration::from_secs(600));
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        backoff(None, 1000),
        config,
    );
    let start = Instant::now();
    let (_, error) = drain(stream).await;
    let (gets, took) = (log.entries().len(), start.elapsed());
    assert!(
        matches!(
            &error,
            Some(ResumeStreamError::Exhausted { last, .. })
                if matches!(**last, Attempt::Connect(Status(409, _)))
        ),
        "{error:?} after {took:?} and {gets} GETs"
    );
    let bound = conflict_bound(CONFLICT_WAIT, ResumeConfig::DEFAULT_MAX_DELAY);
    assert!(
        gets <= bound,
        "{gets} GETs (bound {bound}): {:?}",
        log.gaps()
    );
    assert!(
        took >= CONFLICT_WAIT && took <= CONFLICT_WAIT + Duration::from_secs(10),
        "gave up after {took:?} and {gets} GETs"
    );
}

#[tokio::test(start_paused = true)]
async fn conflicts_on_the_standalone_stream_are_waited_out() {
    // The standalone stream meets the same 409s; it keeps its cursor, and
    // resumes within the spacing's cap once the server lets go (counted as
    // failures in transit, they ran out at 14 s and the policy's 30 s
    // delays took over: resumed at 60 s).
    const HALF_OPEN: Duration = Duration::from_secs(40);
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(vec![], || {
        half_open(HALF_OPEN, Answer::Stall(vec![list_changed("13")]))
    });
    let stream = resuming_sse_stream(
        None,
        cut_after("12"),
        script,
        StreamScope::Standalone,
        backoff(None, 1000),
        config,
    );
    let start = Instant::now();
    let mut stream = std::pin::pin!(stream);
    let first = stream.next().await;
    let (gets, took) = (log.entries().len(), start.elapsed());
    assert!(matches!(first, Some(Ok(_))), "{first:?}");
    assert!(seen(&gaps).is_empty(), "{:?}", seen(&gaps));
    assert!(log.cursors().iter().all(|c| c.as_deref() == Some("12")));
    let bound = conflict_bound(HALF_OPEN, ResumeConfig::DEFAULT_MAX_DELAY) + 1;
    assert!(
        gets <= bound,
        "{gets} GETs (bound {bound}): {:?}",
        log.gaps()
    );
    assert!(
        took <= HALF_OPEN + Duration::from_secs(10),
        "resumed after {took:?} and {gets} GETs: {:?}",
        log.gaps()
    );
}

/// A standalone stream without ids whose every connection, the one the
/// application opened included, is cut 300 ms in with nothing delivered;
/// the log's clock starts before the first connection.
fn every_connection_cut_after_300_ms(
    policy: Arc<dyn RetryPolicy>,
) -> (
    impl futures::Stream<Item = Result<Sse, ResumeStreamError<Status>>>,
    Log,
) {
    let cut = Duration::from_millis(300);
    let (script, log) = Script::new(vec![], || {
        Answer::BreakAfter(vec![], Duration::from_millis(300))
    });
    let first = futures::stream::once(async move {
        tokio::time::sleep(cut).await;
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        Err(sse_stream::Error::Body(Box::new(reset)))
    })
    .boxed();
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Standalone,
        policy,
        ResumeConfig::default(),
    );
    (stream, log)
}

#[tokio::test(start_paused = true)]
async fn a_cursorless_standalone_stream_cut_early_is_back_in_200_ms_eight_times_then_backs_off() {
    // Found by the peer matrix's churn cell with standalone notifications
    // (TypeScript SDK 2.4.0, 2026-12-06): a fresh standalone stream cut
    // after a few hundred milliseconds with nothing delivered waited 1 s,
    // then the policy's backoff, before its next `GET`. Holding no cursor,
    // it lost for good the notifications the server sent meanwhile, where
    // upstream's client, back at once, lost none. Its first 8 breaks since
    // progress now wait 200 ms; later ones the policy's delay, so a server
    // that cuts every such stream gets 8 quick `GET`s, not a loop.
    let (stream, log) = every_connection_cut_after_300_ms(old_line_default());
    let (_, error) = read_for(stream, HOUR).await;
    assert!(error.is_none(), "{error:?}");
    let entries = log.entries();
    let back = entries.first().map(|(at, _)| *at);
    assert_eq!(
        back,
        Some(Duration::from_millis(500)),
        "300 ms of connection, then 200 ms: {:?}",
        log.gaps()
    );
    let gaps = log.gaps();
    let quick = Duration::from_millis(500);
    assert!(
        gaps.iter().take(7).all(|gap| *gap == quick) && gaps.get(7).is_some_and(|gap| *gap > quick),
        "8 quick retries in all, then the policy: {:?}",
        &gaps[..gaps.len().min(12)]
    );
    // The policy's backoff up to `max_delay` (30 s): about 120 an hour.
    assert!(entries.len() <= 140, "{} GETs in an hour", entries.len());
}

#[tokio::test(start_paused = true)]
async fn a_cursorless_standalone_stream_s_quick_retries_count_toward_max_times() {
    // The quick retries are failures like any other: a policy of 3 ends
    // the stream after 3 breaks without progress, 200 ms apart or not.
    let (stream, log) = every_connection_cut_after_300_ms(fixed(Some(3), 10_000));
    let (_, error) = read_for(stream, Duration::from_secs(600)).await;
    assert!(error.is_some(), "the policy's count ran out");
    assert!(log.entries().len() <= 3, "{} GETs", log.entries().len());
}

#[tokio::test(start_paused = true)]
async fn a_cursorless_standalone_stream_cut_at_once_still_backs_off() {
    // The other side: a server that accepts every fresh standalone `GET`
    // and breaks it at once gets 8 quick retries, then the policy's
    // backoff: 2 s, 4 s, … up to `max_delay` (30 s), about 30 in 10
    // minutes where a `GET` every 200 ms would make 3,000.
    let (script, log) = Script::new(vec![], || Answer::Break(vec![]));
    let stream = fresh_standalone(script);
    let (_, error) = read_for(stream, Duration::from_secs(600)).await;
    assert!(error.is_none(), "{error:?}");
    let gets = log.entries().len();
    assert!(gets <= 33, "{gets} GETs in 10 minutes: {:?}", log.gaps());
}

/// A new id-less notification each time, then a clean close.
fn a_new_unnamed_message_then_close() -> Answer {
    static SENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Answer::Frames(vec![message_without_id(&format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"n":{n}}}}}"#
    ))])
}

#[tokio::test(start_paused = true)]
async fn unnamed_messages_on_a_resume_do_not_vouch_for_its_cursor() {
    // Only a stream that holds no cursor takes a new id-less message for
    // progress. A resume answered with such messages and closed proves
    // nothing about the cursor: it fails as an empty one does, the loss is
    // reported once, and the stream reopens without the cursor.
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(vec![], a_new_unnamed_message_then_close);
    let stream = standalone_from_41(script, config);
    let (_, error) = read_for(stream, Duration::from_secs(600)).await;
    assert!(error.is_none(), "{error:?}");
    let max = ResumeConfig::default().max_failed_resumes;
    assert_eq!(
        resumes(&log),
        max,
        "GETs with the cursor: {:?}",
        log.cursors()
    );
    assert_eq!(seen(&gaps).len(), 1, "{:?}", seen(&gaps));
}

/// A new notification without an id (every other one with an empty `id:`
/// field, which per the SSE spec leaves it without one), then a break
/// 300 ms in.
fn a_new_unnamed_message_then_a_cut() -> Answer {
    static SENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut message = message_without_id(&format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"n":{n}}}}}"#
    ));
    if n % 2 == 1 {
        message.id = Some(String::new());
    }
    Answer::BreakAfter(vec![message], Duration::from_millis(300))
}

#[tokio::test(start_paused = true)]
async fn a_cursorless_standalone_stream_cut_after_a_new_notification_is_back_at_once() {
    // Against a server without an event store, what it sends while the
    // stream is away is lost for good: a cut after news is followed at
    // once, as upstream's client follows every cut, whether the message
    // came with no `id` field or an empty one.
    let (script, log) = Script::new(vec![], a_new_unnamed_message_then_a_cut);
    let stream = fresh_standalone(script);
    let (messages, error) = read_for(stream, Duration::from_secs(10)).await;
    assert!(error.is_none(), "{error:?}");
    let gaps = log.gaps();
    assert!(
        gaps.len() >= 20,
        "{} GETs in 10 s: {gaps:?}",
        gaps.len() + 1
    );
    assert!(
        gaps.iter().all(|gap| *gap == Duration::from_millis(300)),
        "each GET 300 ms (the connection's life) after the last: {gaps:?}"
    );
    assert_eq!(
        messages.len(),
        log.entries().len(),
        "one message a connection"
    );
    assert!(log.cursors().iter().all(Option::is_none));
}
