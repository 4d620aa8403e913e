//! What the clients saw, as they saw it: every request, status, frame and
//! outcome, stamped with the time since the run started.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::mpsc;

use super::audit::Stored;

/// Milliseconds since the run started.
pub type Ms = u64;

/// A chain's number: a call's stream plus its resumes, or a session's
/// standalone stream plus its resumes.
pub type ChainId = u32;

/// What a chain carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainKind {
    /// A `tools/call`; `nominal` is how long the tool runs undisturbed.
    Call {
        request_id: u64,
        tool: String,
        n: u32,
        nominal: Ms,
    },
    /// The session's standalone `GET` stream.
    Standalone,
}

/// One chain.
#[derive(Debug, Clone)]
pub struct Chain {
    /// Its number.
    pub id: ChainId,
    /// The client that ran it.
    pub client: usize,
    /// `Mcp-Session-Id`.
    pub session: String,
    /// When the session was initialized.
    pub session_started: Ms,
    /// What it carries.
    pub kind: ChainKind,
    /// When it started.
    pub started: Ms,
}

/// How a client chose to resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeMode {
    /// A `GET` with `Last-Event-ID` straight away.
    GetFirst,
    /// A `POST` (`ping`) to the instance first, then the `GET`.
    PostFirst,
}

/// How a connection of a chain was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// The call's `POST`.
    Post,
    /// A `GET` without a cursor (a fresh standalone stream).
    Fresh,
    /// A `GET` with `Last-Event-ID: cursor`.
    Resume { cursor: String, mode: ResumeMode },
}

/// How a chain ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The call's result.
    Result,
    /// A JSON-RPC error for the call's id.
    RpcError { code: i64, message: String },
    /// A refusal: the status and its body.
    Refused { status: u16, body: String },
    /// `204` to a resume of a call whose answer never came.
    Drained,
    /// The client cannot tell whether the server got the request (a
    /// transport error before the response head).
    Unconfirmed { why: String },
    /// The `POST` was answered `200` but its stream carried no event, so
    /// the client holds no cursor to resume with: the call's fate is
    /// unknowable (the checker decides whether a fault explains it).
    Empty { why: String },
    /// The client gave up at the bound.
    Abandoned { why: String },
    /// A standalone stream, closed by the client at the end of its session.
    Closed,
}

/// One thing a client saw or did.
#[derive(Debug, Clone)]
pub enum Step {
    /// `initialize` through instance `slot`.
    Init {
        slot: usize,
        status: Option<u16>,
        session: Option<String>,
        error: Option<String>,
    },
    /// A `POST` of `ping` before a resume (the POST-first takeover).
    Ping {
        slot: usize,
        status: Option<u16>,
        body: String,
    },
    /// A connection of the chain: its request and the response head
    /// (`status` `None`: a transport error). `retry_after` is the
    /// response's `Retry-After` header, kept because a `503` without one
    /// tells the client nothing about when to come back.
    Open {
        conn: u32,
        slot: usize,
        via: Via,
        status: Option<u16>,
        body: Option<String>,
        retry_after: Option<String>,
    },
    /// An SSE frame.
    Frame {
        conn: u32,
        id: Option<String>,
        event: Option<String>,
        data: Option<String>,
    },
    /// The connection ended.
    Closed { conn: u32, why: String },
    /// The chain ended.
    End { outcome: Outcome },
    /// The client deleted `session` (`DELETE`) through instance `slot`,
    /// usually not its owner (`status` `None`: a transport error); the
    /// request left at `sent`, the step is recorded when it was answered.
    Delete {
        session: String,
        sent: Ms,
        slot: usize,
        status: Option<u16>,
        body: String,
    },
}

/// A step, when and by whom.
#[derive(Debug, Clone)]
pub struct Entry {
    /// When.
    pub t: Ms,
    /// Which client.
    pub client: usize,
    /// Which chain (`None`: a session-level step).
    pub chain: Option<ChainId>,
    /// What.
    pub step: Step,
}

/// What the live audit asks Redis about a step a client just recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Question {
    /// Does Redis hold event `index` of `stream`, which the client received
    /// at `received` with `data`? Asked after `received`, so a "no" (not
    /// trimmed, nothing lost) means the event was sent before it was
    /// committed.
    Event {
        chain: ChainId,
        received: Ms,
        stream: Option<u64>,
        index: u64,
        data: String,
    },
    /// Is `stream`'s floor in Redis at least `claimed`, as a refusal or a
    /// replay notice said at `claimed_at`? A floor only rises while Redis
    /// keeps its data, so a lower floor read later means the claim was
    /// not Redis's. On the standalone stream, whose ids jump where a
    /// takeover began a segment, the floor for `cursor` is the first event
    /// Redis holds after it: a claim above that hides an event Redis has,
    /// a claim over ids Redis holds no event at is no loss it hides.
    Floor {
        chain: ChainId,
        claimed_at: Ms,
        stream: Option<u64>,
        claimed: u64,
        cursor: Option<u64>,
    },
    /// Does Redis hold a standalone event with an id in `from..=to`, ids
    /// the client jumped over at `received`? The checker's books know only
    /// what clients received; an event Redis holds in a jump that nobody
    /// received, and no notice named, was skipped without a word.
    Skipped {
        chain: ChainId,
        received: Ms,
        from: u64,
        to: u64,
    },
}

