//! The REPL on a real terminal (a pty from util-linux `script`): redis-cli's quoting, its
//! reply formatting (compared line by line with redis-cli's for the same commands), and
//! the history file (secrets left out).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cli_support::{redis_cli, run, text};
use redline_testkit::RedisServer;

/// Lines typed into the REPL (no reply equals one of them, so echoes can be removed).
const LINES: &[&str] = &[
    r#"set q "a \"b\" c\x41\n""#,
    "get q",
    r"set s 'it\'s'",
    "get s",
    "rpush l 'x y' \"z\"",
    "lrange l 0 -1",
    "hgetall hash",
    "debug protocol map",
    "debug protocol double",
    "get \"unbalanced",
    "auth not-a-password",
    "2 incr cnt",
];

/// Drops ANSI escape sequences and carriage returns.
fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() || d == '~' {
                        break;
                    }
                }
            }
            continue;
        }
        if c != '\r' {
            out.push(c);
        }
    }
    out
}

#[test]
fn repl_quotes_formats_and_keeps_history_like_redis_cli() {
    // `script` comes with Debian's essential bsdutils: missing, the test fails rather
    // than passing without checking anything.
    assert!(
        Command::new("script").arg("--version").output().is_ok(),
        "util-linux `script` (Debian package bsdutils) is needed for the REPL test"
    );
    let server = RedisServer::builder()
        .arg("--enable-debug-command", "yes")
        .start()
        .expect("redis-server");
    server
        .cmd(&["HSET", "hash", "f1", "v1", "f2", "v2"])
        .unwrap();
    let port = server.port().to_string();
    let dir = std::env::temp_dir().join(format!("redline-repl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The default place, ~/.redline_history, under a private HOME.
    let history = dir.join(".redline_history");

    let command = format!("{} cli -3 -p {port}", env!("CARGO_BIN_EXE_redline"));
    let mut child = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("HOME", &dir)
        .env_remove("REDLINE_HISTFILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script");
    // Type each line only once the REPL shows an empty prompt again: like linenoise,
    // rustyline discards input typed ahead while a command runs.
    let mut stdout = child.stdout.take().unwrap();
    let screen_bytes = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let screen_bytes = screen_bytes.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                screen_bytes.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        })
    };
    let prompt_end = format!("127.0.0.1:{port}> ");
    let idle = |seen: usize| {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            {
                let bytes = screen_bytes.lock().unwrap();
                if bytes.len() > seen && strip_ansi(&text(&bytes)).ends_with(&prompt_end) {
                    return bytes.len();
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the REPL did not come back to its prompt");
    };
    {
        let mut stdin = child.stdin.take().unwrap();
        let mut seen = idle(0);
        for line in LINES.iter().chain(&["quit"]) {
            stdin.write_all(line.as_bytes()).unwrap();
            stdin.write_all(b"\n").unwrap();
            stdin.flush().unwrap();
            if *line != "quit" {
                seen = idle(seen);
            }
        }
    }
    let status = child.wait().unwrap();
    reader.join().unwrap();
    assert!(status.success(), "REPL exit: {status:?}");
    let screen = strip_ansi(&text(&screen_bytes.lock().unwrap()));
    let prompt = format!("127.0.0.1:{port}>");
    let ours: Vec<&str> = screen
        .lines()
        .filter(|l| !l.contains(&prompt) && !LINES.contains(l) && *l != "quit")
        .collect();

    // The same commands through redis-cli (its pipe mode formats as its REPL does).
    server.cmd(&["DEL", "l", "cnt"]).unwrap();
    let mut input = String::new();
    for line in LINES {
        // redis-cli's pipe mode has no repeat prefix: spell it out.
        if let Some(cmd) = line.strip_prefix("2 ") {
            input.push_str(&format!("{cmd}\n{cmd}\n"));
        } else {
            input.push_str(line);
            input.push('\n');
        }
    }
    let theirs = run(
        redis_cli(),
        &["-3", "--no-raw", "-p", &port],
        input.as_bytes(),
    );
    let theirs_text = text(&theirs.stdout);
    let theirs: Vec<&str> = theirs_text.lines().collect();
    assert_eq!(ours, theirs, "REPL screen:\n{screen}");

    let saved = std::fs::read_to_string(&history).expect("history file written");
    assert!(saved.contains("get q"), "history: {saved}");
    assert!(saved.contains("set s 'it"), "history: {saved}");
    assert!(
        !saved.contains("not-a-password"),
        "secret kept in history: {saved}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
