//! Every input a peer controls, pushed past what a well-behaved client
//! sends, against the fork's server over real HTTP (the in-process
//! `LocalSessionManager`): oversized headers and bodies, malformed copies of
//! another session's id, a reader that never reads while its stream is
//! flooded, and malformed `Last-Event-ID`s. Each attack must get a clear
//! answer (a 4xx, never a 5xx or a hang), must never reach another
//! session's events, and must leave the session it aimed at usable, with
//! nothing it was owed lost.
//!
//! Every wait is bounded by [`LIMIT`], as a failure condition: nothing here
//! sleeps to let the server catch up.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rmcp::transport::resumption::{REPLAY_NOTICE_EVENT, ReplayNotice};
use rmcp::transport::streamable_http_server::session::local::SessionConfig;
use rmcp_resume_probe::sse::parse_block;
use rmcp_resume_testkit::raw::{Frame, PROTOCOL, RawSession, SseReader};
use rmcp_resume_testkit::{Served, Side, TestServer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long any one exchange may take before the test fails: generous, as
/// a CI machine may be busy; an answer that needs it is a finding anyway.
const LIMIT: Duration = Duration::from_secs(30);

/// 64 KiB: within hyper's header buffer (about 400 KiB), so the request
/// reaches the service and the service must answer it.
const HEADER_64K: usize = 64 << 10;

/// The POST body limit the fork keeps from upstream 3.11.0
/// (`StreamableHttpServerConfig::max_request_body_bytes`' default).
const BODY_LIMIT: usize = 4 << 20;

/// What marks session A's events: no answer to B ever carries it.
const A_MARK: &str = "A-secret-5d1e";

/// A fork server with a 16-event window, no keep-alive comments and no
/// session timers.
async fn server() -> anyhow::Result<Served> {
    Ok(TestServer::new(Side::Fork)
        .window(16)
        .keep_alive(None)
        .without_session_timers()
        .serve()
        .await?)
}

/// `what` within [`LIMIT`], or an error naming it.
async fn bounded<T>(what: &str, work: impl Future<Output = T>) -> anyhow::Result<T> {
    tokio::time::timeout(LIMIT, work)
        .await
        .map_err(|_| anyhow::anyhow!("{what}: no answer within {LIMIT:?}"))
}

fn result_text(frame: &Frame) -> Option<String> {
    frame.json()?["result"]["content"][0]["text"]
        .as_str()
        .map(str::to_owned)
}

fn notice(frame: &Frame) -> anyhow::Result<ReplayNotice> {
    anyhow::ensure!(
        frame.event.as_deref() == Some(REPLAY_NOTICE_EVENT),
        "not a notice: {frame:?}"
    );
    ReplayNotice::from_json(&frame.data).map_err(|e| anyhow::anyhow!("{e}: {frame:?}"))
}

/// Every frame of a body that ends, read whole within [`LIMIT`] (not the
/// raw reader's 10 s per frame: a slow answer is measured, not cut short).
async fn frames_of(what: &str, response: reqwest::Response) -> anyhow::Result<Vec<Frame>> {
    let text = bounded(what, response.text()).await??;
    Ok(text
        .replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(parse_block)
        .collect())
}

/// Calls `name` and reads the call to its end; the tool's text.
async fn call_text(
    session: &mut RawSession,
    name: &str,
    arguments: Value,
) -> anyhow::Result<String> {
    let (_, response) = bounded(name, session.call(name, arguments, false)).await??;
    let frames = frames_of(name, response).await?;
    frames
        .iter()
        .find_map(result_text)
        .ok_or_else(|| anyhow::anyhow!("{name}: no result in {frames:?}"))
}

/// The session answers a call: the proof that an attack left it usable.
async fn usable(session: &mut RawSession, what: &str) -> anyhow::Result<()> {
    let text = call_text(session, "sum", json!({ "a": 20, "b": 22 }))
        .await
        .with_context(|| format!("after {what}"))?;
    anyhow::ensure!(text == "42", "after {what}: {text}");
    Ok(())
}

/// A status and the body's text, read whole within [`LIMIT`] (only for
/// answers that end).
async fn answer(response: reqwest::Response) -> anyhow::Result<(u16, String)> {
    let status = response.status().as_u16();
    Ok((status, bounded("the body", response.text()).await??))
}

/// What came back on a connection written by hand.
#[derive(Debug)]
struct RawReply {
    /// The status line's code; `None` if the connection ended without one.
    status: Option<u16>,
    /// Everything read, up to the end of the head (and what came with it).
    head: String,
    /// Why writing the request stopped early, if it did.
    write_error: Option<String>,
    /// Why reading stopped before a head, if it did.
    read_error: Option<String>,
}

/// Writes `request` to `addr` while reading the answer's head, so a server
/// that answers before it has read everything (a 413, a 431) is seen
/// answering rather than as a stuck write. The write half stays open until
/// the head is in: hyper takes a half-closed connection as a client gone.
async fn exchange(addr: SocketAddr, request: Vec<u8>) -> anyhow::Result<RawReply> {
    let stream = TcpStream::connect(addr).await?;
    let (mut reader, mut writer) = stream.into_split();
    let write = tokio::spawn(async move {
        for chunk in request.chunks(64 << 10) {
            writer.write_all(chunk).await?;
        }
        writer.flush().await?;
        Ok::<_, std::io::Error>(writer)
    });
    let mut head = Vec::new();
    let mut read_error = None;
    let mut buf = vec![0u8; 16 << 10];
    // At most 1 MiB of head: a bound, not a wait.
    while head.len() < (1 << 20) && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match bounded("read the head", reader.read(&mut buf)).await? {
            Ok(0) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(error) => {
                read_error = Some(error.to_string());
                break;
            }
        }
    }
    let write_error = match bounded("write the request", write).await? {
        Ok(Ok(_writer)) => None,
        Ok(Err(error)) => Some(error.to_string()),
        Err(join) => Some(join.to_string()),
    };
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok());
    Ok(RawReply {
        status,
        head,
        write_error,
        read_error,
    })
}

