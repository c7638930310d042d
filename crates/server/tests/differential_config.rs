//! Differential test for CONFIG SET and CONFIG GET: generated sequences run on a real
//! redis-server 7.0 and on redline-server, and every reply must be the same, and so must
//! every parameter's value afterwards.
//!
//! The parameters are the ones redis-server lists for `CONFIG GET *` (aliases included)
//! and a few unknown names. A value is drawn from a pool that fits the parameter's
//! default (yes/no, numbers with and without units, enum words, lists, percentages) and
//! from one of invalid and edge values; a step sets one parameter, or several at once
//! (duplicates, aliases and odd argument counts included), then reads back every name it
//! set, or reads glob patterns. Each sequence starts from the defaults and ends with a
//! comparison of the whole `CONFIG GET *`.
//!
//! `DIFF_SEQUENCES=n` runs n sequences; `DIFF_SEED=n` runs sequence n alone and prints it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::{show, Conn};
use redline_resp::Frame;
use redline_testkit::RedisServer;

/// Never set: they would move the server (`port`, `bind`, `dir`), start work the test
/// does not look at (`appendonly` starts a rewrite, `tls-*` loads certificates and opens
/// a port, `watchdog-period` arms a timer signal), or cut the test's own connection
/// (`maxmemory-clients` evicts clients, `timeout` closes idle ones,
/// `client-output-buffer-limit` and `client-query-buffer-limit` close clients over the
/// limit, and `maxclients` resizes Redis's event loop). The last five are still set, from pools of their own that cannot do that.
const NEVER_SET: &[&str] = &[
    "port",
    "bind",
    "dir",
    "appendonly",
    "watchdog-period",
    "unixsocket",
    "unixsocketperm",
    "logfile",
];

/// Values that differ between any two servers started side by side (paths, ports).
const PER_SERVER: &[&str] = &["port", "dir", "logfile", "pidfile", "unixsocket"];

/// What redline-server means differently: `io-threads` is its worker thread count, one
/// per core unless set (Redis's default is 1).
const MEANS_OTHERWISE: &[&str] = &["io-threads"];

/// Parameters redline-server has and redis-server 7.0 does not (its worker count and a
/// TLS handshake's time limit); left out of pattern replies before comparing.
const OURS: &[&str] = &["shards", "tls-handshake-timeout"];

/// Every enum word Redis 7.0's parameters take, and a few near misses.
const WORDS: &[&str] = &[
    "absolute",
    "allchannels",
    "allkeys-lfu",
    "allkeys-lru",
    "allkeys-random",
    "always",
    "auto",
    "clients",
    "debug",
    "default",
    "disabled",
    "everysec",
    "force",
    "hostname",
    "ignore",
    "ip",
    "local0",
    "local7",
    "no",
    "noeviction",
    "nosave",
    "notice",
    "now",
    "on-empty-db",
    "optional",
    "panic",
    "panic-on-replicas",
    "relative",
    "resetchannels",
    "save",
    "swapdb",
    "systemd",
    "unknown-endpoint",
    "upstart",
    "verbose",
    "volatile-lfu",
    "volatile-lru",
    "volatile-random",
    "volatile-ttl",
    "warning",
    "yes",
    "ALLKEYS-LRU",
    "Notice",
    "lru",
    "nothing",
    "save nosave",
    "now force",
    "save now",
    "force save now",
    "default save",
];

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "5",
    "10",
    "64",
    "65",
    "99",
    "100",
    "101",
    "128",
    "1000",
    "1001",
    "65535",
    "65536",
    "1k",
    "1kb",
    "1KB",
    "2m",
    "2mb",
    "1gb",
    "1Gb",
    "3g",
    "1.5",
    "1.5mb",
    "-5",
    "-2147483648",
    "-2147483649",
    "1e3",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    " 5",
    "5 ",
    "0x10",
    "+5",
    "007",
    "10%",
    "100%",
    "101%",
    "-1%",
    "1b",
    "1tb",
    "kb",
    "",
];

