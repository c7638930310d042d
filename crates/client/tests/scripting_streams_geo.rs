//! Scripting (EVAL, EVALSHA, Script fallback), streams basics and geo against a real
//! redis-server, over RESP3 and RESP2; streams and geo against redline-server too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use bytes::Bytes;
use redline::{Client, Config, Error, GeoSearch, GeoUnit, Protocol, Script, ServerErrorKind};
use redline_testkit::{RedisServer, RedlineServer};

async fn clients(server: &RedisServer) -> Vec<Client> {
    clients_of(&server.url()).await
}

async fn clients_of(url: &str) -> Vec<Client> {
    let mut out = Vec::new();
    for protocol in [Protocol::Resp3, Protocol::Resp2] {
        let mut cfg = Config::from_url(url).unwrap();
        cfg.protocol = protocol;
        out.push(Client::from_config(cfg).await.unwrap());
    }
    out
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[tokio::test]
async fn scripting() {
    let server = RedisServer::start().unwrap();
    for (i, c) in clients(&server).await.iter().enumerate() {
        let key = format!("{i}:counter");
        let n: i64 = c
            .eval("return redis.call('INCRBY', KEYS[1], ARGV[1])", [&key], [5])
            .await
            .unwrap();
        assert_eq!(n, 5);
        let list: Vec<String> = c
            .eval("return {KEYS[1], ARGV[1], ARGV[2]}", ["k"], ["a", "b"])
            .await
            .unwrap();
        assert_eq!(list, vec!["k", "a", "b"]);

        c.cmd(["SCRIPT", "FLUSH"]).await.unwrap();
        let script = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1]) * 2");
        assert_eq!(c.script_exists([script.sha()]).await.unwrap(), vec![false]);
        let err = c
            .evalsha::<i64>(script.sha(), [&key], [1])
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::Server {
                    kind: ServerErrorKind::NoScript,
                    ..
                }
            ),
            "{err:?}"
        );
        // First run falls back to EVAL (which caches it), later runs hit EVALSHA.
        assert_eq!(script.run::<i64>(c, [&key], [1]).await.unwrap(), 12);
        assert_eq!(c.script_exists([script.sha()]).await.unwrap(), vec![true]);
        assert_eq!(script.run::<i64>(c, [&key], [1]).await.unwrap(), 14);
        assert_eq!(
            c.script_load("return 1").await.unwrap(),
            Script::new("return 1").sha()
        );
        // Script errors are typed server errors.
        let err = c
            .eval::<()>("return redis.error_reply('MYERR custom')", [""; 0], [""; 0])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Server { kind: ServerErrorKind::Other(k), .. } if &**k == "MYERR"),
            "{err:?}"
        );
    }
}

