//! `GET` on an instance that does not run the session: answered from the
//! shared log with the same [`plan`] as in-process, then live from it.

use std::sync::Arc;

use futures::StreamExt;
use rmcp_resume_core::shared::{Ownership, SharedEvent, SharedLog, SharedLogError};

use super::StreamableHttpService;
use super::responses::{BoxResponse, cursor_error, frame, not_found};
use super::stats::Counter;
use crate::line::EventStream;
use crate::model::ServerJsonRpcMessage;
use crate::transport::resumption::{EventCursor, ResumeAnswer, StreamId, StreamLookup, plan};
use crate::transport::streamable_http_server::session::local::Resumption;
use crate::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

/// The shared log's events of `stream` from `from` on, as rmcp's SSE
/// messages with the ids the owner gave them. The stream ends, rather than
/// skip, when an event it needs was trimmed or the session is gone: the
/// client's next resume is then refused or noticed, never silently short.
fn remote_events(
    shared: &Arc<dyn SharedLog>,
    session: &SessionId,
    stream: StreamId,
    from: u64,
) -> EventStream {
    let session_id = session.clone();
    use rmcp_resume_core::sabotage::{Break, on};
    let skips =
        on(Break::ReplaySkips) || (stream == StreamId::Standalone && on(Break::StandaloneSkips));
    let from = if skips { from + 1 } else { from };
    let mut tail = shared.tail(session, stream, from);
    // A backend's tail need not be `Sync`, which rmcp's event stream must
    // be: a task drives it into a channel. The task ends as soon as the
    // reader goes, even on a quiet stream, and drops the tail (and its
    // backend connection) with it.
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        loop {
            let item = tokio::select! {
                item = tail.next() => item,
                () = tx.closed() => break,
            };
            let Some(item) = item else { break };
            if tx.send(item).await.is_err() {
                break;
            }
        }
    });
    let items = futures::stream::unfold(rx, |mut rx| async move {
        let item = rx.recv().await?;
        Some((item, rx))
    });
    Box::pin(
        items
            .take_while(move |item| {
                if let Err(error) = item {
                    tracing::debug!(session_id = %session_id, ?stream, %error, "remote tail ended");
                }
                std::future::ready(item.is_ok())
            })
            .filter_map(move |item| std::future::ready(item.ok().and_then(|e| message(stream, e)))),
    )
}

/// One stored event as an SSE message; `None` (and a debug line) for data
/// that is not a server message, which only a foreign writer could store.
fn message(stream: StreamId, event: SharedEvent) -> Option<ServerSseMessage> {
    let id = stream.event(event.index).encode();
    match event.data {
        Some(data) => match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
            Ok(message) => Some(crate::line::sse_event(id, message)),
            Err(error) => {
                tracing::debug!(%error, "shared log event is not a server message");
                None
            }
        },
        // A frame without data (a priming or retry frame) keeps its id, so
        // the client's cursor moves exactly as it did on the owner.
        None => {
            let mut frame = crate::line::retry_hint(std::time::Duration::ZERO);
            frame.retry = None;
            frame.event_id = Some(id);
            Some(frame)
        }
    }
}

