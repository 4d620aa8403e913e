//! Cases that cargo-mutants found no test for: each kills a mutant that
//! survived the rest of the suite (see docs/testing.md).

use super::*;

#[tokio::test(start_paused = true)]
async fn a_response_after_a_gap_at_the_resume_names_the_lost_events() {
    // The resume itself skips 2/1 and 3/1 before the response (a resume's
    // gap, not a live one): the response is delivered, and the loss the
    // application hears of names both events.
    let (config, gaps) = recording(ResumeConfig::default().with_id_rules(IdRules::Rmcp));
    let (script, log) = Script::new(vec![Answer::Frames(vec![response("4/1")])], || {
        Answer::Frames(vec![])
    });
    let stream = resuming_sse_stream(
        None,
        cut_after("1/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        config,
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["4/1"]);
    assert_eq!(log.entries().len(), 1);
    let gaps = seen(&gaps);
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].lost.map(|lost| lost.len()), Some(2), "{gaps:?}");
}

#[tokio::test(start_paused = true)]
async fn a_stream_without_a_cursor_is_never_spaced_as_a_quiet_run() {
    // A fresh standalone stream (no ids, so no cursor) held 6 s and cut,
    // again and again: nothing can be replayed, so every gap loses events;
    // it is reconnected at once each time, not spaced like a quiet resume.
    let (script, log) = Script::new(vec![], || {
        Answer::BreakAfter(vec![], Duration::from_secs(6))
    });
    let first = futures::stream::once(async {
        tokio::time::sleep(Duration::from_secs(6)).await;
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        Err(sse_stream::Error::Body(Box::new(reset)))
    })
    .boxed();
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Standalone,
        fixed(None, 1000),
        ResumeConfig::default(),
    );
    let (_, error) = read_for(stream, Duration::from_secs(63)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(log.gaps(), [Duration::from_secs(6); 9]);
}

