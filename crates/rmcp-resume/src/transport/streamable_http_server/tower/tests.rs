//! The service's pure parts: the warning throttle, header parsing, config.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::HeaderValue;
use tracing::Level;
use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt};

use super::StreamableHttpServerConfig;
use super::request::accepts_event_stream;
use super::stats::Telemetry;
use crate::transport::common::server_side_http::SessionId;

/// Counts events by level.
#[derive(Clone, Default)]
struct Levels(Arc<[AtomicUsize; 2]>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Levels {
    fn on_event(&self, event: &tracing::Event<'_>, _: LayerContext<'_, S>) {
        match *event.metadata().level() {
            Level::WARN => self.0[0].fetch_add(1, Ordering::SeqCst),
            Level::DEBUG => self.0[1].fetch_add(1, Ordering::SeqCst),
            _ => 0,
        };
    }
}

#[tokio::test(start_paused = true)]
async fn resume_failures_warn_once_per_session_per_minute() {
    let levels = Levels::default();
    let subscriber = tracing_subscriber::registry().with(levels.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let telemetry = Telemetry::default();
    let (a, b): (SessionId, SessionId) = ("a".into(), "b".into());
    let counts = || {
        (
            levels.0[0].load(Ordering::SeqCst),
            levels.0[1].load(Ordering::SeqCst),
        )
    };

    // A peer looping on a bad cursor: one WARN, the rest at DEBUG.
    for _ in 0..100 {
        telemetry.resume_failed(&a, "5", "evicted", Some("9"));
    }
    assert_eq!(counts(), (1, 99));
    // Another session has its own budget.
    telemetry.resume_failed(&b, "5", "evicted", None);
    assert_eq!(counts(), (2, 99));
    // Still inside the minute for `a`.
    tokio::time::advance(Duration::from_secs(59)).await;
    telemetry.resume_failed(&a, "5", "evicted", Some("9"));
    assert_eq!(counts(), (2, 100));
    // A minute after the last WARN, `a` may warn again.
    tokio::time::advance(Duration::from_secs(2)).await;
    telemetry.resume_failed(&a, "5", "evicted", Some("9"));
    assert_eq!(counts(), (3, 100));
}

#[test]
fn accept_header_parsing_honours_q_zero() {
    let accepts = |value: &str| {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_str(value).unwrap_or_else(|e| panic!("{e}")),
        );
        accepts_event_stream(&headers)
    };
    assert!(accepts("text/event-stream"));
    assert!(accepts("application/json, TEXT/EVENT-STREAM;q=0.5"));
    assert!(!accepts("text/event-stream;q=0"));
    assert!(!accepts("application/json"));
    assert!(!accepts("text/*"));
}

#[test]
fn the_default_config_keeps_sessions_and_primes_a_retry() {
    // The fork's resumption needs both: sessions hold the logs, and the
    // priming `retry` is the delay the server asks of reconnecting clients.
    let defaults = StreamableHttpServerConfig::default();
    assert!(crate::line::session_mode(&defaults));
    assert_eq!(defaults.sse_retry, Some(Duration::from_secs(3)));
}

#[tokio::test(start_paused = true)]
async fn the_warning_throttle_forgets_ended_sessions_and_sweeps_at_most_once_a_minute() {
    let telemetry = Telemetry::default();
    let a: SessionId = "a".into();
    telemetry.resume_failed(&a, "5", "evicted", None);
    assert_eq!(telemetry.remembered(), 1);
    telemetry.forget(&a);
    assert_eq!(telemetry.remembered(), 0, "a DELETE forgets the session");

    // Past 4,096 sessions the stale ones are swept, once per interval.
    for i in 0..5_000 {
        telemetry.resume_failed(&format!("s{i}").into(), "5", "evicted", None);
    }
    assert_eq!(telemetry.remembered(), 5_000, "none is stale yet");
    tokio::time::advance(Duration::from_secs(61)).await;
    telemetry.resume_failed(&"late".into(), "5", "evicted", None);
    assert_eq!(
        telemetry.remembered(),
        1,
        "the stale ones went in one sweep"
    );
}
