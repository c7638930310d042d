//! DUMP and RESTORE against a real redis-server 7.0, in both directions:
//!
//! - a value built on Redis, DUMPed there and RESTOREd into redline-server reads back
//!   (GET / LRANGE / HGETALL / SMEMBERS / ZRANGE WITHSCORES) exactly as on Redis;
//! - a value built on redline-server, DUMPed there and RESTOREd into Redis reads back on
//!   Redis exactly as on redline-server;
//! - RESTORE's options, TTL handling and errors, and corrupted payloads, get the same
//!   reply from both servers.
//!
//! Payloads are byte-identical to Redis's, under the default limits and others,
//! except where the bytes hold what this server does not keep: the order of a hash
//! table's fields or set's members (seeded at random per redis-server process), and
//! where the nodes of a list pushed at its head begin. This is why DUMP is not part of the random byte-compare generator of
//! `differential.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{show, transcript, Conn, Redline};
use redline_resp::Frame;
use redline_server::persist::rdb::crc64;
use redline_testkit::RedisServer;

type Command = Vec<Vec<u8>>;

/// A key and the commands that build its value.
struct Fixture {
    key: String,
    build: Vec<Command>,
}

fn cmd(parts: &[&[u8]]) -> Command {
    parts.iter().map(|p| p.to_vec()).collect()
}

/// `head` followed by `items`, split into commands of at most 1000 items.
fn chunked(head: &[&[u8]], items: &[Vec<u8>]) -> Vec<Command> {
    items
        .chunks(1000)
        .map(|chunk| {
            let mut c = cmd(head);
            c.extend(chunk.iter().cloned());
            c
        })
        .collect()
}

fn random_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n).map(|_| rng.u8(..)).collect()
}

fn fixtures() -> Vec<Fixture> {
    let mut all = Vec::new();
    let mut add = |key: &str, build: Vec<Command>| {
        all.push(Fixture {
            key: key.to_string(),
            build,
        })
    };
    let set = |key: &str, value: &[u8]| vec![cmd(&[b"SET", key.as_bytes(), value])];

    // Strings: int-encoded, compressible, binary, empty, large.
    for (i, v) in ["0", "-1", "127", "128", "-129", "40000", "1099511627776"]
        .iter()
        .enumerate()
    {
        add(&format!("int:{i}"), set("x", v.as_bytes()));
    }
    add("int:min", set("x", b"-9223372036854775808"));
    add("str:noncanon", set("x", b"007"));
    add("str:empty", set("x", b""));
    add("str:short", set("x", b"hello"));
    add("str:21", set("x", b"twenty-one characters"));
    add("str:1k", set("x", &b"compressible ".repeat(80)[..1024]));
    add("str:binary", set("x", &random_bytes(1, 3000)));
    add("str:100k", set("x", &random_bytes(2, 100 * 1024)));
    add("str:100k-zeros", set("x", &vec![0u8; 100 * 1024]));

    // Lists.
    add("list:3", vec![cmd(&[b"RPUSH", b"x", b"a", b"1", b""])]);
    let many: Vec<Vec<u8>> = (0..10_000).map(|i| format!("e{i}").into_bytes()).collect();
    add("list:10000", chunked(&[b"RPUSH", b"x"], &many));
    let ones: Vec<Vec<u8>> = (0..10_000).map(|i| vec![b'a' + (i % 26) as u8]).collect();
    add("list:1B", chunked(&[b"LPUSH", b"x"], &ones));
    let ints: Vec<Vec<u8>> = (0..5000)
        .map(|i| ((i as i64 - 2500) * 104_729).to_string().into_bytes())
        .collect();
    add("list:ints", chunked(&[b"RPUSH", b"x"], &ints));
    let big = random_bytes(3, 100 * 1024);
    add(
        "list:100k",
        vec![cmd(&[b"RPUSH", b"x", b"head", &big, b"mid", &big, b"tail"])],
    );

    // Hashes.
    add(
        "hash:3",
        vec![cmd(&[
            b"HSET",
            b"x",
            b"f",
            b"v",
            b"n",
            b"7",
            b"bin",
            b"\x00\xff",
        ])],
    );
    let pairs: Vec<Vec<u8>> = (0..1000)
        .flat_map(|i| {
            [
                format!("field{i}").into_bytes(),
                format!("{}", i * 3).into_bytes(),
            ]
        })
        .collect();
    add("hash:1000", chunked(&[b"HSET", b"x"], &pairs));
    add(
        "hash:bigvalue",
        vec![cmd(&[b"HSET", b"x", b"a", b"1", b"big", &big])],
    );

    // Sets.
    add("set:intset", vec![cmd(&[b"SADD", b"x", b"3", b"1", b"2"])]);
    add(
        "set:intset-wide",
        vec![cmd(&[
            b"SADD",
            b"x",
            b"-5",
            b"1099511627776",
            b"40000",
            b"0",
        ])],
    );
    let set_ints: Vec<Vec<u8>> = (0..1000)
        .map(|i| (i * 7).to_string().into_bytes())
        .collect();
    add("set:1000-ints", chunked(&[b"SADD", b"x"], &set_ints));
    add(
        "set:words",
        vec![cmd(&[b"SADD", b"x", b"a", b"b", b"01", b"\x00"])],
    );
    let words: Vec<Vec<u8>> = (0..1000).map(|i| format!("m{i}").into_bytes()).collect();
    add("set:1000-words", chunked(&[b"SADD", b"x"], &words));

    // Sorted sets, with fractional and infinite scores.
    add(
        "zset:3",
        vec![cmd(&[
            b"ZADD", b"x", b"1.5", b"a", b"-inf", b"b", b"+inf", b"c",
        ])],
    );
    let members: Vec<Vec<u8>> = (0..1000)
        .flat_map(|i| {
            let score = match i % 100 {
                0 => "inf".to_string(),
                1 => "-inf".to_string(),
                2 => format!("{}e300", i / 100),
                _ => format!("{}", i as f64 * 0.37 - 100.0),
            };
            [score.into_bytes(), format!("member{i}").into_bytes()]
        })
        .collect();
    add("zset:1000", chunked(&[b"ZADD", b"x"], &members));
    let long_member = vec![b'L'; 100];
    add(
        "zset:long-member",
        vec![cmd(&[b"ZADD", b"x", b"1", b"a", b"0.25", &long_member])],
    );
    all
}

