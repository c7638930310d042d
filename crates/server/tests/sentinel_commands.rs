//! What Redis Sentinel sends to the servers it manages, side by side on redis-server and
//! redline-server: the reconfiguration transaction of a failover (`MULTI`, `REPLICAOF`,
//! `CONFIG REWRITE`, `CLIENT KILL TYPE normal`, `CLIENT KILL TYPE pubsub`, `EXEC`), on a
//! server started with a configuration file and on one started without, and `CLIENT
//! KILL TYPE normal` on a master, which must leave its replicas' links alone. And what
//! a failover relies on afterwards: a promoted replica lets a lagging one continue from
//! its offset (PSYNC2) instead of a full resync.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{show, Conn};
use redline_resp::Frame;
use redline_testkit::{RedisServer, RedlineServer};

/// A server of either kind, as the tests need it.
enum Node {
    Redis(RedisServer),
    Redline(RedlineServer),
}

impl Node {
    fn start(redline: bool, config_file: Option<&str>) -> Node {
        if redline {
            let mut b = RedlineServer::builder().args(["--save", ""]);
            if let Some(text) = config_file {
                b = b.config_file(text);
            }
            Node::Redline(b.start().unwrap())
        } else {
            let mut b = RedisServer::builder();
            if let Some(text) = config_file {
                b = b.config_file(text);
            }
            Node::Redis(b.start().unwrap())
        }
    }

    fn addr(&self) -> SocketAddr {
        match self {
            Node::Redis(s) => s.addr(),
            Node::Redline(s) => s.addr(),
        }
    }

    fn kill(&mut self) {
        match self {
            Node::Redis(s) => s.kill(),
            Node::Redline(s) => s.kill(),
        }
    }

    fn config_path(&self) -> PathBuf {
        match self {
            Node::Redis(s) => s.config_path(),
            Node::Redline(s) => s.config_path(),
        }
    }

    fn replicaof_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.config_path())
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("replicaof") || l.starts_with("slaveof"))
            .map(str::to_string)
            .collect()
    }
}

/// Sentinel's reconfiguration transaction, as `sentinelSendSlaveOf` sends it; the EXEC
/// reply as text.
fn reconfigure(conn: &mut Conn, target: Option<SocketAddr>) -> String {
    let (host, port) = match target {
        Some(addr) => (addr.ip().to_string(), addr.port().to_string()),
        None => ("NO".to_string(), "ONE".to_string()),
    };
    let replies = [
        conn.cmd(&["MULTI"]),
        conn.cmd(&["REPLICAOF", &host, &port]),
        conn.cmd(&["CONFIG", "REWRITE"]),
        conn.cmd(&["CLIENT", "KILL", "TYPE", "normal"]),
        conn.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"]),
    ];
    assert_eq!(show(&replies[0]), simple("OK"));
    for r in &replies[1..] {
        assert_eq!(show(r), simple("QUEUED"));
    }
    show(&conn.cmd(&["EXEC"]))
}

fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "not within 20 s: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn simple(text: &str) -> String {
    show(&Frame::Simple(text.as_bytes().to_vec().into()))
}

/// ROLE's first element and, for a replica, its link state.
fn role_line(conn: &mut Conn) -> String {
    match conn.cmd(&["ROLE"]) {
        Frame::Array(items) => {
            let text = |f: Option<&Frame>| match f {
                Some(Frame::Bulk(b)) => String::from_utf8_lossy(b).into_owned(),
                _ => String::new(),
            };
            format!("{} {}", text(items.first()), text(items.get(3)))
        }
        other => show(&other),
    }
}

