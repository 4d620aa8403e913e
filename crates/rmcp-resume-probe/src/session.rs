//! The server under test, and MCP sessions opened on it by hand.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use crate::error::ProbeError;
use crate::sse::{FrameReader, Pause};

/// The revision the probe speaks: the last one with sessions and resumable
/// streams.
pub const PROTOCOL: &str = "2025-11-25";

/// An endpoint, with the headers and the time limit every request carries.
#[derive(Clone, Debug)]
pub struct Target {
    /// The endpoint URL.
    pub url: String,
    headers: HeaderMap,
    /// How long one request may wait for its answer.
    pub timeout: Duration,
    http: reqwest::Client,
}

impl Target {
    /// `url`, with extra `Name: value` headers on every request.
    pub fn new(url: &str, headers: &[String], timeout: Duration) -> Result<Self, ProbeError> {
        let parsed =
            reqwest::Url::parse(url).map_err(|e| ProbeError::InvalidUrl(format!("{url} ({e})")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ProbeError::InvalidUrl(url.to_owned()));
        }
        let mut map = HeaderMap::new();
        for header in headers {
            let invalid = || ProbeError::InvalidHeader(header.clone());
            let (name, value) = header.split_once(':').ok_or_else(invalid)?;
            let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| invalid())?;
            let value = HeaderValue::from_str(value.trim()).map_err(|_| invalid())?;
            map.append(name, value);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .build()
            .map_err(|e| ProbeError::Http {
                what: "building the HTTP client",
                reason: e.to_string(),
            })?;
        Ok(Self {
            url: url.to_owned(),
            headers: map,
            timeout,
            http,
        })
    }

    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        self.http
            .request(method, &self.url)
            .headers(self.headers.clone())
    }

    /// Sends `request`, waiting at most the target's timeout for the head.
    async fn send(
        &self,
        what: &'static str,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ProbeError> {
        match tokio::time::timeout(self.timeout, request.send()).await {
            Err(_) => Err(ProbeError::Timeout {
                what,
                after: self.timeout,
            }),
            Ok(result) => {
                result.map_err(|e| ProbeError::from_request(what, &self.url, self.timeout, e))
            }
        }
    }

    /// Initializes a session, or says why this is not an MCP endpoint.
    pub async fn open(&self) -> Result<Session, ProbeError> {
        let body = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": { "name": "rmcp-resume-probe", "version": env!("CARGO_PKG_VERSION") }
            }
        });
        let request = self
            .request(reqwest::Method::POST)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        let response = self.send("initialize", request).await?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            let challenge = response
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            return Err(ProbeError::Unauthorized {
                url: self.url.clone(),
                challenge,
            });
        }
        let not_mcp = |reason: String| ProbeError::NotMcp {
            url: self.url.clone(),
            reason,
        };
        if !status.is_success() {
            return Err(not_mcp(format!("initialize answered {status}")));
        }
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let kind = content_kind(&response);
        let result = match kind {
            Kind::Json => {
                let bytes = tokio::time::timeout(self.timeout, response.bytes())
                    .await
                    .map_err(|_| ProbeError::Timeout {
                        what: "initialize",
                        after: self.timeout,
                    })?
                    .map_err(|e| {
                        ProbeError::from_request("initialize", &self.url, self.timeout, e)
                    })?;
                serde_json::from_slice::<Value>(&bytes).ok()
            }
            Kind::Sse => {
                let mut reader = FrameReader::new(response);
                let mut found = None;
                for _ in 0..64 {
                    match reader.next_within(self.timeout).await {
                        Ok(frame) if frame.answers(&json!(0)) => {
                            found = frame.json();
                            break;
                        }
                        Ok(_) => {}
                        Err(Pause::Ended | Pause::Silent) => break,
                    }
                }
                found
            }
            Kind::Other(kind) => {
                return Err(not_mcp(format!(
                    "initialize answered with content type {kind:?}"
                )));
            }
        };
        let Some(result) = result else {
            return Err(not_mcp("no JSON-RPC response to initialize".to_owned()));
        };
        if result
            .get("result")
            .and_then(|r| r.get("protocolVersion"))
            .is_none()
        {
            return Err(not_mcp(format!("initialize was answered with {result}")));
        }
        let Some(session) = session else {
            return Err(not_mcp(
                "no Mcp-Session-Id: the server keeps no sessions, so it has no streams to resume"
                    .to_owned(),
            ));
        };
        let this = Session {
            target: self.clone(),
            id: session,
            next_id: 1,
        };
        let ack = this
            .post(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        if !ack.status().is_success() {
            return Err(not_mcp(format!(
                "notifications/initialized answered {}",
                ack.status()
            )));
        }
        Ok(this)
    }
}

/// What a response's `Content-Type` says it carries.
pub(crate) enum Kind {
    Json,
    Sse,
    Other(String),
}

pub(crate) fn content_kind(response: &reqwest::Response) -> Kind {
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let essence = kind.split(';').next().unwrap_or("").trim().to_owned();
    match essence.as_str() {
        "application/json" => Kind::Json,
        "text/event-stream" => Kind::Sse,
        _ => Kind::Other(kind),
    }
}

/// An initialized session.
#[derive(Debug)]
pub struct Session {
    target: Target,
    /// `Mcp-Session-Id`.
    pub id: String,
    next_id: u64,
}

impl Session {
    /// The target this session lives on.
    pub fn target(&self) -> &Target {
        &self.target
    }

    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        self.target
            .request(method)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", PROTOCOL)
    }

    /// POSTs a JSON-RPC message.
    pub async fn post(&self, body: Value) -> Result<reqwest::Response, ProbeError> {
        let request = self
            .request(reqwest::Method::POST)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        self.target.send("POST", request).await
    }

    /// Calls tool `name` with `arguments` and a progress token; returns the
    /// request id and the response whose body carries the call.
    pub async fn call(
        &mut self,
        name: &str,
        arguments: &Value,
    ) -> Result<(Value, reqwest::Response), ProbeError> {
        let id = json!(self.next_id);
        self.next_id += 1;
        let params = json!({
            "name": name,
            "arguments": arguments,
            "_meta": { "progressToken": format!("probe-{id}") }
        });
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
        Ok((id, self.post(body).await?))
    }

    /// GETs the session's stream, resuming from `cursor` if given.
    pub async fn get(&self, cursor: Option<&str>) -> Result<reqwest::Response, ProbeError> {
        let mut request = self
            .request(reqwest::Method::GET)
            .header("accept", "text/event-stream");
        if let Some(cursor) = cursor {
            request = request.header("last-event-id", cursor);
        }
        self.target.send("GET", request).await
    }

    /// DELETEs the session.
    pub async fn delete(&self) -> Result<reqwest::Response, ProbeError> {
        self.target
            .send("DELETE", self.request(reqwest::Method::DELETE))
            .await
    }

    /// The same request as [`get`](Self::get), under another session id.
    pub async fn get_as(&self, session: &str) -> Result<reqwest::Response, ProbeError> {
        let request = self
            .target
            .request(reqwest::Method::GET)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", PROTOCOL);
        self.target.send("GET", request).await
    }
}
