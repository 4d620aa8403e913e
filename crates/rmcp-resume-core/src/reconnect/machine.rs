//! The reconnect state machine.
//!
//! ```text
//!              connect ok, cursor            first new event proves it
//!   Backoff ───────────────────▶ Verifying ───────────────────────────▶ Following
//!     ▲   │ connect ok, no cursor                                        │   │
//!     │   └──────────────────────────────────────────────────────────────┘   │
//!     │ break, close, refusal (policy allows another attempt)                │ request
//!     └───────────────────────────── Verifying / Following                   │ stream's
//!                                                                            ▼ response
//!   Done ◀── policy gives up, session lost, fatal error ◀──────────────── Draining
//! ```
//!
//! Counters that span connections (failures, the cursor, the server's
//! `retry`) live beside the state; everything that belongs to one connection
//! lives in it.
//!
//! # Silence
//!
//! A resume that sends nothing is judged by what the server has promised.
//! A server that vouched for rmcp's rules (its `mcp-replay` notice, or
//! [`IdRules::Rmcp`]) speaks first on every resume, so its silence for
//! [`ResumeConfig::silent_resume_timeout`] is a failed resume. Any other
//! server replays strictly after the cursor and then says nothing until
//! there is something new, as the spec asks: its silence is a call still
//! working. Such a resume is refreshed (the same cursor, at once) after
//! the same timeout, since a server may have attached a resume that came
//! early to nothing, and the refresh counts as progress, not failure; but
//! it brought nothing new, so each refresh in a row waits twice as long as
//! the last, up to ten minutes (see [`super::quiet`]).
//!
//! # Progress
//!
//! Progress is something new: an event the stream has not delivered (a copy
//! is dropped, and counts for nothing), the response, or a connection the
//! server held. A held connection that ends on the cursor it began with
//! resets every count, but lengthens the quiet run, which spaces the next
//! `GET`s. No connection is followed at once unless it lived a second or
//! brought something new.

use std::future::Future;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use futures::StreamExt;
use futures::future::BoxFuture;
use http::StatusCode;
use sse_stream::Sse;

use super::connector::MAX_POLICY_COUNT;
use super::delivered::Delivered;
use super::probe::is_response;
use super::quiet::{quiet_delay, refresh_wait};
use super::{
    Attempt, Connector, Discontinuity, IdRules, ReconnectDisposition, ResumeConfig,
    ResumeStreamError, RetryPolicy, SseFrames,
};
use crate::resumption::{
    Continuity, ContinuityChecker, ContinuityError, EventAction, EventCursor, OpaqueEventId, Proof,
    REPLAY_NOTICE_EVENT, ReplayNotice, ResumeVerifier, ResumptionError, StreamScope,
    UnprovenPolicy, Verdict,
};

/// Where the stream is.
enum State {
    /// Disconnected: connect after this delay.
    Backoff(Duration),
    /// Connected with a cursor: judging the reconnect until its verdict is in.
    Verifying {
        frames: SseFrames,
        verifier: ResumeVerifier,
        heard: Heard,
    },
    /// Connected and proven (or fresh): each id is checked against the last.
    Following {
        frames: SseFrames,
        checker: Option<ContinuityChecker>,
    },
    /// A request stream delivered its response: read it to its end (so the
    /// connection closes cleanly), never resume it.
    Draining {
        frames: SseFrames,
        checker: Option<ContinuityChecker>,
    },
    /// The opening request failed and the policy allows no retry: the
    /// stream ends with that, as soon as it is read.
    GiveUp,
    /// Ended.
    Done,
}

/// What a resume has said so far.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Heard {
    /// Nothing yet: the silence timer runs.
    Nothing,
    /// A frame (a notice, an event, a priming frame).
    Frame,
    /// The server acknowledged the cursor with its notice.
    Acknowledged,
}

/// What one read from the open stream gave.
enum Read {
    Frame(Sse),
    Broke(sse_stream::Error),
    Closed,
    Idle,
}

/// What to do with one frame.
enum Frame<E: std::error::Error + 'static> {
    /// Unboxed: every message of every stream takes this path.
    Pass(Sse),
    Skip,
    /// The frame shows the stream cannot be continued; it is delivered still
    /// if it is the request's response.
    Fail(ResumeStreamError<E>, Option<Box<Sse>>),
}

type Item<E> = Result<Sse, ResumeStreamError<E>>;

pub(super) struct Machine<C: Connector, P: RetryPolicy> {
    connector: C,
    scope: StreamScope,
    policy: P,
    config: ResumeConfig,
    state: State,
    /// The `Last-Event-ID` of the next reconnect.
    cursor: Option<String>,
    /// The server's last `retry` field.
    server_retry: Option<Duration>,
    /// Consecutive attempts without progress.
    failures: usize,
    /// Consecutive failed resumes with the current cursor.
    failures_with_cursor: usize,
    /// Consecutive failures in transit with the current cursor.
    transport_failures: usize,
    /// The server vouched for rmcp's counter rules (see [`IdRules`]).
    vouched: bool,
    /// When the first attempt since the last progress failed: a request
    /// stream's [`ResumeConfig::resume_deadline`] runs from here.
    failing_since: Option<Instant>,
    /// The span current when the stream started: the parent of the span
    /// each logged line is made under ([`Connector::span`]).
    parent: tracing::Span,
    /// When this stream last logged a loss at WARN.
    last_warned: Option<Instant>,
    /// When the request that opened the connection was sent. A path's
    /// connection lifetime runs from about then (the TCP accept), not from
    /// the response headers: a hold measured from the headers would fall
    /// short of a lifetime equal to it, every time.
    connected_at: Instant,
    /// The cursor came from a frame without data (a priming frame): no
    /// message with its id has been delivered.
    primed: bool,
    /// The id of a priming frame on a resume not yet proven, adopted only if
    /// the server closes the stream as a poll.
    provisional: Option<String>,
    /// The open connection was a resume (made with a cursor).
    resumed: bool,
    /// The open connection delivered something new: an event not seen
    /// before, or the response.
    news: bool,
    /// Connections in a row that were held and brought nothing new (see
    /// [`super::quiet`]); an event ends the run.
    quiet: u32,
    /// The latest ids delivered on the stream, while the server has not
    /// vouched for rmcp's rules: a copy of one is dropped, and is no
    /// progress.
    delivered: Delivered,
    /// The wait under way.
    step: Step<C::Error>,
    /// The one timer the waits share (a read's deadline, a backoff, a
    /// connect's limit); made at the first timed wait.
    timer: Option<Pin<Box<Sleep>>>,
}

