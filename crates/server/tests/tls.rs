//! redline-server over TLS, driven by the tools users run (redis-cli, redis-benchmark)
//! and compared with redis-server 7.0 started with the same certificates: connecting with
//! a CA file, mutual TLS, refusal without a client certificate, certificate rotation with
//! CONFIG SET under a running client, expired and wrong-host certificates, hostile
//! handshakes, and the `tls-*` directives.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redline_testkit::{
    listening_sockets, reserve_port, RedisServer, RedlineServer, Reply, TlsCerts,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

fn tool(name: &str) -> String {
    let var = format!("{}_BIN", name.to_uppercase().replace('-', "_"));
    std::env::var(var).unwrap_or_else(|_| name.to_string())
}

/// `redis-cli --tls --cacert <ca>` on `port`, with no client certificate.
fn cli_without_cert(port: u16, certs: &TlsCerts) -> Command {
    let mut cmd = Command::new(tool("redis-cli"));
    cmd.args([
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--tls",
        "--cacert",
    ])
    .arg(certs.ca_cert_path());
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .expect("redis-cli (Debian redis-tools) is installed by make deps")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).trim().to_string()
}

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

/// A TLS session to `port` trusting the test CA, handshake done.
fn tls_connect(
    port: u16,
    certs: &TlsCerts,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(certs.ca_cert_der().to_vec()))
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut socket).unwrap();
    }
    rustls::StreamOwned::new(conn, socket)
}

/// The leaf certificate a new TLS connection to `port` is shown.
fn served_cert(port: u16, certs: &TlsCerts) -> Vec<u8> {
    let stream = tls_connect(port, certs);
    stream.conn.peer_certificates().unwrap()[0].to_vec()
}

fn cert_der(path: &Path) -> Vec<u8> {
    CertificateDer::from_pem_file(path).unwrap().to_vec()
}

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

#[test]
fn redis_cli_with_a_ca_file_and_with_a_client_certificate() {
    let certs = TlsCerts::generate().unwrap();
    let redis = RedisServer::builder().tls(&certs).start().unwrap();
    let redline = RedlineServer::builder().tls(&certs).start().unwrap();
    for (port, mutual) in [(redis.port(), redis.cli()), (redline.port(), redline.cli())] {
        let set = run(cli_without_cert(port, &certs).args(["SET", "k", "v"]));
        assert_eq!(stdout(&set), "OK", "{}", stderr(&set));
        let get = run(cli_without_cert(port, &certs).args(["GET", "k"]));
        assert_eq!(stdout(&get), "v");
        let mut mutual = mutual;
        let info = run(mutual.args(["CLIENT", "INFO"]));
        let line = stdout(&info);
        // As redis-server shows a TLS client: the TLS port as laddr, nothing else apart.
        assert_eq!(field(&line, "laddr"), format!("127.0.0.1:{port}"), "{line}");
        assert_eq!(field(&line, "flags"), "N", "{line}");
    }
}

#[test]
fn a_required_client_certificate_refuses_clients_without_one() {
    let certs = TlsCerts::generate().unwrap();
    let stranger = TlsCerts::generate().unwrap();
    let redis = RedisServer::builder().tls(&certs).start().unwrap();
    let redline = RedlineServer::builder().tls(&certs).start().unwrap();
    for (port, mut mutual, cmd) in [
        (
            redis.port(),
            redis.cli(),
            Box::new(|a: &[&str]| redis.cmd(a).unwrap()) as Box<dyn Fn(&[&str]) -> Reply>,
        ),
        (
            redline.port(),
            redline.cli(),
            Box::new(|a: &[&str]| redline.cmd(a).unwrap()),
        ),
    ] {
        assert_eq!(cmd(&["CONFIG", "SET", "tls-auth-clients", "yes"]), ok());
        let refused = run(cli_without_cert(port, &certs).arg("PING"));
        assert!(
            !refused.status.success(),
            "port {port}: {}",
            stdout(&refused)
        );
        assert!(!stdout(&refused).contains("PONG"));
        assert!(
            stderr(&refused).starts_with("Error: "),
            "{}",
            stderr(&refused)
        );
        // A certificate from another CA is no better.
        let foreign = run(cli_without_cert(port, &certs)
            .arg("--cert")
            .arg(stranger.client_cert_path())
            .arg("--key")
            .arg(stranger.client_key_path())
            .arg("PING"));
        assert!(
            !foreign.status.success(),
            "port {port}: {}",
            stdout(&foreign)
        );
        let accepted = run(mutual.arg("PING"));
        assert_eq!(stdout(&accepted), "PONG", "{}", stderr(&accepted));
    }
}

