//! Strings and keys/TTL round trips against a real redis-server, over RESP3 and RESP2.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use redline::{Client, Config, ExpireCondition, Expiry, Protocol, SetCondition, SetOptions};
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

#[tokio::test]
async fn strings() {
    let server = RedisServer::start().unwrap();
    for (i, c) in clients(&server).await.iter().enumerate() {
        let k = |s: &str| format!("{i}:{s}");
        assert_eq!(c.get(k("missing")).await.unwrap(), None);
        c.set(k("a"), "1").await.unwrap();
        assert_eq!(c.get(k("a")).await.unwrap(), Some(Bytes::from_static(b"1")));
        assert!(!c.set_nx(k("a"), "2").await.unwrap());
        assert!(c.set_nx(k("b"), "2").await.unwrap());
        let nx = SetOptions::default().condition(SetCondition::IfAbsent);
        assert!(!c.set_with(k("a"), "x", nx).await.unwrap());
        let xx = SetOptions::default()
            .condition(SetCondition::IfPresent)
            .expiry(Expiry::Millis(50_000));
        assert!(c.set_with(k("a"), "3", xx).await.unwrap());
        assert!(c.pttl(k("a")).await.unwrap() > 0);
        assert_eq!(
            c.set_get(k("a"), "4").await.unwrap().as_deref(),
            Some(&b"3"[..])
        );
        c.set_ex(k("ex"), "v", 100).await.unwrap();
        assert!((1..=100).contains(&c.ttl(k("ex")).await.unwrap()));

        c.mset([(k("m1"), "x"), (k("m2"), "y")]).await.unwrap();
        assert_eq!(
            c.mget([k("m1"), k("nope"), k("m2")]).await.unwrap(),
            vec![
                Some(Bytes::from_static(b"x")),
                None,
                Some(Bytes::from_static(b"y"))
            ]
        );
        assert!(!c.mset_nx([(k("m1"), "z"), (k("m3"), "z")]).await.unwrap());

        assert_eq!(c.incr(k("n")).await.unwrap(), 1);
        assert_eq!(c.incr_by(k("n"), 10).await.unwrap(), 11);
        assert_eq!(c.decr(k("n")).await.unwrap(), 10);
        assert_eq!(c.decr_by(k("n"), 20).await.unwrap(), -10);
        assert_eq!(c.incr_by_float(k("f"), 1.5).await.unwrap(), 1.5);
        assert_eq!(c.append(k("s"), "hello").await.unwrap(), 5);
        assert_eq!(c.strlen(k("s")).await.unwrap(), 5);
        assert_eq!(
            c.get_range(k("s"), 1, 3).await.unwrap(),
            Bytes::from_static(b"ell")
        );
        assert_eq!(c.set_range(k("s"), 5, " world").await.unwrap(), 11);
        assert_eq!(
            c.get_del(k("s")).await.unwrap().as_deref(),
            Some(&b"hello world"[..])
        );
        assert_eq!(c.get(k("s")).await.unwrap(), None);
        c.set(k("gx"), "v").await.unwrap();
        assert_eq!(
            c.get_ex(k("gx"), 100).await.unwrap().as_deref(),
            Some(&b"v"[..])
        );
        assert!(c.ttl(k("gx")).await.unwrap() > 0);

        // Binary-safe values, including CRLF and NUL.
        let binary = Bytes::from_static(b"\0\r\n\xff$*");
        c.set(k("bin"), &binary).await.unwrap();
        assert_eq!(c.get(k("bin")).await.unwrap(), Some(binary));

        // Type errors are typed.
        c.set(k("str"), "abc").await.unwrap();
        let err = c.incr(k("str")).await.unwrap_err();
        assert!(matches!(err, redline::Error::Server { .. }), "{err}");
    }
}

#[tokio::test]
async fn keys_and_ttl() {
    let server = RedisServer::start().unwrap();
    for (i, c) in clients(&server).await.iter().enumerate() {
        let k = |s: &str| format!("{i}:{s}");
        c.mset([(k("a"), "1"), (k("b"), "2"), (k("c"), "3")])
            .await
            .unwrap();
        assert_eq!(
            c.exists([k("a"), k("b"), k("zz"), k("a")]).await.unwrap(),
            3
        );
        assert_eq!(c.touch([k("a"), k("zz")]).await.unwrap(), 1);
        assert_eq!(c.del([k("a"), k("zz")]).await.unwrap(), 1);
        assert_eq!(c.unlink([k("b")]).await.unwrap(), 1);
        assert_eq!(c.ttl(k("c")).await.unwrap(), -1);
        assert_eq!(c.ttl(k("none")).await.unwrap(), -2);
        assert!(c.expire(k("c"), 100).await.unwrap());
        assert!(!c.expire(k("none"), 100).await.unwrap());
        assert!(!c
            .expire_if(k("c"), 50, ExpireCondition::IfNone)
            .await
            .unwrap());
        assert!(c
            .expire_if(k("c"), 500, ExpireCondition::IfLater)
            .await
            .unwrap());
        assert!(c.ttl(k("c")).await.unwrap() > 100);
        assert!(c.persist(k("c")).await.unwrap());
        assert_eq!(c.pttl(k("c")).await.unwrap(), -1);
        assert!(c.pexpire(k("c"), 100_000).await.unwrap());
        assert!(c.expire_at(k("c"), 4_000_000_000).await.unwrap());
        c.rename(k("c"), k("d")).await.unwrap();
        assert!(!c.rename_nx(k("d"), k("d")).await.unwrap());
        assert_eq!(c.key_type(k("d")).await.unwrap(), "string");
        assert_eq!(c.key_type(k("none")).await.unwrap(), "none");
        assert_eq!(c.keys(k("d")).await.unwrap(), vec![Bytes::from(k("d"))]);

        for n in 0..50 {
            c.set(k(&format!("scan:{n}")), n).await.unwrap();
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        loop {
            let (next, keys) = c.scan(cursor, k("scan:*"), 10).await.unwrap();
            seen.extend(keys);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert_eq!(seen.len(), 50);
    }
}
