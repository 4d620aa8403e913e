//! The per-line API check (issue 46): code written against an upstream rmcp
//! line must compile against that line's face unchanged.
//!
//! Each `probe/*.rs` file is application code spelled as upstream allows it.
//! `line!` compiles the files a line takes twice, in two modules: once with
//! `rmcp` naming upstream itself, once naming the line's overlay, which is
//! the source tree and build script its `[patch.crates-io]` face compiles. A
//! probe that compiles against upstream and not against the overlay is a
//! break, and rustc names the item at the probe's line. The `#[test]`s below
//! compare what both sides return where a value matters (defaults).
//!
//! | File | What it pins | Lines |
//! |---|---|---|
//! | `probe/items.rs` | every public item of upstream's streamable-HTTP modules the five lines share: names, signatures, fields, variants, impls | all |
//! | `probe/behaviour.rs` | a scripted HTTP session (initialize, an idle spell on a paused clock, with and without a `GET` held open, list, call, every `retry:`), in process | all |
//! | `probe/redirect.rs` | the default client of `from_uri` against a `307` to another origin | all |
//! | `probe/pooling.rs` | the default client of `from_uri`: one session's requests on pooled connections or on fresh ones | all |
//! | `probe/server.rs` | the service's handler bound (`Service<RoleServer>`), a router, a boxed service, a hand-written service | all |
//! | `probe/client.rs` | the client transport as upstream's alias of `WorkerTransport`, its constructors | all |
//! | `probe/session.rs` | `LocalSessionWorkerError::KeepAliveTimeout`, the session items' types and signatures | all |
//! | `probe/parse_0x.rs` | `EventId::from_str`: the value or the error's variant, compared in a test | 0.15, 0.16, 0.17 |
//! | `probe/literals_0x.rs` | struct literals (`SessionConfig` full and destructured among them) and exhaustive matches of every session enum, which 0.x allows (no `#[non_exhaustive]`) | 0.15, 0.16, 0.17 |
//! | `probe/defaults_0x.rs`, `probe/defaults_1x.rs` | `SessionConfig::default()` | 0.x; 1.8 and 2.2 |

// The probes are application code, written as upstream lets applications
// write it; style lints about that code say nothing of the API.
#![allow(dead_code, clippy::all)]
// Compiled only as its test: the probes prove something by compiling, and
// building them once (not also as a library, and for rustdoc) keeps the
// check's share of `bash .ci/test` small.
#![cfg(test)]

/// Compiles a line's probe files against upstream (`$up`) and against the
/// overlay (`$fork`); `$http` is the reqwest that line's upstream is built on.
macro_rules! line {
    ($line:ident, $up:ident, $fork:ident, $http:ident, [$($file:literal),* $(,)?]) => {
        pub mod $line {
            pub mod upstream {
                use ::$up as rmcp;
                use ::$http as reqwest;
                $(include!($file);)*
            }
            pub mod overlay {
                use ::$fork as rmcp;
                use ::$http as reqwest;
                $(include!($file);)*
            }
        }
    };
}

line!(
    v2_2,
    up_2,
    fork_2,
    reqwest,
    [
        "probe/server.rs",
        "probe/behaviour.rs",
        "probe/redirect.rs",
        "probe/pooling.rs",
        "probe/items.rs",
        "probe/client.rs",
        "probe/session.rs",
        "probe/defaults_1x.rs",
    ]
);
line!(
    v1_8,
    up_1,
    fork_1,
    reqwest,
    [
        "probe/server.rs",
        "probe/behaviour.rs",
        "probe/redirect.rs",
        "probe/pooling.rs",
        "probe/items.rs",
        "probe/client.rs",
        "probe/session.rs",
        "probe/defaults_1x.rs",
    ]
);
line!(
    v0_17,
    up_0_17,
    fork_0_17,
    reqwest,
    [
        "probe/server.rs",
        "probe/behaviour.rs",
        "probe/redirect.rs",
        "probe/pooling.rs",
        "probe/items.rs",
        "probe/client.rs",
        "probe/session.rs",
        "probe/literals_0x.rs",
        "probe/parse_0x.rs",
        "probe/defaults_0x.rs",
    ]
);
line!(
    v0_16,
    up_0_16,
    fork_0_16,
    reqwest,
    [
        "probe/server.rs",
        "probe/behaviour.rs",
        "probe/redirect.rs",
        "probe/pooling.rs",
        "probe/items.rs",
        "probe/client.rs",
        "probe/session.rs",
        "probe/literals_0x.rs",
        "probe/parse_0x.rs",
        "probe/defaults_0x.rs",
    ]
);
line!(
    v0_15,
    up_0_15,
    fork_0_15,
    reqwest_0_12,
    [
        "probe/server.rs",
        "probe/behaviour.rs",
        "probe/redirect.rs",
        "probe/pooling.rs",
        "probe/items.rs",
        "probe/client.rs",
        "probe/session.rs",
        "probe/literals_0x.rs",
        "probe/parse_0x.rs",
        "probe/defaults_0x.rs",
    ]
);