/// At most one WARN per stream in this long for losses a server reports.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The shortest wait the machine makes where it waits at all: a zero
/// timeout or cap in the config must not become a loop without pause.
const MIN_DELAY: Duration = Duration::from_secs(1);

/// The longest a resume must be held open to count as progress, whatever
/// the silence timeout: a connection lifetime of a minute must count.
const HOLD: Duration = Duration::from_secs(5);

/// Whether a request's response has already come on this stream.
fn draining_now(state: &State) -> bool {
    matches!(state, State::Draining { .. })
}

/// A frame's event id: borrowed from a frame that goes on, or owned when
/// the frame stops at the machine.
enum Id<'a> {
    Shared(&'a str),
    Owned(String),
}

impl Id<'_> {
    fn as_str(&self) -> &str {
        match self {
            Self::Shared(id) => id,
            Self::Owned(id) => id,
        }
    }

    fn into_string(self) -> String {
        match self {
            Self::Shared(id) => id.to_owned(),
            Self::Owned(id) => id,
        }
    }
}

/// Whether `sse` carries a message (priming frames carry an id, a `retry`,
/// or nothing).
fn carries_data(sse: &Sse) -> bool {
    sse.data.as_deref().is_some_and(|d| !d.is_empty())
}

/// Whether a broken stream holds input that cannot be decoded (not UTF-8):
/// the same bytes would break it again, so resuming cannot help.
///
/// The other syntax errors of the parser rmcp uses (an unknown field, a line
/// without `:`, a repeated field, a `retry` that is not a number) are input
/// the SSE spec says to ignore. That parser stops at them, so the stream is
/// resumed past them from its cursor, as a break in transit would be.
fn is_undecodable(error: &sse_stream::Error) -> bool {
    matches!(error, sse_stream::Error::Utf8Parse(_))
}

impl Read {
    fn of(next: Option<Result<Sse, sse_stream::Error>>) -> Self {
        match next {
            Some(Ok(sse)) => Self::Frame(sse),
            Some(Err(error)) => Self::Broke(error),
            None => Self::Closed,
        }
    }
}

/// What one turn of the machine gives its stream.
enum Turn<E: std::error::Error + 'static> {
    /// Nothing yet: take the next turn.
    Go,
    /// An item for the stream.
    Yield(Item<E>),
    /// The stream has ended.
    End,
}

/// What a read of the open stream waits for, fixed when the read starts.
#[derive(Clone, Copy)]
struct ReadPlan {
    /// The configured idle timeout, where it applies.
    idle: Option<Duration>,
    /// How long a silent resume is waited on.
    silence: Duration,
    /// The read is of a resume that has said nothing yet.
    silent: bool,
}

impl ReadPlan {
    /// When the read ends as [`Read::Idle`]: the idle timeout, and the
    /// silence if the resume is silent, whichever comes first.
    fn wait(&self) -> Option<Duration> {
        match (self.idle, self.silent) {
            (Some(idle), true) => Some(idle.min(self.silence)),
            (None, true) => Some(self.silence),
            (idle, false) => idle,
        }
    }
}

/// The wait under way between two calls of [`Machine::poll_next`]: the
/// machine is polled, not awaited, so that a frame of an open stream takes
/// one call through it and no future of its own (a request stream's frames
/// are the hot path of every call). The timer, where one runs, is the
/// machine's `timer`.
enum Step<E> {
    /// Nothing under way: the state says what comes next.
    Ready,
    /// Reading the open stream; the timer runs if the plan has a wait.
    Reading(ReadPlan),
    /// Waiting out a backoff on the timer.
    Backoff,
    /// A reconnect under way, cut off when the timer fires after `limit`.
    Connecting {
        connecting: BoxFuture<'static, Result<SseFrames, E>>,
        cursor: Option<String>,
        asked_at: Instant,
        limit: Duration,
    },
}

impl<C: Connector, P: RetryPolicy> Machine<C, P> {
    pub(super) fn new(
        first: Option<SseFrames>,
        cursor: Option<String>,
        connector: C,
        scope: StreamScope,
        policy: P,
        config: ResumeConfig,
    ) -> Self {
        // A stream with neither a connection nor a cursor is one whose
        // opening request failed: its next attempt is its second, after the
        // policy's first delay, if the policy allows one.
        let opening_failed = first.is_none() && cursor.is_none();
        let state = match first {
            Some(frames) => State::Following {
                frames,
                checker: None,
            },
            None if opening_failed => match policy.retry(0) {
                Some(delay) => {
                    State::Backoff(delay.clamp(MIN_DELAY, config.max_delay.max(MIN_DELAY)))
                }
                None => State::GiveUp,
            },
            None => State::Backoff(Duration::ZERO),
        };
        let vouched = config.id_rules == IdRules::Rmcp;
        // A stream that starts by resuming is already failing to resume.
        let failing_since = matches!(state, State::Backoff(_)).then(Instant::now);
        // The cursor names an event the client has: a copy of it is no news.
        let delivered = Delivered::starting_at(cursor.as_deref());
        let mut machine = Self {
            connector,
            scope,
            policy,
            config,
            state,
            cursor,
            server_retry: None,
            failures: usize::from(opening_failed),
            failures_with_cursor: 0,
            transport_failures: 0,
            vouched,
            failing_since,
            parent: tracing::Span::current(),
            last_warned: None,
            connected_at: Instant::now(),
            primed: false,
            provisional: None,
            resumed: false,
            news: false,
            quiet: 0,
            delivered,
            step: Step::Ready,
            timer: None,
        };
        // A first connection opened with a cursor is a resume: judge it so.
        let verifier = machine
            .cursor
            .as_deref()
            .and_then(|c| machine.judge(c))
            .map(|c| ResumeVerifier::new(c, StatusCode::OK, machine.config.unproven));
        if let (Some(verifier), State::Following { .. }) = (verifier, &machine.state) {
            machine.resumed = true;
            machine.state = match mem::replace(&mut machine.state, State::Done) {
                State::Following { frames, .. } => State::Verifying {
                    frames,
                    verifier,
                    heard: Heard::Nothing,
                },
                other => other,
            };
        }
        machine
    }

    /// The span of a line this stream logs, made for that line: a stream
    /// that logs nothing makes none.
    fn span(&self) -> tracing::Span {
        self.connector.span(self.scope, &self.parent)
    }

