//! The mirror task against a scripted shared log: what it commits, and how
//! it answers each failure of the table in the module docs.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use super::super::{MirrorOp, Ownership, Renewal, SharedLog, SharedLogError, SharedSnapshot};
use super::*;

/// What the fake answers to the next commit.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Ok,
    Unreachable,
    Lost,
    Fenced,
}

/// What the fake answers to the next renewal (after the scripted ones: as
/// the backend would, seeding when it lost the session).
#[derive(Debug, Clone, Copy)]
enum Renewed {
    Seeded,
    HeldElsewhere,
    Unreachable,
    /// Owned, but at this epoch, not the renewal's.
    OwnedAt(u64),
    /// Seeded, but at this epoch.
    SeededAt(u64),
}

#[derive(Default)]
struct Script {
    answers: VecDeque<Answer>,
    renew_answers: VecDeque<Renewed>,
    /// Every renewal as sent, confirmations included.
    sent: Vec<Renewal>,
    /// How long a renewal takes to come back.
    renew_delay: Duration,
    /// The lease and its renewal period, when a test sets them.
    lease: Option<Duration>,
    /// The first number the next reservation answers.
    reserve_first: Option<u64>,
    /// Every renewal sent before this moment finds the backend unreachable.
    unreachable_until: Option<tokio::time::Instant>,
    commits: Vec<Vec<MirrorOp>>,
    renewals: Vec<u64>,
    /// The backend lost the session: the next renewal seeds it.
    lost: bool,
    /// Request streams the backend reports as answered.
    answered: Vec<u64>,
}

#[derive(Default, Clone)]
struct Fake(Arc<Mutex<Script>>);

impl Fake {
    fn answering(answers: &[Answer]) -> Self {
        let fake = Self::default();
        fake.script().answers.extend(answers);
        fake
    }

    fn script(&self) -> std::sync::MutexGuard<'_, Script> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn unreachable() -> SharedLogError {
    SharedLogError::Backend("unreachable".into())
}

impl SharedLog for Fake {
    fn acquire<'a>(
        &'a self,
        _: &'a str,
        _: bool,
    ) -> BoxFuture<'a, Result<Ownership, SharedLogError>> {
        Box::pin(async { Ok(Ownership::Owned { epoch: 3 }) })
    }

    fn renew<'a>(
        &'a self,
        _: &'a str,
        renewal: Renewal,
    ) -> BoxFuture<'a, Result<Ownership, SharedLogError>> {
        let Renewal {
            epoch,
            lowest_stream,
            confirm,
            ..
        } = renewal;
        let mut script = self.script();
        script.sent.push(renewal.clone());
        if !confirm {
            script.renewals.push(lowest_stream);
        }
        let delay = script.renew_delay;
        let cut = script
            .unreachable_until
            .is_some_and(|until| tokio::time::Instant::now() < until);
        let next = if cut {
            None
        } else {
            script.renew_answers.pop_front()
        };
        let answer = match next {
            _ if cut => Err(unreachable()),
            Some(Renewed::Seeded) => Ok(Ownership::Seeded { epoch }),
            Some(Renewed::HeldElsewhere) => Ok(Ownership::HeldElsewhere),
            Some(Renewed::OwnedAt(other)) => Ok(Ownership::Owned { epoch: other }),
            Some(Renewed::SeededAt(other)) => Ok(Ownership::Seeded { epoch: other }),
            Some(Renewed::Unreachable) => Err(unreachable()),
            // As a backend must: only a live owner seeds a lost session.
            None if script.lost && renewal.live => {
                script.lost = false;
                Ok(Ownership::Seeded { epoch })
            }
            None if script.lost => Ok(Ownership::HeldElsewhere),
            None => Ok(Ownership::Owned { epoch }),
        };
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            answer
        })
    }

    fn release<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<(), SharedLogError>> {
        Box::pin(async { Ok(()) })
    }

    fn reserve_streams<'a>(
        &'a self,
        _: &'a str,
        _: u64,
        _: u64,
        _: u64,
    ) -> BoxFuture<'a, Result<u64, SharedLogError>> {
        let first = self.script().reserve_first.take().unwrap_or(100);
        Box::pin(async move { Ok(first) })
    }

    fn commit<'a>(
        &'a self,
        _: &'a str,
        _: u64,
        ops: &'a [MirrorOp],
    ) -> BoxFuture<'a, Result<Vec<u64>, SharedLogError>> {
        let mut script = self.script();
        let answer = script.answers.pop_front().unwrap_or(Answer::Ok);
        let result = match answer {
            Answer::Ok => {
                let dropped = ops
                    .iter()
                    .filter_map(|op| match op {
                        MirrorOp::Append {
                            stream: StreamId::Request(m),
                            ..
                        } if script.answered.contains(m) => Some(*m),
                        _ => None,
                    })
                    .collect();
                script.commits.push(ops.to_vec());
                Ok(dropped)
            }
            Answer::Unreachable => Err(unreachable()),
            Answer::Lost => {
                script.lost = true;
                Err(SharedLogError::Lost)
            }
            Answer::Fenced => Err(SharedLogError::Fenced { current: 4 }),
        };
        Box::pin(async move { result })
    }

    fn read<'a>(
        &'a self,
        _: &'a str,
        _: StreamId,
        _: u64,
        _: usize,
    ) -> BoxFuture<'a, Result<SharedSnapshot, SharedLogError>> {
        Box::pin(async { Err(SharedLogError::Gone) })
    }

    fn tail(
        &self,
        _: &str,
        _: StreamId,
        _: u64,
    ) -> BoxStream<'static, Result<crate::shared::SharedEvent, SharedLogError>> {
        Box::pin(futures::stream::empty())
    }

    fn delete<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<(), SharedLogError>> {
        Box::pin(async { Ok(()) })
    }

    fn renew_every(&self) -> Duration {
        self.lease() / 3
    }

    fn lease(&self) -> Duration {
        self.script().lease.unwrap_or(Duration::from_secs(3 * 3600))
    }

    fn outage_limit(&self) -> Duration {
        Duration::from_secs(10)
    }
}

