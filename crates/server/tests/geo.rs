//! GEO commands, differential against a real redis-server 7.0: the same points and the
//! same queries (every option, units, shapes near the poles and the antimeridian, bad
//! arguments) must get byte-identical replies, results in the same order included, and
//! the *STORE variants must leave identical sorted sets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{show, Conn, Redline};
use redline_testkit::RedisServer;

/// Random points (in range), plus a few at the edges of Redis's coordinate space.
fn points(rng: &mut fastrand::Rng, n: usize) -> Vec<(f64, f64, String)> {
    let mut out: Vec<(f64, f64, String)> = (0..n)
        .map(|i| {
            let lon = rng.f64() * 360.0 - 180.0;
            let lat = rng.f64() * 170.1 - 85.05;
            (lon, lat, format!("p{i}"))
        })
        .collect();
    // A cluster around Sicily, so small radii find several members.
    for i in 0..40 {
        let lon = 13.0 + rng.f64() * 3.0;
        let lat = 37.0 + rng.f64() * 2.0;
        out.push((lon, lat, format!("s{i}")));
    }
    out.extend([
        (180.0, 85.05112878, "corner-ne".to_string()),
        (-180.0, -85.05112878, "corner-sw".to_string()),
        (179.9999, 0.0, "east-edge".to_string()),
        (-179.9999, 0.0, "west-edge".to_string()),
        (0.0, 0.0, "origin".to_string()),
    ]);
    out
}

fn queries() -> Vec<Vec<String>> {
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let mut q = vec![
        words("GEOPOS pts s0 s1 nope corner-ne corner-sw origin"),
        words("GEOHASH pts s0 s1 nope corner-ne corner-sw east-edge"),
        words("GEODIST pts s0 s1"),
        words("GEODIST pts s0 s1 km"),
        words("GEODIST pts s0 s1 mi"),
        words("GEODIST pts s0 s1 ft"),
        words("GEODIST pts s0 nope"),
        words("GEODIST pts s0 s1 furlongs"),
        words("GEODIST pts east-edge west-edge km"),
        words("GEODIST nokey a b"),
        words("GEORADIUS pts 15 37 200 km"),
        words("GEORADIUS pts 15 37 200 km ASC WITHDIST WITHCOORD WITHHASH"),
        words("GEORADIUS pts 15 37 200 km DESC COUNT 5 WITHDIST"),
        words("GEORADIUS pts 15 37 200 km COUNT 3"),
        words("GEORADIUS pts 15 37 200 km COUNT 3 ANY"),
        words("GEORADIUS pts 15 37 200 km ANY"),
        words("GEORADIUS pts 15 37 0 km"),
        words("GEORADIUS pts 15 37 -1 km"),
        words("GEORADIUS pts 15 37 abc km"),
        words("GEORADIUS pts 200 37 10 km"),
        words("GEORADIUS pts 15 90 10 km"),
        words("GEORADIUS pts 15 37 10 parsecs"),
        words("GEORADIUS pts 15 37 10 km COUNT 0"),
        words("GEORADIUS pts 15 37 10 km STORE dst WITHDIST"),
        words("GEORADIUS pts 179.99 0 500 km ASC WITHDIST"),
        words("GEORADIUS pts 0 84 3000 km ASC WITHDIST"),
        words("GEORADIUS pts 0 0 5000 km ASC"),
        words("GEORADIUS pts 0 0 20000 km COUNT 10 DESC"),
        words("GEORADIUS_RO pts 15 37 100 mi WITHDIST ASC"),
        words("GEORADIUS_RO pts 15 37 100 mi STORE dst"),
        words("GEORADIUSBYMEMBER pts s0 150 km ASC WITHDIST WITHCOORD"),
        words("GEORADIUSBYMEMBER pts nope 150 km"),
        words("GEORADIUSBYMEMBER nokey nope 150 km"),
        words("GEORADIUSBYMEMBER pts s0 -5 km"),
        words("GEORADIUSBYMEMBER_RO pts s3 50000 ft ASC"),
        words("GEOSEARCH pts FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHDIST"),
        words("GEOSEARCH pts FROMMEMBER s0 BYBOX 300 200 km ASC WITHCOORD"),
        words("GEOSEARCH pts FROMMEMBER s0 BYBOX 300 200 km DESC COUNT 4 WITHHASH"),
        words("GEOSEARCH pts FROMLONLAT 15 37 BYBOX 100 100 mi COUNT 2 ANY"),
        words("GEOSEARCH pts FROMLONLAT 0 80 BYBOX 4000 1000 km ASC"),
        words("GEOSEARCH pts FROMLONLAT 179 -10 BYBOX 1000 4000 km ASC"),
        words("GEOSEARCH pts FROMLONLAT 15 37"),
        words("GEOSEARCH pts BYRADIUS 10 km"),
        words("GEOSEARCH pts FROMMEMBER s0 FROMLONLAT 1 1 BYRADIUS 10 km"),
        words("GEOSEARCH pts FROMMEMBER nope BYRADIUS 10 km"),
        words("GEOSEARCH pts FROMMEMBER s0 BYRADIUS 10 km BYBOX 1 1 km"),
        words("GEOSEARCH pts FROMMEMBER s0 BYBOX -1 1 km"),
        words("GEOSEARCH pts FROMMEMBER s0 BYRADIUS 10 km STORE dst"),
        words("GEOSEARCH nokey FROMMEMBER s0 BYRADIUS 10 km"),
        words("GEOSEARCHSTORE dst pts FROMLONLAT 15 37 BYRADIUS 150 km"),
        words("GEOSEARCHSTORE dst pts FROMLONLAT 15 37 BYRADIUS 150 km STOREDIST"),
        words("GEOSEARCHSTORE dst pts FROMLONLAT 15 37 BYRADIUS 150 km WITHDIST"),
        words("GEOSEARCHSTORE dst nokey FROMLONLAT 15 37 BYRADIUS 150 km"),
        words("GEOADD pts XX NX 1 1 x"),
        words("GEOADD pts 1 1"),
        words("GEOADD pts 181 1 x"),
        words("GEOADD pts CH 13.5 37.5 s0 1 2 newone"),
        words("GEOADD pts XX CH 14 38 s1 3 4 notadded"),
        words("GEOADD pts NX 14 38 s2 5 6 added"),
        words("GEOPOS pts s0 s1 s2 newone notadded added"),
        words("SET str x"),
        words("GEOADD str 1 1 a"),
        words("GEORADIUS str 1 1 1 km"),
        words("GEOPOS str a"),
    ];
    // After each STORE query, compare what it stored.
    let mut with_reads = Vec::new();
    for query in q.drain(..) {
        let stores = query.iter().any(|w| w.eq_ignore_ascii_case("store"))
            || query[0].eq_ignore_ascii_case("geosearchstore");
        with_reads.push(query);
        if stores {
            with_reads.push(words("ZRANGE dst 0 -1 WITHSCORES"));
            with_reads.push(words("EXISTS dst"));
        }
    }
    with_reads
}

