//! A client handler that records every progress notification it receives.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientConfig, NumberOrString, ProgressNotificationParam};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::Notify;

/// Progress values by token. rmcp's client assigns each call's token, and
/// runs each notification's handler in a task of its own: the record's order
/// is not the wire's, and a handler may still run after its call returned,
/// so [`until`](Self::until) waits for the count.
#[derive(Clone, Default)]
pub struct ProgressRecorder {
    seen: Arc<Mutex<BTreeMap<String, Vec<f64>>>>,
    recorded: Arc<Notify>,
}

impl ProgressRecorder {
    /// Everything recorded, by token.
    pub fn seen(&self) -> BTreeMap<String, Vec<f64>> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Forgets what was recorded.
    pub fn clear(&self) {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Waits until `count` values are in, or `limit` passes; returns them.
    pub async fn until(&self, count: usize, limit: Duration) -> BTreeMap<String, Vec<f64>> {
        let waiting = async {
            loop {
                let recorded = self.recorded.notified();
                if self.seen().values().map(Vec::len).sum::<usize>() >= count {
                    return;
                }
                recorded.await;
            }
        };
        let _ = tokio::time::timeout(limit, waiting).await;
        self.seen()
    }
}

impl ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        param: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let token = match &param.progress_token.0 {
            NumberOrString::String(s) => s.to_string(),
            NumberOrString::Number(n) => n.to_string(),
        };
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(token)
            .or_default()
            .push(param.progress);
        self.recorded.notify_waiters();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}
