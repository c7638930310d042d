//! Differential test for clients blocked on keys: several connections to a real
//! redis-server 7.0 and to redline-server run the same generated steps in lockstep
//! (BLPOP, BLMOVE, BLMPOP, BZPOPMIN, BZMPOP, XREAD and XREADGROUP with BLOCK, WAIT, on
//! some connections; pushes, pops, type changes, renames, deletes, transactions, scripts,
//! CLIENT UNBLOCK, SWAPDB, FLUSHALL and DEBUG RELOAD on the others), and every reply,
//! every "this client is now blocked" and every "this client was served" must be the
//! same on both.
//!
//! Whether a client blocked is read from CLIENT LIST (flag `b`), by a connection of its
//! own that watches the others: first until the client's `cmd=` names the command it was
//! sent (the server has run it), then its flags. After each step, every blocked client is
//! checked again; on redline-server, whose connections run on several threads, a client
//! that redis-server has already served is given a moment to show it, since its own
//! task clears the flag. Timeouts are 0 (forever) or long, so no reply depends on time.
//! At the end, CLIENT UNBLOCK frees who still waits; the keyspace is then compared.
//!
//! `DIFF_SEQUENCES=n` runs n sequences; `DIFF_SEED=n` runs sequence n alone and prints it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{show, text, Conn, Redline};

/// Connections that run the steps, per server.
const CLIENTS: usize = 4;
/// Keys clients block on.
const KEYS: &[&str] = &["ka", "kb", "kc"];
/// A key nobody blocks on, where SORT and Z*STORE store half the time (else on a key
/// clients block on: Redis 7.0 wakes nobody when a STORE writes over a value, see
/// `store::ready`).
const STORE_KEY: &str = "kd";
const VALUES: &[&str] = &["a", "b", "c", "1", "2"];
const GROUPS: &[&str] = &["g1", "g2"];
const CONSUMERS: &[&str] = &["c1", "c2"];
/// Timeouts of list and sorted-set commands: forever, long, or invalid.
const TIMEOUTS: &[&str] = &["0", "0", "0", "0", "1000", "0.0", "-1", "x"];
/// BLOCK milliseconds of XREAD / XREADGROUP.
const BLOCK_MS: &[&str] = &["0", "0", "0", "1000000", "-1", "x"];
/// Commands that can block, by their CLIENT LIST `cmd=` name.
const BLOCKING: &[&str] = &[
    "blpop",
    "brpop",
    "blmove",
    "brpoplpush",
    "blmpop",
    "bzpopmin",
    "bzpopmax",
    "bzmpop",
    "xread",
    "xreadgroup",
    "wait",
];

struct Gen {
    rng: fastrand::Rng,
    /// The last stream id handed out: XADD ids grow from it, so both servers make the
    /// same entries (`*` would take each server's clock).
    stream_seq: u64,
}

impl Gen {
    fn pick(&mut self, from: &[&str]) -> String {
        from[self.rng.usize(..from.len())].to_string()
    }
    fn key(&mut self) -> String {
        self.pick(KEYS)
    }
    fn store_key(&mut self) -> String {
        if self.rng.bool() {
            STORE_KEY.into()
        } else {
            self.key()
        }
    }
    fn keys(&mut self) -> Vec<String> {
        (0..1 + self.rng.usize(..2)).map(|_| self.key()).collect()
    }
    fn values(&mut self) -> Vec<String> {
        (0..1 + self.rng.usize(..3))
            .map(|_| self.pick(VALUES))
            .collect()
    }
    fn side(&mut self, words: [&str; 2]) -> String {
        words[self.rng.usize(..2)].to_string()
    }
    fn chance(&mut self, percent: u32) -> bool {
        self.rng.u32(..100) < percent
    }
    fn stream_id(&mut self) -> String {
        if self.chance(10) {
            // Not above the top: an error.
            return "1-1".into();
        }
        self.stream_seq += 1;
        format!("{}-1", self.stream_seq)
    }
    /// An id to read a stream after.
    fn read_id(&mut self) -> String {
        match self.rng.usize(..4) {
            0 | 1 => "$".into(),
            2 => "0".into(),
            _ => format!("{}-0", self.stream_seq + self.rng.u64(..2)),
        }
    }

