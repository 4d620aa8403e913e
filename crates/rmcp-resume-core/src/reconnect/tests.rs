//! Scripted servers against the resuming stream, on tokio's paused clock:
//! delays are asserted exactly, attempts are counted, nothing is timed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use sse_stream::Sse;
use tokio::time::Instant;

use super::*;
use crate::resumption::{ContinuityError, IdleTimeout, ResumptionError, StreamScope};

#[derive(Debug, thiserror::Error)]
#[error("HTTP {0}")]
struct Status(u16, Option<Duration>);

/// One scripted answer to a GET.
enum Answer {
    /// 200 with these frames, then a clean close.
    Frames(Vec<Sse>),
    /// 200 with these frames, then silence forever.
    Stall(Vec<Sse>),
    /// An HTTP error.
    Status(u16),
    /// 200 with these frames, then the connection breaks.
    Break(Vec<Sse>),
    /// The GET never answers.
    Hang,
    /// 200 with these frames, then silence for this long, then the
    /// connection breaks (a proxy that limits a connection's lifetime).
    BreakAfter(Vec<Sse>, Duration),
    /// 200 with these frames, then an event over the client's size limit.
    Oversize(Vec<Sse>),
    /// An HTTP error with a `Retry-After`.
    Busy(u16, Duration),
    /// This HTTP error to every `GET` made in the script's first this long,
    /// then the answer (a server that lets go of a half-open connection
    /// only when it finds it dead).
    StatusFor(u16, Duration, Box<Answer>),
}

/// The error a client's size limit gives (see `Connector::break_is_final`).
#[derive(Debug, thiserror::Error)]
#[error("SSE event over the size limit")]
struct TooLarge;

/// When each GET was made (since the script started) and with which cursor.
type Entry = (Duration, Option<String>);

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Entry>>>);

impl Log {
    fn entries(&self) -> Vec<Entry> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn cursors(&self) -> Vec<Option<String>> {
        self.entries().into_iter().map(|(_, c)| c).collect()
    }

    /// Time between consecutive GETs.
    fn gaps(&self) -> Vec<Duration> {
        let at: Vec<_> = self.entries().into_iter().map(|(t, _)| t).collect();
        at.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

struct Script {
    answers: VecDeque<Answer>,
    /// Answer once the script runs out.
    then: fn() -> Answer,
    /// Once the script runs out, the answer to a `GET` without a cursor,
    /// where it differs from `then` (a server that refuses only resumes).
    fresh: Option<fn() -> Answer>,
    log: Log,
    start: Instant,
}

impl Script {
    fn new(answers: Vec<Answer>, then: fn() -> Answer) -> (Self, Log) {
        let log = Log::default();
        let script = Self {
            answers: answers.into(),
            then,
            fresh: None,
            log: log.clone(),
            start: Instant::now(),
        };
        (script, log)
    }

    /// Answers a `GET` without a cursor with `fresh` once the script runs out.
    fn with_fresh(self, fresh: fn() -> Answer) -> Self {
        Self {
            fresh: Some(fresh),
            ..self
        }
    }
}

impl Connector for Script {
    type Error = Status;

    fn connect(
        &mut self,
        last_event_id: Option<&str>,
    ) -> BoxFuture<'static, Result<SseFrames, Status>> {
        if let Ok(mut log) = self.log.0.lock() {
            log.push((self.start.elapsed(), last_event_id.map(str::to_owned)));
        }
        let then = match (last_event_id, self.fresh) {
            (None, Some(fresh)) => fresh,
            _ => self.then,
        };
        let mut answer = self.answers.pop_front().unwrap_or_else(then);
        while let Answer::StatusFor(status, until, then) = answer {
            answer = if self.start.elapsed() < until {
                Answer::Status(status)
            } else {
                *then
            };
        }
        Box::pin(async move {
            match answer {
                Answer::Frames(frames) => Ok(opened(frames)),
                Answer::Stall(frames) => Ok(futures::stream::iter(frames.into_iter().map(Ok))
                    .chain(futures::stream::pending())
                    .boxed()),
                Answer::Status(status) => Err(Status(status, None)),
                Answer::Busy(status, after) => Err(Status(status, Some(after))),
                // Resolved above; never reached.
                Answer::StatusFor(status, ..) => Err(Status(status, None)),
                Answer::BreakAfter(frames, after) => {
                    let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
                    let broken = sse_stream::Error::Body(Box::new(reset));
                    Ok(futures::stream::iter(frames.into_iter().map(Ok))
                        .chain(futures::stream::once(async move {
                            tokio::time::sleep(after).await;
                            Err(broken)
                        }))
                        .boxed())
                }
                Answer::Oversize(frames) => {
                    let broken = sse_stream::Error::Body(Box::new(TooLarge));
                    Ok(futures::stream::iter(frames.into_iter().map(Ok))
                        .chain(futures::stream::once(async move { Err(broken) }))
                        .boxed())
                }
                Answer::Hang => std::future::pending().await,
                Answer::Break(frames) => {
                    let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
                    let broken = sse_stream::Error::Body(Box::new(reset));
                    Ok(futures::stream::iter(frames.into_iter().map(Ok))
                        .chain(futures::stream::once(async move { Err(broken) }))
                        .boxed())
                }
            }
        })
    }

    fn classify(&self, error: &Status) -> ReconnectDisposition {
        http::StatusCode::from_u16(error.0).map_or(
            ReconnectDisposition::Retry,
            ReconnectDisposition::for_status,
        )
    }

    fn retry_after(&self, error: &Status) -> Option<Duration> {
        error.1
    }

    fn break_is_final(&self, error: &sse_stream::Error) -> bool {
        matches!(error, sse_stream::Error::Body(e) if e.is::<TooLarge>())
    }
}

/// An open stream that delivers `frames`, then closes.
fn opened(frames: Vec<Sse>) -> SseFrames {
    futures::stream::iter(frames.into_iter().map(Ok)).boxed()
}

fn message(id: &str, data: &str) -> Sse {
    Sse {
        event: None,
        data: Some(data.to_owned()),
        id: Some(id.to_owned()),
        retry: None,
    }
}

fn progress(id: &str, step: u32) -> Sse {
    message(
        id,
        &format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"t","progress":{step}}}}}"#
        ),
    )
}