/// A request head written by hand for `session` (`extra` lines included).
fn raw_head(method: &str, addr: SocketAddr, session: &str, extra: &str) -> String {
    format!(
        "{method} /mcp HTTP/1.1\r\nhost: {addr}\r\naccept: application/json, text/event-stream\r\n\
         mcp-session-id: {session}\r\nmcp-protocol-version: {PROTOCOL}\r\n{extra}\r\n"
    )
}

// --- 1. Oversized headers -------------------------------------------------

#[tokio::test]
async fn oversized_headers_get_a_clear_4xx_and_the_session_survives() -> anyhow::Result<()> {
    let h = server().await?;
    let mut session = RawSession::open(&h.url).await?;
    let http = reqwest::Client::new();
    let big_id = "s".repeat(HEADER_64K);
    let big_cursor = "7".repeat(HEADER_64K);

    // A 64 KiB `Last-Event-ID` on the live session: malformed (too long),
    // refused before the session is looked at, and never echoed back.
    let (status, body) =
        answer(bounded("64 KiB cursor", session.get(Some(big_cursor.as_bytes()))).await??).await?;
    assert_eq!(status, 400, "64 KiB Last-Event-ID: {body}");
    let error: Value = serde_json::from_str(&body).context("a JSON-RPC error")?;
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("malformed Last-Event-ID"), "{message}");
    assert!(
        body.len() < 1024,
        "the cursor is echoed: {} bytes",
        body.len()
    );
    usable(&mut session, "a 64 KiB Last-Event-ID").await?;

    // A 64 KiB `Mcp-Session-Id` on every method: an unknown session.
    let get = http
        .get(&h.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &big_id)
        .header("mcp-protocol-version", PROTOCOL);
    let (status, body) = answer(bounded("GET, 64 KiB id", get.send()).await??).await?;
    assert_eq!(status, 404, "GET with a 64 KiB session id: {body}");
    assert!(body.len() < 1024, "the id is echoed: {} bytes", body.len());

    let resume = http
        .get(&h.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &big_id)
        .header("mcp-protocol-version", PROTOCOL)
        .header("last-event-id", "1");
    let (status, body) = answer(bounded("resume, 64 KiB id", resume.send()).await??).await?;
    assert_eq!(status, 404, "resume with a 64 KiB session id: {body}");

    let post = http
        .post(&h.url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", &big_id)
        .header("mcp-protocol-version", PROTOCOL)
        .json(&json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": { "name": "sum", "arguments": { "a": 1, "b": 1 } } }));
    let (status, body) = answer(bounded("POST, 64 KiB id", post.send()).await??).await?;
    assert_eq!(status, 404, "POST with a 64 KiB session id: {body}");
    assert!(body.len() < 1024, "the id is echoed: {} bytes", body.len());

    let delete = http
        .delete(&h.url)
        .header("mcp-session-id", &big_id)
        .header("mcp-protocol-version", PROTOCOL);
    let (status, body) = answer(bounded("DELETE, 64 KiB id", delete.send()).await??).await?;
    assert_eq!(status, 404, "DELETE with a 64 KiB session id: {body}");

    // Both at once: the cursor is judged before the session, so this is
    // the malformed cursor's 400 (a 404 would be as clear).
    let both = http
        .get(&h.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &big_id)
        .header("mcp-protocol-version", PROTOCOL)
        .header("last-event-id", &big_cursor);
    let (status, body) = answer(bounded("both 64 KiB", both.send()).await??).await?;
    assert!(
        (400..500).contains(&status),
        "64 KiB id and cursor: {status} {body}"
    );
    usable(&mut session, "64 KiB session ids").await?;

    // Past hyper's header buffer (1 MiB of session id): refused by the HTTP
    // layer, `431`, before the service sees it; the connection is closed.
    let huge = raw_head("GET", h.addr, &"s".repeat(1 << 20), "");
    let reply = exchange(h.addr, huge.into_bytes()).await?;
    assert_eq!(reply.status, Some(431), "1 MiB session id: {reply:?}");
    eprintln!(
        "1 MiB session id: {:?} (reading: {:?}, writing: {:?})",
        reply.head.lines().next(),
        reply.read_error,
        reply.write_error
    );
    usable(&mut session, "a 1 MiB session id").await?;
    Ok(())
}

// --- 2. Oversized bodies --------------------------------------------------

/// A `tools/call` of `echo` with `text`, padded with trailing whitespace
/// (still valid JSON) to exactly `len` bytes when `len` is larger.
fn echo_body(id: u64, text: &str, len: usize) -> Vec<u8> {
    let mut body = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "text": text } }
    }))
    .unwrap_or_default();
    if body.len() < len {
        body.resize(len, b' ');
    }
    body
}

