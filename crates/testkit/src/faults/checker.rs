//! The checker: what must hold of every client's history, and the
//! anomalies where it does not.
//!
//! 1. No event id is delivered twice on one chain (a stream and its
//!    resumes), and ids never go back.
//! 2. No silent gap: a chain's indices are contiguous unless a replay notice
//!    (`complete:false`) with a floor covering the gap announced it, or the
//!    resume was refused with a clear `400` whose floor is past the cursor.
//! 3. Every call ends (its result, a JSON-RPC error, or a clear refusal)
//!    within the lease plus the slack after its nominal end and after the
//!    last fault that began before it ended.
//! 4. Nothing was sent that Redis did not commit ([`commits`]).
//! 5. No Redis connections leak (see the run).
//!
//! Where Redis lost a session's data after the session began — a single
//! Redis's restart, or on a Redis Cluster a forced failover or a killed or
//! stopped primary of the session's slot ([`lost_since`]) — a `404`, a
//! `400` without a floor, and (rule 4) the session or an event missing
//! from Redis are allowed for that session. After a restart rule 4 skips
//! the session; after a cluster failover an event Redis holds must still be
//! the one received (a lost index reused for another event is a mismatch).

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use serde_json::Value;

use super::audit::{self, Stored, Target};
use super::history::{Chain, ChainId, ChainKind, Entry, History, Ms, Outcome, Step, Via};
use super::nemesis::Applied;
use super::schedule::FaultKind;

/// Where an anomaly is, with the history that led to it.
#[derive(Debug, Clone)]
pub struct At {
    /// The client.
    pub client: usize,
    /// The chain.
    pub chain: ChainId,
    /// The chain's last steps up to the anomaly.
    pub excerpt: Vec<String>,
}

/// Something that must not happen, as a value.
#[derive(Debug, Clone)]
pub enum Anomaly {
    /// (1) An event id delivered twice on one chain.
    Duplicate { at: At, id: String },
    /// (1) An id lower than one already delivered, never seen before.
    OutOfOrder { at: At, expected: u64, got: u64 },
    /// (2) Indices skipped with no notice announcing it.
    SilentGap { at: At, expected: u64, got: u64 },
    /// An event of another stream on a chain.
    WrongStream { at: At, id: String },
    /// A replay notice that does not name the cursor sent, or unreadable.
    BadNotice {
        at: At,
        sent: String,
        notice: String,
    },
    /// (2) A resume refused although the events after its cursor are
    /// retained (or the stream cannot have been forgotten).
    UnjustifiedRefusal {
        at: At,
        status: u16,
        cursor: String,
        body: String,
    },
    /// `404` for a session Redis did not lose.
    SessionLost { at: At, status: u16, body: String },
    /// (3) A call's chain ended with neither its answer nor a refusal.
    EndedWithoutAnswer { at: At, how: String },
    /// (3) The client gave up: the call did not end by the bound.
    NeverEnded { at: At, why: String },
    /// (3) The call ended, but after the bound.
    Late { at: At, ended: Ms, bound: Ms },
    /// A 4xx with no body.
    UnclearRefusal { at: At, status: u16 },
    /// (4) A received event Redis does not hold (and did not trim).
    NotCommitted {
        at: At,
        key: String,
        index: u64,
        floor: Option<u64>,
        received: String,
    },
    /// (4) A received event that differs from what Redis holds for its id.
    Mismatch {
        at: At,
        key: String,
        index: u64,
        received: String,
        stored: String,
    },
    /// (4) A session no client deleted, on a Redis that did not lose it,
    /// is gone from Redis at the end (every event of it unverifiable).
    SessionErased {
        at: At,
        session: String,
        tombstone: bool,
    },
    /// (5) More Redis clients after the run than before it.
    Leak {
        baseline: usize,
        after: usize,
        clients: String,
    },
}

