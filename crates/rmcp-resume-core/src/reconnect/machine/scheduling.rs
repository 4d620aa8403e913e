//! What counts as progress, and when the next attempt is made.

use super::*;

impl<C: Connector, P: RetryPolicy> Machine<C, P> {
    /// Whether the open resume was held by the server: open for
    /// [`ResumeConfig::silent_resume_timeout`] (at most [`HOLD`]) with nothing wrong, having
    /// acknowledged the cursor if it vouched for rmcp's rules (and so
    /// promised to).
    /// Any other open connection (a fresh standalone stream, a proven one)
    /// was held if it lived that long: a long-lived stream that ends is
    /// reconnected at once, with or without a cursor.
    pub(super) fn held(&self) -> bool {
        let kept_promise = match &self.state {
            State::Verifying { heard, .. } => *heard == Heard::Acknowledged || !self.vouched,
            State::Following { .. } | State::Draining { .. } => true,
            State::Backoff(_) | State::GiveUp | State::Done => false,
        };
        let hold = self.config.silent_resume_timeout.clamp(MIN_DELAY, HOLD);
        kept_promise && self.connected_at.elapsed() >= hold
    }

    /// [`ResumeConfig::max_delay`], no less than [`MIN_DELAY`].
    pub(super) fn max_delay(&self) -> Duration {
        self.config.max_delay.max(MIN_DELAY)
    }

    pub(super) fn progress(&mut self) {
        self.failures = 0;
        self.quick_retries = 0;
        self.failures_with_cursor = 0;
        self.transport_failures = 0;
        self.failing_since = None;
        self.conflict_since = None;
        self.conflicts = 0;
    }

    /// Something new came (an event not delivered before, the response):
    /// progress, and the end of a quiet run.
    pub(super) fn news(&mut self) {
        self.progress();
        self.news = true;
        self.quiet = 0;
    }

    /// The server held the open connection and it ended (or was refreshed):
    /// progress for every count, but a resume that ends on the cursor it
    /// began with brought nothing, and lengthens the quiet run.
    pub(super) fn held_quietly(&mut self) {
        self.progress();
        if self.resumed && !self.news {
            self.quiet = self.quiet.saturating_add(1);
        }
    }

    /// Whether the connection that just ended may be followed at once: it
    /// lived a second, or brought something new. Anything else (copies, an
    /// instant break) waits, so that no server can make a loop without
    /// pause.
    pub(super) fn may_follow_at_once(&self) -> bool {
        self.news || self.connected_at.elapsed() >= MIN_DELAY
    }

    /// What is left of the quiet run's spacing (see [`super::quiet`]),
    /// counted from when the connection that ended was asked for: a run of
    /// long-lived connections goes on at once, short ones wait.
    pub(super) fn quiet_wait(&self) -> Duration {
        quiet_delay(self.quiet, self.max_delay()).saturating_sub(self.connected_at.elapsed())
    }

    /// The retry policy's delay for `count`, with the count capped (see
    /// [`MAX_POLICY_COUNT`](super::connector::MAX_POLICY_COUNT)).
    pub(super) fn policy_retry(&self, count: usize) -> Option<Duration> {
        self.policy.retry(count.min(MAX_POLICY_COUNT))
    }

    /// A request stream that has failed to resume for longer than
    /// [`ResumeConfig::resume_deadline`] (counting the coming `delay`)
    /// fails now rather than after it.
    pub(super) fn past_deadline(&mut self, delay: Duration) -> Option<ResumeStreamError<C::Error>> {
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
    pub(super) fn remaining(&self) -> Option<Duration> {
        if self.scope != StreamScope::Request {
            return None;
        }
        let end = self.failing_since? + self.config.resume_deadline;
        Some(end.saturating_duration_since(Instant::now()))
    }

    pub(super) fn schedule_after_progress(&mut self) -> Option<ResumeStreamError<C::Error>> {
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
    pub(super) fn schedule(
        &mut self,
        last: Attempt<C::Error>,
    ) -> Option<ResumeStreamError<C::Error>> {
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
    pub(super) fn attempt_failed(
        &mut self,
        last: Attempt<C::Error>,
    ) -> Option<ResumeStreamError<C::Error>> {
        self.attempt_failed_after(last, None)
    }

    /// [`attempt_failed`](Self::attempt_failed), waiting at least `wait`
    /// (what a busy server asked for) before the next attempt.
    pub(super) fn attempt_failed_after(
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
                // Nothing to resume from: what the server sends while this
                // stream is away is lost to it for good (see
                // `CURSORLESS_RETRY`), so its first breaks wait little.
                let quick = self.cursor.is_none()
                    && self.scope == StreamScope::Standalone
                    && matches!(last, Attempt::Transport(_))
                    && self.quick_retries < CURSORLESS_BUDGET;
                let delay = match self.failures {
                    0 if at_once => self.quiet_wait(),
                    _ if quick => {
                        self.quick_retries += 1;
                        CURSORLESS_RETRY
                    }
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

    /// The server answered `409`: it still counts the stream's previous
    /// connection as open (see `conflict.rs`). That ends by
    /// time, so it is not counted toward `max_transport_failures`: the
    /// first failure since progress is retried at once, as any is, and
    /// each `409` after it waits 1 s, 2 s, 4 s, … up to the cap; the first
    /// `409` answered [`ResumeConfig::conflict_wait`] or more after the
    /// first gives up, as failures in transit running out do. The retry
    /// policy's `max_times` and a request stream's deadline still apply.
    pub(super) fn conflict(&mut self, error: C::Error) -> Option<ResumeStreamError<C::Error>> {
        self.state = State::Done;
        self.failing_since.get_or_insert_with(Instant::now);
        let asked = self.connector.retry_after(&error);
        let since = *self.conflict_since.get_or_insert_with(Instant::now);
        let last = match self.unresumable(Attempt::Connect(error)) {
            Ok(end) => return Some(end),
            Err(last) => last,
        };
        let waited = since.elapsed();
        if waited >= self.config.conflict_wait {
            tracing::debug!(parent: &self.span(), cursor = ?self.cursor, ?waited, "the server still counts the previous connection as open; giving up");
            let error = ResumeStreamError::Exhausted {
                attempts: self.failures.saturating_add(1),
                cursor: self.cursor.clone(),
                last: Box::new(last),
            };
            return self.resume_failed(error);
        }
        if self.policy_retry(self.failures).is_none() {
            return Some(ResumeStreamError::Exhausted {
                attempts: self.failures,
                cursor: self.cursor.clone(),
                last: Box::new(last),
            });
        }
        let delay = if self.failures == 0 {
            self.quiet_wait()
        } else {
            let delay = conflict_delay(self.conflicts, self.max_delay());
            self.conflicts = self.conflicts.saturating_add(1);
            delay
        };
        // A server's `Retry-After` may ask for longer, up to the cap.
        let delay = asked.map_or(delay, |asked| asked.max(delay));
        self.failures += 1;
        self.state = State::Backoff(delay.min(self.max_delay()));
        None
    }
}
