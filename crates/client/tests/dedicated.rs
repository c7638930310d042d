//! Dedicated connections against a real redis-server: blocking pops do not hold
//! up the shared connection, honour their timeout, and leased connections are reused
//! only when their state is clean; transactions (atomic pipelines, WATCH).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use redline::{Client, Cmd, Error};
use redline_testkit::RedisServer;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blpop_does_not_hold_up_other_commands() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let popper = {
        let client = client.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let popped = client.blpop(["queue"], Duration::from_secs(5)).await;
            done.store(true, Ordering::SeqCst);
            popped
        })
    };
    // Wait until the server sees the BLPOP blocked, then use the shared connection.
    loop {
        let info = server.cmd(&["INFO", "clients"]).unwrap().text().unwrap();
        if info.contains("blocked_clients:1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for i in 0..100 {
        client.set(format!("k{i}"), i).await.unwrap();
        assert_eq!(
            client.get(format!("k{i}")).await.unwrap(),
            Some(Bytes::from(i.to_string()))
        );
    }
    assert!(
        !done.load(Ordering::SeqCst),
        "GETs completed only after BLPOP returned"
    );
    client.rpush("queue", ["job"]).await.unwrap();
    assert_eq!(popper.await.unwrap().unwrap(), Some((b("queue"), b("job"))));
}

#[tokio::test]
async fn blocking_family() {
    let server = RedisServer::start().unwrap();
    for url in [server.url(), format!("{}?protocol=2", server.url())] {
        let c = Client::connect(&url).await.unwrap();
        c.flushall().await.unwrap();
        let short = Duration::from_millis(100);
        assert_eq!(c.blpop(["none"], short).await.unwrap(), None);
        c.rpush("l", ["a", "b", "c"]).await.unwrap();
        assert_eq!(
            c.blpop(["none", "l"], short).await.unwrap(),
            Some((b("l"), b("a")))
        );
        assert_eq!(c.brpop(["l"], short).await.unwrap(), Some((b("l"), b("c"))));
        assert_eq!(
            c.blmove("l", "l2", true, true, short).await.unwrap(),
            Some(b("b"))
        );
        assert_eq!(c.blmove("l", "l2", true, true, short).await.unwrap(), None);
        c.zadd_multiple("z", [(1.0, "low"), (9.5, "high")])
            .await
            .unwrap();
        assert_eq!(
            c.bzpopmin(["z"], short).await.unwrap(),
            Some((b("z"), b("low"), 1.0))
        );
        assert_eq!(
            c.bzpopmax(["z"], short).await.unwrap(),
            Some((b("z"), b("high"), 9.5))
        );
        assert_eq!(c.bzpopmax(["z"], short).await.unwrap(), None);
    }
}

