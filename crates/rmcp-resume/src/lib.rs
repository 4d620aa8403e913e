//! `rmcp-resume`: upstream [rmcp] with a streamable-HTTP transport whose
//! resumption cannot loop and cannot lose events silently.
//!
//! One source, three upstream lines: `rmcp-resume` overlays rmcp 3.11.0,
//! `rmcp-resume-2` rmcp 2.2.0 and `rmcp-resume-1` rmcp 1.8.0
//! ([`fork::UPSTREAM_VERSION`] says which). Everything upstream exports is re-exported unchanged, so an
//! application switches by renaming the dependency:
//!
//! ```toml
//! rmcp = { package = "rmcp-resume", version = "0.1", features = ["server"] }    # rmcp 3.x
//! rmcp = { package = "rmcp-resume-2", version = "0.1", features = ["server"] }  # rmcp 2.x
//! rmcp = { package = "rmcp-resume-1", version = "0.1", features = ["server"] }  # rmcp 1.x
//! ```
//!
//! The procedural macros (`#[tool]`, `#[tool_router]`, …) emit `rmcp::…`
//! paths; they resolve through this crate because its items *are* upstream's
//! items. Only the modules whose behaviour the fork changes are owned here and
//! shadow upstream's paths; [`fork`] tells a build which crate it got.
//!
//! The modules the fork owns, each a thin facade over `rmcp_resume_core`
//! (which holds the decisions, the logs, the wire writer and the reconnect
//! machine):
//!
//! | Path | What the fork changes |
//! |---|---|
//! | [`transport::resumption`] | new: the core's resumption decisions, re-exported |
//! | [`transport::streamable_http_server::session::local`] | per-stream replay logs; resumes decided by the core's `plan` |
//! | [`transport::streamable_http_server::tower`] | the `GET`: no empty `200`, a replay notice, refusals that name the floor |
//! | [`transport::common::client_side_sse`] | the resuming SSE stream: reconnects judged, bounded, never looping |
//! | [`transport::streamable_http_client`] | the client transport over a guard that owns every stream's reconnects |
//! | [`fork`] | new: which crate and versions a build got |
//!
//! Everything else is upstream's, re-exported unchanged. Where the two lines
//! differ, the glue goes through one small crate-private module per line
//! (`src/line/v3.rs`, `src/line/v1.rs`).
//!
//! [rmcp]: https://docs.rs/rmcp
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

// Lets code in this crate (and its unit tests) use the `rmcp::…` paths the
// macros generate.
extern crate self as rmcp;

pub use upstream::*;

pub mod fork;

mod line;

#[cfg(any(feature = "client", feature = "server"))]
pub mod transport;