const TEXTS: &[&str] = &[
    "",
    "x",
    "a b",
    "abc",
    "my.host-name",
    "bad_host",
    "10.0.0.1",
    "::1",
    "{title}",
    "{title} {port}",
    "{title} {unknown}",
    "{title",
    "50 99 99.9",
    "0 100",
    "101",
    "nan",
    "0 200 800",
    "-2001 0 0",
    "2000 -2000 0",
    "1 2",
    "1 2 3 4",
    "3600 1 300 100",
    "900 1",
    "900  1",
    "100 ",
    " 100 1",
    "+5 007",
    "50 ",
    "1",
    "\"\"",
    "KEA",
    "Kx",
    "AKE",
    "g$lshzxetd",
    "E",
    "n",
    "KEA$lshzxegtmdn",
    "dump.rdb",
    "a/b.rdb",
    "../x.rdb",
    "host 6379",
    "no one",
];

/// `client-output-buffer-limit`: classes other than `normal` with any limits, `normal`
/// only unlimited (a limit would close this test's connection), and malformed lists.
const OUTPUT_LIMITS: &[&str] = &[
    "replica 256mb 64mb 60",
    "slave 1k 2k 3",
    "pubsub 32mb 8mb 60",
    "pubsub 0 0 0 replica 1 2 3",
    "normal 0 0 0",
    "normal 0 0  0",
    "pubsub 1 2 +3",
    "master 0 0 0",
    "normal 0 0",
    "foo 1 2 3",
    "replica x 0 0",
    "replica 1 2 -3",
    "replica 1 2 x",
    "",
];

/// `maxmemory-clients`: limits no connection of this test gets near, and invalid ones.
const CLIENT_MEMORY: &[&str] = &[
    "0", "1gb", "2gb", "abc", "101%", "-1%", "-5", "10x", "1.5gb", "%", "",
];

/// `timeout`: none, or one this test never idles through, and invalid ones.
const TIMEOUTS: &[&str] = &["0", "300", "-1", "abc", "2147483648", "1.5", ""];

/// `maxclients`: ones the host's file limit allows (Redis resizes its event loop to the
/// value, which for 2^31 takes longer than the test waits), and invalid ones.
const MAX_CLIENTS: &[&str] = &["0", "1000", "10000", "abc", "-1", "4294967296", ""];

/// `client-query-buffer-limit`: at or over Redis's 1 MB floor, and invalid ones.
const QUERY_LIMITS: &[&str] = &["1mb", "1gb", "2gb", "1kb", "0", "-1", "x", "4gb", ""];

struct Gen {
    rng: fastrand::Rng,
    /// Every name redis-server lists and its default.
    defaults: BTreeMap<String, String>,
    /// Names that may be set (`defaults` less `NEVER_SET`, `tls-*`).
    settable: Vec<String>,
}

