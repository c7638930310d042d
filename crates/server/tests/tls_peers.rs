//! TLS between servers, against real redis-server 7.0 with the same certificates:
//!
//! - `tls-replication yes`: redline-server replicates from a TLS-only redis-server and
//!   the other way round (the replica announcing its TLS port), and a replica that does
//!   not trust its master's certificate never links (no fall-back to plain text);
//! - `tls-cluster yes`: a cluster of redline-server and redis-server nodes with no plain
//!   port speaks TLS on the bus, replicates both ways, moves keys with MIGRATE over TLS
//!   from either kind of node and fails over a killed master;
//! - a node with both ports tells plain clients its plain port and TLS clients its TLS
//!   port (CLUSTER SLOTS, NODES, SHARDS), as redis-server does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{conn, free_port, text, wait_until};
use redline_resp::slot::key_slot;
use redline_resp::Frame;
use redline_testkit::{RedisCluster, RedisServer, RedlineServer, Reply, TlsCerts};

/// A TLS-only server of either kind.
enum Node {
    Redis(RedisServer),
    Redline(RedlineServer),
}

impl Node {
    fn start(redline: bool, certs: &TlsCerts, args: &[&str]) -> Node {
        Node::start_with(redline, Some(certs), args)
    }

    /// A server of either kind: TLS-only with `certs`, else controlled over its plain
    /// port with whatever TLS `args` set up.
    fn start_with(redline: bool, certs: Option<&TlsCerts>, args: &[&str]) -> Node {
        if redline {
            let mut builder = RedlineServer::builder().args(args.iter().copied());
            if let Some(certs) = certs {
                builder = builder.tls(certs);
            }
            Node::Redline(builder.start().unwrap())
        } else {
            let mut builder = RedisServer::builder().args(args.iter().copied());
            if let Some(certs) = certs {
                builder = builder.tls(certs);
            }
            Node::Redis(builder.start().unwrap())
        }
    }

    fn cmd(&self, args: &[&str]) -> Reply {
        match self {
            Node::Redis(s) => s.cmd(args).unwrap(),
            Node::Redline(s) => s.cmd(args).unwrap(),
        }
    }

    fn port(&self) -> u16 {
        match self {
            Node::Redis(s) => s.port(),
            Node::Redline(s) => s.port(),
        }
    }

    fn info_field(&self, name: &str) -> String {
        let info = self
            .cmd(&["INFO", "replication"])
            .text()
            .unwrap_or_default();
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .unwrap_or_default()
            .trim()
            .to_string()
    }
}

#[test]
fn replication_runs_over_tls_both_ways() {
    let certs = TlsCerts::generate().unwrap();
    for redline_master in [false, true] {
        let master = Node::start(redline_master, &certs, &[]);
        let replica = Node::start(!redline_master, &certs, &["--tls-replication", "yes"]);
        for i in 0..100 {
            master.cmd(&["SET", &format!("before:{i}"), "x"]);
        }
        let port = master.port().to_string();
        assert_eq!(
            replica.cmd(&["REPLICAOF", "127.0.0.1", &port]),
            Reply::Simple("OK".into())
        );
        wait_until("the replica to link over TLS", || {
            replica.info_field("master_link_status") == "up"
        });
        master.cmd(&["SET", "after", "streamed"]);
        wait_until("the stream to reach the replica", || {
            replica.cmd(&["GET", "after"]).text().as_deref() == Some("streamed")
        });
        assert_eq!(replica.cmd(&["DBSIZE"]).integer(), Some(101));
        assert_eq!(master.info_field("connected_slaves"), "1");
        // The replica announces the port it serves TLS on.
        let role = master.cmd(&["ROLE"]);
        let announced = role
            .items()
            .and_then(|r| r.get(2)?.items()?.first()?.items()?.get(1)?.text());
        assert_eq!(announced, Some(replica.port().to_string()), "{role:?}");
    }
}

#[test]
fn a_replica_that_does_not_trust_its_master_never_links() {
    let certs = TlsCerts::generate().unwrap();
    let strangers = TlsCerts::generate().unwrap();
    for redline_replica in [true, false] {
        let master = Node::start(!redline_replica, &certs, &[]);
        // Its own CA signed neither the master's certificate nor its own for the master.
        let replica = Node::start(redline_replica, &strangers, &["--tls-replication", "yes"]);
        master.cmd(&["SET", "k", "v"]);
        let port = master.port().to_string();
        replica.cmd(&["REPLICAOF", "127.0.0.1", &port]);
        std::thread::sleep(Duration::from_secs(2));
        assert_eq!(replica.info_field("master_link_status"), "down");
        assert_eq!(replica.cmd(&["GET", "k"]), Reply::Bulk(None));
        assert_eq!(master.info_field("connected_slaves"), "0");
    }
}

