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