impl Anomaly {
    /// Its kind's name, for tallies.
    pub fn kind(&self) -> &'static str {
        match self {
            Anomaly::Duplicate { .. } => "duplicate",
            Anomaly::OutOfOrder { .. } => "out-of-order",
            Anomaly::SilentGap { .. } => "silent-gap",
            Anomaly::WrongStream { .. } => "wrong-stream",
            Anomaly::BadNotice { .. } => "bad-notice",
            Anomaly::UnjustifiedRefusal { .. } => "unjustified-refusal",
            Anomaly::SessionLost { .. } => "session-lost",
            Anomaly::EndedWithoutAnswer { .. } => "ended-without-answer",
            Anomaly::NeverEnded { .. } => "never-ended",
            Anomaly::Late { .. } => "late",
            Anomaly::UnclearRefusal { .. } => "unclear-refusal",
            Anomaly::NotCommitted { .. } => "not-committed",
            Anomaly::Mismatch { .. } => "mismatch",
            Anomaly::SessionErased { .. } => "session-erased",
            Anomaly::Leak { .. } => "leak",
        }
    }

    /// Where it is, if on a chain.
    pub fn at(&self) -> Option<&At> {
        match self {
            Anomaly::Duplicate { at, .. }
            | Anomaly::OutOfOrder { at, .. }
            | Anomaly::SilentGap { at, .. }
            | Anomaly::WrongStream { at, .. }
            | Anomaly::BadNotice { at, .. }
            | Anomaly::UnjustifiedRefusal { at, .. }
            | Anomaly::SessionLost { at, .. }
            | Anomaly::EndedWithoutAnswer { at, .. }
            | Anomaly::NeverEnded { at, .. }
            | Anomaly::Late { at, .. }
            | Anomaly::UnclearRefusal { at, .. }
            | Anomaly::NotCommitted { at, .. }
            | Anomaly::Mismatch { at, .. }
            | Anomaly::SessionErased { at, .. } => Some(at),
            Anomaly::Leak { .. } => None,
        }
    }
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.kind())?;
        match self {
            Anomaly::Duplicate { id, .. } => write!(f, "event {id} delivered twice")?,
            Anomaly::OutOfOrder { expected, got, .. } => write!(
                f,
                "index {got} after {}, never delivered before",
                expected - 1
            )?,
            Anomaly::SilentGap { expected, got, .. } => write!(
                f,
                "expected index {expected}, got {got}: {} event(s) skipped without notice",
                got - expected
            )?,
            Anomaly::WrongStream { id, .. } => write!(f, "event {id} of another stream")?,
            Anomaly::BadNotice { sent, notice, .. } => {
                write!(f, "cursor {sent} answered by notice {notice}")?
            }
            Anomaly::UnjustifiedRefusal {
                status,
                cursor,
                body,
                ..
            } => write!(
                f,
                "{status} to cursor {cursor} whose events are retained: {body}"
            )?,
            Anomaly::SessionLost { status, body, .. } => {
                write!(f, "{status} for a session Redis did not lose: {body}")?
            }
            Anomaly::EndedWithoutAnswer { how, .. } => write!(f, "{how}")?,
            Anomaly::NeverEnded { why, .. } => write!(f, "{why}")?,
            Anomaly::Late { ended, bound, .. } => {
                write!(f, "ended at {ended} ms, bound {bound} ms")?
            }
            Anomaly::UnclearRefusal { status, .. } => write!(f, "{status} with no body")?,
            Anomaly::NotCommitted {
                key,
                index,
                floor,
                received,
                ..
            } => write!(
                f,
                "{key} holds no event {index} (floor {floor:?}); received {received}"
            )?,
            Anomaly::Mismatch {
                key,
                index,
                received,
                stored,
                ..
            } => write!(
                f,
                "{key} event {index}: received {received}, Redis holds {stored}"
            )?,
            Anomaly::SessionErased {
                session, tombstone, ..
            } => write!(
                f,
                "session {session} is gone from Redis (tombstone: {tombstone}) though no client deleted it and Redis kept its data"
            )?,
            Anomaly::Leak {
                baseline,
                after,
                clients,
            } => {
                write!(
                    f,
                    "{after} Redis clients after the run, baseline {baseline}"
                )?;
                for line in clients.lines().take(12) {
                    write!(f, "\n      {line}")?;
                }
            }
        }
        if let Some(at) = self.at() {
            write!(f, "\n    client {} chain #{}:", at.client, at.chain)?;
            for line in &at.excerpt {
                write!(f, "\n      {line}")?;
            }
        }
        Ok(())
    }
}

