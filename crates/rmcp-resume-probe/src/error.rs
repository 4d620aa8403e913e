//! Why a server could not be probed at all (as opposed to a check failing).

use std::time::Duration;

/// A probe that could not start: each variant prints as one clear line.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The URL does not parse, or is not http(s).
    #[error("not an http(s) URL: {0}")]
    InvalidUrl(String),
    /// A `--header` is not `Name: value`, or not a valid header.
    #[error("invalid header {0:?}: expected `Name: value`")]
    InvalidHeader(String),
    /// Nothing answered at the address.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The endpoint.
        url: String,
        /// The connection error.
        reason: String,
    },
    /// The TLS handshake failed (certificate, protocol).
    #[error("TLS handshake with {url} failed: {reason}")]
    Tls {
        /// The endpoint.
        url: String,
        /// The TLS error.
        reason: String,
    },
    /// The server wants credentials.
    #[error("{url} answered 401 Unauthorized{}; pass credentials with --header 'Authorization: …'",
        challenge.as_deref().map(|c| format!(" (WWW-Authenticate: {c})")).unwrap_or_default())]
    Unauthorized {
        /// The endpoint.
        url: String,
        /// Its `WWW-Authenticate` challenge, if any.
        challenge: Option<String>,
    },
    /// The endpoint answered, but not as an MCP server does.
    #[error("{url} is not an MCP streamable-HTTP endpoint: {reason}")]
    NotMcp {
        /// The endpoint.
        url: String,
        /// What it answered instead.
        reason: String,
    },
    /// A request got no answer in time.
    #[error("{what} got no answer within {after:?}")]
    Timeout {
        /// The request.
        what: &'static str,
        /// The limit.
        after: Duration,
    },
    /// Any other HTTP failure.
    #[error("{what} failed: {reason}")]
    Http {
        /// The request.
        what: &'static str,
        /// The error.
        reason: String,
    },
}

impl ProbeError {
    /// Classifies a request error for `url`.
    pub(crate) fn from_request(
        what: &'static str,
        url: &str,
        after: Duration,
        error: reqwest::Error,
    ) -> Self {
        if error.is_timeout() {
            return Self::Timeout { what, after };
        }
        if let Some(tls) = tls_cause(&error) {
            return Self::Tls {
                url: url.to_owned(),
                reason: tls.to_string(),
            };
        }
        if error.is_connect() {
            return Self::Unreachable {
                url: url.to_owned(),
                reason: innermost(&error),
            };
        }
        Self::Http {
            what,
            reason: innermost(&error),
        }
    }
}

/// The rustls error somewhere in `error`'s causes. Connectors keep causes
/// boxed, and `io::Error::source` skips the error it wraps, so each link is
/// also looked into.
fn tls_cause<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    if let Some(io) = error.downcast_ref::<std::io::Error>()
        && let Some(inner) = io.get_ref()
        && let Some(tls) = tls_cause(inner)
    {
        return Some(tls);
    }
    error.source().and_then(tls_cause)
}

/// The deepest cause's message: the one that names what went wrong.
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut last = error;
    while let Some(cause) = last.source() {
        last = cause;
    }
    last.to_string()
}
