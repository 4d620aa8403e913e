//! Hashing for the keys a session makes itself.
//!
//! A session's request streams are numbered by the server (its counter, or
//! a block of numbers a shared log reserved), so no peer chooses these keys
//! and SipHash's defence against chosen collisions buys nothing there; it cost about 0.8 k instructions
//! per tool call over upstream (docs/perf/2026-12-03-server-instruction-profile.md). Keys a
//! peer writes (a JSON-RPC request id, a session id in a header) keep the standard hasher.

use std::hash::{BuildHasherDefault, Hasher};

/// The hasher of [`ServerKeys`]: each integer write is mixed in by a
/// multiplicative step, so consecutive counters differ both in the low bits
/// (hashbrown's bucket) and in the high bits (its control byte). A caller
/// choosing keys could collide them at will: peer-chosen keys never use it.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CounterHasher(u64);

/// The golden-ratio multiplier of Fibonacci hashing.
const SPREAD: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for CounterHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(29) ^ n).wrapping_mul(SPREAD);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_isize(&mut self, n: isize) {
        self.write_u64(n as u64);
    }
}

/// Builds [`CounterHasher`]s: for maps and sets keyed by server-made stream
/// numbers.
pub(crate) type ServerKeys = BuildHasherDefault<CounterHasher>;

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    use super::*;
    use crate::resumption::StreamId;

    #[test]
    fn consecutive_counters_differ_in_the_high_bits() {
        let tops: HashSet<u64> = (0..128u64)
            .map(|n| ServerKeys::default().hash_one(n) >> 57)
            .collect();
        // 128 counters over 128 possible 7-bit tags: a uniform draw hits
        // about 81 of them (1 - 1/e); a poor spread hits a handful.
        assert!(tops.len() > 70, "only {} distinct tags", tops.len());
    }

    #[test]
    fn consecutive_counters_spread_over_the_buckets() {
        // The low bits pick the bucket: 1,024 counters in 1,024 buckets.
        let buckets: HashSet<u64> = (0..1_024u64)
            .map(|n| ServerKeys::default().hash_one(n) & 1_023)
            .collect();
        assert!(buckets.len() > 600, "only {} buckets used", buckets.len());
    }

    #[test]
    fn every_integer_width_is_mixed_in() {
        // Narrow integers reach the hasher as bytes (`write`), a `usize`
        // through `write_usize`: each must change the hash.
        let keys = ServerKeys::default();
        let narrow: HashSet<u64> = (0..1_024u32).map(|n| keys.hash_one(n)).collect();
        let sized: HashSet<u64> = (0..1_024usize).map(|n| keys.hash_one(n)).collect();
        assert_eq!((narrow.len(), sized.len()), (1_024, 1_024));
    }

    #[test]
    fn stream_ids_hash_apart() {
        let keys = ServerKeys::default();
        let standalone = keys.hash_one(StreamId::Standalone);
        let hashes: HashSet<u64> = (0..10_000u64)
            .map(|n| keys.hash_one(StreamId::Request(n)))
            .chain([standalone])
            .collect();
        assert_eq!(hashes.len(), 10_001);
    }
}