/// An event id `N` or `N/M`: `(N, M)`.
pub fn parse_id(id: &str) -> Option<(u64, Option<u64>)> {
    match id.split_once('/') {
        Some((n, m)) => Some((n.parse().ok()?, Some(m.parse().ok()?))),
        None => Some((id.parse().ok()?, None)),
    }
}

/// What the checker needs besides the history.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The lease.
    pub lease: Duration,
    /// The slack on top of it.
    pub slack: Duration,
}

/// Whether Redis lost its data (a restart) at or after `t`.
pub fn redis_lost_since(faults: &[Applied], t: Ms) -> bool {
    faults
        .iter()
        .any(|f| f.fault.kind() == FaultKind::RedisRestart && f.end >= t)
}

/// Whether Redis may have lost `session`'s acknowledged writes at or after
/// `t`: a restart, or a failover of its slot that could lose writes
/// ([`Applied::lost`]).
pub fn lost_since(faults: &[Applied], session: &str, t: Ms) -> bool {
    faults.iter().any(|f| f.end >= t && f.lost(session))
}

/// The latest healing of a fault that began by `t`.
fn faults_end_by(faults: &[Applied], t: Ms) -> Ms {
    faults
        .iter()
        .filter(|f| f.start <= t)
        .map(|f| f.end)
        .max()
        .unwrap_or(0)
}

const EXCERPT: usize = 10;

fn excerpt(entries: &[&Entry], upto: usize) -> Vec<String> {
    let from = (upto + 1).saturating_sub(EXCERPT);
    entries[from..=upto.min(entries.len().saturating_sub(1))]
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[derive(Debug)]
struct Notice {
    cursor: Option<String>,
    floor: Option<u64>,
    complete: Option<bool>,
}

fn notice(data: Option<&str>) -> Option<Notice> {
    let json: Value = serde_json::from_str(data?).ok()?;
    Some(Notice {
        cursor: json["cursor"].as_str().map(str::to_owned),
        floor: json["floor"].as_str().and_then(parse_id).map(|(n, _)| n),
        complete: json["complete"].as_bool(),
    })
}

/// The floor named by a `400`'s JSON-RPC error body.
fn refusal_floor(body: &str) -> Option<u64> {
    let json: Value = serde_json::from_str(body).ok()?;
    let floor = json["error"]["data"]["floor"].as_str()?;
    parse_id(floor).map(|(n, _)| n)
}

/// Checks every chain of `history` (rules 1–3).
pub fn check(history: &History, faults: &[Applied], bounds: Bounds) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    for chain in &history.chains {
        let entries: Vec<&Entry> = history.of_chain(chain.id).collect();
        check_chain(chain, &entries, faults, bounds, &mut anomalies);
    }
    anomalies
}

