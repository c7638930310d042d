//! Pub/sub against a real redis-server: channels, patterns and shard channels over RESP3
//! and RESP2, and automatic resubscription after a server restart; messages are read
//! through the `Stream` implementation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use redline::{Client, Config, Message, Protocol};
use redline_testkit::RedisServer;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// The next message, read through the `Stream` implementation.
async fn next(sub: &mut redline::Subscriber) -> Message {
    let stream_next = std::future::poll_fn(|cx| Pin::new(&mut *sub).poll_next(cx));
    tokio::time::timeout(Duration::from_secs(10), stream_next)
        .await
        .expect("no message within 10 s")
        .expect("subscriber closed")
}

#[tokio::test]
async fn channels_patterns_and_shards() {
    let server = RedisServer::start().unwrap();
    for protocol in [Protocol::Resp3, Protocol::Resp2] {
        let mut cfg = Config::from_url(&server.url()).unwrap();
        cfg.protocol = protocol;
        let client = Client::from_config(cfg).await.unwrap();
        let mut sub = client.subscriber().await.unwrap();
        sub.subscribe(["news", "sport"]).await.unwrap();
        sub.psubscribe(["alerts:*"]).await.unwrap();
        sub.ssubscribe(["shard"]).await.unwrap();

        assert_eq!(client.publish("news", "hello").await.unwrap(), 1);
        let m = next(&mut sub).await;
        assert_eq!(
            (m.channel, m.payload, m.pattern, m.sharded),
            (b("news"), b("hello"), None, false)
        );

        client.publish("alerts:disk", "full").await.unwrap();
        let m = next(&mut sub).await;
        assert_eq!(m.pattern, Some(b("alerts:*")));
        assert_eq!(m.channel, b("alerts:disk"));

        assert_eq!(client.spublish("shard", "s1").await.unwrap(), 1);
        let m = next(&mut sub).await;
        assert!(m.sharded);
        assert_eq!(m.payload, b("s1"));

        // Binary payloads pass through untouched.
        client.publish("sport", &b"\0\r\n\xff"[..]).await.unwrap();
        assert_eq!(
            next(&mut sub).await.payload,
            Bytes::from_static(b"\0\r\n\xff")
        );

        sub.unsubscribe(["news"]).await.unwrap();
        sub.punsubscribe(["alerts:*"]).await.unwrap();
        sub.sunsubscribe(["shard"]).await.unwrap();
        assert_eq!(client.publish("news", "gone").await.unwrap(), 0);
        client.publish("sport", "still").await.unwrap();
        assert_eq!(next(&mut sub).await.payload, b("still"));

        // The shared connection keeps working alongside.
        assert_eq!(client.ping().await.unwrap(), "PONG");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resubscribes_after_restart() {
    let mut server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    let mut sub = client.subscriber().await.unwrap();
    sub.subscribe(["news"]).await.unwrap();
    sub.psubscribe(["p:*"]).await.unwrap();
    client.publish("news", "before").await.unwrap();
    assert_eq!(next(&mut sub).await.payload, b("before"));

    server.kill();
    server.restart().unwrap();

    // Wait until the subscriber is back (PUBLISH counts its receivers), then receive.
    let mut receivers = 0;
    for _ in 0..200 {
        if let Ok(n) = client.publish("news", "after").await {
            receivers = n;
            if n == 1 {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(receivers, 1, "subscriber did not resubscribe");
    assert_eq!(next(&mut sub).await.payload, b("after"));
    client.publish("p:x", "pattern too").await.unwrap();
    let m = next(&mut sub).await;
    assert_eq!((m.pattern, m.payload), (Some(b("p:*")), b("pattern too")));
}