#[cfg(test)]
mod tests {
    /// Upstream's `SessionConfig::default()`, field by field, on each line.
    #[test]
    fn session_defaults_are_upstreams() {
        let lines = [
            (
                "2.2",
                super::v2_2::upstream::session_defaults(),
                super::v2_2::overlay::session_defaults(),
            ),
            (
                "1.8",
                super::v1_8::upstream::session_defaults(),
                super::v1_8::overlay::session_defaults(),
            ),
            (
                "0.17",
                super::v0_17::upstream::session_defaults(),
                super::v0_17::overlay::session_defaults(),
            ),
            (
                "0.16",
                super::v0_16::upstream::session_defaults(),
                super::v0_16::overlay::session_defaults(),
            ),
            (
                "0.15",
                super::v0_15::upstream::session_defaults(),
                super::v0_15::overlay::session_defaults(),
            ),
        ];
        let mut differences = Vec::new();
        for (line, upstream, overlay) in lines {
            for ((field, up), (_, ours)) in upstream.iter().zip(overlay.iter()) {
                if up != ours {
                    differences.push(format!(
                        "{line}: SessionConfig::default().{field}: upstream {up}, overlay {ours}"
                    ));
                }
            }
        }
        assert!(differences.is_empty(), "{}", differences.join("\n"));
    }

    use std::time::Duration;

    macro_rules! transcripts {
        ($plan:expr) => {
            [
                (
                    "2.2",
                    super::v2_2::upstream::script::run(plan!(v2_2, upstream, $plan)).await,
                    super::v2_2::overlay::script::run(plan!(v2_2, overlay, $plan)).await,
                ),
                (
                    "1.8",
                    super::v1_8::upstream::script::run(plan!(v1_8, upstream, $plan)).await,
                    super::v1_8::overlay::script::run(plan!(v1_8, overlay, $plan)).await,
                ),
                (
                    "0.17",
                    super::v0_17::upstream::script::run(plan!(v0_17, upstream, $plan)).await,
                    super::v0_17::overlay::script::run(plan!(v0_17, overlay, $plan)).await,
                ),
                (
                    "0.16",
                    super::v0_16::upstream::script::run(plan!(v0_16, upstream, $plan)).await,
                    super::v0_16::overlay::script::run(plan!(v0_16, overlay, $plan)).await,
                ),
                (
                    "0.15",
                    super::v0_15::upstream::script::run(plan!(v0_15, upstream, $plan)).await,
                    super::v0_15::overlay::script::run(plan!(v0_15, overlay, $plan)).await,
                ),
            ]
        };
    }

    /// The same plan, in the type of each line's module.
    macro_rules! plan {
        ($line:ident, $side:ident, $plan:expr) => {{
            let (sse_retry, keep_alive, hold_get, idle) = $plan;
            super::$line::$side::script::Plan {
                sse_retry,
                keep_alive,
                hold_get,
                idle,
            }
        }};
    }

    /// Every line where upstream and the overlay answered differently, but
    /// for the differences `allowed` names (line, step prefix).
    fn differences(
        transcripts: &[(&str, Vec<String>, Vec<String>)],
        allowed: &[(&str, &str)],
    ) -> Vec<String> {
        let mut found = Vec::new();
        for (line, upstream, overlay) in transcripts {
            if upstream.len() != overlay.len() {
                found.push(format!(
                    "{line}: upstream {upstream:?}\n      overlay  {overlay:?}"
                ));
                continue;
            }
            for (up, ours) in upstream.iter().zip(overlay) {
                let on_purpose = allowed
                    .iter()
                    .any(|(l, step)| l == line && up.starts_with(step));
                if up != ours && !on_purpose {
                    found.push(format!("{line}: upstream {up}\n      overlay  {ours}"));
                }
            }
        }
        found
    }