impl Question {
    /// The chain it is about.
    pub fn chain(&self) -> ChainId {
        match self {
            Question::Event { chain, .. }
            | Question::Floor { chain, .. }
            | Question::Skipped { chain, .. } => *chain,
        }
    }
}

/// What Redis answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The event as stored (or trimmed, or missing).
    Event(Stored),
    /// The stream's `floor` field (`None`: Redis has no state for it).
    Floor(Option<u64>),
    /// The first id in the asked range at which Redis holds an event with
    /// data (`None`: none).
    Held(Option<u64>),
    /// Redis never answered (stopped past every retry, or the run ended
    /// first): no rule may take this for an answer.
    Unanswered,
}

/// One question the live audit put to Redis, its answer, and when.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The session whose keys were read.
    pub session: String,
    /// What was asked.
    pub question: Question,
    /// When the command was sent.
    pub asked: Ms,
    /// When its answer came.
    pub answered: Ms,
    /// The answer.
    pub answer: Answer,
    /// The session's epoch read just after (`None`: Redis does not know
    /// the session): a change between two reads is a new owner.
    pub epoch: Option<u64>,
}

impl Observation {
    /// A question the live audit could not get answered, given up at `t`.
    pub fn unanswered(session: String, question: Question, t: Ms) -> Self {
        Self {
            session,
            question,
            asked: t,
            answered: t,
            answer: Answer::Unanswered,
            epoch: None,
        }
    }
}

/// A question for the live audit, with the session it is about.
pub type Probe = (String, Question);

/// Everything recorded.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Steps in the order they were recorded.
    pub entries: Vec<Entry>,
    /// Every chain.
    pub chains: Vec<Chain>,
    /// What the live audit read from Redis while the run went on.
    pub audits: Vec<Observation>,
}

impl History {
    /// The steps of chain `id`, in order.
    pub fn of_chain(&self, id: ChainId) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.chain == Some(id))
    }
}

/// A shared, cheap-to-clone recorder.
#[derive(Clone)]
pub struct Recorder {
    start: Instant,
    history: Arc<Mutex<History>>,
    probes: Option<mpsc::UnboundedSender<Probe>>,
    /// Each standalone chain's highest id since its last fresh `GET`, as
    /// the checker's `expected` runs: where a jump starts.
    standalone_tops: Arc<Mutex<HashMap<ChainId, u64>>>,
}

impl Recorder {
    /// A recorder whose clock starts at `start`.
    pub fn new(start: Instant) -> Self {
        Self {
            start,
            history: Arc::default(),
            probes: None,
            standalone_tops: Arc::default(),
        }
    }

    /// A recorder that also hands every received event and every claimed
    /// floor to the live audit (see [`super::audit::live`]), so Redis is
    /// read right after the client saw them, while the stream still holds
    /// them and before a later fault can blur what happened.
    pub fn with_probes(start: Instant, probes: mpsc::UnboundedSender<Probe>) -> Self {
        Self {
            start,
            history: Arc::default(),
            probes: Some(probes),
            standalone_tops: Arc::default(),
        }
    }

    /// Adds what the live audit read.
    pub fn observe(&self, observation: Observation) {
        if let Ok(mut history) = self.history.lock() {
            history.audits.push(observation);
        }
    }

