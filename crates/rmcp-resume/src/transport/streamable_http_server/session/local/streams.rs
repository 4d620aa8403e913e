//! What opening or resuming one of a session's streams hands back.

use super::HttpRequestId;
use crate::line::EventStream;
use crate::transport::resumption::{ReplayNotice, ResumeAnswer, RmcpEventId};

/// A new connection to one of a session's streams, read straight from the
/// stream's log (fork-only; upstream's `Receiver`-based API adds a task per
/// stream).
#[non_exhaustive]
pub struct OpenedStream {
    /// The request stream, or `None` for the standalone stream.
    pub http_request_id: Option<HttpRequestId>,
    /// The events.
    pub stream: EventStream,
    /// Index of the first event this connection will carry, when it is a
    /// primary; `None` for a keep-alive-only shadow.
    pub(super) start: Option<u64>,
    /// For a fresh standalone primary that starts past where the client's
    /// last one stopped (the events in between were evicted with no reader
    /// to take them): what its first frame must tell the client.
    pub(super) skipped: Option<ReplayNotice>,
}

impl OpenedStream {
    /// What the client must be told before this connection's first event:
    /// `Some` when a fresh standalone stream starts past events the client
    /// never got (`complete: false`, where its events stopped, the floor).
    pub fn skipped(&self) -> Option<&ReplayNotice> {
        self.skipped.as_ref()
    }

    /// The id of the event just before the first one this connection will
    /// carry: the honest priming id for a fresh standalone connection.
    /// `None` for a shadow, whose first event is not known yet.
    pub fn priming_event_id(&self) -> Option<String> {
        let before = self.start?.checked_sub(1)?;
        let id = RmcpEventId {
            index: before,
            stream: self.http_request_id,
        };
        Some(id.encode())
    }
}

impl std::fmt::Debug for OpenedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedStream")
            .field("http_request_id", &self.http_request_id)
            .field("start", &self.start)
            .field("skipped", &self.skipped)
            .finish_non_exhaustive()
    }
}

/// A resumed stream and what the server can say about its continuity.
#[non_exhaustive]
pub struct ResumedStream {
    /// What the first frame of the response declares.
    pub notice: ReplayNotice,
    /// The events, replayed then live.
    pub stream: EventStream,
}

impl std::fmt::Debug for ResumedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumedStream")
            .field("notice", &self.notice)
            .finish_non_exhaustive()
    }
}

/// How a session answered a resume (fork-only): the
/// [`plan`](crate::transport::resumption::plan())'s answer, and the stream when
/// the answer carries one.
#[non_exhaustive]
pub struct Resumption {
    /// The cursor that was asked for.
    pub cursor: RmcpEventId,
    /// What the resume gets.
    pub answer: ResumeAnswer,
    /// The events (replayed, then live) when the answer is a stream.
    pub stream: Option<EventStream>,
}

impl Resumption {
    /// An answer without a stream.
    pub fn refused(cursor: RmcpEventId, answer: ResumeAnswer) -> Self {
        Self {
            cursor,
            answer,
            stream: None,
        }
    }

    /// The stream and its notice, when the answer carries them.
    pub fn into_stream(self) -> Option<ResumedStream> {
        let notice = self.answer.notice(self.cursor)?;
        Some(ResumedStream {
            notice,
            stream: self.stream?,
        })
    }
}

impl std::fmt::Debug for Resumption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumption")
            .field("cursor", &self.cursor)
            .field("answer", &self.answer)
            .field("stream", &self.stream.is_some())
            .finish()
    }
}
