//! Reading the open stream: what a read waits for, and what it means.

use super::closing::lost_of;
use super::*;

/// What one read from the open stream gave.
pub(super) enum Read {
    Frame(Sse),
    Broke(sse_stream::Error),
    Closed,
    /// The read's wait ran out (the idle timeout, a resume's silence).
    Idle,
    /// The connection carried nothing for this long, past what its
    /// keep-alives allow: taken for dead.
    Dead(Duration),
}

impl Read {
    pub(super) fn of(next: Option<Result<Sse, sse_stream::Error>>) -> Self {
        match next {
            Some(Ok(sse)) => Self::Frame(sse),
            Some(Err(error)) => Self::Broke(error),
            None => Self::Closed,
        }
    }
}

/// What a read of the open stream waits for, fixed when the read starts.
#[derive(Clone, Copy)]
pub(super) struct ReadPlan {
    /// The configured idle timeout, where it applies.
    pub(super) idle: Option<Duration>,
    /// How long a silent resume is waited on.
    pub(super) silence: Duration,
    /// The read is of a resume that has said nothing yet.
    pub(super) silent: bool,
    /// When the read started: its wait runs from here.
    pub(super) since: Instant,
}

impl ReadPlan {
    /// When the read ends as [`Read::Idle`]: the idle timeout, and the
    /// silence if the resume is silent, whichever comes first.
    pub(super) fn wait(&self) -> Option<Duration> {
        match (self.idle, self.silent) {
            (Some(idle), true) => Some(idle.min(self.silence)),
            (None, true) => Some(self.silence),
            (idle, false) => idle,
        }
    }
}

/// Whether a broken stream holds input that cannot be decoded (not UTF-8):
/// the same bytes would break it again, so resuming cannot help.
///
/// The other syntax errors of the parser rmcp uses (an unknown field, a line
/// without `:`, a repeated field, a `retry` that is not a number) are input
/// the SSE spec says to ignore. That parser stops at them, so the stream is
/// resumed past them from its cursor, as a break in transit would be.
pub(super) fn is_undecodable(error: &sse_stream::Error) -> bool {
    matches!(error, sse_stream::Error::Utf8Parse(_))
}

impl<C: Connector, P: RetryPolicy> Machine<C, P> {
    /// What the next read of the open stream waits for.
    pub(super) fn plan_read(&self) -> ReadPlan {
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
            since: Instant::now(),
        }
    }

    /// When the read ends if nothing comes: its own wait, or the moment the
    /// connection is taken for dead, whichever is first.
    pub(super) fn read_deadline(&self, plan: ReadPlan) -> Option<Instant> {
        let wait = plan.wait().map(|wait| crate::log::later(plan.since, wait));
        match (wait, self.hearing.dead_at()) {
            (Some(wait), Some(dead)) => Some(wait.min(dead)),
            (wait, dead) => wait.or(dead),
        }
    }

    /// The open stream has nothing ready: hears what woke it (`woken`:
    /// bytes that made no frame, a keep-alive), and says whether the read's
    /// wait is over; `None` waits on.
    pub(super) fn waited(
        &mut self,
        plan: ReadPlan,
        woken: bool,
        cx: &mut Context<'_>,
    ) -> Option<Read> {
        if woken {
            self.hearing.keepalive(Instant::now());
        }
        let deadline = self.read_deadline(plan)?;
        if woken {
            // The connection lives: its deadline moves (or is first set,
            // once a cadence is known).
            self.arm_at(deadline);
        }
        // The timer is armed at `deadline`: at the read's start, and again
        // whenever a keep-alive moves it (nothing else does during a read).
        if !self.timer_fired(cx) {
            return None;
        }
        // Fired: at `deadline`, to the timer's granularity.
        let now = Instant::now().max(deadline);
        if self.hearing.dead_at().is_some_and(|dead| dead <= now) {
            return Some(Read::Dead(self.hearing.silence(now)));
        }
        Some(Read::Idle)
    }

    /// What one read of the open stream means for the stream.
    pub(super) fn on_read(&mut self, read: Read, plan: ReadPlan) -> Turn<C::Error> {
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
            Read::Dead(silence) => {
                // Blackholed: the server's keep-alives stopped, and nothing
                // else came. Dropped and resumed as a break would be; it was
                // not held, for a dead connection brings nothing.
                let keepalive = self.hearing.cadence().unwrap_or_default();
                tracing::debug!(parent: &self.span(), cursor = ?self.cursor, ?silence, ?keepalive, "SSE connection silent past its keep-alives; taken for dead");
                let dead = Attempt::Dead { silence, keepalive };
                if let Some(end) = self.attempt_failed(dead) {
                    return Turn::Yield(Err(end));
                }
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
}
