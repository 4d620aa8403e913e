//! A real browser against the fork's server: Debian's headless Chromium runs
//! `EventSource` streams the way editors do (tests/browser/page.html, driven
//! by tests/peers/browser.mjs through playwright-core).
//!
//! What is proven, per the WHATWG rules a browser actually follows:
//! - two sources on one session reconnect after the server drops them, every
//!   notification reaches exactly one of them (no leapfrog, #659), and the
//!   reconnects settle (no loop);
//! - a `404` (unknown or deleted session) fails the source for good;
//! - a cursor that fell below the replay window gets the fallback: `200`, an
//!   `mcp-replay` notice with `complete: false`, and a source that stays open.
//!
//! `bash .ci/test` installs Chromium (Debian) and playwright-core (npm); a
//! missing browser fails these tests rather than skipping them.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp_resume_testkit::{DemoServer, Side, TestServer};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

const LIMIT: Duration = Duration::from_secs(120);

type Demo = StreamableHttpService<DemoServer, LocalSessionManager>;

/// (session, `Last-Event-ID`) of every GET the shim forwarded.
type GetLog = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// The page, the MCP endpoint, the EventSource shim and the test hooks.
#[derive(Clone)]
struct Site {
    service: Demo,
    manager: Arc<LocalSessionManager>,
    gets: GetLog,
    /// Sessions whose resuming GETs are parked until released.
    held: watch::Sender<HashSet<String>>,
}

#[derive(serde::Deserialize)]
struct SessionQuery {
    session: String,
    retry_ms: Option<u64>,
}

/// `GET /es?session=S`: forwards to the MCP endpoint as `GET /mcp` with
/// `mcp-session-id: S`, keeping the browser's `Last-Event-ID` and `Host`.
async fn shim(
    State(site): State<Site>,
    Query(q): Query<SessionQuery>,
    request: Request,
) -> Response {
    let headers = request.headers().clone();
    let cursor = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Ok(mut gets) = site.gets.lock() {
        gets.push((q.session.clone(), cursor.clone()));
    }
    if cursor.is_some() {
        let mut held = site.held.subscribe();
        let _ = held.wait_for(|held| !held.contains(&q.session)).await;
    }
    let mut forward = Request::builder()
        .method("GET")
        .uri("/mcp")
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    for name in ["host", "last-event-id", "origin"] {
        if let Some(value) = headers.get(name) {
            forward = forward.header(name, value);
        }
    }
    if let Ok(session) = HeaderValue::from_str(&q.session) {
        forward = forward.header("mcp-session-id", session);
    }
    let Ok(forward) = forward.body(axum::body::Body::empty()) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    match site.service.clone().call(forward).await {
        Ok(response) => response.map(axum::body::Body::new),
        Err(never) => match never {},
    }
}

/// `POST /test/close?session=S&retry_ms=N`: the server drops every
/// standalone connection of S, sending `retry: N` first.
async fn close(State(site): State<Site>, Query(q): Query<SessionQuery>) -> StatusCode {
    let handle = site
        .manager
        .sessions
        .read()
        .await
        .get(q.session.as_str())
        .cloned();
    let Some(handle) = handle else {
        return StatusCode::NOT_FOUND;
    };
    let retry = q.retry_ms.map(Duration::from_millis);
    match handle.close_standalone_sse_stream(retry).await {
        Ok(()) => StatusCode::NO_CONTENT,
        Err(_) => StatusCode::CONFLICT,
    }
}

async fn hold(State(site): State<Site>, Query(q): Query<SessionQuery>) -> StatusCode {
    site.held.send_modify(|held| {
        held.insert(q.session);
    });
    StatusCode::NO_CONTENT
}

async fn release(State(site): State<Site>, Query(q): Query<SessionQuery>) -> StatusCode {
    site.held.send_modify(|held| {
        held.remove(&q.session);
    });
    StatusCode::NO_CONTENT
}

