//! Pub/sub against redis-server 7.0 and redline-server side by side: confirmations,
//! messages, patterns, shard channels, PUBSUB introspection, the RESP2 subscribed
//! context and RESP3 pushes; and a subscriber that never reads is disconnected at its
//! output-buffer limit instead of growing the server's memory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{show, Conn, Redline};
use redline_resp::Frame;
use redline_testkit::RedisServer;

/// A step: who, what, and how many replies to read afterwards.
type Step = (usize, &'static [&'static str], usize);

fn run(addr: SocketAddr, steps: &[Step], resp3: bool) -> Vec<String> {
    let mut conns: Vec<Conn> = (0..3).map(|_| Conn::connect(addr)).collect();
    conns[0].cmd(&["FLUSHALL"]);
    if resp3 {
        for c in conns.iter_mut() {
            c.cmd(&["HELLO", "3"]);
        }
    }
    let mut out = Vec::new();
    for (who, args, replies) in steps {
        if !args.is_empty() {
            conns[*who].send(args);
        }
        for _ in 0..*replies {
            out.push(format!("{who}: {}", show(&conns[*who].read().unwrap())));
        }
    }
    out
}

#[test]
fn pubsub_scenarios_match_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let scenarios: &[&[Step]] = &[
        &[
            (0, &["SUBSCRIBE", "news", "sport"], 2),
            (1, &["PUBLISH", "news", "hello"], 1),
            (0, &[], 1),
            (1, &["PUBLISH", "nobody", "x"], 1),
            (0, &["PING"], 1),
            (0, &["PING", "arg"], 1),
            (0, &["GET", "k"], 1),
            (0, &["ECHO", "x"], 1),
            (1, &["PUBSUB", "NUMSUB", "news", "sport", "none"], 1),
            (1, &["PUBSUB", "NUMPAT"], 1),
            (0, &["UNSUBSCRIBE", "news"], 1),
            (0, &["UNSUBSCRIBE", "never"], 1),
            (0, &["UNSUBSCRIBE"], 1),
            (0, &["UNSUBSCRIBE"], 1),
            (0, &["GET", "k"], 1),
        ],
        &[
            (0, &["PSUBSCRIBE", "n*", "h?llo"], 2),
            (2, &["SUBSCRIBE", "news"], 1),
            (1, &["PUBLISH", "news", "m1"], 1),
            (0, &[], 1),
            (2, &[], 1),
            (1, &["PUBLISH", "hello", "m2"], 1),
            (0, &[], 1),
            (1, &["PUBSUB", "NUMPAT"], 1),
            (1, &["PUBSUB", "CHANNELS"], 1),
            (1, &["PUBSUB", "CHANNELS", "x*"], 1),
            (0, &["PUNSUBSCRIBE", "n*"], 1),
            (0, &["PUNSUBSCRIBE"], 1),
            (0, &["PUNSUBSCRIBE"], 1),
        ],
        &[
            (0, &["SSUBSCRIBE", "sc"], 1),
            (0, &["SUBSCRIBE", "c"], 1),
            (1, &["SPUBLISH", "sc", "shard-msg"], 1),
            (0, &[], 1),
            (1, &["PUBLISH", "sc", "not-shard"], 1),
            (1, &["PUBSUB", "SHARDCHANNELS"], 1),
            (1, &["PUBSUB", "SHARDNUMSUB", "sc", "x"], 1),
            (0, &["SUNSUBSCRIBE", "sc"], 1),
            (0, &["SUNSUBSCRIBE"], 1),
            (0, &["UNSUBSCRIBE", "c"], 1),
            (0, &["RESET"], 1),
            (0, &["GET", "k"], 1),
        ],
        &[
            (0, &["SUBSCRIBE", "a"], 1),
            (0, &["RESET"], 1),
            (1, &["PUBLISH", "a", "gone"], 1),
            (0, &["PING"], 1),
            (1, &["PUBSUB", "NUMSUB", "a"], 1),
            (1, &["MULTI"], 1),
            (1, &["SUBSCRIBE", "m"], 1),
            (1, &["PUBLISH", "m", "x"], 1),
            (1, &["EXEC"], 1),
            (2, &["PUBLISH", "m", "after"], 1),
            (1, &[], 1),
            (1, &["PUBSUB", "FOO"], 1),
            (1, &["PUBLISH", "m"], 1),
        ],
    ];
    for (n, steps) in scenarios.iter().enumerate() {
        for resp3 in [false, true] {
            let a = run(redis.addr(), steps, resp3);
            let b = run(redline.addr, steps, resp3);
            assert_eq!(a, b, "scenario {n} (resp3: {resp3})");
        }
    }
}

