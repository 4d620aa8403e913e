//! `rmcp-resume-probe` against real servers: the fork's passes every check;
//! upstream rmcp 3.11.0's verdicts are asserted one by one, so a change on
//! either side shows up here.

use std::time::Duration;

use rmcp_resume_probe::{Options, ProbeError, Report, Target, Verdict, checks, probe};
use rmcp_resume_testkit::misbehaving::{Fault, Misbehaving};
use rmcp_resume_testkit::{Side, TestServer};
use serde_json::json;

fn options() -> Options {
    Options {
        tool: Some((
            "stream".to_owned(),
            json!({ "count": 40, "interval_ms": 20 }),
        )),
        notify: Some(("announce".to_owned(), json!({ "count": 1 }))),
        hold: Duration::from_secs(1),
        quiet: Duration::from_millis(1500),
        settle: Duration::from_secs(2),
    }
}

/// Probes a demo server of `side` (a 16-event window, so that the evicted
/// cursor shows) and saves the report as `target/probe/{name}.json` for the
/// comparison table (`.ci/probe-table.py`).
async fn report_for(side: Side, name: &str) -> anyhow::Result<Report> {
    let served = TestServer::new(side).window(16).serve().await?;
    let target = Target::new(&served.url, &[], Duration::from_secs(10))?;
    let report = probe(&target, &options(), &|_| {}).await?;
    eprintln!("{}", report.to_text());
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/probe");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(format!("{name}.json")), report.to_json())?;
    Ok(report)
}

#[tokio::test]
async fn fork_server_passes_every_check() -> anyhow::Result<()> {
    let report = report_for(Side::Fork, "rmcp-resume").await?;
    for check in &report.checks {
        assert_eq!(check.verdict, Verdict::Pass, "{check:#?}");
    }
    Ok(())
}

#[tokio::test]
async fn upstream_server_verdicts() -> anyhow::Result<()> {
    use Verdict::{Fail, Pass};
    let report = report_for(Side::Upstream, "rmcp-3.11.0").await?;
    let verdicts: Vec<(&str, Verdict)> = report.checks.iter().map(|c| (c.id, c.verdict)).collect();
    // Upstream rmcp 3.11.0: empty 200s for cursors it cannot serve, the
    // cursor event replayed, the window's loss unreported, the second GET
    // starved (#659), and no floor anywhere.
    assert_eq!(
        verdicts,
        [
            (checks::priming::ID, Pass),
            (checks::unbuffered::ID, Pass),
            (checks::malformed::ID, Fail),
            (checks::unknown::ID, Fail),
            (checks::request_resume::ID, Pass),
            (checks::strictly_after::ID, Fail),
            (checks::evicted::ID, Fail),
            (checks::two_gets::ID, Fail),
            (checks::sessions::DELETED, Pass),
            (checks::sessions::UNKNOWN, Pass),
            (checks::floor::ID, Fail),
            (checks::keep_alive::ID, Pass),
        ]
    );
    Ok(())
}

/// The probe against a server that breaks one promise.
async fn scripted(fault: Fault) -> anyhow::Result<Report> {
    let server = Misbehaving::serve(fault).await?;
    let target = Target::new(&server.url, &[], Duration::from_secs(5))?;
    let options = Options {
        tool: Some(("anything".to_owned(), json!({}))),
        notify: Some(("announce".to_owned(), json!({}))),
        hold: Duration::ZERO,
        quiet: Duration::from_millis(500),
        settle: Duration::from_millis(100),
    };
    let report = probe(&target, &options, &|_| {}).await?;
    eprintln!("{}", report.to_text());
    Ok(report)
}

#[tokio::test]
async fn scripted_server_passes_what_it_keeps() -> anyhow::Result<()> {
    // The server that keeps everything but the EmptyResume promise passes
    // the checks that do not resume.
    let report = scripted(Fault::EmptyResume).await?;
    assert_eq!(report.verdict(checks::priming::ID), Some(Verdict::Pass));
    assert_eq!(
        report.verdict(checks::sessions::DELETED),
        Some(Verdict::Pass)
    );
    assert_eq!(
        report.verdict(checks::sessions::UNKNOWN),
        Some(Verdict::Pass)
    );
    assert_eq!(report.verdict(checks::two_gets::ID), Some(Verdict::Pass));
    Ok(())
}

