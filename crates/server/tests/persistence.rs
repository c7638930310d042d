//! RDB snapshots against a real redis-server 7.0: a dump.rdb written by redline-server
//! loads in redis-server with the same DEBUG DIGEST and the same keys (type, encoding,
//! DEBUG DIGEST-VALUE, TTL, key by key), and one written by redis-server loads here; an
//! AOF directory goes both ways the same way. The dataset has every type in each of its
//! encodings (int/embstr/raw strings, listpack and multi-node quicklists, listpack and
//! hashtable hashes, intset and hashtable sets, listpack and skiplist sorted sets,
//! streams of several nodes with groups, consumers and pending entries, sparse and
//! dense HyperLogLogs), TTLs, two databases and a function library; SAVE, BGSAVE, LASTSAVE, DEBUG RELOAD, SHUTDOWN and SIGTERM keep the data
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
    // Enough 20-byte elements for several quicklist nodes (8 KB listpacks).
    let wide: Vec<String> = (0..2000).map(|i| format!("element-{i:012}")).collect();
    let mut huge_list = vec!["RPUSH", "hugelist"];
    huge_list.extend(wide.iter().map(String::as_str));
    // Over 3000 bytes of registers: a dense HyperLogLog.
    let mut dense_hll = vec!["PFADD", "densehll"];
    dense_hll.extend(wide.iter().map(String::as_str));
    let mut small_words = vec!["SADD", "smallset"];
    small_words.extend(wide[..10].iter().map(String::as_str));
    let mut commands: Vec<Vec<&str>> = vec![
        vec!["SET", "int", "12345"],
        vec!["SET", "neg", "-7"],
        vec!["SET", "embstr", "a short string"],
        vec!["SET", "long", &long],
        huge_list,
        dense_hll,
        small_words,
        vec!["SET", "ttl", "v", "PX", "500000"],
        vec!["RPUSH", "list", "a", "b", "c"],
        big_list,
        vec!["SADD", "intset", "1", "2", "3"],
        vec!["SADD", "set", "a", "b"],
        big_set,
        vec!["HSET", "hash", "f", "v", "g", "w"],
        big_hash,
        // Scores whose `%.17g` differs from their shortest form: Redis 7.0's digest
        // and AOF rewrite write them that way.
        vec![
            "ZADD", "zset", "1", "a", "2.5", "b", "-inf", "c", "0.1", "d", "1e300", "e",
        ],
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
        vec!["XGROUP", "CREATE", "stream", "other", "$"],
        vec!["XGROUP", "CREATECONSUMER", "stream", "grp", "bob"],
        vec!["SELECT", "9"],
        vec!["SET", "other-db", "here"],
        vec!["EXPIRE", "other-db", "1000"],
        vec![
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function('one', function() return 1 end)",
        ],
    ];
    // A stream of several listpack nodes (100 entries each), trimmed, with a group
    // whose consumers hold pending entries.
    let ids: Vec<String> = (1..=450).map(|i| format!("{i}-0")).collect();
    for id in &ids {
        commands.push(vec!["XADD", "bigstream", id, "field", id]);
    }
    commands.push(vec!["XDEL", "bigstream", "7-0"]);
    commands.push(vec!["XGROUP", "CREATE", "bigstream", "g", "0"]);
    commands.push(vec![
        "XREADGROUP",
        "GROUP",
        "g",
        "c1",
        "COUNT",
        "120",
        "STREAMS",
        "bigstream",
        ">",
    ]);
    commands.push(vec![
        "XREADGROUP",
        "GROUP",
        "g",
        "c2",
        "COUNT",
        "5",
        "STREAMS",
        "bigstream",
        ">",
    ]);
    commands.push(vec!["XACK", "bigstream", "g", "3-0", "4-0"]);
    commands.push(vec!["SELECT", "0"]);
    commands.push(vec!["SET", "ttl-2", "v", "EX", "86400"]);
    commands.push(vec!["HSET", "ttl-hash", "f", "v"]);
    commands.push(vec!["PEXPIRE", "ttl-hash", "7200000"]);
    for command in commands {
        let reply = conn.cmd(&command);
        assert!(
            !matches!(reply, Frame::Error(_)),
            "{command:?} -> {reply:?}"
        );
    }
}

