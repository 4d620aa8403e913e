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
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

/// How many of the latest events are remembered.
pub(super) const CAPACITY: usize = 512;

/// One delivered event: its id and a hash of its data. Ids alone do not
/// tell a copy: a server whose ids are unique per connection only (which
/// the spec allows) numbers a resume's new events from `1` again, and
/// dropping those as copies would lose them silently. A copy repeats the
/// data as well.
type Key = (Arc<str>, u64);

/// The latest events delivered, at most [`CAPACITY`], oldest first out.
#[derive(Default)]
pub(super) struct Delivered {
    order: VecDeque<Key>,
    seen: HashSet<Key>,
    /// The cursor a stream started from: the client has that event, but
    /// its data is unknown here, so its id alone marks a copy (as an exact
    /// repeat of the cursor always did).
    start: Option<Arc<str>>,
}

fn digest(data: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    data.hash(&mut hasher);
    hasher.finish()
}

impl Delivered {
    /// A set that knows the event `id` the stream starts after.
    pub(super) fn starting_at(id: Option<&str>) -> Self {
        Self {
            start: id.map(Arc::from),
            ..Self::default()
        }
    }

    /// Whether the event `id` with `data` was delivered among the latest
    /// [`CAPACITY`] (or is the one the stream started after).
    pub(super) fn contains(&self, id: &str, data: &str) -> bool {
        self.start.as_deref() == Some(id) || self.seen.contains(&(Arc::from(id), digest(data)))
    }

    /// Remembers the event `id` with `data`, forgetting the oldest when
    /// full; whether it was new among the latest [`CAPACITY`].
    pub(super) fn insert(&mut self, id: &str, data: &str) -> bool {
        let key: Key = (Arc::from(id), digest(data));
        if self.seen.contains(&key) {
            return false;
        }
        if self.order.len() >= CAPACITY
            && let Some(oldest) = self.order.pop_front()
        {
            self.seen.remove(&oldest);
        }
        self.seen.insert(key.clone());
        self.order.push_back(key);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_id_is_forgotten_when_full() {
        let mut delivered = Delivered::default();
        delivered.insert("0", "d");
        for i in 1..=CAPACITY {
            delivered.insert(&i.to_string(), "d");
        }
        assert!(!delivered.contains("0", "d"), "the oldest went");
        assert!(delivered.contains("1", "d"));
        assert!(delivered.contains(&CAPACITY.to_string(), "d"));
        assert_eq!(delivered.order.len(), CAPACITY);
        assert_eq!(delivered.seen.len(), CAPACITY);
    }

    #[test]
    fn an_id_twice_is_kept_once() {
        let mut delivered = Delivered::default();
        delivered.insert("a", "d");
        delivered.insert("a", "d");
        assert_eq!(delivered.order.len(), 1);
        assert!(delivered.contains("a", "d"));
        assert!(!delivered.contains("b", "d"));
    }

    #[test]
    fn an_id_again_with_other_data_is_a_new_event() {
        // Per-connection ids: a resume's new events are numbered from 1
        // again; only the same id with the same data is a copy.
        let mut delivered = Delivered::default();
        delivered.insert("1", "progress 1");
        assert!(delivered.contains("1", "progress 1"));
        assert!(!delivered.contains("1", "progress 4"));
    }
}
