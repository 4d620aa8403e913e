//! The streamable-HTTP client, with reconnects that cannot loop or hang.
//!
//! Everything is upstream's except the transport type: the fork's
//! [`StreamableHttpClientTransport`] runs upstream's worker over a
//! [`ResumeGuard`], a [`StreamableHttpClient`] wrapper that takes every SSE
//! stream (a POST's response stream, the standalone GET) and makes the
//! reconnect decisions itself, with
//! [`resuming_sse_frames`](crate::transport::common::client_side_sse::resuming_sse_frames):
//!
//! - a reconnect that closes before any new event is a failed attempt; only
//!   progress resets the count; the retry policy's `max_times` holds;
//! - every reconnect is judged by [`crate::transport::resumption`]: a re-sent
//!   cursor event is dropped, a gap or an unhonoured cursor is an error;
//! - a request whose stream cannot be resumed fails promptly with a JSON-RPC
//!   error naming the cursor (it surfaces as `ServiceError::McpError`), and is
//!   never re-POSTed;
//! - the standalone stream drops a cursor that keeps failing, starts afresh,
//!   and reports a [`Discontinuity`](super::common::client_side_sse::Discontinuity) (one WARN, and
//!   [`ResumeConfig::on_discontinuity`](crate::transport::common::client_side_sse::ResumeConfig::on_discontinuity)).
//!
//! The reqwest, auth and unix-socket clients are upstream's, used unchanged.
//!
//! | File | Concern |
//! |---|---|
//! | `guard.rs` | [`ResumeGuard`]: every SSE stream through the resuming machine; a request stream ends with its response or a JSON-RPC failure |
//! | `held.rs` | a request stream a cancellation overtook while the guard waited for its answer, kept until the cancellation is sent |
//! | `connector.rs` | the reconnect `GET`, and what its failures mean |
//! | `transport.rs` | [`StreamableHttpClientTransport`] and its constructors |
//! | `worker.rs` | [`StreamableHttpClientWorker`] |

pub use upstream::transport::streamable_http_client::*;

mod connector;
mod guard;
mod held;
mod transport;
mod worker;

pub use guard::{ResumeGuard, resume_failure};
pub use transport::StreamableHttpClientTransport;
pub use worker::StreamableHttpClientWorker;
