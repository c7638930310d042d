//! A crash leaves a report in the log, as redis-server's does: the signal, a stack
//! trace between START and END lines; then the process dies of that signal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use redline_testkit::{RedisServer, RedlineServer, Reply};

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

/// `watchdog-period` on one server: a batch of commands running past it (here DEBUG
/// SLEEP) leaves `--- WATCHDOG TIMER EXPIRED ---` and a stack in the log, once; at 0
/// the watchdog is off and the server stays.
fn watchdog_reports_a_slow_command(cmd: &dyn Fn(&[&str]) -> Reply, log: &dyn Fn() -> String) {
    let reports = || log().matches("--- WATCHDOG TIMER EXPIRED ---").count();
    cmd(&["CONFIG", "SET", "watchdog-period", "200"]);
    cmd(&["DEBUG", "SLEEP", "1"]);
    let deadline = Instant::now() + Duration::from_secs(5);
    while reports() == 0 {
        assert!(Instant::now() < deadline, "no report in:\n{}", log());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(log().contains("STACK TRACE"), "{}", log());
    // Commands that return in time report nothing more.
    for _ in 0..20 {
        cmd(&["PING"]);
    }
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(reports(), 1, "{}", log());
    cmd(&["CONFIG", "SET", "watchdog-period", "0"]);
    cmd(&["DEBUG", "SLEEP", "0.5"]);
    assert_eq!(reports(), 1, "{}", log());
    assert_eq!(cmd(&["PING"]), Reply::Simple("PONG".into()));
}

#[test]
fn the_software_watchdog_reports_a_slow_command_like_redis() {
    let server = debug_server();
    watchdog_reports_a_slow_command(&|args| server.cmd(args).unwrap(), &|| log(&server));
    let redis = RedisServer::builder()
        .args(["--save", "", "--enable-debug-command", "yes"])
        .start()
        .unwrap();
    let redis_log = || std::fs::read_to_string(redis.dir().join("server.log")).unwrap();
    watchdog_reports_a_slow_command(&|args| redis.cmd(args).unwrap(), &redis_log);
}