    /// A command that may block.
    fn blocking(&mut self) -> Vec<String> {
        let mut c: Vec<String> = Vec::new();
        let word = |c: &mut Vec<String>, w: &str| c.push(w.to_string());
        match self.rng.usize(..11) {
            0 | 1 => {
                word(&mut c, if self.chance(50) { "BLPOP" } else { "BRPOP" });
                c.extend(self.keys());
                c.push(self.pick(TIMEOUTS));
            }
            2 => {
                word(&mut c, "BLMOVE");
                c.push(self.key());
                c.push(self.key());
                c.push(self.side(["LEFT", "RIGHT"]));
                c.push(self.side(["LEFT", "RIGHT"]));
                c.push(self.pick(TIMEOUTS));
            }
            3 => {
                word(&mut c, "BRPOPLPUSH");
                c.push(self.key());
                c.push(self.key());
                c.push(self.pick(TIMEOUTS));
            }
            4 => {
                word(&mut c, "BLMPOP");
                c.push(self.pick(TIMEOUTS));
                let keys = self.keys();
                c.push(keys.len().to_string());
                c.extend(keys);
                c.push(self.side(["LEFT", "RIGHT"]));
                if self.chance(50) {
                    word(&mut c, "COUNT");
                    c.push((1 + self.rng.usize(..3)).to_string());
                }
            }
            5 | 6 => {
                word(
                    &mut c,
                    if self.chance(50) {
                        "BZPOPMIN"
                    } else {
                        "BZPOPMAX"
                    },
                );
                c.extend(self.keys());
                c.push(self.pick(TIMEOUTS));
            }
            7 => {
                word(&mut c, "BZMPOP");
                c.push(self.pick(TIMEOUTS));
                let keys = self.keys();
                c.push(keys.len().to_string());
                c.extend(keys);
                c.push(self.side(["MIN", "MAX"]));
                if self.chance(50) {
                    word(&mut c, "COUNT");
                    c.push((1 + self.rng.usize(..3)).to_string());
                }
            }
            8 => {
                word(&mut c, "XREAD");
                if self.chance(30) {
                    word(&mut c, "COUNT");
                    c.push("1".into());
                }
                word(&mut c, "BLOCK");
                c.push(self.pick(BLOCK_MS));
                word(&mut c, "STREAMS");
                let keys = self.keys();
                let ids: Vec<String> = keys.iter().map(|_| self.read_id()).collect();
                c.extend(keys);
                c.extend(ids);
            }
            9 => {
                word(&mut c, "XREADGROUP");
                word(&mut c, "GROUP");
                c.push(self.pick(GROUPS));
                c.push(self.pick(CONSUMERS));
                if self.chance(30) {
                    word(&mut c, "COUNT");
                    c.push("1".into());
                }
                if self.chance(20) {
                    word(&mut c, "NOACK");
                }
                word(&mut c, "BLOCK");
                c.push(self.pick(BLOCK_MS));
                word(&mut c, "STREAMS");
                let keys = self.keys();
                let ids: Vec<String> = keys
                    .iter()
                    .map(|_| if self.chance(85) { ">" } else { "0" }.to_string())
                    .collect();
                c.extend(keys);
                c.extend(ids);
            }
            _ => {
                // No replicas: WAIT for one waits until CLIENT UNBLOCK.
                word(&mut c, "WAIT");
                c.push(self.side(["1", "0"]));
                c.push("0".into());
            }
        }
        c
    }

