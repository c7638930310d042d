//! Hashes, lists, sets, sorted sets, server basics and pipelines against a real
//! redis-server, over RESP3 and RESP2 (results must not depend on the protocol).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use redline::{Client, Cmd, Config, Error, Frame, Protocol, ZAddOptions};
use redline_testkit::RedisServer;

async fn clients(server: &RedisServer) -> Vec<Client> {
    let mut out = Vec::new();
    for protocol in [Protocol::Resp3, Protocol::Resp2] {
        let mut cfg = Config::from_url(&server.url()).unwrap();
        cfg.protocol = protocol;
        out.push(Client::from_config(cfg).await.unwrap());
    }
    out
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[tokio::test]
async fn hashes() {
    let server = RedisServer::start().unwrap();
    for (i, c) in clients(&server).await.iter().enumerate() {
        let h = format!("{i}:h");
        assert_eq!(c.hset(&h, "f1", "v1").await.unwrap(), 1);
        assert_eq!(c.hset(&h, "f1", "v1b").await.unwrap(), 0);
        assert_eq!(
            c.hset_multiple(&h, [("f2", "v2"), ("n", "5")])
                .await
                .unwrap(),
            2
        );
        assert!(!c.hset_nx(&h, "f2", "x").await.unwrap());
        assert_eq!(c.hget(&h, "f1").await.unwrap(), Some(b("v1b")));
        assert_eq!(c.hget(&h, "nope").await.unwrap(), None);
        assert_eq!(
            c.hmget(&h, ["f2", "nope"]).await.unwrap(),
            vec![Some(b("v2")), None]
        );
        let all = c.hgetall(&h).await.unwrap();
        let want: HashMap<Bytes, Bytes> =
            [(b("f1"), b("v1b")), (b("f2"), b("v2")), (b("n"), b("5"))].into();
        assert_eq!(all, want);
        assert!(c.hgetall(format!("{i}:none")).await.unwrap().is_empty());
        assert!(c.hexists(&h, "f1").await.unwrap());
        assert_eq!(c.hincr_by(&h, "n", 3).await.unwrap(), 8);
        assert_eq!(c.hincr_by_float(&h, "fl", 0.5).await.unwrap(), 0.5);
        assert_eq!(c.hlen(&h).await.unwrap(), 4);
        assert_eq!(c.hstrlen(&h, "f1").await.unwrap(), 3);
        let mut keys = c.hkeys(&h).await.unwrap();
        keys.sort();
        assert_eq!(keys, vec![b("f1"), b("f2"), b("fl"), b("n")]);
        assert_eq!(c.hvals(&h).await.unwrap().len(), 4);
        assert_eq!(c.hdel(&h, ["f1", "nope"]).await.unwrap(), 1);
        // Typed conversion through the generic path.
        let m: HashMap<String, String> = c.query(Cmd::new("HGETALL").arg(&h)).await.unwrap();
        assert_eq!(m.get("f2").map(String::as_str), Some("v2"));
    }
}

#[tokio::test]
async fn lists() {
    let server = RedisServer::start().unwrap();
    for (i, c) in clients(&server).await.iter().enumerate() {
        let l = format!("{i}:l");
        assert_eq!(c.rpush(&l, ["a", "b", "c"]).await.unwrap(), 3);
        assert_eq!(c.lpush(&l, ["z"]).await.unwrap(), 4);
        assert_eq!(c.lpush_x(format!("{i}:none"), ["x"]).await.unwrap(), 0);
        assert_eq!(c.rpush_x(&l, ["d"]).await.unwrap(), 5);
        assert_eq!(
            c.lrange(&l, 0, -1).await.unwrap(),
            vec![b("z"), b("a"), b("b"), b("c"), b("d")]
        );
        assert_eq!(c.llen(&l).await.unwrap(), 5);
        assert_eq!(c.lindex(&l, 1).await.unwrap(), Some(b("a")));
        assert_eq!(c.lindex(&l, 100).await.unwrap(), None);
        c.lset(&l, 1, "A").await.unwrap();
        assert_eq!(c.lpos(&l, "A").await.unwrap(), Some(1));
        assert_eq!(c.lpos(&l, "nope").await.unwrap(), None);
        assert_eq!(c.lpop(&l).await.unwrap(), Some(b("z")));
        assert_eq!(c.rpop(&l).await.unwrap(), Some(b("d")));
        assert_eq!(c.lrem(&l, 0, "A").await.unwrap(), 1);
        c.rpush(&l, ["e", "f", "g"]).await.unwrap();
        c.ltrim(&l, 0, 3).await.unwrap();
        assert_eq!(
            c.lrange(&l, 0, -1).await.unwrap(),
            vec![b("b"), b("c"), b("e"), b("f")]
        );
        assert_eq!(c.lpop_count(&l, 2).await.unwrap(), vec![b("b"), b("c")]);
        assert_eq!(c.rpop_count(&l, 1).await.unwrap(), vec![b("f")]);
        assert!(c
            .lpop_count(format!("{i}:none"), 2)
            .await
            .unwrap()
            .is_empty());
        let dst = format!("{i}:l2");
        assert_eq!(c.lmove(&l, &dst, true, false).await.unwrap(), Some(b("e")));
        assert_eq!(c.lpop(format!("{i}:none")).await.unwrap(), None);
        // Raw blocking commands go to a dedicated connection and honour their timeout.
        let none = format!("{i}:empty");
        let reply = c.cmd(["BLPOP", &none, "0.1"]).await.unwrap();
        assert!(
            matches!(reply, redline::Frame::Null | redline::Frame::NullArray),
            "{reply:?}"
        );
    }
}

#[tokio::test]
async fn sets() {
    let server = RedisServer::start().unwrap();
    for (i, c) in clients(&server).await.iter().enumerate() {
        let (s1, s2) = (format!("{i}:s1"), format!("{i}:s2"));
        assert_eq!(c.sadd(&s1, ["a", "b", "c", "a"]).await.unwrap(), 3);
        assert_eq!(c.sadd(&s2, ["b", "c", "d"]).await.unwrap(), 3);
        assert_eq!(
            c.smembers(&s1).await.unwrap(),
            HashSet::from([b("a"), b("b"), b("c")])
        );
        assert!(c.sismember(&s1, "a").await.unwrap());
        assert!(!c.sismember(&s1, "d").await.unwrap());
        assert_eq!(
            c.smismember(&s1, ["a", "d"]).await.unwrap(),
            vec![true, false]
        );
        assert_eq!(c.scard(&s1).await.unwrap(), 3);
        assert_eq!(
            c.sinter([&s1, &s2]).await.unwrap(),
            HashSet::from([b("b"), b("c")])
        );
        assert_eq!(c.sunion([&s1, &s2]).await.unwrap().len(), 4);
        assert_eq!(c.sdiff([&s1, &s2]).await.unwrap(), HashSet::from([b("a")]));
        assert_eq!(
            c.sinterstore(format!("{i}:s3"), [&s1, &s2]).await.unwrap(),
            2
        );
        assert!(c.smove(&s1, &s2, "a").await.unwrap());
        assert_eq!(c.srem(&s2, ["a", "zz"]).await.unwrap(), 1);
        assert!(c.srandmember(&s1).await.unwrap().is_some());
        assert!(c.spop(&s1).await.unwrap().is_some());
        assert_eq!(c.spop(format!("{i}:none")).await.unwrap(), None);
    }
}

#[tokio::test]
async fn sorted_sets() {
    let server = RedisServer::start().unwrap();
    for (i, c) in clients(&server).await.iter().enumerate() {
        let z = format!("{i}:z");
        assert_eq!(c.zadd(&z, 1.5, "a").await.unwrap(), 1);
        assert_eq!(
            c.zadd_multiple(&z, [(2.0, "b"), (3.25, "c"), (-1.0, "n")])
                .await
                .unwrap(),
            3
        );
        let opts = ZAddOptions {
            only_new: Some(false),
            changed: true,
            ..Default::default()
        };
        assert_eq!(
            c.zadd_with(&z, opts, [(-2.0, "n"), (9.0, "new")])
                .await
                .unwrap(),
            1
        );
        assert_eq!(c.zscore(&z, "c").await.unwrap(), Some(3.25));
        assert_eq!(c.zscore(&z, "nope").await.unwrap(), None);
        assert_eq!(
            c.zmscore(&z, ["a", "nope"]).await.unwrap(),
            vec![Some(1.5), None]
        );
        assert_eq!(c.zincr_by(&z, 0.25, "a").await.unwrap(), 1.75);
        assert_eq!(c.zcard(&z).await.unwrap(), 4);
        assert_eq!(c.zcount(&z, "-inf", "(2").await.unwrap(), 2);
        assert_eq!(
            c.zrange(&z, 0, -1).await.unwrap(),
            vec![b("n"), b("a"), b("b"), b("c")]
        );
        assert_eq!(c.zrevrange(&z, 0, 0).await.unwrap(), vec![b("c")]);
        assert_eq!(
            c.zrange_withscores(&z, 0, 1).await.unwrap(),
            vec![(b("n"), -2.0), (b("a"), 1.75)]
        );
        assert_eq!(
            c.zrange_by_score(&z, 1.0, 2.0).await.unwrap(),
            vec![b("a"), b("b")]
        );
        assert_eq!(c.zrank(&z, "a").await.unwrap(), Some(1));
        assert_eq!(c.zrevrank(&z, "a").await.unwrap(), Some(2));
        assert_eq!(c.zrank(&z, "nope").await.unwrap(), None);
        assert_eq!(c.zpopmin(&z, 1).await.unwrap(), vec![(b("n"), -2.0)]);
        assert_eq!(c.zpopmax(&z, 1).await.unwrap(), vec![(b("c"), 3.25)]);
        assert_eq!(c.zrem(&z, ["a", "zz"]).await.unwrap(), 1);
        c.zadd(&z, f64::INFINITY, "inf").await.unwrap();
        assert_eq!(c.zscore(&z, "inf").await.unwrap(), Some(f64::INFINITY));
    }
}

#[tokio::test]
async fn server_basics() {
    let server = RedisServer::start().unwrap();
    for c in clients(&server).await {
        assert_eq!(c.ping().await.unwrap(), "PONG");
        assert_eq!(c.echo("hi").await.unwrap(), b("hi"));
        assert!(c.info("server").await.unwrap().contains("redis_version"));
        c.flushall().await.unwrap();
        c.set("x", 1).await.unwrap();
        assert_eq!(c.dbsize().await.unwrap(), 1);
        c.flushdb().await.unwrap();
        assert_eq!(c.dbsize().await.unwrap(), 0);
        c.config_set("maxmemory-policy", "allkeys-lru")
            .await
            .unwrap();
        let cfg = c.config_get("maxmemory-policy").await.unwrap();
        assert_eq!(
            cfg.get("maxmemory-policy").map(String::as_str),
            Some("allkeys-lru")
        );
        let (secs, _micros) = c.time().await.unwrap();
        assert!(secs > 1_600_000_000);
        // Raw command path, and error replies as typed errors.
        assert!(matches!(c.cmd(["PING"]).await.unwrap(), Frame::Simple(_)));
        let err = c.cmd(["NOSUCHCOMMAND"]).await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Server {
                    kind: redline::ServerErrorKind::Err,
                    ..
                }
            ),
            "{err}"
        );
        assert!(matches!(
            c.cmd(Vec::<&str>::new()).await,
            Err(Error::EmptyCommand)
        ));
    }
}