    /// Milliseconds since the start.
    pub fn now(&self) -> Ms {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Opens a chain.
    pub fn chain(
        &self,
        client: usize,
        session: &str,
        session_started: Ms,
        kind: ChainKind,
    ) -> ChainId {
        let started = self.now();
        let Ok(mut history) = self.history.lock() else {
            return ChainId::MAX;
        };
        let id = ChainId::try_from(history.chains.len()).unwrap_or(ChainId::MAX);
        history.chains.push(Chain {
            id,
            client,
            session: session.to_owned(),
            session_started,
            kind,
            started,
        });
        id
    }

    /// Records a step.
    pub fn record(&self, client: usize, chain: Option<ChainId>, step: Step) {
        let t = self.now();
        if let Ok(mut history) = self.history.lock() {
            if let (Some(probes), Some(chain)) = (&self.probes, chain)
                && let Some(of) = history.chains.get(chain as usize)
            {
                let jump = (of.kind == ChainKind::Standalone)
                    .then(|| self.standalone_jump(chain, t, &step))
                    .flatten();
                // The audit may be gone at the run's end: nothing to ask then.
                for question in question(chain, t, &step).into_iter().chain(jump) {
                    let _ = probes.send((of.session.clone(), question));
                }
            }
            history.entries.push(Entry {
                t,
                client,
                chain,
                step,
            });
        }
    }

    /// The question about the ids a standalone chain's frame jumped over,
    /// if it jumped: past the chain's highest id by more than one. A fresh
    /// `GET` promises nothing about before it, so it starts the count anew.
    fn standalone_jump(&self, chain: ChainId, t: Ms, step: &Step) -> Option<Question> {
        use super::checker::parse_id;
        let mut tops = self.standalone_tops.lock().ok()?;
        match step {
            Step::Open {
                via: Via::Fresh, ..
            } => {
                tops.remove(&chain);
                None
            }
            Step::Frame {
                id: Some(id),
                event,
                ..
            } if event.as_deref() != Some("mcp-replay") => {
                let (index, _) = parse_id(id)?;
                let top = tops.get(&chain).copied();
                tops.insert(chain, top.map_or(index, |top| top.max(index)));
                let top = top.filter(|top| index > top.saturating_add(1))?;
                Some(Question::Skipped {
                    chain,
                    received: t,
                    from: top + 1,
                    to: index - 1,
                })
            }
            _ => None,
        }
    }

    /// The distinct sessions of the last `chains` chains, newest first:
    /// the sessions likely under way now.
    pub fn recent_sessions(&self, chains: usize) -> Vec<String> {
        let Ok(history) = self.history.lock() else {
            return Vec::new();
        };
        let mut sessions: Vec<String> = Vec::new();
        for chain in history.chains.iter().rev().take(chains) {
            if !sessions.contains(&chain.session) {
                sessions.push(chain.session.clone());
            }
        }
        sessions
    }

    /// A copy of everything so far.
    pub fn snapshot(&self) -> History {
        self.history.lock().map(|h| h.clone()).unwrap_or_default()
    }
}

/// What the live audit should ask about `step`, recorded at `t`: a
/// received event with data, or a floor a refusal or notice claimed.
fn question(chain: ChainId, t: Ms, step: &Step) -> Option<Question> {
    use super::checker::{notice_floor, parse_id, refusal_floor};
    match step {
        Step::Frame { event, data, .. } if event.as_deref() == Some("mcp-replay") => {
            let data = data.as_deref()?;
            let (claimed, stream) = notice_floor(data)?;
            let cursor = serde_json::from_str::<serde_json::Value>(data)
                .ok()
                .and_then(|json| json["cursor"].as_str().and_then(parse_id))
                .map(|(n, _)| n);
            Some(Question::Floor {
                chain,
                claimed_at: t,
                stream,
                claimed,
                cursor,
            })
        }
        Step::Frame {
            id: Some(id),
            data: Some(data),
            ..
        } => {
            let (index, stream) = parse_id(id)?;
            Some(Question::Event {
                chain,
                received: t,
                stream,
                index,
                data: data.clone(),
            })
        }
        Step::Open {
            status: Some(400),
            body: Some(body),
            via,
            ..
        } => {
            let (claimed, stream) = refusal_floor(body)?;
            let cursor = match via {
                Via::Resume { cursor, .. } => parse_id(cursor).map(|(n, _)| n),
                _ => None,
            };
            Some(Question::Floor {
                chain,
                claimed_at: t,
                stream,
                claimed,
                cursor,
            })
        }
        _ => None,
    }
}

fn short(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>7}ms c{}", self.t, self.client)?;
        if let Some(chain) = self.chain {
            write!(f, " #{chain}")?;
        }
        match &self.step {
            Step::Init {
                slot,
                status,
                session,
                error,
            } => write!(
                f,
                " init@{slot} -> {status:?} session={} {}",
                session.as_deref().unwrap_or("-"),
                error.as_deref().map(|e| short(e, 120)).unwrap_or_default()
            ),
            Step::Ping { slot, status, body } => {
                write!(f, " ping@{slot} -> {status:?} {}", short(body, 160))
            }
            Step::Open {
                conn,
                slot,
                via,
                status,
                body,
                retry_after,
            } => {
                let via = match via {
                    Via::Post => "POST".to_owned(),
                    Via::Fresh => "GET".to_owned(),
                    Via::Resume { cursor, mode } => {
                        format!("GET Last-Event-ID={cursor} ({mode:?})")
                    }
                };
                write!(
                    f,
                    " conn{conn} {via} @{slot} -> {status:?} {}{}",
                    retry_after
                        .as_deref()
                        .map(|r| format!("[Retry-After: {r}] "))
                        .unwrap_or_default(),
                    body.as_deref().map(|b| short(b, 200)).unwrap_or_default()
                )
            }
            Step::Frame {
                conn,
                id,
                event,
                data,
            } => write!(
                f,
                " conn{conn} frame id={} {}{}",
                id.as_deref().unwrap_or("-"),
                event
                    .as_deref()
                    .map(|e| format!("event={e} "))
                    .unwrap_or_default(),
                data.as_deref().map(|d| short(d, 160)).unwrap_or_default()
            ),
            Step::Closed { conn, why } => write!(f, " conn{conn} closed: {}", short(why, 120)),
            Step::End { outcome } => write!(f, " END {outcome:?}"),
            Step::Delete {
                session,
                sent,
                slot,
                status,
                body,
            } => write!(
                f,
                " DELETE {session} @{slot} (sent at {sent} ms) -> {status:?} {}",
                short(body, 120)
            ),
        }
    }
}