    /// An id as the rules allow it to be judged: as rmcp's counter once the
    /// server vouched for that, else as an opaque token.
    fn judge(&self, id: &str) -> Option<EventCursor> {
        // An id that looks like rmcp's but is not (`0042`, `1/2/3`) is still
        // an id: opaque, judged as any other.
        let parsed = EventCursor::parse(id)
            .or_else(|_| OpaqueEventId::new(id).map(EventCursor::Opaque))
            .ok()?;
        Some(if self.vouched {
            parsed
        } else {
            parsed.into_opaque()
        })
    }

    /// What the next read of the open stream waits for.
    fn plan_read(&self) -> ReadPlan {
        // A request stream without a cursor cannot be resumed: a `GET`
        // without one would open the standalone stream instead.
        let resumable = self.scope == StreamScope::Standalone || self.cursor.is_some();
        let idle = self
            .config
            .idle_timeout()
            .filter(|_| resumable)
            .map(|idle| idle.max(MIN_DELAY));
        // A resume that stays silent may be a server that attached it to
        // nothing (a shadow, or a stream still owned by the cut
        // connection); it is retried after a while, not waited on forever.
        let silence = self.config.silent_resume_timeout.max(MIN_DELAY);
        // The deadline cuts short only a silence that is a failure: from
        // a server that never vouched, silence held long enough is a
        // call still working, and cutting it short would count the
        // quiet resume as progress before it was held.
        // A server that never vouched is asked again ever more rarely while
        // it stays quiet (see `quiet`): an idle session is not a loop.
        let silence = match self.remaining() {
            Some(left) if self.vouched => left.min(silence),
            _ if self.vouched => silence,
            _ => refresh_wait(silence, self.quiet),
        };
        // Also silent: a resume from a server that never vouched whose
        // only news since its replay is a priming frame.
        let primed_quiet = !self.vouched
            && self.provisional.is_some()
            && matches!(self.state, State::Following { .. });
        let silent = primed_quiet
            || matches!(
                self.state,
                State::Verifying {
                    heard: Heard::Nothing,
                    ..
                }
            );
        ReadPlan {
            idle,
            silence,
            silent,
        }
    }

    /// The next item of the stream; `None` when it has ended. Between calls
    /// the machine holds what it waits for ([`Step`]).
    pub(super) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Item<C::Error>>> {
        loop {
            let (read, plan) = match &mut self.step {
                Step::Ready => match self.start() {
                    Turn::Go => continue,
                    Turn::Yield(item) => return Poll::Ready(Some(item)),
                    Turn::End => return Poll::Ready(None),
                },
                Step::Reading(plan) => {
                    let plan = *plan;
                    let (State::Verifying { frames, .. }
                    | State::Following { frames, .. }
                    | State::Draining { frames, .. }) = &mut self.state
                    else {
                        self.step = Step::Ready;
                        continue;
                    };
                    let read = match frames.poll_next_unpin(cx) {
                        Poll::Ready(next) => Read::of(next),
                        Poll::Pending if plan.wait().is_some() && self.timer_fired(cx) => {
                            Read::Idle
                        }
                        Poll::Pending => return Poll::Pending,
                    };
                    (read, plan)
                }
                Step::Backoff => {
                    if !self.timer_fired(cx) {
                        return Poll::Pending;
                    }
                    self.connect_now();
                    continue;
                }
                Step::Connecting { connecting, .. } => {
                    let outcome = match connecting.as_mut().poll(cx) {
                        Poll::Ready(connected) => Some(connected),
                        Poll::Pending if self.timer_fired(cx) => None,
                        Poll::Pending => return Poll::Pending,
                    };
                    let Step::Connecting {
                        cursor,
                        asked_at,
                        limit,
                        ..
                    } = mem::replace(&mut self.step, Step::Ready)
                    else {
                        continue;
                    };
                    if let Some(end) = self.connected(outcome, cursor, asked_at, limit) {
                        return Poll::Ready(Some(Err(end)));
                    }
                    continue;
                }
            };
            self.step = Step::Ready;
            match self.on_read(read, plan) {
                Turn::Go => {}
                Turn::Yield(item) => return Poll::Ready(Some(item)),
                Turn::End => return Poll::Ready(None),
            }
        }
    }

    /// Starts what the state calls for: a read, a backoff, a reconnect; or
    /// yields at once what ends the stream.
    fn start(&mut self) -> Turn<C::Error> {
        match &self.state {
            State::Done => Turn::End,
            State::GiveUp => {
                self.state = State::Done;
                Turn::Yield(Err(ResumeStreamError::Exhausted {
                    attempts: 1,
                    cursor: None,
                    last: Box::new(Attempt::OpeningFailed),
                }))
            }
            State::Backoff(delay) => {
                let delay = *delay;
                if let Some(end) = self.past_deadline(delay) {
                    return Turn::Yield(Err(end));
                }
                if delay.is_zero() {
                    self.connect_now();
                } else {
                    self.arm(delay);
                    self.step = Step::Backoff;
                }
                Turn::Go
            }
            State::Verifying { .. } | State::Following { .. } | State::Draining { .. } => {
                let plan = self.plan_read();
                if let Some(wait) = plan.wait() {
                    self.arm(wait);
                }
                self.step = Step::Reading(plan);
                Turn::Go
            }
        }
    }

    /// Sets the timer to fire `after` from now; the first timed wait of a
    /// stream allocates it, and a healthy stream without an idle timeout
    /// never does.
    fn arm(&mut self, after: Duration) {
        // `Duration::MAX` (a timeout set to "never", or a server's huge
        // `Retry-After` under an uncapped delay) must not overflow the clock.
        let deadline = crate::log::later(Instant::now(), after);
        match &mut self.timer {
            Some(timer) => timer.as_mut().reset(deadline),
            None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
        }
    }

    /// Whether the armed timer has fired; registers for its wakeup if not.
    fn timer_fired(&mut self, cx: &mut Context<'_>) -> bool {
        self.timer
            .as_mut()
            .is_some_and(|timer| timer.as_mut().poll(cx).is_ready())
    }