#[tokio::test(start_paused = true)]
async fn a_delay_that_reaches_the_deadline_exactly_ends_the_request_now() {
    // 502 to every resume, 1 s apart after the first retry, against a 3 s
    // deadline: the third delay would end exactly at the deadline, so the
    // request fails then, at 2 s, not after one more `GET`.
    let (script, log) = Script::new(vec![], || Answer::Status(502));
    let config = ResumeConfig::default()
        .with_resume_deadline(Duration::from_secs(3))
        .with_max_transport_failures(10);
    let stream = resuming_sse_stream(
        None,
        cut_after("1/1"),
        script,
        StreamScope::Request,
        fixed(None, 1000),
        config,
    );
    let start = Instant::now();
    let (_, error) = drain(stream).await;
    match error {
        Some(ResumeStreamError::Exhausted { last, .. }) => {
            assert!(matches!(*last, Attempt::Deadline(_)), "{last:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(log.entries().len(), 4, "{:?}", log.entries());
    assert_eq!(start.elapsed(), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_standalone_stream_the_policy_forbids_reopening_ends_without_an_error() {
    // Only a request stream must end with an error (its call waits for one);
    // the standalone stream, closed with no reconnect allowed, just ends.
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![]));
    let stream = resuming_sse_stream(
        Some(opened(vec![list_changed("1")])),
        None,
        script,
        StreamScope::Standalone,
        fixed(Some(0), 10),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["1"]);
    assert!(log.entries().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_close_after_news_with_no_delay_asked_is_followed_at_once() {
    // The connection brought an event: a close with neither a `retry` nor a
    // policy delay is followed at once, not after the 1 s floor.
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![]));
    let stream = resuming_sse_stream(
        Some(opened(vec![list_changed("1")])),
        None,
        script,
        StreamScope::Standalone,
        fixed(None, 0),
        ResumeConfig::default(),
    );
    let (_, error) = read_for(stream, Duration::from_secs(5)).await;
    assert!(error.is_none(), "{error:?}");
    let entries = log.entries();
    assert_eq!(entries.first(), Some(&(Duration::ZERO, cut_after("1"))));
}

#[tokio::test(start_paused = true)]
async fn empty_closes_after_progress_start_the_deadline() {
    // After progress, resumes that close empty are failures from the first:
    // the deadline (5 s) runs from it and ends the call before
    // `max_failed_resumes` (10) would.
    let first = opened(vec![priming("0/1", 1000), progress("1/1", 1)]);
    let (script, log) = Script::new(vec![], || Answer::Frames(vec![]));
    let config = ResumeConfig::default()
        .with_resume_deadline(Duration::from_secs(5))
        .with_max_failed_resumes(10);
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 4000),
        config,
    );
    let (_, error) = drain(stream).await;
    match error {
        Some(ResumeStreamError::Exhausted { last, .. }) => {
            assert!(matches!(*last, Attempt::Deadline(_)), "{last:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(log.entries().len(), 2, "{:?}", log.entries());
}

/// Standalone events `(id, at)` on one open connection, each at its time
/// from the start, the connection kept open after the last.
fn timed(events: &[(&'static str, u64)]) -> SseFrames {
    let events = events.to_vec();
    futures::stream::unfold((0usize, 0u64), move |(i, now)| {
        let events = events.clone();
        async move {
            let (id, at) = *events.get(i)?;
            tokio::time::sleep(Duration::from_secs(at.saturating_sub(now))).await;
            Some((Ok(list_changed(id)), (i + 1, at)))
        }
    })
    .chain(futures::stream::pending())
    .boxed()
}

/// "Nothing a peer triggers logs unthrottled at WARN": a server can make
/// every standalone event a gap. The first gap warns; the rest within a
/// minute of it go to DEBUG; one a full minute after the last WARN warns
/// again. The observer hears of every one.
#[tokio::test(start_paused = true)]
async fn gaps_warn_once_a_minute_and_the_observer_hears_each() {
    use tracing_subscriber::layer::{Layer as _, SubscriberExt};
    let lines = Lines::default();
    let _default = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(
            lines
                .clone()
                .with_filter(tracing_subscriber::filter::LevelFilter::WARN),
        ),
    );
    let (config, gaps) = recording(ResumeConfig::default().with_id_rules(IdRules::Rmcp));
    let (script, _) = Script::new(vec![], || Answer::Stall(vec![]));
    let first = timed(&[("1", 0), ("3", 0), ("5", 1), ("7", 60), ("9", 61)]);
    let stream = live_standalone(first, script, config);
    let mut stream = std::pin::pin!(stream);
    // After each id: the WARN lines so far.
    for (id, warned) in [("1", 0), ("3", 1), ("5", 1), ("7", 2), ("9", 2)] {
        let next = stream.next().await;
        let got = next.and_then(Result::ok).and_then(|sse| sse.id);
        assert_eq!(got.as_deref(), Some(id));
        assert_eq!(Lines::get(&lines.all), warned, "WARN lines after {id}");
    }
    assert_eq!(seen(&gaps).len(), 4, "the observer hears every gap");
}

/// A live gap on a vouched standalone stream goes on from the event after
/// it; that event repeated is a copy, not a primed stream's first event.
#[tokio::test(start_paused = true)]
async fn the_event_after_a_live_gap_repeated_is_a_copy() {
    let (config, gaps) = recording(ResumeConfig::default().with_id_rules(IdRules::Rmcp));
    let (script, _) = Script::new(vec![], || Answer::Stall(vec![]));
    let first = futures::stream::iter(["1", "3", "3", "4"].map(|id| Ok(list_changed(id))))
        .chain(futures::stream::pending())
        .boxed();
    let stream = live_standalone(first, script, config);
    let (messages, error) = read_for(stream, Duration::from_secs(5)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["1", "3", "4"]);
    assert_eq!(seen(&gaps).len(), 1);
}

/// A response without an id on a primed request stream: the stream is
/// draining, and a message that then repeats the priming id (upstream's
/// `0` ids) is passed on without taking the stream back to following, so
/// the stream ends with its connection and is never resumed.
#[tokio::test(start_paused = true)]
async fn after_an_unnumbered_response_the_stream_ends_with_its_connection() {
    let (script, log) = Script::new(vec![], || Answer::Frames(vec![]));
    let unnumbered = Sse {
        id: None,
        ..response("unused")
    };
    let first = opened(vec![priming("0", 3000), unnumbered, progress("0", 1)]);
    let (messages, error) = request_stream(Some(first), None, script).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        messages.len(),
        2,
        "the response and the message: {messages:?}"
    );
    assert!(
        log.entries().is_empty(),
        "resumed after its response: {:?}",
        log.entries()
    );
}

/// Ids the server has not vouched for are opaque: an event that repeats
/// the last id (the cursor) is a copy and is dropped, even when its data
/// differs from the first (so the set of delivered events cannot be what
/// drops it).
#[tokio::test(start_paused = true)]
async fn an_unvouched_repeat_of_the_cursor_with_other_data_is_dropped() {
    let (script, _) = Script::new(vec![], || Answer::Stall(vec![]));
    let first = futures::stream::iter([
        Ok(message(
            "a",
            r#"{"jsonrpc":"2.0","method":"x","params":{"n":1}}"#,
        )),
        Ok(message(
            "a",
            r#"{"jsonrpc":"2.0","method":"x","params":{"n":2}}"#,
        )),
        Ok(message(
            "b",
            r#"{"jsonrpc":"2.0","method":"x","params":{"n":3}}"#,
        )),
    ])
    .chain(futures::stream::pending())
    .boxed();
    let stream = live_standalone(first, script, ResumeConfig::default());
    let (messages, error) = read_for(stream, Duration::from_secs(5)).await;
    assert!(error.is_none(), "{error:?}");
    let data: Vec<_> = messages.iter().filter_map(|m| m.data.clone()).collect();
    assert_eq!(ids(&messages), ["a", "b"], "{data:?}");
    assert!(data[0].contains(r#""n":1"#), "{data:?}");
}

/// The INFO lines logged while a closure's future runs, by message.
#[derive(Clone, Default)]
struct Infos(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Infos {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        if *event.metadata().level() != tracing::Level::INFO {
            return;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if let Ok(mut lines) = self.0.lock() {
            lines.push(message.0);
        }
    }
}

/// A resume the client takes on trust (opaque ids, no acknowledgement) is
/// said at INFO; one the ids prove (the cursor's successor, under rmcp's
/// rules) says nothing.
#[tokio::test(start_paused = true)]
async fn only_a_resume_taken_on_trust_is_said_at_info() {
    use tracing_subscriber::layer::SubscriberExt;
    for (config, cursor, frames, said) in [
        (
            ResumeConfig::default(),
            "opaque-1",
            vec![progress("opaque-2", 1), response("opaque-3")],
            true,
        ),
        (
            ResumeConfig::default().with_id_rules(IdRules::Rmcp),
            "3/1",
            vec![progress("4/1", 1), response("5/1")],
            false,
        ),
    ] {
        let infos = Infos::default();
        let _default =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(infos.clone()));
        let (script, log) = Script::new(vec![Answer::Frames(frames)], || Answer::Hang);
        let stream = resuming_sse_stream(
            None,
            cut_after(cursor),
            script,
            StreamScope::Request,
            fixed(Some(3), 10),
            config,
        );
        let (delivered, error) = drain(stream).await;
        assert!(error.is_none(), "{error:?}");
        assert_eq!(
            delivered.len(),
            2,
            "{cursor}: the progress and the response"
        );
        assert_eq!(log.entries().len(), 1, "{cursor}: one resume");
        let lines = infos.0.lock().map(|l| l.clone()).unwrap_or_default();
        let expected: &[&str] = if said {
            &["resumed without proof of continuity"]
        } else {
            &[]
        };
        assert_eq!(lines, expected, "{cursor}");
    }
}

/// A discontinuity reads as one line an application can log: the stream,
/// the cursor (or `-`), the reason, and the lost events where known.
#[test]
fn a_discontinuity_reads_as_one_line() {
    use crate::resumption::{LostRange, RmcpEventId};
    let after = RmcpEventId {
        index: 3,
        stream: None,
    };
    let gap = Discontinuity {
        cursor: Some("3".to_owned()),
        reason: "a gap".to_owned(),
        lost: LostRange::between(after, 6),
        stream: StreamScope::Standalone,
    };
    assert_eq!(
        gap.to_string(),
        "standalone stream lost events after cursor 3: a gap (lost 4..=5 (2 events))"
    );
    let request = Discontinuity {
        cursor: None,
        lost: None,
        stream: StreamScope::Request,
        ..gap
    };
    assert_eq!(
        request.to_string(),
        "request stream lost events after cursor -: a gap"
    );
}

/// Each setter sets its own knob, and keeps the others set before it.
#[test]
fn each_setter_sets_its_knob_and_keeps_the_rest() {
    let s = Duration::from_secs;
    let idle = IdleTimeout::new(s(90), Some(s(15)), s(30)).expect("a valid idle timeout");
    let config = ResumeConfig::default()
        .with_unproven(crate::resumption::UnprovenPolicy::Strict)
        .with_max_failed_resumes(11)
        .with_max_transport_failures(12)
        .with_conflict_wait(s(13))
        .with_idle_timeout(idle)
        .on_discontinuity(|_| {})
        .with_id_rules(IdRules::Rmcp)
        .with_connect_timeout(s(14))
        .with_silent_resume_timeout(s(15))
        .with_resume_deadline(s(16))
        .with_max_delay(s(17))
        .with_answer_wait(s(18));
    assert_eq!(config.unproven, crate::resumption::UnprovenPolicy::Strict);
    assert_eq!(config.max_failed_resumes, 11);
    assert_eq!(config.max_transport_failures, 12);
    assert_eq!(config.conflict_wait, s(13));
    assert_eq!(config.idle_timeout(), Some(s(90)));
    assert!(config.on_discontinuity.is_some());
    assert_eq!(config.id_rules, IdRules::Rmcp);
    assert_eq!(config.connect_timeout, s(14));
    assert_eq!(config.silent_resume_timeout, s(15));
    assert_eq!(config.resume_deadline, s(16));
    assert_eq!(config.max_delay, s(17));
    assert_eq!(config.answer_wait, s(18));
}

/// A config's Debug names every knob with its value (the observer as
/// whether there is one), so that a logged config says what was in force.
#[test]
fn a_configs_debug_names_every_knob() {
    let debug = format!("{:?}", ResumeConfig::default());
    assert!(debug.starts_with("ResumeConfig {"), "{debug}");
    for knob in [
        "unproven: Lenient",
        "max_failed_resumes: 3",
        "max_transport_failures: 5",
        "conflict_wait: 120s",
        "idle_timeout: None",
        "on_discontinuity: false",
        "id_rules: WhenVouched",
        "connect_timeout: 30s",
        "silent_resume_timeout: 10s",
        "resume_deadline: 120s",
        "max_delay: 30s",
        "answer_wait: 10ms",
    ] {
        assert!(debug.contains(knob), "{knob} in {debug}");
    }
}

/// The kind a caller matches on, for each way a resume can fail (the table
/// in `ResumeFailureKind`'s docs), directly and as the last of exhausted
/// attempts; and the JSON-RPC code it travels under.
#[test]
fn each_failed_resume_has_its_documented_kind() {
    use crate::resumption::{EventCursor, LostRange, RmcpEventId};
    let cursor = EventCursor::parse("3/1").expect("an rmcp id");
    let later = EventCursor::parse("6/1").expect("an rmcp id");
    let lost = LostRange::between(RmcpEventId::on_request_stream(3, 1), 6).expect("4..=5");
    let status = http::StatusCode::BAD_REQUEST;
    let cases = [
        (
            ResumptionError::SessionRecreated {
                cursor: cursor.clone(),
            },
            ResumeFailureKind::SessionLost,
        ),
        (
            ResumptionError::EmptyStream {
                cursor: cursor.clone(),
            },
            ResumeFailureKind::Exhausted,
        ),
        (
            ResumptionError::Unproven {
                cursor: cursor.clone(),
            },
            ResumeFailureKind::Exhausted,
        ),
        (
            ResumptionError::NotHonoured {
                cursor: cursor.clone(),
                floor: None,
            },
            ResumeFailureKind::Refused,
        ),
        (
            ResumptionError::Status {
                cursor: cursor.clone(),
                status,
            },
            ResumeFailureKind::Refused,
        ),
        (
            ResumptionError::BelowFloor {
                cursor: cursor.clone(),
                floor: later.clone(),
                lost,
            },
            ResumeFailureKind::Lost,
        ),
        (
            ResumptionError::Discontinuous {
                cursor: cursor.clone(),
                got: later.clone(),
            },
            ResumeFailureKind::Lost,
        ),
    ];
    for (error, kind) in cases {
        let direct = ResumeFailure::of(&ResumeStreamError::<Status>::Resumption(error.clone()));
        assert_eq!(direct.kind, kind, "{error}");
        assert_eq!(direct.cursor.as_deref(), Some("3/1"), "{error}");
        let exhausted = ResumeFailure::of(&ResumeStreamError::<Status>::Exhausted {
            attempts: 4,
            cursor: Some("3/1".to_owned()),
            last: Box::new(Attempt::Resumption(error.clone())),
        });
        assert_eq!(exhausted.kind, kind, "exhausted after {error}");
        assert_eq!(exhausted.attempts, Some(4), "{error}");
    }
    // The code is the wire's: a peer's error with -32000 and the data reads
    // back; the code is not merely this crate's constant.
    assert_eq!(RESUME_FAILED_CODE, -32000);
    let data = ResumeFailure::not_resumable().to_data();
    assert_eq!(
        ResumeFailure::from_error(-32000, Some(&data)).map(|f| f.kind),
        Some(ResumeFailureKind::NotResumable)
    );
}

/// A vouched server's silent resume is a failure, so its wait is cut short
/// by the request's deadline: the request fails at the deadline, not after
/// a whole silence past it.
#[tokio::test(start_paused = true)]
async fn a_vouched_silence_is_cut_short_by_the_deadline() {
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![]));
    let config = ResumeConfig::default()
        .with_id_rules(IdRules::Rmcp)
        .with_silent_resume_timeout(Duration::from_secs(10))
        .with_resume_deadline(Duration::from_secs(5));
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(None, 1000),
        config,
    );
    let start = Instant::now();
    let (_, error) = drain(stream).await;
    // The deadline runs from the resume's start: its silence is waited on
    // for the deadline's 5 s, not the silence timeout's 10 s.
    assert!(
        matches!(error, Some(ResumeStreamError::Exhausted { .. })),
        "{error:?}"
    );
    assert_eq!(log.entries().len(), 1, "{:?}", log.entries());
    assert_eq!(start.elapsed(), Duration::from_secs(5));
}

/// A vouched server's silent resume is waited on for the silence timeout
/// alone, however many quiet connections came before it (that spacing is
/// for servers that never vouched, whose silence is a call at work).
#[tokio::test(start_paused = true)]
async fn a_vouched_silence_is_not_lengthened_by_a_quiet_run() {
    // Each resume is acknowledged and held 6 s, then breaks: a quiet run;
    // then a resume that says nothing.
    let held = || Answer::BreakAfter(vec![notice("1", None, true)], Duration::from_secs(6));
    let (script, log) = Script::new(vec![held(), held(), Answer::Stall(vec![])], || {
        Answer::Stall(vec![])
    });
    let config = ResumeConfig::default()
        .with_id_rules(IdRules::Rmcp)
        .with_silent_resume_timeout(Duration::from_secs(10));
    let stream = resuming_sse_stream(
        Some(opened(vec![list_changed("1")])),
        None,
        script,
        StreamScope::Standalone,
        fixed(None, 1000),
        config,
    );
    let (_, error) = read_for(stream, Duration::from_secs(60)).await;
    assert!(error.is_none(), "{error:?}");
    // Held 6 s twice; then 10 s of silence and the policy's 1 s.
    let gaps = log.gaps();
    assert_eq!(
        gaps.get(..3),
        Some(&[6, 6, 11].map(Duration::from_secs)[..]),
        "{gaps:?}"
    );
}

/// A resume whose only message is a copy of the cursor's event (upstream
/// replays it first) has been heard: the server attached it, and its
/// quiet after is a call at work, waited on, not a silent resume to
/// refresh.
#[tokio::test(start_paused = true)]
async fn a_resume_that_repeats_the_cursors_event_has_been_heard() {
    let (script, log) = Script::new(vec![Answer::Stall(vec![progress("3/1", 3)])], || {
        Answer::Stall(vec![])
    });
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default().with_silent_resume_timeout(Duration::from_secs(2)),
    );
    let (messages, error) = read_for(stream, Duration::from_secs(60)).await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        messages.is_empty(),
        "the copy is not delivered: {messages:?}"
    );
    assert_eq!(log.entries().len(), 1, "refreshed: {:?}", log.entries());
}
