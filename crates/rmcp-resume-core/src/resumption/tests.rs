//! Table-driven tests, one per decision branch, and property tests.

use std::time::Duration;

use http::StatusCode;
use proptest::prelude::*;

use super::*;

fn c(s: &str) -> EventCursor {
    match EventCursor::parse(s) {
        Ok(c) => c,
        Err(e) => panic!("test cursor {s:?}: {e}"),
    }
}

fn ok(status: u16) -> ReconnectOutcome {
    ReconnectOutcome::new(StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT))
}

struct Case {
    name: &'static str,
    cursor: &'static str,
    outcome: ReconnectOutcome,
    policy: UnprovenPolicy,
}

fn case(name: &'static str, cursor: &'static str, outcome: ReconnectOutcome) -> Case {
    Case {
        name,
        cursor,
        outcome,
        policy: UnprovenPolicy::Strict,
    }
}

fn run(cases: Vec<Case>, check: impl Fn(&Case, Verdict)) {
    for case in &cases {
        check(case, decide(&c(case.cursor), &case.outcome, case.policy));
    }
}

// ---- cursors -------------------------------------------------------------

#[test]
fn rmcp_ids_parse_and_round_trip() {
    for (input, index, stream) in [
        ("0", 0, None),
        ("41", 41, None),
        ("3/7", 3, Some(7)),
        ("0/0", 0, Some(0)),
        (
            "18446744073709551615/18446744073709551615",
            u64::MAX,
            Some(u64::MAX),
        ),
    ] {
        let id: RmcpEventId = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!((id.index, id.stream), (index, stream), "{input}");
        assert_eq!(id.to_string(), input);
        assert_eq!(c(input), EventCursor::Rmcp(id));
    }
}

#[test]
fn malformed_rmcp_ids_are_rejected_with_a_reason() {
    use CursorParseError as E;
    let long = "9".repeat(MAX_CURSOR_LEN + 1);
    type Expect = fn(&E) -> bool;
    let cases: Vec<(&str, Expect)> = vec![
        ("", |e| matches!(e, E::Empty)),
        ("abc", |e| matches!(e, E::NotDecimal { .. })),
        ("1/x", |e| matches!(e, E::NotDecimal { .. })),
        ("-1", |e| matches!(e, E::NotDecimal { .. })),
        ("+1", |e| matches!(e, E::NotDecimal { .. })),
        (" 1", |e| matches!(e, E::NotDecimal { .. })),
        ("1/", |e| matches!(e, E::NotDecimal { .. })),
        ("/1", |e| matches!(e, E::NotDecimal { .. })),
        ("1/2/3", |e| matches!(e, E::ExtraSlash { .. })),
        ("1//2", |e| matches!(e, E::NotDecimal { .. })),
        ("18446744073709551616", |e| matches!(e, E::Overflow { .. })),
        ("1/18446744073709551616", |e| {
            matches!(e, E::Overflow { .. })
        }),
        ("007", |e| matches!(e, E::NonCanonical { .. })),
        ("1\n2", |e| matches!(e, E::ControlCharacter { at: 1 })),
        (&long, |e| matches!(e, E::TooLong { .. })),
    ];
    for (input, expected) in cases {
        let err = input
            .parse::<RmcpEventId>()
            .expect_err("malformed id accepted");
        assert!(expected(&err), "{input:?} gave {err:?}");
    }
}

#[test]
fn digit_and_slash_ids_never_fall_back_to_opaque() {
    for input in ["1/2/3", "007", "1//2", "99999999999999999999"] {
        assert!(EventCursor::parse(input).is_err(), "{input:?} was accepted");
    }
}

#[test]
fn opaque_ids_from_other_servers_are_accepted() {
    for input in [
        "c0ffee_17",
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "stream-1_1732870000_ab12",
        "évènement",
    ] {
        let cursor = c(input);
        assert!(matches!(cursor, EventCursor::Opaque(_)), "{input}");
        assert_eq!(cursor.to_string(), input);
        assert_eq!(cursor.successor(), None, "opaque ids have no successor");
    }
}

