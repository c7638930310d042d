//! `RequestDecoder` against a real redis-server 7.0: the same malformed requests must give
//! the same error text, and the same inline lines must split into the same arguments.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use redline_resp::{parse, Frame, ProtocolError, RequestDecoder};
use redline_testkit::RedisServer;

fn connect(server: &RedisServer) -> TcpStream {
    let stream = TcpStream::connect(server.addr()).unwrap();
    // Only a guard against a hang; nothing here asserts on time.
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Sends `input` and reads until Redis closes the connection after its protocol error.
fn redis_reply_until_close(server: &RedisServer, input: &[u8]) -> Vec<u8> {
    let mut stream = connect(server);
    stream.write_all(input).unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    reply
}

/// Our decoder's first error on `input`, fed whole.
fn our_error(input: &[u8]) -> ProtocolError {
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::from(input);
    loop {
        match decoder.decode(&mut buf) {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("no error for {input:?}"),
            Err(e) => return e,
        }
    }
}

#[test]
fn protocol_errors_match_redis() {
    let server = RedisServer::start().unwrap();
    // Without its newline: Redis gives up once a read leaves more than 64 KiB without
    // one; its reads of a line sent whole take lines up to about 80 KiB (by hand: 81,900
    // bytes taken, 81,910 refused), which the decoder takes too, however chunked.
    let long_inline = vec![b'a'; 80 * 1024];
    let mut long_count = b"*".to_vec();
    long_count.resize(64 * 1024 + 2, b'1');
    let mut long_bulk_count = b"*1\r\n$".to_vec();
    long_bulk_count.resize(64 * 1024 + 6, b'1');
    let inputs: Vec<Vec<u8>> = vec![
        b"*9000000000000000000\r\n".to_vec(),
        b"*2147483648\r\n".to_vec(),
        b"*x\r\n".to_vec(),
        b"*01\r\n".to_vec(),
        b"*1\r\n$999999999999\r\n".to_vec(),
        b"*1\r\n$536870913\r\n".to_vec(),
        b"*1\r\n$-1\r\n".to_vec(),
        b"*1\r\n$x\r\n".to_vec(),
        b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n".to_vec(),
        b"*1\r\n:1\r\n".to_vec(),
        b"SET a \"b\r\n".to_vec(),
        b"SET a 'b'c\r\n".to_vec(),
        b"ECHO \"a\"b\r\n".to_vec(),
        long_inline,
        long_count,
        long_bulk_count,
    ];
    for input in inputs {
        let ours = our_error(&input);
        let expected = format!("-ERR {ours}\r\n");
        let theirs = redis_reply_until_close(&server, &input);
        assert_eq!(
            String::from_utf8_lossy(&theirs),
            expected,
            "input {:?}",
            String::from_utf8_lossy(&input[..input.len().min(40)])
        );
    }
}

/// The arguments Redis sees for an inline `line`, reflected by a script.
fn redis_inline_args(stream: &mut TcpStream, line: &[u8]) -> Vec<Bytes> {
    let mut request = b"EVAL \"return ARGV\" 0 ".to_vec();
    request.extend_from_slice(line);
    request.extend_from_slice(b"\r\n");
    stream.write_all(&request).unwrap();
    let mut buf = BytesMut::new();
    loop {
        if let Some(frame) = parse(&mut buf).unwrap() {
            let Frame::Array(items) = frame else {
                panic!("unexpected reply {frame:?} to {request:?}");
            };
            return items
                .into_iter()
                .map(|item| match item {
                    Frame::Bulk(b) => b,
                    other => panic!("unexpected element {other:?}"),
                })
                .collect();
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "connection closed");
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn inline_splitting_matches_redis() {
    let server = RedisServer::start().unwrap();
    let mut stream = connect(&server);
    let lines: [&[u8]; 14] = [
        b"a b c",
        b"\"b c\"",
        b"  spaced\t\ttabs  ",
        b"\"esc \\n\\r\\t\\b\\a \\\\ \\\" \\q\"",
        b"\"hex \\x41\\x7a\\xZZ\\x4\"",
        b"'single \\' \\n'",
        b"a\"b c\"",
        b"x'y z'",
        b"\"\" ''",
        b"\"a\"\x0bb",
        b"v\x0bt",
        b"\x0c lead",
        b"\"\\x00\\xff\"",
        b"caf\xc3\xa9 \xff",
    ];
    for line in lines {
        let theirs = redis_inline_args(&mut stream, line);
        let mut full = b"EVAL \"return ARGV\" 0 ".to_vec();
        full.extend_from_slice(line);
        full.extend_from_slice(b"\r\n");
        let ours = RequestDecoder::default()
            .decode(&mut BytesMut::from(&full[..]))
            .unwrap()
            .unwrap();
        assert_eq!(
            &ours[3..],
            &theirs[..],
            "line {:?}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn skipped_and_lenient_inputs_match_redis() {
    let server = RedisServer::start().unwrap();
    let inputs: [&[u8]; 7] = [
        b"\r\n\r\nPING\r\n",
        b"  \t \nPING\n",
        b"*0\r\nPING\r\n",
        b"*-1\r\n*-10\r\nPING\r\n",
        // Redis does not check the two bytes after a bulk payload, nor the byte after CR.
        b"*1\r\n$4\r\nPINGxx",
        b"*1\rx$4\r\nPING\r\n",
        b"*1\r\n$4\ryPING\r\n",
    ];
    for input in inputs {
        let ours: Vec<Vec<Bytes>> = {
            let mut decoder = RequestDecoder::default();
            let mut buf = BytesMut::from(input);
            std::iter::from_fn(|| decoder.decode(&mut buf).unwrap()).collect()
        };
        assert_eq!(ours, vec![vec![Bytes::from_static(b"PING")]], "{input:?}");

        let mut stream = connect(&server);
        stream.write_all(input).unwrap();
        let mut reply = [0u8; 7];
        stream.read_exact(&mut reply).unwrap();
        assert_eq!(&reply, b"+PONG\r\n", "{input:?}");
    }
}
