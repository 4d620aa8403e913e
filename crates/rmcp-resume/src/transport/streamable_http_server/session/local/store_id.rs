//! Event ids on the event-store path, bound to their session by a MAC.
//!
//! Upstream's `EventStore::replay_events_after` takes no session id, so a
//! store alone cannot tell whose cursor it is asked to replay, and an
//! application's store may hand out guessable ids (a counter). The fork
//! therefore never sends a store id bare: it sends
//!
//! ```text
//! {tag}~{store id}
//! ```
//!
//! where `tag` is HMAC-SHA256 over the session id and the store id, keyed
//! with an [`EventIdKey`], truncated to 128 bits and written as 32 lowercase
//! hex digits. A cursor is handed to the store only if its tag verifies for
//! the *requesting* session; the comparison is constant-time. Anything else
//! (another session's cursor, a re-tagged or forged one, one from a server
//! with another key, an old-style id) is answered exactly as a cursor the
//! store does not know.
//!
//! The store id is escaped so that the whole id survives an SSE `id:` line
//! and a `Last-Event-ID` header: every byte outside visible ASCII, and `%`
//! itself, is written `%XX`. Ids made of visible ASCII other than `%` (most
//! stores' counters and UUIDs) are sent as they are, 33 characters longer.
//!
//! The default key is random, drawn once per process: a cursor issued by
//! another process is refused like an unknown one. Instances that share an
//! event store and restore each other's sessions give every instance the
//! same secret
//! ([`LocalSessionManager::with_event_id_secret`](super::LocalSessionManager::with_event_id_secret)).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::OnceLock;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::transport::common::server_side_http::SessionId;

/// Separates the tag from the escaped store id.
const SEPARATOR: u8 = b'~';
/// Bytes of the truncated MAC.
const TAG_BYTES: usize = 16;
/// Hex digits of the tag on the wire.
const TAG_HEX: usize = TAG_BYTES * 2;
/// Bytes of a secret.
pub(crate) const SECRET_BYTES: usize = 32;
/// Separates this MAC's inputs from any other use of the same secret.
const DOMAIN: &[u8] = b"rmcp-resume/event-store-id/v1\0";

/// The key of the MAC that binds an event-store id to its session.
///
/// Holds the keyed HMAC state, so that each id costs one clone and no
/// re-keying. Its `Debug` never shows the key.
#[derive(Clone)]
pub(crate) struct EventIdKey(Hmac<Sha256>);

impl std::fmt::Debug for EventIdKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventIdKey(..)")
    }
}

impl Default for EventIdKey {
    /// This process's random key.
    fn default() -> Self {
        Self::process()
    }
}

impl EventIdKey {
    /// A key from a secret shared by every instance that must read each
    /// other's cursors.
    pub(crate) fn from_secret(secret: &[u8; SECRET_BYTES]) -> Self {
        // HMAC pads a key shorter than the hash's block with zeros; padding
        // it here gives the same MAC through the infallible constructor.
        let mut block = [0u8; 64];
        block[..SECRET_BYTES].copy_from_slice(secret);
        Self(Hmac::<Sha256>::new(&block.into()))
    }

    /// The key drawn once for this process.
    pub(crate) fn process() -> Self {
        static PROCESS: OnceLock<EventIdKey> = OnceLock::new();
        PROCESS
            .get_or_init(|| Self::from_secret(&random_secret()))
            .clone()
    }

    /// The MAC of `store_id` in `session`, before truncation.
    fn mac(&self, session: &str, store_id: &str) -> Hmac<Sha256> {
        let mut mac = self.0.clone();
        mac.update(DOMAIN);
        // The session's length first, so that no split of one string into
        // session and store id reads as another.
        mac.update(&(session.len() as u64).to_be_bytes());
        mac.update(session.as_bytes());
        mac.update(store_id.as_bytes());
        mac
    }

    /// The id sent for `store_id` in `session`.
    pub(crate) fn scoped(&self, session: &SessionId, store_id: &str) -> String {
        let full = self.mac(session, store_id).finalize().into_bytes();
        let escaped = escape(store_id);
        let mut id = String::with_capacity(TAG_HEX + 1 + escaped.len());
        for byte in &full[..TAG_BYTES] {
            let _ = write!(id, "{byte:02x}");
        }
        id.push(char::from(SEPARATOR));
        id.push_str(&escaped);
        id
    }