/// Runs the fixture's commands under `key` (pipelined).
fn build(conn: &mut Conn, fixture: &Fixture, key: &[u8]) {
    conn.cmd(&[b"DEL".as_slice(), key]);
    for c in &fixture.build {
        let mut c = c.clone();
        c[1] = key.to_vec();
        conn.send(&c);
    }
    for _ in &fixture.build {
        let reply = conn.read().unwrap();
        assert!(
            !matches!(reply, Frame::Error(_)),
            "{}: {reply:?}",
            fixture.key
        );
    }
}

/// The value of `key` as a comparable text, read with the type's full read command
/// (unordered replies sorted).
fn read(conn: &mut Conn, key: &[u8]) -> String {
    read_as(conn, key, false)
}

/// [`read`], with sorted-set members sorted by name too when `any_order`: a corrupted
/// listpack can hold members out of score order, which Redis keeps and a sorted set
/// here cannot.
fn read_as(conn: &mut Conn, key: &[u8], any_order: bool) -> String {
    let kind = match conn.cmd(&[b"TYPE".as_slice(), key]) {
        Frame::Simple(t) => String::from_utf8_lossy(&t).into_owned(),
        other => panic!("TYPE: {other:?}"),
    };
    let reply = match kind.as_str() {
        "string" => conn.cmd(&[b"GET".as_slice(), key]),
        "list" => conn.cmd(&[b"LRANGE".as_slice(), key, b"0", b"-1"]),
        "hash" => conn.cmd(&[b"HGETALL".as_slice(), key]),
        "set" => conn.cmd(&[b"SMEMBERS".as_slice(), key]),
        "zset" => conn.cmd(&[b"ZRANGE".as_slice(), key, b"0", b"-1", b"WITHSCORES"]),
        "none" => return "none".into(),
        other => panic!("type {other}"),
    };
    let pairs_unordered = kind == "hash" || any_order;
    let text = match (kind.as_str(), reply) {
        ("hash", Frame::Array(items)) | ("zset", Frame::Array(items)) if pairs_unordered => {
            let mut pairs: Vec<String> = items
                .chunks(2)
                .map(|p| format!("{} {}", show(&p[0]), show(&p[1])))
                .collect();
            pairs.sort();
            pairs.join(",")
        }
        ("set", Frame::Array(items)) => {
            let mut members: Vec<String> = items.iter().map(show).collect();
            members.sort();
            members.join(",")
        }
        (_, reply) => show(&reply),
    };
    format!("{kind}: {text}")
}

fn dump(conn: &mut Conn, key: &[u8]) -> Vec<u8> {
    match conn.cmd(&[b"DUMP".as_slice(), key]) {
        Frame::Bulk(b) => b.to_vec(),
        other => panic!("DUMP: {other:?}"),
    }
}

fn restore(conn: &mut Conn, key: &[u8], payload: &[u8]) -> String {
    show(&conn.cmd(&[b"RESTORE".as_slice(), key, b"0", payload]))
}

