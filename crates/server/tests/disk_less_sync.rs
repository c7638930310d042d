//! A master's disk-less full syncs (`repl-diskless-sync yes`, Redis 7.0's default),
//! redline-server and redis-server 7.0 side by side as the master:
//!
//! - replicas that ask within `repl-diskless-sync-delay` share one image (one fork, or
//!   one cut here), are listed as `wait_bgsave` meanwhile, and start as soon as
//!   `repl-diskless-sync-max-replicas` of them wait;
//! - a replica that stops reading its image is dropped after `repl-timeout`, with
//!   Redis's log line, and the image still reaches the other one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{conn, info_field as field, info_text as info, wait_until, AnyServer};
use redline_resp::Frame;
use redline_testkit::RedisServer;

const MASTER_ARGS: [&str; 6] = [
    "--enable-debug-command",
    "yes",
    "--repl-diskless-sync",
    "yes",
    "--rdbcompression",
    "no",
];

fn ours() -> AnyServer {
    let args: Vec<&str> = MASTER_ARGS.iter().copied().chain(["--save", ""]).collect();
    AnyServer::redline(&args)
}

fn theirs() -> AnyServer {
    AnyServer::redis(&MASTER_ARGS)
}

fn replica() -> RedisServer {
    RedisServer::builder().start().unwrap()
}

#[test]
fn replicas_asking_within_the_delay_share_one_image_like_redis() {
    for master in [ours(), theirs()] {
        let mut m = conn(master.port);
        m.ok(&["DEBUG", "POPULATE", "1000", "key", "100"]);
        m.ok(&["CONFIG", "SET", "repl-diskless-sync-delay", "2"]);
        m.ok(&["CONFIG", "SET", "repl-diskless-sync-max-replicas", "0"]);
        let forks = field(master.port, "total_forks").parse::<u64>().unwrap();
        let (a, b) = (replica(), replica());
        for r in [&a, &b] {
            conn(r.port()).ok(&["REPLICAOF", "127.0.0.1", &master.port.to_string()]);
        }
        // Both wait for the delay, listed as waiting for the image.
        wait_until("two replicas waiting", || {
            let info = info(master.port);
            info.contains("connected_slaves:2") && info.matches("state=wait_bgsave").count() == 2
        });
        for r in [&a, &b] {
            wait_until("the sync", || field(r.port(), "master_link_status") == "up");
            assert_eq!(conn(r.port()).cmd(&["DBSIZE"]), Frame::Integer(1000));
        }
        let forks_now = field(master.port, "total_forks").parse::<u64>().unwrap();
        assert_eq!(forks_now, forks + 1, "one image for both replicas");
        assert!(
            (master.log)()
                .contains("Diskless rdb transfer, done reading from pipe, 2 replicas still up"),
            "{}",
            (master.log)()
        );

        // With max-replicas reached, the image starts without waiting for the delay.
        m.ok(&["CONFIG", "SET", "repl-diskless-sync-delay", "60"]);
        m.ok(&["CONFIG", "SET", "repl-diskless-sync-max-replicas", "1"]);
        let c = replica();
        let started = Instant::now();
        conn(c.port()).ok(&["REPLICAOF", "127.0.0.1", &master.port.to_string()]);
        wait_until("the third sync", || {
            field(c.port(), "master_link_status") == "up"
        });
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}

/// A replica that asks for a disk-less sync and then reads nothing (PSYNC once the
/// REPLCONF reply is read: Redis refuses a PSYNC with replies pending).
fn silent_replica(master: u16) -> TcpStream {
    let mut socket = TcpStream::connect(("127.0.0.1", master)).unwrap();
    socket
        .write_all(b"*3\r\n$8\r\nREPLCONF\r\n$4\r\ncapa\r\n$3\r\neof\r\n")
        .unwrap();
    let mut ok = [0u8; 5];
    socket.read_exact(&mut ok).unwrap();
    assert_eq!(&ok, b"+OK\r\n");
    socket
        .write_all(b"*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n")
        .unwrap();
    socket
}

#[test]
fn a_replica_that_stops_reading_its_image_is_dropped_after_repl_timeout_like_redis() {
    for master in [ours(), theirs()] {
        let mut m = conn(master.port);
        // 40 MB of image: more than the sockets' buffers hold.
        m.ok(&["DEBUG", "POPULATE", "4000", "key", "10000"]);
        m.ok(&["CONFIG", "SET", "repl-diskless-sync-delay", "1"]);
        m.ok(&["CONFIG", "SET", "repl-timeout", "2"]);
        let _silent = silent_replica(master.port);
        let reader = replica();
        conn(reader.port()).ok(&["REPLICAOF", "127.0.0.1", &master.port.to_string()]);
        wait_until("the timeout", || {
            (master.log)().contains("Disconnecting timedout replica (full sync)")
        });
        wait_until("the other replica's sync", || {
            field(reader.port(), "master_link_status") == "up"
        });
        assert_eq!(conn(reader.port()).cmd(&["DBSIZE"]), Frame::Integer(4000));
    }
}

#[test]
fn flushall_during_an_image_stops_it_and_the_replica_syncs_again_like_redis() {
    for master in [ours(), theirs()] {
        let mut m = conn(master.port);
        m.ok(&["DEBUG", "POPULATE", "1000", "key", "100"]);
        m.ok(&["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
        // 20 ms a key: the image would take 20 s.
        m.ok(&["CONFIG", "SET", "rdb-key-save-delay", "20000"]);
        let r = replica();
        conn(r.port()).ok(&["REPLICAOF", "127.0.0.1", &master.port.to_string()]);
        wait_until("the image to start", || {
            field(master.port, "rdb_bgsave_in_progress") == "1"
        });
        let started = Instant::now();
        m.ok(&["FLUSHALL"]);
        m.ok(&["SET", "after", "flush"]);
        wait_until("the second sync", || {
            field(r.port(), "master_link_status") == "up"
        });
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the first image ran to its end"
        );
        wait_until("the write after FLUSHALL", || {
            conn(r.port()).cmd(&["DBSIZE"]) == Frame::Integer(1)
        });
        assert_eq!(
            conn(r.port()).cmd(&["GET", "after"]),
            Frame::Bulk(bytes::Bytes::from_static(b"flush"))
        );
        let log = (master.log)();
        assert_eq!(
            log.matches("Background RDB transfer started by pid")
                .count(),
            2,
            "{log}"
        );
    }
}
