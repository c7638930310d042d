//! Cluster mode (`cluster-enabled yes`) against real redis-server 7.0 nodes:
//!
//! - one node of each answers the CLUSTER commands, the slot checks (CROSSSLOT, MOVED,
//!   CLUSTERDOWN) and the commands cluster mode forbids with the same replies, names
//!   and ports aside;
//! - nodes.conf keeps a node's name, epoch and slots across a restart, a broken one is
//!   refused as Redis refuses it, and two nodes cannot share one;
//! - a cluster of redline-server and redis-server nodes, created by `redis-cli --cluster
//!   create`, replicates both ways, fails over a killed master of either kind, takes a
//!   manual CLUSTER FAILOVER both ways, and carries PUBLISH and SPUBLISH between nodes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{conn, text, wait_until, AnyServer};
use redline_resp::slot::key_slot;
use redline_resp::Frame;
use redline_testkit::{RedisCluster, RedlineServer, Reply};

fn cluster_node(redline: bool) -> AnyServer {
    let args = ["--cluster-enabled", "yes", "--save", ""];
    if redline {
        AnyServer::redline(&args)
    } else {
        AnyServer::redis(&args)
    }
}

/// A reply with this node's name and ports replaced, to compare two nodes.
fn neutral(frame: &Frame, id: &str, port: u16) -> String {
    text(frame)
        .replace(id, "<id>")
        .replace(&(port + 10000).to_string(), "<cport>")
        .replace(&port.to_string(), "<port>")
}

