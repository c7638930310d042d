//! The cluster client against a real 6-node Redis 7.0 cluster (3 masters, 3 replicas):
//! hash slots agree with `CLUSTER KEYSLOT`, keys over every slot read back, multi-key
//! commands split across slots give what one server gives, fan-out helpers combine
//! replies, pipelines route per command, seeds may be dead, replicas serve reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use redline::{
    Client, ClusterClient, ClusterConfig, Cmd, Error, Frame, ReadFrom, RelayCommand,
    ServerErrorKind,
};
use redline_resp::slot::key_slot;
use redline_testkit::{RedisCluster, RedisServer};

async fn start_cluster() -> RedisCluster {
    tokio::task::spawn_blocking(RedisCluster::start)
        .await
        .unwrap()
        .unwrap()
}

fn cluster_config(cluster: &RedisCluster) -> ClusterConfig {
    let mut cfg = ClusterConfig::from_urls(cluster.urls()).unwrap();
    cfg.node.command_timeout = Some(Duration::from_secs(10));
    cfg
}

/// 100,000 keys: tag edge cases, plain text, binary.
fn generated_keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = [
        &b""[..],
        b"{}",
        b"{}a",
        b"a{}",
        b"{a",
        b"a}",
        b"}a{",
        b"a{b}c{d}",
        b"{a}{b}",
        b"{{a}}",
        b"{}{a}",
        b"user:{42}:name",
        b"\x00\xff{\x01}",
        b"{\xff\xfe}",
    ]
    .iter()
    .map(|k| k.to_vec())
    .collect();
    let mut rng = fastrand::Rng::with_seed(7);
    let alphabet = b"ab{}:x";
    while keys.len() < 100_000 {
        let len = rng.usize(0..24);
        let key: Vec<u8> = match keys.len() % 3 {
            0 => (0..len).map(|_| rng.u8(..)).collect(),
            1 => (0..len)
                .map(|_| alphabet[rng.usize(..alphabet.len())])
                .collect(),
            _ => format!("key:{}", rng.u64(..)).into_bytes(),
        };
        keys.push(key);
    }
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slots_routing_and_multikey_commands() {
    // Two commands renamed on the servers are missing from the client's table: one with a
    // fixed key range, one whose keys move with its arguments.
    let cluster = tokio::task::spawn_blocking(|| {
        RedisCluster::builder()
            .args(["--rename-command", "STRLEN", "MYSTRLEN"])
            .args(["--rename-command", "ZINTERCARD", "MYZINTERCARD"])
            .start()
    })
    .await
    .unwrap()
    .unwrap();
    let client = ClusterClient::from_config(cluster_config(&cluster))
        .await
        .unwrap();

    // 1. CLUSTER KEYSLOT agreement, pipelined to one node in chunks.
    let node = Client::connect(&cluster.urls()[0]).await.unwrap();
    let keys = generated_keys();
    for chunk in keys.chunks(10_000) {
        let mut pipe = node.pipeline();
        for key in chunk {
            pipe.add(Cmd::new("CLUSTER").arg("KEYSLOT").arg(key.as_slice()));
        }
        let slots: Vec<u16> = pipe.query().await.unwrap();
        for (key, slot) in chunk.iter().zip(slots) {
            assert_eq!(key_slot(key), slot, "key {key:?}");
        }
    }

    // 2. One key in every slot: written and read back through the router, in parallel
    // pipelines, and each lands on its slot's owner (no MOVED was needed).
    let mut per_slot: Vec<Option<String>> = vec![None; 16384];
    let mut found = 0;
    let mut n = 0u64;
    while found < 16384 {
        let key = format!("slot-key:{n}");
        let slot = usize::from(key_slot(key.as_bytes()));
        if per_slot[slot].is_none() {
            per_slot[slot] = Some(key);
            found += 1;
        }
        n += 1;
    }
    let per_slot: Vec<String> = per_slot.into_iter().map(Option::unwrap).collect();
    for chunk in per_slot.chunks(4096) {
        let mut pipe = client.pipeline();
        for key in chunk {
            pipe.set(key.as_str(), format!("v-{key}"));
        }
        let _: Vec<()> = pipe.query().await.unwrap();
    }
    let mut reads = tokio::task::JoinSet::new();
    for key in per_slot.iter().step_by(7).cloned() {
        let client = client.clone();
        reads.spawn(async move { (client.get(key.as_str()).await.unwrap(), key) });
    }
    while let Some(read) = reads.join_next().await {
        let (value, key) = read.unwrap();
        assert_eq!(value.as_deref(), Some(format!("v-{key}").as_bytes()));
    }
    let mut pipe = client.pipeline();
    for key in &per_slot {
        pipe.get(key.as_str());
    }
    let values: Vec<Option<String>> = pipe.query().await.unwrap();
    for (key, value) in per_slot.iter().zip(values) {
        assert_eq!(value, Some(format!("v-{key}")));
    }
    assert_eq!(client.metrics().moved, 0);
    assert_eq!(client.dbsize().await.unwrap(), 16384);
    let everywhere = client.keys_everywhere("slot-key:*").await.unwrap();
    assert_eq!(everywhere.len(), 16384);
    let per_node = client.on_masters(Cmd::new("DBSIZE")).await.unwrap();
    assert_eq!(per_node.len(), 3);
    assert!(per_node
        .iter()
        .all(|(_, n)| matches!(n, Frame::Integer(n) if *n > 5000)));

    // 3. Multi-key commands over 1,000 keys in many slots equal one server's answers.
    let single = tokio::task::spawn_blocking(RedisServer::start)
        .await
        .unwrap()
        .unwrap();
    let one = Client::connect(&single.url()).await.unwrap();
    let mk: Vec<String> = (0..1000).map(|i| format!("mk:{i}")).collect();
    let pairs: Vec<(String, String)> = mk
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 != 0)
        .map(|(i, k)| (k.clone(), format!("value-{i}")))
        .collect();
    let mut asked: Vec<String> = mk.clone();
    asked.push("mk:5".into()); // repeated key
    asked.push("mk:missing".into());
    client.mset(pairs.iter().cloned()).await.unwrap();
    one.mset(pairs.iter().cloned()).await.unwrap();
    assert_eq!(
        client.mget(asked.iter()).await.unwrap(),
        one.mget(asked.iter()).await.unwrap()
    );
    assert_eq!(
        client.exists(asked.iter()).await.unwrap(),
        one.exists(asked.iter()).await.unwrap()
    );
    assert_eq!(
        client.touch(asked.iter()).await.unwrap(),
        one.touch(asked.iter()).await.unwrap()
    );
    let half = &asked[..500];
    assert_eq!(
        client.del(half.iter()).await.unwrap(),
        one.del(half.iter()).await.unwrap()
    );
    assert_eq!(
        client.unlink(asked.iter()).await.unwrap(),
        one.unlink(asked.iter()).await.unwrap()
    );
    assert_eq!(
        client.mget(asked.iter()).await.unwrap(),
        one.mget(asked.iter()).await.unwrap()
    );
    assert!(client.metrics().splits > 0);

    // 4. Other multi-key commands across slots: Redis's own CROSSSLOT, typed.
    let err = client
        .cmd(["SUNIONSTORE", "a", "b", "c"])
        .await
        .unwrap_err();
    assert_eq!(
        err.server_kind(),
        Some(&ServerErrorKind::CrossSlot),
        "{err:?}"
    );
    // A command neither the table nor the server knows: COMMAND INFO is asked once,
    // then any node answers with its own error.
    let err = client.cmd(["NOSUCHCMD", "x"]).await.unwrap_err();
    assert_eq!(err.server_kind(), Some(&ServerErrorKind::Err), "{err:?}");
    // Commands the servers know but the table does not: key positions learned from
    // COMMAND INFO once per name (a fixed range needs no further round trip), or from
    // COMMAND GETKEYS per call for movable keys; either way they reach the slot's owner.
    let learned_before = client.metrics().commands_learned;
    for i in 0..50 {
        let key = format!("renamed:{i}");
        client.set(&key[..], "x".repeat(i)).await.unwrap();
        let len: i64 = client
            .query(Cmd::new("MYSTRLEN").arg(&key[..]))
            .await
            .unwrap();
        assert_eq!(len, i as i64, "{key}");
        let (a, b) = (format!("{{z{i}}}a"), format!("{{z{i}}}b"));
        client
            .zadd_multiple(&a[..], [(1.0, "m"), (2.0, "n")])
            .await
            .unwrap();
        client.zadd(&b[..], 1.0, "m").await.unwrap();
        let card: i64 = client
            .query(Cmd::new("MYZINTERCARD").arg(2).arg(&a[..]).arg(&b[..]))
            .await
            .unwrap();
        assert_eq!(card, 1);
    }
    assert_eq!(
        client.metrics().commands_learned - learned_before,
        2,
        "each renamed command is asked about once"
    );
    let err = client
        .query::<i64>(Cmd::new("MYZINTERCARD").arg(2).arg("{x}a").arg("{y}b"))
        .await
        .unwrap_err();
    assert_eq!(
        err.server_kind(),
        Some(&ServerErrorKind::CrossSlot),
        "{err:?}"
    );
    assert_eq!(client.metrics().moved, 0, "learned keys route to the owner");

    // Same slot (hash tags) is fine; keys found past the first argument route right.
    client.sadd("{s}a", ["x"]).await.unwrap();
    client.sadd("{s}b", ["y"]).await.unwrap();
    let n: i64 = client
        .query(Cmd::new("SUNIONSTORE").arg("{s}c").arg("{s}a").arg("{s}b"))
        .await
        .unwrap();
    assert_eq!(n, 2);
    let v: i64 = client
        .query(
            Cmd::new("EVAL")
                .arg("return redis.call('SCARD', KEYS[1])")
                .arg(1)
                .arg("{s}c"),
        )
        .await
        .unwrap();
    assert_eq!(v, 2);

    // 5. A pipeline mixing slots, keyless and split commands, in order.
    let mut pipe = client.pipeline();
    pipe.set("p:1", "a")
        .set("p:2", "b")
        .cmd(["PING"])
        .mget(["p:1", "p:2", "p:3"])
        .cmd(["SUNIONSTORE", "x", "y", "z"])
        .del(["p:1", "p:2"]);
    let frames = pipe.query_frames().await.unwrap();
    assert_eq!(frames.len(), 6);
    assert_eq!(
        frames[3],
        Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(b"a")),
            Frame::Bulk(Bytes::from_static(b"b")),
            Frame::Null
        ])
    );
    assert!(matches!(&frames[4], Frame::Error(e) if e.starts_with(b"CROSSSLOT")));
    assert_eq!(frames[5], Frame::Integer(2));

    // Order holds within a pipeline even when commands are split across slots.
    let ord: Vec<(String, String)> = (0..50)
        .map(|i| (format!("ord:{i}"), i.to_string()))
        .collect();
    let ord_keys: Vec<&String> = ord.iter().map(|(k, _)| k).collect();
    for _ in 0..5 {
        let mut pipe = client.pipeline();
        pipe.mset(ord.iter().cloned())
            .mget(ord_keys.iter())
            .cmd(["DBSIZE"])
            .del(ord_keys.iter())
            .exists(ord_keys.iter())
            .set("ord:0", "again")
            .get("ord:0")
            .del(["ord:0"]);
        let (_, values, _, deleted, left, _, again, _): (
            (),
            Vec<String>,
            i64,
            i64,
            i64,
            (),
            String,
            i64,
        ) = pipe.query().await.unwrap();
        let want: Vec<String> = ord.iter().map(|(_, v)| v.clone()).collect();
        assert_eq!(values, want);
        assert_eq!((deleted, left, again.as_str()), (50, 0, "again"));
    }

    // 6. Fan-out with a response policy: FLUSHALL must reach every master.
    client.flushall().await.unwrap();
    assert_eq!(client.dbsize().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_and_replica_reads() {
    let mut cluster = start_cluster().await;
    // A dead first seed: a port nothing listens on.
    let dead = redline_testkit::ClosedPort::new().unwrap();
    let dead_port = dead.port();
    let replicas = cluster.replicas().unwrap();
    let seed = replicas[0];
    let mut cfg = ClusterConfig::from_urls([
        format!("redis://127.0.0.1:{dead_port}"),
        format!("redis://{}", cluster.addr(seed)),
    ])
    .unwrap();
    cfg.node.command_timeout = Some(Duration::from_secs(10));
    cfg.refresh_interval = Some(Duration::from_millis(200));
    let client = ClusterClient::from_config(cfg.clone()).await.unwrap();
    for i in 0..100 {
        client.set(format!("seed:{i}"), i).await.unwrap();
    }
    // The seed that answered leaves the cluster; the client no longer needs it.
    cluster.kill(seed).unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    client.refresh().await.unwrap();
    for i in 0..100 {
        let v: Option<i64> = client
            .query(Cmd::new("GET").arg(format!("seed:{i}")))
            .await
            .unwrap();
        assert_eq!(v, Some(i));
    }
    cluster.restart(seed).unwrap();
    let cluster = tokio::task::spawn_blocking(move || {
        cluster.wait_until_healthy(Duration::from_secs(30)).unwrap();
        cluster
    })
    .await
    .unwrap();

    // Read from replicas: GETs land on replicas (INFO commandstats), never on masters.
    let mut cfg = cluster_config(&cluster);
    cfg.read_from = ReadFrom::Replica;
    let reader = ClusterClient::from_config(cfg).await.unwrap();
    for (node, _) in reader
        .on_all_nodes(Cmd::new("CONFIG").arg("RESETSTAT"))
        .await
        .unwrap()
    {
        let _ = node;
    }
    for i in 0..300 {
        let key = format!("seed:{}", i % 100);
        let _: Option<i64> = reader.query(Cmd::new("GET").arg(key)).await.unwrap();
    }
    let stats = reader
        .on_all_nodes(Cmd::new("INFO").arg("commandstats"))
        .await
        .unwrap();
    let masters = reader.masters();
    let mut replica_gets = 0;
    for (addr, info) in &stats {
        let text = match info {
            Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            Frame::Verbatim { text, .. } => String::from_utf8_lossy(text).into_owned(),
            other => panic!("{other:?}"),
        };
        let gets = get_calls(&text);
        if masters.contains(addr) {
            assert_eq!(gets, 0, "master {addr} served GETs:\n{text}");
        } else {
            replica_gets += gets;
        }
    }
    assert_eq!(replica_gets, 300);
    assert!(reader.metrics().replica_reads >= 300);
    // A replica dying under replica reads: reads fall back to the master, no errors.
    let mut cluster = cluster;
    let victim = cluster.replicas().unwrap()[0];
    let reads = {
        let reader = reader.clone();
        tokio::spawn(async move {
            let mut errors = 0;
            for i in 0..2000 {
                let key = format!("seed:{}", i % 100);
                if reader
                    .query::<Option<i64>>(Cmd::new("GET").arg(key))
                    .await
                    .is_err()
                {
                    errors += 1;
                }
            }
            errors
        })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    cluster.kill(victim).unwrap();
    assert_eq!(reads.await.unwrap(), 0);

    // Per command: a client reading from masters can still ask a replica.
    let v: Option<i64> = client
        .query_from(Cmd::new("GET").arg("seed:1"), ReadFrom::Replica)
        .await
        .unwrap();
    assert_eq!(v, Some(1));
}

/// `calls=` of `cmdstat_get` in `INFO commandstats`.
fn get_calls(info: &str) -> u64 {
    let fields: HashMap<&str, &str> = info
        .lines()
        .filter_map(|l| l.strip_prefix("cmdstat_get:"))
        .flat_map(|l| l.split(','))
        .filter_map(|kv| kv.split_once('='))
        .collect();
    fields
        .get("calls")
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_password() {
    let certs = redline_testkit::TlsCerts::generate().unwrap();
    let cluster = {
        let certs = certs.clone();
        tokio::task::spawn_blocking(move || {
            RedisCluster::builder()
                .tls(&certs)
                .password("cluster-secret")
                .start()
        })
        .await
        .unwrap()
        .unwrap()
    };
    // The certificate name is given once and used for every node, whatever address the
    // cluster announces (here 127.0.0.1, while the name checked is the SNI test name).
    let seed = format!(
        "{}?ca_file={}&sni={}",
        cluster.urls()[0],
        certs.ca_cert_path().display(),
        redline_testkit::TlsCerts::SNI_NAME
    );
    assert!(seed.starts_with("rediss://"), "{seed}");
    let client = ClusterClient::connect([seed.as_str()]).await.unwrap();
    let pairs: Vec<(String, String)> = (0..200)
        .map(|i| (format!("t:{i}"), i.to_string()))
        .collect();
    client.mset(pairs.iter().cloned()).await.unwrap();
    let keys: Vec<&String> = pairs.iter().map(|(k, _)| k).collect();
    let values: Vec<Option<String>> = client
        .query(Cmd::new("MGET").args(keys.iter()))
        .await
        .unwrap();
    assert!(values
        .iter()
        .zip(&pairs)
        .all(|(v, (_, want))| v.as_deref() == Some(want.as_str())));
    assert_eq!(client.masters().len(), 3);

    // A wrong password is an authentication error at connect time.
    let wrong = seed.replace("cluster-secret", "nope");
    let err = ClusterClient::connect([wrong.as_str()]).await.unwrap_err();
    assert!(matches!(err, Error::Auth { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_blocking_and_shard_pubsub() {
    let mut cluster = start_cluster().await;
    let client = ClusterClient::from_config(cluster_config(&cluster))
        .await
        .unwrap();

    // Transactions on one slot (hash tags); across slots refused before sending.
    client.set("acct:{7}:a", 100).await.unwrap();
    let (a, b): (i64, i64) = client
        .pipeline()
        .atomic()
        .decr_by("acct:{7}:a", 10)
        .incr_by("acct:{7}:b", 10)
        .query()
        .await
        .unwrap();
    assert_eq!((a, b), (90, 10));
    let err = client
        .pipeline()
        .atomic()
        .incr("x:{1}")
        .incr("x:{2}")
        .query::<(i64, i64)>()
        .await
        .unwrap_err();
    assert_eq!(
        err.server_kind(),
        Some(&ServerErrorKind::CrossSlot),
        "{err:?}"
    );

    // WATCH on a dedicated connection to the slot's master.
    let mut conn = client.dedicated_for("acct:{7}:a").await.unwrap();
    conn.watch(["acct:{7}:a"]).await.unwrap();
    let _: () = conn.query(Cmd::new("MULTI")).await.unwrap();
    let _: () = conn
        .query(Cmd::new("SET").arg("acct:{7}:a").arg(1))
        .await
        .unwrap();
    let done: Vec<Frame> = conn.query(Cmd::new("EXEC")).await.unwrap();
    assert_eq!(done.len(), 1);
    drop(conn);

    // Blocking pops go to the keys' owner on a connection of their own.
    let popper = {
        let client = client.clone();
        tokio::spawn(async move { client.blpop(["q:{j}"], Duration::from_secs(10)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    client.rpush("q:{j}", ["job-1"]).await.unwrap();
    let (list, job) = popper.await.unwrap().unwrap().unwrap();
    assert_eq!((&list[..], &job[..]), (&b"q:{j}"[..], &b"job-1"[..]));
    // Given raw, a blocking command takes the same path.
    client.rpush("q:{j}", ["job-2"]).await.unwrap();
    let raw = client.cmd(["BRPOP", "q:{j}", "1"]).await.unwrap();
    assert!(
        matches!(raw, Frame::Array(ref v) if v.len() == 2),
        "{raw:?}"
    );
    let err = client
        .blpop(["q:{a}", "q:{b}"], Duration::from_millis(10))
        .await
        .unwrap_err();
    assert_eq!(
        err.server_kind(),
        Some(&ServerErrorKind::CrossSlot),
        "{err:?}"
    );

    // The blocking commands the cluster client shares with `Client`: BLMOVE on the keys'
    // owner, XREAD BLOCK on the stream's, WAIT on a master.
    client.rpush("q:{j}", ["job-3"]).await.unwrap();
    let short = Duration::from_millis(50);
    let moved = client
        .blmove("q:{j}", "done:{j}", true, false, short)
        .await
        .unwrap();
    assert_eq!(moved.as_deref(), Some(&b"job-3"[..]));
    let none = client.blmove("q:{j}", "done:{j}", true, false, short);
    assert_eq!(none.await.unwrap(), None);
    client.xadd("ev:{s}", "1-1", [("f", "v")]).await.unwrap();
    let read = client
        .xread_block([("ev:{s}", "0")], None, short)
        .await
        .unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].1[0].id, "1-1");
    let nothing = client.xread_block([("ev:{s}", "$")], None, short);
    assert!(nothing.await.unwrap().is_empty());
    assert!(client.wait(0, short).await.unwrap() <= 1);
    assert_eq!(client.publish("plain-channel", "x").await.unwrap(), 0);

    // Scripts route by their keys; Script falls back to EVAL on a node that lacks it.
    let script = redline::Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    for i in 0..20 {
        let n: i64 = script
            .run(&client, [format!("script:{i}")], [i])
            .await
            .unwrap();
        assert_eq!(n, i);
    }
    let n: i64 = script
        .run_on_cluster(&client, ["script:0"], [1])
        .await
        .unwrap();
    assert_eq!(n, 1);
    let sha = client.script_load("return 7").await.unwrap();
    assert_eq!(
        client.script_exists([&sha, "0000"]).await.unwrap(),
        [true, false]
    );
    let seven: i64 = client.evalsha(&sha, ["anywhere"], [0u8; 0]).await.unwrap();
    assert_eq!(seven, 7);

    // Shard channels: subscribed on the slot's owner, followed when the slot moves.
    let channel = "news:{n}";
    let slot = key_slot(b"n");
    let mut subs = client.shard_subscriber();
    subs.ssubscribe([channel]).await.unwrap();
    assert_eq!(client.spublish(channel, "before").await.unwrap(), 1);
    let m = tokio::time::timeout(Duration::from_secs(5), subs.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&m.payload[..], b"before");

    let Migration { slot_s, to_id, .. } = begin_migration(&mut cluster, slot);
    for node in cluster.masters().unwrap() {
        cluster
            .cmd(node, &["CLUSTER", "SETSLOT", &slot_s, "NODE", &to_id])
            .unwrap();
    }
    client.refresh().await.unwrap();
    let mut received = None;
    for _ in 0..50 {
        client.spublish(channel, "after").await.unwrap();
        if let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(200), subs.next()).await {
            received = Some(m);
            break;
        }
    }
    let m = received.expect("the subscription did not follow the slot");
    assert_eq!(&m.payload[..], b"after");

    ask_redirects_during_a_migration(&mut cluster, &client).await;
}

/// A slot being moved from its master to another one.
struct Migration {
    from: usize,
    to: usize,
    slot_s: String,
    to_id: String,
}

/// Marks `slot` IMPORTING on another master and MIGRATING on its owner, the first step of
/// `redis-cli --cluster reshard`; `CLUSTER SETSLOT .. NODE` on every master ends it.
fn begin_migration(cluster: &mut RedisCluster, slot: u16) -> Migration {
    let from = cluster.master_of_slot(slot).unwrap();
    let to = cluster
        .masters()
        .unwrap()
        .into_iter()
        .find(|&m| m != from)
        .unwrap();
    let slot_s = slot.to_string();
    let (from_id, to_id) = (
        cluster.node_id(from).to_owned(),
        cluster.node_id(to).to_owned(),
    );
    cluster
        .cmd(to, &["CLUSTER", "SETSLOT", &slot_s, "IMPORTING", &from_id])
        .unwrap();
    cluster
        .cmd(from, &["CLUSTER", "SETSLOT", &slot_s, "MIGRATING", &to_id])
        .unwrap();
    Migration {
        from,
        to,
        slot_s,
        to_id,
    }
}

/// A slot half-way through a migration, as `redis-cli --cluster reshard` leaves it
/// between its MIGRATE calls: keys already moved answer ASK on the source, and the
/// client follows with ASKING + the command on the target, without touching its map.
async fn ask_redirects_during_a_migration(cluster: &mut RedisCluster, client: &ClusterClient) {
    let (moved_key, staying_key, new_key) = ("ask:{m}:moved", "ask:{m}:stays", "ask:{m}:new");
    let slot = key_slot(b"m");
    client.set(moved_key, "moved value").await.unwrap();
    client.set(staying_key, "staying value").await.unwrap();
    let Migration {
        from,
        to,
        slot_s,
        to_id,
    } = begin_migration(cluster, slot);
    let target = cluster.addr(to);
    let (host, port) = (target.ip().to_string(), target.port().to_string());
    let migrated = cluster
        .cmd(
            from,
            &["MIGRATE", &host, &port, "", "0", "5000", "KEYS", moved_key],
        )
        .unwrap();
    assert_eq!(migrated.text().as_deref(), Some("OK"), "{migrated:?}");

    let before = client.metrics();
    // Moved key: ASK from the source, served by the target.
    let got = client.get(moved_key).await.unwrap();
    assert_eq!(got.as_deref(), Some(&b"moved value"[..]));
    // Key not yet moved: the source still serves it, no redirect.
    let got = client.get(staying_key).await.unwrap();
    assert_eq!(got.as_deref(), Some(&b"staying value"[..]));
    // New key in a migrating slot: the source answers ASK, the write lands on the target.
    client.set(new_key, "new value").await.unwrap();
    let after = client.metrics();
    assert!(
        after.ask >= before.ask + 2,
        "ASK redirects not followed: {before:?} -> {after:?}"
    );
    assert_eq!(
        after.moved, before.moved,
        "ASK must not be handled as MOVED"
    );

    // The same in one pipeline, between keys of other slots (other masters too): each
    // redirected reply lands in its own place.
    let others: Vec<String> = (0..64)
        .map(|i| format!("ask:other:{i}"))
        .filter(|k| key_slot(k.as_bytes()) != slot)
        .take(6)
        .collect();
    for key in &others {
        client.set(key, key.as_str()).await.unwrap();
    }
    let mut pipe = client.pipeline();
    let mut expected = Vec::new();
    for (i, key) in others.iter().enumerate() {
        pipe.get(key);
        expected.push(Some(key.clone()));
        let (in_slot, value) = if i % 2 == 0 {
            (moved_key, "moved value")
        } else {
            (staying_key, "staying value")
        };
        pipe.get(in_slot);
        expected.push(Some(value.to_owned()));
    }
    let before = client.metrics();
    let got: Vec<Option<String>> = pipe.query().await.unwrap();
    assert_eq!(got, expected);
    assert!(
        client.metrics().ask >= before.ask + 3,
        "pipeline ASKs not followed"
    );
    // And relayed as encoded bytes: the ASKed replies are decoded to be followed, the
    // others forwarded as the nodes sent them.
    let requests: Vec<Bytes> = others
        .iter()
        .enumerate()
        .flat_map(|(i, key)| {
            [
                key.as_str(),
                if i % 2 == 0 { moved_key } else { staying_key },
            ]
        })
        .map(|key| encode(&["GET", key]))
        .collect();
    let before = client.metrics();
    let got = relayed(client, &requests).await;
    let want: Vec<Vec<u8>> = expected
        .iter()
        .map(|v| bulk(v.as_deref().unwrap()))
        .collect();
    assert_eq!(got, want);
    assert!(
        client.metrics().ask >= before.ask + 3,
        "relay ASKs not followed"
    );

    // Finish the migration as redis-cli does; the client then learns the new owner from
    // a MOVED and every key reads back.
    cluster
        .cmd(
            from,
            &[
                "MIGRATE",
                &host,
                &port,
                "",
                "0",
                "5000",
                "KEYS",
                staying_key,
            ],
        )
        .unwrap();
    for node in cluster.masters().unwrap() {
        cluster
            .cmd(node, &["CLUSTER", "SETSLOT", &slot_s, "NODE", &to_id])
            .unwrap();
    }
    // The new key was written on the target, not the source.
    let on_source = cluster.cmd(from, &["DBSIZE"]).unwrap().integer();
    let on_target = cluster.cmd(to, &["EXISTS", new_key]).unwrap().integer();
    assert_eq!(
        on_target,
        Some(1),
        "new key not on the target (source DBSIZE {on_source:?})"
    );
    // The first command to reach the old owner is answered MOVED: relayed, it is
    // followed and the map patched.
    let before = client.metrics();
    let got = relayed(client, &[encode(&["GET", staying_key])]).await;
    assert_eq!(got, [bulk("staying value")]);
    assert!(
        client.metrics().moved > before.moved,
        "relay MOVED not followed"
    );
    for (key, value) in [
        (moved_key, "moved value"),
        (staying_key, "staying value"),
        (new_key, "new value"),
    ] {
        let got = client.get(key).await.unwrap();
        assert_eq!(got.as_deref(), Some(value.as_bytes()), "{key}");
    }
}

fn encode(args: &[&str]) -> Bytes {
    Cmd::from_args(args.iter().copied()).unwrap().to_bytes()
}

fn bulk(value: &str) -> Vec<u8> {
    format!("${}\r\n{value}\r\n", value.len()).into_bytes()
}

/// Encoded commands read for `relay`.
fn relay_commands(requests: &[Bytes]) -> Vec<RelayCommand> {
    requests
        .iter()
        .map(|request| RelayCommand::new(request.clone()).unwrap())
        .collect()
}

/// `relay`'s replies, each required to be one.
async fn relayed(client: &ClusterClient, requests: &[Bytes]) -> Vec<Vec<u8>> {
    client
        .relay(&relay_commands(requests))
        .await
        .into_iter()
        .map(|reply| reply.unwrap().to_vec())
        .collect()
}

/// Commands relayed as bytes get the replies the nodes sent, byte for byte as one
/// redis-server sends them: every type, large values split over many reads, error
/// replies, keyless commands and cross-slot splits in order with the rest; what cannot be
/// relayed is refused alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_forwards_encoded_commands_and_replies() {
    let cluster = start_cluster().await;
    let client = ClusterClient::from_config(cluster_config(&cluster))
        .await
        .unwrap();
    let single = tokio::task::spawn_blocking(RedisServer::start)
        .await
        .unwrap()
        .unwrap();
    let reference = Client::connect(&single.url()).await.unwrap();

    let big = "v".repeat(300_000);
    let scripts: Vec<Vec<String>> = [
        vec!["SET", "s:1", "one"],
        vec!["SET", "s:big", &big],
        vec!["RPUSH", "l:1", "a", "b", "c"],
        vec!["HSET", "h:1", "f", "1", "g", "2"],
        vec!["ZADD", "z:1", "1.5", "m"],
        vec!["GET", "s:1"],
        vec!["GET", "s:big"],
        vec!["GET", "missing"],
        vec!["LRANGE", "l:1", "0", "-1"],
        vec!["HGETALL", "h:1"],
        vec!["ZRANGE", "z:1", "0", "-1", "WITHSCORES"],
        vec!["INCR", "s:1"],
        vec!["LPOP", "s:1"],
        vec!["MSET", "m:a", "1", "m:b", "2", "m:c", "3"],
        vec!["MGET", "m:a", "s:1", "missing", "m:c"],
        vec!["DBSIZE"],
        vec!["EXISTS", "m:a", "m:b", "nope"],
        vec!["TTL", "s:1"],
        vec!["NOSUCHCOMMAND", "x"],
        vec!["GET"],
        vec!["DEL", "m:a", "m:b", "m:c", "s:big"],
        vec!["DBSIZE"],
    ]
    .iter()
    .map(|c| c.iter().map(|a| a.to_string()).collect())
    .collect();
    let requests: Vec<Bytes> = scripts
        .iter()
        .map(|c| encode(&c.iter().map(String::as_str).collect::<Vec<_>>()))
        .collect();
    let got = client.relay(&relay_commands(&requests)).await;
    let mut pipe = reference.pipeline();
    for args in &scripts {
        pipe.add(Cmd::from_args(args.iter()).unwrap());
    }
    let wanted = pipe.query_frames().await.unwrap();
    assert_eq!(got.len(), wanted.len());
    for ((args, reply), want) in scripts.iter().zip(got).zip(wanted) {
        let mut want_bytes = bytes::BytesMut::new();
        redline_resp::encode::frame(&mut want_bytes, &want);
        let reply = reply.unwrap();
        // Error texts name the command the same way; unknown-command errors also list
        // the arguments, which both servers print identically.
        assert_eq!(
            String::from_utf8_lossy(&reply),
            String::from_utf8_lossy(&want_bytes),
            "{args:?}"
        );
    }

    // Bytes that are not exactly one command are refused when read.
    for bad in [
        &b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nextra"[..],
        b"*2\r\n$3\r\nGET\r\n$1\r\n",
        b"*1\r\n$03\r\nGET\r\n",
        b"GET k\r\n",
    ] {
        let read = RelayCommand::new(Bytes::from_static(bad));
        assert!(matches!(read, Err(Error::Protocol(_))), "{read:?}");
    }
    // One request refused does not stop the others.
    let mixed = relay_commands(&[
        encode(&["SET", "r:1", "x"]),
        encode(&["BLPOP", "r:list", "0"]),
        encode(&["GET", "r:1"]),
    ]);
    assert!(!mixed[1].shares_connection());
    let got = client.relay(&mixed).await;
    assert_eq!(got[0].as_deref().ok(), Some(&b"+OK\r\n"[..]));
    assert!(
        matches!(got[1], Err(Error::NotMultiplexable { .. })),
        "{:?}",
        got[1]
    );
    assert_eq!(got[2].as_deref().ok(), Some(&b"$1\r\nx\r\n"[..]));
    assert!(client.relay(&[]).await.is_empty());
}
