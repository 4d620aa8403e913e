//! A run's figures: the markdown table row, and the anomalies in full.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::checker::Anomaly;
use super::history::{ChainKind, History, Outcome, Step};
use super::nemesis::Applied;

/// What one seed's run did and found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// Instances.
    pub instances: usize,
    /// The faults applied.
    pub faults: Vec<Applied>,
    /// Calls made.
    pub calls: usize,
    /// How calls ended, by outcome.
    pub outcomes: BTreeMap<&'static str, usize>,
    /// Events (frames with an id and data) received.
    pub events: usize,
    /// Resumes sent (`GET` with `Last-Event-ID`).
    pub resumes: usize,
    /// Redis clients allowed after the run (each live instance's share of
    /// the count before the clients ran), and the count after they left
    /// (on a Redis Cluster: the busiest node's).
    pub redis_clients: (usize, usize),
    /// Takeovers: changes of a session's epoch the live audit saw.
    pub takeovers: usize,
    /// Sessions the clients deleted (`DELETE` answered `2xx`).
    pub deletes: usize,
    /// Resumes that POSTed first and were answered `200`.
    pub post_first: usize,
    /// Questions the live audit put to Redis and had answered, and of
    /// those about events, how many found the event held as received (the
    /// rest trimmed, lost or anomalies): a run whose reads find nothing
    /// held has checked nothing.
    pub audits: (usize, usize),
    /// Why calls ended unconfirmed (the client could not tell whether
    /// the server got them), by reason.
    pub unconfirmed: BTreeMap<String, usize>,
    /// What the checker found.
    pub anomalies: Vec<Anomaly>,
    /// Wall time of the run.
    pub wall: Duration,
}

fn tally<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for name in names {
        *counts.entry(name).or_default() += 1;
    }
    if counts.is_empty() {
        return "none".to_owned();
    }
    counts
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Report {
    /// Counts calls, their outcomes, events and resumes in `history`.
    pub fn count(history: &History) -> (usize, BTreeMap<&'static str, usize>, usize, usize) {
        let mut outcomes = BTreeMap::new();
        let mut calls = 0;
        for chain in &history.chains {
            if matches!(chain.kind, ChainKind::Call { .. }) {
                calls += 1;
            }
        }
        let mut events = 0;
        let mut resumes = 0;
        for entry in &history.entries {
            match &entry.step {
                Step::Frame {
                    id: Some(_),
                    data: Some(_),
                    ..
                } => events += 1,
                Step::Open {
                    via: super::history::Via::Resume { .. },
                    ..
                } => resumes += 1,
                Step::End { outcome } => {
                    let is_call = entry.chain.is_some_and(|c| {
                        history
                            .chains
                            .get(c as usize)
                            .is_some_and(|c| matches!(c.kind, ChainKind::Call { .. }))
                    });
                    if is_call {
                        let name = match outcome {
                            Outcome::Result => "result",
                            Outcome::RpcError { .. } => "rpc-error",
                            Outcome::Refused { .. } => "refused",
                            Outcome::Drained => "drained",
                            Outcome::Unconfirmed { .. } => "unconfirmed",
                            Outcome::Empty { .. } => "empty",
                            Outcome::Abandoned { .. } => "abandoned",
                            Outcome::Closed => "closed",
                        };
                        *outcomes.entry(name).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
        (calls, outcomes, events, resumes)
    }

    /// Why calls ended unconfirmed, by reason.
    pub fn unconfirmed(history: &History) -> BTreeMap<String, usize> {
        let mut reasons = BTreeMap::new();
        for entry in &history.entries {
            if let Step::End {
                outcome: Outcome::Unconfirmed { why },
            } = &entry.step
            {
                *reasons.entry(why.clone()).or_default() += 1;
            }
        }
        reasons
    }

    /// Faults applied, by kind.
    pub fn faults_by_kind(&self) -> String {
        tally(self.faults.iter().map(|f| f.fault.kind().name()))
    }

    /// Anomalies, by kind.
    pub fn anomalies_by_kind(&self) -> String {
        tally(self.anomalies.iter().map(Anomaly::kind))
    }

    /// The markdown table's header.
    pub fn table_header() -> &'static str {
        "| seed | instances | faults applied | calls (outcomes) | events received | resumes (POST-first) | takeovers | live reads (events found held) | Redis clients before/after | anomalies | wall |\n|---|---|---|---|---|---|---|---|---|---|---|"
    }

    /// This run's row.
    pub fn table_row(&self) -> String {
        let outcomes = self
            .outcomes
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "| {} | {} | {} ({}) | {} ({}) | {} | {} ({}) | {} | {} ({}) | {}/{} | {} | {:.1} s |",
            self.seed,
            self.instances,
            self.faults.len(),
            self.faults_by_kind(),
            self.calls,
            outcomes,
            self.events,
            self.resumes,
            self.post_first,
            self.takeovers,
            self.audits.0,
            self.audits.1,
            self.redis_clients.0,
            self.redis_clients.1,
            self.anomalies_by_kind(),
            self.wall.as_secs_f64()
        )
    }

    /// What the faults did beyond their kind: how many moved a Redis
    /// Cluster slot range to another primary (and how many of those may
    /// have lost acknowledged writes), and those that failed to apply.
    pub fn fault_summary(&self) -> String {
        let moved = self.faults.iter().filter(|f| f.note.is_some()).count();
        let lossy = self
            .faults
            .iter()
            .filter(|f| !f.lost_slots.is_empty())
            .count();
        let mut out = format!(
            "seed {}: {moved} fault(s) moved slots to another primary, {lossy} of them may have lost writes",
            self.seed
        );
        for applied in self.faults.iter().filter(|f| f.error.is_some()) {
            let _ = write!(
                out,
                "\n  failed at {} ms: {}: {}",
                applied.start,
                applied.fault,
                applied.error.as_deref().unwrap_or_default()
            );
        }
        out
    }

    /// The faults and every anomaly in full (at most `limit` of each kind),
    /// for replay with `--seed`.
    pub fn details(&self, limit: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "seed {}: {} ({} sessions deleted)",
            self.seed,
            self.anomalies_by_kind(),
            self.deletes
        );
        for (why, n) in &self.unconfirmed {
            let _ = writeln!(out, "  unconfirmed calls ({n}): {why}");
        }
        for applied in &self.faults {
            let _ = writeln!(
                out,
                "  fault {:>7}–{:>7} ms: {}{}{}",
                applied.start,
                applied.end,
                applied.fault,
                applied
                    .note
                    .as_deref()
                    .map(|n| format!(" [{n}]"))
                    .unwrap_or_default(),
                applied
                    .error
                    .as_deref()
                    .map(|e| format!(" (error: {e})"))
                    .unwrap_or_default()
            );
        }
        let mut shown: BTreeMap<&str, usize> = BTreeMap::new();
        for anomaly in &self.anomalies {
            let n = shown.entry(anomaly.kind()).or_default();
            *n += 1;
            if *n <= limit {
                let _ = writeln!(out, "  [seed {}] {anomaly}", self.seed);
            }
        }
        for (kind, n) in shown {
            if n > limit {
                let _ = writeln!(out, "  [seed {}] … {} more {kind}", self.seed, n - limit);
            }
        }
        out
    }
}