async fn serve_site(
    channel_capacity: usize,
    ct: CancellationToken,
) -> anyhow::Result<(SocketAddr, Site)> {
    let (service, manager) = TestServer::new(Side::Fork)
        .window(channel_capacity)
        .cancelled_by(&ct)
        .demo_service();
    let site = Site {
        service: service.clone(),
        manager,
        gets: Arc::default(),
        held: watch::Sender::new(HashSet::new()),
    };
    let router = axum::Router::new()
        .route(
            "/",
            get(|| async { Html(include_str!("browser/page.html")) }),
        )
        .route("/es", get(shim))
        .route("/test/close", post(close))
        .route("/test/hold", post(hold))
        .route("/test/release", post(release))
        .nest_service("/mcp", service)
        .with_state(site.clone());
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(ct.cancelled_owned())
            .await;
    });
    Ok((addr, site))
}

fn require(path: &Path, what: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        path.exists(),
        "{what} is not installed at {}: run `bash .ci/test`, which installs it",
        path.display()
    );
    Ok(())
}

/// Runs `scenarios` in Chromium against the site at `addr`; `query` goes on
/// the page's URL.
async fn run_browser(
    addr: SocketAddr,
    query: &str,
    scenarios: &[&str],
) -> anyhow::Result<HashMap<String, Value>> {
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers");
    let chromium = std::env::var_os("CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    require(&chromium, "Debian's chromium")?;
    require(
        &peers.join("node_modules/playwright-core"),
        "playwright-core",
    )?;
    let child = tokio::process::Command::new("node")
        .arg(peers.join("browser.mjs"))
        .arg(format!("http://{addr}/{query}"))
        .args(scenarios)
        .env("CHROMIUM", &chromium)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let output = tokio::time::timeout(LIMIT, child.wait_with_output()).await??;
    let stdout = String::from_utf8_lossy(&output.stdout);
    anyhow::ensure!(
        output.status.success(),
        "browser driver failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let results: HashMap<String, Value> = serde_json::from_str(stdout.trim())?;
    for (name, result) in &results {
        anyhow::ensure!(result.get("error").is_none(), "{name}: {result:#}");
    }
    Ok(results)
}

fn gets_of(site: &Site, session: &str) -> Vec<Option<String>> {
    site.gets
        .lock()
        .map(|gets| {
            gets.iter()
                .filter(|(s, _)| s == session)
                .map(|(_, cursor)| cursor.clone())
                .collect()
        })
        .unwrap_or_default()
}

fn ids(source: &Value) -> Vec<String> {
    source["ids"]
        .as_array()
        .map(|ids| {
            ids.iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

const OPEN: u64 = 1;
const CLOSED: u64 = 2;

#[tokio::test]
async fn chromium_eventsource_reconnects_settle_without_leapfrog_or_loops() -> anyhow::Result<()> {
    let ct = CancellationToken::new();
    let (addr, site) = serve_site(64, ct.clone()).await?;
    let results = run_browser(addr, "", &["editor", "unknown_session", "deleted_session"]).await?;

    // Two panels, one session: 10 notifications, each on exactly one source.
    let editor = &results["editor"];
    let session = editor["session"].as_str().unwrap_or_default();
    let sources = editor["sources"].as_array().cloned().unwrap_or_default();
    assert_eq!(sources.len(), 2, "{editor:#}");
    let mut seen: Vec<String> = sources.iter().flat_map(ids).collect();
    let total = seen.len();
    seen.sort();
    seen.dedup();
    assert_eq!(total, 10, "every notification arrives: {editor:#}");
    assert_eq!(seen.len(), 10, "and none arrives twice: {editor:#}");
    for source in &sources {
        assert_eq!(source["readyState"], OPEN, "{source:#}");
        assert_eq!(
            source["opens"], 2,
            "one reconnect each, then quiet: {source:#}"
        );
    }
    // Two opens and two reconnects, and nothing more over the quiet window;
    // the source that had events resumed from its last one.
    let gets = gets_of(&site, session);
    assert_eq!(gets.len(), 4, "{gets:?}");
    // A's cursor is the last id it saw (the `retry` event the server sent
    // as it closed): after its fifth notification, before its sixth.
    let a = ids(&sources[0])
        .iter()
        .map(|i| i.parse::<u64>())
        .collect::<Result<Vec<_>, _>>()?;
    let cursors: Vec<u64> = gets
        .iter()
        .flatten()
        .map(|c| c.parse())
        .collect::<Result<_, _>>()?;
    assert_eq!(cursors.len(), 1, "only A had seen an id: {gets:?}");
    assert!(
        a.len() >= 6 && a[4] <= cursors[0] && cursors[0] < a[5],
        "{gets:?} {editor:#}"
    );

    // Unknown session: one GET, a 404, a closed source.
    let unknown = &results["unknown_session"];
    let source = &unknown["sources"][0];
    assert_eq!(source["readyState"], CLOSED, "{unknown:#}");
    assert_eq!(source["opens"], 0, "{unknown:#}");
    assert_eq!(gets_of(&site, "no-such-session").len(), 1);

    // Deleted session: the reconnect meets 404 and the source stops there.
    let deleted = &results["deleted_session"];
    let source = &deleted["sources"][0];
    assert_eq!(deleted["deleteStatus"], 200, "{deleted:#}");
    assert_eq!(source["readyState"], CLOSED, "{deleted:#}");
    let session = deleted["session"].as_str().unwrap_or_default();
    assert_eq!(gets_of(&site, session).len(), 2, "{deleted:#}");
    ct.cancel();
    Ok(())
}

#[tokio::test]
async fn chromium_eventsource_settles_on_the_fallback_notice() -> anyhow::Result<()> {
    let ct = CancellationToken::new();
    // A replay window of 4 events, so that 8 events while away evict the cursor.
    const WINDOW: usize = 4;
    let (addr, site) = serve_site(WINDOW, ct.clone()).await?;
    let results = run_browser(addr, &format!("?window={WINDOW}"), &["fallback"]).await?;
    let fallback = &results["fallback"];
    let source = &fallback["sources"][0];
    assert_eq!(source["readyState"], OPEN, "{fallback:#}");
    assert_eq!(
        source["opens"], 2,
        "one reconnect, then quiet: {fallback:#}"
    );

    let notices = source["notices"].as_array().cloned().unwrap_or_default();
    assert_eq!(notices.len(), 1, "{fallback:#}");
    let notice = &notices[0];
    assert_eq!(notice["complete"], false, "{notice:#}");
    let seen = ids(source);
    let session = fallback["session"].as_str().unwrap_or_default();
    let gets = gets_of(&site, session);
    assert_eq!(gets.len(), 2, "one open, one resume: {gets:?}");
    // The notice names the cursor the browser sent, which was at or after
    // the second notification it saw.
    let sent = gets[1].clone().unwrap_or_default();
    assert_eq!(
        notice["cursor"].as_str(),
        Some(sent.as_str()),
        "{fallback:#}"
    );
    let cursor: u64 = sent.parse()?;
    assert!(cursor >= seen[1].parse()?, "{fallback:#}");
    let floor: u64 = notice["floor"].as_str().unwrap_or_default().parse()?;
    assert!(
        floor > cursor + 1,
        "the notice names a real gap: {notice:#}"
    );

    // After the gap: exactly the window, from the floor, then the live one.
    let after: Vec<u64> = seen[2..]
        .iter()
        .map(|i| i.parse())
        .collect::<Result<_, _>>()?;
    let expected: Vec<u64> = (floor..).take(WINDOW + 1).collect();
    assert_eq!(after, expected, "{fallback:#}");
    assert_eq!(site.service.resume_stats().fallback, 1);
    ct.cancel();
    Ok(())
}
