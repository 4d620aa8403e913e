//! An "everything" server for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, server mode), built on the overlay.
//!
//! The suite drives one stateful server through every server scenario: the
//! tools, resources, prompts, completion, logging, the SEP-1699 SSE polling
//! checks and DNS-rebinding protection. The catalogue is data (JSON the
//! scenarios specify literally), so each answer is what the scenario asks
//! for and the handler stays a thin dispatcher.
// On rmcp 1.x a handler returns the results themselves (3.x wraps them in
// `*Response`), so the `.into()`s that convert on 3.x are identities there.
#![cfg_attr(rmcp_line_1, allow(clippy::useless_conversion))]
// The 2025 revisions the suite tests keep sampling, logging and
// `resources/subscribe`, which upstream marks deprecated for 2026-07-28.
#![allow(deprecated)]

use std::sync::Arc;
use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult,
        CreateMessageRequestParams, GetPromptRequestParams, GetPromptResult, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ReadResourceRequestParams, ReadResourceResult, Reference, ServerCapabilities,
        SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
    },
    service::RequestContext,
    transport::streamable_http_server::session::local::ReplaySessionManager,
};
use serde::de::DeserializeOwned;

use crate::line::{
    CallToolResponse, ElicitRequestParams, GetPromptResponse, ReadResourceResponse, ServerConfig,
};
use serde_json::{Value, json};

/// A 1×1 PNG, base64.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
/// A RIFF/WAVE header with no samples, base64.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

/// The SSE `retry` the server asks for when it closes a stream on purpose.
pub const POLL_RETRY: Duration = Duration::from_millis(500);

/// The everything server's handler: one per session, sharing the manager so
/// that `test_reconnection` can close its own request's connection.
#[derive(Debug, Clone)]
pub struct Everything {
    manager: Arc<ReplaySessionManager>,
}

impl Everything {
    /// A handler for sessions of `manager`.
    pub fn new(manager: Arc<ReplaySessionManager>) -> Self {
        Self { manager }
    }
}

fn parse<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

fn text_result(text: impl Into<String>) -> Result<CallToolResult, ErrorData> {
    parse(json!({ "content": [{ "type": "text", "text": text.into() }] }))
}

fn no_args() -> Value {
    json!({ "type": "object", "properties": {} })
}

fn tools() -> Value {
    let tool = |name: &str, description: &str, schema: Value| json!({ "name": name, "description": description, "inputSchema": schema });
    let string_arg = |name: &str| {
        json!({
            "type": "object",
            "properties": { name: { "type": "string" } },
            "required": [name],
        })
    };
    json!([
        tool("test_simple_text", "Returns one text block", no_args()),
        tool("test_image_content", "Returns one PNG image", no_args()),
        tool("test_audio_content", "Returns one WAV clip", no_args()),
        tool(
            "test_embedded_resource",
            "Returns an embedded text resource",
            no_args()
        ),
        tool(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            no_args()
        ),
        tool(
            "test_tool_with_logging",
            "Logs three messages while running",
            no_args()
        ),
        tool(
            "test_tool_with_progress",
            "Reports three progress steps",
            no_args()
        ),
        tool(
            "test_error_handling",
            "Always fails, as a tool error",
            no_args()
        ),
        tool(
            "test_sampling",
            "Asks the client's model to answer a prompt",
            string_arg("prompt")
        ),
        tool(
            "test_elicitation",
            "Asks the user for a username and an email",
            string_arg("message")
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Elicits fields that all carry defaults",
            no_args()
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Elicits the five enum schema shapes",
            no_args()
        ),
        tool(
            "json_schema_2020_12_tool",
            "Declares a JSON Schema 2020-12 input schema",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "type": "object",
                        "properties": {
                            "street": { "type": "string" },
                            "city": { "type": "string" }
                        }
                    }
                },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" }
                },
                "additionalProperties": false
            }),
        ),
        tool(
            "test_reconnection",
            "Closes its own SSE connection before answering (SEP-1699 polling)",
            no_args(),
        ),
    ])
}

fn sep1034_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "Name", "default": "John Doe" },
            "age": { "type": "integer", "description": "Age", "default": 30 },
            "score": { "type": "number", "description": "Score", "default": 95.5 },
            "status": {
                "type": "string",
                "description": "Status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": { "type": "boolean", "description": "Verified", "default": true }
        }
    })
}

fn sep1330_schema() -> Value {
    let titled = |pairs: &[(&str, &str)]| -> Vec<Value> {
        pairs
            .iter()
            .map(|(value, title)| json!({ "const": value, "title": title }))
            .collect()
    };
    let values = [
        ("value1", "First"),
        ("value2", "Second"),
        ("value3", "Third"),
    ];
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
            "titledSingle": { "type": "string", "oneOf": titled(&values) },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
            },
            "titledMulti": {
                "type": "array",
                "items": { "anyOf": titled(&values) }
            }
        }
    })
}