#[test]
fn header_bytes_reject_non_utf8_and_oversize() {
    assert_eq!(
        EventCursor::from_bytes(&[0xff, 0x31]),
        Err(CursorParseError::NotUtf8)
    );
    let mib = vec![b'1'; 1 << 20];
    assert!(matches!(
        EventCursor::from_bytes(&mib),
        Err(CursorParseError::TooLong { len, .. }) if len == 1 << 20
    ));
    assert_eq!(
        EventCursor::from_bytes(b"5/2"),
        Ok(RmcpEventId::on_request_stream(5, 2).into())
    );
}

#[test]
fn successor_is_defined_for_rmcp_ids_only_and_never_overflows() {
    assert_eq!(c("4").successor(), Some(c("5")));
    assert_eq!(c("4/9").successor(), Some(c("5/9")));
    assert_eq!(RmcpEventId::standalone(u64::MAX).successor(), None);
}

// ---- decisions, one test per branch ----------------------------------------

#[test]
fn session_lost_on_404_or_410() {
    run(
        vec![case("404", "3/1", ok(404)), case("410", "3", ok(410))],
        |case, v| match v {
            Verdict::SessionLost(lost) => {
                assert_eq!(lost.status, case.outcome.status);
                assert!(lost.to_string().contains(case.cursor), "{lost}");
            }
            other => panic!("{}: {other:?}", case.name),
        },
    );
}

#[test]
fn non_200_status_fails_with_the_status_kept() {
    let statuses = [400u16, 409, 204, 500, 502, 503, 429];
    run(
        statuses
            .iter()
            .map(|s| case("status", "3/1", ok(*s).with_first_event(c("4/1"))))
            .collect(),
        |case, v| match v {
            Verdict::ResumptionFailed(ResumptionError::Status { status, .. }) => {
                assert_eq!(status, case.outcome.status)
            }
            other => panic!("{}: {other:?}", case.name),
        },
    );
}

#[test]
fn below_floor_fails_naming_the_lost_ids() {
    run(
        vec![
            // The design note's incident: cursor 41, floor 130.
            case(
                "standalone",
                "41",
                ok(200).with_floor(c("130")).with_first_event(c("130")),
            ),
            case("request stream", "41/7", ok(200).with_floor(c("130/7"))),
            case("one lost", "0/2", ok(200).with_floor(c("2/2")).closed()),
            // The floor outranks an acknowledgement that contradicts it.
            case(
                "ack contradicted",
                "41",
                ok(200)
                    .with_floor(c("130"))
                    .with_acknowledgement(Acknowledgement::Honoured),
            ),
        ],
        |case, v| match v {
            Verdict::ResumptionFailed(err @ ResumptionError::BelowFloor { .. }) => {
                let lost = err
                    .lost()
                    .unwrap_or_else(|| panic!("{}: no range", case.name));
                let cursor = c(case.cursor).as_rmcp().unwrap_or_else(|| panic!("rmcp"));
                assert_eq!(lost.first.index, cursor.index + 1, "{}", case.name);
                let floor = case.outcome.floor.as_ref().and_then(EventCursor::as_rmcp);
                assert_eq!(Some(lost.last.index + 1), floor.map(|f| f.index));
                let msg = err.to_string();
                assert!(msg.contains(case.cursor) && msg.contains("lost"), "{msg}");
            }
            other => panic!("{}: {other:?}", case.name),
        },
    );
    let v = decide(
        &c("41"),
        &ok(200).with_floor(c("130")),
        UnprovenPolicy::Lenient,
    );
    assert_eq!(
        v.to_string(),
        "resumption failed: cursor 41 is below the replay floor 130: events 42..=129 (88 events) are lost"
    );
}

#[test]
fn floor_at_or_below_the_successor_covers_the_cursor() {
    for floor in ["0", "40", "41", "42"] {
        let v = decide(
            &c("41"),
            &ok(200).with_floor(c(floor)),
            UnprovenPolicy::Strict,
        );
        assert_eq!(v, Verdict::Delayed, "floor {floor}");
        let v = decide(
            &c("41"),
            &ok(200).with_floor(c(floor)).with_first_event(c("42")),
            UnprovenPolicy::Strict,
        );
        assert_eq!(v, Verdict::Resumed(Proof::Successor), "floor {floor}");
    }
}

#[test]
fn floor_for_another_stream_proves_nothing() {
    let v = decide(
        &c("41/7"),
        &ok(200).with_floor(c("100/8")),
        UnprovenPolicy::Strict,
    );
    assert!(
        matches!(
            v,
            Verdict::ResumptionFailed(ResumptionError::Unproven { .. })
        ),
        "{v:?}"
    );
}