impl<S: crate::fork::SessionService + Send + 'static, M: SessionManager>
    StreamableHttpService<S, M>
{
    /// A `POST` for a session another live instance owns: `503`, naming the
    /// cause, rather than upstream's `500` from a restore that cannot take
    /// the session; also `503` (with `Retry-After`) when this instance runs
    /// it but its lease ran out. `None` lets the request through.
    pub(super) async fn owned_elsewhere(&self, session: SessionId) -> Option<BoxResponse> {
        let local = super::get::local_manager(self.session_manager.as_ref())?;
        let shared = super::get::shared_log(self.session_manager.as_ref())?;
        if let Some(handle) = local.handle(&session).await
            && handle.gave_up()
        {
            // Its worker is stopping: once it has, the request is answered
            // as for any session this instance does not run (a `404` for a
            // deleted one, a takeover of a free one), never upstream's `500`
            // from a worker that went in between.
            let _ = tokio::time::timeout(STOPPING, handle.stopped()).await;
        }
        if let Some(handle) = local.handle(&session).await {
            // Past its lease by its own clock, this instance may have a
            // successor it has not heard of: the call is not run here.
            return (!handle.may_admit()).then(|| {
                super::post::unavailable(
                    shared.renew_every(),
                    &format!(
                        "Service Unavailable: this instance's lease on session {session} ran \
                         out before it could be renewed; the call was not run"
                    ),
                )
            });
        }
        match shared.acquire(&session, false).await {
            Ok(Ownership::HeldElsewhere) => Some(super::responses::plain(
                http::StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "Service Unavailable: session {session} is run by another instance; \
                     route its POSTs there (session affinity)"
                ),
            )),
            _ => None,
        }
    }

    /// A `GET` for a session this instance does not run, answered from the
    /// shared log: a fresh standalone stream from its head, or a resume.
    pub(super) async fn shared_get(
        &self,
        shared: Arc<dyn SharedLog>,
        session: &SessionId,
        cursor: Option<EventCursor>,
    ) -> BoxResponse {
        let Some(cursor) = cursor else {
            return self.shared_fresh(shared, session).await;
        };
        let raw = cursor.to_string();
        let Some(id) = cursor.as_rmcp() else {
            self.telemetry.count(Counter::Rejected);
            let message =
                format!("malformed Last-Event-ID {raw:?}: not an event id of this server");
            return cursor_error(&message, &raw, None);
        };
        let stream = id.stream_id();
        let snapshot = match shared.read(session, stream, read_from(id), 1).await {
            Ok(snapshot) => snapshot,
            Err(error) => return unavailable(&error),
        };
        let answer = falsely_floored(across_segments(
            plan(snapshot.lookup, id),
            snapshot.resume_at,
        ));
        let events = answer
            .start()
            .map(|from| remote_events(&shared, session, stream, from));
        let resumption = Resumption {
            cursor: id,
            answer,
            stream: events,
        };
        self.answer(session, resumption)
    }

    async fn shared_fresh(&self, shared: Arc<dyn SharedLog>, session: &SessionId) -> BoxResponse {
        let standalone = StreamId::Standalone;
        let head = match shared.read(session, standalone, u64::MAX, 1).await {
            Ok(snapshot) => match snapshot.lookup {
                StreamLookup::Found(view) => view.head,
                StreamLookup::SessionLost | StreamLookup::UnknownStream => {
                    self.telemetry.count(Counter::SessionLost);
                    return not_found();
                }
            },
            Err(error) => return unavailable(&error),
        };
        let priming = self.config.sse_retry.map(|retry| {
            crate::line::priming(standalone.event(head.saturating_sub(1)).to_string(), retry)
        });
        let events = remote_events(&shared, session, standalone, head);
        let frames = futures::stream::iter(priming).chain(events).map(frame);
        self.sse(frames, None)
    }
}

/// Where a resume reads its stream's state from: on the standalone stream
/// the cursor's successor, so that the backend says whether the cursor is
/// the last id before a takeover's segment (the events go on at the
/// segment's start) or an id of an owner whose writes it lost (the floor is
/// above it); a request stream's state is read as a whole.
pub(super) fn read_from(id: crate::transport::resumption::RmcpEventId) -> u64 {
    match id.stream_id() {
        StreamId::Standalone => id.index.saturating_add(1),
        StreamId::Request(_) => 0,
    }
}

/// `answer`, a replay that goes on at `resume_at` when the backend says the
/// cursor is the last id before a takeover's segment: its notice then names
/// the jump (`next`), which is no loss.
fn across_segments(answer: ResumeAnswer, resume_at: u64) -> ResumeAnswer {
    match answer {
        ResumeAnswer::Replay { from, floor } if resume_at > from => {
            tracing::debug!(from, resume_at, "resume goes on at a new owner's segment");
            ResumeAnswer::Replay {
                from: resume_at,
                floor,
            }
        }
        other => other,
    }
}

/// `answer`, or under the `false-floor` break (see
/// `rmcp_resume_core::sabotage`) a standalone replay turned into a claimed
/// loss one past its first event, which the log does not back.
fn falsely_floored(answer: ResumeAnswer) -> ResumeAnswer {
    use rmcp_resume_core::sabotage::{Break, on};
    match answer {
        ResumeAnswer::Replay { from, .. } if on(Break::FalseFloor) => ResumeAnswer::Fallback {
            from,
            floor: from.saturating_add(1),
        },
        other => other,
    }
}

/// How long a `POST` waits for a worker that gave its session up to stop.
const STOPPING: std::time::Duration = std::time::Duration::from_secs(1);

/// The shared log could not be read: a clear `503`, never an empty `200`.
pub(super) fn unavailable(error: &SharedLogError) -> BoxResponse {
    match error {
        SharedLogError::Gone => not_found(),
        other => {
            tracing::debug!(error = %other, "shared log unavailable");
            super::responses::plain(
                http::StatusCode::SERVICE_UNAVAILABLE,
                &format!("Service Unavailable: the shared replay log cannot be read: {other}"),
            )
        }
    }
}
