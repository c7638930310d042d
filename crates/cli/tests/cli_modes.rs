//! `redline cli` against a cluster (`-c`), over TLS (redis-server's and redline-server's),
//! with a password and a database; `redline server` in the foreground.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use cli_support::{redis_cli, redline, run, text};
use redline_testkit::{RedisCluster, RedisServer, RedlineServer, Reply, TlsCerts};

#[test]
fn cluster_mode_follows_keys_to_their_nodes() {
    let cluster = RedisCluster::builder()
        .replicas_per_master(0)
        .start()
        .expect("cluster");
    let port = cluster.addr(0).port().to_string();
    // Keys in slots of different masters, all through node 0.
    let input = b"SET foo 1\nSET bar 2\nSET baz 3\nMGET foo bar baz\nDEL foo bar baz\n";
    let out = run(redline(), &["cli", "-c", "-p", &port, "--no-raw"], input);
    assert_eq!(
        text(&out.stdout),
        "OK\nOK\nOK\n1) \"1\"\n2) \"2\"\n3) \"3\"\n(integer) 3\n",
        "stderr: {}",
        text(&out.stderr)
    );
    // Without -c the redirect is shown as the error it is.
    let out = run(
        redline(),
        &["cli", "-p", &port, "--no-raw"],
        b"SET foo 1\nSET bar 1\nSET baz 1\n",
    );
    assert!(
        text(&out.stdout).contains("(error) MOVED"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn tls_password_and_database() {
    let certs = TlsCerts::generate().expect("certs");
    let server = RedisServer::builder()
        .tls(&certs)
        .password("s3cret")
        .start()
        .expect("tls redis");
    let port = server.port().to_string();
    let ca = certs.ca_cert_path().display().to_string();
    let base = [
        "cli",
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "--tls",
        "--cacert",
        &ca,
        "-a",
        "s3cret",
    ];
    let mut set = base.to_vec();
    set.extend_from_slice(&["-n", "3", "SET", "k", "in-db-3"]);
    let out = run(redline(), &set, b"");
    assert_eq!(text(&out.stdout), "OK\n", "stderr: {}", text(&out.stderr));
    // The same through redis-cli: db 3 holds it, db 0 does not.
    let mut args: Vec<String> = vec!["-p".into(), port.clone(), "-a".into(), "s3cret".into()];
    args.extend(certs.redis_cli_args());
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut get3 = arg_refs.clone();
    get3.extend_from_slice(&["-n", "3", "GET", "k"]);
    assert_eq!(text(&run(redis_cli(), &get3, b"").stdout), "in-db-3\n");
    let mut get0 = base.to_vec();
    get0.extend_from_slice(&["--no-raw", "GET", "k"]);
    assert_eq!(text(&run(redline(), &get0, b"").stdout), "(nil)\n");
    // Wrong password: redis-cli prints the AUTH error and still runs; we fail to connect.
    let out = run(
        redline(),
        &[
            "cli",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "--tls",
            "--cacert",
            &ca,
            "-a",
            "wrong",
            "PING",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("WRONGPASS"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn tls_against_redline_server_with_and_without_a_client_certificate() {
    let certs = TlsCerts::generate().expect("certs");
    let server = RedlineServer::builder()
        .tls(&certs)
        .password("s3cret")
        .start()
        .expect("tls redline-server");
    let port = server.port().to_string();
    let path = |p: std::path::PathBuf| p.display().to_string();
    let (ca, cert, key) = (
        path(certs.ca_cert_path()),
        path(certs.client_cert_path()),
        path(certs.client_key_path()),
    );
    let base = [
        "cli",
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "--tls",
        "--cacert",
        &ca,
        "-a",
        "s3cret",
    ];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        run(redline(), &args, b"")
    };
    let out = with(&["SET", "k", "over tls"]);
    assert_eq!(text(&out.stdout), "OK\n", "stderr: {}", text(&out.stderr));
    let out = with(&["GET", "k"]);
    assert_eq!(text(&out.stdout), "over tls\n");
    // Client certificates required: --cert/--key connect, nothing else does.
    assert_eq!(
        server
            .cmd(&["CONFIG", "SET", "tls-auth-clients", "yes"])
            .unwrap(),
        Reply::Simple("OK".into())
    );
    let out = with(&["--cert", &cert, "--key", &key, "GET", "k"]);
    assert_eq!(
        text(&out.stdout),
        "over tls\n",
        "stderr: {}",
        text(&out.stderr)
    );
    let out = with(&["GET", "k"]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(!text(&out.stdout).contains("over tls"));
}

#[test]
fn server_subcommand_serves_until_sigterm() {
    let port = redline_testkit::reserve_port().unwrap().to_string();
    let mut child = redline()
        .args(["server", "--port", &port, "--save", ""])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redline server");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut answered = false;
    while Instant::now() < deadline {
        let out = run(redis_cli(), &["-p", &port, "PING"], b"");
        if text(&out.stdout) == "PONG\n" {
            answered = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let set = run(redline(), &["cli", "-p", &port, "SET", "k", "v"], b"");
    // fill and bench work against redline-server too (CLIENT REPLY OFF, MSET, DBSIZE).
    let fill = run(
        redline(),
        &[
            "fill",
            "-p",
            &port,
            "--keys",
            "3000",
            "--key-size",
            "16",
            "--value-size",
            "16",
            "--flush",
        ],
        b"",
    );
    let bench = run(
        redline(),
        &["bench", "-p", &port, "-n", "500", "-t", "set,get", "--json"],
        b"",
    );
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(answered, "redline server never answered PING");
    assert_eq!(text(&set.stdout), "OK\n");
    assert!(fill.status.success(), "fill: {}", text(&fill.stderr));
    assert!(
        text(&fill.stdout).contains("DBSIZE: 3000"),
        "{}",
        text(&fill.stdout)
    );
    assert!(bench.status.success(), "bench: {}", text(&bench.stderr));
    assert_eq!(text(&bench.stdout).lines().count(), 2);
    assert!(exit.success(), "exit: {exit:?}");
    // Bad arguments are fatal with redis-server's message.
    let bad = run(redline(), &["server", "--no-such-directive", "1"], b"");
    assert_eq!(bad.status.code(), Some(1));
    assert!(!text(&bad.stderr).is_empty());
}

/// Runs a subscribe command with `tool`, publishes, interrupts it (Ctrl-C) and returns
/// what it printed.
fn subscribe_output(
    server: &RedisServer,
    mut tool: std::process::Command,
    args: &[&str],
) -> String {
    let mut child = tool
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().unwrap();
    let printed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let reader = {
        let printed = printed.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = std::io::Read::read(&mut stdout, &mut chunk) {
                if n == 0 {
                    break;
                }
                printed.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        })
    };
    let wait = |done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline && !done() {
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    // Wait until the subscription exists, then publish.
    wait(&|| {
        let patterns = server
            .cmd(&["PUBSUB", "NUMPAT"])
            .unwrap()
            .integer()
            .unwrap();
        let channels = server
            .cmd(&["PUBSUB", "NUMSUB", "news"])
            .unwrap()
            .items()
            .and_then(|i| i.get(1).and_then(|n| n.integer()))
            .unwrap_or(0);
        patterns + channels > 0
    });
    server.cmd(&["PUBLISH", "news", "hello world"]).unwrap();
    server.cmd(&["PUBLISH", "news", "second"]).unwrap();
    // Interrupt once both messages are printed.
    wait(&|| text(&printed.lock().unwrap()).contains("second"));
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    // A process started with SIGINT ignored (a background job of a shell without job
    // control) keeps running: stop it after a while instead of hanging the test.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut stopped = matches!(child.try_wait(), Ok(Some(_)));
    while !stopped && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        stopped = matches!(child.try_wait(), Ok(Some(_)));
    }
    if !stopped {
        let _ = child.kill();
        let _ = child.wait();
    }
    reader.join().unwrap();
    let out = text(&printed.lock().unwrap());
    out
}

#[test]
fn subscribe_mode_prints_messages_like_redis_cli() {
    let server = RedisServer::start().expect("redis-server");
    let port = server.port().to_string();
    for args in [
        vec!["-p", port.as_str(), "SUBSCRIBE", "news", "other"],
        vec!["-p", port.as_str(), "--no-raw", "SUBSCRIBE", "news"],
        vec!["-p", port.as_str(), "--no-raw", "PSUBSCRIBE", "ne*"],
    ] {
        let theirs = subscribe_output(&server, redis_cli(), &args);
        let mut ours_args = vec!["cli"];
        ours_args.extend_from_slice(&args);
        let ours = subscribe_output(&server, redline(), &ours_args);
        assert_eq!(ours, theirs, "{args:?}");
        assert!(ours.contains("hello world"), "{ours}");
    }
}