#[test]
fn one_node_answers_cluster_commands_like_redis() {
    let mut transcripts = Vec::new();
    for redline in [true, false] {
        let node = cluster_node(redline);
        let mut c = conn(node.port);
        let id = text(&c.cmd(&["CLUSTER", "MYID"]));
        assert_eq!(id.len(), 40, "{id}");
        let other = "0123456789abcdef0123456789abcdef01234567";
        let foo_slot = key_slot(b"foo").to_string();
        let script: Vec<Vec<&str>> = vec![
            vec!["GET", "foo"],
            // An unserved first slot comes before CROSSSLOT.
            vec!["MGET", "foo", "bar"],
            vec!["CLUSTER", "ADDSLOTSRANGE", "0", "16383"],
            vec!["CLUSTER", "ADDSLOTS", "5"],
            vec!["CLUSTER", "ADDSLOTS", "16384"],
            vec!["CLUSTER", "DELSLOTS", "abc"],
            vec!["CLUSTER", "ADDSLOTSRANGE", "10", "5"],
            vec!["CLUSTER", "ADDSLOTSRANGE", "10"],
            vec!["CLUSTER", "KEYSLOT", "foo"],
            vec!["CLUSTER", "KEYSLOT", "{user1}.name"],
            vec!["CLUSTER", "SET-CONFIG-EPOCH", "5"],
            vec!["CLUSTER", "SET-CONFIG-EPOCH", "6"],
            vec!["CLUSTER", "BUMPEPOCH"],
            vec!["CLUSTER", "SETSLOT", "0", "MIGRATING", other],
            vec!["CLUSTER", "SETSLOT", "0", "IMPORTING", &id],
            vec!["CLUSTER", "SETSLOT", "0", "BOGUS"],
            vec!["CLUSTER", "FORGET", &id],
            vec!["CLUSTER", "FORGET", other],
            // A name is printed as C prints it: up to its first NUL.
            vec!["CLUSTER", "FORGET", "a\r\nb\0c"],
            vec!["CLUSTER", "REPLICATE", &id],
            vec!["CLUSTER", "REPLICAS", &id],
            vec!["CLUSTER", "COUNT-FAILURE-REPORTS", &id],
            vec!["CLUSTER", "FAILOVER"],
            vec!["CLUSTER", "FAILOVER", "SOFTLY"],
            vec!["FAILOVER"],
            vec!["CLUSTER", "RESET", "NOW"],
            vec!["CLUSTER", "NOPE"],
            vec!["ASKING"],
            vec!["READONLY"],
            vec!["READWRITE"],
            vec!["REPLICAOF", "127.0.0.1", "1"],
            vec!["SELECT", "0"],
            vec!["SELECT", "1"],
            vec!["SWAPDB", "0", "1"],
        ];
        let mut transcript: Vec<String> = script
            .iter()
            .map(|args| {
                let reply = neutral(&c.cmd(args), &id, node.port);
                format!("{args:?} -> {reply}").replace(&id, "<id>")
            })
            .collect();
        // A READONLY client shows the `r` flag.
        c.cmd(&["READONLY"]);
        let client = text(&c.cmd(&["CLIENT", "INFO"]));
        let flags = client.split(' ').find(|f| f.starts_with("flags="));
        transcript.push(format!("READONLY, then CLIENT INFO: {flags:?}"));
        c.cmd(&["READWRITE"]);
        // The cluster is up once the node's start-up delay passed.
        let port = node.port;
        wait_until("cluster_state:ok", || {
            text(&conn(port).cmd(&["CLUSTER", "INFO"])).contains("cluster_state:ok")
        });
        let after: Vec<Vec<&str>> = vec![
            vec!["SET", "foo", "bar"],
            vec!["MSET", "foo", "1", "bar", "2"],
            vec!["MSET", "{t}a", "1", "{t}b", "2"],
            vec!["MOVE", "foo", "1"],
            // SORT's lookups could reach any slot.
            vec!["SORT", "foo", "BY", "w_*"],
            vec!["SORT_RO", "foo", "GET", "#"],
            vec!["SORT", "foo", "BY", "nosort"],
            // A node finds keys with the command's key finder where it has one (Redis's
            // getKeysFromCommand): none in an unbalanced XREAD, GEORADIUS's last STORE.
            vec!["XREAD", "STREAMS", "foo", "bar", "0"],
            vec![
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "STREAMS",
                "foo",
                "bar",
                "0",
            ],
            vec![
                "GEORADIUS",
                "foo",
                "0",
                "0",
                "1",
                "m",
                "STORE",
                "bar",
                "STOREDIST",
                "{foo}2",
            ],
            vec!["COPY", "foo", "foo2", "DB", "1"],
            vec!["CLUSTER", "COUNTKEYSINSLOT", &foo_slot],
            vec!["CLUSTER", "GETKEYSINSLOT", &foo_slot, "10"],
            vec!["CLUSTER", "COUNTKEYSINSLOT", "16384"],
            vec!["CLUSTER", "GETKEYSINSLOT", "0", "-1"],
            // The slot's keys follow creations, deletions and renames once counted.
            vec!["SET", "{foo}1", "a"],
            vec!["CLUSTER", "COUNTKEYSINSLOT", &foo_slot],
            vec!["DEL", "foo"],
            vec!["CLUSTER", "GETKEYSINSLOT", &foo_slot, "10"],
            vec!["RENAME", "{foo}1", "{foo}2"],
            vec!["CLUSTER", "GETKEYSINSLOT", &foo_slot, "10"],
            vec!["CLUSTER", "COUNTKEYSINSLOT", &foo_slot],
            vec!["SET", "foo", "bar"],
            vec!["CLUSTER", "FLUSHSLOTS"],
            vec!["CLUSTER", "RESET"],
            vec!["CLUSTER", "DELSLOTS", "0"],
            vec!["CLUSTER", "DELSLOTS", "0"],
            vec!["EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "foo"],
            vec!["EVAL", "return 1", "2", "foo", "bar"],
            vec![
                "EVAL",
                "#!lua\nredis.call('set','foo','1') return redis.call('set','bar','2')",
                "0",
            ],
            vec![
                "EVAL",
                "redis.call('set','foo','1') return redis.call('set','bar','2')",
                "0",
            ],
            vec!["EVAL", "#!lua flags=no-cluster\nreturn 1", "0"],
        ];
        for args in &after {
            transcript.push(format!(
                "{args:?} -> {}",
                neutral(&c.cmd(args), &id, node.port)
            ));
        }
        // Slot 0 unserved: its keys get "not served", the others "down".
        let zero_key = (0..)
            .map(|i| format!("k{i}"))
            .find(|k| key_slot(k.as_bytes()) == 0)
            .unwrap();
        for args in [vec!["GET", zero_key.as_str()], vec!["GET", "foo"]] {
            transcript.push(format!(
                "{args:?} -> {}",
                neutral(&c.cmd(&args), &id, node.port)
            ));
        }
        let info = text(&c.cmd(&["CLUSTER", "INFO"]));
        for field in [
            "cluster_state:",
            "cluster_slots_assigned:",
            "cluster_known_nodes:",
            "cluster_size:",
            "cluster_current_epoch:",
            "cluster_my_epoch:",
        ] {
            let line = info.lines().find(|l| l.starts_with(field)).unwrap_or(field);
            transcript.push(line.to_string());
        }
        let server = text(&c.cmd(&["INFO", "server"]));
        let mode = server.lines().find(|l| l.starts_with("redis_mode:"));
        transcript.push(format!("{mode:?}"));
        transcript.push(neutral(&c.cmd(&["CLUSTER", "NODES"]), &id, node.port));
        transcript.push(neutral(&c.cmd(&["CLUSTER", "SLOTS"]), &id, node.port));
        // Inside a transaction, which holds the keyspace: the commands that read the
        // keys, then the hard reset Redis's own cluster tests begin with.
        let in_multi: Vec<Vec<&str>> = vec![
            vec!["MULTI"],
            vec!["CLUSTER", "COUNTKEYSINSLOT", &foo_slot],
            vec!["CLUSTER", "GETKEYSINSLOT", &foo_slot, "10"],
            vec!["DBSIZE"],
            vec!["FLUSHALL"],
            vec!["CLUSTER", "RESET", "HARD"],
            vec!["CLUSTER", "SET-CONFIG-EPOCH", "3"],
            vec!["EXEC"],
            vec!["CLUSTER", "COUNTKEYSINSLOT", &foo_slot],
        ];
        for args in &in_multi {
            transcript.push(format!(
                "{args:?} -> {}",
                neutral(&c.cmd(args), &id, node.port)
            ));
        }
        let info = text(&c.cmd(&["CLUSTER", "INFO"]));
        let epoch = info.lines().find(|l| l.starts_with("cluster_my_epoch:"));
        transcript.push(format!("{epoch:?}"));
        assert_ne!(text(&c.cmd(&["CLUSTER", "MYID"])), id);
        transcripts.push(transcript);
    }
    let (ours, theirs) = (&transcripts[0], &transcripts[1]);
    for (a, b) in ours.iter().zip(theirs) {
        assert_eq!(
            a, b,
            "redline-server (left) and redis-server (right) differ"
        );
    }
    assert_eq!(ours.len(), theirs.len());
}

/// A forked Lua debugging session (SCRIPT DEBUG YES) on a cluster node meets the
/// cluster's checks as a script on the node does: a `no-cluster` script is refused
/// (after the `<endsession>` mark), and a key of a slot the node does not serve fails
/// the script, while one it serves is written in the session's copy only.
#[test]
fn a_forked_debugging_session_meets_the_cluster_checks() {
    let mut transcripts = Vec::new();
    for redline in [true, false] {
        let args = [
            "--cluster-enabled",
            "yes",
            "--cluster-require-full-coverage",
            "no",
            "--save",
            "",
        ];
        let node = if redline {
            AnyServer::redline(&args)
        } else {
            AnyServer::redis(&args)
        };
        let port = node.port;
        let mut c = conn(port);
        c.cmd(&["CLUSTER", "ADDSLOTSRANGE", "0", "8000"]);
        wait_until("cluster_state:ok", || {
            text(&conn(port).cmd(&["CLUSTER", "INFO"])).contains("cluster_state:ok")
        });
        assert!(key_slot(b"bar") <= 8000 && key_slot(b"foo") > 8000);
        let mut transcript = Vec::new();
        let mut d = conn(port);
        transcript.push(text(&d.cmd(&["SCRIPT", "DEBUG", "YES"])));
        transcript.push(text(&d.cmd(&[
            "EVAL",
            "#!lua flags=no-cluster\nreturn 1",
            "0",
        ])));
        transcript.push(text(&d.read().unwrap_or(Frame::Null)));
        let mut e = conn(port);
        transcript.push(text(&e.cmd(&["SCRIPT", "DEBUG", "YES"])));
        let script = "redis.call('set','bar','1')\nreturn redis.call('get','foo')";
        transcript.push(text(&e.cmd(&["EVAL", script, "0"])));
        transcript.push(text(&e.cmd(&["c"])));
        transcript.push(text(&e.read().unwrap_or(Frame::Null)));
        transcript.push(text(&c.cmd(&["EXISTS", "bar"])));
        transcripts.push(transcript);
    }
    assert_eq!(transcripts[0], transcripts[1]);
}

/// Redis queues nothing more once a transaction is bound to fail (a command refused,
/// a watched key changed), so EXEC's slot check sees only what came before: EXEC
/// answers EXECABORT or a null reply, not CROSSSLOT; and CLIENT LIST counts only what
/// was queued.
#[test]
fn a_doomed_transaction_queues_nothing_more_like_redis() {
    let mut transcripts = Vec::new();
    for redline in [true, false] {
        let node = cluster_node(redline);
        let mut c = conn(node.port);
        c.ok(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
        wait_until("cluster_state:ok", || {
            text(&c.cmd(&["CLUSTER", "INFO"])).contains("cluster_state:ok")
        });
        let mut other = conn(node.port);
        let multi_count = |other: &mut common::Conn| {
            let list = text(&other.cmd(&["CLIENT", "LIST"]));
            let counts = list.split_whitespace().filter(|f| f.starts_with("multi="));
            counts.map(str::to_owned).collect::<Vec<_>>().join(",")
        };
        let mut transcript = Vec::new();
        let mut run = |c: &mut common::Conn, other: &mut common::Conn, script: &[&[&str]]| {
            for args in script {
                transcript.push(format!("{args:?} -> {}", text(&c.cmd(args))));
            }
            transcript.push(format!("CLIENT LIST: {}", multi_count(other)));
        };
        let script: &[&[&str]] = &[
            &["MULTI"],
            &["SET", "k1", "a"],
            &["MGET", "k1", "k2"],
            &["SET", "k2", "b"],
            &["GET", "k3"],
        ];
        run(&mut c, &mut other, script);
        run(&mut c, &mut other, &[&["EXEC"], &["MGET", "k1", "k2"]]);
        let script: &[&[&str]] = &[
            &["WATCH", "k1"],
            &["SET", "k1", "x"],
            &["MULTI"],
            &["SET", "k2", "b"],
            &["SET", "k3", "c"],
        ];
        run(&mut c, &mut other, script);
        run(&mut c, &mut other, &[&["EXEC"], &["GET", "k1"]]);
        // Changed by another client after the first queued command.
        let script: &[&[&str]] = &[&["WATCH", "k1"], &["MULTI"], &["SET", "k2", "b"]];
        run(&mut c, &mut other, script);
        other.cmd(&["SET", "k1", "y"]);
        run(&mut c, &mut other, &[&["SET", "k3", "c"], &["EXEC"]]);
        // Nothing doomed: both queued, and their slots differ.
        run(
            &mut c,
            &mut other,
            &[&["MULTI"], &["SET", "k2", "b"], &["SET", "k3", "c"]],
        );
        run(&mut c, &mut other, &[&["EXEC"]]);
        transcripts.push(transcript);
    }
    assert_eq!(transcripts[0], transcripts[1]);
}

/// A cluster that is down but serves reads judges EXEC by its own flags, as Redis does:
/// each queued write was refused as it came (and doomed the transaction), and a write
/// without keys, never checked, runs.
#[test]
fn a_down_cluster_lets_exec_run_what_it_queued_like_redis() {
    let mut transcripts = Vec::new();
    for redline in [true, false] {
        let node = cluster_node(redline);
        let mut c = conn(node.port);
        c.ok(&["CONFIG", "SET", "cluster-allow-reads-when-down", "yes"]);
        c.ok(&["CLUSTER", "ADDSLOTSRANGE", "0", "8191"]);
        let script: &[&[&str]] = &[
            &["SET", "k2", "v"],
            &["GET", "k2"],
            &["MULTI"],
            &["GET", "k2"],
            &["FLUSHALL"],
            &["EXEC"],
            &["MULTI"],
            &["GET", "k2"],
            &["SET", "k2", "v"],
            &["EXEC"],
            &["CLUSTER", "INFO"],
        ];
        let transcript: Vec<String> = script
            .iter()
            .map(|args| {
                let reply = text(&c.cmd(args));
                let reply = reply.lines().next().unwrap_or_default().to_owned();
                format!("{args:?} -> {reply}")
            })
            .collect();
        transcripts.push(transcript);
    }
    assert_eq!(transcripts[0], transcripts[1]);
}

#[test]
fn nodes_conf_keeps_a_node_and_is_not_shared() {
    let mut node = RedlineServer::builder()
        .args(["--cluster-enabled", "yes", "--save", ""])
        .start()
        .unwrap();
    let mut c = conn(node.port());
    let id = text(&c.cmd(&["CLUSTER", "MYID"]));
    c.ok(&["CLUSTER", "SET-CONFIG-EPOCH", "7"]);
    c.ok(&["CLUSTER", "ADDSLOTSRANGE", "100", "200"]);
    c.ok(&["CLUSTER", "ADDSLOTS", "300"]);
    let nodes_conf = node.dir().join("nodes.conf");
    let written = std::fs::read_to_string(&nodes_conf).unwrap();
    assert!(
        written.contains(&format!(
            "{id} :{}@{} myself,master - 0 0 7 connected 100-200 300\n",
            node.port(),
            node.port() + 10000
        )),
        "{written}"
    );
    assert!(
        written.ends_with("vars currentEpoch 7 lastVoteEpoch 0\n"),
        "{written}"
    );

    // A second node pointed at the same file is refused, as Redis refuses it.
    let shared = RedlineServer::builder()
        .args([
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            nodes_conf.to_str().unwrap(),
        ])
        .startup_timeout(Duration::from_secs(5))
        .start();
    assert!(shared.is_err(), "two nodes shared one nodes.conf");

    node.restart().unwrap();
    let mut c = conn(node.port());
    assert_eq!(text(&c.cmd(&["CLUSTER", "MYID"])), id);
    let info = text(&c.cmd(&["CLUSTER", "INFO"]));
    assert!(info.contains("cluster_my_epoch:7"), "{info}");
    assert!(info.contains("cluster_slots_assigned:102"), "{info}");

    // A broken file stops the node at start with Redis's words.
    node.kill();
    std::fs::write(&nodes_conf, "not a node line\n").unwrap();
    assert!(node.restart().is_err());
    assert!(
        node.log_tail()
            .contains("Unrecoverable error: corrupted cluster config file"),
        "{}",
        node.log_tail()
    );
}

/// The node serving `key`'s slot.
fn master_of(cluster: &mut RedisCluster, key: &str) -> usize {
    cluster.master_of_slot(key_slot(key.as_bytes())).unwrap()
}

fn set_keys(cluster: &mut RedisCluster, keys: &[String]) {
    for key in keys {
        let node = master_of(cluster, key);
        let reply = cluster
            .cmd(node, &["SET", key, &format!("v-{key}")])
            .unwrap();
        assert_eq!(reply, Reply::Simple("OK".into()));
    }
}

/// Every key reads back from its slot's current master, and from a replica once it has
/// caught up (replicas read with READONLY).
fn check_keys(cluster: &mut RedisCluster, keys: &[String]) {
    for key in keys {
        let node = master_of(cluster, key);
        let got = cluster.cmd(node, &["GET", key]).unwrap();
        assert_eq!(got.text(), Some(format!("v-{key}")), "{key} on node {node}");
    }
}

#[test]
fn a_mixed_cluster_replicates_and_fails_over_both_ways() {
    let mut cluster = RedisCluster::builder().mixed().start().unwrap();
    let keys: Vec<String> = (0..300).map(|i| format!("key:{i}")).collect();
    set_keys(&mut cluster, &keys);
    check_keys(&mut cluster, &keys);
    // INFO's count of bus links, as Redis counts them (two for each other node), on
    // both kinds of node.
    for node in 0..cluster.len() {
        let Reply::Bulk(Some(info)) = cluster.cmd(node, &["INFO", "clients"]).unwrap() else {
            panic!("INFO clients of node {node}");
        };
        let expected = format!("cluster_connections:{}", (cluster.len() - 1) * 2);
        assert!(
            String::from_utf8_lossy(&info)
                .lines()
                .any(|l| l == expected),
            "node {node}: {expected}"
        );
    }
    // Every replica holds its master's keys (replication crosses server kinds).
    let ranges = cluster.slot_ranges().unwrap();
    for range in &ranges {
        let master_keys = cluster.cmd(range.master, &["DBSIZE"]).unwrap().integer();
        for &replica in &range.replicas {
            wait_until("a replica to catch up", || {
                cluster.cmd(replica, &["DBSIZE"]).unwrap().integer() == master_keys
            });
        }
    }
    // Kill a redline-server master, then a redis-server one (even indices are redline).
    for want_redline in [true, false] {
        let ranges = cluster.slot_ranges().unwrap();
        let range = ranges
            .iter()
            .find(|r| (r.master % 2 == 0) == want_redline)
            .expect("a master of each kind")
            .clone();
        let victim = range.master;
        cluster.kill(victim).unwrap();
        let heir = cluster
            .wait_for_failover(victim, Duration::from_secs(30))
            .unwrap();
        assert!(range.replicas.contains(&heir));
        check_keys(&mut cluster, &keys);
        cluster.restart(victim).unwrap();
        cluster.wait_until_healthy(Duration::from_secs(60)).unwrap();
    }
    check_keys(&mut cluster, &keys);
    // A manual failover asked of a replica of each kind.
    for want_redline in [true, false] {
        let ranges = cluster.slot_ranges().unwrap();
        let (range, replica) = ranges
            .iter()
            .find_map(|r| {
                r.replicas
                    .iter()
                    .find(|&&n| (n % 2 == 0) == want_redline)
                    .map(|&n| (r.clone(), n))
            })
            .expect("a replica of each kind");
        assert_eq!(
            cluster.cmd(replica, &["CLUSTER", "FAILOVER"]).unwrap(),
            Reply::Simple("OK".into())
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while !cluster
            .slot_ranges()
            .map(|r| r.iter().any(|x| x.master == replica))
            .unwrap_or(false)
        {
            assert!(
                Instant::now() < deadline,
                "manual failover of {replica} ({range:?})"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        cluster.wait_until_healthy(Duration::from_secs(60)).unwrap();
        check_keys(&mut cluster, &keys);
    }
}

#[test]
fn publish_reaches_every_node_and_spublish_its_shard() {
    let mut cluster = RedisCluster::builder().mixed().start().unwrap();
    let ranges = cluster.slot_ranges().unwrap();
    let slot = key_slot(b"news");
    let shard = ranges
        .iter()
        .find(|r| (r.start..=r.end).contains(&slot))
        .unwrap()
        .clone();
    let mut subscribers = Vec::new();
    for node in 0..cluster.len() {
        let mut sub = conn(cluster.addr(node).port());
        sub.send(&["SUBSCRIBE", "news"]);
        sub.read().unwrap();
        subscribers.push(sub);
    }
    // SSUBSCRIBE on the shard's replica (READONLY is not needed for shard channels).
    let replica = shard.replicas[0];
    let mut shard_sub = conn(cluster.addr(replica).port());
    shard_sub.send(&["SSUBSCRIBE", "news"]);
    shard_sub.read().unwrap();
    let publisher = (shard.master + 1) % cluster.len();
    let mut c = conn(cluster.addr(publisher).port());
    c.cmd(&["PUBLISH", "news", "hello"]);
    for (node, sub) in subscribers.iter_mut().enumerate() {
        let got = sub.read().unwrap();
        assert_eq!(text(&got), "message news hello", "node {node}");
    }
    let mut c = conn(cluster.addr(shard.master).port());
    assert_eq!(
        text(&c.cmd(&["SPUBLISH", "news", "shard"])),
        "0",
        "the master itself has no shard subscriber"
    );
    assert_eq!(text(&shard_sub.read().unwrap()), "smessage news shard");
    // Each node counts a message once per link it is queued on, as Redis does: a
    // PUBLISH once per other node, an SPUBLISH once per replica of the shard.
    for node in 0..cluster.len() {
        let port = cluster.addr(node).port();
        let before = messages_sent(port, "publish");
        conn(port).cmd(&["PUBLISH", "news", "counted"]);
        let after = messages_sent(port, "publish");
        assert_eq!(after - before, cluster.len() as u64 - 1, "node {node}");
    }
    let port = cluster.addr(shard.master).port();
    let before = messages_sent(port, "publishshard");
    conn(port).cmd(&["SPUBLISH", "news", "counted"]);
    let after = messages_sent(port, "publishshard");
    assert_eq!(after - before, shard.replicas.len() as u64);
    // SPUBLISH elsewhere is redirected to the shard.
    let other = ranges
        .iter()
        .find(|r| r.master != shard.master)
        .unwrap()
        .master;
    let reply = text(&conn(cluster.addr(other).port()).cmd(&["SPUBLISH", "news", "x"]));
    assert!(reply.starts_with(&format!("MOVED {slot} ")), "{reply}");
    // CLUSTER LINKS, node by node: its link to it, then its link from it, as Redis
    // lists them (redis-py's test pairs them up).
    for node in 0..cluster.len() {
        let port = cluster.addr(node).port();
        wait_until(&format!("node {node}'s links in pairs"), || {
            links_in_pairs(&conn(port).cmd(&["CLUSTER", "LINKS"]))
        });
    }
}

/// CLUSTER INFO's count of bus messages of type `kind` the node at `port` sent.
fn messages_sent(port: u16, kind: &str) -> u64 {
    let info = text(&conn(port).cmd(&["CLUSTER", "INFO"]));
    let field = format!("cluster_stats_messages_{kind}_sent:");
    info.lines()
        .find_map(|line| line.strip_prefix(&field))
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// Whether a CLUSTER LINKS reply lists a `to` link then a `from` link per node.
fn links_in_pairs(reply: &Frame) -> bool {
    let Frame::Array(links) = reply else {
        return false;
    };
    let field = |link: &Frame, name: &str| match link {
        Frame::Array(kv) => kv
            .chunks(2)
            .find(|pair| text(&pair[0]) == name)
            .map(|pair| text(&pair[1])),
        _ => None,
    };
    !links.is_empty()
        && links.len() % 2 == 0
        && links.chunks(2).all(|pair| {
            field(&pair[0], "direction").as_deref() == Some("to")
                && field(&pair[1], "direction").as_deref() == Some("from")
                && field(&pair[0], "node") == field(&pair[1], "node")
        })
}

/// The flags `node` has in `observer`'s CLUSTER NODES.
fn flags_seen(cluster: &RedisCluster, observer: usize, node: usize) -> String {
    let nodes = cluster
        .cmd(observer, &["CLUSTER", "NODES"])
        .unwrap()
        .text()
        .unwrap_or_default();
    let id = cluster.node_id(node);
    nodes
        .lines()
        .find(|l| l.starts_with(id))
        .and_then(|l| l.split(' ').nth(2))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_replica_moves_to_an_orphaned_master_and_nofailover_spreads() {
    let mut cluster = RedisCluster::builder()
        .redline()
        .masters(3)
        .replicas_per_master(2)
        .node_timeout(Duration::from_millis(1000))
        .start()
        .unwrap();
    let ranges = cluster.slot_ranges().unwrap();
    let orphan = ranges[0].clone();
    // `cluster-replica-no-failover` shows as a flag of the replica on the other nodes.
    let careful = ranges[1].replicas[0];
    cluster
        .cmd(
            careful,
            &["CONFIG", "SET", "cluster-replica-no-failover", "yes"],
        )
        .unwrap();
    wait_until("the nofailover flag to spread", || {
        flags_seen(&cluster, orphan.master, careful).contains("nofailover")
    });
    // The first master loses both replicas; one replica of the others (which keep two)
    // moves to it once the loss is a FAIL and 5 s have passed.
    for &replica in &orphan.replicas {
        cluster.kill(replica).unwrap();
    }
    let orphan_id = cluster.node_id(orphan.master).to_string();
    let deadline = Instant::now() + Duration::from_secs(40);
    let moved = loop {
        let nodes = text(&conn(cluster.addr(orphan.master).port()).cmd(&["CLUSTER", "NODES"]));
        let replica = nodes.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            // Flags are compared whole: `nofailover` is not `fail`.
            let flags: Vec<&str> = fields[2].split(',').collect();
            let live_replica = flags.contains(&"slave") && !flags.contains(&"fail");
            (live_replica && fields[3] == orphan_id)
                .then(|| (0..cluster.len()).find(|&n| cluster.node_id(n) == fields[0]))
                .flatten()
                .filter(|n| !orphan.replicas.contains(n))
        });
        if let Some(n) = replica {
            break n;
        }
        assert!(
            Instant::now() < deadline,
            "no replica moved to the orphaned master:\n{nodes}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(ranges[1..].iter().any(|r| r.replicas.contains(&moved)));
    // Only one moved: every other master keeps a replica.
    std::thread::sleep(Duration::from_secs(2));
    for range in &ranges[1..] {
        let left = range.replicas.iter().filter(|&&r| r != moved).count();
        assert!(left >= 1, "{range:?} lost its replicas");
    }
}

#[test]
fn a_restarted_replica_keeps_keys_past_their_deadline_for_its_master() {
    let mut cluster = RedisCluster::builder().redline().start().unwrap();
    let range = cluster.slot_ranges().unwrap()[0].clone();
    let (master, replica) = (range.master, range.replicas[0]);
    let tag = (0..)
        .map(|i| format!("t{i}"))
        .find(|t| (range.start..=range.end).contains(&key_slot(t.as_bytes())))
        .unwrap();
    for i in 0..50 {
        let key = format!("{{{tag}}}:{i}");
        cluster
            .cmd(master, &["SET", &key, "v", "PX", "1500"])
            .unwrap();
    }
    cluster
        .cmd(master, &["SET", &format!("{{{tag}}}:kept"), "v"])
        .unwrap();
    let master_keys = cluster.cmd(master, &["DBSIZE"]).unwrap().integer();
    wait_until("the replica to catch up", || {
        cluster.cmd(replica, &["DBSIZE"]).unwrap().integer() == master_keys
    });
    cluster.cmd(replica, &["SAVE"]).unwrap();
    cluster.kill(replica).unwrap();
    cluster
        .cmd(master, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"])
        .unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    // Its nodes.conf says replica: it loads the expired keys and leaves them to the
    // master's DELs, as a configured replica does.
    cluster.restart(replica).unwrap();
    // Several turns of its expiry cycle later (10 a second), they are still there:
    // loaded deadlines are its master's to enforce, not ones a client gave it.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        cluster.cmd(replica, &["DBSIZE"]).unwrap().integer(),
        master_keys
    );
    cluster
        .cmd(master, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"])
        .unwrap();
    wait_until("the master's DELs", || {
        cluster.cmd(replica, &["DBSIZE"]).unwrap().integer() == Some(1)
    });
}

#[test]
fn a_slot_being_migrated_serves_scripts_transactions_and_shard_subscribers() {
    let mut cluster = RedisCluster::builder().redline().start().unwrap();
    let ranges = cluster.slot_ranges().unwrap();
    let (from, to) = (ranges[0].master, ranges[1].master);
    let key = (0..)
        .map(|i| format!("m{i}"))
        .find(|k| (ranges[0].start..=ranges[0].end).contains(&key_slot(k.as_bytes())))
        .unwrap();
    let slot = key_slot(key.as_bytes()).to_string();
    let mut c = conn(cluster.addr(from).port());
    c.ok(&["SET", &key, "here"]);
    let to_id = cluster.node_id(to).to_string();
    c.ok(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id]);
    // The key is still here: a script's call and a transaction read it (their slot
    // checks read the shards the script or EXEC already holds).
    let script = "return redis.call('get', KEYS[1])";
    assert_eq!(text(&c.cmd(&["EVAL", script, "1", &key])), "here");
    c.ok(&["MULTI"]);
    assert_eq!(text(&c.cmd(&["GET", &key])), "QUEUED");
    assert_eq!(text(&c.cmd(&["EXEC"])), "here");
    // A missing key of the slot is asked for at the target.
    let other = format!("{{{key}}}x");
    let ask = text(&c.cmd(&["EVAL", script, "1", &other]));
    assert!(ask.starts_with("ASK "), "{ask}");
    c.ok(&["CLUSTER", "SETSLOT", &slot, "STABLE"]);
    assert_eq!(text(&c.cmd(&["EVAL", script, "1", &key])), "here");

    // Once the slot is another node's, the subscribers of its shard channels here are
    // unsubscribed and told so, each with the shard channels it has left.
    let channel = format!("{{{key}}}news");
    let mut sub = conn(cluster.addr(from).port());
    sub.send(&["SUBSCRIBE", "plain"]);
    sub.read().unwrap();
    sub.send(&["SSUBSCRIBE", &channel]);
    assert_eq!(
        text(&sub.read().unwrap()),
        format!("ssubscribe {channel} 1")
    );
    c.cmd(&["DEL", &key]);
    c.ok(&["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
    assert_eq!(
        text(&sub.read().unwrap()),
        format!("sunsubscribe {channel} 0")
    );
    // The client forgot it: unsubscribing from every shard channel names none, and it
    // is still subscribed to its plain channel.
    sub.send(&["SUNSUBSCRIBE"]);
    let none = text(&sub.read().unwrap());
    assert!(
        none.starts_with("sunsubscribe ") && none.ends_with(" 0"),
        "{none}"
    );
    sub.send(&["PING"]);
    assert_eq!(text(&sub.read().unwrap()), "pong ");
}

/// A node that forgets another (CLUSTER RESET, CLUSTER FORGET) closes both links with
/// it, as Redis frees a deleted node's links: the other node, which still knows this
/// one, connects again, but CLUSTER LINKS does not list that link until the two meet
/// again (Jedis's test reads zero links right after a soft reset).
#[test]
fn a_forgotten_node_s_links_leave_cluster_links_like_redis() {
    for redline in [true, false] {
        let (a, b) = (cluster_node(redline), cluster_node(redline));
        let mut ca = conn(a.port);
        let b_id = text(&conn(b.port).cmd(&["CLUSTER", "MYID"]));
        let links = |c: &mut common::Conn| match c.cmd(&["CLUSTER", "LINKS"]) {
            Frame::Array(links) => links.len(),
            other => panic!("CLUSTER LINKS: {other:?}"),
        };
        for forget in [
            &["CLUSTER", "RESET", "SOFT"][..],
            &["CLUSTER", "FORGET", &b_id],
        ] {
            ca.ok(&["CLUSTER", "MEET", "127.0.0.1", &b.port.to_string()]);
            wait_until("both links up", || links(&mut conn(a.port)) == 2);
            ca.ok(forget);
            // b keeps pinging a, whose new inbound link stays nameless.
            std::thread::sleep(Duration::from_millis(1500));
            assert_eq!(links(&mut ca), 0, "redline {redline}, after {forget:?}");
            // b forgets a too, so the next round meets afresh.
            conn(b.port).ok(&["CLUSTER", "RESET", "SOFT"]);
        }
    }
}

/// A bus message announced at nearly the largest length a node takes, and never sent,
/// costs the node no memory: the room for a message grows with the bytes that arrive.
/// Before, the announced 512 MB were allocated and zeroed at once, per connection,
/// for anyone who could reach the bus port.
#[test]
fn a_bus_message_announced_and_never_sent_costs_no_memory() {
    use std::io::Write;
    let node = RedlineServer::builder()
        .args(["--cluster-enabled", "yes", "--save", ""])
        .start()
        .unwrap();
    let bus = node.port() + 10000;
    let peers: Vec<_> = (0..4)
        .map(|_| {
            let mut peer = std::net::TcpStream::connect(("127.0.0.1", bus)).unwrap();
            peer.write_all(b"RCmb\x1f\xff\xff\xff").unwrap();
            peer.write_all(&[0u8; 4096]).unwrap();
            peer
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let used: u64 = common::info_field(node.port(), "used_memory")
        .parse()
        .unwrap();
    assert!(
        used < 64 << 20,
        "used_memory {used} with {} peers",
        peers.len()
    );
}

/// CLUSTER RESET of a replica empties its dataset as Redis's `emptyData` does: a client
/// tracking a key it read there is told to drop every key (a null invalidation).
#[test]
fn a_reset_replica_tells_tracking_clients_to_drop_every_key_like_redis() {
    let pushes = [true, false].map(|redline| {
        let (master, replica) = (cluster_node(redline), cluster_node(redline));
        let mut m = conn(master.port);
        m.ok(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
        m.ok(&["CLUSTER", "MEET", "127.0.0.1", &replica.port.to_string()]);
        let master_id = text(&m.cmd(&["CLUSTER", "MYID"]));
        let mut r = conn(replica.port);
        wait_until("the replica to know its master", || {
            text(&r.cmd(&["CLUSTER", "NODES"])).contains(&master_id)
        });
        r.ok(&["CLUSTER", "REPLICATE", &master_id]);
        wait_until("the master to serve its slots", || {
            m.cmd(&["SET", "k", "v"]) == Frame::Simple("OK".into())
        });
        r.ok(&["READONLY"]);
        wait_until("the replica's copy", || {
            r.cmd(&["GET", "k"]) == Frame::Bulk("v".into())
        });
        let mut tracking = conn(replica.port);
        tracking.cmd(&["HELLO", "3"]);
        tracking.ok(&["READONLY"]);
        tracking.ok(&["CLIENT", "TRACKING", "ON"]);
        assert_eq!(tracking.cmd(&["GET", "k"]), Frame::Bulk("v".into()));
        r.ok(&["CLUSTER", "RESET", "SOFT"]);
        common::show(&tracking.read().expect("the invalidation"))
    });
    assert_eq!(pushes[0], pushes[1]);
}
