// 1.8's and 2.2's `SessionConfig`: every field's default, as text.

pub fn session_defaults() -> Vec<(&'static str, String)> {
    let config = rmcp::transport::streamable_http_server::session::local::SessionConfig::default();
    vec![
        ("channel_capacity", format!("{:?}", config.channel_capacity)),
        ("keep_alive", format!("{:?}", config.keep_alive)),
        ("sse_retry", format!("{:?}", config.sse_retry)),
        (
            "completed_cache_ttl",
            format!("{:?}", config.completed_cache_ttl),
        ),
        ("init_timeout", format!("{:?}", config.init_timeout)),
    ]
}
