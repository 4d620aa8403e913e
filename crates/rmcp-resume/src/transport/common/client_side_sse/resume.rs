//! An auto-reconnecting SSE stream whose reconnects are judged, not trusted.
//!
//! Upstream's reconnecting stream counts every clean close as success: it
//! resets its retry counter and reconnects with the same `Last-Event-ID`
//! forever, and it accepts whatever ids follow a reconnect. This one:
//!
//! - counts a reconnect that closes before any new event as a failed attempt
//!   (the policy's backoff and `max_times` apply), and resets the count only
//!   on progress: a new event id, or a message;
//! - decides every reconnect with [`crate::transport::resumption`]: re-sent
//!   copies of the cursor event are dropped, a gap or an unhonoured cursor is
//!   reported, an acknowledged empty poll is a delay, not a failure;
//! - on a request stream, ends with an error naming the cursor instead of
//!   retrying a resume that cannot succeed;
//! - on the standalone stream, drops the cursor after repeated failures and
//!   starts afresh, telling the application through a [`Discontinuity`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use sse_stream::Sse;

use super::{BoxedSseResponse, SseRetryPolicy};
use crate::model::ServerJsonRpcMessage;
use crate::transport::resumption::{
    Continuity, ContinuityChecker, ContinuityError, EventAction, EventCursor, IdleTimeout,
    LostRange, Proof, REPLAY_NOTICE_EVENT, ReplayNotice, ResumeVerifier, ResumptionError,
    UnprovenPolicy, Verdict,
};

/// What a failed reconnect means for the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReconnectDisposition {
    /// Transient: try again after the policy's delay.
    Retry,
    /// The server refused the cursor (for example `400`): resuming with it
    /// again cannot succeed.
    CursorRejected,
    /// The session is gone (`404`): the caller must re-initialize.
    SessionLost,
    /// Nothing will help (authentication, `405`, …): stop.
    Terminate,
}

/// Opens the SSE stream again, resuming from a cursor when given one.
pub trait SseReconnect: Send + 'static {
    /// Why a reconnect failed.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Issues the `GET`, with `Last-Event-ID: last_event_id` when present.
    fn reconnect(
        &mut self,
        last_event_id: Option<&str>,
    ) -> BoxFuture<'static, Result<BoxedSseResponse, Self::Error>>;

    /// Classifies a failed reconnect.
    fn classify(&self, _error: &Self::Error) -> ReconnectDisposition {
        ReconnectDisposition::Retry
    }
}

/// Which stream is being resumed; they fail differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamScope {
    /// A request's response stream: it must deliver that response or fail.
    Request,
    /// The standalone `GET` stream: it may start afresh, losing events, if
    /// the application is told.
    Standalone,
}

/// A break in the standalone stream the application should know about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Discontinuity {
    /// The cursor that could not be resumed.
    pub cursor: Option<String>,
    /// Why.
    pub reason: String,
    /// The events known to be lost, where the id scheme names them.
    pub lost: Option<LostRange>,
}

impl fmt::Display for Discontinuity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cursor = self.cursor.as_deref().unwrap_or("-");
        write!(
            f,
            "standalone stream restarted after cursor {cursor}: {}",
            self.reason
        )?;
        if let Some(lost) = &self.lost {
            write!(f, " (lost {lost})")?;
        }
        Ok(())
    }
}

/// Called once per [`Discontinuity`].
pub type DiscontinuityObserver = Arc<dyn Fn(&Discontinuity) + Send + Sync>;

/// The fork's resumption knobs for the streamable-HTTP client.
#[derive(Clone)]
#[non_exhaustive]
pub struct ResumeConfig {
    /// What to do when a reconnect cannot be checked (opaque ids, no
    /// acknowledgement). Default: [`UnprovenPolicy::Lenient`], since most
    /// peers cannot prove continuity; the strict choice fails such resumes.
    pub unproven: UnprovenPolicy,
    /// Consecutive failed resumes with one cursor before a request stream
    /// fails, or the standalone stream drops its cursor. Default 3.
    pub max_failed_resumes: usize,
    /// Treat a stream with no event for this long as stalled and resume it.
    /// `None` (the default) never does; see
    /// [`IdleTimeout`](crate::transport::resumption::IdleTimeout) for the minimum.
    pub idle_timeout: Option<Duration>,
    /// Told about every standalone-stream discontinuity.
    pub on_discontinuity: Option<DiscontinuityObserver>,
}

impl Default for ResumeConfig {
    fn default() -> Self {
        Self {
            unproven: UnprovenPolicy::Lenient,
            max_failed_resumes: 3,
            idle_timeout: None,
            on_discontinuity: None,
        }
    }
}

