//! Issue #42, finding 7: a connection blackholed behind a live proxy (a
//! NAT or load balancer that dropped its state) carries nothing more and
//! nothing tells the client. Each server here writes bytes, not frames: its
//! stream is read through the SSE parser, which drops keep-alive comments
//! as it does in every client, so the machine hears them only as bytes.

use bytes::Bytes;
use futures::stream::BoxStream;

use super::*;

const S: fn(u64) -> Duration = Duration::from_secs;

/// rmcp's keep-alive comment (sse-stream's default).
const KEEPALIVE: &str = ":\n\n";

/// What a server writes on one connection: each chunk after its delay (from
/// the chunk before), then either a clean close or nothing ever again.
struct Wire {
    chunks: Vec<(Duration, String)>,
    then: Tail,
}

#[derive(Clone, Copy)]
enum Tail {
    Close,
    /// The connection stays open and carries nothing: a blackhole, or a
    /// tool still working.
    Silence,
}

impl Wire {
    fn new(chunks: Vec<(Duration, String)>, then: Tail) -> Self {
        Self { chunks, then }
    }

    /// The connection as a client reads it: bytes through the SSE parser.
    fn open(self) -> SseFrames {
        let chunks = futures::stream::iter(self.chunks).then(|(after, text)| async move {
            tokio::time::sleep(after).await;
            Ok::<_, std::io::Error>(Bytes::from(text))
        });
        let tail: BoxStream<'static, Result<Bytes, std::io::Error>> = match self.then {
            Tail::Close => futures::stream::empty().boxed(),
            Tail::Silence => futures::stream::pending().boxed(),
        };
        sse_stream::SseStream::from_bytes_stream(chunks.chain(tail)).boxed()
    }
}

/// An event as a server writes it.
fn event(sse: &Sse) -> String {
    let mut text = String::new();
    if let Some(id) = &sse.id {
        text.push_str(&format!("id: {id}\n"));
    }
    text.push_str(&format!("data: {}\n\n", sse.data.as_deref().unwrap_or("")));
    text
}

/// `count` keep-alives, `every` apart, the first `every` after the chunk
/// before.
fn keepalives(every: Duration, count: usize) -> Vec<(Duration, String)> {
    vec![(every, KEEPALIVE.to_owned()); count]
}

/// Answers each `GET` with the next wire, then with `then`; logs each.
struct Wires {
    wires: VecDeque<Wire>,
    then: fn() -> Wire,
    log: Log,
    start: Instant,
}

impl Wires {
    fn new(wires: Vec<Wire>, then: fn() -> Wire) -> (Self, Log) {
        let log = Log::default();
        let wires = Self {
            wires: wires.into(),
            then,
            log: log.clone(),
            start: Instant::now(),
        };
        (wires, log)
    }
}

impl Connector for Wires {
    type Error = Status;

    fn connect(&mut self, cursor: Option<&str>) -> BoxFuture<'static, Result<SseFrames, Status>> {
        if let Ok(mut log) = self.log.0.lock() {
            log.push((self.start.elapsed(), cursor.map(str::to_owned)));
        }
        let wire = self.wires.pop_front().unwrap_or_else(self.then);
        Box::pin(async move { Ok(wire.open()) })
    }
}

/// The stream's messages and its error, or a panic if it has not ended
/// within `horizon` of virtual time (a hang).
async fn read_to_end(
    stream: impl futures::Stream<Item = Result<Sse, ResumeStreamError<Status>>>,
    horizon: Duration,
) -> Outcome {
    let mut stream = std::pin::pin!(stream);
    let mut messages = Vec::new();
    let read = async {
        while let Some(next) = stream.next().await {
            match next {
                Ok(sse) if sse.data.as_deref().is_some_and(|d| !d.is_empty()) => messages.push(sse),
                Ok(_) => {}
                Err(error) => return Some(error),
            }
        }
        None
    };
    let ended = tokio::time::timeout(horizon, read).await;
    match ended {
        Ok(error) => (messages, error),
        Err(_) => panic!(
            "still waiting after {horizon:?}: {} messages",
            messages.len()
        ),
    }
}

fn request(
    first: Wire,
    wires: Wires,
) -> impl futures::Stream<Item = Result<Sse, ResumeStreamError<Status>>> {
    resuming_frames(
        Some(first.open()),
        None,
        wires,
        StreamScope::Request,
        fixed(Some(5), 1000),
        ResumeConfig::default(),
    )
}

/// The detection bound docs/client.md states for rmcp's 15 s keep-alive:
/// 3 × 15 s + 5 s after the last byte.
const RMCP_BOUND: Duration = Duration::from_secs(50);

