//! `make run` (until the CLI exists): starts a real redis-server on a free loopback port,
//! sends commands encoded with `redline_resp::encode`, parses the replies with
//! `redline_resp::parse`, prints both, and exits non-zero if a reply is not the expected one.
//!
//! Run it with `cargo run --release -p redline-resp --example roundtrip`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;

use bytes::{Bytes, BytesMut};
use redline_resp::{encode, parse, Frame};
use redline_testkit::RedisServer;

type Error = Box<dyn std::error::Error>;

fn bulk(b: &'static [u8]) -> Frame {
    Frame::Bulk(Bytes::from_static(b))
}

fn simple(s: &'static str) -> Frame {
    Frame::Simple(Bytes::from_static(s.as_bytes()))
}

/// One request/reply exchange over the socket; partial reads are the parser's business.
fn roundtrip(stream: &mut TcpStream, buf: &mut BytesMut, args: &[&[u8]]) -> Result<Frame, Error> {
    let mut out = BytesMut::new();
    encode::command(&mut out, args.iter());
    stream.write_all(&out)?;
    let mut chunk = [0u8; 64 * 1024];
    loop {
        if let Some(frame) = parse(buf)? {
            return Ok(frame);
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err("server closed the connection".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Printable form of a command, long arguments shortened.
fn show_command(args: &[&[u8]]) -> String {
    args.iter()
        .map(|a| {
            if a.len() > 40 {
                format!("<{} bytes>", a.len())
            } else {
                format!("{:?}", String::from_utf8_lossy(a))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn show_frame(frame: &Frame) -> String {
    let text = format!("{frame:?}");
    let count = text.chars().count();
    if count > 120 {
        let head: String = text.chars().take(120).collect();
        format!("{head}... ({count} chars)")
    } else {
        text
    }
}

fn run() -> Result<bool, Error> {
    let server = RedisServer::start()?;
    println!(
        "redis-server {} on {}",
        server_version(&server),
        server.addr()
    );
    let mut stream = TcpStream::connect(server.addr())?;
    stream.set_nodelay(true)?;
    let mut buf = BytesMut::new();

    let binary: &[u8] = b"line one\r\nline two\x00\xff";
    let large = vec![b'x'; 1 << 20];
    let cases: Vec<(Vec<&[u8]>, Frame)> = vec![
        (vec![b"PING"], simple("PONG")),
        (vec![b"SET", b"greeting", b"hello, redline"], simple("OK")),
        (vec![b"GET", b"greeting"], bulk(b"hello, redline")),
        (vec![b"SET", b"binary", binary], simple("OK")),
        (vec![b"GET", b"binary"], Frame::Bulk(Bytes::from(binary))),
        (vec![b"SET", b"large", &large], simple("OK")),
        (
            vec![b"GET", b"large"],
            Frame::Bulk(Bytes::from(large.clone())),
        ),
        (vec![b"INCRBY", b"counter", b"41"], Frame::Integer(41)),
        (vec![b"INCR", b"counter"], Frame::Integer(42)),
        (
            vec![b"INCR", b"greeting"],
            Frame::Error(Bytes::from_static(
                b"ERR value is not an integer or out of range",
            )),
        ),
        (vec![b"RPUSH", b"list", b"a", b"b", b"c"], Frame::Integer(3)),
        (
            vec![b"LRANGE", b"list", b"0", b"-1"],
            Frame::Array(vec![bulk(b"a"), bulk(b"b"), bulk(b"c")]),
        ),
        (vec![b"GET", b"missing"], Frame::NullBulk),
        (vec![b"HSET", b"user", b"name", b"ada"], Frame::Integer(1)),
        (vec![b"ZADD", b"scores", b"1.5", b"ada"], Frame::Integer(1)),
        // RESP3 from here on: nulls, maps and doubles change shape.
        (vec![b"HELLO", b"3"], Frame::Null), // checked separately below
        (vec![b"GET", b"missing"], Frame::Null),
        (
            vec![b"HGETALL", b"user"],
            Frame::Map(vec![(bulk(b"name"), bulk(b"ada"))]),
        ),
        (vec![b"ZSCORE", b"scores", b"ada"], Frame::Double(1.5)),
    ];

    let mut ok = true;
    for (args, expected) in &cases {
        let got = roundtrip(&mut stream, &mut buf, args)?;
        let matched = if args[0] == b"HELLO" {
            hello_says_resp3(&got)
        } else {
            &got == expected
        };
        println!(
            "{} {}\n    -> {}",
            if matched { "ok  " } else { "FAIL" },
            show_command(args),
            show_frame(&got)
        );
        if !matched {
            println!("    expected {}", show_frame(expected));
            ok = false;
        }
    }
    if !buf.is_empty() {
        println!(
            "FAIL {} unexpected bytes left after the last reply",
            buf.len()
        );
        ok = false;
    }
    Ok(ok)
}

/// HELLO 3 answers a map that includes `proto => 3`.
fn hello_says_resp3(reply: &Frame) -> bool {
    match reply {
        Frame::Map(pairs) => pairs
            .iter()
            .any(|(k, v)| *k == bulk(b"proto") && *v == Frame::Integer(3)),
        _ => false,
    }
}

fn server_version(server: &RedisServer) -> String {
    server
        .cmd(&["INFO", "server"])
        .ok()
        .and_then(|r| r.text())
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("redis_version:"))
                .map(str::to_string)
        })
        .unwrap_or_else(|| "(unknown version)".into())
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => {
            println!("all replies matched");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            eprintln!("some replies did not match");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("roundtrip failed: {e}");
            ExitCode::FAILURE
        }
    }
}
