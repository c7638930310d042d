//! Reply parsing: every frame type, every malformed case, and partial input at every split
//! point, through both `parse` and the resumable `Decoder`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::{Bytes, BytesMut};
use redline_resp::{parse, parse_with, Decoder, Frame, Limits, ProtocolError};

fn b(s: &'static str) -> Bytes {
    Bytes::from_static(s.as_bytes())
}

/// Each wire form with the frame it must parse to.
fn corpus() -> Vec<(&'static [u8], Frame)> {
    vec![
        (b"+OK\r\n", Frame::Simple(b("OK"))),
        (b"+\r\n", Frame::Simple(Bytes::new())),
        (b"+a\rb\r\n", Frame::Simple(b("a\rb"))),
        (
            b"-ERR unknown command\r\n",
            Frame::Error(b("ERR unknown command")),
        ),
        (b":0\r\n", Frame::Integer(0)),
        (b":-42\r\n", Frame::Integer(-42)),
        (b":9223372036854775807\r\n", Frame::Integer(i64::MAX)),
        (b":-9223372036854775808\r\n", Frame::Integer(i64::MIN)),
        (b"$3\r\nfoo\r\n", Frame::Bulk(b("foo"))),
        (b"$0\r\n\r\n", Frame::Bulk(Bytes::new())),
        (
            b"$4\r\na\r\nb\r\n",
            Frame::Bulk(Bytes::from_static(b"a\r\nb")),
        ),
        (b"$-1\r\n", Frame::NullBulk),
        (b"*-1\r\n", Frame::NullArray),
        (b"_\r\n", Frame::Null),
        (b"*0\r\n", Frame::Array(vec![])),
        (
            b"*3\r\n:1\r\n$1\r\nx\r\n*1\r\n_\r\n",
            Frame::Array(vec![
                Frame::Integer(1),
                Frame::Bulk(b("x")),
                Frame::Array(vec![Frame::Null]),
            ]),
        ),
        (
            b"%2\r\n+a\r\n:1\r\n$1\r\nb\r\n#f\r\n",
            Frame::Map(vec![
                (Frame::Simple(b("a")), Frame::Integer(1)),
                (Frame::Bulk(b("b")), Frame::Boolean(false)),
            ]),
        ),
        (b"%0\r\n", Frame::Map(vec![])),
        (
            b"~2\r\n+a\r\n+b\r\n",
            Frame::Set(vec![Frame::Simple(b("a")), Frame::Simple(b("b"))]),
        ),
        (b",1.5\r\n", Frame::Double(1.5)),
        (b",-0.25e-3\r\n", Frame::Double(-0.25e-3)),
        (b",10\r\n", Frame::Double(10.0)),
        (b",1E+300\r\n", Frame::Double(1e300)),
        (b",inf\r\n", Frame::Double(f64::INFINITY)),
        (b",-inf\r\n", Frame::Double(f64::NEG_INFINITY)),
        (b",nan\r\n", Frame::Double(f64::NAN)),
        (b"#t\r\n", Frame::Boolean(true)),
        (b"#f\r\n", Frame::Boolean(false)),
        (
            b"(3492890328409238509324850943850943825024385\r\n",
            Frame::BigNumber(b("3492890328409238509324850943850943825024385")),
        ),
        (b"(-1\r\n", Frame::BigNumber(b("-1"))),
        (
            b"=15\r\ntxt:Some string\r\n",
            Frame::Verbatim {
                format: *b"txt",
                text: b("Some string"),
            },
        ),
        (
            b"=4\r\nmkd:\r\n",
            Frame::Verbatim {
                format: *b"mkd",
                text: Bytes::new(),
            },
        ),
        (
            b"!21\r\nSYNTAX invalid syntax\r\n",
            Frame::BulkError(b("SYNTAX invalid syntax")),
        ),
        (
            b"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.1923\r\n*1\r\n:2\r\n",
            Frame::Attribute {
                attrs: vec![(
                    Frame::Simple(b("key-popularity")),
                    Frame::Map(vec![(Frame::Bulk(b("a")), Frame::Double(0.1923))]),
                )],
                value: Box::new(Frame::Array(vec![Frame::Integer(2)])),
            },
        ),
        (
            b"*1\r\n|0\r\n:1\r\n",
            Frame::Array(vec![Frame::Attribute {
                attrs: vec![],
                value: Box::new(Frame::Integer(1)),
            }]),
        ),
        (
            b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
            Frame::Push(vec![
                Frame::Bulk(b("message")),
                Frame::Bulk(b("ch")),
                Frame::Bulk(b("hi")),
            ]),
        ),
        (b">0\r\n", Frame::Push(vec![])),
    ]
}

