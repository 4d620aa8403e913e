//! Identity of the fork.
//!
//! Upstream has no `fork` module, so `rmcp::fork` compiling at all proves that
//! the build resolved `rmcp` to this crate rather than to crates.io's rmcp.

/// The upstream rmcp release this build overlays; the overlay pins it exactly
/// (`3.11.0`, `2.2.0` or `1.8.0`, by line).
pub const UPSTREAM_VERSION: &str = crate::line::UPSTREAM_VERSION;

/// The release of the fork itself.
pub const FORK_VERSION: &str = "0.1.0";

/// The package this source was compiled as: `rmcp-resume` when taken by
/// renaming the dependency, `rmcp` when taken through `[patch.crates-io]`.
pub const PACKAGE: &str = env!("CARGO_PKG_NAME");

#[cfg(all(feature = "transport-streamable-http-server", not(feature = "local")))]
crate::line::session_service!();

#[cfg(test)]
mod tests;