/// The node serving `key`'s slot.
fn master_of(cluster: &mut RedisCluster, key: &str) -> usize {
    cluster.master_of_slot(key_slot(key.as_bytes())).unwrap()
}

fn check_keys(cluster: &mut RedisCluster, keys: &[String]) {
    for key in keys {
        let node = master_of(cluster, key);
        let got = cluster.cmd(node, &["GET", key]).unwrap();
        assert_eq!(got.text(), Some(format!("v-{key}")), "{key} on node {node}");
    }
}

/// Moves the slot of a fresh key from `source` to `target` as redis-cli's resharding
/// does: IMPORTING, MIGRATING, MIGRATE (over TLS here), then SETSLOT NODE everywhere.
fn migrate_one_key(cluster: &mut RedisCluster, source: usize, target: usize, tag: &str) {
    let ranges = cluster.slot_ranges().unwrap();
    let owned = |slot: u16| {
        ranges
            .iter()
            .any(|r| r.master == source && (r.start..=r.end).contains(&slot))
    };
    let key = (0..)
        .map(|i| format!("{tag}:{i}"))
        .find(|k| owned(key_slot(k.as_bytes())))
        .unwrap();
    let slot = key_slot(key.as_bytes()).to_string();
    let ok = Reply::Simple("OK".into());
    assert_eq!(cluster.cmd(source, &["SET", &key, "moved"]).unwrap(), ok);
    let masters = cluster.masters().unwrap();
    let source_id = cluster.node_id(source).to_string();
    let target_id = cluster.node_id(target).to_string();
    let set_slot = |node: usize, how: &str, id: &str| {
        cluster
            .cmd(node, &["CLUSTER", "SETSLOT", &slot, how, id])
            .unwrap()
    };
    assert_eq!(set_slot(target, "IMPORTING", &source_id), ok);
    assert_eq!(set_slot(source, "MIGRATING", &target_id), ok);
    let port = cluster.addr(target).port().to_string();
    let migrated = cluster
        .cmd(
            source,
            &["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS", &key],
        )
        .unwrap();
    assert_eq!(migrated, ok, "MIGRATE from node {source} to node {target}");
    for node in [target, source]
        .into_iter()
        .chain(masters.into_iter().filter(|&m| m != source && m != target))
    {
        assert_eq!(set_slot(node, "NODE", &target_id), ok);
    }
    assert_eq!(
        cluster
            .cmd(target, &["GET", &key])
            .unwrap()
            .text()
            .as_deref(),
        Some("moved")
    );
    let left = cluster
        .cmd(source, &["CLUSTER", "COUNTKEYSINSLOT", &slot])
        .unwrap();
    assert_eq!(left.integer(), Some(0), "node {source}");
}

#[test]
fn a_mixed_tls_cluster_replicates_migrates_and_fails_over() {
    let certs = TlsCerts::generate().unwrap();
    // Even node indices are redline-server, odd ones redis-server; no plain port.
    let mut cluster = RedisCluster::builder().mixed().tls(&certs).start().unwrap();
    let keys: Vec<String> = (0..200).map(|i| format!("key:{i}")).collect();
    for key in &keys {
        let node = master_of(&mut cluster, key);
        let reply = cluster
            .cmd(node, &["SET", key, &format!("v-{key}")])
            .unwrap();
        assert_eq!(reply, Reply::Simple("OK".into()));
    }
    check_keys(&mut cluster, &keys);
    let ranges = cluster.slot_ranges().unwrap();
    for range in &ranges {
        let master_keys = cluster.cmd(range.master, &["DBSIZE"]).unwrap().integer();
        for &replica in &range.replicas {
            wait_until("a replica to catch up over TLS", || {
                cluster.cmd(replica, &["DBSIZE"]).unwrap().integer() == master_keys
            });
        }
    }
    // MIGRATE over TLS from a master of each kind.
    let masters = cluster.masters().unwrap();
    for want_redline in [true, false] {
        let source = *masters
            .iter()
            .find(|&&m| (m % 2 == 0) == want_redline)
            .expect("a master of each kind");
        let target = *masters.iter().find(|&&m| m != source).unwrap();
        migrate_one_key(&mut cluster, source, target, &format!("mig{source}"));
    }
    // A redline-server master dies: its replica takes over through the TLS bus.
    let ranges = cluster.slot_ranges().unwrap();
    let range = ranges
        .iter()
        .find(|r| r.master % 2 == 0)
        .expect("a redline-server master")
        .clone();
    cluster.kill(range.master).unwrap();
    let heir = cluster
        .wait_for_failover(range.master, Duration::from_secs(30))
        .unwrap();
    assert!(range.replicas.contains(&heir));
    check_keys(&mut cluster, &keys);
    cluster.restart(range.master).unwrap();
    cluster.wait_until_healthy(Duration::from_secs(60)).unwrap();
    check_keys(&mut cluster, &keys);
}