/// A connection to `addr` after it set `client-output-buffer-limit` to `limit`.
fn connect_with_output_limit(addr: SocketAddr, limit: &str) -> Conn {
    let mut admin = Conn::connect(addr);
    let r = admin.cmd(&["CONFIG", "SET", "client-output-buffer-limit", limit]);
    assert_eq!(show(&r), show(&Frame::Simple("OK".into())));
    admin
}

/// A subscriber that never reads is disconnected once its pending output passes the
/// pubsub hard limit, on both servers, and the publisher carries on.
#[test]
fn slow_subscriber_hits_the_output_buffer_limit() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    for addr in [redis.addr(), redline.addr] {
        connect_with_output_limit(addr, "pubsub 262144 0 0");
        let mut slow = Conn::connect(addr);
        slow.cmd(&["SUBSCRIBE", "firehose"]);
        // Shrink the socket buffers' share by sending far more than kernel buffers hold.
        let payload = "x".repeat(64 * 1024);
        let mut publisher = Conn::connect(addr);
        let mut disconnected = false;
        for _ in 0..2000 {
            publisher.cmd(&["PUBLISH", "firehose", &payload]);
            if let Frame::Array(v) = publisher.cmd(&["PUBSUB", "NUMSUB", "firehose"]) {
                if v.get(1) == Some(&Frame::Integer(0)) {
                    disconnected = true;
                    break;
                }
            }
        }
        assert!(disconnected, "slow subscriber still connected at {addr}");
        // Whatever it had received, the connection ends.
        std::thread::sleep(Duration::from_millis(50));
        let mut drained = 0;
        while slow.read().is_some() {
            drained += 1;
            assert!(drained < 100_000);
        }
        assert_eq!(publisher.cmd(&["PING"]), Frame::Simple("PONG".into()));
    }
}

