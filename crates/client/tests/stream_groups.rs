//! Stream consumer groups through the typed methods (XGROUP, XREADGROUP, XACK, XPENDING,
//! XCLAIM, XAUTOCLAIM, XINFO), against a real redis-server and redline-server, over RESP3
//! and RESP2, with the same observable results on both.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use redline::{Client, Config, Frame, Protocol};
use redline_testkit::{RedisServer, RedlineServer};

async fn clients(url: &str) -> Vec<Client> {
    let mut out = Vec::new();
    for protocol in [Protocol::Resp3, Protocol::Resp2] {
        let mut cfg = Config::from_url(url).unwrap();
        cfg.protocol = protocol;
        out.push(Client::from_config(cfg).await.unwrap());
    }
    out
}

fn integer(frame: &Frame) -> Option<i64> {
    match frame {
        Frame::Integer(n) => Some(*n),
        _ => None,
    }
}

/// Runs the same group workflow on one server; returns what it observed.
async fn workflow(c: &Client, s: &str) -> Vec<String> {
    let mut seen = Vec::new();
    for id in ["1-1", "2-1", "3-1"] {
        c.xadd(s, id, [("n", id)]).await.unwrap();
    }
    c.xgroup_create(s, "g", "0", false).await.unwrap();
    assert!(c.xgroup_create(s, "g", "0", false).await.is_err());
    c.xgroup_create(format!("{s}:new"), "g", "$", true)
        .await
        .unwrap();

    let read = c
        .xreadgroup("g", "alice", [(s, ">")], Some(2))
        .await
        .unwrap();
    seen.push(format!(
        "{:?}",
        read[0].1.iter().map(|e| &e.id).collect::<Vec<_>>()
    ));
    let history = c.xreadgroup("g", "alice", [(s, "0")], None).await.unwrap();
    seen.push(format!("{}", history[0].1.len()));
    match c.xpending(s, "g").await.unwrap() {
        Frame::Array(items) => seen.push(format!("pending {:?}", integer(&items[0]))),
        other => panic!("XPENDING: {other:?}"),
    }
    let claimed = c.xclaim_ids(s, "g", "bob", 0, ["1-1"]).await.unwrap();
    seen.push(format!("claimed {claimed:?}"));
    match c.xautoclaim(s, "g", "carol", 0, "0", 10).await.unwrap() {
        Frame::Array(items) => seen.push(format!("autoclaim {}", items.len())),
        other => panic!("XAUTOCLAIM: {other:?}"),
    }
    seen.push(format!(
        "acked {}",
        c.xack(s, "g", ["1-1", "2-1", "9-9"]).await.unwrap()
    ));
    let groups = c.xinfo_groups(s).await.unwrap();
    seen.push(format!("{}", format!("{groups:?}").contains("lag")));
    let _ = c.xinfo_stream(s).await.unwrap();
    let _ = c.xinfo_consumers(s, "g").await.unwrap();
    let rest = c.xreadgroup("g", "bob", [(s, ">")], None).await.unwrap();
    seen.push(format!("{:?}", rest[0].1[0].fields));
    assert!(c
        .xreadgroup("g", "bob", [(s, ">")], None)
        .await
        .unwrap()
        .is_empty());
    seen.push(format!("{}", c.xgroup_destroy(s, "g").await.unwrap()));
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_behave_the_same_on_both_servers() {
    let redis = RedisServer::start().unwrap();
    let redline = RedlineServer::start().unwrap();
    for (i, (a, b)) in clients(&redis.url())
        .await
        .iter()
        .zip(clients(&redline.url()).await.iter())
        .enumerate()
    {
        let key = format!("{i}:events");
        let x = workflow(a, &key).await;
        let y = workflow(b, &key).await;
        assert_eq!(x, y);
        assert!(x.last().is_some_and(|l| l == "true"));
        assert_eq!(
            x[x.len() - 2],
            format!("{:?}", vec![(Bytes::from("n"), Bytes::from("3-1"))])
        );
    }
}
