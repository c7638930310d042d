//! Keyspace notifications and client-side caching against redis-server 7.0 and
//! redline-server side by side: the same commands must produce the same notification
//! stream (channels, event names, order) and the same invalidation messages (RESP3
//! pushes, RESP2 redirection on `__redis__:invalidate`, BCAST, FLUSHALL nulls).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{show, Conn, Redline};
use redline_resp::Frame;
use redline_testkit::RedisServer;

/// Commands whose notifications are compared (each answers one reply).
const COMMANDS: &[&[&str]] = &[
    &["SET", "foo", "bar", "EX", "100"],
    &["SETNX", "foo", "x"],
    &["APPEND", "foo", "x"],
    &["SETRANGE", "foo", "0", "y"],
    &["INCR", "n"],
    &["INCRBYFLOAT", "n", "1.5"],
    &["EXPIRE", "foo", "100"],
    &["PERSIST", "foo"],
    &["RENAME", "foo", "foo2"],
    &["COPY", "foo2", "foo3"],
    &["MOVE", "foo3", "1"],
    &["GETDEL", "foo2"],
    &["MSET", "a", "1", "b", "2"],
    &["DEL", "a", "b", "missing"],
    &["EXPIRE", "n", "-1"],
    &["LPUSH", "l", "a", "b"],
    &["RPUSH", "l", "c", "d"],
    &["LPOP", "l"],
    &["RPOP", "l"],
    &["LINSERT", "l", "BEFORE", "b", "z"],
    &["LSET", "l", "0", "q"],
    &["LREM", "l", "0", "q"],
    &["LTRIM", "l", "0", "0"],
    &["LMOVE", "l", "l2", "LEFT", "RIGHT"],
    &["RPOPLPUSH", "l2", "l3"],
    // A one-element list rotated onto itself keeps its key (no `del`), blocking or not.
    &["RPUSH", "r", "x"],
    &["BLMOVE", "r", "r", "LEFT", "RIGHT", "0"],
    &["LMOVE", "r", "r", "RIGHT", "LEFT"],
    &["RPUSH", "r2", "a", "b"],
    &["BLMOVE", "r2", "r3", "RIGHT", "LEFT", "0"],
    &["BRPOPLPUSH", "r2", "r3", "0"],
    &["BLPOP", "r3", "0"],
    &["HSET", "h", "f", "v"],
    &["HSETNX", "h", "g", "1"],
    &["HINCRBY", "h", "g", "1"],
    &["HINCRBYFLOAT", "h", "k", "1.5"],
    &["HDEL", "h", "f", "g", "k"],
    &["SADD", "s", "a", "b"],
    &["SREM", "s", "a"],
    &["SMOVE", "s", "s2", "b"],
    &["SADD", "s3", "x"],
    &["SUNIONSTORE", "s4", "s3", "s2"],
    &["SINTERSTORE", "s5", "s3", "s2"],
    &["SDIFFSTORE", "s4", "s3", "s3"],
    &["SPOP", "s3"],
    &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
    &["ZINCRBY", "z", "1", "a"],
    &["ZREM", "z", "a"],
    &["ZPOPMIN", "z"],
    &["ZUNIONSTORE", "z2", "1", "z"],
    &["ZRANGESTORE", "z3", "z2", "0", "-1"],
    &["ZREMRANGEBYSCORE", "z", "0", "10"],
    &["ZREMRANGEBYRANK", "z2", "0", "-1"],
    &["SETBIT", "bits", "1", "1"],
    &["BITOP", "NOT", "bits2", "bits"],
    &["PFADD", "hll", "a", "b"],
    &["PFMERGE", "hll2", "hll"],
    &["RPUSH", "tosort", "3", "1", "2"],
    &["SORT", "tosort", "STORE", "sorted"],
    &["SET", "t", "1", "PX", "1"],
];

