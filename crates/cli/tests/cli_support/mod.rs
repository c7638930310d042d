//! Shared helpers for the redline command's tests: run the built binary and redis-cli.
#![allow(dead_code)] // each test file uses a different subset

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The `redline` binary cargo built for these tests.
pub fn redline() -> Command {
    Command::new(env!("CARGO_BIN_EXE_redline"))
}

/// redis-cli from PATH (or `REDIS_CLI_BIN`).
pub fn redis_cli() -> Command {
    Command::new(std::env::var("REDIS_CLI_BIN").unwrap_or_else(|_| "redis-cli".into()))
}

/// Runs `cmd` with `args`, feeding `stdin` (stdout is a pipe, so not a terminal).
pub fn run(mut cmd: Command, args: &[&str], stdin: &[u8]) -> Output {
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    {
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(stdin).expect("write stdin");
    }
    child.wait_with_output().expect("wait")
}

/// Stdout as text (lossy), for messages.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Parses each stdout line as a JSON object.
pub fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    text(stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}
