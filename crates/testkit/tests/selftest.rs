//! The test kit's own acceptance: real standalone, TLS and cluster servers come up, answer,
//! fail over, and leave no process or directory behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redline_testkit::{RedisCluster, RedisSentinels, RedisServer, Reply, Role, TlsCerts};

/// Whether `pid` is gone: no /proc entry, or only a zombie left for init to reap.
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state is the first field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn wait_gone(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    gone(pid)
}

fn text(reply: Reply) -> String {
    reply
        .text()
        .unwrap_or_else(|| panic!("not text: {reply:?}"))
}

#[test]
fn standalone_answers_restarts_and_cleans_up() {
    let mut server = RedisServer::start().unwrap();
    assert_eq!(server.cmd(&["PING"]).unwrap(), Reply::Simple("PONG".into()));
    assert_eq!(
        server.cmd(&["SET", "k", "v"]).unwrap(),
        Reply::Simple("OK".into())
    );
    assert_eq!(text(server.cmd(&["GET", "k"]).unwrap()), "v");
    assert_eq!(server.url(), format!("redis://127.0.0.1:{}", server.port()));
    assert_eq!(server.addr().port(), server.port());

    let port = server.port();
    let first = server.pid().unwrap();
    server.kill();
    assert!(!server.is_running());
    assert!(gone(first));
    assert!(server.cmd(&["PING"]).is_err());

    server.restart().unwrap();
    assert_eq!(server.port(), port);
    assert_eq!(server.cmd(&["PING"]).unwrap(), Reply::Simple("PONG".into()));

    let pid = server.pid().unwrap();
    let dir = server.dir().to_path_buf();
    drop(server);
    assert!(gone(pid), "redis-server {pid} still running after drop");
    assert!(!dir.exists(), "{} not removed", dir.display());
}

#[test]
fn password_and_redis_cli() {
    let server = RedisServer::builder()
        .password("s3cret")
        .arg("--maxmemory", "10mb")
        .start()
        .unwrap();
    // The kit authenticates its own connection.
    assert_eq!(
        text(
            server
                .cmd(&["CONFIG", "GET", "maxmemory"])
                .unwrap()
                .items()
                .unwrap()[1]
                .clone()
        ),
        "10485760"
    );
    assert!(server.url().starts_with("redis://:s3cret@127.0.0.1:"));
    let out = server.cli().arg("PING").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "PONG");
}

#[test]
fn tls_server_answers_over_tls_only() {
    let certs = TlsCerts::generate().unwrap();
    for path in [
        certs.ca_cert_path(),
        certs.server_cert_path(),
        certs.server_key_path(),
        certs.client_cert_path(),
        certs.client_key_path(),
    ] {
        assert!(path.is_file(), "{}", path.display());
    }
    let server = RedisServer::builder().tls(&certs).start().unwrap();
    assert!(server.url().starts_with("rediss://127.0.0.1:"));
    // Our control connection speaks TLS (rustls, trusting the generated CA).
    assert_eq!(server.cmd(&["PING"]).unwrap(), Reply::Simple("PONG".into()));
    // redis-cli with the CA and the client certificate.
    let out = server.cli().arg("PING").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "PONG",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A plain-text PING on the TLS port gets no PONG: the server wants a handshake.
    let mut plain = std::net::TcpStream::connect(server.addr()).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    plain.write_all(b"PING\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"+PONG"), "{answer:?}");

    let pid = server.pid().unwrap();
    drop(server);
    assert!(gone(pid));
}

#[test]
fn parallel_servers_get_distinct_ports() {
    let handles: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                let a = RedisServer::start().unwrap();
                let b = RedisServer::start().unwrap();
                assert_eq!(a.cmd(&["PING"]).unwrap(), Reply::Simple("PONG".into()));
                assert_eq!(b.cmd(&["PING"]).unwrap(), Reply::Simple("PONG".into()));
                (a, b)
            })
        })
        .collect();
    let servers: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut ports: Vec<u16> = servers
        .iter()
        .flat_map(|(a, b)| [a.port(), b.port()])
        .collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 8);
    let pids: Vec<u32> = servers
        .iter()
        .flat_map(|(a, b)| [a.pid().unwrap(), b.pid().unwrap()])
        .collect();
    drop(servers);
    assert!(pids.iter().all(|&p| gone(p)));
}