fn post_raw(session: &RawSession, body: impl Into<reqwest::Body>) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(&session.url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", &session.session)
        .header("mcp-protocol-version", PROTOCOL)
        .body(body)
}

#[tokio::test]
async fn bodies_past_the_limit_get_413_and_the_session_survives() -> anyhow::Result<()> {
    let h = server().await?;
    let mut session = RawSession::open(&h.url).await?;

    // Exactly the limit (whitespace-padded): accepted and answered.
    let at_limit = echo_body(101, "at the limit", BODY_LIMIT);
    assert_eq!(at_limit.len(), BODY_LIMIT);
    let response = bounded("POST at the limit", post_raw(&session, at_limit).send()).await??;
    assert_eq!(
        response.status(),
        200,
        "a body of exactly {BODY_LIMIT} bytes"
    );
    let frames = bounded("read the answer", SseReader::new(response).collect()).await??;
    assert!(
        frames
            .iter()
            .any(|f| result_text(f).as_deref() == Some("at the limit")),
        "{frames:?}"
    );

    // One byte past it: 413, with a body that says why.
    let past = echo_body(102, "one past", BODY_LIMIT + 1);
    let response = bounded("POST one past", post_raw(&session, past).send()).await??;
    let (status, body) = answer(response).await?;
    assert_eq!(status, 413, "{BODY_LIMIT} + 1 bytes: {body}");
    assert!(body.contains("Payload Too Large"), "{body}");
    usable(&mut session, "a body one byte past the limit").await?;

    // Far past it (16 MiB), declared up front: 413 as soon as the limit is
    // crossed, seen by a client still writing; the connection is closed.
    let far = echo_body(103, "far past", BODY_LIMIT * 4);
    let started = Instant::now();
    let head = raw_head(
        "POST",
        h.addr,
        &session.session,
        &format!(
            "content-type: application/json\r\ncontent-length: {}\r\n",
            far.len()
        ),
    );
    let mut request = head.into_bytes();
    request.extend_from_slice(&far);
    let reply = exchange(h.addr, request).await?;
    assert_eq!(reply.status, Some(413), "16 MiB, Content-Length: {reply:?}");
    eprintln!(
        "16 MiB with Content-Length: {:?} after {:?} (reading: {:?}, writing: {:?})",
        reply.head.lines().next(),
        started.elapsed(),
        reply.read_error,
        reply.write_error
    );
    usable(&mut session, "a 16 MiB body").await?;

    // Far past it, chunked (no Content-Length): the limit is counted as
    // the body streams in, not taken from a header.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = far
        .chunks(256 << 10)
        .map(|chunk| Ok(chunk.to_vec()))
        .collect();
    let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
    let started = Instant::now();
    match bounded("POST 16 MiB chunked", post_raw(&session, body).send()).await? {
        Ok(response) => {
            let (status, body) = answer(response).await?;
            assert_eq!(status, 413, "16 MiB chunked: {body}");
        }
        // A client still sending when the server answers and closes may
        // see the connection reset instead: no 5xx, and no hang.
        Err(error) => eprintln!("16 MiB chunked: the client saw {error}"),
    }
    eprintln!("16 MiB chunked: answered after {:?}", started.elapsed());
    usable(&mut session, "a chunked 16 MiB body").await?;

    // A call well within the limit whose answer alone is larger than a
    // session's whole replay budget (2 MiB by default): answered in full,
    // not held waiting for budget that can never be free.
    let text = "t".repeat(3 << 20);
    assert!(SessionConfig::DEFAULT_MAX_REPLAY_BYTES < text.len());
    let started = Instant::now();
    let echoed = call_text(&mut session, "echo", json!({ "text": text })).await?;
    assert_eq!(echoed.len(), text.len());
    eprintln!("3 MiB echo answered after {:?}", started.elapsed());
    usable(&mut session, "a 3 MiB answer").await?;
    Ok(())
}

