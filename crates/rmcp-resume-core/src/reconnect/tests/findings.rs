//! Cases from the client review, each failing on the machine before its fix:
//! what conforming servers other than rmcp-resume's do (silence after a
//! strictly-after replay, `409` during cleanup), what proxies do (connection
//! lifetimes), and what a server may ask (`retry`, `Retry-After`).

use super::*;

#[tokio::test(start_paused = true)]
async fn an_unvouched_servers_silence_is_a_call_still_working() {
    // C1: the TypeScript and Python servers replay strictly after the cursor
    // and say nothing until there is something new. A 45 s quiet tool: four
    // silent resumes, then the progress and the response.
    let (script, log) = Script::new(
        vec![
            Answer::Stall(vec![]),
            Answer::Stall(vec![]),
            Answer::Stall(vec![]),
            Answer::Stall(vec![]),
            Answer::Frames(vec![progress("7f3a_2", 2), response("7f3a_3")]),
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
    let (messages, error) = tokio::time::timeout(Duration::from_secs(600), drain(stream))
        .await
        .unwrap_or_else(|_| panic!("hung"));
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["7f3a_2", "7f3a_3"]);
    assert_eq!(log.cursors(), vec![cut_after("7f3a_1"); 5]);
    // Each quiet refresh waits twice as long as the last (issue #42).
    let ten = ResumeConfig::DEFAULT_SILENT_RESUME_TIMEOUT;
    assert_eq!(log.gaps(), [ten, 2 * ten, 4 * ten, 8 * ten]);
}

#[tokio::test(start_paused = true)]
async fn an_idle_unvouched_standalone_stream_keeps_its_cursor() {
    // C1, standalone: an idle session against a server that never vouched
    // reports no discontinuity and never drops its cursor.
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("_GET_stream_9"),
        script,
        StreamScope::Standalone,
        fixed(Some(3), 1000),
        config,
    );
    let (_, error) = read_for(stream, Duration::from_secs(120)).await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        seen(&gaps).is_empty(),
        "false discontinuity: {:?}",
        seen(&gaps)
    );
    // Refreshed at 10 s, 30 s and 70 s: ever more rarely (issue #42).
    assert_eq!(log.entries().len(), 4, "refreshed: {:?}", log.entries());
    assert!(
        log.cursors()
            .iter()
            .all(|c| c.as_deref() == Some("_GET_stream_9"))
    );
}

#[tokio::test(start_paused = true)]
async fn an_acknowledged_resume_behind_connection_lifetimes_is_progress() {
    // M1: a quiet tool behind a load balancer that cuts every connection
    // after 60 s; the fork's server acknowledges every resume. The response
    // comes on the 8th resume, 8 minutes in: past the 2 min deadline and
    // every count, none of which a healthy call may reach.
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
    assert_eq!(
        log.gaps(),
        [Duration::from_secs(60); 7],
        "each break resumed at once"
    );
}

#[tokio::test(start_paused = true)]
async fn an_idle_standalone_stream_survives_ten_lifetime_cuts() {
    // M1: the fork's server acknowledges each resume of an idle standalone
    // stream; a 5-minute connection lifetime cuts it ten times.
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(vec![], || {
        Answer::BreakAfter(vec![notice("9", Some("1"), true)], Duration::from_secs(300))
    });
    let stream = resuming_sse_stream(
        None,
        cut_after("9"),
        script,
        StreamScope::Standalone,
        fixed(None, 1000),
        config,
    );
    let (_, error) = read_for(stream, Duration::from_secs(3_001)).await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        seen(&gaps).is_empty(),
        "false discontinuity: {:?}",
        seen(&gaps)
    );
    assert_eq!(log.entries().len(), 11);
    assert!(log.cursors().iter().all(|c| c.as_deref() == Some("9")));
}

