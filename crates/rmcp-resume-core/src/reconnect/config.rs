//! The client's resumption knobs, and what it tells the application.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::resumption::{IdleTimeout, LostRange, StreamScope, UnprovenPolicy};

/// Events the application should know it did not get: a break in the
/// standalone stream, or notifications lost before a response that still
/// arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Discontinuity {
    /// The last event delivered before the loss.
    pub cursor: Option<String>,
    /// Why.
    pub reason: String,
    /// The events known to be lost, where the id scheme names them.
    pub lost: Option<LostRange>,
    /// Which stream lost them.
    pub stream: StreamScope,
}

impl Discontinuity {
    /// The standalone stream was given up for good: no further server
    /// notifications will arrive in this session.
    pub fn given_up(reason: String) -> Self {
        Self {
            cursor: None,
            reason,
            lost: None,
            stream: StreamScope::Standalone,
        }
    }
}

impl fmt::Display for Discontinuity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cursor = self.cursor.as_deref().unwrap_or("-");
        let stream = match self.stream {
            StreamScope::Request => "request",
            StreamScope::Standalone => "standalone",
        };
        write!(
            f,
            "{stream} stream lost events after cursor {cursor}: {}",
            self.reason
        )?;
        if let Some(lost) = &self.lost {
            write!(f, " (lost {lost})")?;
        }
        Ok(())
    }
}

/// When the client judges a stream's ids by rmcp's per-stream counter rules
/// (`N`, `N/M`: the next id is `N+1`, so a jump is a gap and an earlier id a
/// rewind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum IdRules {
    /// Once the server vouches for them with an `mcp-replay` notice, as
    /// rmcp-resume's server does on every resume. Until then ids are opaque:
    /// the spec asks only that they be unique, and a conforming server with
    /// one session-wide counter gives a stream `1, 3, 6`; only an exact
    /// repeat is dropped.
    #[default]
    WhenVouched,
    /// Always: the peer is known to number each stream `N`, `N+1`, …
    Rmcp,
}

/// Called once per [`Discontinuity`].
pub type DiscontinuityObserver = Arc<dyn Fn(&Discontinuity) + Send + Sync>;

