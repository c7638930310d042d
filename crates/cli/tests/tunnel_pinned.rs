//! `redline tunnel --cluster --mode pinned` in front of a TLS 6-node cluster (testkit):
//! redirects lead to local ports only, topology replies name only local addresses, user
//! values that look like addresses pass untouched, large pipelined values are byte-exact,
//! and a node that joins gets a listener.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod tunnel_support;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use redline_resp::{encode, slot::key_slot, Frame};
use redline_testkit::{RedisCluster, RedisServer, TlsCerts};
use tunnel_support::{redis_cli, roundtrip_values, stdout, tls_flags, value, Raw, Tunnel};

/// One TLS cluster shared by the tests that do not change its topology.
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

fn pinned_tunnel(cluster: &RedisCluster, extra: &[&str]) -> Tunnel {
    let certs = cluster.tls().unwrap();
    let mut args = tls_flags(cluster.addr(0).port(), &certs.ca_cert_path());
    args.extend(["--cluster", "--mode", "pinned", "--log", "warn"].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    let tunnel = Tunnel::start(&args);
    assert_eq!(
        tunnel.pinned.len(),
        cluster.len(),
        "one listener per node: {:?}",
        tunnel.pinned
    );
    tunnel
}

fn local_ports(tunnel: &Tunnel) -> HashSet<u16> {
    tunnel
        .pinned
        .iter()
        .map(|(local, _)| local.port())
        .collect()
}

fn upstream_ports(cluster: &RedisCluster) -> HashSet<u16> {
    cluster.addrs().iter().map(SocketAddr::port).collect()
}

/// The local listener of the master for `key`, found the way a client finds it: ask
/// any node and follow the MOVED.
fn local_for_key(tunnel: &Tunnel, key: &str) -> SocketAddr {
    let first = tunnel.pinned[0].0;
    let mut conn = Raw::connect(first);
    match conn.cmd(&["GET", key]) {
        Frame::Error(e) => {
            let text = String::from_utf8_lossy(&e).into_owned();
            assert!(text.starts_with("MOVED "), "{text}");
            text.rsplit(' ').next().unwrap().parse().unwrap()
        }
        _ => first,
    }
}

#[test]
fn tunnel_pinned_redis_cli_follows_redirects_to_local_ports_only() {
    let cluster = shared();
    let tunnel = pinned_tunnel(&cluster, &[]);
    let locals = local_ports(&tunnel);
    let upstream = upstream_ports(&cluster);
    let entry = tunnel.pinned[0].0;

    // Raw MOVED: slot and a local address of the right node.
    let mut conn = Raw::connect(entry);
    let mut moved = 0;
    for i in 0..50 {
        let key = format!("redirect:{i}");
        if let Frame::Error(e) = conn.cmd(&["GET", &key]) {
            let text = String::from_utf8_lossy(&e).into_owned();
            let mut parts = text.split(' ');
            assert_eq!(parts.next(), Some("MOVED"), "{text}");
            assert_eq!(
                parts.next(),
                Some(key_slot(key.as_bytes()).to_string().as_str())
            );
            let addr: SocketAddr = parts.next().unwrap().parse().unwrap();
            assert_eq!(addr.ip().to_string(), "127.0.0.1");
            assert!(locals.contains(&addr.port()), "{text} not local");
            assert!(!upstream.contains(&addr.port()));
            moved += 1;
        }
    }
    assert!(moved > 10, "keys spread over three masters");

    // redis-cli -c: every key lands, read back through a different local node. Plain-text
    // redis-cli could not reach the TLS upstream ports, so success means local redirects.
    for i in 0..30 {
        let key = format!("redirect:{i}");
        let out = redis_cli(entry, &["-c"], &["SET", &key, &format!("v{i}")]);
        assert_eq!(stdout(&out).trim(), "OK", "{out:?}");
    }
    let other = tunnel.pinned[3].0;
    for i in 0..30 {
        let key = format!("redirect:{i}");
        let out = redis_cli(other, &["-c"], &["GET", &key]);
        assert_eq!(stdout(&out).trim(), format!("v{i}"));
    }

    // ASK during a slot migration: rewritten too, and redis-cli -c follows it.
    let key = "ask:key";
    let slot = key_slot(key.as_bytes()).to_string();
    let mut c = cluster;
    let source = c.master_of_slot(key_slot(key.as_bytes())).unwrap();
    let masters = c.masters().unwrap();
    let dest = *masters.iter().find(|&&m| m != source).unwrap();
    let (source_id, dest_id) = (c.node_id(source).to_owned(), c.node_id(dest).to_owned());
    // Found before the migration starts (afterwards the answer would be ASK).
    let source_local = local_for_key(&tunnel, key);
    c.cmd(
        dest,
        &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &source_id],
    )
    .unwrap();
    c.cmd(
        source,
        &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &dest_id],
    )
    .unwrap();
    let reply = Raw::connect(source_local).cmd(&["GET", key]);
    let restore = |c: &RedisCluster| {
        for node in [source, dest] {
            c.cmd(node, &["CLUSTER", "SETSLOT", &slot, "STABLE"])
                .unwrap();
        }
    };
    let Frame::Error(e) = &reply else {
        restore(&c);
        panic!("expected -ASK, got {reply:?}");
    };
    let text = String::from_utf8_lossy(e).into_owned();
    let out = redis_cli(source_local, &["-c"], &["GET", key]);
    restore(&c);
    assert!(
        text.starts_with(&format!("ASK {slot} 127.0.0.1:")),
        "{text}"
    );
    let port: u16 = text.rsplit(':').next().unwrap().parse().unwrap();
    assert!(locals.contains(&port), "{text}");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out).trim(), "", "missing key reads as nil: {out:?}");
}

