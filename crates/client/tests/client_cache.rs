//! Server-assisted client-side caching, against real redis-server 7.0 and redline-server:
//! invalidation order, the in-flight race under load, reconnect flushes, the memory
//! bound, RESP2 refusal, BCAST mode, and a cluster resharding under a cached read load.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use redline::{CacheConfig, Client, ClusterClient, ClusterConfig, Config, Error, Frame, Protocol};
use redline_resp::slot::key_slot;
use redline_testkit::{RedisCluster, RedisServer, RedlineServer};

fn cached_config(url: &str, max_bytes: usize) -> Config {
    Config::from_url(url)
        .unwrap()
        .cache(max_bytes, Duration::from_secs(60))
}

async fn cached_client(url: &str) -> Client {
    Client::from_config(cached_config(url, 8 << 20))
        .await
        .unwrap()
}

/// A 3-master cluster without replicas.
fn three_masters() -> RedisCluster {
    RedisCluster::builder()
        .masters(3)
        .replicas_per_master(0)
        .start()
        .unwrap()
}

/// A cluster client config caching up to `max_bytes` for a minute.
fn cached_cluster_config(cluster: &RedisCluster, max_bytes: usize) -> ClusterConfig {
    let mut cfg = ClusterConfig::from_urls(cluster.urls()).unwrap();
    cfg.node = cfg.node.cache(max_bytes, Duration::from_secs(60));
    cfg
}

fn b(s: &str) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(s.as_bytes()))
}

/// Waits (bounded) until `done` holds.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