    /// The store id of `cursor`, if this key issued it to `session`; `None`
    /// for anything else, whatever is wrong with it, so that every refusal
    /// is one answer.
    pub(crate) fn unscope<'a>(&self, session: &SessionId, cursor: &'a str) -> Option<Cow<'a, str>> {
        let bytes = cursor.as_bytes();
        if bytes.len() <= TAG_HEX || bytes[TAG_HEX] != SEPARATOR {
            return None;
        }
        let tag = decode_tag(&bytes[..TAG_HEX])?;
        let store_id = unescape(cursor.get(TAG_HEX + 1..)?)?;
        verify(self.mac(session, &store_id), &tag).then_some(store_id)
    }
}

/// The constant-time comparison of `mac` with a received `tag`.
fn verify(mac: Hmac<Sha256>, tag: &[u8; TAG_BYTES]) -> bool {
    #[cfg(test)]
    tests::CONSTANT_TIME_CHECKS.with(|checks| checks.set(checks.get() + 1));
    mac.verify_truncated_left(tag).is_ok()
}

/// 32 bytes from the operating system's generator. Should it fail, from
/// std's per-thread hasher keys (themselves drawn from the OS) and the
/// clock, hashed: weaker, never predictable from outside, and logged.
fn random_secret() -> [u8; SECRET_BYTES] {
    let mut secret = [0u8; SECRET_BYTES];
    if let Err(error) = getrandom::fill(&mut secret) {
        use sha2::Digest as _;
        use std::hash::{BuildHasher as _, Hasher as _};
        tracing::error!(%error, "no OS randomness for the event id key; deriving one from std's hasher keys");
        let state = std::collections::hash_map::RandomState::new();
        let mut digest = Sha256::new();
        for salt in 0u64..4 {
            let mut hasher = state.build_hasher();
            hasher.write_u64(salt);
            digest.update(hasher.finish().to_le_bytes());
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        digest.update(now.to_le_bytes());
        digest.update(std::process::id().to_le_bytes());
        secret.copy_from_slice(&digest.finalize());
    }
    secret
}

/// Whether `byte` is sent as itself: visible ASCII, but not `%`.
fn plain(byte: u8) -> bool {
    (0x21..=0x7e).contains(&byte) && byte != b'%'
}

fn escape(store_id: &str) -> Cow<'_, str> {
    if store_id.bytes().all(plain) {
        return Cow::Borrowed(store_id);
    }
    let mut out = String::with_capacity(store_id.len() * 3);
    for byte in store_id.bytes() {
        if plain(byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    Cow::Owned(out)
}

/// The inverse of [`escape`], strict: only its own output is read.
fn unescape(escaped: &str) -> Option<Cow<'_, str>> {
    let bytes = escaped.as_bytes();
    if bytes.iter().all(|&b| plain(b)) {
        return Some(Cow::Borrowed(escaped));
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'%' => {
                let high = upper_hex(*bytes.get(at + 1)?)?;
                let low = upper_hex(*bytes.get(at + 2)?)?;
                let byte = (high << 4) | low;
                if plain(byte) {
                    return None;
                }
                out.push(byte);
                at += 3;
            }
            byte if plain(byte) => {
                out.push(byte);
                at += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok().map(Cow::Owned)
}

fn upper_hex(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

fn lower_hex(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

fn decode_tag(hex: &[u8]) -> Option<[u8; TAG_BYTES]> {
    let mut tag = [0u8; TAG_BYTES];
    for (byte, pair) in tag.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = (lower_hex(pair[0])? << 4) | lower_hex(pair[1])?;
    }
    Some(tag)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::transport::resumption::EventCursor;

    thread_local! {
        /// Tags compared by [`verify`] on this thread.
        pub(super) static CONSTANT_TIME_CHECKS: Cell<usize> = const { Cell::new(0) };
    }

    fn key(fill: u8) -> EventIdKey {
        EventIdKey::from_secret(&[fill; SECRET_BYTES])
    }

    fn session(id: &str) -> SessionId {
        id.into()
    }

    #[test]
    fn an_id_is_read_back_by_its_own_session_and_key() {
        let (key, a) = (key(1), session("session-a"));
        for store_id in [
            "e17",
            "e~17",
            "",
            "a b",
            "100%",
            "line\r\nbreak\0",
            "é✓",
            " x ",
        ] {
            let id = key.scoped(&a, store_id);
            assert_eq!(key.unscope(&a, &id).as_deref(), Some(store_id), "{id}");
        }
        // The same secret on another instance reads it too.
        let id = key.scoped(&a, "e17");
        assert_eq!(
            EventIdKey::from_secret(&[1; SECRET_BYTES])
                .unscope(&a, &id)
                .as_deref(),
            Some("e17")
        );
    }

    #[test]
    fn an_id_survives_an_sse_id_line_and_a_header_and_stays_short() {
        let (key, a) = (key(1), session("session-a"));
        let plain_id = key.scoped(&a, "e17");
        assert_eq!(plain_id.len(), TAG_HEX + 1 + 3);
        assert!(plain_id.ends_with("~e17"));
        for store_id in ["e17", "line\r\nbreak\0", "tab\there", "é", " lead"] {
            let id = key.scoped(&a, store_id);
            // Visible ASCII only: no CR, LF or NUL for the `id:` line, and
            // a valid header value as it is.
            assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id:?}");
            assert!(matches!(
                EventCursor::parse(&id),
                Ok(EventCursor::Opaque(_))
            ));
        }
    }

    #[test]
    fn another_session_or_another_key_reads_nothing() {
        let (a, b) = (session("session-a"), session("session-b"));
        let id = key(1).scoped(&a, "e17");
        assert_eq!(key(1).unscope(&b, &id), None);
        assert_eq!(key(2).unscope(&a, &id), None);
        // The default key is this process's, and not the test secret.
        assert_eq!(EventIdKey::default().unscope(&a, &id), None);
        let default_id = EventIdKey::default().scoped(&a, "e17");
        assert_eq!(
            EventIdKey::process().unscope(&a, &default_id).as_deref(),
            Some("e17")
        );
        // No split of session and store id reads as another.
        let joined = key(1).scoped(&session("ab"), "c");
        assert_eq!(key(1).unscope(&session("a"), &joined), None);
    }

    #[test]
    fn a_tampered_id_is_refused() {
        let (key, a) = (key(1), session("session-a"));
        let id = key.scoped(&a, "e17");
        let (tag, _) = id.split_once('~').unwrap_or_default();
        // Another store id under the same tag.
        assert_eq!(key.unscope(&a, &format!("{tag}~e18")), None);
        // Every single hex digit of the tag changed.
        for at in 0..TAG_HEX {
            let mut bytes = id.clone().into_bytes();
            bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
            let forged = String::from_utf8(bytes).unwrap_or_default();
            assert_eq!(key.unscope(&a, &forged), None, "{forged}");
        }
        // Truncated, extended, upper-case, old-style, bare or empty.
        let truncated = format!("{}~e17", &tag[..TAG_HEX - 2]);
        let extended = format!("{tag}00~e17");
        let upper = format!("{}~e17", tag.to_uppercase());
        for forged in [
            truncated.as_str(),
            extended.as_str(),
            upper.as_str(),
            "0123456789abcdef~e17",
            "e17",
            "~e17",
            "",
            &id[..TAG_HEX],
            &id[..TAG_HEX + 1],
        ] {
            assert_eq!(key.unscope(&a, forged), None, "{forged:?}");
        }
        // Escapes are read strictly: a plain byte escaped, or a bad escape.
        let spaced = key.scoped(&a, "a b");
        assert!(spaced.ends_with("~a%20b"));
        for bad in ["%61%20b", "a%2", "a%zz", "a%20b%", "a b"] {
            let forged = format!("{}~{bad}", &spaced[..TAG_HEX]);
            assert_eq!(key.unscope(&a, &forged), None, "{forged}");
        }
    }

    #[test]
    fn tags_are_compared_in_constant_time() {
        let (key, a) = (key(1), session("session-a"));
        let id = key.scoped(&a, "e17");
        let before = CONSTANT_TIME_CHECKS.with(Cell::get);
        let mut bytes = id.clone().into_bytes();
        bytes[TAG_HEX - 1] ^= 0x01;
        let forged = String::from_utf8(bytes).unwrap_or_default();
        assert_eq!(key.unscope(&a, &forged), None);
        assert!(key.unscope(&a, &id).is_some());
        // Both the forgery and the good tag went through `verify_truncated_left`.
        assert_eq!(CONSTANT_TIME_CHECKS.with(Cell::get), before + 2);
    }

    #[test]
    fn the_padded_secret_keys_the_same_hmac_as_the_secret_itself() {
        let secret = [7u8; SECRET_BYTES];
        let ours = EventIdKey::from_secret(&secret)
            .mac("s", "e1")
            .finalize()
            .into_bytes();
        let Ok(mut reference) = <Hmac<Sha256> as KeyInit>::new_from_slice(&secret) else {
            panic!("HMAC takes any key length");
        };
        reference.update(DOMAIN);
        reference.update(&1u64.to_be_bytes());
        reference.update(b"s");
        reference.update(b"e1");
        assert_eq!(ours, reference.finalize().into_bytes());
    }

    #[test]
    fn the_key_never_shows_in_debug() {
        assert_eq!(format!("{:?}", key(1)), "EventIdKey(..)");
    }
}