#[test]
fn every_frame_type_parses() {
    for (wire, expected) in corpus() {
        let mut buf = BytesMut::from(wire);
        buf.extend_from_slice(b"+next\r\n");
        assert_eq!(
            parse(&mut buf).unwrap().as_ref(),
            Some(&expected),
            "{wire:?}"
        );
        assert_eq!(&buf[..], b"+next\r\n", "{wire:?} consumed exactly");

        let mut buf = BytesMut::from(wire);
        let decoded = Decoder::default().decode(&mut buf).unwrap();
        assert_eq!(decoded.as_ref(), Some(&expected), "{wire:?}");
        assert!(buf.is_empty());
    }
}

#[test]
fn every_prefix_is_incomplete_and_untouched() {
    for (wire, _) in corpus() {
        for split in 0..wire.len() {
            let mut buf = BytesMut::from(&wire[..split]);
            assert_eq!(parse(&mut buf), Ok(None), "{wire:?} cut at {split}");
            assert_eq!(
                &buf[..],
                &wire[..split],
                "{wire:?} cut at {split}: untouched"
            );
        }
    }
}

#[test]
fn every_split_point_through_the_decoder() {
    for (wire, expected) in corpus() {
        for split in 0..=wire.len() {
            let mut decoder = Decoder::default();
            let mut buf = BytesMut::from(&wire[..split]);
            let first = decoder.decode(&mut buf).unwrap();
            let frame = match first {
                Some(frame) => frame,
                None => {
                    buf.extend_from_slice(&wire[split..]);
                    decoder.decode(&mut buf).unwrap().unwrap()
                }
            };
            assert_eq!(frame, expected, "{wire:?} split at {split}");
            assert!(buf.is_empty());
        }
    }
}

#[test]
fn decoder_fed_byte_by_byte_matches_parse() {
    let stream: Vec<u8> = corpus().iter().flat_map(|(w, _)| w.to_vec()).collect();
    let expected: Vec<Frame> = corpus().into_iter().map(|(_, f)| f).collect();

    let mut decoder = Decoder::default();
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for byte in &stream {
        buf.extend_from_slice(&[*byte]);
        while let Some(frame) = decoder.decode(&mut buf).unwrap() {
            frames.push(frame);
        }
    }
    assert_eq!(frames, expected);

    let mut buf = BytesMut::from(&stream[..]);
    let mut parsed = Vec::new();
    while let Some(frame) = parse(&mut buf).unwrap() {
        parsed.push(frame);
    }
    assert_eq!(parsed, expected);
}

#[test]
fn bulk_payloads_are_not_copied() {
    let mut buf = BytesMut::from(&b"*2\r\n$3\r\nabc\r\n$2\r\nde\r\n"[..]);
    let base = buf.as_ptr() as usize;
    let Some(Frame::Array(items)) = parse(&mut buf).unwrap() else {
        panic!("expected an array");
    };
    let [Frame::Bulk(first), Frame::Bulk(second)] = &items[..] else {
        panic!("expected two bulks");
    };
    assert_eq!(first.as_ptr() as usize, base + 8);
    assert_eq!(second.as_ptr() as usize, base + 17);
}