fn list_changed(id: &str) -> Sse {
    message(
        id,
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
    )
}

type Seen = Arc<Mutex<Vec<Discontinuity>>>;

/// A config whose discontinuities are recorded.
fn recording(config: ResumeConfig) -> (ResumeConfig, Seen) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let config = config.on_discontinuity(move |gap| {
        if let Ok(mut seen) = sink.lock() {
            seen.push(gap.clone());
        }
    });
    (config, seen)
}

fn seen(seen: &Seen) -> Vec<Discontinuity> {
    seen.lock().map(|s| s.clone()).unwrap_or_default()
}

fn response(id: &str) -> Sse {
    message(id, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)
}

fn priming(id: &str, retry_ms: u64) -> Sse {
    Sse {
        event: None,
        data: Some(String::new()),
        id: Some(id.to_owned()),
        retry: Some(retry_ms),
    }
}

fn notice(cursor: &str, floor: Option<&str>, complete: bool) -> Sse {
    let floor = floor.map_or("null".to_owned(), |f| format!("\"{f}\""));
    Sse {
        event: Some("mcp-replay".to_owned()),
        data: Some(format!(
            r#"{{"cursor":"{cursor}","floor":{floor},"complete":{complete}}}"#
        )),
        id: None,
        retry: None,
    }
}

/// A delay that doubles from `base` (`growth` 2) or stays fixed (`growth`
/// 1), for at most `max_times` consecutive failures.
#[derive(Debug)]
struct Policy {
    max_times: Option<usize>,
    base: Duration,
    growth: u32,
}

impl RetryPolicy for Policy {
    fn retry(&self, failures: usize) -> Option<Duration> {
        if self.max_times.is_some_and(|max| failures >= max) {
            return None;
        }
        let exponent = u32::try_from(failures).unwrap_or(u32::MAX);
        Some(
            self.base
                .saturating_mul(self.growth.saturating_pow(exponent)),
        )
    }
}

fn fixed(max_times: Option<usize>, ms: u64) -> Arc<dyn RetryPolicy> {
    let base = Duration::from_millis(ms);
    Arc::new(Policy {
        max_times,
        base,
        growth: 1,
    })
}

fn backoff(max_times: Option<usize>, base_ms: u64) -> Arc<dyn RetryPolicy> {
    let base = Duration::from_millis(base_ms);
    Arc::new(Policy {
        max_times,
        base,
        growth: 2,
    })
}

/// The resuming stream's message frames: those with data, as the JSON-RPC
/// layer above it sees them.
fn resuming_sse_stream(
    first: Option<SseFrames>,
    cursor: Option<String>,
    connector: Script,
    scope: StreamScope,
    policy: Arc<dyn RetryPolicy>,
    config: ResumeConfig,
) -> impl futures::Stream<Item = Result<Sse, ResumeStreamError<Status>>> {
    resuming_frames(first, cursor, connector, scope, policy, config).filter(|frame| {
        let keep = match frame {
            Ok(sse) => sse.data.as_deref().is_some_and(|d| !d.is_empty()),
            Err(_) => true,
        };
        std::future::ready(keep)
    })
}

/// A standalone stream the application opened (`first`), resumed through
/// `connector` 10 ms after a failure: the shape of most live-stream cases.
fn live_standalone(
    first: SseFrames,
    connector: Script,
    config: ResumeConfig,
) -> impl futures::Stream<Item = Result<Sse, ResumeStreamError<Status>>> {
    resuming_sse_stream(
        Some(first),
        None,
        connector,
        StreamScope::Standalone,
        fixed(None, 10),
        config,
    )
}

type Outcome = (Vec<Sse>, Option<ResumeStreamError<Status>>);

/// The most virtual time [`drain`] waits for a stream's end.
const DRAIN_LIMIT: Duration = Duration::from_secs(48 * 3600);

/// Drives the stream to its end, bounded in items and in virtual time, so
/// that a stream that loops (yielding, or reconnecting without a word)
/// fails the test instead of hanging it.
async fn drain(
    stream: impl futures::Stream<Item = Result<Sse, ResumeStreamError<Status>>>,
) -> Outcome {
    match tokio::time::timeout(DRAIN_LIMIT, drain_items(stream)).await {
        Ok(outcome) => outcome,
        Err(_) => panic!("stream still running after {DRAIN_LIMIT:?} of virtual time"),
    }
}

/// [`drain`]'s loop, bounded in items.
async fn drain_items(
    stream: impl futures::Stream<Item = Result<Sse, ResumeStreamError<Status>>>,
) -> Outcome {
    let mut stream = std::pin::pin!(stream);
    let mut messages = Vec::new();
    for _ in 0..1000 {
        match stream.next().await {
            Some(Ok(message)) => messages.push(message),
            Some(Err(error)) => return (messages, Some(error)),
            None => return (messages, None),
        }
    }
    panic!(
        "stream still running after 1000 items: {} messages",
        messages.len()
    );
}

/// A request stream under the default config, read to its end.
async fn request_stream(
    first: Option<SseFrames>,
    cursor: Option<String>,
    script: Script,
) -> Outcome {
    let stream = resuming_sse_stream(
        first,
        cursor,
        script,
        StreamScope::Request,
        fixed(Some(3), 10),
        ResumeConfig::default(),
    );
    drain(stream).await
}

/// A stream that stays open after its frames: read until the test's horizon.
async fn read_for(
    stream: impl futures::Stream<Item = Result<Sse, ResumeStreamError<Status>>>,
    horizon: Duration,
) -> Outcome {
    let mut messages = Vec::new();
    let mut stream = std::pin::pin!(stream);
    let end = tokio::time::sleep(horizon);
    let mut end = std::pin::pin!(end);
    loop {
        tokio::select! {
            _ = &mut end => return (messages, None),
            next = stream.next() => match next {
                Some(Ok(sse)) => messages.push(sse),
                Some(Err(error)) => return (messages, Some(error)),
                None => return (messages, None),
            },
        }
    }
}

/// The ids of `messages`, in order.
fn ids(messages: &[Sse]) -> Vec<String> {
    messages.iter().filter_map(|m| m.id.clone()).collect()
}

fn cut_after(cursor: &str) -> Option<String> {
    Some(cursor.to_owned())
}

