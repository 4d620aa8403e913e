//! The failure modes on the rmcp 0.17 line: `rmcp-resume-0-17` under
//! the wedge of the original report, and its client against upstream
//! 0.17.0's server; the proofs are every 0.x line's
//! (`tests/lines/failure_modes_0x.rs`). Issue #28 measured upstream
//! 0.17.0 under the same wedge: `500` on the standalone stream, 4 `GET`s in
//! 20 s, and the call still pending.

use reqwest as line_reqwest;
use rmcp_0_17 as line_rmcp;
use rmcp_resume_testkit_0_17 as line_kit;

/// The upstream release this line overlays.
const UPSTREAM: &str = "0.17.0";

include!("lines/failure_modes_0x.rs");