/// Values DUMPed by Redis load into redline-server with the same contents, and
/// redline-server's DUMP of them loads back into Redis with the same contents.
#[test]
fn redis_dump_restores_into_redline_and_back() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let mut r = Conn::connect(redis.addr());
    let mut l = Conn::connect(redline.addr);
    for f in fixtures() {
        build(&mut r, &f, b"src");
        let expected = read(&mut r, b"src");
        let payload = dump(&mut r, b"src");
        assert_eq!(
            restore(&mut l, b"dst", &payload),
            "Simple(b\"OK\")",
            "{}",
            f.key
        );
        assert_eq!(read(&mut l, b"dst"), expected, "{}: redline's copy", f.key);
        // And back: redline's own payload of the restored value loads into Redis.
        let ours = dump(&mut l, b"dst");
        assert_eq!(
            restore(&mut r, b"back", &ours),
            "Simple(b\"OK\")",
            "{}",
            f.key
        );
        assert_eq!(read(&mut r, b"back"), expected, "{}: round trip", f.key);
        for c in [&mut r, &mut l] {
            c.cmd(&["DEL", "src", "dst", "back"]);
        }
    }
}

/// Values built on redline-server, DUMPed there, load into Redis with the same contents.
#[test]
fn redline_dump_restores_into_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let mut r = Conn::connect(redis.addr());
    let mut l = Conn::connect(redline.addr);
    let (mut identical, mut total) = (0, 0);
    let mut differing = Vec::new();
    for f in fixtures() {
        build(&mut l, &f, b"src");
        build(&mut r, &f, b"src");
        let expected = read(&mut l, b"src");
        assert_eq!(
            read(&mut r, b"src"),
            expected,
            "{}: the fixture itself",
            f.key
        );
        let ours = dump(&mut l, b"src");
        assert_eq!(
            restore(&mut r, b"dst", &ours),
            "Simple(b\"OK\")",
            "{}",
            f.key
        );
        assert_eq!(read(&mut r, b"dst"), expected, "{}: Redis's copy", f.key);
        total += 1;
        if ours == dump(&mut r, b"src") {
            identical += 1;
        } else if !in_hash_table(&mut r) {
            differing.push(f.key.clone());
        }
        for c in [&mut r, &mut l] {
            c.cmd(&["DEL", "src", "dst"]);
        }
    }
    println!(
        "{identical} of {total} DUMP payloads byte-identical to Redis's; differing: {differing:?}"
    );
    assert_eq!(differing, ["list:1B"]);
}

/// Whether Redis holds `src` in a hash table, whose order (seeded at random per
/// process) its payload keeps: such payloads differ between two redis-servers too.
fn in_hash_table(redis: &mut Conn) -> bool {
    show(&redis.cmd(&["OBJECT", "ENCODING", "src"])).contains("hashtable")
}

/// Under other compact-encoding limits and list node fills, a value is saved in the
/// encoding Redis holds it in (a sorted set of four members as a skiplist, a list in
/// nodes of three entries...): the payloads are Redis's, byte for byte.
#[test]
fn payloads_follow_the_configured_encodings() {
    let args = [
        "--hash-max-listpack-entries",
        "1000",
        "--hash-max-listpack-value",
        "8",
        "--set-max-intset-entries",
        "3",
        "--zset-max-listpack-entries",
        "3",
        "--zset-max-listpack-value",
        "1000",
        "--list-max-listpack-size",
        "3",
    ];
    let redis = RedisServer::builder().args(args).start().unwrap();
    let redline = redline_testkit::RedlineServer::builder()
        .args(args)
        .start()
        .unwrap();
    let mut r = Conn::connect(redis.addr());
    let mut l = Conn::connect(([127, 0, 0, 1], redline.port()).into());
    let mut differing = Vec::new();
    for f in fixtures() {
        build(&mut l, &f, b"src");
        build(&mut r, &f, b"src");
        if dump(&mut l, b"src") != dump(&mut r, b"src") && !in_hash_table(&mut r) {
            differing.push(f.key.clone());
        }
        for c in [&mut r, &mut l] {
            c.cmd(&["DEL", "src"]);
        }
    }
    // Only a list pushed at its head: where its nodes begin is its history.
    assert_eq!(differing, ["list:1B"]);
}

/// One command of a script.
fn line<'a>(parts: &[&'a [u8]]) -> Vec<&'a [u8]> {
    parts.to_vec()
}