    /// A command that does not block: writes that may serve the blocked, reads, and
    /// CLIENT UNBLOCK of `blocked` clients (`@n` stands for client n's id).
    fn other(&mut self, blocked: &[usize]) -> Vec<String> {
        let key = self.key();
        let mut c: Vec<String> = Vec::new();
        let words = |c: &mut Vec<String>, ws: &[&str]| c.extend(ws.iter().map(|w| w.to_string()));
        match self.rng.usize(..36) {
            0..=3 => {
                words(
                    &mut c,
                    &[["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"][self.rng.usize(..4)]],
                );
                c.push(key);
                c.extend(self.values());
            }
            4 => {
                words(&mut c, &["LINSERT"]);
                c.push(key);
                c.push(self.side(["BEFORE", "AFTER"]));
                c.push(self.pick(VALUES));
                c.push(self.pick(VALUES));
            }
            5 => {
                words(&mut c, &["LMOVE"]);
                c.push(key);
                c.push(self.key());
                c.push(self.side(["LEFT", "RIGHT"]));
                c.push(self.side(["LEFT", "RIGHT"]));
            }
            6 => {
                words(&mut c, &[if self.chance(50) { "LPOP" } else { "RPOP" }]);
                c.push(key);
                if self.chance(40) {
                    c.push("2".into());
                }
            }
            7..=9 => {
                words(&mut c, &["ZADD"]);
                c.push(key);
                for _ in 0..1 + self.rng.usize(..2) {
                    c.push(self.rng.i32(-2..5).to_string());
                    c.push(self.pick(VALUES));
                }
            }
            10 => {
                words(&mut c, &["ZINCRBY"]);
                c.push(key);
                c.push("1".into());
                c.push(self.pick(VALUES));
            }
            11 => {
                words(&mut c, &[if self.chance(50) { "ZPOPMIN" } else { "ZREM" }]);
                c.push(key);
                if c[0] == "ZREM" {
                    c.push(self.pick(VALUES));
                }
            }
            12 => {
                words(
                    &mut c,
                    &[if self.chance(50) {
                        "ZUNIONSTORE"
                    } else {
                        "ZINTERSTORE"
                    }],
                );
                let store = self.store_key();
                c.push(store);
                c.push("2".into());
                c.push(key);
                c.push(self.key());
            }
            13..=15 => {
                words(&mut c, &["XADD"]);
                c.push(key);
                if self.chance(20) {
                    words(&mut c, &["MAXLEN", "1"]);
                }
                c.push(self.stream_id());
                c.push("f".into());
                c.push(self.pick(VALUES));
            }
            16 => {
                if self.chance(50) {
                    words(&mut c, &["XDEL"]);
                    c.push(key);
                    c.push(format!("{}-1", self.stream_seq));
                } else {
                    words(&mut c, &["XTRIM"]);
                    c.push(key);
                    words(&mut c, &["MAXLEN", "0"]);
                }
            }
            17 | 18 => {
                words(&mut c, &["XGROUP", "CREATE"]);
                c.push(key);
                c.push(self.pick(GROUPS));
                c.push(self.side(["$", "0"]));
                if self.chance(70) {
                    words(&mut c, &["MKSTREAM"]);
                }
            }
            19 => {
                words(&mut c, &["XGROUP"]);
                match self.rng.usize(..3) {
                    0 => {
                        words(&mut c, &["DESTROY"]);
                        c.push(key);
                        c.push(self.pick(GROUPS));
                    }
                    1 => {
                        words(&mut c, &["SETID"]);
                        c.push(key);
                        c.push(self.pick(GROUPS));
                        c.push(self.side(["$", "0"]));
                    }
                    _ => {
                        words(&mut c, &["DELCONSUMER"]);
                        c.push(key);
                        c.push(self.pick(GROUPS));
                        c.push(self.pick(CONSUMERS));
                    }
                }
            }
            20 => {
                words(&mut c, &["XACK"]);
                c.push(key);
                c.push(self.pick(GROUPS));
                c.push(format!("{}-1", self.rng.u64(1..self.stream_seq + 2)));
            }
            21 => {
                words(&mut c, &[if self.chance(50) { "SET" } else { "DEL" }]);
                c.push(key);
                if c[0] == "SET" {
                    c.push(self.pick(VALUES));
                }
            }
            22 => {
                words(&mut c, &[if self.chance(50) { "RENAME" } else { "COPY" }]);
                c.push(if self.chance(30) {
                    STORE_KEY.into()
                } else {
                    key
                });
                c.push(self.key());
                if c[0] == "COPY" && self.chance(50) {
                    words(&mut c, &["REPLACE"]);
                }
            }
            23 => match self.rng.usize(..5) {
                0 => {
                    words(&mut c, &["MOVE"]);
                    c.push(key);
                    c.push(self.side(["0", "1"]));
                }
                1 => words(&mut c, &["SWAPDB", "0", "1"]),
                2 => words(&mut c, &["SELECT", if self.chance(70) { "0" } else { "1" }]),
                3 => words(&mut c, &["DEBUG", "RELOAD"]),
                _ => words(
                    &mut c,
                    &[if self.chance(50) {
                        "FLUSHDB"
                    } else {
                        "FLUSHALL"
                    }],
                ),
            },
            24 => {
                words(&mut c, &["SORT"]);
                c.push(key);
                words(&mut c, &["ALPHA", "STORE"]);
                let store = self.store_key();
                c.push(store);
            }
            25 => match self.rng.usize(..3) {
                0 => words(&mut c, &["MULTI"]),
                1 => words(&mut c, &["EXEC"]),
                _ => words(&mut c, &["DISCARD"]),
            },
            26 => {
                // A push undone in the same script serves nobody; a push alone does,
                // once the script has ended.
                let body = if self.chance(50) {
                    "redis.call('rpush', KEYS[1], ARGV[1]) return redis.call('lpop', KEYS[1])"
                } else {
                    "return redis.call('rpush', KEYS[1], ARGV[1])"
                };
                words(&mut c, &["EVAL", body, "1"]);
                c.push(key);
                c.push(self.pick(VALUES));
            }
            27 if !blocked.is_empty() || self.chance(30) => {
                let target = if blocked.is_empty() {
                    self.rng.usize(..CLIENTS)
                } else {
                    blocked[self.rng.usize(..blocked.len())]
                };
                words(&mut c, &["CLIENT", "UNBLOCK"]);
                c.push(format!("@{target}"));
                match self.rng.usize(..3) {
                    0 => words(&mut c, &["TIMEOUT"]),
                    1 => words(&mut c, &["ERROR"]),
                    _ => {}
                }
            }
            28 => {
                words(&mut c, &["XPENDING"]);
                c.push(key);
                c.push(self.pick(GROUPS));
            }
            29 => {
                words(&mut c, &["XINFO", "GROUPS"]);
                c.push(key);
            }
            30 => {
                // Inside a transaction a blocking command runs as its non-blocking form.
                c = self.blocking();
            }
            _ => {
                let read: &[&str] = match self.rng.usize(..5) {
                    0 => &["LRANGE", "_", "0", "-1"],
                    1 => &["ZRANGE", "_", "0", "-1", "WITHSCORES"],
                    2 => &["XRANGE", "_", "-", "+"],
                    3 => &["TYPE", "_"],
                    _ => &["DBSIZE"],
                };
                for w in read {
                    c.push(if *w == "_" {
                        key.clone()
                    } else {
                        w.to_string()
                    });
                }
            }
        }
        c
    }
}

