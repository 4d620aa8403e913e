//! The binary's contract with a shell: one line and exit code 2 when the
//! endpoint cannot be probed, never a panic or a hang.

use std::process::Command;
use std::time::{Duration, Instant};

fn probe(args: &[&str]) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_rmcp-resume-probe"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        started.elapsed(),
    )
}

#[test]
fn an_unreachable_endpoint_is_one_line_and_exit_2() {
    // A port that was just free: nothing listens.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let url = format!("http://{free}/mcp");
    let (code, stderr, took) = probe(&[&url, "--timeout", "2"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cannot reach"), "{stderr}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn bad_arguments_are_one_line_and_exit_2() {
    for args in [
        &["ftp://host/mcp"][..],
        &["http://host/mcp", "--tool", "t", "--args", "{not json"],
        &["http://host/mcp", "-H", "no colon"],
        &["http://host/mcp", "--hold=-1"],
    ] {
        let (code, stderr, _) = probe(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