/// The client's resumption knobs.
///
/// # How attempts are bounded
///
/// Every reconnect is an attempt, and these limits apply at once; the first
/// one reached ends the stream (a request fails with its cursor named; the
/// standalone stream keeps its cursor when the server was only unreachable,
/// and otherwise drops it, reports a [`Discontinuity`] and starts afresh):
///
/// | Limit | Counts | Reset by |
/// |---|---|---|
/// | the retry policy's `max_times` | every attempt that brought no progress, whatever its cause; also gives the delays (the count passed is at most 16) | progress |
/// | [`max_failed_resumes`](Self::max_failed_resumes) | resumes the server answered without progress: an empty close, a vouched server's silence, a `5xx` other than `502`, `503`, `504` | progress, or a new cursor |
/// | [`max_transport_failures`](Self::max_transport_failures) | failures in transit: a broken connection, one taken for dead when its keep-alives stopped, a failed or timed-out `GET`, a `429`, `502`, `503` or `504` | progress, or a new cursor |
/// | [`conflict_wait`](Self::conflict_wait) | time since the first `409` (the server still counts the previous connection as open); `409`s are not counted | progress |
/// | [`resume_deadline`](Self::resume_deadline) (request streams) | time since the first failed attempt | progress |
///
/// A refusal of the cursor (a `4xx`, `204`) is not counted: it ends a
/// request stream at once, and the standalone stream drops the cursor.
///
/// Progress is something new: an event id the stream has not delivered,
/// the request's response, a connection the server held open for
/// [`silent_resume_timeout`](Self::silent_resume_timeout) or 5 s,
/// whichever is less, counted from the request (having acknowledged the
/// cursor with its `mcp-replay` notice, if it vouched for rmcp's rules), or
/// an acknowledged poll (the notice, then a close). So a path whose
/// connections live 5 s or more costs a call nothing. Nothing else (a copy
/// of an event already delivered, a message without an id, a priming frame
/// that repeats the cursor, an acknowledgement broken at once) resets a
/// count. A held connection that ends on the cursor it began with costs no
/// count, but makes the next ones rarer: silent resumes of a server that
/// never vouched are refreshed after 10 s, doubling up to 10 min, and
/// `GET`s after such connections are spaced 1 s, doubling up to
/// [`max_delay`](Self::max_delay), start to start. No connection is
/// followed at once unless it lived 1 s or brought something new.
///
/// # Every wait, and what ends it
///
/// | Wait | Ends after | Then |
/// |---|---|---|
/// | a reconnect `GET`'s answer | [`connect_timeout`](Self::connect_timeout) (30 s) | a failure in transit |
/// | a vouched server's first frame on a resume | [`silent_resume_timeout`](Self::silent_resume_timeout) (10 s) | a failed resume |
/// | any other server's first frame on a resume | [`silent_resume_timeout`](Self::silent_resume_timeout) (10 s), doubled per quiet refresh in a row, up to 10 min | the resume is refreshed, counted as progress |
/// | the delay before a reconnect (the policy's, the server's `retry`, `Retry-After`, a quiet run's spacing) | [`max_delay`](Self::max_delay) (30 s), its cap | the reconnect |
/// | a server answering `409` (it still counts the previous connection as open) | [`conflict_wait`](Self::conflict_wait) (2 min) from the first `409`, asked 1 s, 2 s, 4 s … apart, at most 10 s (or `max_delay`): at most 2 + ⌈log₂ 10⌉ + ⌈120 / 10⌉ = 18 `GET`s | the stream gives up, as when `max_transport_failures` runs out |
/// | a request stream failing to resume | [`resume_deadline`](Self::resume_deadline) (2 min) | the request fails |
/// | an open connection that has sent two keep-alive comments in a row, then nothing | 3 × the longest interval between two + 5 s, at least 30 s, after its last byte (50 s for rmcp's 15 s keep-alive) | a failure in transit: the stream is resumed |
/// | an open stream with no event | [`idle_timeout`](Self::idle_timeout) (off) | the stream is resumed |
/// | a request's answer, right after its response head | [`answer_wait`](Self::answer_wait) (10 ms) | the stream is read as usual |
///
/// A stream the server holds open and keeps quiet is a call still working,
/// as on a connection never cut: it ends with the request's own timeout
/// (rmcp's `PeerRequestOptions`), or the idle timeout when one is set.
#[derive(Clone)]
#[non_exhaustive]
pub struct ResumeConfig {
    /// What to do when a reconnect cannot be checked (opaque ids, no
    /// acknowledgement). Default: [`UnprovenPolicy::Lenient`], since most
    /// peers cannot prove continuity; the strict choice fails such resumes.
    pub unproven: UnprovenPolicy,
    /// Consecutive resumes with one cursor that the server answered but
    /// that brought nothing (an empty close, a `5xx` that is not a gateway's) before a request
    /// stream fails, or the standalone stream drops its cursor. Default 3.
    pub max_failed_resumes: usize,
    /// Consecutive failures in transit with one cursor (a broken
    /// connection, one taken for dead, a `GET` that failed or timed out)
    /// before the same.
    /// Default 5. The retry policy's `max_times` bounds all attempts too.
    /// A `409` is not one: see [`conflict_wait`](Self::conflict_wait).
    pub max_transport_failures: usize,
    /// How long a reconnect answered `409 Conflict` is tried again, from the
    /// first `409` since the stream's last progress. A `409` says the server
    /// still counts the stream's previous connection as open (the
    /// TypeScript SDK answers so until it sees that connection end, which a
    /// half-open connection can take a minute or more), so it ends by time,
    /// not by count: `409`s are not counted toward
    /// [`max_transport_failures`](Self::max_transport_failures), and the
    /// `GET`s between are spaced 1 s, 2 s, 4 s, … up to 10 s (or
    /// [`max_delay`](Self::max_delay), if less), the first at once when it
    /// is the first failure since progress. With `C` that cap, a run of
    /// `409`s holds at most `2 + ⌈log₂(C / 1 s)⌉ + ⌈conflict_wait / C⌉`
    /// `GET`s (18 with the defaults). The first `409` this long after the
    /// first ends the wait: a request stream fails (`exhausted`), the
    /// standalone stream keeps its cursor and goes on at the retry policy's
    /// pace. A request stream's [`resume_deadline`](Self::resume_deadline)
    /// ends it too, whichever comes first. Default 2 min; zero gives up at
    /// the first `409`.
    pub conflict_wait: Duration,
    /// Set only through [`with_idle_timeout`](Self::with_idle_timeout), which
    /// validates it.
    idle_timeout: Option<Duration>,
    /// Told about every standalone-stream discontinuity.
    pub on_discontinuity: Option<DiscontinuityObserver>,
    /// When ids are judged as rmcp's counters. Default: once vouched for.
    pub id_rules: IdRules,
    /// How long a reconnect `GET` may take to answer before it counts as a
    /// failed attempt. Default 30 s.
    pub connect_timeout: Duration,
    /// How long a resume may send nothing at all (no notice, no event)
    /// before the client acts. A server that vouched for rmcp's rules always
    /// sends its notice first, so its silence is a failed resume, tried again
    /// with the policy's backoff. Any other server's silence is a call still
    /// working; the resume is refreshed with the same cursor (some servers
    /// attach a resume that comes early to nothing) and nothing is counted.
    /// Default 10 s.
    pub silent_resume_timeout: Duration,
    /// The longest delay before any reconnect: the retry policy's, the
    /// server's `retry` and a `Retry-After` are each honoured up to this.
    /// Default 30 s. This cap, `silent_resume_timeout`, the idle timeout and
    /// any zero delay after the first retry are each taken as at least 1 s,
    /// so that no setting makes a loop without pause.
    pub max_delay: Duration,
    /// How long a request stream may go on failing to resume (from its
    /// first failed attempt, until progress) before the request fails.
    /// Default 2 min: the longest the other limits allow with the default
    /// policy is about that.
    pub resume_deadline: Duration,
    /// How long a request's `POST` goes on reading its response stream for
    /// the answer, where the client's worker can use an answer read there
    /// (see [`answer_within`](crate::reconnect::answer_within)). An answer
    /// that is the stream's first message and comes within this is handed
    /// over as the `POST`'s result, without a stream; anything else hands
    /// the stream over as it is, with nothing lost. While it waits, the
    /// `POST` is still in flight for the worker: rmcp 3.x holds its slot,
    /// and anything that waits for every `POST` (an ordering barrier, a
    /// session's recovery), for at most this long. Needs tokio's time
    /// driver, as upstream's worker does. Default 10 ms; zero never waits.
    pub answer_wait: Duration,
}