#[test]
fn redis_benchmark_over_tls() {
    let certs = TlsCerts::generate().unwrap();
    let redline = RedlineServer::builder().tls(&certs).start().unwrap();
    let output = Command::new(tool("redis-benchmark"))
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &redline.port().to_string(),
            "--tls",
        ])
        .args(certs.redis_cli_args().into_iter().skip(1))
        .args([
            "-t", "set,get", "-n", "4000", "-c", "8", "-P", "16", "--csv",
        ])
        .output()
        .expect("redis-benchmark (Debian redis-tools) is installed by make deps");
    let out = stdout(&output);
    assert!(output.status.success(), "{out}\n{}", stderr(&output));
    let rows: Vec<(String, f64)> = out
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split(',').map(|f| f.trim_matches('"'));
            Some((fields.next()?.to_string(), fields.next()?.parse().ok()?))
        })
        .collect();
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["SET", "GET"], "{out}");
    assert!(rows.iter().all(|(_, rps)| *rps > 0.0), "{out}");
}

#[test]
fn certificates_rotate_with_config_set_while_a_client_keeps_running() {
    let certs = TlsCerts::generate().unwrap();
    let redis = RedisServer::builder().tls(&certs).start().unwrap();
    let redline = RedlineServer::builder().tls(&certs).start().unwrap();
    let port = redline.port();
    assert_eq!(
        served_cert(port, &certs),
        cert_der(&certs.server_cert_path())
    );

    // One connection runs 300 INCRs, 10 ms apart, across every change below.
    let mut running = redline.cli();
    let running = running
        .args(["-r", "300", "-i", "0.01", "INCR", "rotation"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));

    let (cert, key) = certs
        .issue_server_cert("rotated", &["127.0.0.1", "localhost"], false)
        .unwrap();
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let set = |args: &[&str]| {
        let mut all = vec!["CONFIG", "SET"];
        all.extend_from_slice(args);
        (redis.cmd(&all).unwrap(), redline.cmd(&all).unwrap())
    };
    assert_eq!(
        set(&["tls-cert-file", &cert, "tls-key-file", &key]),
        (ok(), ok())
    );
    assert_eq!(served_cert(port, &certs), cert_der(Path::new(&cert)));

    // A certificate that does not load is refused with Redis's error; the one in use stays.
    let (from_redis, from_redline) = set(&["tls-cert-file", "/nonexistent/server.crt"]);
    assert_eq!(from_redline, from_redis);
    assert_eq!(
        from_redline,
        Reply::Error("ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs.".into())
    );
    let server_key = certs.server_key_path().display().to_string();
    let (from_redis, from_redline) = set(&["tls-key-file", &server_key]);
    assert!(matches!(from_redline, Reply::Error(_)), "{from_redline:?}");
    assert_eq!(from_redline, from_redis);
    assert_eq!(
        redline.cmd(&["CONFIG", "GET", "tls-cert-file"]).unwrap(),
        Reply::Array(Some(vec![
            Reply::Bulk(Some(b"tls-cert-file".to_vec())),
            Reply::Bulk(Some(cert.as_bytes().to_vec())),
        ]))
    );
    assert_eq!(served_cert(port, &certs), cert_der(Path::new(&cert)));

    // Files replaced in place are read again by setting the same path.
    let (next_cert, next_key) = certs
        .issue_server_cert("rotated-again", &["127.0.0.1", "localhost"], false)
        .unwrap();
    std::fs::copy(&next_cert, &cert).unwrap();
    std::fs::copy(&next_key, &key).unwrap();
    assert_eq!(set(&["tls-cert-file", &cert]), (ok(), ok()));
    assert_eq!(served_cert(port, &certs), cert_der(&next_cert));

    let done = running.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(stdout(&done).lines().last(), Some("300"));
    assert_eq!(
        redline.cmd(&["GET", "rotation"]).unwrap(),
        Reply::Bulk(Some(b"300".to_vec()))
    );
}

