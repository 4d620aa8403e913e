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
    #[cfg(all(rmcp_line_1, not(rmcp_line_0_17)))]
    return config.with_stateful_mode(false);
    // 0.17's config has no builders.
    #[cfg(rmcp_line_0_17)]
    return rmcp::transport::StreamableHttpServerConfig {
        stateful_mode: false,
        ..config
    };
}

/// A progress notification: `progress` out of `total`.
pub fn progress(
    token: rmcp::model::ProgressToken,
    progress: f64,
    total: f64,
) -> rmcp::model::ProgressNotificationParam {
    #[cfg(not(rmcp_line_0_17))]
    return rmcp::model::ProgressNotificationParam::new(token, progress).with_total(total);
    // 0.17's params have no constructors.
    #[cfg(rmcp_line_0_17)]
    return rmcp::model::ProgressNotificationParam {
        progress_token: token,
        progress,
        total: Some(total),
        message: None,
    };
}

/// A resource-updated notification for `uri`.
pub fn resource_updated(uri: String) -> rmcp::model::ResourceUpdatedNotificationParam {
    #[cfg(not(rmcp_line_0_17))]
    return rmcp::model::ResourceUpdatedNotificationParam::new(uri);
    #[cfg(rmcp_line_0_17)]
    return rmcp::model::ResourceUpdatedNotificationParam { uri };
}

/// An info log message from `logger`.
// The everything server's logging tool still sends it; 3.x deprecates
// logging (SEP-2577).
#[allow(deprecated)]
pub fn log_info(
    logger: &str,
    data: serde_json::Value,
) -> rmcp::model::LoggingMessageNotificationParam {
    #[cfg(not(rmcp_line_0_17))]
    return rmcp::model::LoggingMessageNotificationParam::new(
        rmcp::model::LoggingLevel::Info,
        data,
    )
    .with_logger(logger);
    #[cfg(rmcp_line_0_17)]
    return rmcp::model::LoggingMessageNotificationParam {
        level: rmcp::model::LoggingLevel::Info,
        logger: Some(logger.to_owned()),
        data,
    };
}

/// A server's info: its capabilities and instructions.
pub fn server_info(
    capabilities: rmcp::model::ServerCapabilities,
    instructions: &str,
) -> ServerConfig {
    #[cfg(not(rmcp_line_0_17))]
    return ServerConfig::new(capabilities).with_instructions(instructions);
    #[cfg(rmcp_line_0_17)]
    return ServerConfig {
        capabilities,
        instructions: Some(instructions.to_owned()),
        ..Default::default()
    };
}

/// The default server configuration, stopped by `ct`.
pub fn server_config(
    ct: tokio_util::sync::CancellationToken,
) -> rmcp::transport::StreamableHttpServerConfig {
    #[cfg(not(rmcp_line_0_17))]
    return rmcp::transport::StreamableHttpServerConfig::default().with_cancellation_token(ct);
    // 0.17's config has no builders.
    #[cfg(rmcp_line_0_17)]
    return rmcp::transport::StreamableHttpServerConfig {
        cancellation_token: ct,
        ..Default::default()
    };
}

/// A `tools/call`'s params: `name`, `arguments`, and (but on 0.15) the
/// progress token `token` in `_meta`. Upstream 0.15 writes a request's own
/// progress token beside the params' `_meta`, so params carrying one go out
/// with `_meta` twice, which servers refuse (`415`; 0.16 merged them); on
/// 0.15 the call keeps the token its peer gives every request.
pub fn call_params(name: &str, arguments: serde_json::Value, token: &str) -> serde_json::Value {
    #[cfg(not(rmcp_line_0_15))]
    return serde_json::json!({
        "name": name,
        "arguments": arguments,
        "_meta": { "progressToken": token }
    });
    #[cfg(rmcp_line_0_15)]
    {
        let _ = token;
        serde_json::json!({ "name": name, "arguments": arguments })
    }
}