#[tokio::test]
async fn no_priming_event_fails_priming() -> anyhow::Result<()> {
    let report = scripted(Fault::NoPriming).await?;
    assert_eq!(report.verdict(checks::priming::ID), Some(Verdict::Fail));
    // Without an id before the response, a cut loses the call.
    assert_eq!(
        report.verdict(checks::request_resume::ID),
        Some(Verdict::Fail)
    );
    Ok(())
}

#[tokio::test]
async fn empty_resume_fails_request_resume() -> anyhow::Result<()> {
    let report = scripted(Fault::EmptyResume).await?;
    let check = report
        .get(checks::request_resume::ID)
        .expect("request-resume ran");
    assert_eq!(check.verdict, Verdict::Fail, "{check:#?}");
    assert_eq!(check.evidence.status, Some(200));
    assert_eq!(report.verdict(checks::unknown::ID), Some(Verdict::Fail));
    assert_eq!(report.verdict(checks::malformed::ID), Some(Verdict::Fail));
    assert_eq!(report.verdict(checks::floor::ID), Some(Verdict::Fail));
    Ok(())
}

#[tokio::test]
async fn replaying_the_cursor_event_fails_strictly_after() -> anyhow::Result<()> {
    let report = scripted(Fault::ReplaysCursor).await?;
    let check = report
        .get(checks::strictly_after::ID)
        .expect("strictly-after ran");
    assert_eq!(check.verdict, Verdict::Fail, "{check:#?}");
    assert!(check.evidence.detail.contains("sent again"), "{check:#?}");
    Ok(())
}

#[tokio::test]
async fn a_silent_skip_fails_evicted_cursor() -> anyhow::Result<()> {
    let report = scripted(Fault::SkipsSilently).await?;
    let check = report.get(checks::evicted::ID).expect("evicted-cursor ran");
    assert_eq!(check.verdict, Verdict::Fail, "{check:#?}");
    assert!(check.evidence.detail.contains("from 0 to 3"), "{check:#?}");
    Ok(())
}

#[tokio::test]
async fn a_session_kept_after_delete_fails() -> anyhow::Result<()> {
    let report = scripted(Fault::KeepsDeletedSessions).await?;
    assert_eq!(
        report.verdict(checks::sessions::DELETED),
        Some(Verdict::Fail)
    );
    // Its resumes are right: the response after the cursor, nothing twice.
    assert_eq!(
        report.verdict(checks::request_resume::ID),
        Some(Verdict::Pass)
    );
    assert_eq!(
        report.verdict(checks::strictly_after::ID),
        Some(Verdict::Pass)
    );
    Ok(())
}

#[tokio::test]
async fn unknown_session_answered_400_fails() -> anyhow::Result<()> {
    let report = scripted(Fault::UnknownSession400).await?;
    let check = report
        .get(checks::sessions::UNKNOWN)
        .expect("unknown-session ran");
    assert_eq!(check.verdict, Verdict::Fail);
    assert_eq!(check.evidence.status, Some(400));
    Ok(())
}

#[tokio::test]
async fn without_tools_the_tool_checks_are_not_checked() -> anyhow::Result<()> {
    let served = TestServer::new(Side::Fork).serve().await?;
    let target = Target::new(&served.url, &[], Duration::from_secs(5))?;
    let options = Options {
        tool: None,
        notify: None,
        hold: Duration::ZERO,
        ..Options::default()
    };
    let report = probe(&target, &options, &|_| {}).await?;
    for id in [
        checks::request_resume::ID,
        checks::strictly_after::ID,
        checks::evicted::ID,
        checks::two_gets::ID,
        checks::keep_alive::ID,
    ] {
        let check = report.get(id).expect("every check reports");
        assert_eq!(check.verdict, Verdict::NotChecked, "{check:#?}");
        assert!(!check.evidence.detail.is_empty());
    }
    Ok(())
}