#[test]
fn not_honoured_fails_with_the_floor() {
    run(
        vec![
            case(
                "fallback with floor",
                "5",
                ok(200)
                    .with_floor(c("3"))
                    .with_acknowledgement(Acknowledgement::NotHonoured)
                    .with_first_event(c("6")),
            ),
            case(
                "opaque",
                "abc_1",
                ok(200).with_acknowledgement(Acknowledgement::NotHonoured),
            ),
        ],
        |case, v| match v {
            Verdict::ResumptionFailed(ResumptionError::NotHonoured { floor, .. }) => {
                assert_eq!(floor, case.outcome.floor, "{}", case.name)
            }
            other => panic!("{}: {other:?}", case.name),
        },
    );
}

#[test]
fn session_recreated_fails() {
    let v = decide(
        &c("12"),
        &ok(200)
            .with_session(SessionContinuity::Recreated)
            .with_first_event(c("13")),
        UnprovenPolicy::Lenient,
    );
    assert!(
        matches!(
            v,
            Verdict::ResumptionFailed(ResumptionError::SessionRecreated { .. })
        ),
        "{v:?}"
    );
}

#[test]
fn empty_stream_fails_and_is_never_success() {
    run(
        vec![
            case("bare", "5/3", ok(200).closed()),
            case("floor covers", "5/3", ok(200).with_floor(c("2/3")).closed()),
            Case {
                policy: UnprovenPolicy::Lenient,
                ..case("lenient", "5/3", ok(200).closed())
            },
            Case {
                policy: UnprovenPolicy::Lenient,
                ..case("opaque", "abc_5", ok(200).closed())
            },
        ],
        |case, v| {
            assert!(
                matches!(
                    v,
                    Verdict::ResumptionFailed(ResumptionError::EmptyStream { .. })
                ),
                "{}: {v:?}",
                case.name
            )
        },
    );
}

#[test]
fn empty_close_acknowledged_is_delayed() {
    // SEP-1699 polling: the server proves it has nothing newer yet.
    let v = decide(
        &c("abc_5"),
        &ok(200)
            .with_acknowledgement(Acknowledgement::Honoured)
            .closed(),
        UnprovenPolicy::Strict,
    );
    assert_eq!(v, Verdict::Delayed);
}

#[test]
fn open_without_events_is_delayed_when_proven() {
    run(
        vec![
            case("floor covers", "5", ok(200).with_floor(c("6"))),
            case(
                "acknowledged",
                "x_5",
                ok(200).with_acknowledgement(Acknowledgement::Honoured),
            ),
        ],
        |case, v| assert_eq!(v, Verdict::Delayed, "{}", case.name),
    );
}

#[test]
fn open_without_events_unproven_follows_the_policy() {
    for cursor in ["5/1", "x_5"] {
        let strict = decide(&c(cursor), &ok(200), UnprovenPolicy::Strict);
        assert!(
            matches!(
                strict,
                Verdict::ResumptionFailed(ResumptionError::Unproven { .. })
            ),
            "{cursor}: {strict:?}"
        );
        assert_eq!(
            decide(&c(cursor), &ok(200), UnprovenPolicy::Lenient),
            Verdict::Delayed
        );
    }
}

#[test]
fn successor_resumes() {
    for (cursor, first) in [("0", "1"), ("41", "42"), ("3/9", "4/9")] {
        let v = decide(
            &c(cursor),
            &ok(200).with_first_event(c(first)),
            UnprovenPolicy::Strict,
        );
        assert_eq!(v, Verdict::Resumed(Proof::Successor), "{cursor} -> {first}");
    }
}

