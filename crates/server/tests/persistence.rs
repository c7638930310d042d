//! RDB snapshots against a real redis-server 7.0: a dump.rdb written by redline-server
//! loads in redis-server with the same DEBUG DIGEST, and one written by redis-server
//! loads here; SAVE, BGSAVE, LASTSAVE, DEBUG RELOAD, SHUTDOWN and SIGTERM keep the data
//! across restarts; a damaged file stops the start with Redis's message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

mod common;

use common::Conn;
use redline_resp::Frame;
use redline_testkit::{RedisServer, RedlineServer, Reply};

/// Commands that build one key of every type, in two databases, with TTLs, plus a
/// function library, on one connection (SELECT must stick).
fn fill(port: u16) {
    let mut conn = Conn::connect(([127, 0, 0, 1], port).into());
    let numbers: Vec<String> = (0..600).map(|i| i.to_string()).collect();
    let mut big_list = vec!["RPUSH", "biglist"];
    big_list.extend(numbers.iter().map(String::as_str));
    let mut big_set = vec!["SADD", "bigset"];
    big_set.extend(numbers.iter().map(String::as_str));
    let mut big_hash = vec!["HSET", "bighash"];
    big_hash.extend(numbers.iter().map(String::as_str));
    let mut big_zset = vec!["ZADD", "bigzset"];
    big_zset.extend(numbers.iter().map(String::as_str));
    let long = "x".repeat(5000);
    let commands: Vec<Vec<&str>> = vec![
        vec!["SET", "int", "12345"],
        vec!["SET", "neg", "-7"],
        vec!["SET", "long", &long],
        vec!["SET", "ttl", "v", "PX", "500000"],
        vec!["RPUSH", "list", "a", "b", "c"],
        big_list,
        vec!["SADD", "intset", "1", "2", "3"],
        vec!["SADD", "set", "a", "b"],
        big_set,
        vec!["HSET", "hash", "f", "v", "g", "w"],
        big_hash,
        vec!["ZADD", "zset", "1", "a", "2.5", "b", "-inf", "c"],
        big_zset,
        vec!["XADD", "stream", "1-1", "f", "v"],
        vec!["XADD", "stream", "2-1", "f", "w", "g", "x"],
        vec!["XGROUP", "CREATE", "stream", "grp", "0"],
        vec![
            "XREADGROUP",
            "GROUP",
            "grp",
            "alice",
            "COUNT",
            "1",
            "STREAMS",
            "stream",
            ">",
        ],
        vec!["PFADD", "hll", "a", "b", "c"],
        vec!["SELECT", "9"],
        vec!["SET", "other-db", "here"],
        vec!["EXPIRE", "other-db", "1000"],
        vec![
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function('one', function() return 1 end)",
        ],
    ];
    for command in commands {
        let reply = conn.cmd(&command);
        assert!(
            !matches!(reply, Frame::Error(_)),
            "{command:?} -> {reply:?}"
        );
    }
}

fn digest(run: impl Fn(&[&str]) -> Reply) -> String {
    run(&["DEBUG", "DIGEST"]).text().expect("digest")
}

fn redline() -> RedlineServer {
    RedlineServer::builder()
        .args(["--enable-debug-command", "yes"])
        .start()
        .unwrap()
}

fn redis() -> RedisServer {
    RedisServer::builder()
        .args(["--enable-debug-command", "yes"])
        .start()
        .unwrap()
}

#[test]
fn a_dump_written_here_loads_in_redis_with_the_same_digest() {
    let ours = redline();
    fill(ours.port());
    let before = digest(|a| ours.cmd(a).unwrap());
    assert_eq!(ours.cmd(&["SAVE"]).unwrap(), Reply::Simple("OK".into()));
    let mut theirs = redis();
    std::fs::copy(ours.dir().join("dump.rdb"), theirs.dir().join("dump.rdb")).unwrap();
    theirs.restart().unwrap();
    assert_eq!(digest(|a| theirs.cmd(a).unwrap()), before);
    assert_eq!(
        theirs.cmd(&["FCALL", "one", "0"]).unwrap(),
        Reply::Integer(1)
    );
}