#[test]
fn panicking_test_still_stops_its_server() {
    let mut seen = None;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let server = RedisServer::start().unwrap();
        seen = Some((server.pid().unwrap(), server.dir().to_path_buf()));
        panic!("a failing test");
    }));
    assert!(result.is_err());
    let (pid, dir) = seen.unwrap();
    assert!(gone(pid), "redis-server {pid} survived the panic");
    assert!(!dir.exists());
}

/// Not a test on its own: when `REDLINE_TESTKIT_LEAK` is set, it starts a server, leaks it
/// (as a `static` would) and exits the process without unwinding. Run by
/// `watchdog_kills_leaked_servers` as a child process.
#[test]
fn leak_helper() {
    if std::env::var_os("REDLINE_TESTKIT_LEAK").is_none() {
        return;
    }
    let server = RedisServer::start().unwrap();
    println!(
        "LEAKED_PID={} LEAKED_DIR={}",
        server.pid().unwrap(),
        server.dir().display()
    );
    std::mem::forget(server);
    std::process::exit(0);
}

#[test]
fn watchdog_kills_leaked_servers() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["leak_helper", "--exact", "--nocapture", "--test-threads=1"])
        .env("REDLINE_TESTKIT_LEAK", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The harness prints "test leak_helper ... " on the same line before our output.
    let pid: u32 = stdout
        .split_once("LEAKED_PID=")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("helper printed no pid: {stdout}"))
        .parse()
        .unwrap();
    let dir = stdout
        .split_once("LEAKED_DIR=")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("helper printed no dir: {stdout}"));
    assert!(
        wait_gone(pid, Duration::from_secs(10)),
        "leaked redis-server {pid} was not killed by the watchdog"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(dir).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !Path::new(dir).exists(),
        "{dir} not removed by the watchdog"
    );
}

fn cluster_info(cluster: &RedisCluster, node: usize) -> String {
    text(cluster.cmd(node, &["CLUSTER", "INFO"]).unwrap())
}

#[test]
fn cluster_of_six_fails_over_and_cleans_up() {
    let mut cluster = RedisCluster::start().unwrap();
    assert_eq!(cluster.len(), 6);
    for node in 0..cluster.len() {
        let info = cluster_info(&cluster, node);
        assert!(info.contains("cluster_state:ok"), "{info}");
        assert!(info.contains("cluster_known_nodes:6"), "{info}");
    }
    // Roles, two ways: ROLE per node, and CLUSTER NODES as one node sees them.
    assert_eq!(cluster.masters().unwrap().len(), 3);
    assert_eq!(cluster.replicas().unwrap().len(), 3);
    let nodes = text(cluster.cmd(0, &["CLUSTER", "NODES"]).unwrap());
    let count = |flag: &str| {
        nodes
            .lines()
            .filter(|l| l.split(' ').nth(2).unwrap().split(',').any(|f| f == flag))
            .count()
    };
    assert_eq!((count("master"), count("slave")), (3, 3), "{nodes}");
    let ranges = cluster.slot_ranges().unwrap();
    assert!(ranges.iter().all(|r| r.replicas.len() == 1), "{ranges:?}");

    let pids: Vec<u32> = (0..6).map(|n| cluster.pid(n).unwrap()).collect();

    // kill -9 the master of slot 0 and wait for its replica to take over.
    let master = cluster.master_of_slot(0).unwrap();
    let replica = ranges.iter().find(|r| r.master == master).unwrap().replicas[0];
    cluster.kill(master).unwrap();
    assert!(gone(pids[master]));
    let promoted = cluster
        .wait_for_failover(master, Duration::from_secs(60))
        .unwrap();
    assert_eq!(promoted, replica);
    assert_eq!(cluster.role(promoted).unwrap(), Role::Master);
    assert_eq!(cluster.master_of_slot(0).unwrap(), promoted);

    // The old master comes back as a replica of the new one.
    cluster.restart(master).unwrap();
    cluster.wait_until_healthy(Duration::from_secs(60)).unwrap();
    assert_eq!(cluster.role(master).unwrap(), Role::Replica);
    assert_eq!(cluster.masters().unwrap().len(), 3);

    let mut pids: Vec<u32> = (0..6).map(|n| cluster.pid(n).unwrap()).collect();
    pids.push(pids[master]);
    drop(cluster);
    for pid in pids {
        assert!(gone(pid), "cluster node {pid} still running after drop");
    }
}

