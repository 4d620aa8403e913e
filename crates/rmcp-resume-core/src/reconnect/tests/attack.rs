//! An adversarial pass over the rules added for the client review: the
//! unvouched refresh, `held`, the acknowledgement rules, the caps, and the
//! id-less request streams the guard now hands to the machine. Each test
//! asserts what a demanding user would expect; a failing one is a finding.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

fn kind(error: &Option<ResumeStreamError<Status>>) -> Option<ResumeFailureKind> {
    error.as_ref().map(|e| ResumeFailure::of(e).kind)
}

const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#;
const RESULT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;

fn idle_31s() -> IdleTimeout {
    IdleTimeout::new(
        Duration::from_secs(31),
        Some(Duration::from_secs(15)),
        Duration::from_secs(15),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

// ---------------------------------------------------------------------------
// Findings (each of these failed when written)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn an_idless_request_stream_is_never_reopened_as_a_cursorless_get() {
    // A request stream without event ids (a server without an event store,
    // or any server under 2026-07-28) and an idle timeout: a quiet call.
    // A `GET` without `Last-Event-ID` opens the *standalone* stream, which
    // cannot carry the response; it must never be issued for a request.
    let first = futures::stream::iter(vec![Ok(message_without_id(PROGRESS))])
        .chain(futures::stream::once(async {
            tokio::time::sleep(Duration::from_secs(100)).await;
            Ok(message_without_id(RESULT))
        }))
        .boxed();
    // What a GET without a cursor gets: the session's standalone stream.
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![list_changed("1")]));
    let config = ResumeConfig::default().with_idle_timeout(idle_31s());
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 10),
        config,
    );
    let outcome = tokio::time::timeout(Duration::from_secs(600), drain(stream)).await;
    assert!(
        log.cursors().iter().all(Option::is_some),
        "a request stream opened a GET without Last-Event-ID: {:?}",
        log.entries()
    );
    let (messages, error) = outcome.unwrap_or_else(|_| panic!("still running after 600 s"));
    assert!(
        messages.iter().all(|m| !m
            .data
            .as_deref()
            .unwrap_or_default()
            .contains("list_changed")),
        "a standalone notification was delivered as the request's: {messages:?}"
    );
    // Either the call waits for its answer, or it fails as unresumable.
    match error {
        None => assert_eq!(messages.len(), 2),
        Some(ResumeStreamError::Exhausted { last, .. }) => {
            assert!(matches!(*last, Attempt::NoCursor(_)), "{last:?}")
        }
        Some(other) => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_long_silent_resume_timeout_does_not_fail_calls_behind_connection_lifetimes() {
    // The M1 case (a quiet tool behind a 60 s connection lifetime, the
    // fork's server acknowledging every resume) with `silent_resume_timeout`
    // raised to 90 s, say for a slow proxy. Acknowledged, held 60 s each:
    // as healthy as with the default, and must succeed the same way.
    let mut answers: Vec<Answer> = (0..7)
        .map(|_| {
            Answer::BreakAfter(
                vec![notice("4/1", Some("0/1"), true)],
                Duration::from_secs(60),
            )
        })
        .collect();
    answers.push(Answer::Frames(vec![
        notice("4/1", Some("0/1"), true),
        response("5/1"),
    ]));
    let (script, log) = Script::new(answers, || Answer::Frames(vec![]));
    let config = ResumeConfig::default().with_silent_resume_timeout(Duration::from_secs(90));
    let stream = resuming_sse_stream(
        None,
        cut_after("4/1"),
        script,
        StreamScope::Request,
        fixed(Some(3), 1000),
        config,
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 1);
    assert_eq!(log.entries().len(), 8);
}

#[tokio::test(start_paused = true)]
async fn a_busy_server_is_not_retried_at_once_when_the_policy_allows_one_retry() {
    // `503` without `Retry-After` and a policy of one retry: the documented
    // "never at once" must hold whatever `max_times` is.
    let (script, log) = Script::new(
        vec![
            Answer::Status(503),
            Answer::Frames(vec![response("7f3a_2")]),
        ],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        fixed(Some(1), 500),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 1);
    assert_eq!(log.gaps(), [Duration::from_millis(500)], "retried at once");
}

#[tokio::test(start_paused = true)]
async fn a_resume_from_a_non_canonical_numeric_id_is_refreshed_when_silent() {
    // A conforming server whose ids are zero-padded counters ("0042"): they
    // are opaque to the client, like any other. A resume attached to
    // nothing must be refreshed as for any unvouched server, not waited on
    // forever.
    let (script, log) = Script::new(
        vec![
            Answer::Stall(vec![]),
            Answer::Frames(vec![response("0043")]),
        ],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("0042"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let outcome = tokio::time::timeout(Duration::from_secs(600), drain(stream)).await;
    let (messages, error) = outcome
        .unwrap_or_else(|_| panic!("a silent resume was never refreshed: {:?}", log.entries()));
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["0043"]);
    assert_eq!(log.gaps(), [ResumeConfig::DEFAULT_SILENT_RESUME_TIMEOUT]);
}

#[tokio::test(start_paused = true)]
async fn a_first_connection_opened_with_a_cursor_is_judged_as_a_resume() {
    // `resuming_frames(first, cursor, …)`: "`cursor` the Last-Event-ID it
    // starts from". A caller that opened the first GET with that cursor
    // gets a resume whose notice says 6..7 were lost; the application must
    // hear of it.
    let (config, gaps) = recording(ResumeConfig::default());
    let first = futures::stream::iter(vec![
        Ok(notice("5", Some("8"), false)),
        Ok(list_changed("8")),
    ])
    .chain(futures::stream::pending())
    .boxed();
    let (script, _) = Script::new(vec![], || Answer::Stall(vec![]));
    let stream = resuming_sse_stream(
        Some(first),
        cut_after("5"),
        script,
        StreamScope::Standalone,
        fixed(None, 10),
        config,
    );
    let _ = read_for(stream, Duration::from_secs(5)).await;
    let gaps = seen(&gaps);
    assert_eq!(gaps.len(), 1, "a reported loss went unreported: {gaps:?}");
    assert_eq!(gaps[0].lost.map(|l| l.len()), Some(2));
}

static SPIN_SILENT: AtomicUsize = AtomicUsize::new(0);

fn silent_counted() -> Answer {
    let n = SPIN_SILENT.fetch_add(1, Ordering::SeqCst);
    assert!(n < 1_000, "over 1000 GETs with no time passing: a hot loop");
    Answer::Stall(vec![])
}

#[tokio::test(start_paused = true)]
async fn a_zero_silent_resume_timeout_does_not_spin() {
    // `with_silent_resume_timeout(Duration::ZERO)`, as a user might write to
    // turn the check off: against an unvouched server every resume is
    // "silent" at once and refreshed at once, uncounted.
    let (script, log) = Script::new(vec![], silent_counted);
    let config = ResumeConfig::default().with_silent_resume_timeout(Duration::ZERO);
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        fixed(None, 1000),
        config,
    );
    let _ = read_for(stream, Duration::from_secs(60)).await;
    // About one a second: the timeout has a floor.
    assert!(
        log.entries().len() <= 70,
        "{} GETs in a minute",
        log.entries().len()
    );
}

static SPIN_DOWN: AtomicUsize = AtomicUsize::new(0);

fn down_counted() -> Answer {
    let n = SPIN_DOWN.fetch_add(1, Ordering::SeqCst);
    assert!(n < 1_000, "over 1000 GETs with no time passing: a hot loop");
    Answer::Status(502)
}

#[tokio::test(start_paused = true)]
async fn a_zero_max_delay_does_not_spin_against_an_unreachable_server() {
    // `with_max_delay(Duration::ZERO)` ("no cap"?) caps every delay at zero:
    // a standalone stream whose server is down then reconnects in a loop.
    let (script, log) = Script::new(vec![], down_counted);
    let config = ResumeConfig::default().with_max_delay(Duration::ZERO);
    let stream = resuming_sse_stream(
        None,
        cut_after("3"),
        script,
        StreamScope::Standalone,
        backoff(None, 1000),
        config,
    );
    let _ = read_for(stream, Duration::from_secs(60)).await;
    // About one a second: the cap has a floor.
    assert!(
        log.entries().len() <= 70,
        "{} GETs in a minute",
        log.entries().len()
    );
}

#[tokio::test(start_paused = true)]
async fn a_gap_at_the_first_event_of_a_standalone_resume_keeps_the_connection() {
    // m1 for the first event after a resume: a peer numbering N, N+1
    // (IdRules::Rmcp; upstream rmcp replays from its cache head for an
    // evicted cursor) answers the resume from 5 with 8, 9. The loss is
    // 6..7; 8 and 9 arrived and must be delivered, on the connection that
    // carries them. Dropping it and the cursor loses them too, and a GET
    // without a cursor makes upstream's server replay its whole cache.
    let (config, gaps) = recording(ResumeConfig::default().with_id_rules(IdRules::Rmcp));
    let (script, log) = Script::new(
        vec![Answer::Stall(vec![list_changed("8"), list_changed("9")])],
        || Answer::Stall(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("5"),
        script,
        StreamScope::Standalone,
        fixed(None, 10),
        config,
    );
    let (messages, error) = read_for(stream, Duration::from_secs(60)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        ids(&messages),
        ["8", "9"],
        "events that arrived were dropped"
    );
    let gaps = seen(&gaps);
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].lost.map(|l| l.len()), Some(2));
    assert_eq!(log.cursors(), [cut_after("5")], "{:?}", log.entries());
}