/// Every key of databases 0 and 9 with its type, encoding, DEBUG DIGEST-VALUE and
/// remaining TTL in milliseconds (-1 for none).
fn keys(port: u16) -> std::collections::BTreeMap<String, (String, i64)> {
    let mut conn = Conn::connect(([127, 0, 0, 1], port).into());
    let mut out = std::collections::BTreeMap::new();
    let word = |f: Frame| match f {
        Frame::Bulk(b) | Frame::Simple(b) => String::from_utf8_lossy(&b).into_owned(),
        Frame::Integer(n) => n.to_string(),
        other => format!("{other:?}"),
    };
    for db in ["0", "9"] {
        conn.cmd(&["SELECT", db]);
        let Frame::Array(names) = conn.cmd(&["KEYS", "*"]) else {
            panic!("KEYS")
        };
        for name in names.into_iter().map(word) {
            let kind = word(conn.cmd(&["TYPE", &name]));
            let encoding = word(conn.cmd(&["OBJECT", "ENCODING", &name]));
            let digest = match conn.cmd(&["DEBUG", "DIGEST-VALUE", &name]) {
                Frame::Array(d) => d.into_iter().map(word).collect::<Vec<_>>().join(""),
                other => word(other),
            };
            let Frame::Integer(ttl) = conn.cmd(&["PTTL", &name]) else {
                panic!("PTTL")
            };
            out.insert(
                format!("{db}:{name}"),
                (format!("{kind} {encoding} {digest}"), ttl),
            );
        }
    }
    out
}

/// The two servers hold the same keys, key by key: same type, encoding (OBJECT
/// ENCODING) and value digest (DEBUG DIGEST-VALUE), and TTLs within a minute of each
/// other.
fn assert_same_keys(expected: u16, actual: u16) {
    let (a, b) = (keys(expected), keys(actual));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "key names"
    );
    for (key, (what, ttl)) in &a {
        let (their_what, their_ttl) = &b[key];
        assert_eq!(what, their_what, "{key}");
        assert_eq!(*ttl < 0, *their_ttl < 0, "{key}: TTL {ttl} vs {their_ttl}");
        assert!(
            (ttl - their_ttl).abs() < 60_000,
            "{key}: TTL {ttl} vs {their_ttl}"
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
    // Encodings depend on a value's history (a string PFADD made is raw until it is
    // reloaded, as in Redis): compare two servers that both loaded a file.
    ours.cmd(&["DEBUG", "RELOAD"]).unwrap();
    assert_same_keys(ours.port(), theirs.port());
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
    theirs.cmd(&["DEBUG", "RELOAD"]).unwrap();
    assert_same_keys(theirs.port(), ours.port());
    assert_eq!(ours.cmd(&["FCALL", "one", "0"]).unwrap(), Reply::Integer(1));
    let log = ours.log_tail();
    assert!(log.contains("Done loading RDB, keys loaded: 23"), "{log}");
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

    // `shutdown-on-sigterm nosave`: the signal does not save, whatever the save points.
    let signal = |server: &mut RedlineServer, name: &str| {
        let pid = server.pid().unwrap();
        std::process::Command::new("kill")
            .args([name, &pid.to_string()])
            .status()
            .unwrap();
        wait_stopped(server);
        server.restart().unwrap();
    };
    let set = |server: &RedlineServer, args: &[&str]| {
        assert_eq!(server.cmd(args).unwrap(), Reply::Simple("OK".into()));
    };
    set(
        &server,
        &["CONFIG", "SET", "shutdown-on-sigterm", "nosave now"],
    );
    set(&server, &["SET", "dropped", "1"]);
    signal(&mut server, "-TERM");
    assert_eq!(
        server.cmd(&["EXISTS", "dropped"]).unwrap(),
        Reply::Integer(0)
    );

    // `shutdown-on-sigint save`: saves even with no save point.
    set(&server, &["CONFIG", "SET", "save", ""]);
    set(&server, &["CONFIG", "SET", "shutdown-on-sigint", "save"]);
    set(&server, &["SET", "saved", "1"]);
    signal(&mut server, "-INT");
    assert_eq!(server.cmd(&["EXISTS", "saved"]).unwrap(), Reply::Integer(1));
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
    // Redis's report of a checksum mismatch (`rdbReportCorruptRDB`).
    assert!(log.contains("RDB CRC error"), "{log}");
    assert!(
        log.contains("Terminating server after rdb file reading failure."),
        "{log}"
    );
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

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn the_aof_keeps_every_write_and_loads_in_redis_and_back() {
    let mut ours = RedlineServer::builder()
        .args([
            "--enable-debug-command",
            "yes",
            "--save",
            "",
            "--appendfsync",
            "always",
        ])
        .start()
        .unwrap();
    ours.cmd(&["SET", "before", "1"]).unwrap();
    assert_eq!(
        ours.cmd(&["CONFIG", "SET", "appendonly", "yes"]).unwrap(),
        Reply::Simple("OK".into())
    );
    fill(ours.port());
    let before = digest(|a| ours.cmd(a).unwrap());
    assert_eq!(
        ours.cmd(&["DEBUG", "LOADAOF"]).unwrap(),
        Reply::Simple("OK".into())
    );
    assert_eq!(digest(|a| ours.cmd(a).unwrap()), before);
    assert_eq!(
        ours.cmd(&["BGREWRITEAOF"]).unwrap(),
        Reply::Simple("Background append only file rewriting started".into())
    );
    ours.cmd(&["SET", "after-rewrite", "1"]).unwrap();
    let before = digest(|a| ours.cmd(a).unwrap());

    // A server started with appendonly yes on these files comes back with the data
    // (appendfsync always: everything acknowledged is on disk even after SIGKILL).
    ours.kill();
    let mut again = RedlineServer::builder()
        .args([
            "--enable-debug-command",
            "yes",
            "--save",
            "",
            "--appendonly",
            "yes",
        ])
        .start()
        .unwrap();
    copy_dir(
        &ours.dir().join("appendonlydir"),
        &again.dir().join("appendonlydir"),
    );
    again.restart().unwrap();
    assert_eq!(digest(|a| again.cmd(a).unwrap()), before);

    // redis-server loads the same directory.
    let mut theirs = RedisServer::builder()
        .args([
            "--enable-debug-command",
            "yes",
            "--appendonly",
            "yes",
            // Under everysec, redis-server postpones a write while the previous
            // second's fsync runs and still replies, so SIGKILL can lose it.
            "--appendfsync",
            "always",
        ])
        .start()
        .unwrap();
    theirs.cmd(&["CONFIG", "SET", "appendonly", "no"]).unwrap();
    theirs.kill();
    let _ = std::fs::remove_dir_all(theirs.dir().join("appendonlydir"));
    copy_dir(
        &ours.dir().join("appendonlydir"),
        &theirs.dir().join("appendonlydir"),
    );
    theirs.restart().unwrap();
    assert_eq!(digest(|a| theirs.cmd(a).unwrap()), before);
    assert_same_keys(again.port(), theirs.port());

    // And what redis-server appends loads here.
    theirs.cmd(&["SET", "from-redis", "1"]).unwrap();
    theirs.cmd(&["RPUSH", "from-redis-list", "a", "b"]).unwrap();
    let theirs_digest = digest(|a| theirs.cmd(a).unwrap());
    theirs.kill();
    again.kill();
    let _ = std::fs::remove_dir_all(again.dir().join("appendonlydir"));
    copy_dir(
        &theirs.dir().join("appendonlydir"),
        &again.dir().join("appendonlydir"),
    );
    again.restart().unwrap();
    assert_eq!(digest(|a| again.cmd(a).unwrap()), theirs_digest);
    theirs.restart().unwrap();
    assert_same_keys(theirs.port(), again.port());
}

#[test]
fn a_truncated_aof_loads_what_is_whole() {
    let mut server = RedlineServer::builder()
        .args(["--save", "", "--appendonly", "yes"])
        .start()
        .unwrap();
    server.cmd(&["SET", "a", "1"]).unwrap();
    server.cmd(&["SET", "b", "2"]).unwrap();
    server.kill();
    let dir = server.dir().join("appendonlydir");
    let incr = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".incr.aof"))
        .unwrap();
    let mut bytes = std::fs::read(&incr).unwrap();
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&incr, &bytes).unwrap();
    server.restart().unwrap();
    assert_eq!(
        server.cmd(&["GET", "a"]).unwrap(),
        Reply::Bulk(Some(b"1".to_vec()))
    );
    assert_eq!(server.cmd(&["EXISTS", "b"]).unwrap(), Reply::Integer(0));
    assert!(server
        .log_tail()
        .contains("short read while loading the AOF"));
}

