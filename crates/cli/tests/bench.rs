//! `redline bench`: the embedded default, JSON output, cluster and TLS targets, custom
//! commands, and a server killed and restarted in the middle of a timed run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use cli_support::{json_lines, redline, run, text};
use redline_testkit::{RedisCluster, RedisServer, TlsCerts};
use serde_json::Value;

/// Polls `ready` for up to 20 s.
fn wait_for(mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("condition not reached in 20 s");
}

/// A numeric field of an INFO section.
fn stat(info: &str, name: &str) -> Option<u64> {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

/// Every field the JSON output promises, with the right types.
fn check_fields(row: &Value) {
    assert!(row["test"].is_string(), "{row}");
    for field in [
        "requests",
        "errors",
        "clients",
        "callers",
        "connections",
        "pipeline",
    ] {
        assert!(row[field].is_u64(), "{field} in {row}");
    }
    for field in ["seconds", "ops_per_sec"] {
        assert!(row[field].is_f64(), "{field} in {row}");
    }
    for q in ["p50", "p90", "p99", "p999", "max"] {
        assert!(row["latency_ms"][q].is_f64(), "latency_ms.{q} in {row}");
    }
}

#[test]
fn embedded_default_runs_the_standard_set_as_json() {
    let out = run(
        redline(),
        &["bench", "-n", "2000", "-c", "8", "--json"],
        b"",
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let rows = json_lines(&out.stdout);
    let seen: Vec<(String, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["test"].as_str().unwrap().to_owned(),
                r["pipeline"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut expected = Vec::new();
    for p in [1, 16] {
        for t in ["ping", "set", "get", "mixed"] {
            expected.push((t.to_owned(), p));
        }
    }
    assert_eq!(seen, expected);
    for row in &rows {
        check_fields(row);
        assert_eq!(row["requests"], 2000, "{row}");
        assert_eq!(row["errors"], 0, "{row}");
        assert_eq!(row["clients"], 8);
        assert_eq!(row["mode"], "multiplexed", "{row}");
        assert_eq!(row["connections"], 1, "{row}");
    }
}

/// `--mode redis-benchmark` opens one connection per caller (what redis-benchmark's -c
/// means), `--mode both` runs every test in each mode, and the text output says which.
#[test]
fn redis_benchmark_mode_opens_one_connection_per_caller() {
    let server = RedisServer::start().expect("redis-server");
    let port = server.port().to_string();
    let received = || {
        let info = server.cmd(&["INFO", "stats"]).unwrap().text().unwrap();
        stat(&info, "total_connections_received").unwrap()
    };
    let before = received();
    let out = run(
        redline(),
        &[
            "bench", "-p", &port, "-n", "500", "-c", "6", "-t", "set", "--mode", "both", "--json",
        ],
        b"",
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let rows = json_lines(&out.stdout);
    let modes: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["mode"].as_str().unwrap(),
                r["connections"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(modes, [("multiplexed", 1), ("redis-benchmark", 6)]);
    // One for the multiplexed client, six for the callers (plus handshakes' own).
    assert!(
        received() - before >= 7,
        "{} connections",
        received() - before
    );

    let out = run(
        redline(),
        &[
            "bench",
            "-p",
            &port,
            "-n",
            "200",
            "-c",
            "3",
            "-t",
            "get",
            "--mode",
            "redis-benchmark",
        ],
        b"",
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("3 parallel callers"), "{stdout}");
    assert!(
        stdout.contains("connections: 3 (one per caller"),
        "{stdout}"
    );
    assert!(
        text(&out.stderr).contains("compare these figures with redis-benchmark -c 3"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn embedded_table_and_quiet_output() {
    let out = run(
        redline(),
        &["bench", "-n", "500", "-c", "4", "-t", "set,lrange_100,mset"],
        b"",
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("====== SET ======"), "{stdout}");
    assert!(stdout.contains("throughput summary:"), "{stdout}");
    assert!(stdout.contains("lrange_100"), "{stdout}");
    assert!(stdout.contains("ops/sec"), "{stdout}");
    let quiet = run(redline(), &["bench", "-n", "500", "-t", "get", "-q"], b"");
    assert!(
        text(&quiet.stdout).starts_with("GET: "),
        "{}",
        text(&quiet.stdout)
    );
    let csv = run(
        redline(),
        &["bench", "-n", "300", "-t", "set,get", "--csv"],
        b"",
    );
    let csv = text(&csv.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        r#""test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms""#
    );
    assert!(
        lines[1].starts_with(r#""SET",""#) && lines[2].starts_with(r#""GET",""#),
        "{csv}"
    );
    assert_eq!(lines.len(), 3, "{csv}");
    let unknown = run(redline(), &["bench", "-t", "nope"], b"");
    assert_eq!(unknown.status.code(), Some(1));
    assert!(text(&unknown.stderr).contains("Unknown test 'nope'"));
}

#[test]
fn every_test_and_a_custom_command_against_redis() {
    let server = RedisServer::start().expect("redis-server");
    let port = server.port().to_string();
    let out = run(
        redline(),
        &[
            "bench", "-p", &port, "-n", "400", "-c", "4", "-r", "100", "-P", "4", "-t", "all",
            "--json",
        ],
        b"",
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let rows = json_lines(&out.stdout);
    let names: Vec<&str> = rows.iter().filter_map(|r| r["test"].as_str()).collect();
    assert_eq!(
        names,
        [
            "ping",
            "set",
            "get",
            "incr",
            "lpush",
            "rpush",
            "lpop",
            "rpop",
            "sadd",
            "hset",
            "spop",
            "zadd",
            "zpopmin",
            "lrange_100",
            "mset",
            "mixed",
        ]
    );
    for row in &rows {
        check_fields(row);
        assert_eq!(row["errors"], 0, "{row}");
    }
    let custom = run(
        redline(),
        &[
            "bench",
            "-p",
            &port,
            "-n",
            "300",
            "-r",
            "50",
            "--json",
            "SADD custom:__rand_int__ 'a b'",
        ],
        b"",
    );
    assert!(custom.status.success(), "stderr: {}", text(&custom.stderr));
    let rows = json_lines(&custom.stdout);
    assert_eq!(rows[0]["test"], "SADD custom:__rand_int__ a b");
    assert_eq!(rows[0]["requests"], 300);
    let scan = server.cmd(&["KEYS", "custom:*"]).unwrap();
    let keys = scan.items().unwrap();
    assert!(!keys.is_empty() && keys.len() <= 50, "{} keys", keys.len());
}

#[test]
fn bench_against_a_cluster() {
    let cluster = RedisCluster::builder()
        .replicas_per_master(0)
        .start()
        .expect("cluster");
    let port = cluster.addr(0).port().to_string();
    let out = run(
        redline(),
        &[
            "bench",
            "--cluster",
            "-p",
            &port,
            "-n",
            "2000",
            "-c",
            "8",
            "-r",
            "1000",
            "-t",
            "set,get,mset",
            "-P",
            "8",
            "--json",
        ],
        b"",
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    for row in json_lines(&out.stdout) {
        check_fields(&row);
        assert_eq!(row["errors"], 0, "{row}");
    }
    // The keys really went to every master.
    for node in 0..cluster.len() {
        let n = cluster.cmd(node, &["DBSIZE"]).unwrap().integer().unwrap();
        assert!(n > 0, "node {node} got no keys");
    }
}

#[test]
fn bench_over_tls_with_cacert() {
    let certs = TlsCerts::generate().expect("certs");
    let server = RedisServer::builder()
        .tls(&certs)
        .start()
        .expect("tls redis");
    let port = server.port().to_string();
    let ca = certs.ca_cert_path().display().to_string();
    let out = run(
        redline(),
        &[
            "bench",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "--tls",
            "--cacert",
            &ca,
            "-n",
            "1000",
            "-t",
            "set,get",
            "--json",
        ],
        b"",
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    for row in json_lines(&out.stdout) {
        check_fields(&row);
        assert_eq!(row["errors"], 0, "{row}");
    }
    // And without the CA the handshake is refused, with a message.
    let refused = run(
        redline(),
        &[
            "bench",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "--tls",
            "-n",
            "10",
            "-t",
            "get",
        ],
        b"",
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(!text(&refused.stderr).is_empty());
}

#[test]
fn bench_survives_a_server_restart_and_reports_it() {
    let mut server = RedisServer::start().expect("redis-server");
    let port = server.port().to_string();
    let started = Instant::now();
    let child = redline()
        .args([
            "bench",
            "-p",
            &port,
            "--duration",
            "6",
            "-c",
            "4",
            "-t",
            "set",
            "-P",
            "1",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bench");
    // Kill only once the run is under way (a loaded machine may start it late).
    wait_for(|| {
        server
            .cmd(&["INFO", "stats"])
            .ok()
            .and_then(|r| r.text())
            .and_then(|t| stat(&t, "total_commands_processed"))
            .is_some_and(|n| n > 1000)
    });
    server.kill();
    std::thread::sleep(Duration::from_millis(1500));
    server.restart().expect("restart");
    let out = child.wait_with_output().expect("bench");
    let elapsed = started.elapsed();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    // Not a timing assertion: a generous bound that catches a hang.
    assert!(elapsed < Duration::from_secs(45), "bench took {elapsed:?}");
    let rows = json_lines(&out.stdout);
    let row = &rows[0];
    check_fields(row);
    assert!(row["errors"].as_u64().unwrap() > 0, "{row}");
    assert!(
        row["requests"].as_u64().unwrap() > row["errors"].as_u64().unwrap(),
        "{row}"
    );
    let outages = row["outages"].as_array().unwrap();
    assert!(!outages.is_empty(), "{row}");
    let last = outages.last().unwrap();
    assert!(last["up_at_s"].is_f64(), "no recovery reported: {row}");
    // The run ends at its deadline plus at most the 3 s grace for a stuck command.
    assert!(row["seconds"].as_f64().unwrap() < 12.0, "{row}");
}

#[test]
fn cluster_bench_survives_a_master_failover_and_reports_it() {
    let mut cluster = RedisCluster::start().expect("cluster");
    let port = cluster.addr(0).port().to_string();
    let victim = cluster.master_of_slot(0).unwrap();
    let started = Instant::now();
    let child = redline()
        .args([
            "bench",
            "--cluster",
            "-p",
            &port,
            "--duration",
            "8",
            "-c",
            "4",
            "-r",
            "10000",
            "-t",
            "set",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bench");
    wait_for(|| {
        cluster
            .cmd(victim, &["DBSIZE"])
            .ok()
            .and_then(|r| r.integer())
            .is_some_and(|n| n > 100)
    });
    cluster.kill(victim).unwrap();
    let promoted = cluster.wait_for_failover(victim, Duration::from_secs(30));
    let out = child.wait_with_output().expect("bench");
    let elapsed = started.elapsed();
    assert!(promoted.is_ok(), "no failover: {promoted:?}");
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    // Not a timing assertion: a generous bound that catches a hang.
    assert!(elapsed < Duration::from_secs(60), "bench took {elapsed:?}");
    let rows = json_lines(&out.stdout);
    let row = &rows[0];
    check_fields(row);
    assert!(
        row["errors"].as_u64().unwrap() > 0,
        "the failover went unnoticed: {row}"
    );
    assert!(
        row["requests"].as_u64().unwrap() > row["errors"].as_u64().unwrap(),
        "{row}"
    );
    // Every outage it saw ended before the run did.
    for outage in row["outages"].as_array().unwrap() {
        assert!(outage["up_at_s"].is_f64(), "no recovery reported: {row}");
    }
}
