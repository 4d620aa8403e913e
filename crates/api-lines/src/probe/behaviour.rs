// One scripted HTTP session against this line's service, in process (the
// tower service's `handle`, no socket), so that a paused clock can idle it
// for minutes: `initialize`, `initialized`, optionally a standalone `GET`
// held open, an idle spell, `tools/list`, `tools/call`. What each answer
// was, and every `retry:` the server wrote, is the transcript the tests
// compare between upstream and the overlay.

pub mod script {
    use std::time::Duration;

    use super::rmcp;

    use http_body_util::BodyExt;

    /// How the service is configured and what the client does.
    #[derive(Clone, Copy, Debug)]
    pub struct Plan {
        /// The service's `sse_retry`.
        pub sse_retry: Option<Duration>,
        /// The session's `keep_alive`; `None` keeps `SessionConfig::default()`'s.
        pub keep_alive: Option<Duration>,
        /// Whether a standalone `GET` is held open through the idle spell.
        pub hold_get: bool,
        /// How long the session idles before `tools/list`.
        pub idle: Duration,
    }

    type Service = rmcp::transport::StreamableHttpService<
        super::Plain,
        rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
    >;

    fn service(plan: Plan) -> Service {
        let mut config = rmcp::transport::StreamableHttpServerConfig::default();
        config.sse_retry = plan.sse_retry;
        let mut manager =
            rmcp::transport::streamable_http_server::session::local::LocalSessionManager::default();
        if let Some(keep_alive) = plan.keep_alive {
            manager.session_config.keep_alive = Some(keep_alive);
        }
        rmcp::transport::StreamableHttpService::new(
            || Ok(super::Plain),
            std::sync::Arc::new(manager),
            config,
        )
    }

    fn request(
        method: http::Method,
        session: Option<&str>,
        body: Option<&str>,
    ) -> http::Request<String> {
        let mut builder = http::Request::builder()
            .method(method)
            .uri("http://localhost/mcp")
            .header("host", "localhost")
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if let Some(session) = session {
            builder = builder.header("mcp-session-id", session);
        }
        builder
            .body(body.unwrap_or_default().to_owned())
            .unwrap_or_else(|e| panic!("a request: {e}"))
    }

    /// A response's status, and its body's `retry:` values and JSON-RPC
    /// outcome (`result` or `error <code>`), read until the body ends.
    async fn read(
        response: http::Response<
            impl http_body::Body<Data = bytes::Bytes, Error = std::convert::Infallible>,
        >,
    ) -> String {
        let status = response.status().as_u16();
        let body =
            match tokio::time::timeout(Duration::from_secs(30), response.into_body().collect())
                .await
            {
                Ok(Ok(body)) => String::from_utf8_lossy(&body.to_bytes()).into_owned(),
                Ok(Err(never)) => match never {},
                Err(_) => "(no end)".to_owned(),
            };
        let retries: Vec<&str> = body
            .lines()
            .filter_map(|l| l.strip_prefix("retry:"))
            .map(str::trim)
            .collect();
        let outcome = if body.contains("\"result\"") {
            "result".to_owned()
        } else if let Some(at) = body.find("\"code\":") {
            let code: String = body[at + 7..]
                .chars()
                .take_while(|c| *c == '-' || c.is_ascii_digit())
                .collect();
            format!("error {code}")
        } else {
            "-".to_owned()
        };
        format!("{status} retry={retries:?} {outcome}")
    }

    /// Runs the script; one line per step.
    pub async fn run(plan: Plan) -> Vec<String> {
        let service = service(plan);
        let mut transcript = Vec::new();
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}"#;
        let response = service
            .handle(request(http::Method::POST, None, Some(init)))
            .await;
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        transcript.push(format!(
            "initialize: {} session={}",
            read(response).await,
            session.is_some()
        ));
        let Some(session) = session else {
            return transcript;
        };
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let response = service
            .handle(request(
                http::Method::POST,
                Some(&session),
                Some(initialized),
            ))
            .await;
        transcript.push(format!("initialized: {}", response.status().as_u16()));
        let held = if plan.hold_get {
            let response = service
                .handle(request(http::Method::GET, Some(&session), None))
                .await;
            let status = response.status().as_u16();
            // The stream stays open: read what it sends first (its priming
            // frame, if any), up to its first keep-alive comment, and keep
            // the rest of it held. (A paused clock makes the comments come
            // back to back, so no timeout alone would end the loop.)
            let mut body = response.into_body();
            let mut first = String::new();
            for _ in 0..4 {
                let Ok(Some(Ok(frame))) =
                    tokio::time::timeout(Duration::from_millis(500), body.frame()).await
                else {
                    break;
                };
                let Ok(data) = frame.into_data() else { break };
                let text = String::from_utf8_lossy(&data);
                if text.starts_with(':') {
                    break;
                }
                first.push_str(&text);
            }
            let retries: Vec<&str> = first
                .lines()
                .filter_map(|l| l.strip_prefix("retry:"))
                .map(str::trim)
                .collect();
            transcript.push(format!("get: {status} retry={retries:?}"));
            Some(body)
        } else {
            None
        };
        tokio::time::sleep(plan.idle).await;
        let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
        let response = service
            .handle(request(http::Method::POST, Some(&session), Some(list)))
            .await;
        transcript.push(format!(
            "tools/list after {:?}: {}",
            plan.idle,
            read(response).await
        ));
        let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"absent"}}"#;
        let response = service
            .handle(request(http::Method::POST, Some(&session), Some(call)))
            .await;
        transcript.push(format!("tools/call: {}", read(response).await));
        drop(held);
        transcript
    }
}