/// Past the pubsub soft limit, a subscriber that never reads is closed once the soft
/// time runs out even when no message arrives any more to find it, on both servers.
#[test]
fn the_soft_limit_runs_out_without_traffic() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    for addr in [redis.addr(), redline.addr] {
        let mut admin = connect_with_output_limit(addr, "pubsub 0 100000 1");
        let mut slow = Conn::connect(addr);
        slow.cmd(&["SUBSCRIBE", "quiet"]);
        let payload = "x".repeat(10_000);
        // Publish until the server holds more than the soft limit for the subscriber
        // (the kernel's socket buffers take the first megabytes), then stop. The output
        // must still be over the limit a moment later: one CLIENT LIST can catch it
        // before the writer hands it to a socket buffer with room left, and output that
        // drains below the soft limit restarts its timer (the CI run of stop 61 failed so).
        let mut published = 0;
        while numsub(&mut admin, "quiet") == 1 && !output_stays_over(&mut admin, 100_000) {
            admin.cmd(&["PUBLISH", "quiet", &payload]);
            published += 1;
            assert!(published < 20_000, "the output never grew at {addr}");
        }
        let stopped = std::time::Instant::now();
        while numsub(&mut admin, "quiet") == 1 {
            assert!(
                stopped.elapsed() < Duration::from_secs(5),
                "still subscribed 5 s after the traffic stopped at {addr}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn numsub(c: &mut Conn, channel: &str) -> i64 {
    match c.cmd(&["PUBSUB", "NUMSUB", channel]) {
        Frame::Array(v) => match v.get(1) {
            Some(Frame::Integer(n)) => *n,
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

/// Whether the largest `omem` is over `limit` now and still 100 ms later.
fn output_stays_over(c: &mut Conn, limit: u64) -> bool {
    if subscriber_omem(c) <= limit {
        return false;
    }
    std::thread::sleep(Duration::from_millis(100));
    subscriber_omem(c) > limit
}

/// The largest `omem` in CLIENT LIST.
fn subscriber_omem(c: &mut Conn) -> u64 {
    let list = match c.cmd(&["CLIENT", "LIST"]) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("{other:?}"),
    };
    list.split_whitespace()
        .filter_map(|f| f.strip_prefix("omem="))
        .filter_map(|v| v.parse().ok())
        .max()
        .unwrap_or(0)
}

/// Of `rounds` PUBLISHes, each sent on a second connection right after a subscriber
/// sent (P)UNSUBSCRIBE without waiting for its reply, the first that still reached that
/// subscriber (its round), if any.
fn first_publish_after_unsubscribe_that_arrived(addr: SocketAddr, rounds: usize) -> Option<usize> {
    let mut subscriber = Conn::connect(addr);
    let mut publisher = Conn::connect(addr);
    // An established connection, as the suite's: a new connection's first command is
    // read as soon as it is accepted, without waiting for the runtime's wake-up that
    // keeps the order (see `net::input_turns`).
    publisher.cmd(&["PING"]);
    for round in 0..rounds {
        let (subscribe, unsubscribe) = if round % 2 == 0 {
            (["PSUBSCRIBE", "chan1.*"], ["PUNSUBSCRIBE"])
        } else {
            (["SUBSCRIBE", "chan1.hi"], ["UNSUBSCRIBE"])
        };
        subscriber.cmd(&subscribe);
        subscriber.send(&unsubscribe);
        match publisher.cmd(&["PUBLISH", "chan1.hi", "hello"]) {
            Frame::Integer(0) => {}
            Frame::Integer(_) => return Some(round),
            other => panic!("{other:?}"),
        }
        subscriber.read().unwrap(); // the unsubscribe confirmation
    }
    None
}

/// A subscriber's UNSUBSCRIBE that reached the server before another connection's
/// PUBLISH runs first, as on Redis's one thread, though the two connections are served
/// on different workers here: the PUBLISH lets its listeners run the input they have
/// already received (Redis's suite: "PUBLISH/PSUBSCRIBE after PUNSUBSCRIBE without
/// arguments"). Without the wait, a run here failed at round 12 (and `race.py`, as
/// bench/NOTES.md says, half its rounds); the rounds are kept few because the
/// publisher's own read can still outrun the runtime on a machine loaded enough to
/// stall its worker between a reply and its next read (see `net::input_turns`).
#[test]
fn a_publish_after_an_unsubscribe_already_sent_does_not_reach_it() {
    let redis = RedisServer::start().unwrap();
    let ours = Redline::start();
    assert_eq!(
        first_publish_after_unsubscribe_that_arrived(redis.addr(), 150),
        None
    );
    assert_eq!(
        first_publish_after_unsubscribe_that_arrived(ours.addr, 150),
        None
    );
}

/// Of `rounds` PUBSUB NUMSUBs, each sent on a second connection right after a client
/// sent SUBSCRIBE (then UNSUBSCRIBE) without waiting for its reply, how many did not
/// count the change.
fn numsubs_before_a_subscribe_already_sent(addr: SocketAddr, rounds: usize) -> usize {
    let mut subscriber = Conn::connect(addr);
    let mut asker = Conn::connect(addr);
    // Established connections, as in `first_publish_after_unsubscribe_that_arrived`.
    subscriber.cmd(&["PING"]);
    asker.cmd(&["PING"]);
    let mut missed = 0;
    for _ in 0..rounds {
        subscriber.send(&["SUBSCRIBE", "ordered"]);
        missed += usize::from(numsub(&mut asker, "ordered") != 1);
        subscriber.read().unwrap();
        subscriber.send(&["UNSUBSCRIBE", "ordered"]);
        missed += usize::from(numsub(&mut asker, "ordered") != 0);
        subscriber.read().unwrap();
    }
    missed
}

/// PUBSUB's introspection counts a (UN)SUBSCRIBE that reached the server before it,
/// as on Redis's one thread: it lets every connection run the input it has already
/// received (go-redis's spec "should pub/sub channels" checks PUBSUB CHANNELS right
/// after a SUBSCRIBE it did not wait for). Without the wait, `order.py`
/// (bench/NOTES.md, stop 74) saw 32 of 2,000 miss. redis-server itself is not held to
/// it: here it missed 0 to 116 of 600 from run to run (its one thread takes the two
/// sockets' input in the order one `epoll_wait` lists them).
#[test]
fn pubsub_numsub_counts_a_subscribe_already_sent() {
    let redis = RedisServer::start().unwrap();
    let ours = Redline::start();
    let theirs = numsubs_before_a_subscribe_already_sent(redis.addr(), 300);
    let missed = numsubs_before_a_subscribe_already_sent(ours.addr, 300);
    assert!(
        missed <= 2,
        "missed {missed} of 600 (redis-server: {theirs})"
    );
}

/// Subscribes `sub` to `names`, a thousand per SUBSCRIBE; the last confirmation.
fn subscribe_all(sub: &mut Conn, names: &[String]) -> Frame {
    for batch in names.chunks(1000) {
        let mut args = vec!["SUBSCRIBE"];
        args.extend(batch.iter().map(String::as_str));
        sub.send(&args);
    }
    (0..names.len())
        .map(|_| sub.read().unwrap())
        .last()
        .unwrap()
}

/// What a client that subscribes many channels, drops every third by name and then
/// the rest without naming them is told, and what the server counts afterwards.
/// The confirmations of the unnamed UNSUBSCRIBE come in the server's own order (a
/// dict's in Redis; no order is promised), so they are compared as a set.
fn many_channels(addr: SocketAddr, n: usize) -> Vec<String> {
    let mut sub = Conn::connect(addr);
    let mut other = Conn::connect(addr);
    let names: Vec<String> = (0..n).map(|i| format!("channel:{i}")).collect();
    let mut seen = vec![show(&subscribe_all(&mut sub, &names))];
    let mut dropped = vec!["UNSUBSCRIBE"];
    dropped.extend(names.iter().step_by(3).map(String::as_str));
    sub.send(&dropped);
    let named: Vec<String> = (1..dropped.len())
        .map(|_| show(&sub.read().unwrap()))
        .collect();
    seen.extend(named);
    seen.push(show(&other.cmd(&[
        "PUBSUB",
        "NUMSUB",
        "channel:0",
        "channel:1",
    ])));
    seen.push(show(&other.cmd(&["PUBLISH", "channel:2", "x"])));
    seen.push(show(&sub.read().unwrap()));
    let left = n - dropped.len() + 1;
    sub.send(&["UNSUBSCRIBE"]);
    let mut rest: Vec<String> = (0..left)
        .map(|_| match sub.read().unwrap() {
            Frame::Array(parts) if parts.len() == 3 => show(&parts[1]),
            other => show(&other),
        })
        .collect();
    rest.sort();
    seen.extend(rest);
    seen.push(show(&sub.cmd(&["PING"])));
    seen.push(show(&other.cmd(&[
        "PUBSUB",
        "NUMSUB",
        "channel:1",
        "channel:2",
    ])));
    seen.push(show(&other.cmd(&["PUBLISH", "channel:2", "x"])));
    seen
}

/// Whether a subscriber whose UNSUBSCRIBE of all its `n` channels (subscribed a
/// thousand at a time) confirms past the pubsub hard limit is closed. The client is in
/// the pub/sub class while the confirmations are made, and in the normal one (no limit)
/// after the command.
fn closed_by_confirmations(addr: SocketAddr, n: usize) -> bool {
    let names: Vec<String> = (0..n).map(|i| format!("channel:{i}")).collect();
    let mut sub = Conn::connect(addr);
    subscribe_all(&mut sub, &names);
    sub.send(&["UNSUBSCRIBE"]);
    // Either the connection ends with no reply, or every confirmation comes.
    match sub.read() {
        None => true,
        Some(_) => {
            for _ in 1..n {
                assert!(sub.read().is_some(), "a confirmation missing at {addr}");
            }
            false
        }
    }
}

#[test]
fn confirmations_past_the_hard_limit_close_the_client_like_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    for addr in [redis.addr(), redline.addr] {
        connect_with_output_limit(addr, "pubsub 262144 0 0");
        assert!(closed_by_confirmations(addr, 20_000), "{addr}");
        // Under the limit, every confirmation comes.
        assert!(!closed_by_confirmations(addr, 2_000), "{addr}");
    }
}

#[test]
fn many_channels_subscribed_and_dropped_match_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let n = 30_000;
    assert_eq!(
        many_channels(redline.addr, n),
        many_channels(redis.addr(), n)
    );
}
