//! Upstream's transport layer.
//!
//! Everything here is upstream's `rmcp::transport`, re-exported unchanged.
//! Modules the fork owns are declared below the glob; a named item always
//! shadows a glob import, so each owned module replaces upstream's path
//! without touching the rest.

pub use upstream::transport::*;

pub mod resumption;
