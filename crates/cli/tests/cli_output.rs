//! `redline cli` prints exactly what redis-cli prints for the same replies: one-shot mode
//! in both output forms (terminal form via --no-raw, raw form on a pipe), RESP2 and RESP3
//! (-3), and pipe mode with redis-cli's quoting rules. Both tools talk to the same real
//! redis-server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use cli_support::{redis_cli, redline, run, text};
use redline_testkit::RedisServer;

fn server() -> RedisServer {
    let server = RedisServer::builder()
        .arg("--enable-debug-command", "yes")
        .start()
        .expect("redis-server");
    // Data every comparison reads.
    for cmd in [
        vec![
            "RPUSH", "list", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l",
        ],
        vec!["HSET", "hash", "f1", "v1", "f2", "v2"],
        vec!["SADD", "set", "x"],
        vec!["ZADD", "zset", "1.5", "a", "3", "b", "0.1", "c"],
        vec!["SET", "bin", "a\"b\\c\n\t\x01\x7f end"],
        vec!["SET", "counter", "41"],
        vec!["XADD", "stream", "1-1", "f", "v", "g", "w"],
        vec!["XADD", "stream", "2-1", "f", "v2"],
    ] {
        server.cmd(&cmd).expect("seed");
    }
    server
}

/// Commands whose replies cover every shape: nested arrays, maps, sets, doubles, nil,
/// integers, errors, verbatim strings, booleans, empty aggregates.
const COMMANDS: &[&[&str]] = &[
    &["PING"],
    &["GET", "bin"],
    &["GET", "missing"],
    &["EXISTS", "list", "hash", "nope"],
    &["LRANGE", "list", "0", "-1"],
    &["LRANGE", "missing", "0", "-1"],
    &["HGETALL", "hash"],
    &["HGETALL", "missing"],
    &["SMEMBERS", "set"],
    &["SMEMBERS", "missing"],
    &["ZRANGE", "zset", "0", "-1", "WITHSCORES"],
    &["ZSCORE", "zset", "a"],
    &["ZSCORE", "zset", "c"],
    &["XRANGE", "stream", "-", "+"],
    &["CONFIG", "GET", "maxmemory*"],
    &["NOSUCHCOMMAND", "x"],
    &["INCR", "bin"],
    &["DEBUG", "PROTOCOL", "array"],
    &["DEBUG", "PROTOCOL", "map"],
    &["DEBUG", "PROTOCOL", "set"],
    &["DEBUG", "PROTOCOL", "double"],
    &["DEBUG", "PROTOCOL", "true"],
    &["DEBUG", "PROTOCOL", "false"],
    &["DEBUG", "PROTOCOL", "null"],
    &["DEBUG", "PROTOCOL", "verbatim"],
    &["DEBUG", "PROTOCOL", "integer"],
    &["DEBUG", "PROTOCOL", "string"],
    &["COMMAND", "INFO", "GET"],
    &["COMMAND", "DOCS", "SET"],
    &["XINFO", "STREAM", "stream", "FULL"],
];

fn compare(server: &RedisServer, extra: &[&str]) {
    let port = server.port().to_string();
    for command in COMMANDS {
        let mut args = vec!["-p", port.as_str()];
        args.extend_from_slice(extra);
        args.extend_from_slice(command);
        let theirs = run(redis_cli(), &args, b"");
        let mut ours_args = vec!["cli"];
        ours_args.extend_from_slice(&args);
        let ours = run(redline(), &ours_args, b"");
        assert_eq!(
            text(&ours.stdout),
            text(&theirs.stdout),
            "stdout differs for {extra:?} {command:?}\nredline stderr: {}",
            text(&ours.stderr)
        );
        assert_eq!(
            ours.status.code(),
            theirs.status.code(),
            "exit code for {command:?}"
        );
    }
}

#[test]
fn one_shot_matches_redis_cli_resp2_formatted() {
    let server = server();
    compare(&server, &["--no-raw"]);
}