    /// What one read of the open stream means for the stream.
    fn on_read(&mut self, read: Read, plan: ReadPlan) -> Turn<C::Error> {
        let ReadPlan {
            idle,
            silence,
            silent,
            ..
        } = plan;
        // A frame with nothing in it (a priming frame) says the server
        // opened a stream, not that it attached it to anything: the
        // Python SDK's server primes a resume and can still miss what
        // it sent while attaching it. Only a message or a notice is heard.
        let vouched = self.vouched;
        if let (State::Verifying { heard, .. }, Read::Frame(sse)) = (&mut self.state, &read)
            && *heard == Heard::Nothing
            && (vouched || carries_data(sse) || sse.event.as_deref() == Some(REPLAY_NOTICE_EVENT))
        {
            *heard = Heard::Frame;
        }
        if matches!(self.state, State::Draining { .. }) && !matches!(read, Read::Frame(_)) {
            // Answered: its end is the end, however it comes.
            self.state = State::Done;
            return Turn::End;
        }
        match read {
            Read::Frame(sse) => match self.on_frame(sse) {
                Frame::Pass(sse) => {
                    if self.scope == StreamScope::Request && is_response(&sse) {
                        self.news();
                        self.drain();
                    }
                    return Turn::Yield(Ok(sse));
                }
                Frame::Skip => {}
                // A response that has arrived is never thrown away: what
                // went missing before it were notifications, and the
                // caller gets its answer.
                Frame::Fail(error, Some(sse))
                    if self.scope == StreamScope::Request && is_response(&sse) =>
                {
                    // The application hears of the notifications lost
                    // before it, as of any other loss.
                    self.report(Discontinuity {
                        cursor: self.cursor.clone(),
                        lost: lost_of(&error),
                        reason: format!(
                            "delivering the response after a break in its stream: {error}"
                        ),
                        stream: StreamScope::Request,
                    });
                    self.news();
                    self.drain();
                    return Turn::Yield(Ok(*sse));
                }
                Frame::Fail(error, _) => {
                    if let Some(end) = self.resume_failed(error) {
                        return Turn::Yield(Err(end));
                    }
                }
            },
            Read::Idle if silent && !self.vouched => {
                // The server holds the resume and has nothing new: a
                // call still working. Refresh it, in case it was
                // attached to nothing, without counting it; the next
                // silence is waited on longer.
                tracing::debug!(parent: &self.span(), cursor = ?self.cursor, ?silence, quiet = self.quiet, "resume quiet; refreshing it");
                self.held_quietly();
                self.state = State::Backoff(Duration::ZERO);
            }
            Read::Idle if silent => {
                tracing::debug!(parent: &self.span(), cursor = ?self.cursor, ?silence, "resume stayed silent; trying again");
                if let Some(end) = self.resume_brought_nothing(Attempt::Silent(silence)) {
                    return Turn::Yield(Err(end));
                }
            }
            Read::Idle => {
                tracing::debug!(parent: &self.span(), cursor = ?self.cursor, ?idle, "SSE stream idle; resuming it");
                if self.held() {
                    self.held_quietly();
                }
                self.state = State::Backoff(self.quiet_wait());
            }
            Read::Broke(error)
                if is_undecodable(&error) || self.connector.break_is_final(&error) =>
            {
                tracing::debug!(parent: &self.span(), %error, cursor = ?self.cursor, "SSE stream cannot be read");
                if let Some(end) = self.resume_failed(ResumeStreamError::Malformed(error)) {
                    return Turn::Yield(Err(end));
                }
            }
            Read::Broke(error) => {
                tracing::debug!(parent: &self.span(), %error, cursor = ?self.cursor, "SSE stream broke");
                if self.held() {
                    // The server held the connection until the break (a
                    // connection lifetime, say): that was progress.
                    self.held_quietly();
                }
                if let Some(end) = self.attempt_failed(Attempt::Transport(error)) {
                    return Turn::Yield(Err(end));
                }
            }
            Read::Closed => {
                if let Some(end) = self.on_close() {
                    return Turn::Yield(Err(end));
                }
            }
        }
        Turn::Go
    }

    /// Sends the reconnect, cut off after the connect timeout (or what is
    /// left of the deadline).
    fn connect_now(&mut self) {
        let cursor = self.cursor.clone();
        let limit = self.config.connect_timeout;
        let limit = self.remaining().map_or(limit, |left| left.min(limit));
        let asked_at = Instant::now();
        let connecting = self.connector.connect(cursor.as_deref());
        self.arm(limit);
        self.step = Step::Connecting {
            connecting,
            cursor,
            asked_at,
            limit,
        };
    }

    /// What a reconnect's outcome (`None`: no answer within `limit`) means.
    /// `Some` ends the stream.
    fn connected(
        &mut self,
        outcome: Option<Result<SseFrames, C::Error>>,
        cursor: Option<String>,
        asked_at: Instant,
        limit: Duration,
    ) -> Option<ResumeStreamError<C::Error>> {
        let Some(connected) = outcome else {
            tracing::debug!(parent: &self.span(), ?cursor, ?limit, "reconnect did not answer in time");
            return self.attempt_failed(Attempt::ConnectTimeout(limit));
        };
        let error = match connected {
            Ok(frames) => {
                self.connected_at = asked_at;
                self.news = false;
                self.provisional = None;
                self.resumed = cursor.is_some();
                let verifier = cursor
                    .as_deref()
                    .and_then(|c| self.judge(c))
                    .map(|c| ResumeVerifier::new(c, StatusCode::OK, self.config.unproven));
                self.state = match verifier {
                    Some(verifier) => State::Verifying {
                        frames,
                        verifier,
                        heard: Heard::Nothing,
                    },
                    None => State::Following {
                        frames,
                        checker: None,
                    },
                };
                return None;
            }
            Err(error) => error,
        };
        match (self.connector.classify(&error), cursor) {
            (ReconnectDisposition::CursorRejected, Some(cursor)) => {
                self.resume_failed(ResumeStreamError::CursorRejected {
                    cursor,
                    source: error,
                })
            }
            // The server failed on the cursor: upstream rmcp 0.15 to 0.17
            // answer a resume they cannot replay so. Kept for ever, the
            // cursor would cost the standalone stream every later event.
            (ReconnectDisposition::ServerError, Some(cursor)) => {
                tracing::debug!(parent: &self.span(), %error, %cursor, "the server failed on the resume");
                self.resume_brought_nothing(Attempt::CursorRejected {
                    cursor,
                    source: error,
                })
            }
            (ReconnectDisposition::Busy, _) => {
                // Never at once: the server asked for time, if only by its status.
                let asked = self.connector.retry_after(&error);
                let policy = self
                    .policy_retry(self.failures)
                    .or_else(|| self.policy_retry(0));
                let wait = asked.max(policy).filter(|w| !w.is_zero());
                let wait = wait.unwrap_or(MIN_DELAY);
                self.attempt_failed_after(Attempt::Connect(error), Some(wait))
            }
            // Nothing to reject without a cursor: treat it as transient.
            (
                ReconnectDisposition::Retry
                | ReconnectDisposition::CursorRejected
                | ReconnectDisposition::ServerError,
                _,
            ) => self.attempt_failed(Attempt::Connect(error)),
            (ReconnectDisposition::SessionLost, _) => {
                self.state = State::Done;
                Some(ResumeStreamError::SessionLost(error))
            }
            (ReconnectDisposition::Terminate, _) => {
                self.state = State::Done;
                Some(ResumeStreamError::Fatal(error))
            }
        }
    }

