//! TCP keepalive on the fork's default client: how a dead connection is
//! found.
//!
//! A connection dropped without a word (a NAT or load balancer that forgot
//! it, a laptop that slept) leaves an SSE stream waiting for bytes that
//! never come. A quiet tool sends no event; a server that sends keep-alive
//! comments lets the reconnect machine tell (`rmcp_resume_core`'s
//! `reconnect/liveness.rs`), one that sends none leaves it to the socket. With keepalive, the kernel probes a
//! connection quiet for [`IDLE`], [`PROBES`] times [`INTERVAL`] apart; a
//! connection that answers none breaks, and the break is resumed from the
//! cursor as any other. A dead connection is so found within
//! `IDLE + PROBES × INTERVAL` (30 s) of the last packet it carried. A
//! healthy one costs a probe and its answer per quiet `IDLE`, and nothing
//! while a server's keep-alives run more often. Probes end at whatever
//! terminates TCP: a proxy or load balancer that answers them hides a dead
//! path behind it, found only by the server's keep-alives stopping (issue
//! 42, finding 7) or by `idle_timeout`.

use std::time::Duration;

/// How long a connection stays quiet before the first probe.
pub(crate) const IDLE: Duration = Duration::from_secs(15);

/// Between probes.
pub(crate) const INTERVAL: Duration = Duration::from_secs(5);

/// Unanswered probes before the connection is given up.
pub(crate) const PROBES: u32 = 3;

/// `builder`, with the fork's TCP keepalive.
pub(crate) fn with_tcp_keepalive(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    builder
        .tcp_keepalive(IDLE)
        .tcp_keepalive_interval(INTERVAL)
        .tcp_keepalive_retries(PROBES)
}