/// The value after `name` in a flat list of names and values.
fn field<'a>(items: &'a [Reply], name: &str) -> Option<&'a Reply> {
    items
        .chunks(2)
        .find(|pair| pair[0].text().as_deref() == Some(name))
        .and_then(|pair| pair.get(1))
}

/// The port of the first node of CLUSTER SLOTS' first range.
fn slots_port(frame: &Frame) -> i64 {
    let Frame::Array(ranges) = frame else {
        panic!("CLUSTER SLOTS: {frame:?}")
    };
    let Some(Frame::Array(range)) = ranges.first() else {
        panic!("CLUSTER SLOTS: {frame:?}")
    };
    let Some(Frame::Array(node)) = range.get(2) else {
        panic!("CLUSTER SLOTS: {frame:?}")
    };
    match node.get(1) {
        Some(Frame::Integer(port)) => *port,
        other => panic!("CLUSTER SLOTS port: {other:?}"),
    }
}

#[test]
fn plain_clients_of_a_tls_cluster_are_told_plain_ports() {
    let certs = TlsCerts::generate().unwrap();
    for redline in [true, false] {
        let plain = free_port();
        let bus = free_port();
        let (plain_text, bus_text) = (plain.to_string(), bus.to_string());
        let node = Node::start(
            redline,
            &certs,
            &[
                "--port",
                &plain_text,
                "--cluster-enabled",
                "yes",
                "--tls-cluster",
                "yes",
                "--cluster-port",
                &bus_text,
            ],
        );
        let tls = node.port();
        let who = if redline { "redline" } else { "redis" };
        let mut c = conn(plain);
        c.ok(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
        // Over plain TCP: the plain port.
        assert_eq!(
            slots_port(&c.cmd(&["CLUSTER", "SLOTS"])),
            i64::from(plain),
            "{who}"
        );
        let nodes = text(&c.cmd(&["CLUSTER", "NODES"]));
        assert!(nodes.contains(&format!(":{plain}@{bus}")), "{who}: {nodes}");
        // Over TLS: the TLS port.
        let nodes = node.cmd(&["CLUSTER", "NODES"]).text().unwrap();
        assert!(nodes.contains(&format!(":{tls}@{bus}")), "{who}: {nodes}");
        let slots = node.cmd(&["CLUSTER", "SLOTS"]);
        let port = slots
            .items()
            .and_then(|r| r.first()?.items()?.get(2)?.items()?.get(1)?.integer());
        assert_eq!(port, Some(i64::from(tls)), "{who}: {slots:?}");
        // CLUSTER SHARDS names both, to any client.
        let shards = node.cmd(&["CLUSTER", "SHARDS"]);
        let me = shards
            .items()
            .and_then(|s| {
                field(s.first()?.items()?, "nodes")?
                    .items()?
                    .first()?
                    .items()
            })
            .unwrap_or_else(|| panic!("{who}: {shards:?}"));
        assert_eq!(
            field(me, "port").and_then(Reply::integer),
            Some(i64::from(plain)),
            "{who}: {me:?}"
        );
        assert_eq!(
            field(me, "tls-port").and_then(Reply::integer),
            Some(i64::from(tls)),
            "{who}: {me:?}"
        );
    }
}

/// The test kit's certificates, the path of a file of the v1 fixtures (`v1.crt`,
/// `v1.key`, made with `openssl x509 -req`, valid until 2126), and one CA file trusting
/// both the kit's CA and the one that signed the v1 certificate.
fn v1_fixtures() -> (TlsCerts, impl Fn(&str) -> String, String) {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls-v1");
    let certs = TlsCerts::generate().unwrap();
    let both = certs.dir().join("both-ca.crt");
    let v1_ca = std::fs::read_to_string(fixtures.join("ca.crt")).unwrap();
    std::fs::write(&both, format!("{}{v1_ca}", certs.ca_cert_pem())).unwrap();
    let path = move |name: &str| fixtures.join(name).display().to_string();
    (certs, path, both.display().to_string())
}

/// Certificates OpenSSL signs without extensions are X.509 v1 (Redis's
/// utils/gen-test-certs.sh makes one), which webpki cannot read: redline-server still
/// starts with one, serves it (redis-cli, OpenSSL, accepts it) and presents it to its
/// master as a client certificate, as redis-server does. Fixtures made with
/// `openssl x509 -req` (valid until 2126).
#[test]
fn an_x509_v1_certificate_is_served_and_presented() {
    let (certs, path, both) = v1_fixtures();
    // A master that trusts both (its test kit's control connection has no certificate:
    // it requires one only once started).
    let master = Node::start(false, &certs, &["--tls-ca-cert-file", &both]);
    let tls_port = free_port().to_string();
    let replica = RedlineServer::builder()
        .args([
            "--tls-port",
            &tls_port,
            "--tls-cert-file",
            &path("v1.crt"),
            "--tls-key-file",
            &path("v1.key"),
            "--tls-ca-cert-file",
            &both,
            "--tls-replication",
            "yes",
            "--tls-auth-clients",
            "optional",
        ])
        .start()
        .unwrap();
    let served = std::process::Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &tls_port, "--tls", "--cacert"])
        .arg(path("ca.crt"))
        .arg("PING")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&served.stdout).trim(), "PONG");
    master.cmd(&["SET", "k", "v"]);
    // From now on the master requires a certificate: the replica must present its own.
    master.cmd(&["CONFIG", "SET", "tls-auth-clients", "yes"]);
    let mut r = conn(replica.port());
    r.ok(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
    wait_until("the replica to link with its v1 certificate", || {
        text(&conn(replica.port()).cmd(&["GET", "k"])) == "v"
    });
}