fn resources() -> Value {
    json!([
        { "uri": "test://static-text", "name": "static-text", "mimeType": "text/plain" },
        { "uri": "test://static-binary", "name": "static-binary", "mimeType": "image/png" },
        { "uri": "test://watched-resource", "name": "watched-resource", "mimeType": "text/plain" }
    ])
}

fn prompts() -> Value {
    let argument = |name: &str| json!({ "name": name, "required": true });
    json!([
        { "name": "test_simple_prompt", "description": "A prompt without arguments" },
        {
            "name": "test_prompt_with_arguments",
            "description": "A prompt with two arguments",
            "arguments": [argument("arg1"), argument("arg2")]
        },
        {
            "name": "test_prompt_with_embedded_resource",
            "description": "A prompt embedding a resource",
            "arguments": [argument("resourceUri")]
        },
        { "name": "test_prompt_with_image", "description": "A prompt with an image" }
    ])
}

impl Everything {
    fn argument<'a>(request: &'a CallToolRequestParams, name: &str) -> Option<&'a str> {
        request.arguments.as_ref()?.get(name)?.as_str()
    }

    async fn log(&self, context: &RequestContext<RoleServer>, data: &str) {
        let param = crate::line::log_info("everything", json!(data));
        // A client that has gone cannot be logged to; the tool goes on.
        let _ = context.peer.notify_logging_message(param).await;
    }

    /// SEP-1699: end this request's SSE connection, keeping its stream, so
    /// that the answer produced next is delivered to the client's `GET`
    /// with `Last-Event-ID`.
    async fn close_own_connection(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let session = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
            .ok_or_else(|| ErrorData::invalid_request("test_reconnection needs a session", None))?;
        let handle = self
            .manager
            .sessions
            .read()
            .await
            .get(session)
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("session not found", None))?;
        handle
            .close_request_connection(context.id.clone(), Some(POLL_RETRY))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn sample(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let prompt = Self::argument(request, "prompt").unwrap_or("Hello");
        let params: CreateMessageRequestParams = parse(json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
            "maxTokens": 100
        }))?;
        match context.peer.create_message(params).await {
            Ok(answer) => {
                let answer = serde_json::to_value(&answer.message.content).unwrap_or_default();
                let text = answer
                    .get("text")
                    .or_else(|| answer.get(0).and_then(|c| c.get("text")))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                text_result(format!("LLM response: {text}"))
            }
            Err(e) => parse(json!({
                "content": [{ "type": "text", "text": format!("sampling failed: {e}") }],
                "isError": true
            })),
        }
    }

    async fn elicit(
        &self,
        context: &RequestContext<RoleServer>,
        message: &str,
        schema: Value,
    ) -> Result<CallToolResult, ErrorData> {
        let params: ElicitRequestParams = parse(json!({
            "mode": "form",
            "message": message,
            "requestedSchema": schema
        }))?;
        match context.peer.create_elicitation(params).await {
            Ok(answer) => text_result(format!(
                "elicitation answered: {}",
                serde_json::to_string(&answer).unwrap_or_default()
            )),
            Err(e) => parse(json!({
                "content": [{ "type": "text", "text": format!("elicitation failed: {e}") }],
                "isError": true
            })),
        }
    }

    async fn run_tool(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        match request.name.as_ref() {
            "test_simple_text" => text_result("This is a simple text response for testing."),
            "test_image_content" => parse(json!({
                "content": [{ "type": "image", "data": PNG, "mimeType": "image/png" }]
            })),
            "test_audio_content" => parse(json!({
                "content": [{ "type": "audio", "data": WAV, "mimeType": "audio/wav" }]
            })),
            "test_embedded_resource" => parse(json!({
                "content": [{
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource content."
                    }
                }]
            })),
            "test_multiple_content_types" => parse(json!({
                "content": [
                    { "type": "text", "text": "Multiple content types test:" },
                    { "type": "image", "data": PNG, "mimeType": "image/png" },
                    {
                        "type": "resource",
                        "resource": {
                            "uri": "test://mixed-content-resource",
                            "mimeType": "application/json",
                            "text": "{\"test\":\"data\",\"value\":123}"
                        }
                    }
                ]
            })),
            "test_tool_with_logging" => {
                for line in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ] {
                    self.log(context, line).await;
                }
                text_result("Logging test completed")
            }
            "test_tool_with_progress" => {
                if let Some(token) = context.meta.get_progress_token() {
                    for step in [0.0, 50.0, 100.0] {
                        let param = crate::line::progress(token.clone(), step, 100.0);
                        let _ = context.peer.notify_progress(param).await;
                    }
                }
                text_result("Progress test completed")
            }
            "test_error_handling" => parse(json!({
                "content": [{ "type": "text", "text": "This tool intentionally returns an error for testing" }],
                "isError": true
            })),
            "test_sampling" => self.sample(request, context).await,
            "test_elicitation" => {
                let message =
                    Self::argument(request, "message").unwrap_or("Please provide your details");
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": { "type": "string", "description": "User name" },
                        "email": { "type": "string", "description": "Email address" }
                    },
                    "required": ["username", "email"]
                });
                self.elicit(context, message, schema).await
            }
            "test_elicitation_sep1034_defaults" => {
                self.elicit(context, "Every field has a default", sep1034_schema())
                    .await
            }
            "test_elicitation_sep1330_enums" => {
                self.elicit(context, "Pick from each kind of enum", sep1330_schema())
                    .await
            }
            "json_schema_2020_12_tool" => text_result("schema accepted"),
            "test_reconnection" => {
                self.close_own_connection(context).await?;
                // Answered at once: the response exists before the client
                // reconnects, which is exactly the case upstream loses.
                text_result("Reconnection test completed successfully")
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other}"),
                None,
            )),
        }
    }
}