#[test]
fn gap_fails_naming_the_lost_ids() {
    run(
        vec![
            case("standalone", "41", ok(200).with_first_event(c("130"))),
            case("request", "2/3", ok(200).with_first_event(c("4/3"))),
            // A server's acknowledgement does not excuse a visible jump.
            case(
                "acknowledged",
                "2/3",
                ok(200)
                    .with_acknowledgement(Acknowledgement::Honoured)
                    .with_first_event(c("9/3")),
            ),
        ],
        |case, v| match v {
            Verdict::ResumptionFailed(ResumptionError::Gap {
                expected,
                got,
                lost,
                ..
            }) => {
                assert_eq!(Some(expected), c(case.cursor).successor(), "{}", case.name);
                assert_eq!(Some(&got), case.outcome.first_event.as_ref());
                assert_eq!(
                    lost.first.index,
                    c(case.cursor).as_rmcp().map_or(0, |r| r.index + 1)
                );
                assert_eq!(Some(lost.last.index + 1), got.as_rmcp().map(|g| g.index));
            }
            other => panic!("{}: {other:?}", case.name),
        },
    );
}

#[test]
fn discontinuous_first_event_fails() {
    run(
        vec![
            case("other stream", "4/3", ok(200).with_first_event(c("5/4"))),
            case(
                "standalone vs request",
                "4",
                ok(200).with_first_event(c("5/4")),
            ),
            case("rewind", "4/3", ok(200).with_first_event(c("1/3"))),
        ],
        |case, v| {
            assert!(
                matches!(
                    v,
                    Verdict::ResumptionFailed(ResumptionError::Discontinuous { .. })
                ),
                "{}: {v:?}",
                case.name
            )
        },
    );
}

#[test]
fn opaque_ids_follow_acknowledgement_then_policy() {
    let first = ok(200).with_first_event(c("abc_2"));
    assert_eq!(
        decide(
            &c("abc_1"),
            &first
                .clone()
                .with_acknowledgement(Acknowledgement::Honoured),
            UnprovenPolicy::Strict
        ),
        Verdict::Resumed(Proof::Acknowledged)
    );
    assert_eq!(
        decide(&c("abc_1"), &first, UnprovenPolicy::Lenient),
        Verdict::Resumed(Proof::Assumed)
    );
    assert!(matches!(
        decide(&c("abc_1"), &first, UnprovenPolicy::Strict),
        Verdict::ResumptionFailed(ResumptionError::Unproven { .. })
    ));
}

#[test]
fn resent_cursor_is_skipped_as_duplicate_not_a_gap() {
    // Upstream rmcp 3.11.0 replays the cursor event itself first.
    let cursor = c("10/2");
    let mut resume = ResumeVerifier::new(cursor.clone(), StatusCode::OK, UnprovenPolicy::Strict);
    assert_eq!(resume.on_event(Some(&cursor)), EventAction::SkipDuplicate);
    assert!(matches!(
        resume.verdict(),
        Verdict::ResumptionFailed(ResumptionError::Unproven { .. })
    ));
    assert_eq!(resume.on_event(Some(&c("11/2"))), EventAction::Deliver);
    assert_eq!(resume.verdict(), Verdict::Resumed(Proof::Successor));
    assert_eq!(resume.duplicates(), 1);

    // A dropped duplicate followed by the end of the stream is still empty.
    let mut resume = ResumeVerifier::new(cursor.clone(), StatusCode::OK, UnprovenPolicy::Lenient);
    assert_eq!(resume.on_event(Some(&cursor)), EventAction::SkipDuplicate);
    resume.on_close();
    assert!(matches!(
        resume.verdict(),
        Verdict::ResumptionFailed(ResumptionError::EmptyStream { .. })
    ));
}

#[test]
fn verifier_applies_notice_floor_and_events_in_order() {
    let notice = ReplayNotice::from_json(r#"{"cursor":"3","floor":"2","complete":true}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut resume = ResumeVerifier::new(
        notice.cursor.clone(),
        StatusCode::OK,
        UnprovenPolicy::Strict,
    );
    if let Some(floor) = notice.floor.clone() {
        resume.declare_floor(floor);
    }
    resume.acknowledge(notice.acknowledgement());
    assert_eq!(resume.verdict(), Verdict::Delayed);
    assert_eq!(
        resume.on_event(None),
        EventAction::Deliver,
        "id-less events decide nothing"
    );
    assert_eq!(resume.verdict(), Verdict::Delayed);
    resume.on_event(Some(&c("4")));
    assert_eq!(resume.verdict(), Verdict::Resumed(Proof::Successor));
    let mut rest = resume.into_checker();
    assert_eq!(rest.observe(&c("5")), Ok(Continuity::Next));
}

// ---- streaming continuity ----------------------------------------------------

