//! Sending the reconnect, and what its answer means.

use super::*;

impl<C: Connector, P: RetryPolicy> Machine<C, P> {
    /// Sends the reconnect, cut off after the connect timeout (or what is
    /// left of the deadline).
    pub(super) fn connect_now(&mut self) {
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
    pub(super) fn connected(
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
            (ReconnectDisposition::Conflict, _) => self.conflict(error),
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
}