#[tokio::test(start_paused = true)]
async fn empty_200_server_grows_delays_and_is_bounded() {
    // Upstream made 45 GETs in 500 ms against this server with max_times 3.
    let (script, log) = Script::new(vec![], || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        backoff(Some(10), 100),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(messages.is_empty());
    assert!(
        matches!(
            error,
            Some(ResumeStreamError::Resumption(
                ResumptionError::EmptyStream { .. }
            ))
        ),
        "{error:?}"
    );
    // max_failed_resumes (3) empty closes, every one with the same cursor.
    assert_eq!(log.cursors(), vec![cut_after("3/1"); 3]);
    assert_eq!(
        log.gaps(),
        [Duration::from_millis(100), Duration::from_millis(200)]
    );
}

#[tokio::test(start_paused = true)]
async fn max_times_is_honoured_when_it_is_smaller() {
    let (script, log) = Script::new(vec![], || Answer::Frames(vec![]));
    let config = ResumeConfig::default().with_max_failed_resumes(100);
    let stream = resuming_sse_stream(
        None,
        cut_after("0"),
        script,
        StreamScope::Request,
        fixed(Some(3), 10),
        config,
    );
    let (_, error) = drain(stream).await;
    assert!(
        matches!(
            error,
            Some(ResumeStreamError::Exhausted { attempts: 3, .. })
        ),
        "{error:?}"
    );
    assert_eq!(log.entries().len(), 4, "the first GET plus 3 retries");
    assert_eq!(log.gaps(), [Duration::from_millis(10); 3]);
}

#[tokio::test(start_paused = true)]
async fn rejected_cursor_fails_the_request_at_once() {
    let (script, log) = Script::new(vec![Answer::Status(400)], || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("2/4"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (_, error) = drain(stream).await;
    let error = error.map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("2/4") && error.contains("400"), "{error}");
    assert_eq!(log.entries().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn gap_after_reconnect_fails_with_the_lost_range() {
    let (script, _) = Script::new(
        // The notice vouches for rmcp's counter rules.
        vec![Answer::Frames(vec![
            notice("3/1", None, true),
            progress("9/1", 9),
            response("10/1"),
        ])],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(
        messages.is_empty(),
        "nothing after a gap is delivered as if whole"
    );
    match error {
        Some(ResumeStreamError::Resumption(err @ ResumptionError::Gap { .. })) => {
            assert_eq!(
                err.lost().map(|l| (l.first.index, l.last.index)),
                Some((4, 8))
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn mid_stream_jump_is_reported() {
    let first = opened(vec![
        priming("0/2", 1000),
        progress("1/2", 1),
        progress("5/2", 5),
    ]);
    let (script, _) = Script::new(vec![], || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default().with_id_rules(IdRules::Rmcp),
    );
    let (messages, error) = drain(stream).await;
    assert_eq!(messages.len(), 1);
    assert!(
        matches!(
            error,
            Some(ResumeStreamError::Continuity(ContinuityError::Gap { .. }))
        ),
        "{error:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn session_wide_counter_ids_are_not_gaps_until_the_server_vouches() {
    // A conforming server numbering events across the session: this stream
    // sees 1, 3, 6. Nothing is missing, and the response must arrive.
    let first = opened(vec![priming("1", 1000), progress("3", 1), response("6")]);
    let (script, log) = Script::new(vec![], || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 2, "the progress and the response");
    assert!(log.entries().is_empty(), "no reconnect");
}

#[tokio::test(start_paused = true)]
async fn a_response_that_arrives_after_a_gap_is_delivered() {
    let first = opened(vec![
        priming("0/2", 1000),
        progress("1/2", 1),
        response("5/2"),
    ]);
    let (script, log) = Script::new(vec![], || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default().with_id_rules(IdRules::Rmcp),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 2, "the response is never thrown away");
    assert!(log.entries().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_rewind_is_reported_once_vouched_and_unproven_otherwise() {
    // Vouched: a resume from 5/1 answered with 1/1 is a rewind, not
    // duplicates to drop.
    let (script, _) = Script::new(
        vec![Answer::Frames(vec![
            notice("5/1", Some("1/1"), true),
            progress("1/1", 1),
            response("2/1"),
        ])],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("5/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(messages.is_empty(), "{messages:?}");
    assert!(
        matches!(
            error,
            Some(ResumeStreamError::Resumption(
                ResumptionError::Discontinuous { .. }
            ))
        ),
        "{error:?}"
    );

    // Not vouched: the ids are opaque, so everything is delivered (the
    // lenient policy marks the resume unproven), nothing dropped.
    let (script, _) = Script::new(
        vec![Answer::Frames(vec![progress("1", 1), response("2")])],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("5"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_standalone_rewind_is_a_reported_discontinuity() {
    let first = opened(vec![list_changed("4"), list_changed("5")]);
    let (script, _) = Script::new(
        vec![Answer::Frames(vec![
            notice("5", Some("1"), true),
            list_changed("2"),
        ])],
        || Answer::Stall(vec![]),
    );
    let (config, gaps) = recording(ResumeConfig::default().with_id_rules(IdRules::Rmcp));
    let stream = live_standalone(first, script, config);
    let mut stream = std::pin::pin!(stream);
    for _ in 0..2 {
        assert!(matches!(stream.next().await, Some(Ok(_))));
    }
    // The first stream closes; the resume from 5 starts at 2.
    let gap = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            if let Some(gap) = seen(&gaps).first().cloned() {
                return gap;
            }
            // The stream stalls after the fresh start; the report came first.
            let _ = tokio::time::timeout(Duration::from_secs(1), stream.next()).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no discontinuity reported"));
    assert_eq!(gap.cursor.as_deref(), Some("5"));
}

#[tokio::test(start_paused = true)]
async fn resent_cursor_event_is_dropped_not_delivered_twice() {
    // Upstream rmcp servers replay the cursor event itself first.
    let (script, _) = Script::new(
        vec![Answer::Frames(vec![
            progress("3/1", 3),
            progress("4/1", 4),
            response("5/1"),
        ])],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(Some(0), 10),
        ResumeConfig::default(),
    );
    let (messages, _) = drain(stream).await;
    assert_eq!(
        messages.len(),
        2,
        "4/1 and the response; 3/1 was already delivered"
    );
}

#[tokio::test(start_paused = true)]
async fn session_lost_on_404() {
    let (script, log) = Script::new(vec![Answer::Status(404)], || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("1"),
        script,
        StreamScope::Standalone,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (_, error) = drain(stream).await;
    assert!(
        matches!(error, Some(ResumeStreamError::SessionLost(Status(404, _)))),
        "{error:?}"
    );
    assert_eq!(log.entries().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn stalled_stream_is_resumed_with_its_cursor_after_the_idle_timeout() {
    let (script, log) = Script::new(vec![Answer::Frames(vec![response("2/1")])], || {
        Answer::Frames(vec![])
    });
    let first = futures::stream::iter([priming("0/1", 1000), progress("1/1", 1)].map(Ok))
        .chain(futures::stream::pending())
        .boxed();
    let idle = IdleTimeout::new(
        Duration::from_secs(31),
        Some(Duration::from_secs(15)),
        Duration::from_secs(15),
    );
    let config = ResumeConfig::default().with_idle_timeout(idle.expect("31 s > 15 s + 15 s"));
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(Some(0), 10),
        config,
    );
    let mut stream = std::pin::pin!(stream);
    // The worker stops reading at the response, as here.
    assert!(matches!(stream.next().await, Some(Ok(_))), "progress");
    // Bounded in virtual time: a stream that never resumes fails the test
    // instead of hanging it (the stalled connection sets no timer).
    let next = tokio::time::timeout(Duration::from_secs(3600), stream.next()).await;
    assert!(
        matches!(next, Ok(Some(Ok(_)))),
        "the response, after the resume"
    );
    assert_eq!(log.cursors(), [cut_after("1/1")]);
    let at: Vec<Duration> = log.entries().into_iter().map(|(t, _)| t).collect();
    assert_eq!(at, [Duration::from_secs(31)], "resumed at the idle timeout");
}

#[tokio::test(start_paused = true)]
async fn event_store_poller_keeps_its_cursor_and_does_not_escalate() {
    // SEP-1699 polling against a server that acknowledges "nothing new yet":
    // each acknowledgement is progress, so the delay stays the first one and
    // a policy's `max_times` is never reached.
    let (script, log) = Script::new(
        vec![
            Answer::Frames(vec![notice("7", Some("1"), true)]),
            Answer::Frames(vec![notice("7", Some("1"), true)]),
            Answer::Frames(vec![notice("7", Some("1"), true), progress("8", 8)]),
        ],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("7"),
        script,
        StreamScope::Request,
        backoff(Some(1), 100),
        ResumeConfig::default(),
    );
    let mut stream = std::pin::pin!(stream);
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(_))), "{first:?}");
    assert_eq!(
        log.cursors(),
        vec![cut_after("7"); 3],
        "the cursor is never dropped"
    );
    assert_eq!(log.gaps(), [Duration::from_millis(100); 2]);
}

#[tokio::test(start_paused = true)]
async fn polling_close_after_priming_is_progress_and_honours_retry() {
    let first = opened(vec![priming("0/3", 500)]);
    let (script, log) = Script::new(
        vec![
            Answer::Frames(vec![priming("1/3", 500)]),
            Answer::Frames(vec![response("2/3")]),
        ],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        Some(first),
        cut_after("0/3"),
        script,
        StreamScope::Request,
        fixed(Some(1), 10),
        ResumeConfig::default(),
    );
    let mut stream = std::pin::pin!(stream);
    assert!(matches!(stream.next().await, Some(Ok(_))));
    assert_eq!(log.cursors(), [cut_after("0/3"), cut_after("1/3")]);
    assert_eq!(
        log.gaps(),
        [Duration::from_millis(500)],
        "server's retry, not the policy's"
    );
}

#[tokio::test(start_paused = true)]
async fn standalone_drops_its_cursor_after_repeated_failures_and_says_so() {
    let (config, gaps) = recording(ResumeConfig::default().with_max_failed_resumes(2));
    let (script, log) = Script::new(
        vec![
            Answer::Frames(vec![]),
            Answer::Frames(vec![]),
            Answer::Frames(vec![priming("0", 1000), list_changed("1")]),
        ],
        || Answer::Stall(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("12"),
        script,
        StreamScope::Standalone,
        fixed(None, 10),
        config,
    );
    let mut stream = std::pin::pin!(stream);
    assert!(matches!(stream.next().await, Some(Ok(_))));
    assert_eq!(log.cursors(), [cut_after("12"), cut_after("12"), None]);
    let gaps = seen(&gaps);
    assert_eq!(gaps.len(), 1, "one discontinuity, reported once");
    assert_eq!(gaps[0].cursor.as_deref(), Some("12"));
}

#[tokio::test(start_paused = true)]
async fn standalone_fallback_notice_keeps_the_fresh_stream() {
    let (config, gaps) = recording(ResumeConfig::default());
    let (script, log) = Script::new(
        vec![Answer::Stall(vec![
            notice("2", Some("7"), false),
            list_changed("7"),
        ])],
        || Answer::Stall(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("2"),
        script,
        StreamScope::Standalone,
        fixed(None, 10),
        config,
    );
    let mut stream = std::pin::pin!(stream);
    assert!(
        matches!(stream.next().await, Some(Ok(_))),
        "the fallback stream's events arrive"
    );
    assert_eq!(
        log.entries().len(),
        1,
        "no reconnect: the fresh stream is kept"
    );
    assert_eq!(seen(&gaps).len(), 1);
}

/// A shared log's new segment (issue 44, review 3, finding 2): the resume
/// of the last id before a takeover's segment goes on at the segment's
/// first id, which the notice names; that jump is no loss. The same jump
/// without the name is one.
#[tokio::test(start_paused = true)]
async fn a_jump_the_notice_names_is_no_discontinuity() {
    for (named, reported) in [(true, 0), (false, 1)] {
        let (config, gaps) = recording(ResumeConfig::default());
        let notice = Sse {
            event: Some("mcp-replay".to_owned()),
            data: Some(if named {
                r#"{"cursor":"2","floor":"1","complete":true,"next":"1796000000000000"}"#.to_owned()
            } else {
                r#"{"cursor":"2","floor":"1","complete":true}"#.to_owned()
            }),
            id: None,
            retry: None,
        };
        let (script, _) = Script::new(
            vec![Answer::Stall(vec![
                notice,
                list_changed("1796000000000000"),
                list_changed("1796000000000001"),
            ])],
            || Answer::Stall(vec![]),
        );
        let stream = resuming_sse_stream(
            None,
            cut_after("2"),
            script,
            StreamScope::Standalone,
            fixed(None, 10),
            config,
        );
        let mut stream = std::pin::pin!(stream);
        assert!(matches!(stream.next().await, Some(Ok(_))), "named {named}");
        assert!(matches!(stream.next().await, Some(Ok(_))), "named {named}");
        assert_eq!(seen(&gaps).len(), reported, "named {named}");
    }
}

#[tokio::test(start_paused = true)]
async fn below_floor_notice_fails_a_request_stream() {
    let (script, _) = Script::new(
        vec![Answer::Stall(vec![notice("1/4", Some("6/4"), false)])],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("1/4"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (_, error) = drain(stream).await;
    let text = error.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        text.contains("1/4") && text.contains("6/4") && text.contains("lost"),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn terminal_statuses_stop_without_retrying() {
    for status in [401, 403, 405] {
        let (script, log) = Script::new(vec![Answer::Status(status)], || Answer::Frames(vec![]));
        let stream = resuming_sse_stream(
            None,
            cut_after("1"),
            script,
            StreamScope::Standalone,
            fixed(None, 10),
            ResumeConfig::default(),
        );
        let (_, error) = drain(stream).await;
        assert!(
            matches!(error, Some(ResumeStreamError::Fatal(Status(s, _))) if s == status),
            "{error:?}"
        );
        assert_eq!(log.entries().len(), 1, "{status}");
    }
}

#[tokio::test(start_paused = true)]
async fn answered_request_stream_is_read_to_its_end_without_resuming() {
    // The response arrives, then the server closes (or breaks) the stream:
    // the request is complete, so its end is the stream's end, and the
    // connection was read to EOF rather than dropped mid-body.
    let first = opened(vec![priming("0/3", 500), response("1/3")]);
    let (script, log) = Script::new(vec![], || Answer::Frames(vec![]));
    let (messages, error) = request_stream(Some(first), None, script).await;
    assert_eq!(messages.len(), 1);
    assert!(error.is_none(), "{error:?}");
    assert!(log.cursors().is_empty(), "no resume: {:?}", log.cursors());

    // A request stream that closes before its response is still resumed.
    let first = opened(vec![priming("0/4", 500)]);
    let (script, log) = Script::new(vec![Answer::Frames(vec![response("1/4")])], || {
        Answer::Frames(vec![])
    });
    let (messages, error) = request_stream(Some(first), None, script).await;
    assert_eq!(messages.len(), 1, "{error:?}");
    assert_eq!(log.cursors(), [cut_after("0/4")]);

    // One that closes before its response, with no server `retry` and a
    // policy that allows no reconnect, fails: a request stream never just
    // ends unanswered.
    let first = opened(vec![message("0/5", "")]);
    let (script, log) = Script::new(vec![], || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(Some(0), 10),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(messages.is_empty());
    assert!(
        matches!(error, Some(ResumeStreamError::Exhausted { .. })),
        "{error:?}"
    );
    assert!(log.cursors().is_empty());
}

fn message_without_id(data: &str) -> Sse {
    Sse {
        event: None,
        data: Some(data.to_owned()),
        id: None,
        retry: None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_broken_connection_is_resumed_at_once_then_backs_off() {
    // The server asked for `retry: 3000`, but it did not close the stream:
    // the connection broke, so the client resumes at once.
    let (script, log) = Script::new(
        vec![
            Answer::Break(vec![priming("1/1", 3_000), progress("2/1", 2)]),
            Answer::Break(vec![]),
            Answer::Frames(vec![response("3/1")]),
        ],
        || Answer::Frames(vec![]),
    );
    let stream = resuming_sse_stream(
        None,
        cut_after("0/1"),
        script,
        StreamScope::Request,
        backoff(None, 100),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 2, "the progress and the response");
    assert_eq!(
        log.cursors(),
        [cut_after("0/1"), cut_after("2/1"), cut_after("2/1")]
    );
    // At once after the first break; the policy's backoff after the second.
    assert_eq!(log.gaps(), [Duration::ZERO, Duration::from_millis(200)]);
}

#[tokio::test(start_paused = true)]
async fn transport_failures_with_one_cursor_are_bounded() {
    // A server that resets every resume: the policy alone would retry forever.
    let (script, log) = Script::new(vec![], || Answer::Break(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let drained = tokio::time::timeout(Duration::from_secs(60), drain(stream)).await;
    let (_, error) = drained.unwrap_or_else(|_| panic!("still resuming after 60 s"));
    assert!(
        matches!(
            error,
            Some(ResumeStreamError::Exhausted { attempts: 5, .. })
        ),
        "{error:?}"
    );
    assert_eq!(log.cursors(), vec![cut_after("3/1"); 5]);
}

#[tokio::test(start_paused = true)]
async fn a_repeated_message_without_an_id_is_not_progress() {
    // Each GET delivers the same id-less message and closes: without ids
    // nothing but its data tells it from the last one, and a repeat is no
    // progress (a new one is: `cursorless.rs`).
    let (script, log) = Script::new(vec![], || {
        Answer::Frames(vec![message_without_id(
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        )])
    });
    let stream = resuming_sse_stream(
        None,
        None,
        script,
        StreamScope::Standalone,
        fixed(Some(5), 1_000),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(
        matches!(error, Some(ResumeStreamError::Exhausted { .. })),
        "{error:?}"
    );
    assert!(messages.len() <= 6, "{} deliveries", messages.len());
    assert!(log.entries().len() <= 6, "{} GETs", log.entries().len());
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_that_never_answers_times_out_and_counts() {
    let (script, log) = Script::new(vec![], || Answer::Hang);
    let config = ResumeConfig::default().with_connect_timeout(Duration::from_secs(5));
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        config,
    );
    let started = Instant::now();
    let (_, error) = tokio::time::timeout(Duration::from_secs(600), drain(stream))
        .await
        .unwrap_or_else(|_| panic!("still waiting after 600 s"));
    match error {
        Some(ResumeStreamError::Exhausted {
            attempts: 5, last, ..
        }) => {
            assert!(matches!(*last, Attempt::ConnectTimeout(_)), "{last:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(log.entries().len(), 5);
    // Five 5 s waits and the backoff between them: bounded, and known.
    assert_eq!(started.elapsed(), Duration::from_millis(25_030));
}

#[tokio::test(start_paused = true)]
async fn a_silent_resume_is_refreshed_and_then_answers() {
    // The first resume is attached to nothing and never sends a byte (the
    // Python SDK's server does this to a resume that comes early); the
    // refresh, at once after the timeout, finds the response.
    let (script, log) = Script::new(
        vec![Answer::Stall(vec![]), Answer::Frames(vec![response("4/1")])],
        || Answer::Frames(vec![]),
    );
    let config = ResumeConfig::default().with_silent_resume_timeout(Duration::from_secs(2));
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        config,
    );
    let (messages, error) = tokio::time::timeout(Duration::from_secs(600), drain(stream))
        .await
        .unwrap_or_else(|_| panic!("still waiting on a silent resume"));
    assert!(error.is_none(), "{error:?}");
    assert_eq!(messages.len(), 1);
    assert_eq!(log.cursors(), vec![cut_after("3/1"); 2]);
    assert_eq!(log.gaps(), [Duration::from_secs(2)]);
}

#[tokio::test(start_paused = true)]
async fn an_acknowledged_resume_may_stay_quiet() {
    // A notice is something: an acknowledged resume with nothing new yet is
    // a delay, however long, not a silent one.
    let (script, log) = Script::new(
        vec![Answer::Stall(vec![notice("3/1", Some("0/1"), true)])],
        || Answer::Frames(vec![]),
    );
    let config = ResumeConfig::default().with_silent_resume_timeout(Duration::from_secs(2));
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        config,
    );
    let waited = tokio::time::timeout(Duration::from_secs(600), drain(stream)).await;
    assert!(waited.is_err(), "still waiting, as it should: {waited:?}");
    assert_eq!(log.entries().len(), 1, "no reconnect");
}

#[tokio::test(start_paused = true)]
async fn a_vouched_servers_silent_resumes_are_counted_and_end() {
    // A server that promised to speak first on every resume (rmcp's rules)
    // and attaches every resume to nothing: each attempt waits out the
    // silence, and the third fails the request instead of trying forever.
    let (script, log) = Script::new(vec![], || Answer::Stall(vec![]));
    let config = ResumeConfig::default()
        .with_silent_resume_timeout(Duration::from_secs(2))
        .with_id_rules(IdRules::Rmcp);
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        config,
    );
    let (_, error) = tokio::time::timeout(Duration::from_secs(600), drain(stream))
        .await
        .unwrap_or_else(|_| panic!("still resuming a silent server after 600 s"));
    match error {
        Some(ResumeStreamError::Exhausted {
            attempts: 3, last, ..
        }) => assert!(matches!(*last, Attempt::Silent(_)), "{last:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(log.cursors(), vec![cut_after("3/1"); 3]);
}

#[tokio::test(start_paused = true)]
async fn an_undecodable_stream_fails_the_request_without_resuming() {
    // Bytes that are not UTF-8 would break every replay the same way: the
    // request fails at once.
    let (script, log) = Script::new(vec![], || Answer::Frames(vec![response("9/1")]));
    let invalid = String::from_utf8(vec![0xff_u8, 0xfe])
        .err()
        .map(|e| e.utf8_error());
    let Some(invalid) = invalid else {
        panic!("0xff 0xfe is not UTF-8");
    };
    let first = futures::stream::iter([
        Ok(priming("0/1", 10)),
        Err(sse_stream::Error::Utf8Parse(invalid)),
    ])
    .boxed();
    let stream = resuming_sse_stream(
        Some(first),
        None,
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (messages, error) = drain(stream).await;
    assert!(messages.is_empty(), "{messages:?}");
    assert!(
        matches!(error, Some(ResumeStreamError::Malformed(_))),
        "{error:?}"
    );
    assert!(log.entries().is_empty(), "no resume: {:?}", log.entries());
}

#[tokio::test(start_paused = true)]
async fn a_request_stream_fails_at_its_resume_deadline() {
    // Every reconnect hangs to its timeout, and the counts alone would allow
    // a hundred of them: the deadline ends the request first.
    let (script, log) = Script::new(vec![], || Answer::Hang);
    let config = ResumeConfig::default()
        .with_connect_timeout(Duration::from_secs(30))
        .with_max_transport_failures(100)
        .with_resume_deadline(Duration::from_secs(100));
    let stream = resuming_sse_stream(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        config,
    );
    let started = Instant::now();
    let (_, error) = tokio::time::timeout(Duration::from_secs(3_600), drain(stream))
        .await
        .unwrap_or_else(|_| panic!("still resuming after an hour"));
    match error {
        Some(ResumeStreamError::Exhausted { last, .. }) => {
            assert!(matches!(*last, Attempt::Deadline(_)), "{last:?}");
        }
        other => panic!("{other:?}"),
    }
    // The stream starts by resuming, which starts the clock: attempts at
    // 0 s, 30 s, 60 s and 90 s (plus 10 ms backoffs), the last one cut
    // short by the deadline, which ends the request at 100 s.
    assert_eq!(log.entries().len(), 4);
    assert_eq!(started.elapsed(), Duration::from_secs(100));
}

#[tokio::test(start_paused = true)]
async fn a_failed_request_names_its_failure_in_data_that_reads_back() {
    let (script, _log) = Script::new(vec![Answer::Status(400)], || Answer::Frames(vec![]));
    let stream = resuming_sse_stream(
        None,
        cut_after("7/2"),
        script,
        StreamScope::Request,
        fixed(None, 10),
        ResumeConfig::default(),
    );
    let (_, error) = drain(stream).await;
    let error = error.unwrap_or_else(|| panic!("the refusal should fail the request"));
    let failure = ResumeFailure::of(&error);
    assert_eq!(failure.kind, ResumeFailureKind::Refused);
    assert_eq!(failure.cursor.as_deref(), Some("7/2"));
    let data = failure.to_data();
    assert_eq!(data["resumeFailure"]["kind"], "refused");
    assert_eq!(
        ResumeFailure::from_error(RESUME_FAILED_CODE, Some(&data)),
        Some(failure)
    );
    // Any other code, or data without the key, is someone else's error.
    assert_eq!(ResumeFailure::from_error(-32603, Some(&data)), None);
    assert_eq!(
        ResumeFailure::from_error(RESUME_FAILED_CODE, Some(&serde_json::json!({}))),
        None
    );
}

#[test]
fn a_lost_range_travels_as_event_ids() {
    let error = ResumeStreamError::<Status>::Continuity(ContinuityError::Gap {
        after: crate::resumption::EventCursor::parse("1/3").expect("an rmcp id"),
        got: crate::resumption::EventCursor::parse("5/3").expect("an rmcp id"),
        lost: crate::resumption::LostRange::between(
            crate::resumption::RmcpEventId::on_request_stream(1, 3),
            5,
        )
        .expect("2..=4"),
    });
    let failure = ResumeFailure::of(&error);
    assert_eq!(failure.kind, ResumeFailureKind::Lost);
    let data = failure.to_data();
    assert_eq!(data["resumeFailure"]["lost"]["first"], "2/3");
    assert_eq!(data["resumeFailure"]["lost"]["last"], "4/3");
    assert_eq!(
        ResumeFailure::from_error(RESUME_FAILED_CODE, Some(&data)),
        Some(failure)
    );
}

/// Counts, under a subscriber that enables everything: the spans made
/// (`spans`), the events (`all`), the events under both the stream's
/// span and the span the stream was built in (`placed`), and those under
/// the latter at all (`under_caller`).
#[derive(Clone, Default)]
struct Lines {
    spans: Arc<std::sync::atomic::AtomicUsize>,
    all: Arc<std::sync::atomic::AtomicUsize>,
    placed: Arc<std::sync::atomic::AtomicUsize>,
    under_caller: Arc<std::sync::atomic::AtomicUsize>,
}

impl Lines {
    fn get(counter: &std::sync::atomic::AtomicUsize) -> usize {
        counter.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl<S> tracing_subscriber::Layer<S> for Lines
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        _: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        self.spans.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: tracing_subscriber::layer::Context<'_, S>) {
        use std::sync::atomic::Ordering::SeqCst;
        self.all.fetch_add(1, SeqCst);
        let names: Vec<&str> = ctx
            .event_scope(event)
            .map(|scope| scope.map(|span| span.name()).collect())
            .unwrap_or_default();
        // The stream's own span, inside the caller's.
        if names.first() == Some(&"sse_stream") && names.contains(&"caller") {
            self.placed.fetch_add(1, SeqCst);
        }
        if names.contains(&"caller") {
            self.under_caller.fetch_add(1, SeqCst);
        }
    }
}

/// A request stream built in a span named `caller`, polled outside it,
/// whose first connection breaks and whose resume answers; the lines it
/// logged, of which there are some.
async fn resume_a_break_built_in_a_caller_span(lines: &Lines) -> usize {
    let (script, _) = Script::new(vec![Answer::Break(vec![])], || {
        Answer::Frames(vec![response("4/1")])
    });
    let stream = tracing::info_span!("caller", session_id = "s-1").in_scope(|| {
        resuming_sse_stream(
            None,
            cut_after("3/1"),
            script,
            StreamScope::Request,
            fixed(None, 10),
            ResumeConfig::default(),
        )
    });
    let (_, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    let all = Lines::get(&lines.all);
    assert!(all > 0, "the break is logged");
    all
}

#[tokio::test(start_paused = true)]
async fn log_lines_are_children_of_the_span_the_stream_was_built_in() {
    use tracing_subscriber::layer::SubscriberExt;
    let lines = Lines::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(lines.clone()));

    let all = resume_a_break_built_in_a_caller_span(&lines).await;
    assert_eq!(
        Lines::get(&lines.placed),
        all,
        "every line under the stream's span, under the caller's"
    );
}

/// A stream that logs nothing makes no span: under a subscriber that
/// records spans (any that shows warnings), a span per stream would cost
/// every call its creation and fields.
#[tokio::test(start_paused = true)]
async fn a_healthy_stream_makes_no_span() {
    use tracing_subscriber::layer::SubscriberExt;
    let lines = Lines::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(lines.clone()));

    let frames = || vec![priming("0/1", 3000), progress("1/1", 1), response("2/1")];
    // A request stream read to its end: answered, then closed.
    let (script, log) = Script::new(vec![], || Answer::Status(404));
    let (delivered, error) = request_stream(Some(opened(frames())), None, script).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(delivered.len(), 2, "the progress and the response");
    assert!(log.entries().is_empty(), "no reconnect");
    // The standalone stream, open.
    let (script, _) = Script::new(vec![], || Answer::Status(404));
    let open = frames_of(frames(), script, StreamScope::Standalone, 3).await;
    assert_eq!(open.len(), 3);
    assert_eq!(Lines::get(&lines.spans), 0, "no span made");
    assert_eq!(Lines::get(&lines.all), 0, "nothing logged");
}

/// A line a filter leaves out makes no span either: under a subscriber that
/// shows warnings only, a resume taken without proof (an INFO line) makes
/// none.
#[tokio::test(start_paused = true)]
async fn a_line_filtered_out_makes_no_span() {
    use tracing_subscriber::layer::{Layer as _, SubscriberExt};
    let lines = Lines::default();
    let warnings = tracing_subscriber::filter::LevelFilter::WARN;
    let _default = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(lines.clone().with_filter(warnings)),
    );
    let (script, log) = Script::new(
        vec![Answer::Frames(vec![
            progress("opaque-2", 1),
            response("opaque-3"),
        ])],
        || Answer::Hang,
    );
    let (delivered, error) = request_stream(None, Some("opaque-1".to_owned()), script).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(delivered.len(), 2, "the resume's progress and response");
    assert_eq!(log.entries().len(), 1, "one resume");
    assert_eq!(Lines::get(&lines.spans), 0, "no span for a line not shown");
}

/// A wait of `Duration::MAX` ("never": a timeout switched off, or a
/// server's huge `Retry-After` under an uncapped delay) waits; it does not
/// overflow the clock.
#[tokio::test(start_paused = true)]
async fn waits_of_duration_max_wait_without_overflowing_the_clock() {
    #[derive(Debug)]
    struct Forever;
    impl RetryPolicy for Forever {
        fn retry(&self, _: usize) -> Option<Duration> {
            Some(Duration::MAX)
        }
    }
    let cases = [
        (
            "connect",
            ResumeConfig::default().with_connect_timeout(Duration::MAX),
            Answer::Hang,
        ),
        (
            "silent resume",
            ResumeConfig::default().with_silent_resume_timeout(Duration::MAX),
            Answer::Stall(vec![]),
        ),
        (
            "backoff",
            ResumeConfig::default().with_max_delay(Duration::MAX),
            Answer::Status(503),
        ),
    ];
    for (wait, config, answer) in cases {
        let (script, log) = Script::new(vec![answer], || Answer::Hang);
        let policy: Arc<dyn RetryPolicy> = Arc::new(Forever);
        let mut stream = std::pin::pin!(resuming_frames(
            None,
            cut_after("3/1"),
            script,
            StreamScope::Standalone,
            policy,
            config,
        ));
        let next = tokio::time::timeout(Duration::from_secs(3600), stream.next()).await;
        assert!(next.is_err(), "{wait}: still waiting after an hour");
        assert_eq!(log.entries().len(), 1, "{wait}: one GET");
    }
}

/// A request stream's ending form yields the error's frame once, then
/// stays ended, as does a stream that ended without one.
#[tokio::test(start_paused = true)]
async fn the_ending_stream_stays_ended() {
    let (script, _) = Script::new(vec![], || Answer::Status(404));
    let mut stream = std::pin::pin!(resuming_frames_ending(
        None,
        cut_after("3/1"),
        script,
        StreamScope::Request,
        fixed(Some(3), 10),
        ResumeConfig::default(),
        |error| message("", &format!("{{\"error\":\"{error}\"}}")),
    ));
    let last = stream.next().await.expect("the error's frame");
    assert!(last.data.is_some_and(|d| d.contains("error")));
    assert!(stream.next().await.is_none());
    assert!(stream.next().await.is_none(), "still ended");

    let mut answered = std::pin::pin!(resuming_frames_ending(
        Some(opened(vec![response("1/1")])),
        None,
        Script::new(vec![], || Answer::Hang).0,
        StreamScope::Request,
        fixed(Some(3), 10),
        ResumeConfig::default(),
        |_| message("", "{}"),
    ));
    assert!(answered.next().await.is_some(), "the response");
    assert!(answered.next().await.is_none());
    assert!(answered.next().await.is_none(), "still ended");
}

/// Where a filter leaves the stream's span out (say `rmcp_resume_core=debug`
/// alone), its lines stay under the caller's span instead of becoming roots.
#[tokio::test(start_paused = true)]
async fn a_filtered_out_stream_span_leaves_lines_under_the_callers() {
    use tracing_subscriber::layer::{Layer as _, SubscriberExt};
    let lines = Lines::default();
    let no_stream_span = tracing_subscriber::filter::filter_fn(|meta| meta.name() != "sse_stream");
    let _default = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(lines.clone().with_filter(no_stream_span)),
    );
    let all = resume_a_break_built_in_a_caller_span(&lines).await;
    assert_eq!(
        Lines::get(&lines.under_caller),
        all,
        "every line under the caller's span"
    );
}

mod attack;
mod attack2;
/// Issue #42, finding 7: blackholed connections, heard through their
/// keep-alives.
mod blackhole;
/// Issue #42: a standalone stream without a cursor, as a property.
mod cursorless;
/// The client review's findings (2026-12), one scripted case each.
mod findings;
/// Issue #42: every wait ends and every loss is reported, off the request
/// path too.
mod issue42;
/// A property test against a scripted server model (issue #24).
mod model;
/// Cases for mutants that survived the rest of the suite.
mod mutants;

/// The first `limit` frames a fresh stream of `scope` yields, none an error.
async fn frames_of(first: Vec<Sse>, script: Script, scope: StreamScope, limit: usize) -> Vec<Sse> {
    resuming_frames(
        Some(opened(first)),
        None,
        script,
        scope,
        fixed(Some(3), 10),
        ResumeConfig::default(),
    )
    .take(limit)
    .map(|frame| frame.expect("no error"))
    .collect()
    .await
}

/// A request stream's priming frame tells the worker nothing but its
/// `retry` (it reads messages only) and every resume of the stream is the
/// machine's: the frame's id stops at the machine, which resumes from it.
#[tokio::test(start_paused = true)]
async fn a_request_streams_priming_frame_stops_at_the_machine_which_resumes_from_it() {
    let (script, log) = Script::new(
        vec![Answer::Frames(vec![priming("0/3", 10), response("1/3")])],
        || Answer::Frames(vec![]),
    );
    let frames = frames_of(vec![priming("0/3", 10)], script, StreamScope::Request, 10).await;
    let retry_only = |ms| Sse {
        id: None,
        ..priming("", ms)
    };
    // The resume's priming frame (an unvouched server's) waits as the
    // provisional cursor and is not passed on.
    assert_eq!(frames, [retry_only(10), response("1/3")]);
    assert_eq!(log.cursors(), [cut_after("0/3")]);
}

/// The standalone stream's priming frames still reach its reader.
#[tokio::test(start_paused = true)]
async fn a_standalone_streams_priming_frame_goes_on() {
    let (script, _log) = Script::new(vec![], || Answer::Stall(vec![]));
    let first = vec![priming("0", 10), list_changed("1")];
    let frames = frames_of(first, script, StreamScope::Standalone, 2).await;
    assert_eq!(frames, [priming("0", 10), list_changed("1")]);
}

/// A request stream's priming frame without a `retry` goes no further, and
/// a later one's id replaces the cursor in the same buffer.
#[tokio::test(start_paused = true)]
async fn a_request_streams_priming_frames_without_retry_stay_with_the_machine() {
    let bare = |id: &str| Sse {
        retry: None,
        ..priming(id, 0)
    };
    let (script, log) = Script::new(vec![Answer::Frames(vec![response("3/3")])], || {
        Answer::Frames(vec![])
    });
    let first = vec![bare("0/3"), progress("1/3", 1), bare("2/3")];
    let frames = frames_of(first, script, StreamScope::Request, 10).await;
    assert_eq!(frames, [progress("1/3", 1), response("3/3")]);
    // The close after the last priming frame resumes from its id.
    assert_eq!(log.cursors(), [cut_after("2/3")]);
}
