//! What the nemesis and the clients share: whether a fault is under way and
//! when the last one healed (how long a client waits before it gives up),
//! and when to stop. Which instances are up is the nemesis's own record,
//! for the run's leak check: clients never read it, they find dead
//! instances as a load balancer does (`client::Health`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::history::Ms;

/// Shared by the nemesis (writer) and the clients (readers).
pub struct Control {
    /// The ownership lease the instances run with.
    pub lease: Duration,
    /// How long after its nominal end, or after the last fault healed,
    /// a call may still take (beyond the lease).
    pub slack: Duration,
    live: Vec<AtomicBool>,
    active: AtomicBool,
    last_healed: AtomicU64,
    /// Cancelled when the clients should start no new call.
    pub stop: CancellationToken,
}

impl Control {
    /// `instances` instances, all up.
    pub fn new(instances: usize, lease: Duration, slack: Duration) -> Self {
        Self {
            lease,
            slack,
            live: (0..instances).map(|_| AtomicBool::new(true)).collect(),
            active: AtomicBool::new(false),
            last_healed: AtomicU64::new(0),
            stop: CancellationToken::new(),
        }
    }

    /// How many instance slots.
    pub fn instances(&self) -> usize {
        self.live.len()
    }

    /// Marks `slot` up or down.
    pub fn set_live(&self, slot: usize, live: bool) {
        if let Some(flag) = self.live.get(slot) {
            flag.store(live, Ordering::SeqCst);
        }
    }

    /// The slots up now, in order: the nemesis's record, for the leak
    /// check. No client reads it (no load balancer has such an oracle).
    pub fn live_slots(&self) -> Vec<usize> {
        (0..self.live.len())
            .filter(|i| self.live[*i].load(Ordering::SeqCst))
            .collect()
    }

    /// A fault has begun.
    pub fn fault_started(&self) {
        self.active.store(true, Ordering::SeqCst);
    }

    /// The fault under way has healed at `now`.
    pub fn fault_healed(&self, now: Ms) {
        self.last_healed.store(now, Ordering::SeqCst);
        self.active.store(false, Ordering::SeqCst);
    }

    /// Whether something that should have ended by `nominal_end` (absent
    /// faults) is overdue at `now`: no fault under way, and more than the
    /// lease plus the slack (plus `grace`) since both `nominal_end` and the
    /// last fault's healing.
    pub fn overdue(&self, nominal_end: Ms, now: Ms, grace: Duration) -> bool {
        if self.active.load(Ordering::SeqCst) {
            return false;
        }
        let from = nominal_end.max(self.last_healed.load(Ordering::SeqCst));
        let allowed = self.lease + self.slack + grace;
        now > from + u64::try_from(allowed.as_millis()).unwrap_or(u64::MAX)
    }
}