/// A server of either kind controlled over its plain port, with a TLS port using
/// `[certificate, key, CA]` files and one more directive.
fn with_tls_port(redline: bool, port: &str, files: [&str; 3], directive: [&str; 2]) -> Node {
    let [cert, key, ca] = files;
    let args = [
        "--tls-port",
        port,
        "--tls-cert-file",
        cert,
        "--tls-key-file",
        key,
        "--tls-ca-cert-file",
        ca,
        directive[0],
        directive[1],
    ];
    Node::start_with(redline, None, &args)
}

/// X.509 v1 certificates are verified as OpenSSL verifies them, on both kinds of
/// server alike: a client presenting one its CA signed is accepted and one another CA
/// signed is refused; a replica links to a master serving one; a master accepts a
/// replica presenting one.
#[test]
fn x509_v1_peers_are_verified_as_openssl_verifies_them() {
    let (certs, path, both) = v1_fixtures();
    let kit_cert = certs.server_cert_path().display().to_string();
    let kit_key = certs.server_key_path().display().to_string();
    let kit_ca = certs.ca_cert_path().display().to_string();
    let ping_with_v1 = |port: u16| {
        let out = std::process::Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "--tls"])
            .args(["--cacert", &kit_ca, "--cert", &path("v1.crt")])
            .args(["--key", &path("v1.key"), "PING"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    for redline in [false, true] {
        let who = if redline { "redline" } else { "redis" };
        // Clients: trusted through the CA that signed the v1 certificate, or not.
        for (ca, expected) in [(&both, "PONG"), (&kit_ca, "")] {
            let tls_port = free_port().to_string();
            let server = with_tls_port(
                redline,
                &tls_port,
                [&kit_cert, &kit_key, ca],
                ["--tls-auth-clients", "yes"],
            );
            let port = tls_port.parse().unwrap();
            assert_eq!(ping_with_v1(port), expected, "{who}, CA {ca}");
            drop(server);
        }
        // A master of this kind serving a v1 certificate, and a redline replica.
        let master_tls = free_port().to_string();
        let master = with_tls_port(
            redline,
            &master_tls,
            [&path("v1.crt"), &path("v1.key"), &both],
            ["--tls-auth-clients", "yes"],
        );
        master.cmd(&["SET", "k", who]);
        // A replica of the other kind presenting a v1 certificate to it, then a redline
        // replica presenting the kit's (v3) one: both verify the master's v1 one.
        for (replica_redline, cert, key) in [
            (!redline, path("v1.crt"), path("v1.key")),
            (true, kit_cert.clone(), kit_key.clone()),
        ] {
            let replica = with_tls_port(
                replica_redline,
                &free_port().to_string(),
                [&cert, &key, &both],
                ["--tls-replication", "yes"],
            );
            let mut r = conn(replica.port());
            r.ok(&["REPLICAOF", "127.0.0.1", &master_tls]);
            wait_until(&format!("a replica of the {who} master to link"), || {
                text(&conn(replica.port()).cmd(&["GET", "k"])) == who
            });
        }
    }
}
