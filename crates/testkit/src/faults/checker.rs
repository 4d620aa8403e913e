//! The checker: what must hold of every client's history, and the
//! anomalies where it does not. It excuses nothing it cannot explain.
//!
//! 1. No event id is delivered twice on one chain (a stream and its
//!    resumes), and ids never go back.
//! 2. No silent gap: a chain's indices are contiguous unless a replay notice
//!    (`complete:false`) with a floor covering the gap announced it, or the
//!    resume was refused with a clear `400` whose floor is past the cursor.
//!    Every floor claimed, in a notice or a `400`, is compared with the
//!    floor the live audit reads from Redis just after ([`audits`]). A
//!    standalone stream's ids jump where a takeover began a segment: a
//!    jump is no gap only if no client of the session ever received an
//!    event in it *and* the live audit, reading Redis just after the jump,
//!    finds no event in it either.
//! 3. Every call ends within the lease plus the slack after its nominal end
//!    and after the last fault that began before it ended, with its result,
//!    or with an error the client can act on *and* a fault to explain it:
//!    the instance-lost `-32603`, or a `503` with `Retry-After`. A `POST`
//!    answered `200` whose stream carries no event is an anomaly of its own
//!    (the client holds no cursor: the call's fate is unknowable), unless
//!    its connection was broken by a fault of that instance or that link.
//! 4. Nothing was sent that Redis did not commit, and nothing before it
//!    committed it: each received event is read from Redis right after it
//!    arrived ([`audits`]) and again at the end ([`commits`]).
//! 5. No Redis connections leak (see the run).
//! 6. The run did what it claims: every fault applied without error, each
//!    kind switched on at least the minimum number of times, takeovers and
//!    POST-first resumes happened ([`coverage`]).
//! 7. A `DELETE` through any instance stops the session's streams on its
//!    owner within the lease's third (plus 500 ms), and its `404`s after
//!    are the client's own doing.
//!
//! # Excuses
//!
//! A `404`, a `400` without a floor, a floor below a claimed one, and an
//! event missing from (or different in) Redis are excused only by a fault
//! that may have lost that session's data ([`Applied::lost`]: a single
//! Redis's restart; on a cluster a lossy change of the primary of the
//! session's slot), and only if that fault *began before* the refusal or
//! the read that found the data gone, and ended after the data could have
//! been written (the session's start; a call's events are written after
//! the call began). A restart late in a run excuses nothing before it.
//! An error or a `503` ending a call needs a fault under way during the
//! call that could have cost its owner: one of an instance, or one that
//! reached the session's keys ([`Applied::touches_keys`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::time::Duration;

use serde_json::Value;