#[tokio::test(start_paused = true)]
async fn a_servers_retry_is_honoured_up_to_the_cap() {
    // M2: a request primed with `retry: 86400000` and closed after progress
    // reconnects within `max_delay`, not a day later.
    let (script, log) = Script::new(vec![Answer::Frames(vec![response("2/1")])], || {
        Answer::Frames(vec![])
    });
    let first = opened(vec![priming("0/1", 86_400_000), progress("1/1", 1)]);
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 1000),
        ResumeConfig::default(),
    );
    let started = Instant::now();
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 2);
    assert_eq!(log.cursors(), [cut_after("1/1")]);
    assert_eq!(started.elapsed(), ResumeConfig::DEFAULT_MAX_DELAY);
}

#[tokio::test(start_paused = true)]
async fn a_conflict_is_transient() {
    // M3: the TypeScript SDK answers 409 while the cut connection of the
    // same stream is being cleaned up; the next attempt gets the response.
    let (script, log) = Script::new(
        vec![
            Answer::Status(409),
            Answer::Status(409),
            Answer::Frames(vec![response("7f3a_2")]),
        ],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        fixed(None, 100),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 1);
    assert_eq!(log.cursors(), vec![cut_after("7f3a_1"); 3]);
}

#[tokio::test(start_paused = true)]
async fn conflicts_are_bounded_by_time_not_by_the_transport_limit() {
    // Issue #42, finding 9: a `409` ends by time (the server finding the
    // old connection dead), so `max_transport_failures` does not count
    // it; the resume deadline (2 min, as the conflict wait) ends the call.
    let (script, log) = Script::new(vec![], || Answer::Status(409));
    let stream = resuming_sse_stream(
        None,
        cut_after("7f3a_1"),
        script,
        StreamScope::Request,
        fixed(None, 100),
        ResumeConfig::default(),
    );
    let (_, error) = drain(stream).await;
    assert!(
        matches!(error, Some(ResumeStreamError::Exhausted { .. })),
        "{error:?}"
    );
    // 0, 0, then 1, 3, 7, 15 s and every 10 s to 115 s, where the next
    // wait would pass the deadline: 16 of the formula's 18.
    assert_eq!(log.entries().len(), 16, "{:?}", log.gaps());
}

#[tokio::test(start_paused = true)]
async fn a_standalone_stream_keeps_its_cursor_when_the_server_is_unreachable() {
    // M4: five failures in transit say nothing about the cursor. Dropping it
    // would make upstream rmcp's server replay its whole cache (notifications
    // and server requests delivered twice).
    let (config, gaps) = recording(ResumeConfig::default());
    let mut answers: Vec<Answer> = (0..7).map(|_| Answer::Status(502)).collect();
    answers.push(Answer::Stall(vec![list_changed("13")]));
    let (script, log) = Script::new(answers, || Answer::Stall(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("12"),
        script,
        StreamScope::Standalone,
        fixed(None, 100),
        config,
    );
    let mut stream = std::pin::pin!(stream);
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(_))), "{first:?}");
    assert!(seen(&gaps).is_empty(), "{:?}", seen(&gaps));
    assert_eq!(log.cursors(), vec![cut_after("12"); 8]);
}

#[tokio::test(start_paused = true)]
async fn an_oversize_event_is_fatal_at_once() {
    // M5: re-downloading a 16 MiB event five times cannot make it fit.
    let (script, log) = Script::new(vec![], || Answer::Oversize(vec![]));
    let first = Answer::Oversize(vec![priming("0/1", 10)]);
    let Answer::Oversize(frames) = first else {
        unreachable!()
    };
    let first = futures::stream::iter(frames.into_iter().map(Ok))
        .chain(futures::stream::once(async {
            Err(sse_stream::Error::Body(Box::new(TooLarge)))
        }))
        .boxed();
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (_, error) = drain(stream).await;
    assert!(
        matches!(error, Some(ResumeStreamError::Malformed(_))),
        "{error:?}"
    );
    assert_eq!(
        ResumeFailure::of(error.as_ref().unwrap_or_else(|| unreachable!())).kind,
        ResumeFailureKind::Fatal
    );
    assert!(log.entries().is_empty(), "no resume: {:?}", log.entries());
}

