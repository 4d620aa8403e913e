//! The client peer matrix's cells (`tests/peer_matrix.rs`): the fork's
//! client and upstream rmcp 3.11.0's client make the same `tools/call`s,
//! side by side, each on its own path (proxy) and session, against one
//! server; every call is recorded (its answer, and its progress values in
//! the order the client's transport received them) and sorted into an
//! [`Outcome`]; [`judge`] compares the two clients of a cell.
//!
//! | Outcome | Meaning |
//! |---|---|
//! | `ok` | every call answered its text with every progress value once, in the order sent |
//! | `typed` | a call failed with the fork's resume failure: code -32000, `data.resumeFailure` |
//! | `partial` | answered, with progress missing, repeated, reordered or after the answer, or the wrong text |
//! | `error` | failed otherwise (or could not connect) |
//! | `hang` | no answer within the plan's limit |
//!
//! Ranked ok > typed > the rest: where the fork ranks below upstream the
//! cell is a `BUG`; where the fork is not `ok`, or reported a standalone
//! discontinuity with nothing lost (every cell is a healthy run), a `FAIL`.
//! A plan's standalone notifications ([`Ticks`]) are checked too: copies
//! where upstream's client received none, or a loss with no
//! discontinuity reported where upstream's client lost none, is a `FAIL`;
//! lost where upstream's client got them all, a `BUG`. A loss or copy both
//! clients show is the server's doing and is recorded ([`CellRecord::notes`]).

use std::any::Any;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ServiceError, ServiceExt};
use serde::Serialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::buffering::BufferingProxy;
use crate::proxy::Proxy;
use crate::scenario::first_text;
use crate::wire::{Recorded, WireLog};

/// How long a call answered with progress missing may take to deliver the
/// rest (telling "came after the answer" from "never came").
const LATE_GRACE: Duration = Duration::from_secs(1);

// ---------------------------------------------------------------- calls

/// One `tools/call` and what a whole answer is.
#[derive(Clone, Debug)]
pub struct Call {
    /// The tool.
    pub tool: &'static str,
    /// Its arguments.
    pub args: Value,
    /// The answer's text.
    pub text: String,
    /// The progress values, in the order the tool sends them.
    pub progress: Vec<f64>,
}

/// `quick {count}`: `count` progress values back to back, the answer at once.
pub fn quick(count: u32) -> Call {
    Call {
        tool: "quick",
        args: json!({ "count": count }),
        text: format!("quick {count}"),
        progress: (1..=count).map(f64::from).collect(),
    }
}

/// `quiet {ms}`: progress 1, `ms` of silence, progress 2, the answer.
pub fn quiet(ms: u64) -> Call {
    Call {
        tool: "quiet",
        args: json!({ "ms": ms }),
        text: format!("quiet {ms}"),
        progress: vec![1.0, 2.0],
    }
}

/// `sample {ms}`: progress 11, a sampling request the client answers with
/// [`SAMPLED`], progress 12 `ms` later, the answer.
pub fn sample(ms: u64) -> Call {
    Call {
        tool: "sample",
        args: json!({ "ms": ms }),
        text: format!("sampled {SAMPLED}"),
        progress: vec![11.0, 12.0],
    }
}

/// What the matrix's clients answer every sampling request with.
pub const SAMPLED: &str = "matrix";

/// How long the matrix's clients take to answer a sampling request: past
/// a cut made 1 s after the first progress.
pub const SAMPLE_DELAY: Duration = Duration::from_millis(1_500);

/// `poll {ms}`: progress 1, the server closes the call's stream itself
/// (SEP-1699), progress 2 `ms` later, the answer.
pub fn poll(ms: u64) -> Call {
    Call {
        tool: "poll",
        args: json!({ "ms": ms }),
        text: format!("poll {ms}"),
        progress: vec![1.0, 2.0],
    }
}

/// `stream {count, interval_ms}`: `count` progress values `interval_ms`
/// apart, then the answer.
pub fn stream(count: u32, interval_ms: u64) -> Call {
    Call {
        tool: "stream",
        args: json!({ "count": count, "interval_ms": interval_ms }),
        text: format!("streamed {count}"),
        progress: (1..=count).map(f64::from).collect(),
    }
}

// ---------------------------------------------------------------- plans

/// What lies between a client and the server.
#[derive(Clone, Copy, Debug)]
pub enum PathKind {
    /// A proxy that cuts only when the plan says so.
    Plain,
    /// Every connection closed this long after it opened.
    Lifetime(Duration),
    /// A cut closes only the client's side at once, and the server's side
    /// this much later: the server still counts the cut stream as connected
    /// when the resume arrives (the TypeScript SDK answers `409` then).
    HalfOpen(Duration),
    /// The plan's cut blackholes the connections open then: nothing more
    /// crosses them and neither end is told (a NAT or load balancer that
    /// dropped its state); new connections go through.
    Blackhole,
    /// The plan's cut also makes the server forget every session (a `POST`
    /// to its `/forget`, which the TypeScript peer offers): the resume
    /// meets `404`.
    SessionLost,
    /// Responses held until 64 KiB or their end ([`BufferingProxy`]).
    Buffering,
    /// [`Buffering`](Self::Buffering), and a response that passed nothing
    /// on within this long answered `504` ([`BufferingProxy::start_with`]).
    BufferingTimeout(Duration),
    /// Connections closed at random (`seed`, lifetimes in `min..max`), from
    /// the first call on: the handshake goes through whole.
    Churn {
        /// The proxy's seed.
        seed: u64,
        /// The shortest lifetime.
        min: Duration,
        /// The longest lifetime.
        max: Duration,
    },
}

