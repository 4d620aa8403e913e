use super::*;

#[test]
fn the_unix_socket_clients_status_is_read_from_its_text() {
    let status = |text: &str| unix_socket_status(text);
    assert_eq!(
        status("get_stream returned 404 Not Found"),
        Some(StatusCode::NOT_FOUND)
    );
    assert_eq!(
        status("get_stream returned 400"),
        Some(StatusCode::BAD_REQUEST)
    );
    assert_eq!(status("get_stream returned 4"), None, "too short");
    assert_eq!(status("connection refused"), None);
    assert_eq!(status("returned abc"), None);
}

#[test]
fn statuses_map_to_dispositions() {
    let of = |code: u16| {
        StatusCode::from_u16(code)
            .map(ReconnectDisposition::for_status)
            .unwrap_or(ReconnectDisposition::Retry)
    };
    assert_eq!(of(404), ReconnectDisposition::SessionLost);
    assert_eq!(of(410), ReconnectDisposition::SessionLost);
    assert_eq!(of(401), ReconnectDisposition::Terminate);
    assert_eq!(of(405), ReconnectDisposition::Terminate);
    assert_eq!(of(429), ReconnectDisposition::Busy);
    assert_eq!(of(400), ReconnectDisposition::CursorRejected);
    assert_eq!(
        of(409),
        ReconnectDisposition::Retry,
        "the TypeScript SDK's cleanup race"
    );
    assert_eq!(of(503), ReconnectDisposition::Busy);
    assert_eq!(of(502), ReconnectDisposition::Retry);
}