#[tokio::test(start_paused = true)]
async fn an_empty_event_id_clears_the_cursor() {
    // WHATWG: an `id:` field with an empty value sets the last event ID to
    // empty, and the next reconnect sends no `Last-Event-ID`. cursor.rs
    // says so too ("an empty SSE `id:` clears the cursor"). The machine
    // ignores it and resumes from the id before.
    let first = opened(vec![
        list_changed("4"),
        message(
            "",
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        ),
    ]);
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![]));
    let stream = live_standalone(first, script, ResumeConfig::default());
    let _ = read_for(stream, Duration::from_secs(5)).await;
    assert_eq!(log.cursors(), [None], "{:?}", log.entries());
}

#[tokio::test(start_paused = true)]
async fn a_failed_opening_get_is_not_retried_when_the_policy_allows_none() {
    // The opening GET of the standalone stream failed (first = None, cursor
    // = None) and the policy allows no retry (`max_times: Some(0)`):
    // upstream stops there; the machine still sends one GET at once.
    let (script, log) = Script::new(vec![], || Answer::Status(502));
    let stream = resuming_sse_stream(
        None,
        None,
        script,
        StreamScope::Standalone,
        fixed(Some(0), 1000),
        ResumeConfig::default(),
    );
    let (_, error) = drain(stream).await;
    assert!(
        matches!(error, Some(ResumeStreamError::Exhausted { .. })),
        "{error:?}"
    );
    assert!(log.entries().is_empty(), "{:?}", log.entries());
}

