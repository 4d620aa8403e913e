//! The churn soak, run the same way on both stacks: clients call a tool that
//! streams progress (now and then a burst of 1,000) and listen to a ticker on
//! their standalone stream, through a proxy that closes every connection
//! after a seeded random lifetime. Each call and each tick is accounted for.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::progress::ProgressRecorder;
use crate::proxy::Proxy;
use crate::{Side, TestServer};

/// One soak's shape.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Concurrent clients, each with its own session.
    pub clients: usize,
    /// Calls per client, one after another.
    pub calls: usize,
    /// Progress notifications per ordinary call.
    pub steps: u32,
    /// Between two progress notifications of an ordinary call.
    pub interval: Duration,
    /// Every client's first call is a burst of this many notifications, sent
    /// as fast as the server can (`0`: none).
    pub burst: u32,
    /// Standalone ticks per client, and the time between two.
    pub ticks: (u32, Duration),
    /// Connection lifetimes, drawn uniformly.
    pub lifetimes: (Duration, Duration),
    /// How long one call may take before it counts as hung.
    pub call_limit: Duration,
}

impl Shape {
    /// The churn issue's setup: 8 clients × 6 calls of 20 progress
    /// notifications 25 ms apart, a 50 ms ticker, connections closed after
    /// 50–600 ms.
    pub fn standard() -> Self {
        Self {
            clients: 8,
            calls: 6,
            steps: 20,
            interval: Duration::from_millis(25),
            burst: 1_000,
            ticks: (60, Duration::from_millis(50)),
            lifetimes: (Duration::from_millis(50), Duration::from_millis(600)),
            call_limit: Duration::from_secs(30),
        }
    }

    /// Harsher: 16 clients, connections living 20–300 ms.
    pub fn harsh() -> Self {
        Self {
            clients: 16,
            calls: 3,
            steps: 20,
            interval: Duration::from_millis(10),
            burst: 1_000,
            ticks: (40, Duration::from_millis(50)),
            lifetimes: (Duration::from_millis(20), Duration::from_millis(300)),
            call_limit: Duration::from_secs(30),
        }
    }
}

/// How one soak went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Calls made.
    pub calls: usize,
    /// Answered with every progress value exactly once.
    pub whole: usize,
    /// Answered, with some progress value delivered twice.
    pub duplicated: usize,
    /// Answered, with some progress value missing and no error: a silent gap.
    pub gapped: usize,
    /// Failed with an error (counting [`unsent`](Self::unsent)).
    pub failed: usize,
    /// Of those, calls whose `POST` got no answer at all (the HTTP client
    /// failed with no status): the cut came before any answer, so there is
    /// no stream to resume and the client cannot know whether the server got
    /// the call. No resumption can save these; the proxy's timing, not the
    /// client, sets how many there are.
    pub unsent: usize,
    /// Still pending at the call limit.
    pub hung: usize,
    /// Ticks the server sent.
    pub ticks_sent: usize,
    /// Ticks that never arrived.
    pub ticks_lost: usize,
    /// Ticks that arrived more than once (extra copies).
    pub ticks_duplicated: usize,
    /// Connections the proxy cut.
    pub cuts: usize,
    /// `GET`s with `Last-Event-ID` through the proxy.
    pub resumes: usize,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.calls += other.calls;
        self.whole += other.whole;
        self.duplicated += other.duplicated;
        self.gapped += other.gapped;
        self.failed += other.failed;
        self.unsent += other.unsent;
        self.hung += other.hung;
        self.ticks_sent += other.ticks_sent;
        self.ticks_lost += other.ticks_lost;
        self.ticks_duplicated += other.ticks_duplicated;
        self.cuts += other.cuts;
        self.resumes += other.resumes;
    }

    /// Sums tallies.
    pub fn sum(tallies: impl IntoIterator<Item = Tally>) -> Self {
        let mut total = Self::default();
        for tally in tallies {
            total.add(tally);
        }
        total
    }
}

/// How one call ended.
enum Call {
    Whole,
    Duplicated,
    Gapped,
    Failed,
    Unsent,
    Hung,
}

fn judge(values: &[f64], steps: u32) -> Call {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut unique = sorted.clone();
    unique.dedup();
    if unique.len() < steps as usize {
        Call::Gapped
    } else if sorted.len() > unique.len() {
        Call::Duplicated
    } else {
        Call::Whole
    }
}

/// Runs one seeded soak of `shape` against `side`'s server with the same
/// side's client.
pub async fn run(side: Side, seed: u64, shape: Shape) -> anyhow::Result<Tally> {
    let served = TestServer::new(side).serve().await?;
    let proxy = Proxy::start(served.addr, "", served.ct.clone()).await?;
    proxy.churn(seed, shape.lifetimes.0, shape.lifetimes.1);
    let url = format!("http://{}/mcp", proxy.addr);
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..shape.clients {
        clients.spawn(client(side, url.clone(), shape));
    }
    let mut tally = Tally::default();
    while let Some(done) = clients.join_next().await {
        tally.add(done??);
    }
    tally.cuts = proxy.cuts();
    tally.resumes = proxy.resumes();
    Ok(tally)
}

