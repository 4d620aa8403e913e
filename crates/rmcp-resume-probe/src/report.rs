//! The report card: for people (aligned text) and for CI (`--json`).

use serde::Serialize;

use crate::verdict::{CheckResult, Verdict};

/// Every check's result against one endpoint.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The endpoint.
    pub url: String,
    /// The probe's version.
    pub probe: &'static str,
    /// The results, in the order of [`crate::checks`].
    pub checks: Vec<CheckResult>,
}

impl Report {
    /// The result of check `id`.
    pub fn get(&self, id: &str) -> Option<&CheckResult> {
        self.checks.iter().find(|c| c.id == id)
    }

    /// The verdict of check `id`.
    pub fn verdict(&self, id: &str) -> Option<Verdict> {
        self.get(id).map(|c| c.verdict)
    }

    /// How many checks have `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.checks.iter().filter(|c| c.verdict == verdict).count()
    }

    /// The report as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The report card as text.
    pub fn to_text(&self) -> String {
        let mut out = format!("rmcp-resume-probe {} against {}\n\n", self.probe, self.url);
        for check in &self.checks {
            out.push_str(&format!(
                "{:<12} {:<17} {}\n",
                check.verdict.to_string(),
                check.id,
                check.promise
            ));
            let e = &check.evidence;
            let mut facts = Vec::new();
            if let Some(status) = e.status {
                facts.push(format!("status {status}"));
            }
            if let Some(ms) = e.elapsed_ms {
                facts.push(format!("{ms} ms"));
            }
            let facts = if facts.is_empty() {
                String::new()
            } else {
                format!(" [{}]", facts.join(", "))
            };
            out.push_str(&format!("{:<30} {}{facts}\n", "", e.detail));
            if let Some(bytes) = e.first_bytes.as_deref().filter(|b| !b.is_empty())
                && check.verdict == Verdict::Fail
            {
                out.push_str(&format!("{:<30} first bytes: {bytes}\n", ""));
            }
        }
        out.push_str(&format!(
            "\n{} passed, {} failed, {} not checked\n",
            self.count(Verdict::Pass),
            self.count(Verdict::Fail),
            self.count(Verdict::NotChecked)
        ));
        out
    }
}