#[tokio::test]
async fn bad_endpoints_end_with_one_clear_error() -> anyhow::Result<()> {
    let options = Options::default();
    let limit = Duration::from_secs(2);

    let unauthorized = Misbehaving::serve(Fault::Unauthorized).await?;
    let error = probe(
        &Target::new(&unauthorized.url, &[], limit)?,
        &options,
        &|_| {},
    )
    .await
    .expect_err("a 401 cannot be probed");
    assert!(
        matches!(&error, ProbeError::Unauthorized { challenge: Some(c), .. } if c.starts_with("Bearer")),
        "{error}"
    );

    let html = Misbehaving::serve(Fault::NotMcp).await?;
    let error = probe(&Target::new(&html.url, &[], limit)?, &options, &|_| {})
        .await
        .expect_err("HTML is not MCP");
    assert!(matches!(error, ProbeError::NotMcp { .. }), "{error}");

    // A port that was just free: nothing listens.
    let free = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await?
        .local_addr()?;
    let started = std::time::Instant::now();
    let error = probe(
        &Target::new(&format!("http://{free}/mcp"), &[], limit)?,
        &options,
        &|_| {},
    )
    .await
    .expect_err("nothing listens");
    assert!(matches!(error, ProbeError::Unreachable { .. }), "{error}");
    assert!(started.elapsed() < limit * 2);
    assert!(!error.to_string().contains('\n'));

    assert!(matches!(
        Target::new("ftp://host/mcp", &[], limit),
        Err(ProbeError::InvalidUrl(_))
    ));
    assert!(matches!(
        Target::new("http://host/mcp", &["no colon".to_owned()], limit),
        Err(ProbeError::InvalidHeader(_))
    ));
    Ok(())
}

/// A reverse proxy on 127.0.0.1:0 to `server` that forwards requests as
/// they come and hands each response direction to `downstream`.
async fn bad_proxy<F, Fut>(
    server: std::net::SocketAddr,
    downstream: F,
) -> anyhow::Result<std::net::SocketAddr>
where
    F: Fn(tokio::net::tcp::OwnedReadHalf, tokio::net::tcp::OwnedWriteHalf) -> Fut
        + Send
        + Sync
        + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let downstream = std::sync::Arc::new(downstream);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(upstream) = tokio::net::TcpStream::connect(server).await else {
                continue;
            };
            let downstream = downstream.clone();
            tokio::spawn(async move {
                let (mut client_read, client_write) = client.into_split();
                let (server_read, mut server_write) = upstream.into_split();
                let requests = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                });
                downstream(server_read, client_write).await;
                requests.abort();
            });
        }
    });
    Ok(addr)
}

/// A reverse proxy that closes a connection once the server has sent
/// nothing for `idle`: a load balancer's idle timeout.
async fn idle_cutting_proxy(
    server: std::net::SocketAddr,
    idle: Duration,
) -> anyhow::Result<std::net::SocketAddr> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    bad_proxy(
        server,
        move |mut server_read, mut client_write| async move {
            let mut buf = vec![0u8; 16 * 1024];
            // Each read waits at most `idle`; the loop ends with the
            // connection, or at the first idle spell.
            while let Ok(Ok(n)) = tokio::time::timeout(idle, server_read.read(&mut buf)).await {
                if n == 0 || client_write.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        },
    )
    .await
}

/// A reverse proxy that buffers responses: it holds what the server sends
/// until 64 KiB have gathered or the server has paused for `flush_idle`,
/// as a proxy with response buffering on does to an event stream.
async fn buffering_proxy(
    server: std::net::SocketAddr,
    flush_idle: Duration,
) -> anyhow::Result<std::net::SocketAddr> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    bad_proxy(
        server,
        move |mut server_read, mut client_write| async move {
            let mut buf = vec![0u8; 16 * 1024];
            let mut held = Vec::new();
            loop {
                let read = if held.is_empty() {
                    Ok(server_read.read(&mut buf).await)
                } else {
                    tokio::time::timeout(flush_idle, server_read.read(&mut buf)).await
                };
                let more = match read {
                    Ok(Ok(n)) if n > 0 => {
                        held.extend_from_slice(&buf[..n]);
                        held.len() < 64 * 1024
                    }
                    Ok(_) => {
                        let _ = client_write.write_all(&held).await;
                        break;
                    }
                    Err(_paused) => false,
                };
                if !more {
                    if client_write.write_all(&held).await.is_err() {
                        break;
                    }
                    held.clear();
                }
            }
        },
    )
    .await
}