/// `payload` with its footer replaced: RDB `version` and a valid CRC.
fn resign(payload: &[u8], version: u16) -> Vec<u8> {
    let mut out = payload[..payload.len().saturating_sub(10)].to_vec();
    out.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A body (type byte and value) signed as a version-10 payload.
fn signed(body: &[u8]) -> Vec<u8> {
    let mut padded = body.to_vec();
    padded.extend_from_slice(&[0; 10]);
    resign(&padded, 10)
}

/// RESTORE's options, TTLs and errors, and corrupted payloads: the same replies from
/// both servers, command by command.
#[test]
fn restore_options_and_errors_match_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let mut r = Conn::connect(redis.addr());
    r.cmd(&["SET", "s", "hello"]);
    r.cmd(&["RPUSH", "l", "a", "b"]);
    let string = dump(&mut r, b"s");
    let list = dump(&mut r, b"l");
    r.cmd(&["FLUSHALL"]);

    let mut truncated = string.clone();
    truncated.truncate(string.len() - 1);
    let mut bad_crc = string.clone();
    *bad_crc.last_mut().unwrap() ^= 1;
    let newer = resign(&string, 11);
    let older = resign(&string, 9);
    let corrupt_cases: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"x".to_vec(),
        truncated,
        bad_crc,
        newer,
        older,
        // Bodies with valid footers: truncated value, unknown type, empty list, a length
        // beyond the payload, a 2^63 length, duplicate set members, an empty intset, a
        // bad quicklist container, a NaN score.
        signed(&string[..3]),
        signed(&[99]),
        signed(&[1, 0]),
        signed(&[0, 0x3f, b'a']),
        signed(&[0, 0x81, 0x80, 0, 0, 0, 0, 0, 0, 0]),
        signed(&[2, 2, 1, b'a', 1, b'a']),
        signed(&[11, 8, 2, 0, 0, 0, 0, 0, 0, 0]),
        signed(&[18, 1, 7, 1, b'a']),
        signed(&[3, 1, 1, b'a', 253]),
        // Loadable oddities: bytes left over before the footer are ignored, and a value
        // may even run into the footer, as Redis reads the whole payload.
        signed(&[0, 1, b'a', 0xde, 0xad]),
        signed(&[0, 5, b'a']),
    ];

    let ttl_future = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 3_600_000)
        .to_string();
    let s = string.as_slice();
    let mut script: Vec<Vec<&[u8]>> = vec![
        line(&[b"DUMP", b"nokey"]),
        line(&[b"RESTORE", b"k", b"0", s]),
        line(&[b"GET", b"k"]),
        line(&[b"PTTL", b"k"]),
        line(&[b"RESTORE", b"k", b"0", s]),
        line(&[b"RESTORE", b"k", b"0", &list, b"REPLACE"]),
        line(&[b"LRANGE", b"k", b"0", b"-1"]),
        // BUSYKEY comes before TTL and payload errors.
        line(&[b"RESTORE", b"k", b"-1", b"garbage"]),
        line(&[b"RESTORE", b"n", b"-1", s]),
        line(&[b"RESTORE", b"n", b"abc", s]),
        line(&[b"RESTORE", b"n", b"01", s]),
        line(&[b"RESTORE", b"n", b"0", s, b"BOGUS"]),
        line(&[b"RESTORE", b"n", b"0", s, b"IDLETIME"]),
        line(&[b"RESTORE", b"n", b"0", s, b"IDLETIME", b"-1"]),
        line(&[b"RESTORE", b"n", b"0", s, b"IDLETIME", b"x"]),
        line(&[b"RESTORE", b"n", b"0", s, b"FREQ", b"256"]),
        line(&[b"RESTORE", b"n", b"0", s, b"FREQ", b"-1"]),
        line(&[b"RESTORE", b"n", b"0", s, b"FREQ", b"1", b"IDLETIME", b"1"]),
        line(&[b"RESTORE", b"n", b"0", s, b"IDLETIME", b"1", b"FREQ", b"1"]),
        line(&[b"RESTORE", b"n", b"0", s, b"freq", b"255"]),
        line(&[
            b"RESTORE",
            b"n2",
            b"0",
            s,
            b"idletime",
            b"100",
            b"replace",
            b"absttl",
        ]),
        line(&[b"EXISTS", b"n", b"n2"]),
        line(&[b"TTL", b"n2"]),
        // A relative TTL; then absolute ones, future and past.
        line(&[b"RESTORE", b"t", b"100000", s]),
        line(&[b"RESTORE", b"abs", ttl_future.as_bytes(), s, b"ABSTTL"]),
        line(&[b"PEXPIRETIME", b"abs"]),
        line(&[b"RESTORE", b"past", b"1", s, b"ABSTTL"]),
        line(&[b"EXISTS", b"past"]),
        // An expired ABSTTL with REPLACE removes the old value.
        line(&[b"RESTORE", b"k", b"1", s, b"ABSTTL", b"REPLACE"]),
        line(&[b"EXISTS", b"k"]),
        // A TTL so large that now + TTL wraps: Redis treats it as expired.
        line(&[b"RESTORE", b"huge", b"9223372036854775807", s]),
        line(&[b"EXISTS", b"huge"]),
        line(&[b"RESTORE", b"k", b"0", b"", b"REPLACE"]),
        line(&[b"RESTORE"]),
        line(&[b"RESTORE", b"k", b"0"]),
        line(&[b"DUMP"]),
        line(&[b"DUMP", b"a", b"b"]),
        line(&[b"SET", b"plain", b"v"]),
        line(&[b"TYPE", b"t"]),
    ];
    for case in &corrupt_cases {
        script.push(line(&[b"RESTORE", b"c", b"0", case, b"REPLACE"]));
        script.push(line(&[b"TYPE", b"c"]));
        script.push(line(&[b"GET", b"c"]));
        script.push(line(&[b"DEL", b"c"]));
    }
    let run = |addr| -> Vec<String> {
        let mut c = Conn::connect(addr);
        script
            .iter()
            .map(|args| {
                let reply = c.cmd(args);
                match (args[0], &reply) {
                    (b"PTTL", Frame::Integer(n)) if *n > 0 => "positive".into(),
                    _ => show(&reply),
                }
            })
            .collect()
    };
    let a = run(redis.addr());
    let b = run(redline.addr);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(
            x,
            y,
            "command {i}: {:?}",
            script[i]
                .iter()
                .map(|p| String::from_utf8_lossy(&p[..p.len().min(40)]).into_owned())
                .collect::<Vec<_>>()
        );
    }
    assert_eq!(a.len(), b.len());
}

