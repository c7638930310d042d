//! Damaged persistence files: every truncation and a set of byte flips of a valid RDB
//! (written by redis-server 7.0 and by redline-server) and of a valid AOF go through the
//! loaders the server runs at start (`snapshot::load`, `aof_load::load_parts`, in
//! process, so thousands of variants take seconds). None may panic; an RDB with its
//! checksum is refused on any damage; a cut AOF loads exactly its whole commands (a
//! MULTI left open is dropped) and says where it was cut, or is refused when
//! `aof-load-truncated` is off. Real servers refuse damaged files at start with Redis's
//! messages, as redis-server does on the same files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};

use bytes::BytesMut;
use redline_resp::{encode, parse, Frame, RequestDecoder};
use redline_server::net::client::ClientState;
use redline_server::net::connection::run_commands;
use redline_server::persist::aof_load::{load_parts, Contents, LoadError, Loaded, Part};
use redline_server::persist::snapshot::{load, LoadOptions};
use redline_server::shared::Shared;
use redline_server::Config;
use redline_testkit::{RedisServer, RedlineServer, Reply};

fn fresh() -> Shared {
    let config = Config::from_args([
        "--shards",
        "2",
        "--enable-debug-command",
        "yes",
        "--save",
        "",
    ])
    .unwrap();
    Shared::new(config, 0)
}

/// Runs one command on `shared` as a client would, returns its reply.
fn exec(shared: &Shared, args: &[&[u8]]) -> Frame {
    let mut client = ClientState::new(1, SocketAddr::from(([127, 0, 0, 1], 1)), true);
    let mut decoder = RequestDecoder::default();
    let mut input = BytesMut::new();
    encode::command(&mut input, args.iter().copied());
    let mut output = BytesMut::new();
    run_commands(shared, &mut client, &mut decoder, &mut input, &mut output);
    parse(&mut output).unwrap().expect("a reply")
}

fn digest(shared: &Shared) -> Frame {
    exec(shared, &[b"DEBUG", b"DIGEST"])
}

/// One key of each type and encoding, a TTL, a second database, a function library.
const FILL: &[&[&str]] = &[
    &["SET", "int", "12345"],
    &["SET", "embstr", "short"],
    &[
        "SET",
        "raw",
        "a raw string longer than forty-four bytes, stored apart",
    ],
    &["SET", "ttl", "v", "PX", "900000000"],
    &["RPUSH", "list", "a", "b", "1", "2"],
    &["SADD", "intset", "1", "2", "3"],
    &["SADD", "set", "a", "b", "c"],
    &["HSET", "hash", "f", "v", "g", "12"],
    &["ZADD", "zset", "1", "a", "2.5", "b", "-inf", "c"],
    &["XADD", "stream", "1-1", "f", "v"],
    &["XGROUP", "CREATE", "stream", "grp", "0"],
    &["PFADD", "hll", "a", "b", "c"],
    &["SELECT", "3"],
    &["SET", "other-db", "here"],
    &[
        "FUNCTION",
        "LOAD",
        "#!lua name=lib\nredis.register_function('one', function() return 1 end)",
    ],
];

/// The dump.rdb a server writes after FILL and SAVE (redis-server or redline-server).
fn rdb_from(port: u16, dir: &std::path::Path) -> Vec<u8> {
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut buf = BytesMut::new();
    for command in FILL.iter().chain([&["SAVE"][..]].iter()) {
        let mut out = BytesMut::new();
        encode::command(&mut out, command.iter().map(|a| a.as_bytes()));
        std::io::Write::write_all(&mut conn, &out).unwrap();
        let reply = loop {
            if let Some(frame) = parse(&mut buf).unwrap() {
                break frame;
            }
            let mut chunk = [0u8; 4096];
            let n = std::io::Read::read(&mut conn, &mut chunk).unwrap();
            assert!(n > 0, "connection closed");
            buf.extend_from_slice(&chunk[..n]);
        };
        assert!(!matches!(reply, Frame::Error(_)), "{command:?}: {reply:?}");
    }
    std::fs::read(dir.join("dump.rdb")).unwrap()
}

/// Loads `bytes` as an RDB into a fresh dataset; panics are caught and reported.
fn load_rdb(bytes: &[u8]) -> Result<Frame, String> {
    catch_unwind(AssertUnwindSafe(|| {
        let shared = fresh();
        load(&shared, bytes, LoadOptions::default(), None)
            .map(|_| digest(&shared))
            .map_err(|e| e.to_string())
    }))
    .unwrap_or_else(|_| panic!("the RDB loader panicked on {} bytes", bytes.len()))
}

