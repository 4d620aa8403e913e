//! The rmcp lines talk to each other over the wire: a server on one line
//! and a client on the other, both of the fork, or the fork against upstream.
//! Streamable HTTP is the same protocol on 1.8.0 and 3.11.0, so a fleet can
//! move one side at a time.
//!
//! For each pairing: a plain call answers, and (where the client is the
//! fork's) a call whose stream is cut mid-way resumes and answers with every
//! progress notification. The 1.8-line fork also meets upstream 1.8.0 here,
//! both ways.
//!
//! The 2.2 line sits between them: its servers and clients meet both
//! neighbours' (fork and upstream) and upstream 2.2.0 itself, and cut calls
//! resume across 2.2 and each neighbour, both ways.
//!
//! The 0.17 line meets its neighbour, 1.8 (fork and upstream), and upstream
//! 0.17.0 itself; cut calls resume across 0.17 and 1.8, both ways.
//!
//! The 0.16 line meets its neighbour, 0.17 (fork and upstream), and upstream
//! 0.16.0 itself; cut calls resume across 0.16 and 0.17, both ways. The 0.15
//! line meets 0.16 the same way. Each 0.x line's proofs are one module
//! (`line_0_17`, `line_0_16`, `line_0_15`) of the `neighbours!` macro.

use std::time::Duration;

use rmcp_resume_testkit::scenario::{self as scenario_3, Signals as Signals3};
use rmcp_resume_testkit_1::scenario::{self as scenario_1, Signals as Signals1};
use rmcp_resume_testkit_2::scenario::{self as scenario_2, Signals as Signals2};

/// Priming `retry` both servers send.
const RETRY: Duration = Duration::from_millis(200);
/// A bound on what must end.
const LIMIT: Duration = Duration::from_secs(60);

/// A 1.8-line demo server of `side`, behind a 3.11-line testkit's proxy.
async fn server_1(side: rmcp_resume_testkit_1::Side) -> anyhow::Result<scenario_3::World> {
    let served = rmcp_resume_testkit_1::TestServer::new(side)
        .window(16)
        .retry(Some(RETRY))
        .serve()
        .await?;
    let signals = Signals3 {
        addr: served.addr,
        gate: served.gate.clone(),
        finished: served.finished.clone(),
        ct: served.ct.clone(),
    };
    scenario_3::world_around(signals, Box::new(served), "notifications/progress").await
}

/// A 3.11-line demo server of `side`, behind a 1.8-line testkit's proxy.
async fn server_3(side: rmcp_resume_testkit::Side) -> anyhow::Result<scenario_1::World> {
    let served = rmcp_resume_testkit::TestServer::new(side)
        .window(16)
        .retry(Some(RETRY))
        .serve()
        .await?;
    let signals = Signals1 {
        addr: served.addr,
        gate: served.gate.clone(),
        finished: served.finished.clone(),
        ct: served.ct.clone(),
    };
    scenario_1::world_around(signals, Box::new(served), "notifications/progress").await
}

fn sum_3() -> anyhow::Result<rmcp::model::CallToolRequestParams> {
    Ok(serde_json::from_value(
        serde_json::json!({ "name": "sum", "arguments": { "a": 2, "b": 3 } }),
    )?)
}

fn sum_1() -> anyhow::Result<rmcp_1::model::CallToolRequestParams> {
    Ok(serde_json::from_value(
        serde_json::json!({ "name": "sum", "arguments": { "a": 2, "b": 3 } }),
    )?)
}

/// A 1.8-line client of `client` calls `sum` on a 1.8-line server of
/// `server` (the fork's line against upstream 1.8.0 itself).
async fn sum_within_1(
    client: rmcp_resume_testkit_1::Side,
    server: rmcp_resume_testkit_1::Side,
) -> anyhow::Result<()> {
    let world = scenario_1::world(server, 16, Some(RETRY)).await?;
    let url = format!("http://{}/mcp", world.proxy.addr);
    let running = scenario_1::connect(client, scenario_1::Progress::default(), url).await?;
    let result = tokio::time::timeout(LIMIT, running.peer().call_tool(sum_1()?)).await??;
    assert_eq!(scenario_1::first_text(&result).as_deref(), Some("5"));
    Ok(())
}

