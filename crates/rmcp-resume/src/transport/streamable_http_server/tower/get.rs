//! The fork's `GET`: a fresh standalone stream, or a resume.

use std::any::Any;
use std::fmt::Display;

use bytes::Bytes;
use futures::StreamExt;
use http::{Method, Request, StatusCode};
use http_body::Body;
use http_body_util::Full;
use rmcp_resume_core::wire::notice_frame;

use super::StreamableHttpService;
use super::request::{accepts_event_stream, protocol_version, session_id};
use super::responses::{
    BoxResponse, cursor_error, frame, internal_error, malformed_cursor, not_found, plain, sse,
};
use super::stats::Counter;
use crate::line::EventStream;
use crate::transport::common::http_header::HEADER_LAST_EVENT_ID;
use crate::transport::resumption::plan::FALLBACK_REASON;
use crate::transport::resumption::{EventCursor, ReplayNotice, ResumeAnswer, plan};
use crate::transport::streamable_http_server::session::local::{
    EventId, LocalSessionManager, ReplaySessionManager, Resumption,
};
use crate::transport::streamable_http_server::session::{SessionId, SessionManager};

/// The fork's own session manager behind `M`, when it is one.
///
/// The service is generic over upstream's `SessionManager` trait, which has
/// no way to ask for a replay floor or a resume plan. With the in-process
/// manager the fork answers exactly; with any other it falls back to the
/// trait (see [`StreamableHttpService::resume_generic`]). This is the one
/// place the service looks behind the trait.
pub(super) fn local_manager<M: SessionManager>(manager: &M) -> Option<&LocalSessionManager> {
    let any = manager as &dyn Any;
    any.downcast_ref::<LocalSessionManager>().or_else(|| {
        any.downcast_ref::<ReplaySessionManager>()
            .map(ReplaySessionManager::local)
    })
}

/// The shared log sessions are kept in across instances, if the manager is
/// the in-process one and has one.
pub(super) fn shared_log<M: SessionManager>(
    manager: &M,
) -> Option<std::sync::Arc<dyn rmcp_resume_core::shared::SharedLog>> {
    let any = manager as &dyn Any;
    match any.downcast_ref::<ReplaySessionManager>() {
        Some(manager) => manager.shared_log(),
        None => local_manager(manager).and_then(LocalSessionManager::shared_log),
    }
}

