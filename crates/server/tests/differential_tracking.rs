//! Differential test for client-side caching's server half (CLIENT TRACKING): the same
//! generated steps run on a real redis-server 7.0 and on redline-server, and every
//! reply and every invalidation message must be the same, in the same place.
//!
//! Per server: client 0 speaks RESP3 and tracks in a mode drawn per sequence (default,
//! OPTIN, OPTOUT, BCAST with or without prefixes, NOLOOP); client 1 speaks RESP2 and
//! sends its invalidations to client 2, a subscriber of `__redis__:invalidate`; client 3
//! writes and reads without tracking. Steps are reads, writes of every type, flushes,
//! DEBUG RELOAD, transactions, scripts, CLIENT CACHING before a read, and tracking
//! turned off and on.
//! After each step every client sends PING and what arrived before its PONG is recorded,
//! so a push is compared where it lands among the replies. No TTL is short enough to
//! expire during a run.
//!
//! `DIFF_SEQUENCES=n` runs n sequences; `DIFF_SEED=n` runs sequence n alone and prints it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;

use common::{show, text, Conn, Redline};
use redline_resp::Frame;
use redline_testkit::RedisServer;

const KEYS: &[&str] = &["a:1", "a:2", "b:1", "c"];
const VALUES: &[&str] = &["1", "x", "2"];
/// Client 0 (RESP3, tracking), 1 (RESP2, redirecting), 2 (subscriber), 3 (plain).
const CLIENTS: usize = 4;
const SUBSCRIBER: usize = 2;

fn words(ws: &[&str]) -> Vec<String> {
    ws.iter().map(|w| w.to_string()).collect()
}

struct Gen {
    rng: fastrand::Rng,
}

impl Gen {
    fn pick(&mut self, from: &[&str]) -> String {
        from[self.rng.usize(..from.len())].to_string()
    }
    fn chance(&mut self, percent: u32) -> bool {
        self.rng.u32(..100) < percent
    }

    /// CLIENT TRACKING ON and its options (`@2`: client 2's id).
    fn tracking(&mut self, redirect: bool) -> Vec<String> {
        let mut c = words(&["CLIENT", "TRACKING", "ON"]);
        if redirect {
            c.extend(words(&["REDIRECT", "@2"]));
        }
        match self.rng.usize(..5) {
            0 => {}
            1 => c.push("OPTIN".into()),
            2 => c.push("OPTOUT".into()),
            3 => c.push("BCAST".into()),
            _ => {
                c.push("BCAST".into());
                for prefix in ["a:", "b"] {
                    if self.chance(70) {
                        c.extend(words(&["PREFIX", prefix]));
                    }
                }
            }
        }
        if self.chance(30) {
            c.push("NOLOOP".into());
        }
        c
    }

    fn read(&mut self) -> Vec<String> {
        let k = self.pick(KEYS);
        match self.rng.usize(..22) {
            0..=2 => words(&["GET", &k]),
            3 => words(&["MGET", &k, &self.pick(KEYS)]),
            4 => words(&["HGET", &k, "f"]),
            5 => words(&["LRANGE", &k, "0", "-1"]),
            6 => words(&["EXISTS", &k, &self.pick(KEYS)]),
            7 => words(&["STRLEN", &k]),
            8 => words(&["TYPE", &k]),
            9 => words(&["SCARD", &k]),
            10 => words(&["HGETALL", &k]),
            11 => words(&["LINDEX", &k, "0"]),
            12 => words(&["SISMEMBER", &k, "x"]),
            13 => words(&["ZSCORE", &k, "x"]),
            14 => words(&["GETRANGE", &k, "0", "2"]),
            15 => words(&["BITCOUNT", &k]),
            16 => words(&["OBJECT", "ENCODING", &k]),
            17 => words(&["SORT_RO", &k, "ALPHA"]),
            18 => words(&["LCS", &k, &self.pick(KEYS)]),
            // Not PFCOUNT: a tracking client's PFCOUNT that rewrites the cached count of
            // a key it did not track yet invalidates it for the client itself here, since
            // redline-server tracks a read's keys before it runs; Redis tracks them after.
            19 => words(&["HLEN", &k]),
            20 => words(&["XLEN", &k]),
            _ => words(&["EVAL_RO", "return redis.call('get', KEYS[1])", "1", &k]),
        }
    }