#[tokio::test(start_paused = true)]
async fn input_the_sse_spec_ignores_is_resumed_past() {
    // m6: an unknown field stops rmcp's parser; the request resumes from its
    // cursor instead of failing.
    let (script, log) = Script::new(vec![Answer::Frames(vec![response("2/1")])], || {
        Answer::Frames(vec![])
    });
    let first = futures::stream::iter([
        Ok(priming("0/1", 10)),
        Ok(progress("1/1", 1)),
        Err(sse_stream::Error::InvalidLine),
    ])
    .boxed();
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
    assert_eq!(messages.len(), 2);
    assert_eq!(log.cursors(), [cut_after("1/1")]);
}

#[tokio::test(start_paused = true)]
async fn a_live_standalone_gap_keeps_the_connection() {
    // m1: 1, 2, 5, 6 on a vouched stream: every event is delivered, the gap
    // (3..4) is reported once, and the healthy connection is kept.
    let (config, gaps) = recording(ResumeConfig::default().with_id_rules(IdRules::Rmcp));
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![]));
    let first = futures::stream::iter(["1", "2", "5", "6"].map(|id| Ok(list_changed(id))))
        .chain(futures::stream::pending())
        .boxed();
    let stream = live_standalone(first, script, config);
    let (messages, error) = read_for(stream, Duration::from_secs(60)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["1", "2", "5", "6"]);
    let gaps = seen(&gaps);
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].lost.map(|l| l.len()), Some(2));
    assert!(
        log.entries().is_empty(),
        "no reconnect: {:?}",
        log.entries()
    );
}

#[tokio::test(start_paused = true)]
async fn nothing_after_the_response_can_fail_the_request() {
    // m2: a bad id after the response (while draining) is dropped; the
    // request gets exactly one message, its response.
    let (script, _) = Script::new(vec![], || Answer::Frames(vec![]));
    let first = opened(vec![
        priming("0/1", 10),
        response("1/1"),
        progress("5/1", 5),
    ]);
    let config = ResumeConfig::default().with_id_rules(IdRules::Rmcp);
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 10),
        config,
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["1/1"]);
}