#[test]
fn checker_flags_duplicates_and_reports_jumps_with_the_missing_range() {
    let mut check = ContinuityChecker::new(c("3/1"));
    assert_eq!(check.observe(&c("4/1")), Ok(Continuity::Next));
    assert_eq!(check.observe(&c("4/1")), Ok(Continuity::Duplicate));
    // Only an exact repeat is a duplicate; an earlier id is a rewind.
    assert!(matches!(
        check.observe(&c("2/1")),
        Err(ContinuityError::Rewind { .. })
    ));
    let err = check.observe(&c("9/1")).expect_err("jump accepted");
    assert_eq!(
        err.to_string(),
        "gap after event 4/1: got 9/1; events 5/1..=8/1 (4 events) are missing"
    );
    assert_eq!(
        check.last(),
        &c("4/1"),
        "an error leaves the checker unchanged"
    );
    assert!(matches!(
        check.observe(&c("5/2")),
        Err(ContinuityError::Unrelated { .. })
    ));
    assert!(matches!(
        check.observe(&c("x_5")),
        Err(ContinuityError::Unrelated { .. })
    ));
}

#[test]
fn checker_on_opaque_ids_flags_only_exact_repeats() {
    let mut check = ContinuityChecker::new(c("a_1"));
    assert_eq!(check.observe(&c("a_1")), Ok(Continuity::Duplicate));
    assert_eq!(check.observe(&c("a_7")), Ok(Continuity::Unchecked));
    assert_eq!(check.last(), &c("a_7"));
}

// ---- idle timeout --------------------------------------------------------------

#[test]
fn idle_timeout_must_exceed_keep_alive_plus_stall() {
    let s = Duration::from_secs;
    assert_eq!(
        IdleTimeout::new(s(31), Some(s(15)), s(15)).map(IdleTimeout::get),
        Ok(s(31))
    );
    let err = IdleTimeout::new(s(30), Some(s(15)), s(15)).expect_err("equal is not enough");
    assert_eq!(
        err.to_string(),
        "idle timeout 30s must exceed the keep-alive interval 15s plus the allowed write stall 15s"
    );
    assert!(matches!(
        IdleTimeout::new(s(90), None, s(1)),
        Err(IdleTimeoutError::NoKeepAlive { .. })
    ));
    assert!(IdleTimeout::new(Duration::MAX, Some(Duration::MAX), s(1)).is_err());
}

// ---- notice wire format ----------------------------------------------------------