async fn mirror(fake: &Fake) -> Mirror {
    let shared: Arc<dyn SharedLog> = Arc::new(fake.clone());
    match Mirror::start(shared, "s".into(), true).await {
        Ok(Ok(mirror)) => mirror,
        other => panic!("start: {other:?}"),
    }
}

fn append(stream: StreamId, index: u64) -> MirrorOp {
    MirrorOp::Append {
        stream,
        index,
        data: Some(format!("{index}")),
    }
}

#[tokio::test(start_paused = true)]
async fn an_answer_and_its_finish_are_committed_together() {
    let fake = Fake::default();
    let mirror = mirror(&fake).await;
    let gate = Gate::new(0);
    mirror.write(MirrorOp::Open {
        stream: 100,
        request_id: "1".into(),
    });
    mirror.answer(100, 0, Some("0".into()), &gate);
    assert!(gate.committed(0).await);
    let commits = fake.script().commits.clone();
    let all: Vec<MirrorOp> = commits.into_iter().flatten().collect();
    let at = all
        .iter()
        .position(|op| *op == append(StreamId::Request(100), 0))
        .expect("the answer");
    assert_eq!(all.get(at + 1), Some(&MirrorOp::Finish { stream: 100 }));
}

#[tokio::test(start_paused = true)]
async fn an_outage_shorter_than_the_limit_costs_nothing() {
    // Five failures: 50 + 100 + 200 + 400 + 800 ms of pauses.
    let fake = Fake::answering(&[Answer::Unreachable; 5]);
    let mirror = mirror(&fake).await;
    let gate = Gate::new(1);
    mirror.append(StreamId::Standalone, 1, Some("{\"n\":1}".into()), &gate);
    assert!(
        gate.committed(1).await,
        "committed once the backend is back"
    );
    assert!(!mirror.lost().is_cancelled());
    // The data moved into the batch once; the sixth try still carries it.
    assert_eq!(
        fake.script().commits,
        [vec![MirrorOp::Append {
            stream: StreamId::Standalone,
            index: 1,
            data: Some("{\"n\":1}".into()),
        }]]
    );
}