#[tokio::test]
async fn upstream_1_client_calls_fork_1_server() -> anyhow::Result<()> {
    sum_within_1(
        rmcp_resume_testkit_1::Side::Upstream,
        rmcp_resume_testkit_1::Side::Fork,
    )
    .await
}

#[tokio::test]
async fn fork_1_client_calls_upstream_1_server() -> anyhow::Result<()> {
    sum_within_1(
        rmcp_resume_testkit_1::Side::Fork,
        rmcp_resume_testkit_1::Side::Upstream,
    )
    .await
}

/// A 3.11-line client of `side` calls `sum` on a 1.8-line server.
async fn sum_on_1(
    client: rmcp_resume_testkit::Side,
    server: rmcp_resume_testkit_1::Side,
) -> anyhow::Result<()> {
    let world = server_1(server).await?;
    let url = format!("http://{}/mcp", world.proxy.addr);
    let running = scenario_3::connect(client, scenario_3::Progress::default(), url).await?;
    let result = tokio::time::timeout(LIMIT, running.peer().call_tool(sum_3()?)).await??;
    assert_eq!(scenario_3::first_text(&result).as_deref(), Some("5"));
    Ok(())
}

/// A 1.8-line client of `side` calls `sum` on a 3.11-line server.
async fn sum_on_3(
    client: rmcp_resume_testkit_1::Side,
    server: rmcp_resume_testkit::Side,
) -> anyhow::Result<()> {
    let world = server_3(server).await?;
    let url = format!("http://{}/mcp", world.proxy.addr);
    let running = scenario_1::connect(client, scenario_1::Progress::default(), url).await?;
    let result = tokio::time::timeout(LIMIT, running.peer().call_tool(sum_1()?)).await??;
    assert_eq!(scenario_1::first_text(&result).as_deref(), Some("5"));
    Ok(())
}

#[tokio::test]
async fn fork_3_client_calls_fork_1_server() -> anyhow::Result<()> {
    sum_on_1(
        rmcp_resume_testkit::Side::Fork,
        rmcp_resume_testkit_1::Side::Fork,
    )
    .await
}

#[tokio::test]
async fn upstream_3_client_calls_fork_1_server() -> anyhow::Result<()> {
    sum_on_1(
        rmcp_resume_testkit::Side::Upstream,
        rmcp_resume_testkit_1::Side::Fork,
    )
    .await
}

#[tokio::test]
async fn fork_1_client_calls_fork_3_server() -> anyhow::Result<()> {
    sum_on_3(
        rmcp_resume_testkit_1::Side::Fork,
        rmcp_resume_testkit::Side::Fork,
    )
    .await
}

#[tokio::test]
async fn upstream_1_client_calls_fork_3_server() -> anyhow::Result<()> {
    sum_on_3(
        rmcp_resume_testkit_1::Side::Upstream,
        rmcp_resume_testkit::Side::Fork,
    )
    .await
}

#[tokio::test]
async fn fork_1_client_calls_upstream_3_server() -> anyhow::Result<()> {
    sum_on_3(
        rmcp_resume_testkit_1::Side::Fork,
        rmcp_resume_testkit::Side::Upstream,
    )
    .await
}

#[tokio::test]
async fn fork_3_client_calls_upstream_1_server() -> anyhow::Result<()> {
    sum_on_1(
        rmcp_resume_testkit::Side::Fork,
        rmcp_resume_testkit_1::Side::Upstream,
    )
    .await
}

