//! HyperLogLog commands against a real redis-server 7.0: the same sequences go to both
//! servers and every reply must be identical, including the stored bytes (`GET` after
//! each step), so the sparse encoding, its conversion to dense, the cached cardinality
//! and the estimator all match Redis's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{show, Conn, Redline};
use redline_testkit::RedisServer;

struct Pair {
    redis: Conn,
    redline: Conn,
    mismatches: Vec<String>,
}

impl Pair {
    fn new(redis: &RedisServer, redline: &Redline) -> Pair {
        let mut pair = Pair {
            redis: Conn::connect(redis.addr()),
            redline: Conn::connect(redline.addr),
            mismatches: Vec::new(),
        };
        pair.both(&[&b"FLUSHALL"[..]]);
        pair
    }

    /// Sends one command to both servers and records a difference in the replies.
    fn both<A: AsRef<[u8]>>(&mut self, args: &[A]) -> String {
        let a = show(&self.redis.cmd(args));
        let b = show(&self.redline.cmd(args));
        if a != b {
            let shown: Vec<String> = args
                .iter()
                .take(6)
                .map(|x| format!("{:?}", String::from_utf8_lossy(x.as_ref())))
                .collect();
            let clip = |t: &str| t.chars().take(400).collect::<String>();
            self.mismatches.push(format!(
                "{}\n  redis:   {}\n  redline: {}",
                shown.join(" "),
                clip(&a),
                clip(&b)
            ));
        }
        a
    }

    /// Everything a client can see of a key.
    fn inspect(&mut self, key: &[u8]) {
        for c in ["GET", "STRLEN", "TYPE", "PFCOUNT", "GET", "OBJECT", "TTL"] {
            if c == "OBJECT" {
                self.both(&[&b"OBJECT"[..], b"ENCODING", key]);
            } else {
                self.both(&[c.as_bytes(), key]);
            }
        }
    }