#[tokio::test(start_paused = true)]
async fn an_acknowledged_resume_held_to_the_idle_timeout_is_progress() {
    // The fork's server acknowledges every resume of a quiet call; the
    // client has an idle timeout (31 s), the knob meant for long quiet
    // calls. One cut, then each acknowledged resume is held 31 s and
    // resumed again as idle. Every one was held longer than `held` asks;
    // the call must not fail at the 2-minute deadline the cut started.
    let first = futures::stream::iter(vec![Ok(priming("0/1", 1000)), Ok(progress("1/1", 1))])
        .chain(futures::stream::once(async {
            let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
            Err(sse_stream::Error::Body(Box::new(reset)))
        }))
        .boxed();
    let mut answers: Vec<Answer> = (0..6)
        .map(|_| Answer::Stall(vec![notice("1/1", Some("0/1"), true)]))
        .collect();
    answers.push(Answer::Frames(vec![
        notice("1/1", Some("0/1"), true),
        response("2/1"),
    ]));
    let (script, log) = Script::new(answers, || Answer::Frames(vec![]));
    let config = ResumeConfig::default().with_idle_timeout(idle_31s());
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(Some(3), 1000),
        config,
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?} after {:?}", log.entries());
    assert_eq!(ids(&messages), ["1/1", "2/1"]);
    assert_eq!(log.entries().len(), 7);
}