#[tokio::test]
async fn fork_3_client_resumes_a_cut_call_on_fork_1_server() -> anyhow::Result<()> {
    let world = server_1(rmcp_resume_testkit_1::Side::Fork).await?;
    let (ending, progress) =
        scenario_3::cut_call(rmcp_resume_testkit::Side::Fork, &world, "work", 3, LIMIT).await?;
    match ending {
        scenario_3::Ending::Answered(Ok(text)) => assert_eq!(text, "finished 3 steps"),
        other => anyhow::bail!("expected the response: {other:?}"),
    }
    assert_eq!(progress, 3);
    assert!(world.proxy.resumes() <= 3, "{}", world.proxy.resumes());
    Ok(())
}

#[tokio::test]
async fn fork_1_client_resumes_a_cut_call_on_fork_3_server() -> anyhow::Result<()> {
    let world = server_3(rmcp_resume_testkit::Side::Fork).await?;
    let (ending, progress) =
        scenario_1::cut_call(rmcp_resume_testkit_1::Side::Fork, &world, "work", 3, LIMIT).await?;
    match ending {
        scenario_1::Ending::Answered(Ok(text)) => assert_eq!(text, "finished 3 steps"),
        other => anyhow::bail!("expected the response: {other:?}"),
    }
    assert_eq!(progress, 3);
    assert!(world.proxy.resumes() <= 3, "{}", world.proxy.resumes());
    Ok(())
}

#[tokio::test]
async fn upstream_3_client_resumes_a_cut_call_on_fork_1_server() -> anyhow::Result<()> {
    // Upstream 3.11.0's client resumes request streams; the 1.8-line fork
    // server replays what it missed and the answer.
    let world = server_1(rmcp_resume_testkit_1::Side::Fork).await?;
    let (ending, progress) = scenario_3::cut_call(
        rmcp_resume_testkit::Side::Upstream,
        &world,
        "work",
        3,
        LIMIT,
    )
    .await?;
    match ending {
        scenario_3::Ending::Answered(Ok(text)) => assert_eq!(text, "finished 3 steps"),
        other => anyhow::bail!("expected the response: {other:?}"),
    }
    assert_eq!(progress, 3);
    Ok(())
}

// ---- the 2.2 line and its neighbours ----

/// A proxied world of one testkit's `scenario` module around a demo server
/// `served` started by another testkit.
macro_rules! world_in {
    ($scenario:ident, $signals:ident, $served:expr) => {{
        let served = $served;
        let signals = $signals {
            addr: served.addr,
            gate: served.gate.clone(),
            finished: served.finished.clone(),
            ct: served.ct.clone(),
        };
        $scenario::world_around(signals, Box::new(served), "notifications/progress").await
    }};
}

async fn served_2(
    side: rmcp_resume_testkit_2::Side,
) -> std::io::Result<rmcp_resume_testkit_2::Served> {
    rmcp_resume_testkit_2::TestServer::new(side)
        .window(16)
        .retry(Some(RETRY))
        .serve()
        .await
}

async fn served_1(
    side: rmcp_resume_testkit_1::Side,
) -> std::io::Result<rmcp_resume_testkit_1::Served> {
    rmcp_resume_testkit_1::TestServer::new(side)
        .window(16)
        .retry(Some(RETRY))
        .serve()
        .await
}

async fn served_3(side: rmcp_resume_testkit::Side) -> std::io::Result<rmcp_resume_testkit::Served> {
    rmcp_resume_testkit::TestServer::new(side)
        .window(16)
        .retry(Some(RETRY))
        .serve()
        .await
}

fn sum_2() -> anyhow::Result<rmcp_2::model::CallToolRequestParams> {
    Ok(serde_json::from_value(
        serde_json::json!({ "name": "sum", "arguments": { "a": 20, "b": 22 } }),
    )?)
}

fn sum_arguments() -> serde_json::Value {
    serde_json::json!({ "name": "sum", "arguments": { "a": 20, "b": 22 } })
}

