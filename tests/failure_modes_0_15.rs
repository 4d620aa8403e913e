//! The failure modes on the rmcp 0.15 line: `rmcp-resume-0-15` under
//! the wedge of the original report, and its client against upstream
//! 0.15.0's server; the proofs are every 0.x line's
//! (`tests/lines/failure_modes_0x.rs`). Issue #28 measured upstream
//! 0.15.0 (the original report's fleet) under the same wedge: its resume
//! `GET`s answered `500`, 6 in 20 s, and the call still pending.

use reqwest_0_12 as line_reqwest;
use rmcp_0_15 as line_rmcp;
use rmcp_resume_testkit_0_15 as line_kit;

/// The upstream release this line overlays.
const UPSTREAM: &str = "0.15.0";

include!("lines/failure_modes_0x.rs");