use super::audit::{self, Stored, Target};
use super::history::{
    Answer, Chain, ChainId, ChainKind, Entry, History, Ms, Outcome, Question, ResumeMode, Step, Via,
};
use super::nemesis::Applied;
use super::schedule::{Fault, FaultKind};

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
    /// (3) A `POST` answered `200` whose stream ended with no event, and
    /// no fault of that instance or link to explain it.
    Empty200 { at: At, why: String },
    /// (3) A call ended with a JSON-RPC error that is not the documented
    /// instance-lost error, or with no fault during the call to explain it.
    UnexplainedError { at: At, code: i64, message: String },
    /// (3) A call ended refused with a 5xx that carried no `Retry-After`,
    /// or with no fault during the call to explain it.
    UnexplainedUnavailable {
        at: At,
        status: u16,
        retry_after: bool,
        body: String,
    },
    /// (3) A call's `POST` failed before any response (the client cannot
    /// tell whether the tool ran) with no fault of that instance or link
    /// under way to explain it.
    UnexplainedDrop { at: At, why: String },
    /// (4) An event Redis did not hold when the live audit read it, after
    /// the client had received it: sent before it was committed.
    Early {
        at: At,
        key: String,
        index: u64,
        received: Ms,
        read: Ms,
        floor: Option<u64>,
    },
    /// (2) A floor claimed in a notice or a `400` above the floor Redis
    /// held when the live audit read it afterwards.
    FloorDisagrees {
        at: At,
        key: String,
        claimed: u64,
        redis: u64,
        read: Ms,
    },
    /// (7) A stream of a session the client deleted still open (or
    /// closed only by the client) past the lease's third after the
    /// `DELETE` was answered.
    NotStopped {
        at: At,
        deleted: Ms,
        bound: Ms,
        how: String,
    },
    /// (6) A fault that did not apply (or heal) as scheduled.
    FaultFailed {
        start: Ms,
        fault: String,
        error: String,
    },
    /// (6) The run did less than it must to mean anything.
    Coverage {
        what: String,
        wanted: usize,
        got: usize,
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
            Anomaly::Empty200 { .. } => "empty-200",
            Anomaly::UnexplainedError { .. } => "unexplained-error",
            Anomaly::UnexplainedUnavailable { .. } => "unexplained-unavailable",
            Anomaly::UnexplainedDrop { .. } => "unexplained-drop",
            Anomaly::Early { .. } => "early",
            Anomaly::FloorDisagrees { .. } => "floor-disagrees",
            Anomaly::NotStopped { .. } => "not-stopped",
            Anomaly::FaultFailed { .. } => "fault-failed",
            Anomaly::Coverage { .. } => "coverage",
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
            | Anomaly::SessionErased { at, .. }
            | Anomaly::Empty200 { at, .. }
            | Anomaly::UnexplainedError { at, .. }
            | Anomaly::UnexplainedUnavailable { at, .. }
            | Anomaly::UnexplainedDrop { at, .. }
            | Anomaly::Early { at, .. }
            | Anomaly::FloorDisagrees { at, .. }
            | Anomaly::NotStopped { at, .. } => Some(at),
            Anomaly::Leak { .. } | Anomaly::FaultFailed { .. } | Anomaly::Coverage { .. } => None,
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
            Anomaly::Empty200 { why, .. } => write!(
                f,
                "a POST answered 200 whose stream carried no event ({why}), no fault of its instance or link to explain it"
            )?,
            Anomaly::UnexplainedError { code, message, .. } => write!(
                f,
                "the call ended with JSON-RPC error {code} {message:?}, which no fault during the call explains"
            )?,
            Anomaly::UnexplainedUnavailable {
                status,
                retry_after,
                body,
                ..
            } => write!(
                f,
                "the call ended refused with {status} (Retry-After: {}), which no fault during the call explains: {body}",
                if *retry_after { "yes" } else { "none" }
            )?,
            Anomaly::UnexplainedDrop { why, .. } => write!(
                f,
                "the POST failed before any response ({why}), no fault of its instance or link to explain it"
            )?,
            Anomaly::Early {
                key,
                index,
                received,
                read,
                floor,
                ..
            } => write!(
                f,
                "event {index} received at {received} ms, but {key} did not hold it at {read} ms (floor {floor:?}) and nothing lost it: sent before it was committed"
            )?,
            Anomaly::FloorDisagrees {
                key,
                claimed,
                redis,
                read,
                ..
            } => write!(
                f,
                "floor {claimed} claimed, but {key}'s floor was {redis} at {read} ms and nothing lost it"
            )?,
            Anomaly::NotStopped {
                deleted,
                bound,
                how,
                ..
            } => write!(
                f,
                "the session was deleted at {deleted} ms; its stream {how} (bound {bound} ms)"
            )?,
            Anomaly::FaultFailed {
                start,
                fault,
                error,
            } => write!(f, "at {start} ms, {fault}: {error}")?,
            Anomaly::Coverage { what, wanted, got } => {
                write!(f, "{what}: {got}, at least {wanted} wanted")?
            }
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

/// Whether a fault that may have lost `session`'s data explains data
/// missing at `t`: it began before `t` and ended at or after `since`, when
/// the data could first have been written.
pub fn lost_between(faults: &[Applied], session: &str, since: Ms, t: Ms) -> bool {
    faults
        .iter()
        .any(|f| f.lost(session) && f.loss_began() < t && f.end >= since)
}

/// Whether a cluster fault that may have lost the last writes of
/// `session`'s primary (a lossy failover, a killed primary) began before
/// `t` and ended at or after `since`. Asynchronous replication can then
/// drop an event already sent, and the next owner, reading the stream's
/// head from the replica, writes another at its index: the risk
/// docs/redis.md accepts. Only this excuses a `mismatch`; a single Redis's
/// loss never does, since it takes the head with it.
fn replica_lost_between(faults: &[Applied], session: &str, since: Ms, t: Ms) -> bool {
    faults.iter().any(|f| {
        matches!(f.fault, Fault::Failover { .. } | Fault::PrimaryKill { .. })
            && f.lost(session)
            && f.loss_began() < t
            && f.end >= since
    })
}

/// Whether Redis lost all its data (a single Redis's restart, a stale
/// owner's) between `since` and `t`. The product knows that happened (the
/// session's epoch and lease are gone) and must then never vouch for a
/// jump it cannot see. A cluster's lossy failover is not counted: it may
/// drop a primary's last writes, the lease and epoch with them or not, and
/// the shared log accepts that risk of asynchronous replication
/// (docs/redis.md); its losses stay excused per slot ([`lost_between`]).
fn wiped_between(faults: &[Applied], since: Ms, t: Ms) -> bool {
    faults.iter().any(|f| {
        matches!(
            f.fault,
            Fault::RedisRestart { .. } | Fault::StaleOwner { .. }
        ) && f.loss_began() < t
            && f.end >= since
    })
}

/// Whether a fault under way between `since` and `t` could have cost
/// `session`'s owner (client `client`'s view of it): a fault of an
/// instance, a cut of this client's link, a Redis fault that reached the
/// session's keys, or on a Redis Cluster one that moved slots to another
/// primary. The last reaches every session: each instance reaches every
/// slot through one cluster connection, which stalls while it finds the
/// new primary (seen in seed 3: a killed primary of slots 10923-16383
/// held up the calls of sessions in slots 3708 and 6673 for 3 s, until
/// their owners' leases lapsed). That is a cost in availability, reported
/// to the client as the instance-lost error, not a loss the checker
/// would excuse: data-loss excuses stay per slot ([`lost_between`]).
pub fn disturbed_between(
    faults: &[Applied],
    session: &str,
    client: usize,
    since: Ms,
    t: Ms,
) -> bool {
    faults.iter().any(|f| {
        let reaches = match &f.fault {
            // Any session may have been owned by that instance.
            Fault::Kill { .. }
            | Fault::Pause { .. }
            | Fault::Partition { .. }
            | Fault::StaleOwner { .. } => true,
            Fault::Cut { client: only, .. } => only.is_none_or(|c| c == client),
            _ => f.touches_keys(session) || f.note.is_some(),
        };
        reaches && f.start < t && f.end >= since
    })
}

/// Whether a fault of instance `slot`, or of client `client`'s link to
/// it, under way between `since` and `t`, explains a connection to it
/// that broke.
pub fn broke_link(faults: &[Applied], slot: usize, client: usize, since: Ms, t: Ms) -> bool {
    faults.iter().any(|f| {
        let reaches = match &f.fault {
            Fault::Kill { slot: s, .. }
            | Fault::Pause { slot: s, .. }
            | Fault::StaleOwner { slot: s, .. } => *s == slot,
            Fault::Cut {
                client: only,
                slot: s,
                ..
            } => *s == slot && only.is_none_or(|c| c == client),
            _ => false,
        };
        reaches && f.start < t && f.end >= since
    })
}

/// Whether a fault of Redis that reaches `session`'s keys was under way
/// between `since` and `t`: a write of the session could not be committed
/// then.
fn held_by_redis(faults: &[Applied], session: &str, since: Ms, t: Ms) -> bool {
    faults
        .iter()
        .any(|f| f.touches_keys(session) && f.start < t && f.end >= since)
}

/// When a chain's events can first have been written: a call's when the
/// call began; the standalone stream's when the session began.
fn written_since(chain: &Chain) -> Ms {
    match chain.kind {
        ChainKind::Call { .. } => chain.started,
        ChainKind::Standalone => chain.session_started,
    }
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

/// The floor a replay notice announcing a gap (`complete:false`) names:
/// its index and stream. A complete notice's floor excuses nothing, so it
/// is not a claim to check.
pub(crate) fn notice_floor(data: &str) -> Option<(u64, Option<u64>)> {
    let json: Value = serde_json::from_str(data).ok()?;
    if json["complete"].as_bool() != Some(false) {
        return None;
    }
    parse_id(json["floor"].as_str()?)
}

/// The floor named by a `400`'s JSON-RPC error body: its index and stream.
pub(crate) fn refusal_floor(body: &str) -> Option<(u64, Option<u64>)> {
    let json: Value = serde_json::from_str(body).ok()?;
    parse_id(json["error"]["data"]["floor"].as_str()?)
}

/// Whether two event payloads are the same JSON (or the same text).
fn same_data(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The instance-lost error the shared log answers a call with when its
/// owner is gone and its outcome unknown (`rmcp-resume-redis`'s
/// `INSTANCE_LOST_ERROR`): the one JSON-RPC error a fault may explain.
fn instance_lost(code: i64, message: &str) -> bool {
    code == -32603 && message.contains("instance lost")
}

/// Checks every chain of `history` (rules 1–3) and what the live audit
/// read while the run went on ([`audits`]).
pub fn check(history: &History, faults: &[Applied], bounds: Bounds) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    let deleted = deletes(history);
    let sent = delete_sent(history);
    let books = standalone_books(history);
    let jumps = jump_reads(history);
    for chain in &history.chains {
        let entries: Vec<&Entry> = history.of_chain(chain.id).collect();
        let sent = sent.get(chain.session.as_str()).copied();
        let standalone = Standalone {
            received: books.get(chain.session.as_str()),
            jumps: jumps.get(&chain.id),
        };
        check_chain(
            chain,
            &entries,
            faults,
            bounds,
            sent,
            standalone,
            &mut anomalies,
        );
        if let Some(deleted) = deleted.get(chain.session.as_str()).copied() {
            stopped(chain, &entries, deleted, bounds, &mut anomalies);
        }
    }
    anomalies.extend(audits(history, faults));
    anomalies
}

/// Every standalone event (an id with data) any client received, by
/// session: the checker's own books of which standalone ids were events.
/// A standalone stream's ids jump where a takeover began a segment; a jump
/// over ids none of which any client ever received as an event skips
/// nothing anyone was given (the product's notices and floors are never
/// asked).
fn standalone_books(history: &History) -> HashMap<&str, BTreeSet<u64>> {
    let mut books: HashMap<&str, BTreeSet<u64>> = HashMap::new();
    for chain in &history.chains {
        if chain.kind != ChainKind::Standalone {
            continue;
        }
        for entry in history.of_chain(chain.id) {
            if let Step::Frame {
                id: Some(id),
                data: Some(_),
                event,
                ..
            } = &entry.step
                && event.as_deref() != Some("mcp-replay")
                && let Some((index, None)) = parse_id(id)
            {
                books
                    .entry(chain.session.as_str())
                    .or_default()
                    .insert(index);
            }
        }
    }
    books
}

/// What the live audit read of one standalone jump: the first event Redis
/// held in it (`None`: none), and when, or `Err` with when it gave up.
type JumpRead = Result<(Option<u64>, Ms), Ms>;

/// What the checker knows of a session's standalone events, to tell a new
/// owner's segment (a jump over ids that were never events) from a skip.
#[derive(Clone, Copy)]
struct Standalone<'a> {
    /// Every standalone event any client of the session received.
    received: Option<&'a BTreeSet<u64>>,
    /// This chain's jumps as the live audit read them, by the index the
    /// client received after the jump.
    jumps: Option<&'a HashMap<u64, JumpRead>>,
}

impl Standalone<'_> {
    /// Whether the jump from `from` to `to` (the index received) is a new
    /// owner's segment: no client of the session received an event in it,
    /// the live audit read Redis after it and found none there, and Redis
    /// did not lose all its data between the client's event before it
    /// (`since`) and that read (an empty Redis proves nothing). Neither the
    /// product's notices nor its floors are asked.
    fn segment(&self, from: u64, to: u64, since: Ms, lost: impl Fn(Ms, Ms) -> bool) -> bool {
        let received = self
            .received
            .is_some_and(|r| r.range(from..to).next().is_some());
        let read = self.jumps.and_then(|jumps| jumps.get(&to));
        !received && matches!(read, Some(Ok((None, at))) if !lost(since, *at))
    }
}

/// Each standalone chain's jumps as the live audit read them.
fn jump_reads(history: &History) -> HashMap<ChainId, HashMap<u64, JumpRead>> {
    let mut reads: HashMap<ChainId, HashMap<u64, JumpRead>> = HashMap::new();
    for observation in &history.audits {
        let Question::Skipped { chain, to, .. } = &observation.question else {
            continue;
        };
        let read = match observation.answer {
            Answer::Held(held) => Ok((held, observation.answered)),
            _ => Err(observation.answered),
        };
        reads
            .entry(*chain)
            .or_default()
            .insert(to.saturating_add(1), read);
    }
    reads
}