#[test]
fn notice_round_trips_and_rejects_bad_ids() {
    let notice = ReplayNotice {
        cursor: c("7/3"),
        floor: None,
        complete: false,
        next: None,
    };
    let json = notice.to_json();
    assert_eq!(json, r#"{"cursor":"7/3","floor":null,"complete":false}"#);
    assert_eq!(ReplayNotice::from_json(&json).ok(), Some(notice.clone()));
    assert_eq!(notice.acknowledgement(), Acknowledgement::NotHonoured);
    assert!(matches!(
        ReplayNotice::from_json(r#"{"cursor":"1/2/3","floor":null,"complete":true}"#),
        Err(NoticeError::Cursor(CursorParseError::ExtraSlash { .. }))
    ));
    assert!(matches!(
        ReplayNotice::from_json("not json"),
        Err(NoticeError::Json(_))
    ));
}

/// A shared log's new segment (issue 44, review 3, finding 2): the jump is
/// named by the notice, only a complete notice names it, and the verdict
/// accepts exactly the named event after an acknowledgement.
#[test]
fn a_named_jump_to_a_new_segment_is_a_resume_and_nothing_else_is() {
    let cursor = RmcpEventId::standalone(2);
    let answer = ResumeAnswer::Replay {
        from: 1_796_000_000_000_000,
        floor: 1,
    };
    let notice = answer.notice(cursor).expect("a notice");
    assert_eq!(notice.next, Some(c("1796000000000000")));
    let json = notice.to_json();
    assert_eq!(
        json,
        r#"{"cursor":"2","floor":"1","complete":true,"next":"1796000000000000"}"#
    );
    assert_eq!(ReplayNotice::from_json(&json).ok(), Some(notice.clone()));
    // An ordinary replay's notice is what it always was.
    let plain = ResumeAnswer::Replay { from: 3, floor: 1 }.notice(cursor);
    assert_eq!(plain.as_ref().and_then(|n| n.next.clone()), None);
    assert_eq!(
        plain.map(|n| n.to_json()).as_deref(),
        Some(r#"{"cursor":"2","floor":"1","complete":true}"#)
    );
    let fallback = ResumeAnswer::Fallback { from: 9, floor: 9 }.notice(cursor);
    assert_eq!(fallback.and_then(|n| n.next), None);

    let acked = ok(200)
        .with_acknowledgement(Acknowledgement::Honoured)
        .with_floor(c("1"));
    let named = acked.clone().with_next(c("1796000000000000"));
    let decide_first = |outcome: &ReconnectOutcome, first: &str| {
        decide(
            &c("2"),
            &outcome.clone().with_first_event(c(first)),
            UnprovenPolicy::Strict,
        )
    };
    assert_eq!(
        decide_first(&named, "1796000000000000"),
        Verdict::Resumed(Proof::Acknowledged)
    );
    // Any other jump is still a gap: unnamed, or not the named event.
    for (outcome, first) in [
        (&acked, "1796000000000000"),
        (&named, "1796000000000001"),
        (&named, "5"),
    ] {
        assert!(
            matches!(
                decide_first(outcome, first),
                Verdict::ResumptionFailed(ResumptionError::Gap { .. })
            ),
            "{first}"
        );
    }
    // A name without an acknowledgement proves nothing.
    let unacked = ok(200).with_next(c("1796000000000000"));
    assert!(matches!(
        decide_first(&unacked, "1796000000000000"),
        Verdict::ResumptionFailed(ResumptionError::Gap { .. })
    ));
    // The successor is still the successor.
    assert_eq!(
        decide_first(&named, "3"),
        Verdict::Resumed(Proof::Successor)
    );
}

// ---- properties ----------------------------------------------------------------

#[test]
fn encode_at_the_edges_of_each_digit_count() {
    for n in [
        0,
        9,
        10,
        99,
        100,
        10u64.pow(19) - 1,
        10u64.pow(19),
        u64::MAX,
    ] {
        for id in [
            RmcpEventId::standalone(n),
            RmcpEventId::on_request_stream(n, n),
            RmcpEventId::on_request_stream(1, n),
        ] {
            assert_eq!(id.encode(), id.to_string());
        }
    }
}

proptest! {
    #![proptest_config(crate::proptest_config::fixed(512, 0x2026_0630))]

    #[test]
    fn parsing_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = EventCursor::from_bytes(&bytes);
        if let Ok(s) = std::str::from_utf8(&bytes) {
            let _ = s.parse::<RmcpEventId>();
            let _ = ReplayNotice::from_json(s);
        }
    }

    #[test]
    fn parsing_never_panics_on_id_like_strings(s in "[0-9/]{0,48}|[ -~]{0,64}") {
        if let Ok(cursor) = EventCursor::parse(&s) {
            prop_assert_eq!(cursor.to_string(), s);
        }
    }

    #[test]
    fn rmcp_ids_round_trip(index in any::<u64>(), stream in proptest::option::of(any::<u64>())) {
        let id = RmcpEventId { index, stream };
        prop_assert_eq!(id.to_string().parse::<RmcpEventId>(), Ok(id));
    }

    /// The server's fast encoding is `Display`'s text, digit for digit,
    /// across every magnitude (small values are drawn far more often).
    #[test]
    fn encode_writes_what_display_writes(
        index in prop_oneof![0u64..100, any::<u64>()],
        stream in proptest::option::of(prop_oneof![0u64..100, any::<u64>()]),
    ) {
        let id = RmcpEventId { index, stream };
        prop_assert_eq!(id.encode(), id.to_string());
    }

    /// A delta of 0 is a repeat, below 0 a rewind, 1 the successor, more a gap.
    #[test]
    fn checker_accepts_exactly_the_gap_free_sequences(
        start in 0u64..1_000,
        stream in proptest::option::of(0u64..8),
        deltas in proptest::collection::vec(-3i64..=3, 1..64),
    ) {
        let mut check = ContinuityChecker::new(RmcpEventId { index: start, stream }.into());
        let mut high = start;
        for delta in deltas {
            let index = high.saturating_add_signed(delta);
            let id = EventCursor::from(RmcpEventId { index, stream });
            let got = check.observe(&id);
            if index > high + 1 {
                let is_gap = matches!(
                    &got,
                    Err(ContinuityError::Gap { lost, .. })
                        if lost.first.index == high + 1 && lost.last.index == index - 1
                );
                prop_assert!(is_gap, "gap {high} -> {index} gave {got:?}");
                return Ok(());
            }
            if index == high + 1 {
                prop_assert_eq!(got, Ok(Continuity::Next));
                high = index;
            } else if index == high {
                prop_assert_eq!(got, Ok(Continuity::Duplicate));
            } else {
                prop_assert!(matches!(got, Err(ContinuityError::Rewind { .. })), "{high} -> {index}: {got:?}");
                return Ok(());
            }
        }
    }

    /// A server replays the retained events after the cursor, from its floor;
    /// upstream also re-sends the cursor itself. Whatever the cut points,
    /// `Resumed` is given exactly when the cursor is inside the window.
    #[test]
    fn verifier_resumes_exactly_when_the_window_covers_the_cursor(
        cursor in 0u64..200,
        floor in 0u64..200,
        resend_cursor in any::<bool>(),
        declare_floor in any::<bool>(),
        stream in proptest::option::of(0u64..4),
    ) {
        let at = |index| EventCursor::from(RmcpEventId { index, stream });
        let mut resume = ResumeVerifier::new(at(cursor), StatusCode::OK, UnprovenPolicy::Strict);
        if declare_floor {
            resume.declare_floor(at(floor));
        }
        if resend_cursor && cursor >= floor {
            prop_assert_eq!(resume.on_event(Some(&at(cursor))), EventAction::SkipDuplicate);
        }
        // The first event the server has after the cursor.
        let first = (cursor + 1).max(floor);
        prop_assert_eq!(resume.on_event(Some(&at(first))), EventAction::Deliver);
        let covered = cursor + 1 >= floor;
        match resume.verdict() {
            Verdict::Resumed(Proof::Successor) => prop_assert!(covered),
            Verdict::ResumptionFailed(err) => {
                prop_assert!(!covered, "{}", err);
                let lost = err.lost();
                prop_assert_eq!(lost.map(|l| (l.first.index, l.last.index)), Some((cursor + 1, floor - 1)));
            }
            other => prop_assert!(false, "unexpected {:?}", other),
        }
    }
}

/// What the verifier is told shows in its outcome and so in its verdict:
/// the declared floor, the acknowledgement, a re-created session.
#[test]
fn verifier_records_what_it_is_told() {
    let cursor = c("3");
    let policy = UnprovenPolicy::Strict;
    let mut resume = ResumeVerifier::new(cursor.clone(), StatusCode::OK, policy);
    assert_eq!(resume.outcome(), &ok(200));
    resume.declare_floor(c("2"));
    assert_eq!(resume.outcome().floor, Some(c("2")));
    resume.acknowledge(Acknowledgement::NotHonoured);
    assert_eq!(
        resume.outcome().acknowledgement,
        Some(Acknowledgement::NotHonoured)
    );
    assert_eq!(resume.outcome().session, SessionContinuity::Durable);
    resume.session_recreated();
    assert_eq!(resume.outcome().session, SessionContinuity::Recreated);
    let mut by_hand = ok(200);
    by_hand.floor = Some(c("2"));
    by_hand.acknowledgement = Some(Acknowledgement::NotHonoured);
    by_hand.session = SessionContinuity::Recreated;
    assert_eq!(resume.verdict(), decide(&cursor, &by_hand, policy));
    assert_ne!(
        resume.verdict(),
        decide(&cursor, &ok(200), policy),
        "what it was told changes the verdict"
    );
}

/// With opaque ids a re-sent copy of the cursor is the same id, and only
/// that; the count of dropped copies starts at none.
#[test]
fn verifier_drops_only_an_opaque_cursor_sent_again() {
    let cursor = c("store-7");
    let mut resume = ResumeVerifier::new(cursor.clone(), StatusCode::OK, UnprovenPolicy::Lenient);
    assert_eq!(resume.duplicates(), 0);
    assert_eq!(resume.on_event(Some(&cursor)), EventAction::SkipDuplicate);
    assert_eq!(resume.duplicates(), 1);
    assert_eq!(resume.on_event(Some(&cursor)), EventAction::SkipDuplicate);
    assert_eq!(resume.duplicates(), 2);
    assert_eq!(resume.on_event(Some(&c("store-8"))), EventAction::Deliver);
    assert_eq!(resume.outcome().first_event, Some(c("store-8")));
    let mut fresh = ResumeVerifier::new(cursor, StatusCode::OK, UnprovenPolicy::Lenient);
    assert_eq!(fresh.on_event(Some(&c("store-9"))), EventAction::Deliver);
    assert_eq!(fresh.duplicates(), 0);
}

/// The length bound is inclusive: an id of exactly `MAX_CURSOR_LEN` bytes
/// is taken, from a string or from header bytes, and one byte more is not;
/// an opaque id reads back as sent.
#[test]
fn a_cursor_of_exactly_the_maximum_length_is_taken() {
    let longest = "x".repeat(MAX_CURSOR_LEN);
    let over = "x".repeat(MAX_CURSOR_LEN + 1);
    for parsed in [
        EventCursor::parse(&longest),
        EventCursor::from_bytes(longest.as_bytes()),
    ] {
        match parsed {
            Ok(EventCursor::Opaque(id)) => assert_eq!(id.as_str(), longest),
            other => panic!("the longest id: {other:?}"),
        }
    }
    for parsed in [
        EventCursor::parse(&over),
        EventCursor::from_bytes(over.as_bytes()),
    ] {
        assert!(
            matches!(parsed, Err(CursorParseError::TooLong { len, max })
                if len == MAX_CURSOR_LEN + 1 && max == MAX_CURSOR_LEN),
            "{parsed:?}"
        );
    }
    let short = OpaqueEventId::new("store-7").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(short.as_str(), "store-7");
}

/// A lost range holds at least one event: the ones strictly between its
/// ends, counted; adjacent ids lose nothing.
#[test]
fn a_lost_range_holds_what_lies_between() {
    let after = StreamId::Request(2).event(3);
    let Some(lost) = LostRange::between(after, 7) else {
        panic!("4, 5 and 6 lie between 3 and 7");
    };
    assert_eq!((lost.first.index, lost.last.index, lost.len()), (4, 6, 3));
    assert!(!lost.is_empty());
    assert_eq!(lost.to_string(), "4/2..=6/2 (3 events)");
    assert_eq!(LostRange::between(after, 4), None);
}

/// A stream id names its request stream's number, and none for the
/// standalone stream.
#[test]
fn a_stream_id_names_its_request_number() {
    assert_eq!(StreamId::Standalone.request(), None);
    assert_eq!(StreamId::Request(0).request(), Some(0));
    assert_eq!(StreamId::Request(7).request(), Some(7));
}

/// Every answer has its own words (for the error body and the log).
#[test]
fn every_resume_answer_says_what_it_is_in_its_own_words() {
    let answers = [
        ResumeAnswer::Replay { from: 2, floor: 1 },
        ResumeAnswer::Fallback { from: 2, floor: 2 },
        ResumeAnswer::Complete,
        ResumeAnswer::BelowFloor { floor: 3 },
        ResumeAnswer::BeyondHead { head: 1 },
        ResumeAnswer::UnknownStream,
        ResumeAnswer::SessionLost,
    ];
    let reasons: std::collections::BTreeSet<&str> =
        answers.iter().map(ResumeAnswer::reason).collect();
    assert_eq!(reasons.len(), answers.len(), "{reasons:?}");
    assert!(reasons.iter().all(|r| r.len() > 10), "{reasons:?}");
    assert_eq!(
        ResumeAnswer::SessionLost.reason(),
        "session not found",
        "upstream's words for a lost session"
    );
}

/// An unhonoured cursor's error names the floor the server declared, and
/// says nothing of one it did not.
#[test]
fn an_unhonoured_cursor_names_the_declared_floor() {
    let with = ResumptionError::NotHonoured {
        cursor: c("4/2"),
        floor: Some(c("3/2")),
    };
    assert_eq!(
        with.to_string(),
        "server did not honour cursor 4/2 (replay floor 3/2)"
    );
    let without = ResumptionError::NotHonoured {
        cursor: c("4/2"),
        floor: None,
    };
    assert_eq!(without.to_string(), "server did not honour cursor 4/2");
}
