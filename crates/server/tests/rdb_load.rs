//! Loading a dump.rdb at start, next to a real redis-server 7.0 on the same file: an old
//! encoding (a Redis 2.4 zipmap hash) loads with the same contents and encoding, keys
//! holding empty collections are skipped, a bad checksum stops the start with Redis's
//! report (unless `rdbchecksum no`), INFO counts the keys loaded and expired; while the file loads clients are
//! served with LOADING, and a shutdown then neither waits for the load nor saves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

mod common;

use common::Conn;
use redline_resp::Frame;
use redline_testkit::{RedisServer, RedlineServer, Reply};

/// `tests/assets/hash-zipmap.rdb` of Redis's suite: an RDB version 3 file whose key
/// `hash` is the zipmap {f1: v1, f2: v2}.
const HASH_ZIPMAP_RDB: &[u8] =
    b"REDIS0003\xfe\x00\x09\x04hash\x10\x02\x02f1\x02\x00v1\x02f2\x02\x00v2\xff\xff";

/// What a server shows of the key `hash`: its encoding and its fields.
fn show_hash(cmd: impl Fn(&[&str]) -> Reply) -> (Reply, Reply, Reply) {
    (
        cmd(&["OBJECT", "ENCODING", "hash"]),
        cmd(&["HLEN", "hash"]),
        cmd(&["HMGET", "hash", "f1", "f2"]),
    )
}

#[test]
fn a_zipmap_hash_loads_as_redis_server_loads_it() {
    for limits in [
        &[][..],
        &["--hash-max-ziplist-entries", "1"][..],
        &["--hash-max-ziplist-value", "1"][..],
    ] {
        let mut args = vec!["--save", ""];
        args.extend_from_slice(limits);
        let mut ours = RedlineServer::builder()
            .args(args.iter().copied())
            .start()
            .unwrap();
        let mut theirs = RedisServer::builder()
            .args(args.iter().copied())
            .start()
            .unwrap();
        ours.kill();
        theirs.kill();
        std::fs::write(ours.dir().join("dump.rdb"), HASH_ZIPMAP_RDB).unwrap();
        std::fs::write(theirs.dir().join("dump.rdb"), HASH_ZIPMAP_RDB).unwrap();
        ours.restart().unwrap();
        theirs.restart().unwrap();
        let (encoding, len, values) = show_hash(|a| ours.cmd(a).unwrap());
        assert_eq!(
            (encoding.clone(), len, values),
            show_hash(|a| theirs.cmd(a).unwrap()),
            "{limits:?}"
        );
        let want = if limits.is_empty() {
            "listpack"
        } else {
            "hashtable"
        };
        assert_eq!(encoding.text().as_deref(), Some(want), "{limits:?}");
    }
}

/// `tests/assets/corrupt_empty_keys.rdb` of Redis's suite: nine keys, each an empty
/// collection in one of the encodings (as writers with Redis's bug #8453 saved them).
const EMPTY_KEYS_RDB: &str = "524544495330303130fa0972656469732d7665720b3235352e3235352e323535fa0a72656469732d62697473c040fa056374696d65c27a181561fa08757365642d6d656dc280311000fa0c616f662d707265616d626c65c000fe00fb0900020373657400040468617368000a0c6c6973745f7a69706c6973740b0b0000000a0000000000ff05047a73657400110d7a7365745f6c6973747061636b07070000000000ff100c686173685f7a69706c69737407070000000000ff0e0e6c6973745f717569636b6c697374000c0c7a7365745f7a69706c6973740b0b0000000a0000000000ff0e1c6c6973745f717569636b6c6973745f656d7074795f7a69706c697374010b0b0000000a0000000000fffff0f506ddc66e6183";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// One field of an INFO reply.
fn info_field(info: &Reply, name: &str) -> Option<String> {
    let text = info.text()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':').map(str::to_string))
}

#[test]
fn keys_holding_empty_collections_are_skipped_as_redis_server_skips_them() {
    let bytes = unhex(EMPTY_KEYS_RDB);
    let mut ours = RedlineServer::builder()
        .args(["--save", ""])
        .start()
        .unwrap();
    let mut theirs = RedisServer::builder().args(["--save", ""]).start().unwrap();
    ours.kill();
    theirs.kill();
    std::fs::write(ours.dir().join("dump.rdb"), &bytes).unwrap();
    std::fs::write(theirs.dir().join("dump.rdb"), &bytes).unwrap();
    ours.restart().unwrap();
    theirs.restart().unwrap();
    assert_eq!(ours.cmd(&["DBSIZE"]).unwrap(), Reply::Integer(0));
    assert_eq!(theirs.cmd(&["DBSIZE"]).unwrap(), Reply::Integer(0));
    for log in [ours.log_tail(), theirs.log_tail()] {
        assert!(
            log.contains("skipping empty key: list_quicklist_empty_ziplist"),
            "{log}"
        );
        assert!(log.contains("empty keys skipped: 9."), "{log}");
    }
}

