//! Which life of a session a worker runs, and where its ids start.

/// Which life of a session a worker runs.
// Only `restore_session` builds the later lives, and a line whose upstream
// has no session store (0.17, 0.16, 0.15) has no `restore_session`.
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Incarnation {
    /// Created by `initialize`: no cursor of it can exist yet, so its ids
    /// start at the bottom (`1` on the standalone stream, stream `0`).
    First,
    /// Restored from a session store after a restart or on another instance:
    /// its ids start at a random base far above any earlier life's, so an old
    /// cursor can never name one of its events (a standalone cursor is below
    /// the floor, a request cursor names an unknown stream).
    Restored,
    /// Restored on top of a shared log: its standalone ids carry on from the
    /// shared log's head, and its request streams are numbered by the shared
    /// log, so every id stays unique and the standalone stream contiguous.
    Shared {
        /// The shared standalone stream's head.
        standalone_head: u64,
    },
}

impl Incarnation {
    pub(super) fn base(self) -> u64 {
        match self {
            Self::First => 0,
            Self::Restored => restored_base(),
            Self::Shared { standalone_head } => standalone_head.saturating_sub(1),
        }
    }
}

/// A random multiple of 2³² in `[2³², 2⁶³]`: 2³¹ possible lives, each with
/// 2³² ids of room before the next could begin.
fn restored_base() -> u64 {
    use std::hash::BuildHasher;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let random = std::collections::hash_map::RandomState::new().hash_one(seed);
    ((random >> 33) + 1) << 32
}