/// Random byte changes inside Redis's payloads (re-signed so they reach the decoder)
/// never take redline-server down; against a Redis that validates payloads deeply
/// (`sanitize-dump-payload yes`) each one is accepted or refused alike, and accepted
/// ones read back the same (sorted-set members compared as a map: see [`read_as`]).
#[test]
fn mutated_payloads_match_deep_sanitizing_redis() {
    let redis = RedisServer::builder()
        .arg("--sanitize-dump-payload", "yes")
        .start()
        .expect("redis-server");
    let redline = Redline::start();
    let mut r = Conn::connect(redis.addr());
    let mut l = Conn::connect(redline.addr);
    let mut rng = fastrand::Rng::with_seed(2024);
    let mut accepted = 0;
    let mut tried = 0;
    for f in fixtures()
        .into_iter()
        .filter(|f| !f.key.contains("10000") && !f.key.contains("100k"))
    {
        build(&mut r, &f, b"src");
        let payload = dump(&mut r, b"src");
        let body_len = payload.len() - 10;
        for _ in 0..40 {
            let mut changed = payload.clone();
            let i = rng.usize(..body_len);
            changed[i] = rng.u8(..);
            let changed = resign(&changed, 10);
            let a = restore(&mut r, b"m", &changed);
            let b = restore(&mut l, b"m", &changed);
            assert_eq!(a, b, "{}: byte {i} changed: {changed:?}", f.key);
            if a.contains("OK") {
                accepted += 1;
                assert_eq!(
                    read_as(&mut r, b"m", true),
                    read_as(&mut l, b"m", true),
                    "{}: byte {i}",
                    f.key
                );
                r.cmd(&["DEL", "m"]);
                l.cmd(&["DEL", "m"]);
            }
            tried += 1;
        }
    }
    println!("{accepted} of {tried} mutated payloads were accepted by both");
    assert_eq!(show(&l.cmd(&["PING"])), "Simple(b\"PONG\")");
}

/// RESTORE wakes clients blocked on the key, runs inside MULTI/EXEC, and DUMP of a
/// missing key is a RESP3 null after HELLO 3: as in Redis.
#[test]
fn restore_wakes_blocked_clients_and_runs_in_transactions() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let payload = {
        let mut r = Conn::connect(redis.addr());
        r.cmd(&["RPUSH", "l", "a", "b", "c"]);
        let p = dump(&mut r, b"l");
        r.cmd(&["DEL", "l"]);
        p
    };
    let run = |addr| -> Vec<String> {
        let mut waiter = Conn::connect(addr);
        let mut c = Conn::connect(addr);
        let mut replies = Vec::new();
        waiter.send(&["BLPOP", "q", "10"]);
        // Let the BLPOP block before the key appears.
        std::thread::sleep(std::time::Duration::from_millis(200));
        replies.push(show(&c.cmd(&[b"RESTORE".as_slice(), b"q", b"0", &payload])));
        replies.push(show(&waiter.read().unwrap()));
        replies.push(show(&c.cmd(&["LRANGE", "q", "0", "-1"])));
        for args in [
            &[&b"MULTI"[..]][..],
            &[b"RESTORE", b"m", b"0", &payload],
            &[b"RESTORE", b"m", b"0", &payload],
            &[b"DUMP", b"nokey"],
            &[b"LLEN", b"m"],
            &[b"EXEC"],
        ] {
            replies.push(show(&c.cmd(args)));
        }
        c.cmd(&["HELLO", "3"]);
        replies.push(show(&c.cmd(&["DUMP", "nokey"])));
        replies
    };
    assert_eq!(run(redis.addr()), run(redline.addr));
}

/// A ziplist (the encoding of Redis 6 and older) of strings shorter than 64 bytes and
/// small integers; test input only.
fn ziplist(items: &[&[u8]]) -> Vec<u8> {
    let mut body = Vec::new();
    let (mut prev, mut last) = (0usize, 10usize);
    for item in items {
        let start = body.len();
        last = 10 + start;
        body.push(prev as u8);
        let n = std::str::from_utf8(item)
            .ok()
            .and_then(|t| t.parse::<i16>().ok())
            .filter(|n| n.to_string().as_bytes() == *item);
        match n {
            Some(n) if (0..=12).contains(&n) => body.push(0xF1 + n as u8),
            Some(n) => {
                body.push(0xC0);
                body.extend_from_slice(&n.to_le_bytes());
            }
            None => {
                assert!(item.len() < 64);
                body.push(item.len() as u8);
                body.extend_from_slice(item);
            }
        }
        prev = body.len() - start;
    }
    let mut zl = Vec::new();
    zl.extend_from_slice(&((10 + body.len() + 1) as u32).to_le_bytes());
    zl.extend_from_slice(&(last as u32).to_le_bytes());
    zl.extend_from_slice(&(items.len() as u16).to_le_bytes());
    zl.extend_from_slice(&body);
    zl.push(0xFF);
    zl
}