fn check_rdb(name: &str, rdb: &[u8]) {
    let whole = load_rdb(rdb).unwrap_or_else(|e| panic!("{name}: the valid file: {e}"));
    assert_ne!(whole, digest(&fresh()), "{name}: nothing loaded");
    for cut in 0..rdb.len() {
        if let Ok(d) = load_rdb(&rdb[..cut]) {
            panic!("{name}: {cut} of {} bytes loaded ({d:?})", rdb.len());
        }
    }
    for at in 0..rdb.len() {
        for mask in [0x01u8, 0x80, 0xFF] {
            let mut flipped = rdb.to_vec();
            flipped[at] ^= mask;
            if let Ok(d) = load_rdb(&flipped) {
                panic!("{name}: byte {at} ^ {mask:#x} loaded ({d:?})");
            }
        }
    }
    // Without a checksum (`rdbchecksum no`) damage may go unseen, but never panics,
    // and a cut file is still refused.
    let mut unchecked = rdb.to_vec();
    let n = unchecked.len();
    unchecked[n - 8..].fill(0);
    assert_eq!(load_rdb(&unchecked), Ok(whole), "{name}: unchecked");
    for at in 0..n - 8 {
        let mut flipped = unchecked.clone();
        flipped[at] ^= 0x55;
        let _ = load_rdb(&flipped);
    }
    for cut in 0..n {
        assert!(
            load_rdb(&unchecked[..cut]).is_err(),
            "{name}: unchecked cut {cut}"
        );
    }
}

#[test]
fn every_cut_and_flip_of_an_rdb_is_refused_without_panic() {
    let theirs = RedisServer::builder().args(["--save", ""]).start().unwrap();
    check_rdb("redis-server", &rdb_from(theirs.port(), theirs.dir()));
    let ours = RedlineServer::builder()
        .args(["--save", ""])
        .start()
        .unwrap();
    check_rdb("redline-server", &rdb_from(ours.port(), ours.dir()));
}

/// Commands of a valid incremental file, with a MULTI/EXEC block in the middle.
const AOF: &[&[&str]] = &[
    &["SELECT", "0"],
    &["SET", "a", "1"],
    &["RPUSH", "l", "x", "y", "z"],
    &["MULTI"],
    &["INCR", "a"],
    &["HSET", "h", "f", "v"],
    &["EXEC"],
    &["SADD", "s", "m1", "m2"],
    &["ZADD", "z", "1.5", "m"],
    &["PEXPIREAT", "a", "99999999999999"],
    &["SELECT", "2"],
    &["SET", "b", "two"],
];

/// Loads `bytes` as an AOF file, from memory and from a file on disk (read as it
/// loads): both must load the same.
fn load_aof(bytes: &[u8], truncated_ok: bool) -> (Result<Loaded, LoadError>, Frame) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("appendonly.aof.1.incr.aof");
    std::fs::write(&path, bytes).unwrap();
    let [in_memory, from_file] = [Contents::Bytes(bytes), Contents::File(&path)].map(|contents| {
        catch_unwind(AssertUnwindSafe(|| {
            let shared = fresh();
            let parts = [Part {
                name: "appendonly.aof.1.incr.aof",
                contents,
            }];
            let result = load_parts(&shared, &parts, truncated_ok);
            (result, digest(&shared))
        }))
        .unwrap_or_else(|_| panic!("the AOF loader panicked on {} bytes", bytes.len()))
    });
    assert_eq!(in_memory, from_file, "{} bytes", bytes.len());
    in_memory
}

#[test]
fn every_cut_of_an_aof_loads_its_whole_commands_or_is_refused() {
    let mut bytes = BytesMut::new();
    // Where each command ends.
    let mut ends = vec![0];
    for command in AOF {
        encode::command(&mut bytes, command.iter().map(|a| a.as_bytes()));
        ends.push(bytes.len());
    }
    let (multi, exec) = (
        AOF.iter().position(|c| c[0] == "MULTI").unwrap(),
        AOF.iter().position(|c| c[0] == "EXEC").unwrap(),
    );
    // The dataset after each whole prefix of commands.
    let digests: Vec<Frame> = ends
        .iter()
        .map(|&end| {
            let (result, digest) = load_aof(&bytes[..end], true);
            let open_multi = end > ends[multi] && end <= ends[exec];
            let expected = open_multi.then_some(ends[multi] as u64);
            assert_eq!(result.unwrap().truncated_at, expected, "prefix {end}");
            digest
        })
        .collect();
    for cut in 0..=bytes.len() {
        // The whole commands in the cut, less a MULTI not closed by its EXEC.
        let mut whole = ends.iter().rposition(|&end| end <= cut).unwrap();
        if whole > multi && whole <= exec {
            whole = multi;
        }
        let clean = ends[whole] == cut;
        let (result, digest) = load_aof(&bytes[..cut], true);
        let loaded = result.unwrap_or_else(|e| panic!("cut {cut}: {e:?}"));
        assert_eq!(
            loaded.truncated_at,
            (!clean).then_some(ends[whole] as u64),
            "cut {cut}"
        );
        assert_eq!(digest, digests[whole], "cut {cut}");
        let (strict, strict_digest) = load_aof(&bytes[..cut], false);
        if clean {
            assert_eq!(strict_digest, digests[whole], "cut {cut}");
        } else {
            match strict {
                Err(LoadError::Bad(message)) => {
                    assert!(message.contains("Unexpected end of file"), "{message}")
                }
                other => panic!("cut {cut} with aof-load-truncated no: {other:?}"),
            }
        }
    }
    // Flipped bytes: refused, or loaded as some other valid file; never a panic.
    for at in 0..bytes.len() {
        for mask in [0x01u8, 0x20, 0xFF] {
            let mut flipped = bytes.to_vec();
            flipped[at] ^= mask;
            let _ = load_aof(&flipped, true);
            let _ = load_aof(&flipped, false);
        }
    }
}