#[tokio::test(start_paused = true)]
async fn a_blackholed_call_with_keep_alives_is_resumed_within_the_bound() {
    // A quiet tool on upstream rmcp: progress, keep-alives every 15 s,
    // then the connection is blackholed 50 s in (the last comment came at
    // 45 s). The client must drop it within 50 s of that comment and
    // resume with its cursor; the resume brings the answer.
    let start = Instant::now();
    let mut chunks = vec![(Duration::ZERO, event(&progress("1", 1)))];
    chunks.extend(keepalives(S(15), 3));
    let first = Wire::new(chunks, Tail::Silence);
    let answer = Wire::new(vec![(Duration::ZERO, event(&response("2")))], Tail::Close);
    let (wires, log) = Wires::new(vec![answer], || Wire::new(vec![], Tail::Silence));
    let (messages, error) = read_to_end(request(first, wires), S(600)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["1", "2"], "the answer, after the resume");
    let last_byte = S(45);
    assert_eq!(
        log.entries(),
        [(last_byte + RMCP_BOUND, cut_after("1"))],
        "one resume, with the cursor, 50 s after the last keep-alive"
    );
    assert_eq!(start.elapsed(), last_byte + RMCP_BOUND);
}

#[tokio::test(start_paused = true)]
async fn a_blackholed_standalone_stream_with_keep_alives_is_resumed_with_its_cursor() {
    // The session's standalone stream, idle but for keep-alives, is
    // blackholed: it must be resumed with its cursor (and nothing reported
    // lost), and what the server sends on the new connection arrives.
    let (config, gaps) = recording(ResumeConfig::default());
    let mut chunks = vec![(Duration::ZERO, event(&list_changed("7")))];
    chunks.extend(keepalives(S(15), 4));
    let first = Wire::new(chunks, Tail::Silence);
    let mut chunks = vec![
        (Duration::ZERO, KEEPALIVE.to_owned()),
        (S(5), event(&list_changed("8"))),
    ];
    chunks.extend(keepalives(S(15), 40));
    let resumed = Wire::new(chunks, Tail::Silence);
    let (wires, log) = Wires::new(vec![resumed], || Wire::new(vec![], Tail::Silence));
    let stream = resuming_frames(
        Some(first.open()),
        None,
        wires,
        StreamScope::Standalone,
        fixed(None, 1000),
        config,
    );
    let (messages, error) = read_for(stream, S(600)).await;
    assert!(error.is_none(), "{error:?}");
    let data: Vec<Sse> = messages
        .into_iter()
        .filter(|m| m.data.as_deref().is_some_and(|d| !d.is_empty()))
        .collect();
    assert_eq!(ids(&data), ["7", "8"]);
    assert_eq!(
        log.entries(),
        [(S(60) + RMCP_BOUND, cut_after("7"))],
        "resumed once, with its cursor, 50 s after the last keep-alive"
    );
    assert!(seen(&gaps).is_empty(), "{:?}", seen(&gaps));
}

#[tokio::test(start_paused = true)]
async fn a_call_that_cannot_be_resumed_fails_instead_of_hanging_on_a_blackhole() {
    // A server that gives no event ids: the call's stream cannot be
    // resumed. Blackholed after its keep-alives, the call ends with a typed
    // failure naming the dead connection, instead of waiting for ever.
    let mut chunks = vec![(Duration::ZERO, "data: {}\n\n".to_owned())];
    chunks.extend(keepalives(S(15), 2));
    let first = Wire::new(chunks, Tail::Silence);
    let (wires, log) = Wires::new(vec![], || Wire::new(vec![], Tail::Silence));
    let start = Instant::now();
    let (_, error) = read_to_end(request(first, wires), S(600)).await;
    assert!(
        matches!(
            &error,
            Some(ResumeStreamError::Exhausted { last, .. })
                if matches!(&**last, Attempt::NoCursor(dead) if matches!(**dead, Attempt::Dead { .. }))
        ),
        "{error:?}"
    );
    assert!(log.entries().is_empty(), "no GET without a cursor");
    assert_eq!(start.elapsed(), S(30) + RMCP_BOUND);
}

#[tokio::test(start_paused = true)]
async fn connections_that_keep_dying_end_the_call_at_its_deadline() {
    // Every connection, the resumes too, sends two keep-alives and is
    // blackholed. A dead connection is never progress, so the call fails
    // at its resume deadline in a few GETs, never loops. The schedule:
    // the first connection is taken for dead at 80 s (its last comment at
    // 30 s, plus 50 s) and resumed at once; the resumes of a server that
    // never vouched are silent, so they are refreshed (10 s, 20 s, 40 s:
    // a call still working, which counts as progress) until the refresh
    // wait (80 s) reaches the dead bound; from 150 s each connection dies
    // 80 s after it opened, counted, and the deadline (2 min from the
    // first of those, at 230 s) ends the call at the third, at 391 s.
    let first = || {
        let mut chunks = vec![(Duration::ZERO, event(&progress("1", 1)))];
        chunks.extend(keepalives(S(15), 2));
        Wire::new(chunks, Tail::Silence)
    };
    let (wires, log) = Wires::new(vec![], || Wire::new(keepalives(S(15), 2), Tail::Silence));
    let start = Instant::now();
    let (_, error) = read_to_end(request(first(), wires), S(3600)).await;
    assert!(
        matches!(
            &error,
            Some(ResumeStreamError::Exhausted { last, .. }) if matches!(**last, Attempt::Deadline(_))
        ),
        "{error:?}"
    );
    let at: Vec<_> = log.entries().into_iter().map(|(at, _)| at).collect();
    assert_eq!(at, [S(80), S(90), S(110), S(150), S(230), S(311)]);
    assert_eq!(log.cursors(), vec![cut_after("1"); 6]);
    assert_eq!(start.elapsed(), S(391));
}