// --- 3. Another session's id, malformed -----------------------------------

/// Variations of `id` that are not `id`.
fn near_misses(id: &str) -> Vec<(&'static str, String)> {
    let mut cases = vec![
        ("suffixed", format!("{id}x")),
        ("suffixed digit", format!("{id}0")),
        ("truncated", id[..id.len() - 1].to_owned()),
        ("prefixed", format!("x{id}")),
        ("doubled", format!("{id}{id}")),
        ("empty", String::new()),
        ("comma-joined", format!("{id}, {id}")),
        ("path-like", format!("{id}/..")),
    ];
    let upper = id.to_ascii_uppercase();
    if upper != id {
        cases.push(("upper case", upper));
    }
    cases
}

#[tokio::test]
async fn malformed_copies_of_another_sessions_id_reach_nothing_of_it() -> anyhow::Result<()> {
    let h = server().await?;
    let mut a = RawSession::open(&h.url).await?;
    // A's events: a request stream carrying its mark, and two standalone
    // notifications retained with no reader.
    let (_, response) = a.call("echo", json!({ "text": A_MARK }), false).await?;
    let frames = bounded("A's echo", SseReader::new(response).collect()).await??;
    let a_cursor = frames
        .first()
        .and_then(|f| f.id.clone())
        .ok_or_else(|| anyhow::anyhow!("no priming id: {frames:?}"))?;
    assert!(frames.iter().any(|f| f.data.contains(A_MARK)), "{frames:?}");
    assert_eq!(
        call_text(&mut a, "announce", json!({ "count": 2 })).await?,
        "announced 2"
    );

    let mut b = RawSession::open(&h.url).await?;
    let http = reqwest::Client::new();
    let mut seen = std::collections::BTreeMap::<&str, std::collections::BTreeSet<u16>>::new();
    for (what, id) in near_misses(&a.session) {
        let headers = |request: reqwest::RequestBuilder| {
            request
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-session-id", id.as_str())
                .header("mcp-protocol-version", PROTOCOL)
        };
        let attempts = [
            ("GET", headers(http.get(&h.url))),
            (
                "resume A's request stream",
                headers(http.get(&h.url)).header("last-event-id", a_cursor.as_str()),
            ),
            (
                "resume A's standalone stream",
                headers(http.get(&h.url)).header("last-event-id", "0"),
            ),
            (
                "tools/call",
                headers(http.post(&h.url)).json(&json!({
                    "jsonrpc": "2.0", "id": 9, "method": "tools/call",
                    "params": { "name": "echo", "arguments": { "text": "B" } }
                })),
            ),
            (
                "notification",
                headers(http.post(&h.url))
                    .json(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })),
            ),
            ("DELETE", headers(http.delete(&h.url))),
        ];
        for (method, request) in attempts {
            let response = bounded(method, request.send()).await??;
            // A 200 here would be a stream: read no further than its head.
            let status = response.status().as_u16();
            assert!(
                status == 404 || status == 400,
                "{what} ({id:?}), {method}: {status}"
            );
            seen.entry(method).or_default().insert(status);
            let body = bounded(method, response.text()).await??;
            assert!(!body.contains(A_MARK), "{what}, {method}: {body}");
            assert!(!body.contains("list_changed"), "{what}, {method}: {body}");
        }
    }

    eprintln!("near misses, statuses by attempt: {seen:?}");

    // A is untouched: its request stream and its standalone notifications
    // are all still there, and it still answers. So is B.
    let response = bounded("A's resume", a.resume(&a_cursor)).await??;
    assert_eq!(response.status(), 200);
    let replayed = bounded("A's replay", SseReader::new(response).collect()).await??;
    assert!(notice(&replayed[0])?.complete, "{replayed:?}");
    assert!(
        replayed.iter().any(|f| f.data.contains(A_MARK)),
        "{replayed:?}"
    );
    let response = bounded("A's standalone resume", a.resume("0")).await??;
    assert_eq!(response.status(), 200);
    let mut standalone = SseReader::new(response);
    let first = standalone.next().await?.context("no notice")?;
    assert!(notice(&first)?.complete, "{first:?}");
    for expected in ["1", "2"] {
        let frame = standalone.next().await?.context("ended")?;
        assert_eq!(frame.id.as_deref(), Some(expected), "{frame:?}");
    }
    drop(standalone);
    usable(&mut a, "the near misses").await?;
    usable(&mut b, "the near misses").await?;
    Ok(())
}

