//! Whether an open connection is still alive: what the stream hears
//! between its frames, and when its silence means the connection is dead.
//!
//! A connection blackholed behind a live proxy (a NAT or load balancer that
//! dropped its state while the proxy keeps the client's TCP connection, and
//! answers its keepalive probes) carries nothing more, and nothing tells
//! either end: a quiet call on it waits for ever. Servers send keep-alive
//! comments on their SSE streams (`:` lines; upstream rmcp every 15 s by
//! default), but the SSE parser drops them before any client code sees a
//! frame. Their bytes still arrive, and bytes that arrive wake the task
//! reading the stream: [`Ear`] polls the stream under a waker of its own,
//! so that a wake followed by no frame is heard as bytes that made none (a
//! comment, or part of an event still on its way), with any HTTP client.
//!
//! What is heard is liveness, never progress: it resets no count, and ends
//! no quiet run. A stream that has shown its keep-alive cadence (two
//! comments in a row on one connection) and then stays silent for several
//! times as long ([`dead_after`]) is taken for dead: the machine drops the
//! connection and resumes with its cursor, as after a break. A server that
//! sends no keep-alive is never judged so: its silence may be a call still
//! working, as on a connection never cut.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use futures::StreamExt;
use futures::task::AtomicWaker;
use tokio::time::Instant;

use super::SseFrames;

/// The multiple of the keep-alive interval a stream may stay silent.
pub(super) const MISSED: u32 = 3;

/// Added to [`MISSED`] intervals: a server's timer and the network's delay.
pub(super) const SLACK: Duration = Duration::from_secs(5);

/// The shortest silence taken for a dead connection, whatever the cadence:
/// as long as the default client's TCP keepalive takes to find a dead path.
pub(super) const FLOOR: Duration = Duration::from_secs(30);

/// The shortest interval between two keep-alives that shows a cadence:
/// bytes closer together are a burst (padding a server sends to flush a
/// proxy, an event arriving in pieces), not a timer.
pub(super) const BURST: Duration = Duration::from_secs(1);

/// How long an open connection may carry nothing at all before it is taken
/// for dead, given the longest interval seen between two keep-alive comments
/// in a row on one of the stream's connections; `None`: never.
///
/// | Keep-alives seen | Silence taken for a dead connection |
/// |---|---|
/// | fewer than two in a row on one connection, at least 1 s apart, the second not followed by a frame within 1 s (`None`) | never: a server that sends none may be a call still working |
/// | two or more, longest interval `i` | `max(3 × i + 5 s, 30 s)` after the last byte |
/// | rmcp's default, `i` = 15 s | 50 s |
/// | `i` of 1 s to 8 s | 30 s |
/// | `i` of 60 s | 185 s |
///
/// The longest interval, not the latest: a cadence only ever lengthens what
/// is waited for. Two comments in a row are `i` apart both for a server whose
/// keep-alive ticks on its own and for one whose keep-alive restarts with
/// each event (sse-stream's, upstream rmcp's), so no event in between can
/// shorten `i`.
pub(super) fn dead_after(longest_keepalive: Option<Duration>) -> Option<Duration> {
    let interval = longest_keepalive?;
    Some(
        interval
            .saturating_mul(MISSED)
            .saturating_add(SLACK)
            .max(FLOOR),
    )
}

/// What a stream has heard: the last byte on the open connection, and the
/// cadence of its keep-alives.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hearing {
    /// When the open connection last carried anything (from its request, at
    /// first).
    last: Instant,
    /// The open connection's last keep-alive, if nothing came after it.
    anchor: Option<Instant>,
    /// The latest interval between two keep-alives in a row, and when its
    /// second came: not yet a cadence if a frame follows within [`BURST`]
    /// (the "comment" was the first bytes of an event).
    latest: Option<(Instant, Duration)>,
    /// The longest interval between two keep-alives in a row on one of the
    /// stream's connections, [`latest`](Self::latest) aside.
    longest: Option<Duration>,
}

impl Hearing {
    pub(super) fn new(now: Instant) -> Self {
        Self {
            last: now,
            anchor: None,
            latest: None,
            longest: None,
        }
    }

    /// Takes the latest interval for a cadence.
    fn settle(&mut self) {
        if let Some((_, interval)) = self.latest.take() {
            self.longest = Some(self.longest.map_or(interval, |l| l.max(interval)));
        }
    }

    /// A new connection opened `at`: nothing heard on it yet. The cadence is
    /// the server's, and is kept.
    pub(super) fn connected(&mut self, at: Instant) {
        self.settle();
        self.last = at;
        self.anchor = None;
    }

    /// A frame came (or the stream ended): the connection lives, and a run
    /// of keep-alives ends. Bytes heard just before it were the frame's.
    pub(super) fn frame(&mut self, now: Instant) {
        match self.latest {
            Some((at, _)) if now.saturating_duration_since(at) < BURST => self.latest = None,
            _ => self.settle(),
        }
        self.last = now;
        self.anchor = None;
    }

    /// Bytes came that made no frame: a keep-alive comment.
    pub(super) fn keepalive(&mut self, now: Instant) {
        let after = |at: Instant| now.saturating_duration_since(at);
        if let Some(anchor) = self.anchor
            && after(anchor) >= BURST
        {
            // Closer than that, a burst: it goes on from its last bytes.
            self.settle();
            self.latest = Some((now, after(anchor)));
        }
        self.anchor = Some(now);
        self.last = now;
    }

    /// The longest keep-alive interval seen.
    pub(super) fn cadence(&self) -> Option<Duration> {
        match (self.longest, self.latest) {
            (Some(longest), Some((_, latest))) => Some(longest.max(latest)),
            (longest, latest) => longest.or(latest.map(|(_, interval)| interval)),
        }
    }

