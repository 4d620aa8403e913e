//! How often a stream that hears nothing is asked again.
//!
//! A resume the server holds and keeps quiet is a call still working (or an
//! idle session); it is no failure, and nothing counts it. But each time it
//! is asked again costs a `GET`, so a run of such connections is asked ever
//! more rarely, and an event ends the run:
//!
//! | After this many quiet connections in a row | A silent resume is waited on | The next `GET` after a held connection, from the last one |
//! |---|---|---|
//! | 0 | `silent_resume_timeout` | at once |
//! | 1 | twice that | at once |
//! | 2 | four times | 1 s |
//! | n | 2ⁿ times, at most [`MAX_REFRESH_WAIT`] | 2ⁿ⁻² s, at most `max_delay` |
//!
//! A quiet connection is one made with a cursor that ended on that cursor
//! having been held (for the silence timeout, or the hold while it broke or
//! closed): it delivered nothing new. The last column spaces `GET`s, start
//! to start: a connection that lived longer than the spacing is followed at
//! once, so a proxy's minute-long lifetime costs nothing, and a 6 s one costs
//! a `GET` every `max_delay`. The refresh waits on an open connection, so it
//! delays nothing the server sends; the spacing delays only what the
//! server's store keeps for the cursor.

use std::time::Duration;

/// The longest a silent resume is held before it is refreshed: an idle
/// session asks about six times an hour.
pub(super) const MAX_REFRESH_WAIT: Duration = Duration::from_secs(600);

/// The first delay after a held connection that the run makes wait.
const FIRST_QUIET_DELAY: Duration = Duration::from_secs(1);

/// How long a silent resume of a server that never vouched is waited on,
/// after `quiet` quiet connections in a row; never less than `base`.
pub(super) fn refresh_wait(base: Duration, quiet: u32) -> Duration {
    base.saturating_mul(2u32.saturating_pow(quiet))
        .min(MAX_REFRESH_WAIT)
        .max(base)
}

/// The least time from one `GET` to the next after a held connection that
/// ended, when it was the `quiet`th quiet connection in a row: the first
/// two go on at once, the rest are spaced longer each time, up to `cap`.
pub(super) fn quiet_delay(quiet: u32, cap: Duration) -> Duration {
    match quiet.checked_sub(2) {
        None => Duration::ZERO,
        Some(n) => FIRST_QUIET_DELAY
            .saturating_mul(2u32.saturating_pow(n))
            .min(cap),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn refresh_waits_double_from_the_timeout_up_to_ten_minutes() {
        let waits: Vec<_> = (0..9).map(|q| refresh_wait(S(10), q)).collect();
        assert_eq!(
            waits,
            [
                S(10),
                S(20),
                S(40),
                S(80),
                S(160),
                S(320),
                S(600),
                S(600),
                S(600)
            ]
        );
        // A timeout above the cap is still the least wait.
        assert_eq!(refresh_wait(S(900), 3), S(900));
        assert_eq!(refresh_wait(S(10), u32::MAX), MAX_REFRESH_WAIT);
    }

    #[test]
    fn held_connections_go_on_at_once_twice_then_wait_longer_each_time() {
        let delays: Vec<_> = (0..9).map(|q| quiet_delay(q, S(30))).collect();
        assert_eq!(
            delays,
            [S(0), S(0), S(1), S(2), S(4), S(8), S(16), S(30), S(30)]
        );
        assert_eq!(quiet_delay(u32::MAX, S(30)), S(30));
    }
}
