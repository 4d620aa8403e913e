//! The failure modes on the rmcp 0.16 line: `rmcp-resume-0-16` under
//! the wedge of the original report, and its client against upstream
//! 0.16.0's server; the proofs are every 0.x line's
//! (`tests/lines/failure_modes_0x.rs`).

use reqwest as line_reqwest;
use rmcp_0_16 as line_rmcp;
use rmcp_resume_testkit_0_16 as line_kit;

/// The upstream release this line overlays.
const UPSTREAM: &str = "0.16.0";

include!("lines/failure_modes_0x.rs");