/// When each session the clients deleted was first answered `2xx` to its
/// `DELETE`.
pub fn deletes(history: &History) -> std::collections::HashMap<&str, Ms> {
    let mut out = std::collections::HashMap::new();
    for entry in &history.entries {
        if let Step::Delete {
            session,
            status: Some(status),
            ..
        } = &entry.step
            && (200..300).contains(status)
        {
            out.entry(session.as_str()).or_insert(entry.t);
        }
    }
    out
}

/// When the first `DELETE` of each session left the client, answered or
/// not: from then on the session may be gone from Redis by the client's
/// own doing.
fn delete_sent(history: &History) -> std::collections::HashMap<&str, Ms> {
    let mut out = std::collections::HashMap::new();
    for entry in &history.entries {
        if let Step::Delete { session, sent, .. } = &entry.step {
            let first = out.entry(session.as_str()).or_insert(*sent);
            *first = (*first).min(*sent);
        }
    }
    out
}

/// Slack on top of the lease's third for a deleted session's streams to
/// end: the owner's next renewal finds the tombstone.
const STOP_SLACK: Ms = 500;

/// Rule 7: a `DELETE` through any instance stops the owner's streams of
/// that session within the lease's third: each connection open when the
/// `DELETE` was answered must be ended by the server by then.
fn stopped(chain: &Chain, entries: &[&Entry], deleted: Ms, bounds: Bounds, out: &mut Vec<Anomaly>) {
    let third = u64::try_from((bounds.lease / 3).as_millis()).unwrap_or(u64::MAX);
    let bound = deleted + third + STOP_SLACK;
    for (k, entry) in entries.iter().enumerate() {
        let Step::Open {
            conn,
            status: Some(200),
            ..
        } = &entry.step
        else {
            continue;
        };
        if entry.t > deleted {
            continue;
        }
        // A call's connection ends with its answer, recorded as the chain's
        // end rather than as a close.
        let closed = entries[k..]
            .iter()
            .enumerate()
            .find_map(|(j, e)| match &e.step {
                Step::Closed { conn: c, why } if c == conn => Some((k + j, e.t, why.as_str())),
                Step::End { .. } => Some((k + j, e.t, "the chain ended")),
                _ => None,
            });
        let how = match closed {
            Some((_, t, _)) if t < deleted => continue,
            Some((_, t, "closed by the client")) => {
                format!("was still open at {t} ms, when the client closed it")
            }
            Some((_, t, _)) if t > bound => format!("ended only at {t} ms"),
            Some(_) => continue,
            None => "never ended".to_owned(),
        };
        let upto = closed.map_or(entries.len().saturating_sub(1), |(j, _, _)| j);
        out.push(Anomaly::NotStopped {
            at: At {
                client: chain.client,
                chain: chain.id,
                excerpt: excerpt(entries, upto),
            },
            deleted,
            bound,
            how,
        });
    }
}

/// A `POST` answered `200`, until its first event.
struct PostOpen {
    k: usize,
    conn: u32,
    slot: usize,
    t: Ms,
}