fn check_chain(
    chain: &Chain,
    entries: &[&Entry],
    faults: &[Applied],
    bounds: Bounds,
    out: &mut Vec<Anomaly>,
) {
    let at = |k: usize| At {
        client: chain.client,
        chain: chain.id,
        excerpt: excerpt(entries, k),
    };
    let mut expected: Option<u64> = None;
    let mut stream: Option<Option<u64>> = None;
    let mut seen: HashSet<u64> = HashSet::new();
    let mut current: Option<Notice> = None;
    let mut first_on_conn = true;
    let mut sent: Option<String> = None;
    let mut ended = false;
    for (k, entry) in entries.iter().enumerate() {
        match &entry.step {
            Step::Open {
                via, status, body, ..
            } => {
                current = None;
                first_on_conn = true;
                sent = match via {
                    Via::Resume { cursor, .. } => Some(cursor.clone()),
                    Via::Fresh => {
                        // A fresh stream promises nothing about before it.
                        expected = None;
                        None
                    }
                    Via::Post => None,
                };
                let body = body.clone().unwrap_or_default();
                match status {
                    Some(400) => {
                        if let Some(cursor) = &sent {
                            let cursor_index = parse_id(cursor).map_or(0, |(n, _)| n);
                            let justified = match refusal_floor(&body) {
                                Some(floor) => floor > cursor_index + 1,
                                None => lost_since(faults, &chain.session, chain.started),
                            };
                            if !justified {
                                out.push(Anomaly::UnjustifiedRefusal {
                                    at: at(k),
                                    status: 400,
                                    cursor: cursor.clone(),
                                    body: body.clone(),
                                });
                            }
                        }
                    }
                    Some(404) if !lost_since(faults, &chain.session, chain.session_started) => {
                        out.push(Anomaly::SessionLost {
                            at: at(k),
                            status: 404,
                            body: body.clone(),
                        });
                    }
                    _ => {}
                }
                if let Some(status) = status
                    && (400..500).contains(status)
                    && body.trim().is_empty()
                {
                    out.push(Anomaly::UnclearRefusal {
                        at: at(k),
                        status: *status,
                    });
                }
            }
            Step::Frame {
                id, event, data, ..
            } => {
                if event.as_deref() == Some("mcp-replay") {
                    let parsed = notice(data.as_deref());
                    let names_cursor = parsed
                        .as_ref()
                        .is_some_and(|n| n.cursor.is_some() && n.cursor == sent);
                    if !names_cursor {
                        out.push(Anomaly::BadNotice {
                            at: at(k),
                            sent: sent.clone().unwrap_or_else(|| "-".to_owned()),
                            notice: data.clone().unwrap_or_default(),
                        });
                    }
                    current = parsed;
                    continue;
                }
                let Some(id) = id else { continue };
                let Some((index, m)) = parse_id(id) else {
                    out.push(Anomaly::WrongStream {
                        at: at(k),
                        id: id.clone(),
                    });
                    continue;
                };
                let wrong = match (&chain.kind, stream) {
                    (ChainKind::Standalone, _) => m.is_some(),
                    (ChainKind::Call { .. }, Some(known)) => known != m,
                    (ChainKind::Call { .. }, None) => m.is_none(),
                };
                if wrong {
                    out.push(Anomaly::WrongStream {
                        at: at(k),
                        id: id.clone(),
                    });
                    continue;
                }
                stream = Some(m);
                match expected {
                    Some(next) if index < next => {
                        if data.is_some() && seen.contains(&index) {
                            out.push(Anomaly::Duplicate {
                                at: at(k),
                                id: id.clone(),
                            });
                        } else if data.is_some() {
                            out.push(Anomaly::OutOfOrder {
                                at: at(k),
                                expected: next,
                                got: index,
                            });
                        }
                    }
                    Some(next) if index > next => {
                        let announced = first_on_conn
                            && current.as_ref().is_some_and(|n| {
                                n.complete == Some(false) && n.floor.is_some_and(|f| f >= index)
                            });
                        if !announced {
                            out.push(Anomaly::SilentGap {
                                at: at(k),
                                expected: next,
                                got: index,
                            });
                        }
                        expected = Some(index + 1);
                    }
                    _ => expected = Some(index + 1),
                }
                if data.is_some() {
                    seen.insert(index);
                }
                first_on_conn = false;
            }
            Step::End { outcome } => {
                ended = true;
                end_of_chain(chain, entry, outcome, faults, bounds, || at(k), out);
            }
            Step::Ping { .. } | Step::Init { .. } | Step::Closed { .. } => {}
        }
    }
    if !ended {
        let last = entries.len().saturating_sub(1);
        out.push(Anomaly::NeverEnded {
            at: at(last),
            why: "the client recorded no end".to_owned(),
        });
    }
}

