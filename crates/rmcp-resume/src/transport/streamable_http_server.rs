//! The streamable-HTTP server, with the fork's resumption.
//!
//! Mirrors upstream's `streamable_http_server`: the session manager
//! ([`session::local`]) and the tower service ([`tower`]) are the fork's own;
//! everything else is upstream's, re-exported.

pub mod session;
#[cfg(all(feature = "transport-streamable-http-server", not(feature = "local")))]
pub mod tower;

pub use session::{SessionId, SessionManager};
crate::line::with_session_store! {
    pub use session::{RestoreOutcome, SessionRestoreMarker};
}
#[cfg(all(feature = "transport-streamable-http-server", not(feature = "local")))]
pub use tower::{StreamableHttpServerConfig, StreamableHttpService};
