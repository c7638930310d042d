//! `REDIS_CLUSTER=1`: each backend's cluster client against a real 3-master Redis Cluster.
//! Keys of many slots (so every master) are read twice (hit = miss bytes), every endpoint
//! answers as on one server, and writes invalidate the key wherever it lives.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{http, start};
use redline_testkit::{RedisCluster, Reply};
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

        // GET /users: SQLite only, same pages as on one server.
        let page = http(addr, "GET", "/users?page=2&limit=5", None).await;
        assert_eq!(page.status, 200);
        let page = page.json();
        assert_eq!(page["users"].as_array().unwrap().len(), 5);
        assert_eq!(page["users"][0]["id"], 6);

        // POST, then the cache-aside read, PUT and DELETE of the new user: the key is
        // found on (and dropped from) whichever master owns its slot.
        let email = format!("cluster.{backend:?}@example.org").to_lowercase();
        let body = format!(r#"{{"name":"Cluster User","email":"{email}"}}"#);
        let created = http(addr, "POST", "/users", Some(&body)).await;
        assert_eq!(created.status, 201, "{backend:?}: {}", created.text());
        let id = created.json()["id"].as_i64().unwrap();
        let path = format!("/users/{id}");
        assert_eq!(created.header("location"), Some(path.as_str()));
        let key = format!("user:{id}");
        assert_eq!(cached(&mut cluster, &key), None);
        let miss = http(addr, "GET", &path, None).await;
        assert_eq!(miss.body, created.body, "{backend:?}");
        assert_eq!(cached(&mut cluster, &key).as_deref(), Some(&miss.body[..]));
        let updated = http(addr, "PUT", &path, Some(r#"{"bio":"moved"}"#)).await;
        assert_eq!(updated.status, 200);
        assert_eq!(
            cached(&mut cluster, &key),
            None,
            "{backend:?}: PUT invalidated"
        );
        assert_eq!(http(addr, "GET", &path, None).await.body, updated.body);
        assert!(cached(&mut cluster, &key).is_some());
        let deleted = http(addr, "DELETE", &path, None).await;
        assert_eq!(deleted.status, 204);
        assert_eq!(
            cached(&mut cluster, &key),
            None,
            "{backend:?}: DELETE invalidated"
        );
        assert_eq!(http(addr, "GET", &path, None).await.status, 404);
    }
}

/// The cached bytes of `key`, asked of the master that owns its slot.
fn cached(cluster: &mut RedisCluster, key: &str) -> Option<Vec<u8>> {
    let slot = cluster
        .cmd(0, &["CLUSTER", "KEYSLOT", key])
        .unwrap()
        .integer()
        .unwrap();
    let owner = cluster.master_of_slot(slot as u16).unwrap();
    match cluster.cmd(owner, &["GET", key]).unwrap() {
        Reply::Bulk(value) => value,
        other => panic!("GET {key}: {other:?}"),
    }
}
