use http::StatusCode;

use super::*;

const LOG: LogView = LogView {
    floor: 7,
    head: 11,
    finished: false,
};
const ANSWERED: LogView = LogView {
    finished: true,
    ..LOG
};
const EMPTY: LogView = LogView {
    floor: 1,
    head: 1,
    finished: false,
};

fn request(index: u64) -> RmcpEventId {
    RmcpEventId::on_request_stream(index, 3)
}

fn standalone(index: u64) -> RmcpEventId {
    RmcpEventId::standalone(index)
}

/// One row of the module's decision table.
struct Row {
    name: &'static str,
    stream: StreamLookup,
    cursor: RmcpEventId,
    answer: ResumeAnswer,
    status: StatusCode,
}

fn rows() -> Vec<Row> {
    use ResumeAnswer as A;
    use StreamLookup::{Found, SessionLost, UnknownStream};
    let row = |name, stream, cursor, answer, status| Row {
        name,
        stream,
        cursor,
        answer,
        status,
    };
    vec![
        row(
            "session gone",
            SessionLost,
            request(3),
            A::SessionLost,
            StatusCode::NOT_FOUND,
        ),
        row(
            "session gone, standalone",
            SessionLost,
            standalone(3),
            A::SessionLost,
            StatusCode::NOT_FOUND,
        ),
        row(
            "no such request stream",
            UnknownStream,
            request(3),
            A::UnknownStream,
            StatusCode::BAD_REQUEST,
        ),
        row(
            "request, evicted",
            Found(LOG),
            request(5),
            A::BelowFloor { floor: 7 },
            StatusCode::BAD_REQUEST,
        ),
        row(
            "standalone, evicted",
            Found(LOG),
            standalone(5),
            A::Fallback { from: 7, floor: 7 },
            StatusCode::OK,
        ),
        row(
            "request, never produced",
            Found(LOG),
            request(11),
            A::BeyondHead { head: 11 },
            StatusCode::BAD_REQUEST,
        ),
        row(
            "standalone, never produced",
            Found(LOG),
            standalone(40),
            A::Fallback { from: 11, floor: 7 },
            StatusCode::OK,
        ),
        row(
            "request, answered and drained",
            Found(ANSWERED),
            request(10),
            A::Complete,
            StatusCode::NO_CONTENT,
        ),
        row(
            "request, answered, more to send",
            Found(ANSWERED),
            request(8),
            A::Replay { from: 9, floor: 7 },
            StatusCode::OK,
        ),
        row(
            "request, successor is the floor",
            Found(LOG),
            request(6),
            A::Replay { from: 7, floor: 7 },
            StatusCode::OK,
        ),
        row(
            "request, live, at the head",
            Found(LOG),
            request(10),
            A::Replay { from: 11, floor: 7 },
            StatusCode::OK,
        ),
        row(
            "standalone, answered flag ignored",
            Found(ANSWERED),
            standalone(10),
            A::Replay { from: 11, floor: 7 },
            StatusCode::OK,
        ),
        row(
            "standalone, priming cursor on an empty log",
            Found(EMPTY),
            standalone(0),
            A::Replay { from: 1, floor: 1 },
            StatusCode::OK,
        ),
        row(
            "standalone, empty log, never produced",
            Found(EMPTY),
            standalone(1),
            A::Fallback { from: 1, floor: 1 },
            StatusCode::OK,
        ),
    ]
}

#[test]
fn the_decision_table_holds_row_by_row() {
    for row in rows() {
        let answer = plan(row.stream, row.cursor);
        assert_eq!(answer, row.answer, "{}", row.name);
        assert_eq!(answer.status(), row.status, "{}", row.name);
        assert_eq!(
            answer.start().is_some(),
            row.status == StatusCode::OK,
            "{}: a stream exactly when 200",
            row.name
        );
    }
}

#[test]
fn a_replay_never_resends_the_cursor_event() {
    for cursor in 6..=10 {
        let answer = plan(StreamLookup::Found(LOG), request(cursor));
        assert_eq!(answer.start(), Some(cursor + 1));
    }
}

#[test]
fn notices_carry_the_cursor_and_the_floor_on_its_stream() {
    let cursor = request(8);
    let notice = plan(StreamLookup::Found(LOG), cursor)
        .notice(cursor)
        .unwrap_or_else(|| panic!("a replay has a notice"));
    assert_eq!(
        notice.to_json(),
        r#"{"cursor":"8/3","floor":"7/3","complete":true}"#
    );

    let cursor = standalone(2);
    let notice = plan(StreamLookup::Found(LOG), cursor)
        .notice(cursor)
        .unwrap_or_else(|| panic!("a fallback has a notice"));
    assert_eq!(
        notice.to_json(),
        r#"{"cursor":"2","floor":"7","complete":false}"#
    );

    assert_eq!(ResumeAnswer::Complete.notice(cursor), None);
}

#[test]
fn the_last_index_never_overflows() {
    let log = LogView {
        floor: u64::MAX,
        head: u64::MAX,
        finished: true,
    };
    let answer = plan(StreamLookup::Found(log), request(u64::MAX));
    assert_eq!(answer, ResumeAnswer::BeyondHead { head: u64::MAX });
}
