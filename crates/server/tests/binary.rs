//! The `redline-server` binary: redis-server's command line and config errors, the
//! "Ready to accept connections" log line, and a graceful stop on SIGTERM and SHUTDOWN.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{show, Conn};

const BIN: &str = env!("CARGO_BIN_EXE_redline-server");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn config_errors_are_fatal_like_redis() {
    let out = Command::new(BIN)
        .args(["--port", "70000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("*** FATAL CONFIG FILE ERROR"), "{text}");
    assert!(text.contains(">>> 'port \"70000\"'\nargument must be between 0 and 65535 inclusive"));

    let dir = std::env::temp_dir().join(format!("redline-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("bad.conf");
    std::fs::write(&conf, "# comment\nport 0\nnosuchdirective yes\n").unwrap();
    let out = Command::new(BIN).arg(&conf).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains(
            "at line 3\n>>> 'nosuchdirective yes'\nBad directive or wrong number of arguments"
        ),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Starts the binary and waits for its "Ready to accept connections" line.
fn start(port: u16) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(BIN)
        .args(["--port", &port.to_string(), "--hz", "20"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let Some(stdout) = child.stdout.take() else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("no stdout");
    };
    let mut out = BufReader::new(stdout);
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.wait();
            panic!("exited before ready");
        }
        if line.contains("Ready to accept connections") {
            return (child, out);
        }
    }
}

fn wait_exit(child: &mut std::process::Child) -> Option<i32> {
    for _ in 0..200 {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = child.kill();
    None
}

#[test]
fn sigterm_stops_gracefully() {
    let port = free_port();
    let (mut child, mut out) = start(port);
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut conn = Conn::connect(addr);
    assert_eq!(show(&conn.cmd(&["SET", "k", "v"])), "Simple(b\"OK\")");
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert_eq!(wait_exit(&mut child), Some(0));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(
        rest.contains("Received SIGTERM scheduling shutdown..."),
        "{rest}"
    );
    assert!(rest.contains("ready to exit, bye bye"), "{rest}");
    assert!(conn.is_closed());
}

#[test]
fn shutdown_command_stops_the_server() {
    let port = free_port();
    let (mut child, _out) = start(port);
    let mut conn = Conn::connect(format!("127.0.0.1:{port}").parse().unwrap());
    conn.send(&["SHUTDOWN", "NOSAVE"]);
    assert!(
        conn.is_closed(),
        "SHUTDOWN has no reply, the connection closes"
    );
    assert_eq!(wait_exit(&mut child), Some(0));
}