#[test]
fn geo_replies_match_redis_server() {
    let redis = RedisServer::start().unwrap();
    let redline = Redline::start();
    let mut a = Conn::connect(redis.addr());
    let mut b = Conn::connect(redline.addr);
    let mut rng = fastrand::Rng::with_seed(7);
    for (lon, lat, member) in points(&mut rng, 400) {
        let cmd = [
            "GEOADD".to_string(),
            "pts".to_string(),
            format!("{lon:.6}"),
            format!("{lat:.6}"),
            member,
        ];
        assert_eq!(show(&a.cmd(&cmd)), show(&b.cmd(&cmd)), "{cmd:?}");
    }
    // The points are there, and a search finds some of them: the comparison is not
    // between two identical errors.
    assert_eq!(
        show(&b.cmd(&["ZCARD", "pts"])),
        show(&a.cmd(&["ZCARD", "pts"]))
    );
    let near = b.cmd(&[
        "GEOSEARCH",
        "pts",
        "FROMLONLAT",
        "15",
        "37",
        "BYRADIUS",
        "300",
        "km",
    ]);
    assert!(
        matches!(&near, redline_resp::Frame::Array(items) if items.len() > 5),
        "{near:?}"
    );
    for query in queries() {
        let (x, y) = (show(&a.cmd(&query)), show(&b.cmd(&query)));
        assert_eq!(x, y, "{query:?}");
    }
    // RESP3: coordinates become doubles.
    for c in [&mut a, &mut b] {
        c.cmd(&["HELLO", "3"]);
    }
    for query in [
        vec!["GEOPOS", "pts", "s0", "nope"],
        vec![
            "GEOSEARCH",
            "pts",
            "FROMMEMBER",
            "s0",
            "BYRADIUS",
            "80",
            "km",
            "ASC",
            "WITHCOORD",
            "WITHDIST",
        ],
    ] {
        assert_eq!(show(&a.cmd(&query)), show(&b.cmd(&query)), "{query:?}");
    }
}