// ---------------------------------------------------------------------------
// Attacks that held
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn an_event_sent_as_the_refresh_happens_is_delivered_once() {
    // Exactly at the silence timeout: the event wins the race, no refresh.
    let (script, log) = Script::new(vec![], || Answer::Frames(vec![]));
    let first_resume = futures::stream::once(async {
        tokio::time::sleep(ResumeConfig::DEFAULT_SILENT_RESUME_TIMEOUT).await;
        Ok(progress("7f3a_2", 2))
    })
    .chain(futures::stream::once(async { Ok(response("7f3a_3")) }))
    .boxed();
    // The stream starts as a resume: hand it over as the reconnect's answer.
    struct Once(Option<SseFrames>, Script);
    impl Connector for Once {
        type Error = Status;
        fn connect(
            &mut self,
            cursor: Option<&str>,
        ) -> BoxFuture<'static, Result<SseFrames, Status>> {
            match self.0.take() {
                Some(frames) => {
                    // Logged as the script logs, without using its answers.
                    if let Ok(mut log) = self.1.log.0.lock() {
                        log.push((self.1.start.elapsed(), cursor.map(str::to_owned)));
                    }
                    Box::pin(async move { Ok(frames) })
                }
                None => self.1.connect(cursor),
            }
        }
    }
    let frames = resuming_frames(
        None,
        cut_after("7f3a_1"),
        Once(Some(first_resume), script),
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let mut frames = std::pin::pin!(frames);
    let mut got = Vec::new();
    while let Some(Ok(sse)) = frames.next().await {
        got.push(sse);
    }
    assert_eq!(ids(&got), ["7f3a_2", "7f3a_3"]);
    assert_eq!(log.entries().len(), 1, "no refresh: {:?}", log.entries());

    // Just after it: the event went out on the dropped connection; the
    // server replays it on the refresh, and it is delivered once.
    let (script, log) = Script::new(
        vec![Answer::Frames(vec![
            progress("7f3a_2", 2),
            response("7f3a_3"),
        ])],
        || Answer::Frames(vec![]),
    );
    let late = futures::stream::once(async {
        tokio::time::sleep(ResumeConfig::DEFAULT_SILENT_RESUME_TIMEOUT + Duration::from_millis(1))
            .await;
        Ok(progress("7f3a_2", 2))
    })
    .chain(futures::stream::pending())
    .boxed();
    let frames = resuming_frames(
        None,
        cut_after("7f3a_1"),
        Once(Some(late), script),
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let mut frames = std::pin::pin!(frames);
    let mut got = Vec::new();
    while let Some(Ok(sse)) = frames.next().await {
        got.push(sse);
    }
    assert_eq!(ids(&got), ["7f3a_2", "7f3a_3"]);
    assert_eq!(log.cursors(), vec![cut_after("7f3a_1"); 2]);
}

#[tokio::test(start_paused = true)]
async fn an_unvouched_silent_request_is_refreshed_ever_more_rarely_with_its_cursor() {
    // Nothing counts the refreshes, and nothing but the request's own
    // timeout ends them (documented), but each waits twice as long as the
    // last, up to ten minutes (issue #42: it was 360 GETs an hour), all with
    // the same cursor, none at once.
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        fixed(Some(3), 1000),
        ResumeConfig::default(),
    );
    let (_, error) = read_for(stream, Duration::from_secs(3605)).await;
    assert!(error.is_none(), "{error:?}");
    let s = Duration::from_secs;
    assert_eq!(
        log.gaps(),
        [
            s(10),
            s(20),
            s(40),
            s(80),
            s(160),
            s(320),
            s(600),
            s(600),
            s(600),
            s(600)
        ]
    );
    assert!(log.cursors().iter().all(|c| c.as_deref() == Some("7f3a_1")));
    assert_eq!(log.entries().len(), 11);
}

#[tokio::test(start_paused = true)]
async fn an_acknowledged_poll_with_retry_zero_is_paced_by_the_policy() {
    // A vouched server that acknowledges, sends nothing, asks `retry: 0` and
    // closes: no hot loop, the policy's first delay each time, no count.
    let retry_zero = Sse {
        event: None,
        data: Some(String::new()),
        id: None,
        retry: Some(0),
    };
    let mut answers: Vec<Answer> = (0..20)
        .map(|_| Answer::Frames(vec![notice("4/1", Some("0/1"), true), retry_zero.clone()]))
        .collect();
    answers.push(Answer::Frames(vec![
        notice("4/1", Some("0/1"), true),
        response("5/1"),
    ]));
    let (script, log) = Script::new(answers, || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("4/1"),
        script,
        StreamScope::Request,
        fixed(Some(3), 1000),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 1);
    assert_eq!(log.gaps(), [Duration::from_secs(1); 20]);
}

