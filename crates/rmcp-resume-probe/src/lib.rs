//! Audits an MCP server's streamable-HTTP resumption from the outside,
//! through the real network path, as a report card.
//!
//! | Module | What |
//! |---|---|
//! | [`checks`] | the promises, one module each, with their table |
//! | [`session`] | the endpoint and MCP sessions opened on it by hand |
//! | [`sse`] | SSE frames read exactly as they arrived |
//! | [`observe`] | one answer, judged: status, floor, frames, how it ended |
//! | [`verdict`] | PASS / FAIL / NOT CHECKED and the evidence |
//! | [`report`] | the report card, as text and JSON |
//! | [`error`] | why a server could not be probed at all |
//!
//! ```no_run
//! # async fn run() -> Result<(), rmcp_resume_probe::ProbeError> {
//! use std::time::Duration;
//! use rmcp_resume_probe::{Options, Target, probe};
//!
//! let target = Target::new("http://127.0.0.1:8000/mcp", &[], Duration::from_secs(10))?;
//! let report = probe(&target, &Options::default(), &|_| {}).await?;
//! print!("{}", report.to_text());
//! # Ok(()) }
//! ```

pub mod checks;
pub mod error;
pub mod observe;
pub mod report;
pub mod session;
pub mod sse;
pub mod verdict;

pub use checks::Options;
pub use error::ProbeError;
pub use report::Report;
pub use session::Target;
pub use verdict::{CheckResult, Evidence, Verdict};

/// Runs every check against `target`. Fails only when the endpoint cannot
/// be probed at all (unreachable, TLS, credentials, not MCP); a broken
/// promise is a FAIL in the report. `waiting` is told what long waits are for.
pub async fn probe(
    target: &Target,
    options: &Options,
    waiting: &(dyn Fn(&str) + Send + Sync),
) -> Result<Report, ProbeError> {
    // One session first, so that a wrong URL is one clear error, not ten
    // failed checks.
    let first = target.open().await?;
    let _ = first.delete().await;
    let ctx = checks::Ctx {
        target,
        options,
        waiting,
    };
    let checks = vec![
        checks::priming::run(&ctx).await,
        checks::unbuffered::run(&ctx).await,
        checks::malformed::run(&ctx).await,
        checks::unknown::run(&ctx).await,
        checks::request_resume::run(&ctx).await,
        checks::strictly_after::run(&ctx).await,
        checks::evicted::run(&ctx).await,
        checks::two_gets::run(&ctx).await,
        checks::sessions::deleted(&ctx).await,
        checks::sessions::unknown(&ctx).await,
        checks::floor::run(&ctx).await,
        checks::keep_alive::run(&ctx).await,
    ];
    Ok(Report {
        url: target.url.clone(),
        probe: env!("CARGO_PKG_VERSION"),
        checks,
    })
}