impl<S: crate::fork::SessionService + Send + 'static, M: SessionManager>
    StreamableHttpService<S, M>
{
    /// Runs upstream's Host/Origin checks without running a handler: an
    /// `OPTIONS` request that passes them is answered 405 and nothing else.
    async fn dns_rebinding_check(&self, parts: &http::request::Parts) -> Option<BoxResponse> {
        let mut probe = Request::new(Full::new(Bytes::new()));
        *probe.method_mut() = Method::OPTIONS;
        *probe.uri_mut() = parts.uri.clone();
        *probe.headers_mut() = parts.headers.clone();
        let response = self.inner.handle(probe).await;
        (response.status() != StatusCode::METHOD_NOT_ALLOWED).then_some(response)
    }

    pub(super) async fn handle_get<B>(&self, request: Request<B>) -> BoxResponse
    where
        B: Body + Send + 'static,
        B::Error: Display,
    {
        let (parts, body) = request.into_parts();
        if let Some(rejected) = self.dns_rebinding_check(&parts).await {
            return rejected;
        }
        if !accepts_event_stream(&parts.headers) {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable: Client must accept text/event-stream",
            );
        }
        let version = match protocol_version(&parts.headers) {
            Ok(version) => version,
            Err(message) => return plain(StatusCode::BAD_REQUEST, &message),
        };
        let session = session_id(&parts.headers);
        let (Some(session), true) = (session, crate::line::has_initialize(&version)) else {
            // Stateless revisions, and the missing-session answer, are upstream's.
            return self.inner.handle(Request::from_parts(parts, body)).await;
        };
        let cursor = match parts.headers.get(HEADER_LAST_EVENT_ID) {
            None => None,
            Some(raw) => match EventCursor::from_bytes(raw.as_bytes()) {
                Ok(cursor) => Some(cursor),
                Err(error) => {
                    self.telemetry.count(Counter::Rejected);
                    return malformed_cursor(&error);
                }
            },
        };

        let present = match self.session_manager.has_session(&session).await {
            Ok(present) => present,
            Err(error) => return internal_error("check session", &error),
        };
        if !present {
            // With a shared log, a session run elsewhere is answered from it,
            // without restoring it here.
            if let Some(shared) = shared_log(self.session_manager.as_ref()) {
                return self.shared_get(shared, &session, cursor).await;
            }
            if crate::line::session_store(&self.config).is_none() {
                if cursor.is_some() {
                    self.telemetry.count(Counter::SessionLost);
                }
                return not_found();
            }
            // Restoring a session replays its handshake, which only upstream
            // can do; it does so for a plain GET, whose stream is discarded.
            let mut plain_get = Request::from_parts(parts.clone(), body);
            plain_get.headers_mut().remove(HEADER_LAST_EVENT_ID);
            let restored = self.inner.handle(plain_get).await;
            if cursor.is_none() || restored.status() != StatusCode::OK {
                if restored.status() == StatusCode::NOT_FOUND {
                    self.telemetry.count(Counter::SessionLost);
                }
                return restored;
            }
            drop(restored);
        }

        match (cursor, local_manager(self.session_manager.as_ref())) {
            (None, Some(local)) => self.fresh_local_stream(local, &session).await,
            (None, None) => {
                let request = Request::from_parts(parts, Full::new(Bytes::new()));
                self.inner.handle(request).await
            }
            (Some(cursor), Some(local)) => self.resume_local(local, &session, cursor).await,
            (Some(cursor), None) => self.resume_generic(&session, cursor).await,
        }
    }

    async fn fresh_local_stream(
        &self,
        local: &LocalSessionManager,
        session: &SessionId,
    ) -> BoxResponse {
        let Some(handle) = local.handle(session).await else {
            return not_found();
        };
        let opened = match handle.open_standalone_stream().await {
            Ok(opened) => opened,
            Err(error) => return internal_error("create standalone stream", &error),
        };
        let priming = match (self.config.sse_retry, opened.priming_event_id()) {
            (Some(retry), Some(id)) => Some(crate::line::priming(id, retry)),
            // A shadow's first event is unknown: prime the retry, not a cursor.
            (Some(retry), None) => Some(crate::line::retry_hint(retry)),
            (None, _) => None,
        };
        let skipped = opened.skipped().cloned();
        let frames = futures::stream::iter(priming)
            .chain(opened.stream)
            .map(frame);
        match skipped {
            // Events the client never got were evicted with no reader to
            // take them: it hears so first, as a resume below the floor does.
            Some(notice) => {
                self.telemetry.count(Counter::Fallback);
                let floor = notice.floor.as_ref().map(ToString::to_string);
                let first = notice_frame(&notice);
                self.sse(
                    futures::stream::once(async move { first }).chain(frames),
                    floor,
                )
            }
            None => self.sse(frames, None),
        }
    }

    async fn resume_local(
        &self,
        local: &LocalSessionManager,
        session: &SessionId,
        cursor: EventCursor,
    ) -> BoxResponse {
        let raw = cursor.to_string();
        let id = match (cursor.as_rmcp(), local.has_event_store()) {
            (Some(id), false) => id,
            // An event store assigns its own ids and answers from itself. Its
            // replay proves nothing about completeness and follows no rules
            // of rmcp's, so no notice vouches for it: the client judges it as
            // any other server's (strictly after the cursor, ids opaque).
            (_, true) => {
                return match local.resume_with_notice(session, &raw).await {
                    Ok(resumed) => {
                        self.telemetry.count(Counter::Replayed);
                        self.sse(resumed.stream.map(frame), None)
                    }
                    Err(error) => self.rejected(session, &raw, &error.to_string(), None),
                };
            }
            // A foreign id scheme: not an id this server ever gave out.
            (None, false) => {
                self.telemetry.count(Counter::Rejected);
                let why = raw.parse::<EventId>().err().map_or_else(
                    || "not an event id of this server".to_owned(),
                    |e| e.to_string(),
                );
                return cursor_error(
                    &format!("malformed Last-Event-ID {raw:?}: {why}"),
                    &raw,
                    None,
                );
            }
        };
        let resumption = match local.plan_resume(session, id).await {
            Ok(resumption) => resumption,
            Err(error) => return self.rejected(session, &raw, &error.to_string(), None),
        };
        // An owner that took the session over (a restore) holds only what it
        // wrote itself; the earlier owner's events are in the shared log,
        // which also follows everything this owner commits from now on.
        if let Some(shared) = shared_log(self.session_manager.as_ref()) {
            match self
                .shared_knows_more(&*shared, session, id, &resumption.answer)
                .await
            {
                Ok(true) => return self.shared_get(shared, session, Some(cursor)).await,
                Ok(false) => {}
                // The shared log may hold an earlier owner's events after
                // the cursor: a notice that they are lost (this owner's own
                // floor) could be false. A `503`, as on any instance that
                // cannot read the shared log.
                Err(error) => return super::shared::unavailable(&error),
            }
        }
        self.answer(session, resumption)
    }

    /// Whether the shared log answers a resume better than this instance's
    /// own logs did: a stream they do not know, a cursor below their floor,
    /// or a standalone cursor of an earlier owner's life that the shared log
    /// still replays exactly. `Err` when the shared log could not be read
    /// to tell the last.
    async fn shared_knows_more(
        &self,
        shared: &dyn rmcp_resume_core::shared::SharedLog,
        session: &SessionId,
        id: crate::transport::resumption::RmcpEventId,
        local: &ResumeAnswer,
    ) -> Result<bool, rmcp_resume_core::shared::SharedLogError> {
        match local {
            ResumeAnswer::UnknownStream | ResumeAnswer::BelowFloor { .. } => Ok(true),
            ResumeAnswer::Fallback { .. } => {
                // Read for the cursor, as `shared_get` does: the last id
                // before a takeover's segment goes on at the segment.
                let from = super::shared::read_from(id);
                let snapshot = shared.read(session, id.stream_id(), from, 1).await?;
                Ok(matches!(
                    plan(snapshot.lookup, id),
                    ResumeAnswer::Replay { .. }
                ))
            }
            _ => Ok(false),
        }
    }

    /// The HTTP answer, counter and log line for a planned resume: one
    /// `match` on the plan's answer.
    pub(super) fn answer(&self, session: &SessionId, resumption: Resumption) -> BoxResponse {
        let cursor = resumption.cursor;
        let raw = cursor.to_string();
        match resumption.answer {
            ResumeAnswer::Replay { .. } | ResumeAnswer::Fallback { .. } => {
                match resumption.into_stream() {
                    Some(resumed) => self.resumed(session, resumed.notice, resumed.stream),
                    None => internal_error("open the resumed stream", &"no stream"),
                }
            }
            ResumeAnswer::Complete => {
                // Nothing follows the cursor and nothing ever will: 204 is the
                // one answer that makes EventSource stop reconnecting.
                self.telemetry.count(Counter::Rejected);
                plain(StatusCode::NO_CONTENT, "")
            }
            answer @ ResumeAnswer::BelowFloor { floor } => {
                let floor = cursor.with_index(floor).to_string();
                self.rejected(session, &raw, answer.reason(), Some(&floor))
            }
            answer @ (ResumeAnswer::BeyondHead { .. } | ResumeAnswer::UnknownStream) => {
                self.rejected(session, &raw, answer.reason(), None)
            }
            ResumeAnswer::SessionLost => {
                self.telemetry.count(Counter::SessionLost);
                not_found()
            }
        }
    }

    /// A resume through upstream's `SessionManager` trait, which says nothing
    /// about floors: a failed standalone resume opens a fresh stream whose
    /// notice says the cursor was not honoured.
    async fn resume_generic(&self, session: &SessionId, cursor: EventCursor) -> BoxResponse {
        let raw = cursor.to_string();
        match self.session_manager.resume(session, raw.clone()).await {
            Ok(stream) => {
                self.telemetry.count(Counter::Replayed);
                self.sse(stream.map(frame), None)
            }
            Err(error) => {
                let standalone = cursor.as_rmcp().is_some_and(|id| id.stream.is_none());
                if !standalone {
                    return self.rejected(session, &raw, &error.to_string(), None);
                }
                match self.session_manager.create_standalone_stream(session).await {
                    Ok(stream) => {
                        let notice = ReplayNotice {
                            cursor,
                            floor: None,
                            complete: false,
                            next: None,
                        };
                        self.resumed(session, notice, Box::pin(stream))
                    }
                    Err(error) => internal_error("create standalone stream", &error),
                }
            }
        }
    }

    fn resumed(
        &self,
        session: &SessionId,
        notice: ReplayNotice,
        stream: EventStream,
    ) -> BoxResponse {
        let floor = notice.floor.as_ref().map(ToString::to_string);
        if notice.complete {
            self.telemetry.count(Counter::Replayed);
        } else {
            self.telemetry.count(Counter::Fallback);
            self.telemetry.resume_failed(
                session,
                &notice.cursor.to_string(),
                FALLBACK_REASON,
                floor.as_deref(),
            );
        }
        let first = notice_frame(&notice);
        let frames = futures::stream::once(async move { first }).chain(stream.map(frame));
        self.sse(frames, floor)
    }

    fn rejected(
        &self,
        session: &SessionId,
        cursor: &str,
        reason: &str,
        floor: Option<&str>,
    ) -> BoxResponse {
        self.telemetry.count(Counter::Rejected);
        self.telemetry.resume_failed(session, cursor, reason, floor);
        let message = match floor {
            Some(floor) => format!(
                "cannot resume from Last-Event-ID {cursor:?}: {reason} (replay floor {floor})"
            ),
            None => format!("cannot resume from Last-Event-ID {cursor:?}: {reason}"),
        };
        cursor_error(&message, cursor, floor)
    }

    pub(super) fn sse(
        &self,
        frames: impl futures::Stream<Item = sse_stream::Sse> + Send + Sync + 'static,
        floor: Option<String>,
    ) -> BoxResponse {
        sse(
            frames,
            &self.config.cancellation_token,
            self.config.sse_keep_alive,
            floor,
        )
    }
}
