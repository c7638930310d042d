//! A master's disk-based full syncs (`repl-diskless-sync no`), redline-server and
//! redis-server 7.0 side by side as the master, redis-server replicas:
//!
//! - the image is a BGSAVE into the dump file: replicas that ask while it runs share
//!   it (one fork, or one cut here), and once written it is the dump file (LASTSAVE
//!   moves);
//! - a replica that asks during a BGSAVE it cannot join waits for the next one;
//! - the BGSAVE stops when the last replica waiting for it leaves, unless save points
//!   are set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{conn, info_field as field, info_text as info, wait_until, AnyServer};
use redline_resp::Frame;
use redline_testkit::RedisServer;

fn number(port: u16, name: &str) -> u64 {
    field(port, name).parse().unwrap()
}

fn lastsave(port: u16) -> i64 {
    match conn(port).cmd(&["LASTSAVE"]) {
        Frame::Integer(n) => n,
        other => panic!("LASTSAVE: {other:?}"),
    }
}

const MASTER_ARGS: [&str; 6] = [
    "--enable-debug-command",
    "yes",
    "--repl-diskless-sync",
    "no",
    "--save",
    "",
];

fn ours() -> AnyServer {
    AnyServer::redline(&MASTER_ARGS)
}

fn theirs() -> AnyServer {
    AnyServer::redis(&MASTER_ARGS)
}

fn replica() -> RedisServer {
    RedisServer::builder().start().unwrap()
}

fn follow(replica: &RedisServer, master: u16) {
    conn(replica.port()).ok(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
}

fn leave(replica: &RedisServer) {
    conn(replica.port()).ok(&["REPLICAOF", "NO", "ONE"]);
}

fn waiting_replicas(master: u16) -> usize {
    info(master).matches("state=wait_bgsave").count()
}

fn dump_file(master: u16) -> std::path::PathBuf {
    let get = |name: &str| match conn(master).cmd(&["CONFIG", "GET", name]) {
        Frame::Array(items) => match &items[1] {
            Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("CONFIG GET {name}: {other:?}"),
        },
        other => panic!("CONFIG GET {name}: {other:?}"),
    };
    std::path::Path::new(&get("dir")).join(get("dbfilename"))
}

#[test]
fn replicas_share_the_bgsave_that_becomes_the_dump_file_like_redis() {
    for master in [ours(), theirs()] {
        let port = master.port;
        let mut m = conn(port);
        m.ok(&["DEBUG", "POPULATE", "1000", "key", "100"]);
        // 1,000 keys at 2 ms each: the image takes about 2 s.
        m.ok(&["CONFIG", "SET", "rdb-key-save-delay", "2000"]);
        let forks = number(port, "total_forks");
        let saved_before = lastsave(port);
        let (a, b) = (replica(), replica());
        follow(&a, port);
        wait_until("the first replica's BGSAVE", || {
            field(port, "rdb_bgsave_in_progress") == "1" && waiting_replicas(port) == 1
        });
        follow(&b, port);
        wait_until("both replicas waiting for it", || {
            waiting_replicas(port) == 2
        });
        assert_eq!(field(port, "rdb_bgsave_in_progress"), "1");
        for r in [&a, &b] {
            wait_until("the sync", || field(r.port(), "master_link_status") == "up");
            assert_eq!(conn(r.port()).cmd(&["DBSIZE"]), Frame::Integer(1000));
        }
        assert_eq!(number(port, "total_forks"), forks + 1, "one image for both");
        assert!((master.log)().contains("Waiting for end of BGSAVE for SYNC"));
        // The image is a save: the dump file, and LASTSAVE moved.
        assert!(lastsave(port) > saved_before);
        assert_eq!(field(port, "rdb_last_bgsave_status"), "ok");
        assert!(dump_file(port).exists());

        // During a BGSAVE of its own, a replica waits for the next one.
        m.ok(&["SET", "after", "1"]);
        assert_eq!(
            m.cmd(&["BGSAVE"]),
            Frame::Simple("Background saving started".into())
        );
        let c = replica();
        follow(&c, port);
        wait_until("the third replica waiting", || waiting_replicas(port) == 1);
        wait_until("the third sync", || {
            field(c.port(), "master_link_status") == "up"
        });
        assert_eq!(conn(c.port()).cmd(&["DBSIZE"]), Frame::Integer(1001));
        assert_eq!(
            number(port, "total_forks"),
            forks + 3,
            "BGSAVE, then the next"
        );
        assert!((master.log)().contains("Waiting for next BGSAVE for SYNC"));
    }
}

#[test]
fn the_bgsave_stops_when_no_replica_waits_unless_save_points_want_it_like_redis() {
    for master in [ours(), theirs()] {
        let port = master.port;
        let mut m = conn(port);
        m.ok(&["DEBUG", "POPULATE", "10"]);
        // 10 keys at 1 s each.
        m.ok(&["CONFIG", "SET", "rdb-key-save-delay", "1000000"]);
        let (a, b) = (replica(), replica());
        for save in ["", "900 1"] {
            m.ok(&["CONFIG", "SET", "save", save]);
            follow(&a, port);
            follow(&b, port);
            wait_until("both replicas waiting for the BGSAVE", || {
                field(port, "rdb_bgsave_in_progress") == "1" && waiting_replicas(port) == 2
            });
            leave(&a);
            std::thread::sleep(Duration::from_millis(200));
            assert_eq!(
                field(port, "rdb_bgsave_in_progress"),
                "1",
                "the other replica still waits"
            );
            leave(&b);
            if save.is_empty() {
                wait_until("the BGSAVE to stop", || {
                    field(port, "rdb_bgsave_in_progress") == "0"
                });
            } else {
                std::thread::sleep(Duration::from_millis(300));
                assert_eq!(
                    field(port, "rdb_bgsave_in_progress"),
                    "1",
                    "a save the save points want goes on"
                );
            }
        }
    }
}
