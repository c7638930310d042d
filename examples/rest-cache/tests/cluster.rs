//! `REDIS_CLUSTER=1`: each backend's cluster client against a real 3-master Redis Cluster.
//! Keys of many slots (so every master) are read twice (hit = miss bytes), and a write
//! invalidates the key wherever it lives.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{http, start};
use redline_testkit::RedisCluster;
use rest_cache::Backend;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_backend_on_a_cluster() {
    let mut cluster = RedisCluster::builder()
        .masters(3)
        .replicas_per_master(0)
        .start()
        .unwrap();
    let url = cluster.urls().join(",");
    for backend in Backend::ALL {
        for node in cluster.masters().unwrap() {
            cluster.cmd(node, &["FLUSHALL"]).unwrap();
        }
        let svc = start(backend, &url, true).await;
        let addr = svc.addr;
        for id in 1..=12 {
            let path = format!("/users/{id}");
            let miss = http(addr, "GET", &path, None).await;
            assert_eq!(miss.status, 200, "{backend:?} {path}: {}", miss.text());
            let hit = http(addr, "GET", &path, None).await;
            assert_eq!(hit.body, miss.body, "{backend:?} {path}");
        }
        let keys: i64 = cluster
            .masters()
            .unwrap()
            .into_iter()
            .map(|n| cluster.cmd(n, &["DBSIZE"]).unwrap().integer().unwrap())
            .sum();
        assert_eq!(keys, 12, "{backend:?}: every read cached once");
        let put = http(addr, "PUT", "/users/5", Some(r#"{"bio":"clustered"}"#)).await;
        assert_eq!(put.status, 200);
        let reread = http(addr, "GET", "/users/5", None).await;
        assert_eq!(
            reread.json()["bio"],
            "clustered",
            "{backend:?}: PUT invalidated"
        );
        let missing = http(addr, "GET", "/users/424242", None).await;
        assert_eq!(missing.text(), r#"{"error":"User not found"}"#);
    }
}