/// The encodings Redis 7.0 no longer writes but still loads (plain lists, hashes and
/// sets, ziplist lists/quicklists/hashes/sorted sets, text-score sorted sets, and plain
/// quicklist nodes), as version-9 payloads: both servers load them to the same value.
#[test]
fn legacy_encodings_load_like_redis() {
    use redline_server::persist::rdb::encode::string;
    use redline_server::persist::rdb::listpack::Writer;
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let words = |items: &[&[u8]]| -> Vec<u8> {
        let mut out = Vec::new();
        for i in items {
            string(&mut out, i);
        }
        out
    };
    let with = |head: &[u8], tail: Vec<u8>| -> Vec<u8> {
        let mut v = head.to_vec();
        v.extend(tail);
        v
    };
    let blob = |b: Vec<u8>| -> Vec<u8> {
        let mut out = Vec::new();
        string(&mut out, &b);
        out
    };
    let listpack = |items: &[&[u8]]| -> Vec<u8> {
        let mut w = Writer::new();
        for i in items {
            w.push(i);
        }
        w.finish()
    };
    let long = b"a ziplist element long enough to be compressed: zzzzzzzzzzzz".as_slice();
    let bodies: Vec<(&str, Vec<u8>)> = vec![
        ("list", with(&[1, 4], words(&[b"a", b"12", b"", b"-300"]))),
        (
            "list ziplist",
            with(
                &[10],
                blob(ziplist(&[b"a", b"12", b"300", b"-7", long, long])),
            ),
        ),
        (
            "quicklist of ziplists",
            with(
                &[14, 3],
                [
                    blob(ziplist(&[b"x", b"1"])),
                    blob(ziplist(&[])),
                    blob(ziplist(&[b"y", long])),
                ]
                .concat(),
            ),
        ),
        (
            "quicklist 2 with a plain node",
            [
                vec![18, 3, 2],
                blob(listpack(&[b"a", b"b"])),
                vec![1],
                blob(b"plain element".to_vec()),
                vec![2],
                blob(listpack(&[b"c", b"42"])),
            ]
            .concat(),
        ),
        ("hash", with(&[4, 2], words(&[b"f", b"1", b"g", b"two"]))),
        (
            "hash ziplist",
            with(
                &[13],
                blob(ziplist(&[b"f", b"1", b"g", b"two", b"h", long])),
            ),
        ),
        ("set", with(&[2, 3], words(&[b"m", b"5", b"-1"]))),
        (
            "zset ziplist",
            with(
                &[12],
                blob(ziplist(&[
                    b"c", b"-inf", b"a", b"1.5", b"b", b"2", long, b"300",
                ])),
            ),
        ),
        (
            "zset with text scores",
            [
                vec![3, 3],
                words(&[b"a"]),
                b"\x031.5".to_vec(),
                words(&[b"b"]),
                vec![254],
                words(&[b"c"]),
                vec![255],
            ]
            .concat(),
        ),
    ];
    let mut r = Conn::connect(redis.addr());
    let mut l = Conn::connect(redline.addr);
    for (name, body) in bodies {
        let mut payload = body.clone();
        payload.extend_from_slice(&[0; 10]);
        let payload = resign(&payload, 9);
        let a = restore(&mut r, b"k", &payload);
        let b = restore(&mut l, b"k", &payload);
        assert_eq!(a, "Simple(b\"OK\")", "{name}: Redis");
        assert_eq!(b, a, "{name}");
        assert_eq!(read(&mut l, b"k"), read(&mut r, b"k"), "{name}");
        r.cmd(&["DEL", "k"]);
        l.cmd(&["DEL", "k"]);
    }
}

