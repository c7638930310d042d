//! Property tests: encode → parse is the identity for arbitrary (nested) frames, and for
//! arbitrary chunkings of a stream of frames, through `parse` and through `Decoder`;
//! encoded commands come back whole from `RequestDecoder`; random bytes never panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::{Bytes, BytesMut};
use proptest::collection::vec;
use proptest::prelude::*;
use redline_resp::{encode, parse, Decoder, Frame, ProtocolError, RequestDecoder};

fn bytes(max: usize) -> impl Strategy<Value = Bytes> {
    vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

/// Text for simple strings and errors: no CR or LF, as the encoder requires.
fn line() -> impl Strategy<Value = Bytes> {
    vec(
        any::<u8>().prop_filter("no CR/LF", |b| *b != b'\r' && *b != b'\n'),
        0..24,
    )
    .prop_map(Bytes::from)
}

fn scalar() -> impl Strategy<Value = Frame> {
    prop_oneof![
        line().prop_map(Frame::Simple),
        line().prop_map(Frame::Error),
        any::<i64>().prop_map(Frame::Integer),
        bytes(64).prop_map(Frame::Bulk),
        Just(Frame::NullBulk),
        Just(Frame::NullArray),
        Just(Frame::Null),
        any::<f64>().prop_map(Frame::Double),
        any::<bool>().prop_map(Frame::Boolean),
        "-?[0-9]{1,48}".prop_map(|s| Frame::BigNumber(Bytes::from(s))),
        ("[a-z]{3}", bytes(32)).prop_map(|(format, text)| Frame::Verbatim {
            format: format.as_bytes().try_into().unwrap(),
            text
        }),
        bytes(32).prop_map(Frame::BulkError),
    ]
}

/// Frames nested up to 4 levels, with every aggregate type.
fn frame() -> impl Strategy<Value = Frame> {
    scalar().prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Frame::Array),
            vec(inner.clone(), 0..6).prop_map(Frame::Set),
            vec(inner.clone(), 0..6).prop_map(Frame::Push),
            vec((inner.clone(), inner.clone()), 0..4).prop_map(Frame::Map),
            (vec((inner.clone(), inner.clone()), 0..3), inner).prop_map(|(attrs, value)| {
                Frame::Attribute {
                    attrs,
                    value: Box::new(value),
                }
            }),
        ]
    })
}

fn encoded(frames: &[Frame]) -> Vec<u8> {
    let mut out = BytesMut::new();
    for f in frames {
        encode::frame(&mut out, f);
    }
    out.to_vec()
}

/// Cuts `wire` at the given fractions of its length.
fn chunks(wire: &[u8], cuts: &[f64]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| ((wire.len() as f64) * c) as usize)
        .collect();
    points.push(0);
    points.push(wire.len());
    points.sort_unstable();
    points
        .windows(2)
        .map(|w| wire[w[0]..w[1]].to_vec())
        .collect()
}

/// Every command read from `chunks` fed in order (through `next_command` when `lend`,
/// else `decode`), and the error that stopped the reading, if one did.
fn read_requests(chunks: &[&[u8]], lend: bool) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>) {
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            let next = if lend {
                decoder
                    .next_command(&mut buf)
                    .map(|c| c.map(|args| args.iter().map(|a| a.to_vec()).collect()))
            } else {
                decoder
                    .decode(&mut buf)
                    .map(|c| c.map(|args| args.iter().map(|a| a.to_vec()).collect()))
            };
            match next {
                Ok(Some(args)) => got.push(args),
                Ok(None) => break,
                Err(e) => return (got, Some(e)),
            }
        }
    }
    (got, None)
}

