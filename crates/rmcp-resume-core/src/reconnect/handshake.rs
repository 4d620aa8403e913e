//! Whether to send a handshake `POST` again after it was lost in transit.
//!
//! A request `POST` whose connection breaks before any response byte leaves
//! the client without a cursor: nothing can be resumed, and sending a
//! `tools/call` again could run the tool twice. The handshake is the
//! exception. Until `initialize` is answered and `notifications/initialized`
//! accepted there is no usable session, so losing either costs the whole
//! client, while sending it again costs at most a session nobody uses (the
//! server expires it) or an `initialized` the server has already seen.
//!
//! It counts toward `max_transport_failures`, as a resume's failures in
//! transit do:
//!
//! | Handshake posts lost in a row (`failures`) | Decision |
//! |---|---|
//! | `max_transport_failures` (at least 1) or more | stop: the error reaches the caller |
//! | 1 | send again at once: a cut connection is not a slow server |
//! | 2 or more | send again after the retry policy's delay for `failures - 1` (that count at most 16), at least 1 s and at most `max_delay`; stop if the policy has none |

use std::time::Duration;

use super::connector::MAX_POLICY_COUNT;
use super::{ResumeConfig, RetryPolicy};

/// The least wait between two resends after the first: a policy's zero
/// must not send the handshake again and again without pause.
const MIN_RESEND_DELAY: Duration = Duration::from_secs(1);

/// The delay before sending a lost handshake message again, or `None` to
/// give up. `failures` counts the losses in a row so far (1 after the first).
pub fn resend_handshake(
    failures: usize,
    config: &ResumeConfig,
    policy: &dyn RetryPolicy,
) -> Option<Duration> {
    match failures {
        n if n >= config.max_transport_failures.max(1) => None,
        0 | 1 => Some(Duration::ZERO),
        n => {
            let cap = config.max_delay.max(MIN_RESEND_DELAY);
            policy
                .retry((n - 1).min(MAX_POLICY_COUNT))
                .map(|delay| delay.clamp(MIN_RESEND_DELAY, cap))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Fixed(Option<Duration>);

    impl RetryPolicy for Fixed {
        fn retry(&self, _failures: usize) -> Option<Duration> {
            self.0
        }
    }

    #[test]
    fn the_first_loss_is_sent_again_at_once() {
        let policy = Fixed(Some(Duration::from_secs(1)));
        let config = ResumeConfig::default();
        assert_eq!(resend_handshake(1, &config, &policy), Some(Duration::ZERO));
    }

    #[test]
    fn later_losses_wait_the_policy_and_end_at_the_limit() {
        let policy = Fixed(Some(Duration::from_secs(2)));
        let config = ResumeConfig::default().with_max_transport_failures(3);
        assert_eq!(
            resend_handshake(2, &config, &policy),
            Some(Duration::from_secs(2))
        );
        assert_eq!(resend_handshake(3, &config, &policy), None);
    }

    #[test]
    fn a_resend_after_the_first_waits_at_least_a_second_and_at_most_the_cap() {
        let config = ResumeConfig::default().with_max_delay(Duration::from_secs(30));
        let zero = Fixed(Some(Duration::ZERO));
        assert_eq!(
            resend_handshake(2, &config, &zero),
            Some(Duration::from_secs(1))
        );
        let day = Fixed(Some(Duration::from_secs(86_400)));
        assert_eq!(
            resend_handshake(2, &config, &day),
            Some(Duration::from_secs(30))
        );
    }

    /// A policy whose delay names the count it was asked with, in seconds.
    #[derive(Debug)]
    struct Counting;

    impl RetryPolicy for Counting {
        fn retry(&self, count: usize) -> Option<Duration> {
            Some(Duration::from_secs(count as u64))
        }
    }

    #[test]
    fn the_policy_is_asked_with_the_losses_before_this_one() {
        let config = ResumeConfig::default().with_max_transport_failures(10);
        let asked = |failures| resend_handshake(failures, &config, &Counting);
        assert_eq!(asked(3), Some(Duration::from_secs(2)));
        assert_eq!(asked(5), Some(Duration::from_secs(4)));
    }

    /// The old lines' default policy, as in the machine's tests: two raised
    /// to the count in `u32`, unchecked.
    #[derive(Debug)]
    struct Doubling;

    impl RetryPolicy for Doubling {
        fn retry(&self, count: usize) -> Option<Duration> {
            Some(Duration::from_secs(1) * 2u32.pow(count as u32))
        }
    }

    #[test]
    fn a_high_transport_limit_never_overflows_the_old_lines_policy() {
        let config = ResumeConfig::default().with_max_transport_failures(100);
        assert_eq!(
            resend_handshake(99, &config, &Doubling),
            Some(ResumeConfig::DEFAULT_MAX_DELAY)
        );
    }

    #[test]
    fn an_exhausted_policy_stops_before_the_limit() {
        let config = ResumeConfig::default();
        assert_eq!(resend_handshake(2, &config, &Fixed(None)), None);
    }

    #[test]
    fn a_limit_of_zero_or_one_means_no_resend() {
        let policy = Fixed(Some(Duration::ZERO));
        for limit in [0, 1] {
            let config = ResumeConfig::default().with_max_transport_failures(limit);
            assert_eq!(resend_handshake(1, &config, &policy), None);
        }
    }
}
