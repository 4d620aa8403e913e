//! SSE client utilities: upstream's retry policies and types, plus the fork's
//! [`resuming_sse_stream`], which judges every reconnect.

pub use upstream::transport::common::client_side_sse::*;

mod resume;
#[cfg(test)]
mod tests;

pub use resume::{
    Discontinuity, DiscontinuityObserver, ReconnectDisposition, ResumeConfig, ResumeStreamError,
    SseReconnect, StreamScope, resuming_sse_frames, resuming_sse_stream,
};