    /// The open stream carried the request's response.
    fn drain(&mut self) {
        self.state = match mem::replace(&mut self.state, State::Done) {
            State::Verifying {
                frames, verifier, ..
            } => State::Draining {
                frames,
                checker: Some(verifier.into_checker()),
            },
            State::Following { frames, checker } | State::Draining { frames, checker } => {
                State::Draining { frames, checker }
            }
            other => other,
        };
    }

    /// The reconnect is settled: follow the stream with `checker`.
    fn follow(&mut self, checker: Option<ContinuityChecker>) {
        self.state = match mem::replace(&mut self.state, State::Done) {
            State::Verifying { frames, .. } | State::Following { frames, .. } => {
                State::Following { frames, checker }
            }
            State::Draining { frames, .. } => State::Draining { frames, checker },
            other => other,
        };
    }

    fn on_frame(&mut self, mut sse: Sse) -> Frame<C::Error> {
        if let Some(retry) = sse.retry {
            self.server_retry = Some(Duration::from_millis(retry));
        }
        if sse.event.as_deref() == Some(REPLAY_NOTICE_EVENT) {
            return self.on_notice(sse.data.as_deref().unwrap_or_default());
        }
        if sse.id.as_deref() == Some("") {
            // The SSE spec: an empty `id` resets the last event id, so the
            // next reconnect carries none.
            self.cursor = None;
            self.primed = false;
            if let State::Following { checker, .. } | State::Draining { checker, .. } =
                &mut self.state
            {
                *checker = None;
            }
        }
        let carries_data = carries_data(&sse);
        let is_message = matches!(sse.event.as_deref(), None | Some("") | Some("message"));
        // A request stream's frame without data (its priming event) keeps
        // its id here: the worker reads only messages, and every resume of
        // this stream is the machine's, so the id moves into the cursor
        // instead of being copied there and again by the worker's reader.
        // Its `retry` goes on (see below).
        let kept_here = self.scope == StreamScope::Request && !carries_data && is_message;
        let id = if kept_here {
            sse.id.take().map(Id::Owned)
        } else {
            sse.id.as_deref().map(Id::Shared)
        };
        if let Some(id) = id.filter(|id| !id.as_str().is_empty()) {
            let open = matches!(
                self.state,
                State::Verifying { .. } | State::Following { .. }
            );
            if !carries_data && !self.vouched && self.resumed && open {
                // A resume's priming frame: the cursor stays where the last
                // message left it until the stream closes as a poll, so that
                // a refresh or a break replays what the server may have
                // missed while attaching this one.
                self.provisional = Some(id.into_string());
                return Frame::Skip;
            }
            match self.on_id(id, carries_data) {
                Ok(true) if carries_data => {
                    self.provisional = None;
                    if !self.vouched
                        && let Some(id) = sse.id.as_deref()
                    {
                        self.delivered.insert(id);
                    }
                }
                Ok(true) => {}
                Ok(false) => return Frame::Skip,
                Err(failure) => return Frame::Fail(failure, Some(Box::new(sse))),
            }
        }
        if !is_message {
            return Frame::Skip;
        }
        if kept_here && sse.retry.is_none() {
            return Frame::Skip;
        }
        // Otherwise the worker's reader still hears the server's `retry`
        // (without the id): it paces a reconnect that reader would make of
        // a stream that ends after its response, while it drains it.
        // A message without an id is not progress: a server that sends one
        // and closes would otherwise be resumed at its `retry` forever.
        Frame::Pass(sse)
    }

    fn on_notice(&mut self, data: &str) -> Frame<C::Error> {
        let notice = match ReplayNotice::from_json(data) {
            Ok(notice) => notice,
            Err(error) => {
                tracing::debug!(parent: &self.span(), %error, "ignoring a malformed replay notice");
                return Frame::Skip;
            }
        };
        let ours = self
            .cursor
            .as_deref()
            .and_then(|c| EventCursor::parse(c).ok());
        if ours.as_ref() != Some(&notice.cursor) {
            // About another resume than this one: it proves nothing here.
            tracing::debug!(parent: &self.span(), cursor = ?self.cursor, notice = %notice.cursor, "ignoring a replay notice for another cursor");
            return Frame::Skip;
        }
        let unproven = self.config.unproven;
        let State::Verifying {
            verifier, heard, ..
        } = &mut self.state
        else {
            return Frame::Skip;
        };
        if !self.vouched {
            // The notice comes first on a resume, before any event: judge
            // the cursor by the rules the server has just vouched for.
            self.vouched = true;
            *verifier = ResumeVerifier::new(notice.cursor.clone(), StatusCode::OK, unproven);
        }
        if let Some(floor) = notice.floor.clone() {
            verifier.declare_floor(floor);
        }
        verifier.acknowledge(notice.acknowledgement());
        match verifier.verdict() {
            // The server already opened a fresh standalone stream: keep it,
            // and tell the application what was not carried over.
            Verdict::ResumptionFailed(error) if self.scope == StreamScope::Standalone => {
                self.follow(None);
                self.failures_with_cursor = 0;
                // The fresh stream starts at the floor: a break before its
                // first event resumes from there, not from nothing.
                let before_floor = notice
                    .floor
                    .as_ref()
                    .and_then(EventCursor::as_rmcp)
                    .and_then(|f| f.index.checked_sub(1).map(|i| f.with_index(i)));
                let cursor = mem::replace(&mut self.cursor, before_floor.map(|id| id.to_string()));
                self.report(Discontinuity {
                    cursor,
                    lost: error.lost(),
                    reason: error.to_string(),
                    stream: StreamScope::Standalone,
                });
                Frame::Skip
            }
            Verdict::ResumptionFailed(error) => {
                Frame::Fail(ResumeStreamError::Resumption(error), None)
            }
            // Acknowledged: not a failed resume. It becomes progress for
            // every count and the deadline once the server has held it (see
            // `held`) or closed it as a poll; a server that acknowledges and
            // breaks at once is still bounded.
            Verdict::Resumed(_) | Verdict::Delayed => {
                *heard = Heard::Acknowledged;
                self.failures_with_cursor = 0;
                Frame::Skip
            }
            Verdict::SessionLost(_) => Frame::Skip,
        }
    }