proptest! {
    #[test]
    fn parse_inverts_encode(f in frame()) {
        let wire = encoded(std::slice::from_ref(&f));
        let mut buf = BytesMut::from(&wire[..]);
        prop_assert_eq!(parse(&mut buf).unwrap(), Some(f.clone()));
        prop_assert!(buf.is_empty());

        let mut buf = BytesMut::from(&wire[..]);
        prop_assert_eq!(Decoder::default().decode(&mut buf).unwrap(), Some(f));
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn parse_any_chunking(frames in vec(frame(), 1..6), cuts in vec(0.0..1.0f64, 0..8)) {
        let wire = encoded(&frames);
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for chunk in chunks(&wire, &cuts) {
            buf.extend_from_slice(&chunk);
            loop {
                let before = buf.clone();
                match parse(&mut buf).unwrap() {
                    Some(f) => got.push(f),
                    None => {
                        prop_assert_eq!(&buf, &before);
                        break;
                    }
                }
            }
        }
        prop_assert_eq!(got, frames);
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn decoder_any_chunking(frames in vec(frame(), 1..6), cuts in vec(0.0..1.0f64, 0..8)) {
        let wire = encoded(&frames);
        let mut decoder = Decoder::default();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for chunk in chunks(&wire, &cuts) {
            buf.extend_from_slice(&chunk);
            while let Some(f) = decoder.decode(&mut buf).unwrap() {
                got.push(f);
            }
        }
        prop_assert_eq!(got, frames);
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn requests_any_chunking(
        commands in vec(vec(vec(any::<u8>(), 0..40), 1..6), 1..6),
        cuts in vec(0.0..1.0f64, 0..8),
    ) {
        let mut wire = BytesMut::new();
        for args in &commands {
            encode::command(&mut wire, args);
        }
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::new();
        let mut got: Vec<Vec<Vec<u8>>> = Vec::new();
        for chunk in chunks(&wire, &cuts) {
            buf.extend_from_slice(&chunk);
            while let Some(args) = decoder.decode(&mut buf).unwrap() {
                got.push(args.iter().map(|a| a.to_vec()).collect());
            }
        }
        prop_assert_eq!(got, commands);
    }

    #[test]
    fn whole_requests_read_as_byte_by_byte(
        commands in vec(vec(vec(any::<u8>(), 0..12), 1..20), 1..5),
        edits in vec((any::<prop::sample::Index>(), prop::sample::select(&b"0123456789-+*$\r\n a"[..])), 0..3),
    ) {
        // A command whole in the buffer takes the one-pass path; fed one byte at a time,
        // the header-by-header one. Both must read the same commands and stop on the
        // same error, including on headers a few edits made odd (leading zeros, signs,
        // lengths past the end).
        let mut wire = BytesMut::new();
        for args in &commands {
            encode::command(&mut wire, args);
        }
        for (at, byte) in &edits {
            let i = at.index(wire.len());
            wire[i] = *byte;
        }
        let whole = read_requests(&[&wire[..]], true);
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        let byte_by_byte = read_requests(&bytes, false);
        prop_assert_eq!(whole, byte_by_byte);
    }

    #[test]
    fn random_bytes_never_panic(input in vec(any::<u8>(), 0..256)) {
        let _ = parse(&mut BytesMut::from(&input[..]));
        let mut decoder = Decoder::default();
        let mut buf = BytesMut::from(&input[..]);
        while let Ok(Some(_)) = decoder.decode(&mut buf) {}
        let mut requests = RequestDecoder::default();
        let mut buf = BytesMut::from(&input[..]);
        while let Ok(Some(_)) = requests.decode(&mut buf) {}
    }

    #[test]
    fn mutated_frames_never_panic(f in frame(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        // A valid frame with one byte changed: exercises the error paths deep inside.
        let mut wire = encoded(&[f]);
        let i = at.index(wire.len());
        wire[i] = byte;
        let parsed = parse(&mut BytesMut::from(&wire[..]));
        let mut buf = BytesMut::from(&wire[..]);
        let decoded = Decoder::default().decode(&mut buf);
        prop_assert_eq!(parsed, decoded);
    }
}