/// What one client does in a cell.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Its path to the server.
    pub path: PathKind,
    /// Its calls, one after the other.
    pub calls: Vec<Call>,
    /// Cut every connection this long after the first progress event went
    /// through the proxy.
    pub cut_after_first_progress: Option<Duration>,
    /// The cell's limit, from the connect to the last answer.
    pub limit: Duration,
    /// What the server can deliver after a cut, which sets the best
    /// outcome a client can reach.
    pub server: Delivers,
    /// The most `GET`s (resumes and standalone streams together) the
    /// fork's client may send in the cell: an answer after a reconnect
    /// loop is a failure, not a pass.
    pub max_gets: usize,
    /// Notifications the server sends on the client's standalone stream
    /// during the cell (the `tick` tool), checked for loss and copies.
    pub ticks: Option<Ticks>,
    /// The calls go out at once, not one after the other; each finds its
    /// progress values by their numbers, which then must differ per call.
    pub together: bool,
    /// Sampling requests the server sends in the cell: each must be
    /// answered exactly once.
    pub samplings: usize,
    /// How long each client stays connected after its last answer before
    /// its `GET`s are counted: reconnects a failure sets off count too.
    pub settle: Duration,
}

/// The standalone notifications of a cell: `tick://1..=count`, one every
/// `every`, from the cell's start.
#[derive(Clone, Copy, Debug)]
pub struct Ticks {
    /// How many.
    pub count: u32,
    /// The time between two.
    pub every: Duration,
}

/// What a row's server can deliver after a cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivers {
    /// It resumes a cut stream from its event store: every call answers
    /// whole.
    Everything,
    /// It keeps no event store: a cut call can at best fail typed.
    NothingAfterACut,
    /// Its one event store is shared by every session under ids that
    /// collide (mcp 2.3.0 as documented): a resume may be answered with
    /// another session's events, which no client can tell from its own,
    /// so a partial answer is recorded, not failed.
    OtherSessionsEvents,
    /// A proxy answers `504` before the call can end: no client can have
    /// the answer, and a failure, typed or not, within the cell's bounds
    /// passes.
    GatewayTimeout,
}

impl Delivers {
    /// Whether the two clients' outcomes say anything about the clients:
    /// not where the server hands out other sessions' events, when which
    /// client is answered with whose events is the server's doing.
    fn comparable(self) -> bool {
        !matches!(self, Delivers::OtherSessionsEvents)
    }

    /// Whether `outcome` is the best this server allows.
    fn allows(self, outcome: Outcome) -> bool {
        matches!(
            (self, outcome),
            (_, Outcome::Ok)
                | (Delivers::NothingAfterACut, Outcome::Typed)
                | (
                    Delivers::OtherSessionsEvents,
                    Outcome::Typed | Outcome::Partial
                )
                | (Delivers::GatewayTimeout, Outcome::Typed | Outcome::Error)
        )
    }
}

// ---------------------------------------------------------------- clients

/// Whose client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// `rmcp-resume`'s.
    Fork,
    /// Upstream rmcp 3.11.0's.
    Upstream,
}

impl Client {
    /// `"fork"` or `"upstream"`.
    pub fn name(self) -> &'static str {
        match self {
            Client::Fork => "fork",
            Client::Upstream => "upstream",
        }
    }
}

/// How the fork's client is configured (upstream's always has its defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkConfig {
    /// Its defaults, with an observer of standalone-stream discontinuities.
    Observed,
    /// `StreamableHttpClientTransport::from_uri`: its defaults, nothing else.
    Default,
}

/// The matrix's client handler: rmcp's default client, which declares
/// sampling and answers every sampling request with [`SAMPLED`], counting
/// its answers (a server-to-client request replayed after a cut must not be
/// answered twice).
#[derive(Clone)]
// Sampling is deprecated by SEP-2577, and still what 2025-11-25 clients
// answer: the matrix checks a server-to-client request across a cut.
#[allow(deprecated)]
struct Sampler {
    info: ClientConfig,
    answered: Arc<std::sync::atomic::AtomicUsize>,
}

impl Sampler {
    fn new() -> Self {
        let mut info = serde_json::to_value(ClientConfig::default()).unwrap_or_default();
        info["capabilities"]["sampling"] = json!({});
        Self {
            info: serde_json::from_value(info).unwrap_or_default(),
            answered: Arc::default(),
        }
    }
}

#[allow(deprecated)]
impl rmcp::ClientHandler for Sampler {
    async fn create_message(
        &self,
        _params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.answered
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        // Answered after the cells' cuts (1 s after the first progress):
        // the request goes out before a cut and its answer after it.
        tokio::time::sleep(SAMPLE_DELAY).await;
        serde_json::from_value(json!({
            "model": "matrix",
            "role": "assistant",
            "content": { "type": "text", "text": SAMPLED },
        }))
        .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
    }

    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }
}

struct Connected {
    service: RunningService<RoleClient, Sampler>,
    log: WireLog,
    sampled: Arc<std::sync::atomic::AtomicUsize>,
}

/// Connects a client of `client`'s kind to `url`; the fork's (observed)
/// reports its discontinuities into `gaps`.
async fn connect(
    client: Client,
    url: String,
    config: ForkConfig,
    gaps: Arc<Mutex<Vec<String>>>,
) -> anyhow::Result<Connected> {
    let sampler = Sampler::new();
    let sampled = sampler.answered.clone();
    let (service, log) = match (client, config) {
        (Client::Upstream, _) => {
            let transport = upstream::transport::StreamableHttpClientTransport::from_uri(url);
            let (recorded, log) = Recorded::new(transport);
            (sampler.clone().serve(recorded).await?, log)
        }
        (Client::Fork, ForkConfig::Default) => {
            let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
            let (recorded, log) = Recorded::new(transport);
            (sampler.clone().serve(recorded).await?, log)
        }
        (Client::Fork, ForkConfig::Observed) => {
            use rmcp::transport::common::client_side_sse::ResumeConfig;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let resume = ResumeConfig::default().on_discontinuity(move |gap| {
                gaps.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(gap.to_string());
            });
            // What `from_uri` builds on: no idle pooling.
            let http = reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()?;
            let transport = rmcp::transport::StreamableHttpClientTransport::with_resume_config(
                http,
                StreamableHttpClientTransportConfig::with_uri(url),
                resume,
            );
            let (recorded, log) = Recorded::new(transport);
            (sampler.clone().serve(recorded).await?, log)
        }
    };
    Ok(Connected {
        service,
        log,
        sampled,
    })
}

