//! A check's outcome: its verdict and the evidence behind it.

use serde::Serialize;

/// What a check concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// The promise holds.
    Pass,
    /// The promise is broken; the evidence says how.
    Fail,
    /// The probe could not observe it (the evidence says why); never a pass.
    NotChecked,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Pass => "PASS",
            Self::Fail => "FAIL",
            Self::NotChecked => "NOT CHECKED",
        })
    }
}

/// What the probe saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// The HTTP status of the deciding response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Its body's first bytes, escaped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_bytes: Option<String>,
    /// How long the deciding exchange took, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// One sentence.
    pub detail: String,
}

/// One promise, judged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// Stable name, for `--json` and tests.
    pub id: &'static str,
    /// The promise, as a reader would state it.
    pub promise: &'static str,
    /// The verdict.
    pub verdict: Verdict,
    /// Why.
    pub evidence: Evidence,
}
