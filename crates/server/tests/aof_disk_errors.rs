//! What redline-server does when its AOF cannot be written, as redis-server does: the
//! bytes stay buffered and are written again, writes (and PING) are refused with
//! `MISCONF Errors writing to the AOF file: ...` until a write succeeds, reads go on,
//! and nothing acknowledged is lost; under `appendfsync always` the server exits.
//!
//! The disk is made to fail by lowering the server's file size limit (RLIMIT_FSIZE)
//! to just past its incremental file's size: its next write comes short, then fails
//! with EFBIG. The log, a smaller file, can still be written. (redis-server dies of
//! SIGXFSZ there, so it is not run beside.)
#![allow(clippy::unwrap_used, clippy::expect_used)]
// `prlimit` on the server's process, a system call on raw pointers.
#![allow(unsafe_code)]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use redline_testkit::{RedlineServer, Reply};

/// The incremental file the server appends to: the last one its manifest names.
fn incr_file(server: &RedlineServer) -> PathBuf {
    let dir = server.dir().join("appendonlydir");
    let manifest = std::fs::read_to_string(dir.join("appendonly.aof.manifest")).unwrap();
    let name = manifest
        .lines()
        .rev()
        .filter(|l| l.ends_with("type i"))
        .find_map(|l| l.split(' ').nth(1))
        .expect("an incremental file");
    dir.join(name)
}

/// Sets the soft file size limit of the server's process (the hard one stays, so that
/// raising it back needs no privilege).
fn limit_file_size(server: &RedlineServer, bytes: Option<u64>) {
    let pid = server.pid().expect("running") as libc::pid_t;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: reads and writes one `rlimit` of a process this test started.
    unsafe {
        assert_eq!(
            libc::prlimit(pid, libc::RLIMIT_FSIZE, std::ptr::null(), &mut limit),
            0
        );
        limit.rlim_cur = bytes.map_or(limit.rlim_max, |b| b.min(limit.rlim_max));
        assert_eq!(
            libc::prlimit(pid, libc::RLIMIT_FSIZE, &limit, std::ptr::null_mut()),
            0
        );
    }
}

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn bulk(text: &str) -> Reply {
    Reply::Bulk(Some(text.as_bytes().to_vec()))
}

fn set(server: &RedlineServer, key: &str, value: &str) -> Reply {
    server.cmd(&["SET", key, value]).unwrap()
}

fn info_field(server: &RedlineServer, name: &str) -> String {
    let info = server
        .cmd(&["INFO", "persistence"])
        .unwrap()
        .text()
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::to_string))
        .unwrap_or_default()
}

/// Keys written first: the incremental file outgrows the log by far.
const BEFORE: usize = 200;
const VALUE: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// Writes the [`BEFORE`] keys, acknowledged.
fn write_before(server: &RedlineServer) {
    for i in 0..BEFORE {
        assert_eq!(set(server, &format!("before{i}"), VALUE), ok());
    }
}

fn assert_before_kept(server: &RedlineServer) {
    for i in 0..BEFORE {
        assert_eq!(
            server.cmd(&["GET", &format!("before{i}")]).unwrap(),
            bulk(VALUE)
        );
    }
}

const REFUSED: &str = "MISCONF Errors writing to the AOF file: No space left on device";

