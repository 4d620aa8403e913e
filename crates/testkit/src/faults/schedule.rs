//! The fault schedule: which faults, where and for how long, all drawn from
//! one seed before the run starts.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use super::rng::Rng;

/// The kinds of fault the nemesis knows; each can be switched on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// `kill -9` of an instance, then a new process in its place.
    Kill,
    /// `SIGSTOP` of an instance, `SIGCONT` after a while (sometimes longer
    /// than the lease).
    Pause,
    /// Every connection between one client (or all) and one instance
    /// dropped, and new ones refused for a while.
    Cut,
    /// `CLIENT PAUSE <ms> ALL` on Redis.
    RedisPause,
    /// `SIGSTOP` of redis-server, `SIGCONT` after a while.
    RedisStop,
    /// `kill -9` of redis-server and a new one on the same socket:
    /// persistence is off, so every session's data is lost.
    RedisRestart,
    /// Redis Cluster only: `CLUSTER FAILOVER` (manual: nothing acknowledged
    /// is lost) or `CLUSTER FAILOVER TAKEOVER` (forced: the replica may lag)
    /// on the replica of the primary that serves a live session's slot.
    Failover,
    /// Redis Cluster only: `kill -9` of the primary that serves a live
    /// session's slot, a wait for its replica's promotion, then the killed
    /// node started again (empty) as a replica.
    PrimaryKill,
    /// Single Redis only: `SIGSTOP` of redis-server past the instances'
    /// outage limit (while calls are in flight), `SIGCONT` after.
    RedisOutage,
    /// Single Redis only: one instance cut off from Redis by the proxy
    /// between them, either blackholed (connections kept, nothing crosses)
    /// or cut (connections dropped, new ones refused), sometimes past the
    /// lease; its clients still reach it.
    Partition,
    /// Single Redis only: review 2026-12-06's D1 sequence. `SIGSTOP` of an
    /// instance past the lease (its sessions are taken over elsewhere),
    /// then `kill -9` of redis-server and a new, empty one, then `SIGCONT`:
    /// the stale owner wakes to a Redis that has forgotten it was replaced.
    StaleOwner,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 11] = [
        FaultKind::Kill,
        FaultKind::Pause,
        FaultKind::Cut,
        FaultKind::RedisPause,
        FaultKind::RedisStop,
        FaultKind::RedisRestart,
        FaultKind::Failover,
        FaultKind::PrimaryKill,
        FaultKind::Partition,
        FaultKind::RedisOutage,
        FaultKind::StaleOwner,
    ];

    /// Whether it applies to a single Redis (`cluster` false) or to a Redis
    /// Cluster. On a cluster `redis-pause` stops one primary (`SIGSTOP`,
    /// `SIGCONT` after a while: beyond the node timeout its replica takes
    /// over), `redis-stop` stops every node at once, and `redis-restart`
    /// is skipped (a whole cluster losing its data is the single Redis's
    /// case; a primary losing its data is `primary-kill`). `failover` and
    /// `primary-kill` are skipped on a single Redis.
    pub fn applies_to(self, cluster: bool) -> bool {
        match self {
            FaultKind::RedisRestart
            | FaultKind::Partition
            | FaultKind::RedisOutage
            | FaultKind::StaleOwner => !cluster,
            FaultKind::Failover | FaultKind::PrimaryKill => cluster,
            _ => true,
        }
    }

    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Cut => "cut",
            FaultKind::RedisPause => "redis-pause",
            FaultKind::RedisStop => "redis-stop",
            FaultKind::RedisRestart => "redis-restart",
            FaultKind::Failover => "failover",
            FaultKind::PrimaryKill => "primary-kill",
            FaultKind::Partition => "partition",
            FaultKind::RedisOutage => "redis-outage",
            FaultKind::StaleOwner => "stale-owner",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// A comma-separated list of names, or `all`.
    pub fn parse_list(list: &str) -> Result<BTreeSet<Self>, String> {
        if list == "all" {
            return Ok(Self::ALL.into_iter().collect());
        }
        list.split(',')
            .filter(|s| !s.is_empty())
            .map(|name| Self::parse(name).ok_or_else(|| format!("unknown fault kind {name:?}")))
            .collect()
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One fault, with its target and its duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Kill instance `slot`; start a new one after `down`.
    Kill { slot: usize, down: Duration },
    /// Stop instance `slot` for `hold`.
    Pause { slot: usize, hold: Duration },
    /// Drop the connections of `client` (every client if `None`) to
    /// instance `slot`, and refuse new ones for `hold`.
    Cut {
        client: Option<usize>,
        slot: usize,
        hold: Duration,
    },
    /// Pause Redis's clients for `hold`.
    RedisPause { hold: Duration },
    /// Stop redis-server for `hold`.
    RedisStop { hold: Duration },
    /// Kill redis-server; start a new, empty one after `down`.
    RedisRestart { down: Duration },
    /// Cluster: stop the primary of the slot `pick` chooses (a live
    /// session's, else any) for `hold`.
    PrimaryPause { pick: u64, hold: Duration },
    /// Cluster: stop every node for `hold`.
    ClusterStop { hold: Duration },
    /// Cluster: fail the slot `pick` chooses over to its replica, forced
    /// (`TAKEOVER`) or not.
    Failover { pick: u64, takeover: bool },
    /// Cluster: kill the primary of the slot `pick` chooses, wait for its
    /// replica's promotion, start it again after `down`.
    PrimaryKill { pick: u64, down: Duration },
    /// Stop redis-server for `hold`, past the outage limit.
    RedisOutage { hold: Duration },
    /// Cut instance `slot` off from Redis for `hold`: blackholed
    /// (connections kept, nothing crosses) or cut.
    Partition {
        slot: usize,
        hold: Duration,
        blackhole: bool,
    },
    /// Stop instance `slot` for `hold` (past the lease); while it is
    /// stopped, kill redis-server and start a new, empty one after `down`.
    StaleOwner {
        slot: usize,
        hold: Duration,
        down: Duration,
    },
}

