//! `redline fill` against real servers: exact key counts, cluster spread in proportion to
//! slots with no redirects, and clear refusals of sizes that cannot be honoured.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use cli_support::{json_lines, redline, run, text};
use redline_testkit::{RedisCluster, RedisServer, Reply, TlsCerts};

#[test]
fn fill_64mb_standalone_gives_65536_keys() {
    let server = RedisServer::start().expect("redis-server");
    server.cmd(&["SET", "leftover", "x"]).unwrap();
    let port = server.port().to_string();
    let out = run(
        redline(),
        &["fill", "-p", &port, "--data", "64MB", "--flush", "--json"],
        b"",
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let report = &json_lines(&out.stdout)[0];
    assert_eq!(report["keys"], 65_536);
    assert_eq!(report["dbsize"], 65_536);
    assert_eq!(report["bytes"], 64u64 << 20);
    assert_eq!(server.cmd(&["DBSIZE"]).unwrap(), Reply::Integer(65_536));
    // Keys and values have the requested sizes.
    let key = match server.cmd(&["RANDOMKEY"]).unwrap() {
        Reply::Bulk(Some(key)) => String::from_utf8(key).unwrap(),
        other => panic!("RANDOMKEY: {other:?}"),
    };
    assert_eq!(key.len(), 512);
    assert_eq!(server.cmd(&["STRLEN", &key]).unwrap(), Reply::Integer(512));
}

#[test]
fn fill_keys_and_flush_alone() {
    let server = RedisServer::start().expect("redis-server");
    let port = server.port().to_string();
    let out = run(
        redline(),
        &[
            "fill",
            "-p",
            &port,
            "--keys",
            "1000",
            "--key-size",
            "16",
            "--value-size",
            "8",
        ],
        b"",
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("DBSIZE: 1000"),
        "{}",
        text(&out.stdout)
    );
    let flushed = run(redline(), &["fill", "-p", &port, "--flush"], b"");
    assert!(flushed.status.success());
    assert_eq!(server.cmd(&["DBSIZE"]).unwrap(), Reply::Integer(0));
}

#[test]
fn impossible_sizes_are_refused_clearly() {
    let server = RedisServer::start().expect("redis-server");
    let port = server.port().to_string();
    let cases: &[(&[&str], &str)] = &[
        (&["--data", "100"], "smaller than one key"),
        (&["--data", "12XB"], "invalid size"),
        (
            &["--keys", "100000", "--key-size", "3"],
            "--key-size 3 is too short",
        ),
        (
            &["--keys", "10", "--key-size", "4", "--cluster"],
            "hash tag",
        ),
        (&[], "nothing to do"),
    ];
    for (flags, message) in cases {
        let mut args = vec!["fill", "-p", port.as_str()];
        args.extend_from_slice(flags);
        let out = run(redline(), &args, b"");
        assert_eq!(out.status.code(), Some(1), "{flags:?}");
        assert!(
            text(&out.stderr).contains(message),
            "{flags:?}: {}",
            text(&out.stderr)
        );
    }
    assert_eq!(server.cmd(&["DBSIZE"]).unwrap(), Reply::Integer(0));
}

#[test]
fn cluster_fill_spreads_by_slots_without_redirects() {
    let mut cluster = RedisCluster::builder()
        .replicas_per_master(0)
        .start()
        .expect("cluster");
    let port = cluster.addr(0).port().to_string();
    let out = run(
        redline(),
        &[
            "fill", "-c", "-p", &port, "--data", "64MB", "--flush", "--json",
        ],
        b"",
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let report = &json_lines(&out.stdout)[0];
    assert_eq!(report["dbsize"], 65_536);

    let masters = cluster.masters().unwrap();
    let ranges = cluster.slot_ranges().unwrap();
    let mut total = 0i64;
    for &node in &masters {
        let keys = cluster.cmd(node, &["DBSIZE"]).unwrap().integer().unwrap();
        total += keys;
        let slots: i64 = ranges
            .iter()
            .filter(|r| r.master == node)
            .map(|r| i64::from(r.end) - i64::from(r.start) + 1)
            .sum();
        // Proportional to the node's slots, up to rounding.
        let expected = 65_536 * slots / 16_384;
        assert!(
            (keys - expected).abs() <= 1,
            "node {node}: {keys} keys for {slots} slots"
        );
        // No command was redirected (error replies are counted even with replies off).
        let stats = cluster
            .cmd(node, &["INFO", "errorstats"])
            .unwrap()
            .text()
            .unwrap();
        assert!(!stats.contains("MOVED"), "node {node}: {stats}");
        assert!(!stats.contains("ASK"), "node {node}: {stats}");
        // Keys sit in the node's own slots: sample one slot's count.
        let first = ranges
            .iter()
            .find(|r| r.master == node)
            .unwrap()
            .start
            .to_string();
        let in_slot = cluster
            .cmd(node, &["CLUSTER", "COUNTKEYSINSLOT", &first])
            .unwrap()
            .integer()
            .unwrap();
        assert!(in_slot > 0, "node {node}: slot {first} is empty");
    }
    assert_eq!(total, 65_536);
}

#[test]
fn fill_over_tls_with_a_password() {
    let certs = TlsCerts::generate().expect("certs");
    let server = RedisServer::builder()
        .tls(&certs)
        .password("pw")
        .start()
        .expect("tls redis");
    let port = server.port().to_string();
    let ca = certs.ca_cert_path().display().to_string();
    let out = run(
        redline(),
        &[
            "fill",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "--tls",
            "--cacert",
            &ca,
            "-a",
            "pw",
            "--data",
            "4MB",
            "--json",
        ],
        b"",
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(json_lines(&out.stdout)[0]["dbsize"], 4096);
    assert_eq!(server.cmd(&["DBSIZE"]).unwrap(), Reply::Integer(4096));
}
