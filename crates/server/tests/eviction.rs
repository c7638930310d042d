//! maxmemory on a real redline-server process: used_memory stays at the limit under a
//! writer that fills several times it, each policy evicts the right keys (volatile-*
//! never a key without TTL, noeviction answers OOM), LRU keeps what is used, OBJECT
//! IDLETIME/FREQ read the access data, evictions reach a redis-server replica as
//! DELs, and the invalidations an eviction sends to tracking clients do not drive
//! eviction on (redis-server and redline-server side by side).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{conn, field_of, info, text, wait_until, Conn};
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

/// A redline-server without persistence, with `args` added.
fn plain(args: &[&str]) -> RedlineServer {
    RedlineServer::builder()
        .args(["--save", ""])
        .args(args.iter().copied())
        .start()
        .unwrap()
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

/// A replica over its `maxmemory` keeps every key its master sends while
/// `replica-ignore-maxmemory` is on (the default), whatever its clients read; turned off,
/// their commands evict. redis-server and redline-server replicas side by side.
#[test]
fn a_replica_leaves_maxmemory_to_its_master_like_redis() {
    let master = plain(&[]);
    let mut m = conn(master.port());
    fill(&mut m, "k", 3000, 0);
    let master_port = master.port().to_string();
    let replica_args = [
        "--save",
        "",
        "--maxmemory",
        "1mb",
        "--maxmemory-policy",
        "allkeys-lru",
        "--replicaof",
        "127.0.0.1",
        &master_port,
    ];
    let theirs = RedisServer::builder().args(replica_args).start().unwrap();
    let ours = RedlineServer::builder().args(replica_args).start().unwrap();
    for port in [theirs.port(), ours.port()] {
        let mut r = conn(port);
        wait_until("the replica's sync", || {
            text(&conn(port).cmd(&["DBSIZE"])) == "3000"
        });
        for i in 0..50 {
            r.cmd(&["GET", &format!("k:{i}")]);
        }
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(text(&r.cmd(&["DBSIZE"])), "3000", "port {port}");
        assert_eq!(info(&mut r, "evicted_keys"), 0, "port {port}");
        r.ok(&["CONFIG", "SET", "replica-ignore-maxmemory", "no"]);
        r.cmd(&["GET", "k:0"]);
        assert!(info(&mut r, "evicted_keys") > 0, "port {port}");
    }
}

// ---------------------------------------------------------------------------------------
// 64 MB and ten times that: every policy, one server at a time.

/// The big fills run one at a time: each holds 64 MB and keeps a core busy.
static BIG: std::sync::Mutex<()> = std::sync::Mutex::new(());

const LIMIT: u64 = 64 << 20;
/// Values of the big fills: 16 KB, so ten times the limit is about 41,000 SETs.
const BIG_VALUE: usize = 16 * 1024;
/// Keys with the farthest deadline in the volatile-ttl case (16 MB of them).
const LATE: usize = 1000;

fn big_server(policy: &str) -> RedlineServer {
    RedlineServer::builder()
        .args([
            "--save",
            "",
            "--maxmemory",
            "64mb",
            "--maxmemory-policy",
            policy,
        ])
        .start()
        .unwrap()
}

/// The process's resident memory, from /proc.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// What a big fill saw.
#[derive(Debug, Default)]
struct Watched {
    /// Writes refused (OOM).
    refused: usize,
    /// The highest `used_memory` read between batches.
    max_used: u64,
    /// The highest RSS read between batches.
    max_rss: u64,
}

/// Writes `LIMIT * 10` bytes of `prefix:<n>` keys (`ttl(n)` seconds each, 0 for none),
/// 64 per pipelined batch, running `between` after every batch and reading
/// `used_memory` and RSS every 8 batches. Every refusal must be Redis's OOM error.
fn fill_ten_times(
    c: &mut Conn,
    pid: u32,
    prefix: &str,
    ttl: impl Fn(usize) -> u64,
    mut between: impl FnMut(&mut Conn),
) -> Watched {
    let value = "x".repeat(BIG_VALUE);
    let count = (LIMIT * 10) as usize / BIG_VALUE;
    let mut watched = Watched::default();
    for (batch, chunk) in (0..count).collect::<Vec<_>>().chunks(64).enumerate() {
        for &n in chunk {
            let key = format!("{prefix}:{n}");
            match ttl(n) {
                0 => c.send(&["SET", &key, &value]),
                t => c.send(&["SET", &key, &value, "EX", &t.to_string()]),
            }
        }
        for _ in chunk {
            match c.read() {
                Some(Frame::Simple(_)) => {}
                Some(Frame::Error(e)) => {
                    assert_eq!(
                        &e[..],
                        b"OOM command not allowed when used memory > 'maxmemory'."
                    );
                    watched.refused += 1;
                }
                other => panic!("SET answered {other:?}"),
            }
        }
        between(c);
        if batch % 8 == 0 {
            watched.max_used = watched.max_used.max(memory(c, "used_memory"));
            watched.max_rss = watched.max_rss.max(rss(pid));
        }
    }
    watched
}

fn memory(c: &mut Conn, field: &str) -> u64 {
    let all = text(&c.cmd(&["INFO", "memory"]));
    field_of(&all, field)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// used_memory never above the limit by more than 10%, nor the RSS growth since
/// `rss_before`.
fn assert_within_limit(policy: &str, watched: &Watched, rss_before: u64) {
    eprintln!(
        "{policy}: max used_memory {:.1} MB, max RSS growth {:.1} MB, {} refused",
        watched.max_used as f64 / 1048576.0,
        watched.max_rss.saturating_sub(rss_before) as f64 / 1048576.0,
        watched.refused
    );
    assert!(
        watched.max_used <= LIMIT * 11 / 10,
        "{policy}: used_memory reached {}",
        watched.max_used
    );
    // The process's pages also hold the allocator's free lists, which eviction of
    // 16 KB values under LFU left at up to 70.9 MB of growth (once, in a fresh-clone
    // run; 64-70 MB otherwise): the bound is on unbounded growth, not on
    // fragmentation, which Redis reports (mem_fragmentation_ratio) and does not bound.
    assert!(
        watched.max_rss.saturating_sub(rss_before) <= LIMIT * 12 / 10,
        "{policy}: RSS grew by {}",
        watched.max_rss - rss_before
    );
}

/// How many of `prefix:0..count` exist.
fn present(c: &mut Conn, prefix: &str, count: usize) -> usize {
    for n in 0..count {
        c.send(&["EXISTS", &format!("{prefix}:{n}")]);
    }
    (0..count)
        .filter(|_| c.read() == Some(Frame::Integer(1)))
        .count()
}

/// Writes `count` 1 KB keys `prefix:<n>` with TTL `ttl` seconds (0: none).
fn small_keys(c: &mut Conn, prefix: &str, count: usize, ttl: u64) {
    assert_eq!(fill(c, prefix, count, ttl), 0, "{prefix} refused");
}

#[test]
fn every_policy_at_64mb_under_ten_times_the_writes() {
    let _one_at_a_time = BIG.lock().unwrap_or_else(|e| e.into_inner());
    for policy in [
        "noeviction",
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let server = big_server(policy);
        let pid = server.pid().unwrap();
        let mut c = conn(server.port());
        let rss_before = rss(pid);
        // Keys every policy has reasons to keep: 4 MB without TTL ("keep"), and 200
        // "hot" keys read after every batch (without TTL too).
        small_keys(&mut c, "keep", 4000, 0);
        small_keys(&mut c, "hot", 200, 0);
        let read_hot = |c: &mut Conn| {
            for n in 0..200 {
                c.send(&["GET", &format!("hot:{n}")]);
            }
            for _ in 0..200 {
                c.read();
            }
        };
        let volatile = policy.starts_with("volatile");
        let watched = match policy {
            "volatile-ttl" => {
                // 16 MB due in 11 days (as large as the writer's keys, so sampling by
                // key sees them in proportion), then the writer's keys due in 1 to 3
                // hours: the writer's go first.
                let value = "x".repeat(BIG_VALUE);
                for n in 0..LATE {
                    c.send(&["SET", &format!("late:{n}"), &value, "EX", "1000000"]);
                }
                for _ in 0..LATE {
                    assert_eq!(c.read(), Some(Frame::Simple("OK".into())));
                }
                fill_ten_times(&mut c, pid, "w", |n| 3600 + (n as u64 % 7200), |_| {})
            }
            _ if volatile => fill_ten_times(&mut c, pid, "w", |_| 100_000, read_hot),
            _ => fill_ten_times(&mut c, pid, "w", |_| 0, read_hot),
        };
        assert_within_limit(policy, &watched, rss_before);
        let evicted = info(&mut c, "evicted_keys");
        let keep = present(&mut c, "keep", 4000);
        let hot = present(&mut c, "hot", 200);
        eprintln!("{policy}: {evicted} evicted, keep {keep}/4000, hot {hot}/200");
        match policy {
            "noeviction" => {
                assert_eq!(evicted, 0);
                assert!(watched.refused > 0);
                assert_eq!((keep, hot), (4000, 200));
            }
            "allkeys-random" => {
                assert_eq!(watched.refused, 0);
                assert!(evicted > 30_000, "{evicted}");
                // Random takes the old keys in proportion: most of them are gone.
                assert!(keep < 2000, "{keep}");
            }
            "allkeys-lru" | "allkeys-lfu" => {
                assert_eq!(watched.refused, 0);
                assert!(evicted > 30_000, "{evicted}");
                // What is read stays, what is not goes.
                assert!(hot >= 190, "{policy}: only {hot} of 200 hot keys left");
                assert!(keep < 2000, "{policy}: {keep} unused keys left");
            }
            _ => {
                assert_eq!(watched.refused, 0);
                assert!(evicted > 30_000, "{evicted}");
                // Keys without a TTL are never candidates.
                assert_eq!((keep, hot), (4000, 200), "{policy}");
            }
        }
        if policy == "volatile-ttl" {
            let late = present(&mut c, "late", LATE);
            eprintln!("volatile-ttl: late {late}/{LATE}");
            assert!(
                late >= LATE * 95 / 100,
                "only {late} of the latest deadlines left"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Hit rates against redis-server: the same trace, the same maxmemory.

/// Ranks 0..n drawn with probability proportional to 1/(rank+1)^s, from a fixed seed.
struct Zipf {
    cdf: Vec<f64>,
    rng: fastrand::Rng,
}

impl Zipf {
    fn new(n: usize, s: f64, seed: u64) -> Zipf {
        let mut total = 0.0;
        let mut cdf: Vec<f64> = (0..n)
            .map(|rank| {
                total += 1.0 / ((rank + 1) as f64).powf(s);
                total
            })
            .collect();
        for p in &mut cdf {
            *p /= total;
        }
        Zipf {
            cdf,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    fn next(&mut self) -> usize {
        let u = self.rng.f64();
        self.cdf.partition_point(|&p| p < u).min(self.cdf.len() - 1)
    }
}

/// Keys in the trace, its length, and how much of it warms the cache up uncounted.
const TRACE_KEYS: usize = 100_000;
const TRACE_OPS: usize = 300_000;
const WARM_UP: usize = 50_000;

/// Runs the trace (GET k; on a miss SET k, 1 KB values; 100 GETs per pipelined batch,
/// then that batch's SETs) against a server; returns the hit rate after the warm-up and
/// the keys held at the end.
fn hit_rate(port: u16) -> (f64, u64) {
    let mut c = conn(port);
    let mut zipf = Zipf::new(TRACE_KEYS, 1.0, 42);
    let value = "v".repeat(1000);
    let (mut gets, mut hits) = (0u64, 0u64);
    let mut done = 0;
    while done < TRACE_OPS {
        let keys: Vec<String> = (0..100).map(|_| format!("key:{}", zipf.next())).collect();
        for key in &keys {
            c.send(&["GET", key]);
        }
        let mut misses = Vec::new();
        for key in &keys {
            match c.read() {
                Some(Frame::Bulk(_)) => {
                    if done >= WARM_UP {
                        hits += 1;
                    }
                }
                Some(Frame::NullBulk) => misses.push(key),
                other => panic!("GET answered {other:?}"),
            }
            if done >= WARM_UP {
                gets += 1;
            }
            done += 1;
        }
        for key in &misses {
            c.send(&["SET", key, &value]);
        }
        for _ in &misses {
            assert_eq!(c.read(), Some(Frame::Simple("OK".into())));
        }
    }
    assert!(info(&mut c, "evicted_keys") > 10_000, "too little eviction");
    let keys = text(&c.cmd(&["DBSIZE"])).parse().unwrap();
    (hits as f64 / gets as f64, keys)
}

#[test]
fn lru_and_lfu_hit_rates_match_redis_on_a_zipf_trace() {
    let _one_at_a_time = BIG.lock().unwrap_or_else(|e| e.into_inner());
    for policy in ["allkeys-lru", "allkeys-lfu"] {
        let args = [
            "--save",
            "",
            "--maxmemory",
            "16mb",
            "--maxmemory-policy",
            policy,
        ];
        let theirs = RedisServer::builder().args(args).start().unwrap();
        let (redis, redis_keys) = hit_rate(theirs.port());
        drop(theirs);
        let ours = RedlineServer::builder().args(args).start().unwrap();
        let (redline, redline_keys) = hit_rate(ours.port());
        eprintln!(
            "{policy}: hit rate redis-server {:.2}% ({redis_keys} keys held), redline-server {:.2}% ({redline_keys} keys held)",
            redis * 100.0,
            redline * 100.0
        );
        // Never more than 2 points worse than redis-server. Redis's own LRU rate on this
        // trace moves between runs (74.8% to 76.5% measured, redline's stays at 78.0%:
        // the same before and after stop 89's key table change), so the band above it
        // is 4 points: a better rate is no incompatibility.
        assert!(
            redline >= redis - 0.02 && redline <= redis + 0.04,
            "{policy}: {:.2}% here, {:.2}% in redis-server",
            redline * 100.0,
            redis * 100.0
        );
    }
}

// ---------------------------------------------------------------------------------------
// A limit 100 KB above what the server holds, as Redis's own suite sets it.

/// Sets keys with a TTL until `used_memory` is within 4 KB of a limit 100 KB above the
/// start, then as many again: eviction keeps `used_memory` under the limit plus 4 KB
/// (the tables that held evicted keys give their memory back, and INFO on any thread
/// reads the exact total).
#[test]
fn a_tight_limit_is_honoured_under_every_policy() {
    let server = plain(&[]);
    let mut c = conn(server.port());
    for policy in [
        "allkeys-random",
        "allkeys-lru",
        "allkeys-lfu",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        c.cmd(&["FLUSHALL"]);
        c.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
        let limit = info(&mut c, "used_memory") + 100 * 1024;
        c.cmd(&["CONFIG", "SET", "maxmemory", &limit.to_string()]);
        c.cmd(&["CONFIG", "SET", "maxmemory-policy", policy]);
        let mut added = 0;
        while info(&mut c, "used_memory") + 4096 <= limit {
            let reply = c.cmd(&["SETEX", &format!("{policy}:{added}"), "10000", "x"]);
            assert_eq!(text(&reply), "OK", "{policy}");
            added += 1;
        }
        assert!(added > 10, "{policy}: {added} keys");
        for i in 0..added {
            let key = format!("{policy}:again:{i}:{}", "k".repeat(i % 200));
            let reply = c.cmd(&["SETEX", &key, "10000", "x"]);
            assert_eq!(text(&reply), "OK", "{policy}");
        }
        let used = info(&mut c, "used_memory");
        assert!(used < limit + 4096, "{policy}: {used} against {limit}");
        assert!(text(&c.cmd(&["DBSIZE"])) != "0", "{policy}: emptied");
    }
    c.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
}

/// Writes `count` keys `key:<n>` (from `from`) with 13-byte values, 1,000 per pipelined
/// batch; every write must succeed.
fn short_keys(c: &mut Conn, from: usize, count: usize) {
    let numbers: Vec<usize> = (from..from + count).collect();
    for chunk in numbers.chunks(1000) {
        for n in chunk {
            c.send(&["SET", &format!("key:{n:07}"), &format!("value:{n:07}")]);
        }
        for _ in chunk {
            assert_eq!(c.read(), Some(Frame::Simple("OK".into())));
        }
    }
}

/// Keys short enough to live whole in their table's slot free no allocation when
/// evicted: their slot waits for the next key. Eviction used to go on evicting while
/// the allocator's figure stood still (at 64 MB it kept 275k of 1M keys where
/// redis-server keeps 602k), and tables doubling together evicted the rest. Side by
/// side under the same 8 MB limit and three times the keys that fit, redline-server
/// must keep at least nine tenths of what redis-server keeps, at every stage, with
/// `used_memory` at the limit.
#[test]
fn short_keys_fill_the_limit_as_on_redis() {
    let redis = RedisServer::start().unwrap();
    let redline = plain(&[]);
    let mut kept = Vec::new();
    for port in [redis.port(), redline.port()] {
        let mut c = conn(port);
        c.cmd(&["CONFIG", "SET", "maxmemory", "8mb"]);
        c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
        let mut stages = Vec::new();
        for stage in 0..3 {
            short_keys(&mut c, stage * 80_000, 80_000);
            stages.push(text(&c.cmd(&["DBSIZE"])).parse::<u64>().unwrap());
            let used = info(&mut c, "used_memory");
            assert!(used <= (8 << 20) + 4096, "port {port}: used_memory {used}");
        }
        kept.push(stages);
    }
    eprintln!("keys kept after each 80k (redis-server, redline-server): {kept:?}");
    for (on_redis, on_redline) in kept[0].iter().zip(&kept[1]) {
        assert!(
            on_redline * 10 >= on_redis * 9,
            "redline-server kept {on_redline} keys where redis-server kept {on_redis}"
        );
    }
}

/// Under `maxmemory` with an LRU or LFU policy Redis gives every key its own object, so
/// small integers are not shared; with other policies, or no limit, they are.
#[test]
fn object_refcount_follows_redis_integer_sharing() {
    let redline = plain(&[]);
    let redis = RedisServer::builder().args(["--save", ""]).start().unwrap();
    for port in [redline.port(), redis.port()] {
        let mut c = conn(port);
        let mut refcount = |settings: &[(&str, &str)]| {
            for (name, value) in settings {
                c.cmd(&["CONFIG", "SET", name, value]);
            }
            c.cmd(&["SET", "a", "1"]);
            text(&c.cmd(&["OBJECT", "REFCOUNT", "a"]))
        };
        let shared = i32::MAX.to_string();
        assert_eq!(refcount(&[("maxmemory", "0")]), shared);
        let random = [("maxmemory", "1gb"), ("maxmemory-policy", "allkeys-random")];
        assert_eq!(refcount(&random), shared);
        assert_eq!(refcount(&[("maxmemory-policy", "allkeys-lru")]), "1");
        assert_eq!(refcount(&[("maxmemory-policy", "volatile-lfu")]), "1");
    }
}

/// A replica that stops reading makes its master buffer the stream, shown as
/// `mem_clients_slaves` and left out of `maxmemory` (`mem_not_counted_for_evict`): the
/// master neither evicts keys nor refuses writes for it.
#[test]
fn a_stalled_replica_does_not_cause_eviction() {
    let master = plain(&["--repl-backlog-size", "16kb"]);
    // A replica link that never reads: what Redis's suite makes with SIGSTOP.
    let mut link = conn(master.port());
    link.send(&["SYNC"]);
    let mut c = conn(master.port());
    let value = "v".repeat(1000);
    for i in 0..100 {
        c.cmd(&["SET", &format!("key:{i}"), &value]);
    }
    // The limit is set 256 KB above memory once the link streams: what attaching the
    // first replica allocates (the backlog, the link) is behind it, as in Redis, and
    // the margin covers a worker thread's first-use allocations.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !text(&c.cmd(&["INFO", "replication"])).contains("state=online") {
        assert!(Instant::now() < deadline, "the replica never came online");
        std::thread::sleep(Duration::from_millis(5));
    }
    let limit = info(&mut c, "used_memory") + 256 * 1024;
    c.cmd(&["CONFIG", "SET", "maxmemory", &limit.to_string()]);
    c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
    // About 20 MB of stream that the replica never reads.
    for _ in 0..20_000 {
        assert_eq!(text(&c.cmd(&["SET", "key:0", &value])), "OK");
    }
    assert!(info(&mut c, "mem_clients_slaves") > 4 << 20);
    assert!(info(&mut c, "mem_not_counted_for_evict") > 4 << 20);
    assert_eq!(info(&mut c, "evicted_keys"), 0);
    assert_eq!(text(&c.cmd(&["DBSIZE"])), "100");
    c.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
}

/// A save near the limit neither evicts keys nor refuses writes: its file buffer (1 MB),
/// its queue for the disk and LZF's match table (256 KB per thread that compresses,
/// where Redis's is on the stack) are left out of `maxmemory`, as a fork's memory is
/// outside Redis's `used_memory`, and shown in `mem_not_counted_for_evict`.
#[test]
fn a_save_near_the_limit_does_not_cause_eviction() {
    let server = plain(&[]);
    let mut c = conn(server.port());
    let value = "v".repeat(100);
    for batch in 0..20 {
        let mut mset = vec!["MSET".to_string()];
        for i in batch * 1000..(batch + 1) * 1000 {
            mset.extend([format!("key:{i}"), value.clone()]);
        }
        let args: Vec<&str> = mset.iter().map(String::as_str).collect();
        assert_eq!(text(&c.cmd(&args)), "OK");
    }
    // A first save allocates once what later ones reuse (about 100 KB): made before
    // the limit is read. 256 KB of margin: a worker thread's first-use allocations fit
    // in it, the save's 1.5 MB and more do not.
    bgsave_and_wait(&mut c);
    let limit = info(&mut c, "used_memory") + 256 * 1024;
    c.cmd(&["CONFIG", "SET", "maxmemory", &limit.to_string()]);
    c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
    // DUMP compresses: this thread's first compression allocates its match table.
    assert!(matches!(c.cmd(&["DUMP", "key:0"]), Frame::Bulk(_)));
    assert!(info(&mut c, "mem_not_counted_for_evict") >= 256 * 1024);
    assert_eq!(text(&c.cmd(&["SET", "key:0", &value])), "OK");
    assert_eq!(text(&c.cmd(&["BGSAVE"])), "Background saving started");
    // Rewrites of a few keys while the save runs: each is saved as it was first.
    let mut writes = 0;
    loop {
        for i in 0..100 {
            let reply = c.cmd(&["SET", &format!("key:{}", i % 10), &value]);
            assert_eq!(text(&reply), "OK", "write {}", writes + i);
        }
        writes += 100;
        if info(&mut c, "rdb_bgsave_in_progress") == 0 {
            break;
        }
    }
    assert_eq!(info(&mut c, "evicted_keys"), 0);
    assert_eq!(text(&c.cmd(&["DBSIZE"])), "20000");
    let persistence = text(&c.cmd(&["INFO", "persistence"]));
    assert!(
        persistence.contains("rdb_last_bgsave_status:ok"),
        "{persistence}"
    );
    c.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
}

/// Runs BGSAVE and waits until it is over.
fn bgsave_and_wait(c: &mut Conn) {
    assert_eq!(text(&c.cmd(&["BGSAVE"])), "Background saving started");
    let deadline = Instant::now() + Duration::from_secs(30);
    while info(c, "rdb_bgsave_in_progress") == 1 {
        assert!(Instant::now() < deadline, "the save never ended");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Past the `replica` class of `client-output-buffer-limit`, the link is closed and its
/// buffer freed, as Redis closes a replica that falls too far behind.
#[test]
fn a_replica_past_its_output_limit_is_dropped() {
    let master = plain(&["--client-output-buffer-limit", "replica 1mb 0 0"]);
    let mut link = conn(master.port());
    link.send(&["SYNC"]);
    let mut c = conn(master.port());
    let deadline = Instant::now() + Duration::from_secs(30);
    while info(&mut c, "connected_slaves") == 0 {
        assert!(Instant::now() < deadline, "the replica never attached");
        std::thread::sleep(Duration::from_millis(20));
    }
    let value = "v".repeat(10_000);
    let mut writes = 0;
    while info(&mut c, "connected_slaves") > 0 {
        for _ in 0..100 {
            c.cmd(&["SET", "k", &value]);
        }
        writes += 100;
        assert!(writes < 200_000, "the replica was never dropped");
    }
    assert_eq!(info(&mut c, "mem_clients_slaves"), 0);
}

/// `maxmemory-clients`: clients whose query buffers hold more than the limit together
/// are closed, the largest first, `CLIENT NO-EVICT` ones never; keys are left alone and
/// INFO counts them in `evicted_clients` (CONFIG RESETSTAT clears it).
#[test]
fn clients_over_maxmemory_clients_are_evicted_not_keys() {
    let server = plain(&[]);
    let mut c = conn(server.port());
    c.cmd(&["CONFIG", "SET", "maxmemory-clients", "1mb"]);
    assert_eq!(text(&c.cmd(&["CLIENT", "NO-EVICT", "on"])), "OK");
    c.cmd(&["SET", "kept", "v"]);
    // Ten clients, each stuck in the middle of a 300 KB command: 3 MB of query buffers.
    let mut stuck: Vec<Conn> = (0..10).map(|_| conn(server.port())).collect();
    for s in &mut stuck {
        s.send_raw(b"*2\r\n$3\r\nGET\r\n$400000\r\n");
        s.send_raw(&vec![b'x'; 300_000]);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while info(&mut c, "evicted_clients") == 0 {
        assert!(Instant::now() < deadline, "no client was evicted");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The first eviction can come while other clients' bytes are still being read:
    // each arrival past the limit evicts again. Let the count settle (no change for a
    // second) before resetting it, or a late eviction lands after the reset (a loaded
    // machine showed one).
    let mut evicted = info(&mut c, "evicted_clients");
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(1) {
        assert!(Instant::now() < deadline, "evictions never settled");
        std::thread::sleep(Duration::from_millis(50));
        let now = info(&mut c, "evicted_clients");
        if now != evicted {
            (evicted, quiet_since) = (now, Instant::now());
        }
    }
    let left = info(&mut c, "connected_clients") - 1;
    assert!(left < 10, "{left} of 10 left");
    assert_eq!(info(&mut c, "evicted_keys"), 0);
    assert_eq!(text(&c.cmd(&["GET", "kept"])), "v");
    c.cmd(&["CONFIG", "RESETSTAT"]);
    assert_eq!(info(&mut c, "evicted_clients"), 0);
}

/// A tiny `maxmemory-clients` (1 byte, or a percentage of `maxmemory` under 128 KiB)
/// counts as 128 KiB, as in Redis: small clients stay connected, so the limit can be
/// set back.
#[test]
fn a_tiny_maxmemory_clients_leaves_small_clients_connected_like_redis() {
    let check = |port: u16| {
        let mut c = conn(port);
        let mut other = conn(port);
        for setting in [("maxmemory", "1mb"), ("maxmemory-clients", "1%")] {
            c.cmd(&["CONFIG", "SET", setting.0, setting.1]);
        }
        c.cmd(&["CONFIG", "SET", "maxmemory-clients", "1"]);
        // Eviction runs between commands: give it a few.
        for _ in 0..20 {
            assert_eq!(text(&other.cmd(&["PING"])), "PONG");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            text(&c.cmd(&["CONFIG", "SET", "maxmemory-clients", "0"])),
            "OK"
        );
        assert_eq!(info(&mut c, "evicted_clients"), 0);
    };
    check(plain(&[]).port());
    check(
        RedisServer::builder()
            .args(["--save", ""])
            .start()
            .unwrap()
            .port(),
    );
}

/// Above `maxmemory` with nothing to evict: a script is refused as its declared flags
/// say, before its own checks (Redis's generic OOM error, even for FCALL_RO of a
/// writing function), and inside MULTI every command but EXEC and DISCARD is refused,
/// aborting the transaction, as in Redis.
#[test]
fn over_maxmemory_scripts_and_transactions_are_refused_like_redis() {
    let library = "#!lua name=lib\n\
                   redis.register_function('w', function(k) return redis.call('set', k[1], 'x') end)\n\
                   redis.register_function{function_name='r', callback=function(k) return redis.call('get', k[1]) end, flags={'no-writes'}}\n\
                   redis.register_function{function_name='o', callback=function(k) return redis.call('set', k[1], 'y') end, flags={'allow-oom'}}";
    let script: [&[&str]; 20] = [
        &["SET", "s", "2"],
        &["GET", "s"],
        &["EVAL", "return redis.pcall('set', 's', '3')", "0"],
        &["EVAL", "#!lua\nreturn 1", "0"],
        &[
            "EVAL",
            "#!lua flags=no-writes\nreturn redis.call('get', 's')",
            "0",
        ],
        &[
            "EVAL",
            "#!lua flags=allow-oom\nreturn redis.call('set', 's', '4')",
            "0",
        ],
        &["FCALL", "w", "1", "s"],
        &["FCALL", "r", "1", "s"],
        &["FCALL", "o", "1", "s"],
        &["FCALL_RO", "w", "1", "s"],
        &["MULTI"],
        &["GET", "s"],
        &["EXEC"],
        &["MULTI"],
        &["DEL", "s"],
        &["DISCARD"],
        &["MULTI"],
        &["EXEC"],
        &["DEL", "s"],
        &["GET", "s"],
    ];
    let transcript = |port: u16| -> Vec<String> {
        let mut c = conn(port);
        c.cmd(&["SET", "s", "1"]);
        c.cmd(&["FUNCTION", "LOAD", library]);
        c.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
        common::transcript(&mut c, &script)
    };
    let ours = transcript(plain(&[]).port());
    let theirs = transcript(
        RedisServer::builder()
            .args(["--save", ""])
            .start()
            .unwrap()
            .port(),
    );
    assert_eq!(ours, theirs);
}

/// One field of the CLIENT LIST line of the client named `name`.
fn client_field(c: &mut Conn, name: &str, field: &str) -> Option<u64> {
    let list = text(&c.cmd(&["CLIENT", "LIST"]));
    let line = list
        .lines()
        .find(|l| l.split(' ').any(|f| f == format!("name={name}")))?;
    line.split(' ')
        .find_map(|f| f.strip_prefix(&format!("{field}=")))
        .and_then(|v| v.parse().ok())
}

/// The `i`th command of a series.
type CommandAt = fn(usize) -> Vec<String>;

/// Sends commands on `c` until the server closes it; returns how many it answered.
fn until_closed(c: &mut Conn, mut command: impl FnMut(usize) -> Vec<String>) -> usize {
    for i in 0..1_000_000 {
        let args = command(i);
        if c.try_send_raw(&encode_command(&args)).is_err() || c.read().is_none() {
            return i;
        }
    }
    panic!("never closed");
}

fn encode_command(args: &[String]) -> Vec<u8> {
    let mut out = bytes::BytesMut::new();
    redline_resp::encode::command(&mut out, args.iter().map(String::as_bytes));
    out.to_vec()
}

/// What a client counts for under `maxmemory-clients` beside its buffers, as in Redis:
/// a command still arriving counts whole from its length line (`argv-mem`, and a query
/// buffer sized for a large argument at once), and so do queued MULTI commands
/// (`multi-mem`), WATCHed keys, subscriptions and tracked prefixes; lowering the limit
/// evicts at once.
#[test]
fn every_part_of_a_client_counts_for_maxmemory_clients() {
    let server = plain(&[]);
    let mut c = conn(server.port());
    c.cmd(&["CLIENT", "SETNAME", "control"]);
    c.cmd(&["CLIENT", "NO-EVICT", "on"]);

    // A large argument: the query buffer holds all of it as soon as its length is read.
    let mut big = conn(server.port());
    big.cmd(&["CLIENT", "SETNAME", "big"]);
    big.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\nvvvv");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let tot = client_field(&mut c, "big", "tot-mem").unwrap();
        let argv = client_field(&mut c, "big", "argv-mem").unwrap();
        if tot >= 1_000_000 && argv == 4 {
            break;
        }
        assert!(Instant::now() < deadline, "tot-mem {tot}, argv-mem {argv}");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Lowering the limit below it closes that client before CONFIG SET returns.
    assert_eq!(
        text(&c.cmd(&["CONFIG", "SET", "maxmemory-clients", "500kb"])),
        "OK"
    );
    assert_eq!(client_field(&mut c, "big", "tot-mem"), None);
    assert!(big.is_closed());
    assert_eq!(info(&mut c, "evicted_clients"), 1);

    c.cmd(&["CONFIG", "SET", "maxmemory-clients", "200kb"]);
    // Queued commands.
    let mut tx = conn(server.port());
    tx.cmd(&["MULTI"]);
    let value = "v".repeat(10_000);
    let queued = until_closed(&mut tx, |_| ["SET", "k", &value].map(String::from).to_vec());
    assert!((5..30).contains(&queued), "{queued} commands queued");
    // Watched keys, patterns, channels, shard channels, tracked prefixes: each entry
    // costs tens of bytes, so a few thousand reach 200 KB.
    let entries: [(&str, CommandAt); 5] = [
        ("WATCH", |i| vec!["WATCH".into(), format!("key:{i}")]),
        ("PSUBSCRIBE", |i| {
            vec!["PSUBSCRIBE".into(), format!("p:{i}")]
        }),
        ("SUBSCRIBE", |i| vec!["SUBSCRIBE".into(), format!("c:{i}")]),
        ("SSUBSCRIBE", |i| {
            vec!["SSUBSCRIBE".into(), format!("s:{i}")]
        }),
        ("CLIENT TRACKING", |i| {
            ["CLIENT", "TRACKING", "on", "BCAST", "PREFIX"]
                .map(String::from)
                .into_iter()
                .chain([format!("{i:012}")])
                .collect()
        }),
    ];
    for (what, command) in entries {
        let mut client = conn(server.port());
        let answered = until_closed(&mut client, command);
        assert!(
            (500..20_000).contains(&answered),
            "{what}: closed after {answered}"
        );
    }
    assert_eq!(info(&mut c, "evicted_clients"), 7);
    // The control client, never evicted, still works.
    assert_eq!(text(&c.cmd(&["PING"])), "PONG");
}

/// An idle client gives its buffers' memory back, as Redis's client cron makes it: the
/// query buffer after 2 s, the reply buffer down to 1 KB after DEBUG REPLYBUFFER's
/// peak-reset time (INFO `mem_clients_normal` falls with it); with RESIZING 0 the reply
/// buffer keeps its size. It still works
/// afterwards, with replies larger than what it kept.
#[test]
fn idle_clients_give_their_buffers_back() {
    let server = plain(&["--enable-debug-command", "yes"]);
    let mut c = conn(server.port());
    c.cmd(&["CLIENT", "SETNAME", "control"]);
    c.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100"]);
    let mut idle = conn(server.port());
    idle.cmd(&["CLIENT", "SETNAME", "idle"]);
    let field = |c: &mut Conn, f: &str| client_field(c, "idle", f).unwrap();
    let before = field(&mut c, "tot-mem");
    let clients_before = info(&mut c, "mem_clients_normal");
    assert!(
        clients_before > before,
        "mem_clients_normal {clients_before}"
    );
    assert!(field(&mut c, "rbs") > 1024);
    assert!(field(&mut c, "qbuf-free") > 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while field(&mut c, "qbuf-free") > 0 || field(&mut c, "rbs") > 1024 {
        assert!(Instant::now() < deadline, "never trimmed");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(field(&mut c, "rbs"), 1024);
    // The reply buffer alone gives back 15 KB (16 KB down to 1 KB); the query buffer
    // is gone too (`qbuf-free` 0).
    let after = field(&mut c, "tot-mem");
    assert!(after + 15_000 < before, "tot-mem {before} -> {after}");
    let clients_after = info(&mut c, "mem_clients_normal");
    assert!(
        clients_after + 15_000 < clients_before,
        "{clients_before} -> {clients_after}"
    );
    let value = "x".repeat(100_000);
    assert_eq!(text(&idle.cmd(&["SET", "big", &value])), "OK");
    assert_eq!(text(&idle.cmd(&["GET", "big"])), value);

    // With resizing off, the reply buffer keeps its size.
    c.cmd(&["DEBUG", "REPLYBUFFER", "RESIZING", "0"]);
    let mut kept = conn(server.port());
    kept.cmd(&["CLIENT", "SETNAME", "kept"]);
    let rbs = client_field(&mut c, "kept", "rbs").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while client_field(&mut c, "kept", "qbuf-free") != Some(0) {
        assert!(Instant::now() < deadline, "query buffer never freed");
        std::thread::sleep(Duration::from_millis(50));
    }
    // (`rbs` moves by the few bytes of the last reply written, not more.)
    let kept_rbs = client_field(&mut c, "kept", "rbs").unwrap();
    assert!(kept_rbs + 64 > rbs, "rbs {rbs} -> {kept_rbs}");
    assert_eq!(text(&kept.cmd(&["PING"])), "PONG");
    assert_eq!(
        text(&c.cmd(&["DEBUG", "REPLYBUFFER", "RESIZING", "maybe", "x"])),
        "ERR unknown subcommand or wrong number of arguments for 'REPLYBUFFER'. Try DEBUG HELP."
    );
}

/// A client's query buffer as CLIENT LIST shows it (`qbuf` + `qbuf-free`), as in
/// Redis's slow-tagged "query buffer resized correctly" tests: whole once its commands
/// are done (the read's 16 KB, not less by the bytes the commands took); grown for a
/// large argument and kept while the client is busy, then cut back once its commands
/// use much less.
#[test]
fn a_client_s_query_buffer_is_shown_and_resized_like_redis() {
    let ours = plain(&[]);
    let theirs = RedisServer::start().unwrap();
    for port in [ours.port(), theirs.port()] {
        let mut c = conn(port);
        let mut client = conn(port);
        client.cmd(&["CLIENT", "SETNAME", "test_client"]);
        let mut qbuf = || {
            client_field(&mut c, "test_client", "qbuf").unwrap()
                + client_field(&mut c, "test_client", "qbuf-free").unwrap()
        };
        let fresh = qbuf();
        assert!((16_384..32_768).contains(&fresh), "{port}: {fresh}");
        let big = "A".repeat(400_000);
        assert_eq!(text(&client.cmd(&["SET", "x", &big])), "OK");
        let grown = qbuf();
        assert!(grown > 400_000, "{port}: {grown}");
        let deadline = Instant::now() + Duration::from_secs(2);
        let shrunk = loop {
            assert_eq!(text(&client.cmd(&["SET", "x", "small"])), "OK");
            let now = qbuf();
            if now < grown {
                break now;
            }
            assert!(Instant::now() < deadline, "{port}: never cut back");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(shrunk > 0, "{port}");
    }
}

/// Replies a client does not read count for `maxmemory-clients` whole, the part already
/// written to its socket's buffer included, so clients that never read are evicted
/// before their replies push the keys out (Redis's "eviction due to output buffers of
/// many MGET clients", run first without and then with client eviction).
#[test]
fn unread_replies_evict_their_clients_before_keys() {
    let server = plain(&["--maxmemory", "11mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut c = conn(server.port());
    for client_eviction in [false, true] {
        c.cmd(&["FLUSHDB"]);
        let limit = if client_eviction { "3mb" } else { "0" };
        c.cmd(&["CONFIG", "SET", "maxmemory-clients", limit]);
        c.cmd(&["CLIENT", "NO-EVICT", "on"]);
        c.cmd(&["CONFIG", "RESETSTAT"]);
        for key in 0..50 {
            c.cmd(&["SETRANGE", &key.to_string(), "100000", "x"]);
        }
        let mut readers: Vec<Conn> = (0..20).map(|_| conn(server.port())).collect();
        for r in &mut readers {
            r.set_write_timeout(Duration::from_millis(200));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let evicted = |c: &mut Conn| info(c, "evicted_clients") + info(c, "evicted_keys") > 0;
        while !evicted(&mut c) {
            assert!(Instant::now() < deadline, "nothing was evicted");
            for r in &mut readers {
                let _ = r.try_send_raw(b"*2\r\n$4\r\nMGET\r\n$1\r\n1\r\n");
            }
        }
        if client_eviction {
            assert_eq!(info(&mut c, "evicted_keys"), 0);
            assert!(info(&mut c, "evicted_clients") > 0);
            assert_eq!(text(&c.cmd(&["DBSIZE"])), "50");
        } else {
            assert_eq!(info(&mut c, "evicted_clients"), 0);
        }
    }
}

fn on_redis_then_redline(check: impl Fn(u16)) {
    let theirs = RedisServer::builder().args(["--save", ""]).start().unwrap();
    check(theirs.port());
    let ours = plain(&[]);
    check(ours.port());
}

/// A client evicted while its large argument arrives is the only one closed, as in
/// Redis's "client evicted due to large argv": what it held leaves the
/// `maxmemory-clients` total for good. Its connection, still finishing its batch when
/// the eviction came, once counted it back, and the next check closed the next largest
/// client (the caller here).
fn only_the_client_with_the_large_argument_is_evicted(port: u16) {
    let mut c = conn(port);
    c.ok(&["CONFIG", "SET", "maxmemory-clients", "3000000"]);
    let mut big = conn(port);
    big.ok(&["MSET", "k", "v", "k2", &"v".repeat(1_000_000)]);
    let _ = big.try_send_raw(&{
        let mut out = bytes::BytesMut::new();
        let huge = "v".repeat(3_000_000);
        redline_resp::encode::command(&mut out, ["MSET", "k", "v", "k2", &huge].iter());
        out
    });
    assert!(big.is_closed(), "port {port}: not evicted");
    assert_eq!(text(&c.cmd(&["PING"])), "PONG", "port {port}");
    assert_eq!(info(&mut c, "evicted_clients"), 1, "port {port}");
    c.ok(&["CONFIG", "SET", "maxmemory-clients", "0"]);
}

#[test]
fn only_the_client_with_the_large_argument_is_evicted_like_redis() {
    on_redis_then_redline(only_the_client_with_the_large_argument_is_evicted);
}

/// `used_memory` less `mem_not_counted_for_evict`, as `maxmemory` sees it.
fn counted_memory(c: &mut Conn) -> i64 {
    let all = text(&c.cmd(&["INFO", "memory"]));
    let field = |name: &str| -> i64 {
        field_of(&all, name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    field("used_memory") - field("mem_not_counted_for_evict")
}

/// A stopped replica's buffer grows to about 20 MB; killing the replica gives it back
/// at once, without its bytes ever counting for `maxmemory` on the way (uncounted only
/// once freed, which takes a moment for that much).
fn a_killed_replica_s_buffer_never_counts(master: u16) {
    let mut c = conn(master);
    c.cmd(&[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "replica 0 0 0",
    ]);
    c.cmd(&["CONFIG", "SET", "repl-backlog-size", "16kb"]);
    c.cmd(&["CONFIG", "SET", "latency-tracking", "no"]);
    let replica = RedisServer::builder()
        .args(["--replicaof", "127.0.0.1", &master.to_string()])
        .start()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !text(&conn(replica.port()).cmd(&["INFO", "replication"]))
        .contains("master_link_status:up")
    {
        assert!(Instant::now() < deadline, "the replica never synced");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = replica.pid().unwrap().to_string();
    let stop = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
    };
    stop("-STOP");
    let value = "v".repeat(100);
    for _ in 0..200 {
        for _ in 0..1000 {
            c.send(&["SET", "k", &value]);
        }
        for _ in 0..1000 {
            c.read();
        }
    }
    let before = counted_memory(&mut c);
    assert_eq!(
        c.cmd(&["CLIENT", "KILL", "TYPE", "replica"]),
        Frame::Integer(1)
    );
    let after = counted_memory(&mut c);
    // Freed with the kill, as Redis frees a killed client.
    assert_eq!(info(&mut c, "mem_clients_slaves"), 0, "port {master}");
    stop("-CONT");
    assert!(
        (after - before).abs() < 1 << 20,
        "port {master}: counted memory went from {before} to {after}"
    );
}

#[test]
fn a_killed_replica_s_buffer_never_counts_like_redis() {
    on_redis_then_redline(a_killed_replica_s_buffer_never_counts);
}

/// 10 RESP3 clients track 300 keys with 1 KB names; a limit 40 KB under `used_memory`
/// evicts a few dozen. The invalidations that go to every client (10 KB for each key
/// evicted) are written and their memory given back; kept, they would count as used
/// memory and evict more keys, whose invalidations would evict more, until the
/// database is empty (Redis's "client tracking don't cause eviction feedback loop").
fn tracking_invalidations_do_not_drive_eviction(port: u16) {
    let mut c = conn(port);
    for setting in [
        // Per-command histograms allocated after the limit is set would count too.
        ["latency-tracking", "no"],
        ["maxmemory", "0"],
        ["maxmemory-policy", "allkeys-lru"],
        ["maxmemory-eviction-tenacity", "100"],
    ] {
        c.cmd(&["CONFIG", "SET", setting[0], setting[1]]);
    }
    let mut trackers: Vec<Conn> = (0..10)
        .map(|_| {
            let mut t = conn(port);
            t.cmd(&["HELLO", "3"]);
            assert_eq!(
                t.cmd(&["CLIENT", "TRACKING", "on"]),
                Frame::Simple("OK".into())
            );
            t
        })
        .collect();
    for j in 0..300 {
        let key = format!("{j}{}", "x".repeat(1000));
        c.cmd(&["SET", &key, "x"]);
        for t in &mut trackers {
            t.cmd(&["GET", &key]);
        }
    }
    // Redis trims idle query buffers after a second; so does redline-server.
    std::thread::sleep(Duration::from_millis(1100));
    let used = info(&mut c, "used_memory");
    c.cmd(&["CONFIG", "SET", "maxmemory", &(used - 40_000).to_string()]);
    // Read at once, as Redis's test does: the invalidations the eviction sent are
    // written before this client's next command runs, so they cannot evict more.
    let evicted = info(&mut c, "evicted_keys");
    let size = match c.cmd(&["DBSIZE"]) {
        Frame::Integer(n) => n,
        other => panic!("DBSIZE: {other:?}"),
    };
    assert!(
        (200..=300).contains(&size),
        "port {port}: dbsize {size}, evicted {evicted}"
    );
    for t in &mut trackers {
        assert!(t.drain_until_quiet(Duration::from_millis(200)) > 0);
    }
    assert!(
        (10..=50).contains(&evicted),
        "port {port}: evicted {evicted}"
    );
}

/// Runs `check` against a fresh redis-server, then a fresh redline-server.
#[test]
fn tracking_invalidations_do_not_drive_eviction_like_redis() {
    let theirs = RedisServer::builder().args(["--save", ""]).start().unwrap();
    tracking_invalidations_do_not_drive_eviction(theirs.port());
    let ours = RedlineServer::builder()
        .args(["--save", ""])
        .start()
        .unwrap();
    tracking_invalidations_do_not_drive_eviction(ours.port());
}

/// INFO's `total_eviction_exceeded_time` and `current_eviction_exceeded_time`: a spell
/// over `maxmemory` (noeviction, so every write is refused) runs from the first check
/// that finds memory over the limit to the first that finds it under, as in
/// redis-server. What each step shows, as facts about the figures.
fn exceeded_time(addr: std::net::SocketAddr) -> Vec<String> {
    let mut c = Conn::connect(addr);
    let mut seen = Vec::new();
    let mut look = |c: &mut Conn, step: &str| {
        // Both from one INFO: the current spell grows between two.
        let stats = text(&c.cmd(&["INFO", "stats"]));
        let field = |name: &str| -> u64 {
            field_of(&stats, name)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {name}"))
        };
        let (total, current) = (
            field("total_eviction_exceeded_time"),
            field("current_eviction_exceeded_time"),
        );
        seen.push(format!(
            "{step}: current {} 200 ms, total {} current",
            if current >= 200 { ">=" } else { "<" },
            if total >= current { ">=" } else { "<" },
        ));
        (total, current)
    };
    look(&mut c, "start");
    c.cmd(&["SET", "k", "v"]);
    c.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
    let refused = text(&c.cmd(&["SET", "k2", "v"]));
    std::thread::sleep(Duration::from_millis(300));
    look(&mut c, &format!("over ({refused})"));
    c.cmd(&["CONFIG", "SET", "maxmemory", "1gb"]);
    c.cmd(&["PING"]);
    let (total, current) = look(&mut c, "under again");
    assert!(total >= 300 && current == 0, "{total} {current}");
    c.cmd(&["CONFIG", "RESETSTAT"]);
    look(&mut c, "reset");
    seen
}

#[test]
fn eviction_exceeded_time_matches_redis() {
    let redis = RedisServer::start().unwrap();
    let redline = RedlineServer::builder()
        .args(["--save", ""])
        .start()
        .unwrap();
    assert_eq!(exceeded_time(redline.addr()), exceeded_time(redis.addr()));
}

/// Which commands count as a use of a key, and what a key's last use becomes when it
/// is written over, moved or restored, as in Redis (`lfu-log-factor 0` makes every use
/// add one to the counter, so the counts compare exactly): a write over a key is a use
/// of the old one (SET, the STORE commands), a renamed or moved key keeps its history,
/// RESTORE REPLACE and COPY REPLACE make new keys, MEMORY USAGE and a write's own
/// bookkeeping (ZADD, XADD, HINCRBY) use nothing more, the blocking pops use what the
/// commands they fall back on use; under LRU, SET over a key long idle makes it fresh.
#[test]
fn uses_of_keys_count_like_redis() {
    let script: &[&[&str]] = &[
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
        &["CONFIG", "SET", "lfu-log-factor", "0"],
        &["SET", "a", "x"],
        &["GET", "a"],
        &["SET", "a", "y"],
        &["OBJECT", "FREQ", "a"],
        // Its reply is this server's own size: only that it uses nothing counts here.
        &["MEMORY", "USAGE", "a", "SAMPLES", "0"],
        &["OBJECT", "FREQ", "a"],
        &["RENAME", "a", "b"],
        &["OBJECT", "FREQ", "b"],
        &["SADD", "s", "m"],
        &["SUNIONSTORE", "b", "s"],
        &["OBJECT", "FREQ", "b"],
        &["MOVE", "b", "3"],
        &["SELECT", "3"],
        &["OBJECT", "FREQ", "b"],
        &["SELECT", "0"],
        &["ZADD", "z", "1", "m"],
        &["ZADD", "z", "2", "n"],
        &["OBJECT", "FREQ", "z"],
        &["XADD", "x", "1-1", "f", "v"],
        &["XADD", "x", "2-1", "f", "v"],
        &["OBJECT", "FREQ", "x"],
        &["HINCRBY", "h", "f", "1"],
        &["HINCRBY", "h", "f", "1"],
        &["OBJECT", "FREQ", "h"],
        &["COPY", "z", "h", "REPLACE"],
        &["OBJECT", "FREQ", "h"],
        &["SET", "s1", "v"],
        &["SET", "s1", "w", "XX", "GET"],
        &["SETNX", "s1", "v"],
        &["OBJECT", "FREQ", "s1"],
        &["RPUSH", "l", "a", "b"],
        &["LMOVE", "l", "l", "LEFT", "RIGHT"],
        &["OBJECT", "FREQ", "l"],
        &["XGROUP", "CREATE", "x", "g", "0"],
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"],
        &["XCLAIM", "x", "g", "d", "0", "1-1"],
        &["OBJECT", "FREQ", "x"],
        &["PFADD", "p", "a"],
        &["PFADD", "p", "b"],
        &["PFMERGE", "p", "p"],
        &["OBJECT", "FREQ", "p"],
        // The blocking pops when they need not block: BLMOVE looks its source up, then
        // LMOVE's lookups follow; BZPOPMIN's and BZMPOP's ZPOP looks the key up again.
        &["RPUSH", "bl", "a", "b", "c", "d"],
        &["BLMOVE", "bl", "bl2", "LEFT", "RIGHT", "0"],
        &["BRPOPLPUSH", "bl", "bl2", "0"],
        &["BLPOP", "bl", "0"],
        &["OBJECT", "FREQ", "bl"],
        &["OBJECT", "FREQ", "bl2"],
        &["RPUSH", "one", "x"],
        &["BLMOVE", "one", "one", "LEFT", "RIGHT", "0"],
        &["OBJECT", "FREQ", "one"],
        &["ZADD", "bz", "1", "a", "2", "b", "3", "c"],
        &["BZPOPMIN", "bz", "0"],
        &["BZMPOP", "0", "1", "bz", "MAX"],
        &["OBJECT", "FREQ", "bz"],
        // ZMPOP, not blocking, looks the key up once.
        &["ZADD", "zm", "1", "a", "2", "b"],
        &["ZMPOP", "1", "zm", "MIN"],
        &["OBJECT", "FREQ", "zm"],
        // COPY looks its destination up, whether or not it replaces it.
        &["SET", "cdst", "v"],
        &["COPY", "num", "cdst"],
        &["OBJECT", "FREQ", "cdst"],
        // Counters (whole numbers past Redis's shared integers): INCR's one lookup is a
        // use even when the value is no integer; INCRBYFLOAT's and HINCRBYFLOAT's too,
        // once; MSETNX looks keys up until one exists; GETEX PERSIST once.
        &["SET", "num", "100000"],
        &["INCR", "num"],
        &["INCRBY", "num", "5"],
        &["DECR", "num"],
        &["DECRBY", "num", "5"],
        &["INCRBYFLOAT", "num", "1.5"],
        &["OBJECT", "FREQ", "num"],
        &["SET", "word", "abc"],
        &["INCR", "word"],
        &["INCRBYFLOAT", "word", "1"],
        &["MSETNX", "word", "x", "other", "y"],
        &["GETEX", "word", "PERSIST"],
        &["OBJECT", "FREQ", "word"],
        &["HINCRBYFLOAT", "hf", "f", "1.5"],
        &["HINCRBYFLOAT", "hf", "f", "1.5"],
        &["OBJECT", "FREQ", "hf"],
        // RENAME looks up the source, then the destination, whatever it answers.
        &["RENAME", "hf", "hf"],
        &["RENAMENX", "hf", "hf"],
        &["RENAMENX", "hf", "word"],
        &["OBJECT", "FREQ", "hf"],
        &["OBJECT", "FREQ", "word"],
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
        &["SET", "old", "v"],
        &["OBJECT", "IDLETIME", "old"],
        &["CONFIG", "SET", "lfu-log-factor", "10"],
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    ];
    let restore_over_an_idle_key = |c: &mut Conn| -> Vec<String> {
        c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
        let Frame::Bulk(payload) = c.cmd(&["DUMP", "old"]) else {
            panic!("DUMP")
        };
        let payload = &payload[..];
        c.cmd(&["SET", "whole", "100000"]);
        let Frame::Bulk(counter) = c.cmd(&["DUMP", "whole"]) else {
            panic!("DUMP")
        };
        let counter = &counter[..];
        let steps: &[&[&[u8]]] = &[
            &[b"RESTORE", b"idle", b"0", payload, b"IDLETIME", b"5000"],
            &[b"OBJECT", b"IDLETIME", b"idle"],
            &[b"SET", b"idle", b"w"],
            &[b"OBJECT", b"IDLETIME", b"idle"],
            &[
                b"RESTORE",
                b"idle",
                b"0",
                payload,
                b"REPLACE",
                b"IDLETIME",
                b"5000",
            ],
            &[b"RESTORE", b"idle", b"0", payload, b"REPLACE"],
            &[b"OBJECT", b"IDLETIME", b"idle"],
            // A counter long idle is fresh once incremented (it was not: INCR kept
            // the old time, so LRU evicted hot counters first).
            &[b"RESTORE", b"counter", b"0", counter, b"IDLETIME", b"5000"],
            &[b"OBJECT", b"IDLETIME", b"counter"],
            &[b"INCR", b"counter"],
            &[b"OBJECT", b"IDLETIME", b"counter"],
            &[b"CONFIG", b"SET", b"maxmemory-policy", b"noeviction"],
        ];
        steps.iter().map(|a| format!("{:?}", c.cmd(a))).collect()
    };
    let ours = common::Redline::start();
    let theirs = RedisServer::start().unwrap();
    let mut seen = Vec::new();
    for addr in [ours.addr, theirs.addr()] {
        let mut c = Conn::connect(addr);
        let mut lines: Vec<String> = common::transcript(&mut c, script)
            .into_iter()
            .filter(|l| !l.contains("\"MEMORY\""))
            .collect();
        lines.extend(restore_over_an_idle_key(&mut c));
        seen.push(lines);
    }
    assert_eq!(seen[0], seen[1]);
}

/// The uses a blocked client's serving records, as in Redis (`lfu-log-factor 0`): one
/// lookup of the key the write made ready and the pop's or read's own, a blocked
/// XREADGROUP's two when it blocks and one when served, BLMOVE's destination once. (A
/// blocking read looked its stream up five times, BLMOVE its source and destination
/// twice; a write that changed nothing marked its keys ready.)
#[test]
fn serving_blocked_clients_uses_keys_like_redis() {
    let cases: &[(&[&str], &[&str], &[&str])] = &[
        (&["BLPOP", "l", "0"], &["LPUSH", "l", "a", "b"], &["l"]),
        (
            &["BLMOVE", "l2", "d", "LEFT", "RIGHT", "0"],
            &["LPUSH", "l2", "a", "b"],
            &["l2", "d"],
        ),
        (
            &["BZPOPMIN", "z", "0"],
            &["ZADD", "z", "1", "a", "2", "b"],
            &["z"],
        ),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "BLOCK",
                "0",
                "STREAMS",
                "x",
                ">",
            ],
            &["XADD", "x", "*", "f", "v"],
            &["x"],
        ),
        (
            &["XREAD", "BLOCK", "0", "STREAMS", "x", "$"],
            &["XADD", "x", "*", "f", "v"],
            &["x"],
        ),
    ];
    let freqs = |port: u16| -> Vec<String> {
        let (mut writer, mut waiter) = (common::conn(port), common::conn(port));
        writer.ok(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]);
        writer.ok(&["CONFIG", "SET", "lfu-log-factor", "0"]);
        writer.ok(&["CONFIG", "SET", "lfu-decay-time", "0"]);
        writer.ok(&["XGROUP", "CREATE", "x", "g", "$", "MKSTREAM"]);
        writer.cmd(&["RPUSH", "d", "x"]);
        let mut out = Vec::new();
        for (block, write, keys) in cases {
            common::serve_blocked(port, (&mut waiter, &mut writer), block, write);
            for key in *keys {
                out.push(format!("{key} {:?}", writer.cmd(&["OBJECT", "FREQ", key])));
            }
        }
        let stats = common::text(&writer.cmd(&["INFO", "stats"]));
        out.extend(
            stats
                .lines()
                .filter(|l| l.starts_with("keyspace_"))
                .map(str::to_string),
        );
        writer.ok(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
        out
    };
    let ours = common::Redline::start();
    let theirs = RedisServer::start().unwrap();
    assert_eq!(freqs(ours.addr.port()), freqs(theirs.port()));
}