impl Fault {
    /// Its kind.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Kill { .. } => FaultKind::Kill,
            Fault::Pause { .. } => FaultKind::Pause,
            Fault::Cut { .. } => FaultKind::Cut,
            Fault::RedisPause { .. } => FaultKind::RedisPause,
            Fault::RedisStop { .. } => FaultKind::RedisStop,
            Fault::RedisRestart { .. } => FaultKind::RedisRestart,
            Fault::PrimaryPause { .. } => FaultKind::RedisPause,
            Fault::ClusterStop { .. } => FaultKind::RedisStop,
            Fault::Failover { .. } => FaultKind::Failover,
            Fault::PrimaryKill { .. } => FaultKind::PrimaryKill,
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::RedisOutage { .. } => FaultKind::RedisOutage,
            Fault::StaleOwner { .. } => FaultKind::StaleOwner,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Kill { slot, down } => write!(f, "kill -9 instance {slot}, down {down:?}"),
            Fault::Pause { slot, hold } => write!(f, "SIGSTOP instance {slot} for {hold:?}"),
            Fault::Cut { client, slot, hold } => match client {
                Some(client) => write!(f, "cut client {client} from instance {slot} for {hold:?}"),
                None => write!(f, "cut every client from instance {slot} for {hold:?}"),
            },
            Fault::RedisPause { hold } => write!(f, "CLIENT PAUSE ALL on Redis for {hold:?}"),
            Fault::RedisStop { hold } => write!(f, "SIGSTOP redis-server for {hold:?}"),
            Fault::RedisRestart { down } => write!(f, "kill -9 redis-server, down {down:?}"),
            Fault::PrimaryPause { pick, hold } => {
                write!(
                    f,
                    "SIGSTOP the primary of pick {pick:#x}'s slot for {hold:?}"
                )
            }
            Fault::ClusterStop { hold } => write!(f, "SIGSTOP every cluster node for {hold:?}"),
            Fault::Failover { pick, takeover } => write!(
                f,
                "CLUSTER FAILOVER{} of pick {pick:#x}'s slot",
                if *takeover { " TAKEOVER" } else { "" }
            ),
            Fault::PrimaryKill { pick, down } => write!(
                f,
                "kill -9 the primary of pick {pick:#x}'s slot, promotion, restart after {down:?}"
            ),
            Fault::RedisOutage { hold } => write!(
                f,
                "SIGSTOP redis-server for {hold:?}, past the outage limit"
            ),
            Fault::Partition {
                slot,
                hold,
                blackhole,
            } => write!(
                f,
                "{} instance {slot}'s link to Redis for {hold:?}",
                if *blackhole { "blackhole" } else { "cut" }
            ),
            Fault::StaleOwner { slot, hold, down } => write!(
                f,
                "SIGSTOP instance {slot} for {hold:?}; meanwhile kill -9 redis-server, down {down:?}"
            ),
        }
    }
}

/// A fault and the quiet time before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Quiet time after the previous fault healed.
    pub after: Duration,
    /// The fault.
    pub fault: Fault,
}

