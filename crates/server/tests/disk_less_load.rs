//! A replica's disk-less load (`repl-diskless-load swapdb`), redline-server and
//! redis-server 7.0 side by side as replicas of one redis-server master whose image is
//! slowed down (`rdb-key-save-delay`):
//!
//! - an image of another history is loaded beside the dataset while clients get
//!   LOADING (INFO `loading:1`); the link dropped halfway leaves the old dataset; a
//!   sync that completes replaces it;
//! - a newer image of the same history (the replica synced before, then fell out of
//!   the backlog) is loaded while the old dataset and its functions are still served
//!   (INFO `async_loading:1`), and only the commands flagged `no-async-loading` and the
//!   configs a load depends on get LOADING; a dropped link leaves the old dataset, a
//!   completed sync swaps the new one in, its functions with it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{conn, text, wait_until, Conn};
use redline_resp::Frame;
use redline_testkit::{RedisServer, RedlineServer};

fn info_field(port: u16, name: &str) -> String {
    let info = text(&conn(port).cmd(&["INFO"]));
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A redis-server master with 1,000 keys of 100 KB, sending its image disk-less. A
/// loading redis-server replica answers between 2 MB of its load: 20 keys here.
fn master() -> RedisServer {
    let master = RedisServer::builder()
        .args([
            "--enable-debug-command",
            "yes",
            "--repl-diskless-sync",
            "yes",
            "--repl-diskless-sync-delay",
            "0",
            "--rdbcompression",
            "no",
        ])
        .start()
        .unwrap();
    let mut m = conn(master.port());
    m.ok(&["DEBUG", "POPULATE", "1000", "master", "100000"]);
    master
}

/// Runs `scenario(master, replica)` with a redline-server replica, then a redis-server
/// one, each with a fresh master and `repl-diskless-load swapdb`.
fn on_both_replicas(scenario: impl Fn(u16, u16)) {
    let args = [
        "--enable-debug-command",
        "yes",
        "--save",
        "",
        "--repl-diskless-load",
        "swapdb",
    ];
    let theirs_master = master();
    let ours = RedlineServer::builder().args(args).start().unwrap();
    eprintln!("replica: redline-server");
    scenario(theirs_master.port(), ours.port());
    drop((ours, theirs_master));
    let theirs_master = master();
    let theirs = RedisServer::builder().args(args).start().unwrap();
    eprintln!("replica: redis-server");
    scenario(theirs_master.port(), theirs.port());
}

/// Slows the master's next images down to 10 ms a key (10 s for the 1,000 keys).
fn slow_images(m: &mut Conn) {
    m.ok(&["CONFIG", "SET", "rdb-key-save-delay", "10000"]);
}

/// Drops the replica's link while its load runs (the next sync waits 5 s), then
/// lets the sync after it run at full speed.
fn drop_the_sync(m: &mut Conn, replica: u16, flag: &str) {
    m.ok(&["CONFIG", "SET", "repl-diskless-sync-delay", "5"]);
    m.ok(&["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    m.cmd(&["CLIENT", "KILL", "TYPE", "replica"]);
    wait_until("the load to stop", || info_field(replica, flag) == "0");
}

#[test]
fn an_image_of_another_history_loads_beside_the_data_like_redis() {
    on_both_replicas(|master, replica| {
        let (mut m, mut r) = (conn(master), conn(replica));
        r.ok(&["DEBUG", "POPULATE", "200", "slave", "10"]);
        r.ok(&["SET", "mykey", "myvalue"]);
        slow_images(&mut m);
        r.ok(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
        wait_until("the replica to load", || {
            info_field(replica, "loading") == "1"
        });
        assert_eq!(info_field(replica, "async_loading"), "0");
        let refused = text(&r.cmd(&["GET", "mykey"]));
        assert!(refused.starts_with("LOADING"), "{refused}");

        drop_the_sync(&mut m, replica, "loading");
        assert_eq!(text(&r.cmd(&["GET", "mykey"])), "myvalue");
        assert_eq!(r.cmd(&["DBSIZE"]), Frame::Integer(201));

        m.ok(&["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
        wait_until("the sync", || {
            info_field(replica, "master_link_status") == "up"
        });
        assert_eq!(r.cmd(&["GET", "mykey"]), Frame::NullBulk);
        assert_eq!(r.cmd(&["DBSIZE"]), Frame::Integer(1000));
    });
}

#[test]
fn a_newer_image_of_the_same_history_loads_while_the_old_data_is_served_like_redis() {
    on_both_replicas(|master, replica| {
        let (mut m, mut r) = (conn(master), conn(replica));
        r.ok(&["CONFIG", "SET", "replica-read-only", "no"]);
        r.ok(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
        wait_until("the first sync", || {
            info_field(replica, "master_link_status") == "up"
        });
        r.ok(&["DEBUG", "POPULATE", "100", "slave", "10"]);
        r.ok(&["SET", "mykey", "myvalue"]);
        let library = |version: &str| {
            format!("#!lua name=test\nredis.register_function('test', function() return '{version}' end)")
        };
        assert_eq!(
            text(&r.cmd(&["FUNCTION", "LOAD", &library("hello1")])),
            "test"
        );
        assert_eq!(
            text(&m.cmd(&["FUNCTION", "LOAD", &library("hello2")])),
            "test"
        );
        // Out of the backlog: the replica's PSYNC gets a full sync of the same history.
        m.ok(&["MULTI"]);
        m.cmd(&["CLIENT", "KILL", "TYPE", "replica"]);
        m.cmd(&["CONFIG", "SET", "repl-backlog-size", "16384"]);
        let big = "A".repeat(16384);
        for i in 0..10 {
            m.cmd(&["SET", &format!("{i} string_{i}"), &big]);
        }
        assert!(matches!(m.cmd(&["EXEC"]), Frame::Array(_)));
        slow_images(&mut m);
        wait_until("the replica to load asynchronously", || {
            info_field(replica, "async_loading") == "1"
        });
        assert_eq!(info_field(replica, "loading"), "0");
        assert_eq!(text(&r.cmd(&["GET", "mykey"])), "myvalue");
        assert_eq!(text(&r.cmd(&["FCALL", "test", "0"])), "hello1");
        assert_eq!(r.cmd(&["DBSIZE"]), Frame::Integer(1101));
        for denied in [
            &["CONFIG", "SET", "appendonly", "no"][..],
            &["REPLICAOF", "NO", "ONE"],
        ] {
            let reply = text(&r.cmd(denied));
            assert!(reply.starts_with("LOADING"), "{denied:?}: {reply}");
        }
        assert_eq!(info_field(replica, "async_loading"), "1");

        drop_the_sync(&mut m, replica, "async_loading");
        assert_eq!(text(&r.cmd(&["GET", "mykey"])), "myvalue");
        assert_eq!(text(&r.cmd(&["FCALL", "test", "0"])), "hello1");
        assert_eq!(r.cmd(&["DBSIZE"]), Frame::Integer(1101));

        m.ok(&["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
        wait_until("the sync", || {
            info_field(replica, "master_link_status") == "up"
        });
        assert_eq!(r.cmd(&["GET", "mykey"]), Frame::NullBulk);
        assert_eq!(text(&r.cmd(&["FCALL", "test", "0"])), "hello2");
        assert_eq!(r.cmd(&["DBSIZE"]), Frame::Integer(1010));
    });
}