impl ResumeConfig {
    /// Sets [`unproven`](Self::unproven).
    pub fn with_unproven(self, unproven: UnprovenPolicy) -> Self {
        Self { unproven, ..self }
    }

    /// Sets [`max_failed_resumes`](Self::max_failed_resumes).
    pub fn with_max_failed_resumes(self, max_failed_resumes: usize) -> Self {
        Self {
            max_failed_resumes,
            ..self
        }
    }

    /// Sets the idle timeout, validated against the server's keep-alive.
    pub fn with_idle_timeout(self, idle: IdleTimeout) -> Self {
        Self {
            idle_timeout: Some(idle.get()),
            ..self
        }
    }

    /// Calls `observer` on every standalone-stream discontinuity.
    pub fn on_discontinuity(
        self,
        observer: impl Fn(&Discontinuity) + Send + Sync + 'static,
    ) -> Self {
        Self {
            on_discontinuity: Some(Arc::new(observer)),
            ..self
        }
    }
}

impl fmt::Debug for ResumeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResumeConfig")
            .field("unproven", &self.unproven)
            .field("max_failed_resumes", &self.max_failed_resumes)
            .field("idle_timeout", &self.idle_timeout)
            .field("on_discontinuity", &self.on_discontinuity.is_some())
            .finish()
    }
}

/// Why a resuming stream ended with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeStreamError<E: std::error::Error + 'static> {
    /// The reconnect proved the cursor cannot be continued.
    #[error(transparent)]
    Resumption(ResumptionError),
    /// The stream broke mid-way: ids were skipped or changed stream.
    #[error(transparent)]
    Continuity(ContinuityError),
    /// The server refused the cursor.
    #[error("server refused to resume from cursor {cursor}: {source}")]
    CursorRejected {
        /// The cursor.
        cursor: String,
        /// The refusal.
        source: E,
    },
    /// Every attempt failed and the retry policy gave up.
    #[error("gave up after {attempts} failed reconnects (cursor {}): {last}", .cursor.as_deref().unwrap_or("-"))]
    Exhausted {
        /// Consecutive failed attempts.
        attempts: usize,
        /// The cursor they used.
        cursor: Option<String>,
        /// What the last one reported.
        last: String,
    },
    /// The session is gone.
    #[error("session lost while resuming: {0}")]
    SessionLost(E),
    /// The reconnect failed for good.
    #[error(transparent)]
    Fatal(E),
}

/// Builds the resuming stream of JSON-RPC messages: `first` is the stream
/// already open (a POST response or the first GET), `last_event_id` the
/// cursor it starts from.
pub fn resuming_sse_stream<R: SseReconnect>(
    first: Option<BoxedSseResponse>,
    last_event_id: Option<String>,
    connector: R,
    scope: StreamScope,
    retry_policy: Arc<dyn SseRetryPolicy>,
    config: ResumeConfig,
) -> impl Stream<Item = Result<ServerJsonRpcMessage, ResumeStreamError<R::Error>>> + Send + 'static
{
    resuming_sse_frames(first, last_event_id, connector, scope, retry_policy, config).filter_map(
        |frame| async move {
            match frame {
                Err(error) => Some(Err(error)),
                Ok(sse) => {
                    let data = sse.data.filter(|d| !d.is_empty())?;
                    match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                        Ok(message) => Some(Ok(message)),
                        Err(error) => {
                            tracing::debug!(%error, id = ?sse.id, "ignoring a non-JSON-RPC SSE message");
                            None
                        }
                    }
                }
            }
        },
    )
}

/// The same stream as SSE frames, already judged: the replay notice and
/// re-sent events are removed, and ids are checked. Message frames, priming
/// frames (an id or a `retry` without data) pass through; other event types
/// are dropped.
pub fn resuming_sse_frames<R: SseReconnect>(
    first: Option<BoxedSseResponse>,
    last_event_id: Option<String>,
    connector: R,
    scope: StreamScope,
    retry_policy: Arc<dyn SseRetryPolicy>,
    config: ResumeConfig,
) -> impl Stream<Item = Result<Sse, ResumeStreamError<R::Error>>> + Send + 'static {
    let machine = Machine {
        connector,
        scope,
        retry_policy,
        config,
        current: first,
        last_event_id,
        server_retry: None,
        delay: Some(Duration::ZERO),
        verifier: None,
        checker: None,
        failures: 0,
        failures_with_cursor: 0,
        answered: false,
        done: false,
    };
    futures::stream::unfold(machine, |mut machine| async move {
        let item = machine.next().await?;
        Some((item, machine))
    })
}