/// What a schedule is drawn from.
#[derive(Debug, Clone)]
pub struct ScheduleConfig {
    /// How many faults.
    pub faults: usize,
    /// Which kinds (none: an empty schedule).
    pub kinds: BTreeSet<FaultKind>,
    /// Instances to aim at.
    pub instances: usize,
    /// Clients to aim at.
    pub clients: usize,
    /// The ownership lease: pauses are drawn around it.
    pub lease: Duration,
    /// Quiet time between faults, drawn in this range.
    pub gap: (Duration, Duration),
    /// Whether the log is on a Redis Cluster (see
    /// [`FaultKind::applies_to`]).
    pub cluster: bool,
    /// The instances' outage limit: `redis-outage` holds Redis past it.
    pub outage_limit: Duration,
}

/// A seeded sequence of faults.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The faults in order.
    pub faults: Vec<Planned>,
}

fn ms(rng: &mut Rng, low: u64, high: u64) -> Duration {
    Duration::from_millis(rng.range(low, high))
}

impl Schedule {
    /// Draws `config.faults` faults from `seed`.
    pub fn generate(seed: u64, config: &ScheduleConfig) -> Self {
        let mut rng = Rng::fork(seed, 0x5c4e_d01e);
        let kinds: Vec<FaultKind> = config
            .kinds
            .iter()
            .copied()
            .filter(|k| k.applies_to(config.cluster))
            .collect();
        let lease = u64::try_from(config.lease.as_millis()).unwrap_or(u64::MAX);
        let (gap_low, gap_high) = (config.gap.0.as_millis(), config.gap.1.as_millis());
        let mut faults = Vec::new();
        if kinds.is_empty() || config.instances == 0 {
            return Self { faults };
        }
        // Kinds are dealt from a shuffled deck of every kind switched on,
        // refilled when empty: `faults` faults hold each kind at least
        // `faults / kinds` times, so a short run still covers them all.
        let mut deck: Vec<FaultKind> = Vec::new();
        for _ in 0..config.faults {
            if deck.is_empty() {
                deck = kinds.clone();
                for i in (1..deck.len()).rev() {
                    deck.swap(i, rng.below(i + 1));
                }
            }
            let kind = deck.pop().unwrap_or(kinds[0]);
            let after = ms(
                &mut rng,
                u64::try_from(gap_low).unwrap_or(0),
                u64::try_from(gap_high).unwrap_or(0),
            );
            let slot = rng.below(config.instances);
            let fault = match kind {
                FaultKind::Kill => Fault::Kill {
                    slot,
                    down: ms(&mut rng, 0, 1500),
                },
                // Half below the lease, half beyond it (a takeover).
                FaultKind::Pause => Fault::Pause {
                    slot,
                    hold: if rng.chance(50) {
                        ms(&mut rng, 500, lease.max(600))
                    } else {
                        ms(&mut rng, lease + 200, (lease * 2).max(3000))
                    },
                },
                FaultKind::Cut => Fault::Cut {
                    client: if rng.chance(70) && config.clients > 0 {
                        Some(rng.below(config.clients))
                    } else {
                        None
                    },
                    slot,
                    hold: ms(&mut rng, 0, 1000),
                },
                FaultKind::RedisPause if config.cluster => Fault::PrimaryPause {
                    pick: rng.next_u64(),
                    hold: ms(&mut rng, 200, (lease + 1000).max(3000)),
                },
                FaultKind::RedisPause => Fault::RedisPause {
                    hold: ms(&mut rng, 200, (lease + 1000).max(3000)),
                },
                // Every node stops at once: no majority is left to vote a
                // primary out while they are stopped.
                FaultKind::RedisStop if config.cluster => Fault::ClusterStop {
                    hold: ms(&mut rng, 200, (lease + 1000).max(3000)),
                },
                FaultKind::RedisStop => Fault::RedisStop {
                    hold: ms(&mut rng, 200, (lease + 1000).max(3000)),
                },
                FaultKind::RedisRestart => Fault::RedisRestart {
                    down: ms(&mut rng, 0, 1000),
                },
                FaultKind::Failover => Fault::Failover {
                    pick: rng.next_u64(),
                    takeover: rng.chance(50),
                },
                FaultKind::PrimaryKill => Fault::PrimaryKill {
                    pick: rng.next_u64(),
                    down: ms(&mut rng, 0, 1500),
                },
                FaultKind::RedisOutage => {
                    let limit = u64::try_from(config.outage_limit.as_millis()).unwrap_or(u64::MAX);
                    Fault::RedisOutage {
                        hold: ms(
                            &mut rng,
                            limit.saturating_add(500),
                            limit.saturating_add(2000),
                        ),
                    }
                }
                // Half within the lease, half past it: the owner must stop
                // on its own (no renewal) while another takes over.
                FaultKind::Partition => Fault::Partition {
                    slot,
                    hold: if rng.chance(50) {
                        ms(&mut rng, 200, lease.max(300))
                    } else {
                        ms(&mut rng, lease + 200, (lease * 3).max(3000))
                    },
                    blackhole: rng.chance(50),
                },
                // Long enough for the stopped instance's clients to give
                // it up (a call's 3 s of silence, a 4 s head) and its
                // sessions to be taken over past the lease before Redis
                // forgets them.
                FaultKind::StaleOwner => Fault::StaleOwner {
                    slot,
                    hold: ms(&mut rng, lease + 4500, lease + 6500),
                    down: ms(&mut rng, 0, 500),
                },
            };
            faults.push(Planned { after, fault });
        }
        Self { faults }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(kinds: &[FaultKind]) -> ScheduleConfig {
        ScheduleConfig {
            faults: 50,
            kinds: kinds.iter().copied().collect(),
            instances: 3,
            clients: 4,
            lease: Duration::from_millis(1000),
            gap: (Duration::from_millis(100), Duration::from_millis(900)),
            cluster: false,
            outage_limit: Duration::from_secs(2),
        }
    }

    #[test]
    fn a_seed_gives_one_schedule_of_the_kinds_switched_on() {
        let cfg = config(&[FaultKind::Cut, FaultKind::Pause]);
        let a = Schedule::generate(3, &cfg);
        let b = Schedule::generate(3, &cfg);
        assert_eq!(a.faults, b.faults);
        assert_eq!(a.faults.len(), 50);
        assert!(
            a.faults
                .iter()
                .all(|p| matches!(p.fault.kind(), FaultKind::Cut | FaultKind::Pause))
        );
        assert_ne!(a.faults, Schedule::generate(4, &cfg).faults);
    }

    #[test]
    fn each_backend_draws_only_its_kinds() {
        let mut cfg = config(&FaultKind::ALL);
        let single = Schedule::generate(5, &cfg);
        assert!(
            single
                .faults
                .iter()
                .all(|p| p.fault.kind().applies_to(false)
                    && !matches!(
                        p.fault,
                        Fault::PrimaryPause { .. } | Fault::ClusterStop { .. }
                    ))
        );
        cfg.cluster = true;
        let cluster = Schedule::generate(5, &cfg);
        assert!(
            cluster
                .faults
                .iter()
                .all(|p| p.fault.kind().applies_to(true)
                    && !matches!(p.fault, Fault::RedisPause { .. } | Fault::RedisStop { .. }))
        );
        assert!(
            cluster
                .faults
                .iter()
                .any(|p| p.fault.kind() == FaultKind::PrimaryKill)
        );
    }

    #[test]
    fn every_kind_switched_on_is_dealt_its_share() {
        let mut cfg = config(&FaultKind::ALL);
        // Nine kinds apply to a single Redis.
        cfg.faults = 18;
        let single = Schedule::generate(9, &cfg);
        for kind in FaultKind::ALL.into_iter().filter(|k| k.applies_to(false)) {
            let n = single
                .faults
                .iter()
                .filter(|p| p.fault.kind() == kind)
                .count();
            assert!(n >= 2, "{kind}: {n} of 18");
        }
    }

    #[test]
    fn partitions_are_blackholes_or_cuts_within_and_past_the_lease() {
        let mut cfg = config(&[FaultKind::Partition]);
        cfg.faults = 40;
        let schedule = Schedule::generate(5, &cfg);
        let (mut blackholes, mut past) = (0, 0);
        for planned in &schedule.faults {
            let Fault::Partition {
                hold, blackhole, ..
            } = planned.fault
            else {
                panic!("{}", planned.fault);
            };
            blackholes += usize::from(blackhole);
            past += usize::from(hold > cfg.lease);
        }
        assert!((8..=32).contains(&blackholes), "{blackholes} of 40");
        assert!((8..=32).contains(&past), "{past} of 40");
    }

    #[test]
    fn kinds_parse_by_name() {
        assert_eq!(
            FaultKind::parse_list("cut,redis-restart"),
            Ok([FaultKind::Cut, FaultKind::RedisRestart]
                .into_iter()
                .collect())
        );
        assert_eq!(FaultKind::parse_list("all").map(|k| k.len()), Ok(11));
        assert!(FaultKind::parse_list("nope").is_err());
    }
}
