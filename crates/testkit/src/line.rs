//! The model spellings that differ between the two rmcp lines the testkit is
//! compiled for (`cfg(rmcp_line_1)`: rmcp 1.x), under their 3.x names. The
//! wire format is the same on both lines; only the Rust names moved.

#[cfg(not(rmcp_line_1))]
pub use rmcp::model::{
    CallToolResponse, ClientConfig, ElicitRequestParams, GetPromptResponse, ReadResourceResponse,
    RequestMetaObject, ServerConfig,
};

#[cfg(rmcp_line_1)]
pub use rmcp::model::{
    CallToolResult as CallToolResponse, ClientInfo as ClientConfig,
    CreateElicitationRequestParams as ElicitRequestParams, GetPromptResult as GetPromptResponse,
    Meta as RequestMetaObject, ReadResourceResult as ReadResourceResponse,
    ServerInfo as ServerConfig,
};

/// Turns sessions off (3.x: `legacy_session_mode`, 1.x: `stateful_mode`).
pub fn without_sessions(
    config: rmcp::transport::StreamableHttpServerConfig,
) -> rmcp::transport::StreamableHttpServerConfig {
    #[cfg(not(rmcp_line_1))]
    return config.with_legacy_session_mode(false);
    #[cfg(rmcp_line_1)]
    return config.with_stateful_mode(false);
}