/// One server's side of a sequence: the clients that run the steps, the connection that
/// watches them, each client's id, and the last command each one sent (CLIENT LIST's
/// `cmd=`).
struct Side {
    clients: Vec<Conn>,
    ids: Vec<String>,
    watcher: Conn,
    last: Vec<String>,
    /// The change counter (`rdb_changes_since_last_save`) when the sequence began.
    changes_at_start: i64,
}

/// The change counter save points read.
fn changes(c: &mut Conn) -> i64 {
    let info = text(&c.cmd(&["INFO", "persistence"]));
    common::field_of(&info, "rdb_changes_since_last_save")
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// What a step did to the client that sent it.
#[derive(PartialEq, Debug)]
enum Outcome {
    Replied(String),
    Blocked,
}

impl Side {
    fn connect(addr: SocketAddr, resp3: bool) -> Side {
        let mut watcher = Conn::connect(addr);
        watcher.cmd(&["FLUSHALL"]);
        // No save point may reset the change counter halfway.
        watcher.cmd(&["CONFIG", "SET", "save", ""]);
        let changes_at_start = changes(&mut watcher);
        let mut clients = Vec::new();
        let mut ids = Vec::new();
        for _ in 0..CLIENTS {
            let mut c = Conn::connect(addr);
            if resp3 {
                c.cmd(&["HELLO", "3"]);
            }
            ids.push(text(&c.cmd(&["CLIENT", "ID"])));
            clients.push(c);
        }
        Side {
            clients,
            ids,
            watcher,
            last: vec!["client|id".into(); CLIENTS],
            changes_at_start,
        }
    }

    /// CLIENT LIST's line for `client`: its flags and its last command.
    fn listed(&mut self, client: usize) -> (String, String) {
        let line = text(
            &self
                .watcher
                .cmd(&["CLIENT", "LIST", "ID", &self.ids[client]]),
        );
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(name))
                .unwrap_or_default()
                .to_string()
        };
        (field("flags="), field("cmd="))
    }

    fn is_blocked(&mut self, client: usize) -> bool {
        self.listed(client).0.contains('b')
    }

    /// Runs `command` on `client`; a command that can block is followed on CLIENT LIST
    /// until the server has run it.
    fn run(&mut self, client: usize, command: &[String]) -> Result<Outcome, String> {
        let args = common::with_client_ids(command, &self.ids);
        let name = command[0].to_ascii_lowercase();
        if !BLOCKING.contains(&name.as_str()) {
            let reply = show(&self.clients[client].cmd(&args));
            self.last[client] = name;
            return Ok(Outcome::Replied(reply));
        }
        if self.last[client] == name {
            // So that `cmd=` changes when the server runs this one.
            self.clients[client].cmd(&["PING"]);
            self.last[client] = "ping".into();
        }
        self.clients[client].send(&args);
        self.last[client] = name.clone();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let (flags, cmd) = self.listed(client);
            if cmd == name {
                if flags.contains('b') {
                    return Ok(Outcome::Blocked);
                }
                return Ok(Outcome::Replied(show(
                    &self.clients[client].read().expect("reply"),
                )));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "CLIENT LIST never showed cmd={name} (flags={flags} cmd={cmd})"
                ));
            }
            std::thread::sleep(Duration::from_micros(300));
        }
    }

    /// The reply of a client that is no longer blocked.
    fn served(&mut self, client: usize) -> String {
        show(
            &self.clients[client]
                .read()
                .expect("reply of a served client"),
        )
    }

    /// The keyspace of databases 0 and 1, read by the watcher, and the changes counted
    /// (serving a blocked client counts what Redis counts: see `persistence.rs`).
    fn dump(&mut self) -> Vec<String> {
        let mut out = vec![format!(
            "changes: {}",
            changes(&mut self.watcher) - self.changes_at_start
        )];
        for db in ["0", "1"] {
            self.watcher.cmd(&["SELECT", db]);
            for key in KEYS.iter().chain([&STORE_KEY]) {
                for command in [
                    &["TYPE", key][..],
                    &["LRANGE", key, "0", "-1"],
                    &["ZRANGE", key, "0", "-1", "WITHSCORES"],
                    &["XRANGE", key, "-", "+"],
                    &["XINFO", "GROUPS", key],
                ] {
                    out.push(format!(
                        "db{db} {command:?}: {}",
                        show(&self.watcher.cmd(command))
                    ));
                }
                for group in GROUPS {
                    let command = ["XPENDING", key, group];
                    out.push(format!(
                        "db{db} {command:?}: {}",
                        show(&self.watcher.cmd(&command))
                    ));
                }
            }
        }
        out
    }
}