#[tokio::test(start_paused = true)]
async fn a_server_that_showed_no_keep_alive_cadence_is_never_cut() {
    // What the TypeScript and Python servers do (no keep-alive), and what
    // is no cadence (one comment; a burst of padding at the start; comments
    // with an event between): a 120 s quiet tool is waited on, as on a
    // connection never cut, with no reconnect at all.
    let quiet = S(120);
    let cases: [(&str, Vec<(Duration, String)>); 4] = [
        ("no keep-alive", vec![]),
        ("one keep-alive", keepalives(S(15), 1)),
        (
            "a burst of padding",
            vec![(Duration::from_millis(1), KEEPALIVE.to_owned()); 20],
        ),
        (
            "an event between two keep-alives",
            vec![
                (S(15), KEEPALIVE.to_owned()),
                (S(5), event(&progress("2", 2))),
                (S(15), KEEPALIVE.to_owned()),
            ],
        ),
    ];
    for (case, between) in cases {
        let start = Instant::now();
        let mut chunks = vec![(Duration::ZERO, event(&progress("1", 1)))];
        let spent: Duration = between.iter().map(|(after, _)| *after).sum();
        chunks.extend(between);
        chunks.push((quiet - spent, event(&response("9"))));
        let first = Wire::new(chunks, Tail::Close);
        let (wires, log) = Wires::new(vec![], || Wire::new(vec![], Tail::Silence));
        let (messages, error) = read_to_end(request(first, wires), S(600)).await;
        assert!(error.is_none(), "{case}: {error:?}");
        assert_eq!(
            ids(&messages).last().map(String::as_str),
            Some("9"),
            "{case}"
        );
        assert_eq!(log.entries(), [], "{case}: no reconnect");
        assert_eq!(start.elapsed(), quiet, "{case}");
    }
}

#[tokio::test(start_paused = true)]
async fn keep_alives_that_go_on_keep_a_quiet_call_open() {
    // rmcp's server during a 120 s quiet tool: a keep-alive every 15 s for
    // the whole call, and the answer. No reconnect.
    let start = Instant::now();
    let mut chunks = vec![(Duration::ZERO, event(&progress("1", 1)))];
    chunks.extend(keepalives(S(15), 7));
    chunks.push((S(15), event(&response("2"))));
    let first = Wire::new(chunks, Tail::Close);
    let (wires, log) = Wires::new(vec![], || Wire::new(vec![], Tail::Silence));
    let (messages, error) = read_to_end(request(first, wires), S(600)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&messages), ["1", "2"]);
    assert_eq!(log.entries(), []);
    assert_eq!(start.elapsed(), S(120));
}

/// A connection's stream that hands the waker it is polled with to the
/// test, as an HTTP client's connection task holds its body's waker.
struct Leaky {
    frames: SseFrames,
    waker: Arc<Mutex<Option<std::task::Waker>>>,
}

impl futures::Stream for Leaky {
    type Item = Result<Sse, sse_stream::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        if let Ok(mut waker) = self.waker.lock() {
            *waker = Some(cx.waker().clone());
        }
        self.frames.poll_next_unpin(cx)
    }
}

#[tokio::test(start_paused = true)]
async fn a_late_wake_from_a_dropped_connection_is_not_heard_on_the_next() {
    // The first connection of a standalone stream without ids closes at
    // 2 s; its source wakes its waker 10 s into the next connection, which
    // carries one comment at 20 s and then nothing (a server with no
    // keep-alive cadence). Heard on the new connection, the late wake and
    // the comment would make a 10 s cadence, and the quiet stream would be
    // cut 35 s later.
    let waker = Arc::new(Mutex::new(None::<std::task::Waker>));
    let first = Leaky {
        frames: Wire::new(vec![(S(2), "data: {}\n\n".to_owned())], Tail::Close).open(),
        waker: waker.clone(),
    };
    let next = Wire::new(vec![(S(20), KEEPALIVE.to_owned())], Tail::Silence);
    let (wires, log) = Wires::new(vec![next], || Wire::new(vec![], Tail::Silence));
    let stream = resuming_frames(
        Some(first.boxed()),
        None,
        wires,
        StreamScope::Standalone,
        fixed(None, 1000),
        ResumeConfig::default(),
    );
    let late = tokio::spawn(async move {
        tokio::time::sleep(S(13)).await;
        if let Some(waker) = waker.lock().ok().and_then(|mut w| w.take()) {
            waker.wake();
        }
    });
    let (_, error) = read_for(stream, S(300)).await;
    assert!(error.is_none(), "{error:?}");
    assert!(late.await.is_ok());
    assert_eq!(
        log.entries(),
        [(S(3), None)],
        "one reconnect, after the close"
    );
}