// ---------------------------------------------------------------------------------------
// Reads are cached, and another client's write invalidates them in stream order.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_cached_and_invalidated_in_order_on_redis_server() {
    let server = RedisServer::start().unwrap();
    reads_are_cached_and_invalidated_in_order(&server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_cached_and_invalidated_in_order_on_redline_server() {
    let server = RedlineServer::start().unwrap();
    reads_are_cached_and_invalidated_in_order(&server.url()).await;
}

async fn reads_are_cached_and_invalidated_in_order(url: &str) {
    let cached = cached_client(url).await;
    let writer = Client::connect(url).await.unwrap();
    writer.set("s", "v1").await.unwrap();
    writer.hset("h", "f", "a").await.unwrap();
    writer.sadd("set", ["x", "y"]).await.unwrap();

    // Miss, then hit.
    assert_eq!(cached.cached_get("s").await.unwrap(), b("v1"));
    assert_eq!(cached.cached_get("s").await.unwrap(), b("v1"));
    let stats = cached.cache_stats().unwrap();
    assert_eq!((stats.hits, stats.misses), (1, 1), "{stats:?}");
    assert_eq!(cached.cached_hget("h", "f").await.unwrap(), b("a"));
    let all: HashMap<Bytes, Bytes> = cached.cached_hgetall("h").await.unwrap();
    assert_eq!(all.len(), 1);
    let members: HashSet<Bytes> = cached.cached_smembers("set").await.unwrap();
    assert_eq!(members.len(), 2);
    let len = cached.cached_cmd(["STRLEN", "s"]).await.unwrap();
    assert_eq!(len, Frame::Integer(2));
    // MGET shares the GET entries: "s" is a hit, "missing" a miss.
    let values = cached.cached_mget(["s", "missing"]).await.unwrap();
    assert_eq!(values, vec![b("v1"), None]);
    assert_eq!(cached.cached_get("missing").await.unwrap(), None);
    let before = cached.cache_stats().unwrap();
    for _ in 0..2 {
        cached.cached_hget("h", "f").await.unwrap();
        cached.cached_hgetall("h").await.unwrap();
        cached.cached_smembers("set").await.unwrap();
        cached.cached_cmd(["STRLEN", "s"]).await.unwrap();
    }
    let after = cached.cache_stats().unwrap();
    assert_eq!(after.hits, before.hits + 8, "{before:?} -> {after:?}");
    assert_eq!(after.misses, before.misses);

    // Another client writes. Once its write has returned, one round trip of the cached
    // client's connection (any command) is enough: the server queued the invalidation
    // before that reply, and the client applies pushes in stream order.
    for round in 0..50 {
        let value = format!("w{round}");
        writer.set("s", &value).await.unwrap();
        writer.hset("h", "f", &value).await.unwrap();
        writer.sadd("set", [&value]).await.unwrap();
        cached.ping().await.unwrap();
        assert_eq!(cached.cached_get("s").await.unwrap(), b(&value));
        assert_eq!(cached.cached_hget("h", "f").await.unwrap(), b(&value));
        let all = cached.cached_hgetall("h").await.unwrap();
        assert_eq!(all.get(&b"f"[..]), b(&value).as_ref());
        let members = cached.cached_smembers("set").await.unwrap();
        assert!(members.contains(value.as_bytes()));
        let len = cached.cached_cmd(["STRLEN", "s"]).await.unwrap();
        assert_eq!(len, Frame::Integer(value.len() as i64));
        assert_eq!(cached.cached_mget(["s"]).await.unwrap(), vec![b(&value)]);
        // And served from memory again until the next write.
        assert_eq!(cached.cached_get("s").await.unwrap(), b(&value));
    }
    let stats = cached.cache_stats().unwrap();
    assert!(stats.invalidations >= 50, "{stats:?}");

    // FLUSHALL: ["invalidate", nil] flushes the whole cache.
    let flushes = stats.flushes;
    writer.cmd(["FLUSHALL"]).await.unwrap();
    cached.ping().await.unwrap();
    assert!(cached.cache_stats().unwrap().flushes > flushes);
    assert_eq!(cached.cached_get("s").await.unwrap(), None);

    // Only read-only commands with keys can be cached.
    for args in [&["SET", "k", "v"][..], &["DBSIZE"][..]] {
        match cached.cached_cmd(args.iter().copied()).await {
            Err(Error::NotCacheable { .. }) => {}
            other => panic!("{args:?}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// 64 readers on 1,000 hot keys while 4 writers write them: never a value older than the
// last write a reader observed.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_keys_under_writes_never_read_stale_on_redis_server() {
    let server = RedisServer::start().unwrap();
    hot_keys_under_writes_never_read_stale(&server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_keys_under_writes_never_read_stale_on_redline_server() {
    let server = RedlineServer::start().unwrap();
    hot_keys_under_writes_never_read_stale(&server.url()).await;
}

const HOT_KEYS: usize = 1_000;

/// The highest value of each key that a writer has seen acknowledged.
fn committed_table() -> Arc<Vec<AtomicI64>> {
    Arc::new((0..HOT_KEYS).map(|_| AtomicI64::new(0)).collect())
}

fn parse_counter(value: Option<Bytes>) -> i64 {
    value
        .map(|v| std::str::from_utf8(&v).unwrap().parse::<i64>().unwrap())
        .unwrap_or(0)
}

async fn hot_keys_under_writes_never_read_stale(url: &str) {
    let client = cached_client(url).await;
    // Half the writers write through the readers' client (read your writes), half
    // through another client (the server's invalidation pushes).
    let other = cached_client(url).await;
    let keys: Arc<Vec<String>> = Arc::new((0..HOT_KEYS).map(|i| format!("hot:{i}")).collect());
    let (local, remote) = (committed_table(), committed_table());
    let mut writers = Vec::new();
    for w in 0..4u64 {
        let (writer, committed) = match w % 2 {
            0 => (client.clone(), local.clone()),
            _ => (other.clone(), remote.clone()),
        };
        let keys = keys.clone();
        writers.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(w);
            for _ in 0..600 {
                let i = if rng.bool() {
                    rng.usize(0..100)
                } else {
                    rng.usize(0..HOT_KEYS)
                };
                let n = writer.incr(&keys[i]).await.unwrap();
                // Acknowledged: from now on, readers must see n or more.
                committed[i].fetch_max(n, Ordering::SeqCst);
            }
        }));
    }
    let mut readers = Vec::new();
    for r in 0..64u64 {
        let (client, keys) = (client.clone(), keys.clone());
        let (local, remote) = (local.clone(), remote.clone());
        readers.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(1000 + r);
            let mut seen = vec![0i64; HOT_KEYS];
            let mut synced = 0;
            for _ in 0..400 {
                // Hot set: most reads on the first 100 keys.
                let i = if rng.u8(..) < 200 {
                    rng.usize(0..100)
                } else {
                    rng.usize(0..HOT_KEYS)
                };
                let mut floor = local[i].load(Ordering::SeqCst).max(seen[i]);
                let other_write = remote[i].load(Ordering::SeqCst);
                if other_write > floor {
                    // Another client's write this reader knows of: one round trip on the
                    // cached connection makes its invalidation arrive first.
                    client.ping().await.unwrap();
                    floor = other_write;
                    synced += 1;
                }
                let got = parse_counter(client.cached_get(&keys[i]).await.unwrap());
                assert!(
                    got >= floor,
                    "stale read of {}: {got} after {floor} was observed",
                    keys[i]
                );
                seen[i] = got;
            }
            synced
        }));
    }
    for t in writers {
        t.await.unwrap();
    }
    let mut synced = 0;
    for t in readers {
        synced += t.await.unwrap();
    }
    // Quiet now: every cached value equals the server's.
    client.ping().await.unwrap();
    for (i, key) in keys.iter().enumerate() {
        let got = parse_counter(client.cached_get(key).await.unwrap());
        let want = local[i]
            .load(Ordering::SeqCst)
            .max(remote[i].load(Ordering::SeqCst));
        assert_eq!(got, want, "{key}");
    }
    let stats = client.cache_stats().unwrap();
    eprintln!("{stats:?}, {synced} reads after another client's write");
    assert!(stats.hits > 0 && stats.invalidations > 0, "{stats:?}");
}

