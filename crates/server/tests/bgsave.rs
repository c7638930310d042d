//! BGSAVE under a write load is one point in time: 50 clients write marker sequences
//! while the save runs, and the file (loaded by a real redis-server 7.0, whose loader
//! is the reference) holds, for every client, a state the client really passed
//! through: its keys sit on many shards, so a cut taken shard by shard at different
//! times would show one shard's newer marker beside another's older one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use common::Conn;
use redline_resp::Frame;
use redline_testkit::{PeakMemory, RedisServer, RedlineServer, Reply};

const WRITERS: usize = 50;
/// Keys each writer cycles through: marker `i` goes to key `i % SLOTS`.
const SLOTS: u64 = 16;
/// Preloaded keys each writer deletes in order while the save runs.
const DOOMED: u64 = 2_000;

fn info_field(server: &RedlineServer, section: &str, name: &str) -> String {
    let info = server.cmd(&["INFO", section]).unwrap().text().unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .to_string()
}

/// Writer `w`'s loop: marker `i` is `SET m:w:{i % SLOTS} i` and, every other marker,
/// `DEL d:w:{n}` for the next `n`.
fn write_markers(port: u16, w: usize, stop: &AtomicBool, done: &AtomicU64) {
    let mut conn = Conn::connect(([127, 0, 0, 1], port).into());
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let key = format!("m:{w}:{}", i % SLOTS);
        assert_eq!(
            conn.cmd(&["SET", &key, &i.to_string()]),
            Frame::Simple("OK".into())
        );
        if i % 2 == 0 && i / 2 <= DOOMED {
            let doomed = format!("d:{w}:{}", i / 2 - 1);
            assert_eq!(conn.cmd(&["DEL", &doomed]), Frame::Integer(1));
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
}

/// The markers of writer `w` in a loaded image are a state the writer passed through:
/// there is one last marker `last` such that every slot holds the latest marker up to
/// `last` that maps to it, and exactly the doomed keys deleted up to `last` are gone.
fn check_writer(image: &RedisServer, w: usize) {
    let keys: Vec<String> = (0..SLOTS).map(|s| format!("m:{w}:{s}")).collect();
    let mut args = vec!["MGET"];
    args.extend(keys.iter().map(String::as_str));
    let Reply::Array(Some(values)) = image.cmd(&args).unwrap() else {
        panic!("MGET")
    };
    let values: Vec<Option<u64>> = values
        .iter()
        .map(|v| v.text().map(|t| t.parse().unwrap()))
        .collect();
    let last = values.iter().flatten().copied().max().unwrap_or(0);
    for (slot, value) in values.iter().enumerate() {
        let slot = slot as u64;
        // The latest marker <= last landing on this slot, if any.
        let expected = (1..=last).rev().find(|i| i % SLOTS == slot);
        assert_eq!(
            *value, expected,
            "writer {w} slot {slot}, last marker {last}"
        );
    }
    // Marker `i` is set before its DEL, so after an even last marker that DEL may or
    // may not have run: its key is the one allowed either way.
    let deleted = (last / 2).min(DOOMED);
    let undecided = (last % 2 == 0 && last > 0 && last / 2 <= DOOMED).then(|| last / 2 - 1);
    for n in [
        0,
        deleted.saturating_sub(2),
        deleted.saturating_sub(1),
        deleted,
        deleted + 1,
    ] {
        if n >= DOOMED || Some(n) == undecided {
            continue;
        }
        let exists = image.cmd(&["EXISTS", &format!("d:{w}:{n}")]).unwrap();
        let want = Reply::Integer(i64::from(n >= deleted));
        assert_eq!(
            exists, want,
            "writer {w} doomed key {n}, last marker {last}"
        );
    }
}

#[test]
fn bgsave_under_fifty_writers_is_one_point_in_time() {
    let server = RedlineServer::builder()
        .args(["--enable-debug-command", "yes", "--save", ""])
        .start()
        .unwrap();
    // Bulk for the walker to take a while over, and the keys the writers delete.
    let mut conn = Conn::connect(server.addr());
    assert_eq!(
        conn.cmd(&["DEBUG", "POPULATE", "150000", "bulk", "64"]),
        Frame::Simple("OK".into())
    );
    for w in 0..WRITERS {
        let mut mset = vec!["MSET".to_string()];
        for n in 0..DOOMED {
            mset.push(format!("d:{w}:{n}"));
            mset.push("x".into());
        }
        let args: Vec<&str> = mset.iter().map(String::as_str).collect();
        assert_eq!(conn.cmd(&args), Frame::Simple("OK".into()));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (stop, done, port) = (stop.clone(), done.clone(), server.port());
            std::thread::spawn(move || write_markers(port, w, &stop, &done))
        })
        .collect();
    while done.load(Ordering::Relaxed) < 2_000 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = done.load(Ordering::Relaxed);
    assert_eq!(
        server.cmd(&["BGSAVE"]).unwrap(),
        Reply::Simple("Background saving started".into())
    );
    let started = Instant::now();
    while info_field(&server, "persistence", "rdb_bgsave_in_progress") != "0" {
        assert!(started.elapsed() < Duration::from_secs(120), "BGSAVE hangs");
        std::thread::sleep(Duration::from_millis(10));
    }
    let during = done.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(
        info_field(&server, "persistence", "rdb_last_bgsave_status"),
        "ok"
    );
    assert!(during > 0, "the writers made no progress during the save");

    // Redis's own loader reads the file; every writer was cut at one instant.
    let mut image = RedisServer::builder().args(["--save", ""]).start().unwrap();
    std::fs::copy(server.dir().join("dump.rdb"), image.dir().join("dump.rdb")).unwrap();
    image.restart().unwrap();
    for w in 0..WRITERS {
        check_writer(&image, w);
    }
    let keys = match image.cmd(&["DBSIZE"]).unwrap() {
        Reply::Integer(n) => n,
        other => panic!("DBSIZE {other:?}"),
    };
    assert!(keys >= 150_000, "bulk keys missing: {keys}");
    eprintln!("{during} writes ran during the save; {keys} keys in the image");
}

