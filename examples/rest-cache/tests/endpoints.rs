//! Every endpoint, with each backend, against a real redis-server: status codes, bodies,
//! headers, the cache-aside contract (a hit is the miss's bytes, writes invalidate, 60 s
//! TTL) and pagination.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{http, start};
use redline_testkit::{RedisServer, Reply};
use rest_cache::Backend;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_redline() {
    every_endpoint(Backend::Redline).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_fred() {
    every_endpoint(Backend::Fred).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_redis_rs() {
    every_endpoint(Backend::RedisRs).await;
}

fn cached(redis: &RedisServer, key: &str) -> Option<Vec<u8>> {
    match redis.cmd(&["GET", key]).unwrap() {
        Reply::Bulk(value) => value,
        other => panic!("GET {key}: {other:?}"),
    }
}

async fn every_endpoint(backend: Backend) {
    let redis = RedisServer::start().unwrap();
    let svc = start(backend, &redis.url(), false).await;
    let addr = svc.addr;

    // GET /users/{id}: the miss fills the cache with exactly the bytes it answered.
    assert_eq!(cached(&redis, "user:1"), None);
    let miss = http(addr, "GET", "/users/1", None).await;
    assert_eq!(miss.status, 200, "{}", miss.text());
    assert_eq!(miss.header("content-type"), Some("application/json"));
    let user = miss.json();
    assert_eq!(user["id"], 1);
    // The seed is deterministic (seed 42): the same first user on every run.
    assert_eq!(user["email"], SEEDED_EMAIL_1, "{user}");
    assert_eq!(cached(&redis, "user:1").as_deref(), Some(&miss.body[..]));
    let ttl = redis.cmd(&["TTL", "user:1"]).unwrap().integer().unwrap();
    assert!((1..=60).contains(&ttl), "ttl {ttl}");

    // The hit answers the same bytes.
    let hit = http(addr, "GET", "/users/1", None).await;
    assert_eq!(hit.status, 200);
    assert_eq!(hit.body, miss.body);
    assert_eq!(hit.header("content-type"), Some("application/json"));
    // ...and they do come from the cache, untouched.
    redis
        .cmd(&["SET", "user:1", r#"{"id":1,"marker":true}"#, "EX", "60"])
        .unwrap();
    let marked = http(addr, "GET", "/users/1", None).await;
    assert_eq!(marked.text(), r#"{"id":1,"marker":true}"#);
    redis.cmd(&["DEL", "user:1"]).unwrap();

    // Unknown and malformed ids.
    let missing = http(addr, "GET", "/users/999999", None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.text(), r#"{"error":"User not found"}"#);
    assert_eq!(cached(&redis, "user:999999"), None);
    assert_eq!(http(addr, "GET", "/users/abc", None).await.status, 400);

    // GET /users: defaults, cap, pages, bad input.
    let page = http(addr, "GET", "/users", None).await;
    assert_eq!(page.status, 200);
    let page = page.json();
    assert_eq!(
        (page["page"].clone(), page["limit"].clone()),
        (1.into(), 20.into())
    );
    assert_eq!(page["total"], 10_000);
    let users = page["users"].as_array().unwrap();
    assert_eq!(users.len(), 20);
    assert_eq!(users[0], user);
    let capped = http(addr, "GET", "/users?page=2&limit=500", None)
        .await
        .json();
    assert_eq!(capped["limit"], 100);
    assert_eq!(capped["users"].as_array().unwrap().len(), 100);
    assert_eq!(capped["users"][0]["id"], 101);
    let last = http(addr, "GET", "/users?page=1000&limit=10", None)
        .await
        .json();
    assert_eq!(last["users"][9]["id"], 10_000);
    let beyond = http(addr, "GET", "/users?page=1001&limit=10", None)
        .await
        .json();
    assert_eq!(beyond["users"].as_array().unwrap().len(), 0);
    assert_eq!(http(addr, "GET", "/users?page=x", None).await.status, 400);
    assert_eq!(http(addr, "GET", "/users?limit=-1", None).await.status, 400);

    // POST /users: 201 + Location; duplicate email 409; bad bodies 400.
    let body = r#"{"name":"Test User","email":"test.user@example.org","bio":"hello"}"#;
    let created = http(addr, "POST", "/users", Some(body)).await;
    assert_eq!(created.status, 201, "{}", created.text());
    let new_user = created.json();
    let id = new_user["id"].as_i64().unwrap();
    assert_eq!(id, 10_001);
    assert_eq!(created.header("location"), Some("/users/10001"));
    assert_eq!(new_user["email"], "test.user@example.org");
    let again = http(addr, "POST", "/users", Some(body)).await;
    assert_eq!(again.status, 409);
    let dup_seeded = format!(r#"{{"name":"X","email":"{SEEDED_EMAIL_1}"}}"#);
    assert_eq!(
        http(addr, "POST", "/users", Some(&dup_seeded)).await.status,
        409
    );
    assert_eq!(
        http(addr, "POST", "/users", Some("{not json")).await.status,
        400
    );
    let no_email = r#"{"name":"No Email"}"#;
    assert_eq!(
        http(addr, "POST", "/users", Some(no_email)).await.status,
        400
    );
    let fetched = http(addr, "GET", "/users/10001", None).await;
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.body, created.body);

    // PUT /users/{id}: updates SQLite and drops the cached copy.
    assert!(cached(&redis, "user:10001").is_some());
    let updated = http(addr, "PUT", "/users/10001", Some(r#"{"bio":"changed"}"#)).await;
    assert_eq!(updated.status, 200, "{}", updated.text());
    assert_eq!(updated.json()["bio"], "changed");
    assert_eq!(updated.json()["name"], "Test User");
    assert_eq!(cached(&redis, "user:10001"), None);
    let reread = http(addr, "GET", "/users/10001", None).await;
    assert_eq!(reread.body, updated.body);
    let put_missing = http(addr, "PUT", "/users/999999", Some(r#"{"bio":"x"}"#)).await;
    assert_eq!(put_missing.status, 404);
    assert_eq!(put_missing.text(), r#"{"error":"User not found"}"#);
    assert_eq!(
        http(addr, "PUT", "/users/10001", Some("{}")).await.status,
        400
    );
    let steal = format!(r#"{{"email":"{SEEDED_EMAIL_1}"}}"#);
    assert_eq!(
        http(addr, "PUT", "/users/10001", Some(&steal)).await.status,
        409
    );

    // DELETE /users/{id}: 204, invalidated, then 404.
    assert!(cached(&redis, "user:10001").is_some());
    let deleted = http(addr, "DELETE", "/users/10001", None).await;
    assert_eq!(deleted.status, 204);
    assert!(deleted.body.is_empty());
    assert_eq!(cached(&redis, "user:10001"), None);
    assert_eq!(http(addr, "GET", "/users/10001", None).await.status, 404);
    assert_eq!(http(addr, "DELETE", "/users/10001", None).await.status, 404);
    assert_eq!(http(addr, "DELETE", "/users/abc", None).await.status, 400);
}

/// User 1's email under seed 42.
const SEEDED_EMAIL_1: &str = "dennis.wirth.1@example.com";