// ---------------------------------------------------------------- records

/// How a call, or a client's cell, ended (see the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Answered whole.
    Ok,
    /// Failed with the fork's resume failure.
    Typed,
    /// Answered, but not whole.
    Partial,
    /// Failed otherwise.
    Error,
    /// No answer within the limit.
    Hang,
}

impl Outcome {
    /// ok (2) ≥ typed failure (1) ≥ anything else (0).
    pub fn rank(self) -> u8 {
        match self {
            Outcome::Ok => 2,
            Outcome::Typed => 1,
            Outcome::Partial | Outcome::Error | Outcome::Hang => 0,
        }
    }

    /// The outcome's name in the records.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Typed => "typed",
            Outcome::Partial => "partial",
            Outcome::Error => "error",
            Outcome::Hang => "hang",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Typed => "typed failure",
            Outcome::Partial => "partial answer",
            Outcome::Error => "error",
            Outcome::Hang => "hang",
        }
    }
}

/// One call as it went.
#[derive(Clone, Debug, Serialize)]
pub struct CallRecord {
    /// The tool.
    pub tool: &'static str,
    /// Its arguments.
    pub args: Value,
    /// How it ended.
    pub outcome: Outcome,
    /// From the call to its answer (or the limit).
    pub elapsed_ms: u64,
    /// The progress values a whole answer carries.
    pub expected: Vec<f64>,
    /// The values received, in arrival order, duplicates included.
    pub seen: Vec<f64>,
    /// When each value in `seen` arrived, in ms from the call.
    pub seen_at_ms: Vec<u64>,
    /// Values received more than once.
    pub duplicates: usize,
    /// The answer's text.
    pub text: Option<String>,
    /// What went wrong, in words: the error's text, or what was missing.
    pub detail: Option<String>,
}

/// One client in one cell.
#[derive(Clone, Debug, Serialize)]
pub struct ClientRecord {
    /// `fork` or `upstream`.
    pub client: &'static str,
    /// The worst of its calls (`error`, or `hang`, when it could not connect).
    pub outcome: Outcome,
    /// From the first call to the last answer.
    pub elapsed_ms: u64,
    /// Its calls.
    pub calls: Vec<CallRecord>,
    /// Standalone-stream discontinuities the fork's client reported.
    pub discontinuities: Vec<String>,
    /// Connections the path closed by itself (lifetime, churn).
    pub path_cuts: usize,
    /// `GET`s with `Last-Event-ID` sent through the proxy (not counted
    /// through the buffering proxy).
    pub resumes: usize,
    /// Every `GET` sent through the proxy, resumes included (the
    /// buffering proxy counts them too, but not which resume).
    pub gets: usize,
    /// Connections the plan's cut closed (0 where the plan cuts nothing).
    pub cut_connections: usize,
    /// `409 Conflict` answers the proxy forwarded (the TypeScript SDK's
    /// answer to a resume of a stream it still counts as connected).
    pub conflicts: usize,
    /// Why it never got to its calls.
    pub detail: Option<String>,
    /// Its standalone notifications, where the plan has them.
    pub ticks: Option<TickRecord>,
    /// Sampling requests it answered.
    pub sampled: usize,
}

/// The standalone notifications one client received in a cell.
#[derive(Clone, Debug, Serialize)]
pub struct TickRecord {
    /// How many the server was asked to send.
    pub sent: u32,
    /// The tick numbers received, in arrival order, duplicates included.
    pub received: Vec<u32>,
    /// Those never received.
    pub lost: Vec<u32>,
    /// Receptions beyond the first of the same tick.
    pub duplicated: usize,
    /// Why the server was not asked (its `tick` call failed).
    pub detail: Option<String>,
}

impl TickRecord {
    fn of(sent: u32, received: Vec<u32>) -> Self {
        let mut distinct = received.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let lost = (1..=sent).filter(|n| !distinct.contains(n)).collect();
        Self {
            sent,
            duplicated: received.len() - distinct.len(),
            received,
            lost,
            detail: None,
        }
    }

    fn failed(sent: u32, detail: String) -> Self {
        Self {
            sent,
            received: Vec::new(),
            lost: (1..=sent).collect(),
            duplicated: 0,
            detail: Some(detail),
        }
    }
}

/// How long the last standalone notification may take past its time.
const TICK_GRACE: Duration = Duration::from_secs(5);

impl ClientRecord {
    fn failed(client: Client, outcome: Outcome, detail: String) -> Self {
        Self {
            client: client.name(),
            outcome,
            elapsed_ms: 0,
            calls: Vec::new(),
            discontinuities: Vec::new(),
            path_cuts: 0,
            resumes: 0,
            gets: 0,
            cut_connections: 0,
            conflicts: 0,
            detail: Some(detail),
            ticks: None,
            sampled: 0,
        }
    }

    /// The first call that is not `ok`, in words, or the record's detail.
    pub fn why(&self) -> String {
        self.calls
            .iter()
            .find(|c| c.outcome != Outcome::Ok)
            .map(|c| {
                format!(
                    "{} {}: {} after {:.1}s, progress {:?} of {:?}: {}",
                    c.tool,
                    c.args,
                    c.outcome.words(),
                    c.elapsed_ms as f64 / 1000.0,
                    c.seen,
                    c.expected,
                    c.detail.as_deref().unwrap_or("-")
                )
            })
            .or_else(|| self.detail.clone())
            .unwrap_or_default()
    }

    /// `ok 12.0s`.
    pub fn short(&self) -> String {
        format!(
            "{} {:.1}s",
            self.outcome.name(),
            self.elapsed_ms as f64 / 1000.0
        )
    }
}

