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
//! among `content`, `structuredContent`, `isError` and `_meta` (`ResultKey`),
//! with one of the first three. Each earlier variant of `ServerResult`
//! needs a key outside that set, so none of them can fit. A derived
//! `Deserialize` fills a missing field only through its type's
//! `deserialize_option` (an `Option`) or a default, and each needed field
//! below was read to have neither (nor a flattened struct of only such
//! fields). The table was read from rmcp 3.11.0 (`TABLE_READ_FOR`):
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
//! **Why the value is the same.** The shortcut reads the message twice:
//! 1. Its keys and its result's keys, with escapes decoded as serde decodes
//!    a field's name, and the values skipped. The scan stops at the first
//!    key outside the sets, at a repeated key, or at a result that is not
//!    an object, so another kind of response costs little more than
//!    upstream's parse. A result without `content`, `structuredContent` or
//!    `isError` is refused after its keys.
//! 2. Straight into `JsonRpcResponse<CallToolResult>`, through upstream's own
//!    `Deserialize` impls. With the keys known, this parse skips no value,
//!    so it refuses what serde's buffer refuses (nesting depth, number
//!    range, string escapes) wherever the first pass skipped it.
//!
//! What needs showing is one direction only: when the direct parse gives a
//! value, upstream's buffered parse gives the same one. Where the buffered
//! path is more lenient (it reads a number as an enum's variant index, so
//! `"type":0` is a text block there), the direct parse fails and the message
//! goes to upstream's parse, which costs time, not an answer. The direction
//! holds because of the types reachable from `CallToolResult`:
//! - `ContentBlock` is internally tagged, so serde buffers each block on
//!   both paths, and everything inside one is read from the same buffer.
//! - Above it, every field reads the same from a buffer as from the text:
//!   `JsonRpcVersion2_0` (a string), the id (through a `Value`),
//!   `Option<bool>`, `Vec`, `Value`, and `MetaObject`'s map of `Value`s. A
//!   repeated field is refused on both paths; a repeated key inside a
//!   `Value` keeps its last value on both.
//!
//! A field added above the blocks with a type that reads differently from
//! a buffer (an `i128`, a borrowed `&str`, a `deserialize_with` that looks
//! at the deserializer) would break this. So would a new variant before
//! `CallToolResult`. Upstream is pinned to an exact version, and a test
//! fails when it moves, so that the table and this list are read again.
//!
//! serde_json's `arbitrary_precision` feature, if anything in the build
//! turns it on, changes how serde's buffer sees numbers. That can make
//! upstream's path refuse what a direct parse accepts, so with that feature
//! the shortcut stays off. `tests` compare the two paths on generated
//! messages (see `every_message_parses_as_upstream_parses_it`).

use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use crate::model::{
    CallToolResult, JsonRpcMessage, JsonRpcResponse, ServerJsonRpcMessage, ServerResult,
};

/// The keys a result may have for the shortcut to apply: `CallToolResult`'s
/// own fields, without `resultType`. Three earlier variants need that key,
/// so with it a result can be one of them: `resultType` and a subscription
/// id in `_meta` make a `SubscriptionsListenResult`. Any other key fails
/// the scan. `CallToolResult` needs one of the keys other than `_meta`.
#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum ResultKey {
    Content,
    StructuredContent,
    IsError,
    #[serde(rename = "_meta")]
    Meta,
}

/// The keys a response message must have, each once, for the shortcut to
/// apply. Any other key fails the scan.
#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum MessageKey {
    Jsonrpc,
    Id,
    Result,
}

/// The upstream release whose `ServerResult` the module's table was read
/// from.
#[cfg(test)]
const TABLE_READ_FOR: &str = "3.11.0";

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
    if !numbers_are_plain() || !has_tool_answer_shape(data) {
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
/// the first variant that can fit (see the module's table): each
/// `MessageKey` once, and a result that is an object whose keys are
/// `ResultKey`s, each at most once, one of them a field of a tool's result.
fn has_tool_answer_shape(data: &str) -> bool {
    let mut json = serde_json::Deserializer::from_str(data);
    let message = de::Deserializer::deserialize_map(&mut json, MessageKeys);
    let all = Seen::default()
        .with(MessageKey::Jsonrpc as u8)
        .with(MessageKey::Id as u8)
        .with(MessageKey::Result as u8);
    message.is_ok_and(|seen| seen == all) && json.end().is_ok()
}

/// The keys a map has shown so far, one bit per variant of its key enum
/// (each has fewer than eight).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Seen(u8);

impl Seen {
    fn with(self, key: u8) -> Self {
        Self(self.0 | 1 << key)
    }

    /// Adds a key, refusing it if it came before. The second pass would
    /// refuse a repeated field, and upstream's parse may still accept the
    /// message as a later variant (a result with `content` twice becomes a
    /// `CustomResult`), so a repeated key is upstream's to parse.
    fn add<E: de::Error>(&mut self, key: u8) -> Result<(), E> {
        let added = self.with(key);
        if added == *self {
            return Err(E::custom("a repeated key"));
        }
        *self = added;
        Ok(())
    }
}

/// The message's keys: `result`'s are read by [`ResultKeys`], the other
/// values skipped.
struct MessageKeys;

impl<'de> Visitor<'de> for MessageKeys {
    type Value = Seen;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC response object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Seen, A::Error> {
        let mut seen = Seen::default();
        while let Some(key) = map.next_key::<MessageKey>()? {
            seen.add(key as u8)?;
            match key {
                MessageKey::Result => map.next_value_seed(ResultKeys)?,
                MessageKey::Jsonrpc | MessageKey::Id => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(seen)
    }
}

/// A result's keys, its values skipped; anything but an object is refused.
struct ResultKeys;

impl<'de> DeserializeSeed<'de> for ResultKeys {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ResultKeys {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a result object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = Seen::default();
        let mut tool_field = false;
        while let Some(key) = map.next_key::<ResultKey>()? {
            seen.add(key as u8)?;
            tool_field |= !matches!(key, ResultKey::Meta);
            map.next_value::<IgnoredAny>()?;
        }
        // `CallToolResult` refuses a result without `content`,
        // `structuredContent` or `isError`; such a result (an empty one, an
        // acknowledgement) goes to upstream's parse without the second pass.
        if tool_field {
            Ok(())
        } else {
            Err(de::Error::custom("no field of a tool's result"))
        }
    }
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