#[test]
fn tls_cluster_with_password_comes_up() {
    let certs = TlsCerts::generate().unwrap();
    let mut cluster = RedisCluster::builder()
        .tls(&certs)
        .password("pw")
        .start()
        .unwrap();
    assert!(cluster
        .urls()
        .iter()
        .all(|u| u.starts_with("rediss://:pw@")));
    // Replicas synced over TLS with the password (the kit's health check requires it).
    assert_eq!(cluster.replicas().unwrap().len(), 3);
    let info = cluster_info(&cluster, 0);
    assert!(info.contains("cluster_state:ok"), "{info}");
    assert_eq!(cluster.masters().unwrap().len(), 3);
    // redis-cli in cluster mode follows a redirection over TLS.
    let out = cluster
        .cli(0)
        .unwrap()
        .args(["-c", "SET", "{user}:1", "x"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
    let pids: Vec<u32> = (0..6).map(|n| cluster.pid(n).unwrap()).collect();
    drop(cluster);
    assert!(pids.iter().all(|&p| gone(p)));
    drop(certs);
}

#[test]
fn missing_binary_is_a_clear_error() {
    // The error names the program and how to get it, instead of a bare ENOENT.
    let err = Command::new(std::env::current_exe().unwrap())
        .args(["missing_binary_helper", "--exact", "--nocapture"])
        .env("REDLINE_TESTKIT_MISSING", "1")
        .env("REDIS_SERVER_BIN", "/nonexistent/redis-server")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&err.stdout);
    assert!(
        stdout.contains("MESSAGE=/nonexistent/redis-server not found"),
        "{stdout}"
    );
    assert!(stdout.contains("make deps"), "{stdout}");
}

/// Not a test on its own: run by `missing_binary_is_a_clear_error` with a bogus
/// `REDIS_SERVER_BIN` (set in a child process, so other tests' environment is untouched).
#[test]
fn missing_binary_helper() {
    if std::env::var_os("REDLINE_TESTKIT_MISSING").is_none() {
        return;
    }
    let err = RedisServer::start().unwrap_err();
    println!("MESSAGE={err}");
}

#[test]
fn sentinels_monitor_a_master_and_clean_up() {
    let master = RedisServer::start().unwrap();
    let sentinels = RedisSentinels::builder()
        .count(1)
        .quorum(1)
        .master_name("kit")
        .start(master.addr())
        .unwrap();
    assert_eq!(sentinels.len(), 1);
    assert_eq!(sentinels.master_addr().unwrap(), master.addr());
    let addr = sentinels.addrs()[0];
    assert_eq!(sentinels.url(), format!("redis+sentinel://{addr}/kit"));
    let state = sentinels.master_state(0).unwrap();
    assert!(
        state.contains(&("flags".to_string(), "master".to_string())),
        "{state:?}"
    );
    drop(sentinels);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "sentinel still listening"
    );
    assert!(RedisSentinels::builder()
        .quorum(4)
        .start(master.addr())
        .is_err());
}