/// Malformed inputs and the error each must give, through `parse` and the `Decoder`.
fn malformed() -> Vec<(&'static [u8], ProtocolError)> {
    use ProtocolError::*;
    vec![
        (b"?x\r\n", InvalidTypeByte(b'?')),
        (b"\r\n", InvalidTypeByte(b'\r')),
        (b"*1\r\nx", InvalidTypeByte(b'x')),
        (b"+OK\n", MissingCrlf),
        (b":1\n", MissingCrlf),
        (b":\r\n", InvalidInteger),
        (b":abc\r\n", InvalidInteger),
        (b":1.5\r\n", InvalidInteger),
        (b":01\r\n", InvalidInteger),
        (b":-0\r\n", InvalidInteger),
        (b":+1\r\n", InvalidInteger),
        (b":9223372036854775808\r\n", InvalidInteger),
        (b":-9223372036854775809\r\n", InvalidInteger),
        (b":99999999999999999999999999\r\n", InvalidInteger),
        (b"$x\r\n", InvalidBulkLength),
        (b"$\r\n", InvalidBulkLength),
        (b"$-2\r\n", InvalidBulkLength),
        (b"$999999999999\r\n", InvalidBulkLength),
        (b"$9223372036854775807\r\n", InvalidBulkLength),
        (b"$99999999999999999999\r\n", InvalidBulkLength),
        (b"$3\r\nfooXY", MissingCrlf),
        (b"$3\r\nfoo\n\r", MissingCrlf),
        (b"!-1\r\n", InvalidBulkLength),
        (b"=-1\r\n", InvalidBulkLength),
        (b"=3\r\ntxt\r\n", InvalidVerbatim),
        (b"=4\r\ntxt;\r\n", InvalidVerbatim),
        (b"=6\r\ntxt:abc\r\n", MissingCrlf),
        (b"*x\r\n", InvalidMultibulkLength),
        (b"*-2\r\n", InvalidMultibulkLength),
        (b"*9000000000000000000\r\n", InvalidMultibulkLength),
        (b"*99999999999999999999\r\n", InvalidMultibulkLength),
        (b"%-1\r\n", InvalidMultibulkLength),
        (b"~-1\r\n", InvalidMultibulkLength),
        (b">-1\r\n", InvalidMultibulkLength),
        (b"|-1\r\n", InvalidMultibulkLength),
        (b"%9000000000000000000\r\n", InvalidMultibulkLength),
        (b"_x\r\n", InvalidNull),
        (b",\r\n", InvalidDouble),
        (b",abc\r\n", InvalidDouble),
        (b",1.2.3\r\n", InvalidDouble),
        (b",infinity\r\n", InvalidDouble),
        (b",1e\r\n", InvalidDouble),
        (b"#x\r\n", InvalidBoolean),
        (b"#\r\n", InvalidBoolean),
        (b"#tt\r\n", InvalidBoolean),
        (b"(\r\n", InvalidBigNumber),
        (b"(12a\r\n", InvalidBigNumber),
        (b"(+1\r\n", InvalidBigNumber),
        (b"(-\r\n", InvalidBigNumber),
        (b"*2\r\n:1\r\n:x\r\n", InvalidInteger),
    ]
}

#[test]
fn malformed_inputs_are_typed_errors() {
    for (wire, expected) in malformed() {
        let mut buf = BytesMut::from(wire);
        assert_eq!(parse(&mut buf), Err(expected.clone()), "{wire:?}");
        let mut buf = BytesMut::from(wire);
        assert_eq!(
            Decoder::default().decode(&mut buf),
            Err(expected.clone()),
            "{wire:?}"
        );
    }
}

