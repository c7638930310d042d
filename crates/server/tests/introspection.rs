//! Introspection and administration on redline-server: SLOWLOG (thresholds, trimming,
//! redaction), LATENCY (events, histograms), CLIENT LIST as other clients see a
//! blocked one, CLIENT UNBLOCK, CONFIG SET port moving the listener, and MIGRATE to a
//! real redis-server (keys arrive with their TTL, leave here, and replicate as DEL);
//! DEBUG SLEEP stopping the whole server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{field_of, Conn, Redline};
use redline_resp::Frame;
use redline_testkit::{listening_socket_inodes, listening_sockets, RedisServer, RedlineServer};

/// A reply as text: strings, statuses and errors by their content, integers in decimal.
fn text(frame: &Frame) -> String {
    match frame {
        Frame::Bulk(b) | Frame::Simple(b) | Frame::Error(b) | Frame::Verbatim { text: b, .. } => {
            String::from_utf8_lossy(b).into()
        }
        Frame::Integer(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

fn is_error(frame: &Frame) -> bool {
    matches!(frame, Frame::Error(_))
}

fn items(frame: Frame) -> Vec<Frame> {
    match frame {
        Frame::Array(items) => items,
        other => panic!("not an array: {other:?}"),
    }
}

#[test]
fn slowlog_logs_trims_and_redacts() {
    let server = Redline::start();
    let mut c = Conn::connect(server.addr);
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    let long = "A".repeat(200);
    c.cmd(&["SET", "k", &long]);
    c.cmd(&["CONFIG", "SET", "masterauth", "secret"]);
    let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let mut sadd = vec!["SADD".to_string(), "s".to_string()];
    sadd.extend(many);
    c.cmd(&sadd);
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    let entries = items(c.cmd(&["SLOWLOG", "GET", "-1"]));
    // Newest first; the CONFIG SET that disabled it is not logged.
    let args: Vec<Vec<String>> = entries
        .into_iter()
        .map(|e| items(items(e).remove(3)).iter().map(text).collect())
        .collect();
    assert_eq!(args.len(), 4, "{args:?}");
    assert_eq!(args[0].len(), 32);
    assert_eq!(args[0][31], "... (11 more arguments)");
    assert_eq!(args[1], ["CONFIG", "SET", "masterauth", "(redacted)"]);
    assert_eq!(
        args[2][2],
        format!("{}... (72 more bytes)", "A".repeat(128))
    );
    assert_eq!(args[3], ["SLOWLOG", "RESET"]);
    assert!(is_error(&c.cmd(&["SLOWLOG", "GET", "-2"])));
    c.cmd(&["SLOWLOG", "RESET"]);
    assert_eq!(text(&c.cmd(&["SLOWLOG", "LEN"])), "0");
}

/// A script's commands are logged as Redis logs them: under its script client, with no
/// address (`?:0`) and no name; the script itself under the caller's.
#[test]
fn slowlog_logs_script_commands_under_the_script_client() {
    let ours = Redline::start();
    let theirs = RedisServer::start().unwrap();
    let mut logs = Vec::new();
    for addr in [ours.addr, theirs.addr()] {
        let mut c = Conn::connect(addr);
        c.cmd(&["CLIENT", "SETNAME", "caller"]);
        c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        c.cmd(&["SLOWLOG", "RESET"]);
        c.cmd(&["EVAL", "return redis.call('SET', 'k', 'v')", "0"]);
        c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
        let peer = text(&c.cmd(&["CLIENT", "INFO"]))
            .split(' ')
            .find_map(|f| f.strip_prefix("addr=").map(str::to_string))
            .unwrap();
        let entries: Vec<String> = items(c.cmd(&["SLOWLOG", "GET", "-1"]))
            .into_iter()
            .map(|e| {
                let e = items(e);
                let args: Vec<String> = items(e[3].clone()).iter().map(text).collect();
                let from = text(&e[4]).replace(&peer, "caller's address");
                format!("{args:?} from {from} named {:?}", text(&e[5]))
            })
            .collect();
        logs.push(entries);
    }
    assert_eq!(logs[0], logs[1]);
    assert!(logs[0].iter().any(|l| l.contains("?:0")), "{:?}", logs[0]);
}

#[test]
fn latency_events_and_histograms() {
    let server = Redline::start_with(&["--enable-debug-command", "yes"]);
    let mut c = Conn::connect(server.addr);
    c.cmd(&["CONFIG", "SET", "latency-monitor-threshold", "50"]);
    c.cmd(&["DEBUG", "SLEEP", "0.1"]);
    let latest = items(c.cmd(&["LATENCY", "LATEST"]));
    let first = items(latest.into_iter().next().expect("an event"));
    assert_eq!(text(&first[0]), "command");
    let worst: u64 = text(&first[3]).parse().unwrap();
    assert!(worst >= 100, "{worst}");
    assert_eq!(items(c.cmd(&["LATENCY", "HISTORY", "command"])).len(), 1);
    assert!(text(&c.cmd(&["LATENCY", "DOCTOR"])).contains("command"));
    assert_eq!(text(&c.cmd(&["LATENCY", "RESET"])), "1");
    c.cmd(&["CONFIG", "RESETSTAT"]);
    c.cmd(&["SET", "a", "1"]);
    c.cmd(&["SET", "b", "2"]);
    c.cmd(&["CLIENT", "ID"]);
    let histo = items(c.cmd(&["LATENCY", "HISTOGRAM", "set", "client", "nosuchcommand"]));
    let names: Vec<String> = histo.iter().step_by(2).map(text).collect();
    assert_eq!(names, ["set", "client|id"]);
    let set = items(histo[1].clone());
    assert_eq!(text(&set[0]), "calls");
    assert_eq!(text(&set[1]), "2");
}

#[test]
fn blocked_clients_show_and_unblock() {
    let server = Redline::start();
    let mut blocked = Conn::connect(server.addr);
    let id = text(&blocked.cmd(&["CLIENT", "ID"]));
    blocked.send(&["BLPOP", "nothing", "0"]);
    let mut c = Conn::connect(server.addr);
    let mut line = String::new();
    for _ in 0..100 {
        line = text(&c.cmd(&["CLIENT", "LIST", "ID", &id]));
        if line.contains("flags=b") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        line.contains("flags=b") && line.contains("cmd=blpop"),
        "{line}"
    );
    assert_eq!(text(&c.cmd(&["CLIENT", "UNBLOCK", &id, "ERROR"])), "1");
    let reply = blocked.read().unwrap();
    assert!(text(&reply).starts_with("UNBLOCKED"), "{reply:?}");
    assert_eq!(text(&c.cmd(&["CLIENT", "UNBLOCK", &id])), "0");
    assert!(is_error(&c.cmd(&["CLIENT", "UNBLOCK", &id, "SOON"])));
    // The failed blocked call counts as failed, its error in errorstats.
    let stats = text(&c.cmd(&["INFO", "commandstats"]));
    assert!(stats.contains("cmdstat_blpop:calls=1,"), "{stats}");
    assert!(stats.contains("failed_calls=1"), "{stats}");
}

#[test]
fn config_set_port_moves_the_listener_or_changes_nothing() {
    let server = Redline::start();
    let mut c = Conn::connect(server.addr);
    // A port someone else holds: refused, everything as it was.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port().to_string();
    let reply = c.cmd(&["CONFIG", "SET", "maxmemory", "12345", "port", &busy_port]);
    assert!(
        text(&reply).contains("Unable to listen on this port"),
        "{reply:?}"
    );
    assert_eq!(text(&items(c.cmd(&["CONFIG", "GET", "maxmemory"]))[1]), "0");
    drop(busy);
    // The server's listeners on its port now (this process holds no other there yet).
    let me = std::process::id();
    let old = listening_socket_inodes(me, server.addr.port()).unwrap();
    assert!(!old.is_empty());
    // A free port: new connections go there, the old port closes. The port is free when
    // picked; another process or test may take it before the server binds it (one CI
    // run did), which the server must refuse as above: then pick another.
    let mut port = 0;
    for _ in 0..5 {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let candidate = free.local_addr().unwrap().port();
        drop(free);
        let reply = text(&c.cmd(&["CONFIG", "SET", "port", &candidate.to_string()]));
        if reply == "OK" {
            port = candidate;
            break;
        }
        assert!(reply.contains("Unable to listen on this port"), "{reply}");
    }
    assert_ne!(
        port, 0,
        "five free ports were all taken before the server bound them"
    );
    let mut moved = Conn::connect(([127, 0, 0, 1], port).into());
    assert_eq!(text(&moved.cmd(&["PING"])), "PONG");
    // The old listeners are closed before CONFIG SET answers. Asked of this process's
    // sockets, by inode, not by connecting or by port: the freed port is in the
    // ephemeral range, and another process, or another test's server in this process,
    // may listen on it at once (two CI runs failed on that).
    let still = listening_socket_inodes(me, server.addr.port()).unwrap();
    assert!(old.is_disjoint(&still), "the old listeners are still open");
    assert_eq!(listening_sockets(me, port).unwrap(), 1);
    // The connection that moved it is still served.
    assert_eq!(text(&c.cmd(&["PING"])), "PONG");
}

#[test]
fn migrate_moves_keys_to_redis_server() {
    let server = Redline::start();
    let redis = RedisServer::start().unwrap();
    let mut c = Conn::connect(server.addr);
    let host = "127.0.0.1";
    let port = redis.port().to_string();
    c.cmd(&["SET", "plain", "v"]);
    c.cmd(&["SET", "ttl", "v", "EX", "100"]);
    c.cmd(&["RPUSH", "list", "a", "b", "c"]);
    assert_eq!(
        text(&c.cmd(&["MIGRATE", host, &port, "missing", "0", "1000"])),
        "NOKEY"
    );
    assert_eq!(
        text(&c.cmd(&["MIGRATE", host, &port, "plain", "0", "1000"])),
        "OK"
    );
    assert_eq!(text(&c.cmd(&["EXISTS", "plain"])), "0");
    let reply = c.cmd(&[
        "MIGRATE", host, &port, "", "3", "1000", "COPY", "KEYS", "ttl", "list",
    ]);
    assert_eq!(text(&reply), "OK");
    assert_eq!(text(&c.cmd(&["EXISTS", "ttl", "list"])), "2");
    let mut r = Conn::connect(redis.addr());
    assert_eq!(text(&r.cmd(&["GET", "plain"])), "v");
    r.cmd(&["SELECT", "3"]);
    assert_eq!(
        text(&r.cmd(&["LRANGE", "list", "0", "-1"])),
        text(&c.cmd(&["LRANGE", "list", "0", "-1"]))
    );
    let ttl: i64 = text(&r.cmd(&["TTL", "ttl"])).parse().unwrap();
    assert!((90..=100).contains(&ttl), "{ttl}");
    // Without REPLACE the target refuses an existing key, and the key stays here.
    let reply = c.cmd(&["MIGRATE", host, &port, "list", "3", "1000"]);
    assert!(text(&reply).contains("BUSYKEY"), "{reply:?}");
    assert_eq!(text(&c.cmd(&["EXISTS", "list"])), "1");
    let reply = c.cmd(&["MIGRATE", host, &port, "list", "3", "1000", "REPLACE"]);
    assert_eq!(text(&reply), "OK");
    // The connection to the target is kept (one, for every database), and a kept one
    // the target closed is replaced on the next MIGRATE.
    let cached = |c: &mut Conn| {
        text(&c.cmd(&["INFO", "stats"]))
            .lines()
            .find_map(|l| {
                l.strip_prefix("migrate_cached_sockets:")
                    .map(str::to_string)
            })
            .unwrap_or_default()
    };
    assert_eq!(cached(&mut c), "1");
    r.cmd(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
    c.cmd(&["SET", "again", "v"]);
    let reply = c.cmd(&["MIGRATE", host, &port, "again", "0", "1000"]);
    assert_eq!(text(&reply), "OK");
    assert_eq!(cached(&mut c), "1");
    // Nobody listening: an IOERR, the key kept.
    c.cmd(&["SET", "stay", "v"]);
    let closed = redline_testkit::ClosedPort::new().unwrap();
    let closed_port = closed.port().to_string();
    let reply = c.cmd(&["MIGRATE", host, &closed_port, "stay", "0", "500"]);
    assert!(text(&reply).starts_with("IOERR"), "{reply:?}");
    assert_eq!(text(&c.cmd(&["EXISTS", "stay"])), "1");
}

/// INFO latencystats as redis-server writes it: one line per command called with
/// tracking on, the configured percentiles as labels; CONFIG SET checks and prints the
/// percentiles the same way; `latency-tracking no` stops recording, RESETSTAT clears.
#[test]
fn latencystats_report_the_configured_percentiles() {
    let redis = RedisServer::start().unwrap();
    let ours = Redline::start();
    // The line's shape, numbers replaced by `N`.
    let shape = |c: &mut Conn, name: &str| -> String {
        let info = text(&c.cmd(&["INFO", "latencystats"]));
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("latency_percentiles_usec_{name}:")))
            .map(|v| {
                v.split(',')
                    .map(|pair| {
                        let (label, value) = pair.split_once('=').unwrap_or((pair, ""));
                        let decimals = value.split_once('.').map_or(0, |(_, d)| d.len());
                        format!("{label}=N.{decimals}")
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    };
    let run = |addr| {
        let mut c = Conn::connect(addr);
        let mut seen = Vec::new();
        c.cmd(&["SET", "k", "v"]);
        c.cmd(&["CLIENT", "ID"]);
        seen.push(shape(&mut c, "set"));
        seen.push(shape(&mut c, "client|id"));
        for bad in ["10.0 50.0 a", "10.0 101", "-1"] {
            let reply = c.cmd(&["CONFIG", "SET", "latency-tracking-info-percentiles", bad]);
            seen.push(text(&reply));
        }
        let reply = c.cmd(&[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "0.0 50.0 99.99 100.0",
        ]);
        seen.push(text(&reply));
        let got = items(c.cmd(&["CONFIG", "GET", "latency-tracking-info-percentiles"]));
        seen.push(text(&got[1]));
        seen.push(shape(&mut c, "set"));
        c.cmd(&["CONFIG", "RESETSTAT"]);
        seen.push(shape(&mut c, "set"));
        c.cmd(&["CONFIG", "SET", "latency-tracking", "no"]);
        c.cmd(&["GET", "k"]);
        seen.push(shape(&mut c, "get"));
        c.cmd(&["CONFIG", "SET", "latency-tracking", "yes"]);
        c.cmd(&["CONFIG", "SET", "latency-tracking-info-percentiles", ""]);
        c.cmd(&["GET", "k"]);
        seen.push(
            text(&c.cmd(&["INFO", "latencystats"]))
                .contains("latency_percentiles_usec_get:\r\n")
                .to_string(),
        );
        seen
    };
    let theirs = run(redis.addr());
    assert_eq!(theirs[0], "p50=N.3,p99=N.3,p99.9=N.3");
    assert_eq!(run(ours.addr), theirs);
}

/// MEMORY STATS names the fields redis-server does, in its order (a database's entry
/// only while it holds keys); DOCTOR answers an instance this small in Redis's words;
/// MALLOC-STATS, PURGE and HELP answer.
#[test]
fn memory_subcommands_answer_as_redis_does() {
    let redis = RedisServer::start().unwrap();
    // A process of its own: an in-process server's heap figures count the other tests'.
    let ours = RedlineServer::start().unwrap();
    let names = |addr| {
        let mut c = Conn::connect(addr);
        c.cmd(&["SET", "k", "v"]);
        let stats = items(c.cmd(&["MEMORY", "STATS"]));
        let mut names: Vec<String> = stats.chunks(2).map(|pair| text(&pair[0])).collect();
        for sub in ["MALLOC-STATS", "HELP"] {
            let reply = c.cmd(&["MEMORY", sub]);
            assert!(!is_error(&reply), "{sub}: {reply:?}");
        }
        names.push(text(&c.cmd(&["MEMORY", "DOCTOR"])));
        names.push(text(&c.cmd(&["MEMORY", "PURGE"])));
        names
    };
    assert_eq!(names(ours.addr()), names(redis.addr()));
}

/// `save` lines add up at start (the first replaces the defaults), `save ""` empties,
/// and CONFIG SET checks and replaces, as in redis-server.
#[test]
fn save_points_add_up_at_start_and_are_checked() {
    // (The test kit starts redis-server with `save ""` before these.)
    let starts: &[&[&str]] = &[
        &["--save", "900 1", "--save", "300 10"],
        &["--save", "900", "1", "--save", "", "--save", "60 5"],
    ];
    for args in starts {
        let redis = RedisServer::builder()
            .args(args.iter().copied())
            .start()
            .unwrap();
        let ours = redline_testkit::RedlineServer::builder()
            .args(args.iter().copied())
            .start()
            .unwrap();
        let run = |port: u16| {
            let mut c = Conn::connect(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
            let mut seen = vec![format!("{:?}", c.cmd(&["CONFIG", "GET", "save"]))];
            for value in ["1 2 3", "10 -1", "0 1", "x 1", "100 100 200 5", ""] {
                seen.push(format!("{:?}", c.cmd(&["CONFIG", "SET", "save", value])));
                seen.push(format!("{:?}", c.cmd(&["CONFIG", "GET", "save"])));
            }
            seen
        };
        assert_eq!(run(ours.port()), run(redis.port()), "{args:?}");
    }
}

/// `oom-score-adj` moves the process's OOM score as redis-server moves its own:
/// relative to the score it had, by role, absolute, and back on `no`; values out of
/// range are refused with Redis's error. Both servers run the same steps.
#[test]
fn oom_score_adj_follows_the_role_and_mode() {
    fn score(pid: u32) -> i64 {
        std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
    fn steps(port: u16, pid: u32) -> Vec<String> {
        let mut c = Conn::connect(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
        let base = score(pid);
        let mut seen = Vec::new();
        let mut step = |c: &mut Conn, args: &[&str]| {
            let reply = c.cmd(args);
            seen.push(format!("{:?} {}", reply, score(pid) - base));
        };
        step(
            &mut c,
            &["CONFIG", "SET", "oom-score-adj-values", "10 20 30"],
        );
        step(&mut c, &["CONFIG", "SET", "oom-score-adj", "yes"]);
        step(
            &mut c,
            &["CONFIG", "SET", "oom-score-adj-values", "15 20 30"],
        );
        step(&mut c, &["REPLICAOF", "127.0.0.1", "1"]);
        step(&mut c, &["REPLICAOF", "NO", "ONE"]);
        step(
            &mut c,
            &["CONFIG", "SET", "oom-score-adj-values", "-2001 0 0"],
        );
        step(&mut c, &["CONFIG", "SET", "oom-score-adj-values", "1 2"]);
        step(&mut c, &["CONFIG", "SET", "oom-score-adj", "absolute"]);
        step(&mut c, &["CONFIG", "SET", "oom-score-adj", "no"]);
        seen.push(format!(
            "{:?}",
            c.cmd(&["CONFIG", "GET", "oom-score-adj-values"])
        ));
        seen
    }
    let redis = RedisServer::start().unwrap();
    let ours = redline_testkit::RedlineServer::start().unwrap();
    let theirs = steps(redis.port(), redis.pid().unwrap());
    let mine = steps(ours.port(), ours.pid().unwrap());
    // Absolute scores depend on the process's own starting score: compare the rest.
    let strip = |v: Vec<String>| {
        v.into_iter()
            .enumerate()
            .filter(|(i, _)| *i != 7)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(mine), strip(theirs));
}

/// Redis 7's protections, by default on: DEBUG and MODULE refused, CONFIG SET of `dir`
/// and `dbfilename` refused; `yes` allows them, `local` from the loopback address; a
/// `dbfilename` with a path is refused. Compared with redis-server.
#[test]
fn protected_commands_and_configs_match_redis() {
    use redline_testkit::RedlineServer;
    let dir = std::env::temp_dir().display().to_string();
    let run = |port: u16| {
        let mut c = Conn::connect(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
        [
            c.cmd(&["DEBUG", "HELP"]),
            c.cmd(&["MODULE", "LIST"]),
            c.cmd(&["CONFIG", "SET", "dir", &dir]),
            c.cmd(&["CONFIG", "SET", "dbfilename", "x.rdb"]),
            c.cmd(&["CONFIG", "SET", "dbfilename", "a/x.rdb"]),
            c.cmd(&["CONFIG", "GET", "dbfilename"]),
        ]
        .iter()
        .map(|f| match f {
            Frame::Array(_) if text(f).contains("DEBUG") => "debug help".to_string(),
            other => text(other),
        })
        .collect::<Vec<_>>()
    };
    for setting in ["no", "yes", "local"] {
        let args = [
            "--enable-debug-command",
            setting,
            "--enable-module-command",
            setting,
            "--enable-protected-configs",
            setting,
        ];
        let redis = RedisServer::builder().args(args).start().unwrap();
        let ours = RedlineServer::builder().args(args).start().unwrap();
        let (theirs, got) = (run(redis.port()), run(ours.port()));
        // MODULE LIST lists nothing on either; only whether it was refused matters.
        assert_eq!(got[0], theirs[0], "{setting}");
        assert_eq!(
            got[1].contains("not allowed"),
            theirs[1].contains("not allowed")
        );
        assert_eq!(got[2..], theirs[2..], "{setting}");
    }
}

/// Redis 7's default `bind`, `* -::*`: every IPv4 address, and every IPv6 one when the
/// host has IPv6, both on one port; CONFIG REWRITE leaves it out as a default.
#[test]
fn default_bind_is_every_address_like_redis() {
    use redline_testkit::RedlineServer;
    assert_eq!(
        redline_server::Config::default().get("bind").as_deref(),
        Some("* -::*")
    );
    let server = RedlineServer::builder()
        .args(["--bind", "*", "-::*"])
        .start()
        .unwrap();
    let port = server.port();
    let mut c = Conn::connect(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    assert_eq!(
        text(&c.cmd(&["CONFIG", "GET", "bind"])),
        "Array([Bulk(b\"bind\"), Bulk(b\"* -::*\")])"
    );
    if std::net::TcpListener::bind("[::1]:0").is_ok() {
        assert!(std::net::TcpStream::connect(("::1", port)).is_ok());
    }
}

/// The Unix socket (`unixsocket`, `unixsocketperm`): commands answer as on TCP, the
/// client shows as `/unixsocket:0`, it counts as local (`enable-debug-command local`),
/// and the socket file has the asked permissions. Compared with redis-server.
#[test]
fn unix_socket_clients_match_redis() {
    use redline_testkit::RedlineServer;
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;
    let run = |path: &std::path::Path| {
        let mut s = std::os::unix::net::UnixStream::connect(path).unwrap();
        let mut seen = Vec::new();
        for args in [
            &["PING"][..],
            &["CLIENT", "SETNAME", "u"],
            &["DEBUG", "SLEEP", "0"],
            // Read with strtod, never an error (hiredis's tests send "0\r\n").
            &["DEBUG", "SLEEP", "0\r\n"],
            &["DEBUG", "SLEEP", "abc"],
            &["DEBUG", "SLEEP", "nan"],
        ] {
            let mut out = bytes::BytesMut::new();
            redline_resp::encode::command(&mut out, args.iter().map(|a| a.as_bytes()));
            s.write_all(&out).unwrap();
            let mut buf = bytes::BytesMut::new();
            let frame = loop {
                if let Some(f) = redline_resp::parse(&mut buf).unwrap() {
                    break f;
                }
                let mut chunk = [0u8; 4096];
                let n = s.read(&mut chunk).unwrap();
                assert!(n > 0, "closed");
                buf.extend_from_slice(&chunk[..n]);
            };
            seen.push(text(&frame));
        }
        // Its CLIENT LIST line, as another client sees it.
        let mut out = bytes::BytesMut::new();
        redline_resp::encode::command(&mut out, [&b"CLIENT"[..], b"LIST"]);
        s.write_all(&out).unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while !buf.ends_with(b"\r\n") || buf.len() < 10 {
            let n = s.read(&mut chunk).unwrap();
            buf.extend_from_slice(&chunk[..n]);
        }
        // Its own line, named above: another client (the harness's readiness probe,
        // not yet reaped on a loaded machine) may be listed before it.
        let list = String::from_utf8_lossy(&buf).to_string();
        let addr = list
            .lines()
            .find(|l| l.split(' ').any(|f| f == "name=u"))
            .and_then(|l| l.split(' ').find(|f| f.starts_with("addr=")))
            .map(|a| a.replace(&*path.display().to_string(), "PATH"));
        seen.push(format!("{addr:?}"));
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        seen.push(format!("{mode:o}"));
        seen
    };
    let dir = std::env::temp_dir().join(format!("redline-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (theirs_path, ours_path) = (dir.join("redis.sock"), dir.join("redline.sock"));
    let args = |p: &std::path::Path| {
        vec![
            "--unixsocket".to_string(),
            p.display().to_string(),
            "--unixsocketperm".into(),
            "700".into(),
            "--enable-debug-command".into(),
            "local".into(),
        ]
    };
    let redis = RedisServer::builder()
        .args(args(&theirs_path))
        .start()
        .unwrap();
    let ours = RedlineServer::builder()
        .args(args(&ours_path))
        .start()
        .unwrap();
    let (theirs, got) = (run(&theirs_path), run(&ours_path));
    drop((redis, ours));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(got, theirs);
}

/// One field of INFO `section`.
fn info_field(c: &mut Conn, section: &str, name: &str) -> String {
    let info = text(&c.cmd(&["INFO", section]));
    field_of(&info, name)
        .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
        .to_string()
}

/// One byte figure of INFO memory.
fn memory_figure(c: &mut Conn, name: &str) -> u64 {
    let value = info_field(c, "memory", name);
    value.parse().unwrap_or_else(|_| panic!("{name}: {value}"))
}

/// Runs `facts` against a redis-server and a redline-server and expects the same. The
/// redline-server runs in a process of its own: an in-process server's heap figures
/// would count the other tests'.
fn same_memory_facts_on_both(facts: impl Fn(std::net::SocketAddr) -> Vec<String>) {
    let redis = RedisServer::start().unwrap();
    let ours = RedlineServer::start().unwrap();
    assert_eq!(facts(ours.addr()), facts(redis.addr()));
}

/// INFO memory's peak, startup, overhead, dataset and scripting figures move as
/// redis-server's do (the figures themselves differ, so what is compared is how they
/// move): an 8 MB value made and deleted raises the peak by it and leaves it there, CONFIG
/// RESETSTAT included; 200 EVAL scripts grow the interpreter's heap and the cache's
/// figure, SCRIPT FLUSH takes them back; a library grows the functions' figure, and
/// 1,000 reloads of it leave the interpreter under 100 KB.
#[test]
fn memory_peak_overhead_and_script_figures_move_like_redis() {
    const BIG: u64 = 8 << 20;
    let facts = |addr| -> Vec<String> {
        let mut c = Conn::connect(addr);
        let percent = |c: &mut Conn, name: &str| -> f64 {
            let value = info_field(c, "memory", name);
            value.trim_end_matches('%').parse().unwrap()
        };
        let mut out = Vec::new();
        let (used, peak, startup) = (
            memory_figure(&mut c, "used_memory"),
            memory_figure(&mut c, "used_memory_peak"),
            memory_figure(&mut c, "used_memory_startup"),
        );
        let overhead = memory_figure(&mut c, "used_memory_overhead");
        let dataset = memory_figure(&mut c, "used_memory_dataset");
        out.push(format!(
            "startup within used: {}",
            startup > 0 && startup <= used
        ));
        out.push(format!("peak at least used: {}", peak >= used));
        out.push(format!(
            "overhead at least startup: {}",
            overhead >= startup
        ));
        out.push(format!("dataset below used: {}", dataset < used));
        // Made by the server (a request this big would stay as the client's buffer).
        c.cmd(&["SETRANGE", "big", &(BIG - 1).to_string(), "x"]);
        c.cmd(&["DEL", "big"]);
        let (used, peak) = (
            memory_figure(&mut c, "used_memory"),
            memory_figure(&mut c, "used_memory_peak"),
        );
        // Within what the threads' counters may lag by.
        out.push(format!(
            "peak holds the big value: {}",
            peak >= used + BIG * 9 / 10
        ));
        out.push(format!(
            "peak percentage below half: {}",
            percent(&mut c, "used_memory_peak_perc") < 50.0
        ));
        c.cmd(&["CONFIG", "RESETSTAT"]);
        out.push(format!(
            "peak stays through a stats reset: {}",
            percent(&mut c, "used_memory_peak_perc") < 50.0
        ));
        c.cmd(&["EVAL", "return 0", "0"]);
        let (lua, eval) = (
            memory_figure(&mut c, "used_memory_lua"),
            memory_figure(&mut c, "used_memory_scripts_eval"),
        );
        for i in 0..200 {
            c.cmd(&[
                "EVAL",
                &format!("local t = {{}} for i = 1, {i} do t[i] = i end return #t"),
                "0",
            ]);
        }
        out.push(format!(
            "scripts grow the interpreter: {}",
            memory_figure(&mut c, "used_memory_lua") > lua
        ));
        let cached = memory_figure(&mut c, "used_memory_scripts_eval");
        out.push(format!("scripts grow the cache: {}", cached > eval));
        out.push(format!(
            "scripts count in the total: {}",
            memory_figure(&mut c, "used_memory_scripts") >= cached
        ));
        let lua = memory_figure(&mut c, "used_memory_lua");
        c.cmd(&["SCRIPT", "FLUSH"]);
        out.push(format!(
            "flush shrinks the interpreter: {}",
            memory_figure(&mut c, "used_memory_lua") < lua
        ));
        out.push(format!(
            "flush empties the cache: {}",
            memory_figure(&mut c, "used_memory_scripts_eval")
        ));
        let functions = memory_figure(&mut c, "used_memory_functions");
        c.cmd(&[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function('f', function() return 1 end)",
        ]);
        out.push(format!(
            "a library grows the functions' figure: {}",
            memory_figure(&mut c, "used_memory_functions") > functions
        ));
        // Redis's scripting unit reloads a library 10,000 times and expects the EVAL
        // interpreter under 100 KB; here one interpreter holds both.
        for _ in 0..1000 {
            c.cmd(&[
                "FUNCTION",
                "LOAD",
                "REPLACE",
                "#!lua name=lib\nredis.register_function('f', function() return 2 end)",
            ]);
            c.cmd(&["FCALL", "f", "0"]);
        }
        out.push(format!(
            "reloaded libraries leave the interpreter small: {}",
            memory_figure(&mut c, "used_memory_lua") < 100 * 1024
        ));
        out
    };
    same_memory_facts_on_both(facts);
}

/// Commands that read or change part of a large string work where it stands, and a
/// string that grows keeps Redis's spare room (double below 1 MB, 1 MB more above), as
/// `used_memory` and its peak show: before, SETRANGE, BITFIELD reads, and BITCOUNT and
/// BITPOS with a range copied the whole string each call (a 32 MB string raised the
/// peak by 32 MB), and a grown string held twice its size.
#[test]
fn large_strings_change_in_place_and_grow_like_redis() {
    const BIG: u64 = 32 << 20;
    let facts = |addr| -> Vec<String> {
        let mut c = Conn::connect(addr);
        let mut out = Vec::new();
        // Made by the server (a request this big would stay as the client's buffer).
        c.cmd(&["SETRANGE", "big", &(BIG - 1).to_string(), "x"]);
        let (used, peak) = (
            memory_figure(&mut c, "used_memory"),
            memory_figure(&mut c, "used_memory_peak"),
        );
        let end = BIG.to_string();
        let commands: &[&[&str]] = &[
            &["SETRANGE", "big", "100", "abc"],
            &["BITFIELD_RO", "big", "GET", "u8", "800"],
            &[
                "BITFIELD", "big", "GET", "u8", "808", "SET", "u8", "0", "255",
            ],
            &["BITCOUNT", "big", "0", "200"],
            &["BITPOS", "big", "1", "50", "200"],
            &["BITPOS", "big", "0", "0", "0"],
            &["GETBIT", "big", "7"],
            &["SETRANGE", "big", &end, "grown"],
            &["APPEND", "big", "more"],
            &["SETBIT", "big", &(BIG * 8 + 100).to_string(), "1"],
            &["STRLEN", "big"],
        ];
        for command in commands {
            out.push(format!("{command:?}: {}", text(&c.cmd(command))));
        }
        let grew = memory_figure(&mut c, "used_memory").saturating_sub(used);
        out.push(format!("grown by less than half: {}", grew < BIG / 2));
        // Within what the threads' counters may lag by.
        let peak_rise = memory_figure(&mut c, "used_memory_peak").saturating_sub(peak);
        out.push(format!("no copy raised the peak: {}", peak_rise < BIG / 2));
        out
    };
    same_memory_facts_on_both(facts);
}

/// Set algebra with a large input and random picks from a large collection read it
/// where it stands, as the used_memory peak shows: before, SINTER, SINTERCARD and SDIFF
/// copied every input set, ZINTER, ZINTERCARD and ZDIFF every input with an index of
/// it, and SRANDMEMBER and ZRANDMEMBER with a count listed every position, each a
/// copy the size of the large collection (tens of MB for 300,000 members).
#[test]
fn set_algebra_and_random_picks_read_large_collections_where_they_stand() {
    const MEMBERS: usize = 300_000;
    let facts = |addr| -> Vec<String> {
        let mut c = Conn::connect(addr);
        for start in (0..MEMBERS).step_by(1000) {
            let members: Vec<String> = (start..start + 1000).map(|i| format!("m{i}")).collect();
            let mut sadd = vec!["SADD".to_string(), "big".into()];
            sadd.extend(members.iter().cloned());
            c.cmd(&sadd);
            let mut zadd = vec!["ZADD".to_string(), "bigz".into()];
            for (i, m) in (start..).zip(&members) {
                zadd.extend([i.to_string(), m.clone()]);
            }
            c.cmd(&zadd);
        }
        c.cmd(&["SADD", "small", "m1", "m2", "zz"]);
        c.cmd(&["ZADD", "smallz", "1", "m1", "2", "m2", "3", "zz"]);
        let before = memory_figure(&mut c, "used_memory_peak");
        let mut out = Vec::new();
        let sorted = |frame: Frame| {
            let mut items: Vec<String> = items(frame).iter().map(text).collect();
            items.sort();
            items.join(" ")
        };
        for command in [
            &["SINTER", "small", "big"][..],
            &["SDIFF", "small", "big"],
            &["ZINTER", "2", "smallz", "bigz", "WITHSCORES"],
            &["ZDIFF", "2", "smallz", "bigz"],
        ] {
            out.push(format!("{command:?}: {}", sorted(c.cmd(command))));
        }
        for command in [
            &["SINTERCARD", "2", "small", "big"][..],
            &["SINTERSTORE", "dst", "big", "small"],
            &["ZINTERCARD", "2", "bigz", "smallz"],
            &["ZINTERSTORE", "dstz", "2", "bigz", "smallz"],
        ] {
            out.push(format!("{command:?}: {}", text(&c.cmd(command))));
        }
        for command in [&["SRANDMEMBER", "big", "5"], &["ZRANDMEMBER", "bigz", "5"]] {
            out.push(format!("{command:?}: {}", items(c.cmd(command)).len()));
        }
        let rose = memory_figure(&mut c, "used_memory_peak").saturating_sub(before);
        out.push(format!("nothing copied: {}", rose < 1536 * 1024));
        out
    };
    same_memory_facts_on_both(facts);
}

/// XPENDING and XAUTOCLAIM with a COUNT read only as far into a long pending list as
/// the count (and XAUTOCLAIM's attempts) take them, and SORT ... BY nosort LIMIT only
/// its window, as the used_memory peak shows: before, each listed the whole pending
/// list or copied the whole list first.
#[test]
fn pending_lists_and_unsorted_sorts_read_only_what_they_answer() {
    const ENTRIES: usize = 150_000;
    let facts = |addr| -> Vec<String> {
        let mut c = Conn::connect(addr);
        for start in (0..ENTRIES).step_by(1000) {
            for i in start..start + 1000 {
                c.send(&["XADD", "s", &format!("{}-1", i + 1), "f", "v"]);
            }
            for _ in start..start + 1000 {
                c.read();
            }
            let elements: Vec<String> = (start..start + 1000).map(|i| format!("e{i}")).collect();
            let mut rpush = vec!["RPUSH".to_string(), "l".into()];
            rpush.extend(elements);
            c.cmd(&rpush);
            // Pending in small reads: one large reply would set the peak above what
            // the commands measured below copied.
            if start == 0 {
                c.cmd(&["XGROUP", "CREATE", "s", "g", "0"]);
            }
            c.cmd(&[
                "XREADGROUP",
                "GROUP",
                "g",
                "c1",
                "COUNT",
                "1000",
                "STREAMS",
                "s",
                ">",
            ]);
        }
        let before = memory_figure(&mut c, "used_memory_peak");
        let mut out = Vec::new();
        // Ids and owners (idle times differ from run to run).
        let rows = |frame: Frame| -> String {
            let rows: Vec<String> = items(frame)
                .into_iter()
                .map(|row| {
                    items(row)[..2]
                        .iter()
                        .map(text)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            rows.join(", ")
        };
        out.push(rows(c.cmd(&["XPENDING", "s", "g", "-", "+", "3"])));
        out.push(rows(c.cmd(&["XPENDING", "s", "g", "-", "+", "3", "c1"])));
        let claimed = items(c.cmd(&[
            "XAUTOCLAIM",
            "s",
            "g",
            "c2",
            "0",
            "0",
            "COUNT",
            "3",
            "JUSTID",
        ]));
        out.push(format!(
            "{:?}",
            claimed.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>()
        ));
        let sorted = items(c.cmd(&["SORT", "l", "BY", "nosort", "LIMIT", "5", "3"]));
        out.push(sorted.iter().map(text).collect::<Vec<_>>().join(" "));
        let sorted = items(c.cmd(&["SORT", "l", "BY", "nosort", "LIMIT", "0", "2", "DESC"]));
        out.push(sorted.iter().map(text).collect::<Vec<_>>().join(" "));
        let rose = memory_figure(&mut c, "used_memory_peak").saturating_sub(before);
        out.push(format!("nothing listed whole: {}", rose < 1024 * 1024));
        out
    };
    same_memory_facts_on_both(facts);
}

/// INFO stats counts as redis-server does: hits and misses of read commands only (a key
/// past its TTL is a miss), bytes in and out, commands; rates sampled while loaded;
/// CONFIG RESETSTAT clears the totals.
#[test]
fn info_stats_count_lookups_and_traffic_like_redis() {
    let ours = Redline::start();
    let theirs = RedisServer::start().unwrap();
    let mut figures = Vec::new();
    for addr in [ours.addr, theirs.addr()] {
        let mut c = Conn::connect(addr);
        c.cmd(&["CONFIG", "RESETSTAT"]);
        let script: &[&[&str]] = &[
            &["SET", "a", "1"],
            &["SET", "gone", "1", "PX", "1"],
            &["GET", "a"],
            &["GET", "b"],
            &["EXISTS", "a", "b"],
            &["MGET", "a", "b", "c"],
            &["INCR", "a"],
            &["TYPE", "a"],
            &["TTL", "b"],
            &["HGET", "h", "f"],
            // Counted as they run, as Redis's `call()`: a script's and a
            // transaction's commands each, a refused, queued or unrun one not.
            &["EVAL", "return redis.pcall('incr', 'a')", "0"],
            &["NOSUCHCOMMAND"],
            &["GET"],
            &["WATCH", "a"],
            &["SET", "a", "2"],
            &["MULTI"],
            &["GET", "a"],
            &["EXEC"],
            &["MULTI"],
            &["SET"],
            &["EXEC"],
            // SPOP of the whole set answers it as SUNION of the key, a read.
            &["SADD", "ints", "3", "1", "2"],
            &["SPOP", "ints", "5"],
            // OBJECT looks the key up once.
            &["OBJECT", "FREQ", "a"],
            &["OBJECT", "IDLETIME", "b"],
            &["DEL", "a"],
        ];
        for command in script {
            c.cmd(command);
        }
        std::thread::sleep(Duration::from_millis(5));
        c.cmd(&["GET", "gone"]);
        // Read on another connection: the first one's counts are in by then.
        let mut other = Conn::connect(addr);
        let fields = [
            "keyspace_hits",
            "keyspace_misses",
            "total_commands_processed",
        ];
        let values: Vec<String> = fields
            .iter()
            .map(|f| info_field(&mut other, "stats", f))
            .collect();
        let input: u64 = info_field(&mut other, "stats", "total_net_input_bytes")
            .parse()
            .unwrap();
        let output: u64 = info_field(&mut other, "stats", "total_net_output_bytes")
            .parse()
            .unwrap();
        assert!(input > 300 && output > 50, "{input} {output}");
        // A load, then a rate within the next second.
        for i in 0..2000 {
            c.send(&["SET", &format!("k{i}"), "v"]);
        }
        for _ in 0..2000 {
            c.read();
        }
        let mut rate = 0;
        for _ in 0..40 {
            rate = info_field(&mut other, "stats", "instantaneous_ops_per_sec")
                .parse()
                .unwrap();
            if rate > 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(rate > 0, "{addr}: no rate after a load");
        other.cmd(&["CONFIG", "RESETSTAT"]);
        assert_eq!(info_field(&mut other, "stats", "keyspace_hits"), "0");
        // Commands not called since are not listed (RESETSTAT itself is).
        let mut listed: Vec<String> = text(&other.cmd(&["INFO", "commandstats"]))
            .lines()
            .filter_map(|l| l.strip_prefix("cmdstat_"))
            .map(|l| l.split(':').next().unwrap_or_default().to_string())
            .collect();
        // Redis lists them in no particular order.
        listed.sort();
        let mut values = values;
        values.push(listed.join(","));
        figures.push(values);
    }
    assert_eq!(figures[0], figures[1], "redline, redis");
}

/// DEBUG SLEEP stops the whole server, as Redis's: a PING another client sends
/// meanwhile is answered once the sleep is over, with the sleeper's own reply, not a
/// second before it.
#[test]
fn debug_sleep_stops_the_whole_server_like_redis() {
    let redis = RedisServer::builder()
        .args(["--enable-debug-command", "yes"])
        .start()
        .unwrap();
    let ours = Redline::start();
    for addr in [redis.addr(), ours.addr] {
        let mut sleeper = Conn::connect(addr);
        let mut other = Conn::connect(addr);
        assert_eq!(text(&other.cmd(&["PING"])), "PONG");
        sleeper.send(&["DEBUG", "SLEEP", "1"]);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(text(&other.cmd(&["PING"])), "PONG");
        assert!(
            sleeper.drain_until_quiet(Duration::from_millis(400)) > 0,
            "{addr}: PING answered while DEBUG SLEEP ran"
        );
    }
}

/// The process title, as `ps` shows it: redis-server's default template (the program,
/// the first bind address and port), a template set with CONFIG SET and its variables,
/// a template Redis refuses, and `set-proc-title` fixed at start. Both servers run the
/// same steps.
#[test]
fn process_title_follows_the_template_like_redis() {
    /// The title: the command line up to its first NUL (a title is one string).
    fn title(pid: u32) -> String {
        let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        let end = line.iter().position(|&b| b == 0).unwrap_or(line.len());
        String::from_utf8_lossy(&line[..end]).into_owned()
    }
    fn steps(port: u16, pid: u32) -> Vec<String> {
        let mut c = Conn::connect(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
        // The program's path differs between the two servers: only its name is compared.
        let normalise = |title: String| {
            let mut words: Vec<String> = title.split(' ').map(str::to_string).collect();
            for word in &mut words {
                if word.ends_with("redis-server") || word.ends_with("redline-server") {
                    *word = "<program>".into();
                }
            }
            words.join(" ").replace(&port.to_string(), "<port>")
        };
        let mut seen = vec![normalise(title(pid))];
        let template =
            "TEST {title} {listen-addr} {port} {tls-port} [{unixsocket}] {{x} {server-mode}";
        seen.push(text(&c.cmd(&[
            "CONFIG",
            "SET",
            "proc-title-template",
            template,
        ])));
        seen.push(normalise(title(pid)));
        for bad in ["{invalid-var}", "{title", "", "{unixsocket}"] {
            seen.push(text(&c.cmd(&["CONFIG", "SET", "proc-title-template", bad])));
        }
        seen.push(text(
            &items(c.cmd(&["CONFIG", "GET", "proc-title-template"]))[1],
        ));
        seen.push(text(&c.cmd(&["CONFIG", "SET", "set-proc-title", "no"])));
        seen.push(normalise(title(pid)));
        seen
    }
    let redis = RedisServer::start().unwrap();
    let ours = redline_testkit::RedlineServer::start().unwrap();
    let theirs = steps(redis.port(), redis.pid().unwrap());
    let mine = steps(ours.port(), ours.pid().unwrap());
    assert_eq!(mine, theirs);
    assert_eq!(mine[0], "<program> 127.0.0.1:<port>");
    assert_eq!(mine[2], "TEST <program> 127.0.0.1:<port> <port> 0 [] {x}");
}

/// Parameters of several arguments given as one on the command line (`--replicaof
/// "host port"`, `--client-output-buffer-limit "normal 1mb 2mb 60"`) are split as
/// redis-server splits them.
#[test]
fn multi_argument_parameters_given_as_one_match_redis() {
    let args = [
        "--replicaof",
        "127.0.0.1 1",
        "--client-output-buffer-limit",
        "pubsub 1mb 2mb 60",
        "--save",
        "100 10",
    ];
    let run = |port: u16| {
        let mut c = Conn::connect(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
        ["replicaof", "client-output-buffer-limit", "save"]
            .iter()
            .map(|name| format!("{:?}", c.cmd(&["CONFIG", "GET", name])))
            .collect::<Vec<_>>()
    };
    let redis = RedisServer::builder().args(args).start().unwrap();
    let ours = redline_testkit::RedlineServer::builder()
        .args(args)
        .start()
        .unwrap();
    let theirs = run(redis.port());
    assert!(theirs[0].contains("127.0.0.1 1"), "{theirs:?}");
    assert_eq!(run(ours.port()), theirs);
}

/// A failed BGSAVE with save points configured stops writes (MISCONF, PING included)
/// and not reads, inside scripts too, until a BGSAVE succeeds, as redis-server does
/// with `stop-writes-on-bgsave-error yes`. The save fails because its directory is gone.
#[test]
fn a_failed_bgsave_stops_writes_like_redis() {
    fn steps(port: u16, dir: &std::path::Path) -> Vec<String> {
        let mut c = Conn::connect(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
        let wait_saved = |c: &mut Conn| {
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while info_field(c, "persistence", "rdb_bgsave_in_progress") != "0" {
                assert!(std::time::Instant::now() < deadline, "BGSAVE never ended");
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        let mut seen = Vec::new();
        std::fs::create_dir_all(dir).unwrap();
        seen.push(text(&c.cmd(&[
            "CONFIG",
            "SET",
            "dir",
            &dir.display().to_string(),
        ])));
        seen.push(text(&c.cmd(&["CONFIG", "SET", "save", "3600 1"])));
        seen.push(text(&c.cmd(&["SET", "x", "1"])));
        std::fs::remove_dir_all(dir).unwrap();
        c.cmd(&["BGSAVE"]);
        wait_saved(&mut c);
        seen.push(info_field(&mut c, "persistence", "rdb_last_bgsave_status"));
        for args in [
            &["SET", "x", "2"][..],
            &["GET", "x"],
            &["PING"],
            &["EVAL", "return redis.call('set','x',3)", "0"],
            &["EVAL", "return redis.call('get','x')", "0"],
            &["EVAL", "#!lua\nreturn redis.call('set','x',4)", "0"],
            &[
                "EVAL",
                "#!lua flags=no-writes\nreturn redis.call('get','x')",
                "0",
            ],
        ] {
            // Only the error's code and first words: the script's location differs.
            let reply = text(&c.cmd(args));
            seen.push(reply.split(' ').take(4).collect::<Vec<_>>().join(" "));
        }
        // The directory again (the server's working directory was the removed one).
        std::fs::create_dir_all(dir).unwrap();
        c.cmd(&["CONFIG", "SET", "dir", &dir.display().to_string()]);
        c.cmd(&["BGSAVE"]);
        wait_saved(&mut c);
        seen.push(info_field(&mut c, "persistence", "rdb_last_bgsave_status"));
        seen.push(text(&c.cmd(&["SET", "x", "5"])));
        seen
    }
    let args = ["--enable-protected-configs", "yes"];
    let base = std::env::temp_dir().join(format!("rl-misconf-{}", std::process::id()));
    let redis = RedisServer::builder().args(args).start().unwrap();
    let ours = redline_testkit::RedlineServer::builder()
        .args(args)
        .start()
        .unwrap();
    let theirs = steps(redis.port(), &base.join("redis"));
    let mine = steps(ours.port(), &base.join("redline"));
    let _ = std::fs::remove_dir_all(&base);
    assert_eq!(theirs[3], "err", "{theirs:?}");
    assert!(theirs[4].starts_with("MISCONF"), "{theirs:?}");
    assert_eq!(theirs[11..], ["ok", "OK"], "{theirs:?}");
    assert_eq!(mine, theirs);
}

/// INFO's field names, section by section, in order, without the per-command,
/// per-error, per-database and per-percentile lines (which depend on what ran).
fn info_fields(c: &mut Conn) -> Vec<String> {
    text(&c.cmd(&["INFO", "everything"]))
        .lines()
        .filter_map(|line| {
            let name = line.split(':').next().unwrap_or_default();
            let varying = ["cmdstat_", "errorstat_", "latency_percentiles_usec_", "db"]
                .iter()
                .any(|prefix| name.starts_with(prefix) && line.contains(':'));
            (!name.is_empty() && !varying).then(|| name.to_string())
        })
        .collect()
}

/// Monitoring tools read INFO by name: every field redis-server 7.0 prints, in its
/// section and order, and only redline's own two besides.
#[test]
fn info_prints_the_fields_redis_prints() {
    let redis = RedisServer::start().unwrap();
    let redline = Redline::start();
    let want = info_fields(&mut Conn::connect(redis.addr()));
    let got: Vec<String> = info_fields(&mut Conn::connect(redline.addr))
        .into_iter()
        .filter(|name| name != "redline_version" && name != "redline_worker_threads")
        .collect();
    assert_eq!(got, want);
}

/// `rename-command` in the configuration: the command answers to its new name only, in
/// requests, transactions, scripts and COMMAND INFO; an empty name removes it; CONFIG
/// SET cannot change it. Every reply as redis-server gives it.
#[test]
fn renamed_commands_answer_as_in_redis() {
    let args = [
        "--rename-command",
        "flushdb",
        "badger",
        "--rename-command",
        "append",
        "",
        "--rename-command",
        "get",
        "fetch",
        "--rename-command",
        "FETCH",
        "grab",
    ];
    let redis = RedisServer::builder()
        .args(args)
        .arg("--enable-debug-command", "yes")
        .start()
        .unwrap();
    let redline = Redline::start_with(&args);
    let steps: &[&[&str]] = &[
        &["SET", "k", "v"],
        &["FLUSHDB"],
        &["DBSIZE"],
        &["BADGER"],
        &["DBSIZE"],
        &["SET", "k", "v"],
        &["GET", "k"],
        &["FETCH", "k"],
        &["grab", "k"],
        &["APPEND", "k", "x"],
        &["MULTI"],
        &["GET", "k"],
        &["GRAB", "k"],
        &["EXEC"],
        &["EVAL", "return redis.pcall('get', KEYS[1])", "1", "k"],
        &["EVAL", "return redis.call('grab', KEYS[1])", "1", "k"],
        &["COMMAND", "INFO", "get", "flushdb"],
        &["CONFIG", "SET", "rename-command", "set x"],
        &["CONFIG", "GET", "rename-command"],
    ];
    let mut want = Conn::connect(redis.addr());
    let mut got = Conn::connect(redline.addr);
    for step in steps {
        let (w, g) = (want.cmd(step), got.cmd(step));
        // COMMAND INFO's bodies are compared elsewhere; here, which ones are nil.
        let shape = |f: &Frame| match (step[0], f) {
            ("COMMAND", Frame::Array(items)) => items
                .iter()
                .map(|i| matches!(i, Frame::Null | Frame::NullArray).to_string())
                .collect::<Vec<_>>()
                .join(","),
            _ => format!("{f:?}"),
        };
        assert_eq!(shape(&g), shape(&w), "{step:?}");
    }
}

/// The (field, value) pairs of a map reply: a RESP3 map, or RESP2's flat array.
fn map_pairs(frame: &Frame) -> Vec<(String, &Frame)> {
    match frame {
        Frame::Map(pairs) => pairs.iter().map(|(k, v)| (text(k), v)).collect(),
        Frame::Array(flat) => flat.chunks(2).map(|p| (text(&p[0]), &p[1])).collect(),
        other => panic!("not a map: {other:?}"),
    }
}

/// COMMAND DOCS's map of commands as text; Redis lists commands and subcommands in
/// hash-table order, so those are sorted, and nothing else is.
fn docs_by_name(frame: &Frame) -> String {
    let mut entries: Vec<String> = map_pairs(frame)
        .into_iter()
        .map(|(name, docs)| format!("{name}: {}", docs_text(docs)))
        .collect();
    entries.sort();
    entries.join("\n")
}

fn docs_text(docs: &Frame) -> String {
    let fields: Vec<String> = map_pairs(docs)
        .into_iter()
        .map(|(field, value)| match field.as_str() {
            "subcommands" => format!("subcommands {{{}}}", docs_by_name(value)),
            "arguments" => format!("arguments [{}]", args_text(value)),
            _ => format!("{field} {}", common::show(value)),
        })
        .collect();
    fields.join("; ")
}

fn args_text(args: &Frame) -> String {
    items(args.clone())
        .iter()
        .map(|arg| {
            let fields: Vec<String> = map_pairs(arg)
                .into_iter()
                .map(|(field, value)| match field.as_str() {
                    "arguments" => format!("arguments [{}]", args_text(value)),
                    _ => format!("{field} {}", common::show(value)),
                })
                .collect();
            format!("{{{}}}", fields.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// COMMAND DOCS is Redis's, field for field, in RESP2 and RESP3: summaries, doc flags,
/// deprecation, history, the argument trees and subcommands (redis-cli 7.2 builds its
/// hints from them; clients such as Jedis read the history), for every command, a
/// subcommand by its full name, and the whole table.
#[test]
fn command_docs_match_redis() {
    let redis = RedisServer::start().unwrap();
    let ours = Redline::start();
    for proto in ["2", "3"] {
        let mut theirs = Conn::connect(redis.addr());
        let mut mine = Conn::connect(ours.addr);
        theirs.cmd(&["HELLO", proto]);
        mine.cmd(&["HELLO", proto]);
        let mut names: Vec<String> = items(theirs.cmd(&["COMMAND", "LIST"]))
            .iter()
            .map(text)
            .collect();
        names.sort();
        names.extend(["config|get", "CLIENT|Kill", "nosuch", "get|x"].map(String::from));
        for name in &names {
            let expected = docs_by_name(&theirs.cmd(&["COMMAND", "DOCS", name]));
            let got = docs_by_name(&mine.cmd(&["COMMAND", "DOCS", name]));
            assert_eq!(got, expected, "COMMAND DOCS {name}, RESP{proto}");
        }
        let expected = docs_by_name(&theirs.cmd(&["COMMAND", "DOCS"]));
        let got = docs_by_name(&mine.cmd(&["COMMAND", "DOCS"]));
        assert!(got == expected, "COMMAND DOCS, RESP{proto}");
        let several = ["COMMAND", "DOCS", "set", "nosuch", "get"];
        assert_eq!(
            docs_by_name(&mine.cmd(&several)),
            docs_by_name(&theirs.cmd(&several))
        );
    }
}

/// A pipelined transaction is read in chunks of Redis's size on both servers
/// (INFO `total_reads_processed`): queued commands keep their bytes, and a buffer they
/// used up to its end once made every later read a 64-byte one.
#[test]
fn pipelined_transactions_are_read_in_large_chunks_like_redis() {
    let redis = RedisServer::start().unwrap();
    let ours = Redline::start();
    const COMMANDS: usize = 3_000;
    let mut pipeline = b"*1\r\n$5\r\nMULTI\r\n".to_vec();
    for _ in 0..COMMANDS {
        pipeline.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$4\r\ntest\r\n$3\r\n123\r\n");
    }
    pipeline.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
    for addr in [redis.addr(), ours.addr] {
        let mut info = Conn::connect(addr);
        let reads = |c: &mut Conn| common::info(c, "total_reads_processed");
        let before = reads(&mut info);
        let mut c = Conn::connect(addr);
        c.send_raw(&pipeline);
        assert_eq!(c.read(), Some(Frame::Simple("OK".into())));
        for _ in 0..COMMANDS {
            assert_eq!(c.read(), Some(Frame::Simple("QUEUED".into())));
        }
        let Some(Frame::Array(replies)) = c.read() else {
            panic!("EXEC on {addr}");
        };
        assert_eq!(replies.len(), COMMANDS);
        // About 100 KB: 7 reads of 16 KB, more when the bytes arrive in pieces; 1,500
        // of 64 bytes.
        let during = reads(&mut info) - before;
        assert!((1..200).contains(&during), "{during} reads on {addr}");
    }
}

/// INFO's `client_recent_max_input_buffer` and `client_recent_max_output_buffer`: a
/// client holding half of a 256 KB argument, and one whose 16 MB of replies are not
/// read (more than the sockets hold), show within a few seconds (the client cron looks
/// at each client about once a second), as on redis-server. Returns whether each field
/// passed 100 KB, once both did or after 5 s.
fn recent_max_buffers(addr: std::net::SocketAddr) -> (bool, bool) {
    let mut admin = Conn::connect(addr);
    admin.cmd(&["SET", "big", &"x".repeat(64 * 1024)]);
    let mut sender = Conn::connect(addr);
    sender.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$262144\r\n");
    sender.send_raw(&vec![b'y'; 128 * 1024]);
    let mut reader = Conn::connect(addr);
    // Not read: the replies wait in the socket, then in the server's output buffer.
    let gets: Vec<u8> = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n".repeat(256);
    reader.send_raw(&gets);
    let big = |field: &str, admin: &mut Conn| {
        info_field(admin, "clients", field)
            .parse::<usize>()
            .is_ok_and(|n| n > 100_000)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let seen = (
            big("client_recent_max_input_buffer", &mut admin),
            big("client_recent_max_output_buffer", &mut admin),
        );
        if seen == (true, true) || std::time::Instant::now() > deadline {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn recent_max_buffers_show_large_clients_like_redis() {
    let redis = RedisServer::start().unwrap();
    let redline = Redline::start();
    assert_eq!(
        recent_max_buffers(redis.addr()),
        (true, true),
        "redis-server"
    );
    assert_eq!(
        recent_max_buffers(redline.addr),
        (true, true),
        "redline-server"
    );
}

/// INFO's `clients_in_timeout_table`: clients blocked with a timeout (BLPOP, XREAD
/// BLOCK, WAIT), not those blocked for good; as on redis-server.
fn clients_in_timeout_table(addr: std::net::SocketAddr) -> Vec<String> {
    let mut admin = Conn::connect(addr);
    let mut seen = vec![info_field(
        &mut admin,
        "clients",
        "clients_in_timeout_table",
    )];
    let blockers: Vec<(Conn, &[&str])> = vec![
        (Conn::connect(addr), &["BLPOP", "list", "10"]),
        (Conn::connect(addr), &["BLPOP", "list", "0"]),
        (
            Conn::connect(addr),
            &["XREAD", "BLOCK", "10000", "STREAMS", "s", "$"],
        ),
        (Conn::connect(addr), &["WAIT", "1", "10000"]),
        (Conn::connect(addr), &["WAIT", "1", "0"]),
    ];
    let mut blocked = Vec::new();
    for (mut conn, args) in blockers {
        conn.send(args);
        blocked.push(conn);
    }
    // The count once `n` clients are blocked.
    let timed_with_blocked = |admin: &mut Conn, n: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while info_field(admin, "clients", "blocked_clients") != n {
            assert!(std::time::Instant::now() < deadline, "{n} clients blocked");
            std::thread::sleep(Duration::from_millis(20));
        }
        info_field(admin, "clients", "clients_in_timeout_table")
    };
    seen.push(timed_with_blocked(&mut admin, "5"));
    // Both BLPOPs served.
    admin.cmd(&["RPUSH", "list", "a", "b"]);
    seen.push(timed_with_blocked(&mut admin, "3"));
    // Killed while blocked (in XREAD and in WAIT): blocked no longer.
    admin.cmd(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
    seen.push(timed_with_blocked(&mut admin, "0"));
    seen
}

#[test]
fn clients_in_timeout_table_counts_timed_blocks_like_redis() {
    let redis = RedisServer::start().unwrap();
    let redline = Redline::start();
    let expected = clients_in_timeout_table(redis.addr());
    assert_eq!(expected, ["0", "3", "2", "0"], "redis-server");
    assert_eq!(clients_in_timeout_table(redline.addr), expected);
}

/// DEBUG HELP lists the subcommands this server has, each in redis-server's own words
/// and order (its lines are a subsequence of Redis's), and none it lacks.
#[test]
fn debug_help_is_redis_s_for_the_subcommands_here() {
    let redis = common::redis_with_debug();
    let ours = Redline::start();
    let lines = |addr| -> Vec<String> {
        items(Conn::connect(addr).cmd(&["DEBUG", "HELP"]))
            .iter()
            .map(text)
            .collect()
    };
    let theirs = lines(redis.addr());
    let mine = lines(ours.addr);
    let mut rest = theirs.iter();
    for line in &mine {
        assert!(
            rest.any(|l| l == line),
            "{line:?} is not in Redis's DEBUG HELP, or not in its order"
        );
    }
    let mut c = Conn::connect(ours.addr);
    for sub in [
        "DIGEST",
        "DIGEST-VALUE",
        "LOADAOF",
        "RELOAD",
        "PROTOCOL",
        "SET-SKIP-CHECKSUM-VALIDATION",
        "QUICKLIST-PACKED-THRESHOLD",
        "AOF-FLUSH-SLEEP",
    ] {
        assert!(
            mine.iter().any(|l| l.split(' ').next() == Some(sub)),
            "{sub} missing from DEBUG HELP"
        );
    }
    // A subcommand Redis lists and this server lacks is not offered.
    assert!(is_error(&c.cmd(&["DEBUG", "STRUCTSIZE"])));
    assert!(!mine.iter().any(|l| l.starts_with("STRUCTSIZE")));
}

/// Every subcommand COMMAND INFO lists is served (called bare, it may fail on its
/// arguments, never as unknown), and every container's HELP is redis-server's text
/// (DEBUG aside: it lists only what this server has, see above).
#[test]
fn every_listed_subcommand_is_served_and_helps_as_redis_does() {
    let redis = common::redis_with_debug();
    let ours = Redline::start();
    let mut c = Conn::connect(ours.addr);
    let mut r = Conn::connect(redis.addr());
    let mut containers = Vec::new();
    for entry in items(c.cmd(&["COMMAND", "INFO"])) {
        let fields = items(entry);
        let subcommands = fields.get(9).cloned().map(items).unwrap_or_default();
        if subcommands.is_empty() {
            continue;
        }
        containers.push(text(&fields[0]));
        for sub in subcommands {
            let name = text(&items(sub)[0]);
            let words: Vec<&str> = name.split('|').collect();
            let reply = text(&c.cmd(&words));
            assert!(
                !reply.contains("unknown command") && !reply.contains("unknown subcommand"),
                "{name}: {reply}"
            );
        }
    }
    assert!(containers.len() > 10, "{containers:?}");
    for container in containers.iter().filter(|name| *name != "debug") {
        // An array of lines, or an error (CLUSTER HELP when cluster mode is off).
        let help = |conn: &mut Conn| format!("{:?}", conn.cmd(&[container.as_str(), "HELP"]));
        assert_eq!(help(&mut c), help(&mut r), "{container} HELP");
    }
}

/// CLIENT LIST's `redir` is what CLIENT GETREDIR answers: -1 without tracking, 0
/// tracking without a redirect, the target's id with one (as Redis shows it).
#[test]
fn client_list_shows_the_tracking_redirect() {
    let server = Redline::start();
    let mut target = Conn::connect(server.addr);
    let target_id = text(&target.cmd(&["CLIENT", "ID"]));
    let mut c = Conn::connect(server.addr);
    let redir = |c: &mut Conn| -> Option<String> {
        text(&c.cmd(&["CLIENT", "INFO"]))
            .split(' ')
            .find_map(|f| f.strip_prefix("redir="))
            .map(|v| v.trim().to_string())
    };
    assert_eq!(redir(&mut c).as_deref(), Some("-1"));
    c.cmd(&["CLIENT", "TRACKING", "ON", "REDIRECT", &target_id]);
    assert_eq!(redir(&mut c), Some(target_id));
    c.cmd(&["CLIENT", "TRACKING", "OFF"]);
    c.cmd(&["HELLO", "3"]);
    c.cmd(&["CLIENT", "TRACKING", "ON"]);
    assert_eq!(redir(&mut c).as_deref(), Some("0"));
}

/// CLIENT LIST's `fd` is each connection's socket descriptor, as in Redis: past the
/// standard streams, and a different one for each open connection.
#[test]
fn client_list_shows_each_connection_s_descriptor() {
    let server = Redline::start();
    let fd_of = |c: &mut Conn| -> i64 {
        text(&c.cmd(&["CLIENT", "INFO"]))
            .split(' ')
            .find_map(|f| f.strip_prefix("fd="))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(-1)
    };
    let mut a = Conn::connect(server.addr);
    let mut b = Conn::connect(server.addr);
    let (fa, fb) = (fd_of(&mut a), fd_of(&mut b));
    assert!(fa > 2 && fb > 2 && fa != fb, "{fa} {fb}");
}

/// Errors and ACL DRYRUN's verdicts quote a client's bytes as given (not lossy UTF-8),
/// up to a NUL as Redis's `%s` does; SLOWLOG GET's count has its own message for
/// anything below -1, an integer or not; CLIENT UNBLOCK checks its reason first. All
/// as redis-server answers.
#[test]
fn replies_quote_client_bytes_as_redis_does() {
    let redis = RedisServer::start().expect("redis-server");
    let ours = Redline::start();
    let odd: &[u8] = b"\xff\xfe";
    let cases: &[&[&[u8]]] = &[
        &[b"ACL", b"CAT", odd],
        &[b"ACL", b"DRYRUN", b"default", odd],
        &[b"ACL", b"DRYRUN", odd, b"get"],
        &[
            b"ACL", b"SETUSER", b"lim", b"on", b"nopass", b"+get", b"~a*",
        ],
        &[b"ACL", b"DRYRUN", b"lim", b"get", b"b\xff\x00c"],
        &[b"FUNCTION", b"LIST", odd],
        &[b"FUNCTION", b"LOAD", odd, b"x"],
        &[b"CLIENT", b"LIST", b"TYPE", odd],
        &[b"SLOWLOG", b"GET", odd],
        &[b"SLOWLOG", b"GET", b"-2"],
        &[b"LATENCY", b"GRAPH", odd],
        // CLIENT UNBLOCK reads its reason before its id, and takes nothing more.
        &[b"CLIENT", b"UNBLOCK", b"s", odd],
        &[b"CLIENT", b"UNBLOCK", b"1", b"error", b"x"],
        &[b"SLOWLOG", b"GET", b"1", b"x"],
        // CLIENT KILL checks each filter as it reads it.
        &[b"CLIENT", b"KILL", b"USER", odd, b"ID"],
        &[
            b"CLIENT", b"KILL", b"ID", b"1", b"TYPE", odd, b"BOGUS", b"1",
        ],
        &[b"CLIENT", b"KILL", b"USER", b"nosuch", b"MAXAGE", b"1"],
        &[b"CLIENT", b"KILL", b"ID", b"0", b"USER"],
    ];
    let replies = |addr| {
        let mut c = Conn::connect(addr);
        cases.iter().map(|args| c.cmd(args)).collect::<Vec<_>>()
    };
    assert_eq!(replies(ours.addr), replies(redis.addr()));
}

/// DEBUG OBJECT describes a value as Redis does: its encoding, its size as saved
/// (`serializedlength`, compression included), the idle time read from its access
/// field, a shared integer's reference count, and a list's quicklist nodes. Addresses
/// and the clock's reading are left out of the comparison.
#[test]
fn debug_object_describes_values_like_redis() {
    let redis = RedisServer::builder()
        .args(["--enable-debug-command", "yes"])
        .start()
        .expect("redis-server");
    let ours = Redline::start();
    let long_list: Vec<String> = (0..3000).map(|i| format!("element-{i}")).collect();
    let mut setup: Vec<Vec<String>> = vec![
        vec!["SET".into(), "s".into(), "hello".into()],
        vec!["SET".into(), "n".into(), "12345".into()],
        vec!["SET".into(), "shared".into(), "5".into()],
        vec!["SET".into(), "compressible".into(), "a".repeat(1000)],
        vec![
            "RPUSH".into(),
            "short".into(),
            "a".into(),
            "1".into(),
            "12345678901".into(),
        ],
        vec!["HSET".into(), "h".into(), "f".into(), "v".into()],
        vec![
            "HSET".into(),
            "big_hash".into(),
            "f".into(),
            "x".repeat(100),
        ],
        vec!["SADD".into(), "ints".into(), "1".into(), "2".into()],
        vec!["SADD".into(), "words".into(), "a".into(), "b".into()],
        vec![
            "ZADD".into(),
            "z".into(),
            "1".into(),
            "a".into(),
            "2.5".into(),
            "b".into(),
        ],
        vec![
            "XADD".into(),
            "x".into(),
            "1-1".into(),
            "f".into(),
            "v".into(),
        ],
        vec!["PFADD".into(), "hll".into(), "a".into(), "b".into()],
    ];
    let mut push = vec!["RPUSH".to_string(), "long".to_string()];
    push.extend(long_list);
    setup.push(push);
    let keys = [
        "s",
        "n",
        "shared",
        "compressible",
        "short",
        "h",
        "big_hash",
        "ints",
        "words",
        "z",
        "x",
        "hll",
        "long",
    ];
    let describe = |addr| {
        let mut c = Conn::connect(addr);
        for args in &setup {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            c.cmd(&args);
        }
        keys.iter()
            .map(|key| {
                let line = text(&c.cmd(&["DEBUG", "OBJECT", key]));
                line.split(' ')
                    .filter(|f| !["Value", "at:", "lru:"].iter().any(|p| f.starts_with(p)))
                    // Whole seconds: a second may turn between the writes and the look.
                    .map(|f| match f {
                        "lru_seconds_idle:0" | "lru_seconds_idle:1" => "lru_seconds_idle:0 or 1",
                        f => f,
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(describe(ours.addr), describe(redis.addr()));
}

/// INFO keyspace's `avg_ttl` is the active expiry's estimate, as Redis's: near the
/// keys' remaining TTL once a cycle has sampled them, 0 once no key has one.
#[test]
fn keyspace_avg_ttl_is_estimated_like_redis() {
    let ours = Redline::start();
    let theirs = RedisServer::start().unwrap();
    for addr in [ours.addr, theirs.addr()] {
        let mut c = Conn::connect(addr);
        for i in 0..100 {
            c.cmd(&["SET", &format!("k{i}"), "v", "EX", &(1000 + i).to_string()]);
        }
        let avg_ttl = |c: &mut Conn| -> u64 {
            let line = info_field(c, "keyspace", "db0");
            line.split(',')
                .find_map(|f| f.strip_prefix("avg_ttl="))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        common::wait_until("an avg_ttl", || avg_ttl(&mut Conn::connect(addr)) > 0);
        let avg = avg_ttl(&mut c);
        assert!(
            (950_000..=1_100_000).contains(&avg),
            "{addr}: avg_ttl {avg}"
        );
        for i in 0..100 {
            c.cmd(&["PERSIST", &format!("k{i}")]);
        }
        common::wait_until("avg_ttl back to 0", || {
            avg_ttl(&mut Conn::connect(addr)) == 0
        });
    }
}

/// CLIENT LIST's `cmd=` is the last command looked up, as Redis's `lastcmd`: NULL after
/// an unknown command or subcommand, the command after a wrong arity, the script or
/// EXEC rather than what ran inside them, the queued command inside MULTI.
#[test]
fn client_list_names_the_last_command_like_redis() {
    let ours = Redline::start();
    let theirs = RedisServer::start().unwrap();
    let cases: &[&[&[&str]]] = &[
        &[&["GET", "x"], &["NOSUCH"]],
        &[&["GET", "x"], &["CLIENT", "NOSUCH"]],
        &[&["GET"]],
        &[&["EVAL", "return redis.call('get', 'x')", "0"]],
        &[&["MULTI"], &["GET", "x"], &["EXEC"]],
        &[&["MULTI"], &["GET", "x"]],
    ];
    let mut seen = Vec::new();
    for addr in [ours.addr, theirs.addr()] {
        let mut names = Vec::new();
        for case in cases {
            let mut c = Conn::connect(addr);
            let id = text(&c.cmd(&["CLIENT", "ID"]));
            for command in *case {
                c.cmd(command);
            }
            let line = text(&Conn::connect(addr).cmd(&["CLIENT", "LIST", "ID", &id]));
            names.push(
                line.split(' ')
                    .find(|f| f.starts_with("cmd="))
                    .unwrap_or_default()
                    .to_string(),
            );
        }
        seen.push(names);
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[1][0], "cmd=NULL");
}
