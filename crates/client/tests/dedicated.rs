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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_blocking_commands_get_a_dedicated_connection() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    let done = Arc::new(AtomicBool::new(false));
    // Sent through the raw path: routed by the command table's `blocking` flag.
    let popper = {
        let client = client.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let popped = client.cmd(["BLPOP", "rawq", "5"]).await;
            done.store(true, Ordering::SeqCst);
            popped
        })
    };
    loop {
        let info = server.cmd(&["INFO", "clients"]).unwrap().text().unwrap();
        if info.contains("blocked_clients:1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for i in 0..100 {
        client.set(format!("r{i}"), i).await.unwrap();
        assert_eq!(
            client.get(format!("r{i}")).await.unwrap(),
            Some(Bytes::from(i.to_string()))
        );
    }
    assert!(!done.load(Ordering::SeqCst), "GETs waited for the BLPOP");
    client.rpush("rawq", ["job"]).await.unwrap();
    let popped: Option<(Bytes, Bytes)> =
        redline::FromReply::from_reply(popper.await.unwrap().unwrap()).unwrap();
    assert_eq!(popped, Some((b("rawq"), b("job"))));

    // WAIT: no replicas here, so it waits out its timeout and answers 0, typed or raw.
    assert_eq!(client.wait(1, Duration::from_millis(100)).await.unwrap(), 0);
    let acked: i64 = client
        .query(Cmd::new("WAIT").arg(0).arg(100))
        .await
        .unwrap();
    assert_eq!(acked, 0);
    // Connection-state commands are still refused on the shared pipe.
    for args in [&["SELECT", "1"][..], &["WATCH", "k"], &["SUBSCRIBE", "c"]] {
        let err = client.cmd(args.iter().copied()).await.unwrap_err();
        assert!(matches!(err, Error::NotMultiplexable { .. }), "{err:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_closure_retries_when_a_watched_key_changes() {
    use std::sync::atomic::AtomicUsize;

    let server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    client.set("stock", 10).await.unwrap();
    let attempts = Arc::new(AtomicUsize::new(0));
    let other = client.clone();
    let counter = attempts.clone();
    let ((), sold): ((), i64) = client
        .transaction(["stock"], |conn, tx| {
            let other = other.clone();
            let attempt = counter.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                let stock: i64 = conn.query(Cmd::new("GET").arg("stock")).await?;
                if attempt == 0 {
                    // Another connection changes the watched key between our read
                    // and EXEC: this attempt must abort and the body run again.
                    other.set("stock", 100).await?;
                }
                tx.set("stock", stock - 1).incr("sold");
                Ok(())
            })
        })
        .await
        .unwrap();
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    assert_eq!(sold, 1);
    // The retry read the other writer's value: its update was not lost.
    assert_eq!(client.get("stock").await.unwrap(), Some(b("99")));

    // A body that queues nothing ends it without EXEC; an error in the body is returned.
    let nothing: Vec<redline::Frame> = client
        .transaction(["stock"], |_, _| Box::pin(async { Ok(()) }))
        .await
        .unwrap();
    assert!(nothing.is_empty());
    let err = client
        .transaction::<_, (), _>(["stock"], |conn, _| {
            Box::pin(async move {
                conn.query::<i64>(Cmd::new("HLEN").arg("stock")).await?;
                Ok(())
            })
        })
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Server {
                kind: redline::ServerErrorKind::WrongType,
                ..
            }
        ),
        "{err:?}"
    );
}
