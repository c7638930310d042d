//! maxmemory on a real redline-server process: used_memory stays at the limit under a
//! writer that fills several times it, each policy evicts the right keys (volatile-*
//! never a key without TTL, noeviction answers OOM), LRU keeps what is used, OBJECT
//! IDLETIME/FREQ read the access data, and evictions reach a redis-server replica as
//! DELs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::Conn;
use redline_resp::Frame;
use redline_testkit::{RedisServer, RedlineServer};

fn server(policy: &str) -> RedlineServer {
    RedlineServer::builder()
        .args([
            "--save",
            "",
            "--enable-debug-command",
            "yes",
            "--maxmemory",
            "8mb",
            "--maxmemory-policy",
            policy,
        ])
        .start()
        .unwrap()
}

fn conn(port: u16) -> Conn {
    Conn::connect(([127, 0, 0, 1], port).into())
}

fn text(frame: &Frame) -> String {
    match frame {
        Frame::Bulk(b) | Frame::Simple(b) | Frame::Error(b) => String::from_utf8_lossy(b).into(),
        Frame::Integer(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

fn info(c: &mut Conn, field: &str) -> u64 {
    let all = text(&c.cmd(&["INFO"]));
    all.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Writes `count` 1 KB values, pipelined, `ttl` seconds each (0: none).
fn fill(c: &mut Conn, prefix: &str, count: usize, ttl: u64) -> usize {
    let value = "v".repeat(1000);
    let mut refused = 0;
    for chunk in (0..count).collect::<Vec<_>>().chunks(100) {
        for i in chunk {
            let key = format!("{prefix}:{i}");
            if ttl > 0 {
                c.send(&["SET", &key, &value, "EX", &ttl.to_string()]);
            } else {
                c.send(&["SET", &key, &value]);
            }
        }
        for _ in chunk {
            if matches!(c.read(), Some(Frame::Error(_))) {
                refused += 1;
            }
        }
    }
    refused
}

#[test]
fn allkeys_lru_stays_at_the_limit_and_keeps_what_is_used() {
    let server = server("allkeys-lru");
    let mut c = conn(server.port());
    // A hot set, read between every batch of writes.
    fill(&mut c, "hot", 200, 0);
    let value = "v".repeat(1000);
    for round in 0..40 {
        for i in 0..200 {
            c.send(&["GET", &format!("hot:{i}")]);
        }
        for _ in 0..200 {
            c.read();
        }
        for i in 0..1000 {
            c.send(&["SET", &format!("cold:{round}:{i}"), &value]);
        }
        for _ in 0..1000 {
            assert!(!matches!(c.read(), Some(Frame::Error(_))));
        }
    }
    let used = info(&mut c, "used_memory");
    assert!(used <= 8 * 1024 * 1024 * 11 / 10, "used_memory {used}");
    assert!(info(&mut c, "evicted_keys") > 20_000);
    let mut hot_left = 0;
    for i in 0..200 {
        if c.cmd(&["EXISTS", &format!("hot:{i}")]) == Frame::Integer(1) {
            hot_left += 1;
        }
    }
    assert!(hot_left >= 180, "only {hot_left} of 200 hot keys left");
}

#[test]
fn volatile_policies_never_evict_keys_without_ttl() {
    for policy in [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let server = server(policy);
        let mut c = conn(server.port());
        fill(&mut c, "keep", 2000, 0);
        let refused = fill(&mut c, "temp", 20_000, 1000);
        assert!(text(&c.cmd(&["DBSIZE"])).parse::<u64>().unwrap() >= 2000);
        for i in (0..2000).step_by(97) {
            assert_eq!(
                c.cmd(&["EXISTS", &format!("keep:{i}")]),
                Frame::Integer(1),
                "{policy} evicted keep:{i}"
            );
        }
        assert!(info(&mut c, "evicted_keys") > 0, "{policy}");
        // Once only keys without TTL are left, writes are refused.
        let refused_more = fill(&mut c, "more", 20_000, 0);
        assert!(refused + refused_more > 0, "{policy} never refused");
    }
}

#[test]
fn noeviction_answers_oom_and_reads_still_work() {
    let server = server("noeviction");
    let mut c = conn(server.port());
    let refused = fill(&mut c, "k", 20_000, 0);
    assert!(refused > 0);
    let reply = c.cmd(&["SET", "one-more", "v"]);
    assert_eq!(
        text(&reply),
        "OOM command not allowed when used memory > 'maxmemory'."
    );
    assert_eq!(c.cmd(&["EXISTS", "k:1"]), Frame::Integer(1));
    assert_eq!(c.cmd(&["DEL", "k:1"]), Frame::Integer(1));
    assert_eq!(info(&mut c, "evicted_keys"), 0);
}

#[test]
fn object_idletime_and_freq_read_the_access_data() {
    let server = server("allkeys-lru");
    let mut c = conn(server.port());
    c.cmd(&["SET", "k", "v"]);
    let dump = c.cmd(&["DUMP", "k"]);
    let Frame::Bulk(payload) = dump else { panic!() };
    let payload = payload.to_vec();
    c.cmd(&[&b"RESTORE"[..], b"r", b"0", &payload, b"IDLETIME", b"1000"]);
    let idle = text(&c.cmd(&["OBJECT", "IDLETIME", "r"]))
        .parse::<u64>()
        .unwrap();
    assert!((1000..=1002).contains(&idle), "{idle}");
    assert!(text(&c.cmd(&["OBJECT", "FREQ", "k"])).starts_with("ERR An LFU"));
    c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]);
    c.cmd(&[&b"RESTORE"[..], b"f", b"0", &payload, b"FREQ", b"100"]);
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "f"]), Frame::Integer(100));
    for _ in 0..50 {
        c.cmd(&["GET", "f"]);
    }
    assert!(
        text(&c.cmd(&["OBJECT", "FREQ", "f"]))
            .parse::<u64>()
            .unwrap()
            >= 100
    );
}

#[test]
fn evictions_reach_a_replica_as_deletions() {
    let master = server("allkeys-random");
    let replica = RedisServer::builder()
        .args([
            "--enable-debug-command",
            "yes",
            "--repl-diskless-sync-delay",
            "0",
            "--replicaof",
            "127.0.0.1",
            &master.port().to_string(),
        ])
        .start()
        .unwrap();
    let mut c = conn(master.port());
    fill(&mut c, "k", 20_000, 0);
    assert!(info(&mut c, "evicted_keys") > 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut r = conn(replica.port());
        if text(&r.cmd(&["DBSIZE"])) == text(&c.cmd(&["DBSIZE"]))
            && text(&r.cmd(&["DEBUG", "DIGEST"])) == text(&c.cmd(&["DEBUG", "DIGEST"]))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "replica never matched the master"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
