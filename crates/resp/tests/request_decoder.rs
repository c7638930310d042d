//! The server's request decoder: inline quoting, multibulk, hostile lengths, blank lines,
//! mixed pipelines split at every point. Expectations follow redis-server 7.0.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::{Bytes, BytesMut};
use redline_resp::{Limits, ProtocolError, RequestDecoder};

/// Decodes every whole command of `input` in one go.
fn commands(input: &[u8]) -> Result<Vec<Vec<Bytes>>, ProtocolError> {
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::from(input);
    let mut out = Vec::new();
    while let Some(args) = decoder.decode(&mut buf)? {
        assert!(!args.is_empty(), "commands are never empty");
        out.push(args);
    }
    Ok(out)
}

fn one(input: &[u8]) -> Result<Vec<Bytes>, ProtocolError> {
    let mut all = commands(input)?;
    assert_eq!(all.len(), 1, "{input:?}");
    Ok(all.remove(0))
}

fn args(list: &[&str]) -> Vec<Bytes> {
    list.iter()
        .map(|a| Bytes::copy_from_slice(a.as_bytes()))
        .collect()
}

#[test]
fn inline_commands() {
    assert_eq!(one(b"PING\r\n").unwrap(), args(&["PING"]));
    assert_eq!(one(b"PING\n").unwrap(), args(&["PING"]));
    assert_eq!(
        one(b"SET a \"b c\"\r\n").unwrap(),
        args(&["SET", "a", "b c"])
    );
    assert_eq!(
        one(b"SET k \"\\x00\\xff\\n\\\"q\\\"\"\r\n").unwrap(),
        vec![
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"k"),
            Bytes::from_static(b"\x00\xff\n\"q\"")
        ]
    );
    assert_eq!(
        one(b"SET k 'it\\'s \\n raw'\r\n").unwrap(),
        args(&["SET", "k", "it's \\n raw"])
    );
    assert_eq!(
        one(b"  ECHO\t\"\"  ''  \r\n").unwrap(),
        args(&["ECHO", "", ""])
    );
    assert_eq!(one(b"a\"b c\"\r\n").unwrap(), args(&["ab c"]));
}

#[test]
fn inline_unbalanced_quotes() {
    for line in [
        &b"SET a \"b\r\n"[..],
        b"SET a 'b\r\n",
        b"SET a \"b\"c\r\n",
        b"SET a 'b'c\r\n",
        b"ECHO \"\\\"\r\n",
    ] {
        assert_eq!(
            commands(line),
            Err(ProtocolError::UnbalancedQuotes),
            "{line:?}"
        );
    }
    assert_eq!(
        ProtocolError::UnbalancedQuotes.to_string(),
        "Protocol error: unbalanced quotes in request"
    );
}

#[test]
fn blank_lines_and_empty_multibulks_are_skipped() {
    assert_eq!(commands(b"\r\n").unwrap(), Vec::<Vec<Bytes>>::new());
    assert_eq!(
        commands(b"\n\n  \t \r\n").unwrap(),
        Vec::<Vec<Bytes>>::new()
    );
    assert_eq!(
        commands(b"\r\n\r\nPING\r\n*0\r\n*-1\r\n*-10\r\nPING\r\n").unwrap(),
        vec![args(&["PING"]), args(&["PING"])]
    );
}

