//! A recording client: raw HTTP and SSE (no MCP client in between), which
//! opens a session, calls streaming tools, keeps the session's standalone
//! stream, and after every cut resumes with `Last-Event-ID` on another
//! instance, GET-first or POST-first, recording everything it sees.
//!
//! It picks instances as a load balancer does ([`Health`]): round-robin,
//! skipping for a while an instance whose connection failed or timed out.
//! Nothing tells it which instances the nemesis took down.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::control::Control;
use super::history::{ChainId, ChainKind, Ms, Outcome, Recorder, ResumeMode, Step, Via};
use super::rng::Rng;
use crate::raw::{PROTOCOL, SseReader};

/// How long a request may wait for its response head.
const HEAD_LIMIT: Duration = Duration::from_secs(4);
/// Silence on a call's stream after which the client treats it as cut
/// (calls send progress every few tens of ms).
const CALL_SILENCE: Duration = Duration::from_secs(3);
/// Silence on a standalone stream after which the client treats it as cut
/// (the server's keep-alive is 15 s).
const STANDALONE_SILENCE: Duration = Duration::from_secs(20);
/// Frames one connection may carry at most.
const MAX_FRAMES: usize = 5_000;
/// Connections one chain may open at most.
const MAX_CONNS: u32 = 400;
/// Sessions one client opens at most; calls per session at most.
const MAX_SESSIONS: usize = 200;
const MAX_CALLS: usize = 10_000;
/// After the bound, the client waits this much more before it gives up.
const GRACE: Duration = Duration::from_secs(1);
/// How long an instance whose connection failed or timed out is skipped
/// (a load balancer's passive health check).
const EJECT: Ms = 1_500;

/// What a load balancer knows of the instances: only what its own
/// requests met. An instance whose connection failed or timed out is
/// skipped for `EJECT` (1.5 s), then tried again.
#[derive(Debug, Clone)]
pub struct Health {
    down_until: Vec<Ms>,
    rr: usize,
}

impl Health {
    /// `slots` instances, none known to be down; round-robin from `start`.
    pub fn new(slots: usize, start: usize) -> Self {
        Self {
            down_until: vec![0; slots.max(1)],
            rr: start,
        }
    }

    /// A connection to `slot` failed or timed out at `now`.
    pub fn failed(&mut self, slot: usize, now: Ms) {
        if let Some(until) = self.down_until.get_mut(slot) {
            *until = now + EJECT;
        }
    }

    /// Whether `slot` is skipped at `now`.
    pub fn ejected(&self, slot: usize, now: Ms) -> bool {
        self.down_until.get(slot).is_some_and(|until| now < *until)
    }

    /// The next instance, round-robin, neither ejected nor `avoid` if
    /// there is one; else the next other than `avoid` (all ejected: a
    /// load balancer tries anyway rather than fail the request).
    pub fn next(&mut self, avoid: Option<usize>, now: Ms) -> usize {
        let n = self.down_until.len();
        for _ in 0..n {
            self.rr += 1;
            let slot = self.rr % n;
            if Some(slot) != avoid && !self.ejected(slot, now) {
                return slot;
            }
        }
        self.rr += 1;
        let slot = self.rr % n;
        if Some(slot) == avoid && n > 1 {
            self.rr += 1;
            return self.rr % n;
        }
        slot
    }
}

/// One client's settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Its number.
    pub id: usize,
    /// The run's seed.
    pub seed: u64,
    /// Its URL of each instance slot (through its own proxies).
    pub urls: Vec<String>,
    /// Percent of resumes that POST first.
    pub post_first_percent: u64,
    /// Whether it keeps a standalone stream.
    pub standalone: bool,
    /// Percent of sessions it ends after a few calls with a `DELETE` to an
    /// instance other than the one it last used (0: sessions last the run).
    pub delete_percent: u64,
    /// Percent of calls that answer at once with no notification: the
    /// commit of each is a quick call (the shared log's `quick.lua`).
    pub quick_percent: u64,
}

/// What a client did, in numbers.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientTally {
    /// Sessions opened.
    pub sessions: usize,
    /// Calls made.
    pub calls: usize,
}

struct Session {
    id: String,
    started: Ms,
    home: usize,
    next_request: u64,
}

