//! What all sessions of one manager share, beside their configuration.
//!
//! On 1.8 and later the fork's manager-wide state (the shared log, the
//! meter of every session's replay bytes) rides in a hidden field of
//! [`SessionConfig`](super::SessionConfig). Upstream 0.x's
//! `LocalSessionManager` and `SessionConfig` have upstream's public fields
//! and nothing else, so that applications' literals compile: there the
//! state is held by a [`ReplaySessionManager`](super::ReplaySessionManager),
//! or, for a manager built as a literal, is one per process.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use rmcp_resume_core::log::Meter;
use rmcp_resume_core::shared::SharedLog;

/// A manager's shared log and its process-wide replay meter.
///
/// A clone is empty: a cloned `SessionConfig` is settings, and a manager
/// built from it meters its own bytes and shares nothing it was not given
/// (sessions take the meter from their manager, never from their copy of
/// the config).
#[doc(hidden)]
#[derive(Default)]
pub struct ManagerState {
    // Unwind safety as upstream's config has it: the log is used only
    // through its own synchronised methods, never left half-updated by us.
    shared: Option<AssertUnwindSafe<Arc<dyn SharedLog>>>,
    replay_bytes: OnceLock<Arc<Meter>>,
}

impl Clone for ManagerState {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for ManagerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerState")
            .field("shared", &self.shared.is_some())
            .field("replay_bytes", &self.used())
            .finish()
    }
}

impl ManagerState {
    pub(crate) fn with_shared(self, shared: Arc<dyn SharedLog>) -> Self {
        Self {
            shared: Some(AssertUnwindSafe(shared)),
            ..self
        }
    }

    pub(crate) fn shared(&self) -> Option<&Arc<dyn SharedLog>> {
        self.shared.as_ref().map(|shared| &shared.0)
    }

    /// The meter of every session's replay bytes, created with `total` on
    /// first use.
    pub(crate) fn meter(&self, total: usize) -> Arc<Meter> {
        self.replay_bytes.get_or_init(|| Meter::new(total)).clone()
    }

    crate::line::plain_0x! {
        {
            /// The state of every 0.x manager built without the fork's
            /// settings (a literal, `default()`): one per process, so its
            /// sessions share one replay meter and no shared log.
            pub(crate) fn process() -> &'static Self {
                static PROCESS: std::sync::LazyLock<ManagerState> =
                    std::sync::LazyLock::new(ManagerState::default);
                &PROCESS
            }
        } else {}
    }

    pub(crate) fn used(&self) -> usize {
        self.replay_bytes.get().map_or(0, |meter| meter.used())
    }
}