#[tokio::test(start_paused = true)]
async fn an_outage_past_the_limit_loses_the_session_and_closes_the_gates() {
    let fake = Fake::answering(&[Answer::Unreachable; 64]);
    let mirror = mirror(&fake).await;
    let gate = Gate::new(1);
    mirror.append(StreamId::Standalone, 1, None, &gate);
    let started = tokio::time::Instant::now();
    assert!(!gate.committed(1).await, "never sent");
    mirror.lost().cancelled().await;
    let took = started.elapsed();
    assert!(took <= Duration::from_secs(10), "{took:?}");
    assert!(took >= Duration::from_secs(8), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn a_lost_session_is_seeded_again_with_its_open_calls() {
    let fake = Fake::default();
    let mirror = mirror(&fake).await;
    let gate = Gate::new(0);
    mirror.write(MirrorOp::Open {
        stream: 100,
        request_id: "\"a\"".into(),
    });
    mirror.append(StreamId::Request(100), 0, Some("0".into()), &gate);
    assert!(gate.committed(0).await);
    fake.script().answers.push_back(Answer::Lost);
    mirror.append(StreamId::Request(100), 1, Some("1".into()), &gate);
    assert!(gate.committed(1).await);
    let script = fake.script();
    // One renewal seeds, one follows the recovered commit; both above
    // every reserved number.
    assert_eq!(script.renewals, [164, 164]);
    let n = script.commits.len();
    assert!(n >= 2, "{:?}", script.commits);
    assert_eq!(
        script.commits[n - 2..],
        [
            vec![MirrorOp::Open {
                stream: 100,
                request_id: "\"a\"".into()
            }],
            vec![append(StreamId::Request(100), 1)]
        ],
        "the open call is registered again, then the batch retried"
    );
}

#[tokio::test(start_paused = true)]
async fn a_seeding_renewal_registers_the_open_calls_again() {
    let fake = Fake::default();
    let mirror = mirror(&fake).await;
    let gate = Gate::new(0);
    mirror.write(MirrorOp::Open {
        stream: 100,
        request_id: "1".into(),
    });
    mirror.append(StreamId::Request(100), 0, Some("0".into()), &gate);
    assert!(gate.committed(0).await);
    fake.script().lost = true;
    // The renewal comes a period after the start.
    tokio::time::sleep(Duration::from_secs(3601)).await;
    let script = fake.script();
    assert_eq!(
        script.commits.last().map(Vec::as_slice),
        Some(
            [MirrorOp::Open {
                stream: 100,
                request_id: "1".into()
            }]
            .as_slice()
        )
    );
}

#[tokio::test(start_paused = true)]
async fn open_calls_not_registered_after_a_seeding_are_registered_at_the_next_try() {
    let fake = Fake::default();
    let mirror = mirror(&fake).await;
    let gate = Gate::new(0);
    mirror.write(MirrorOp::Open {
        stream: 100,
        request_id: "1".into(),
    });
    mirror.append(StreamId::Request(100), 0, Some("0".into()), &gate);
    assert!(gate.committed(0).await);
    {
        let mut script = fake.script();
        script.lost = true;
        // The registration right after the seeding fails.
        script.answers.push_back(Answer::Unreachable);
    }
    let before = fake.script().commits.len();
    // The seeding renewal comes a period on; the failed renewal is tried
    // again within a second, not a period later.
    tokio::time::sleep(Duration::from_secs(3601)).await;
    let script = fake.script();
    assert_eq!(script.commits.len(), before + 1, "{:?}", script.commits);
    assert_eq!(
        script.commits.last().map(Vec::as_slice),
        Some(
            [MirrorOp::Open {
                stream: 100,
                request_id: "1".into()
            }]
            .as_slice()
        )
    );
    assert!(!mirror.lost().is_cancelled());
}

#[tokio::test(start_paused = true)]
async fn an_append_the_log_dropped_ends_its_reader_instead_of_being_sent() {
    let fake = Fake::default();
    fake.script().answered.push(100);
    let mirror = mirror(&fake).await;
    let gate = Gate::new(0);
    mirror.append(StreamId::Request(100), 0, Some("late".into()), &gate);
    assert!(!gate.committed(0).await, "never sent");
    assert!(!mirror.lost().is_cancelled(), "the session lives on");
}

#[tokio::test(start_paused = true)]
async fn a_write_after_the_loss_closes_its_gate() {
    let fake = Fake::answering(&[Answer::Fenced]);
    let mirror = mirror(&fake).await;
    let first = Gate::new(1);
    mirror.append(StreamId::Standalone, 1, None, &first);
    mirror.lost().cancelled().await;
    let late = Gate::new(0);
    mirror.append(StreamId::Request(7), 0, None, &late);
    assert!(!late.committed(0).await, "its reader ends");
}

#[tokio::test(start_paused = true)]
async fn a_fenced_owner_stops_at_once() {
    let fake = Fake::answering(&[Answer::Fenced]);
    let mirror = mirror(&fake).await;
    let gate = Gate::new(1);
    mirror.append(StreamId::Standalone, 1, None, &gate);
    assert!(!gate.committed(1).await);
    mirror.lost().cancelled().await;
    assert!(fake.script().commits.is_empty());
}

/// A fake whose lease is `lease` (renewed every third of it).
fn leased(lease: Duration) -> Fake {
    let fake = Fake::default();
    fake.script().lease = Some(lease);
    fake
}

#[tokio::test(start_paused = true)]
async fn a_lapsed_owner_commits_nothing_until_a_renewal_says_it_holds_the_lease() {
    let fake = leased(Duration::from_secs(6));
    let mirror = mirror(&fake).await;
    // Every renewal fails (a cut to the backend) until past the lease,
    // then the backend is back but says another instance holds the lease.
    {
        let mut script = fake.script();
        script.unreachable_until = Some(tokio::time::Instant::now() + Duration::from_millis(5500));
        script.renew_answers.push_back(Renewed::HeldElsewhere);
    }
    // Past the lease by the owner's clock (5.4 s: a tenth less than 6).
    tokio::time::sleep(Duration::from_millis(5500)).await;
    let gate = Gate::new(1);
    mirror.append(StreamId::Standalone, 1, Some("1".into()), &gate);
    assert!(!gate.committed(1).await, "sent after the lease ran out");
    mirror.lost().cancelled().await;
    let script = fake.script();
    assert!(script.commits.is_empty(), "{:?}", script.commits);
    let last = script.sent.last().expect("a renewal before the commit");
    assert!(
        !last.live,
        "a lapsed owner renewed as live: {:?}",
        script.sent
    );
}

#[tokio::test(start_paused = true)]
async fn a_lapsed_owner_still_holding_the_lease_commits_after_renewing() {
    let fake = leased(Duration::from_secs(6));
    let mirror = mirror(&fake).await;
    fake.script().unreachable_until =
        Some(tokio::time::Instant::now() + Duration::from_millis(5500));
    tokio::time::sleep(Duration::from_millis(5500)).await;
    let gate = Gate::new(1);
    mirror.append(StreamId::Standalone, 1, Some("1".into()), &gate);
    assert!(gate.committed(1).await);
    let script = fake.script();
    assert_eq!(script.commits.len(), 1);
    assert!(script.sent.iter().any(|r| !r.live), "{:?}", script.sent);
}

#[tokio::test(start_paused = true)]
async fn a_seeding_answered_after_the_lease_ran_out_is_never_confirmed() {
    let fake = leased(Duration::from_secs(30));
    let mirror = mirror(&fake).await;
    let gate = Gate::new(1);
    mirror.append(StreamId::Standalone, 1, Some("1".into()), &gate);
    assert!(gate.committed(1).await);
    {
        let mut script = fake.script();
        // The next commit finds the session lost; the seeding renewal comes
        // back only after the lease ran out (a pause, a slow network).
        script.answers.push_back(Answer::Lost);
        script.renew_answers.push_back(Renewed::Seeded);
        script.renew_delay = Duration::from_secs(40);
    }
    mirror.append(StreamId::Standalone, 2, Some("2".into()), &gate);
    assert!(!gate.committed(2).await, "sent on an unconfirmed seeding");
    mirror.lost().cancelled().await;
    let script = fake.script();
    assert!(
        script.sent.iter().all(|r| !r.confirm),
        "confirmed: {:?}",
        script.sent
    );
    // The seeding carried the owner's standalone head, past event 1.
    let seed = script.sent.last().expect("the seeding renewal");
    assert_eq!(seed.standalone_head, 2, "{seed:?}");
}

#[tokio::test(start_paused = true)]
async fn a_seeding_answered_in_time_is_confirmed_before_anything_is_committed() {
    let fake = leased(Duration::from_secs(30));
    let mirror = mirror(&fake).await;
    // The backend lost the session: its next renewal seeds it.
    fake.script().answers.push_back(Answer::Lost);
    let gate = Gate::new(1);
    mirror.append(StreamId::Standalone, 1, Some("1".into()), &gate);
    assert!(gate.committed(1).await);
    let script = fake.script();
    let confirms: Vec<usize> = script
        .sent
        .iter()
        .enumerate()
        .filter(|(_, r)| r.confirm)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(confirms.len(), 1, "{:?}", script.sent);
    assert!(script.sent.iter().all(|r| r.live));
}

#[tokio::test(start_paused = true)]
async fn an_idle_owner_gives_up_once_renewals_fail_for_the_outage_limit() {
    let fake = leased(Duration::from_secs(3));
    fake.script()
        .renew_answers
        .extend([Renewed::Unreachable; 64]);
    let mirror = mirror(&fake).await;
    let started = tokio::time::Instant::now();
    mirror.lost().cancelled().await;
    let took = started.elapsed();
    // The outage limit is 10 s; renewals come every second.
    assert!(took >= Duration::from_secs(10), "{took:?}");
    assert!(took <= Duration::from_secs(12), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn no_call_is_admitted_once_the_lease_ran_out_unrenewed() {
    let fake = leased(Duration::from_secs(6));
    let mut mirror = mirror(&fake).await;
    assert!(mirror.lease().is_live());
    fake.script()
        .renew_answers
        .extend([Renewed::Unreachable; 16]);
    tokio::time::sleep(Duration::from_millis(5500)).await;
    assert!(!mirror.lease().is_live());
    assert!(mirror.next_stream().await.is_err(), "a call admitted");
}

#[tokio::test(start_paused = true)]
async fn a_reservation_below_the_owners_numbers_stops_the_owner() {
    let fake = Fake::default();
    let mut mirror = mirror(&fake).await;
    for _ in 0..RESERVE {
        mirror.next_stream().await.expect("a reserved number");
    }
    // The backend's counter went back (a lossy failover).
    fake.script().reserve_first = Some(120);
    let next = mirror.next_stream().await;
    assert!(
        matches!(next, Err(SharedLogError::Diverged { .. })),
        "{next:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_standalone_event_committed_moves_the_seeding_head() {
    let fake = Fake::default();
    let mirror = mirror(&fake).await;
    mirror.standalone_from(7);
    let gate = Gate::new(7);
    mirror.append(StreamId::Standalone, 7, Some("7".into()), &gate);
    assert!(gate.committed(7).await);
    fake.script().answers.push_back(Answer::Lost);
    mirror.append(StreamId::Standalone, 8, Some("8".into()), &gate);
    assert!(gate.committed(8).await);
    let script = fake.script();
    let seed = script.sent.first().expect("the seeding renewal");
    assert_eq!(seed.standalone_head, 8, "{seed:?}");
}

#[tokio::test(start_paused = true)]
async fn each_periodic_renewal_names_the_open_calls_and_no_other_renewal_does() {
    let fake = leased(Duration::from_secs(3));
    let mut mirror = mirror(&fake).await;
    let gate = Gate::new(0);
    mirror.write(MirrorOp::Open {
        stream: 100,
        request_id: "1".into(),
    });
    mirror.append(StreamId::Request(100), 0, None, &gate);
    assert!(gate.committed(0).await);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let periodic = fake.script().sent.last().cloned().expect("a renewal");
    assert_eq!(periodic.open_calls, Some(vec![100]), "{periodic:?}");
    // A renewal the worker makes (a call admitted past the lease) does not
    // know what the task is committing, so it names nothing.
    fake.script()
        .renew_answers
        .extend([Renewed::Unreachable; 10]);
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let _ = mirror.next_stream().await;
    let sent = fake.script().sent.clone();
    let last = sent.last().expect("a renewal");
    assert!(!last.live && last.open_calls.is_none(), "{sent:?}");
}

#[tokio::test(start_paused = true)]
async fn an_owner_that_renews_on_time_stays_live_and_may_seed_many_leases_later() {
    let fake = leased(Duration::from_secs(6));
    let mirror = mirror(&fake).await;
    // Ten leases of renewals that all go through.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(mirror.lease().is_live(), "{:?}", fake.script().sent);
    fake.script().answers.push_back(Answer::Lost);
    let gate = Gate::new(1);
    mirror.append(StreamId::Standalone, 1, Some("1".into()), &gate);
    assert!(gate.committed(1).await, "{:?}", fake.script().sent);
    assert!(fake.script().sent.iter().any(|r| r.confirm && r.live));
}

#[tokio::test(start_paused = true)]
async fn the_lease_is_over_at_the_instant_its_own_clock_says() {
    let fake = leased(Duration::from_secs(10));
    fake.script().unreachable_until = Some(tokio::time::Instant::now() + Duration::from_secs(60));
    let mirror = mirror(&fake).await;
    // A tenth less than the backend's lease: 9 s from the acquire.
    tokio::time::sleep(Duration::from_millis(8999)).await;
    assert!(mirror.lease().is_live());
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(!mirror.lease().is_live());
}

#[tokio::test(start_paused = true)]
async fn a_renewal_answered_at_another_epoch_stops_the_owner() {
    for answers in [
        vec![Renewed::OwnedAt(4)],
        vec![Renewed::SeededAt(4)],
        // Seeded at this epoch, then the confirmation answered at another.
        vec![Renewed::Seeded, Renewed::OwnedAt(4)],
    ] {
        let fake = leased(Duration::from_secs(3));
        fake.script().renew_answers.extend(answers.iter().copied());
        let mirror = mirror(&fake).await;
        tokio::time::timeout(Duration::from_secs(2), mirror.lost().cancelled())
            .await
            .unwrap_or_else(|_| panic!("{answers:?}: the owner carried on"));
    }
}

#[tokio::test(start_paused = true)]
async fn a_seeding_registers_again_only_the_calls_still_open() {
    let fake = Fake::default();
    let mirror = mirror(&fake).await;
    let gate = Gate::new(0);
    for m in [100, 101] {
        mirror.write(MirrorOp::Open {
            stream: m,
            request_id: format!("{m}"),
        });
    }
    mirror.answer(101, 0, Some("answer".into()), &gate);
    mirror.append(StreamId::Request(100), 0, Some("0".into()), &gate);
    assert!(gate.committed(0).await);
    fake.script().answers.push_back(Answer::Lost);
    mirror.append(StreamId::Request(100), 1, Some("1".into()), &gate);
    assert!(gate.committed(1).await);
    let script = fake.script();
    let reopened: Vec<&MirrorOp> = script
        .commits
        .iter()
        .filter(|batch| batch.iter().all(|op| matches!(op, MirrorOp::Open { .. })))
        .flatten()
        .collect();
    assert_eq!(
        reopened,
        [&MirrorOp::Open {
            stream: 100,
            request_id: "100".into()
        }],
        "{:?}",
        script.commits
    );
}

#[tokio::test(start_paused = true)]
async fn a_takeovers_standalone_head_reaches_the_seeding_with_no_event_of_its_own() {
    let fake = Fake::default();
    let mirror = mirror(&fake).await;
    mirror.standalone_from(7);
    fake.script().answers.push_back(Answer::Lost);
    let gate = Gate::new(0);
    mirror.write(MirrorOp::Open {
        stream: 100,
        request_id: "1".into(),
    });
    mirror.append(StreamId::Request(100), 0, Some("0".into()), &gate);
    assert!(gate.committed(0).await);
    let script = fake.script();
    let seed = script.sent.first().expect("the seeding renewal");
    assert_eq!(seed.standalone_head, 7, "{seed:?}");
}

#[tokio::test(start_paused = true)]
async fn a_reservation_that_starts_where_the_owners_numbers_end_is_taken() {
    let fake = Fake::default();
    let mut mirror = mirror(&fake).await;
    for _ in 0..RESERVE {
        mirror.next_stream().await.expect("a reserved number");
    }
    fake.script().reserve_first = Some(100 + RESERVE);
    assert_eq!(mirror.next_stream().await.ok(), Some(100 + RESERVE));
}