/// Every `(host, port)` a topology reply names, from frames of any shape.
fn addresses(frame: &Frame, out: &mut Vec<(String, i64)>) {
    fn text(f: &Frame) -> Option<String> {
        match f {
            Frame::Bulk(b) | Frame::Simple(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Frame::Verbatim { text, .. } => Some(String::from_utf8_lossy(text).into_owned()),
            _ => None,
        }
    }
    match frame {
        Frame::Array(items) => {
            // CLUSTER SLOTS node: [host, port, id, ...]
            if let (Some(host), Some(Frame::Integer(port))) =
                (items.first().and_then(text), items.get(1))
            {
                out.push((host, *port));
            }
            // RESP2 flat maps of CLUSTER SHARDS.
            let mut ip = None;
            let mut port = None;
            for pair in items.chunks(2) {
                if let [k, v] = pair {
                    match (text(k).as_deref(), v) {
                        (Some("ip") | Some("endpoint"), v) => ip = text(v),
                        (Some("port") | Some("tls-port"), Frame::Integer(p)) => port = Some(*p),
                        _ => {}
                    }
                }
            }
            if let (Some(ip), Some(port)) = (ip, port) {
                out.push((ip, port));
            }
            items.iter().for_each(|i| addresses(i, out));
        }
        Frame::Map(pairs) => {
            let flat: Vec<Frame> = pairs
                .iter()
                .flat_map(|(k, v)| [k.clone(), v.clone()])
                .collect();
            addresses(&Frame::Array(flat), out);
        }
        other => {
            // CLUSTER NODES lines: second field host:port@cport.
            if let Some(t) = text(other) {
                for line in t.lines() {
                    if let Some(addr) = line.split(' ').nth(1) {
                        let hp = addr.split(['@', ',']).next().unwrap();
                        if let Some((h, p)) = hp.rsplit_once(':') {
                            if let Ok(p) = p.parse() {
                                out.push((h.to_owned(), p));
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn tunnel_pinned_cluster_slots_shards_nodes_show_only_local_addresses() {
    let cluster = shared();
    let tunnel = pinned_tunnel(&cluster, &[]);
    let locals = local_ports(&tunnel);
    let upstream = upstream_ports(&cluster);
    let master_id = cluster.node_id(0).to_owned();

    for resp3 in [false, true] {
        for (local, _) in &tunnel.pinned {
            let mut conn = Raw::connect(*local);
            if resp3 {
                assert!(matches!(conn.cmd(&["HELLO", "3"]), Frame::Map(_)));
            }
            // Pipelined, with plain commands between, as a client library would.
            let mut batch = BytesMut::new();
            for args in [
                &["CLUSTER", "SLOTS"][..],
                &["PING"],
                &["CLUSTER", "SHARDS"],
                &["ECHO", "10.0.0.1:1"],
                &["CLUSTER", "NODES"],
                &["cluster", "replicas", &master_id],
                &["CLUSTER", "INFO"],
            ] {
                encode::command(&mut batch, args.iter());
            }
            let replies = conn.pipeline(batch.to_vec(), 7);
            let mut found = Vec::new();
            for (i, reply) in replies.iter().enumerate() {
                assert!(!matches!(reply, Frame::Error(_)), "reply {i}: {reply:?}");
                if [0, 2, 4, 5].contains(&i) {
                    let before = found.len();
                    addresses(reply, &mut found);
                    assert!(found.len() > before, "reply {i} names nodes: {reply:?}");
                }
            }
            for (host, port) in &found {
                assert_eq!(host, "127.0.0.1", "resp3={resp3}: {found:?}");
                let port = u16::try_from(*port).unwrap();
                assert!(locals.contains(&port), "resp3={resp3}: {port} not local");
                assert!(!upstream.contains(&port), "resp3={resp3}: upstream {port}");
            }
            // CLUSTER SHARDS reports the local plain port, not a TLS one.
            let shards = format!("{:?}", replies[2]);
            assert!(!shards.contains("tls-port"), "{shards}");
        }
    }

    // The same through redis-cli, as a user would look.
    for args in [
        &["CLUSTER", "SLOTS"][..],
        &["CLUSTER", "SHARDS"],
        &["CLUSTER", "NODES"],
    ] {
        let text = stdout(&redis_cli(tunnel.pinned[1].0, &[], args));
        assert!(!text.is_empty());
        for port in &upstream {
            assert!(
                !text.contains(&format!(":{port}@"))
                    && !text.lines().any(|l| l == port.to_string()),
                "{args:?} shows upstream port {port}: {text}"
            );
        }
    }
}

#[test]
fn tunnel_pinned_rewrites_quoted_inline_commands() {
    // Inline commands are split with redis-cli quoting, as Redis splits them: a quoted
    // `"cluster" 'slots'` is CLUSTER SLOTS, so its addresses are rewritten too.
    let cluster = shared();
    let tunnel = pinned_tunnel(&cluster, &[]);
    let locals = local_ports(&tunnel);
    let mut conn = Raw::connect(tunnel.pinned[0].0);
    conn.send_raw(b"\"cluster\" 'slots'\r\n");
    let reply = conn.read_frame();
    let mut found = Vec::new();
    addresses(&reply, &mut found);
    assert!(!found.is_empty(), "{reply:?}");
    for (_, port) in &found {
        let port = u16::try_from(*port).unwrap();
        assert!(
            locals.contains(&port),
            "{port} is not a local port: {reply:?}"
        );
    }
    // The connection is still paired: the next reply is the next command's.
    assert_eq!(conn.cmd(&["ECHO", "after"]), Frame::Bulk("after".into()));
}

#[test]
fn tunnel_pinned_user_values_that_look_like_addresses_pass_untouched() {
    let mut cluster = shared();
    let mut tunnel = pinned_tunnel(&cluster, &[]);
    // A real CLUSTER NODES text with the upstream addresses, and other lookalikes.
    let nodes_text = cluster
        .cmd(0, &["CLUSTER", "NODES"])
        .unwrap()
        .text()
        .unwrap();
    let upstream = cluster.addr(1).to_string();
    let values: Vec<(&str, String)> = vec![
        ("{user}:addr", "10.1.2.3:7000".to_owned()),
        ("{user}:nodes", nodes_text.clone()),
        ("{user}:moved", format!("MOVED 1 {upstream}")),
        ("{user}:err", format!("-MOVED 1 {upstream}\r\n")),
        (
            "{user}:slots",
            format!(
                "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$9\r\n127.0.0.1\r\n:{}\r\n",
                cluster.addr(1).port()
            ),
        ),
    ];
    let node = local_for_key(&tunnel, "{user}");
    let mut conn = Raw::connect(node);
    for (key, v) in &values {
        assert_eq!(conn.cmd(&["SET", key, v]), Frame::Simple("OK".into()));
    }
    // Read back by GET, inside other structures, and next to topology replies.
    for (key, v) in &values {
        assert_eq!(
            conn.cmd(&["GET", key]),
            Frame::Bulk(v.clone().into()),
            "{key}"
        );
        assert_eq!(
            conn.cmd(&["ECHO", v]),
            Frame::Bulk(v.clone().into()),
            "{key}"
        );
    }
    conn.cmd(&["DEL", "{user}:h"]);
    conn.cmd(&["HSET", "{user}:h", "10.1.2.3:7000", &nodes_text]);
    let mut batch = BytesMut::new();
    encode::command(&mut batch, ["CLUSTER", "NODES"]);
    encode::command(&mut batch, ["HGETALL", "{user}:h"]);
    encode::command(&mut batch, ["GET", "{user}:nodes"]);
    let replies = conn.pipeline(batch.to_vec(), 3);
    assert_eq!(
        replies[1],
        Frame::Array(vec![
            Frame::Bulk("10.1.2.3:7000".into()),
            Frame::Bulk(nodes_text.clone().into())
        ])
    );
    assert_eq!(replies[2], Frame::Bulk(nodes_text.clone().into()));
    // And the upstream server stored exactly what was sent.
    let owner = cluster.master_of_slot(key_slot(b"{user}")).unwrap();
    let direct = cluster.cmd(owner, &["GET", "{user}:nodes"]).unwrap();
    assert_eq!(direct.text().unwrap(), nodes_text);
    // redis-cli -c shows the value as it is.
    let out = redis_cli(tunnel.pinned[0].0, &["-c"], &["GET", "{user}:addr"]);
    assert_eq!(stdout(&out).trim(), "10.1.2.3:7000");
    // Ctrl-C closes every listener and exits cleanly.
    assert!(tunnel.stop_with("INT").success());
}

#[test]
fn tunnel_pinned_pipelined_values_1b_to_8mb_byte_exact() {
    let cluster = shared();
    let tunnel = pinned_tunnel(&cluster, &[]);
    drop(cluster);
    let node = local_for_key(&tunnel, "{big}");
    let mut conn = Raw::connect(node);
    roundtrip_values(&mut conn, |size| format!("{{big}}:{size}"));

    // Large values interleaved with replies the tunnel rewrites, in one pipeline.
    let big = value(3 * 1024 * 1024 + 5, 99);
    let mut batch = BytesMut::new();
    encode::command(&mut batch, [&b"SET"[..], b"{big}:mixed", &big]);
    encode::command(&mut batch, ["CLUSTER", "NODES"]);
    encode::command(&mut batch, ["GET", "{big}:mixed"]);
    encode::command(&mut batch, ["CLUSTER", "SLOTS"]);
    encode::command(&mut batch, ["GET", "{big}:mixed"]);
    encode::command(&mut batch, ["GET", "moved-elsewhere-maybe"]);
    let replies = conn.pipeline(batch.to_vec(), 6);
    assert_eq!(replies[0], Frame::Simple("OK".into()));
    assert!(matches!(replies[1], Frame::Bulk(_)));
    assert_eq!(replies[2], Frame::Bulk(big.clone().into()));
    assert!(matches!(replies[3], Frame::Array(_)));
    assert_eq!(replies[4], Frame::Bulk(big.into()));
}

#[test]
fn tunnel_pinned_new_node_and_failover_open_listeners() {
    let certs = TlsCerts::generate().unwrap();
    let mut cluster = RedisCluster::builder().tls(&certs).start().unwrap();
    let tunnel = pinned_tunnel(&cluster, &["--refresh", "1"]);

    // Failover first (the kit's health check expects six nodes): the promoted replica was
    // pinned from the start; redis-cli -c keeps working through the tunnel.
    let victim = cluster.master_of_slot(0).unwrap();
    cluster.kill(victim).unwrap();
    cluster
        .wait_for_failover(victim, Duration::from_secs(60))
        .unwrap();
    let victim_addr = cluster.addr(victim).to_string();
    let entry = tunnel
        .pinned
        .iter()
        .find(|(_, upstream)| *upstream != victim_addr)
        .unwrap()
        .0;
    for i in 0..20 {
        let key = format!("after-failover:{i}");
        let mut ok = false;
        for _ in 0..50 {
            let out = redis_cli(entry, &["-c"], &["SET", &key, "v"]);
            if stdout(&out).trim() == "OK" {
                ok = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        assert!(ok, "SET {key} after failover");
    }
    // A seventh node joins: the tunnel's refresh opens a listener for it.
    let extra = RedisServer::builder()
        .tls(&certs)
        .args([
            "--cluster-enabled",
            "yes",
            "--tls-cluster",
            "yes",
            "--tls-replication",
            "yes",
        ])
        .start()
        .unwrap();
    let port = extra.port().to_string();
    let live = (0..cluster.len()).find(|&n| n != victim).unwrap();
    cluster
        .cmd(live, &["CLUSTER", "MEET", "127.0.0.1", &port])
        .unwrap();
    let want = format!("-> 127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let line = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tunnel.later.recv_timeout(left) {
            Ok(line) if line.ends_with(&want) => break line,
            Ok(_) => continue,
            Err(_) => panic!("no listener opened for the new node {port}"),
        }
    };
    let (local, _) = tunnel_support::parse_mapping(&line);
    let mut conn = Raw::connect(local);
    assert_eq!(conn.cmd(&["PING"]), Frame::Simple("PONG".into()));
    let Frame::Bulk(nodes) = conn.cmd(&["CLUSTER", "NODES"]) else {
        panic!("CLUSTER NODES")
    };
    let nodes = String::from_utf8_lossy(&nodes).into_owned();
    assert!(
        nodes.contains(&format!("127.0.0.1:{}@", local.port())),
        "{nodes}"
    );

    drop(extra);
}