/// redis-cli against a server presenting `cert`/`key` on a TLS port of its own, for
/// redis-server and redline-server alike (plain port for the kit's readiness check):
/// whether it succeeded, its output and its errors, the port written `PORT`.
fn cli_against_bad_cert(
    certs: &TlsCerts,
    cert: &Path,
    key: &Path,
    host: &str,
) -> [(bool, String, String); 2] {
    let tls_args = |port: u16| {
        vec![
            "--tls-port".to_string(),
            port.to_string(),
            "--tls-cert-file".into(),
            cert.display().to_string(),
            "--tls-key-file".into(),
            key.display().to_string(),
            "--tls-ca-cert-file".into(),
            certs.ca_cert_path().display().to_string(),
            "--tls-auth-clients".into(),
            "no".into(),
        ]
    };
    let (redis_port, redline_port) = (reserve_port().unwrap(), reserve_port().unwrap());
    let _redis = RedisServer::builder()
        .args(tls_args(redis_port))
        .start()
        .unwrap();
    let _redline = RedlineServer::builder()
        .args(tls_args(redline_port))
        .start()
        .unwrap();
    [redis_port, redline_port].map(|port| {
        let mut cmd = Command::new(tool("redis-cli"));
        cmd.args(["-h", host, "-p", &port.to_string(), "--tls", "--cacert"])
            .arg(certs.ca_cert_path())
            .arg("PING");
        let out = run(&mut cmd);
        let port = port.to_string();
        (
            out.status.success(),
            stdout(&out).replace(&port, "PORT"),
            stderr(&out).replace(&port, "PORT"),
        )
    })
}

#[test]
fn expired_and_wrong_host_certificates_fail_as_they_do_with_redis() {
    let certs = TlsCerts::generate().unwrap();
    let (cert, key) = certs
        .issue_server_cert("expired", &["127.0.0.1", "localhost"], true)
        .unwrap();
    let [redis, redline] = cli_against_bad_cert(&certs, &cert, &key, "127.0.0.1");
    assert_eq!(redline, redis);
    assert!(!redline.0);
    assert!(
        redline
            .2
            .ends_with("SSL_connect failed: certificate verify failed"),
        "{}",
        redline.2
    );

    let (cert, key) = certs
        .issue_server_cert("elsewhere", &["elsewhere.example"], false)
        .unwrap();
    // redis-cli checks the chain, not the name: both servers answer it alike.
    let [redis, redline] = cli_against_bad_cert(&certs, &cert, &key, "127.0.0.1");
    assert_eq!(redline, redis);
}

