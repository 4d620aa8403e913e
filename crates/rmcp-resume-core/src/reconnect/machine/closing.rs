//! How a connection ends: a close, a resume that failed, a stream that
//! cannot be resumed.

use super::*;

/// The events `error` names as lost, where the id scheme names them.
pub(super) fn lost_of<E: std::error::Error + 'static>(
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
pub(super) fn unreached<E: std::error::Error + 'static>(error: &ResumeStreamError<E>) -> bool {
    matches!(
        error,
        ResumeStreamError::Exhausted { last, .. }
            if matches!(
                **last,
                Attempt::Connect(_)
                    | Attempt::ConnectTimeout(_)
                    | Attempt::Transport(_)
                    | Attempt::Dead { .. }
                    | Attempt::Silent(_)
            )
    )
}

impl<C: Connector, P: RetryPolicy> Machine<C, P> {
    /// The server ended the stream cleanly.
    pub(super) fn on_close(&mut self) -> Option<ResumeStreamError<C::Error>> {
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

    /// A resume the server answered (or accepted and left silent) without
    /// anything new: counted toward `max_failed_resumes`.
    pub(super) fn resume_brought_nothing(
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

    /// A request stream that never carried an event id cannot be resumed: a
    /// `GET` without `Last-Event-ID` would open the standalone stream instead.
    /// Hands `last` back when the stream can be resumed.
    pub(super) fn unresumable(
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
    pub(super) fn resume_failed(
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
