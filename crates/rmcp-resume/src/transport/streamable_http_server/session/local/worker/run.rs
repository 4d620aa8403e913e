//! The session worker's loop: one `select!` over the HTTP side, the
//! handler, readers making room, stalls, expiry and the shared log.

use std::time::Duration;

use tokio::time::Instant;

use super::super::compat::Command;
use super::super::{ForkSessionError, LocalSessionWorkerError, SessionError};
use super::LocalSessionWorker;
use super::alarm::{Alarm, after};
use crate::transport::worker::{Worker, WorkerConfig, WorkerContext, WorkerQuitReason};
use rmcp_resume_core::shared::Mirror;

impl Worker for LocalSessionWorker {
    type Error = LocalSessionWorkerError;
    type Role = crate::RoleServer;

    fn err_closed() -> Self::Error {
        LocalSessionWorkerError::TransportClosed
    }

    fn err_join(e: tokio::task::JoinError) -> Self::Error {
        LocalSessionWorkerError::TokioJoinError(e)
    }

    fn config(&self) -> WorkerConfig {
        let mut config = WorkerConfig::default();
        config.name = Some(format!("streamable-http-session-{}", self.id));
        config.channel_buffer_capacity = self.config.channel_capacity.max(1);
        config
    }

    async fn run(
        mut self,
        mut context: WorkerContext<Self>,
    ) -> Result<(), WorkerQuitReason<Self::Error>> {
        let init_timeout = self.replay.init_timeout.unwrap_or(Duration::MAX);
        let first = tokio::select! {
            event = self.event_rx.recv() => event.ok_or_else(|| WorkerQuitReason::fatal(
                LocalSessionWorkerError::TransportTerminated,
                "waiting for initialize",
            ))?,
            _ = context.cancellation_token.cancelled() => return Err(WorkerQuitReason::Cancelled),
            _ = tokio::time::sleep(init_timeout) => return Err(WorkerQuitReason::fatal(
                ForkSessionError::InitTimeout(init_timeout).into(),
                "waiting for initialize",
            )),
        };
        let Command::InitializeRequest { request, responder } = first else {
            return Err(WorkerQuitReason::fatal(
                super::super::compat::unexpected(first),
                "waiting for initialize",
            ));
        };
        context.send_to_handler(request).await?;
        let answer = context.recv_from_handler().await?;
        responder.send(Ok(answer.message)).map_err(|_| {
            WorkerQuitReason::fatal(
                LocalSessionWorkerError::FailToSendInitializeRequest(
                    SessionError::SessionServiceTerminated,
                ),
                "answering initialize",
            )
        })?;
        answer
            .responder
            .send(Ok(()))
            .map_err(|_| WorkerQuitReason::HandlerTerminated)?;

        let idle = self.config.keep_alive.unwrap_or(Duration::MAX);
        let ct = context.cancellation_token.clone();
        let lost = self.mirror.as_ref().map(Mirror::lost);
        let room = self.session.room().clone();
        let mut stall = Alarm::new();
        let mut expiry = Alarm::new();
        // The keep-alive is checked lazily: its alarm is set once per quiet
        // period, not at every turn, and when it rings the session quits only
        // if no turn happened since and no connection reads from it. The
        // worker's own deadlines are nobody's activity: an answered stream
        // expiring in a quiet session must not push its end out by the
        // stream's TTL (a reader still draining that stream is connected,
        // which the ring sees).
        let mut last_turn = Instant::now();
        let mut keep_alive = Alarm::new();
        keep_alive.set(Some(after(last_turn, idle)));
        loop {
            self.expire();
            let waiting = self.session.has_waiting();
            // Past the cap on waiting messages, the handler waits in rmcp's
            // channel until readers make room.
            let take = self.session.can_take();
            stall.set(self.session.stall_deadline());
            expiry.set(self.session.next_expiry());
            let turn = tokio::select! {
                event = self.event_rx.recv() => {
                    let Some(event) = event else {
                        return Err(WorkerQuitReason::fatal(
                            LocalSessionWorkerError::TransportTerminated,
                            "waiting for the next session event",
                        ));
                    };
                    if !self.on_http(event, &mut context).await? {
                        return Err(WorkerQuitReason::TransportClosed);
                    }
                    Turn::Active
                }
                sent = context.recv_from_handler(), if take => {
                    let sent = sent?;
                    self.deliver(sent.message, sent.responder).await;
                    Turn::Active
                }
                _ = room.made(), if waiting => {
                    let admitted = self.session.flush();
                    self.settle_all(admitted);
                    Turn::Active
                }
                _ = stall.ring(), if stall.is_armed() => {
                    let admitted = self.session.end_stalled(Instant::now());
                    self.settle_all(admitted);
                    Turn::Stall
                }
                // Answered streams expire on time, even in a quiet session.
                _ = expiry.ring(), if expiry.is_armed() => Turn::Timer,
                _ = ct.cancelled() => return Err(WorkerQuitReason::Cancelled),
                _ = async { match &lost {
                    Some(lost) => lost.cancelled().await,
                    None => std::future::pending().await,
                } } => return Err(WorkerQuitReason::fatal(
                    ForkSessionError::OwnershipLost.into(),
                    "writing the shared log",
                )),
                _ = keep_alive.ring(), if keep_alive.is_armed() => Turn::KeepAlive,
            };
            match turn {
                Turn::Active => last_turn = Instant::now(),
                Turn::Timer => {}
                // Every event handed to a reader arms the stall alarm; one
                // that rings after the reader read is nobody's activity.
                Turn::Stall => {}
                Turn::KeepAlive => {
                    // A client holding a connection open (its standalone
                    // `GET`, or a stream it still reads) is there: its
                    // session is not idle, however long nothing happens
                    // (upstream 0.x, with no keep-alive, never ended it
                    // either).
                    if self.session.has_connected_reader() {
                        last_turn = Instant::now();
                    }
                    let due = after(last_turn, idle);
                    if Instant::now() >= due {
                        return Err(crate::line::idle_quit(idle));
                    }
                    keep_alive.set(Some(due));
                }
            }
        }
    }
}

/// What ended one turn of the worker's loop.
enum Turn {
    /// The client, the handler or a reader did something.
    Active,
    /// One of the worker's own deadlines passed (not activity: see the
    /// keep-alive in the loop).
    Timer,
    /// The keep-alive's alarm rang: the session may have been idle.
    KeepAlive,
    /// The stall alarm rang: readers that owed an event too long were ended.
    Stall,
}
