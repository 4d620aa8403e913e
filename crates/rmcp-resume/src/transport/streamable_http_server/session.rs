//! Session management: upstream's traits and stores, the fork's
//! [`local`] session manager.

pub use upstream::transport::streamable_http_server::session::*;

pub mod local;