// --- 4. A reader that never reads -----------------------------------------

/// Opens `session`'s standalone GET on a socket with a 4 KiB receive
/// buffer and never reads from it: the server's answer is only peeked at
/// (left in the socket), so the window closes once the buffer is full.
async fn never_reading_get(served: &Served, session: &RawSession) -> anyhow::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_recv_buffer_size(4096)?;
    let mut stream = socket.connect(served.addr).await?;
    let head = format!(
        "GET /mcp HTTP/1.1\r\nhost: {}\r\naccept: text/event-stream\r\nmcp-session-id: {}\r\nmcp-protocol-version: {PROTOCOL}\r\n\r\n",
        served.addr, session.session
    );
    stream.write_all(head.as_bytes()).await?;
    let mut buf = [0u8; 16];
    // The status line arrives in one segment in practice; a partial one is
    // peeked again, a bounded number of times.
    for _ in 0..1000 {
        let n = bounded("the stalled GET's head", stream.peek(&mut buf)).await??;
        anyhow::ensure!(n > 0, "the server closed the GET");
        if n >= 12 {
            let line = String::from_utf8_lossy(&buf[..12]);
            anyhow::ensure!(line == "HTTP/1.1 200", "GET: {line}");
            return Ok(stream);
        }
        tokio::task::yield_now().await;
    }
    anyhow::bail!("no status line on the stalled GET")
}