#[test]
fn an_aof_that_is_not_commands_is_refused_as_redis_refuses_it() {
    let cases: [(&[u8], &str); 3] = [
        (
            b"SET a 1\r\n",
            "Bad file format reading the append only file",
        ),
        (
            b"*2\r\n$3\r\nFOO\r\n$1\r\na\r\n",
            "Unknown command 'FOO' reading the append only file",
        ),
        (b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n", "Unexpected end of file"),
    ];
    for (bytes, message) in cases {
        let (result, _) = load_aof(bytes, false);
        match result {
            Err(LoadError::Bad(text)) => assert!(text.contains(message), "{text}"),
            other => panic!("{bytes:?}: {other:?}"),
        }
    }
    // Real servers on such a directory: both refuse to start.
    let manifest = "file appendonly.aof.1.incr.aof seq 1 type i\n";
    for (bytes, message) in cases {
        let args = [
            "--save",
            "",
            "--appendonly",
            "yes",
            "--aof-load-truncated",
            "no",
        ];
        let mut ours = RedlineServer::builder().args(args).start().unwrap();
        let mut theirs = RedisServer::builder().args(args).start().unwrap();
        for (dir, is_ours) in [
            (ours.dir().to_owned(), true),
            (theirs.dir().to_owned(), false),
        ] {
            if is_ours {
                ours.kill();
            } else {
                theirs.kill();
            }
            let aof = dir.join("appendonlydir");
            let _ = std::fs::remove_dir_all(&aof);
            std::fs::create_dir_all(&aof).unwrap();
            std::fs::write(aof.join("appendonly.aof.manifest"), manifest).unwrap();
            std::fs::write(aof.join("appendonly.aof.1.incr.aof"), bytes).unwrap();
        }
        assert!(
            ours.restart().is_err(),
            "redline-server started on {bytes:?}"
        );
        assert!(
            theirs.restart().is_err(),
            "redis-server started on {bytes:?}"
        );
        let (ours_log, theirs_log) = (ours.log_tail(), theirs.log_tail());
        assert!(ours_log.contains(message), "{ours_log}");
        assert!(theirs_log.contains(message), "{theirs_log}");
    }
}

#[test]
fn a_cut_rdb_stops_the_start_and_keeps_the_file() {
    let mut server = RedlineServer::builder()
        .args(["--save", ""])
        .start()
        .unwrap();
    server.cmd(&["SET", "k", "v"]).unwrap();
    assert_eq!(server.cmd(&["SAVE"]).unwrap(), Reply::Simple("OK".into()));
    server.kill();
    let path = server.dir().join("dump.rdb");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
    assert!(server.restart().is_err(), "started on a cut file");
    assert!(
        server.log_tail().contains("Short read"),
        "{}",
        server.log_tail()
    );
    assert_eq!(std::fs::read(&path).unwrap().len(), bytes.len() - 5);
}

#[test]
fn a_damaged_rdb_is_refused_with_redis_checksum_message() {
    let mut server = RedlineServer::builder()
        .args(["--save", ""])
        .start()
        .unwrap();
    server.cmd(&["SET", "k", "v"]).unwrap();
    assert_eq!(server.cmd(&["SAVE"]).unwrap(), Reply::Simple("OK".into()));
    server.kill();
    let path = server.dir().join("dump.rdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    // The value's last byte: the file still parses, only the checksum tells.
    bytes[n - 10] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    assert!(server.restart().is_err(), "started on a damaged file");
    let log = server.log_tail();
    assert!(log.contains("Wrong RDB checksum expected: ("), "{log}");
    assert!(log.contains(") but got ("), "{log}");
}
