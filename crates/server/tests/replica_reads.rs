//! Reads from a replica right after a write's reply, with real redis-server 7.0
//! processes on either side. A binary of its own: the check is about timing, and the
//! replication tests' writers running beside it would make every task late.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{conn, info_field, wait_until};
use redline_resp::Frame;
use redline_testkit::{RedisServer, RedlineServer};

/// The checks here are about timing: they take turns, not to make each other late.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Of `rounds` SETs on `master`, each followed, once its reply is in, by a GET of the
/// key on `replica` (one client), the rounds whose GET found the replica without it.
fn stale_replica_reads(master: u16, replica: u16, rounds: usize) -> Vec<usize> {
    conn(replica).cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
    let (mut m, mut r) = (conn(master), conn(replica));
    m.cmd(&["SET", "k", "start"]);
    wait_until("the replica's first copy", || {
        conn(replica).cmd(&["GET", "k"]) == Frame::Bulk("start".into())
    });
    (0..rounds)
        .filter(|round| {
            let value = round.to_string();
            m.cmd(&["SET", "k", &value]);
            r.cmd(&["GET", "k"]) != Frame::Bulk(value.into())
        })
        .collect()
}

fn redline() -> RedlineServer {
    RedlineServer::builder()
        .args(["--save", ""])
        .start()
        .unwrap()
}

/// A read on a replica right after its master acknowledged a write nearly always finds
/// the write, as with redis-server (Redis promises it only after WAIT): redline-server's
/// master hands its stream to the replicas' links before the reply goes out, and its
/// replica applies the stream that reached it before a client's later command. Release
/// builds measured 0 stale reads in 36,000 rounds with a redline master, 3 in 18,000
/// with a redis-server master, as redis-server's own pair gave 6 (bench/NOTES.md, stop
/// 73; 7 to 25 in 3,000 before). A debug build's tasks can be late by milliseconds on a
/// loaded machine, and a late task makes a run of stale reads, so this check is loose:
/// it catches a replica that routinely serves reads from behind its master, and the
/// figures above are the measurement. (The long runs of stale reads once put down to
/// late tasks were mostly a redis-server master holding its stream after the sync: see
/// the next check.)
#[test]
fn a_read_on_the_replica_after_the_write_s_reply_nearly_always_finds_the_write() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let most = 100; // of 500 rounds
    let (master, replica) = (redline(), redline());
    let stale = stale_replica_reads(master.port(), replica.port(), 500);
    assert!(stale.len() <= most, "redline to redline: {stale:?}");
    let (master, replica) = (RedisServer::start().unwrap(), redline());
    let stale = stale_replica_reads(master.port(), replica.port(), 500);
    assert!(stale.len() <= most, "redis-server to redline: {stale:?}");
    let (master, replica) = (redline(), RedisServer::start().unwrap());
    let stale = stale_replica_reads(master.port(), replica.port(), 500);
    assert!(stale.len() <= most, "redline to redis-server: {stale:?}");
}

/// After each full sync from a redis-server master that sends its image disk-less (the
/// 7.0 default), a write on the master reaches the replica at once. Such a master
/// starts the stream on an ACK that finds its image's child exited; the replica's first
/// ACK can come before, and with only the ACK a second the master held every write for
/// about a second while the replica said its link was up (1 sync in 20 to 30 on this
/// machine, and a CI run where all 500 reads of the check above were stale). The
/// replica now ACKs at doubling gaps (5 to 320 ms) until the stream's first byte.
/// 500 ms is far above a write's way (well under a millisecond) and half the held
/// second.
#[test]
fn writes_reach_the_replica_at_once_after_each_disk_less_full_sync_from_redis_server() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let masters = [RedisServer::start().unwrap(), RedisServer::start().unwrap()];
    let replica = redline();
    // Each move to the other master is a full sync: their histories differ.
    for round in 0..40 {
        let master = masters[round % 2].port();
        conn(replica.port()).cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
        wait_until("the sync", || {
            info_field(replica.port(), "master_link_status") == "up"
                && info_field(replica.port(), "master_port") == master.to_string()
        });
        let value = round.to_string();
        conn(master).cmd(&["SET", "k", &value]);
        let written = Instant::now();
        let mut r = conn(replica.port());
        while r.cmd(&["GET", "k"]) != Frame::Bulk(value.clone().into()) {
            assert!(
                written.elapsed() < Duration::from_millis(500),
                "sync {round}: the write is not on the replica 500 ms later"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}