#[test]
fn hostile_handshakes_never_stall_other_clients() {
    let certs = TlsCerts::generate().unwrap();
    let redline = RedlineServer::builder()
        .tls(&certs)
        .args(["--tls-handshake-timeout", "500"])
        .start()
        .unwrap();
    let port = redline.port();
    let ping = || {
        let out = run(redline.cli().arg("PING"));
        assert_eq!(stdout(&out), "PONG", "{}", stderr(&out));
    };
    let big = "x".repeat(256 * 1024);
    assert_eq!(redline.cmd(&["SET", "big", &big]).unwrap(), ok());

    // Sockets that never start a handshake, one that stops halfway through its
    // ClientHello, one that sends plain RESP, one that sends noise.
    let mut silent: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let mut partial = TcpStream::connect(("127.0.0.1", port)).unwrap();
    partial
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .unwrap();
    silent.push(partial);
    let mut plain = TcpStream::connect(("127.0.0.1", port)).unwrap();
    plain.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    let mut noise = TcpStream::connect(("127.0.0.1", port)).unwrap();
    noise
        .write_all(
            &(0..4096u32)
                .map(|i| (i * 7919 % 251) as u8)
                .collect::<Vec<_>>(),
        )
        .unwrap();

    // A TLS client that asks for megabytes of replies and never reads them.
    let mut hog = tls_connect(port, &certs);
    for _ in 0..64 {
        hog.write_all(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n").unwrap();
    }
    hog.flush().unwrap();

    let started = Instant::now();
    ping();
    ping();
    assert!(started.elapsed() < Duration::from_secs(20), "stalled");

    // Garbage gets an alert or a close; unfinished handshakes end at the timeout.
    for mut socket in [plain, noise].into_iter().chain(silent) {
        socket
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut sink = Vec::new();
        match socket.read_to_end(&mut sink) {
            Ok(_) => {}
            Err(e) => assert!(
                !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "a hostile socket was never closed: {e}"
            ),
        }
        assert!(!sink.starts_with(b"+PONG"));
    }
    ping();
    // The hog is still connected; the server serves everyone else regardless.
    let list = redline.cmd(&["CLIENT", "LIST"]).unwrap().text().unwrap();
    assert_eq!(list.lines().count(), 2, "{list}");
    drop(hog);
}

#[test]
fn tls_directives_read_and_fail_as_in_redis() {
    let certs = TlsCerts::generate().unwrap();
    let redis = RedisServer::builder().tls(&certs).start().unwrap();
    let redline = RedlineServer::builder().tls(&certs).start().unwrap();
    let get = |server: &dyn Fn(&[&str]) -> Reply| {
        let reply = server(&["CONFIG", "GET", "tls-*"]);
        let items = reply.items().unwrap().to_vec();
        let mut pairs: Vec<(String, String)> = items
            .chunks(2)
            .map(|p| (p[0].text().unwrap(), p[1].text().unwrap()))
            .filter(|(name, _)| name != "tls-port" && name != "tls-handshake-timeout")
            .collect();
        pairs.sort();
        pairs
    };
    let on_redis = |a: &[&str]| redis.cmd(a).unwrap();
    let on_redline = |a: &[&str]| redline.cmd(a).unwrap();
    assert_eq!(get(&on_redline), get(&on_redis));
    assert_eq!(
        on_redline(&["CONFIG", "GET", "tls-handshake-timeout"]),
        Reply::Array(Some(vec![
            Reply::Bulk(Some(b"tls-handshake-timeout".to_vec())),
            Reply::Bulk(Some(b"5000".to_vec())),
        ]))
    );
    for args in [
        ["tls-protocols", "SSLv3"],
        ["tls-ciphers", "RC4-MD5"],
        ["tls-auth-clients", "sometimes"],
        ["tls-session-cache-size", "-1"],
        ["tls-prefer-server-ciphers", "maybe"],
    ] {
        let set = ["CONFIG", "SET", args[0], args[1]];
        let reply = on_redline(&set);
        assert!(matches!(reply, Reply::Error(_)), "{args:?}: {reply:?}");
        assert_eq!(reply, on_redis(&set), "{args:?}");
    }
    for args in [
        ["tls-protocols", "TLSv1.2"],
        [
            "tls-ciphers",
            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256",
        ],
        ["tls-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"],
        ["tls-prefer-server-ciphers", "yes"],
        ["tls-session-caching", "no"],
        ["tls-replication", "yes"],
    ] {
        let set = ["CONFIG", "SET", args[0], args[1]];
        assert_eq!((on_redline(&set), on_redis(&set)), (ok(), ok()), "{args:?}");
    }
    assert_eq!(get(&on_redline), get(&on_redis));
    let out = run(redline.cli().arg("PING"));
    assert_eq!(stdout(&out), "PONG", "{}", stderr(&out));
}

#[test]
fn the_tls_port_opens_and_closes_at_run_time() {
    let certs = TlsCerts::generate().unwrap();
    let redline = RedlineServer::start().unwrap();
    let port = reserve_port().unwrap();
    let path = |p: std::path::PathBuf| p.display().to_string();
    let reply = redline
        .cmd(&[
            "CONFIG",
            "SET",
            "tls-cert-file",
            &path(certs.server_cert_path()),
            "tls-key-file",
            &path(certs.server_key_path()),
            "tls-ca-cert-file",
            &path(certs.ca_cert_path()),
            "tls-auth-clients",
            "optional",
            "tls-port",
            &port.to_string(),
        ])
        .unwrap();
    assert_eq!(reply, ok());
    let out = run(cli_without_cert(port, &certs).arg("PING"));
    assert_eq!(stdout(&out), "PONG", "{}", stderr(&out));
    // The plain port keeps serving.
    assert_eq!(
        redline.cmd(&["PING"]).unwrap(),
        Reply::Simple("PONG".into())
    );
    let pid = redline.pid().unwrap();
    assert_eq!(listening_sockets(pid, port).unwrap(), 1);
    assert_eq!(
        redline.cmd(&["CONFIG", "SET", "tls-port", "0"]).unwrap(),
        ok()
    );
    // Closed before the reply, as Redis does. Asked of the server process, not by
    // connecting: another process may take the freed ephemeral port at once.
    assert_eq!(listening_sockets(pid, port).unwrap(), 0);
}

#[test]
fn an_encrypted_key_opens_with_tls_key_file_pass() {
    let certs = TlsCerts::generate().unwrap();
    // The server key, encrypted as `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes it.
    let der = rustls_pki_types::PrivateKeyDer::from_pem_file(certs.server_key_path()).unwrap();
    let info = pkcs8::PrivateKeyInfo::try_from(der.secret_der()).unwrap();
    let params =
        pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, b"redline salt", &[7; 16])
            .unwrap();
    let pem = info
        .encrypt_with_params(params, "hunter2")
        .unwrap()
        .to_pem("ENCRYPTED PRIVATE KEY", pkcs8::LineEnding::LF)
        .unwrap();
    let encrypted = certs.dir().join("server-encrypted.key");
    std::fs::write(&encrypted, pem.as_bytes()).unwrap();
    let encrypted = encrypted.display().to_string();
    let args = [
        "--tls-key-file",
        encrypted.as_str(),
        "--tls-key-file-pass",
        "hunter2",
    ];
    let redis = RedisServer::builder()
        .tls(&certs)
        .args(args)
        .start()
        .unwrap();
    let redline = RedlineServer::builder()
        .tls(&certs)
        .args(args)
        .start()
        .unwrap();
    let out = run(redline.cli().arg("PING"));
    assert_eq!(stdout(&out), "PONG", "{}", stderr(&out));
    for pass in ["wrong", ""] {
        let set = ["CONFIG", "SET", "tls-key-file-pass", pass];
        let reply = redline.cmd(&set).unwrap();
        assert!(matches!(reply, Reply::Error(_)), "{pass:?}: {reply:?}");
        assert_eq!(reply, redis.cmd(&set).unwrap(), "{pass:?}");
    }
    assert_eq!(
        served_cert(redline.port(), &certs),
        cert_der(&certs.server_cert_path())
    );
}