enum CallEnd {
    /// The session is usable.
    Done,
    /// The session is gone (404): open a new one.
    SessionGone,
}

struct Client {
    cfg: ClientConfig,
    ctl: Arc<Control>,
    rec: Recorder,
    rng: Rng,
    http: reqwest::Client,
    health: Health,
}

fn http_client(silence: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        // A new connection per request: each goes through the proxy as
        // routed, and a cut never leaves a dead pooled connection behind.
        .pool_max_idle_per_host(0)
        .connect_timeout(Duration::from_secs(1))
        .read_timeout(silence)
        .build()
        .unwrap_or_default()
}

/// Runs one client until `ctl.stop` and its last call ended.
pub async fn run(cfg: ClientConfig, ctl: Arc<Control>, rec: Recorder) -> ClientTally {
    let rng = Rng::fork(cfg.seed, 1_000 + cfg.id as u64);
    let mut client = Client {
        health: Health::new(cfg.urls.len(), cfg.id),
        cfg,
        ctl,
        rec,
        rng,
        http: http_client(CALL_SILENCE),
    };
    client.run().await
}

impl Client {
    async fn run(&mut self) -> ClientTally {
        let mut tally = ClientTally::default();
        for _ in 0..MAX_SESSIONS {
            if self.ctl.stop.is_cancelled() {
                break;
            }
            let Some(mut session) = self.init().await else {
                continue;
            };
            tally.sessions += 1;
            let standalone = CancellationToken::new();
            let reader = self.cfg.standalone.then(|| {
                tokio::spawn(standalone_stream(
                    self.cfg.clone(),
                    self.rec.clone(),
                    session.id.clone(),
                    session.started,
                    standalone.clone(),
                ))
            });
            // Sessions that may be deleted end after a few calls, so that
            // deletes happen while faults do.
            let deleting = self.cfg.delete_percent > 0;
            let mut calls_left = if deleting {
                self.rng.range(3, 8)
            } else {
                u64::MAX
            };
            let mut gone = false;
            for _ in 0..MAX_CALLS {
                if self.ctl.stop.is_cancelled() || calls_left == 0 {
                    break;
                }
                calls_left -= 1;
                tally.calls += 1;
                match self.call(&mut session).await {
                    CallEnd::Done => {}
                    CallEnd::SessionGone => {
                        gone = true;
                        break;
                    }
                }
            }
            let mut reader = reader;
            if !gone && self.rng.chance(self.cfg.delete_percent) {
                self.delete(&session).await;
                // The owner must end the standalone stream by itself (its
                // resume then gets 404); the checker judges when it did.
                if let Some(running) = reader.as_mut() {
                    let wait = self.ctl.lease / 3 + Duration::from_secs(1);
                    if tokio::time::timeout(wait, running).await.is_ok() {
                        // Ended: a finished task's handle is not polled again.
                        reader = None;
                    }
                }
            }
            standalone.cancel();
            if let Some(reader) = reader {
                let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
            }
        }
        tally
    }

    /// The next instance, as a load balancer picks it ([`Health`]).
    fn next_slot(&mut self, avoid: Option<usize>) -> usize {
        let now = self.rec.now();
        self.health.next(avoid, now)
    }

    /// A connection to `slot` failed or timed out.
    fn failed(&mut self, slot: usize) {
        let now = self.rec.now();
        self.health.failed(slot, now);
    }