#[tokio::test(start_paused = true)]
async fn a_notice_for_another_cursor_proves_nothing() {
    // m3: the client resumes from 5/1, the notice speaks of 3/1. Its events
    // are not a proven continuation; under the strict policy that fails.
    let (script, _) = Script::new(
        vec![Answer::Frames(vec![
            notice("3/1", Some("0/1"), true),
            progress("4/1", 4),
            progress("5/1", 5),
        ])],
        || Answer::Frames(vec![]),
    );
    let config = ResumeConfig::default().with_unproven(crate::resumption::UnprovenPolicy::Strict);
    let stream = resuming_sse_stream(
        None,
        cut_after("5/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        config,
    );
    let (messages, error) = drain(stream).await;
    assert!(messages.is_empty(), "delivered as proven: {messages:?}");
    assert!(
        matches!(
            error,
            Some(ResumeStreamError::Resumption(
                ResumptionError::Unproven { .. }
            ))
        ),
        "{error:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_busy_server_is_given_the_time_it_asks_for() {
    // m4: `503` with `Retry-After: 7` waits 7 s; `429` without one waits the
    // policy's delay; neither is retried at once.
    let (script, log) = Script::new(
        vec![
            Answer::Busy(503, Duration::from_secs(7)),
            Answer::Status(429),
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
        [Duration::from_secs(7), Duration::from_millis(500)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_opening_get_is_not_retried_at_once_twice() {
    // m4: the standalone stream's first GET failed before the machine ran;
    // its next attempt waits the policy's first delay.
    let (script, log) = Script::new(
        vec![Answer::Status(502), Answer::Stall(vec![list_changed("1")])],
        || Answer::Stall(vec![]),
    );
    let started = Instant::now();
    let stream = resuming_sse_stream(
        None,
        None,
        script,
        StreamScope::Standalone,
        fixed(None, 1000),
        ResumeConfig::default(),
    );
    let mut stream = std::pin::pin!(stream);
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(_))), "{first:?}");
    let at: Vec<Duration> = log.entries().into_iter().map(|(t, _)| t).collect();
    assert_eq!(at.len(), 2);
    assert_eq!(
        at[0],
        Duration::from_secs(1),
        "not at once after the opening failure"
    );
    assert!(at[1] >= at[0] + Duration::from_secs(1), "{at:?}");
    assert!(started.elapsed() >= Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn every_delay_is_capped() {
    // m5: an unbounded doubling policy against a standalone stream whose
    // server answers 502 for hours never waits more than `max_delay`.
    let (script, log) = Script::new(vec![], || Answer::Status(502));
    let stream = resuming_sse_stream(
        None,
        cut_after("3"),
        script,
        StreamScope::Standalone,
        backoff(None, 1000),
        ResumeConfig::default(),
    );
    let _ = read_for(stream, Duration::from_secs(2 * 3600)).await;
    let gaps = log.gaps();
    assert!(gaps.len() > 200, "{}", gaps.len());
    assert!(
        gaps.iter().all(|g| *g <= ResumeConfig::DEFAULT_MAX_DELAY),
        "{gaps:?}"
    );
    assert!(log.cursors().iter().all(|c| c.as_deref() == Some("3")));
}

#[tokio::test(start_paused = true)]
async fn a_fallback_keeps_the_id_before_the_floor_as_its_cursor() {
    // m8: the server fell back to a fresh stream from its floor (7); a break
    // before the first fallback event resumes from 6, not from nothing.
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(
        vec![
            Answer::Break(vec![notice("2", Some("7"), false)]),
            Answer::Stall(vec![notice("6", Some("7"), true), list_changed("7")]),
        ],
        || Answer::Stall(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("2"),
        script,
        StreamScope::Standalone,
        fixed(None, 10),
        config,
    );
    let mut stream = std::pin::pin!(stream);
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(_))), "{first:?}");
    assert_eq!(log.cursors(), [cut_after("2"), cut_after("6")]);
    assert_eq!(seen(&gaps).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn notifications_lost_before_a_response_are_reported() {
    // m8: the response arrives after a gap; the caller gets it, and the
    // application hears of the loss.
    let (config, gaps) = recording(ResumeConfig::default().with_id_rules(IdRules::Rmcp));
    let (script, _) = Script::new(vec![], || Answer::Frames(vec![]));
    let first = opened(vec![
        priming("0/1", 10),
        progress("1/1", 1),
        response("4/1"),
    ]);
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 10),
        config,
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["1/1", "4/1"]);
    let gaps = seen(&gaps);
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].stream, StreamScope::Request);
    assert_eq!(gaps[0].lost.map(|l| l.len()), Some(2));
}

#[tokio::test(start_paused = true)]
async fn an_acknowledgement_broken_at_once_is_still_bounded() {
    // The other side of M1: a path that kills every connection right after
    // the server's notice. An acknowledgement alone is not progress, so the
    // request ends within the transport limit instead of looping at once;
    // and a connection that lived no second and brought nothing new is not
    // followed at once, not even the first (issue #42).
    let (script, log) = Script::new(vec![], || {
        Answer::Break(vec![notice("4/1", Some("0/1"), true)])
    });
    let stream = resuming_sse_stream(
        None,
        cut_after("4/1"),
        script,
        StreamScope::Request,
        fixed(None, 100),
        ResumeConfig::default(),
    );
    let (_, error) = drain(stream).await;
    assert!(
        matches!(
            error,
            Some(ResumeStreamError::Exhausted { attempts: 5, .. })
        ),
        "{error:?}"
    );
    assert_eq!(log.entries().len(), 5);
    let policy = Duration::from_millis(100);
    assert_eq!(log.gaps(), [Duration::from_secs(1), policy, policy, policy]);
}

#[tokio::test(start_paused = true)]
async fn a_first_event_numbered_like_its_priming_frame_is_delivered() {
    // Upstream rmcp's standalone stream primes with `0` and numbers its first
    // event `0`; the event is new, on the stream and on a resume from `0`.
    let (script, log) = Script::new(
        vec![Answer::Stall(vec![list_changed("0"), list_changed("1")])],
        || Answer::Stall(vec![]),
    );
    let first = opened(vec![priming("0", 3000)]);
    let stream = live_standalone(first, script, ResumeConfig::default());
    let (messages, error) = read_for(stream, Duration::from_secs(5)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["0", "1"]);
    assert_eq!(log.cursors(), [cut_after("0")]);

    let (script, _) = Script::new(vec![], || Answer::Stall(vec![]));
    let first = futures::stream::iter(
        [
            priming("0", 3000),
            list_changed("0"),
            list_changed("0"),
            list_changed("1"),
        ]
        .map(Ok),
    )
    .chain(futures::stream::pending())
    .boxed();
    let stream = live_standalone(first, script, ResumeConfig::default());
    let (messages, _) = read_for(stream, Duration::from_secs(5)).await;
    assert_eq!(
        ids(&messages),
        ["0", "1"],
        "a delivered message's exact repeat is still a copy"
    );
}

#[tokio::test(start_paused = true)]
async fn a_primed_resume_that_stays_quiet_is_refreshed_from_the_last_message() {
    // The Python SDK's server primes a resume, then attaches it to the live
    // stream; what the tool sent in between is in its store but never on
    // this connection. The refresh asks again from the last message, not
    // from the priming frame, and the replay carries the response.
    let (script, log) = Script::new(
        vec![
            Answer::Stall(vec![priming("s:9", 200)]),
            Answer::Frames(vec![response("s:8")]),
        ],
        || Answer::Stall(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("s:5"),
        script,
        StreamScope::Request,
        fixed(None, 1000),
        ResumeConfig::default(),
    );
    let (messages, error) = tokio::time::timeout(Duration::from_secs(600), drain(stream))
        .await
        .unwrap_or_else(|_| panic!("hung on a primed, quiet resume"));
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["s:8"]);
    assert_eq!(log.cursors(), [cut_after("s:5"), cut_after("s:5")]);
}

/// A standalone notification on upstream rmcp 1.8's server, as the peer
/// matrix's standalone notifications found it: the stream primes with id
/// `0`, numbers its first event `0` too, and a resume replays from the
/// cursor's own event. The copy of the last event delivered is dropped,
/// whatever the priming did to the first id.
fn tick(id: &str, n: u32) -> Sse {
    message(
        id,
        &format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{{"uri":"tick://{n}"}}}}"#
        ),
    )
}

#[tokio::test(start_paused = true)]
async fn a_standalone_replay_from_the_cursors_own_event_delivers_no_copy() {
    let (script, log) = Script::new(
        vec![
            Answer::Break(vec![priming("0", 3000), tick("0", 1), tick("1", 2)]),
            Answer::Frames(vec![tick("1", 2), tick("2", 3)]),
        ],
        || Answer::Stall(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        None,
        script,
        StreamScope::Standalone,
        fixed(Some(3), 1000),
        ResumeConfig::default(),
    );
    let (messages, error) = read_for(stream, Duration::from_secs(30)).await;
    assert!(error.is_none(), "{error:?}");
    let ticks: Vec<&str> = messages.iter().filter_map(|m| m.data.as_deref()).collect();
    assert_eq!(
        ticks.len(),
        3,
        "ticks delivered: {ticks:#?}; cursors sent: {:?}",
        log.cursors()
    );
}
