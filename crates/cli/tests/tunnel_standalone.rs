//! `redline tunnel` in front of a standalone TLS redis-server (testkit) or TLS
//! redline-server: redis-cli and redis-benchmark through it, byte-exact pipelined values, errors that must not stop
//! the tunnel, and clean shutdown on SIGTERM/SIGINT.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tunnel_support;

use std::process::Command;

use redline_resp::Frame;
use redline_testkit::{RedisServer, RedlineServer, TlsCerts};
use tunnel_support::{redis_cli, roundtrip_values, stdout, tls_flags, Raw, Tunnel};

const PASSWORD: &str = "tunnel-secret";

fn tls_server() -> (TlsCerts, RedisServer) {
    let certs = TlsCerts::generate().unwrap();
    let server = RedisServer::builder()
        .tls(&certs)
        .password(PASSWORD)
        .start()
        .unwrap();
    (certs, server)
}

fn tunnel_to(server: &RedisServer, certs: &TlsCerts) -> Tunnel {
    let mut args = tls_flags(server.port(), &certs.ca_cert_path());
    args.extend(["-a".into(), PASSWORD.into(), "--log".into(), "warn".into()]);
    Tunnel::start(&args)
}

#[test]
fn tunnel_standalone_redis_cli_works_without_credentials() {
    let (certs, server) = tls_server();
    let tunnel = tunnel_to(&server, &certs);
    let addr = tunnel.addr();

    let out = redis_cli(addr, &[], &["PING"]);
    assert_eq!(stdout(&out).trim(), "PONG");
    let out = redis_cli(addr, &[], &["SET", "greeting", "hello world"]);
    assert_eq!(stdout(&out).trim(), "OK");
    let out = redis_cli(addr, &[], &["GET", "greeting"]);
    assert_eq!(stdout(&out).trim(), "hello world");
    // The value really is on the TLS server.
    assert_eq!(
        server.cmd(&["GET", "greeting"]).unwrap().text().as_deref(),
        Some("hello world")
    );
    // Interactive-style input on stdin, several commands.
    let out = Command::new("redis-cli")
        .args(["-p", &addr.port().to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"INCR n\nINCR n\nGET n\n")?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(stdout(&out), "1\n2\n2\n");
}

#[test]
fn tunnel_standalone_redis_benchmark_pipelined_no_errors() {
    let (certs, server) = tls_server();
    let tunnel = tunnel_to(&server, &certs);
    let addr = tunnel.addr();
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &addr.port().to_string()])
        .args([
            "-P",
            "16",
            "-c",
            "50",
            "-n",
            "20000",
            "-t",
            "set,get,incr,lpush,lrange_100",
        ])
        .args(["-r", "1000", "-q"])
        .output()
        .expect("redis-benchmark (make deps)");
    let text = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(!text.to_lowercase().contains("error"), "{text}");
    for test in [
        "SET:",
        "GET:",
        "INCR:",
        "LPUSH:",
        "LRANGE_100 (first 100 elements):",
    ] {
        assert!(text.contains(test), "{test} missing: {text}");
    }
    // Every SET reached the server.
    let keys = server.cmd(&["DBSIZE"]).unwrap().integer().unwrap();
    assert!(keys > 0);
}

#[test]
fn tunnel_standalone_pipelined_values_1b_to_8mb_byte_exact() {
    let (certs, server) = tls_server();
    let tunnel = tunnel_to(&server, &certs);
    let mut conn = Raw::connect(tunnel.addr());
    roundtrip_values(&mut conn, |size| format!("value:{size}"));
    // Again on a second client at the same time as the first, both pipelined.
    let addr = tunnel.addr();
    let other = std::thread::spawn(move || {
        let mut conn = Raw::connect(addr);
        roundtrip_values(&mut conn, |size| format!("other:{size}"));
    });
    roundtrip_values(&mut conn, |size| format!("value:{size}"));
    other.join().unwrap();
}