    /// The defaults: idle past 300 s (upstream 1.x's keep-alive) and on to
    /// 440 s, then list and call. 0.x sessions live on, as upstream's; on
    /// 1.8 and 2.2 both ends refuse the expired session.
    #[tokio::test(start_paused = true)]
    async fn idle_session_as_upstream() {
        let plan = (
            Some(Duration::from_secs(3)),
            None,
            false,
            Duration::from_secs(440),
        );
        let transcripts = transcripts!(plan);
        let found = differences(&transcripts, &[]);
        assert!(found.is_empty(), "{}", found.join("\n"));
    }

    /// The application's `sse_retry` is the one the client sees: none when
    /// it is `None`, 10000 when it is 10 s, never 3000 beside it.
    #[tokio::test(start_paused = true)]
    async fn sse_retry_as_the_application_sets_it() {
        for retry in [None, Some(Duration::from_secs(10))] {
            // A `GET` held open too: its priming frame's `retry` is compared.
            let plan = (retry, None, true, Duration::from_secs(1));
            let transcripts = transcripts!(plan);
            let found = differences(&transcripts, &[]);
            assert!(
                found.is_empty(),
                "sse_retry {retry:?}:\n{}",
                found.join("\n")
            );
            // And on 0.x, where the service's `sse_retry` is the one knob,
            // the value is the application's. (On 1.8 and 2.2 a request
            // stream's is the session's, `SessionConfig::sse_retry`, as
            // upstream's: the comparison above holds them to it.)
            let expected = match retry {
                Some(retry) => format!("retry=[\"{}\"]", retry.as_millis()),
                None => "retry=[]".to_owned(),
            };
            for (line, _, overlay) in transcripts
                .iter()
                .filter(|(line, ..)| line.starts_with("0."))
            {
                let list = overlay.iter().find(|step| step.starts_with("tools/list"));
                assert!(
                    list.is_some_and(|step| step.contains(&expected)),
                    "{line}, sse_retry {retry:?}: {overlay:?}"
                );
            }
        }
    }

    /// A standalone `GET` held open keeps its session alive on every line,
    /// with the line's default keep-alive (0.x: none; 1.8 and 2.2: 300 s)
    /// and with one the application sets. Upstream ends it at a keep-alive
    /// all the same (its worker counts only messages); the fork does not, on
    /// purpose (CHANGELOG): a client listening is not idle.
    #[tokio::test(start_paused = true)]
    async fn an_open_get_keeps_the_session() {
        let defaults = (
            Some(Duration::from_secs(3)),
            None,
            true,
            Duration::from_secs(440),
        );
        let set = (
            Some(Duration::from_secs(3)),
            Some(Duration::from_secs(300)),
            true,
            Duration::from_secs(440),
        );
        let on_1x = [("2.2", "tools/"), ("1.8", "tools/")];
        let on_every_line = [
            ("2.2", "tools/"),
            ("1.8", "tools/"),
            ("0.17", "tools/"),
            ("0.16", "tools/"),
            ("0.15", "tools/"),
        ];
        for (plan, allowed) in [(defaults, &on_1x[..]), (set, &on_every_line[..])] {
            let transcripts = transcripts!(plan);
            let found = differences(&transcripts, allowed);
            assert!(found.is_empty(), "{plan:?}:\n{}", found.join("\n"));
            for (line, _, overlay) in &transcripts {
                assert!(
                    overlay
                        .iter()
                        .any(|step| step.starts_with("tools/list") && step.contains(" 200 ")),
                    "{line}, {plan:?}: the session did not outlive its keep-alive with a GET open: {overlay:?}"
                );
            }
        }
    }

    /// A one-route HTTP server: reads each request and answers with what
    /// `answer` makes of its method and body.
    async fn serve_http(
        answer: impl Fn(&str, &str) -> String + Send + Sync + 'static,
    ) -> std::net::SocketAddr {
        serve_counted(answer, std::sync::Arc::default()).await
    }

    /// Connections that carried a request, and requests answered, by a
    /// [`serve_counted`] server.
    #[derive(Default)]
    struct Counts {
        connections: std::sync::atomic::AtomicUsize,
        requests: std::sync::atomic::AtomicUsize,
        answered: tokio::sync::Notify,
    }