    fn write(&mut self) -> Vec<String> {
        let k = self.pick(KEYS);
        let v = self.pick(VALUES);
        match self.rng.usize(..30) {
            0..=2 => words(&["SET", &k, &v]),
            3 => words(&["DEL", &k, &self.pick(KEYS)]),
            4 => words(&["INCR", &k]),
            5 => words(&["APPEND", &k, &v]),
            6 => words(&["HSET", &k, "f", &v]),
            7 => words(&["LPUSH", &k, &v]),
            8 => words(&["SADD", &k, &v]),
            9 => words(&["EXPIRE", &k, "1000"]),
            10 => words(&["RENAME", &k, &self.pick(KEYS)]),
            11 => words(&["MSET", &k, &v, &self.pick(KEYS), &v]),
            12 => words(&["COPY", &k, &self.pick(KEYS), "REPLACE"]),
            // DEBUG RELOAD empties the dataset as the flushes do.
            13 => match self.rng.usize(..3) {
                0 => words(&["FLUSHDB"]),
                1 => words(&["FLUSHALL"]),
                _ => words(&["DEBUG", "RELOAD"]),
            },
            14 => words(&["SELECT", if self.chance(70) { "0" } else { "1" }]),
            15 => words(&["SETRANGE", &k, "1", &v]),
            16 => words(&["GETDEL", &k]),
            17 => words(&["GETEX", &k, "PERSIST"]),
            18 => words(&["HINCRBY", &k, "f", "1"]),
            19 => words(&["ZADD", &k, "1", &v]),
            20 => words(&["SREM", &k, &v]),
            21 => words(&["LPOP", &k]),
            22 => words(&["SETBIT", &k, "3", "1"]),
            23 => words(&["PFADD", &k, &v]),
            24 => words(&["PERSIST", &k]),
            25 => words(&["UNLINK", &k]),
            26 => words(&["SWAPDB", "0", "1"]),
            27 => words(&["RPOPLPUSH", &k, &self.pick(KEYS)]),
            28 => words(&["SET", &k, &v, "NX"]),
            _ => words(&[
                "EVAL",
                "redis.call('get', KEYS[1]) return redis.call('set', KEYS[2], ARGV[1])",
                "2",
                &k,
                &self.pick(KEYS),
                &v,
            ]),
        }
    }

    /// One step: the commands a client sends back to back.
    fn step(&mut self, client: usize) -> Vec<Vec<String>> {
        match self.rng.usize(..20) {
            0..=6 => vec![self.read()],
            7..=13 => vec![self.write()],
            14 => vec![words(&["CLIENT", "CACHING", "YES"]), self.read()],
            15 => vec![words(&["CLIENT", "CACHING", "NO"]), self.read()],
            16 => vec![self.pick_of(&["MULTI", "EXEC", "DISCARD"])],
            17 if client != 3 => {
                if self.chance(50) {
                    vec![words(&["CLIENT", "TRACKING", "OFF"])]
                } else {
                    vec![self.tracking(client == 1)]
                }
            }
            18 => vec![self.pick_of(&["CLIENT TRACKINGINFO", "CLIENT GETREDIR"])],
            _ => vec![self.read(), self.write()],
        }
    }

    fn pick_of(&mut self, from: &[&str]) -> Vec<String> {
        self.pick(from).split(' ').map(String::from).collect()
    }
}

/// One server's clients and their ids.
struct Side {
    clients: Vec<Conn>,
    ids: Vec<String>,
    /// Clients inside MULTI (a PING would be queued, so they are not synced).
    in_multi: [bool; CLIENTS],
}