/// FLUSHALL with save points saves the emptied dataset at once, as Redis does: the
/// change counter drops to zero (also inside MULTI, where later commands count again)
/// and a restart does not bring back the keys of an older dump. Without save points it
/// saves nothing. Both servers run the same steps.
#[test]
fn flushall_with_save_points_saves_the_emptied_dataset() {
    fn steps(port: u16, restart: &mut dyn FnMut()) -> Vec<String> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let mut c = Conn::connect(addr);
        let mut seen = Vec::new();
        let mut field = |c: &mut Conn, name: &str| {
            let Frame::Bulk(info) = c.cmd(&["INFO", "persistence"]) else {
                panic!("INFO is a bulk string");
            };
            let info = String::from_utf8_lossy(&info).into_owned();
            let value = info
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")))
                .unwrap_or_default()
                .to_string();
            seen.push(format!("{name}={value}"));
        };
        c.cmd(&["SET", "old", "1"]);
        c.cmd(&["SAVE"]);
        c.cmd(&["SET", "a", "1"]);
        c.cmd(&["FLUSHALL"]);
        field(&mut c, "rdb_changes_since_last_save");
        c.cmd(&["MULTI"]);
        c.cmd(&["SET", "b", "1"]);
        c.cmd(&["FLUSHALL"]);
        c.cmd(&["SET", "c", "1"]);
        c.cmd(&["EXEC"]);
        field(&mut c, "rdb_changes_since_last_save");
        c.cmd(&["DEL", "c"]);
        c.cmd(&["FLUSHALL", "ASYNC"]);
        field(&mut c, "rdb_changes_since_last_save");
        c.cmd(&["CONFIG", "SET", "save", ""]);
        c.cmd(&["SET", "d", "1"]);
        c.cmd(&["FLUSHALL"]);
        field(&mut c, "rdb_changes_since_last_save");
        drop(c);
        restart();
        let mut c = Conn::connect(addr);
        seen.push(format!("{:?}", c.cmd(&["DBSIZE"])));
        seen
    }
    let mut redis = RedisServer::builder()
        .args(["--save", "3600 1"])
        .start()
        .unwrap();
    let mut ours = RedlineServer::builder()
        .args(["--save", "3600 1"])
        .start()
        .unwrap();
    let port = redis.port();
    let theirs = steps(port, &mut || redis.restart().unwrap());
    let port = ours.port();
    let mine = steps(port, &mut || ours.restart().unwrap());
    assert_eq!(mine, theirs);
    assert_eq!(
        theirs[..3],
        [
            "rdb_changes_since_last_save=0",
            "rdb_changes_since_last_save=1",
            "rdb_changes_since_last_save=0"
        ]
    );
}