/// A client of one testkit (`$scenario`, `$side`) calls `sum` through `$world`.
macro_rules! sums_to_42 {
    ($scenario:ident, $side:expr, $world:expr) => {{
        let world = $world;
        let url = format!("http://{}/mcp", world.proxy.addr);
        let running = $scenario::connect($side, $scenario::Progress::default(), url).await?;
        let call = serde_json::from_value(sum_arguments())?;
        let result = tokio::time::timeout(LIMIT, running.peer().call_tool(call)).await??;
        assert_eq!($scenario::first_text(&result).as_deref(), Some("42"));
        anyhow::Ok(())
    }};
}

/// A client of one testkit (`$scenario`, `$side`) calls `work` through
/// `$world`, whose connections are cut at its first progress event; the
/// call must answer with all 3 notifications, within 3 resumes.
macro_rules! cut_call_answers {
    ($scenario:ident, $side:expr, $world:expr) => {{
        let world = $world;
        let (ending, progress) = $scenario::cut_call($side, &world, "work", 3, LIMIT).await?;
        match ending {
            $scenario::Ending::Answered(Ok(text)) => assert_eq!(text, "finished 3 steps"),
            other => anyhow::bail!("expected the response: {other:?}"),
        }
        assert_eq!(progress, 3);
        assert!(world.proxy.resumes() <= 3, "{}", world.proxy.resumes());
        anyhow::Ok(())
    }};
}

#[tokio::test]
async fn upstream_2_client_calls_fork_2_server() -> anyhow::Result<()> {
    let world = scenario_2::world(rmcp_resume_testkit_2::Side::Fork, 16, Some(RETRY)).await?;
    let url = format!("http://{}/mcp", world.proxy.addr);
    let running = scenario_2::connect(
        rmcp_resume_testkit_2::Side::Upstream,
        scenario_2::Progress::default(),
        url,
    )
    .await?;
    let result = tokio::time::timeout(LIMIT, running.peer().call_tool(sum_2()?)).await??;
    assert_eq!(scenario_2::first_text(&result).as_deref(), Some("42"));
    Ok(())
}

#[tokio::test]
async fn fork_2_client_calls_upstream_2_server() -> anyhow::Result<()> {
    sums_to_42!(
        scenario_2,
        rmcp_resume_testkit_2::Side::Fork,
        scenario_2::world(rmcp_resume_testkit_2::Side::Upstream, 16, Some(RETRY)).await?
    )
}

#[tokio::test]
async fn fork_2_client_calls_fork_3_server() -> anyhow::Result<()> {
    sums_to_42!(
        scenario_2,
        rmcp_resume_testkit_2::Side::Fork,
        world_in!(
            scenario_2,
            Signals2,
            served_3(rmcp_resume_testkit::Side::Fork).await?
        )?
    )
}

#[tokio::test]
async fn fork_2_client_calls_upstream_3_server() -> anyhow::Result<()> {
    sums_to_42!(
        scenario_2,
        rmcp_resume_testkit_2::Side::Fork,
        world_in!(
            scenario_2,
            Signals2,
            served_3(rmcp_resume_testkit::Side::Upstream).await?
        )?
    )
}

#[tokio::test]
async fn fork_2_client_calls_fork_1_server() -> anyhow::Result<()> {
    sums_to_42!(
        scenario_2,
        rmcp_resume_testkit_2::Side::Fork,
        world_in!(
            scenario_2,
            Signals2,
            served_1(rmcp_resume_testkit_1::Side::Fork).await?
        )?
    )
}

#[tokio::test]
async fn fork_2_client_calls_upstream_1_server() -> anyhow::Result<()> {
    sums_to_42!(
        scenario_2,
        rmcp_resume_testkit_2::Side::Fork,
        world_in!(
            scenario_2,
            Signals2,
            served_1(rmcp_resume_testkit_1::Side::Upstream).await?
        )?
    )
}

