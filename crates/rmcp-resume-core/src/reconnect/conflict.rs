//! How a `409 Conflict` is waited out.
//!
//! A server answers `409` to a reconnect while it still counts the stream's
//! previous connection as open: the TypeScript SDK does, for a resumed
//! stream or the standalone one, until it sees that connection end. From a
//! cleanup race that takes milliseconds; from a half-open connection (the
//! client's side gone, the server's still up) it takes as long as the
//! server needs to find the dead connection, which is a matter of time, not
//! of attempts. So `409`s are not counted toward
//! [`max_transport_failures`](super::ResumeConfig::max_transport_failures):
//! they are waited out for
//! [`conflict_wait`](super::ResumeConfig::conflict_wait) (2 min by default),
//! from the first `409` since the stream's last progress, and spaced ever
//! wider meanwhile:
//!
//! | After a `409` that is | The next `GET` waits |
//! |---|---|
//! | the first failure since progress | nothing (as every first failure) |
//! | the `j`th one that waits (`j` from 0) | 2ʲ s, at most `C` = 10 s or `max_delay`, whichever is less; longer if the server's `Retry-After` asks |
//!
//! The first `409` answered `conflict_wait` or more after the first one
//! ends the wait: the stream then gives up as when its failures in transit
//! run out (a request fails typed, `exhausted`; the standalone stream keeps
//! its cursor and goes on at the retry policy's pace). A request stream's
//! [`resume_deadline`](super::ResumeConfig::resume_deadline) bounds it too.
//!
//! # The bound
//!
//! With `W` = `conflict_wait`, `C` as above, and `p` = ⌈log₂(C / 1 s)⌉, a
//! run of `409`s without progress in between holds at most
//!
//! ```text
//! 2 + p + ⌈W / C⌉
//! ```
//!
//! `GET`s answered `409` (18 with the defaults: `p` = 4, `⌈120 / 10⌉` =
//! 12): after the first `409`, at most one wait is nothing, the next `p`
//! sum to 2ᵖ - 1 s, and the ⌈W / C⌉ after them to at least `W`, so the
//! `409` after those is past the wait and ends it. The cap on the spacing
//! is what a caller pays once the server lets go: at most `C` until the
//! resume.

use std::time::Duration;

/// The widest spacing of `GET`s answered `409`: once the server lets go of
/// the old connection, the resume comes at most this late.
pub(super) const CONFLICT_SPACING_CAP: Duration = Duration::from_secs(10);

/// The first spacing after a `409` that waits.
const FIRST_CONFLICT_DELAY: Duration = Duration::from_secs(1);

/// The wait after the `spaced`th `409` that waits (from 0): 1 s, doubling,
/// up to [`CONFLICT_SPACING_CAP`] or `max_delay`, whichever is less.
pub(super) fn conflict_delay(spaced: u32, max_delay: Duration) -> Duration {
    FIRST_CONFLICT_DELAY
        .saturating_mul(2u32.saturating_pow(spaced))
        .min(CONFLICT_SPACING_CAP)
        .min(max_delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn conflicts_are_spaced_one_second_doubling_up_to_ten() {
        let delays: Vec<_> = (0..7).map(|j| conflict_delay(j, S(30))).collect();
        assert_eq!(delays, [S(1), S(2), S(4), S(8), S(10), S(10), S(10)]);
        // A smaller `max_delay` is the cap.
        let delays: Vec<_> = (0..4).map(|j| conflict_delay(j, S(3))).collect();
        assert_eq!(delays, [S(1), S(2), S(3), S(3)]);
        assert_eq!(conflict_delay(u32::MAX, S(30)), CONFLICT_SPACING_CAP);
    }

    /// The `GET`s answered `409` before one lands at or past `wait`, the
    /// first wait being nothing and every later one as short as the rules
    /// allow.
    fn walked(wait: Duration, max_delay: Duration) -> usize {
        let (mut at, mut gets, mut spaced) = (Duration::ZERO, 1, 0);
        while at < wait {
            if gets > 1 {
                at += conflict_delay(spaced, max_delay);
                spaced += 1;
            }
            gets += 1;
        }
        gets
    }

    /// The module's bound, against the spacing walked out.
    #[test]
    fn the_stated_bound_holds_for_every_wait_and_cap() {
        for max_delay in [S(1), S(2), S(5), S(10), S(30), S(600)] {
            for wait in [0, 1, 5, 10, 30, 60, 120, 600].map(S) {
                let cap = CONFLICT_SPACING_CAP.min(max_delay).as_secs();
                let p = cap.next_power_of_two().trailing_zeros() as usize;
                let bound = 2 + p + wait.as_secs().div_ceil(cap) as usize;
                let gets = walked(wait, max_delay);
                assert!(gets <= bound, "{gets} > {bound} (W {wait:?}, C {cap} s)");
            }
        }
        // The defaults: 0, 0, then 1, 3, 7, 15, 25, …, 115, 125 s.
        assert_eq!(walked(S(120), S(30)), 17);
    }
}
