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
//! | 2 or more | send again after the retry policy's delay for `failures - 1`; stop if the policy has none |

use std::time::Duration;

use super::{ResumeConfig, RetryPolicy};

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
        n => policy.retry(n - 1),
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
        let policy = Fixed(Some(Duration::from_millis(50)));
        let config = ResumeConfig::default().with_max_transport_failures(3);
        assert_eq!(
            resend_handshake(2, &config, &policy),
            Some(Duration::from_millis(50))
        );
        assert_eq!(resend_handshake(3, &config, &policy), None);
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