#[test]
fn a_bad_checksum_stops_the_start_with_redis_crc_report() {
    let mut ours = RedlineServer::builder()
        .args(["--save", ""])
        .start()
        .unwrap();
    let mut theirs = RedisServer::builder().args(["--save", ""]).start().unwrap();
    for (cmd, dir) in [
        (ours.cmd(&["SET", "k", "v"]), ours.dir().to_owned()),
        (theirs.cmd(&["SET", "k", "v"]), theirs.dir().to_owned()),
    ] {
        assert_eq!(cmd.unwrap(), Reply::Simple("OK".into()), "{dir:?}");
    }
    assert_eq!(ours.cmd(&["SAVE"]).unwrap(), Reply::Simple("OK".into()));
    assert_eq!(theirs.cmd(&["SAVE"]).unwrap(), Reply::Simple("OK".into()));
    ours.kill();
    theirs.kill();
    for dir in [ours.dir(), theirs.dir()] {
        // What Redis's own test writes over the checksum.
        let path = dir.join("dump.rdb");
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 8..].copy_from_slice(b"foobar00");
        std::fs::write(&path, &bytes).unwrap();
    }
    assert!(ours.restart().is_err(), "redline-server started");
    assert!(theirs.restart().is_err(), "redis-server started");
    for log in [ours.log_tail(), theirs.log_tail()] {
        assert!(log.contains("Wrong RDB checksum expected: ("), "{log}");
        assert!(log.contains("RDB CRC error"), "{log}");
    }
    let log = ours.log_tail();
    assert!(
        log.contains("Terminating server after rdb file reading failure."),
        "{log}"
    );
}

#[test]
fn info_counts_the_keys_the_last_load_stored_and_skipped() {
    let mut ours = RedlineServer::builder()
        .args(["--save", ""])
        .start()
        .unwrap();
    let mut theirs = RedisServer::builder()
        .args(["--save", "", "--enable-debug-command", "yes"])
        .start()
        .unwrap();
    let run = |cmd: &dyn Fn(&[&str]) -> Reply| {
        assert_eq!(
            cmd(&["DEBUG", "POPULATE", "100"]),
            Reply::Simple("OK".into())
        );
        assert_eq!(
            cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
            Reply::Simple("OK".into())
        );
        for i in 0..7 {
            let key = format!("short-lived-{i}");
            assert_eq!(
                cmd(&["SET", &key, "v", "PX", "10"]),
                Reply::Simple("OK".into())
            );
        }
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(cmd(&["SAVE"]), Reply::Simple("OK".into()));
    };
    run(&|a| ours.cmd(a).unwrap());
    run(&|a| theirs.cmd(a).unwrap());
    ours.kill();
    theirs.kill();
    ours.restart().unwrap();
    theirs.restart().unwrap();
    for info in [
        ours.cmd(&["INFO", "persistence"]).unwrap(),
        theirs.cmd(&["INFO", "persistence"]).unwrap(),
    ] {
        assert_eq!(
            info_field(&info, "rdb_last_load_keys_loaded").as_deref(),
            Some("100")
        );
        assert_eq!(
            info_field(&info, "rdb_last_load_keys_expired").as_deref(),
            Some("7")
        );
        assert_eq!(info_field(&info, "loading").as_deref(), Some("0"));
    }
    // DEBUG RELOAD is a load too: the counts start again.
    assert_eq!(
        ours.cmd(&["DEBUG", "RELOAD"]).unwrap(),
        Reply::Simple("OK".into())
    );
    let info = ours.cmd(&["INFO", "persistence"]).unwrap();
    assert_eq!(
        info_field(&info, "rdb_last_load_keys_loaded").as_deref(),
        Some("100")
    );
    assert_eq!(
        info_field(&info, "rdb_last_load_keys_expired").as_deref(),
        Some("0")
    );
}

/// Connects to `port`, retrying while the process starts.
fn connect_soon(port: u16) -> Conn {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            drop(s);
            return Conn::connect(([127, 0, 0, 1], port).into());
        }
        assert!(Instant::now() < deadline, "port {port} never opened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn info_text(conn: &mut Conn) -> String {
    match conn.cmd(&["INFO", "persistence"]) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        Frame::Verbatim { text, .. } => String::from_utf8_lossy(&text).into_owned(),
        other => panic!("INFO: {other:?}"),
    }
}

/// A stopped redline-server whose dump holds what `command` made, and the dump's bytes.
fn saved_dump(command: &[&str]) -> (RedlineServer, Vec<u8>) {
    let mut server = RedlineServer::builder()
        .args(["--save", ""])
        .start()
        .unwrap();
    assert_eq!(server.cmd(command).unwrap(), Reply::Simple("OK".into()));
    assert_eq!(server.cmd(&["SAVE"]).unwrap(), Reply::Simple("OK".into()));
    server.kill();
    let bytes = std::fs::read(server.dir().join("dump.rdb")).unwrap();
    (server, bytes)
}