/// Redis weighs a collection's encoding when it is written or loaded, under the limits
/// in force then: a lower limit converts nothing until the next addition (a score's
/// change is none), a higher one converts nothing back, and a listpack RESTOREd is
/// weighed by its count alone, however long its elements.
#[test]
fn encodings_outlive_a_limit_change_like_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let mut r = Conn::connect(redis.addr());
    let mut l = Conn::connect(redline.addr);
    let steps: &[&[&str]] = &[
        &["HSET", "h", "a", "1", "b", "2", "c", "3"],
        &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
        &["SADD", "s", "1", "2", "3"],
        &["SADD", "t", "1", "2", "3"],
        &["CONFIG", "SET", "hash-max-listpack-entries", "2"],
        &["CONFIG", "SET", "zset-max-listpack-entries", "1"],
        &["CONFIG", "SET", "set-max-intset-entries", "2"],
        &["OBJECT", "ENCODING", "h"],
        &["OBJECT", "ENCODING", "z"],
        &["OBJECT", "ENCODING", "s"],
        // An update weighs a hash, not a sorted set.
        &["ZADD", "z", "5", "a"],
        &["OBJECT", "ENCODING", "z"],
        &["HSET", "h", "a", "5"],
        &["OBJECT", "ENCODING", "h"],
        &["SREM", "s", "3"],
        &["SADD", "s", "3"],
        &["OBJECT", "ENCODING", "s"],
        &["CONFIG", "SET", "hash-max-listpack-entries", "128"],
        &["CONFIG", "SET", "zset-max-listpack-entries", "128"],
        &["CONFIG", "SET", "set-max-intset-entries", "512"],
        &["OBJECT", "ENCODING", "h"],
        &["OBJECT", "ENCODING", "z"],
        &["OBJECT", "ENCODING", "s"],
        &["OBJECT", "ENCODING", "t"],
        &["SADD", "t", "4"],
        &["OBJECT", "ENCODING", "t"],
        &["ZADD", "z", "9", "new"],
        &["OBJECT", "ENCODING", "z"],
    ];
    assert_eq!(transcript(&mut l, steps), transcript(&mut r, steps));
    // A listpack of long members, loaded under a value limit they pass.
    let long = "m".repeat(40);
    for c in [&mut r, &mut l] {
        c.cmd(&["ZADD", "lz", "1", &long]);
        c.cmd(&["HSET", "lh", &long, "v"]);
    }
    let payloads = [("lz", dump(&mut r, b"lz")), ("lh", dump(&mut r, b"lh"))];
    for c in [&mut r, &mut l] {
        c.cmd(&["CONFIG", "SET", "zset-max-listpack-value", "8"]);
        c.cmd(&["CONFIG", "SET", "hash-max-listpack-value", "8"]);
    }
    for (key, payload) in &payloads {
        for c in [&mut r, &mut l] {
            c.cmd(&[&b"RESTORE"[..], key.as_bytes(), b"0", payload, b"REPLACE"]);
        }
        let ask: &[&str] = &["OBJECT", "ENCODING", key];
        assert_eq!(show(&l.cmd(ask)), show(&r.cmd(ask)), "{key}");
        assert_eq!(show(&r.cmd(ask)), "Bulk(b\"listpack\")", "{key}");
    }
}

/// A score of -0 as Redis 7.0 keeps it: a skiplist holds its sign (ZSCORE says `-0`),
/// a listpack stores a whole score as an integer (`0`). So it depends on the encoding
/// when the member is written: ZADD and ZINCRBY, the member that converts a set, a
/// STORE command's result (built as a skiplist, converted when it fits), ZRANGESTORE
/// (added one by one), ZUNION's reply (never converted), and a load (DEBUG RELOAD, a
/// RESTORE of Redis's payload, which converts a small skiplist).
#[test]
fn negative_zero_scores_like_redis() {
    let redis = common::redis_with_debug();
    let redline = Redline::start();
    let mut r = Conn::connect(redis.addr());
    let mut l = Conn::connect(redline.addr);
    let long = "m".repeat(70);
    let steps: &[&[&str]] = &[
        &["ZADD", "small", "-0", "a", "0", "b", "1", "c"],
        &["ZRANGE", "small", "0", "-1", "WITHSCORES"],
        &["ZADD", "small", "INCR", "-0", "d"],
        &["ZSCORE", "small", "d"],
        &["ZUNION", "1", "small", "WEIGHTS", "-1", "WITHSCORES"],
        &["ZINTER", "1", "small", "WEIGHTS", "-1", "WITHSCORES"],
        &["ZUNIONSTORE", "u", "1", "small", "WEIGHTS", "-1"],
        &["ZRANGE", "u", "0", "-1", "WITHSCORES"],
        &["CONFIG", "SET", "zset-max-listpack-entries", "2"],
        &["ZADD", "big", "1", "b", "2", "c"],
        // The third member converts the set before it is added: it keeps its sign.
        &["ZADD", "big", "-0", "a"],
        &["ZADD", "big", "-0", "x", "0", "y"],
        &["ZINCRBY", "big", "-0", "a"],
        &["ZINCRBY", "big", "-0", "y"],
        &["ZADD", "big", "0", "a"],
        &["ZRANGE", "big", "0", "-1", "WITHSCORES"],
        &["ZRANGEBYSCORE", "big", "-0", "0", "WITHSCORES"],
        &["ZRANGEBYSCORE", "big", "(-0", "+inf", "WITHSCORES"],
        &["ZRANK", "big", "y"],
        &["ZCOUNT", "big", "0", "(1"],
        &["ZMSCORE", "big", "a", "x", "y"],
        &["ZUNIONSTORE", "u2", "1", "big", "WEIGHTS", "-1"],
        &["ZRANGE", "u2", "0", "-1", "WITHSCORES"],
        &["ZUNIONSTORE", "u3", "1", "small", "WEIGHTS", "-1"],
        &["ZRANGE", "u3", "0", "-1", "WITHSCORES"],
        &["ZRANGESTORE", "r1", "big", "0", "1"],
        &["ZRANGE", "r1", "0", "-1", "WITHSCORES"],
        &["ZRANGESTORE", "r2", "big", "0", "-1"],
        &["ZRANGE", "r2", "0", "-1", "WITHSCORES"],
        &["ZADD", "pre", "-0", "a", "-0", &long],
        &["ZRANGESTORE", "r3", "pre", "0", "-1"],
        &["ZRANGE", "r3", "0", "-1", "WITHSCORES"],
        &["DEBUG", "DIGEST-VALUE", "big", "small", "u2", "r3"],
        &["CONFIG", "SET", "zset-max-listpack-entries", "128"],
        &["DEBUG", "RELOAD"],
        &["ZRANGE", "big", "0", "-1", "WITHSCORES"],
        &["ZRANGE", "u2", "0", "-1", "WITHSCORES"],
        &["ZRANGE", "r3", "0", "-1", "WITHSCORES"],
        &["OBJECT", "ENCODING", "big"],
        &["ZPOPMIN", "big", "2"],
    ];
    assert_eq!(transcript(&mut l, steps), transcript(&mut r, steps));
    // Redis's payload of a skiplist holding -0, restored under limits it fits (converted
    // to a listpack: the sign goes) and under limits it does not (it stays).
    for c in [&mut r, &mut l] {
        c.cmd(&["CONFIG", "SET", "zset-max-listpack-entries", "0"]);
        c.cmd(&["ZADD", "sk", "-0", "a", "1", "b"]);
    }
    let payload = dump(&mut r, b"sk");
    for entries in ["0", "128"] {
        let restored: Vec<String> = [&mut r, &mut l]
            .into_iter()
            .map(|c| {
                c.cmd(&["CONFIG", "SET", "zset-max-listpack-entries", entries]);
                c.cmd(&[&b"RESTORE"[..], b"sk2", b"0", &payload, b"REPLACE"]);
                show(&c.cmd(&["ZRANGE", "sk2", "0", "-1", "WITHSCORES"]))
            })
            .collect();
        assert_eq!(restored[1], restored[0], "restored under {entries} entries");
    }
}