    fn report(&mut self, gap: Discontinuity) {
        // A server can make every event a gap: one WARN a minute per stream,
        // the rest at DEBUG; the observer hears of every one.
        let now = Instant::now();
        let quiet = self
            .last_warned
            .is_some_and(|at| now.saturating_duration_since(at) < WARN_EVERY);
        if quiet {
            tracing::debug!(parent: &self.span(), cursor = ?gap.cursor, reason = %gap.reason, lost = ?gap.lost, "SSE stream lost continuity");
        } else {
            self.last_warned = Some(now);
            tracing::warn!(parent: &self.span(), cursor = ?gap.cursor, reason = %gap.reason, lost = ?gap.lost, "SSE stream lost continuity");
        }
        if let Some(observer) = &self.config.on_discontinuity {
            observer(&gap);
        }
    }

    /// The standalone stream goes on from `id` after a loss it reports.
    fn go_on_after_gap(
        &mut self,
        id: &str,
        carries_data: bool,
        lost: Option<crate::resumption::LostRange>,
        why: &dyn std::fmt::Display,
    ) -> bool {
        let cursor = self.cursor.replace(id.to_owned());
        self.primed = !carries_data;
        self.news();
        self.report(Discontinuity {
            cursor,
            lost,
            reason: why.to_string(),
            stream: StreamScope::Standalone,
        });
        true
    }

    /// Checks an event id; `Ok(false)` drops the event as a duplicate.
    fn on_id(
        &mut self,
        given: Id<'_>,
        carries_data: bool,
    ) -> Result<bool, ResumeStreamError<C::Error>> {
        let id = given.as_str();
        // Upstream rmcp's standalone stream primes with id `0` and numbers
        // its first event `0` too: a message repeating an id only a priming
        // frame carried is new, not a copy.
        let unprimed = self.primed && carries_data && self.cursor.as_deref() == Some(id);
        // Opaque ids prove no order, but one this stream delivered is a
        // copy wherever it comes (a replay from the first event): dropped,
        // and no progress.
        if carries_data && !unprimed && !self.vouched && self.delivered.contains(id) {
            return Ok(false);
        }
        if unprimed && !draining_now(&self.state) {
            let verifying = matches!(self.state, State::Verifying { .. });
            if verifying && self.config.unproven == UnprovenPolicy::Strict {
                // Nothing proves that this resume continues the stream.
                if let Some(cursor) = self.judge(id) {
                    return Err(ResumeStreamError::Resumption(ResumptionError::Unproven {
                        cursor,
                    }));
                }
            }
            // Delivered, and the checking starts from it.
            let checker = self.judge(id).map(ContinuityChecker::new);
            self.follow(checker);
            self.primed = false;
            self.news();
            return Ok(true);
        }
        // Unvouched ids on an open stream need no parsing: only an exact
        // repeat of the last one (the cursor) is a duplicate.
        let judged = self.vouched || matches!(self.state, State::Verifying { .. });
        let parsed = if judged { self.judge(id) } else { None };
        let draining = matches!(self.state, State::Draining { .. });
        match &mut self.state {
            State::Verifying { verifier, .. } => {
                if verifier.on_event(parsed.as_ref()) == EventAction::SkipDuplicate {
                    return Ok(false);
                }
                match verifier.verdict() {
                    Verdict::Resumed(proof) => {
                        if proof == Proof::Assumed {
                            // Said, not swallowed: the peer gave nothing to
                            // check (opaque ids, no acknowledgement).
                            // Fields, not `span()`: the verifier borrows the
                            // state. Inside the macro, the span is made only
                            // if the line is logged.
                            let (connector, parent) = (&self.connector, &self.parent);
                            let (scope, cursor) = (self.scope, &self.cursor);
                            tracing::info!(
                                parent: &connector.span(scope, parent),
                                ?cursor,
                                first = id,
                                "resumed without proof of continuity"
                            );
                        }
                        let checker = verifier.clone().into_checker();
                        self.follow(Some(checker));
                    }
                    // The standalone stream keeps a resume whose first event
                    // skips some: the loss is reported, and this event starts
                    // the checking, as on a live gap.
                    Verdict::ResumptionFailed(
                        error @ (ResumptionError::Gap { .. }
                        | ResumptionError::Discontinuous { .. }),
                    ) if self.scope == StreamScope::Standalone => {
                        self.follow(parsed.map(ContinuityChecker::new));
                        return Ok(self.go_on_after_gap(id, carries_data, error.lost(), &error));
                    }
                    Verdict::ResumptionFailed(error) => {
                        return Err(ResumeStreamError::Resumption(error));
                    }
                    Verdict::SessionLost(_) | Verdict::Delayed => {}
                }
            }
            State::Following { .. } | State::Draining { .. } if !judged => {
                if self.cursor.as_deref() == Some(id) && !unprimed {
                    return Ok(false);
                }
            }
            State::Following { checker, .. } | State::Draining { checker, .. } => {
                match (checker.as_mut(), parsed) {
                    (Some(checker), Some(parsed)) => match checker.observe(&parsed) {
                        Ok(Continuity::Duplicate) => return Ok(false),
                        Ok(_) => {}
                        // Answered: nothing after the response can fail it.
                        Err(_) if draining => return Ok(false),
                        // A live standalone stream keeps its connection: the
                        // loss is reported, and checking goes on from here.
                        Err(error) if self.scope == StreamScope::Standalone => {
                            *checker = ContinuityChecker::new(parsed);
                            let lost = match &error {
                                ContinuityError::Gap { lost, .. } => Some(*lost),
                                _ => None,
                            };
                            return Ok(self.go_on_after_gap(id, carries_data, lost, &error));
                        }
                        Err(error) => return Err(ResumeStreamError::Continuity(error)),
                    },
                    // The first id of a fresh stream starts the checking.
                    (None, Some(parsed)) => *checker = Some(ContinuityChecker::new(parsed)),
                    (_, None) => {}
                }
            }
            State::Backoff(_) | State::GiveUp | State::Done => {}
        }
        if self.cursor.as_deref() != Some(id) {
            // The last id's buffer takes the next: ids of one stream are of
            // about one length, so a stream allocates for its first only,
            // and not even then when the frame gave its id away.
            match &mut self.cursor {
                Some(cursor) => {
                    cursor.clear();
                    cursor.push_str(given.as_str());
                }
                None => self.cursor = Some(given.into_string()),
            }
            self.primed = !carries_data;
            self.news();
        } else if unprimed {
            self.primed = false;
            self.news();
        }
        Ok(true)
    }

