//! SSE client utilities: upstream's retry policies and types, plus the fork's
//! [`resuming_sse_stream`], which judges every reconnect.
//!
//! The reconnect machine is `rmcp_resume_core::reconnect`; this module adapts
//! it to rmcp's types ([`SseRetryPolicy`], [`BoxedSseResponse`],
//! `ServerJsonRpcMessage`).

pub use upstream::transport::common::client_side_sse::*;

mod resume;

pub(crate) use resume::Policy;
pub use resume::{resuming_sse_frames, resuming_sse_stream};
pub use rmcp_resume_core::reconnect::{
    Attempt, Connector as SseReconnect, Discontinuity, DiscontinuityObserver, IdRules,
    RESUME_FAILED_CODE, ReconnectDisposition, ResumeConfig, ResumeFailure, ResumeFailureKind,
    ResumeStreamError,
};
pub use rmcp_resume_core::resumption::StreamScope;