#[test]
fn one_shot_matches_redis_cli_resp2_raw() {
    let server = server();
    compare(&server, &[]);
}

#[test]
fn one_shot_matches_redis_cli_resp3_formatted() {
    let server = server();
    compare(&server, &["-3", "--no-raw"]);
}

#[test]
fn one_shot_matches_redis_cli_resp3_raw() {
    let server = server();
    compare(&server, &["-3"]);
}

#[test]
fn set_with_spaces_then_get_prints_quoted() {
    let server = RedisServer::start().expect("redis-server");
    let port = server.port().to_string();
    let set = run(redline(), &["cli", "-p", &port, "SET", "k", "a b"], b"");
    assert_eq!(text(&set.stdout), "OK\n");
    let get = run(
        redline(),
        &["cli", "-p", &port, "--no-raw", "GET", "k"],
        b"",
    );
    assert_eq!(text(&get.stdout), "\"a b\"\n");
    assert_eq!(get.status.code(), Some(0));
}

#[test]
fn pipe_mode_splits_lines_like_redis_cli() {
    let server = server();
    let port = server.port().to_string();
    let input = b"SET q \"a \\\"quoted\\\" \\x41\\n\"\nGET q\nSET s 'it\\'s'\nGET s\nRPUSH pl \"x y\" 'z w' plain\nLRANGE pl 0 -1\nGET \"unbalanced\nDEBUG PROTOCOL map\n\n   \nHGETALL hash\n";
    for extra in [&["--no-raw"][..], &[][..], &["-3", "--no-raw"][..]] {
        server.cmd(&["DEL", "pl"]).expect("del");
        let mut args = vec!["-p", port.as_str()];
        args.extend_from_slice(extra);
        let theirs = run(redis_cli(), &args, input);
        server.cmd(&["DEL", "pl"]).expect("del");
        let mut ours_args = vec!["cli"];
        ours_args.extend_from_slice(&args);
        let ours = run(redline(), &ours_args, input);
        assert_eq!(
            text(&ours.stdout),
            text(&theirs.stdout),
            "pipe mode {extra:?}"
        );
    }
}

#[test]
fn unreachable_server_exits_1_like_redis_cli() {
    let server = RedisServer::start().expect("redis-server");
    let port = server.port().to_string();
    drop(server);
    let theirs = run(redis_cli(), &["-p", &port, "PING"], b"");
    let ours = run(redline(), &["cli", "-p", &port, "PING"], b"");
    assert_eq!(ours.status.code(), Some(1));
    assert_eq!(ours.status.code(), theirs.status.code());
    assert_eq!(text(&ours.stderr), text(&theirs.stderr));
}

#[test]
fn repeat_interval_and_stdin_argument_like_redis_cli() {
    let server = RedisServer::start().expect("redis-server");
    let port = server.port().to_string();
    for (args, stdin) in [
        (vec!["-r", "3", "INCR", "a"], &b""[..]),
        (
            vec!["-r", "2", "-i", "0.1", "--no-raw", "LPUSH", "l", "x"],
            &b""[..],
        ),
        (vec!["-x", "SET", "x"], &b"line one\nline \"two\"\x01"[..]),
        (vec!["--no-raw", "GET", "x"], &b""[..]),
    ] {
        let mut theirs_args = vec!["-p", port.as_str()];
        theirs_args.extend_from_slice(&args);
        server.cmd(&["DEL", "a", "l"]).unwrap();
        let theirs = run(redis_cli(), &theirs_args, stdin);
        server.cmd(&["DEL", "a", "l"]).unwrap();
        let mut ours_args = vec!["cli"];
        ours_args.extend_from_slice(&theirs_args);
        let ours = run(redline(), &ours_args, stdin);
        assert_eq!(text(&ours.stdout), text(&theirs.stdout), "{args:?}");
    }
}
