//! The lease of one session as this instance holds it: its epoch, its
//! lease clock, the ids it gave out, and its calls not answered yet. The
//! worker's [`Mirror`](super::Mirror) and its task share one, so that every
//! way of learning that the backend lost the session (a renewal, a commit,
//! a reservation) seeds it again the same way.
//!
//! # The lease clock
//!
//! The owner keeps its lease on its own clock: a renewal sent at `t` that
//! the backend took keeps the lease live until `t + lease - lease/10` (the
//! backend's expiry starts later than `t`, and the tenth absorbs clock
//! drift). Once that has passed unrenewed, another instance may own the
//! session, so this one admits no new call and commits nothing until a
//! renewal says it still holds the lease (its key outlived the gap, or it
//! lapsed at this owner's epoch and nobody took it since); and it never
//! seeds a session the backend lost, because its history may not be the
//! latest one.
//!
//! | Renewal answer | Live when the answer came back | Then |
//! |---|---|---|
//! | owned at this epoch | either | the lease is live until the send time plus the lease |
//! | seeded again | yes | confirmed (every renewal confirms until one is answered), then the open calls are registered again |
//! | seeded again | no | not confirmed: nobody continues it; this owner stops ([`SharedLogError::Lapsed`]) |
//! | anything else | either | fenced: this owner stops |

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::{MirrorOp, Ownership, Renewal, SharedLog, SharedLogError};

/// See the [module docs](self).
pub(super) struct Holder {
    pub(super) shared: Arc<dyn SharedLog>,
    pub(super) session: Arc<str>,
    pub(super) epoch: u64,
    /// A session the backend lost is seeded again with request stream
    /// numbers from here on.
    end: AtomicU64,
    /// The standalone stream's next index as far as this owner knows.
    standalone: AtomicU64,
    /// Committed calls not answered yet, with their request ids: after a
    /// seeding they are registered again, so that a later takeover still
    /// ends them with an error instead of leaving their readers waiting.
    open: Mutex<HashMap<u64, String>>,
    /// Seeded, and the open calls not registered again yet.
    reopen: AtomicBool,
    /// Seeded in time, and the confirmation not answered yet: every renewal
    /// confirms until one is (an answer lost to a blip must not leave the
    /// seeding provisional for good).
    confirming: AtomicBool,
    /// How long a renewal keeps the lease live, by this owner's clock.
    lease: Duration,
    /// Until when the lease is live by this owner's clock.
    live_until: Mutex<Instant>,
}

/// The lease counted on the owner's clock: a tenth shorter than the
/// backend's, for drift between the clocks.
fn own_lease(lease: Duration) -> Duration {
    lease.saturating_sub(lease / 10)
}

impl Holder {
    /// A lease the backend granted to a request sent at `sent`.
    pub(super) fn new(
        shared: Arc<dyn SharedLog>,
        session: Arc<str>,
        epoch: u64,
        sent: Instant,
    ) -> Self {
        let lease = own_lease(shared.lease());
        Self {
            shared,
            session,
            epoch,
            end: AtomicU64::new(0),
            standalone: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
            reopen: AtomicBool::new(false),
            confirming: AtomicBool::new(false),
            lease,
            live_until: Mutex::new(sent + lease),
        }
    }

