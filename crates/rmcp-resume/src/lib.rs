//! `rmcp-resume`: upstream [rmcp] 3.11.0 with a streamable-HTTP transport
//! whose resumption cannot loop and cannot lose events silently.
//!
//! Everything upstream exports is re-exported unchanged, so an application
//! switches by renaming the dependency:
//!
//! ```toml
//! rmcp = { package = "rmcp-resume", version = "0.1", features = ["server"] }
//! ```
//!
//! The procedural macros (`#[tool]`, `#[tool_router]`, …) emit `rmcp::…`
//! paths; they resolve through this crate because its items *are* upstream's
//! items. Only the modules whose behaviour the fork changes are owned here and
//! shadow upstream's paths; [`fork`] tells a build which crate it got.
//!
//! [rmcp]: https://docs.rs/rmcp/3.11.0
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

// Lets code in this crate (and its unit tests) use the `rmcp::…` paths the
// macros generate.
extern crate self as rmcp;

pub use upstream::*;

pub mod fork;

#[cfg(any(feature = "client", feature = "server"))]
pub mod transport;