#[test]
fn a_dump_written_by_redis_loads_here_with_the_same_digest() {
    let theirs = redis();
    fill(theirs.port());
    let before = digest(|a| theirs.cmd(a).unwrap());
    assert_eq!(theirs.cmd(&["SAVE"]).unwrap(), Reply::Simple("OK".into()));
    let mut ours = redline();
    std::fs::copy(theirs.dir().join("dump.rdb"), ours.dir().join("dump.rdb")).unwrap();
    ours.restart().unwrap();
    assert_eq!(digest(|a| ours.cmd(a).unwrap()), before);
    assert_eq!(ours.cmd(&["FCALL", "one", "0"]).unwrap(), Reply::Integer(1));
    let log = ours.log_tail();
    assert!(log.contains("Done loading RDB, keys loaded: 16"), "{log}");
}

#[test]
fn data_survives_shutdown_sigterm_and_debug_reload() {
    let mut server = redline();
    fill(server.port());
    let before = digest(|a| server.cmd(a).unwrap());
    assert_eq!(
        server.cmd(&["DEBUG", "RELOAD"]).unwrap(),
        Reply::Simple("OK".into())
    );
    assert_eq!(digest(|a| server.cmd(a).unwrap()), before);

    // SHUTDOWN SAVE writes the file even without save points.
    let _ = server.cmd(&["SHUTDOWN", "SAVE"]);
    wait_stopped(&mut server);
    server.restart().unwrap();
    assert_eq!(digest(|a| server.cmd(a).unwrap()), before);

    // SHUTDOWN NOSAVE does not: a later write is lost.
    server.cmd(&["SET", "lost", "1"]).unwrap();
    let _ = server.cmd(&["SHUTDOWN", "NOSAVE"]);
    wait_stopped(&mut server);
    server.restart().unwrap();
    assert_eq!(server.cmd(&["EXISTS", "lost"]).unwrap(), Reply::Integer(0));

    // SIGTERM saves when a save point is configured (Redis's default ones here).
    server.cmd(&["SET", "kept", "1"]).unwrap();
    let pid = server.pid().unwrap();
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    wait_stopped(&mut server);
    server.restart().unwrap();
    assert_eq!(server.cmd(&["EXISTS", "kept"]).unwrap(), Reply::Integer(1));
}

#[test]
fn bgsave_updates_lastsave_and_the_change_counter() {
    let server = redline();
    server.cmd(&["SET", "a", "1"]).unwrap();
    server.cmd(&["SET", "b", "2"]).unwrap();
    let changes = |s: &RedlineServer| info_field(s, "rdb_changes_since_last_save");
    assert_eq!(changes(&server), "2");
    let before = server.cmd(&["LASTSAVE"]).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(
        server.cmd(&["BGSAVE"]).unwrap(),
        Reply::Simple("Background saving started".into())
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while info_field(&server, "rdb_bgsave_in_progress") != "0" {
        assert!(Instant::now() < deadline, "BGSAVE never finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_ne!(server.cmd(&["LASTSAVE"]).unwrap(), before);
    assert_eq!(changes(&server), "0");
    assert_eq!(info_field(&server, "rdb_last_bgsave_status"), "ok");
    assert!(server.dir().join("dump.rdb").exists());
}

#[test]
fn a_damaged_dump_stops_the_start_with_redis_message() {
    let mut server = redline();
    server.cmd(&["SET", "k", "v"]).unwrap();
    assert_eq!(server.cmd(&["SAVE"]).unwrap(), Reply::Simple("OK".into()));
    let path = server.dir().join("dump.rdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 12] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    assert!(server.restart().is_err(), "started on a damaged file");
    let log = server.log_tail();
    assert!(log.contains("Fatal error loading the DB"), "{log}");
}

fn wait_stopped(server: &mut RedlineServer) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.is_running() {
        assert!(Instant::now() < deadline, "server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn info_field(server: &RedlineServer, name: &str) -> String {
    let info = server.cmd(&["INFO", "persistence"]).unwrap();
    let text = info.text().unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}
