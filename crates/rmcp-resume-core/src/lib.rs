//! Resumable SSE streams for MCP's streamable HTTP, with no dependency on any
//! rmcp version.
//!
//! Every rule about resuming a stream lives here, once, for both sides:
//!
//! | Module | Side | Concern |
//! |---|---|---|
//! | [`resumption`] | both | event ids and cursors, the client's verdict on a reconnect, the server's [`plan`](resumption::plan()) for a resume, the replay notice, idle timeouts |
//! | [`log`] | server | each stream's bounded replay log and the readers that drain it |
//! | [`session`] | server | one session's streams: admission, backpressure, eviction across streams, expiry, stalls |
//! | [`wire`] | server | the SSE response body: batching, keep-alive comments, the notice frame |
//! | [`shared`] | server | a log shared by several instances: the interface a backend implements, and the gate that makes a reader wait for the commit |
//! | [`reconnect`] | client | the reconnect state machine, generic over a [`Connector`](reconnect::Connector) |
//!
//! The crates `rmcp-resume` (rmcp 3.x) and its siblings for other rmcp lines
//! are thin glue from rmcp's traits onto these pieces.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod log;
pub mod reconnect;
pub mod resumption;
#[doc(hidden)]
pub mod sabotage;
pub mod session;
pub mod shared;
pub mod wire;

#[cfg(test)]
mod proptest_config;