    /// [`serve_http`], counting into `counts`.
    async fn serve_counted(
        answer: impl Fn(&str, &str) -> String + Send + Sync + 'static,
        counts: std::sync::Arc<Counts>,
    ) -> std::net::SocketAddr {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("addr: {e}"));
        let answer = std::sync::Arc::new(answer);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let answer = answer.clone();
                let counts = counts.clone();
                // Counted at its first request: a connection a pooled client
                // opened in a race and never used is no request's.
                let mut carried = false;
                tokio::spawn(async move {
                    let mut buffer = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        let text = String::from_utf8_lossy(&buffer).into_owned();
                        if let Some(end) = text.find("\r\n\r\n") {
                            let length = text[..end]
                                .lines()
                                .find_map(|l| {
                                    let (name, value) = l.split_once(':')?;
                                    name.eq_ignore_ascii_case("content-length")
                                        .then(|| value.trim().parse::<usize>().ok())?
                                })
                                .unwrap_or(0);
                            if buffer.len() >= end + 4 + length {
                                let method = text.split(' ').next().unwrap_or_default().to_owned();
                                let body =
                                    String::from_utf8_lossy(&buffer[end + 4..end + 4 + length])
                                        .into_owned();
                                let response = answer(&method, &body);
                                let _ = socket.write_all(response.as_bytes()).await;
                                if !carried {
                                    carried = true;
                                    counts
                                        .connections
                                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                }
                                counts
                                    .requests
                                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                counts.answered.notify_waiters();
                                buffer.drain(..end + 4 + length);
                                continue;
                            }
                        }
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                    }
                });
            }
        });
        addr
    }

    /// A canned MCP server: `initialize` answered in JSON, echoing the
    /// request's id and revision; anything else `202`, a `GET` `405`.
    fn canned_mcp(method: &str, body: &str) -> String {
        let field = |key: &str| -> Option<String> {
            let at = body.find(key)? + key.len();
            let rest = body[at..].trim_start_matches([':', ' ']);
            Some(
                rest.chars()
                    .take_while(|c| !matches!(c, ',' | '}'))
                    .collect(),
            )
        };
        if method == "GET" {
            return "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n".to_owned();
        }
        if !body.contains("\"initialize\"") {
            return "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned();
        }
        let id = field("\"id\"").unwrap_or_else(|| "0".to_owned());
        let version = field("\"protocolVersion\"").unwrap_or_else(|| "\"2025-03-26\"".to_owned());
        let json = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":{version},"capabilities":{{}},"serverInfo":{{"name":"canned","version":"0"}}}}}}"#
        );
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{json}",
            json.len()
        )
    }

    /// A client of `from_uri` pointed at a URL that answers `307` to
    /// another origin gets through, or not, as upstream's does on its line:
    /// 0.x and 1.8 follow (reqwest's default policy), 2.2 follows none.
    #[tokio::test]
    async fn the_default_client_redirects_as_upstream() {
        let target = serve_http(canned_mcp).await;
        let redirector = serve_http(move |_, _| {
            format!(
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://{target}/mcp\r\ncontent-length: 0\r\n\r\n"
            )
        })
        .await;
        let url = format!("http://{redirector}/mcp");
        let direct = format!("http://{target}/mcp");
        // The canned server itself serves both sides.
        assert!(super::v0_15::upstream::redirect::initializes(direct).await);
        let outcomes = [
            (
                "2.2",
                super::v2_2::upstream::redirect::initializes(url.clone()).await,
                super::v2_2::overlay::redirect::initializes(url.clone()).await,
                false,
            ),
            (
                "1.8",
                super::v1_8::upstream::redirect::initializes(url.clone()).await,
                super::v1_8::overlay::redirect::initializes(url.clone()).await,
                true,
            ),
            (
                "0.17",
                super::v0_17::upstream::redirect::initializes(url.clone()).await,
                super::v0_17::overlay::redirect::initializes(url.clone()).await,
                true,
            ),
            (
                "0.16",
                super::v0_16::upstream::redirect::initializes(url.clone()).await,
                super::v0_16::overlay::redirect::initializes(url.clone()).await,
                true,
            ),
            (
                "0.15",
                super::v0_15::upstream::redirect::initializes(url.clone()).await,
                super::v0_15::overlay::redirect::initializes(url.clone()).await,
                true,
            ),
        ];
        for (line, upstream, overlay, expected) in outcomes {
            assert_eq!(
                upstream, expected,
                "{line}: upstream's client, a 307 to another origin"
            );
            assert_eq!(
                overlay, upstream,
                "{line}: the overlay's client, a 307 to another origin"
            );
        }
    }

    /// Connections and requests one session of `from_uri`'s default client
    /// makes against a canned server: `initialize` and `initialized`, one
    /// after the other (the server names no session, so no `GET` follows).
    async fn session_traffic<F, Fut>(initializes_until: F) -> (bool, usize, usize)
    where
        F: FnOnce(String, std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        use std::sync::atomic::Ordering::SeqCst;
        let counts = std::sync::Arc::new(Counts::default());
        let addr = serve_counted(canned_mcp, counts.clone()).await;
        let seen = counts.clone();
        // The client's two requests, answered; a bounded wait.
        let done = Box::pin(async move {
            for _ in 0..100 {
                let answered = seen.answered.notified();
                if seen.requests.load(SeqCst) >= 2 {
                    return;
                }
                let _ = tokio::time::timeout(std::time::Duration::from_millis(50), answered).await;
            }
        });
        let ok = initializes_until(format!("http://{addr}/mcp"), done).await;
        (
            ok,
            counts.connections.load(SeqCst),
            counts.requests.load(SeqCst),
        )
    }

    /// One session's requests go over pooled connections, or each over a
    /// fresh one, as upstream's default client does on its line: 0.x keeps
    /// idle connections (reqwest's default), 1.8 and 2.2 keep none.
    #[tokio::test]
    async fn the_default_client_pools_connections_as_upstream() {
        macro_rules! traffic {
            ($line:ident, $side:ident) => {
                session_traffic(|url, done| {
                    super::$line::$side::pooling::initializes_until(url, done)
                })
                .await
            };
        }
        let outcomes = [
            (
                "2.2",
                traffic!(v2_2, upstream),
                traffic!(v2_2, overlay),
                false,
            ),
            (
                "1.8",
                traffic!(v1_8, upstream),
                traffic!(v1_8, overlay),
                false,
            ),
            (
                "0.17",
                traffic!(v0_17, upstream),
                traffic!(v0_17, overlay),
                true,
            ),
            (
                "0.16",
                traffic!(v0_16, upstream),
                traffic!(v0_16, overlay),
                true,
            ),
            (
                "0.15",
                traffic!(v0_15, upstream),
                traffic!(v0_15, overlay),
                true,
            ),
        ];
        for (line, upstream, overlay, pooled) in outcomes {
            for (side, (ok, connections, requests)) in
                [("upstream", upstream), ("overlay", overlay)]
            {
                assert!(ok, "{line}, {side}: the client did not initialize");
                assert!(requests >= 2, "{line}, {side}: {requests} requests");
                assert_eq!(
                    connections < requests,
                    pooled,
                    "{line}, {side}'s client: {connections} connections for {requests} requests \
                     (pooled on this line: {pooled})"
                );
            }
        }
    }

    /// 0.x's `EventId` reads every text as upstream's does: the same value
    /// or the same error variant (a leading `+` or zero is an id there).
    #[test]
    fn event_ids_parse_as_upstreams_on_0x() {
        let texts = [
            "5",
            "05",
            "+5",
            "0/07",
            "3/1",
            "",
            "x",
            "7/x",
            "1/2/3",
            "-1",
            "5/",
            "18446744073709551616",
        ];
        for text in texts {
            let lines = [
                (
                    "0.17",
                    super::v0_17::upstream::parse_0x::event_id(text),
                    super::v0_17::overlay::parse_0x::event_id(text),
                ),
                (
                    "0.16",
                    super::v0_16::upstream::parse_0x::event_id(text),
                    super::v0_16::overlay::parse_0x::event_id(text),
                ),
                (
                    "0.15",
                    super::v0_15::upstream::parse_0x::event_id(text),
                    super::v0_15::overlay::parse_0x::event_id(text),
                ),
            ];
            for (line, upstream, overlay) in lines {
                assert_eq!(overlay, upstream, "{line}: {text:?}");
            }
        }
    }
}
