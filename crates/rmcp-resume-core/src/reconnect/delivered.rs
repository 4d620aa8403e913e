//! The ids a stream has delivered, so that a copy is never delivered again.
//!
//! Opaque ids prove no order: the client cannot tell a replay that starts
//! too early from new events, except by having seen the ids. A server that
//! never vouched for rmcp's rules and replays from its first event on every
//! resume would otherwise deliver its copies again each time, and each
//! would look like progress. The set is bounded: a copy older than the last
//! [`CAPACITY`] ids is not recognised (a replay that long would still end
//! on the cursor it began with, and so bring nothing).

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

/// How many of the latest ids are remembered.
pub(super) const CAPACITY: usize = 512;

/// The latest ids delivered, at most [`CAPACITY`], oldest first out.
#[derive(Default)]
pub(super) struct Delivered {
    order: VecDeque<Arc<str>>,
    seen: HashSet<Arc<str>>,
}

impl Delivered {
    /// A set that knows `id` already (the cursor a stream starts from).
    pub(super) fn starting_at(id: Option<&str>) -> Self {
        let mut delivered = Self::default();
        if let Some(id) = id {
            delivered.insert(id);
        }
        delivered
    }

    /// Whether `id` was delivered among the latest [`CAPACITY`].
    pub(super) fn contains(&self, id: &str) -> bool {
        self.seen.contains(id)
    }

    /// Remembers `id`, forgetting the oldest id when full.
    pub(super) fn insert(&mut self, id: &str) {
        if self.seen.contains(id) {
            return;
        }
        if self.order.len() >= CAPACITY
            && let Some(oldest) = self.order.pop_front()
        {
            self.seen.remove(&oldest);
        }
        let id: Arc<str> = Arc::from(id);
        self.seen.insert(id.clone());
        self.order.push_back(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_id_is_forgotten_when_full() {
        let mut delivered = Delivered::starting_at(Some("0"));
        for i in 1..=CAPACITY {
            delivered.insert(&i.to_string());
        }
        assert!(!delivered.contains("0"), "the oldest went");
        assert!(delivered.contains("1"));
        assert!(delivered.contains(&CAPACITY.to_string()));
        assert_eq!(delivered.order.len(), CAPACITY);
        assert_eq!(delivered.seen.len(), CAPACITY);
    }

    #[test]
    fn an_id_twice_is_kept_once() {
        let mut delivered = Delivered::starting_at(None);
        delivered.insert("a");
        delivered.insert("a");
        assert_eq!(delivered.order.len(), 1);
        assert!(delivered.contains("a"));
        assert!(!delivered.contains("b"));
    }
}