/// Runs `COMMANDS` on `addr` with `notify-keyspace-events` set to `flags` and returns
/// every message a `PSUBSCRIBE *` client received, in order.
fn notification_stream(addr: SocketAddr, flags: &str) -> Vec<String> {
    let mut writer = Conn::connect(addr);
    writer.cmd(&["FLUSHALL"]);
    writer.cmd(&["CONFIG", "SET", "notify-keyspace-events", flags]);
    let mut subscriber = Conn::connect(addr);
    subscriber.cmd(&["PSUBSCRIBE", "*"]);
    for command in COMMANDS {
        writer.cmd(command);
    }
    // `t` expires: lazily on this GET, or earlier by the active cycle.
    std::thread::sleep(Duration::from_millis(20));
    writer.cmd(&["GET", "t"]);
    writer.cmd(&["PUBLISH", "end", "."]);
    let mut out = Vec::new();
    loop {
        let message = subscriber.read().expect("notification");
        let text = show(&message);
        if text.contains("\"end\"") {
            break;
        }
        out.push(text);
    }
    writer.cmd(&["CONFIG", "SET", "notify-keyspace-events", ""]);
    out
}

#[test]
fn notification_streams_match_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    for flags in ["KEA", "E$lg", "Kx", "En", "KEg"] {
        let expected = notification_stream(redis.addr(), flags);
        let actual = notification_stream(redline.addr, flags);
        assert!(!expected.is_empty() || flags == "Kx");
        assert_eq!(actual, expected, "notify-keyspace-events {flags}");
    }
}

#[test]
fn notify_flags_read_back_as_redis_prints_them() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    for flags in ["KEA", "AKEm", "xE", "gn", "Kg$lshzxetd", "", "KEQ"] {
        let mut results = Vec::new();
        for addr in [redis.addr(), redline.addr] {
            let mut c = Conn::connect(addr);
            let set = c.cmd(&["CONFIG", "SET", "notify-keyspace-events", flags]);
            let get = c.cmd(&["CONFIG", "GET", "notify-keyspace-events"]);
            results.push((show(&set), show(&get)));
        }
        assert_eq!(results[1], results[0], "{flags}");
    }
}

/// A step: who, what (`$ID<n>` stands for client `n`'s id), how many replies to read.
type Step = (usize, &'static [&'static str], usize);

fn run_tracking(addr: SocketAddr, steps: &[Step]) -> Vec<String> {
    let mut conns: Vec<Conn> = (0..3).map(|_| Conn::connect(addr)).collect();
    conns[0].cmd(&["FLUSHALL"]);
    let ids: Vec<String> = conns
        .iter_mut()
        .map(|c| match c.cmd(&["CLIENT", "ID"]) {
            Frame::Integer(id) => id.to_string(),
            other => panic!("CLIENT ID answered {other:?}"),
        })
        .collect();
    let mut out = Vec::new();
    for (who, args, replies) in steps {
        if !args.is_empty() {
            let args: Vec<String> = args
                .iter()
                .map(|a| match a.strip_prefix("$ID") {
                    Some(n) => ids[n.parse::<usize>().unwrap()].clone(),
                    None => a.to_string(),
                })
                .collect();
            conns[*who].send(&args);
        }
        for _ in 0..*replies {
            let reply = show(&conns[*who].read().expect("reply"));
            // Client ids differ between the servers (HELLO, CLIENT GETREDIR/TRACKINGINFO).
            let reply = ids
                .iter()
                .enumerate()
                .fold(reply, |r, (i, id)| match args.first() {
                    Some(&"HELLO") => r.replace(
                        &format!("(Bulk(b\"id\"), Integer({id}))"),
                        &format!("(Bulk(b\"id\"), ID{i})"),
                    ),
                    Some(&"CLIENT") => r.replace(&format!("Integer({id})"), &format!("ID{i}")),
                    _ => r,
                });
            out.push(format!("{who}: {reply}"));
        }
    }
    out
}

