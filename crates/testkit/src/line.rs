//! The model spellings that differ between the rmcp lines the testkit is
//! compiled for (`cfg(rmcp_line_1)`: rmcp 1.x, and 2.x with
//! `cfg(rmcp_line_2)`), under their 3.x names. The
//! wire format is the same on both lines; only the Rust names moved.

#[cfg(not(rmcp_line_1))]
pub use rmcp::model::{
    CallToolResponse, ClientConfig, ElicitRequestParams, GetPromptResponse, ReadResourceResponse,
    RequestMetaObject, ServerConfig,
};

#[cfg(rmcp_line_1)]
pub use rmcp::model::{
    CallToolResult as CallToolResponse, ClientInfo as ClientConfig,
    GetPromptResult as GetPromptResponse, Meta as RequestMetaObject,
    ReadResourceResult as ReadResourceResponse, ServerInfo as ServerConfig,
};

// 1.8's name; 2.2 already has 3.x's (and deprecates 1.8's).
#[cfg(all(rmcp_line_1, not(rmcp_line_2)))]
pub use rmcp::model::CreateElicitationRequestParams as ElicitRequestParams;
#[cfg(rmcp_line_2)]
pub use rmcp::model::ElicitRequestParams;

/// Turns sessions off (3.x: `legacy_session_mode`, 1.x: `stateful_mode`).
pub fn without_sessions(
    config: rmcp::transport::StreamableHttpServerConfig,
) -> rmcp::transport::StreamableHttpServerConfig {
    #[cfg(not(rmcp_line_1))]
    return config.with_legacy_session_mode(false);
    #[cfg(rmcp_line_1)]
    return config.with_stateful_mode(false);
}