    fn check(self) {
        assert!(
            self.mismatches.is_empty(),
            "{} replies differ; first ones:\n{}",
            self.mismatches.len(),
            self.mismatches
                .iter()
                .take(6)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

fn servers() -> (RedisServer, Redline) {
    (
        RedisServer::start().expect("redis-server"),
        Redline::start(),
    )
}

/// PFADD of `n` elements in batches of `batch`, looking at the key after each batch.
fn grow(pair: &mut Pair, key: &[u8], n: usize, batch: usize, prefix: &str) {
    let mut i = 0;
    while i < n {
        let mut c: Vec<Vec<u8>> = vec![b"PFADD".to_vec(), key.to_vec()];
        for j in i..(i + batch).min(n) {
            c.push(format!("{prefix}{j}").into_bytes());
        }
        i += batch;
        pair.both(&c);
        if i < 200 || i % 1000 < batch || i >= n {
            pair.inspect(key);
        }
    }
}

#[test]
fn growth_through_sparse_conversion_and_dense() {
    let (redis, redline) = servers();
    let mut pair = Pair::new(&redis, &redline);
    for n in [0usize, 1, 10, 100, 1000, 20000] {
        let key = format!("hll:{n}");
        pair.both(&["PFADD", key.as_str()]);
        pair.inspect(key.as_bytes());
        let batch = if n > 1000 { 100 } else { 7 };
        grow(&mut pair, key.as_bytes(), n, batch, "e");
        // Everything again: nothing changes, the reply is 0, the cache stays valid.
        grow(&mut pair, key.as_bytes(), n.min(300), 50, "e");
        pair.both(&["PFADD", key.as_str()]);
        pair.inspect(key.as_bytes());
    }
    // One element at a time over the sparse-to-dense boundary.
    grow(&mut pair, b"single", 2500, 1, "x");
    pair.check();
}

#[test]
fn counting_and_merging_many_keys() {
    let (redis, redline) = servers();
    let mut pair = Pair::new(&redis, &redline);
    grow(&mut pair, b"{h}a", 50, 10, "a");
    grow(&mut pair, b"{h}b", 800, 100, "b");
    grow(&mut pair, b"{h}c", 5000, 500, "c");
    grow(&mut pair, b"{h}d", 30, 10, "a");
    let keys = ["{h}a", "{h}b", "{h}c", "{h}d", "{h}missing"];
    for x in keys {
        for y in keys {
            pair.both(&["PFCOUNT", x, y]);
            pair.both(&["PFCOUNT", x, y, "{h}a"]);
        }
    }
    pair.both(&["PFCOUNT", "{h}missing", "{h}missing2"]);
    // Into new keys: sparse sources stay sparse, a dense source makes it dense.
    pair.both(&["PFMERGE", "{h}m1", "{h}a", "{h}d"]);
    pair.inspect(b"{h}m1");
    pair.both(&["PFMERGE", "{h}m2", "{h}a", "{h}c"]);
    pair.inspect(b"{h}m2");
    pair.both(&["PFMERGE", "{h}m3"]);
    pair.inspect(b"{h}m3");
    pair.both(&["PFMERGE", "{h}m4", "{h}missing"]);
    pair.inspect(b"{h}m4");
    // Two sparse inputs whose union passes the sparse limit.
    pair.both(&["PFMERGE", "{h}m5", "{h}b", "{h}a", "{h}d"]);
    pair.inspect(b"{h}m5");
    grow(&mut pair, b"{h}e", 1500, 500, "e");
    pair.both(&["PFMERGE", "{h}m6", "{h}b", "{h}e"]);
    pair.inspect(b"{h}m6");
    // Into existing keys, the destination being one of the sources.
    pair.both(&["PFMERGE", "{h}a", "{h}d"]);
    pair.inspect(b"{h}a");
    pair.both(&["PFMERGE", "{h}a", "{h}b"]);
    pair.inspect(b"{h}a");
    pair.both(&["PFMERGE", "{h}a", "{h}c"]);
    pair.inspect(b"{h}a");
    pair.both(&["PFMERGE", "{h}c", "{h}b", "{h}d"]);
    pair.inspect(b"{h}c");
    pair.both(&["PFMERGE", "{h}c"]);
    pair.inspect(b"{h}c");
    // A TTL survives PFADD and PFMERGE.
    pair.both(&["EXPIRE", "{h}d", "1000"]);
    pair.both(&["PFADD", "{h}d", "new"]);
    pair.both(&["PFMERGE", "{h}d", "{h}b"]);
    pair.inspect(b"{h}d");
    // Keys in different slots.
    grow(&mut pair, b"x1", 40, 10, "p");
    grow(&mut pair, b"x2", 40, 10, "q");
    pair.both(&["PFCOUNT", "x1", "x2", "{h}a"]);
    pair.both(&["PFMERGE", "x3", "x1", "x2", "{h}b"]);
    pair.inspect(b"x3");
    pair.check();
}

#[test]
fn binary_elements() {
    let (redis, redline) = servers();
    let mut pair = Pair::new(&redis, &redline);
    let mut elements: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"\x00".to_vec(),
        b"\xff\xfe\r\n".to_vec(),
        b"\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec(),
        vec![0xab; 1000],
    ];
    for len in 0..40 {
        elements.push((0..len).map(|i| (i * 37 + len) as u8).collect());
    }
    for e in &elements {
        pair.both(&[&b"PFADD"[..], b"bin\x00key", e]);
        pair.inspect(b"bin\x00key");
    }
    let mut all: Vec<&[u8]> = vec![b"PFADD", b"bin2"];
    all.extend(elements.iter().map(|e| &e[..]));
    pair.both(&all);
    pair.inspect(b"bin2");
    pair.both(&[&b"PFCOUNT"[..], b"bin\x00key", b"bin2"]);
    pair.check();
}

#[test]
fn wrong_types_and_arity() {
    let (redis, redline) = servers();
    let mut pair = Pair::new(&redis, &redline);
    pair.both(&["RPUSH", "list", "a"]);
    pair.both(&["HSET", "hash", "f", "v"]);
    pair.both(&["SET", "str", "hello"]);
    pair.both(&["SET", "int", "12345"]);
    pair.both(&["SET", "long", "a string longer than the hll header is"]);
    pair.both(&["PFADD", "ok", "a"]);
    for key in ["list", "hash", "str", "int", "long"] {
        pair.both(&["PFADD", key, "x"]);
        pair.both(&["PFADD", key]);
        pair.both(&["PFCOUNT", key]);
        pair.both(&["PFCOUNT", "ok", key]);
        pair.both(&["PFCOUNT", key, "ok"]);
        pair.both(&["PFMERGE", key, "ok"]);
        pair.both(&["PFMERGE", "ok", key]);
        pair.both(&["PFMERGE", "new", "ok", key]);
        pair.both(&["EXISTS", "new"]);
        pair.both(&["GET", key]);
    }
    for c in ["PFADD", "PFCOUNT", "PFMERGE", "pfadd"] {
        pair.both(&[c]);
    }
    pair.inspect(b"ok");
    pair.check();
}

/// Strings with the HLL header and a damaged body or header.
#[test]
fn corrupted_values() {
    let (redis, redline) = servers();
    let mut pair = Pair::new(&redis, &redline);
    let header = |enc: u8, stale: bool| {
        let mut h = b"HYLL".to_vec();
        h.push(enc);
        h.extend_from_slice(&[0; 10]);
        h.push(if stale { 0x80 } else { 0 });
        h
    };
    let with = |mut h: Vec<u8>, body: &[u8]| {
        h.extend_from_slice(body);
        h
    };
    let mut cases: Vec<Vec<u8>> = vec![
        b"HYLL".to_vec(),
        b"HYLL\x01\x00\x00".to_vec(),
        header(1, true),
        header(1, false),
        header(0, true),
        header(2, true),
        with(header(1, true), b"\x7f\xfe"),
        with(header(1, false), b"\x7f\xfe"),
        with(header(1, true), b"\x7f\xff\x80"),
        with(header(1, true), b"\x7f\xff\x00"),
        with(header(1, true), b"\x7f"),
        with(header(1, true), b"\x7f\xff\x7f\xff"),
        with(header(1, true), b"\x80\x7f\xfe"),
        with(header(1, true), b"\x83\x7f\xfb"),
        with(header(1, true), b"\xfc\x7f\xfe"),
        with(header(1, true), b"\x3f\x7f\xbf"),
        with(header(1, true), b"\x40\x00\x7f\xfe"),
        with(header(1, true), b"\x7f\xfe\x40"),
        with(header(1, true), b"\x7f\xfd\x40"),
        with(header(1, true), &[0xff; 40]),
        with(header(0, true), &[0u8; 12287]),
        with(header(0, true), &[0u8; 12289]),
        with(header(0, true), &[0xffu8; 12288]),
        with(header(0, false), &[0x41u8; 12288]),
        with(header(0, true), &[0x41u8; 12288]),
    ];
    // Many small ops: conversions from a long, valid sparse body.
    let mut long = header(1, true);
    long.extend([0x3f; 256]);
    cases.push(long);
    let elements = ["a", "b", "c", "hello", "world", "x", "y", "z", "1", "2"];
    // The second round converts to dense on every change.
    for (i, value) in cases.iter().chain(cases.iter()).enumerate() {
        if i == cases.len() {
            pair.both(&["CONFIG", "SET", "hll-sparse-max-bytes", "0"]);
        }
        let key = format!("c{i}");
        pair.both(&[b"SET", key.as_bytes(), value]);
        pair.both(&["PFCOUNT", key.as_str()]);
        pair.both(&["GET", key.as_str()]);
        pair.both(&["PFCOUNT", key.as_str(), "nosuch"]);
        pair.both(&["PFMERGE", "dst", key.as_str()]);
        pair.both(&["GET", "dst"]);
        pair.both(&["DEL", "dst"]);
        pair.both(&["PFMERGE", key.as_str()]);
        pair.both(&["GET", key.as_str()]);
        pair.both(&[&b"SET"[..], key.as_bytes(), value]);
        for e in elements {
            pair.both(&["PFADD", key.as_str(), e]);
        }
        let mut c = vec!["PFADD", key.as_str()];
        c.extend(elements);
        pair.both(&c);
        pair.both(&["GET", key.as_str()]);
        pair.both(&[&b"SET"[..], key.as_bytes(), value]);
        pair.both(&["PFADD", key.as_str()]);
        pair.both(&["GET", key.as_str()]);
    }
    // String commands on a real HLL, then the HLL commands on the result.
    grow(&mut pair, b"s", 100, 20, "s");
    pair.both(&["APPEND", "s", "\x00"]);
    pair.inspect(b"s");
    pair.both(&["PFADD", "s", "more"]);
    pair.both(&["SETRANGE", "s", "15", "\x00"]);
    pair.inspect(b"s");
    pair.both(&["SETRANGE", "s", "8", "\x07\x00\x00\x00\x00\x00\x00\x00"]);
    pair.inspect(b"s");
    pair.both(&[&b"SETRANGE"[..], b"s", b"15", b"\x80"]);
    pair.inspect(b"s");
    grow(&mut pair, b"d", 3000, 500, "d");
    pair.both(&[&b"SETRANGE"[..], b"d", b"100", b"\xff\xff\xff"]);
    pair.both(&[&b"SETRANGE"[..], b"d", b"15", b"\x80"]);
    pair.inspect(b"d");
    pair.both(&["SETRANGE", "d", "4", "\x01"]);
    pair.inspect(b"d");
    pair.both(&["PFADD", "d", "a", "b"]);
    pair.both(&["SETRANGE", "d", "4", "\x00"]);
    pair.both(&["APPEND", "d", "x"]);
    pair.inspect(b"d");
    pair.both(&["PFADD", "d", "a", "b"]);
    pair.check();
}

#[test]
fn resp3_transactions_and_watch() {
    let (redis, redline) = servers();
    let mut pair = Pair::new(&redis, &redline);
    // Not compared: the reply carries the connection id.
    pair.redis.cmd(&["HELLO", "3"]);
    pair.redline.cmd(&["HELLO", "3"]);
    grow(&mut pair, b"r", 200, 50, "r");
    pair.both(&["PFCOUNT", "r", "r2"]);
    pair.both(&["PFMERGE", "r2", "r"]);
    pair.inspect(b"r2");
    pair.both(&["PFADD", "str"]);
    pair.both(&["SET", "str", "x"]);
    pair.both(&["PFADD", "str", "a"]);
    pair.both(&["MULTI"]);
    pair.both(&["PFADD", "t", "a", "b"]);
    pair.both(&["PFCOUNT", "t"]);
    pair.both(&["PFMERGE", "t2", "t", "r"]);
    pair.both(&["PFCOUNT", "t2", "str"]);
    pair.both(&["GET", "t"]);
    pair.both(&["EXEC"]);
    pair.inspect(b"t2");

    // PFCOUNT that refreshes the cache counts as a write for WATCH; one that reads a
    // valid cache does not.
    let mut other = Pair {
        redis: Conn::connect(redis.addr()),
        redline: Conn::connect(redline.addr),
        mismatches: Vec::new(),
    };
    for refresh in [true, false] {
        pair.both(&["PFADD", "w", if refresh { "w1" } else { "w0" }]);
        if !refresh {
            pair.both(&["PFCOUNT", "w"]);
        }
        pair.both(&["WATCH", "w"]);
        other.both(&["PFCOUNT", "w"]);
        pair.both(&["MULTI"]);
        pair.both(&["PING"]);
        pair.both(&["EXEC"]);
    }
    pair.mismatches.append(&mut other.mismatches);
    pair.check();
}

#[test]
fn sparse_limit_is_configurable() {
    let (redis, redline) = servers();
    let mut pair = Pair::new(&redis, &redline);
    pair.both(&["CONFIG", "GET", "hll-sparse-max-bytes"]);
    for limit in [
        "0", "20", "100", "1kb", "5000", "", "-1", "+5", "abc", "20000",
    ] {
        pair.both(&["CONFIG", "SET", "hll-sparse-max-bytes", limit]);
        pair.both(&["CONFIG", "GET", "hll-sparse-max-bytes"]);
        let key = format!("l{limit}");
        grow(&mut pair, key.as_bytes(), 1200, 40, "l");
        pair.both(&["PFMERGE", "merged", key.as_str()]);
        pair.inspect(b"merged");
        pair.both(&["DEL", "merged"]);
    }
    pair.both(&["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]);
    pair.check();
}

#[test]
fn debugging_commands() {
    let (redis, redline) = servers();
    let mut pair = Pair::new(&redis, &redline);
    grow(&mut pair, b"h", 30, 10, "h");
    pair.both(&[&b"SET"[..], b"cut", b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x7f"]);
    pair.both(&[&b"SET"[..], b"empty", b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80"]);
    pair.both(&["RPUSH", "list", "a"]);
    pair.both(&["SET", "str", "x"]);
    for key in ["h", "cut", "empty", "list", "str", "missing"] {
        for sub in [
            "ENCODING", "decode", "GETREG", "encoding", "TODENSE", "todense", "DECODE", "nosuch",
        ] {
            pair.both(&["PFDEBUG", sub, key]);
        }
        pair.inspect(key.as_bytes());
    }
    pair.both(&[&b"PFDEBUG"[..], b"bad\r\nname\x00tail", b"h"]);
    pair.both(&["PFDEBUG", "getreg"]);
    pair.both(&["PFDEBUG", "getreg", "h", "x"]);
    pair.both(&["PFSELFTEST"]);
    pair.both(&["PFSELFTEST", "x"]);
    pair.check();
}