/// BGSAVE, BGREWRITEAOF and CONFIG SET appendonly inside MULTI, and FLUSHALL inside a
/// script with save points: the transaction or script holds what the image needs, so
/// these are scheduled or done after it, as in Redis, and never wait on it (they hung
/// the server before). Replies are compared with redis-server's.
#[test]
fn saves_asked_for_inside_a_transaction_or_script_are_scheduled() {
    fn steps(port: u16) -> Vec<String> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let mut c = Conn::connect(addr);
        let mut seen = Vec::new();
        for inner in [
            &["BGSAVE"][..],
            &["BGREWRITEAOF"],
            &["CONFIG", "SET", "appendonly", "yes"],
        ] {
            c.cmd(&["MULTI"]);
            c.cmd(&["SET", "k", "v"]);
            c.cmd(inner);
            seen.push(format!("{:?}", c.cmd(&["EXEC"])));
        }
        c.cmd(&["SET", "a", "1"]);
        let script = "redis.call('set', 'b', '1'); return redis.call('flushall')";
        seen.push(format!("{:?}", c.cmd(&["EVAL", script, "0"])));
        seen.push(format!("{:?}", c.cmd(&["DBSIZE"])));
        // The scheduled work happens: the AOF is on, nothing is left pending.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let Frame::Bulk(info) = c.cmd(&["INFO", "persistence"]) else {
                panic!("INFO is a bulk string");
            };
            let info = String::from_utf8_lossy(&info).into_owned();
            if info.contains("aof_enabled:1")
                && info.contains("aof_rewrite_scheduled:0")
                && info.contains("aof_rewrite_in_progress:0")
                && info.contains("rdb_bgsave_in_progress:0")
                && info.contains("rdb_changes_since_last_save:0")
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "scheduled saves never ran: {info}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        seen
    }
    let redis = RedisServer::builder()
        .args(["--save", "3600 1"])
        .start()
        .unwrap();
    let ours = RedlineServer::builder()
        .args(["--save", "3600 1"])
        .start()
        .unwrap();
    assert_eq!(steps(ours.port()), steps(redis.port()));
}

/// An AOF rewrite without the RDB preamble keeps the function libraries (a FUNCTION
/// LOAD each, as Redis writes them): after FUNCTION FLUSH (not logged: the AOF is off)
/// DEBUG LOADAOF brings the function back. Both servers run the same steps.
#[test]
fn an_aof_rewrite_without_preamble_keeps_the_functions() {
    fn steps(port: u16) -> Vec<String> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let mut c = Conn::connect(addr);
        let library = "#!lua name=lib\nredis.register_function('one', function() return 1 end)";
        c.cmd(&["FUNCTION", "LOAD", library]);
        c.cmd(&["SET", "k", "v"]);
        c.cmd(&["BGREWRITEAOF"]);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let Frame::Bulk(info) = c.cmd(&["INFO", "persistence"]) else {
                panic!("INFO is a bulk string");
            };
            if String::from_utf8_lossy(&info).contains("aof_rewrite_in_progress:0") {
                break;
            }
            assert!(Instant::now() < deadline, "rewrite never finished");
            std::thread::sleep(Duration::from_millis(20));
        }
        c.cmd(&["FUNCTION", "FLUSH"]);
        [
            &["DEBUG", "LOADAOF"][..],
            &["FCALL", "one", "0"],
            &["GET", "k"],
        ]
        .iter()
        .map(|a| format!("{:?}", c.cmd(a)))
        .collect()
    }
    let args = [
        "--enable-debug-command",
        "yes",
        "--aof-use-rdb-preamble",
        "no",
    ];
    let redis = RedisServer::builder().args(args).start().unwrap();
    let ours = RedlineServer::builder().args(args).start().unwrap();
    let theirs = steps(redis.port());
    assert_eq!(theirs[1], "Integer(1)");
    assert_eq!(steps(ours.port()), theirs);
}

