//! The `redline-server` binary: redis-server's command line and config errors, the
//! "Ready to accept connections" log line, a graceful stop on SIGTERM and SHUTDOWN, and
//! used_memory following the keyspace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{free_port, show, wait_exit, Conn};
use redline_resp::Frame;

const BIN: &str = env!("CARGO_BIN_EXE_redline-server");

#[test]
fn config_errors_are_fatal_like_redis() {
    let out = Command::new(BIN)
        .args(["--port", "70000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("*** FATAL CONFIG FILE ERROR"), "{text}");
    assert!(text.contains(">>> 'port \"70000\"'\nargument must be between 0 and 65535 inclusive"));

    let dir = std::env::temp_dir().join(format!("redline-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("bad.conf");
    std::fs::write(&conf, "# comment\nport 0\nnosuchdirective yes\n").unwrap();
    let out = Command::new(BIN).arg(&conf).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains(
            "at line 3\n>>> 'nosuchdirective yes'\nBad directive or wrong number of arguments"
        ),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);

    // An unknown directive on the command line: the same error, counted as redis-server
    // counts the lines it builds from the arguments.
    let out = Command::new(BIN)
        .args(["--port", "0", "--nosuchdirective", "yes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains(
            "at line 3\n>>> 'nosuchdirective \"yes\"'\nBad directive or wrong number of arguments"
        ),
        "{text}"
    );
}

/// The listening sockets of `port` in /proc/net/tcp and tcp6, as the kernel shows their
/// local address (`0100007F` is 127.0.0.1).
fn listening_addresses(port: u16) -> Vec<String> {
    let port_hex = format!("{port:04X}");
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // local_address is field 1 ("ADDR:PORT"), st is field 3 (0A = LISTEN).
            if let (Some(local), Some("0A")) = (fields.get(1), fields.get(3).copied()) {
                if let Some((addr, p)) = local.split_once(':') {
                    if p == port_hex {
                        found.push(addr.to_owned());
                    }
                }
            }
        }
    }
    found
}

#[test]
fn config_file_directives_take_effect() {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("redline-conf-ok-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("server.log");
    let conf = dir.join("redline.conf");
    std::fs::write(
        &conf,
        format!(
            "# redis.conf style\nport {port}\ndatabases 4\nio-threads 2\nlogfile \"{}\"\nhz 20\n",
            log.display()
        ),
    )
    .unwrap();
    // Arguments after the file override it, as with redis-server.
    let mut child = Command::new(BIN)
        .arg(&conf)
        .args(["--maxclients", "77"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut ready = false;
    for _ in 0..400 {
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        if logged.contains("Ready to accept connections") {
            ready = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    if !ready {
        let _ = child.kill();
        let _ = child.wait();
        panic!("no Ready line in the log file {}", log.display());
    }
    // No bind directive: every address, as Redis 7's `* -::*` (IPv6 where the host has
    // it; protected mode keeps other hosts off).
    let addresses = listening_addresses(port);
    assert_eq!(addresses[0], "00000000", "{addresses:?}");
    assert!(
        addresses.iter().all(|a| a.chars().all(|c| c == '0')),
        "{addresses:?}"
    );
    let mut conn = Conn::connect(addr);
    let databases = show(&conn.cmd(&["CONFIG", "GET", "databases"]));
    assert!(databases.contains("b\"4\""), "{databases}");
    assert_eq!(show(&conn.cmd(&["SELECT", "3"])), "Simple(b\"OK\")");
    assert_eq!(
        show(&conn.cmd(&["SELECT", "4"])),
        "Error(b\"ERR DB index is out of range\")"
    );
    let maxclients = show(&conn.cmd(&["CONFIG", "GET", "maxclients"]));
    assert!(maxclients.contains("b\"77\""), "{maxclients}");
    conn.send(&["SHUTDOWN", "NOSAVE"]);
    assert!(conn.is_closed());
    assert_eq!(wait_exit(&mut child).code(), Some(0));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("ready to exit, bye bye"), "{logged}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Starts the binary and waits for its "Ready to accept connections" line.
fn start(port: u16) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(BIN)
        .args(["--port", &port.to_string(), "--hz", "20"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let Some(stdout) = child.stdout.take() else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("no stdout");
    };
    let mut out = BufReader::new(stdout);
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.wait();
            panic!("exited before ready");
        }
        if line.contains("Ready to accept connections") {
            return (child, out);
        }
    }
}

#[test]
fn sigterm_stops_gracefully() {
    let port = free_port();
    let (mut child, mut out) = start(port);
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut conn = Conn::connect(addr);
    assert_eq!(show(&conn.cmd(&["SET", "k", "v"])), "Simple(b\"OK\")");
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert_eq!(wait_exit(&mut child).code(), Some(0));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(
        rest.contains("Received SIGTERM scheduling shutdown..."),
        "{rest}"
    );
    assert!(rest.contains("ready to exit, bye bye"), "{rest}");
    assert!(conn.is_closed());
}

#[test]
fn shutdown_command_stops_the_server() {
    let port = free_port();
    let (mut child, _out) = start(port);
    let mut conn = Conn::connect(format!("127.0.0.1:{port}").parse().unwrap());
    conn.send(&["SHUTDOWN", "NOSAVE"]);
    assert!(
        conn.is_closed(),
        "SHUTDOWN has no reply, the connection closes"
    );
    assert_eq!(wait_exit(&mut child).code(), Some(0));
}

/// INFO's used_memory follows the keyspace: it grows with the keys written (by at least
/// their own bytes, by at most a generous overhead) and falls back after FLUSHALL.
#[test]
fn used_memory_follows_the_keyspace() {
    let port = free_port();
    let (mut child, _out) = start(port);
    let mut conn = Conn::connect(format!("127.0.0.1:{port}").parse().unwrap());
    let used = |conn: &mut Conn| -> u64 {
        let Frame::Bulk(info) = conn.cmd(&["INFO", "memory"]) else {
            panic!("INFO memory")
        };
        String::from_utf8_lossy(&info)
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:")?.trim().parse().ok())
            .expect("used_memory field")
    };
    let before = used(&mut conn);
    const KEYS: u64 = 20_000;
    for chunk in 0..KEYS / 1000 {
        let mut mset = vec!["MSET".to_string()];
        for i in chunk * 1000..(chunk + 1) * 1000 {
            mset.push(format!("key:{i:06}"));
            mset.push(format!("a value of some length, {i:06}"));
        }
        conn.cmd(&mset);
    }
    let filled = used(&mut conn);
    // At least the keys' and values' own bytes (40 per key), at most a generous
    // per-key overhead.
    assert!(
        filled >= before + KEYS * 40 && filled <= before + KEYS * 400,
        "used_memory {before} -> {filled} for {KEYS} keys"
    );
    conn.cmd(&["FLUSHALL"]);
    let flushed = used(&mut conn);
    assert!(
        flushed < filled - KEYS * 40,
        "used_memory {filled} -> {flushed} after FLUSHALL"
    );
    conn.send(&["SHUTDOWN", "NOSAVE"]);
    assert!(conn.is_closed());
    assert_eq!(wait_exit(&mut child).code(), Some(0));
}

/// `include` reads another file where it stands, a pattern every file it matches in
/// name order (none is fine), and a missing plain file stops the start: the same
/// values and the same fatal message as redis-server.
#[test]
fn includes_are_read_as_redis_reads_them() {
    let dir = std::env::temp_dir().join(format!("redline-include-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("conf.d")).unwrap();
    std::fs::write(dir.join("a.conf"), "hz 11\nmaxmemory-samples 7\n").unwrap();
    std::fs::write(dir.join("conf.d/2.conf"), "lfu-log-factor 3\n").unwrap();
    std::fs::write(dir.join("conf.d/1.conf"), "hz 12\nlfu-log-factor 4\n").unwrap();
    let text = format!(
        "include {d}/a.conf\nhz 13\ninclude {d}/conf.d/*.conf\ninclude {d}/empty.d/*.conf\n",
        d = dir.display()
    );
    let redis = redline_testkit::RedisServer::builder()
        .config_file(text.clone())
        .start()
        .unwrap();
    let redline = redline_testkit::RedlineServer::builder()
        .config_file(text)
        .start()
        .unwrap();
    for name in ["hz", "maxmemory-samples", "lfu-log-factor"] {
        let want = show(&Conn::connect(redis.addr()).cmd(&["CONFIG", "GET", name]));
        let got = show(&Conn::connect(redline.addr()).cmd(&["CONFIG", "GET", name]));
        assert_eq!(got, want, "{name}");
    }

    let missing = dir.join("missing.conf");
    let conf = dir.join("main.conf");
    std::fs::write(&conf, format!("include {}\n", missing.display())).unwrap();
    let fatal = format!(
        "Fatal error, can't open config file '{}': No such file or directory",
        missing.display()
    );
    for bin in ["redis-server", BIN] {
        let out = Command::new(bin).arg(&conf).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{bin}");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains(&fatal), "{bin}: {said}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