/// Reads `stream` until its chunked response ends or the connection does:
/// the bytes read, and which end it was. Bounded by 256 MiB.
async fn ended(mut stream: TcpStream) -> anyhow::Result<(usize, &'static str)> {
    let mut buf = vec![0u8; 64 << 10];
    let mut tail: Vec<u8> = Vec::new();
    let mut total = 0;
    while total < (256 << 20) {
        let n = match stream.read(&mut buf).await {
            Ok(0) => return Ok((total, "connection closed")),
            Err(_) => return Ok((total, "connection reset")),
            Ok(n) => n,
        };
        total += n;
        tail.extend_from_slice(&buf[..n]);
        if tail.ends_with(b"\r\n0\r\n\r\n") {
            return Ok((total, "last chunk"));
        }
        let keep = tail.len().saturating_sub(16);
        tail.drain(..keep);
    }
    anyhow::bail!("the stalled GET sent more than 256 MiB")
}

#[tokio::test]
async fn a_reader_that_never_reads_holds_up_no_other_call_and_no_more_than_the_budget()
-> anyhow::Result<()> {
    // Small budgets, so the flood below is many times both.
    const SESSION_BUDGET: usize = 1 << 20;
    const TOTAL_BUDGET: usize = 3 << 18;
    // Each flood event is `FLOOD_SIZE` bytes of padding plus an envelope
    // of well under 1 KiB. The meter may pass the total by at most one such
    // event per session (two sessions here): the stated constant.
    const FLOOD_SIZE: u32 = 8 << 10;
    const FLOOD_COUNT: u32 = 2_000;
    const SLACK: usize = 2 * (FLOOD_SIZE as usize + 1024);
    const MAX_ROUNDS: usize = 2_000;

    let h = TestServer::new(Side::Fork)
        .replay_bytes(SESSION_BUDGET, TOTAL_BUDGET)
        .keep_alive(None)
        .without_session_timers()
        .serve()
        .await?;
    let manager = h.manager().context("a fork server has a manager")?.clone();
    let mut a = RawSession::open(&h.url).await?;
    let mut b = RawSession::open(&h.url).await?;
    let stalled = never_reading_get(&h, &a).await?;

    // About 16 MiB of notifications on A's standalone stream, whose only
    // reader never reads. The flood's request id is above any of `a`'s, and
    // the calls below (`on_a`) number from above it, so no two collide.
    let mut flooder = a.at(&h.url);
    let mut on_a = flooder.at(&h.url);
    let flood_started = Instant::now();
    let flood = tokio::spawn(async move {
        let text = call_text(
            &mut flooder,
            "flood",
            json!({ "count": FLOOD_COUNT, "size": FLOOD_SIZE }),
        )
        .await;
        (text, flood_started.elapsed())
    });

    // Calls on A and on B, back to back, for as long as the flood runs:
    // each must answer within LIMIT, the process meter must stay within the
    // total budget, and some must answer while the flood is held back.
    let mut rounds = 0;
    let mut during_flood = 0;
    let mut slowest = (Duration::ZERO, Duration::ZERO);
    let mut peak = 0;
    while rounds < MAX_ROUNDS && !flood.is_finished() {
        rounds += 1;
        let started = Instant::now();
        usable(&mut on_a, "flooding A (a call on A)").await?;
        let took_a = started.elapsed();
        let started = Instant::now();
        usable(&mut b, "flooding A (a call on B)").await?;
        let took_b = started.elapsed();
        slowest = (slowest.0.max(took_a), slowest.1.max(took_b));
        let used = manager.replay_bytes();
        if took_a + took_b > Duration::from_millis(500) {
            eprintln!(
                "round {rounds} at {:?}: A {took_a:?}, B {took_b:?}, meter {used}, flood done {}",
                flood_started.elapsed(),
                flood.is_finished()
            );
        }
        peak = peak.max(used);
        assert!(
            used <= TOTAL_BUDGET + SLACK,
            "round {rounds}: {used} bytes retained, budget {TOTAL_BUDGET} + {SLACK}"
        );
        if !flood.is_finished() {
            during_flood += 1;
        }
    }
    let (text, flood_took) = bounded("the flood", flood).await??;
    let text = text?;
    let used = manager.replay_bytes();
    peak = peak.max(used);
    eprintln!(
        "zero window: {rounds} rounds ({during_flood} while flooding), slowest call on A {:?}, on B {:?}; \
         flood {text:?} after {flood_took:?}; meter peak {peak} (budget {TOTAL_BUDGET} + {SLACK})",
        slowest.0, slowest.1
    );
    assert!(
        used <= TOTAL_BUDGET + SLACK,
        "after the flood: {used} bytes retained, budget {TOTAL_BUDGET} + {SLACK}"
    );
    assert!(
        during_flood > 0,
        "no call answered while the flood was held back (flood took {flood_took:?})"
    );
    // The flood itself ends: its reader is cut after the stall timeout (the
    // default, 10 s), then the rest is logged without it.
    assert_eq!(text, format!("flooded {FLOOD_COUNT}"));
    assert!(
        flood_took < SessionConfig::DEFAULT_READER_STALL_TIMEOUT + LIMIT,
        "the flood took {flood_took:?}"
    );
    // The reader was ended: reading now drains what the sockets held and
    // then finds the end of its response (the chunked body's last chunk),
    // or the connection closed.
    let (drained, how) = bounded("the stalled reader's end", ended(stalled)).await??;
    eprintln!("the stalled GET ended ({how}) after {drained} bytes");
    usable(&mut a, "the flood").await?;
    usable(&mut b, "the flood").await?;
    Ok(())
}

