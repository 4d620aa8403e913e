//! Upstream's shared transport pieces, with the fork's reconnecting SSE
//! stream added to [`client_side_sse`].

pub use upstream::transport::common::*;

#[cfg(feature = "client-side-sse")]
pub mod client_side_sse;