/// Sends one command and reads a one-line reply (`+OK`, `-ERR ...`, `:1`).
fn line_cmd<S: Read + Write>(stream: &mut S, args: &[&str]) -> String {
    let mut request = format!("*{}\r\n", args.len());
    for a in args {
        request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    stream.write_all(request.as_bytes()).unwrap();
    stream.flush().unwrap();
    let mut reply = Vec::new();
    let mut byte = [0u8];
    while !reply.ends_with(b"\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "closed after {reply:?}");
        reply.push(byte[0]);
    }
    String::from_utf8(reply).unwrap().trim_end().to_string()
}

/// Redis's "TLS: switch between tcp and tls ports": the same port number moves from
/// TLS to plain TCP and back with CONFIG SET, while the connection that asks stays.
#[test]
fn the_same_port_switches_between_tls_and_plain_tcp() {
    let certs = TlsCerts::generate().unwrap();
    let redline = RedlineServer::builder().tls(&certs).start().unwrap();
    let port = redline.port();
    let port_text = port.to_string();
    let mut tls = tls_connect(port, &certs);
    assert_eq!(line_cmd(&mut tls, &["PING"]), "+PONG");
    assert_eq!(
        line_cmd(&mut tls, &["CONFIG", "SET", "tls-port", "0"]),
        "+OK"
    );
    assert_eq!(
        line_cmd(&mut tls, &["CONFIG", "SET", "port", &port_text]),
        "+OK"
    );
    drop(tls);

    let mut plain = TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert_eq!(line_cmd(&mut plain, &["PING"]), "+PONG");
    assert_eq!(line_cmd(&mut plain, &["CONFIG", "SET", "port", "0"]), "+OK");
    assert_eq!(
        line_cmd(&mut plain, &["CONFIG", "SET", "tls-port", &port_text]),
        "+OK"
    );
    drop(plain);

    let mut tls = tls_connect(port, &certs);
    assert_eq!(line_cmd(&mut tls, &["PING"]), "+PONG");
    assert_eq!(
        line_cmd(&mut tls, &["CONFIG", "GET", "port"]),
        "*2",
        "CONFIG GET port"
    );
}

/// A TLS-only server (`--port 0 --tls-port N`, as redis-rs's tests start theirs) shows
/// its TLS port as INFO's `tcp_port`, as Redis does (clients match nodes by it).
#[test]
fn info_shows_the_tls_port_of_a_tls_only_server() {
    let certs = TlsCerts::generate().unwrap();
    let redis = RedisServer::builder().tls(&certs).start().unwrap();
    let redline = RedlineServer::builder().tls(&certs).start().unwrap();
    let infos = [
        (redis.port(), redis.cmd(&["INFO", "server"]).unwrap()),
        (redline.port(), redline.cmd(&["INFO", "server"]).unwrap()),
    ];
    for (port, info) in infos {
        let text = info.text().unwrap();
        assert!(
            text.contains(&format!("\r\ntcp_port:{port}\r\n")),
            "INFO server on TLS port {port}: {text}"
        );
    }
}

/// Redis's "TLS: Not accepting non-TLS connections on a TLS port": a client speaking
/// plain RESP gets a reset, as from redis-server, not TLS alert bytes.
#[test]
fn plain_clients_on_the_tls_port_are_reset_as_by_redis() {
    let certs = TlsCerts::generate().unwrap();
    let redis = RedisServer::builder().tls(&certs).start().unwrap();
    let redline = RedlineServer::builder().tls(&certs).start().unwrap();
    let [from_redis, from_redline] = [redis.port(), redline.port()].map(|port| {
        let mut cmd = Command::new(tool("redis-cli"));
        cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "PING"]);
        let out = run(&mut cmd);
        (out.status.success(), stdout(&out), stderr(&out))
    });
    assert_eq!(from_redline, from_redis);
    assert!(!from_redline.0);
    // The server goes on serving TLS clients.
    let out = run(redline.cli().arg("PING"));
    assert_eq!(stdout(&out), "PONG", "{}", stderr(&out));
}

