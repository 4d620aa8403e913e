//! A `Retry-After` value as a delay (RFC 9110 §10.2.3).

use std::time::{Duration, SystemTime};

/// The delay a `Retry-After` value asks for, at `now`: delay-seconds, or an
/// HTTP date (a date already past asks for none). `None` for anything else.
pub fn retry_after_delay(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // More digits than a u64 holds: as long as can be said.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_dates_are_read() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let delay = |v: &str| retry_after_delay(v, now);
        assert_eq!(delay("120"), Some(Duration::from_secs(120)));
        assert_eq!(delay(" 0 "), Some(Duration::ZERO));
        assert_eq!(
            delay("99999999999999999999999"),
            Some(Duration::from_secs(u64::MAX))
        );
        // RFC 9110's example date is `now`; ten seconds later asks for ten.
        assert_eq!(delay("Sun, 06 Nov 1994 08:49:37 GMT"), Some(Duration::ZERO));
        assert_eq!(
            delay("Sun, 06 Nov 1994 08:49:47 GMT"),
            Some(Duration::from_secs(10))
        );
        assert_eq!(delay("Sat, 05 Nov 1994 08:49:37 GMT"), Some(Duration::ZERO));
        assert_eq!(delay("-5"), None);
        assert_eq!(delay("soon"), None);
        assert_eq!(delay(""), None);
    }
}