impl Side {
    fn connect(addr: SocketAddr) -> Side {
        let mut clients: Vec<Conn> = (0..CLIENTS).map(|_| Conn::connect(addr)).collect();
        clients[3].cmd(&["FLUSHALL"]);
        clients[0].cmd(&["HELLO", "3"]);
        let ids = clients
            .iter_mut()
            .map(|c| text(&c.cmd(&["CLIENT", "ID"])))
            .collect();
        clients[SUBSCRIBER].cmd(&["SUBSCRIBE", "__redis__:invalidate"]);
        Side {
            clients,
            ids,
            in_multi: [false; CLIENTS],
        }
    }

    /// A reply as text; a CLIENT command's client ids replaced by `ID<n>`.
    fn shown(&self, frame: &Frame, command: &[String]) -> String {
        let mut s = show(frame);
        if command[0] == "CLIENT" {
            for (i, id) in self.ids.iter().enumerate() {
                s = s.replace(&format!("Integer({id})"), &format!("ID{i}"));
            }
        }
        s
    }

    /// Reads up to and including the next reply that is not a push; pushes first.
    fn read_reply(&mut self, client: usize, out: &mut Vec<String>) -> Frame {
        loop {
            let frame = self.clients[client].read().expect("reply");
            if matches!(frame, Frame::Push(_)) {
                out.push(format!("  push to {client}: {}", show(&frame)));
                continue;
            }
            return frame;
        }
    }

    /// Runs a step's commands on `client`: what came back, pushes included.
    fn run(&mut self, client: usize, commands: &[Vec<String>]) -> Vec<String> {
        let mut out = Vec::new();
        // Inside MULTI, EXEC's reply would carry client ids where they cannot be told
        // from other integers: ask outside transactions only.
        let asks_ids = |c: &Vec<String>| c[0] == "CLIENT" && c[1] != "CACHING";
        let commands: Vec<Vec<String>> = commands
            .iter()
            .map(|c| {
                if self.in_multi[client] && asks_ids(c) {
                    words(&["PING"])
                } else {
                    c.clone()
                }
            })
            .collect();
        let commands = &commands[..];
        for command in commands {
            let args = common::with_client_ids(command, &self.ids);
            self.clients[client].send(&args);
        }
        for command in commands {
            let reply = self.read_reply(client, &mut out);
            let name = command[0].to_ascii_uppercase();
            let ok = matches!(&reply, Frame::Simple(s) if &s[..] == b"OK");
            match name.as_str() {
                "MULTI" if ok => self.in_multi[client] = true,
                "EXEC" | "DISCARD" => self.in_multi[client] = false,
                _ => {}
            }
            out.push(format!(
                "{client} {command:?}: {}",
                self.shown(&reply, command)
            ));
        }
        out
    }

    /// PING on every client not in a transaction: what arrived before each PONG.
    fn sync(&mut self, out: &mut Vec<String>) {
        for client in 0..CLIENTS {
            if self.in_multi[client] {
                continue;
            }
            self.clients[client].send(&["PING"]);
            if client == SUBSCRIBER {
                loop {
                    let frame = self.clients[client].read().expect("message");
                    let shown = show(&frame);
                    if shown.contains("pong") {
                        break;
                    }
                    out.push(format!("  message to {client}: {shown}"));
                }
            } else {
                self.read_reply(client, out);
            }
        }
    }
}