// ---------------------------------------------------------------------------------------
// A lost connection flushes the cache, and the new one tracks again.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_flushes_the_cache_on_redis_server() {
    let server = RedisServer::start().unwrap();
    reconnect_flushes_the_cache(&server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_flushes_the_cache_on_redline_server() {
    let server = RedlineServer::start().unwrap();
    reconnect_flushes_the_cache(&server.url()).await;
}

async fn reconnect_flushes_the_cache(url: &str) {
    let cached = cached_client(url).await;
    let admin = Client::connect(url).await.unwrap();
    admin.set("r", "before").await.unwrap();
    assert_eq!(cached.cached_get("r").await.unwrap(), b("before"));
    assert_eq!(cached.cached_get("r").await.unwrap(), b("before"));
    let id: i64 = cached
        .query(redline::Cmd::new("CLIENT").arg("ID"))
        .await
        .unwrap();
    let flushes = cached.cache_stats().unwrap().flushes;

    // Kill the cached connection: its tracking goes with it, so this write is never
    // announced to the client.
    admin
        .cmd(["CLIENT", "KILL", "ID", &id.to_string()])
        .await
        .unwrap();
    admin.set("r", "while away").await.unwrap();
    eventually("the lost connection to flush the cache", || {
        cached.cache_stats().unwrap().flushes > flushes
    })
    .await;
    assert_eq!(cached.cache_stats().unwrap().entries, 0);
    // The next read reconnects (tracking on again) and reads the server.
    let mut got = cached.cached_get("r").await;
    if matches!(&got, Err(e) if e.is_connection_error()) {
        got = cached.cached_get("r").await;
    }
    assert_eq!(got.unwrap(), b("while away"));
    assert_eq!(cached.cached_get("r").await.unwrap(), b("while away"));
    // Tracking is on for the new connection.
    admin.set("r", "after").await.unwrap();
    cached.ping().await.unwrap();
    assert_eq!(cached.cached_get("r").await.unwrap(), b("after"));
}

// ---------------------------------------------------------------------------------------
// The byte and entry bounds hold.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bound_holds_on_redis_server() {
    let server = RedisServer::start().unwrap();
    memory_bound_holds(&server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bound_holds_on_redline_server() {
    let server = RedlineServer::start().unwrap();
    memory_bound_holds(&server.url()).await;
}

async fn memory_bound_holds(url: &str) {
    const BOUND: usize = 64 * 1024;
    let client = Client::from_config(cached_config(url, BOUND))
        .await
        .unwrap();
    let value = "x".repeat(200);
    let pairs: Vec<(String, &str)> = (0..2000)
        .map(|i| (format!("big:{i}"), &value[..]))
        .collect();
    client.mset(pairs.clone()).await.unwrap();
    for (key, _) in &pairs {
        assert_eq!(client.cached_get(key).await.unwrap(), b(&value));
        let stats = client.cache_stats().unwrap();
        assert!(stats.bytes <= BOUND, "{stats:?}");
    }
    let stats = client.cache_stats().unwrap();
    assert!(stats.evictions > 1000, "{stats:?}");
    assert!(stats.entries > 10, "{stats:?}");

    let mut cfg = Config::from_url(url).unwrap();
    let mut cache = CacheConfig::new(1 << 20, Duration::from_secs(60));
    cache.max_entries = 100;
    cfg.cache = Some(cache);
    let client = Client::from_config(cfg).await.unwrap();
    for (key, _) in pairs.iter().take(500) {
        client.cached_get(key).await.unwrap();
        assert!(client.cache_stats().unwrap().entries <= 100);
    }
    // Recently used entries survive, the oldest went first.
    let before = client.cache_stats().unwrap().hits;
    client.cached_get(&pairs[499].0).await.unwrap();
    assert_eq!(client.cache_stats().unwrap().hits, before + 1);
    client.cached_get(&pairs[0].0).await.unwrap();
    assert_eq!(client.cache_stats().unwrap().hits, before + 1);
}

// ---------------------------------------------------------------------------------------
// RESP2 is refused clearly; BCAST mode caches only its prefixes.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resp2_is_refused() {
    let server = RedisServer::start().unwrap();
    let mut cfg = cached_config(&server.url(), 1 << 20);
    cfg.protocol = Protocol::Resp2;
    match Client::from_config(cfg).await {
        Err(Error::Config(msg)) => assert!(msg.contains("RESP3"), "{msg}"),
        other => panic!("{other:?}"),
    }
    // A server that refuses HELLO 3 (here: HELLO renamed away) speaks RESP2 only.
    let old = RedisServer::builder()
        .args(["--rename-command", "HELLO", ""])
        .start()
        .unwrap();
    match Client::from_config(cached_config(&old.url(), 1 << 20)).await {
        Err(e @ Error::CacheNeedsResp3 { .. }) => {
            assert!(e.to_string().contains("needs RESP3"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    // Without the cache the same server is fine.
    let client = Client::connect(&old.url()).await.unwrap();
    client.ping().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bcast_mode_on_redis_server() {
    let server = RedisServer::start().unwrap();
    bcast_mode(&server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bcast_mode_on_redline_server() {
    let server = RedlineServer::start().unwrap();
    bcast_mode(&server.url()).await;
}

async fn bcast_mode(url: &str) {
    let mut cfg = Config::from_url(&format!("{url}?cache_bcast=user:")).unwrap();
    cfg.client_name = Some("bcast".into());
    let cached = Client::from_config(cfg).await.unwrap();
    let writer = Client::connect(url).await.unwrap();
    writer.set("user:1", "a").await.unwrap();
    writer.set("other", "x").await.unwrap();
    // In BCAST mode those writes are announced too: let their invalidation arrive first,
    // or it would (rightly) keep the first read below from being cached.
    cached.ping().await.unwrap();
    assert_eq!(cached.cached_get("user:1").await.unwrap(), b("a"));
    assert_eq!(cached.cached_get("user:1").await.unwrap(), b("a"));
    assert_eq!(cached.cached_get("other").await.unwrap(), b("x"));
    assert_eq!(cached.cached_get("other").await.unwrap(), b("x"));
    let stats = cached.cache_stats().unwrap();
    assert_eq!((stats.hits, stats.entries), (1, 1), "{stats:?}");
    writer.set("user:1", "b").await.unwrap();
    writer.set("other", "y").await.unwrap();
    cached.ping().await.unwrap();
    assert_eq!(cached.cached_get("user:1").await.unwrap(), b("b"));
    assert_eq!(cached.cached_get("other").await.unwrap(), b("y"));
}

// ---------------------------------------------------------------------------------------
// Cluster: slots move between masters under a cached read load; no stale value is served.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_resharding_under_cached_reads_serves_no_stale_value() {
    let mut cluster = three_masters();
    let cfg = cached_cluster_config(&cluster, 8 << 20);
    let client = ClusterClient::from_config(cfg).await.unwrap();

    // 8 hash tags (8 slots), 25 keys each.
    let tags: Vec<String> = (0..8).map(|t| format!("t{t}")).collect();
    let keys: Arc<Vec<String>> = Arc::new(
        tags.iter()
            .flat_map(|t| (0..25).map(move |i| format!("{{{t}}}:k{i}")))
            .collect(),
    );
    let committed: Arc<Vec<AtomicI64>> =
        Arc::new((0..keys.len()).map(|_| AtomicI64::new(0)).collect());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));

    let mut tasks = Vec::new();
    for w in 0..2u64 {
        let (client, keys, committed, stop) = (
            client.clone(),
            keys.clone(),
            committed.clone(),
            stop.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(w);
            while !stop.load(Ordering::SeqCst) {
                let i = rng.usize(0..keys.len());
                let n = client.incr(&keys[i]).await.unwrap();
                committed[i].fetch_max(n, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }));
    }
    for r in 0..16u64 {
        let (client, keys, committed, stop) = (
            client.clone(),
            keys.clone(),
            committed.clone(),
            stop.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(100 + r);
            let mut reads = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let i = rng.usize(0..keys.len());
                let floor = committed[i].load(Ordering::SeqCst);
                let got = parse_counter(client.cached_get(&keys[i]).await.unwrap());
                assert!(got >= floor, "stale {}: {got} < {floor}", keys[i]);
                reads += 1;
                if reads % 64 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }

    // Move every tag's slot to another master, key by key with MIGRATE, as
    // `redis-cli --cluster reshard` does, while the load runs.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for tag in &tags {
        let slot = key_slot(tag.as_bytes());
        move_slot(&mut cluster, slot);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.unwrap();
    }
    // Every cached value now equals the last acknowledged write.
    for node in cluster.masters().unwrap() {
        cluster.cmd(node, &["PING"]).unwrap();
    }
    client.masters(); // topology known
    for (i, key) in keys.iter().enumerate() {
        let got = parse_counter(client.cached_get(key).await.unwrap());
        assert_eq!(got, committed[i].load(Ordering::SeqCst), "{key}");
    }
    let stats = client.cache_stats().unwrap();
    let metrics = client.metrics();
    eprintln!("{stats:?} {metrics:?}");
    assert!(stats.hits > 0 && stats.invalidations > 0, "{stats:?}");
}

/// Moves `slot` to another master: IMPORTING/MIGRATING, MIGRATE of its keys in batches,
/// then `SETSLOT NODE` on every master.
fn move_slot(cluster: &mut RedisCluster, slot: u16) {
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
    let target = cluster.addr(to);
    let (host, port) = (target.ip().to_string(), target.port().to_string());
    loop {
        let keys = cluster
            .cmd(from, &["CLUSTER", "GETKEYSINSLOT", &slot_s, "5"])
            .unwrap();
        let keys: Vec<String> = keys
            .items()
            .unwrap_or_default()
            .iter()
            .filter_map(|k| k.text())
            .collect();
        if keys.is_empty() {
            break;
        }
        let mut args = vec!["MIGRATE", &host, &port, "", "0", "5000", "KEYS"];
        args.extend(keys.iter().map(String::as_str));
        let reply = cluster.cmd(from, &args).unwrap();
        assert_eq!(reply.text().as_deref(), Some("OK"), "{reply:?}");
    }
    for node in cluster.masters().unwrap() {
        cluster
            .cmd(node, &["CLUSTER", "SETSLOT", &slot_s, "NODE", &to_id])
            .unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// The example on the public API runs as documented.

#[path = "../examples/client_cache.rs"]
#[allow(dead_code)]
mod example;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_cache_example_passes_on_redis_server() {
    let server = RedisServer::start().unwrap();
    if let Err(e) = example::run(&server.url()).await {
        panic!("{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_cache_example_passes_on_redline_server() {
    let server = RedlineServer::start().unwrap();
    if let Err(e) = example::run(&server.url()).await {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------
// Pipelines of the caching client drop the entries of the keys they write.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_writes_drop_cached_entries_on_redis_server() {
    let server = RedisServer::start().unwrap();
    let client = cached_client(&server.url()).await;
    client.set("p", "1").await.unwrap();
    assert_eq!(client.cached_get("p").await.unwrap(), b("1"));
    for round in 2..50 {
        let (_, n): ((), i64) = client
            .pipeline()
            .set("p", round)
            .incr("p")
            .query()
            .await
            .unwrap();
        assert_eq!(n, round + 1);
        assert_eq!(
            client.cached_get("p").await.unwrap(),
            b(&(round + 1).to_string())
        );
    }
}

// ---------------------------------------------------------------------------------------
// A task looping on cache hits still lets other tasks run (hits take tokio's coop budget).

#[tokio::test(flavor = "current_thread")]
async fn cache_hits_yield_to_other_tasks() {
    let server = RedisServer::start().unwrap();
    let client = cached_client(&server.url()).await;
    client.set("y", "1").await.unwrap();
    client.cached_get("y").await.unwrap();
    let ticks = Arc::new(AtomicI64::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ticker = {
        let (ticks, stop) = (ticks.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                ticks.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
            }
        })
    };
    let reader = tokio::spawn(async move {
        for _ in 0..20_000 {
            client.cached_get("y").await.unwrap();
        }
        client.cached_mget(["y"]).await.unwrap();
    });
    reader.await.unwrap();
    // On one thread, the ticker ran only if the reader's hits yielded now and then.
    let seen = ticks.load(Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    ticker.await.unwrap();
    assert!(seen > 10, "the ticker ran {seen} times during 20,000 hits");
}

// ---------------------------------------------------------------------------------------
// Cluster: a slot that changes owner drops its cached entries when the client learns of it
// (a MOVED, or a topology refresh), even when the old owner never announces a change.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_slot_owner_change_drops_cached_entries() {
    let mut cluster = three_masters();
    let mut cfg = cached_cluster_config(&cluster, 1 << 20);
    // No periodic refresh: the client learns only from what this test does.
    cfg.refresh_interval = None;
    let client = ClusterClient::from_config(cfg).await.unwrap();

    for (tag, learn_by_moved) in [("mv1", true), ("mv2", false)] {
        let key = format!("{{{tag}}}:a");
        client.set(&key, "old").await.unwrap();
        assert_eq!(client.cached_get(&key).await.unwrap(), b("old"));
        assert_eq!(client.cached_get(&key).await.unwrap(), b("old"));

        // Copy the key to another master (the source keeps it: no invalidation), hand the
        // slot over, and change the value on the new owner behind the client's back.
        let slot = key_slot(tag.as_bytes());
        let from = cluster.master_of_slot(slot).unwrap();
        let to = cluster
            .masters()
            .unwrap()
            .into_iter()
            .find(|&m| m != from)
            .unwrap();
        let target = cluster.addr(to);
        let (host, port) = (target.ip().to_string(), target.port().to_string());
        let (from_id, to_id) = (
            cluster.node_id(from).to_owned(),
            cluster.node_id(to).to_owned(),
        );
        let slot_s = slot.to_string();
        cluster
            .cmd(to, &["CLUSTER", "SETSLOT", &slot_s, "IMPORTING", &from_id])
            .unwrap();
        cluster
            .cmd(from, &["CLUSTER", "SETSLOT", &slot_s, "MIGRATING", &to_id])
            .unwrap();
        let args = [
            "MIGRATE", &host, &port, "", "0", "5000", "COPY", "REPLACE", "KEYS", &key,
        ];
        let reply = cluster.cmd(from, &args).unwrap();
        assert_eq!(reply.text().as_deref(), Some("OK"), "{reply:?}");
        // The new owner first (it bumps its epoch), then the others, as redis-cli does.
        let mut masters = cluster.masters().unwrap();
        masters.sort_by_key(|&m| m != to);
        for node in masters {
            cluster
                .cmd(node, &["CLUSTER", "SETSLOT", &slot_s, "NODE", &to_id])
                .unwrap();
        }
        cluster.cmd(to, &["SET", &key, "new"]).unwrap();

        if learn_by_moved {
            // Any command for the slot meets a MOVED, which drops the slot's entries.
            let before = client.metrics().moved;
            client.set(format!("{{{tag}}}:other"), "x").await.unwrap();
            assert!(client.metrics().moved > before);
            assert_eq!(client.cached_get(&key).await.unwrap(), b("new"));
        } else {
            // A refresh may still get a view from a node that gossip has not settled
            // yet; the entry must go once the client's table names the new owner (no
            // invalidation ever comes for it, and its TTL is a minute).
            let mut got = None;
            for _ in 0..100 {
                client.refresh().await.unwrap();
                got = client.cached_get(&key).await.unwrap();
                if got == b("new") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(got, b("new"), "still cached after the refreshes");
        }
    }
}

// Relayed commands take their replies as bytes, on the same connections that carry the
// cache's invalidation pushes: a push between two replies must reach the cache, not a
// reply.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relayed_replies_and_invalidation_pushes_share_connections() {
    let cluster = three_masters();
    let cfg = cached_cluster_config(&cluster, 1 << 20);
    let cached = ClusterClient::from_config(cfg).await.unwrap();
    let writer = ClusterClient::from_config(ClusterConfig::from_urls(cluster.urls()).unwrap())
        .await
        .unwrap();
    let keys: Vec<String> = (0..12).map(|i| format!("relay:{i}")).collect();
    let get = |key: &str| redline::Cmd::new("GET").arg(key).to_bytes();
    let requests: Vec<redline::RelayCommand> = keys
        .iter()
        .map(|k| redline::RelayCommand::new(get(k)).unwrap())
        .collect();
    for round in 0..200 {
        let value = format!("v{round}");
        for key in &keys {
            // A write through the cached client drops its own entry; the read after it
            // is tracked again, so the next write elsewhere sends another invalidation.
            cached.set(key, &value).await.unwrap();
            assert_eq!(cached.cached_get(key).await.unwrap(), b(&value));
        }
        // Writes race the relayed reads: their pushes land between the replies.
        let write = async {
            for key in &keys {
                writer.set(key, format!("w{round}")).await.unwrap();
            }
        };
        let (replies, ()) = tokio::join!(cached.relay(&requests), write);
        for reply in replies {
            let reply = reply.unwrap();
            let mut buf = bytes::BytesMut::from(&reply[..]);
            let frame = redline_resp::parse(&mut buf).unwrap().unwrap();
            assert!(buf.is_empty(), "more than one frame: {reply:?}");
            assert!(matches!(frame, Frame::Bulk(_)), "{frame:?}");
        }
        // Every write has returned: relayed again, each read sees it, and the round trip
        // on each node's connection has brought the pushes queued before its replies.
        let latest = format!("w{round}");
        let want = format!("${}\r\n{latest}\r\n", latest.len());
        for reply in cached.relay(&requests).await {
            assert_eq!(String::from_utf8_lossy(&reply.unwrap()), want);
        }
        for key in &keys {
            assert_eq!(
                cached.cached_get(key).await.unwrap(),
                b(&latest),
                "round {round}: {key} served stale"
            );
        }
    }
    let stats = cached.cache_stats().unwrap();
    assert!(stats.invalidations >= 200 * keys.len() as u64, "{stats:?}");
}