/// Whether a call failed because its `POST` got no answer at all: the
/// transport's send failed and, somewhere in its causes, the HTTP client
/// failed with no status (a connection refused, reset or closed before the
/// answer). A worker that quit, an HTTP error status or a session the server
/// lost are other failures.
fn lost_in_transit(error: &rmcp::service::ServiceError) -> bool {
    if !matches!(error, rmcp::service::ServiceError::TransportSend(_)) {
        return false;
    }
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    // The transport's error names the HTTP client's as its `Client` variant,
    // not as its source: look for either along the chain.
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(now) = cause {
        if let Some(StreamableHttpError::Client(http)) =
            now.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return http.status().is_none();
        }
        if let Some(http) = now.downcast_ref::<reqwest::Error>() {
            return http.status().is_none();
        }
        cause = now.source();
    }
    false
}

async fn client(side: Side, url: String, shape: Shape) -> anyhow::Result<Tally> {
    let recorder = ProgressRecorder::default();
    let connected = match side {
        Side::Fork => {
            recorder
                .clone()
                .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
                    url,
                ))
                .await
        }
        Side::Upstream => {
            recorder
                .clone()
                .serve(upstream::transport::StreamableHttpClientTransport::from_uri(url))
                .await
        }
    };
    let service = match connected {
        Ok(service) => service,
        // A client that cannot connect loses every call it would have made,
        // and its ticks: a failure in the tally, for either side, not an
        // error that ends the soak.
        Err(error) => {
            eprintln!("{side:?} client could not connect: {error}");
            return Ok(Tally {
                calls: shape.calls,
                failed: shape.calls,
                ticks_sent: shape.ticks.0 as usize,
                ticks_lost: shape.ticks.0 as usize,
                ..Tally::default()
            });
        }
    };
    let mut tally = Tally::default();
    let (ticks, every) = shape.ticks;
    if ticks > 0 {
        let params: CallToolRequestParams = serde_json::from_value(json!({
            "name": "tick",
            "arguments": { "count": ticks, "interval_ms": every.as_millis() as u64 },
        }))?;
        // The ticker is set going by one call; if even that fails, its ticks
        // count as lost.
        let started =
            tokio::time::timeout(shape.call_limit, service.peer().call_tool(params)).await;
        tally.ticks_sent = ticks as usize;
        if !matches!(started, Ok(Ok(_))) {
            tally.ticks_lost = ticks as usize;
        }
    }
    for call in 0..shape.calls {
        let (count, interval) = if call == 0 && shape.burst > 0 {
            (shape.burst, Duration::ZERO)
        } else {
            (shape.steps, shape.interval)
        };
        recorder.clear();
        let params: CallToolRequestParams = serde_json::from_value(json!({
            "name": "stream",
            "arguments": { "count": count, "interval_ms": interval.as_millis() as u64 },
        }))?;
        tally.calls += 1;
        let outcome =
            tokio::time::timeout(shape.call_limit, service.peer().call_tool(params)).await;
        let ended = match outcome {
            Err(_) => Call::Hung,
            Ok(Err(error)) => {
                // Say which error, so a run that fails more than it should
                // can be read.
                eprintln!("{side:?} call {call} ({count} steps) failed: {error}");
                if lost_in_transit(&error) {
                    Call::Unsent
                } else {
                    Call::Failed
                }
            }
            Ok(Ok(_)) => {
                // Handlers run in tasks of their own: wait for the count.
                let seen = recorder.until(count as usize, Duration::from_secs(5)).await;
                let values: Vec<f64> = seen.into_values().flatten().collect();
                judge(&values, count)
            }
        };
        match ended {
            Call::Whole => tally.whole += 1,
            Call::Duplicated => tally.duplicated += 1,
            Call::Gapped => tally.gapped += 1,
            Call::Failed => tally.failed += 1,
            Call::Unsent => {
                tally.failed += 1;
                tally.unsent += 1;
            }
            Call::Hung => tally.hung += 1,
        }
    }
    if ticks > 0 && tally.ticks_lost == 0 {
        // The ticker may outlast the calls; give it its time, and a little.
        let limit = every * ticks + Duration::from_secs(5);
        let received = recorder.until_ticks(ticks, limit).await;
        let mut unique = received.clone();
        unique.sort_unstable();
        unique.dedup();
        tally.ticks_lost = (ticks as usize).saturating_sub(unique.len());
        tally.ticks_duplicated = received.len() - unique.len();
    }
    // A hung call may leave the client stuck; never wait on it for long.
    let _ = tokio::time::timeout(Duration::from_secs(5), service.cancel()).await;
    Ok(tally)
}
