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
        ReconnectDisposition::Conflict,
        "the TypeScript SDK's cleanup race, or a half-open connection"
    );
    assert_eq!(of(503), ReconnectDisposition::Busy);
    assert_eq!(of(502), ReconnectDisposition::Retry);
}

/// Stands in for upstream's private limit error: what it says, no cause.
#[derive(Debug, thiserror::Error)]
#[error("SSE event exceeded the maximum size of {0} bytes")]
struct Limit(usize);

/// A break in transit that happens to say the same, with its cause.
#[derive(Debug, thiserror::Error)]
#[error("SSE event exceeded the maximum size, or so it says")]
struct Impostor(#[source] std::io::Error);

#[test]
fn the_size_limit_is_final_whatever_the_client() {
    let body = |e: Box<dyn std::error::Error + Send + Sync>| sse_stream::Error::Body(e);
    assert!(over_size_limit(&body(Box::new(Limit(1024)))));
    let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
    assert!(
        !over_size_limit(&body(Box::new(reset))),
        "a break in transit"
    );
    let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
    assert!(
        !over_size_limit(&body(Box::new(Impostor(reset)))),
        "it has a cause"
    );
    assert!(!over_size_limit(&sse_stream::Error::InvalidLine));
}

#[test]
fn every_5xx_but_a_gateways_is_a_server_error() {
    let of = |code: u16| {
        StatusCode::from_u16(code)
            .ok()
            .map(ReconnectDisposition::for_status)
    };
    for code in [500, 501, 505, 507, 599] {
        assert_eq!(of(code), Some(ReconnectDisposition::ServerError), "{code}");
    }
    assert_eq!(of(502), Some(ReconnectDisposition::Retry));
    assert_eq!(of(504), Some(ReconnectDisposition::Retry));
    assert_eq!(of(503), Some(ReconnectDisposition::Busy));
}
