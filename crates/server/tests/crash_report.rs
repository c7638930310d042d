//! A crash leaves a report in the log, as redis-server's does: the signal, a stack
//! trace between START and END lines; then the process dies of that signal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use redline_testkit::RedlineServer;

fn debug_server() -> RedlineServer {
    RedlineServer::builder()
        .args(["--save", "", "--enable-debug-command", "yes"])
        .start()
        .unwrap()
}

fn wait_for_exit(server: &mut RedlineServer) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.is_running() {
        assert!(Instant::now() < deadline, "the server is still running");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The whole of the server's output (`log_tail` keeps only its end).
fn log(server: &RedlineServer) -> String {
    std::fs::read_to_string(server.dir().join("server.log")).unwrap()
}

fn assert_report(log: &str, signal: i32) {
    assert!(
        log.contains(&format!("crashed by signal: {signal}")),
        "no crash line in:\n{log}"
    );
    for line in [
        "BUG REPORT START",
        "------ STACK TRACE ------",
        "BUG REPORT END",
    ] {
        assert!(log.contains(line), "no {line:?} in:\n{log}");
    }
}

#[test]
fn debug_segfault_is_reported() {
    let mut server = debug_server();
    let _ = server.cmd(&["DEBUG", "SEGFAULT"]);
    wait_for_exit(&mut server);
    assert_report(&log(&server), 11);
}

#[test]
fn sigabrt_is_reported() {
    let mut server = debug_server();
    let pid = server.pid().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args(["-ABRT", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    wait_for_exit(&mut server);
    assert_report(&log(&server), 6);
}
