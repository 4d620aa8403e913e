//! Whether an SSE frame carries a JSON-RPC response, read without building
//! the message.

use std::fmt;

use serde::Deserializer as _;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use sse_stream::Sse;

mod bytes;

/// Whether `sse` carries a JSON-RPC response (or error): a JSON object whose
/// `id` is not null and which has no `method` (or a null one).
///
/// A request or a notification is known once its `method` is read, so the
/// rest of it (a progress notification's `params`) is not scanned. Anything
/// else is read to its end and must be one whole JSON object: a frame cut
/// short or followed by other text is not a response. A repeated `id` or
/// `method` is not one either. These are the answers of the probe this one
/// replaced, which read every frame whole.
///
/// It is looser than the worker's own parse: it does not check `jsonrpc`,
/// the type of `id`, or that exactly one of `result` and `error` is there.
/// No rmcp server sends such frames; one the worker then dropped would be
/// taken as the answer, and the call would end unanswered when its stream
/// closed.
pub fn is_response(sse: &Sse) -> bool {
    let Some(data) = sse.data.as_deref().filter(|d| !d.is_empty()) else {
        return false;
    };
    bytes::verdict(data.as_bytes()).unwrap_or_else(|| scanned(data))
}

/// [`is_response`] by `serde_json`: the answer wherever the byte scan leaves
/// it (see `bytes`), and the model that scan is tested against.
fn scanned(data: &str) -> bool {
    let mut keys = Keys::default();
    let mut json = serde_json::Deserializer::from_str(data);
    let read = json
        .deserialize_map(Scan(&mut keys))
        .and_then(|()| json.end());
    !keys.method && keys.id == Some(true) && read.is_ok()
}

/// What the scan saw of the two keys that decide.
#[derive(Default)]
struct Keys {
    /// `Some(non-null)` once `id` was read.
    id: Option<bool>,
    /// A non-null `method` was read.
    method: bool,
    /// `method` was read, null or not (a second one is an error).
    method_seen: bool,
}

/// Reads an object's keys, skipping the values but for `id` and `method`.
struct Scan<'a>(&'a mut Keys);

/// The keys that decide; every other one is skipped.
#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Key {
    Id,
    Method,
    #[serde(other)]
    Other,
}

impl<'de> Visitor<'de> for Scan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Id if self.0.id.is_some() => return Err(de::Error::duplicate_field("id")),
                Key::Id => {
                    self.0.id = Some(map.next_value::<Option<IgnoredAny>>()?.is_some());
                }
                Key::Method if self.0.method_seen => {
                    return Err(de::Error::duplicate_field("method"));
                }
                Key::Method => {
                    self.0.method_seen = true;
                    if map.next_value::<Option<IgnoredAny>>()?.is_some() {
                        // Decided: not a response, whatever follows. The
                        // map is left unread, so the deserializer reports an
                        // error that the answer ignores.
                        self.0.method = true;
                        return Ok(());
                    }
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