/// The failover steps on one kind of server; returns what the servers answered, for
/// comparison between the two kinds.
fn failover_steps(redline: bool) -> Vec<String> {
    let mut seen = Vec::new();
    let master = Node::start(redline, None);
    let node = Node::start(redline, Some("# managed by Sentinel\nappendonly no\n"));

    // Clients Sentinel's CLIENT KILL must close, and Sentinel's own connection.
    let mut plain = Conn::connect(node.addr());
    assert_eq!(
        show(&plain.cmd(&["CLIENT", "SETNAME", "app"])),
        simple("OK")
    );
    let mut sub = Conn::connect(node.addr());
    sub.cmd(&["SUBSCRIBE", "news"]);
    let mut sentinel = Conn::connect(node.addr());
    sentinel.cmd(&["CLIENT", "SETNAME", "sentinel-0123abcd-cmd"]);

    // Demote: a replica of `master`, written to the configuration file.
    seen.push(reconfigure(&mut sentinel, Some(master.addr())));
    assert!(
        plain.is_closed(),
        "a normal client survived CLIENT KILL TYPE normal"
    );
    assert!(
        sub.is_closed(),
        "a pub/sub client survived CLIENT KILL TYPE pubsub"
    );
    assert_eq!(show(&sentinel.cmd(&["PING"])), simple("PONG"));
    let want = format!("replicaof {} {}", master.addr().ip(), master.addr().port());
    assert_eq!(node.replicaof_lines(), [want]);
    let mut control = Conn::connect(node.addr());
    wait_until("the replica's link is up", || {
        role_line(&mut control).contains("connected")
    });
    let port = master.addr().port().to_string();
    seen.push(show(&control.cmd(&["CONFIG", "GET", "replicaof"])).replace(&port, "PORT"));

    // On the master, CLIENT KILL TYPE normal leaves the replica link alone.
    let mut on_master = Conn::connect(master.addr());
    let replicas_before = show(&on_master.cmd(&["CLIENT", "LIST", "TYPE", "replica"]));
    assert!(replicas_before.contains("flags=S"), "{replicas_before}");
    on_master.cmd(&["CLIENT", "KILL", "TYPE", "normal"]);
    let replicas_after = show(&on_master.cmd(&["CLIENT", "LIST", "TYPE", "replica"]));
    let id = |list: &str| list.split_whitespace().next().map(str::to_string);
    assert_eq!(id(&replicas_before), id(&replicas_after));

    // Promote: a master again, the directive gone from the file.
    seen.push(reconfigure(&mut sentinel, None));
    assert_eq!(node.replicaof_lines(), Vec::<String>::new());
    seen.push(role_line(&mut sentinel));
    seen.push(show(&sentinel.cmd(&["CONFIG", "GET", "replicaof"])));
    seen.push(show(&sentinel.cmd(&[
        "CONFIG",
        "SET",
        "replicaof",
        "127.0.0.1 1",
    ])));

    // Without a configuration file, CONFIG REWRITE fails inside the transaction and the
    // rest of it still runs.
    let mut bare = Conn::connect(master.addr());
    seen.push(reconfigure(&mut bare, Some(node.addr())));
    let mut check = Conn::connect(master.addr());
    wait_until("the file-less server follows", || {
        role_line(&mut check).contains("connected")
    });
    seen.push(reconfigure(&mut bare, None));
    seen
}

#[test]
fn sentinel_reconfiguration_matches_redis() {
    let redis = failover_steps(false);
    let redline = failover_steps(true);
    assert_eq!(redline, redis);
    // The transaction answered as Redis does, the file-less CONFIG REWRITE included.
    assert!(
        redis[6].contains("The server is running without a config file"),
        "{redis:?}"
    );
}

#[test]
fn replicaof_in_the_configuration_file_starts_replication() {
    let master = RedlineServer::start().unwrap();
    let text = format!("slaveof {} {}\n", master.addr().ip(), master.addr().port());
    let replica = RedlineServer::builder().config_file(text).start().unwrap();
    let mut conn = Conn::connect(replica.addr());
    wait_until("the configured replica's link is up", || {
        role_line(&mut conn).contains("connected")
    });
    let mut on_master = Conn::connect(master.addr());
    assert_eq!(show(&on_master.cmd(&["SET", "k", "v"])), simple("OK"));
    wait_until(
        "the write reaches the replica",
        || matches!(conn.cmd(&["GET", "k"]), Frame::Bulk(b) if &b[..] == b"v"),
    );
}

