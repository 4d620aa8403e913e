//! Reading a stream live from Redis, on an instance that does not own the
//! session: replay from a position, then each event as any instance commits
//! it.

use std::collections::VecDeque;

use futures::Stream;
use redis::Value;
use rmcp_resume_core::resumption::{StreamId, StreamLookup};

use crate::connection::Connection;
use crate::error::RedisLogError;
use crate::lease::LeaseOutcome;
use crate::log::{SessionLog, StoredEvent};

/// Why a live tail ended early.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TailError {
    /// Events the reader had not read yet were trimmed from the stream.
    #[error("events from {from} on were trimmed; the floor is now {floor}")]
    Evicted {
        /// The next event the reader needed.
        from: u64,
        /// The stream's floor.
        floor: u64,
    },
    /// The session is gone from Redis.
    #[error("the session is gone")]
    SessionGone,
    /// The request stream is gone from Redis.
    #[error("the stream is gone")]
    StreamGone,
    /// The standalone stream's next event is the first of a segment a
    /// takeover began (its id jumps from `after` to `next`). The tail ends
    /// there rather than send the jump on a stream that promised none: the
    /// reader's resume from `after` is answered with a notice naming
    /// `next`.
    #[error("a new owner's segment follows event {after}, starting at {next}")]
    NewSegment {
        /// The last id before the segment.
        after: u64,
        /// The segment's first index.
        next: u64,
    },
    /// Redis failed.
    #[error(transparent)]
    Log(#[from] RedisLogError),
}

struct Tail {
    log: SessionLog,
    stream: StreamId,
    next: u64,
    takeover: Option<String>,
    ready: VecDeque<StoredEvent>,
    blocking: Option<Connection>,
    /// A hole found behind the events in `ready`: reported after them.
    broken: Option<TailError>,
    done: bool,
}

impl SessionLog {
    /// Every event of `stream` from index `from` on: what Redis holds, then
    /// each event as it is committed, until the stream is answered.
    ///
    /// Each wait for a new event lasts at most the configured `tail_poll`.
    /// When a wait ends with nothing new and `takeover` names this
    /// instance, the session's lease is looked at: if its owner is gone, the
    /// session is fenced ([`SessionLog::fence`]), which ends the owner's open
    /// request streams with the terminal error, and the tail reads that
    /// error next. The tail never holds the lease.
    ///
    /// The stream ends with an error item when an event the reader needs was
    /// trimmed, or when the session or stream is gone: never with a silent
    /// gap.
    pub fn tail(
        &self,
        stream: StreamId,
        from: u64,
        takeover: Option<String>,
    ) -> impl Stream<Item = Result<StoredEvent, TailError>> + Send + 'static {
        let state = Tail {
            log: self.clone(),
            stream,
            next: from,
            takeover,
            ready: VecDeque::new(),
            blocking: None,
            broken: None,
            done: false,
        };
        futures::stream::unfold(state, |mut tail| async move {
            let item = tail.next_event().await?;
            Some((item, tail))
        })
    }
}

impl Tail {
    /// The next item, or `None` when the stream has ended.
    async fn next_event(&mut self) -> Option<Result<StoredEvent, TailError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                self.next = event.index.saturating_add(1);
                return Some(Ok(event));
            }
            if let Some(error) = self.broken.take() {
                self.done = true;
                return Some(Err(error));
            }
            if self.done {
                return None;
            }
            match self.fill().await {
                Ok(true) => continue,
                Ok(false) => {}
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            }
            if self.done {
                return None;
            }
            if let Err(error) = self.wait().await {
                self.done = true;
                return Some(Err(error));
            }
        }
    }

    /// Reads what Redis holds from `next` on; `true` when it found events.
    async fn fill(&mut self) -> Result<bool, TailError> {
        let batch = self.log.log().config().read_batch;
        let snapshot = self.log.read(self.stream, self.next, batch).await?;
        let view = match snapshot.lookup {
            StreamLookup::SessionLost => return Err(TailError::SessionGone),
            StreamLookup::UnknownStream => return Err(TailError::StreamGone),
            StreamLookup::Found(view) => view,
        };
        if snapshot.resume_at > self.next {
            // The last id before a takeover's segment: nothing lies between,
            // but the reader was promised the ids one by one (a resume that
            // starts at a segment starts there, its notice naming the jump).
            // It hears of the jump on its next resume, from this id.
            return Err(TailError::NewSegment {
                after: self.next.saturating_sub(1),
                next: snapshot.resume_at,
            });
        }
        // Every event, not only the first: a hole inside a batch (Redis lost
        // data) ends the tail like a trim, never as a skip.
        let mut events = snapshot.events;
        let broken = events
            .iter()
            .zip(self.next..)
            .position(|(event, expected)| event.index != expected);
        if let Some(at) = broken {
            let from = self.next.saturating_add(at as u64);
            let floor = view.floor.max(events[at].index);
            events.truncate(at);
            // What came before the hole is sent; then the tail ends.
            self.broken = Some(TailError::Evicted { from, floor });
            self.ready.extend(events);
            return Ok(true);
        }
        if events.is_empty() && self.next < view.floor {
            return Err(TailError::Evicted {
                from: self.next,
                floor: view.floor,
            });
        }
        if events.is_empty() && self.next < view.head {
            // The stream claims events it does not hold (its data expired
            // before its state): what is missing is reported, never waited
            // for.
            return Err(TailError::Evicted {
                from: self.next,
                floor: view.head,
            });
        }
        let found = !events.is_empty();
        self.ready.extend(events);
        if !found && view.finished && self.next >= view.head {
            self.done = true;
        }
        Ok(found)
    }

    /// Waits for the stream to grow, at most one poll interval; then, if
    /// nothing came, looks at the lease.
    async fn wait(&mut self) -> Result<(), TailError> {
        let poll = self.log.log().config().tail_poll;
        if self.blocking.is_none() {
            self.blocking = Some(self.log.log().blocking_connection().await?);
        }
        let Some(conn) = self.blocking.as_mut() else {
            return Ok(());
        };
        let after = match self.next.checked_sub(1) {
            Some(last) => format!("{last}-1"),
            None => "0-0".to_owned(),
        };
        let grown: Value = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(1)
            .arg("BLOCK")
            .arg(crate::config::millis(poll))
            .arg("STREAMS")
            .arg(self.log.keys().stream(self.stream))
            .arg(after)
            .query_async(conn)
            .await
            .map_err(RedisLogError::from)?;
        if grown != Value::Nil {
            return Ok(());
        }
        // A reader runs no worker: it ends a dead owner's calls, so that its
        // client learns their fate, but never keeps the lease.
        if let Some(owner) = &self.takeover
            && let LeaseOutcome::Acquired { ended_streams, .. } = self.log.fence(owner).await?
        {
            tracing::info!(
                stream = ?self.stream,
                ended_streams,
                "fenced a session whose owner's lease expired"
            );
        }
        Ok(())
    }
}