fn replication_field(port: u16, name: &str) -> String {
    let mut conn = Conn::connect(([127, 0, 0, 1], port).into());
    let Frame::Bulk(info) = conn.cmd(&["INFO", "replication"]) else {
        return String::new();
    };
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A full sync is a cut too: a redis-server replica attached while 16 clients rewrite
/// and delete the master's keys ends with exactly the master's dataset.
#[test]
fn a_full_sync_under_sixteen_writers_gives_the_replica_the_masters_data() {
    let master = RedlineServer::builder()
        .args(["--enable-debug-command", "yes", "--save", ""])
        .start()
        .unwrap();
    let mut conn = Conn::connect(master.addr());
    assert_eq!(
        conn.cmd(&["DEBUG", "POPULATE", "100000", "key", "32"]),
        Frame::Simple("OK".into())
    );
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let (stop, done, port) = (stop.clone(), done.clone(), master.port());
            std::thread::spawn(move || {
                let mut conn = Conn::connect(([127, 0, 0, 1], port).into());
                let mut rng = fastrand::Rng::with_seed(w);
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("key:{}", rng.u32(0..100_000));
                    let reply = match rng.u8(0..3) {
                        0 => conn.cmd(&["SET", &key, &rng.u64(..).to_string()]),
                        1 => conn.cmd(&["DEL", &key]),
                        _ => conn.cmd(&["APPEND", &key, "+"]),
                    };
                    assert!(!matches!(reply, Frame::Error(_)), "{reply:?}");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    while done.load(Ordering::Relaxed) < 1_000 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let replica = RedisServer::builder()
        .args(["--save", "", "--enable-debug-command", "yes"])
        .args(["--replicaof", "127.0.0.1", &master.port().to_string()])
        .start()
        .unwrap();
    let started = Instant::now();
    while replication_field(replica.port(), "master_link_status") != "up" {
        assert!(started.elapsed() < Duration::from_secs(60), "sync hangs");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = replication_field(master.port(), "master_repl_offset");
        let r = replication_field(replica.port(), "slave_repl_offset");
        if !m.is_empty() && m == r {
            break;
        }
        assert!(Instant::now() < deadline, "replica at {r}, master at {m}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut on_replica = Conn::connect(replica.addr());
    assert_eq!(
        on_replica.cmd(&["DEBUG", "DIGEST"]),
        conn.cmd(&["DEBUG", "DIGEST"])
    );
}

fn start_bgsave(server: &RedlineServer) {
    assert_eq!(
        server.cmd(&["BGSAVE"]).unwrap(),
        Reply::Simple("Background saving started".into())
    );
}

fn wait_bgsave(server: &RedlineServer) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while info_field(server, "persistence", "rdb_bgsave_in_progress") != "0" {
        assert!(Instant::now() < deadline, "the BGSAVE did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        info_field(server, "persistence", "rdb_last_bgsave_status"),
        "ok"
    );
}

/// A large string goes into a BGSAVE's file by reference, as a forked child shares its
/// parent's pages: the save of one 48 MB value grows the server's peak by a small part
/// of it (it copied the value whole before). A change to the value while the save
/// holds it copies it first (SETRANGE, APPEND), so the file keeps the value as it was at
/// BGSAVE.
#[test]
fn bgsave_shares_a_large_string_and_copies_it_on_write() {
    const SIZE: usize = 48 << 20;
    let server = RedlineServer::builder()
        .args(["--enable-debug-command", "yes", "--save", ""])
        .args(["--rdbcompression", "no"])
        .start()
        .unwrap();
    let ok = |args: &[&str]| assert_eq!(server.cmd(args).unwrap(), Reply::Simple("OK".into()));
    ok(&["DEBUG", "POPULATE", "1", "big", &SIZE.to_string()]);
    let span = PeakMemory::start(server.pid().unwrap()).unwrap();
    start_bgsave(&server);
    wait_bgsave(&server);
    let grown = span.grown_kb().unwrap();
    assert!(grown < 12 << 10, "peak grew by {grown} kB during BGSAVE");

    // Slowed down by small keys (0.5 ms each), so the change lands during the save.
    ok(&["DEBUG", "POPULATE", "2000", "small", "10"]);
    ok(&["CONFIG", "SET", "rdb-key-save-delay", "500"]);
    start_bgsave(&server);
    let changed = server.cmd(&["SETRANGE", "big:0", "0", "X"]).unwrap();
    assert_eq!(changed, Reply::Integer(SIZE as i64));
    // Grown where it stands once the save's copy is made, and the file keeps neither.
    let grown = server.cmd(&["APPEND", "big:0", "tail"]).unwrap();
    assert_eq!(grown, Reply::Integer(SIZE as i64 + 4));
    assert_eq!(
        info_field(&server, "persistence", "rdb_bgsave_in_progress"),
        "1",
        "the change came after the save"
    );
    wait_bgsave(&server);
    ok(&["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    ok(&["DEBUG", "RELOAD", "NOSAVE"]);
    let first = server.cmd(&["GETRANGE", "big:0", "0", "0"]).unwrap();
    assert_eq!(first, Reply::Bulk(b"v".to_vec().into()));
    assert_eq!(
        server.cmd(&["STRLEN", "big:0"]).unwrap(),
        Reply::Integer(SIZE as i64)
    );
}
