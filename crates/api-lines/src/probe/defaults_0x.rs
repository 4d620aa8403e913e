// 0.x's `SessionConfig` has two fields; both defaults, as text.

pub fn session_defaults() -> Vec<(&'static str, String)> {
    let config = rmcp::transport::streamable_http_server::session::local::SessionConfig::default();
    vec![
        ("channel_capacity", format!("{:?}", config.channel_capacity)),
        ("keep_alive", format!("{:?}", config.keep_alive)),
    ]
}