impl Gen {
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.rng.usize(..from.len())]
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.u32(..100) < percent
    }

    fn name(&mut self) -> String {
        if self.chance(3) {
            return self
                .pick(&["nosuch-param", "slave", "maxmemory-", ""])
                .to_string();
        }
        let name = self.settable[self.rng.usize(..self.settable.len())].clone();
        if self.chance(8) {
            return name.to_ascii_uppercase();
        }
        name
    }

    /// A value for `name`: from the pool its default suggests, sometimes from any pool.
    fn value(&mut self, name: &str) -> String {
        let special = match name.to_ascii_lowercase().as_str() {
            "client-output-buffer-limit" => Some(OUTPUT_LIMITS),
            "maxmemory-clients" => Some(CLIENT_MEMORY),
            "timeout" => Some(TIMEOUTS),
            "client-query-buffer-limit" => Some(QUERY_LIMITS),
            "maxclients" => Some(MAX_CLIENTS),
            _ => None,
        };
        if let Some(pool) = special {
            return self.pick(pool).to_string();
        }
        let default = self
            .defaults
            .get(&name.to_ascii_lowercase())
            .cloned()
            .unwrap_or_default();
        let pool = if self.chance(15) {
            [WORDS, NUMBERS, TEXTS][self.rng.usize(..3)]
        } else if default == "yes" || default == "no" {
            &["yes", "no", "YES", "No", "maybe", "1", "0", ""][..]
        } else if default.parse::<i64>().is_ok() {
            NUMBERS
        } else if default.split(' ').all(|w| w.parse::<f64>().is_ok()) {
            TEXTS
        } else if self.chance(50) {
            WORDS
        } else {
            TEXTS
        };
        if self.chance(5) {
            return default;
        }
        self.pick(pool).to_string()
    }

    /// One step: the commands it sends.
    fn step(&mut self) -> Vec<Vec<String>> {
        let mut set = vec!["CONFIG".to_string(), "SET".to_string()];
        let mut names = Vec::new();
        match self.rng.usize(..20) {
            0..=13 => names.push(self.name()),
            14..=16 => {
                for _ in 0..self.rng.usize(2..=3) {
                    names.push(self.name());
                }
            }
            17 => {
                // The same parameter twice, or by its name and its alias.
                let name = self.name();
                names.push(name.clone());
                names.push(match alias_of(&name) {
                    Some(alias) if self.chance(50) => alias.to_string(),
                    _ => name,
                });
            }
            18 => {
                let pattern = self.pattern();
                let mut get = vec!["CONFIG".to_string(), "GET".to_string(), pattern];
                if self.chance(30) {
                    get.push(self.pattern());
                }
                return vec![get];
            }
            _ => {
                // An argument short.
                set.push(self.name());
                if self.chance(50) {
                    let name = self.name();
                    let value = self.value(&name);
                    set.extend([name, value]);
                }
                return vec![set];
            }
        }
        for name in &names {
            let value = self.value(name);
            set.extend([name.clone(), value]);
        }
        let mut get = vec!["CONFIG".to_string(), "GET".to_string()];
        get.extend(names);
        vec![set, get]
    }

    fn pattern(&mut self) -> String {
        if self.chance(40) {
            return self.name();
        }
        self.pick(&[
            "*max*",
            "maxmemory*",
            "*-entries",
            "?z",
            "z*",
            "repl-*",
            "*slave*",
            "[ab]*",
            "hz",
            "HZ",
            "nosuch*",
            "",
            "*[",
            "lua-time-limit",
            "list-max-ziplist-size",
        ])
        .to_string()
    }
}