/// One cell: a shape against a server, both clients.
#[derive(Clone, Debug, Serialize)]
pub struct CellRecord {
    /// The shape's name.
    pub shape: &'static str,
    /// Why the cell does not apply to this server, if it does not.
    pub na: Option<String>,
    /// The fork's client.
    pub fork: Option<ClientRecord>,
    /// Upstream's client.
    pub upstream: Option<ClientRecord>,
    /// `ok`, `n/a`, `FAIL` (the fork fell short) or `BUG` (the fork did
    /// worse than upstream).
    pub verdict: &'static str,
    /// Each shortfall, in words.
    pub problems: Vec<String>,
    /// What the cell recorded without failing it: a loss or copy of
    /// standalone notifications that upstream's client shows as well.
    pub notes: Vec<String>,
}

impl CellRecord {
    /// A cell that does not apply, and why.
    pub fn not_applicable(shape: &'static str, why: &str) -> Self {
        Self {
            shape,
            na: Some(why.to_owned()),
            fork: None,
            upstream: None,
            verdict: "n/a",
            problems: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// A row: one server, its cells.
#[derive(Debug, Serialize)]
pub struct RowRecord {
    /// The row's key (its record's file name).
    pub row: &'static str,
    /// The server, in words.
    pub label: &'static str,
    /// Its cells.
    pub cells: Vec<CellRecord>,
}

/// Sorts a call's ending into an [`Outcome`]: `ended` is `None` past the
/// limit; `arrivals` are its progress values and their arrival times.
fn classify(
    call: &Call,
    ended: Option<Result<CallToolResult, ServiceError>>,
    arrivals: Vec<(f64, Instant)>,
    began: Instant,
    answered: Instant,
    limit: Duration,
) -> CallRecord {
    let elapsed = answered.saturating_duration_since(began);
    let late: Vec<f64> = arrivals
        .iter()
        .filter(|(_, when)| *when > answered)
        .map(|(value, _)| *value)
        .collect();
    let seen: Vec<f64> = arrivals.iter().map(|(value, _)| *value).collect();
    let seen_at_ms = arrivals
        .iter()
        .map(|(_, when)| when.saturating_duration_since(began).as_millis() as u64)
        .collect();
    let mut distinct: Vec<u64> = seen.iter().map(|v| v.to_bits()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let duplicates = seen.len() - distinct.len();
    let (outcome, text, detail) = match ended {
        None => (
            Outcome::Hang,
            None,
            Some(format!("no answer within {}s", limit.as_secs())),
        ),
        Some(Ok(result)) => {
            let text = first_text(&result);
            let mut wrong = Vec::new();
            if text.as_deref() != Some(call.text.as_str()) {
                wrong.push(format!("answer {text:?}, expected {:?}", call.text));
            }
            if duplicates > 0 {
                wrong.push(format!("{duplicates} progress value(s) twice"));
            }
            if !late.is_empty() {
                wrong.push(format!("progress {late:?} came after the answer"));
            }
            let missing: Vec<f64> = call
                .progress
                .iter()
                .filter(|v| !seen.contains(v))
                .copied()
                .collect();
            if !missing.is_empty() {
                wrong.push(format!("progress {missing:?} missing"));
            }
            if wrong.is_empty() && seen != call.progress {
                wrong.push("progress out of order".to_owned());
            }
            if wrong.is_empty() {
                (Outcome::Ok, text, None)
            } else {
                (Outcome::Partial, text, Some(wrong.join("; ")))
            }
        }
        Some(Err(error)) => {
            // The fork's resume failure, read off the wire format
            // (`RESUME_FAILED_CODE`, `{"resumeFailure": …}`) rather than
            // through the client's helpers, which are being reworked.
            let data = match &error {
                ServiceError::McpError(data) => Some(data),
                _ => None,
            };
            let typed = data.is_some_and(|data| {
                data.code.0 == -32000
                    && data
                        .data
                        .as_ref()
                        .is_some_and(|d| d.get("resumeFailure").is_some())
            });
            // The error's text carries its `data`.
            let detail = error.to_string();
            let outcome = if typed {
                Outcome::Typed
            } else {
                Outcome::Error
            };
            (outcome, None, Some(detail))
        }
    };
    CallRecord {
        tool: call.tool,
        args: call.args.clone(),
        outcome,
        elapsed_ms: elapsed.as_millis() as u64,
        expected: call.progress.clone(),
        seen,
        seen_at_ms,
        duplicates,
        text,
        detail,
    }
}

// ---------------------------------------------------------------- a client's cell

/// Runs `plan` with one client of `client`'s kind against the server at
/// `target`, through a path of its own, within `plan.limit`.
pub async fn run_client(
    target: SocketAddr,
    plan: &Plan,
    client: Client,
    config: ForkConfig,
) -> ClientRecord {
    let ct = CancellationToken::new();
    let _stop = ct.clone().drop_guard();
    let deadline = tokio::time::Instant::now() + plan.limit;
    let mut buffering = None;
    let (addr, proxy) = match plan.path {
        PathKind::Buffering | PathKind::BufferingTimeout(_) => {
            let timeout = match plan.path {
                PathKind::BufferingTimeout(after) => Some(after),
                _ => None,
            };
            match BufferingProxy::start_with(target, ct.clone(), timeout).await {
                Ok(proxy) => {
                    let addr = proxy.addr;
                    buffering = Some(proxy);
                    (addr, None)
                }
                Err(e) => {
                    return ClientRecord::failed(client, Outcome::Error, format!("proxy: {e}"));
                }
            }
        }
        _ => match Proxy::start(target, "notifications/progress", ct.clone()).await {
            Ok(proxy) => (proxy.addr, Some(proxy)),
            Err(e) => return ClientRecord::failed(client, Outcome::Error, format!("proxy: {e}")),
        },
    };
    if let (PathKind::Lifetime(lifetime), Some(proxy)) = (plan.path, &proxy) {
        proxy.lifetime(lifetime);
    }
    let gaps: Arc<Mutex<Vec<String>>> = Arc::default();
    let url = format!("http://{addr}/mcp");
    let connected = tokio::time::timeout_at(deadline, connect(client, url, config, gaps.clone()));
    let connected = match connected.await {
        Ok(Ok(connected)) => connected,
        Ok(Err(e)) => {
            return ClientRecord::failed(client, Outcome::Error, format!("connect: {e:#}"));
        }
        Err(_) => {
            return ClientRecord::failed(client, Outcome::Hang, "connect: no answer".to_owned());
        }
    };
    if let (PathKind::Churn { seed, min, max }, Some(proxy)) = (plan.path, &proxy) {
        proxy.churn(seed, min, max);
    }
    let peer = connected.service.peer().clone();
    let ticking = match plan.ticks {
        Some(ticks) => Some((
            ticks,
            Instant::now(),
            start_ticks(&peer, ticks, deadline).await,
        )),
        None => None,
    };
    let started = Instant::now();
    // One cut per cell, whatever its calls: a second wait for the marker
    // would find the first's.
    let cut = async {
        if let (Some(after), Some(proxy)) = (plan.cut_after_first_progress, &proxy) {
            proxy.marker_seen().await;
            tokio::time::sleep(after).await;
            match plan.path {
                PathKind::HalfOpen(hold) => proxy.cut_client_side(hold),
                PathKind::Blackhole => proxy.blackhole(),
                PathKind::SessionLost => {
                    let forget = format!("http://{target}/forget");
                    if let Err(error) = reqwest::Client::new().post(forget).send().await {
                        tracing::warn!(%error, "the server did not forget its sessions");
                    }
                    proxy.cut();
                }
                _ => proxy.cut(),
            }
        }
        std::future::pending::<()>().await;
    };
    let log = &connected.log;
    let run = async {
        let mut calls = Vec::new();
        if plan.together {
            // Calls made at once find their progress by number: the numbers
            // must tell them apart.
            let mut values: Vec<u64> = plan
                .calls
                .iter()
                .flat_map(|c| c.progress.iter().map(|v| v.to_bits()))
                .collect();
            let all = values.len();
            values.sort_unstable();
            values.dedup();
            assert_eq!(
                values.len(),
                all,
                "calls made at once must send different progress values"
            );
            let mark = log.mark();
            let each =
                plan.calls.iter().enumerate().map(|(n, call)| {
                    one_call(&peer, log, call, n, deadline, plan.limit, Some(mark))
                });
            calls = futures::future::join_all(each).await;
        } else {
            for (n, call) in plan.calls.iter().enumerate() {
                let record = one_call(&peer, log, call, n, deadline, plan.limit, None).await;
                let hung = record.outcome == Outcome::Hang;
                calls.push(record);
                if hung {
                    break;
                }
            }
        }
        (calls, Instant::now())
    };
    let (calls, last_answer) = tokio::select! {
        done = run => done,
        _ = cut => unreachable!("the cut never ends"),
    };
    let elapsed = last_answer.saturating_duration_since(started);
    let outcome = calls
        .iter()
        .map(|c| c.outcome)
        .min_by_key(|o| o.rank())
        .unwrap_or(Outcome::Error);
    if !plan.settle.is_zero() {
        tokio::time::sleep(plan.settle).await;
    }
    let ticks = match ticking {
        Some((ticks, _, Err(detail))) => Some(TickRecord::failed(ticks.count, detail)),
        Some((ticks, began, Ok(()))) => {
            let due = began + ticks.every * ticks.count + TICK_GRACE;
            let wait = due.saturating_duration_since(Instant::now());
            let _ = connected.log.until_ticks(ticks.count, wait).await;
            // A copy that comes after the last new tick (a resume from a
            // stale cursor) must be counted too.
            tokio::time::sleep(ticks.every).await;
            Some(TickRecord::of(ticks.count, connected.log.ticks()))
        }
        None => None,
    };
    let discontinuities = gaps.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let sampled = connected.sampled.load(std::sync::atomic::Ordering::SeqCst);
    drop(connected);
    ClientRecord {
        client: client.name(),
        outcome,
        elapsed_ms: elapsed.as_millis() as u64,
        calls,
        discontinuities,
        path_cuts: proxy.as_ref().map_or(0, Proxy::cuts),
        resumes: proxy.as_ref().map_or(0, Proxy::resumes),
        gets: proxy
            .as_ref()
            .map(Proxy::gets)
            .or_else(|| buffering.as_ref().map(BufferingProxy::gets))
            .unwrap_or(0),
        cut_connections: proxy.as_ref().map_or(0, Proxy::cut_connections),
        conflicts: proxy.as_ref().map_or(0, Proxy::conflicts),
        detail: None,
        ticks,
        sampled,
    }
}

/// Makes `call` (the plan's `n`th) and sorts how it ended. `shared`: the
/// log's mark where calls made at once began, whose progress values each
/// call then finds by their numbers; else each call marks its own start.
async fn one_call(
    peer: &rmcp::Peer<RoleClient>,
    log: &WireLog,
    call: &Call,
    n: usize,
    deadline: tokio::time::Instant,
    limit: Duration,
    shared: Option<usize>,
) -> CallRecord {
    // rmcp's client replaces the token with one of its own; the log tells
    // this call's values by when they came (or, made at once, by number).
    let token = format!("{}-{}", call.tool, n + 1);
    let params: CallToolRequestParams = match serde_json::from_value(crate::line::call_params(
        call.tool,
        call.args.clone(),
        &token,
    )) {
        Ok(params) => params,
        Err(e) => {
            let began = Instant::now();
            return classify(
                call,
                Some(Err(ServiceError::McpError(
                    rmcp::ErrorData::invalid_params(format!("params: {e}"), None),
                ))),
                Vec::new(),
                began,
                began,
                limit,
            );
        }
    };
    let began = Instant::now();
    let mark = shared.unwrap_or_else(|| log.mark());
    let mine = |arrivals: Vec<(f64, Instant)>| -> Vec<(f64, Instant)> {
        match shared {
            Some(_) => arrivals
                .into_iter()
                .filter(|(value, _)| call.progress.contains(value))
                .collect(),
            None => arrivals,
        }
    };
    let ended = tokio::time::timeout_at(deadline, peer.call_tool(params))
        .await
        .ok();
    let answered = Instant::now();
    let mut arrivals = mine(log.since(mark));
    if matches!(ended, Some(Ok(_))) && arrivals.len() < call.progress.len() {
        // Answered with progress missing: the rest may still be on its way
        // (a server that sent the answer before a progress event).
        let missing = call.progress.len() - arrivals.len();
        let all = log.since(mark).len();
        arrivals = mine(log.until(mark, all + missing, LATE_GRACE).await);
    }
    classify(call, ended, arrivals, began, answered, limit)
}

/// Asks the server for the plan's standalone notifications (the `tick`
/// tool answers at once and sends them from a task of its own).
async fn start_ticks(
    peer: &rmcp::Peer<RoleClient>,
    ticks: Ticks,
    deadline: tokio::time::Instant,
) -> Result<(), String> {
    let params: CallToolRequestParams = serde_json::from_value(json!({
        "name": "tick",
        "arguments": { "count": ticks.count, "interval_ms": ticks.every.as_millis() as u64 },
    }))
    .map_err(|e| format!("tick params: {e}"))?;
    match tokio::time::timeout_at(deadline, peer.call_tool(params)).await {
        Ok(Ok(result)) if first_text(&result).is_some_and(|t| t.starts_with("ticking")) => Ok(()),
        Ok(Ok(result)) => Err(format!("tick answered {:?}", first_text(&result))),
        Ok(Err(e)) => Err(format!("tick failed: {e}")),
        Err(_) => Err("tick: no answer".to_owned()),
    }
}

/// Runs `plan` with both clients at once against `target` and judges them.
pub async fn run_cell(
    shape: &'static str,
    target: SocketAddr,
    plan: &Plan,
    config: ForkConfig,
) -> CellRecord {
    let (fork, upstream) = tokio::join!(
        run_client(target, plan, Client::Fork, config),
        run_client(target, plan, Client::Upstream, config),
    );
    judge(shape, plan, fork, upstream)
}

/// Judges a cell: the fork at least as good as upstream, and whole, with no
/// discontinuity, within the plan's `GET`s, and with the plan's cut made
/// (a cell whose cut never happened tested nothing).
pub fn judge(
    shape: &'static str,
    plan: &Plan,
    fork: ClientRecord,
    upstream: ClientRecord,
) -> CellRecord {
    let mut problems = Vec::new();
    let mut verdict = "ok";
    if plan.cut_after_first_progress.is_some() && fork.cut_connections == 0 && fork.detail.is_none()
    {
        verdict = "FAIL";
        problems.push(
            "the plan's cut closed no connection of the fork's client: the cell proved nothing"
                .to_owned(),
        );
    }
    if fork.gets > plan.max_gets {
        verdict = "FAIL";
        problems.push(format!(
            "the fork's client sent {} GETs ({} resumes), more than the cell's bound of {}: a \
             reconnect loop",
            fork.gets, fork.resumes, plan.max_gets
        ));
    }
    if plan.server.comparable() && fork.outcome.rank() < upstream.outcome.rank() {
        verdict = "BUG";
        problems.push(format!(
            "BUG: upstream's client {} and the fork's {}: {}",
            upstream.outcome.words(),
            fork.outcome.words(),
            fork.why()
        ));
    } else if !plan.server.allows(fork.outcome) {
        if verdict == "ok" {
            verdict = "FAIL";
        }
        problems.push(format!(
            "the fork's client: {}: {}",
            fork.outcome.words(),
            fork.why()
        ));
    }
    if let PathKind::BufferingTimeout(timeout) = plan.path {
        let early = fork
            .calls
            .iter()
            .find(|c| c.outcome != Outcome::Ok && c.elapsed_ms < timeout.as_millis() as u64);
        if let Some(call) = early {
            if verdict == "ok" {
                verdict = "FAIL";
            }
            problems.push(format!(
                "the fork's client failed `{}` after {:.1}s, before the proxy's {}s timeout \
                 answered: it gave a call up that could still have been answered",
                call.tool,
                call.elapsed_ms as f64 / 1000.0,
                timeout.as_secs()
            ));
        }
    }
    if plan.samplings > 0 && fork.detail.is_none() && fork.sampled != plan.samplings {
        if verdict == "ok" {
            verdict = "FAIL";
        }
        problems.push(format!(
            "the fork's client answered {} sampling request(s) of the server's {} (upstream's \
             client: {}): a server-to-client request answered twice, or never",
            fork.sampled, plan.samplings, upstream.sampled
        ));
    }
    let lost = fork.ticks.as_ref().is_some_and(|t| !t.lost.is_empty());
    if !fork.discontinuities.is_empty() && !lost {
        if verdict == "ok" {
            verdict = "FAIL";
        }
        problems.push(format!(
            "false discontinuity (a healthy run): {}",
            fork.discontinuities.join(" | ")
        ));
    }
    let mut notes = Vec::new();
    if let Some(ticks) = &fork.ticks {
        // What upstream's client, on the same server and path, got: a loss
        // or copy it shares is the server's doing (or its revision's), and
        // is recorded; one the fork adds is the fork's.
        let theirs = upstream.ticks.as_ref().filter(|t| t.detail.is_none());
        let lost_there = theirs.map(|t| !t.lost.is_empty());
        // Excused only where upstream's client lost as many or more: which
        // ticks fall into a server's gap (a dead primary's shadow, upstream
        // #659) moves by one with each client's timing, how many does not.
        let lost_there_too = theirs.is_some_and(|t| ticks.lost.len() <= t.lost.len());
        if let Some(detail) = &ticks.detail {
            if verdict == "ok" {
                verdict = "FAIL";
            }
            problems.push(format!("standalone notifications not started: {detail}"));
        } else if lost && plan.server.comparable() && lost_there == Some(false) {
            verdict = "BUG";
            problems.push(format!(
                "BUG: upstream's client got every standalone notification; the fork's lost {:?} \
                 of {}",
                ticks.lost, ticks.sent
            ));
        } else if lost && fork.discontinuities.is_empty() {
            let said = format!(
                "standalone notifications {:?} of {} lost and no discontinuity reported",
                ticks.lost, ticks.sent
            );
            if lost_there_too {
                notes.push(format!(
                    "{said}; upstream's client lost {:?} too",
                    theirs.map(|t| &t.lost)
                ));
            } else {
                if verdict == "ok" {
                    verdict = "FAIL";
                }
                problems.push(said);
            }
        }
        if ticks.duplicated > 0 {
            let said = format!(
                "{} standalone notification(s) received twice: {:?}",
                ticks.duplicated, ticks.received
            );
            let theirs_too = theirs.map_or(0, |t| t.duplicated);
            // Copies upstream's client shows as many of, or more, are the
            // server's replay; beyond that they are the fork's.
            if !plan.server.comparable() || (theirs_too > 0 && ticks.duplicated <= theirs_too) {
                notes.push(format!("{said}; upstream's client {theirs_too}"));
            } else {
                if verdict == "ok" {
                    verdict = "FAIL";
                }
                problems.push(format!("{said}; upstream's client {theirs_too}"));
            }
        }
    }
    CellRecord {
        shape,
        na: None,
        fork: Some(fork),
        upstream: Some(upstream),
        verdict,
        problems,
        notes,
    }
}

// ---------------------------------------------------------------- servers and records

/// A running server of a row, kept alive as long as this value.
pub struct RowServer {
    /// Where it listens.
    pub addr: SocketAddr,
    pid: Option<u32>,
    _keep: Box<dyn Any + Send + Sync>,
}

impl RowServer {
    /// A server at `addr`, kept alive by `keep`.
    pub fn new(addr: SocketAddr, keep: impl Any + Send + Sync) -> Self {
        Self {
            addr,
            pid: None,
            _keep: Box::new(keep),
        }
    }

    /// The server's process, when it runs in one of its own.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }
}

/// Starts `program script args…`, a peer server that prints
/// `listening <port>`, and returns once it listens; the process is killed
/// when the returned value drops.
pub async fn spawn_peer(program: &Path, script: &Path, args: &[&str]) -> anyhow::Result<RowServer> {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(program)
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| anyhow::anyhow!("{}: {e}", program.display()))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let pid = child.id();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .map_err(|_| anyhow::anyhow!("{} printed nothing in 30 s", script.display()))??
        .ok_or_else(|| anyhow::anyhow!("{} ended before listening", script.display()))?;
    let port: u16 = line
        .strip_prefix("listening ")
        .and_then(|p| p.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("unexpected first line {line:?}"))?;
    // Whatever else it prints is read, so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let mut server = RowServer::new(SocketAddr::from(([127, 0, 0, 1], port)), Mutex::new(child));
    server.pid = pid;
    Ok(server)
}

/// Writes `record` as `dir/<row>.json`.
pub fn write_record(dir: &Path, record: &RowRecord) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{}.json", record.row));
    std::fs::write(&path, serde_json::to_string_pretty(record)?)?;
    Ok(path)
}

/// Prints a row, and fails with every problem of its cells.
pub fn report(record: &RowRecord) -> anyhow::Result<()> {
    eprintln!("\n{} ({}):", record.label, record.row);
    let mut problems = Vec::new();
    for cell in &record.cells {
        match (&cell.fork, &cell.upstream) {
            (Some(fork), Some(upstream)) => eprintln!(
                "  {:9} {:5}  fork {:14} upstream {}",
                cell.shape,
                cell.verdict,
                fork.short(),
                upstream.short()
            ),
            _ => eprintln!(
                "  {:9} n/a    {}",
                cell.shape,
                cell.na.as_deref().unwrap_or("")
            ),
        }
        for problem in &cell.problems {
            eprintln!("      {problem}");
            problems.push(format!("{} / {}: {problem}", record.row, cell.shape));
        }
        for note in &cell.notes {
            eprintln!("      recorded: {note}");
        }
    }
    anyhow::ensure!(
        problems.is_empty(),
        "{} cell problem(s) against {}:\n{}",
        problems.len(),
        record.label,
        problems.join("\n")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(cut: bool, max_gets: usize) -> Plan {
        Plan {
            path: PathKind::Plain,
            calls: vec![quick(1)],
            cut_after_first_progress: cut.then(|| Duration::from_secs(1)),
            limit: Duration::from_secs(5),
            server: Delivers::Everything,
            max_gets,
            ticks: None,
            together: false,
            samplings: 0,
            settle: Duration::ZERO,
        }
    }

    fn ok(client: Client, gets: usize, cut_connections: usize) -> ClientRecord {
        ClientRecord {
            outcome: Outcome::Ok,
            detail: None,
            gets,
            cut_connections,
            ..ClientRecord::failed(client, Outcome::Ok, String::new())
        }
    }

    #[test]
    fn an_answer_after_more_gets_than_the_bound_fails_the_cell() {
        let within = judge(
            "s",
            &plan(false, 4),
            ok(Client::Fork, 4, 0),
            ok(Client::Upstream, 9, 0),
        );
        assert_eq!(within.verdict, "ok", "{:?}", within.problems);
        let looped = judge(
            "s",
            &plan(false, 4),
            ok(Client::Fork, 5, 0),
            ok(Client::Upstream, 1, 0),
        );
        assert_eq!(looped.verdict, "FAIL");
        assert!(
            looped.problems[0].contains("5 GETs"),
            "{:?}",
            looped.problems
        );
    }

    #[test]
    fn a_cell_whose_cut_closed_nothing_fails() {
        let uncut = judge(
            "s",
            &plan(true, 9),
            ok(Client::Fork, 1, 0),
            ok(Client::Upstream, 1, 0),
        );
        assert_eq!(uncut.verdict, "FAIL");
        assert!(
            uncut.problems[0].contains("proved nothing"),
            "{:?}",
            uncut.problems
        );
        let cut = judge(
            "s",
            &plan(true, 9),
            ok(Client::Fork, 3, 2),
            ok(Client::Upstream, 3, 2),
        );
        assert_eq!(cut.verdict, "ok", "{:?}", cut.problems);
    }

    fn ticked(client: Client, received: &[u32], gaps: &[&str]) -> ClientRecord {
        ClientRecord {
            ticks: Some(TickRecord::of(4, received.to_vec())),
            discontinuities: gaps.iter().map(|g| (*g).to_owned()).collect(),
            ..ok(client, 1, 0)
        }
    }

    #[test]
    fn standalone_notifications_lost_silently_or_twice_fail_the_cell() {
        let judged = |fork: ClientRecord, upstream: ClientRecord| {
            let verdict = judge("s", &plan(false, 4), fork, upstream);
            (verdict.verdict, verdict.problems.join(" | "))
        };
        let whole = [1, 2, 3, 4];
        assert_eq!(
            judged(
                ticked(Client::Fork, &whole, &[]),
                ticked(Client::Upstream, &whole, &[])
            )
            .0,
            "ok"
        );
        // Lost without a word where upstream's client lost nothing: the
        // fork's silent gap (upstream's client got them all: worse still).
        let silent = ClientRecord {
            ticks: None,
            ..ok(Client::Upstream, 1, 0)
        };
        let (verdict, why) = judged(ticked(Client::Fork, &[1, 4], &[]), silent);
        assert_eq!(verdict, "FAIL", "{why}");
        assert!(why.contains("[2, 3] of 4 lost"), "{why}");
        // Lost without a word by both clients: the server's, recorded.
        let shared = judge(
            "s",
            &plan(false, 4),
            ticked(Client::Fork, &[1, 4], &[]),
            ticked(Client::Upstream, &[1, 4], &[]),
        );
        assert_eq!(shared.verdict, "ok", "{:?}", shared.problems);
        assert!(shared.notes[0].contains("lost"), "{:?}", shared.notes);
        // Lost and reported, where upstream's client lost them too: recorded.
        let (verdict, why) = judged(
            ticked(Client::Fork, &[1, 4], &["stream from 1 to 4"]),
            ticked(Client::Upstream, &[1, 4], &[]),
        );
        assert_eq!(verdict, "ok", "{why}");
        // Lost where upstream's client got them all: worse than upstream.
        let (verdict, why) = judged(
            ticked(Client::Fork, &[1, 4], &["stream from 1 to 4"]),
            ticked(Client::Upstream, &whole, &[]),
        );
        assert_eq!(verdict, "BUG", "{why}");
        // Received twice, where upstream's client was not.
        let (verdict, why) = judged(
            ticked(Client::Fork, &[1, 2, 2, 3, 4], &[]),
            ticked(Client::Upstream, &whole, &[]),
        );
        assert_eq!(verdict, "FAIL", "{why}");
        assert!(why.contains("received twice"), "{why}");
        // The same copy in both clients: the server's replay, recorded.
        let (verdict, why) = judged(
            ticked(Client::Fork, &[1, 2, 2, 3, 4], &[]),
            ticked(Client::Upstream, &[1, 2, 2, 3, 4], &[]),
        );
        assert_eq!(verdict, "ok", "{why}");
        // A discontinuity with nothing lost is still false.
        let (verdict, why) = judged(
            ticked(Client::Fork, &whole, &["stream from 1 to 4"]),
            ticked(Client::Upstream, &whole, &[]),
        );
        assert_eq!(verdict, "FAIL", "{why}");
        assert!(why.contains("false discontinuity"), "{why}");
    }

    #[test]
    fn a_sampling_request_answered_twice_or_never_fails_the_cell() {
        let plan = Plan {
            samplings: 1,
            settle: Duration::ZERO,
            ..plan(false, 4)
        };
        let sampled = |client, n| ClientRecord {
            sampled: n,
            ..ok(client, 1, 0)
        };
        for (answered, verdict) in [(1, "ok"), (2, "FAIL"), (0, "FAIL")] {
            let cell = judge(
                "s",
                &plan,
                sampled(Client::Fork, answered),
                sampled(Client::Upstream, 1),
            );
            assert_eq!(cell.verdict, verdict, "{answered}: {:?}", cell.problems);
        }
    }

    #[test]
    fn a_call_given_up_before_the_gateway_timeout_fails_the_cell() {
        let plan = Plan {
            path: PathKind::BufferingTimeout(Duration::from_secs(60)),
            server: Delivers::GatewayTimeout,
            ..plan(false, 4)
        };
        let failed_at = |client, ms| {
            let mut record = ok(client, 1, 0);
            record.outcome = Outcome::Error;
            record.calls = vec![CallRecord {
                tool: "quiet",
                args: json!({}),
                outcome: Outcome::Error,
                elapsed_ms: ms,
                expected: vec![1.0, 2.0],
                seen: vec![1.0],
                seen_at_ms: vec![0],
                duplicates: 0,
                text: None,
                detail: Some("504".to_owned()),
            }];
            record
        };
        let patient = judge(
            "s",
            &plan,
            failed_at(Client::Fork, 60_010),
            failed_at(Client::Upstream, 60_003),
        );
        assert_eq!(patient.verdict, "ok", "{:?}", patient.problems);
        let early = judge(
            "s",
            &plan,
            failed_at(Client::Fork, 10_000),
            failed_at(Client::Upstream, 60_003),
        );
        assert_eq!(early.verdict, "FAIL", "{:?}", early.problems);
    }
}