#[tokio::test]
async fn fork_3_client_calls_fork_2_server() -> anyhow::Result<()> {
    sums_to_42!(
        scenario_3,
        rmcp_resume_testkit::Side::Fork,
        world_in!(
            scenario_3,
            Signals3,
            served_2(rmcp_resume_testkit_2::Side::Fork).await?
        )?
    )
}

#[tokio::test]
async fn upstream_3_client_calls_fork_2_server() -> anyhow::Result<()> {
    sums_to_42!(
        scenario_3,
        rmcp_resume_testkit::Side::Upstream,
        world_in!(
            scenario_3,
            Signals3,
            served_2(rmcp_resume_testkit_2::Side::Fork).await?
        )?
    )
}

#[tokio::test]
async fn fork_1_client_calls_fork_2_server() -> anyhow::Result<()> {
    sums_to_42!(
        scenario_1,
        rmcp_resume_testkit_1::Side::Fork,
        world_in!(
            scenario_1,
            Signals1,
            served_2(rmcp_resume_testkit_2::Side::Fork).await?
        )?
    )
}

#[tokio::test]
async fn upstream_1_client_calls_fork_2_server() -> anyhow::Result<()> {
    sums_to_42!(
        scenario_1,
        rmcp_resume_testkit_1::Side::Upstream,
        world_in!(
            scenario_1,
            Signals1,
            served_2(rmcp_resume_testkit_2::Side::Fork).await?
        )?
    )
}

#[tokio::test]
async fn fork_2_client_resumes_a_cut_call_on_fork_3_server() -> anyhow::Result<()> {
    cut_call_answers!(
        scenario_2,
        rmcp_resume_testkit_2::Side::Fork,
        world_in!(
            scenario_2,
            Signals2,
            served_3(rmcp_resume_testkit::Side::Fork).await?
        )?
    )
}

#[tokio::test]
async fn fork_2_client_resumes_a_cut_call_on_fork_1_server() -> anyhow::Result<()> {
    cut_call_answers!(
        scenario_2,
        rmcp_resume_testkit_2::Side::Fork,
        world_in!(
            scenario_2,
            Signals2,
            served_1(rmcp_resume_testkit_1::Side::Fork).await?
        )?
    )
}

#[tokio::test]
async fn fork_3_client_resumes_a_cut_call_on_fork_2_server() -> anyhow::Result<()> {
    cut_call_answers!(
        scenario_3,
        rmcp_resume_testkit::Side::Fork,
        world_in!(
            scenario_3,
            Signals3,
            served_2(rmcp_resume_testkit_2::Side::Fork).await?
        )?
    )
}

#[tokio::test]
async fn fork_1_client_resumes_a_cut_call_on_fork_2_server() -> anyhow::Result<()> {
    cut_call_answers!(
        scenario_1,
        rmcp_resume_testkit_1::Side::Fork,
        world_in!(
            scenario_1,
            Signals1,
            served_2(rmcp_resume_testkit_2::Side::Fork).await?
        )?
    )
}

#[tokio::test]
async fn upstream_2_client_resumes_a_cut_call_on_fork_2_server() -> anyhow::Result<()> {
    // Upstream 2.2.0's client resumes request streams (SEP-1699); the
    // 2.2-line fork server replays what it missed and the answer.
    cut_call_answers!(
        scenario_2,
        rmcp_resume_testkit_2::Side::Upstream,
        scenario_2::world(rmcp_resume_testkit_2::Side::Fork, 16, Some(RETRY)).await?
    )
}

#[tokio::test]
async fn upstream_3_client_resumes_a_cut_call_on_fork_2_server() -> anyhow::Result<()> {
    cut_call_answers!(
        scenario_3,
        rmcp_resume_testkit::Side::Upstream,
        world_in!(
            scenario_3,
            Signals3,
            served_2(rmcp_resume_testkit_2::Side::Fork).await?
        )?
    )
}

// ---- each 0.x line and its neighbour ----

