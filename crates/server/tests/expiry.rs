//! Expiry: the active cycle reclaims keys nobody touches (DBSIZE falls), and ordinary
//! commands never pay for keys with a TTL (the expiry counters only move with cycles).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{field_of, text, Conn, Redline};
use redline_resp::Frame;

fn int(frame: Frame) -> i64 {
    match frame {
        Frame::Integer(n) => n,
        other => panic!("expected an integer, got {other:?}"),
    }
}

#[test]
fn active_cycle_reclaims_keys_without_access() {
    let redline = Redline::start_with(&["--hz", "100"]);
    let mut conn = Conn::connect(redline.addr);
    let before = redline.shared.store.expiry_stats();
    for i in 0..2000 {
        conn.send(&["SET", &format!("temp:{i}"), "v", "PX", "30"]);
    }
    for i in 0..10 {
        conn.send(&["SET", &format!("keep:{i}"), "v"]);
    }
    for _ in 0..2010 {
        conn.read().unwrap();
    }
    // Only DBSIZE from here on: no expiring key is ever read.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let size = int(conn.cmd(&["DBSIZE"]));
        if size == 10 {
            break;
        }
        assert!(Instant::now() < deadline, "DBSIZE stuck at {size}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = redline.shared.store.expiry_stats();
    assert!(
        after.expired - before.expired >= 2000,
        "{before:?} -> {after:?}"
    );
    assert!(after.sampled >= after.expired);
    assert_eq!(int(conn.cmd(&["EXISTS", "keep:0", "keep:9"])), 2);
}

#[test]
fn commands_do_not_scan_ttl_keys() {
    let redline = Redline::start_with(&["--hz", "1", "--shards", "16"]);
    let mut conn = Conn::connect(redline.addr);
    // 20,000 keys with a distant TTL: nothing expires during the test.
    for chunk in 0..20 {
        for i in 0..1000 {
            conn.send(&["SET", &format!("ttl:{chunk}:{i}"), "v", "EX", "100000"]);
        }
        for _ in 0..1000 {
            conn.read().unwrap();
        }
    }
    let start = Instant::now();
    let before = redline.shared.store.expiry_stats();
    for _ in 0..20 {
        for _ in 0..500 {
            conn.send(&["INCR", "counter"]);
        }
        for _ in 0..500 {
            conn.read().unwrap();
        }
    }
    let after = redline.shared.store.expiry_stats();
    // Each active cycle samples at most 20 keys per shard when none expire; at hz 1 at
    // most a couple of cycles ran. 10,000 INCRs added nothing of their own.
    let cycles = start.elapsed().as_secs() + 2;
    let bound = 20 * 16 * cycles;
    assert!(
        after.sampled - before.sampled <= bound,
        "sampled {} > {bound}",
        after.sampled - before.sampled
    );
    assert_eq!(after.expired, before.expired);
    assert_eq!(int(conn.cmd(&["GET", "counter"]).into_int()), 10_000);
}

trait IntoInt {
    fn into_int(self) -> Frame;
}

impl IntoInt for Frame {
    /// GET returns the counter as a bulk string; turn it into an integer frame.
    fn into_int(self) -> Frame {
        match self {
            Frame::Bulk(b) => Frame::Integer(String::from_utf8_lossy(&b).parse().unwrap()),
            other => other,
        }
    }
}

/// `DEBUG SET-ACTIVE-EXPIRE 0` stops the background cycle (the Redis test suite relies
/// on it): expired keys stay counted by DBSIZE until accessed; `1` resumes reclaiming.
#[test]
fn debug_set_active_expire_switches_the_cycle() {
    let redline = Redline::start_with(&["--hz", "100"]);
    let mut conn = Conn::connect(redline.addr);
    assert_eq!(
        conn.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
        redline_resp::Frame::Simple("OK".into())
    );
    for i in 0..100 {
        conn.cmd(&["SET", &format!("temp:{i}"), "v", "PX", "10"]);
    }
    std::thread::sleep(Duration::from_millis(300));
    // 30 cycles at hz 100 have passed: none ran.
    assert_eq!(int(conn.cmd(&["DBSIZE"])), 100);
    assert_eq!(redline.shared.store.expiry_stats().sampled, 0);
    conn.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while int(conn.cmd(&["DBSIZE"])) != 0 {
        assert!(Instant::now() < deadline, "not reclaimed after re-enabling");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A transaction judges expiry at one instant, EXEC's start, on both servers: a key
/// that expires while EXEC runs (DEBUG SLEEP inside it) is still there for the
/// transaction's last command.
#[test]
fn a_transaction_sees_no_key_expire_half_way_like_redis() {
    let redis = redline_testkit::RedisServer::builder()
        .args(["--enable-debug-command", "yes"])
        .start()
        .unwrap();
    let redline = Redline::start();
    for addr in [redis.addr(), redline.addr] {
        let mut c = Conn::connect(addr);
        c.cmd(&["SET", "k", "v", "PX", "150"]);
        c.cmd(&["MULTI"]);
        c.cmd(&["GET", "k"]);
        c.cmd(&["DEBUG", "SLEEP", "0.3"]);
        c.cmd(&["GET", "k"]);
        c.cmd(&["PTTL", "k"]);
        let Frame::Array(replies) = c.cmd(&["EXEC"]) else {
            panic!("EXEC on {addr}");
        };
        let value = Frame::Bulk("v".into());
        assert_eq!(replies[0], value, "{addr}");
        assert_eq!(replies[2], value, "{addr}");
        // The remaining time is read from the running clock, as Redis 7.0 reads it.
        assert_eq!(replies[3], Frame::Integer(0), "{addr}");
        // After EXEC, the clock runs again.
        assert_eq!(c.cmd(&["GET", "k"]), Frame::NullBulk, "{addr}");
    }
}

/// INFO's figures of the active cycle, as facts (their values depend on timing): a
/// burst of keys expiring unread raises `expired_stale_perc`, the cycles' time adds up
/// in `expire_cycle_cpu_milliseconds`, and CONFIG RESETSTAT clears them; as on
/// redis-server.
fn expire_cycle_figures(addr: std::net::SocketAddr) -> Vec<String> {
    let mut conn = Conn::connect(addr);
    let field = |conn: &mut Conn, name: &str| -> f64 {
        let info = text(&conn.cmd(&["INFO", "stats"]));
        field_of(&info, name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let mut seen = vec![format!(
        "at start: stale {}",
        field(&mut conn, "expired_stale_perc")
    )];
    for i in 0..20_000 {
        conn.send(&["SET", &format!("temp:{i}"), "v", "PX", "20"]);
    }
    for _ in 0..20_000 {
        conn.read().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while field(&mut conn, "expired_keys") < 20_000.0 {
        assert!(Instant::now() < deadline, "the cycle expires the burst");
        std::thread::sleep(Duration::from_millis(20));
    }
    seen.push(format!(
        "after the burst: stale above 0 {}, cycles' time counted {}",
        field(&mut conn, "expired_stale_perc") > 0.0,
        field(&mut conn, "expire_cycle_cpu_milliseconds") >= 0.0,
    ));
    conn.cmd(&["CONFIG", "RESETSTAT"]);
    seen.push(format!(
        "reset: stale {}, capped {}",
        field(&mut conn, "expired_stale_perc"),
        field(&mut conn, "expired_time_cap_reached_count")
    ));
    seen
}

#[test]
fn expire_cycle_figures_match_redis() {
    let redis = redline_testkit::RedisServer::builder()
        .args(["--hz", "100"])
        .start()
        .unwrap();
    let redline = Redline::start_with(&["--hz", "100"]);
    assert_eq!(
        expire_cycle_figures(redline.addr),
        expire_cycle_figures(redis.addr())
    );
}