    fn open_calls<R>(&self, f: impl FnOnce(&mut HashMap<u64, String>) -> R) -> R {
        f(&mut self.open.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn live_until(&self) -> Instant {
        *self
            .live_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the lease is live by this owner's clock.
    pub(super) fn is_live(&self) -> bool {
        self.live_at(Instant::now())
    }

    fn live_at(&self, at: Instant) -> bool {
        at < self.live_until()
    }

    /// A renewal sent at `sent` was granted.
    fn renewed(&self, sent: Instant) {
        let mut until = self
            .live_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *until = (*until).max(sent + self.lease);
    }

    /// A call's stream was committed open.
    pub(super) fn opened(&self, m: u64, request_id: &str) {
        self.open_calls(|open| open.insert(m, request_id.to_owned()));
    }

    /// A call's stream was committed finished.
    pub(super) fn finished(&self, m: u64) {
        self.open_calls(|open| open.remove(&m));
    }

    /// Event `index` of the standalone stream was committed.
    pub(super) fn standalone_committed(&self, index: u64) {
        self.standalone
            .fetch_max(index.saturating_add(1), Ordering::AcqRel);
    }

    /// The standalone stream's next index when this owner took the session.
    pub(super) fn standalone_from(&self, head: u64) {
        self.standalone.fetch_max(head, Ordering::AcqRel);
    }

    /// Reserves a block of request stream numbers; returns the first. A
    /// block that overlaps numbers this owner already had means the backend
    /// went back (a lossy failover): the session's history cannot be
    /// trusted here, so this owner stops rather than number two calls alike.
    pub(super) async fn reserve(&self, count: u64) -> Result<u64, SharedLogError> {
        let lowest = self.end.load(Ordering::Acquire);
        let first = self
            .shared
            .reserve_streams(&self.session, self.epoch, count, lowest)
            .await?;
        if first < lowest {
            return Err(SharedLogError::Diverged {
                stream: crate::resumption::StreamId::Request(first),
                index: 0,
            });
        }
        self.end
            .fetch_max(first.saturating_add(count), Ordering::AcqRel);
        Ok(first)
    }

    /// Keeps the lease: `Ok` while this instance writes the session. See the
    /// [module docs](self) for the table. A backend error is returned as it
    /// is. `reconcile` names this owner's open calls to the backend, which
    /// ends any other it holds open; only the mirror task may ask it, as
    /// only there is the set of open calls the committed one.
    pub(super) async fn keep(&self, reconcile: bool) -> Result<(), SharedLogError> {
        let sent = Instant::now();
        let live = self.live_at(sent);
        let open_calls = reconcile.then(|| self.open_calls(|open| open.keys().copied().collect()));
        let renewal = Renewal {
            epoch: self.epoch,
            lowest_stream: self.end.load(Ordering::Acquire),
            standalone_head: self.standalone.load(Ordering::Acquire),
            live,
            confirm: self.confirming.load(Ordering::Acquire),
            open_calls,
        };
        match self.shared.renew(&self.session, renewal.clone()).await? {
            Ownership::Owned { epoch } if epoch == self.epoch => {
                if renewal.confirm {
                    self.confirming.store(false, Ordering::Release);
                }
                self.renewed(sent);
            }
            Ownership::Seeded { epoch } if epoch == self.epoch => {
                // The seeding is this owner's history only if nobody could
                // have taken the session before the backend wrote it.
                if !self.is_live() {
                    return Err(SharedLogError::Lapsed);
                }
                self.confirming.store(true, Ordering::Release);
                self.reopen.store(true, Ordering::Release);
                let confirm = Renewal {
                    confirm: true,
                    open_calls: None,
                    ..renewal
                };
                match self.shared.renew(&self.session, confirm).await? {
                    Ownership::Owned { epoch } if epoch == self.epoch => {}
                    _ => return Err(SharedLogError::Fenced { current: 0 }),
                }
                self.confirming.store(false, Ordering::Release);
                self.renewed(sent);
            }
            Ownership::Owned { epoch: current } | Ownership::Seeded { epoch: current } => {
                return Err(SharedLogError::Fenced { current });
            }
            Ownership::HeldElsewhere | Ownership::Unknown if !live => {
                return Err(SharedLogError::Lapsed);
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

    /// Makes sure the lease is live before a write: a lapsed one is renewed
    /// first (the backend grants it only if this owner still holds it).
    pub(super) async fn live(&self) -> Result<(), SharedLogError> {
        if self.is_live() {
            return Ok(());
        }
        self.keep(false).await
    }
}