/// Outcome of handling one frame.
enum Frame<E: std::error::Error + 'static> {
    Pass(Box<Sse>),
    Skip,
    Fail(ResumeStreamError<E>),
}

struct Machine<R: SseReconnect> {
    connector: R,
    scope: StreamScope,
    retry_policy: Arc<dyn SseRetryPolicy>,
    config: ResumeConfig,
    current: Option<BoxedSseResponse>,
    last_event_id: Option<String>,
    server_retry: Option<Duration>,
    /// Wait before the next connect, when disconnected.
    delay: Option<Duration>,
    /// Judging the reconnect until its verdict is in.
    verifier: Option<ResumeVerifier>,
    /// Following the stream once it is proven.
    checker: Option<ContinuityChecker>,
    /// Consecutive attempts without progress.
    failures: usize,
    /// Consecutive failed resumes with the current cursor.
    failures_with_cursor: usize,
    /// A request stream delivered its response: it is complete, and its
    /// end (or a break) ends the stream instead of prompting a resume.
    answered: bool,
    done: bool,
}

type Item<E> = Result<Sse, ResumeStreamError<E>>;

/// Probes a frame for a JSON-RPC response without building the message.
#[derive(serde::Deserialize)]
struct ResponseProbe {
    #[serde(default)]
    id: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
}

/// Whether `sse` carries a JSON-RPC response (or error): an id, no method.
fn is_response(sse: &Sse) -> bool {
    sse.data
        .as_deref()
        .filter(|d| !d.is_empty())
        .and_then(|d| serde_json::from_str::<ResponseProbe>(d).ok())
        .is_some_and(|p| p.id.is_some() && p.method.is_none())
}

impl<R: SseReconnect> Machine<R> {
    async fn next(&mut self) -> Option<Item<R::Error>> {
        loop {
            if self.done {
                return None;
            }
            let Some(stream) = self.current.as_mut() else {
                if let Some(end) = self.connect().await {
                    return end;
                }
                continue;
            };
            let read = match self.config.idle_timeout {
                Some(idle) => match tokio::time::timeout(idle, stream.next()).await {
                    Ok(read) => read,
                    Err(_) => {
                        tracing::debug!(cursor = ?self.last_event_id, ?idle, "SSE stream idle; resuming it");
                        self.current = None;
                        self.delay = Some(Duration::ZERO);
                        continue;
                    }
                },
                None => stream.next().await,
            };
            if self.answered && !matches!(read, Some(Ok(_))) {
                // Read to the end: the connection closes cleanly, as it does
                // under upstream's client.
                self.done = true;
                return None;
            }
            match read {
                Some(Ok(sse)) => match self.on_frame(sse) {
                    Frame::Pass(sse) => {
                        if self.scope == StreamScope::Request && is_response(&sse) {
                            self.answered = true;
                        }
                        return Some(Ok(*sse));
                    }
                    Frame::Skip => {}
                    Frame::Fail(error) => {
                        if let Some(end) = self.resume_failed(error) {
                            return Some(Err(end));
                        }
                    }
                },
                Some(Err(error)) => {
                    tracing::debug!(%error, cursor = ?self.last_event_id, "SSE stream broke");
                    self.current = None;
                    if let Some(end) = self.attempt_failed(error.to_string()) {
                        return Some(Err(end));
                    }
                }
                None => {
                    self.current = None;
                    if let Some(end) = self.on_close() {
                        return Some(Err(end));
                    }
                }
            }
        }
    }

    /// Waits, then reconnects. `Some` ends the stream.
    async fn connect(&mut self) -> Option<Option<Item<R::Error>>> {
        if let Some(delay) = self.delay.take()
            && !delay.is_zero()
        {
            tokio::time::sleep(delay).await;
        }
        let cursor = self.last_event_id.clone();
        match self.connector.reconnect(cursor.as_deref()).await {
            Ok(stream) => {
                self.current = Some(stream);
                self.verifier = cursor
                    .as_deref()
                    .and_then(|c| EventCursor::parse(c).ok())
                    .map(|c| ResumeVerifier::new(c, 200, self.config.unproven));
                None
            }
            Err(error) => match self.connector.classify(&error) {
                ReconnectDisposition::Retry => {
                    let message = error.to_string();
                    self.attempt_failed(message).map(|e| Some(Err(e)))
                }
                ReconnectDisposition::CursorRejected => match cursor {
                    Some(cursor) => {
                        let end = ResumeStreamError::CursorRejected {
                            cursor,
                            source: error,
                        };
                        self.resume_failed(end).map(|e| Some(Err(e)))
                    }
                    // Nothing to reject without a cursor: treat as transient.
                    None => self.attempt_failed(error.to_string()).map(|e| Some(Err(e))),
                },
                ReconnectDisposition::SessionLost => {
                    self.done = true;
                    Some(Some(Err(ResumeStreamError::SessionLost(error))))
                }
                ReconnectDisposition::Terminate => {
                    self.done = true;
                    Some(Some(Err(ResumeStreamError::Fatal(error))))
                }
            },
        }
    }

