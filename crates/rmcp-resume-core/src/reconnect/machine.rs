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
//! # Files
//!
//! This file holds the states and the loop that drives them; each concern
//! the loop calls on has a file of its own under `machine/`: `reading`
//! (what a read waits for and means), `ids` (judging each frame and id),
//! `connecting` (the reconnect and its answer), `closing` (how a connection
//! ends) and `scheduling` (progress, and when the next attempt is made).
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
//! server held. On a standalone stream with no cursor, a message without an
//! id is new when its data is not among the latest delivered (it is
//! delivered either way: nothing tells a copy from a notification sent
//! twice). A held connection that ends on the cursor it began with
//! resets every count, but lengthens the quiet run, which spaces the next
//! `GET`s. No connection is followed at once unless it lived a second or
//! brought something new; a broken one that did neither waits 1 s, except
//! a standalone stream with no cursor, which waits 200 ms for its first 8
//! such breaks since progress (see `CURSORLESS_RETRY`).
//!
//! # Conflicts
//!
//! A `409` says the server still counts the stream's previous connection
//! as open. It is no failure in transit and is not counted: it is waited
//! out for [`ResumeConfig::conflict_wait`], the `GET`s spaced ever wider
//! (see [`super::conflict`]).
//!
//! # Liveness
//!
//! Bytes that make no frame (a keep-alive comment) are heard, never taken
//! for progress. A connection that stops sending them is taken for dead
//! and resumed, as after a break (see [`super::liveness`]).

use std::future::Future;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use futures::future::BoxFuture;
use http::StatusCode;
use sse_stream::Sse;

use super::conflict::conflict_delay;
use super::connector::MAX_POLICY_COUNT;
use super::delivered::Delivered;
use super::liveness::{Ear, Hearing};
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

mod closing;
mod connecting;
mod ids;
mod reading;
mod scheduling;

use ids::{Frame, carries_data};
use reading::{Read, ReadPlan};

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
    /// When the first `409` since the last progress was answered: the
    /// [`ResumeConfig::conflict_wait`] runs from here (see
    /// [`super::conflict`]).
    conflict_since: Option<Instant>,
    /// The `409`s since the last progress that were followed by a wait:
    /// the next wait doubles with each.
    conflicts: u32,
    /// Breaks of a cursor-less standalone stream retried after
    /// [`CURSORLESS_RETRY`] since the last progress (at most
    /// [`CURSORLESS_BUDGET`]).
    quick_retries: u32,
    /// The latest ids delivered on the stream, while the server has not
    /// vouched for rmcp's rules: a copy of one is dropped, and is no
    /// progress.
    delivered: Delivered,
    /// The wait under way.
    step: Step<C::Error>,
    /// The one timer the waits share (a read's deadline, a backoff, a
    /// connect's limit); made at the first timed wait.
    timer: Option<Pin<Box<Sleep>>>,
    /// Polls the open connection so that bytes which make no frame are
    /// heard; made at its first read that finds nothing ready.
    ear: Option<Ear>,
    /// What the open connection and the ones before it have carried: when
    /// the open one is taken for dead.
    hearing: Hearing,
}

/// At most one WARN per stream in this long for losses a server reports.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The shortest wait the machine makes where it waits at all: a zero
/// timeout or cap in the config must not become a loop without pause.
const MIN_DELAY: Duration = Duration::from_secs(1);

/// How long a standalone stream that holds no cursor waits after its
/// connection broke with nothing new, for its first [`CURSORLESS_BUDGET`]
/// breaks since the last progress: what the server sends while such a
/// stream is away is lost to it for good (there is nothing to resume from),
/// so it waits less than [`MIN_DELAY`] and the policy's backoff would make
/// it. Upstream's client reconnects such a stream at once; issue 42 forbids
/// a reconnect at no delay after a connection that brought nothing new and
/// lived under a second, so this is the shortest pause the fork makes.
/// Each such break still counts toward the policy's `max_times`.
const CURSORLESS_RETRY: Duration = Duration::from_millis(200);

/// How many breaks in a row without progress a cursor-less standalone
/// stream retries after [`CURSORLESS_RETRY`]; later ones wait the policy's
/// delay, so a server that breaks every such stream gets at most this many
/// quick `GET`s between two signs of progress.
const CURSORLESS_BUDGET: u32 = 8;

/// The longest a resume must be held open to count as progress, whatever
/// the silence timeout: a connection lifetime of a minute must count.
const HOLD: Duration = Duration::from_secs(5);

/// What one turn of the machine gives its stream.
enum Turn<E: std::error::Error + 'static> {
    /// Nothing yet: take the next turn.
    Go,
    /// An item for the stream.
    Yield(Item<E>),
    /// The stream has ended.
    End,
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
            conflict_since: None,
            conflicts: 0,
            quick_retries: 0,
            delivered,
            step: Step::Ready,
            timer: None,
            ear: None,
            hearing: Hearing::new(Instant::now()),
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
                    let (next, woken) = Ear::poll(&mut self.ear, frames, cx);
                    let read = match next {
                        Poll::Ready(next) => {
                            self.hearing.frame(Instant::now());
                            Read::of(next)
                        }
                        Poll::Pending => match self.waited(plan, woken, cx) {
                            Some(read) => read,
                            None => return Poll::Pending,
                        },
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
                    let ended = self.connected(outcome, cursor, asked_at, limit);
                    if let State::Verifying { .. } | State::Following { .. } = self.state {
                        // A new connection: nothing heard on it yet, and
                        // its own ear (made when it first has nothing ready).
                        self.hearing.connected(Instant::now());
                        self.ear = None;
                    }
                    if let Some(end) = ended {
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
                if let Some(deadline) = self.read_deadline(plan) {
                    self.arm_at(deadline);
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
        self.arm_at(crate::log::later(Instant::now(), after));
    }

    /// Sets the timer to fire at `deadline`.
    fn arm_at(&mut self, deadline: Instant) {
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
}