fn check_chain(
    chain: &Chain,
    entries: &[&Entry],
    faults: &[Applied],
    bounds: Bounds,
    // When the client's first DELETE of the session left, if it did.
    delete_sent: Option<Ms>,
    // The session's standalone events, as the checker knows them.
    standalone: Standalone<'_>,
    out: &mut Vec<Anomaly>,
) {
    let at = |k: usize| At {
        client: chain.client,
        chain: chain.id,
        excerpt: excerpt(entries, k),
    };
    // A POST whose stream carried no event: a cursorless call, unless a
    // fault broke that connection.
    let empty = |post: &PostOpen, k: usize, why: &str, t: Ms, out: &mut Vec<Anomaly>| {
        let clean = why == "end of stream";
        if clean || !broke_link(faults, post.slot, chain.client, post.t, t) {
            out.push(Anomaly::Empty200 {
                at: at(k.max(post.k)),
                why: why.to_owned(),
            });
        }
    };
    let mut expected: Option<u64> = None;
    // When the chain last received an id: a jump after it is read against
    // the faults since.
    let mut last_id_at: Ms = chain.started;
    let mut stream: Option<Option<u64>> = None;
    let mut seen: HashSet<u64> = HashSet::new();
    let mut current: Option<Notice> = None;
    let mut first_on_conn = true;
    let mut sent: Option<String> = None;
    let mut ended = false;
    let mut post: Option<PostOpen> = None;
    let mut last_refusal: Option<Option<String>> = None;
    // The instance the last connection tried, and when it failed.
    let mut last_open: Option<(usize, Ms)> = None;
    for (k, entry) in entries.iter().enumerate() {
        match &entry.step {
            Step::Open {
                conn,
                slot,
                via,
                status,
                body,
                retry_after,
            } => {
                if let Some(open) = post.take() {
                    empty(&open, k, "another connection opened", entry.t, out);
                }
                if *via == Via::Post && *status == Some(200) {
                    post = Some(PostOpen {
                        k,
                        conn: *conn,
                        slot: *slot,
                        t: entry.t,
                    });
                }
                if status.is_some_and(|s| s >= 500) {
                    last_refusal = Some(retry_after.clone());
                }
                last_open = Some((*slot, entry.t));
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
                            // A claimed floor is compared with Redis's by
                            // the live audit; here only its place.
                            let justified = match refusal_floor(&body) {
                                Some((floor, _)) => floor > cursor_index + 1,
                                None => lost_between(
                                    faults,
                                    &chain.session,
                                    written_since(chain),
                                    entry.t,
                                ),
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
                    Some(404)
                        if !lost_between(
                            faults,
                            &chain.session,
                            chain.session_started,
                            entry.t,
                        ) && delete_sent.is_none_or(|d| d > entry.t) =>
                    {
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
            Step::Closed { conn, why } => {
                if let Some(open) = post.take_if(|p| p.conn == *conn) {
                    empty(&open, k, why, entry.t, out);
                }
            }
            Step::Frame {
                conn,
                id,
                event,
                data,
            } => {
                if post.as_ref().is_some_and(|p| p.conn == *conn) {
                    post = None;
                }
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
                        // A new owner's segment: the ids jumped over were
                        // never an event any client of the session got, nor
                        // one Redis holds.
                        let segment = chain.kind == ChainKind::Standalone
                            && standalone.segment(next, index, last_id_at, |since, t| {
                                wiped_between(faults, since, t)
                            });
                        if !announced && !segment {
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
                last_id_at = entry.t;
                first_on_conn = false;
            }
            Step::End { outcome } => {
                if let Some(open) = post.take() {
                    empty(&open, k, "the chain ended", entry.t, out);
                }
                ended = true;
                let ending = Ending {
                    entry,
                    outcome,
                    retry_after: last_refusal.clone().flatten(),
                    last_open,
                };
                end_of_chain(chain, &ending, faults, bounds, || at(k), out);
            }
            Step::Ping { .. } | Step::Init { .. } | Step::Delete { .. } => {}
        }
    }
    if let Some(open) = post.take() {
        let last = entries.last().map_or(0, |e| e.t);
        empty(
            &open,
            entries.len().saturating_sub(1),
            "never closed",
            last,
            out,
        );
    }
    if !ended {
        let last = entries.len().saturating_sub(1);
        out.push(Anomaly::NeverEnded {
            at: at(last),
            why: "the client recorded no end".to_owned(),
        });
    }
}

/// How a chain ended, with the last 5xx's `Retry-After` and the instance
/// its last connection tried (and when).
struct Ending<'a> {
    entry: &'a Entry,
    outcome: &'a Outcome,
    retry_after: Option<String>,
    last_open: Option<(usize, Ms)>,
}

fn end_of_chain(
    chain: &Chain,
    ending: &Ending<'_>,
    faults: &[Applied],
    bounds: Bounds,
    at: impl Fn() -> At,
    out: &mut Vec<Anomaly>,
) {
    let (entry, outcome) = (ending.entry, ending.outcome);
    let ChainKind::Call { nominal, .. } = &chain.kind else {
        if let Outcome::Abandoned { why } = outcome {
            out.push(Anomaly::NeverEnded {
                at: at(),
                why: why.clone(),
            });
        }
        return;
    };
    let disturbed =
        || disturbed_between(faults, &chain.session, chain.client, chain.started, entry.t);
    match outcome {
        Outcome::Drained => out.push(Anomaly::EndedWithoutAnswer {
            at: at(),
            how: "204 to a resume before the call's answer".to_owned(),
        }),
        Outcome::Abandoned { why } => out.push(Anomaly::NeverEnded {
            at: at(),
            why: why.clone(),
        }),
        Outcome::RpcError { code, message } => {
            if !(instance_lost(*code, message) && disturbed()) {
                out.push(Anomaly::UnexplainedError {
                    at: at(),
                    code: *code,
                    message: message.clone(),
                });
            }
        }
        Outcome::Refused { status, body } if *status >= 500 => {
            let retry_after = ending.retry_after.is_some();
            if !(retry_after && disturbed()) {
                out.push(Anomaly::UnexplainedUnavailable {
                    at: at(),
                    status: *status,
                    retry_after,
                    body: body.clone(),
                });
            }
        }
        Outcome::Unconfirmed { why } => {
            // A broken link to the instance, or Redis unable to take the
            // session's writes: an instance holds a `POST`'s head until its
            // call is committed, so an outage of the session's keys can
            // outlast the client's patience.
            let explained = ending.last_open.is_some_and(|(slot, failed)| {
                broke_link(faults, slot, chain.client, chain.started, failed + 1)
                    || held_by_redis(faults, &chain.session, chain.started, failed + 1)
            });
            if !explained {
                out.push(Anomaly::UnexplainedDrop {
                    at: at(),
                    why: why.clone(),
                });
            }
        }
        // Judged where its connection ended (an empty 200).
        Outcome::Empty { .. } | Outcome::Result | Outcome::Refused { .. } | Outcome::Closed => {}
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

/// How long after an event arrived a read that finds its stream's state
/// gone still says something: far below the answered TTL (60 s) and the
/// session TTL, so a stream that expired cannot be mistaken for one that
/// was never written.
const FRESH_READ: Ms = 10_000;

/// Rules 2 and 4 on what the live audit read right after the clients saw
/// it: each received event must be in Redis, as received (or trimmed, or
/// lost by a fault that began before the read), and each claimed floor at
/// most Redis's.
pub fn audits(history: &History, faults: &[Applied]) -> Vec<Anomaly> {
    let mut out = Vec::new();
    let deleted = delete_sent(history);
    for observation in &history.audits {
        let Some(chain) = history.chains.get(observation.question.chain() as usize) else {
            continue;
        };
        // Read after the client's own DELETE may have landed: nothing to
        // expect of Redis.
        if deleted
            .get(observation.session.as_str())
            .is_some_and(|sent| *sent <= observation.answered)
        {
            continue;
        }
        // A loss explains an event gone or a floor moved, never another
        // event at an id a client was given: ids are never given twice,
        // also after Redis lost its data (docs/redis.md), so a mismatch is
        // the divergence itself.
        let excused = lost_between(
            faults,
            &observation.session,
            written_since(chain),
            observation.answered,
        );
        let mismatch = matches!(
            (&observation.question, &observation.answer),
            (Question::Event { data, .. }, Answer::Event(Stored::Event(Some(held))))
                if !same_data(held, data)
        );
        let replica_lost = replica_lost_between(
            faults,
            &observation.session,
            written_since(chain),
            observation.answered,
        );
        if excused && (!mismatch || replica_lost) {
            continue;
        }
        let at = |t: Ms| {
            let entries: Vec<&Entry> = history.of_chain(chain.id).collect();
            let upto = entries.iter().rposition(|e| e.t <= t).unwrap_or(0);
            At {
                client: chain.client,
                chain: chain.id,
                excerpt: excerpt(&entries, upto),
            }
        };
        match (&observation.question, &observation.answer) {
            (
                Question::Event {
                    received,
                    stream,
                    index,
                    data,
                    ..
                },
                Answer::Event(stored),
            ) => {
                let key = stream_key(&observation.session, *stream);
                let early = |floor| Anomaly::Early {
                    at: at(*received),
                    key: key.clone(),
                    index: *index,
                    received: *received,
                    read: observation.asked,
                    floor,
                };
                match stored {
                    Stored::Event(Some(held)) if !same_data(held, data) => {
                        out.push(Anomaly::Mismatch {
                            at: at(*received),
                            key: key.clone(),
                            index: *index,
                            received: data.clone(),
                            stored: held.clone(),
                        });
                    }
                    Stored::Event(None) => out.push(early(None)),
                    Stored::Missing { floor: Some(floor) } => out.push(early(Some(*floor))),
                    Stored::Missing { floor: None }
                        if observation.asked.saturating_sub(*received) <= FRESH_READ =>
                    {
                        out.push(early(None));
                    }
                    Stored::Event(Some(_)) | Stored::Trimmed { .. } | Stored::Missing { .. } => {}
                }
            }
            (
                Question::Floor {
                    claimed_at,
                    stream,
                    claimed,
                    ..
                },
                Answer::Floor(Some(redis)),
            ) if redis < claimed => out.push(Anomaly::FloorDisagrees {
                at: at(*claimed_at),
                key: stream_key(&observation.session, *stream),
                claimed: *claimed,
                redis: *redis,
                read: observation.asked,
            }),
            _ => {}
        }
    }
    out
}

fn stream_key(session: &str, stream: Option<u64>) -> String {
    format!(
        "{}:{{{session}}}:x:{}",
        audit::PREFIX,
        audit::stream_field(stream)
    )
}

/// The least a run must have done to mean anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Minimums {
    /// Faults of each kind switched on (and applying to the backend)
    /// applied without error, at least.
    pub per_kind: usize,
    /// Takeovers (a session's epoch past its first), at least.
    pub takeovers: usize,
    /// Resumes that POSTed first and were answered `200`, at least.
    pub post_first: usize,
    /// Redis outages (`redis-outage`) that began while a call was in flight
    /// (its chain began before the outage and ended after it began), at
    /// least: the case the outage limit is for.
    pub outages_in_flight: usize,
}

/// Rule 6: every fault applied without error, and the run reached its
/// minimums: `kinds` each at least `min.per_kind` times, `takeovers` (read
/// from Redis by the run) and the POST-first resumes in `history`.
pub fn coverage(
    history: &History,
    faults: &[Applied],
    kinds: &[FaultKind],
    takeovers: usize,
    min: &Minimums,
) -> Vec<Anomaly> {
    let mut out = Vec::new();
    for applied in faults {
        if let Some(error) = &applied.error {
            out.push(Anomaly::FaultFailed {
                start: applied.start,
                fault: applied.fault.to_string(),
                error: error.clone(),
            });
        }
    }
    for kind in kinds {
        let got = faults
            .iter()
            .filter(|f| f.ok() && f.fault.kind() == *kind)
            .count();
        if got < min.per_kind {
            out.push(Anomaly::Coverage {
                what: format!("{kind} faults applied"),
                wanted: min.per_kind,
                got,
            });
        }
    }
    if takeovers < min.takeovers {
        out.push(Anomaly::Coverage {
            what: "takeovers".to_owned(),
            wanted: min.takeovers,
            got: takeovers,
        });
    }
    let post_first = post_first_resumes(history);
    if post_first < min.post_first {
        out.push(Anomaly::Coverage {
            what: "POST-first resumes answered 200".to_owned(),
            wanted: min.post_first,
            got: post_first,
        });
    }
    let in_flight = outages_in_flight(history, faults);
    if in_flight < min.outages_in_flight {
        out.push(Anomaly::Coverage {
            what: "Redis outages begun with a call in flight".to_owned(),
            wanted: min.outages_in_flight,
            got: in_flight,
        });
    }
    out
}

/// The `redis-outage` faults applied while a call was in flight: a call
/// chain began before the fault and ended after it began.
fn outages_in_flight(history: &History, faults: &[Applied]) -> usize {
    let mut ends: HashMap<ChainId, Ms> = HashMap::new();
    for entry in &history.entries {
        if let (Some(chain), Step::End { .. }) = (entry.chain, &entry.step) {
            ends.insert(chain, entry.t);
        }
    }
    faults
        .iter()
        .filter(|f| f.ok() && matches!(f.fault, Fault::RedisOutage { .. }))
        .filter(|f| {
            history.chains.iter().any(|chain| {
                matches!(chain.kind, ChainKind::Call { .. })
                    && chain.started < f.start
                    && ends.get(&chain.id).is_none_or(|end| *end > f.start)
            })
        })
        .count()
}

/// Takeovers the live audit saw: each change of a session's epoch between
/// two of its reads, in the order they were answered, is a new owner. Two
/// takeovers between reads count as one, and a session Redis lost and an
/// owner seeded again counts as one too: a floor for the minimum, not a
/// census.
pub fn takeovers(history: &History) -> usize {
    let mut reads: Vec<&super::history::Observation> = history.audits.iter().collect();
    reads.sort_by_key(|o| o.answered);
    let mut last: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    let mut changes = 0;
    for read in reads {
        let Some(epoch) = read.epoch else { continue };
        if let Some(before) = last.insert(read.session.as_str(), epoch)
            && before != epoch
        {
            changes += 1;
        }
    }
    changes
}

/// Resumes that POSTed first and whose `GET` was answered `200`.
pub fn post_first_resumes(history: &History) -> usize {
    history
        .entries
        .iter()
        .filter(|e| {
            matches!(
                &e.step,
                Step::Open {
                    via: Via::Resume {
                        mode: ResumeMode::PostFirst,
                        ..
                    },
                    status: Some(200),
                    ..
                }
            )
        })
        .count()
}

/// The shortest time an answered call's stream stays in Redis
/// (`RedisLogConfig::MIN_MATCHED_ANSWERED_TTL`, what the `server` example
/// runs with), less a margin for the answer's commit before the client
/// saw it.
const ANSWERED_TTL: Ms = 55_000;

/// Whether `chain` is a call answered long enough before `now` for its
/// stream to have expired.
fn expired(chain: &Chain, entries: &[&Entry], now: Ms) -> bool {
    let ChainKind::Call { .. } = chain.kind else {
        return false;
    };
    entries
        .iter()
        .rev()
        .find(|e| matches!(e.step, Step::End { .. }))
        .is_some_and(|end| end.t + ANSWERED_TTL <= now)
}

/// Rule 4 at the end of the run: every event received with data is the one
/// Redis holds at its id, or trimmed, or lost by a fault that ended after
/// the event could have been written (a loss before it cannot explain it).
pub async fn commits(
    history: &History,
    faults: &[Applied],
    target: &Target,
    now: Ms,
) -> anyhow::Result<Vec<Anomaly>> {
    let mut conn = audit::connect_to(target).await?;
    let mut out = Vec::new();
    let mut erased: HashSet<String> = HashSet::new();
    let deleted: HashSet<String> = history
        .entries
        .iter()
        .filter_map(|e| match &e.step {
            // Even an unanswered DELETE may have reached Redis.
            Step::Delete { session, .. } => Some(session.clone()),
            _ => None,
        })
        .collect();
    for chain in &history.chains {
        if erased.contains(&chain.session) {
            continue;
        }
        // What a fault lost must have been written before it ended.
        let lossy = lost_between(faults, &chain.session, written_since(chain), Ms::MAX);
        let replica_lossy =
            replica_lost_between(faults, &chain.session, written_since(chain), Ms::MAX);
        let session_lossy = lost_between(faults, &chain.session, chain.session_started, Ms::MAX);
        let entries: Vec<&Entry> = history.of_chain(chain.id).collect();
        // The client's own DELETE removed its events, whatever Redis keeps
        // of the session (its epoch, a tombstone).
        if deleted.contains(&chain.session) {
            erased.insert(chain.session.clone());
            continue;
        }
        let (known, tombstone) = audit::session_known(&mut conn, &chain.session).await?;
        if !known || tombstone {
            erased.insert(chain.session.clone());
            if session_lossy {
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
            let key = stream_key(&chain.session, stream);
            let at = || At {
                client: chain.client,
                chain: chain.id,
                excerpt: excerpt(&entries, k),
            };
            match audit::stored_event(&mut conn, &chain.session, stream, index).await? {
                Stored::Trimmed { .. } => {}
                Stored::Missing { .. } if lossy => {}
                // An answered call's stream expires on its own.
                Stored::Missing { floor: None } if expired(chain, &entries, now) => {}
                Stored::Missing { floor } => out.push(Anomaly::NotCommitted {
                    at: at(),
                    key,
                    index,
                    floor,
                    received: data.clone(),
                }),
                Stored::Event(None) if lossy => {}
                Stored::Event(Some(_)) if replica_lossy => {}
                Stored::Event(None) => out.push(Anomaly::NotCommitted {
                    at: at(),
                    key,
                    index,
                    floor: None,
                    received: data.clone(),
                }),
                Stored::Event(Some(stored)) => {
                    if !same_data(&stored, data) {
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
    use crate::faults::history::{Observation, Recorder};

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
            retry_after: None,
        }
    }

    /// A fresh standalone `GET` answered `200` on connection `conn`.
    fn fresh(conn: u32) -> Step {
        Step::Open {
            conn,
            slot: 0,
            via: Via::Fresh,
            status: Some(200),
            body: None,
            retry_after: None,
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
            fresh(1),
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
        for step in steps.clone() {
            rec.record(0, Some(chain), step);
        }
        // Event 6 went to another client of the session: 5 to 8 skipped it.
        let other = rec.chain(1, "s", 0, ChainKind::Standalone);
        rec.record(1, Some(other), open(1, None, 200, None));
        rec.record(1, Some(other), frame(1, "6", Some("{}")));
        rec.record(
            1,
            Some(other),
            Step::End {
                outcome: Outcome::Closed,
            },
        );
        assert_eq!(kinds(&rec.snapshot()), vec!["silent-gap"]);

        // Nobody ever got an event between 5 and 8 and Redis, read after
        // the jump, holds none: a new owner's segment (a takeover starts its
        // standalone ids at its epoch) is no gap. Unread, it is one.
        let alone = Recorder::new(std::time::Instant::now());
        let chain = alone.chain(0, "s", 0, ChainKind::Standalone);
        for step in steps {
            alone.record(0, Some(chain), step);
        }
        let unread = alone.snapshot();
        assert_eq!(kinds(&unread), vec!["silent-gap"]);
        let jump = Question::Skipped {
            chain,
            received: 0,
            from: 6,
            to: 7,
        };
        let read = with_audit(unread.clone(), jump.clone(), Answer::Held(None), 0);
        assert_eq!(kinds(&read), Vec::<&str>::new());
        let never = with_audit(unread.clone(), jump.clone(), Answer::Unanswered, 0);
        assert_eq!(kinds(&never), vec!["silent-gap"]);
        // Read empty after Redis lost its data: an empty Redis proves
        // nothing (review of issue 44, finding 2).
        let bounds = Bounds {
            lease: Duration::from_secs(1),
            slack: Duration::from_secs(10),
        };
        let lost = restart(0);
        let after_a_loss: Vec<&str> = check(&read, std::slice::from_ref(&lost), bounds)
            .iter()
            .map(Anomaly::kind)
            .collect();
        assert!(after_a_loss.contains(&"silent-gap"), "{after_a_loss:?}");
    }

    /// A jump nobody received an event in, but over an event Redis holds:
    /// the skip the product's notices and the clients' books cannot see.
    #[test]
    fn blind_spot_a_standalone_jump_over_an_event_redis_holds_is_a_gap() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let rec = Recorder::with_probes(std::time::Instant::now(), tx);
        let chain = rec.chain(0, "s", 0, ChainKind::Standalone);
        for step in [
            fresh(1),
            frame(1, "0", None),
            frame(1, "1", Some("{}")),
            open(2, Some("1"), 200, None),
            frame(2, "4", Some("{}")),
            Step::End {
                outcome: Outcome::Closed,
            },
        ] {
            rec.record(0, Some(chain), step);
        }
        let mut jumps = Vec::new();
        while let Ok((_, question)) = rx.try_recv() {
            if let Question::Skipped { from, to, .. } = question {
                jumps.push((from, to));
            }
        }
        assert_eq!(jumps, [(2, 3)], "the recorder asks about the ids jumped");
        let history = rec.snapshot();
        let skipped = Question::Skipped {
            chain,
            received: 0,
            from: 2,
            to: 3,
        };
        // Unread, the jump is no segment.
        assert_eq!(kinds(&history), vec!["silent-gap"]);
        let holds = with_audit(history.clone(), skipped.clone(), Answer::Held(Some(3)), 5);
        assert_eq!(kinds(&holds), vec!["silent-gap"]);
        let empty = with_audit(history, skipped, Answer::Held(None), 5);
        assert_eq!(kinds(&empty), Vec::<&str>::new());
    }

    /// A fresh `GET` promises nothing about before it: no jump to ask about.
    #[test]
    fn the_recorder_counts_jumps_from_the_last_fresh_get() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let rec = Recorder::with_probes(std::time::Instant::now(), tx);
        let chain = rec.chain(0, "s", 0, ChainKind::Standalone);
        for step in [
            fresh(1),
            frame(1, "5", Some("{}")),
            fresh(2),
            frame(2, "9", Some("{}")),
            frame(2, "7", Some("{}")),
            frame(2, "10", Some("{}")),
            frame(2, "12", Some("{}")),
        ] {
            rec.record(0, Some(chain), step);
        }
        let mut jumps = Vec::new();
        while let Ok((_, question)) = rx.try_recv() {
            if let Question::Skipped { from, to, .. } = question {
                jumps.push((from, to));
            }
        }
        assert_eq!(jumps, [(11, 11)]);
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
            touched: None,
        };
        // "foo" is in slot 12182, "somekey" in 11058.
        let takeover = applied(
            Fault::Failover {
                pick: 0,
                takeover: true,
            },
            vec![(12000, 12999)],
        );
        assert!(lost_between(
            std::slice::from_ref(&takeover),
            "foo",
            50,
            150
        ));
        assert!(!lost_between(
            std::slice::from_ref(&takeover),
            "foo",
            250,
            300
        ));
        assert!(!lost_between(
            std::slice::from_ref(&takeover),
            "somekey",
            50,
            150
        ));
        let manual = applied(
            Fault::Failover {
                pick: 0,
                takeover: false,
            },
            Vec::new(),
        );
        assert!(!lost_between(&[manual], "foo", 50, 150));
        let restart = applied(
            Fault::RedisRestart {
                down: Duration::ZERO,
            },
            Vec::new(),
        );
        assert!(lost_between(
            std::slice::from_ref(&restart),
            "somekey",
            50,
            150
        ));
        // A restart that began after the refusal explains nothing of it.
        assert!(!lost_between(&[restart], "somekey", 50, 90));
    }

    // ---- The blind spots of issue 44, each as a synthetic history the
    // checker must report. Times are explicit: the excuses depend on them.

    /// A history of one chain of `kind` in session `session` (begun at 0),
    /// its steps at the given times.
    fn timed(session: &str, kind: ChainKind, steps: Vec<(Ms, Step)>) -> History {
        History {
            entries: steps
                .into_iter()
                .map(|(t, step)| Entry {
                    t,
                    client: 0,
                    chain: Some(0),
                    step,
                })
                .collect(),
            chains: vec![Chain {
                id: 0,
                client: 0,
                session: session.to_owned(),
                session_started: 0,
                kind,
                started: 10,
            }],
            audits: Vec::new(),
        }
    }

    fn count_to() -> ChainKind {
        ChainKind::Call {
            request_id: 1,
            tool: "count_to".to_owned(),
            n: 3,
            nominal: 0,
        }
    }

    fn fault(fault: Fault, start: Ms, end: Ms) -> Applied {
        Applied {
            fault,
            start,
            end,
            error: None,
            lost_slots: Vec::new(),
            note: None,
            touched: None,
        }
    }

    fn restart(start: Ms) -> Applied {
        fault(
            Fault::RedisRestart {
                down: Duration::ZERO,
            },
            start,
            start + 50,
        )
    }

    fn found(history: &History, faults: &[Applied]) -> Vec<&'static str> {
        let bounds = Bounds {
            lease: Duration::from_secs(1),
            slack: Duration::from_secs(10),
        };
        check(history, faults, bounds)
            .iter()
            .map(Anomaly::kind)
            .collect()
    }

    fn closed(conn: u32, why: &str) -> Step {
        Step::Closed {
            conn,
            why: why.to_owned(),
        }
    }

    fn end(outcome: Outcome) -> Step {
        Step::End { outcome }
    }

    fn post(conn: u32, slot: usize, status: u16, retry_after: Option<&str>) -> Step {
        Step::Open {
            conn,
            slot,
            via: Via::Post,
            status: Some(status),
            body: (status != 200).then(|| "{}".to_owned()),
            retry_after: retry_after.map(str::to_owned),
        }
    }

    #[test]
    fn blind_spot_an_empty_200_on_a_post_is_an_anomaly() {
        let empty = |why: &str| {
            timed(
                "s",
                count_to(),
                vec![
                    (10, post(1, 1, 200, None)),
                    (4_000, closed(1, why)),
                    (
                        4_000,
                        end(Outcome::Empty {
                            why: "no event".to_owned(),
                        }),
                    ),
                ],
            )
        };
        // Clean end of stream: nothing but the server ended it.
        assert_eq!(found(&empty("end of stream"), &[]), vec!["empty-200"]);
        // Silent (Redis stopped, say): a Redis fault does not excuse it; the
        // product must answer 503 or an error instead.
        let redis_stop = fault(
            Fault::RedisStop {
                hold: Duration::from_secs(3),
            },
            5,
            3_000,
        );
        assert_eq!(
            found(&empty("silent too long"), &[redis_stop]),
            vec!["empty-200"]
        );
        // A cut of that very link, under way then, explains a broken one...
        let cut = |slot| {
            fault(
                Fault::Cut {
                    client: Some(0),
                    slot,
                    hold: Duration::from_millis(500),
                },
                100,
                600,
            )
        };
        assert_eq!(
            found(&empty("connection reset"), &[cut(1)]),
            Vec::<&str>::new()
        );
        // ...but not a clean end, and a cut of another instance nothing.
        assert_eq!(found(&empty("end of stream"), &[cut(1)]), vec!["empty-200"]);
        assert_eq!(
            found(&empty("connection reset"), &[cut(2)]),
            vec!["empty-200"]
        );
        // An instance cut off from Redis must refuse what it cannot commit.
        let partition = fault(
            Fault::Partition {
                slot: 1,
                hold: Duration::from_secs(3),
                blackhole: true,
            },
            5,
            3_000,
        );
        assert_eq!(
            found(&empty("silent too long"), &[partition]),
            vec!["empty-200"]
        );
    }

    #[test]
    fn a_post_that_fails_before_any_response_needs_a_fault_of_its_link() {
        let dropped = timed(
            "s",
            count_to(),
            vec![
                (
                    300,
                    Step::Open {
                        conn: 1,
                        slot: 1,
                        via: Via::Post,
                        status: None,
                        body: Some("connection closed".to_owned()),
                        retry_after: None,
                    },
                ),
                (
                    300,
                    end(Outcome::Unconfirmed {
                        why: "connection closed".to_owned(),
                    }),
                ),
            ],
        );
        let kill = |slot| {
            fault(
                Fault::Kill {
                    slot,
                    down: Duration::ZERO,
                },
                100,
                400,
            )
        };
        assert_eq!(found(&dropped, &[kill(1)]), Vec::<&str>::new());
        assert_eq!(found(&dropped, &[kill(0)]), vec!["unexplained-drop"]);
        assert_eq!(found(&dropped, &[]), vec!["unexplained-drop"]);
        // A primary of the session's slot killed while the POST waited for
        // its commit explains it; one of another slot, or one healed
        // before the call began, does not.
        let primary_kill = |ranges: Vec<(u16, u16)>, start, end| Applied {
            touched: Some(ranges),
            ..fault(
                Fault::PrimaryKill {
                    pick: 0,
                    down: Duration::ZERO,
                },
                start,
                end,
            )
        };
        let slot = crate::faults::audit::session_slot("s");
        let other = if slot < 8_000 {
            (9_000, 9_100)
        } else {
            (0, 100)
        };
        assert_eq!(
            found(&dropped, &[primary_kill(vec![(slot, slot)], 100, 400)]),
            Vec::<&str>::new()
        );
        assert_eq!(
            found(&dropped, &[primary_kill(vec![other], 100, 400)]),
            vec!["unexplained-drop"]
        );
        assert_eq!(
            found(&dropped, &[primary_kill(vec![(slot, slot)], 1, 5)]),
            vec!["unexplained-drop"]
        );
    }

    #[test]
    fn blind_spot_a_restart_after_a_404_or_a_floorless_400_excuses_neither() {
        let refused = timed(
            "somekey",
            count_to(),
            vec![
                (10, post(1, 0, 200, None)),
                (20, frame(1, "0/0", None)),
                (30, closed(1, "connection reset")),
                (
                    40,
                    open(2, Some("0/0"), 400, Some(r#"{"error":{"data":{}}}"#)),
                ),
                (
                    50,
                    open(3, Some("0/0"), 404, Some("Not Found: Session not found")),
                ),
                (
                    60,
                    end(Outcome::Refused {
                        status: 404,
                        body: "x".to_owned(),
                    }),
                ),
            ],
        );
        // The old rule: any restart ending after the session began excused
        // both. A restart that began later explains nothing.
        assert_eq!(
            found(&refused, &[restart(1_000)]),
            vec!["unjustified-refusal", "session-lost"]
        );
        // Begun before them, it explains both.
        assert_eq!(found(&refused, &[restart(25)]), Vec::<&str>::new());
        // One that began and ended before the session began explains nothing.
        let mut late = refused.clone();
        late.chains[0].session_started = 900;
        late.chains[0].started = 900;
        for entry in &mut late.entries {
            entry.t += 1_000;
        }
        assert_eq!(
            found(&late, &[restart(25)]),
            vec!["unjustified-refusal", "session-lost"]
        );
    }

    #[test]
    fn blind_spot_a_cluster_takeover_excuses_only_its_own_slots() {
        // "foo" is in slot 12182, "somekey" in 11058.
        let takeover = Applied {
            lost_slots: vec![(12_000, 12_999)],
            touched: Some(vec![(12_000, 12_999)]),
            // It moved slots: every instance's cluster connection stalled.
            note: Some("slots 12000-12999: 1 -> 2".to_owned()),
            ..fault(
                Fault::Failover {
                    pick: 0,
                    takeover: true,
                },
                20,
                30,
            )
        };
        let gone = |session: &str| {
            timed(
                session,
                count_to(),
                vec![
                    (10, post(1, 0, 200, None)),
                    (20, frame(1, "0/0", None)),
                    (50, open(2, Some("0/0"), 404, Some("Not Found"))),
                    (
                        60,
                        end(Outcome::Refused {
                            status: 404,
                            body: "x".to_owned(),
                        }),
                    ),
                ],
            )
        };
        assert_eq!(
            found(&gone("foo"), std::slice::from_ref(&takeover)),
            Vec::<&str>::new()
        );
        assert_eq!(
            found(&gone("somekey"), std::slice::from_ref(&takeover)),
            vec!["session-lost"]
        );
        // The stall explains an instance-lost error on any slot, though.
        let lost = |session: &str| {
            timed(
                session,
                count_to(),
                vec![
                    (10, post(1, 0, 200, None)),
                    (20, frame(1, "0/0", None)),
                    (
                        50,
                        end(Outcome::RpcError {
                            code: -32603,
                            message: "server instance lost; outcome unknown".to_owned(),
                        }),
                    ),
                ],
            )
        };
        assert_eq!(
            found(&lost("somekey"), std::slice::from_ref(&takeover)),
            Vec::<&str>::new()
        );
        let quiet = Applied {
            note: None,
            ..takeover
        };
        assert_eq!(found(&lost("somekey"), &[quiet]), vec!["unexplained-error"]);
    }

    fn with_audit(mut history: History, question: Question, answer: Answer, at: Ms) -> History {
        history.audits.push(Observation {
            session: history.chains[0].session.clone(),
            question,
            asked: at,
            answered: at + 1,
            answer,
            epoch: Some(1),
        });
        history
    }

    fn answered() -> History {
        timed(
            "s",
            count_to(),
            vec![
                (10, post(1, 0, 200, None)),
                (20, frame(1, "0/0", None)),
                (30, frame(1, "1/0", Some(r#"{"p":1}"#))),
                (40, frame(1, "2/0", Some(r#"{"id":1,"result":{}}"#))),
                (40, end(Outcome::Result)),
            ],
        )
    }

    fn event_read(index: u64, data: &str) -> Question {
        Question::Event {
            chain: 0,
            received: 30,
            stream: Some(0),
            index,
            data: data.to_owned(),
        }
    }

    #[test]
    fn blind_spot_an_event_received_before_redis_held_it_is_an_anomaly() {
        let early = with_audit(
            answered(),
            event_read(1, r#"{"p":1}"#),
            Answer::Event(Stored::Missing { floor: Some(0) }),
            35,
        );
        assert_eq!(found(&early, &[]), vec!["early"]);
        // A stream Redis has no state for, read at once: the same.
        let stateless = with_audit(
            answered(),
            event_read(1, r#"{"p":1}"#),
            Answer::Event(Stored::Missing { floor: None }),
            35,
        );
        assert_eq!(found(&stateless, &[]), vec!["early"]);
        // Held as received, or trimmed: fine.
        let held = with_audit(
            answered(),
            event_read(1, r#"{"p":1}"#),
            Answer::Event(Stored::Event(Some(r#"{ "p": 1 }"#.to_owned()))),
            35,
        );
        assert_eq!(found(&held, &[]), Vec::<&str>::new());
        let trimmed = with_audit(
            answered(),
            event_read(1, r#"{"p":1}"#),
            Answer::Event(Stored::Trimmed { floor: 2 }),
            35,
        );
        assert_eq!(found(&trimmed, &[]), Vec::<&str>::new());
        // Another event at its index: a mismatch, at once, not at the end.
        let other = with_audit(
            answered(),
            event_read(1, r#"{"p":1}"#),
            Answer::Event(Stored::Event(Some(r#"{"p":9}"#.to_owned()))),
            35,
        );
        assert_eq!(found(&other, &[]), vec!["mismatch"]);
        // A restart that began before the read explains a missing event;
        // one that began after it does not.
        assert_eq!(found(&early, &[restart(32)]), Vec::<&str>::new());
        assert_eq!(found(&early, &[restart(100)]), vec!["early"]);
        // It never explains another event at the id: ids are not given
        // twice after a loss, so that is the divergence itself (review
        // 2026-12-06 of issue 44, finding 1).
        assert_eq!(found(&other, &[restart(32)]), vec!["mismatch"]);
        // A stale owner's stop loses nothing until Redis is killed at its
        // end: an event missing from Redis during the stop is no loss it
        // explains (finding 3).
        let stale = |start: Ms| {
            fault(
                Fault::StaleOwner {
                    slot: 0,
                    hold: Duration::from_millis(7_000),
                    down: Duration::from_millis(100),
                },
                start,
                start + 7_000,
            )
        };
        assert_eq!(found(&early, &[stale(20)]), vec!["early"]);
        assert_eq!(stale(20).loss_began(), 20 + 6_900, "the kill, not the stop");
    }

    #[test]
    fn blind_spot_a_floor_above_redis_s_is_an_anomaly() {
        let refused = timed(
            "s",
            count_to(),
            vec![
                (10, post(1, 0, 200, None)),
                (20, frame(1, "0/0", None)),
                (30, closed(1, "connection reset")),
                (
                    40,
                    open(
                        2,
                        Some("0/0"),
                        400,
                        Some(r#"{"error":{"data":{"cursor":"0/0","floor":"5/0"}}}"#),
                    ),
                ),
                (
                    40,
                    end(Outcome::Refused {
                        status: 400,
                        body: "x".to_owned(),
                    }),
                ),
            ],
        );
        let floor = Question::Floor {
            chain: 0,
            claimed_at: 40,
            stream: Some(0),
            claimed: 5,
            cursor: None,
        };
        // Believed, the refusal was fine; Redis kept everything from 1 on.
        assert_eq!(found(&refused, &[]), Vec::<&str>::new());
        let low = with_audit(refused.clone(), floor.clone(), Answer::Floor(Some(1)), 45);
        assert_eq!(found(&low, &[]), vec!["floor-disagrees"]);
        let agrees = with_audit(refused.clone(), floor.clone(), Answer::Floor(Some(5)), 45);
        assert_eq!(found(&agrees, &[]), Vec::<&str>::new());
        // What Redis provably lost before the read: the floor is moot.
        assert_eq!(found(&low, &[restart(42)]), Vec::<&str>::new());
        assert_eq!(found(&low, &[restart(60)]), vec!["floor-disagrees"]);
        // The floor a replay notice claims is read the same way.
        let mut noticed = answered();
        noticed.entries.insert(
            3,
            Entry {
                t: 35,
                client: 0,
                chain: Some(0),
                step: notice_frame(2, r#"{"cursor":"-","floor":"7/0","complete":false}"#),
            },
        );
        let noticed = with_audit(
            noticed,
            Question::Floor {
                chain: 0,
                claimed_at: 35,
                stream: Some(0),
                claimed: 7,
                cursor: None,
            },
            Answer::Floor(Some(0)),
            36,
        );
        assert!(found(&noticed, &[]).contains(&"floor-disagrees"));
    }

    #[test]
    fn the_recorder_asks_about_every_event_and_every_claimed_floor() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let rec = Recorder::with_probes(std::time::Instant::now(), tx);
        let chain = rec.chain(0, "s", 0, count_to());
        rec.record(0, Some(chain), frame(1, "0/0", None));
        rec.record(0, Some(chain), frame(1, "1/0", Some("{}")));
        rec.record(
            0,
            Some(chain),
            notice_frame(2, r#"{"cursor":"1/0","floor":"3/0","complete":false}"#),
        );
        rec.record(
            0,
            Some(chain),
            open(
                3,
                Some("1/0"),
                400,
                Some(r#"{"error":{"data":{"floor":"4/0"}}}"#),
            ),
        );
        let mut asked = Vec::new();
        while let Ok((session, question)) = rx.try_recv() {
            assert_eq!(session, "s");
            asked.push(match question {
                Question::Event { index, .. } => format!("event {index}"),
                Question::Floor { claimed, .. } => format!("floor {claimed}"),
                Question::Skipped { from, to, .. } => format!("skipped {from}..={to}"),
            });
        }
        assert_eq!(asked, ["event 1", "floor 3", "floor 4"]);
    }

    #[test]
    fn blind_spot_an_error_or_a_503_needs_a_fault_during_the_call() {
        let errored = |code: i64, message: &str| {
            timed(
                "s",
                count_to(),
                vec![
                    (10, post(1, 0, 200, None)),
                    (20, frame(1, "0/0", None)),
                    (
                        900,
                        end(Outcome::RpcError {
                            code,
                            message: message.to_owned(),
                        }),
                    ),
                ],
            )
        };
        let lost = "server instance lost; outcome unknown";
        let kill = fault(
            Fault::Kill {
                slot: 0,
                down: Duration::ZERO,
            },
            100,
            200,
        );
        assert_eq!(
            found(&errored(-32603, lost), &[]),
            vec!["unexplained-error"]
        );
        assert_eq!(
            found(&errored(-32603, lost), std::slice::from_ref(&kill)),
            Vec::<&str>::new()
        );
        // Any other -32603 is not the documented one.
        assert_eq!(
            found(&errored(-32603, "oops"), std::slice::from_ref(&kill)),
            vec!["unexplained-error"]
        );
        // A fault that healed before the call began explains nothing.
        let before = fault(
            Fault::Kill {
                slot: 0,
                down: Duration::ZERO,
            },
            0,
            5,
        );
        assert_eq!(
            found(&errored(-32603, lost), &[before]),
            vec!["unexplained-error"]
        );
        let unavailable = |retry_after: Option<&str>| {
            timed(
                "s",
                count_to(),
                vec![
                    (10, post(1, 0, 503, retry_after)),
                    (
                        900,
                        end(Outcome::Refused {
                            status: 503,
                            body: "{}".to_owned(),
                        }),
                    ),
                ],
            )
        };
        assert_eq!(
            found(&unavailable(Some("1")), std::slice::from_ref(&kill)),
            Vec::<&str>::new()
        );
        assert_eq!(
            found(&unavailable(None), std::slice::from_ref(&kill)),
            vec!["unexplained-unavailable"]
        );
        assert_eq!(
            found(&unavailable(Some("1")), &[]),
            vec!["unexplained-unavailable"]
        );
    }

    #[test]
    fn blind_spot_a_failed_fault_or_a_run_short_of_its_minimums_fails() {
        let history = answered();
        let min = Minimums {
            per_kind: 1,
            takeovers: 1,
            post_first: 1,
            outages_in_flight: 0,
        };
        let failed = Applied {
            error: Some("kill -STOP 1 failed".to_owned()),
            ..fault(
                Fault::Pause {
                    slot: 0,
                    hold: Duration::ZERO,
                },
                10,
                20,
            )
        };
        let kinds: Vec<String> = coverage(
            &history,
            &[failed],
            &[FaultKind::Pause, FaultKind::Kill],
            0,
            &min,
        )
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            kinds,
            [
                "fault-failed: at 10 ms, SIGSTOP instance 0 for 0ns: kill -STOP 1 failed",
                // The failed one does not count as applied.
                "coverage: pause faults applied: 0, at least 1 wanted",
                "coverage: kill faults applied: 0, at least 1 wanted",
                "coverage: takeovers: 0, at least 1 wanted",
                "coverage: POST-first resumes answered 200: 0, at least 1 wanted",
            ]
        );
        // A run that did it all passes.
        let mut done = history.clone();
        done.entries.push(Entry {
            t: 50,
            client: 0,
            chain: Some(0),
            step: Step::Open {
                conn: 2,
                slot: 1,
                via: Via::Resume {
                    cursor: "1/0".to_owned(),
                    mode: ResumeMode::PostFirst,
                },
                status: Some(200),
                body: None,
                retry_after: None,
            },
        });
        let pause = fault(
            Fault::Pause {
                slot: 0,
                hold: Duration::ZERO,
            },
            10,
            20,
        );
        assert!(coverage(&done, &[pause], &[FaultKind::Pause], 1, &min).is_empty());
    }

    #[test]
    fn takeovers_are_the_epoch_changes_the_live_audit_saw() {
        let mut history = answered();
        let question = event_read(1, r#"{"p":1}"#);
        let held = Answer::Event(Stored::Trimmed { floor: 2 });
        for (at, session, epoch) in [
            (5, "a", Some(7)),
            (1, "a", Some(7)),
            (9, "b", Some(3)),
            (12, "a", Some(1_700_000)),
            (13, "b", None),
            (20, "a", Some(1_700_000)),
        ] {
            history.audits.push(Observation {
                session: session.to_owned(),
                question: question.clone(),
                asked: at,
                answered: at,
                answer: held.clone(),
                epoch,
            });
        }
        assert_eq!(takeovers(&history), 1);
    }

    #[test]
    fn a_delete_must_stop_the_owner_s_streams_within_the_lease_s_third() {
        let standalone = |closed_at: Ms, why: &str| {
            let mut history = timed(
                "s",
                ChainKind::Standalone,
                vec![
                    (
                        10,
                        Step::Open {
                            conn: 1,
                            slot: 0,
                            via: Via::Fresh,
                            status: Some(200),
                            body: None,
                            retry_after: None,
                        },
                    ),
                    (11, frame(1, "0", None)),
                    (closed_at, closed(1, why)),
                    (closed_at + 50, open(2, Some("0"), 404, Some("Not Found"))),
                    (
                        closed_at + 50,
                        end(Outcome::Refused {
                            status: 404,
                            body: "Not Found".to_owned(),
                        }),
                    ),
                ],
            );
            history.entries.insert(
                2,
                Entry {
                    t: 100,
                    client: 0,
                    chain: None,
                    step: Step::Delete {
                        session: "s".to_owned(),
                        sent: 95,
                        slot: 2,
                        status: Some(200),
                        body: String::new(),
                    },
                },
            );
            history
        };
        // Ended by the server in time: its resume's 404 is the delete's.
        assert_eq!(
            found(&standalone(400, "end of stream"), &[]),
            Vec::<&str>::new()
        );
        // Still streaming when the client gave up on it, or ended late.
        assert_eq!(
            found(&standalone(1_433, "closed by the client"), &[]),
            vec!["not-stopped"]
        );
        assert_eq!(
            found(&standalone(2_000, "end of stream"), &[]),
            vec!["not-stopped"]
        );
    }

    #[test]
    fn blind_spot_an_event_out_of_order_is_an_anomaly() {
        let history = timed(
            "s",
            count_to(),
            vec![
                (10, post(1, 0, 200, None)),
                (20, frame(1, "0/0", None)),
                (30, frame(1, "2/0", Some("{}"))),
                (31, frame(1, "1/0", Some("{}"))),
                (40, frame(1, "3/0", Some(r#"{"id":1,"result":{}}"#))),
                (40, end(Outcome::Result)),
            ],
        );
        assert_eq!(found(&history, &[]), vec!["silent-gap", "out-of-order"]);
    }

    #[test]
    fn ids_parse() {
        assert_eq!(parse_id("4/2"), Some((4, Some(2))));
        assert_eq!(parse_id("7"), Some((7, None)));
        assert_eq!(parse_id("x"), None);
    }
}