fn end_of_chain(
    chain: &Chain,
    entry: &Entry,
    outcome: &Outcome,
    faults: &[Applied],
    bounds: Bounds,
    at: impl Fn() -> At,
    out: &mut Vec<Anomaly>,
) {
    let ChainKind::Call { nominal, .. } = &chain.kind else {
        if let Outcome::Abandoned { why } = outcome {
            out.push(Anomaly::NeverEnded {
                at: at(),
                why: why.clone(),
            });
        }
        return;
    };
    match outcome {
        Outcome::Drained => out.push(Anomaly::EndedWithoutAnswer {
            at: at(),
            how: "204 to a resume before the call's answer".to_owned(),
        }),
        Outcome::Abandoned { why } => out.push(Anomaly::NeverEnded {
            at: at(),
            why: why.clone(),
        }),
        Outcome::Result
        | Outcome::RpcError { .. }
        | Outcome::Refused { .. }
        | Outcome::Unconfirmed { .. }
        | Outcome::Closed => {}
    }
    if !matches!(
        outcome,
        Outcome::Abandoned { .. } | Outcome::Unconfirmed { .. }
    ) {
        let slack = u64::try_from((bounds.lease + bounds.slack).as_millis()).unwrap_or(u64::MAX);
        let bound = (chain.started + nominal).max(faults_end_by(faults, entry.t)) + slack;
        if entry.t > bound {
            out.push(Anomaly::Late {
                at: at(),
                ended: entry.t,
                bound,
            });
        }
    }
}

