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
