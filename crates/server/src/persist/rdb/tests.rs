//! Codec tests: payloads taken from Redis 7.0.15's DUMP, round trips of every type and
//! encoding, the legacy encodings Redis still loads, and corrupted input.

use super::encode;
use super::listpack::Writer;
use super::types::*;
use super::ziplist::tests::build as ziplist;
use super::*;
use crate::store::encoding::EncodingLimits;
use crate::store::{HashValue, ListValue, SetValue, ZSet};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// `body` with the DUMP footer (version 10 and a valid CRC).
fn payload(body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A comparable description of a value: its type and its contents (sets and hashes
/// sorted, as their order is not part of their meaning).
fn canon(value: &Value) -> String {
    let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match value {
        Value::Int(n) => format!("int {n}"),
        Value::Str(s) => format!("str {:?}", s.as_bytes()),
        Value::List(l) => format!("list {:?}", l.iter().map(show).collect::<Vec<_>>()),
        Value::Hash(h) => {
            let mut pairs: Vec<_> = h.iter().map(|(f, v)| (show(f), show(v))).collect();
            pairs.sort();
            format!("hash {pairs:?}")
        }
        Value::Set(s) => {
            let mut members: Vec<_> = s.iter().map(|m| show(&m)).collect();
            members.sort();
            format!("set {members:?}")
        }
        Value::ZSet(z) => format!(
            "zset {:?}",
            z.iter().map(|(m, s)| (show(m), s)).collect::<Vec<_>>()
        ),
        Value::Stream(st) => {
            use crate::store::stream::StreamId;
            let entries: Vec<_> = st
                .range(StreamId::MIN, StreamId::MAX)
                .map(|(id, f)| (id.to_string(), f.iter().map(show).collect::<Vec<_>>()))
                .collect();
            let groups: Vec<_> = st
                .groups
                .iter()
                .map(|(name, g)| {
                    let pel: Vec<_> = g
                        .pel
                        .iter()
                        .map(|(id, n)| {
                            (
                                id.to_string(),
                                show(&n.consumer),
                                n.delivery_time,
                                n.delivery_count,
                            )
                        })
                        .collect();
                    let consumers: Vec<_> = g
                        .consumers
                        .iter()
                        .map(|(c, v)| (show(c), v.seen_time, v.pel.len()))
                        .collect();
                    (
                        show(name),
                        g.last_id.to_string(),
                        g.entries_read,
                        pel,
                        consumers,
                    )
                })
                .collect();
            format!(
                "stream {entries:?} last {} maxdel {} added {} groups {groups:?}",
                st.last_id, st.max_deleted_id, st.entries_added
            )
        }
    }
}

fn list(items: &[&[u8]]) -> Value {
    Value::List(Box::new(items.iter().copied().collect::<ListValue>()))
}

fn hash(pairs: &[(&[u8], &[u8])]) -> Value {
    let mut h = HashValue::default();
    for (f, v) in pairs {
        h.insert(f, v);
    }
    Value::Hash(h)
}

fn set(members: &[&[u8]]) -> Value {
    Value::Set(members.iter().copied().collect::<SetValue>())
}

fn zset(members: &[(&[u8], f64)]) -> Value {
    let mut z = ZSet::default();
    for (m, s) in members {
        z.insert(m, *s);
    }
    Value::ZSet(z)
}

fn round_trip(value: &Value) -> Vec<u8> {
    let bytes = dump_payload(value, &EncodingLimits::default());
    let back = restore_payload(&bytes).expect("our own payload loads");
    assert_eq!(canon(&back), canon(value));
    bytes
}

#[test]
fn redis_stream_payload_loads_and_round_trips() {
    // XADD ts 1-1 a 1 b 2; XADD ts 1-2 a 3 b 4; XADD ts 2-0 c 5; XDEL ts 1-2;
    // XGROUP CREATE ts g 0; XCLAIM ts g alice 0 2-0 FORCE TIME 1000 RETRYCOUNT 3
    // (DUMP from redis-server 7.0.15: type 19).
    let redis = hex("13011000000000000000010000000000000001c3383d123d000000190002010101020181610281620200200900002001401102050103600902030104200b401301dfff202b0781630205010601ff0202000101010203010167000081ffffffffffffffff0100000000000000020000000000000000e803000000000000030105616c6963654f958d0fa201000001000000000000000200000000000000000a0056b6271e2c23f872");
    let loaded = restore_payload(&redis).expect("Redis's stream payload loads");
    let text = canon(&loaded);
    assert!(text.starts_with(r#"stream [("1-1", ["a", "1", "b", "2"]), ("2-0", ["c", "5"])] last 2-0 maxdel 1-2 added 3"#), "{text}");
    assert!(text.contains(r#"("2-0", "alice", 1000, 3)"#), "{text}");
    round_trip(&loaded);
}

#[test]
fn crc_is_redis_crc64() {
    // The check value of Redis's crc64 test.
    assert_eq!(crc64(b"123456789"), 0xe9c6d914c4b8d9ca);
}

#[test]
fn redis_payloads_load_and_small_values_encode_identically() {
    let cases: [(&str, Value); 6] = [
        (
            "000568656c6c6f0a006372df766534200a",
            Value::string(b"hello"),
        ),
        ("00c139300a009d94ea2793fc08b9", Value::Int(12345)),
        (
            "1201020c0c00000002008161020101ff0a0094962b23ac17aa85",
            list(&[b"a", b"1"]),
        ),
        (
            "1012120000000400816602817602816e020701ff0a00b82adea8407ffaa8",
            hash(&[(b"f", b"v"), (b"n", b"7")]),
        ),
        (
            "0b0e02000000030000000100020003000a00a5025ce26d6e4d1b",
            set(&[b"3", b"1", b"2"]),
        ),
        (
            "111414000000040081610283312e35048162020201ff0a00fa02b425af188763",
            zset(&[(b"a", 1.5), (b"b", 2.0)]),
        ),
    ];
    for (redis, value) in cases {
        let redis = hex(redis);
        let loaded = restore_payload(&redis).expect("Redis's payload loads");
        assert_eq!(canon(&loaded), canon(&value));
        assert_eq!(
            dump_payload(&value, &EncodingLimits::default()),
            redis,
            "{}",
            canon(&value)
        );
    }
    // "ab" * 100, compressed by liblzf.
    let redis = hex("00c30a40c802616261e0ba010161620a0024a6e84170c0c68c");
    let loaded = restore_payload(&redis).unwrap();
    assert_eq!(canon(&loaded), canon(&Value::string(&b"ab".repeat(100))));
}

#[test]
fn strings_round_trip() {
    let mut rng = fastrand::Rng::with_seed(1);
    let binary: Vec<u8> = (0..3000).map(|_| rng.u8(..)).collect();
    for n in [
        0,
        -1,
        127,
        128,
        -128,
        -129,
        40000,
        -40000,
        1 << 31,
        1 << 40,
        i64::MIN,
        i64::MAX,
    ] {
        round_trip(&Value::Int(n));
    }
    for s in [
        &b""[..],
        b"x",
        b"01",
        b"-0",
        b"12345678901",
        b"a string of twenty-one",
        &b"compress me ".repeat(100),
        &binary,
        &[0u8; 100_000],
    ] {
        round_trip(&Value::string(s));
    }
    // Compressible strings are compressed, incompressible ones are not.
    assert!(round_trip(&Value::string(&b"z".repeat(1000))).len() < 100);
    assert!(round_trip(&Value::string(&binary)).len() > 3000);
}

#[test]
fn collections_round_trip_small_and_large() {
    let big = vec![b'B'; 100 * 1024];
    let many: Vec<Vec<u8>> = (0..10_000).map(|i| format!("e{i}").into_bytes()).collect();
    let many_refs: Vec<&[u8]> = many.iter().map(|v| &v[..]).collect();
    round_trip(&list(&[b"a", b"1", b""]));
    let bytes = round_trip(&list(&many_refs));
    assert_eq!(bytes[0], LIST_QUICKLIST_2);
    round_trip(&list(&[b"x", &big, b"y", &big]));

    let fields: Vec<Vec<u8>> = (0..1000).map(|i| format!("f{i}").into_bytes()).collect();
    let pairs: Vec<(&[u8], &[u8])> = fields.iter().map(|f| (&f[..], &f[1..])).collect();
    assert_eq!(round_trip(&hash(&pairs[..3]))[0], HASH_LISTPACK);
    assert_eq!(round_trip(&hash(&pairs))[0], HASH);
    assert_eq!(round_trip(&hash(&[(b"f", &big)]))[0], HASH);

    let ints: Vec<Vec<u8>> = (0..1000)
        .map(|i| (i * 7 - 300).to_string().into_bytes())
        .collect();
    let int_refs: Vec<&[u8]> = ints.iter().map(|v| &v[..]).collect();
    assert_eq!(round_trip(&set(&int_refs[..500]))[0], SET_INTSET);
    assert_eq!(
        round_trip(&set(&[b"1", b"1099511627776", b"-5"]))[0],
        SET_INTSET
    );
    assert_eq!(round_trip(&set(&int_refs))[0], SET);
    assert_eq!(round_trip(&set(&[b"a", b"1", b"01"]))[0], SET);

    let scores = [
        1.5,
        -0.25,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.1,
        1e300,
        -7.0,
        3.0,
    ];
    let members: Vec<(&[u8], f64)> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| (&f[..], scores[i % scores.len()] + (i / scores.len()) as f64))
        .collect();
    assert_eq!(round_trip(&zset(&members[..8]))[0], ZSET_LISTPACK);
    assert_eq!(round_trip(&zset(&members))[0], ZSET_2);
    assert_eq!(round_trip(&zset(&[(&big, 1.0)]))[0], ZSET_2);
}

#[test]
fn legacy_encodings_load() {
    let s = |out: &mut Vec<u8>, b: &[u8]| encode::string(out, b);
    let want_list = canon(&list(&[b"a", b"12", b"bb"]));

    // LIST: count then elements.
    let mut body = vec![LIST, 3];
    for e in [&b"a"[..], b"12", b"bb"] {
        s(&mut body, e);
    }
    assert_eq!(canon(&restore_payload(&payload(&body)).unwrap()), want_list);

    // LIST_ZIPLIST: one ziplist.
    let mut body = vec![LIST_ZIPLIST];
    s(&mut body, &ziplist(&[b"a", b"12", b"bb"]));
    assert_eq!(canon(&restore_payload(&payload(&body)).unwrap()), want_list);

    // LIST_QUICKLIST: ziplist nodes, an empty one skipped.
    let mut body = vec![LIST_QUICKLIST, 3];
    s(&mut body, &ziplist(&[b"a", b"12"]));
    s(&mut body, &ziplist(&[]));
    s(&mut body, &ziplist(&[b"bb"]));
    assert_eq!(canon(&restore_payload(&payload(&body)).unwrap()), want_list);

    // LIST_QUICKLIST_2 with a plain node between packed ones.
    let mut lp = Writer::new();
    lp.push(b"a");
    let mut lp2 = Writer::new();
    lp2.push(b"bb");
    let mut body = vec![LIST_QUICKLIST_2, 3, 2];
    s(&mut body, &lp.finish());
    body.push(1);
    s(&mut body, b"12");
    body.push(2);
    s(&mut body, &lp2.finish());
    assert_eq!(canon(&restore_payload(&payload(&body)).unwrap()), want_list);

    // HASH and HASH_ZIPLIST.
    let want_hash = canon(&hash(&[(b"f", b"1"), (b"g", b"two")]));
    let mut body = vec![HASH, 2];
    for e in [&b"f"[..], b"1", b"g", b"two"] {
        s(&mut body, e);
    }
    assert_eq!(canon(&restore_payload(&payload(&body)).unwrap()), want_hash);
    let mut body = vec![HASH_ZIPLIST];
    s(&mut body, &ziplist(&[b"f", b"1", b"g", b"two"]));
    assert_eq!(canon(&restore_payload(&payload(&body)).unwrap()), want_hash);

    // SET.
    let mut body = vec![SET, 2];
    s(&mut body, b"m");
    s(&mut body, b"5");
    assert_eq!(
        canon(&restore_payload(&payload(&body)).unwrap()),
        canon(&set(&[b"m", b"5"]))
    );

    // ZSET with text scores (253 NaN is refused, 254 +inf, 255 -inf) and ZSET_ZIPLIST.
    let want_zset = canon(&zset(&[
        (b"a", 1.5),
        (b"b", f64::INFINITY),
        (b"c", f64::NEG_INFINITY),
    ]));
    let mut body = vec![ZSET, 3];
    s(&mut body, b"a");
    body.extend_from_slice(b"\x031.5");
    s(&mut body, b"b");
    body.push(254);
    s(&mut body, b"c");
    body.push(255);
    assert_eq!(canon(&restore_payload(&payload(&body)).unwrap()), want_zset);
    let mut body = vec![ZSET_ZIPLIST];
    s(
        &mut body,
        &ziplist(&[b"c", b"-inf", b"a", b"1.5", b"b", b"inf"]),
    );
    assert_eq!(canon(&restore_payload(&payload(&body)).unwrap()), want_zset);
    let mut body = vec![ZSET, 1];
    s(&mut body, b"n");
    body.push(253);
    assert!(restore_payload(&payload(&body)).is_err());
}

#[test]
fn footer_errors() {
    let good = dump_payload(&Value::string(b"hello"), &EncodingLimits::default());
    assert!(restore_payload(&good).is_ok());
    let version_or_checksum = Err(PayloadError::VersionOrChecksum);
    for short in 0..10 {
        assert_eq!(
            restore_payload(&good[..short]).map(|_| ()),
            version_or_checksum
        );
    }
    let mut flipped = good.clone();
    flipped[3] ^= 1;
    assert_eq!(restore_payload(&flipped).map(|_| ()), version_or_checksum);
    let mut bad_crc = good.clone();
    *bad_crc.last_mut().unwrap() ^= 0x80;
    assert_eq!(restore_payload(&bad_crc).map(|_| ()), version_or_checksum);
    // A newer RDB version (with a valid CRC) is refused; older ones are read.
    let mut body = good[..good.len() - 10].to_vec();
    body.extend_from_slice(&11u16.to_le_bytes());
    let crc = crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(restore_payload(&body).map(|_| ()), version_or_checksum);
    let mut old = good[..good.len() - 10].to_vec();
    old.extend_from_slice(&9u16.to_le_bytes());
    let crc = crc64(&old);
    old.extend_from_slice(&crc.to_le_bytes());
    assert!(restore_payload(&old).is_ok());
    assert_eq!(
        PayloadError::VersionOrChecksum.text(),
        "ERR DUMP payload version or checksum are wrong"
    );
    // DEBUG SET-SKIP-CHECKSUM-VALIDATION: the CRC is not compared, the version still is.
    assert!(restore_payload_with(&bad_crc, false, true).is_ok());
    assert_eq!(
        restore_payload_with(&body, false, true).map(|_| ()),
        version_or_checksum
    );
}

#[test]
fn bad_compact_encodings_are_reported_in_redis_words() {
    let s = |out: &mut Vec<u8>, b: &[u8]| encode::string(out, b);
    let reason = |body: &[u8]| match restore_payload(&payload(body)) {
        Err(PayloadError::BadData(Corrupt(text))) => text,
        other => panic!("{other:?}"),
    };
    // A duplicate field, an odd count, a broken ziplist: all integrity failures.
    let mut body = vec![HASH_ZIPLIST];
    s(&mut body, &ziplist(&[b"f", b"1", b"f", b"2"]));
    assert_eq!(reason(&body), "Hash ziplist integrity check failed.");
    let mut body = vec![ZSET_ZIPLIST];
    s(&mut body, &ziplist(&[b"m", b"1", b"n"]));
    assert_eq!(reason(&body), "Zset ziplist integrity check failed.");
    let mut zl = ziplist(&[b"a", b"b"]);
    zl[4] ^= 1;
    let mut body = vec![LIST_QUICKLIST, 1];
    s(&mut body, &zl);
    assert_eq!(reason(&body), "Ziplist integrity check failed.");
    let mut body = vec![HASH_ZIPMAP];
    s(&mut body, b"\x02\x01f\x01\x00v\x01f\x01\x00w\xff");
    assert_eq!(reason(&body), "Hash zipmap with dup elements");
}

#[test]
fn malformed_bodies_are_bad_data() {
    let bad = |body: &[u8]| {
        assert!(
            matches!(
                restore_payload(&payload(body)),
                Err(PayloadError::BadData(_))
            ),
            "{body:?}"
        )
    };
    // Unknown and unsupported types (stream, module).
    bad(&[99]);
    bad(&[15, 0]);
    bad(&[6, 0]);
    // Empty collections.
    bad(&[LIST, 0]);
    bad(&[SET, 0]);
    bad(&[HASH, 0]);
    bad(&[ZSET_2, 0]);
    bad(&[LIST_QUICKLIST_2, 0]);
    let mut empty_lp = vec![HASH_LISTPACK];
    encode::string(&mut empty_lp, &Writer::new().finish());
    bad(&empty_lp);
    // Duplicates.
    bad(&[SET, 2, 1, b'a', 1, b'a']);
    bad(&[HASH, 2, 1, b'a', 1, b'1', 1, b'a', 1, b'2']);
    bad(&[
        ZSET_2, 2, 1, b'a', 0, 0, 0, 0, 0, 0, 0, 0, 1, b'a', 0, 0, 0, 0, 0, 0, 0, 0,
    ]);
    // A NaN binary score.
    let mut nan = vec![ZSET_2, 1, 1, b'a'];
    nan.extend_from_slice(&f64::NAN.to_le_bytes());
    bad(&nan);
    // Unknown quicklist node kind.
    bad(&[LIST_QUICKLIST_2, 1, 3, 1, b'a']);
    // Odd listpack pairs.
    let mut odd = Writer::new();
    odd.push(b"f");
    let mut body = vec![HASH_LISTPACK];
    encode::string(&mut body, &odd.finish());
    bad(&body);
    // Hostile lengths: a 2^63-byte string, a 2^60-element list, a huge LZF length.
    bad(&[STRING, 0x81, 0x80, 0, 0, 0, 0, 0, 0, 0]);
    bad(&[LIST, 0x81, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, b'a']);
    bad(&[
        STRING, 0xC3, 2, 0x81, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, b'a',
    ]);
    // Unknown string encoding.
    bad(&[STRING, 0xC4]);
}

/// Every truncation and many byte changes of real payloads (re-signed so they reach the
/// decoder) fail cleanly or load: never a panic.
#[test]
fn corrupted_payloads_never_panic() {
    let big = vec![b'q'; 300];
    let values = [
        Value::string(&b"lzf lzf lzf lzf lzf lzf lzf lzf".repeat(3)),
        list(&[b"a", b"123", &big, b"-70000"]),
        hash(&[(b"f", b"v"), (b"n", b"7")]),
        hash(&[(b"f", &big)]),
        set(&[b"1", b"2", b"40000"]),
        set(&[b"x", b"y"]),
        zset(&[(b"a", 1.5), (b"b", f64::INFINITY)]),
        zset(&[(&big, -2.5)]),
    ];
    let mut rng = fastrand::Rng::with_seed(42);
    for value in &values {
        let good = dump_payload(value, &EncodingLimits::default());
        let body = &good[..good.len() - 10];
        for cut in 0..body.len() {
            // Truncated bodies may still read into the footer, as in Redis; they must not
            // panic, and mostly fail.
            let _ = restore_payload(&payload(&body[..cut]));
        }
        for _ in 0..2000 {
            let mut changed = body.to_vec();
            let i = rng.usize(..changed.len());
            changed[i] = rng.u8(..);
            let _ = restore_payload(&payload(&changed));
        }
    }
}

/// A consumer may be named "" (XREADGROUP GROUP g "" ... creates one): its pending
/// entries load back as its own. The loader once used "" to mean "no owner yet" and
/// refused the payload, so DEBUG RELOAD and a restart failed.
#[test]
fn a_consumer_named_empty_owns_its_pending_entries_after_a_reload() {
    let redis = hex("13011000000000000000010000000000000001c3383d123d000000190002010101020181610281620200200900002001401102050103600902030104200b401301dfff202b0781630205010601ff0202000101010203010167000081ffffffffffffffff0100000000000000020000000000000000e803000000000000030105616c6963654f958d0fa201000001000000000000000200000000000000000a0056b6271e2c23f872");
    let Ok(Value::Stream(mut stream)) = restore_payload(&redis) else {
        panic!("Redis's stream payload loads as a stream");
    };
    let empty = crate::store::stream::ConsumerName::from(&b""[..]);
    for group in stream.groups.values_mut() {
        let consumers = std::mem::take(&mut group.consumers);
        for (_, consumer) in consumers {
            group.consumers.insert(empty.clone(), consumer);
        }
        for nack in group.pel.values_mut() {
            nack.consumer = empty.clone();
        }
    }
    let value = Value::Stream(stream);
    round_trip(&value);
    assert!(
        canon(&value).contains(r#"("2-0", "", 1000, 3)"#),
        "{}",
        canon(&value)
    );
}

#[test]
fn score_text_matches_d2string() {
    assert_eq!(encode::score_text(1.0), "1");
    assert_eq!(encode::score_text(-3.0), "-3");
    assert_eq!(encode::score_text(1.5), "1.5");
    assert_eq!(encode::score_text(0.1), "0.10000000000000001");
    assert_eq!(encode::score_text(f64::INFINITY), "inf");
    assert_eq!(encode::score_text(f64::NEG_INFINITY), "-inf");
    assert_eq!(encode::score_text(1e20), "1e+20");
    assert_eq!(encode::score_text(4503599627370496.0), "4503599627370496");
    assert_eq!(
        encode::score_text(-4.3214862309338614e18),
        "-4321486230933861376"
    );
    assert_eq!(encode::score_text(5e18), "5e+18");
    assert_eq!(encode::score_text(-0.0), "0");
    assert_eq!(encode::score_text(f64::NAN), "nan");
}

/// A one-entry stream payload (`XADD s 5-1 f v`) whose node listpack says `live`
/// entries and ends the entry with element count `lp_count` (3 + 1 value is right),
/// and whose group `g` lists `consumers` (each with no pending entries).
fn stream_body(live: i64, lp_count: i64, consumers: &[&[u8]]) -> Vec<u8> {
    stream_payload(live, lp_count, consumers, false)
}

/// [`stream_body`], the listpack's last back-length wrong when `bad_backlen`.
fn stream_payload(live: i64, lp_count: i64, consumers: &[&[u8]], bad_backlen: bool) -> Vec<u8> {
    let mut lp = Writer::new();
    for n in [live, 0, 1] {
        lp.push_int(n);
    }
    lp.push(b"f");
    for n in [0, 2, 0, 0] {
        lp.push_int(n); // master terminator, then flags SAMEFIELDS, id deltas 0-0
    }
    lp.push(b"v");
    lp.push_int(lp_count);
    let mut master = 5u64.to_be_bytes().to_vec();
    master.extend_from_slice(&1u64.to_be_bytes());
    let mut body = vec![STREAM_LISTPACKS_2];
    encode::len(&mut body, 1);
    encode::string(&mut body, &master);
    let mut lp = lp.finish();
    if bad_backlen {
        let last = lp.len() - 2;
        lp[last] += 1;
    }
    encode::string(&mut body, &lp);
    // length; last id; first id; max deleted id; entries added; one group.
    for n in [1, 5, 1, 5, 1, 0, 0, 1, 1] {
        encode::len(&mut body, n);
    }
    encode::string(&mut body, b"g");
    for n in [5, 1, 1, 0, consumers.len() as u64] {
        encode::len(&mut body, n); // last id, entries read, PEL size, consumers
    }
    for name in consumers {
        encode::string(&mut body, name);
        body.extend_from_slice(&0u64.to_le_bytes());
        encode::len(&mut body, 0);
    }
    payload(&body)
}

/// Redis's deep sanitization (`sanitize-dump-payload yes`) refuses a stream node whose
/// entry counts or listpack back-lengths are off; without it they are not read
/// (nothing here relies on them).
/// A consumer listed twice is refused either way, as in Redis.
#[test]
fn stream_payload_counts_are_checked_when_deep() {
    let good = stream_body(1, 4, &[b"alice"]);
    assert!(restore_payload_with(&good, true, true).is_ok());
    for bad in [
        stream_body(1, 5, &[]),
        stream_body(2, 4, &[]),
        stream_body(0, 4, &[]),
        stream_body(i64::MIN, 4, &[]),
        stream_payload(1, 4, &[], true),
    ] {
        assert!(matches!(
            restore_payload_with(&bad, true, true),
            Err(PayloadError::BadData(Corrupt(
                "Stream listpack integrity check failed."
            )))
        ));
        let value = restore_payload_with(&bad, true, false).expect("shallow load");
        assert!(
            canon(&value).starts_with(r#"stream [("5-1", ["f", "v"])]"#),
            "{}",
            canon(&value)
        );
    }
    let twice = stream_body(1, 4, &[b"alice", b"alice"]);
    for deep in [true, false] {
        assert!(matches!(
            restore_payload_with(&twice, true, deep),
            Err(PayloadError::BadData(Corrupt(
                "Duplicate stream consumer detected."
            )))
        ));
    }
}
