//! CLIENT PAUSE / UNPAUSE against redis-server 7.0 and redline-server side by side: the
//! same steps on several connections, where a paused command's reply is read only after
//! the step that should release it; other connections' reads in between prove what ran
//! and what waited. No timing is asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;

use common::{show, Conn, Redline};
use redline_testkit::RedisServer;

/// A step: who, what to send (nothing: only read), and whether to read one reply now.
type Step = (usize, &'static [&'static str], bool);

fn run(addr: SocketAddr, steps: &[Step]) -> Vec<String> {
    let mut conns: Vec<Conn> = (0..4).map(|_| Conn::connect(addr)).collect();
    conns[0].cmd(&["FLUSHALL"]);
    let mut out = Vec::new();
    for (i, (who, args, read)) in steps.iter().enumerate() {
        if !args.is_empty() {
            conns[*who].send(args);
        }
        if *read {
            let reply = conns[*who].read().expect("a reply");
            out.push(format!("{i} {who} {args:?} -> {}", show(&reply)));
        }
    }
    out
}

fn compare(steps: &[Step]) {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let expected = run(redis.addr(), steps);
    let got = run(redline.addr, steps);
    assert_eq!(got, expected);
}

#[test]
fn pause_errors_match_redis() {
    compare(&[
        (0, &["CLIENT", "PAUSE"], true),
        (0, &["CLIENT", "PAUSE", "abc"], true),
        (0, &["CLIENT", "PAUSE", "-1"], true),
        (0, &["CLIENT", "PAUSE", "99999999999999999999"], true),
        (0, &["CLIENT", "PAUSE", "9223372036854775807"], true),
        (0, &["CLIENT", "PAUSE", "10", "foo"], true),
        (0, &["CLIENT", "PAUSE", "abc", "foo"], true),
        (0, &["CLIENT", "PAUSE", "10", "all", "x"], true),
        (0, &["CLIENT", "UNPAUSE", "x"], true),
        (0, &["CLIENT", "UNPAUSE"], true),
        (0, &["CLIENT", "PAUSE", "0"], true),
        (0, &["CLIENT", "PAUSE", "0", "WRITE"], true),
        (0, &["PING"], true),
    ]);
}

#[test]
fn write_pause_holds_writes_until_unpause() {
    compare(&[
        (1, &["MULTI"], true),
        (1, &["SET", "x", "1"], true),
        (0, &["CLIENT", "PAUSE", "100000", "WRITE"], true),
        // Held: a write, a pipelined read behind it, a publish, an EXEC with a write.
        (2, &["SET", "k", "v"], false),
        (2, &["GET", "k"], false),
        (3, &["PUBLISH", "ch", "m"], false),
        (1, &["EXEC"], false),
        // Reads of other clients run meanwhile and see nothing written.
        (0, &["GET", "k"], true),
        (0, &["GET", "x"], true),
        (0, &["EXISTS", "k", "x"], true),
        (0, &["CLIENT", "UNPAUSE"], true),
        (2, &[], true),
        (2, &[], true),
        (3, &[], true),
        (1, &[], true),
        (0, &["MGET", "k", "x"], true),
        // A pause only grows: a shorter or weaker one changes nothing.
        (0, &["CLIENT", "PAUSE", "100000", "WRITE"], true),
        (0, &["CLIENT", "PAUSE", "0", "WRITE"], true),
        (2, &["DEL", "k"], false),
        (0, &["EXISTS", "k"], true),
        (0, &["CLIENT", "UNPAUSE"], true),
        (2, &[], true),
        (0, &["EXISTS", "k"], true),
    ]);
}

#[test]
fn all_pause_holds_everything_including_the_pauser() {
    compare(&[
        (0, &["SET", "k", "1"], true),
        (0, &["CLIENT", "PAUSE", "300", "ALL"], true),
        (1, &["INCR", "k"], false),
        // (Held clients are released together: only order-free commands here.)
        (2, &["PING"], false),
        // Even UNPAUSE waits for the deadline in ALL mode.
        (0, &["CLIENT", "UNPAUSE"], false),
        (0, &[], true),
        (1, &[], true),
        (2, &[], true),
        (0, &["GET", "k"], true),
    ]);
}