/// The proofs of one line against its newer neighbour, as a module: plain
/// calls both ways between the line's fork and upstream of the same
/// release; the line's fork against the neighbour's fork and upstream, both
/// ways; and cut calls resumed within the line and across to the neighbour,
/// both ways.
macro_rules! neighbours {
    ($name:ident: $kit:ident next to $next:ident) => {
        mod $name {
            use super::{LIMIT, RETRY, sum_arguments};
            use $kit::scenario::{self as line, Signals as LineSignals};
            use $next::scenario::{self as next, Signals as NextSignals};

            async fn served(side: $kit::Side) -> std::io::Result<$kit::Served> {
                $kit::TestServer::new(side)
                    .window(16)
                    .retry(Some(RETRY))
                    .serve()
                    .await
            }

            async fn served_next(side: $next::Side) -> std::io::Result<$next::Served> {
                $next::TestServer::new(side)
                    .window(16)
                    .retry(Some(RETRY))
                    .serve()
                    .await
            }

            #[tokio::test]
            async fn upstream_client_calls_fork_server() -> anyhow::Result<()> {
                sums_to_42!(
                    line,
                    $kit::Side::Upstream,
                    line::world($kit::Side::Fork, 16, Some(RETRY)).await?
                )
            }

            #[tokio::test]
            async fn fork_client_calls_upstream_server() -> anyhow::Result<()> {
                sums_to_42!(
                    line,
                    $kit::Side::Fork,
                    line::world($kit::Side::Upstream, 16, Some(RETRY)).await?
                )
            }

            #[tokio::test]
            async fn fork_client_calls_fork_neighbour_server() -> anyhow::Result<()> {
                sums_to_42!(
                    line,
                    $kit::Side::Fork,
                    world_in!(line, LineSignals, served_next($next::Side::Fork).await?)?
                )
            }

            #[tokio::test]
            async fn fork_client_calls_upstream_neighbour_server() -> anyhow::Result<()> {
                sums_to_42!(
                    line,
                    $kit::Side::Fork,
                    world_in!(line, LineSignals, served_next($next::Side::Upstream).await?)?
                )
            }

            #[tokio::test]
            async fn fork_neighbour_client_calls_fork_server() -> anyhow::Result<()> {
                sums_to_42!(
                    next,
                    $next::Side::Fork,
                    world_in!(next, NextSignals, served($kit::Side::Fork).await?)?
                )
            }

            #[tokio::test]
            async fn upstream_neighbour_client_calls_fork_server() -> anyhow::Result<()> {
                sums_to_42!(
                    next,
                    $next::Side::Upstream,
                    world_in!(next, NextSignals, served($kit::Side::Fork).await?)?
                )
            }

            #[tokio::test]
            async fn fork_client_resumes_a_cut_call_on_fork_neighbour_server() -> anyhow::Result<()>
            {
                cut_call_answers!(
                    line,
                    $kit::Side::Fork,
                    world_in!(line, LineSignals, served_next($next::Side::Fork).await?)?
                )
            }

            #[tokio::test]
            async fn fork_neighbour_client_resumes_a_cut_call_on_fork_server() -> anyhow::Result<()>
            {
                cut_call_answers!(
                    next,
                    $next::Side::Fork,
                    world_in!(next, NextSignals, served($kit::Side::Fork).await?)?
                )
            }

            #[tokio::test]
            async fn fork_client_resumes_a_cut_call_on_fork_server() -> anyhow::Result<()> {
                cut_call_answers!(
                    line,
                    $kit::Side::Fork,
                    line::world($kit::Side::Fork, 16, Some(RETRY)).await?
                )
            }
        }
    };
}

neighbours!(line_0_17: rmcp_resume_testkit_0_17 next to rmcp_resume_testkit_1);
neighbours!(line_0_16: rmcp_resume_testkit_0_16 next to rmcp_resume_testkit_0_17);
neighbours!(line_0_15: rmcp_resume_testkit_0_15 next to rmcp_resume_testkit_0_16);