/// What the sequences did, so a run shows that it exercised blocking at all.
#[derive(Default)]
struct Tally {
    blocked: usize,
    served: usize,
    freed_at_end: usize,
}

/// One generated sequence on both servers in lockstep; the first difference, with the
/// steps that led to it.
fn run_sequence(
    redis: SocketAddr,
    redline: SocketAddr,
    seed: u64,
    print: bool,
    tally: &mut Tally,
) -> Option<String> {
    let mut gen = Gen {
        rng: fastrand::Rng::with_seed(seed ^ 0xb10c),
        stream_seq: 0,
    };
    let resp3 = seed % 2 == 1;
    let mut sides = [Side::connect(redis, resp3), Side::connect(redline, resp3)];
    let mut blocked: Vec<usize> = Vec::new();
    let mut log: Vec<String> = Vec::new();
    let differ = |log: &[String], what: String| {
        let start = log.len().saturating_sub(12);
        Some(format!("{}\n  -> {what}", log[start..].join("\n")))
    };
    for _ in 0..30 {
        let free: Vec<usize> = (0..CLIENTS).filter(|c| !blocked.contains(c)).collect();
        if free.is_empty() {
            break;
        }
        let client = free[gen.rng.usize(..free.len())];
        let command = if free.len() > 1 && gen.chance(35) {
            gen.blocking()
        } else {
            gen.other(&blocked)
        };
        let [a, b] = &mut sides;
        let want = match a.run(client, &command) {
            Ok(o) => o,
            Err(e) => panic!("redis-server: {e}"),
        };
        let got = match b.run(client, &command) {
            Ok(o) => o,
            Err(e) => return differ(&log, format!("{command:?} on client {client}: {e}")),
        };
        let line = format!("client {client} {command:?}: {want:?}");
        if print {
            eprintln!("{line}");
        }
        if want != got {
            return differ(&log, format!("{line}\n     redline: {got:?}"));
        }
        log.push(line);
        if want == Outcome::Blocked {
            tally.blocked += 1;
            blocked.push(client);
        }
        // Whoever this step served.
        for waiting in blocked.clone() {
            let served = !a.is_blocked(waiting);
            let deadline = Instant::now() + Duration::from_secs(if served { 5 } else { 0 });
            let mut redline_served = !b.is_blocked(waiting);
            while served && !redline_served && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
                redline_served = !b.is_blocked(waiting);
            }
            if served != redline_served {
                return differ(
                    &log,
                    format!("client {waiting}: served by redis-server {served}, by redline-server {redline_served}"),
                );
            }
            if served {
                let (x, y) = (a.served(waiting), b.served(waiting));
                let line = format!("  client {waiting} served: {x}");
                if print {
                    eprintln!("{line}");
                }
                if x != y {
                    return differ(&log, format!("{line}\n     redline: {y}"));
                }
                log.push(line);
                tally.served += 1;
                blocked.retain(|c| *c != waiting);
            }
        }
    }
    // Free who still waits, then leave no transaction open.
    for waiting in blocked {
        tally.freed_at_end += 1;
        let mut replies = Vec::new();
        for side in &mut sides {
            let id = side.ids[waiting].clone();
            let unblock = show(&side.watcher.cmd(&["CLIENT", "UNBLOCK", &id]));
            replies.push(format!("unblock {unblock}: {}", side.served(waiting)));
        }
        if replies[0] != replies[1] {
            return differ(
                &log,
                format!(
                    "client {waiting}: redis {} / redline {}",
                    replies[0], replies[1]
                ),
            );
        }
    }
    let mut dumps = Vec::new();
    for side in &mut sides {
        for client in &mut side.clients {
            client.cmd(&["DISCARD"]);
        }
        dumps.push(side.dump());
    }
    if let Some((x, y)) = dumps[0].iter().zip(&dumps[1]).find(|(x, y)| x != y) {
        return differ(&log, format!("keyspace: redis {x}\n     redline {y}"));
    }
    None
}

