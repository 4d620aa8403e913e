//! What the fork reads from a `GET`'s headers.

use crate::line::HEADER_MCP_PROTOCOL_VERSION;
use crate::model::ProtocolVersion;
use crate::transport::common::http_header::{EVENT_STREAM_MIME_TYPE, HEADER_SESSION_ID};
use crate::transport::common::server_side_http::SessionId;

/// The `Mcp-Session-Id` a request names, if it is text.
pub(super) fn session_id(headers: &http::HeaderMap) -> Option<SessionId> {
    headers
        .get(HEADER_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(SessionId::from)
}

/// Whether `Accept` admits `text/event-stream` (a `q=0` entry excludes it).
pub(super) fn accepts_event_stream(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let mut params = range.split(';');
            let essence = params.next().unwrap_or_default().trim();
            let excluded = params.any(|p| {
                let p = p.trim();
                p.strip_prefix("q=")
                    .or_else(|| p.strip_prefix("Q="))
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            !excluded && essence.eq_ignore_ascii_case(EVENT_STREAM_MIME_TYPE)
        })
}

/// The revision a GET speaks: its header, or 2025-03-26 when absent.
pub(super) fn protocol_version(headers: &http::HeaderMap) -> Result<ProtocolVersion, String> {
    let Some(value) = headers.get(HEADER_MCP_PROTOCOL_VERSION) else {
        return Ok(ProtocolVersion::V_2025_03_26);
    };
    let Ok(text) = value.to_str() else {
        return Err("Bad Request: Invalid MCP-Protocol-Version header encoding".to_owned());
    };
    crate::line::known_version(text)
        .or_else(crate::line::unknown_version)
        .ok_or_else(|| format!("Bad Request: Unsupported MCP-Protocol-Version: {text}"))
}
