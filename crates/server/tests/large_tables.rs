//! Tables large enough that their hash indexes are replaced many times (a shard's keys,
//! its TTL index, a large hash, set and sorted set), written and deleted while their
//! positions move to the new index: each server must end holding the same thing, and
//! every reply along the way must be the same (`store::incremental_map`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{show, Conn, Redline};
use redline_resp::Frame;
use redline_testkit::RedisServer;

/// A small deterministic generator, so both servers get the same commands.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// The commands: first mostly additions, so the tables grow through many index
/// replacements; then mostly removals sweeping every name, so they shrink through
/// more (with nothing added, the entries swapped into holes are the ones still in the
/// old index). TTLs set and cleared, and reads, throughout.
fn commands(count: usize) -> Vec<Vec<String>> {
    const NAMES: u64 = 12_000;
    let mut rng = Lcg(76);
    let mut sweep = 0u64;
    let mut out = Vec::with_capacity(count);
    for at in 0..count {
        let mut n = rng.below(NAMES);
        let mut pick = rng.below(16);
        if at >= count / 2 && rng.below(8) != 0 {
            // 7919 is prime to NAMES: the sweep visits every name.
            n = (sweep / 4 * 7919) % NAMES;
            pick = [5, 10, 12, 14][(sweep % 4) as usize];
            sweep += 1;
        }
        let key = format!("key:{n}");
        let command: Vec<String> = match pick {
            0..=3 => vec!["SET".into(), key, format!("v{n}")],
            4 => vec!["SET".into(), key, "t".into(), "PX".into(), "9000000".into()],
            5 => vec!["DEL".into(), key],
            6 => vec!["PERSIST".into(), key],
            7 => vec!["GET".into(), key],
            8 | 9 => vec![
                "HSET".into(),
                "big:h".into(),
                format!("f{n}"),
                format!("{n}"),
            ],
            10 => vec!["HDEL".into(), "big:h".into(), format!("f{n}")],
            11 => vec!["SADD".into(), "big:s".into(), format!("m{n}")],
            12 => vec!["SREM".into(), "big:s".into(), format!("m{n}")],
            13 => vec![
                "ZADD".into(),
                "big:z".into(),
                format!("{n}"),
                format!("m{n}"),
            ],
            14 => vec!["ZREM".into(), "big:z".into(), format!("m{n}")],
            _ => vec!["HGET".into(), "big:h".into(), format!("f{n}")],
        };
        out.push(command);
    }
    out
}

/// Sends `commands` in pipelined batches; returns every reply, shown.
fn run(conn: &mut Conn, commands: &[Vec<String>]) -> Vec<String> {
    let mut replies = Vec::with_capacity(commands.len());
    for batch in commands.chunks(500) {
        for command in batch {
            conn.send(command);
        }
        for _ in batch {
            replies.push(show(&conn.read().expect("a reply")));
        }
    }
    replies
}

/// What the server holds, in an order that does not depend on its tables.
fn holdings(conn: &mut Conn) -> Vec<String> {
    let sorted = |frame: Frame| {
        let mut items: Vec<String> = match frame {
            Frame::Array(items) => items.iter().map(show).collect(),
            other => vec![show(&other)],
        };
        items.sort();
        items.join(" ")
    };
    let keyspace = show(&conn.cmd(&["INFO", "keyspace"]));
    let db0 = keyspace
        .split(['\r', '\n'])
        .find(|line| line.starts_with("db0:"))
        .map(|line| line.split(",avg_ttl").next().unwrap_or(line).to_string())
        .unwrap_or_default();
    // Every name ever written, looked up through the indexes (the listings above walk
    // positions, not the indexes).
    let lookups: Vec<Vec<String>> = (0..12_000)
        .flat_map(|n| {
            [
                vec!["EXISTS".into(), format!("key:{n}")],
                vec!["HEXISTS".into(), "big:h".into(), format!("f{n}")],
                vec!["SISMEMBER".into(), "big:s".into(), format!("m{n}")],
                vec!["ZSCORE".into(), "big:z".into(), format!("m{n}")],
            ]
        })
        .collect();
    let found = run(conn, &lookups).join(" ");
    vec![
        found,
        db0,
        show(&conn.cmd(&["DBSIZE"])),
        sorted(conn.cmd(&["KEYS", "*"])),
        sorted(conn.cmd(&["HGETALL", "big:h"])),
        sorted(conn.cmd(&["SMEMBERS", "big:s"])),
        show(&conn.cmd(&["ZRANGE", "big:z", "0", "-1", "WITHSCORES"])),
    ]
}

#[test]
fn large_tables_hold_what_redis_holds() {
    let commands = commands(150_000);
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let mut results = Vec::new();
    for addr in [redis.addr(), redline.addr] {
        let mut conn = Conn::connect(addr);
        let replies = run(&mut conn, &commands);
        results.push((replies, holdings(&mut conn)));
    }
    let (redis_replies, redis_holds) = &results[0];
    let (redline_replies, redline_holds) = &results[1];
    for (at, (a, b)) in redis_replies.iter().zip(redline_replies).enumerate() {
        assert_eq!(a, b, "reply {at} to {:?}", commands[at]);
    }
    assert_ne!(redis_holds[1], show(&Frame::Integer(0)), "nothing was kept");
    for (a, b) in redis_holds.iter().zip(redline_holds) {
        assert_eq!(a, b);
    }
}
