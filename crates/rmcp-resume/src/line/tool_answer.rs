//! A server message parsed as upstream parses it, with a tool call's answer
//! read straight into its type.
//!
//! `ServerResult` is an untagged union. To parse a response, serde buffers
//! the whole message and then tries the union's variants in order until one
//! fits, and `CallToolResult` is the sixteenth. Most of a client's parsing
//! time goes on the fifteen variants that fail first. The shortcut below
//! gives the same value without those attempts, but only when it can show
//! that every earlier variant fails. Otherwise it parses as upstream does.
//!
//! **When the shortcut applies.** The message is an object whose only keys
//! are `jsonrpc`, `id` and `result`. `result` is an object whose keys are
//! some of [`TOOL_RESULT_KEYS`]. Each earlier variant of `ServerResult`
//! needs a key outside that set, so none of them can fit: a derived
//! `Deserialize` lets a field be absent only if it is an `Option` or has a
//! default, and the needed field is neither:
//!
//! | Variant | Needs |
//! |---|---|
//! | `DiscoverResult`, `SubscriptionsListenResult`, `CreateTaskResult` | `resultType` |
//! | `InitializeResult` | `protocolVersion` |
//! | `CompleteResult` | `completion` |
//! | `GetPromptResult` | `messages` |
//! | `ListPromptsResult`, `ListResourcesResult`, `ListResourceTemplatesResult`, `ListToolsResult`, `ListSkillsResult` | `prompts`, `resources`, `resourceTemplates`, `tools`, `skills` |
//! | `ReadResourceResult` | `contents` |
//! | `GetSkillResult` | `skill` |
//! | `ElicitResult` | `action` |
//! | `GetTaskResult` | `taskId` (its task is flattened) |
//!
//! **Why the value is the same.** The shortcut parses the message in two
//! passes:
//! 1. The message is parsed as a [`Value`]. This is the check serde's buffer
//!    makes on upstream's path: nesting depth, number range, string escapes.
//!    Anything upstream refuses there is refused here too, and the pass also
//!    yields the key sets above.
//! 2. The message is parsed again, straight into
//!    `JsonRpcResponse<CallToolResult>`. This uses upstream's own
//!    `Deserialize` impls, which reject a duplicate field as they do on
//!    upstream's path.
//!
//! If either pass fails, the message goes to upstream's parse, so a refusal
//! can only cost time, never change an answer.
//!
//! serde_json's `arbitrary_precision` feature, if anything in the build
//! turns it on, changes how serde's buffer sees numbers. That can make
//! upstream's path refuse what a direct parse accepts, so with that feature
//! the shortcut stays off. `tests` compare the two paths on generated
//! messages (see `every_message_parses_as_upstream_parses_it`).

use std::sync::OnceLock;

use serde_json::Value;

use crate::model::{
    CallToolResult, JsonRpcMessage, JsonRpcResponse, ServerJsonRpcMessage, ServerResult,
};

/// The keys a result may have for the shortcut to apply: `CallToolResult`'s
/// own fields, without `resultType`, which three earlier variants read.
pub(crate) const TOOL_RESULT_KEYS: [&str; 4] = ["content", "structuredContent", "isError", "_meta"];

/// The keys a response message may have for the shortcut to apply.
const RESPONSE_KEYS: [&str; 3] = ["jsonrpc", "id", "result"];

/// Parses a frame the guard's probe judged a response, giving what
/// `serde_json::from_str::<ServerJsonRpcMessage>` gives, and reads a tool
/// call's answer without trying the union's other variants first. Only the
/// guard calls it: elsewhere most frames are notifications, for which the
/// shortcut's first pass would be wasted.
pub(crate) fn parse_response(data: &str) -> serde_json::Result<ServerJsonRpcMessage> {
    match tool_answer(data) {
        Some(message) => Ok(message),
        None => serde_json::from_str(data),
    }
}

/// The message, if the shortcut applies to it and both passes succeed.
fn tool_answer(data: &str) -> Option<ServerJsonRpcMessage> {
    if !numbers_are_plain() {
        return None;
    }
    let checked: Value = serde_json::from_str(data).ok()?;
    if !has_tool_answer_shape(&checked) {
        return None;
    }
    let response: JsonRpcResponse<CallToolResult> = serde_json::from_str(data).ok()?;
    Some(JsonRpcMessage::Response(JsonRpcResponse {
        jsonrpc: response.jsonrpc,
        id: response.id,
        result: ServerResult::CallToolResult(response.result),
    }))
}

/// Whether the message's keys, and its result's, leave `CallToolResult` as
/// the first variant that can fit (see the module's table).
fn has_tool_answer_shape(message: &Value) -> bool {
    let Some(message) = message.as_object() else {
        return false;
    };
    if message.len() != RESPONSE_KEYS.len()
        || !message
            .keys()
            .all(|key| RESPONSE_KEYS.contains(&key.as_str()))
    {
        return false;
    }
    message
        .get("result")
        .and_then(Value::as_object)
        .is_some_and(|result| {
            result
                .keys()
                .all(|key| TOOL_RESULT_KEYS.contains(&key.as_str()))
        })
}

/// Whether serde_json reads numbers as plain `u64`, `i64` and `f64`, that
/// is, without `arbitrary_precision`. Checked once: that feature keeps a
/// number's text, so `1e2` does not come back as `100.0`.
fn numbers_are_plain() -> bool {
    static PLAIN: OnceLock<bool> = OnceLock::new();
    *PLAIN.get_or_init(|| {
        serde_json::from_str::<Value>("1e2")
            .and_then(|number| serde_json::to_string(&number))
            .is_ok_and(|text| text == "100.0")
    })
}

#[cfg(test)]
#[path = "tool_answer_tests.rs"]
mod tests;
