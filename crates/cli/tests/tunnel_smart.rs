//! `redline tunnel --cluster` (smart mode) in front of a TLS 6-node cluster (testkit): a
//! cluster-unaware redis-benchmark with all keys readable afterwards, multi-key commands
//! across slots, large pipelined values, a failover under load, and the commands the
//! tunnel answers or runs on dedicated connections.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod tunnel_support;

use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use redline_resp::{encode, slot::key_slot, Frame};
use redline_testkit::{RedisCluster, TlsCerts};
use tunnel_support::{redis_cli, roundtrip_values, stdout, tls_flags, Raw, Tunnel};

fn shared() -> MutexGuard<'static, RedisCluster> {
    static CLUSTER: OnceLock<Mutex<RedisCluster>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| {
            let certs = TlsCerts::generate().unwrap();
            Mutex::new(RedisCluster::builder().tls(&certs).start().unwrap())
        })
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn smart_tunnel(cluster: &RedisCluster, extra: &[&str]) -> Tunnel {
    let certs = cluster.tls().unwrap();
    let mut args = tls_flags(cluster.addr(0).port(), &certs.ca_cert_path());
    args.extend(["--cluster", "--log", "warn"].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    Tunnel::start(&args)
}

fn benchmark(tunnel: &Tunnel, extra: &[&str]) -> Command {
    let mut cmd = Command::new("redis-benchmark");
    cmd.args(["-h", "127.0.0.1", "-p", &tunnel.addr().port().to_string()])
        .args(["-t", "set,get", "-P", "16", "-c", "50"])
        .args(extra);
    cmd
}

/// Every key through the tunnel (KEYS fans out), checked readable with MGET in chunks
/// (split by slot inside the tunnel). Returns how many keys there are.
fn all_keys_readable(conn: &mut Raw, pattern: &str) -> usize {
    let Frame::Array(keys) = conn.cmd(&["KEYS", pattern]) else {
        panic!("KEYS")
    };
    for chunk in keys.chunks(500) {
        let mut args: Vec<Bytes> = vec![Bytes::from_static(b"MGET")];
        for key in chunk {
            let Frame::Bulk(k) = key else {
                panic!("{key:?}")
            };
            args.push(k.clone());
        }
        let Frame::Array(values) = conn.cmd(&args) else {
            panic!("MGET")
        };
        assert_eq!(values.len(), chunk.len());
        for (key, value) in chunk.iter().zip(&values) {
            assert!(
                matches!(value, Frame::Bulk(_)),
                "{key:?} unreadable: {value:?}"
            );
        }
    }
    keys.len()
}

fn dbsize_direct(cluster: &mut RedisCluster) -> i64 {
    cluster
        .masters()
        .unwrap()
        .into_iter()
        .map(|m| cluster.cmd(m, &["DBSIZE"]).unwrap().integer().unwrap())
        .sum()
}

#[test]
fn tunnel_smart_redis_benchmark_set_get_all_keys_readable() {
    let mut cluster = shared();
    // Several workers: client and connection tasks run on different threads.
    let tunnel = smart_tunnel(&cluster, &["--threads", "3"]);
    let out = benchmark(&tunnel, &["-n", "20000", "-r", "5000", "-q"])
        .output()
        .expect("redis-benchmark (make deps)");
    let text = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    // redis-benchmark exits 1 at the first error reply.
    assert!(out.status.success(), "{text}");
    assert!(text.contains("SET:") && text.contains("GET:"), "{text}");
    assert!(!text.to_lowercase().contains("error"), "{text}");

    let mut conn = Raw::connect(tunnel.addr());
    let keys = all_keys_readable(&mut conn, "key:*");
    assert!(keys > 1000, "{keys} keys");
    // DBSIZE sums the masters (other tests write to this cluster too: at least).
    let Frame::Integer(total) = conn.cmd(&["DBSIZE"]) else {
        panic!("DBSIZE")
    };
    assert!(total >= keys as i64, "{total} < {keys}");
    // The keys really are spread over the cluster.
    for m in cluster.masters().unwrap() {
        assert!(cluster.cmd(m, &["DBSIZE"]).unwrap().integer().unwrap() > 0);
    }
}

#[test]
fn tunnel_smart_multi_key_commands_across_slots() {
    let cluster = shared();
    let tunnel = smart_tunnel(&cluster, &[]);
    drop(cluster);
    let mut conn = Raw::connect(tunnel.addr());
    let keys: Vec<String> = (0..64).map(|i| format!("mk:{i}")).collect();
    let slots: std::collections::HashSet<u16> =
        keys.iter().map(|k| key_slot(k.as_bytes())).collect();
    assert!(slots.len() > 32);

    let mut mset: Vec<String> = vec!["MSET".into()];
    for (i, k) in keys.iter().enumerate() {
        mset.push(k.clone());
        mset.push(format!("value-{i}"));
    }
    assert_eq!(conn.cmd(&mset), Frame::Simple("OK".into()));
    let mut mget: Vec<String> = vec!["MGET".into()];
    mget.extend(keys.iter().cloned());
    mget.push("mk:missing".into());
    let Frame::Array(values) = conn.cmd(&mget) else {
        panic!("MGET")
    };
    for (i, v) in values[..keys.len()].iter().enumerate() {
        assert_eq!(v, &Frame::Bulk(format!("value-{i}").into()));
    }
    assert_eq!(values[keys.len()], Frame::NullBulk);
    let mut exists: Vec<String> = vec!["EXISTS".into()];
    exists.extend(keys.iter().cloned());
    assert_eq!(conn.cmd(&exists), Frame::Integer(64));
    let mut del: Vec<String> = vec!["DEL".into()];
    del.extend(keys.iter().take(10).cloned());
    assert_eq!(conn.cmd(&del), Frame::Integer(10));
    // Commands that cannot be split keep Redis's error.
    let reply = conn.cmd(&["SUNIONSTORE", "mk:0", "mk:1", "mk:2"]);
    assert!(
        matches!(&reply, Frame::Error(e) if e.starts_with(b"CROSSSLOT")),
        "{reply:?}"
    );
    // redis-cli, unaware of the cluster, sees one server.
    let out = redis_cli(tunnel.addr(), &[], &["MGET", "mk:20", "mk:40", "mk:63"]);
    assert_eq!(stdout(&out), "value-20\nvalue-40\nvalue-63\n");
}

#[test]
fn tunnel_smart_pipelined_values_1b_to_8mb_byte_exact() {
    let cluster = shared();
    let tunnel = smart_tunnel(&cluster, &[]);
    drop(cluster);
    let mut conn = Raw::connect(tunnel.addr());
    // Keys in different slots: the pipeline is split over the masters and put back in order.
    roundtrip_values(&mut conn, |size| format!("smart-value:{size}"));
    let addr = tunnel.addr();
    let other = std::thread::spawn(move || {
        roundtrip_values(&mut Raw::connect(addr), |size| {
            format!("smart-other:{size}")
        });
    });
    roundtrip_values(&mut conn, |size| format!("smart-value:{size}"));
    other.join().unwrap();
}

#[test]
fn tunnel_smart_connection_commands_blocking_transactions_watch_pubsub_scan() {
    let cluster = shared();
    let mut tunnel = smart_tunnel(&cluster, &[]);
    drop(cluster);
    let addr = tunnel.addr();
    let mut conn = Raw::connect(addr);

    // Answered by the tunnel.
    assert_eq!(conn.cmd(&["PING"]), Frame::Simple("PONG".into()));
    assert_eq!(conn.cmd(&["SELECT", "0"]), Frame::Simple("OK".into()));
    assert!(matches!(conn.cmd(&["SELECT", "1"]), Frame::Error(_)));
    assert!(matches!(conn.cmd(&["HELLO", "3"]), Frame::Error(e) if e.starts_with(b"NOPROTO")));
    assert!(matches!(conn.cmd(&["HELLO", "2"]), Frame::Array(_)));
    assert_eq!(
        conn.cmd(&["CLIENT", "SETNAME", "me"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(conn.cmd(&["CLIENT", "GETNAME"]), Frame::Bulk("me".into()));
    assert!(matches!(
        conn.cmd(&["CLUSTER", "INFO"]),
        Frame::Error(e) if e.starts_with(b"ERR This instance has cluster support disabled")
    ));

    // A blocking pop waits on its own connection, woken by another client.
    let pusher = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        Raw::connect(addr).cmd(&["LPUSH", "smart:queue", "job"])
    });
    assert_eq!(
        conn.cmd(&["BLPOP", "smart:queue", "10"]),
        Frame::Array(vec![
            Frame::Bulk("smart:queue".into()),
            Frame::Bulk("job".into())
        ])
    );
    assert_eq!(pusher.join().unwrap(), Frame::Integer(1));
    // Commands pipelined behind it keep their order.
    let mut batch = BytesMut::new();
    encode::command(&mut batch, ["RPUSH", "smart:q2", "a"]);
    encode::command(&mut batch, ["BLPOP", "smart:q2", "1"]);
    encode::command(&mut batch, ["LLEN", "smart:q2"]);
    let replies = conn.pipeline(batch.to_vec(), 3);
    assert_eq!(replies[0], Frame::Integer(1));
    assert_eq!(
        replies[1],
        Frame::Array(vec![
            Frame::Bulk("smart:q2".into()),
            Frame::Bulk("a".into())
        ])
    );
    assert_eq!(replies[2], Frame::Integer(0));

    // MULTI/EXEC on one slot (hash tag), atomically on its master.
    assert_eq!(conn.cmd(&["MULTI"]), Frame::Simple("OK".into()));
    assert_eq!(
        conn.cmd(&["SET", "{tx}a", "1"]),
        Frame::Simple("QUEUED".into())
    );
    assert_eq!(conn.cmd(&["INCR", "{tx}a"]), Frame::Simple("QUEUED".into()));
    assert_eq!(
        conn.cmd(&["EXEC"]),
        Frame::Array(vec![Frame::Simple("OK".into()), Frame::Integer(2)])
    );

    // WATCH: the transaction runs on the watching connection; a change by another
    // client aborts it (nil), an untouched key lets it run.
    assert_eq!(conn.cmd(&["WATCH", "{tx}w"]), Frame::Simple("OK".into()));
    assert_eq!(
        Raw::connect(addr).cmd(&["SET", "{tx}w", "other"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(conn.cmd(&["MULTI"]), Frame::Simple("OK".into()));
    assert_eq!(
        conn.cmd(&["SET", "{tx}w", "mine"]),
        Frame::Simple("QUEUED".into())
    );
    assert_eq!(conn.cmd(&["EXEC"]), Frame::NullArray);
    assert_eq!(conn.cmd(&["GET", "{tx}w"]), Frame::Bulk("other".into()));
    assert_eq!(conn.cmd(&["WATCH", "{tx}w"]), Frame::Simple("OK".into()));
    assert_eq!(conn.cmd(&["MULTI"]), Frame::Simple("OK".into()));
    assert_eq!(
        conn.cmd(&["SET", "{tx}w", "mine"]),
        Frame::Simple("QUEUED".into())
    );
    assert_eq!(
        conn.cmd(&["EXEC"]),
        Frame::Array(vec![Frame::Simple("OK".into())])
    );
    assert_eq!(conn.cmd(&["GET", "{tx}w"]), Frame::Bulk("mine".into()));
    assert_eq!(conn.cmd(&["WATCH", "{tx}w"]), Frame::Simple("OK".into()));
    assert_eq!(conn.cmd(&["UNWATCH"]), Frame::Simple("OK".into()));

    // SCAN walks every master behind one cursor.
    let mut mset: Vec<String> = vec!["MSET".into()];
    for i in 0..200 {
        mset.push(format!("scan:{i}"));
        mset.push("x".into());
    }
    conn.cmd(&mset);
    let mut cursor = "0".to_owned();
    let mut seen = std::collections::HashSet::new();
    loop {
        let Frame::Array(items) = conn.cmd(&["SCAN", &cursor, "MATCH", "scan:*", "COUNT", "50"])
        else {
            panic!("SCAN")
        };
        let (Frame::Bulk(next), Frame::Array(keys)) = (&items[0], &items[1]) else {
            panic!("{items:?}")
        };
        for k in keys {
            if let Frame::Bulk(k) = k {
                seen.insert(k.clone());
            }
        }
        cursor = String::from_utf8(next.to_vec()).unwrap();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 200);

    // SUBSCRIBE turns the connection into a pass-through; PUBLISH from elsewhere arrives.
    let mut sub = Raw::connect(addr);
    let confirm = sub.cmd(&["SUBSCRIBE", "news"]);
    assert_eq!(
        confirm,
        Frame::Array(vec![
            Frame::Bulk("subscribe".into()),
            Frame::Bulk("news".into()),
            Frame::Integer(1)
        ])
    );
    let mut publisher = Raw::connect(addr);
    let mut delivered = false;
    for _ in 0..50 {
        if let Frame::Integer(n) = publisher.cmd(&["PUBLISH", "news", "hello"]) {
            if n >= 1 {
                delivered = true;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(delivered);
    assert_eq!(
        sub.read_frame(),
        Frame::Array(vec![
            Frame::Bulk("message".into()),
            Frame::Bulk("news".into()),
            Frame::Bulk("hello".into())
        ])
    );

    // Clean exit with clients connected.
    let status = tunnel.stop_with("TERM");
    assert!(status.success(), "{status:?}");
}

#[test]
fn tunnel_smart_failover_under_redis_benchmark_is_absorbed() {
    let certs = TlsCerts::generate().unwrap();
    let mut cluster = RedisCluster::builder().tls(&certs).start().unwrap();
    // No --retry-writes: plain SET is re-sent by default, GET by the cluster client.
    let tunnel = smart_tunnel(&cluster, &[]);
    let mut bench = benchmark(&tunnel, &["-r", "20000", "-l", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-benchmark (make deps)");
    std::thread::sleep(Duration::from_secs(2));
    assert!(bench.try_wait().unwrap().is_none(), "benchmark ended early");

    let victim = cluster.master_of_slot(0).unwrap();
    cluster.kill(victim).unwrap();
    cluster
        .wait_for_failover(victim, Duration::from_secs(60))
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    // redis-benchmark exits at the first error reply or lost connection.
    let early = bench.try_wait().unwrap();
    let _ = bench.kill();
    let out = bench.wait_with_output().unwrap();
    assert!(
        early.is_none(),
        "benchmark stopped during the failover: {early:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Commands the tunnel still had in flight finish.
    std::thread::sleep(Duration::from_millis(500));
    let mut conn = Raw::connect(tunnel.addr());
    let keys = all_keys_readable(&mut conn, "key:*");
    assert!(keys > 100, "{keys} keys");
    assert_eq!(
        conn.cmd(&["DBSIZE"]),
        Frame::Integer(dbsize_direct(&mut cluster))
    );
}

/// A password-protected cluster of its own (plain TCP): the tunnel authenticates upstream
/// so local clients need no password, and the keyless commands whose behaviour smart mode
/// documents (INFO on one node, DBSIZE summed, FLUSHALL on every master) do what it says.
/// Its own cluster, since FLUSHALL would wipe the keys of the tests sharing the other.
#[test]
fn tunnel_smart_authenticates_upstream_and_fans_out_keyless_commands() {
    let mut cluster = RedisCluster::builder()
        .password("tunnel-secret")
        .start()
        .unwrap();
    let port = cluster.addr(0).port().to_string();
    let mut tunnel = Tunnel::start(
        &[
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-a",
            "tunnel-secret",
            "--cluster",
            "--log",
            "warn",
        ]
        .map(String::from),
    );
    let mut conn = Raw::connect(tunnel.addr());
    // No AUTH needed locally; an AUTH a client sends anyway is accepted.
    assert_eq!(
        conn.cmd(&["SET", "auth:{a}", "1"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(conn.cmd(&["AUTH", "whatever"]), Frame::Simple("OK".into()));
    let mut mset: Vec<String> = vec!["MSET".into()];
    for i in 0..200 {
        mset.push(format!("fan:{i}"));
        mset.push(i.to_string());
    }
    assert_eq!(conn.cmd(&mset), Frame::Simple("OK".into()));
    let direct = dbsize_direct(&mut cluster);
    assert_eq!(direct, 201);
    assert_eq!(conn.cmd(&["DBSIZE"]), Frame::Integer(direct));
    // Every master holds some of the keys, so the sum above really fanned out.
    for m in cluster.masters().unwrap() {
        assert!(cluster.cmd(m, &["DBSIZE"]).unwrap().integer().unwrap() > 0);
    }
    let Frame::Bulk(info) = conn.cmd(&["INFO", "server"]) else {
        panic!("INFO")
    };
    let info = String::from_utf8_lossy(&info);
    assert!(info.contains("redis_version:"), "{info}");
    assert_eq!(conn.cmd(&["FLUSHALL"]), Frame::Simple("OK".into()));
    assert_eq!(dbsize_direct(&mut cluster), 0);
    assert_eq!(conn.cmd(&["DBSIZE"]), Frame::Integer(0));
    // A cluster-unaware tool through the tunnel, still without a password.
    let out = redis_cli(tunnel.addr(), &[], &["SET", "after:flush", "v"]);
    assert_eq!(stdout(&out), "OK\n");
    assert!(tunnel.stop_with("TERM").success());
}

#[test]
fn tunnel_smart_refuses_headers_as_redis_does() {
    // Integers Redis's `string2ll` refuses (`+1`, leading zeros, `-0`) in a request's
    // headers, and a null bulk (`$-1`, valid only in replies) as an argument: the tunnel
    // answers what redis-server answers, byte for byte, after the replies to the requests
    // before them, and closes the connection as it does. (Forwarded instead, the last one
    // made the node close the upstream connection every client shares.)
    let redis = redline_testkit::RedisServer::start().unwrap();
    let cluster = shared();
    let mut tunnel = smart_tunnel(&cluster, &[]);
    drop(cluster);
    for malformed in [
        &b"*+1\r\n$4\r\nPING\r\n"[..],
        b"*01\r\n$4\r\nPING\r\n",
        b"*1\r\n$04\r\nPING\r\n",
        b"*1\r\n$-0\r\n\r\n",
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$-1\r\n",
    ] {
        let mut request = b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n".to_vec();
        request.extend_from_slice(malformed);
        let from_redis = read_to_close(redis.addr(), &request);
        let from_tunnel = read_to_close(tunnel.addr(), &request);
        assert!(
            from_redis.starts_with(b"$2\r\nhi\r\n-ERR Protocol error"),
            "{:?}",
            String::from_utf8_lossy(&from_redis)
        );
        assert_eq!(
            String::from_utf8_lossy(&from_tunnel),
            String::from_utf8_lossy(&from_redis),
            "{:?}",
            String::from_utf8_lossy(malformed)
        );
    }
    assert!(tunnel.stop_with("TERM").success());
}

/// Sends `request` and returns every byte the server sends until it closes.
fn read_to_close(addr: std::net::SocketAddr, request: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut out = Vec::new();
    stream.read_to_end(&mut out).unwrap();
    out
}