impl ServerHandler for Everything {
    fn get_info(&self) -> ServerConfig {
        let capabilities: ServerCapabilities = serde_json::from_value(json!({
            "tools": { "listChanged": true },
            "resources": { "subscribe": true, "listChanged": true },
            "prompts": { "listChanged": true },
            "logging": {},
            "completions": {}
        }))
        .unwrap_or_default();
        crate::line::server_info(capabilities, "rmcp-resume everything server")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        parse(json!({ "tools": tools() }))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run_tool(&request, &context).await.map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        parse(json!({ "resources": resources() }))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        parse(json!({
            "resourceTemplates": [{
                "uriTemplate": "test://template/{id}/data",
                "name": "template",
                "mimeType": "application/json"
            }]
        }))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => json!({
                "uri": uri, "mimeType": "text/plain",
                "text": "This is the content of the static text resource."
            }),
            "test://static-binary" => json!({ "uri": uri, "mimeType": "image/png", "blob": PNG }),
            "test://watched-resource" => json!({
                "uri": uri, "mimeType": "text/plain", "text": "watched"
            }),
            _ => match uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
            {
                Some(id) => json!({
                    "uri": uri,
                    "mimeType": "application/json",
                    "text": json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string()
                }),
                None => {
                    return Err(ErrorData::resource_not_found(
                        format!("no resource {uri}"),
                        None,
                    ));
                }
            },
        };
        let result: ReadResourceResult = parse(json!({ "contents": [contents] }))?;
        Ok(result.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let peer = context.peer.clone();
        // Nothing here changes on its own; the resource "changes" once, so
        // that the subscription is seen to work.
        tokio::spawn(async move {
            let _ = peer
                .notify_resource_updated(crate::line::resource_updated(request.uri))
                .await;
        });
        Ok(())
    }

    // With no recurring updates, there is nothing to stop.
    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        parse(json!({ "prompts": prompts() }))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let argument = |name: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|a| a.get(name))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let user = |content: Value| json!({ "role": "user", "content": content });
        let text = |text: String| json!({ "type": "text", "text": text });
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![user(text("This is a simple prompt for testing.".into()))],
            "test_prompt_with_arguments" => vec![user(text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                argument("arg1"),
                argument("arg2")
            )))],
            "test_prompt_with_embedded_resource" => {
                let uri = argument("resourceUri");
                vec![
                    user(json!({
                        "type": "resource",
                        "resource": { "uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing." }
                    })),
                    user(text("Please process the embedded resource above.".into())),
                ]
            }
            "test_prompt_with_image" => vec![
                user(json!({ "type": "image", "data": PNG, "mimeType": "image/png" })),
                user(text("Please analyze the image above.".into())),
            ],
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown prompt {other}"),
                    None,
                ));
            }
        };
        let result: GetPromptResult = parse(json!({ "messages": messages }))?;
        Ok(result.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let candidates: &[&str] = match &request.r#ref {
            Reference::Prompt(prompt) if prompt.name == "test_prompt_with_arguments" => {
                &["paris", "park", "parallel", "python"]
            }
            _ => &[],
        };
        let typed = request.argument.value.as_str();
        let values: Vec<&str> = candidates
            .iter()
            .copied()
            .filter(|c| c.starts_with(typed))
            .collect();
        parse(json!({
            "completion": { "values": values, "total": values.len(), "hasMore": false }
        }))
    }

    // The server logs only from `test_tool_with_logging`, at INFO, which
    // the suite asks for; a level is acknowledged, not applied.
    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }
}