fn info_field(conn: &mut Conn, section: &str, field: &str) -> String {
    let text = match conn.cmd(&["INFO", section]) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => show(&other),
    };
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
        .unwrap_or_default()
}

/// Replica B loses its master (pointed at a dead address) while A gets 50 more writes;
/// the master dies, A is promoted, B follows A and must get only what it missed.
fn lagging_replica_continues(redline: bool) -> (String, String) {
    let mut master = Node::start(redline, None);
    let replicaof = |m: SocketAddr| format!("replicaof {} {}\n", m.ip(), m.port());
    let a = Node::start(redline, Some(&replicaof(master.addr())));
    let b = Node::start(redline, Some(&replicaof(master.addr())));
    let mut on_master = Conn::connect(master.addr());
    let mut on_a = Conn::connect(a.addr());
    let mut on_b = Conn::connect(b.addr());
    wait_until("both replicas online", || {
        info_field(&mut on_master, "replication", "connected_slaves") == "2"
    });
    on_master.cmd(&["SET", "first", "1"]);
    assert_eq!(
        show(&on_master.cmd(&["WAIT", "2", "5000"])),
        show(&Frame::Integer(2))
    );
    on_b.cmd(&["REPLICAOF", "127.0.0.1", "1"]);
    for i in 0..50 {
        on_master.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    assert_eq!(
        show(&on_master.cmd(&["WAIT", "1", "5000"])),
        show(&Frame::Integer(1))
    );
    master.kill();
    on_a.cmd(&["REPLICAOF", "NO", "ONE"]);
    let (ip, port) = (a.addr().ip().to_string(), a.addr().port().to_string());
    on_b.cmd(&["REPLICAOF", &ip, &port]);
    wait_until("the lagging replica catches up", || {
        role_line(&mut on_b).contains("connected")
            && show(&on_b.cmd(&["DBSIZE"])) == show(&Frame::Integer(51))
    });
    (
        info_field(&mut on_a, "stats", "sync_full"),
        info_field(&mut on_a, "stats", "sync_partial_ok"),
    )
}

#[test]
fn a_promoted_replica_lets_a_lagging_one_continue() {
    let redis = lagging_replica_continues(false);
    assert_eq!(redis, ("0".to_string(), "1".to_string()));
    let redline = lagging_replica_continues(true);
    assert_eq!(
        redline, redis,
        "(sync_full, sync_partial_ok) of the promoted replica"
    );
}

/// The fields Sentinel reads from a replica's INFO to choose and announce it
/// (`replica_announced:0` leaves it out of SENTINEL REPLICAS), as each setting changes.
fn replica_fields_sentinel_reads(redline: bool) -> Vec<String> {
    let replica = Node::start(redline, Some("replicaof 127.0.0.1 1\n"));
    let mut conn = Conn::connect(replica.addr());
    let mut seen = Vec::new();
    let settings = [
        ("replica-announced", "no"),
        ("replica-priority", "7"),
        ("replica-read-only", "no"),
        ("replica-announced", "yes"),
        ("replica-announced", "321"),
    ];
    for (name, value) in settings {
        seen.push(show(&conn.cmd(&["CONFIG", "SET", name, value])));
        for field in ["slave_priority", "slave_read_only", "replica_announced"] {
            seen.push(format!(
                "{field}:{}",
                info_field(&mut conn, "replication", field)
            ));
        }
    }
    seen
}

#[test]
fn replica_fields_sentinel_reads_follow_their_settings() {
    assert_eq!(
        replica_fields_sentinel_reads(true),
        replica_fields_sentinel_reads(false)
    );
}
