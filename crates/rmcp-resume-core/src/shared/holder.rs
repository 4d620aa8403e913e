//! The lease of one session as this instance holds it: its epoch, the
//! request stream numbers it reserved, and its calls not answered yet. The
//! worker's [`Mirror`](super::Mirror) and its task share one, so that every
//! way of learning that the backend lost the session (a renewal, a commit,
//! a reservation) seeds it again the same way.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::{MirrorOp, Ownership, SharedLog, SharedLogError};

/// See the [module docs](self).
pub(super) struct Holder {
    pub(super) shared: Arc<dyn SharedLog>,
    pub(super) session: Arc<str>,
    pub(super) epoch: u64,
    /// A session the backend lost is seeded again with request stream
    /// numbers from here on.
    end: AtomicU64,
    /// Committed calls not answered yet, with their request ids: after a
    /// seeding they are registered again, so that a later takeover still
    /// ends them with an error instead of leaving their readers waiting.
    open: Mutex<HashMap<u64, String>>,
    /// Seeded, and the open calls not registered again yet.
    reopen: AtomicBool,
}

impl Holder {
    pub(super) fn new(shared: Arc<dyn SharedLog>, session: Arc<str>, epoch: u64) -> Self {
        Self {
            shared,
            session,
            epoch,
            end: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
            reopen: AtomicBool::new(false),
        }
    }

    fn open_calls<R>(&self, f: impl FnOnce(&mut HashMap<u64, String>) -> R) -> R {
        f(&mut self.open.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A call's stream was committed open.
    pub(super) fn opened(&self, m: u64, request_id: &str) {
        self.open_calls(|open| open.insert(m, request_id.to_owned()));
    }

    /// A call's stream was committed finished.
    pub(super) fn finished(&self, m: u64) {
        self.open_calls(|open| open.remove(&m));
    }

    /// Reserves a block of request stream numbers; returns the first.
    pub(super) async fn reserve(&self, count: u64) -> Result<u64, SharedLogError> {
        let first = self
            .shared
            .reserve_streams(&self.session, self.epoch, count)
            .await?;
        self.end
            .fetch_max(first.saturating_add(count), Ordering::AcqRel);
        Ok(first)
    }

    /// Keeps the lease: `Ok` while this instance writes the session. A
    /// lapsed lease nobody took is taken again; a session the backend lost
    /// is seeded again and gets its open calls back (retried at the next
    /// keep if that fails). A backend error is returned as it is.
    pub(super) async fn keep(&self) -> Result<(), SharedLogError> {
        let lowest = self.end.load(Ordering::Acquire);
        match self.shared.renew(&self.session, self.epoch, lowest).await? {
            Ownership::Owned { epoch } if epoch == self.epoch => {}
            Ownership::Seeded { epoch } if epoch == self.epoch => {
                self.reopen.store(true, Ordering::Release);
            }
            Ownership::Owned { epoch: current } | Ownership::Seeded { epoch: current } => {
                return Err(SharedLogError::Fenced { current });
            }
            Ownership::HeldElsewhere | Ownership::Unknown => {
                return Err(SharedLogError::Fenced { current: 0 });
            }
        }
        if self.reopen.load(Ordering::Acquire) {
            let ops: Vec<MirrorOp> = self.open_calls(|open| {
                open.iter()
                    .map(|(m, id)| MirrorOp::Open {
                        stream: *m,
                        request_id: id.clone(),
                    })
                    .collect()
            });
            if !ops.is_empty() {
                self.shared.commit(&self.session, self.epoch, &ops).await?;
            }
            self.reopen.store(false, Ordering::Release);
        }
        Ok(())
    }
}