#[test]
fn a_failing_aof_refuses_writes_until_it_can_write_and_loses_nothing() {
    let mut server = common::aof_server("everysec");
    write_before(&server);
    let size = std::fs::metadata(incr_file(&server)).unwrap().len();
    // Room for part of the next command only: its write comes short.
    limit_file_size(&server, Some(size + 10));
    // Acknowledged, as Redis acknowledges it: the failure is the write's, after it ran.
    assert_eq!(
        set(&server, "during", "a value longer than the room left"),
        ok()
    );
    assert_eq!(
        set(&server, "refused", "v"),
        Reply::Error(REFUSED.into()),
        "{}",
        server.log_tail()
    );
    assert_eq!(server.cmd(&["PING"]).unwrap(), Reply::Error(REFUSED.into()));
    assert_eq!(
        server.cmd(&["GET", "during"]).unwrap(),
        bulk("a value longer than the room left")
    );
    assert_eq!(info_field(&server, "aof_last_write_status"), "err");
    // The short write was taken back out: the file still ends after a whole command.
    assert_eq!(std::fs::metadata(incr_file(&server)).unwrap().len(), size);
    assert!(
        server
            .log_tail()
            .contains("Short write while writing to the AOF file"),
        "{}",
        server.log_tail()
    );

    limit_file_size(&server, None);
    let deadline = Instant::now() + Duration::from_secs(10);
    while set(&server, "after", "v") != ok() {
        assert!(Instant::now() < deadline, "writes still refused");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(info_field(&server, "aof_last_write_status"), "ok");
    assert!(server
        .log_tail()
        .contains("AOF write error looks solved, Redis can write again."));

    server.kill();
    server.restart().unwrap();
    assert_before_kept(&server);
    assert_eq!(
        server.cmd(&["GET", "during"]).unwrap(),
        bulk("a value longer than the room left")
    );
    assert_eq!(server.cmd(&["GET", "after"]).unwrap(), bulk("v"));
    assert_eq!(
        server.cmd(&["EXISTS", "refused"]).unwrap(),
        Reply::Integer(0)
    );
}

#[test]
fn a_failing_aof_under_appendfsync_always_stops_the_server() {
    let mut server = common::aof_server("always");
    write_before(&server);
    let size = std::fs::metadata(incr_file(&server)).unwrap().len();
    limit_file_size(&server, Some(size));
    // Never acknowledged: the server exits before the reply leaves.
    assert_ne!(server.cmd(&["SET", "lost", "v"]).ok(), Some(ok()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.is_running() {
        assert!(Instant::now() < deadline, "the server goes on");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        server.log_tail().contains(
            "Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting..."
        ),
        "{}",
        server.log_tail()
    );
    server.restart().unwrap();
    assert_before_kept(&server);
    assert_eq!(server.cmd(&["EXISTS", "lost"]).unwrap(), Reply::Integer(0));
}

fn replica_of(master: &RedlineServer, ignore_errors: bool) -> RedlineServer {
    let replica = common::aof_server("everysec");
    let ignore = if ignore_errors { "yes" } else { "no" };
    replica
        .cmd(&["CONFIG", "SET", "replica-ignore-disk-write-errors", ignore])
        .unwrap();
    let port = master.port().to_string();
    replica.cmd(&["REPLICAOF", "127.0.0.1", &port]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = replica.cmd(&["INFO"]).unwrap().text().unwrap();
        // Synced, and its AOF started again from the master's data (the rewrite
        // done: the manifest names the file it appends to).
        if info.contains("master_link_status:up") && info.contains("aof_rewrite_in_progress:0") {
            return replica;
        }
        assert!(Instant::now() < deadline, "the replica does not sync");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `replica` holds `key` (or gives up after 10 s).
fn wait_for_key(replica: &RedlineServer, key: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if replica.cmd(&["EXISTS", key]).ok() == Some(Reply::Integer(1)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_replica_that_cannot_write_its_aof_stops_unless_told_to_go_on() {
    let master = common::aof_server("everysec");
    master
        .cmd(&["CONFIG", "SET", "repl-diskless-sync-delay", "0"])
        .unwrap();
    let mut stops = replica_of(&master, false);
    let goes_on = replica_of(&master, true);
    write_before(&master);
    assert!(wait_for_key(&stops, &format!("before{}", BEFORE - 1)));
    assert!(wait_for_key(&goes_on, &format!("before{}", BEFORE - 1)));
    for replica in [&stops, &goes_on] {
        let size = std::fs::metadata(incr_file(replica)).unwrap().len();
        limit_file_size(replica, Some(size + 10));
    }
    // The first write fails on the replicas' disks, the second meets the failure.
    assert_eq!(set(&master, "first", VALUE), ok());
    for replica in [&stops, &goes_on] {
        assert!(wait_for_key(replica, "first"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while info_field(replica, "aof_last_write_status") != "err" {
            assert!(
                Instant::now() < deadline,
                "the replica's write does not fail"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert_eq!(set(&master, "second", VALUE), ok());
    assert!(wait_for_key(&goes_on, "second"));
    assert!(
        goes_on
            .log_tail()
            .contains("Replica is applying a command even though it is unable to write to disk."),
        "{}",
        goes_on.log_tail()
    );
    // Its clients are refused writes meanwhile, as the master's own would be.
    assert_eq!(
        goes_on
            .cmd(&["CONFIG", "SET", "replica-read-only", "no"])
            .unwrap(),
        ok()
    );
    let refusal = set(&goes_on, "local", "v");
    assert!(
        matches!(&refusal, Reply::Error(e) if e.starts_with("MISCONF Errors writing to the AOF file: ")),
        "{refusal:?}"
    );
    // Its file, once it can be written, holds every write it applied.
    limit_file_size(&goes_on, None);
    let deadline = Instant::now() + Duration::from_secs(10);
    while set(&goes_on, "local", "v") != ok() {
        assert!(Instant::now() < deadline, "writes still refused");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut goes_on = goes_on;
    goes_on.kill();
    goes_on.restart().unwrap();
    assert_before_kept(&goes_on);
    for key in ["first", "second"] {
        assert_eq!(goes_on.cmd(&["GET", key]).unwrap(), bulk(VALUE));
    }

    let deadline = Instant::now() + Duration::from_secs(10);
    while stops.is_running() {
        assert!(Instant::now() < deadline, "the replica goes on");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The crash report follows the reason.
    let log = std::fs::read_to_string(stops.dir().join("server.log")).unwrap();
    assert!(
        log.contains("Guru Meditation: Replica was unable to write command to disk."),
        "{log}"
    );
}