#[test]
fn clients_get_loading_while_the_dump_loads_and_a_shutdown_does_not_save() {
    shutdown_while_loading(false);
    // A SIGTERM too: no cron turns during the load, it is acted on at once.
    shutdown_while_loading(true);
}

/// SHUTDOWN, or SIGTERM when `by_signal`, while the dump loads.
fn shutdown_while_loading(by_signal: bool) {
    let (mut server, saved) = saved_dump(&["DEBUG", "POPULATE", "20000"]);
    let dump = server.dir().join("dump.rdb");
    // Started by hand: the test kit would wait for PONG, which comes after the load.
    // 200 µs a key makes the 20000 keys take four seconds at least.
    let port = server.port().to_string();
    let mut child = std::process::Command::new(redline_testkit::redline_server_bin().unwrap())
        .current_dir(server.dir())
        .args(["--port", &port, "--bind", "127.0.0.1", "--save", "3600 1"])
        .args(["--enable-debug-command", "yes", "--key-load-delay", "200"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut conn = connect_soon(server.port());
    assert_eq!(
        conn.cmd(&["PING"]),
        Frame::Error("LOADING Redis is loading the dataset in memory".into())
    );
    assert_eq!(
        conn.cmd(&["SET", "k", "v"]),
        Frame::Error("LOADING Redis is loading the dataset in memory".into())
    );
    assert_eq!(
        conn.cmd(&["DEBUG", "LOG", "hello"]),
        Frame::Simple("OK".into())
    );
    // Some parameters may change meanwhile, not those the load depends on.
    assert_eq!(
        conn.cmd(&["CONFIG", "SET", "loglevel", "debug"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(
        conn.cmd(&["CONFIG", "SET", "maxmemory", "0", "appendonly", "yes"]),
        Frame::Error("LOADING Redis is loading the dataset in memory".into())
    );
    // A protected parameter is refused as such first, as Redis checks it before the
    // load.
    assert_eq!(
        conn.cmd(&["CONFIG", "SET", "maxmemory", "0", "dir", "elsewhere"]),
        Frame::Error(
            "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config"
                .into()
        )
    );
    let info = info_text(&mut conn);
    assert!(info.contains("loading:1\r\n"), "{info}");
    assert!(
        info.contains(&format!("loading_total_bytes:{}\r\n", saved.len())),
        "{info}"
    );
    // Save points are set, yet a shutdown while loading saves nothing (half the data
    // would replace the file) and does not wait for the load.
    let asked = Instant::now();
    if by_signal {
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    } else {
        conn.send(&["SHUTDOWN"]);
    }
    let status = common::wait_exit(&mut child);
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    assert!(status.success(), "{status:?}");
    assert_eq!(std::fs::read(&dump).unwrap(), saved);
    // Started again without the delay, it loads the whole file.
    server.restart().unwrap();
    assert_eq!(server.cmd(&["DBSIZE"]).unwrap(), Reply::Integer(20000));
}

#[test]
fn rdbchecksum_no_loads_a_file_whose_checksum_is_wrong_as_redis_server_does() {
    let args = ["--save", "", "--rdbchecksum", "no"];
    let mut ours = RedlineServer::builder().args(args).start().unwrap();
    let mut theirs = RedisServer::builder().args(args).start().unwrap();
    // A file written with a checksum, which is then damaged.
    let (_donor, mut bytes) = saved_dump(&["SET", "k", "v"]);
    let n = bytes.len();
    bytes[n - 8..].copy_from_slice(b"foobar00");
    ours.kill();
    theirs.kill();
    std::fs::write(ours.dir().join("dump.rdb"), &bytes).unwrap();
    std::fs::write(theirs.dir().join("dump.rdb"), &bytes).unwrap();
    ours.restart().unwrap();
    theirs.restart().unwrap();
    assert_eq!(
        ours.cmd(&["GET", "k"]).unwrap(),
        Reply::Bulk(Some(b"v".to_vec()))
    );
    assert_eq!(
        theirs.cmd(&["GET", "k"]).unwrap(),
        Reply::Bulk(Some(b"v".to_vec()))
    );
}

/// With no dump file there is nothing to load: the first command of a client that
/// connects the moment the port opens is served, never LOADING, as by redis-server
/// (redis-rs's tests send FLUSHDB right after connecting). Started by hand, 10 times:
/// the test kit would wait for PONG first.
#[test]
fn without_a_dump_the_first_client_never_gets_loading() {
    for round in 0..10 {
        let dir =
            std::env::temp_dir().join(format!("redline-no-dump-{}-{round}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let port = common::free_port();
        let mut child = std::process::Command::new(redline_testkit::redline_server_bin().unwrap())
            .current_dir(&dir)
            .args(common::loopback_args(port))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut conn = common::wait_for_port(port);
        let reply = conn.cmd(&["FLUSHDB"]);
        child.kill().unwrap();
        child.wait().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(reply, Frame::Simple("OK".into()), "round {round}");
    }
}
