//! The reply parsers on real redis-server 7.0 output: every RESP3 type (`DEBUG PROTOCOL`
//! emits each one) and its RESP2 fallback, read through the `Decoder` as the reads arrive
//! and through `parse` on the whole byte stream.
// 3.141 is what Redis sends, not an approximation of pi.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::approx_constant)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use redline_resp::{encode, parse, Decoder, Frame};
use redline_testkit::RedisServer;

const TYPES: [&str; 13] = [
    "string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push",
    "verbatim", "true", "false",
];

fn b(s: &'static str) -> Frame {
    Frame::Bulk(Bytes::from_static(s.as_bytes()))
}

fn ints(n: i64) -> Vec<Frame> {
    (0..n).map(Frame::Integer).collect()
}

/// Sends `HELLO <proto>` then `DEBUG PROTOCOL <type>` for every type, and reads `count`
/// frames with the `Decoder`; returns them (HELLO's reply first) and the raw bytes.
fn debug_protocol(server: &RedisServer, proto: &str, count: usize) -> (Vec<Frame>, Vec<u8>) {
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut out = BytesMut::new();
    encode::command(&mut out, ["HELLO", proto]);
    for t in TYPES {
        encode::command(&mut out, ["DEBUG", "PROTOCOL", t]);
    }
    stream.write_all(&out).unwrap();

    let mut decoder = Decoder::default();
    let mut buf = BytesMut::new();
    let mut raw = Vec::new();
    let mut frames = Vec::new();
    while frames.len() < count {
        // Small reads, so frames straddle read boundaries.
        let mut chunk = [0u8; 7];
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "connection closed after {frames:?}");
        raw.extend_from_slice(&chunk[..n]);
        buf.extend_from_slice(&chunk[..n]);
        while let Some(frame) = decoder.decode(&mut buf).unwrap() {
            frames.push(frame);
        }
    }
    (frames, raw)
}

fn parse_all(raw: &[u8]) -> Vec<Frame> {
    let mut buf = BytesMut::from(raw);
    std::iter::from_fn(|| parse(&mut buf).unwrap()).collect()
}

#[test]
fn resp3_types_from_redis() {
    let server = RedisServer::builder()
        .arg("--enable-debug-command", "yes")
        .start()
        .unwrap();
    // HELLO, 13 replies, plus the real reply that follows the push.
    let (frames, raw) = debug_protocol(&server, "3", 15);
    assert!(
        matches!(frames[0], Frame::Map(_)),
        "HELLO 3 replies with a map"
    );
    let expected = vec![
        b("Hello World"),
        Frame::Integer(12345),
        Frame::Double(3.141),
        Frame::BigNumber(Bytes::from_static(b"1234567999999999999999999999999999999")),
        Frame::Null,
        Frame::Array(ints(3)),
        Frame::Set(ints(3)),
        Frame::Map(vec![
            (Frame::Integer(0), Frame::Boolean(false)),
            (Frame::Integer(1), Frame::Boolean(true)),
            (Frame::Integer(2), Frame::Boolean(false)),
        ]),
        Frame::Attribute {
            attrs: vec![(
                b("key-popularity"),
                Frame::Array(vec![b("key:123"), Frame::Integer(90)]),
            )],
            value: Box::new(b("Some real reply following the attribute")),
        },
        Frame::Push(vec![b("server-cpu-usage"), Frame::Integer(42)]),
        b("Some real reply following the push reply"),
        Frame::Verbatim {
            format: *b"txt",
            text: Bytes::from_static(b"This is a verbatim\nstring"),
        },
        Frame::Boolean(true),
        Frame::Boolean(false),
    ];
    assert_eq!(&frames[1..], &expected[..]);
    assert_eq!(parse_all(&raw), frames);
}

#[test]
fn resp2_fallbacks_from_redis() {
    let server = RedisServer::builder()
        .arg("--enable-debug-command", "yes")
        .start()
        .unwrap();
    let (frames, raw) = debug_protocol(&server, "2", 14);
    assert!(
        matches!(frames[0], Frame::Array(_)),
        "HELLO 2 replies with an array"
    );
    let expected = vec![
        b("Hello World"),
        Frame::Integer(12345),
        b("3.141"),
        b("1234567999999999999999999999999999999"),
        Frame::NullBulk,
        Frame::Array(ints(3)),
        Frame::Array(ints(3)),
        Frame::Array(vec![
            Frame::Integer(0),
            Frame::Integer(0),
            Frame::Integer(1),
            Frame::Integer(1),
            Frame::Integer(2),
            Frame::Integer(0),
        ]),
        b("Some real reply following the attribute"),
        Frame::Error(Bytes::from_static(
            b"ERR RESP2 is not supported by this command",
        )),
        b("This is a verbatim\nstring"),
        Frame::Integer(1),
        Frame::Integer(0),
    ];
    assert_eq!(&frames[1..], &expected[..]);
    assert_eq!(parse_all(&raw), frames);
}