#[tokio::test]
async fn pipelines() {
    let server = RedisServer::start().unwrap();
    for (i, c) in clients(&server).await.iter().enumerate() {
        let k = format!("{i}:p");
        let (set, got, n, missing): ((), Option<Bytes>, i64, Option<Bytes>) = c
            .pipeline()
            .set(&k, "v")
            .get(&k)
            .incr(format!("{k}:n"))
            .get(format!("{k}:none"))
            .query()
            .await
            .unwrap();
        assert_eq!((set, got, n, missing), ((), Some(b("v")), 1, None));

        // A failing command does not hide the others' replies in query_frames.
        let mut p = c.pipeline();
        p.incr(&k)
            .set(format!("{k}:2"), "x")
            .cmd(["GET", &format!("{k}:2")]);
        assert_eq!(p.len(), 3);
        let frames = p.query_frames().await.unwrap();
        assert!(matches!(frames[0], Frame::Error(_)));
        assert!(p.is_empty());
        // ... while query() reports it as a typed error.
        let err = c
            .pipeline()
            .incr(&k)
            .get(&k)
            .query::<(i64, Option<Bytes>)>()
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Server { .. }));

        // A transaction inside a pipeline stays contiguous.
        let frames = c
            .pipeline()
            .cmd(["MULTI"])
            .incr(format!("{k}:t"))
            .incr(format!("{k}:t"))
            .cmd(["EXEC"])
            .query_frames()
            .await
            .unwrap();
        let exec: Vec<i64> = redline::FromReply::from_reply(frames[3].clone()).unwrap();
        assert_eq!(exec, vec![1, 2]);
        // Outside a pipeline MULTI is refused.
        assert!(matches!(
            c.cmd(["MULTI"]).await,
            Err(Error::NotMultiplexable { .. })
        ));

        // Large pipeline: 10,000 commands, one queue entry.
        let mut p = c.pipeline();
        for n in 0..10_000 {
            p.set(format!("{k}:big:{n}"), n);
        }
        for n in 0..10_000 {
            p.get(format!("{k}:big:{n}"));
        }
        let frames = p.query_frames().await.unwrap();
        assert_eq!(frames.len(), 20_000);
        for (n, f) in frames[10_000..].iter().enumerate() {
            let v: i64 = redline::FromReply::from_reply(f.clone()).unwrap();
            assert_eq!(v, n as i64);
        }
        // An empty pipeline returns at once.
        let none: Vec<Frame> = c.pipeline().query().await.unwrap();
        assert!(none.is_empty());
    }
}