/// A redis-server and a redline-server, for the families both must serve alike.
fn both_servers() -> (RedisServer, RedlineServer, Vec<String>) {
    let redis = RedisServer::start().unwrap();
    let redline = RedlineServer::start().unwrap();
    let urls = vec![redis.url(), redline.url()];
    (redis, redline, urls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams() {
    let (_redis, _redline, urls) = both_servers();
    for url in &urls {
        streams_on(url).await;
    }
}

async fn streams_on(url: &str) {
    for (i, c) in clients_of(url).await.iter().enumerate() {
        let s = format!("{i}:stream");
        let id1 = c
            .xadd(&s, "1-1", [("type", "login"), ("user", "42")])
            .await
            .unwrap();
        assert_eq!(id1, "1-1");
        let id2 = c.xadd(&s, "*", [("type", "logout")]).await.unwrap();
        assert!(id2.contains('-'));
        assert_eq!(c.xlen(&s).await.unwrap(), 2);
        let all = c.xrange(&s, "-", "+").await.unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].id, "1-1");
        assert_eq!(
            all[0].fields,
            vec![(b("type"), b("login")), (b("user"), b("42"))]
        );
        assert_eq!(c.xrange_count(&s, "-", "+", 1).await.unwrap().len(), 1);
        assert_eq!(c.xrevrange(&s, "+", "-").await.unwrap()[0].id, id2);

        let read = c.xread([(&s, "0")], Some(10)).await.unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].0, Bytes::from(s.clone()));
        assert_eq!(read[0].1.len(), 2);
        assert!(c
            .xread([(&s, id2.as_str())], None)
            .await
            .unwrap()
            .is_empty());

        // XREAD BLOCK on a dedicated connection: times out empty, or gets a new entry.
        let none = c
            .xread_block([(&s, "$")], None, Duration::from_millis(100))
            .await
            .unwrap();
        assert!(none.is_empty());
        let waiter = {
            let c = c.clone();
            let s = s.clone();
            tokio::spawn(async move {
                c.xread_block([(s, "$")], Some(1), Duration::from_secs(5))
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        c.xadd(&s, "*", [("type", "late")]).await.unwrap();
        let got = waiter.await.unwrap().unwrap();
        assert_eq!(got[0].1[0].fields, vec![(b("type"), b("late"))]);
        // ... and a raw XREAD BLOCK goes to a dedicated connection, honouring its timeout.
        let reply = c
            .cmd(["XREAD", "BLOCK", "100", "STREAMS", &s, "$"])
            .await
            .unwrap();
        assert!(
            matches!(reply, redline::Frame::Null | redline::Frame::NullArray),
            "{reply:?}"
        );

        assert_eq!(c.xdel(&s, [&id1]).await.unwrap(), 1);
        c.xadd_capped(&s, 1, "*", [("k", "v")]).await.unwrap();
        let before = c.xlen(&s).await.unwrap();
        assert_eq!(c.xtrim(&s, 1).await.unwrap(), before - 1);
        assert_eq!(c.xlen(&s).await.unwrap(), 1);
    }
}

#[tokio::test]
async fn geo() {
    let (_redis, _redline, urls) = both_servers();
    for url in &urls {
        geo_on(url).await;
    }
}

async fn geo_on(url: &str) {
    for (i, c) in clients_of(url).await.iter().enumerate() {
        let key = format!("{i}:sicily");
        let added = c
            .geoadd(
                &key,
                [
                    (13.361389, 38.115556, "Palermo"),
                    (15.087269, 37.502669, "Catania"),
                ],
            )
            .await
            .unwrap();
        assert_eq!(added, 2);
        let d = c
            .geodist(&key, "Palermo", "Catania", GeoUnit::Kilometers)
            .await
            .unwrap()
            .unwrap();
        assert!((d - 166.2742).abs() < 0.001, "{d}");
        assert_eq!(
            c.geodist(&key, "Palermo", "nope", GeoUnit::Meters)
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            c.geohash(&key, ["Palermo", "nope"]).await.unwrap(),
            vec![Some("sqc8b49rny0".to_owned()), None]
        );
        let pos = c.geopos(&key, ["Palermo", "nope"]).await.unwrap();
        let (lon, lat) = pos[0].unwrap();
        assert!((lon - 13.361389).abs() < 1e-5 && (lat - 38.115556).abs() < 1e-5);
        assert_eq!(pos[1], None);

        let search = GeoSearch::from_lonlat(15.0, 37.0)
            .radius(200.0, GeoUnit::Kilometers)
            .nearest_first();
        assert_eq!(
            c.geosearch(&key, search.clone()).await.unwrap(),
            vec![b("Catania"), b("Palermo")]
        );
        let matches = c.geosearch_with(&key, search.clone()).await.unwrap();
        assert_eq!(matches[0].member, b("Catania"));
        assert!((matches[0].distance - 56.4413).abs() < 0.001);
        assert!((matches[1].distance - 190.4424).abs() < 0.001);
        assert!((matches[0].coordinates.0 - 15.087269).abs() < 1e-5);
        assert!(matches[0].hash > 0);
        let boxed = GeoSearch::from_member("Palermo")
            .rectangle(400.0, 400.0, GeoUnit::Kilometers)
            .farthest_first()
            .count(1);
        assert_eq!(c.geosearch(&key, boxed).await.unwrap(), vec![b("Catania")]);
        let dest = format!("{i}:near");
        assert_eq!(
            c.geosearchstore(&dest, &key, search, true).await.unwrap(),
            2
        );
        let stored = c.zscore(&dest, "Catania").await.unwrap().unwrap();
        assert!((stored - 56.4413).abs() < 0.001);
    }
}