    async fn backoff(&mut self) {
        let ms = self.rng.range(100, 300);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    async fn init(&mut self) -> Option<Session> {
        for _ in 0..50 {
            if self.ctl.stop.is_cancelled() {
                return None;
            }
            let slot = self.next_slot(None);
            let url = self.cfg.urls[slot].clone();
            let body = json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": { "name": "fault-checker", "version": "0" }
                }
            });
            let started = self.rec.now();
            match self.initialize(&url, &body).await {
                Ok(id) => {
                    self.rec.record(
                        self.cfg.id,
                        None,
                        Step::Init {
                            slot,
                            status: Some(200),
                            session: Some(id.clone()),
                            error: None,
                        },
                    );
                    return Some(Session {
                        id,
                        started,
                        home: slot,
                        next_request: 1,
                    });
                }
                Err((status, error)) => {
                    if status.is_none() {
                        self.failed(slot);
                    }
                    self.rec.record(
                        self.cfg.id,
                        None,
                        Step::Init {
                            slot,
                            status,
                            session: None,
                            error: Some(error),
                        },
                    );
                    self.backoff().await;
                }
            }
        }
        None
    }

    async fn initialize(&self, url: &str, body: &Value) -> Result<String, (Option<u16>, String)> {
        let response = send(self.http.post(url).json(body), None)
            .await
            .map_err(|e| (None, e))?;
        let status = response.status().as_u16();
        if status != 200 {
            let text = body_text(response).await;
            return Err((Some(status), text));
        }
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or((Some(status), "no Mcp-Session-Id".to_owned()))?;
        let frames = tokio::time::timeout(HEAD_LIMIT, SseReader::new(response).collect())
            .await
            .map_err(|_| (Some(status), "initialize stream stalled".to_owned()))?
            .map_err(|e| (Some(status), e.to_string()))?;
        if !frames
            .iter()
            .any(|f| f.json().is_some_and(|j| j["id"] == 0))
        {
            return Err((Some(status), "no initialize result".to_owned()));
        }
        let ack = send(
            self.http
                .post(url)
                .json(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })),
            Some(&session),
        )
        .await
        .map_err(|e| (None, e))?;
        if ack.status() != 202 {
            return Err((
                Some(ack.status().as_u16()),
                "initialized not accepted".to_owned(),
            ));
        }
        Ok(session)
    }

    /// One call, to its end.
    async fn call(&mut self, session: &mut Session) -> CallEnd {
        let request_id = session.next_request;
        session.next_request += 1;
        let (tool, arguments, n, nominal) = if self.rng.chance(self.cfg.quick_percent) {
            ("announce", json!({ "n": 0 }), 0, 0)
        } else if self.rng.chance(15) {
            let n = self.rng.range(1, 5) as u32;
            ("announce", json!({ "n": n }), n, 0)
        } else {
            let n = self.rng.range(10, 40) as u32;
            let interval = self.rng.range(20, 60);
            (
                "count_to",
                json!({ "n": n, "interval_ms": interval }),
                n,
                u64::from(n) * interval,
            )
        };
        let chain = self.rec.chain(
            self.cfg.id,
            &session.id,
            session.started,
            ChainKind::Call {
                request_id,
                tool: tool.to_owned(),
                n,
                nominal,
            },
        );
        let nominal_end = self.rec.now() + nominal;
        let body = json!({
            "jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": arguments,
                "_meta": { "progressToken": format!("c{}-{request_id}", self.cfg.id) }
            }
        });
        let mut conn = 0u32;
        // The POST: to the session's owner as far as the client knows; a
        // 503 (owned elsewhere, or Redis away) sends it to the next one.
        let mut reader = None;
        let mut slot = session.home;
        let post_deadline = self.rec.now()
            + u64::try_from((self.ctl.lease + Duration::from_secs(4)).as_millis()).unwrap_or(0);
        for _ in 0..100 {
            if self.health.ejected(slot, self.rec.now()) {
                slot = self.next_slot(Some(slot));
            }
            conn += 1;
            let url = self.cfg.urls[slot].clone();
            let sent = send(self.http.post(&url).json(&body), Some(&session.id)).await;
            let response = match sent {
                Err(error) => {
                    self.failed(slot);
                    self.open(
                        chain,
                        conn,
                        slot,
                        Via::Post,
                        None,
                        Some(error.clone()),
                        None,
                    );
                    // The owner may be unreachable: the next call starts
                    // elsewhere (a 503 there sends it on), after a pause.
                    session.home = self.next_slot(Some(slot));
                    self.backoff().await;
                    return self.end(chain, Outcome::Unconfirmed { why: error });
                }
                Ok(response) => response,
            };
            let status = response.status().as_u16();
            if status == 200 {
                self.open(chain, conn, slot, Via::Post, Some(200), None, None);
                session.home = slot;
                reader = Some(SseReader::new(response));
                break;
            }
            let retry_after = retry_after(&response);
            let text = body_text(response).await;
            self.open(
                chain,
                conn,
                slot,
                Via::Post,
                Some(status),
                Some(text.clone()),
                retry_after,
            );
            if status == 404 {
                self.end(chain, Outcome::Refused { status, body: text });
                return CallEnd::SessionGone;
            }
            if status < 500 || self.rec.now() > post_deadline {
                return self.end(chain, Outcome::Refused { status, body: text });
            }
            self.backoff().await;
            slot = self.next_slot(Some(slot));
        }
        let Some(mut reader) = reader else {
            return self.end(
                chain,
                Outcome::Refused {
                    status: 503,
                    body: "no instance took the call".to_owned(),
                },
            );
        };
        let mut last_id: Option<String> = None;
        for _ in 0..MAX_CONNS {
            // Read this connection to its end.
            if let Some(outcome) = self
                .read(chain, conn, &mut reader, request_id, &mut last_id)
                .await
            {
                return self.end(chain, outcome);
            }
            let Some(cursor) = last_id.clone() else {
                // No cursor to resume with: the call's fate is unknowable.
                return self.end(
                    chain,
                    Outcome::Empty {
                        why: "the POST's stream ended before its first event".to_owned(),
                    },
                );
            };
            // Resume: another instance, round-robin; GET-first or POST-first.
            let mut resumed = None;
            for _ in 0..200 {
                if self.ctl.overdue(nominal_end, self.rec.now(), GRACE) {
                    break;
                }
                if conn >= MAX_CONNS {
                    break;
                }
                let target = self.next_slot(Some(slot));
                slot = target;
                let mode = if self.rng.chance(self.cfg.post_first_percent) {
                    ResumeMode::PostFirst
                } else {
                    ResumeMode::GetFirst
                };
                if mode == ResumeMode::PostFirst {
                    let (status, text) = self.ping(target, session).await;
                    self.rec.record(
                        self.cfg.id,
                        Some(chain),
                        Step::Ping {
                            slot: target,
                            status,
                            body: text,
                        },
                    );
                    if status == Some(200) {
                        session.home = target;
                    }
                }
                conn += 1;
                let via = Via::Resume {
                    cursor: cursor.clone(),
                    mode,
                };
                let url = self.cfg.urls[target].clone();
                let sent = send(resume_request(&self.http, &url, &cursor), Some(&session.id)).await;
                let response = match sent {
                    Err(error) => {
                        self.failed(target);
                        self.open(chain, conn, target, via, None, Some(error), None);
                        self.backoff().await;
                        continue;
                    }
                    Ok(response) => response,
                };
                let status = response.status().as_u16();
                if status == 200 {
                    self.open(chain, conn, target, via, Some(200), None, None);
                    resumed = Some(SseReader::new(response));
                    break;
                }
                let retry_after = retry_after(&response);
                let text = body_text(response).await;
                self.open(
                    chain,
                    conn,
                    target,
                    via,
                    Some(status),
                    Some(text.clone()),
                    retry_after,
                );
                match status {
                    204 => return self.end(chain, Outcome::Drained),
                    404 => {
                        self.end(chain, Outcome::Refused { status, body: text });
                        return CallEnd::SessionGone;
                    }
                    400..=499 => return self.end(chain, Outcome::Refused { status, body: text }),
                    _ => self.backoff().await,
                }
            }
            match resumed {
                Some(next) => reader = next,
                None => {
                    return self.end(
                        chain,
                        Outcome::Abandoned {
                            why: format!("no resume answered by the bound ({conn} connections)"),
                        },
                    );
                }
            }
        }
        self.end(
            chain,
            Outcome::Abandoned {
                why: format!("{MAX_CONNS} connections"),
            },
        )
    }

    /// Reads one connection of a call; the outcome if the answer came.
    async fn read(
        &mut self,
        chain: ChainId,
        conn: u32,
        reader: &mut SseReader,
        request_id: u64,
        last_id: &mut Option<String>,
    ) -> Option<Outcome> {
        for _ in 0..MAX_FRAMES {
            let frame =
                match tokio::time::timeout(CALL_SILENCE + Duration::from_secs(1), reader.next())
                    .await
                {
                    Err(_) => {
                        self.closed(chain, conn, "silent too long");
                        return None;
                    }
                    Ok(Err(error)) => {
                        self.closed(chain, conn, &error.to_string());
                        return None;
                    }
                    Ok(Ok(None)) => {
                        self.closed(chain, conn, "end of stream");
                        return None;
                    }
                    Ok(Ok(Some(frame))) => frame,
                };
            let data = (!frame.data.trim().is_empty()).then(|| frame.data.clone());
            self.rec.record(
                self.cfg.id,
                Some(chain),
                Step::Frame {
                    conn,
                    id: frame.id.clone(),
                    event: frame.event.clone(),
                    data,
                },
            );
            if frame.id.is_some() {
                *last_id = frame.id.clone();
            }
            if let Some(message) = frame.json()
                && message["id"] == json!(request_id)
            {
                if message.get("result").is_some() {
                    return Some(Outcome::Result);
                }
                if let Some(error) = message.get("error") {
                    return Some(Outcome::RpcError {
                        code: error["code"].as_i64().unwrap_or(0),
                        message: error["message"].as_str().unwrap_or_default().to_owned(),
                    });
                }
            }
        }
        self.closed(chain, conn, "frame limit");
        None
    }

    /// `DELETE` of the session through an instance other than the one it
    /// last used (another after a transport error, three tries at most).
    async fn delete(&mut self, session: &Session) {
        let mut slot = session.home;
        for _ in 0..3 {
            slot = self.next_slot(Some(slot));
            let url = self.cfg.urls[slot].clone();
            let at = self.rec.now();
            let sent = send(self.http.delete(&url), Some(&session.id)).await;
            let (status, body) = match sent {
                Err(error) => {
                    self.failed(slot);
                    (None, error)
                }
                Ok(response) => (Some(response.status().as_u16()), body_text(response).await),
            };
            self.rec.record(
                self.cfg.id,
                None,
                Step::Delete {
                    session: session.id.clone(),
                    sent: at,
                    slot,
                    status,
                    body,
                },
            );
            if status.is_some() {
                return;
            }
            self.backoff().await;
        }
    }

    /// `ping` POSTed to `slot`: the status and the body's start.
    async fn ping(&mut self, slot: usize, session: &mut Session) -> (Option<u16>, String) {
        let id = session.next_request;
        session.next_request += 1;
        let url = self.cfg.urls[slot].clone();
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": "ping" });
        match send(self.http.post(&url).json(&body), Some(&session.id)).await {
            Err(error) => (None, error),
            Ok(response) => {
                let status = response.status().as_u16();
                (Some(status), body_text(response).await)
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // one per field of the step
    fn open(
        &self,
        chain: ChainId,
        conn: u32,
        slot: usize,
        via: Via,
        status: Option<u16>,
        body: Option<String>,
        retry_after: Option<String>,
    ) {
        self.rec.record(
            self.cfg.id,
            Some(chain),
            Step::Open {
                conn,
                slot,
                via,
                status,
                body,
                retry_after,
            },
        );
    }

    fn closed(&self, chain: ChainId, conn: u32, why: &str) {
        self.rec.record(
            self.cfg.id,
            Some(chain),
            Step::Closed {
                conn,
                why: why.to_owned(),
            },
        );
    }

    fn end(&self, chain: ChainId, outcome: Outcome) -> CallEnd {
        self.rec
            .record(self.cfg.id, Some(chain), Step::End { outcome });
        CallEnd::Done
    }
}

/// A response's `Retry-After` header, if any.
fn retry_after(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// A `GET` of the session's stream resuming after `cursor`.
fn resume_request(http: &reqwest::Client, url: &str, cursor: &str) -> reqwest::RequestBuilder {
    http.get(url)
        .header("accept", "text/event-stream")
        .header("last-event-id", cursor)
}

/// Sends `request` in `session` (if any), with the protocol headers, waiting
/// at most [`HEAD_LIMIT`] for the response head.
async fn send(
    request: reqwest::RequestBuilder,
    session: Option<&str>,
) -> Result<reqwest::Response, String> {
    let mut request = request
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    match tokio::time::timeout(HEAD_LIMIT, request.send()).await {
        Err(_) => Err(format!("no response head within {HEAD_LIMIT:?}")),
        Ok(Err(error)) => {
            let mut why = format!("transport: {error}");
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                why.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            Err(why)
        }
        Ok(Ok(response)) => Ok(response),
    }
}

/// A response's body as text (at most 2 KB kept), read within a bound.
async fn body_text(response: reqwest::Response) -> String {
    match tokio::time::timeout(HEAD_LIMIT, response.text()).await {
        Ok(Ok(mut text)) => {
            if text.len() > 2048 {
                let mut end = 2048;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
            }
            text
        }
        Ok(Err(error)) => format!("<body: {error}>"),
        Err(_) => "<body stalled>".to_owned(),
    }
}

/// The session's standalone stream, kept open and resumed until `done`.
async fn standalone_stream(
    cfg: ClientConfig,
    rec: Recorder,
    session: String,
    session_started: Ms,
    done: CancellationToken,
) {
    let chain = rec.chain(cfg.id, &session, session_started, ChainKind::Standalone);
    let http = http_client(STANDALONE_SILENCE);
    let mut rng = Rng::fork(cfg.seed, 50_000 + cfg.id as u64 + u64::from(chain) * 7);
    let mut health = Health::new(cfg.urls.len(), cfg.id + 1);
    let mut last_id: Option<String> = None;
    let end = |outcome| {
        rec.record(cfg.id, Some(chain), Step::End { outcome });
    };
    for conn in 1..=MAX_CONNS {
        if done.is_cancelled() {
            return end(Outcome::Closed);
        }
        let slot = health.next(None, rec.now());
        let url = &cfg.urls[slot];
        let (request, via) = match &last_id {
            Some(cursor) => (
                resume_request(&http, url, cursor),
                Via::Resume {
                    cursor: cursor.clone(),
                    mode: ResumeMode::GetFirst,
                },
            ),
            None => (
                http.get(url.as_str()).header("accept", "text/event-stream"),
                Via::Fresh,
            ),
        };
        let sent = tokio::select! {
            sent = send(request, Some(&session)) => sent,
            _ = done.cancelled() => return end(Outcome::Closed),
        };
        let open = |status, body, retry_after| {
            rec.record(
                cfg.id,
                Some(chain),
                Step::Open {
                    conn,
                    slot,
                    via: via.clone(),
                    status,
                    body,
                    retry_after,
                },
            );
        };
        let response = match sent {
            Err(error) => {
                health.failed(slot, rec.now());
                open(None, Some(error), None);
                tokio::time::sleep(Duration::from_millis(rng.range(200, 500))).await;
                continue;
            }
            Ok(response) => response,
        };
        let status = response.status().as_u16();
        if status != 200 {
            let after = retry_after(&response);
            let text = body_text(response).await;
            open(Some(status), Some(text.clone()), after);
            if (400..500).contains(&status) {
                return end(Outcome::Refused { status, body: text });
            }
            tokio::time::sleep(Duration::from_millis(rng.range(200, 500))).await;
            continue;
        }
        open(Some(200), None, None);
        let mut reader = SseReader::new(response);
        let mut frames = 0usize;
        let why = loop {
            frames += 1;
            if frames > MAX_FRAMES {
                break "frame limit".to_owned();
            }
            let next = tokio::select! {
                next = tokio::time::timeout(STANDALONE_SILENCE, reader.next()) => next,
                _ = done.cancelled() => {
                    rec.record(cfg.id, Some(chain), Step::Closed { conn, why: "closed by the client".to_owned() });
                    return end(Outcome::Closed);
                }
            };
            let frame = match next {
                Err(_) => break "silent too long".to_owned(),
                Ok(Err(error)) => break error.to_string(),
                Ok(Ok(None)) => break "end of stream".to_owned(),
                Ok(Ok(Some(frame))) => frame,
            };
            let data = (!frame.data.trim().is_empty()).then(|| frame.data.clone());
            rec.record(
                cfg.id,
                Some(chain),
                Step::Frame {
                    conn,
                    id: frame.id.clone(),
                    event: frame.event.clone(),
                    data,
                },
            );
            if frame.id.is_some() {
                last_id = frame.id.clone();
            }
        };
        rec.record(cfg.id, Some(chain), Step::Closed { conn, why });
        tokio::time::sleep(Duration::from_millis(rng.range(50, 200))).await;
    }
    end(Outcome::Abandoned {
        why: format!("{MAX_CONNS} connections"),
    })
}
