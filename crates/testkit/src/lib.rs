//! Test support for rmcp-resume (unpublished).
//!
//! | Module | What it gives a test |
//! |---|---|
//! | [`server`] | [`TestServer`]: the one way to start a test server, on the fork or on upstream rmcp 3.11.0 |
//! | [`buffering`] | a reverse proxy that holds responses back as nginx's `proxy_buffering` does |
//! | [`demo`] | [`DemoServer`]: the tools the tests call, gated so a test decides when a response exists |
//! | `event_store` | an `EventStore` in memory that can forget its oldest events (3.x line) |
//! | [`everything`] | the handler the official conformance suite drives |
//! | [`line`](mod@line) | the model names that differ between rmcp 1.x and 3.x, under their 3.x spellings |
//! | `faults` | a seeded, bounded fault checker: instances of the `server` example on one Redis, a nemesis, recording clients and a checker of their histories (3.x line) |
//! | [`foreign`] | a scripted server with the id schemes rmcp does not use (session-wide, per connection) |
//! | `matrix` | the client peer matrix's cells: the fork's and upstream's clients side by side, each call recorded and judged (3.x line) |
//! | [`misbehaving`] | a scripted server breaking one resumption promise on purpose (the probe's FAIL cases) |
//! | [`progress`] | a client handler recording every progress value |
//! | [`proxy`] | a TCP proxy that cuts connections on demand or at random (seeded) |
//! | [`raw`] | a raw MCP session over HTTP, reading SSE frame by frame |
//! | [`redis`](mod@redis) | a redis-server of the test's own, and the `server` example as separate instances sharing it |
//! | [`redis_cluster`] | a Redis Cluster of the test's own on 127.0.0.1 (3 primaries, or 3 + 3 replicas), and failovers of a key's slot |
//! | [`scenario`] | the cut-call scenario, run the same way on both sides |
//! | [`scripted`] | what the tests' hand-scripted servers share: the answer to `initialize` |
//! | [`shapes`] | [`ShapesServer`](shapes::ShapesServer): the client peer matrix's tools (`quick`, `quiet`, `poll`, `stream`), as the TypeScript and Python peers offer them |
//! | [`soak`] | the churn soak (streamed calls, bursts, a standalone ticker, random cuts), tallied the same way on both sides |
//! | `store` | a session store in memory, for restores (not on 0.17, 0.16 or 0.15, which have no session store) |
//! | [`wedge`] | a session manager whose resumes fail while the session lives (the bug report's condition) |
//! | [`wire`] | a client transport that notes progress notifications in arrival order, duplicates included |

pub mod buffering;
pub mod demo;
#[cfg(not(rmcp_line_1))]
pub mod event_store;
pub mod everything;
#[cfg(not(rmcp_line_1))]
pub mod faults;
pub mod foreign;
pub mod line;
#[cfg(not(rmcp_line_1))]
pub mod matrix;
pub mod misbehaving;
pub mod progress;
pub mod proxy;
pub mod raw;
pub mod redis;
pub mod redis_cluster;
pub mod scenario;
pub mod scripted;
pub mod server;
pub mod shapes;
pub mod soak;
// 0.17 (and so 0.16 and 0.15, built as 0.17) has no session store.
#[cfg(not(rmcp_line_0_17))]
pub mod store;
pub mod wedge;
pub mod wire;

pub use demo::DemoServer;
pub use server::{Served, Side, TestServer};

/// Logs to stderr, filtered by `RUST_LOG` (default `default`), for helper
/// binaries and benches.
pub fn init_tracing(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