impl Default for ResumeConfig {
    fn default() -> Self {
        Self {
            unproven: UnprovenPolicy::Lenient,
            max_failed_resumes: 3,
            max_transport_failures: 5,
            conflict_wait: Self::DEFAULT_CONFLICT_WAIT,
            idle_timeout: None,
            on_discontinuity: None,
            id_rules: IdRules::WhenVouched,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            silent_resume_timeout: Self::DEFAULT_SILENT_RESUME_TIMEOUT,
            resume_deadline: Self::DEFAULT_RESUME_DEADLINE,
            max_delay: Self::DEFAULT_MAX_DELAY,
            answer_wait: Self::DEFAULT_ANSWER_WAIT,
        }
    }
}

impl ResumeConfig {
    /// Default [`connect_timeout`](Self::connect_timeout).
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default [`silent_resume_timeout`](Self::silent_resume_timeout).
    pub const DEFAULT_SILENT_RESUME_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default [`resume_deadline`](Self::resume_deadline).
    pub const DEFAULT_RESUME_DEADLINE: Duration = Duration::from_secs(120);
    /// Default [`max_delay`](Self::max_delay).
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(30);
    /// Default [`answer_wait`](Self::answer_wait).
    pub const DEFAULT_ANSWER_WAIT: Duration = Duration::from_millis(10);
    /// Default [`conflict_wait`](Self::conflict_wait).
    pub const DEFAULT_CONFLICT_WAIT: Duration = Duration::from_secs(120);