    /// When the open connection is taken for dead if nothing more comes.
    pub(super) fn dead_at(&self) -> Option<Instant> {
        dead_after(self.cadence()).map(|after| crate::log::later(self.last, after))
    }

    /// How long the open connection has carried nothing, at `now`.
    pub(super) fn silence(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.last)
    }
}

/// Polls the open stream under a waker of its own, which notes that it was
/// woken before it wakes the task: the stream's source wakes it when bytes
/// arrive, so a wake that yields no frame is bytes that made none. One per
/// connection: a late wake from a connection already dropped (its source
/// may hold the waker) must not be heard on the next.
pub(super) struct Ear {
    flag: Arc<Flag>,
    waker: Waker,
}

struct Flag {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl Ear {
    fn new() -> Self {
        let flag = Arc::new(Flag {
            woken: AtomicBool::new(false),
            task: AtomicWaker::new(),
        });
        let waker = Waker::from(flag.clone());
        Self { flag, waker }
    }

    /// Polls `frames` once under `ear` (made at the first poll that finds
    /// nothing ready, so a stream whose frames are always ready never
    /// allocates one). The flag: whether the stream's source woke it since
    /// the last poll, that is, bytes came.
    pub(super) fn poll(
        ear: &mut Option<Self>,
        frames: &mut SseFrames,
        cx: &mut Context<'_>,
    ) -> (
        Poll<Option<Result<sse_stream::Sse, sse_stream::Error>>>,
        bool,
    ) {
        let ear = match ear {
            Some(ear) => ear,
            None => match frames.poll_next_unpin(cx) {
                Poll::Ready(next) => return (Poll::Ready(next), false),
                // Listen from now on: poll again under the ear, so that the
                // source wakes it, not the task directly.
                Poll::Pending => ear.insert(Self::new()),
            },
        };
        ear.flag.task.register(cx.waker());
        let mut own = Context::from_waker(&ear.waker);
        let next = frames.poll_next_unpin(&mut own);
        let woken = ear.flag.woken.swap(false, Ordering::AcqRel);
        (next, woken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    /// [`dead_after`]'s table, row by row.
    #[test]
    fn the_silence_taken_for_dead_follows_the_cadence_with_a_floor() {
        let rows = [
            (None, None),
            (Some(Duration::ZERO), Some(S(30))),
            (Some(S(1)), Some(S(30))),
            (Some(S(8)), Some(S(30))),
            (Some(S(9)), Some(S(32))),
            (Some(S(15)), Some(S(50))),
            (Some(S(60)), Some(S(185))),
            (Some(Duration::MAX), Some(Duration::MAX)),
        ];
        for (cadence, dead) in rows {
            assert_eq!(dead_after(cadence), dead, "{cadence:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_cadence_needs_two_keepalives_in_a_row_on_one_connection() {
        let t0 = Instant::now();
        let mut hearing = Hearing::new(t0);
        hearing.keepalive(t0 + S(15));
        assert_eq!(hearing.cadence(), None, "one keep-alive");
        hearing.frame(t0 + S(20));
        hearing.keepalive(t0 + S(35));
        assert_eq!(hearing.cadence(), None, "an event between two");
        hearing.connected(t0 + S(40));
        hearing.keepalive(t0 + S(55));
        assert_eq!(hearing.cadence(), None, "one on each connection");
        hearing.keepalive(t0 + S(70));
        assert_eq!(hearing.cadence(), Some(S(15)));
        assert_eq!(hearing.dead_at(), Some(t0 + S(120)));
        hearing.keepalive(t0 + S(71));
        assert_eq!(hearing.cadence(), Some(S(15)), "the longest is kept");
        assert_eq!(hearing.dead_at(), Some(t0 + S(121)), "from the last byte");
        let ms = Duration::from_millis;
        let mut burst = Hearing::new(t0);
        burst.keepalive(t0);
        burst.keepalive(t0 + ms(999));
        assert_eq!(burst.cadence(), None, "a burst is no cadence");
        burst.keepalive(t0 + S(2));
        assert_eq!(burst.cadence(), Some(ms(1001)));
        // An event whose first bytes came alone, 7 s after a comment: no
        // cadence of 7 s.
        let mut pieces = Hearing::new(t0);
        pieces.keepalive(t0);
        pieces.keepalive(t0 + S(7));
        assert_eq!(pieces.cadence(), Some(S(7)), "until the frame comes");
        pieces.keepalive(t0 + S(7) + ms(5));
        pieces.frame(t0 + S(7) + ms(20));
        assert_eq!(pieces.cadence(), None, "the bytes were the frame's");
        assert_eq!(pieces.dead_at(), None);
        // A frame a second or more after the second comment leaves it one.
        let mut kept = Hearing::new(t0);
        kept.keepalive(t0);
        kept.keepalive(t0 + S(15));
        kept.frame(t0 + S(16));
        assert_eq!(kept.cadence(), Some(S(15)));
        kept.keepalive(t0 + S(31));
        kept.keepalive(t0 + S(40));
        kept.keepalive(t0 + S(40) + ms(10));
        assert_eq!(
            kept.cadence(),
            Some(S(15)),
            "9 s, then a burst: the longest holds"
        );
        kept.frame(t0 + S(40) + ms(20));
        assert_eq!(kept.cadence(), Some(S(15)));
        hearing.connected(t0 + S(80));
        assert_eq!(
            hearing.dead_at(),
            Some(t0 + S(130)),
            "kept across connections"
        );
        assert_eq!(hearing.silence(t0 + S(90)), S(10));
    }
}