#[tokio::test(start_paused = true)]
async fn acknowledged_polls_outlast_the_deadline_with_a_capped_retry() {
    // Polls every `retry: 40 s` (capped to 30 s) for ten minutes, each one
    // acknowledged: progress, never the deadline.
    let mut ack = notice("4/1", Some("0/1"), true);
    ack.retry = Some(40_000);
    let mut answers: Vec<Answer> = (0..20).map(|_| Answer::Frames(vec![ack.clone()])).collect();
    answers.push(Answer::Frames(vec![ack.clone(), response("5/1")]));
    let (script, log) = Script::new(answers, || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("4/1"),
        script,
        StreamScope::Request,
        fixed(Some(3), 1000),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 1);
    assert_eq!(log.gaps(), [ResumeConfig::DEFAULT_MAX_DELAY; 20]);
}

#[tokio::test(start_paused = true)]
async fn retry_after_huge_is_capped_and_zero_is_not_at_once() {
    let (script, log) = Script::new(
        vec![
            Answer::Busy(503, Duration::from_secs(1_000_000)),
            Answer::Busy(429, Duration::ZERO),
            Answer::Frames(vec![response("7f3a_2")]),
        ],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        fixed(None, 500),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 1);
    assert_eq!(
        log.gaps(),
        [ResumeConfig::DEFAULT_MAX_DELAY, Duration::from_millis(500)]
    );
}

#[tokio::test(start_paused = true)]
async fn conflicts_forever_keep_the_standalone_cursor_without_a_hot_loop() {
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(vec![], || Answer::Status(409));
    let stream = resuming_sse_stream(
        None,
        cut_after("3"),
        script,
        StreamScope::Standalone,
        fixed(None, 100),
        config,
    );
    let (_, error) = read_for(stream, Duration::from_secs(600)).await;
    assert!(error.is_none(), "{error:?}");
    assert!(seen(&gaps).is_empty(), "{:?}", seen(&gaps));
    assert!(log.cursors().iter().all(|c| c.as_deref() == Some("3")));
    let at_once = log.gaps().iter().filter(|g| g.is_zero()).count();
    assert_eq!(at_once, 1, "{:?}", &log.gaps()[..10]);
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_standalone_server_with_max_times_gives_up_keeping_its_cursor() {
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(vec![], || Answer::Status(502));
    let stream = resuming_sse_stream(
        None,
        cut_after("3"),
        script,
        StreamScope::Standalone,
        fixed(Some(3), 1000),
        config,
    );
    let (_, error) = drain(stream).await;
    assert!(
        matches!(error, Some(ResumeStreamError::Exhausted { .. })),
        "{error:?}"
    );
    assert!(seen(&gaps).is_empty(), "{:?}", seen(&gaps));
    assert_eq!(log.cursors(), vec![cut_after("3"); 4]);
}

#[tokio::test(start_paused = true)]
async fn a_live_standalone_gap_then_a_rewind_delivers_and_resumes_from_the_last() {
    let (config, gaps) = recording(ResumeConfig::default().with_id_rules(IdRules::Rmcp));
    let reset = || {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        sse_stream::Error::Body(Box::new(reset))
    };
    let first = futures::stream::iter(
        ["1", "2", "5", "3", "4"]
            .map(|id| Ok(list_changed(id)))
            .into_iter()
            .chain([Err(reset())]),
    )
    .boxed();
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![]));
    let stream = live_standalone(first, script, config);
    let (messages, error) = read_for(stream, Duration::from_secs(60)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["1", "2", "5", "3", "4"]);
    assert_eq!(seen(&gaps).len(), 2, "{:?}", seen(&gaps));
    assert!(!log.cursors().is_empty());
    assert!(log.cursors().iter().all(|c| c.as_deref() == Some("4")));
}