    /// Sets [`max_delay`](Self::max_delay).
    pub fn with_max_delay(self, max_delay: Duration) -> Self {
        Self { max_delay, ..self }
    }

    /// A stream with no event for this long is treated as stalled and
    /// resumed. `None` (the default) never does; see [`IdleTimeout`].
    ///
    /// Only events count: keep-alive comments are dropped by the SSE parser
    /// before the client sees a frame, so the timeout must exceed the
    /// longest silence between events the server may keep, not its
    /// keep-alive. (Their bytes are heard all the same, and a connection
    /// whose keep-alives stop is resumed without this timeout; see the
    /// table of waits above.)
    pub fn idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout
    }

    /// Sets [`resume_deadline`](Self::resume_deadline).
    pub fn with_resume_deadline(self, resume_deadline: Duration) -> Self {
        Self {
            resume_deadline,
            ..self
        }
    }

    /// Sets [`silent_resume_timeout`](Self::silent_resume_timeout).
    pub fn with_silent_resume_timeout(self, silent_resume_timeout: Duration) -> Self {
        Self {
            silent_resume_timeout,
            ..self
        }
    }

    /// Sets [`connect_timeout`](Self::connect_timeout).
    pub fn with_connect_timeout(self, connect_timeout: Duration) -> Self {
        Self {
            connect_timeout,
            ..self
        }
    }

    /// Sets [`answer_wait`](Self::answer_wait).
    pub fn with_answer_wait(self, answer_wait: Duration) -> Self {
        Self {
            answer_wait,
            ..self
        }
    }

    /// Sets [`unproven`](Self::unproven).
    pub fn with_unproven(self, unproven: UnprovenPolicy) -> Self {
        Self { unproven, ..self }
    }

    /// Sets [`max_transport_failures`](Self::max_transport_failures).
    pub fn with_max_transport_failures(self, max_transport_failures: usize) -> Self {
        Self {
            max_transport_failures,
            ..self
        }
    }

    /// Sets [`conflict_wait`](Self::conflict_wait).
    pub fn with_conflict_wait(self, conflict_wait: Duration) -> Self {
        Self {
            conflict_wait,
            ..self
        }
    }

    /// Sets [`max_failed_resumes`](Self::max_failed_resumes).
    pub fn with_max_failed_resumes(self, max_failed_resumes: usize) -> Self {
        Self {
            max_failed_resumes,
            ..self
        }
    }

    /// Sets the idle timeout, validated against the server's keep-alive.
    pub fn with_idle_timeout(self, idle: IdleTimeout) -> Self {
        Self {
            idle_timeout: Some(idle.get()),
            ..self
        }
    }

    /// Sets [`id_rules`](Self::id_rules).
    pub fn with_id_rules(self, id_rules: IdRules) -> Self {
        Self { id_rules, ..self }
    }

    /// Calls `observer` on every standalone-stream discontinuity.
    pub fn on_discontinuity(
        self,
        observer: impl Fn(&Discontinuity) + Send + Sync + 'static,
    ) -> Self {
        Self {
            on_discontinuity: Some(Arc::new(observer)),
            ..self
        }
    }
}

impl fmt::Debug for ResumeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResumeConfig")
            .field("unproven", &self.unproven)
            .field("max_failed_resumes", &self.max_failed_resumes)
            .field("max_transport_failures", &self.max_transport_failures)
            .field("conflict_wait", &self.conflict_wait)
            .field("idle_timeout", &self.idle_timeout)
            .field("on_discontinuity", &self.on_discontinuity.is_some())
            .field("id_rules", &self.id_rules)
            .field("connect_timeout", &self.connect_timeout)
            .field("silent_resume_timeout", &self.silent_resume_timeout)
            .field("resume_deadline", &self.resume_deadline)
            .field("max_delay", &self.max_delay)
            .field("answer_wait", &self.answer_wait)
            .finish()
    }
}