#[tokio::test]
async fn typed_pipeline_conversions_match_the_client() {
    use redline::{GeoMatch, GeoSearch, GeoUnit, StreamEntry};

    let server = RedisServer::start().unwrap();
    for (i, c) in clients(&server).await.iter().enumerate() {
        let (z, s, g) = (format!("{i}:tz"), format!("{i}:ts"), format!("{i}:tg"));
        c.zadd_multiple(&z, [(1.5, "a"), (2.0, "b"), (3.0, "c")])
            .await
            .unwrap();
        c.xadd(&s, "1-1", [("f", "v")]).await.unwrap();
        c.geoadd(
            &g,
            [
                (13.361389, 38.115556, "Palermo"),
                (15.087269, 37.502669, "Catania"),
            ],
        )
        .await
        .unwrap();
        let search = || GeoSearch::from_lonlat(15.0, 37.0).radius(200.0, GeoUnit::Kilometers);

        let direct = (
            c.zrange_withscores(&z, 0, -1).await.unwrap(),
            c.xread([(&s, "0")], None).await.unwrap(),
            c.geosearch_with(&g, search()).await.unwrap(),
        );
        // The same typed methods in a pipeline (and in a transaction) convert to the same
        // types and values, whatever the protocol.
        for atomic in [false, true] {
            let mut p = c.pipeline();
            if atomic {
                p.atomic();
            }
            #[allow(clippy::type_complexity)]
            let (range, read, near, popped): (
                Vec<(Bytes, f64)>,
                Vec<(Bytes, Vec<StreamEntry>)>,
                Vec<GeoMatch>,
                Vec<(Bytes, f64)>,
            ) = p
                .zrange_withscores(&z, 0, -1)
                .xread([(&s, "0")], None)
                .geosearch_with(&g, search())
                .zpopmin(format!("{i}:none"), 1)
                .query()
                .await
                .unwrap();
            assert_eq!((&range, &read, &near), (&direct.0, &direct.1, &direct.2));
            assert!(popped.is_empty());
        }
        assert_eq!(direct.0[0], (b("a"), 1.5));
        assert_eq!(direct.1[0].1[0].id, "1-1");
        assert_eq!(direct.2.len(), 2);
    }
}
