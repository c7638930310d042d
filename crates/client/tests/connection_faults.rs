//! Connection faults redis-server cannot produce by itself, through a relay in front of a
//! real server: opt-in retries of read-only commands after a connection is lost under
//! them (writes are never re-sent), and a connection that stops answering without closing
//! is replaced instead of timing out every command until TCP keepalive notices.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use redline::{Client, Config, Error};
use redline_testkit::RedisServer;
use support::proxy::Proxy;

async fn client(proxy: &Proxy, retries: u32) -> Client {
    let mut cfg = Config::from_url(&proxy.url()).unwrap();
    cfg.retries = retries;
    cfg.command_timeout = Some(Duration::from_secs(30));
    Client::from_config(cfg).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_commands_are_retried_only_when_asked() {
    let server = RedisServer::start().unwrap();
    let proxy = Proxy::start(server.addr()).await;
    let retrying = client(&proxy, 1).await;
    let plain = client(&proxy, 0).await;
    retrying.set("k", "v").await.unwrap();
    retrying.set("n", 1).await.unwrap();

    // Everything sent from now on stays in the relay, unanswered...
    proxy.hold();
    let get_retried = tokio::spawn({
        let c = retrying.clone();
        async move { c.get("k").await }
    });
    let incr = tokio::spawn({
        let c = retrying.clone();
        async move { c.incr("n").await }
    });
    let get_plain = tokio::spawn({
        let c = plain.clone();
        async move { c.get("k").await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // ... until the connections are lost; the server never saw those commands.
    proxy.cut();
    proxy.resume();

    // The read-only GET was sent again on a new connection and answered.
    assert_eq!(
        get_retried.await.unwrap().unwrap().as_deref(),
        Some(&b"v"[..])
    );
    // INCR is a write: never re-sent behind the caller's back.
    let err = incr.await.unwrap().unwrap_err();
    assert!(err.is_connection_error(), "{err:?}");
    // Without retries, the GET reports the loss.
    let err = get_plain.await.unwrap().unwrap_err();
    assert!(err.is_connection_error(), "{err:?}");
    // INCR did not run twice (nor once).
    assert_eq!(retrying.get("n").await.unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(plain.get("k").await.unwrap().as_deref(), Some(&b"v"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unresponsive_connection_is_replaced() {
    let server = RedisServer::start().unwrap();
    let proxy = Proxy::start(server.addr()).await;
    let mut cfg = Config::from_url(&proxy.url()).unwrap();
    cfg.command_timeout = Some(Duration::from_secs(1));
    cfg.unresponsive_after = Some(Duration::from_millis(200));
    let client = Client::from_config(cfg).await.unwrap();
    client.set("k", "v").await.unwrap();
    assert_eq!(proxy.accepted(), 1);

    // The peer goes silent without closing: the first command times out...
    proxy.hold();
    let err = client.get("k").await.unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    // ... and once nothing arrived for `unresponsive_after` more, the connection is
    // failed: this command, sent behind the timed-out one with a whole second of its own
    // left, gets a connection error instead of waiting for its deadline.
    let err = client.get("k").await.unwrap_err();
    assert!(
        err.is_connection_error() && !err.is_timeout(),
        "expected the connection to be closed, got {err:?}"
    );

    // The next command opens a new connection, which the server answers.
    proxy.resume();

    assert_eq!(client.get("k").await.unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(proxy.accepted(), 2);
}