/// A stream node keeps its deleted entries until it empties, in memory and in its
/// RDB form (flagged, counted in the node's header), as Redis keeps them: after a
/// reload or a RESTORE of Redis's payload the nodes end where Redis's end, so the next
/// entries, an approximate trim and XINFO's radix-tree figures agree, and DUMP writes
/// Redis's bytes.
#[test]
fn stream_nodes_keep_their_deleted_entries_like_redis() {
    let redis = common::redis_with_debug();
    let redline = Redline::start();
    let mut r = Conn::connect(redis.addr());
    let mut l = Conn::connect(redline.addr);
    let steps: &[&[&str]] = &[
        &["CONFIG", "SET", "stream-node-max-entries", "2"],
        &["XADD", "s", "1-0", "a", "1"],
        &["XADD", "s", "2-0", "b", "2"],
        &["XADD", "s", "3-0", "c", "3", "x", "y"],
        // The first entry of each node goes; their nodes stay, one live entry each.
        &["XDEL", "s", "1-0", "3-0"],
        &["DEBUG", "RELOAD"],
        &["XADD", "s", "4-0", "d", "4"],
        &["XADD", "s", "5-0", "e", "5"],
        &["XINFO", "STREAM", "s"],
        &["DUMP", "s"],
        &["XTRIM", "s", "MAXLEN", "~", "2"],
        &["XINFO", "STREAM", "s"],
        &["XRANGE", "s", "-", "+"],
    ];
    assert_eq!(transcript(&mut l, steps), transcript(&mut r, steps));
    // Redis's payload of the same shape, restored on both.
    for c in [&mut r, &mut l] {
        c.cmd(&["DEL", "t"]);
        for (id, field) in [("1-0", "a"), ("2-0", "b"), ("3-0", "c"), ("4-0", "d")] {
            c.cmd(&["XADD", "t", id, field, "1"]);
        }
        c.cmd(&["XDEL", "t", "1-0"]);
    }
    let payload = dump(&mut r, b"t");
    let after_restore: &[&[&str]] = &[
        &["XADD", "t2", "5-0", "e", "5"],
        &["XINFO", "STREAM", "t2"],
        &["XTRIM", "t2", "MAXLEN", "~", "3"],
        &["XLEN", "t2"],
        &["DUMP", "t2"],
    ];
    let mut seen = Vec::new();
    for c in [&mut r, &mut l] {
        c.cmd(&[&b"RESTORE"[..], b"t2", b"0", &payload, b"REPLACE"]);
        seen.push(transcript(c, after_restore));
    }
    assert_eq!(seen[1], seen[0]);
}