fn run_sequence(redis: SocketAddr, redline: SocketAddr, seed: u64, print: bool) -> Option<String> {
    let mut gen = Gen {
        rng: fastrand::Rng::with_seed(seed ^ 0x7ac4),
    };
    let mut sides = [Side::connect(redis), Side::connect(redline)];
    let setup = [
        (0, vec![gen.tracking(false)]),
        (1, vec![gen.tracking(true)]),
    ];
    let mut log: Vec<String> = Vec::new();
    let steps = (0..25).map(|_| {
        let client = [0, 1, 3][gen.rng.usize(..3)];
        (client, gen.step(client))
    });
    for (client, commands) in setup.into_iter().chain(steps.collect::<Vec<_>>()) {
        let mut seen: Vec<Vec<String>> = Vec::new();
        for side in &mut sides {
            let mut out = side.run(client, &commands);
            side.sync(&mut out);
            seen.push(out);
        }
        if print {
            eprintln!("{}", seen[0].join("\n"));
        }
        if seen[0] != seen[1] {
            let start = log.len().saturating_sub(15);
            return Some(format!(
                "{}\n  -> redis:\n{}\n     redline:\n{}",
                log[start..].join("\n"),
                seen[0].join("\n"),
                seen[1].join("\n")
            ));
        }
        log.extend(seen.swap_remove(0));
    }
    None
}

#[test]
fn tracking_matches_redis() {
    let redis = common::redis_with_debug();
    let redline = Redline::start();
    tracking_as_redis(redis.addr(), redline.addr, 200);
}

/// [`tracking_matches_redis`] on one-node clusters, where a command's keys must share a
/// slot before any is read or remembered.
#[test]
fn tracking_matches_redis_in_cluster_mode() {
    let (redis, redline) = common::one_node_clusters();
    tracking_as_redis(redis.addr(), redline.addr(), 100);
}

fn tracking_as_redis(redis: SocketAddr, redline: SocketAddr, count: u64) {
    let (seeds, print) = common::seeds_to_run(count);
    let mut failures = Vec::new();
    for &seed in &seeds {
        if let Some(difference) = run_sequence(redis, redline, seed, print) {
            failures.push(format!("seed {seed}:\n{difference}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} sequences differ; first ones:\n{}",
        failures.len(),
        seeds.len(),
        failures[..failures.len().min(3)].join("\n\n")
    );
}

/// A transaction's keys reach a BCAST client in one invalidation, on both servers,
/// however often the server's cron runs meanwhile (Redis sends them together before its
/// event loop sleeps; the cron here broadcasts too, and once split a transaction's keys
/// or an MSET's between two messages).
#[test]
fn a_transaction_s_keys_are_broadcast_together_like_redis() {
    const WRITES: usize = 200;
    const ROUNDS: usize = 60;
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    for addr in [redis.addr(), redline.addr] {
        let mut watcher = Conn::connect(addr);
        watcher.cmd(&["HELLO", "3"]);
        assert_eq!(
            text(&watcher.cmd(&["CLIENT", "TRACKING", "ON", "BCAST"])),
            "OK"
        );
        let mut writer = Conn::connect(addr);
        writer.cmd(&["CONFIG", "SET", "hz", "500"]);
        let mut mset = vec!["MSET".to_string()];
        for i in 0..WRITES {
            mset.extend([format!("m{i}"), "v".into()]);
        }
        for round in 0..ROUNDS {
            if round % 2 == 0 {
                writer.cmd(&["MULTI"]);
                for i in 0..WRITES {
                    writer.cmd(&["SET", &format!("t{i}"), &round.to_string()]);
                }
                writer.cmd(&["EXEC"]);
            } else {
                writer.cmd(&mset);
            }
            // What arrived before PING's reply: this round's invalidations.
            watcher.send(&["PING"]);
            let mut messages = Vec::new();
            loop {
                match watcher.read() {
                    Some(Frame::Push(items)) => messages.push(items),
                    Some(Frame::Simple(pong)) if &pong[..] == b"PONG" => break,
                    other => panic!("{other:?} on {addr}"),
                }
            }
            let sizes: Vec<usize> = messages
                .iter()
                .map(|m| match m.get(1) {
                    Some(Frame::Array(keys)) => keys.len(),
                    other => panic!("{other:?} on {addr}"),
                })
                .collect();
            assert_eq!(sizes, [WRITES], "round {round} on {addr}");
        }
        writer.cmd(&["CONFIG", "SET", "hz", "10"]);
    }
}