/// Rule 4: every event received with data is the one Redis committed at
/// its id, for sessions Redis did not lose since they began (after a
/// cluster failover that may have lost some of a session's writes: every
/// event Redis still holds).
pub async fn commits(
    history: &History,
    faults: &[Applied],
    target: &Target,
) -> anyhow::Result<Vec<Anomaly>> {
    let mut conn = audit::connect_to(target).await?;
    let mut out = Vec::new();
    let mut erased: HashSet<String> = HashSet::new();
    for chain in &history.chains {
        if redis_lost_since(faults, chain.session_started) || erased.contains(&chain.session) {
            continue;
        }
        // A failover of its slot may have lost some of what it committed.
        let lossy = lost_since(faults, &chain.session, chain.session_started);
        let entries: Vec<&Entry> = history.of_chain(chain.id).collect();
        let (known, tombstone) = audit::session_known(&mut conn, &chain.session).await?;
        if !known {
            erased.insert(chain.session.clone());
            if lossy {
                continue;
            }
            out.push(Anomaly::SessionErased {
                at: At {
                    client: chain.client,
                    chain: chain.id,
                    excerpt: excerpt(&entries, entries.len().saturating_sub(1)),
                },
                session: chain.session.clone(),
                tombstone,
            });
            continue;
        }
        for (k, entry) in entries.iter().enumerate() {
            let Step::Frame {
                id: Some(id),
                event,
                data: Some(data),
                ..
            } = &entry.step
            else {
                continue;
            };
            if event.as_deref() == Some("mcp-replay") {
                continue;
            }
            let Some((index, stream)) = parse_id(id) else {
                continue;
            };
            let key = format!(
                "{}:{{{}}}:x:{}",
                audit::PREFIX,
                chain.session,
                audit::stream_field(stream)
            );
            let at = || At {
                client: chain.client,
                chain: chain.id,
                excerpt: excerpt(&entries, k),
            };
            match audit::stored_event(&mut conn, &chain.session, stream, index).await? {
                Stored::Trimmed { .. } => {}
                Stored::Missing { .. } if lossy => {}
                Stored::Missing { floor } => out.push(Anomaly::NotCommitted {
                    at: at(),
                    key,
                    index,
                    floor,
                    received: data.clone(),
                }),
                Stored::Event(None) => out.push(Anomaly::NotCommitted {
                    at: at(),
                    key,
                    index,
                    floor: None,
                    received: data.clone(),
                }),
                Stored::Event(Some(stored)) => {
                    let same = match (
                        serde_json::from_str::<Value>(&stored),
                        serde_json::from_str::<Value>(data),
                    ) {
                        (Ok(a), Ok(b)) => a == b,
                        _ => stored == *data,
                    };
                    if !same {
                        out.push(Anomaly::Mismatch {
                            at: at(),
                            key,
                            index,
                            received: data.clone(),
                            stored,
                        });
                    }
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::history::{Recorder, ResumeMode};

    fn frame(conn: u32, id: &str, data: Option<&str>) -> Step {
        Step::Frame {
            conn,
            id: Some(id.to_owned()),
            event: None,
            data: data.map(str::to_owned),
        }
    }

    fn call_history(steps: Vec<Step>) -> History {
        let rec = Recorder::new(std::time::Instant::now());
        let chain = rec.chain(
            0,
            "s",
            0,
            ChainKind::Call {
                request_id: 1,
                tool: "count_to".to_owned(),
                n: 3,
                nominal: 0,
            },
        );
        for step in steps {
            rec.record(0, Some(chain), step);
        }
        rec.snapshot()
    }

    fn open(conn: u32, cursor: Option<&str>, status: u16, body: Option<&str>) -> Step {
        Step::Open {
            conn,
            slot: 0,
            via: cursor.map_or(Via::Post, |c| Via::Resume {
                cursor: c.to_owned(),
                mode: ResumeMode::GetFirst,
            }),
            status: Some(status),
            body: body.map(str::to_owned),
        }
    }

    fn kinds(history: &History) -> Vec<&'static str> {
        let bounds = Bounds {
            lease: Duration::from_secs(1),
            slack: Duration::from_secs(10),
        };
        check(history, &[], bounds)
            .iter()
            .map(Anomaly::kind)
            .collect()
    }

    const NOTICE_OK: &str = r#"{"cursor":"1/0","floor":"0/0","complete":true}"#;

    fn notice_frame(conn: u32, data: &str) -> Step {
        Step::Frame {
            conn,
            id: None,
            event: Some("mcp-replay".to_owned()),
            data: Some(data.to_owned()),
        }
    }

    #[test]
    fn an_exact_resume_is_clean() {
        let history = call_history(vec![
            open(1, None, 200, None),
            frame(1, "0/0", None),
            frame(1, "1/0", Some("{}")),
            open(2, Some("1/0"), 200, None),
            notice_frame(2, NOTICE_OK),
            frame(2, "2/0", Some("{}")),
            frame(2, "3/0", Some(r#"{"id":1,"result":{}}"#)),
            Step::End {
                outcome: Outcome::Result,
            },
        ]);
        assert_eq!(kinds(&history), Vec::<&str>::new());
    }

    #[test]
    fn a_duplicate_a_gap_and_a_refusal_of_retained_events_are_anomalies() {
        let history = call_history(vec![
            open(1, None, 200, None),
            frame(1, "0/0", None),
            frame(1, "1/0", Some("{}")),
            open(2, Some("1/0"), 200, None),
            notice_frame(2, NOTICE_OK),
            frame(2, "1/0", Some("{}")),
            frame(2, "3/0", Some("{}")),
            open(
                3,
                Some("3/0"),
                400,
                Some(r#"{"error":{"data":{"cursor":"3/0","floor":"0/0"}}}"#),
            ),
            Step::End {
                outcome: Outcome::Refused {
                    status: 400,
                    body: String::new(),
                },
            },
        ]);
        assert_eq!(
            kinds(&history),
            vec!["duplicate", "silent-gap", "unjustified-refusal"]
        );
    }

    #[test]
    fn a_gap_announced_by_the_notice_or_a_refusal_past_the_cursor_is_fine() {
        let history = call_history(vec![
            open(1, None, 200, None),
            frame(1, "0/0", None),
            open(
                2,
                Some("0/0"),
                400,
                Some(r#"{"error":{"data":{"cursor":"0/0","floor":"5/0"}}}"#),
            ),
            Step::End {
                outcome: Outcome::Refused {
                    status: 400,
                    body: "x".to_owned(),
                },
            },
        ]);
        assert_eq!(kinds(&history), Vec::<&str>::new());
    }

    #[test]
    fn a_404_without_data_loss_a_204_before_the_answer_and_a_missing_end_are_anomalies() {
        let history = call_history(vec![
            open(1, None, 200, None),
            frame(1, "0/0", None),
            open(2, Some("0/0"), 404, Some("Not Found: Session not found")),
            open(3, Some("0/0"), 204, None),
            Step::End {
                outcome: Outcome::Drained,
            },
        ]);
        assert_eq!(
            kinds(&history),
            vec!["session-lost", "ended-without-answer"]
        );
        let unended = call_history(vec![open(1, None, 200, None), frame(1, "0/0", None)]);
        assert_eq!(kinds(&unended), vec!["never-ended"]);
    }

    #[test]
    fn a_standalone_gap_is_fine_only_under_a_notice_that_says_so() {
        let rec = Recorder::new(std::time::Instant::now());
        let chain = rec.chain(0, "s", 0, ChainKind::Standalone);
        let steps = [
            Step::Open {
                conn: 1,
                slot: 0,
                via: Via::Fresh,
                status: Some(200),
                body: None,
            },
            frame(1, "0", None),
            frame(1, "1", Some("{}")),
            open(2, Some("1"), 200, None),
            notice_frame(2, r#"{"cursor":"1","floor":"5","complete":false}"#),
            frame(2, "5", Some("{}")),
            open(3, Some("5"), 200, None),
            notice_frame(3, r#"{"cursor":"5","floor":"1","complete":true}"#),
            frame(3, "8", Some("{}")),
            Step::End {
                outcome: Outcome::Closed,
            },
        ];
        for step in steps {
            rec.record(0, Some(chain), step);
        }
        assert_eq!(kinds(&rec.snapshot()), vec!["silent-gap"]);
    }

    #[test]
    fn a_lossy_failover_excuses_only_the_sessions_of_its_slots_begun_before_it() {
        use crate::faults::schedule::Fault;
        let applied = |fault: Fault, lost_slots: Vec<(u16, u16)>| Applied {
            fault,
            start: 100,
            end: 200,
            error: None,
            lost_slots,
            note: None,
        };
        // "foo" is in slot 12182, "somekey" in 11058.
        let takeover = applied(
            Fault::Failover {
                pick: 0,
                takeover: true,
            },
            vec![(12000, 12999)],
        );
        assert!(lost_since(std::slice::from_ref(&takeover), "foo", 50));
        assert!(!lost_since(std::slice::from_ref(&takeover), "foo", 250));
        assert!(!lost_since(std::slice::from_ref(&takeover), "somekey", 50));
        let manual = applied(
            Fault::Failover {
                pick: 0,
                takeover: false,
            },
            Vec::new(),
        );
        assert!(!lost_since(&[manual], "foo", 50));
        let restart = applied(
            Fault::RedisRestart {
                down: Duration::ZERO,
            },
            Vec::new(),
        );
        assert!(lost_since(&[restart], "somekey", 50));
    }

    #[test]
    fn ids_parse() {
        assert_eq!(parse_id("4/2"), Some((4, Some(2))));
        assert_eq!(parse_id("7"), Some((7, None)));
        assert_eq!(parse_id("x"), None);
    }
}
