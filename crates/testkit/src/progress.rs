//! A client handler that records every progress notification it receives.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{NumberOrString, ProgressNotificationParam};

use crate::line::ClientConfig;
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
    /// The numbers of the `tick://N` resource updates (the `tick` tool).
    ticks: Arc<Mutex<Vec<u32>>>,
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

    /// The tick numbers received, in arrival order (duplicates included).
    pub fn ticks(&self) -> Vec<u32> {
        self.ticks.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Waits until ticks `1..=count` have all arrived, or `limit` passes.
    pub async fn until_ticks(&self, count: u32, limit: Duration) -> Vec<u32> {
        self.wait(limit, |r| {
            let mut seen = r.ticks();
            seen.sort_unstable();
            seen.dedup();
            seen.len() >= count as usize
        })
        .await;
        self.ticks()
    }

    /// Waits until tick `n` has arrived, or `limit` passes; returns the
    /// ticks received, in arrival order.
    pub async fn until_tick(&self, n: u32, limit: Duration) -> Vec<u32> {
        self.wait(limit, |r| r.ticks().contains(&n)).await;
        self.ticks()
    }

    /// Waits until `count` distinct values are in, or `limit` passes;
    /// returns everything recorded (duplicates included).
    pub async fn until(&self, count: usize, limit: Duration) -> BTreeMap<String, Vec<f64>> {
        self.wait(limit, |r| {
            let mut seen: Vec<u64> = r.seen().values().flatten().map(|v| v.to_bits()).collect();
            seen.sort_unstable();
            seen.dedup();
            seen.len() >= count
        })
        .await;
        self.seen()
    }

    /// Waits until `done` holds, or `limit` passes. Each handler runs in a
    /// task of its own, so what a call's response proves has been sent may
    /// still be on its way to the record, and in any order: a count, not the
    /// last value, says when it is all in.
    async fn wait(&self, limit: Duration, done: impl Fn(&Self) -> bool) {
        let waiting = async {
            loop {
                let recorded = self.recorded.notified();
                if done(self) {
                    return;
                }
                recorded.await;
            }
        };
        let _ = tokio::time::timeout(limit, waiting).await;
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

    async fn on_resource_updated(
        &self,
        param: rmcp::model::ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let Some(n) = param
            .uri
            .strip_prefix("tick://")
            .and_then(|n| n.parse().ok())
        else {
            return;
        };
        self.ticks.lock().unwrap_or_else(|p| p.into_inner()).push(n);
        self.recorded.notify_waiters();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}