#[tokio::test(start_paused = true)]
async fn id_rules_switch_to_per_stream_counters_once_a_notice_vouches() {
    // Before the notice, 1 then 3 is no gap (opaque); after it, the resume
    // from 3 is judged by the counter rules.
    let first = opened(vec![progress("1", 1), progress("3", 2)]);
    let (script, log) = Script::new(
        vec![Answer::Frames(vec![
            notice("3", Some("1"), true),
            progress("4", 3),
            response("5"),
        ])],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["1", "3", "4", "5"]);
    assert_eq!(log.cursors(), [cut_after("3")]);

    // Vouched on the resume, a later jump on the same connection is a gap.
    let first = opened(vec![progress("1", 1), progress("3", 2)]);
    let (script, _) = Script::new(
        vec![Answer::Frames(vec![
            notice("3", Some("1"), true),
            progress("4", 3),
            progress("6", 4),
            response("7"),
        ])],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (_, error) = drain(stream).await;
    assert_eq!(kind(&error), Some(ResumeFailureKind::Lost), "{error:?}");
}

#[tokio::test(start_paused = true)]
async fn nothing_after_the_response_reaches_the_caller_as_a_failure() {
    let first = futures::stream::iter(vec![
        Ok(priming("0/1", 10)),
        Ok(response("1/1")),
        Ok(notice("1/1", None, false)),
        Ok(progress("9/1", 9)),
        Ok(progress("0/2", 0)),
        Err(sse_stream::Error::InvalidLine),
        Ok(response("2/1")),
    ])
    .boxed();
    let (script, log) = Script::new(vec![], || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default().with_id_rules(IdRules::Rmcp),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["1/1"]);
    assert!(log.entries().is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_acknowledged_resume_held_exactly_the_timeout_is_progress() {
    let mut answers: Vec<Answer> = (0..7)
        .map(|_| {
            Answer::BreakAfter(
                vec![notice("4/1", Some("0/1"), true)],
                ResumeConfig::DEFAULT_SILENT_RESUME_TIMEOUT,
            )
        })
        .collect();
    answers.push(Answer::Frames(vec![
        notice("4/1", Some("0/1"), true),
        response("5/1"),
    ]));
    let (script, log) = Script::new(answers, || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("4/1"),
        script,
        StreamScope::Request,
        fixed(Some(3), 1000),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 1);
    assert_eq!(log.entries().len(), 8);
}

#[tokio::test(start_paused = true)]
async fn an_idless_request_stream_that_ends_early_fails_as_unresumable() {
    // The 2026-07-28 path: no ids. A clean close and a break both fail the
    // call with `NoCursor` (the guard's `notResumable`), with no GET.
    for broken in [false, true] {
        let head = futures::stream::iter(vec![Ok(message_without_id(PROGRESS))]);
        let first = if broken {
            let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
            head.chain(futures::stream::iter(vec![Err(sse_stream::Error::Body(
                Box::new(reset),
            ))]))
            .boxed()
        } else {
            head.boxed()
        };
        let (script, log) = Script::new(vec![], || Answer::Frames(vec![]));
        let stream = resuming_sse_stream(
            Some(first),
            None,
            script,
            StreamScope::Request,
            fixed(None, 10),
            ResumeConfig::default(),
        );
        let (messages, error) = drain(stream).await;
        assert_eq!(messages.len(), 1);
        match error {
            Some(ResumeStreamError::Exhausted { last, .. }) => {
                assert!(matches!(*last, Attempt::NoCursor(_)), "{last:?}")
            }
            other => panic!("{other:?}"),
        }
        assert!(log.entries().is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn a_floor_above_the_cursor_fails_a_request_and_falls_back_on_the_standalone_stream() {
    // Request: the call fails as `lost`, naming 4..5.
    let (script, _) = Script::new(
        vec![Answer::Frames(vec![
            notice("3/1", Some("6/1"), false),
            progress("6/1", 6),
            response("7/1"),
        ])],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(messages.is_empty(), "{messages:?}");
    let failure = error.as_ref().map(ResumeFailure::of);
    assert_eq!(
        failure.as_ref().map(|f| f.kind),
        Some(ResumeFailureKind::Lost)
    );
    assert_eq!(failure.and_then(|f| f.lost).map(|l| l.len()), Some(2));

    // Standalone: the fallback's events are delivered, the loss reported
    // once, and the connection kept.
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(
        vec![Answer::Stall(vec![
            notice("3", Some("6"), false),
            list_changed("6"),
            list_changed("7"),
        ])],
        || Answer::Stall(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("3"),
        script,
        StreamScope::Standalone,
        fixed(None, 10),
        config,
    );
    let (messages, error) = read_for(stream, Duration::from_secs(60)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["6", "7"]);
    assert_eq!(seen(&gaps).len(), 1);
    assert_eq!(log.entries().len(), 1);
}
