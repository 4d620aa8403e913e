//! [`Recorded`]: a client transport that notes every progress notification
//! (and every `tick://N` resource update) in the order the client's
//! transport hands it over, before rmcp's service
//! dispatches it. A [`ClientHandler`](rmcp::ClientHandler) cannot tell that
//! order (each notification's handler runs in a task of its own, see
//! [`ProgressRecorder`](crate::progress::ProgressRecorder)); this can, and
//! so tells duplicates and reordering apart from lateness. It wraps the
//! fork's transport and upstream's alike.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, NumberOrString, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::Notify;

/// Every progress notification received, as `(token, value, when)` in
/// arrival order, duplicates included.
///
/// rmcp's client puts a token of its own on every request (whatever the
/// caller's `_meta` says), so a caller finds its call's values by when they
/// came: [`mark`](Self::mark) before the call, [`since`](Self::since) after.
#[derive(Clone, Debug, Default)]
pub struct WireLog {
    seen: Arc<Mutex<Vec<(String, f64, Instant)>>>,
    /// The numbers of the `tick://N` resource updates (the `tick` tool's,
    /// on the standalone stream), in arrival order, duplicates included.
    ticks: Arc<Mutex<Vec<u32>>>,
    noted: Arc<Notify>,
}

impl WireLog {
    /// Where the log stands now.
    pub fn mark(&self) -> usize {
        self.lock().len()
    }

    /// The values that arrived after `mark`, of the tokens first seen after
    /// it (a late value of an earlier call's token is left out), in arrival
    /// order.
    pub fn since(&self, mark: usize) -> Vec<(f64, Instant)> {
        let seen = self.lock();
        let (before, after) = seen.split_at(mark.min(seen.len()));
        after
            .iter()
            .filter(|(token, ..)| !before.iter().any(|(earlier, ..)| earlier == token))
            .map(|(_, value, when)| (*value, *when))
            .collect()
    }

    /// Waits until [`since`](Self::since)`(mark)` holds `count` values, or
    /// `limit` passes; returns them.
    pub async fn until(&self, mark: usize, count: usize, limit: Duration) -> Vec<(f64, Instant)> {
        let waiting = async {
            loop {
                let noted = self.noted.notified();
                if self.since(mark).len() >= count {
                    return;
                }
                noted.await;
            }
        };
        let _ = tokio::time::timeout(limit, waiting).await;
        self.since(mark)
    }

    /// The tick numbers received so far, in arrival order.
    pub fn ticks(&self) -> Vec<u32> {
        self.ticks.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits until ticks `1..=count` have all arrived, or `limit` passes;
    /// returns the ticks received, in arrival order.
    pub async fn until_ticks(&self, count: u32, limit: Duration) -> Vec<u32> {
        let waiting = async {
            loop {
                let noted = self.noted.notified();
                let mut seen = self.ticks();
                seen.sort_unstable();
                seen.dedup();
                if seen.len() >= count as usize {
                    return;
                }
                noted.await;
            }
        };
        let _ = tokio::time::timeout(limit, waiting).await;
        self.ticks()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, f64, Instant)>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn note(&self, message: &RxJsonRpcMessage<RoleClient>) {
        let JsonRpcMessage::Notification(notification) = message else {
            return;
        };
        if let ServerNotification::ResourceUpdatedNotification(updated) = &notification.notification
        {
            if let Some(n) = updated
                .params
                .uri
                .strip_prefix("tick://")
                .and_then(|n| n.parse().ok())
            {
                self.ticks.lock().unwrap_or_else(|p| p.into_inner()).push(n);
                self.noted.notify_waiters();
            }
            return;
        }
        let ServerNotification::ProgressNotification(progress) = &notification.notification else {
            return;
        };
        let token = match &progress.params.progress_token.0 {
            NumberOrString::String(s) => s.to_string(),
            NumberOrString::Number(n) => n.to_string(),
        };
        self.lock()
            .push((token, progress.params.progress, Instant::now()));
        self.noted.notify_waiters();
    }
}

/// `inner`, noting every progress notification it receives in a [`WireLog`].
#[derive(Debug)]
pub struct Recorded<T> {
    inner: T,
    log: WireLog,
}

impl<T> Recorded<T> {
    /// Wraps `inner`; the returned log fills as messages arrive.
    pub fn new(inner: T) -> (Self, WireLog) {
        let log = WireLog::default();
        (
            Self {
                inner,
                log: log.clone(),
            },
            log,
        )
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Recorded<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(message) = &message {
            self.log.note(message);
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
