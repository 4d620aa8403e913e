//! Pieces shared by the servers that tests script by hand, frame by frame,
//! where a real server could not misbehave on cue.

use axum::body::Body;
use axum::http::Response;
use serde_json::{Value, json};

/// The session every scripted server opens.
pub const SESSION: &str = "s1";

/// The JSON answer to `initialize` request `id`: session [`SESSION`], revision
/// 2025-11-25 (so sessions and resumable streams), tools only.
pub fn initialized(id: &Value) -> Response<Body> {
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "scripted", "version": "0"}}});
    Response::builder()
        .header("content-type", "application/json")
        .header("mcp-session-id", SESSION)
        .body(Body::from(answer.to_string()))
        .unwrap_or_default()
}