#[test]
fn limits_are_enforced() {
    let limits = Limits {
        max_bulk_len: 3,
        max_array_len: 2,
        max_depth: 2,
        max_inline_len: 8,
    };
    let cases: Vec<(&[u8], Result<(), ProtocolError>)> = vec![
        (b"$3\r\nabc\r\n", Ok(())),
        (b"$4\r\nabcd\r\n", Err(ProtocolError::InvalidBulkLength)),
        (b"!4\r\nabcd\r\n", Err(ProtocolError::InvalidBulkLength)),
        (b"=8\r\ntxt:abcd\r\n", Err(ProtocolError::InvalidBulkLength)),
        (b"*2\r\n:1\r\n:2\r\n", Ok(())),
        (b"*3\r\n", Err(ProtocolError::InvalidMultibulkLength)),
        (b"%3\r\n", Err(ProtocolError::InvalidMultibulkLength)),
        (b"~3\r\n", Err(ProtocolError::InvalidMultibulkLength)),
        (b">3\r\n", Err(ProtocolError::InvalidMultibulkLength)),
        (b"|3\r\n", Err(ProtocolError::InvalidMultibulkLength)),
        (b"*1\r\n*1\r\n:1\r\n", Ok(())),
        (
            b"*1\r\n*1\r\n*1\r\n:1\r\n",
            Err(ProtocolError::DepthExceeded { max: 2 }),
        ),
        (
            b"*1\r\n%1\r\n*0\r\n:1\r\n",
            Err(ProtocolError::DepthExceeded { max: 2 }),
        ),
        (b"+12345678\r\n", Ok(())),
        (
            b"+123456789\r\n",
            Err(ProtocolError::LineTooLong { max: 8 }),
        ),
        // No CRLF yet, but already too long to be a valid line: error, not waiting.
        (
            b"+1234567890123",
            Err(ProtocolError::LineTooLong { max: 8 }),
        ),
    ];
    for (wire, expected) in cases {
        let mut buf = BytesMut::from(wire);
        assert_eq!(
            parse_with(&mut buf, &limits).map(|f| assert!(f.is_some())),
            expected,
            "{wire:?}"
        );
        let mut buf = BytesMut::from(wire);
        assert_eq!(
            Decoder::new(limits)
                .decode(&mut buf)
                .map(|f| assert!(f.is_some())),
            expected,
            "{wire:?}"
        );
    }
}

#[test]
fn default_depth_limit_stops_deep_nesting() {
    let depth = Limits::DEFAULT.max_depth;
    let mut wire = b"*1\r\n".repeat(depth);
    wire.extend_from_slice(b":1\r\n");
    assert!(parse(&mut BytesMut::from(&wire[..])).unwrap().is_some());
    let mut deeper = b"*1\r\n".repeat(depth + 1);
    deeper.extend_from_slice(b":1\r\n");
    assert_eq!(
        parse(&mut BytesMut::from(&deeper[..])),
        Err(ProtocolError::DepthExceeded { max: depth })
    );
}

#[test]
fn hostile_counts_are_cheap_while_incomplete() {
    // A count at the limit parses as incomplete without allocating for it.
    for wire in [
        &b"*2147483647\r\n:1\r\n"[..],
        b"%2147483647\r\n",
        b"|2147483647\r\n",
    ] {
        let mut buf = BytesMut::from(wire);
        assert_eq!(parse(&mut buf), Ok(None));
        assert_eq!(Decoder::default().decode(&mut buf), Ok(None));
    }
}

#[test]
fn huge_array_in_many_reads() {
    // 200,000 elements delivered in 4 KiB reads: linear work, same result as one parse.
    let count = 200_000;
    let mut wire = BytesMut::new();
    redline_resp::encode::write_array_len(&mut wire, count);
    for i in 0..count {
        redline_resp::encode::write_bulk(&mut wire, format!("v{i}").as_bytes());
    }
    let mut decoder = Decoder::default();
    let mut buf = BytesMut::new();
    let mut result = None;
    for chunk in wire.chunks(4096) {
        buf.extend_from_slice(chunk);
        if let Some(frame) = decoder.decode(&mut buf).unwrap() {
            result = Some(frame);
        }
    }
    let Some(Frame::Array(items)) = result else {
        panic!("expected the array");
    };
    assert_eq!(items.len(), count);
    assert_eq!(items[123_456], Frame::Bulk(Bytes::from("v123456")));
}

#[test]
fn frame_equality_treats_nan_as_equal() {
    assert_eq!(Frame::Double(f64::NAN), Frame::Double(-f64::NAN));
    assert_ne!(Frame::Double(f64::NAN), Frame::Double(1.0));
    assert_eq!(Frame::Double(0.0), Frame::Double(-0.0));
    assert_ne!(Frame::NullBulk, Frame::Null);
    assert_ne!(Frame::Array(vec![]), Frame::Set(vec![]));
    assert_ne!(Frame::Simple(b("x")), Frame::Bulk(b("x")));
}
