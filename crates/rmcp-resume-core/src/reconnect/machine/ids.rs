//! Judging each frame and its id: copies, gaps, notices, priming frames.

use super::*;

/// What to do with one frame.
pub(super) enum Frame<E: std::error::Error + 'static> {
    /// Unboxed: every message of every stream takes this path.
    Pass(Sse),
    Skip,
    /// The frame shows the stream cannot be continued; it is delivered still
    /// if it is the request's response.
    Fail(ResumeStreamError<E>, Option<Box<Sse>>),
}

/// Whether a request's response has already come on this stream.
pub(super) fn draining_now(state: &State) -> bool {
    matches!(state, State::Draining { .. })
}

/// A frame's event id: borrowed from a frame that goes on, or owned when
/// the frame stops at the machine.
pub(super) enum Id<'a> {
    Shared(&'a str),
    Owned(String),
}

impl Id<'_> {
    pub(super) fn as_str(&self) -> &str {
        match self {
            Self::Shared(id) => id,
            Self::Owned(id) => id,
        }
    }

    pub(super) fn into_string(self) -> String {
        match self {
            Self::Shared(id) => id.to_owned(),
            Self::Owned(id) => id,
        }
    }
}

/// Whether `sse` carries a message (priming frames carry an id, a `retry`,
/// or nothing).
pub(super) fn carries_data(sse: &Sse) -> bool {
    sse.data.as_deref().is_some_and(|d| !d.is_empty())
}

impl<C: Connector, P: RetryPolicy> Machine<C, P> {
    /// An id as the rules allow it to be judged: as rmcp's counter once the
    /// server vouched for that, else as an opaque token.
    pub(super) fn judge(&self, id: &str) -> Option<EventCursor> {
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

    pub(super) fn on_frame(&mut self, mut sse: Sse) -> Frame<C::Error> {
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
            let data = sse.data.as_deref().unwrap_or_default();
            match self.on_id(id, carries_data, data) {
                Ok(true) if carries_data => {
                    self.provisional = None;
                    if !self.vouched
                        && let Some(id) = sse.id.as_deref()
                    {
                        self.delivered
                            .insert(id, sse.data.as_deref().unwrap_or_default());
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
        // An empty `id` (handled above) leaves the message without one.
        if sse.id.as_deref().is_none_or(str::is_empty) && carries_data {
            self.on_unnamed(sse.data.as_deref().unwrap_or_default());
        }
        Frame::Pass(sse)
    }

    /// A message without an id. On a standalone stream that holds no
    /// cursor it is progress when its data is new to the stream (a stream
    /// with nothing to resume from loses what the server sends while it is
    /// away, so it comes back at once after news, as after a new id). A
    /// repeat of recent data is delivered but is no progress: a server that
    /// sends one message and closes gets no loop. Elsewhere an unnamed
    /// message is never progress: a request stream without ids cannot be
    /// resumed, and one with a cursor judges ids.
    fn on_unnamed(&mut self, data: &str) {
        if self.scope != StreamScope::Standalone || self.cursor.is_some() {
            return;
        }
        if self.delivered.insert("", data) {
            self.news();
        }
    }

    pub(super) fn on_notice(&mut self, data: &str) -> Frame<C::Error> {
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
        if self.cursor.is_none() && self.scope == StreamScope::Standalone && !notice.complete {
            // A fresh standalone stream (no cursor sent) that the server
            // starts past events this client never got: the server says
            // where they stopped; the application hears of the loss.
            self.report(Discontinuity {
                cursor: Some(notice.cursor.to_string()),
                lost: None,
                reason: format!(
                    "the server's fresh standalone stream starts at {} past events this \
                     client never received (after {})",
                    notice
                        .floor
                        .as_ref()
                        .map_or_else(|| "its floor".to_owned(), ToString::to_string),
                    notice.cursor
                ),
                stream: StreamScope::Standalone,
            });
            return Frame::Skip;
        }
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
        if let Some(next) = notice.next.clone() {
            verifier.declare_next(next);
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

    pub(super) fn report(&mut self, gap: Discontinuity) {
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
    pub(super) fn go_on_after_gap(
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
    pub(super) fn on_id(
        &mut self,
        given: Id<'_>,
        carries_data: bool,
        data: &str,
    ) -> Result<bool, ResumeStreamError<C::Error>> {
        let id = given.as_str();
        // Upstream rmcp's standalone stream primes with id `0` and numbers
        // its first event `0` too: a message repeating an id only a priming
        // frame carried is new, not a copy.
        let unprimed = self.primed && carries_data && self.cursor.as_deref() == Some(id);
        // Opaque ids prove no order, but one this stream delivered is a
        // copy wherever it comes (a replay from the first event): dropped,
        // and no progress.
        if carries_data && !unprimed && !self.vouched && self.delivered.contains(id, data) {
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
}
