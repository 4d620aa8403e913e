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

#[test]
fn a_server_that_never_answers_ends_at_the_timeout_with_one_line() {
    // Accepts connections and reads nothing back: the request waits for a
    // head that never comes.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = listener.local_addr().expect("its address");
    let held = std::thread::spawn(move || {
        // The probe gives up on its first connection; hold that one open
        // past the probe's timeout.
        let open = listener.accept();
        std::thread::sleep(Duration::from_secs(3));
        drop(open);
    });
    let url = format!("http://{addr}/mcp");
    let (code, stderr, took) = probe(&[&url, "--timeout", "1"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no answer within"), "{stderr}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    let _ = held.join();
}

#[test]
fn a_web_page_is_not_mcp_in_one_line() {
    // A plain HTTP server that answers every request with a page.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = listener.local_addr().expect("its address");
    let served = std::thread::spawn(move || {
        use std::io::{Read, Write};
        if let Ok((mut stream, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let page = "<html>hello</html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    let url = format!("http://{addr}/mcp");
    let (code, stderr, took) = probe(&[&url, "--timeout", "2"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("not an MCP"), "{stderr}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let _ = served.join();
}