async fn through_idle_cut(keep_alive: Option<Duration>) -> anyhow::Result<Report> {
    let served = TestServer::new(Side::Fork)
        .keep_alive(keep_alive)
        .serve()
        .await?;
    let proxy = idle_cutting_proxy(served.addr, Duration::from_secs(1)).await?;
    let target = Target::new(&format!("http://{proxy}/mcp"), &[], Duration::from_secs(5))?;
    let options = Options {
        hold: Duration::from_secs(3),
        ..Options::default()
    };
    Ok(probe(&target, &options, &|_| {}).await?)
}

#[tokio::test]
async fn a_path_that_cuts_idle_streams_is_named() -> anyhow::Result<()> {
    let report = through_idle_cut(None).await?;
    let check = report.get(checks::keep_alive::ID).expect("keep-alive ran");
    assert_eq!(check.verdict, Verdict::Fail, "{check:#?}");
    assert!(
        check.evidence.detail.contains("cuts idle connections"),
        "{check:#?}"
    );
    // It was the path, after about its 1 s idle limit, not the hold.
    let lived = check.evidence.elapsed_ms.unwrap_or(u64::MAX);
    assert!((900..2_900).contains(&lived), "{check:#?}");
    Ok(())
}

#[tokio::test]
async fn keep_alives_within_the_paths_idle_limit_pass() -> anyhow::Result<()> {
    let report = through_idle_cut(Some(Duration::from_millis(300))).await?;
    let check = report.get(checks::keep_alive::ID).expect("keep-alive ran");
    assert_eq!(check.verdict, Verdict::Pass, "{check:#?}");
    Ok(())
}

#[tokio::test]
async fn a_failed_tls_handshake_is_named() -> anyhow::Result<()> {
    // The scripted server speaks plain HTTP; asked for TLS, the handshake
    // fails on its first bytes.
    let server = Misbehaving::serve(Fault::NotMcp).await?;
    let url = server.url.replacen("http://", "https://", 1);
    let target = Target::new(&url, &[], Duration::from_secs(2))?;
    let error = probe(&target, &Options::default(), &|_| {})
        .await
        .expect_err("no TLS there");
    assert!(matches!(error, ProbeError::Tls { .. }), "{error:?}");
    Ok(())
}

#[tokio::test]
async fn notifying_a_gone_stream_fails_two_gets() -> anyhow::Result<()> {
    let report = scripted(Fault::StarvesSecondGet).await?;
    let check = report.get(checks::two_gets::ID).expect("two-gets ran");
    assert_eq!(check.verdict, Verdict::Fail, "{check:#?}");
    assert!(check.evidence.detail.contains("lost"), "{check:#?}");
    Ok(())
}

#[tokio::test]
async fn a_path_that_buffers_event_streams_is_named() -> anyhow::Result<()> {
    let served = TestServer::new(Side::Fork).serve().await?;
    let proxy = buffering_proxy(served.addr, Duration::from_millis(300)).await?;
    let target = Target::new(&format!("http://{proxy}/mcp"), &[], Duration::from_secs(10))?;
    let options = Options {
        hold: Duration::ZERO,
        ..options()
    };
    let report = probe(&target, &options, &|_| {}).await?;
    eprintln!("{}", report.to_text());
    let check = report.get(checks::unbuffered::ID).expect("unbuffered ran");
    assert_eq!(check.verdict, Verdict::Fail, "{check:#?}");
    assert!(
        check.evidence.detail.contains("buffers event streams"),
        "{check:#?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_server_that_holds_a_call_back_fails_unbuffered() -> anyhow::Result<()> {
    let report = scripted(Fault::HoldsBack).await?;
    let check = report.get(checks::unbuffered::ID).expect("unbuffered ran");
    assert_eq!(check.verdict, Verdict::Fail, "{check:#?}");
    // The others' calls answer at once: too quick to judge, never a pass.
    let quick = scripted(Fault::KeepsDeletedSessions).await?;
    let check = quick.get(checks::unbuffered::ID).expect("unbuffered ran");
    assert_eq!(check.verdict, Verdict::NotChecked, "{check:#?}");
    Ok(())
}