#[test]
fn multibulk_commands() {
    assert_eq!(
        one(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n").unwrap(),
        vec![
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"k"),
            Bytes::from_static(b"a\r\nb")
        ]
    );
    assert_eq!(
        one(b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n").unwrap(),
        args(&["ECHO", ""])
    );
    // Like Redis, the two bytes after a bulk payload are skipped without being checked.
    assert_eq!(one(b"*1\r\n$4\r\nPINGxx").unwrap(), args(&["PING"]));
}

#[test]
fn hostile_lengths() {
    use ProtocolError::*;
    let cases: Vec<(&[u8], ProtocolError)> = vec![
        (b"*9000000000000000000\r\n", InvalidMultibulkLength),
        (b"*99999999999999999999999\r\n", InvalidMultibulkLength),
        (b"*2147483648\r\n", InvalidMultibulkLength),
        (b"*x\r\n", InvalidMultibulkLength),
        (b"*\r\n", InvalidMultibulkLength),
        (b"*01\r\n", InvalidMultibulkLength),
        (b"*1\r\n$999999999999\r\n", InvalidBulkLength),
        (b"*1\r\n$536870913\r\n", InvalidBulkLength),
        (b"*1\r\n$-1\r\n", InvalidBulkLength),
        (b"*1\r\n$x\r\n", InvalidBulkLength),
        (b"*1\r\n$\r\n", InvalidBulkLength),
        (
            b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
            ExpectedDollar(b'f'),
        ),
        (b"*1\r\n:1\r\n", ExpectedDollar(b':')),
    ];
    for (wire, expected) in cases {
        assert_eq!(commands(wire), Err(expected.clone()), "{wire:?}");
    }
    assert_eq!(
        ExpectedDollar(b'f').to_string(),
        "Protocol error: expected '$', got 'f'"
    );
    // At the limits nothing is allocated up front: the decoder simply waits.
    assert_eq!(commands(b"*2147483647\r\n").unwrap().len(), 0);
    assert_eq!(commands(b"*1\r\n$536870912\r\n").unwrap().len(), 0);
}

#[test]
fn lines_without_end_are_bounded() {
    let max = Limits::DEFAULT.max_inline_len;
    let mut decoder = RequestDecoder::default();

    // An inline line may run a quarter past the limit, as Redis's 16 KiB reads let it.
    let inline_limit = max + max / 4;
    let mut buf = BytesMut::from(&vec![b'a'; inline_limit - 1][..]);
    assert_eq!(decoder.decode(&mut buf), Ok(None));
    buf.extend_from_slice(b"a");
    assert_eq!(
        decoder.decode(&mut buf),
        Err(ProtocolError::TooBigInlineRequest)
    );

    let mut count = b"*".to_vec();
    count.resize(max + 1, b'1');
    assert_eq!(commands(&count), Err(ProtocolError::TooBigMbulkCount));

    let mut bulk = b"*1\r\n$".to_vec();
    bulk.resize(4 + max + 1, b'1');
    assert_eq!(commands(&bulk), Err(ProtocolError::TooBigBulkCount));

    let small = Limits {
        max_inline_len: 16,
        ..Limits::DEFAULT
    };
    let mut decoder = RequestDecoder::new(small);
    let mut buf = BytesMut::from(&b"ECHO 0123456789abcdef\r\n"[..]);
    assert_eq!(
        decoder.decode(&mut buf),
        Err(ProtocolError::TooBigInlineRequest)
    );
    let mut decoder = RequestDecoder::new(small);
    let mut buf = BytesMut::from(&b"ECHO 0123456789\r\n"[..]);
    assert_eq!(decoder.decode(&mut buf).unwrap().unwrap().len(), 2);
}

#[test]
fn configured_limits() {
    let limits = Limits {
        max_bulk_len: 3,
        max_array_len: 2,
        ..Limits::DEFAULT
    };
    let run = |wire: &[u8]| RequestDecoder::new(limits).decode(&mut BytesMut::from(wire));
    assert!(run(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n").unwrap().is_some());
    assert_eq!(run(b"*3\r\n"), Err(ProtocolError::InvalidMultibulkLength));
    assert_eq!(
        run(b"*1\r\n$4\r\nPING\r\n"),
        Err(ProtocolError::InvalidBulkLength)
    );
}

fn pipeline() -> (Vec<u8>, Vec<Vec<Bytes>>) {
    let wire = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n\
                 PING\r\n\
                 \r\n\
                 SET k \"a b\" 'c d'\n\
                 *0\r\n\
                 *2\r\n$3\r\nGET\r\n$3\r\nkey\r\n\
                 *-1\r\n\
                 ECHO x\r\n"
        .to_vec();
    let expected = vec![
        vec![
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"key"),
            Bytes::from_static(b"va\r\nl"),
        ],
        args(&["PING"]),
        args(&["SET", "k", "a b", "c d"]),
        args(&["GET", "key"]),
        args(&["ECHO", "x"]),
    ];
    (wire, expected)
}

#[test]
fn mixed_pipeline_split_at_every_point() {
    let (wire, expected) = pipeline();
    assert_eq!(commands(&wire).unwrap(), expected);
    for split in 0..=wire.len() {
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for part in [&wire[..split], &wire[split..]] {
            buf.extend_from_slice(part);
            while let Some(args) = decoder.decode(&mut buf).unwrap() {
                out.push(args);
            }
        }
        assert_eq!(out, expected, "split at {split}");
        assert!(buf.is_empty());
    }
}

#[test]
fn mixed_pipeline_byte_by_byte() {
    let (wire, expected) = pipeline();
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for byte in wire {
        buf.extend_from_slice(&[byte]);
        while let Some(args) = decoder.decode(&mut buf).unwrap() {
            out.push(args);
        }
    }
    assert_eq!(out, expected);
}

#[test]
fn big_mset_in_pieces() {
    let pairs = 50_000;
    let mut wire = BytesMut::new();
    redline_resp::encode::write_array_len(&mut wire, 1 + 2 * pairs);
    redline_resp::encode::write_bulk(&mut wire, b"MSET");
    for i in 0..pairs {
        redline_resp::encode::write_bulk(&mut wire, format!("key:{i}").as_bytes());
        redline_resp::encode::write_bulk(&mut wire, &[b'v'; 100]);
    }
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::new();
    let mut got = None;
    for chunk in wire.chunks(1500) {
        buf.extend_from_slice(chunk);
        if let Some(args) = decoder.decode(&mut buf).unwrap() {
            got = Some(args);
        }
    }
    let args = got.unwrap();
    assert_eq!(args.len(), 1 + 2 * pairs);
    assert_eq!(
        &args[2 * pairs - 1][..],
        format!("key:{}", pairs - 1).as_bytes()
    );
}
