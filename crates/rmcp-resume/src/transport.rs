//! Upstream's transport layer.
//!
//! Everything here is upstream's `rmcp::transport`, re-exported unchanged.
//! Modules the fork owns are declared below the glob; a named item always
//! shadows a glob import, so each owned module replaces upstream's path
//! without touching the rest.

pub use upstream::transport::*;

pub mod common;

#[cfg(feature = "transport-worker")]
pub mod worker;
#[cfg(feature = "transport-worker")]
pub use worker::WorkerTransport;

/// The resumption decisions, shared by the fork's server and client:
/// `rmcp_resume_core::resumption`, at the path applications already use.
pub use rmcp_resume_core::resumption;

#[cfg(feature = "transport-streamable-http-server-session")]
pub mod streamable_http_server;
#[cfg(all(feature = "transport-streamable-http-server", not(feature = "local")))]
pub use streamable_http_server::tower::{StreamableHttpServerConfig, StreamableHttpService};

#[cfg(feature = "transport-streamable-http-client")]
pub mod streamable_http_client;
#[cfg(feature = "transport-streamable-http-client")]
pub use streamable_http_client::StreamableHttpClientTransport;