#[test]
fn blocked_clients_match_redis() {
    let redis = common::redis_with_debug();
    let redline = Redline::start();
    blocked_clients_as_redis(redis.addr(), redline.addr, 200);
}

/// [`blocked_clients_match_redis`] on one-node clusters: the keys a blocking command
/// names must share a slot, and so must a transaction's.
#[test]
fn blocked_clients_match_redis_in_cluster_mode() {
    let (redis, redline) = common::one_node_clusters();
    blocked_clients_as_redis(redis.addr(), redline.addr(), 100);
}

fn blocked_clients_as_redis(redis: SocketAddr, redline: SocketAddr, count: u64) {
    let (seeds, print) = common::seeds_to_run(count);
    let sequences = seeds.len();
    let mut failures = Vec::new();
    let mut tally = Tally::default();
    for seed in seeds {
        if let Some(difference) = run_sequence(redis, redline, seed, print, &mut tally) {
            failures.push(format!("seed {seed}:\n{difference}"));
        }
    }
    eprintln!(
        "{sequences} sequences: {} clients blocked, {} served by a step, {} freed at the end",
        tally.blocked, tally.served, tally.freed_at_end
    );
    assert!(
        failures.is_empty(),
        "{} of {sequences} sequences differ; first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(4)].join("\n\n")
    );
}