/// The commands of an AOF base: each as its name, its key (or first argument) and its
/// number of arguments, sorted (key order and member order within a key are the two
/// servers' own).
fn base_commands(dir: &std::path::Path) -> Vec<(String, String, usize)> {
    let dir = dir.join("appendonlydir");
    let base = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".base.aof"))
        .expect("a base file");
    let mut bytes = bytes::BytesMut::from(&std::fs::read(base).unwrap()[..]);
    let mut commands = Vec::new();
    while let Some(frame) = redline_resp::parse(&mut bytes).unwrap() {
        let Frame::Array(args) = frame else {
            panic!("a command: {frame:?}")
        };
        let word = |i: usize| match args.get(i) {
            Some(Frame::Bulk(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        };
        commands.push((word(0), word(1), args.len()));
    }
    commands.sort();
    commands
}

/// With `aof-use-rdb-preamble no` the base holds the commands Redis's rewrite writes
/// for each type (SET, RPUSH/SADD/HMSET/ZADD of at most 64 items, a stream's XADD,
/// XSETID, XGROUP and XCLAIM, PEXPIREAT), and each server loads the other's files.
#[test]
fn an_aof_base_of_commands_is_redis_rewrite_and_loads_both_ways() {
    let args = [
        "--enable-debug-command",
        "yes",
        "--aof-use-rdb-preamble",
        "no",
        "--appendonly",
        "yes",
        "--save",
        "",
    ];
    let mut ours = RedlineServer::builder().args(args).start().unwrap();
    let mut theirs = RedisServer::builder().args(args).start().unwrap();
    for port in [ours.port(), theirs.port()] {
        fill(port);
        let mut c = Conn::connect(([127, 0, 0, 1], port).into());
        // An empty stream and a deleted entry's id: XADD MAXLEN 0 and XSETID.
        c.cmd(&["XADD", "empty", "MAXLEN", "0", "5-5", "a", "b"]);
        c.ok(&["XGROUP", "CREATE", "empty", "g", "$"]);
        let rewrites = common::info_field(port, "aof_rewrites");
        c.cmd(&["BGREWRITEAOF"]);
        common::wait_until("the rewrite", || {
            common::info_field(port, "aof_rewrite_in_progress") == "0"
                && common::info_field(port, "aof_rewrites") != rewrites
        });
        assert_ne!(common::info_field(port, "aof_last_rewrite_time_sec"), "-1");
    }
    let (mine, redis) = (base_commands(ours.dir()), base_commands(theirs.dir()));
    assert_eq!(mine, redis);
    assert!(mine.iter().any(|(name, _, _)| name == "XCLAIM"), "{mine:?}");

    let (our_digest, their_digest) = (
        digest(|a| ours.cmd(a).unwrap()),
        digest(|a| theirs.cmd(a).unwrap()),
    );
    assert_eq!(our_digest, their_digest);
    ours.kill();
    theirs.kill();
    let (our_files, their_files) = (
        ours.dir().join("appendonlydir"),
        theirs.dir().join("appendonlydir"),
    );
    let swap = ours.dir().join("swap");
    copy_dir(&our_files, &swap);
    std::fs::remove_dir_all(&our_files).unwrap();
    copy_dir(&their_files, &our_files);
    std::fs::remove_dir_all(&their_files).unwrap();
    copy_dir(&swap, &their_files);
    ours.restart().unwrap();
    theirs.restart().unwrap();
    assert_eq!(digest(|a| ours.cmd(a).unwrap()), their_digest);
    assert_eq!(digest(|a| theirs.cmd(a).unwrap()), our_digest);
    assert_same_keys(theirs.port(), ours.port());
}

/// `redis-cli --rdb` and `--functions-rdb` (REPLCONF rdb-filter-only) take a dump from
/// here that a real redis-server loads: every key, or the function libraries only.
#[test]
fn redis_cli_dumps_from_here_load_in_redis_whole_or_functions_only() {
    let ours = redline();
    for i in 0..100 {
        ours.cmd(&["SET", &format!("key:{i}"), "value"]).unwrap();
    }
    let library = "#!lua name=lib1\nredis.register_function('func1', function() return 123 end)";
    ours.cmd(&["FUNCTION", "LOAD", library]).unwrap();
    let mut theirs = redis();
    for (flag, keys) in [("--rdb", 100), ("--functions-rdb", 0)] {
        let file = theirs.dir().join("dump.rdb");
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &ours.port().to_string(), flag])
            .arg(&file)
            .output()
            .expect("redis-cli (Debian redis-tools) is installed by make deps");
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Transfer finished with success"),
            "{flag}: {text}"
        );
        theirs.restart().unwrap();
        assert_eq!(
            theirs.cmd(&["DBSIZE"]).unwrap(),
            Reply::Integer(keys),
            "{flag}"
        );
        assert_eq!(
            theirs.cmd(&["FCALL", "func1", "0"]).unwrap(),
            Reply::Integer(123),
            "{flag}"
        );
    }
    // Filters other than `functions` are refused with Redis's words.
    for server in [
        ours.cmd(&["REPLCONF", "rdb-filter-only", "keys"]),
        theirs.cmd(&["REPLCONF", "rdb-filter-only", "keys"]),
    ] {
        assert_eq!(
            server.unwrap(),
            Reply::Error("ERR Unsupported rdb-filter-only option: keys".into())
        );
    }
}