#[test]
fn tracking_scenarios_match_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let scenarios: &[&[Step]] = &[
        // RESP3 default mode: one push per read key, after the reply that caused it.
        &[
            (0, &["HELLO", "3"], 1),
            (0, &["CLIENT", "TRACKING", "ON"], 1),
            (1, &["MSET", "a", "1", "b", "2"], 1),
            (0, &["MGET", "a", "b", "c"], 1),
            (1, &["SET", "a", "2"], 1),
            (0, &[], 1),
            (0, &["HSET", "h", "f", "1"], 1),
            (0, &["HGET", "h", "f"], 1),
            (0, &["HDEL", "h", "f"], 2),
            (0, &["CLIENT", "TRACKINGINFO"], 1),
            (0, &["CLIENT", "GETREDIR"], 1),
            (1, &["FLUSHALL"], 1),
            (0, &[], 1),
            (0, &["MULTI"], 1),
            (0, &["GET", "b"], 1),
            (0, &["SET", "b", "3"], 1),
            (0, &["EXEC"], 2),
        ],
        // RESP2 redirection to a subscriber of __redis__:invalidate, NOLOOP.
        &[
            (1, &["SUBSCRIBE", "__redis__:invalidate"], 1),
            (
                0,
                &["CLIENT", "TRACKING", "ON", "REDIRECT", "$ID1", "NOLOOP"],
                1,
            ),
            (0, &["GET", "x"], 1),
            (0, &["GET", "y"], 1),
            (0, &["SET", "x", "1"], 1),
            (2, &["SET", "y", "1"], 1),
            (1, &[], 1),
            (0, &["CLIENT", "GETREDIR"], 1),
            (0, &["CLIENT", "TRACKING", "OFF"], 1),
            (0, &["CLIENT", "GETREDIR"], 1),
        ],
        // BCAST with prefixes, and their errors.
        &[
            (0, &["HELLO", "3"], 1),
            (
                0,
                &[
                    "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a:", "PREFIX", "b:",
                ],
                1,
            ),
            (
                0,
                &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a:x"],
                1,
            ),
            (
                0,
                &[
                    "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "c", "PREFIX", "cd",
                ],
                1,
            ),
            (0, &["CLIENT", "TRACKING", "ON", "PREFIX", "c"], 1),
            (0, &["CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"], 1),
            (1, &["MSET", "a:1", "1", "a:2", "2", "z", "0"], 1),
            (0, &[], 1),
            (1, &["INCR", "b:1"], 1),
            (0, &[], 1),
            (0, &["CLIENT", "TRACKINGINFO"], 1),
        ],
        // OPTIN / OPTOUT and CLIENT CACHING.
        &[
            (0, &["HELLO", "3"], 1),
            (0, &["CLIENT", "CACHING", "YES"], 1),
            (0, &["CLIENT", "TRACKING", "ON", "OPTIN"], 1),
            (0, &["CLIENT", "CACHING", "NO"], 1),
            (0, &["GET", "k1"], 1),
            (0, &["CLIENT", "CACHING", "YES"], 1),
            (0, &["CLIENT", "TRACKINGINFO"], 1),
            (0, &["GET", "k2"], 1),
            (1, &["SET", "k1", "1"], 1),
            (1, &["SET", "k2", "1"], 1),
            (0, &["PING"], 2),
            (0, &["CLIENT", "TRACKING", "ON", "OPTOUT"], 1),
            (0, &["CLIENT", "TRACKING", "OFF"], 1),
            (0, &["CLIENT", "TRACKING", "ON", "OPTOUT"], 1),
            (0, &["CLIENT", "CACHING", "NO"], 1),
            (0, &["GET", "k3"], 1),
            (0, &["GET", "k4"], 1),
            (1, &["MSET", "k3", "1", "k4", "1"], 1),
            (0, &["PING"], 2),
        ],
    ];
    for (n, steps) in scenarios.iter().enumerate() {
        let expected = run_tracking(redis.addr(), steps);
        let actual = run_tracking(redline.addr, steps);
        assert_eq!(actual, expected, "scenario {n}");
    }
}
