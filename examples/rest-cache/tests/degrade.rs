//! A dead cache degrades to SQLite, never to a 5xx, with each backend: kill -9 the
//! redis-server under a running service, and every endpoint still answers from SQLite;
//! restart it, and reads fill the cache again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{http, start};
use redline_testkit::{RedisServer, Reply};
use rest_cache::Backend;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_cache_degrades_redline() {
    dead_cache_degrades(Backend::Redline).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_cache_degrades_fred() {
    dead_cache_degrades(Backend::Fred).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_cache_degrades_redis_rs() {
    dead_cache_degrades(Backend::RedisRs).await;
}

async fn dead_cache_degrades(backend: Backend) {
    let mut redis = RedisServer::start().unwrap();
    let svc = start(backend, &redis.url(), false).await;
    let addr = svc.addr;
    let before = http(addr, "GET", "/users/2", None).await;
    assert_eq!(before.status, 200);

    redis.kill();

    // The cached user and an uncached one both come from SQLite now, byte for byte.
    let after = http(addr, "GET", "/users/2", None).await;
    assert_eq!(after.status, 200, "{}", after.text());
    assert_eq!(after.body, before.body);
    assert_eq!(http(addr, "GET", "/users/3", None).await.status, 200);
    assert_eq!(http(addr, "GET", "/users?limit=5", None).await.status, 200);
    let body = r#"{"name":"Offline","email":"offline@example.org"}"#;
    let created = http(addr, "POST", "/users", Some(body)).await;
    assert_eq!(created.status, 201, "{}", created.text());
    let put = http(addr, "PUT", "/users/2", Some(r#"{"bio":"while down"}"#)).await;
    assert_eq!(put.status, 200, "{}", put.text());
    assert_eq!(http(addr, "DELETE", "/users/3", None).await.status, 204);
    assert_eq!(http(addr, "GET", "/users/3", None).await.status, 404);

    // Back up (empty: no persistence): reads fill the cache again once the client reconnects.
    redis.restart().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let got = http(addr, "GET", "/users/2", None).await;
        assert_eq!(got.status, 200);
        assert_eq!(got.json()["bio"], "while down");
        if matches!(redis.cmd(&["EXISTS", "user:2"]).unwrap(), Reply::Integer(1)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{backend:?} never used the restarted cache"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
