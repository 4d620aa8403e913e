//! A timer the worker's loop keeps for the session's life.
//!
//! The loop reads its deadlines (a stalled reader's, the next answered
//! stream's expiry) at every turn. A fresh `sleep_until` per turn registers
//! with tokio's timer wheel and leaves it again, about 0.9 k instructions per
//! tool call (docs/perf/2026-12-03-server-instruction-profile.md); one
//! `Sleep` re-armed only when its deadline moves leaves the wheel alone on
//! the common path.

use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// One optional deadline, backed by one `Sleep`.
pub(super) struct Alarm {
    sleep: Pin<Box<Sleep>>,
    armed: Option<Instant>,
}

impl Alarm {
    /// A disarmed alarm.
    pub(super) fn new() -> Self {
        Self {
            sleep: Box::pin(tokio::time::sleep_until(after(
                Instant::now(),
                Duration::MAX,
            ))),
            armed: None,
        }
    }

    /// Rings at `at`, or never for `None`; the timer is touched only when the
    /// deadline changed. Disarming pushes the timer out of reach, so a stale
    /// deadline never wakes the loop for nothing.
    pub(super) fn set(&mut self, at: Option<Instant>) {
        if at != self.armed {
            let deadline = at.unwrap_or_else(|| after(Instant::now(), Duration::MAX));
            self.sleep.as_mut().reset(deadline);
            self.armed = at;
        }
    }

    /// Whether a deadline is set (the `select!` guard of [`ring`](Self::ring)).
    pub(super) fn is_armed(&self) -> bool {
        self.armed.is_some()
    }

    /// Resolves at the deadline and disarms, so that setting the same
    /// deadline again rings again; a disarmed alarm never resolves.
    /// Cancel-safe: dropped before the deadline, it stays armed.
    pub(super) async fn ring(&mut self) {
        if self.armed.is_none() {
            return std::future::pending().await;
        }
        self.sleep.as_mut().await;
        self.armed = None;
    }
}

/// `from + span`, or a point decades away when that does not fit (a
/// `Duration::MAX` keep-alive means "never"); never panics.
pub(super) fn after(from: Instant, span: Duration) -> Instant {
    const NEVER: Duration = Duration::from_secs(30 * 365 * 86_400);
    from.checked_add(span)
        .or_else(|| from.checked_add(NEVER))
        .unwrap_or(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn rings_at_its_deadline_and_again_when_set_again() {
        let mut alarm = Alarm::new();
        assert!(!alarm.is_armed());
        let at = Instant::now() + Duration::from_secs(5);
        alarm.set(Some(at));
        alarm.ring().await;
        assert!(Instant::now() >= at);
        assert!(!alarm.is_armed());
        // The same deadline, set again after ringing, rings again at once.
        alarm.set(Some(at));
        assert!(alarm.is_armed());
        tokio::time::timeout(Duration::from_millis(1), alarm.ring())
            .await
            .expect("a deadline in the past rings at once");
    }

    #[tokio::test(start_paused = true)]
    async fn a_moved_deadline_wins_and_a_disarmed_alarm_stays_silent() {
        let mut alarm = Alarm::new();
        let start = Instant::now();
        alarm.set(Some(start + Duration::from_secs(10)));
        alarm.set(Some(start + Duration::from_secs(2)));
        alarm.ring().await;
        assert_eq!(Instant::now(), start + Duration::from_secs(2));
        alarm.set(Some(start + Duration::from_secs(60)));
        alarm.set(None);
        assert!(!alarm.is_armed());
        // Disarmed, it stays silent past the deadline it had.
        assert!(
            tokio::time::timeout(Duration::from_secs(120), alarm.ring())
                .await
                .is_err()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_ring_dropped_before_its_deadline_stays_armed() {
        let mut alarm = Alarm::new();
        let at = Instant::now() + Duration::from_secs(3);
        alarm.set(Some(at));
        assert!(
            tokio::time::timeout(Duration::from_secs(1), alarm.ring())
                .await
                .is_err()
        );
        assert!(alarm.is_armed());
        alarm.ring().await;
        assert_eq!(Instant::now(), at);
    }

    #[test]
    fn a_span_past_the_clock_is_decades_away_not_a_panic() {
        let now = Instant::now();
        assert!(after(now, Duration::MAX) > now + Duration::from_secs(86_400 * 365));
    }
}