    fn on_frame(&mut self, sse: Sse) -> Frame<R::Error> {
        if let Some(retry) = sse.retry {
            self.server_retry = Some(Duration::from_millis(retry));
        }
        if sse.event.as_deref() == Some(REPLAY_NOTICE_EVENT) {
            return self.on_notice(sse.data.as_deref().unwrap_or_default());
        }
        if let Some(id) = sse.id.as_deref().filter(|id| !id.is_empty()) {
            match self.on_id(id) {
                Ok(true) => {}
                Ok(false) => return Frame::Skip,
                Err(failure) => return Frame::Fail(failure),
            }
        }
        let is_message = matches!(sse.event.as_deref(), None | Some("") | Some("message"));
        if !is_message {
            return Frame::Skip;
        }
        if sse.data.as_deref().is_some_and(|d| !d.is_empty()) {
            self.progress();
        }
        Frame::Pass(Box::new(sse))
    }

    fn on_notice(&mut self, data: &str) -> Frame<R::Error> {
        let Some(verifier) = self.verifier.as_mut() else {
            return Frame::Skip;
        };
        let notice = match ReplayNotice::from_json(data) {
            Ok(notice) => notice,
            Err(error) => {
                tracing::debug!(%error, "ignoring a malformed replay notice");
                return Frame::Skip;
            }
        };
        if let Some(floor) = notice.floor.clone() {
            verifier.declare_floor(floor);
        }
        verifier.acknowledge(notice.acknowledgement());
        match verifier.verdict() {
            // The server already opened a fresh standalone stream: keep it,
            // and tell the application what was not carried over.
            Verdict::ResumptionFailed(error) if self.scope == StreamScope::Standalone => {
                self.verifier = None;
                self.checker = None;
                self.failures_with_cursor = 0;
                let gap = Discontinuity {
                    cursor: self.last_event_id.take(),
                    lost: error.lost(),
                    reason: error.to_string(),
                };
                self.report(gap);
                Frame::Skip
            }
            Verdict::ResumptionFailed(error) => Frame::Fail(ResumeStreamError::Resumption(error)),
            _ => Frame::Skip,
        }
    }

    fn report(&self, gap: Discontinuity) {
        tracing::warn!(cursor = ?gap.cursor, reason = %gap.reason, lost = ?gap.lost, "standalone SSE stream lost continuity; starting afresh");
        if let Some(observer) = &self.config.on_discontinuity {
            observer(&gap);
        }
    }

    /// Checks an event id; `Ok(false)` drops the event as a duplicate.
    fn on_id(&mut self, id: &str) -> Result<bool, ResumeStreamError<R::Error>> {
        let cursor = EventCursor::parse(id).ok();
        if let Some(verifier) = self.verifier.as_mut() {
            if verifier.on_event(cursor.as_ref()) == EventAction::SkipDuplicate {
                return Ok(false);
            }
            match verifier.verdict() {
                Verdict::Resumed(proof) => {
                    if proof == Proof::Assumed {
                        // Said, not swallowed: the peer gave nothing to check
                        // (opaque ids, no acknowledgement).
                        tracing::info!(cursor = ?self.last_event_id, first = id, "resumed without proof of continuity");
                    }
                    self.checker = self.verifier.take().map(ResumeVerifier::into_checker);
                }
                Verdict::ResumptionFailed(error) => {
                    return Err(ResumeStreamError::Resumption(error));
                }
                Verdict::SessionLost(_) | Verdict::Delayed => {}
            }
        } else if let (Some(checker), Some(cursor)) = (self.checker.as_mut(), cursor.as_ref()) {
            match checker.observe(cursor) {
                Ok(Continuity::Duplicate) => return Ok(false),
                Ok(_) => {}
                Err(error) => return Err(ResumeStreamError::Continuity(error)),
            }
        } else if let Some(cursor) = cursor {
            // The first id of a fresh stream starts the checking.
            self.checker = Some(ContinuityChecker::new(cursor));
        }
        if self.last_event_id.as_deref() != Some(id) {
            self.last_event_id = Some(id.to_owned());
            self.progress();
        }
        Ok(true)
    }