    /// Whether the open resume was held by the server: open for
    /// [`ResumeConfig::silent_resume_timeout`] (at most [`HOLD`]) with nothing wrong, having
    /// acknowledged the cursor if it vouched for rmcp's rules (and so
    /// promised to).
    /// Any other open connection (a fresh standalone stream, a proven one)
    /// was held if it lived that long: a long-lived stream that ends is
    /// reconnected at once, with or without a cursor.
    fn held(&self) -> bool {
        let kept_promise = match &self.state {
            State::Verifying { heard, .. } => *heard == Heard::Acknowledged || !self.vouched,
            State::Following { .. } | State::Draining { .. } => true,
            State::Backoff(_) | State::GiveUp | State::Done => false,
        };
        let hold = self.config.silent_resume_timeout.clamp(MIN_DELAY, HOLD);
        kept_promise && self.connected_at.elapsed() >= hold
    }

    /// [`ResumeConfig::max_delay`], no less than [`MIN_DELAY`].
    fn max_delay(&self) -> Duration {
        self.config.max_delay.max(MIN_DELAY)
    }

    fn progress(&mut self) {
        self.failures = 0;
        self.failures_with_cursor = 0;
        self.transport_failures = 0;
        self.failing_since = None;
    }

    /// Something new came (an event not delivered before, the response):
    /// progress, and the end of a quiet run.
    fn news(&mut self) {
        self.progress();
        self.news = true;
        self.quiet = 0;
    }

    /// The server held the open connection and it ended (or was refreshed):
    /// progress for every count, but a resume that ends on the cursor it
    /// began with brought nothing, and lengthens the quiet run.
    fn held_quietly(&mut self) {
        self.progress();
        if self.resumed && !self.news {
            self.quiet = self.quiet.saturating_add(1);
        }
    }

    /// Whether the connection that just ended may be followed at once: it
    /// lived a second, or brought something new. Anything else (copies, an
    /// instant break) waits, so that no server can make a loop without
    /// pause.
    fn may_follow_at_once(&self) -> bool {
        self.news || self.connected_at.elapsed() >= MIN_DELAY
    }

    /// What is left of the quiet run's spacing (see [`super::quiet`]),
    /// counted from when the connection that ended was asked for: a run of
    /// long-lived connections goes on at once, short ones wait.
    fn quiet_wait(&self) -> Duration {
        quiet_delay(self.quiet, self.max_delay()).saturating_sub(self.connected_at.elapsed())
    }

    /// The retry policy's delay for `count`, with the count capped (see
    /// [`MAX_POLICY_COUNT`](super::connector::MAX_POLICY_COUNT)).
    fn policy_retry(&self, count: usize) -> Option<Duration> {
        self.policy.retry(count.min(MAX_POLICY_COUNT))
    }

    /// A request stream that has failed to resume for longer than
    /// [`ResumeConfig::resume_deadline`] (counting the coming `delay`)
    /// fails now rather than after it.
    fn past_deadline(&mut self, delay: Duration) -> Option<ResumeStreamError<C::Error>> {
        if self.remaining()? > delay {
            return None;
        }
        let deadline = self.config.resume_deadline;
        self.state = State::Done;
        Some(ResumeStreamError::Exhausted {
            attempts: self.failures,
            cursor: self.cursor.clone(),
            last: Box::new(Attempt::Deadline(deadline)),
        })
    }

    /// What is left of a failing request stream's resume deadline.
    fn remaining(&self) -> Option<Duration> {
        if self.scope != StreamScope::Request {
            return None;
        }
        let end = self.failing_since? + self.config.resume_deadline;
        Some(end.saturating_duration_since(Instant::now()))
    }

    /// A resume the server answered (or accepted and left silent) without
    /// anything new: counted toward `max_failed_resumes`.
    fn resume_brought_nothing(
        &mut self,
        last: Attempt<C::Error>,
    ) -> Option<ResumeStreamError<C::Error>> {
        self.failures_with_cursor += 1;
        if self.failures_with_cursor >= self.config.max_failed_resumes.max(1) {
            let error = match last {
                Attempt::Resumption(error) => ResumeStreamError::Resumption(error),
                last => ResumeStreamError::Exhausted {
                    attempts: self.failures_with_cursor,
                    cursor: self.cursor.clone(),
                    last: Box::new(last),
                },
            };
            return self.resume_failed(error);
        }
        self.schedule(last)
    }

    /// The server ended the stream cleanly.
    fn on_close(&mut self) -> Option<ResumeStreamError<C::Error>> {
        let was_held = self.held();
        let closed = mem::replace(&mut self.state, State::Done);
        let provisional = self
            .provisional
            .take()
            .filter(|id| self.cursor.as_deref() != Some(id.as_str()));
        if let (State::Verifying { .. } | State::Following { .. }, Some(id)) =
            (&closed, provisional)
        {
            // Primed, then closed: a poll (SEP-1699) that gave the client a
            // new cursor. Its `retry`, nothing counted.
            self.cursor = Some(id);
            self.primed = true;
            self.news();
            return self.schedule_after_progress();
        }
        if matches!(closed, State::Verifying { .. }) && was_held {
            // Held, then closed cleanly: a poll of a server with nothing new
            // (the TypeScript SDK's `closeSSEStream` on a resumed stream).
            self.held_quietly();
            return self.schedule_after_progress();
        }
        if let State::Verifying { mut verifier, .. } = closed {
            verifier.on_close();
            return match verifier.verdict() {
                // An acknowledged poll with nothing new: the server says the
                // call is alive and asks for time. Its `retry`, nothing counted.
                Verdict::Delayed => {
                    self.progress();
                    self.schedule_after_progress()
                }
                Verdict::ResumptionFailed(error @ ResumptionError::EmptyStream { .. }) => {
                    self.resume_brought_nothing(Attempt::Resumption(error))
                }
                Verdict::ResumptionFailed(error) => {
                    self.resume_failed(ResumeStreamError::Resumption(error))
                }
                Verdict::Resumed(_) | Verdict::SessionLost(_) => self.schedule_after_progress(),
            };
        }
        if let Ok(end) = self.unresumable(Attempt::Ended) {
            return Some(end);
        }
        // A stream that made progress may be closed by the server at will
        // (SEP-1699): honour its `retry` and count nothing.
        if self.failures == 0 {
            return self.schedule_after_progress();
        }
        self.schedule(Attempt::NoProgress)
    }