fn connections(server: &RedisServer) -> usize {
    server
        .cmd(&["CLIENT", "LIST"])
        .unwrap()
        .text()
        .unwrap()
        .lines()
        .filter(|l| !l.contains("cmd=client|list"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_are_reused_only_when_clean() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    let base = connections(&server); // the multiplexed connection
    for _ in 0..5 {
        assert_eq!(
            client
                .blpop(["none"], Duration::from_millis(10))
                .await
                .unwrap(),
            None
        );
    }
    assert_eq!(
        connections(&server),
        base + 1,
        "one dedicated connection, reused"
    );

    // SELECT changes the connection for good: it is closed, not reused.
    {
        let mut conn = client.dedicated().await.unwrap();
        conn.query::<()>(Cmd::new("SELECT").arg(2)).await.unwrap();
    }
    let mut conn = client.dedicated().await.unwrap();
    let info: String = conn.query(Cmd::new("CLIENT").arg("INFO")).await.unwrap();
    assert!(info.contains("db=0"), "{info}");
    drop(conn);

    // A blocking call cancelled mid-flight leaves its connection unusable: it is dropped,
    // and the next lease gets a clean one.
    let pending = {
        let client = client.clone();
        tokio::spawn(async move { client.blpop(["never"], Duration::from_secs(30)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    pending.abort();
    let _ = pending.await;
    client.rpush("later", ["x"]).await.unwrap();
    assert_eq!(
        client
            .blpop(["later"], Duration::from_secs(1))
            .await
            .unwrap(),
        Some((b("later"), b("x")))
    );

    // Pub/sub cannot run on a leased connection either.
    let mut conn = client.dedicated().await.unwrap();
    let err = conn
        .query::<()>(Cmd::new("SUBSCRIBE").arg("ch"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotMultiplexable { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_multi_exec_on_a_dedicated_connection() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    client.set("balance", 10).await.unwrap();

    // Untouched watched key: EXEC runs the transaction.
    let mut conn = client.dedicated().await.unwrap();
    conn.query::<()>(Cmd::new("WATCH").arg("balance"))
        .await
        .unwrap();
    conn.query::<()>(Cmd::new("MULTI")).await.unwrap();
    conn.query::<()>(Cmd::new("INCRBY").arg("balance").arg(5))
        .await
        .unwrap();
    let exec: Option<Vec<i64>> = conn.query(Cmd::new("EXEC")).await.unwrap();
    assert_eq!(exec, Some(vec![15]));

    // A concurrent modification between WATCH and EXEC: EXEC returns nil.
    conn.query::<()>(Cmd::new("WATCH").arg("balance"))
        .await
        .unwrap();
    client.set("balance", 100).await.unwrap();
    conn.query::<()>(Cmd::new("MULTI")).await.unwrap();
    conn.query::<()>(Cmd::new("INCRBY").arg("balance").arg(5))
        .await
        .unwrap();
    let exec: Option<Vec<i64>> = conn.query(Cmd::new("EXEC")).await.unwrap();
    assert_eq!(exec, None);
    assert_eq!(client.get("balance").await.unwrap(), Some(b("100")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_pipelines_and_watch() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    client.set("a", 100).await.unwrap();

    // MULTI/EXEC on the shared connection: replies are EXEC's.
    let (a, b2): (i64, i64) = client
        .pipeline()
        .atomic()
        .decr_by("a", 10)
        .incr_by("b", 10)
        .query()
        .await
        .unwrap();
    assert_eq!((a, b2), (90, 10));

    // A command refused while queuing aborts the whole transaction.
    let err = client
        .pipeline()
        .atomic()
        .incr("a")
        .cmd(["GET"]) // wrong arity
        .query::<Vec<redline::Frame>>()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Server {
                kind: redline::ServerErrorKind::ExecAbort,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(client.get("a").await.unwrap(), Some(b("90")));

    // WATCH on a dedicated connection; a concurrent write aborts, typed.
    let mut conn = client.dedicated().await.unwrap();
    conn.watch(["a"]).await.unwrap();
    let seen: i64 = conn.query(Cmd::new("GET").arg("a")).await.unwrap();
    client.set("a", 0).await.unwrap();
    let mut tx = client.pipeline();
    tx.atomic().set("a", seen - 1);
    let err = conn.run::<((),)>(&mut tx).await.unwrap_err();
    assert!(matches!(err, Error::TransactionAborted), "{err:?}");
    assert_eq!(client.get("a").await.unwrap(), Some(b("0")));

    // Retry loop as documented: succeeds when nothing interferes.
    loop {
        conn.watch(["a"]).await.unwrap();
        let seen: i64 = conn.query(Cmd::new("GET").arg("a")).await.unwrap();
        let mut tx = client.pipeline();
        tx.atomic().set("a", seen + 5).get("a");
        match conn.run::<((), i64)>(&mut tx).await {
            Ok((_, now)) => {
                assert_eq!(now, 5);
                break;
            }
            Err(Error::TransactionAborted) => continue,
            Err(e) => panic!("{e:?}"),
        }
    }
    // Plain pipelines run on a dedicated connection too.
    let mut p = client.pipeline();
    p.incr("n").incr("n");
    assert_eq!(conn.run::<Vec<i64>>(&mut p).await.unwrap(), vec![1, 2]);
}