    fn progress(&mut self) {
        self.failures = 0;
        self.failures_with_cursor = 0;
    }

    /// The server ended the stream cleanly.
    fn on_close(&mut self) -> Option<ResumeStreamError<R::Error>> {
        if let Some(mut verifier) = self.verifier.take() {
            verifier.on_close();
            return match verifier.verdict() {
                // An acknowledged poll with nothing new: wait, keep the cursor.
                Verdict::Delayed => self.schedule("acknowledged, nothing new yet".to_owned()),
                Verdict::ResumptionFailed(error @ ResumptionError::EmptyStream { .. }) => {
                    self.failures_with_cursor += 1;
                    if self.failures_with_cursor >= self.config.max_failed_resumes.max(1) {
                        return self.resume_failed(ResumeStreamError::Resumption(error));
                    }
                    self.schedule(error.to_string())
                }
                Verdict::ResumptionFailed(error) => {
                    self.resume_failed(ResumeStreamError::Resumption(error))
                }
                Verdict::Resumed(_) | Verdict::SessionLost(_) => self.schedule_after_progress(),
            };
        }
        if let Some(end) = self.unresumable("the stream ended") {
            return Some(end);
        }
        // A stream that made progress may be closed by the server at will
        // (SEP-1699); honour its `retry` and count nothing.
        if self.failures == 0 {
            return self.schedule_after_progress();
        }
        self.schedule("stream closed without a new event".to_owned())
    }

    fn schedule_after_progress(&mut self) -> Option<ResumeStreamError<R::Error>> {
        match self.server_retry.or_else(|| self.retry_policy.retry(0)) {
            Some(delay) => {
                // Closing after progress is not a failure, but the next close
                // without progress is.
                self.failures = 1;
                self.delay = Some(delay);
                None
            }
            // A request stream ends only with its response or an error.
            None if self.scope == StreamScope::Request => {
                self.done = true;
                Some(ResumeStreamError::Exhausted {
                    attempts: 0,
                    cursor: self.last_event_id.clone(),
                    last: "the stream ended before the response, and the retry policy allows no reconnect".to_owned(),
                })
            }
            None => {
                self.done = true;
                None
            }
        }
    }

    /// Counts a failed attempt and schedules the next, or gives up.
    fn schedule(&mut self, last: String) -> Option<ResumeStreamError<R::Error>> {
        match self.retry_policy.retry(self.failures) {
            Some(delay) => {
                self.failures += 1;
                let delay = self.server_retry.map_or(delay, |server| server.max(delay));
                self.delay = Some(delay);
                None
            }
            None => {
                self.done = true;
                Some(ResumeStreamError::Exhausted {
                    attempts: self.failures,
                    cursor: self.last_event_id.clone(),
                    last,
                })
            }
        }
    }

    fn attempt_failed(&mut self, last: String) -> Option<ResumeStreamError<R::Error>> {
        self.current = None;
        self.verifier = None;
        if let Some(end) = self.unresumable(&last) {
            return Some(end);
        }
        self.schedule(last)
    }

    /// A request stream that never carried an event id cannot be resumed: a
    /// GET without `Last-Event-ID` would open the standalone stream instead.
    fn unresumable(&mut self, last: &str) -> Option<ResumeStreamError<R::Error>> {
        if self.scope != StreamScope::Request || self.last_event_id.is_some() {
            return None;
        }
        self.done = true;
        Some(ResumeStreamError::Exhausted {
            attempts: 0,
            cursor: None,
            last: format!("{last}; the stream carried no event id to resume from"),
        })
    }

    /// A resume that cannot succeed: a request stream fails now; the
    /// standalone stream starts afresh and reports the discontinuity.
    fn resume_failed(
        &mut self,
        error: ResumeStreamError<R::Error>,
    ) -> Option<ResumeStreamError<R::Error>> {
        self.current = None;
        self.verifier = None;
        self.checker = None;
        match self.scope {
            StreamScope::Request => {
                self.done = true;
                Some(error)
            }
            StreamScope::Standalone => {
                let lost = match &error {
                    ResumeStreamError::Resumption(e) => e.lost(),
                    ResumeStreamError::Continuity(ContinuityError::Gap { lost, .. }) => Some(*lost),
                    _ => None,
                };
                let reason = error.to_string();
                let gap = Discontinuity {
                    cursor: self.last_event_id.take(),
                    reason: reason.clone(),
                    lost,
                };
                self.report(gap);
                self.failures_with_cursor = 0;
                self.schedule(reason)
            }
        }
    }
}