/// Redis 7.0's aliases: old name, new name.
const ALIASES: &[(&str, &str)] = &[
    ("slave-read-only", "replica-read-only"),
    ("slave-serve-stale-data", "replica-serve-stale-data"),
    ("slave-priority", "replica-priority"),
    ("slave-lazy-flush", "replica-lazy-flush"),
    ("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
    ("slave-announce-ip", "replica-announce-ip"),
    ("slave-announce-port", "replica-announce-port"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("min-slaves-to-write", "min-replicas-to-write"),
    ("min-slaves-max-lag", "min-replicas-max-lag"),
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("lua-time-limit", "busy-reply-threshold"),
    (
        "cluster-slave-validity-factor",
        "cluster-replica-validity-factor",
    ),
    ("cluster-slave-no-failover", "cluster-replica-no-failover"),
    ("slaveof", "replicaof"),
];

/// The other name of an aliased parameter, either way.
fn alias_of(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    ALIASES.iter().find_map(|(old, new)| {
        if *old == lower {
            Some(*new)
        } else if *new == lower {
            Some(*old)
        } else {
            None
        }
    })
}

/// A `CONFIG GET` reply as sorted `name=value` lines, without `OURS` and `PER_SERVER`;
/// anything else (an error) as it is. With `by_canonical_name` (a glob pattern), aliases
/// are renamed to the parameter's name and duplicates dropped: Redis's reply to a
/// pattern holds the alias, the name or both as its hash table's random order has it.
fn config_pairs(reply: &Frame, by_canonical_name: bool) -> String {
    let Frame::Array(items) = reply else {
        return show(reply);
    };
    let mut lines: Vec<String> = items
        .chunks(2)
        .filter_map(|pair| {
            let mut name = common::text(&pair[0]);
            let value = pair.get(1).map(common::text).unwrap_or_default();
            let skip = [OURS, PER_SERVER, MEANS_OTHERWISE]
                .iter()
                .any(|list| list.contains(&name.to_ascii_lowercase().as_str()));
            if by_canonical_name {
                if let Some((_, canonical)) = ALIASES.iter().find(|(old, _)| *old == name) {
                    name = canonical.to_string();
                }
            }
            (!skip).then(|| format!("{name}={value}"))
        })
        .collect();
    lines.sort();
    lines.dedup();
    lines.join("\n")
}

fn compare(command: &[String], redis: &mut Conn, redline: &mut Conn) -> Option<String> {
    let want = redis.cmd(command);
    let got = redline.cmd(command);
    let (want, got) = if command[1] == "GET" {
        let glob = command[2..].iter().any(|p| p.contains(['*', '?', '[']));
        (config_pairs(&want, glob), config_pairs(&got, glob))
    } else {
        (show(&want), show(&got))
    };
    if want == got {
        return None;
    }
    // Long replies: only the lines one side has.
    let only = |a: &str, b: &str| {
        a.lines()
            .filter(|line| !b.lines().any(|other| other == *line))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let (want, got) = if want.lines().count() > 3 {
        (only(&want, &got), only(&got, &want))
    } else {
        (want.replace('\n', " | "), got.replace('\n', " | "))
    };
    Some(format!("{command:?}:\n  redis   {want}\n  redline {got}"))
}

/// Puts every settable parameter back to its default, on one server.
fn reset(conn: &mut Conn, gen: &Gen) {
    for name in &gen.settable {
        if let Some(value) = gen.defaults.get(name) {
            conn.cmd(&["CONFIG", "SET", name, value]);
        }
    }
}

fn run_sequence(gen: &mut Gen, redis: &mut Conn, redline: &mut Conn, print: bool) -> Vec<String> {
    reset(redis, gen);
    reset(redline, gen);
    let mut differences = Vec::new();
    for _ in 0..40 {
        for command in gen.step() {
            if print {
                println!("{command:?}");
            }
            differences.extend(compare(&command, redis, redline));
        }
    }
    let all = ["CONFIG", "GET", "*"].map(String::from);
    differences.extend(compare(&all, redis, redline));
    let rewrite = ["CONFIG", "REWRITE"].map(String::from);
    differences.extend(compare(&rewrite, redis, redline));
    let (want, got) = (rewritten(redis), rewritten(redline));
    if want != got {
        let only = |a: &[String], b: &[String]| {
            a.iter()
                .filter(|line| !b.contains(line))
                .cloned()
                .collect::<Vec<_>>()
                .join(" | ")
        };
        differences.push(format!(
            "CONFIG REWRITE's file:\n  redis   {}\n  redline {}\n  redis's file: {want:?}",
            only(&want, &got),
            only(&got, &want),
        ));
    }
    differences
}

/// The lines of the configuration file the server at `conn` started from, without the
/// ones naming `PER_SERVER`, `OURS` or `MEANS_OTHERWISE` parameters.
fn rewritten(conn: &mut Conn) -> Vec<String> {
    let info = common::text(&conn.cmd(&["INFO", "server"]));
    let path = info
        .lines()
        .find_map(|line| line.strip_prefix("config_file:"))
        .expect("config_file in INFO")
        .trim()
        .to_string();
    let text = std::fs::read_to_string(&path).expect("the configuration file");
    let mut lines: Vec<String> = text
        .lines()
        .filter(|line| {
            let (name, value) = line.split_once(' ').unwrap_or((line, ""));
            // Redis writes an unsigned value past 2^63 as a negative number, which it
            // cannot read back; redline-server writes the value.
            let past_signed = matches!(name, "maxmemory" | "cluster-link-sendbuf-limit")
                && (value.starts_with('-')
                    || value.bytes().all(|b| b.is_ascii_digit()) && value.parse::<i64>().is_err());
            !past_signed
                && ![PER_SERVER, OURS, MEANS_OTHERWISE]
                    .iter()
                    .any(|list| list.contains(&name))
        })
        .map(str::to_string)
        .collect();
    // Redis appends the options the file lacked in its hash table's random order, so
    // where a line it later blanks stood there is random too.
    if let Some(at) = lines
        .iter()
        .position(|l| l == "# Generated by CONFIG REWRITE")
    {
        let mut appended = lines.split_off(at + 1);
        appended.retain(|l| !l.is_empty());
        appended.sort();
        lines.extend(appended);
    }
    lines
}

/// The configuration file both servers start from (CONFIG REWRITE writes it back).
const CONFIG_FILE: &str = "# written by hand\nhz 15\nmaxmemory 1mb\nslave-read-only yes\n\
    save 900 1\nsave 300 10\nclient-output-buffer-limit pubsub 32mb 8mb 60\n\
    rename-command flushall \"\"\n\n#   indented comment\nmaxmemory-policy  allkeys-lru\n";

#[test]
fn config_set_get_and_rewrite_match_redis() {
    // The two test kits start their servers with different arguments; each gets the
    // other's here, so both begin alike.
    let redis_server = RedisServer::builder()
        .config_file(CONFIG_FILE)
        .arg("--enable-debug-command", "yes")
        .start()
        .expect("redis-server");
    let redline_server = redline_testkit::RedlineServer::builder()
        .config_file(CONFIG_FILE)
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .args(["--repl-diskless-sync-delay", "0"])
        .start()
        .expect("redline-server");
    let mut redis = Conn::connect(redis_server.addr());
    let mut redline = Conn::connect(redline_server.addr());

    let Frame::Array(items) = redis.cmd(&["CONFIG", "GET", "*"]) else {
        panic!("CONFIG GET * is not an array");
    };
    let defaults: BTreeMap<String, String> = items
        .chunks(2)
        .map(|pair| (common::text(&pair[0]), common::text(&pair[1])))
        .collect();
    // redline-server lists every parameter redis-server does, and only `OURS` besides.
    let Frame::Array(ours) = redline.cmd(&["CONFIG", "GET", "*"]) else {
        panic!("CONFIG GET * is not an array");
    };
    let known = |name: &String| {
        defaults.contains_key(name)
            || alias_of(name).is_some_and(|other| defaults.contains_key(other))
    };
    let mut extra: Vec<String> = ours
        .chunks(2)
        .map(|pair| common::text(&pair[0]))
        .filter(|name| !known(name))
        .collect();
    extra.sort();
    assert_eq!(
        extra, OURS,
        "parameters redline-server lists and Redis does not"
    );
    let settable = defaults
        .keys()
        .filter(|name| !NEVER_SET.contains(&name.as_str()) && !name.starts_with("tls-"))
        .cloned()
        .collect();

    let (seeds, print) = common::seeds_to_run(100);
    let mut failures = Vec::new();
    for &seed in &seeds {
        let mut gen = Gen {
            rng: fastrand::Rng::with_seed(seed),
            defaults: defaults.clone(),
            settable: Vec::clone(&settable),
        };
        let differences = run_sequence(&mut gen, &mut redis, &mut redline, print);
        if !differences.is_empty() {
            failures.push(format!("seed {seed}:\n{}", differences.join("\n")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} sequences differ; first ones:\n{}",
        failures.len(),
        seeds.len(),
        failures[..failures.len().min(5)].join("\n\n")
    );
}