// --- 5. Malformed cursors -------------------------------------------------

#[tokio::test]
async fn malformed_cursors_are_refused_and_the_right_cursor_still_replays() -> anyhow::Result<()> {
    let h = server().await?;
    let mut session = RawSession::open(&h.url).await?;
    // Standalone events 1..=3, retained with no reader.
    assert_eq!(
        call_text(&mut session, "announce", json!({ "count": 3 })).await?,
        "announced 3"
    );
    // A call cut after its priming and three progress steps; the tool
    // waits on the gate.
    let (id, response) = session.call("work", json!({ "count": 3 }), true).await?;
    let mut reader = SseReader::new(response);
    let mut seen = Vec::new();
    while seen.iter().filter(|f: &&Frame| f.id.is_some()).count() < 4 {
        let frame = reader.next().await?.context("the call ended early")?;
        seen.push(frame);
    }
    drop(reader);
    let ids: Vec<String> = seen.iter().filter_map(|f| f.id.clone()).collect();
    let stream = ids[0]
        .split_once('/')
        .map(|(_, m)| m.to_owned())
        .with_context(|| format!("not a request stream id: {ids:?}"))?;
    let never = stream.parse::<u64>()? + 1_000;

    let overflow = "18446744073709551616"; // u64::MAX + 1
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", b"".to_vec()),
        ("spaces", b"   ".to_vec()),
        ("a tab", b"\t".to_vec()),
        ("inner space", format!("1 /{stream}").into_bytes()),
        ("not UTF-8", b"\xff\xfe\x31".to_vec()),
        (
            "not UTF-8 after a valid id",
            [b"1/".as_slice(), stream.as_bytes(), b"\xc3"].concat(),
        ),
        ("0/-1", b"0/-1".to_vec()),
        ("negative index", format!("-1/{stream}").into_bytes()),
        ("u64 overflow, standalone", overflow.as_bytes().to_vec()),
        (
            "u64 overflow, index",
            format!("{overflow}/{stream}").into_bytes(),
        ),
        ("u64 overflow, stream", format!("1/{overflow}").into_bytes()),
        (
            "u64::MAX index, past the head",
            format!("{}/{stream}", u64::MAX).into_bytes(),
        ),
        (
            "a stream that never existed",
            format!("0/{never}").into_bytes(),
        ),
        (
            "a stream that never existed, late index",
            format!("2/{never}").into_bytes(),
        ),
    ];
    let stats = |h: &Served| h.resume_stats().unwrap_or_default();
    let before = stats(&h);
    for (what, cursor) in &cases {
        let response = bounded(what, session.get(Some(cursor))).await??;
        let status = response.status().as_u16();
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        assert!(!sse, "{what}: a stream was opened ({status})");
        let body = bounded(what, response.text()).await??;
        assert_eq!(status, 400, "{what}: {body}");
        let error: Value =
            serde_json::from_str(&body).with_context(|| format!("{what}: {body}"))?;
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "{what}: {body}");
        eprintln!("{what}: {status} {message}");
    }
    let after = stats(&h);
    assert_eq!(
        after.rejected - before.rejected,
        cases.len() as u64,
        "{after:?}"
    );
    assert_eq!(
        (after.replayed, after.fallback, after.session_lost),
        (before.replayed, before.fallback, before.session_lost)
    );

    // Nothing was lost. The call finishes while nobody is connected, and
    // its right cursor replays everything after it, response included.
    h.gate.notify_one();
    let cursor = &ids[1];
    let response = bounded("the right resume", session.resume(cursor)).await??;
    assert_eq!(response.status(), 200);
    let frames = bounded("the replay", SseReader::new(response).collect()).await??;
    assert!(notice(&frames[0])?.complete, "{frames:?}");
    let replayed: Vec<Option<&str>> = frames[1..].iter().map(|f| f.id.as_deref()).collect();
    assert_eq!(
        replayed[..2],
        [Some(ids[2].as_str()), Some(ids[3].as_str())],
        "{frames:?}"
    );
    assert!(
        frames[1..]
            .iter()
            .any(|f| f.json().is_some_and(|j| j["id"] == json!(id))
                && result_text(f).as_deref() == Some("finished 3 steps")),
        "{frames:?}"
    );
    // The standalone stream's events are all there too.
    let response = bounded("the standalone resume", session.resume("0")).await??;
    assert_eq!(response.status(), 200);
    let mut standalone = SseReader::new(response);
    let first = standalone.next().await?.context("no notice")?;
    assert!(notice(&first)?.complete, "{first:?}");
    for expected in ["1", "2", "3"] {
        let frame = standalone.next().await?.context("ended")?;
        assert_eq!(frame.id.as_deref(), Some(expected), "{frame:?}");
    }
    drop(standalone);
    usable(&mut session, "malformed cursors").await?;
    Ok(())
}