/// Keys the AOF set with a deadline that has passed stay while it replays, as in Redis,
/// which expires nothing during a load: an active expiry cycle deleting them mid-load
/// appended its DELs after the writes that had recreated them, and the next load lost
/// those keys.
#[test]
fn a_replay_expires_nothing_that_later_writes_recreate() {
    const KEYS: usize = 20_000;
    let server = common::aof_server("everysec");
    let mut c = common::conn(server.port());
    c.ok(&["CONFIG", "SET", "hz", "500"]);
    c.ok(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let pipelined = |c: &mut Conn, make: &dyn Fn(usize) -> Vec<String>| {
        for i in 0..KEYS {
            c.send(&make(i));
        }
        for _ in 0..KEYS {
            assert!(!matches!(c.read(), Some(Frame::Error(_)) | None));
        }
    };
    pipelined(&mut c, &|i| {
        ["SET", &format!("key:{i}"), "old", "PX", "1"]
            .map(String::from)
            .to_vec()
    });
    std::thread::sleep(Duration::from_millis(20));
    // Each SET over the expired key logs its DEL, then the new value.
    pipelined(&mut c, &|i| {
        ["SET", &format!("key:{i}"), "new"]
            .map(String::from)
            .to_vec()
    });
    c.ok(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    for _ in 0..3 {
        c.ok(&["DEBUG", "LOADAOF"]);
        assert_eq!(c.cmd(&["DBSIZE"]), Frame::Integer(KEYS as i64));
    }
}

/// A dump file keeps each key's last use as Redis's does: its LFU counter saved under an
/// LFU policy, its idle time under an LRU one, applied on load by the policy then
/// (`objectSetLRUOrLFU`); across DEBUG RELOAD, OBJECT FREQ and IDLETIME read as on
/// redis-server.
#[test]
fn a_dump_keeps_each_keys_last_use_like_redis() {
    fn steps(port: u16) -> Vec<String> {
        let mut c = Conn::connect(([127, 0, 0, 1], port).into());
        c.cmd(&["SET", "src", "hello"]);
        let Frame::Bulk(payload) = c.cmd(&["DUMP", "src"]) else {
            panic!("DUMP")
        };
        let payload = &payload[..];
        let script: &[&[&[u8]]] = &[
            &[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lfu"],
            &[b"RESTORE", b"f", b"0", payload, b"FREQ", b"100"],
            &[b"DEBUG", b"RELOAD"],
            &[b"OBJECT", b"FREQ", b"f"],
            &[b"CONFIG", b"SET", b"maxmemory-policy", b"volatile-lru"],
            &[b"RESTORE", b"i", b"0", payload, b"IDLETIME", b"1000"],
            &[b"DEBUG", b"RELOAD"],
            &[b"OBJECT", b"IDLETIME", b"i"],
            &[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lfu"],
            &[b"DEBUG", b"RELOAD"],
            &[b"OBJECT", b"FREQ", b"i"],
            &[b"CONFIG", b"SET", b"maxmemory-policy", b"noeviction"],
        ];
        script
            .iter()
            .map(|args| match c.cmd(args) {
                // Whole seconds, read a moment after the RESTORE: 1000 or just past.
                Frame::Integer(idle) if args[1] == b"IDLETIME" => {
                    assert!((1000..=1002).contains(&idle), "idle {idle}");
                    "about 1000".to_string()
                }
                reply => format!("{reply:?}"),
            })
            .collect()
    }
    let (ours, theirs) = (redline(), redis());
    let expected = steps(theirs.port());
    assert_eq!(expected[3], "Integer(100)");
    assert_eq!(steps(ours.port()), expected);
}

/// What each command adds to the change counter that save points read
/// (`rdb_changes_since_last_save`), against redis-server: one change an element a
/// command pushes, adds, removes, pops or stores; a key's creation or the removal of
/// a collection it emptied adds nothing more; a key moved or replaced whole (RENAME,
/// MOVE, COPY, SWAPDB) counts once; reads count nothing, a plain XREAD included, a
/// group's read one a stream. (Counted one per key changed before, a bulk writer's
/// save points fired far later than Redis's.)
#[test]
fn commands_count_changes_like_redis() {
    let script: &[&[&str]] = &[
        &["RPUSH", "l", "a", "b", "c", "d", "e"],
        &["LPUSH", "l", "x", "y"],
        &["LPOP", "l", "2"],
        &["LTRIM", "l", "0", "-1"],
        &["LTRIM", "l", "1", "-1"],
        &["LREM", "l", "0", "c"],
        &["LMOVE", "l", "l", "LEFT", "RIGHT"],
        &["LMOVE", "l", "l2", "LEFT", "RIGHT"],
        &["BLMPOP", "0", "1", "l", "LEFT", "COUNT", "5"],
        &["SADD", "s", "a", "b", "c", "d"],
        &["SADD", "s", "a", "e"],
        &["SREM", "s", "a", "b", "nosuch"],
        &["SMOVE", "s", "s2", "e"],
        &["SADD", "s3", "a", "b", "c"],
        &["SPOP", "s3", "2"],
        &["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"],
        &["ZADD", "z", "CH", "5", "a", "9", "q"],
        &["ZREM", "z", "a", "b"],
        &["ZPOPMIN", "z", "2"],
        &["BZMPOP", "0", "1", "z", "MAX", "COUNT", "5"],
        &["HSET", "h", "a", "1", "b", "2", "c", "3"],
        &["HDEL", "h", "a", "b", "nosuch"],
        &["MSET", "m1", "1", "m2", "2"],
        &["RENAME", "m1", "m3"],
        &["COPY", "m3", "m2", "REPLACE"],
        &["MOVE", "m2", "1"],
        &["SWAPDB", "0", "1"],
        &["SWAPDB", "0", "1"],
        &["RPUSH", "srt", "3", "1", "2"],
        &["SORT", "srt", "STORE", "sorted"],
        &["XADD", "x", "1-1", "f", "v"],
        &["XADD", "x", "2-1", "f", "v"],
        &["XADD", "x", "3-1", "f", "v"],
        &["XDEL", "x", "1-1", "2-1"],
        &["XTRIM", "x", "MAXLEN", "0"],
        &["XADD", "x", "4-1", "f", "v"],
        &["SET", "s1", "v"],
        &["GET", "s1"],
        &["XREAD", "STREAMS", "x", "0"],
        &["XRANGE", "x", "-", "+"],
        &["XINFO", "STREAM", "x"],
        &["EXPIRE", "s1", "100"],
        // HyperLogLogs: one change a register raised, one for the key's creation.
        &["PFADD", "hll", "a", "b", "c", "d"],
        &["PFADD", "hll", "a", "e"],
        &["PFADD", "hll2"],
        // Consumer groups: one change a consumer created, a stream a group read, an
        // entry acked, claimed or dropped; MKSTREAM's stream counts nothing.
        &["XGROUP", "CREATE", "x", "g", "0"],
        &["XGROUP", "CREATE", "x2", "g", "$", "MKSTREAM"],
        &["XADD", "x", "5-1", "f", "v"],
        &["XADD", "x", "6-1", "f", "v"],
        &["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "x", ">"],
        &["XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", "0"],
        &["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "x", ">"],
        &["XCLAIM", "x", "g", "c3", "0", "4-1", "5-1", "6-1"],
        &["XCLAIM", "x", "g", "c3", "0", "9-9", "LASTID", "7-0"],
        &["XAUTOCLAIM", "x", "g", "c4", "0", "0"],
        &["XACK", "x", "g", "4-1", "5-1", "9-9"],
        &["XGROUP", "CREATECONSUMER", "x", "g", "c5"],
        // A key's creation adds nothing to its write's one change.
        &["APPEND", "new1", "x"],
        &["INCRBYFLOAT", "new2", "1.5"],
        // GEO*STORE: one change a member stored.
        &[
            "GEOADD", "geo", "13.36", "38.11", "a", "15.08", "37.50", "b",
        ],
        &[
            "GEOSEARCHSTORE",
            "gs",
            "geo",
            "FROMMEMBER",
            "a",
            "BYRADIUS",
            "500",
            "km",
        ],
        &["GEORADIUS", "geo", "15", "37", "200", "km", "STORE", "gr"],
    ];
    let deltas = |port: u16| -> Vec<i64> {
        let mut c = common::conn(port);
        let mut out = Vec::new();
        for args in script {
            let before = changes(&mut c);
            c.cmd(args);
            out.push(changes(&mut c) - before);
        }
        out
    };
    counts_like_redis(deltas);
}

/// Runs `deltas` on redis-server, then on redline-server (both with DEBUG and without
/// save points, so nothing resets the counter), asserts they count alike, and returns
/// redis-server's counts.
fn counts_like_redis(deltas: impl Fn(u16) -> Vec<i64>) -> Vec<i64> {
    let args = ["--save", "", "--enable-debug-command", "yes"];
    let redis = RedisServer::builder().args(args).start().unwrap();
    let ours = RedlineServer::builder().args(args).start().unwrap();
    let theirs = deltas(redis.port());
    assert_eq!(deltas(ours.port()), theirs);
    theirs
}

/// A key that expires counts no change, removed by a read or by a write over it (Redis's
/// `deleteExpiredKeyAndPropagate` counts none); it counted one before.
#[test]
fn an_expired_key_counts_no_change() {
    let deltas = |port: u16| -> Vec<i64> {
        let mut c = common::conn(port);
        c.ok(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
        let mut out = Vec::new();
        for write in [&["GET", "k"][..], &["SET", "k", "w"], &["EXISTS", "k"]] {
            c.cmd(&["SET", "k", "v", "PX", "1"]);
            std::thread::sleep(std::time::Duration::from_millis(20));
            let before = changes(&mut c);
            c.cmd(write);
            out.push(changes(&mut c) - before);
        }
        out
    };
    assert_eq!(counts_like_redis(deltas), [0, 1, 0]);
}

/// `rdb_changes_since_last_save`: the change counter save points read.
fn changes(c: &mut Conn) -> i64 {
    let Frame::Bulk(info) = c.cmd(&["INFO", "persistence"]) else {
        panic!("INFO is a bulk string");
    };
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("rdb_changes_since_last_save:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// The changes a write counts when it serves blocked clients, against redis-server:
/// Redis counts none for BLPOP, BRPOP and BLMOVE served, one an element for BLMPOP and
/// the sorted set pops, and only a new consumer for a blocked XREADGROUP. (Counted on
/// the thread that served them and never added up, they were lost before.)
#[test]
fn serving_blocked_clients_counts_changes_like_redis() {
    const READ_AS_NEW: &[&str] = &[
        "XREADGROUP",
        "GROUP",
        "g",
        "new",
        "BLOCK",
        "0",
        "STREAMS",
        "x",
        ">",
    ];
    let cases: &[(&[&str], &[&str])] = &[
        (&["BLPOP", "l", "0"], &["LPUSH", "l", "a", "b"]),
        (
            &["BLMOVE", "l2", "d", "LEFT", "RIGHT", "0"],
            &["LPUSH", "l2", "a", "b"],
        ),
        (&["BZPOPMIN", "z", "0"], &["ZADD", "z", "1", "a", "2", "b"]),
        (
            &["BLMPOP", "0", "1", "l3", "LEFT", "COUNT", "5"],
            &["RPUSH", "l3", "a", "b", "c"],
        ),
        (
            &["BZMPOP", "0", "1", "z3", "MIN", "COUNT", "5"],
            &["ZADD", "z3", "1", "a", "2", "b"],
        ),
        // A new consumer, then the same one again.
        (READ_AS_NEW, &["XADD", "x", "2-1", "f", "v"]),
        (READ_AS_NEW, &["XADD", "x", "3-1", "f", "v"]),
    ];
    let deltas = |port: u16| -> Vec<i64> {
        let (mut writer, mut waiter) = (common::conn(port), common::conn(port));
        writer.cmd(&["XADD", "x", "1-1", "f", "v"]);
        writer.cmd(&["XGROUP", "CREATE", "x", "g", "$"]);
        let mut out = Vec::new();
        for (block, write) in cases {
            let before = changes(&mut writer);
            common::serve_blocked(port, (&mut waiter, &mut writer), block, write);
            out.push(changes(&mut writer) - before);
        }
        out
    };
    assert_eq!(counts_like_redis(deltas), [2, 2, 3, 6, 4, 2, 1]);
}