#[test]
fn tunnel_standalone_survives_client_and_upstream_failures() {
    let (certs, mut server) = tls_server();
    let mut tunnel = tunnel_to(&server, &certs);
    let addr = tunnel.addr();

    // A client that speaks garbage is closed by Redis; the tunnel goes on.
    let mut bad = Raw::connect(addr);
    bad.send_raw(b"*x\r\n");
    let reply = bad.read_frame();
    assert!(matches!(reply, Frame::Error(_)), "{reply:?}");
    drop(bad);
    // A client that vanishes mid-command.
    {
        use std::io::Write;
        let mut half = std::net::TcpStream::connect(addr).unwrap();
        half.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc")
            .unwrap();
    }
    assert_eq!(stdout(&redis_cli(addr, &[], &["PING"])).trim(), "PONG");

    // Upstream gone: clients get an error line, the tunnel keeps running.
    server.kill();
    let out = redis_cli(addr, &[], &["PING"]);
    let text = stdout(&out) + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("redline tunnel"), "{text}");
    assert!(tunnel.is_running());
    // Back again: new clients work.
    server.restart().unwrap();
    assert_eq!(stdout(&redis_cli(addr, &[], &["PING"])).trim(), "PONG");
    let mut conn = Raw::connect(addr);
    assert_eq!(conn.cmd(&["PING"]), Frame::Simple("PONG".into()));

    // SIGTERM with a client connected: exit status 0.
    let status = tunnel.stop_with("TERM");
    assert!(status.success(), "{status:?}");
}

#[test]
fn tunnel_standalone_sigint_is_a_clean_exit() {
    let (certs, server) = tls_server();
    let mut tunnel = tunnel_to(&server, &certs);
    let mut conn = Raw::connect(tunnel.addr());
    assert_eq!(conn.cmd(&["PING"]), Frame::Simple("PONG".into()));
    let status = tunnel.stop_with("INT");
    assert!(status.success(), "{status:?}");
}

#[test]
fn tunnel_standalone_refuses_bad_credentials_at_startup() {
    let (certs, server) = tls_server();
    let mut args = tls_flags(server.port(), &certs.ca_cert_path());
    args.extend([
        "-a".into(),
        "wrong".into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_redline"))
        .arg("tunnel")
        .args(&args)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("redline tunnel:"), "{err}");
}

#[test]
fn tunnel_refuses_zero_threads() {
    let out = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["tunnel", "--threads", "0", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--threads"), "{err}");
}

#[test]
fn tunnel_standalone_logs_each_client_connect_and_disconnect() {
    let (certs, server) = tls_server();
    let mut args = tls_flags(server.port(), &certs.ca_cert_path());
    args.extend([
        "-a".into(),
        PASSWORD.into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
    ]);
    let log = certs.dir().join("tunnel.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_redline"))
        .arg("tunnel")
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let mut addr = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line == "ready" {
            break;
        }
        addr = Some(tunnel_support::parse_mapping(&line).0);
    }
    let addr = addr.unwrap();
    let mut conn = Raw::connect(addr);
    assert_eq!(conn.cmd(&["PING"]), Frame::Simple("PONG".into()));
    let local = conn.local_addr();
    drop(conn);
    std::thread::sleep(std::time::Duration::from_millis(300));
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(child.wait().unwrap().success());
    let text = std::fs::read_to_string(&log).unwrap();
    let mine: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&local.to_string()))
        .collect();
    assert!(
        mine.iter()
            .any(|l| l.contains("INFO") && l.contains("client connected")),
        "{text}"
    );
    assert!(
        mine.iter()
            .any(|l| l.contains("INFO") && l.contains("client disconnected")),
        "{text}"
    );
}

#[test]
fn tunnel_in_front_of_a_tls_redline_server() {
    let certs = TlsCerts::generate().unwrap();
    let server = RedlineServer::builder()
        .tls(&certs)
        .password(PASSWORD)
        .start()
        .unwrap();
    let mut args = tls_flags(server.port(), &certs.ca_cert_path());
    args.extend(["-a".into(), PASSWORD.into(), "--log".into(), "warn".into()]);
    let tunnel = Tunnel::start(&args);
    let addr = tunnel.addr();
    let out = redis_cli(addr, &[], &["SET", "through", "the tunnel"]);
    assert_eq!(stdout(&out).trim(), "OK");
    assert_eq!(
        server.cmd(&["GET", "through"]).unwrap().text().as_deref(),
        Some("the tunnel")
    );
    let mut conn = Raw::connect(addr);
    roundtrip_values(&mut conn, |i| format!("redline-tls:{i}"));
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &addr.port().to_string()])
        .args(["-P", "16", "-c", "8", "-n", "4000", "-t", "set,get", "-q"])
        .output()
        .expect("redis-benchmark (make deps)");
    assert!(out.status.success(), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(!text.contains("ERR"), "{text}");
}
