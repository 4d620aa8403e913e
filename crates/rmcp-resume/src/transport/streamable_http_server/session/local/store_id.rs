//! Event ids on the event-store path, scoped to their session.
//!
//! Upstream's `EventStore::replay_events_after` takes no session id, so a
//! store cannot tell a cursor of this session from another's. The fork
//! sends each store id as `{tag}~{store id}`, where the tag is a hash of
//! the session id, and refuses a cursor whose tag is not the requesting
//! session's before the store is asked.

use crate::transport::common::server_side_http::SessionId;

/// Separates the session tag from the store's own id.
const SEPARATOR: char = '~';

/// What a cursor on the event-store path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScopedCursor<'a> {
    /// A cursor of this session: the store's id.
    Ours(&'a str),
    /// A cursor issued to another session (or another server).
    Foreign,
    /// Not an id of this scheme.
    Malformed,
}

/// The tag of `session`: 64 bits of FNV-1a, in hex. Stable across
/// processes and releases, unlike std's hasher.
fn tag(session: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in session.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The id sent for `store_id` in `session`.
pub(crate) fn scoped(session: &SessionId, store_id: &str) -> String {
    format!("{}{SEPARATOR}{store_id}", tag(session))
}

/// Reads a cursor sent with `session`'s header.
pub(crate) fn unscope<'a>(session: &SessionId, cursor: &'a str) -> ScopedCursor<'a> {
    match cursor.split_once(SEPARATOR) {
        Some((tag_part, store_id)) if tag_part == tag(session) => ScopedCursor::Ours(store_id),
        Some((tag_part, _)) if tag_part.len() == 16 => ScopedCursor::Foreign,
        _ => ScopedCursor::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_is_read_back_only_by_its_own_session() {
        let a: SessionId = "session-a".into();
        let b: SessionId = "session-b".into();
        let id = scoped(&a, "e~17");
        assert_eq!(unscope(&a, &id), ScopedCursor::Ours("e~17"));
        assert_eq!(unscope(&b, &id), ScopedCursor::Foreign);
        assert_eq!(unscope(&a, "e17"), ScopedCursor::Malformed);
        assert_eq!(unscope(&a, "3/1"), ScopedCursor::Malformed);
    }
}