/// A full sync over TLS to a replica that reads slower than the master writes, both
/// sync kinds: the image arrives whole, with no later write on the master to push its
/// end out. (The master's last write can leave TLS records in its buffer when the
/// socket is full at that moment; it flushes them. This test keeps the socket full but
/// cannot time that last write, so it rarely catches a missing flush; Redis's "diskless
/// loading short read" in `--tls` mode, 100 syncs, caught it.)
#[test]
fn a_full_sync_over_tls_reaches_a_slow_replica_whole() {
    let certs = TlsCerts::generate().unwrap();
    let master = RedlineServer::builder()
        .tls(&certs)
        .args(["--save", "", "--rdbcompression", "no"])
        .start()
        .unwrap();
    // 16 MB of values (padding LZF would shrink to nothing, hence no compression):
    // more than loopback's socket buffers hold.
    let populate = master.cmd(&["DEBUG", "POPULATE", "1000", "key", "16000"]);
    assert_eq!(populate.unwrap(), ok());
    let no_delay = master.cmd(&["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
    assert_eq!(no_delay.unwrap(), ok());
    for diskless in ["yes", "no"] {
        let kind = master.cmd(&["CONFIG", "SET", "repl-diskless-sync", diskless]);
        assert_eq!(kind.unwrap(), ok());
        let mut replica = tls_connect(master.port(), &certs);
        replica
            .sock
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(
            line_cmd(&mut replica, &["REPLCONF", "capa", "eof", "capa", "psync2"]),
            "+OK"
        );
        replica.write_all(b"PSYNC ? -1\r\n").unwrap();
        replica.flush().unwrap();
        let mut image = Vec::new();
        let mut piece = [0u8; 16 * 1024];
        let started = Instant::now();
        while !image_is_whole(&image) {
            // About 16 MB/s: the master's socket stays full until the end.
            std::thread::sleep(Duration::from_millis(1));
            match replica.read(&mut piece) {
                Ok(0) => panic!("diskless {diskless}: closed after {} bytes", image.len()),
                Ok(n) => image.extend_from_slice(&piece[..n]),
                Err(e) => panic!(
                    "diskless {diskless}: the image stopped after {} bytes: {e}",
                    image.len()
                ),
            }
            assert!(started.elapsed() < Duration::from_secs(60));
        }
        assert!(
            image.len() > 16_000_000,
            "diskless {diskless}: {}",
            image.len()
        );
    }
}

/// Whether `read`, what a replica got after PSYNC, holds its whole image: past
/// `+FULLRESYNC` and any keep-alive newlines, a `$EOF:<mark>` header and the mark at the
/// end, or a `$<len>` header and that many bytes.
fn image_is_whole(read: &[u8]) -> bool {
    let text_line = |from: usize| -> Option<(usize, &[u8])> {
        let end = read[from..].windows(2).position(|w| w == b"\r\n")? + from;
        Some((end + 2, &read[from..end]))
    };
    let skip_newlines = |mut at: usize| {
        while read.get(at) == Some(&b'\n') {
            at += 1;
        }
        at
    };
    let Some((at, fullresync)) = text_line(skip_newlines(0)) else {
        return false;
    };
    assert!(fullresync.starts_with(b"+FULLRESYNC"), "{fullresync:?}");
    let Some((body, header)) = text_line(skip_newlines(at)) else {
        return false;
    };
    if let Some(mark) = header.strip_prefix(b"$EOF:") {
        read.len() >= body + mark.len() && read.ends_with(mark)
    } else {
        let len: usize = std::str::from_utf8(&header[1..]).unwrap().parse().unwrap();
        read.len() >= body + len
    }
}