    fn schedule_after_progress(&mut self) -> Option<ResumeStreamError<C::Error>> {
        let asked = self.server_retry.filter(|retry| !retry.is_zero());
        match asked.or_else(|| self.policy_retry(0)) {
            Some(delay) => {
                // A run of quiet polls waits longer each time, and a close
                // that brought nothing at once is never followed at once.
                let delay = delay.max(self.quiet_wait());
                let delay = if delay.is_zero() && !self.may_follow_at_once() {
                    MIN_DELAY
                } else {
                    delay
                };
                // The server's `retry` is honoured up to the cap: a request
                // must not wait a day because a server said so.
                let delay = delay.min(self.max_delay());
                // Closing after progress is not a failure, but the next close
                // without progress is.
                self.failures = 1;
                self.state = State::Backoff(delay);
                None
            }
            // A request stream ends only with its response or an error.
            None if self.scope == StreamScope::Request => {
                self.state = State::Done;
                Some(ResumeStreamError::Exhausted {
                    attempts: 0,
                    cursor: self.cursor.clone(),
                    last: Box::new(Attempt::NoReconnect),
                })
            }
            None => {
                self.state = State::Done;
                None
            }
        }
    }

    /// Counts a failed attempt and schedules the next, or gives up.
    fn schedule(&mut self, last: Attempt<C::Error>) -> Option<ResumeStreamError<C::Error>> {
        if !matches!(last, Attempt::NothingNew) {
            self.failing_since.get_or_insert_with(Instant::now);
        }
        match self.policy_retry(self.failures) {
            Some(delay) => {
                self.failures += 1;
                let delay = self.server_retry.map_or(delay, |server| server.max(delay));
                let delay = if delay.is_zero() { MIN_DELAY } else { delay };
                self.state = State::Backoff(delay.min(self.max_delay()));
                None
            }
            None => {
                self.state = State::Done;
                Some(ResumeStreamError::Exhausted {
                    attempts: self.failures,
                    cursor: self.cursor.clone(),
                    last: Box::new(last),
                })
            }
        }
    }

    /// The connection broke, or the reconnect failed on the way. Neither is
    /// the server asking for time (its `retry` governs closes it chose), so
    /// the first attempt after a failure is immediate and later ones follow
    /// the policy's backoff. Every such failure with one cursor counts toward
    /// `max_transport_failures`.
    fn attempt_failed(&mut self, last: Attempt<C::Error>) -> Option<ResumeStreamError<C::Error>> {
        self.attempt_failed_after(last, None)
    }

    /// [`attempt_failed`](Self::attempt_failed), waiting at least `wait`
    /// (what a busy server asked for) before the next attempt.
    fn attempt_failed_after(
        &mut self,
        last: Attempt<C::Error>,
        wait: Option<Duration>,
    ) -> Option<ResumeStreamError<C::Error>> {
        self.state = State::Done;
        self.failing_since.get_or_insert_with(Instant::now);
        let last = match self.unresumable(last) {
            Ok(end) => return Some(end),
            Err(last) => last,
        };
        if self.cursor.is_some() {
            self.transport_failures += 1;
            if self.transport_failures >= self.config.max_transport_failures.max(1) {
                let error = ResumeStreamError::Exhausted {
                    attempts: self.transport_failures,
                    cursor: self.cursor.clone(),
                    last: Box::new(last),
                };
                return self.resume_failed(error);
            }
        }
        match self.policy_retry(self.failures) {
            Some(delay) => {
                // The first retry since progress is at once, unless the
                // connection that broke brought nothing in under a second
                // (copies, an instant break), or ended a quiet run.
                let at_once = !matches!(last, Attempt::Transport(_)) || self.may_follow_at_once();
                let delay = match self.failures {
                    0 if at_once => self.quiet_wait(),
                    0 => MIN_DELAY,
                    _ => delay,
                };
                let delay = wait.map_or(delay, |wait| wait.max(delay));
                // Only the first retry is at once: a policy's zero after it
                // would be a loop without pause.
                let delay = if delay.is_zero() && self.failures > 0 {
                    MIN_DELAY
                } else {
                    delay
                };
                self.failures += 1;
                self.state = State::Backoff(delay.min(self.max_delay()));
                None
            }
            None => Some(ResumeStreamError::Exhausted {
                attempts: self.failures,
                cursor: self.cursor.clone(),
                last: Box::new(last),
            }),
        }
    }

    /// A request stream that never carried an event id cannot be resumed: a
    /// `GET` without `Last-Event-ID` would open the standalone stream instead.
    /// Hands `last` back when the stream can be resumed.
    fn unresumable(
        &mut self,
        last: Attempt<C::Error>,
    ) -> Result<ResumeStreamError<C::Error>, Attempt<C::Error>> {
        if self.scope != StreamScope::Request || self.cursor.is_some() {
            return Err(last);
        }
        self.state = State::Done;
        Ok(ResumeStreamError::Exhausted {
            attempts: 0,
            cursor: None,
            last: Box::new(Attempt::NoCursor(Box::new(last))),
        })
    }

    /// A resume that cannot succeed: a request stream fails now; the
    /// standalone stream starts afresh and reports the discontinuity.
    fn resume_failed(
        &mut self,
        error: ResumeStreamError<C::Error>,
    ) -> Option<ResumeStreamError<C::Error>> {
        self.state = State::Done;
        match self.scope {
            StreamScope::Request => Some(error),
            StreamScope::Standalone if unreached(&error) => {
                // A server that could not be reached has not refused the
                // cursor: keep it, and keep trying within the policy.
                self.failures_with_cursor = 0;
                self.transport_failures = 0;
                self.schedule(error.into())
            }
            StreamScope::Standalone => {
                let gap = Discontinuity {
                    cursor: self.cursor.take(),
                    reason: error.to_string(),
                    lost: lost_of(&error),
                    stream: StreamScope::Standalone,
                };
                self.report(gap);
                self.failures_with_cursor = 0;
                self.transport_failures = 0;
                self.schedule(error.into())
            }
        }
    }
}

/// The events `error` names as lost, where the id scheme names them.
fn lost_of<E: std::error::Error + 'static>(
    error: &ResumeStreamError<E>,
) -> Option<crate::resumption::LostRange> {
    match error {
        ResumeStreamError::Resumption(e) => e.lost(),
        ResumeStreamError::Continuity(ContinuityError::Gap { lost, .. }) => Some(*lost),
        _ => None,
    }
}

/// Whether `error` ended a stream only because the server could not be
/// reached (or stayed silent), not because it refused the cursor.
fn unreached<E: std::error::Error + 'static>(error: &ResumeStreamError<E>) -> bool {
    matches!(
        error,
        ResumeStreamError::Exhausted { last, .. }
            if matches!(
                **last,
                Attempt::Connect(_)
                    | Attempt::ConnectTimeout(_)
                    | Attempt::Transport(_)
                    | Attempt::Silent(_)
            )
    )
}
