//! Writes RESP straight into a caller's [`BytesMut`].
//!
//! Two layers: [`frame`] writes any [`Frame`], and the small `write_*` functions write one
//! element header or scalar, so a server can stream a reply without building a `Frame`
//! first, and a client can encode a command once into its output buffer with [`command`].

use bytes::{BufMut, BytesMut};

use crate::{Frame, Protocol};

/// Encodes a command as an array of bulk strings, the form every Redis server accepts.
///
/// ```
/// use bytes::BytesMut;
/// use redline_resp::encode;
///
/// let mut out = BytesMut::new();
/// encode::command(&mut out, ["GET", "k"]);
/// assert_eq!(&out[..], b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
/// ```
pub fn command<I, A>(out: &mut BytesMut, args: I)
where
    I: IntoIterator<Item = A>,
    I::IntoIter: ExactSizeIterator,
    A: AsRef<[u8]>,
{
    let args = args.into_iter();
    write_len(out, b'*', args.len());
    for arg in args {
        write_bulk(out, arg.as_ref());
    }
}

/// Encodes any frame exactly as it would appear on the wire.
///
/// ```
/// use bytes::BytesMut;
/// use redline_resp::{encode, Frame};
///
/// let mut out = BytesMut::new();
/// encode::frame(&mut out, &Frame::Integer(-7));
/// assert_eq!(&out[..], b":-7\r\n");
/// ```
pub fn frame(out: &mut BytesMut, frame: &Frame) {
    match frame {
        Frame::Simple(s) => write_line(out, b'+', s),
        Frame::Error(e) => write_line(out, b'-', e),
        Frame::Integer(n) => write_integer(out, *n),
        Frame::Bulk(b) => write_bulk(out, b),
        Frame::Array(items) => {
            write_len(out, b'*', items.len());
            items.iter().for_each(|f| self::frame(out, f));
        }
        Frame::NullBulk => out.put_slice(b"$-1\r\n"),
        Frame::NullArray => out.put_slice(b"*-1\r\n"),
        Frame::Null => out.put_slice(b"_\r\n"),
        Frame::Map(pairs) => {
            write_len(out, b'%', pairs.len());
            write_pairs(out, pairs);
        }
        Frame::Set(items) => {
            write_len(out, b'~', items.len());
            items.iter().for_each(|f| self::frame(out, f));
        }
        Frame::Double(d) => {
            out.put_u8(b',');
            write_double_text(out, *d);
            out.put_slice(b"\r\n");
        }
        Frame::Boolean(b) => out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Frame::BigNumber(n) => write_line(out, b'(', n),
        Frame::Verbatim { format, text } => {
            write_len(out, b'=', text.len() + 4);
            out.put_slice(format);
            out.put_u8(b':');
            out.put_slice(text);
            out.put_slice(b"\r\n");
        }
        Frame::BulkError(e) => {
            write_len(out, b'!', e.len());
            out.put_slice(e);
            out.put_slice(b"\r\n");
        }
        Frame::Attribute { attrs, value } => {
            write_len(out, b'|', attrs.len());
            write_pairs(out, attrs);
            self::frame(out, value);
        }
        Frame::Push(items) => {
            write_len(out, b'>', items.len());
            items.iter().for_each(|f| self::frame(out, f));
        }
    }
}

fn write_pairs(out: &mut BytesMut, pairs: &[(Frame, Frame)]) {
    for (k, v) in pairs {
        frame(out, k);
        frame(out, v);
    }
}

/// Writes a type byte, a decimal length and CRLF: the header of bulks and aggregates.
pub fn write_len(out: &mut BytesMut, kind: u8, len: usize) {
    write_len_before(out, kind, len, 0);
}

/// Writes a length header with room reserved for `body` more bytes after it, so a
/// header and its body take one reservation.
fn write_len_before(out: &mut BytesMut, kind: u8, len: usize, body: usize) {
    // Most lengths have one or two digits (names, keys, small values, small arrays):
    // one small fixed-size copy, no formatting.
    if len < 10 {
        out.reserve(4 + body);
        out.put_slice(&[kind, b'0' + len as u8, b'\r', b'\n']);
        return;
    }
    if len < 100 {
        out.reserve(5 + body);
        let (tens, ones) = ((len / 10) as u8, (len % 10) as u8);
        out.put_slice(&[kind, b'0' + tens, b'0' + ones, b'\r', b'\n']);
        return;
    }
    let mut digits = itoa::Buffer::new();
    let text = digits.format(len);
    out.reserve(text.len() + 3 + body);
    out.put_u8(kind);
    out.put_slice(text.as_bytes());
    out.put_slice(b"\r\n");
}

/// Writes a simple line (`+`, `-`, `(`). The caller guarantees `line` holds no CR or LF.
pub fn write_line(out: &mut BytesMut, kind: u8, line: &[u8]) {
    out.reserve(line.len() + 3);
    out.put_u8(kind);
    out.put_slice(line);
    out.put_slice(b"\r\n");
}

/// Writes `+OK\r\n`-style status replies.
pub fn write_simple(out: &mut BytesMut, status: &[u8]) {
    write_line_safe(out, b'+', status);
}

/// Writes an error line; `message` starts with the error kind (`ERR ...`, `WRONGTYPE ...`).
pub fn write_error(out: &mut BytesMut, message: &[u8]) {
    write_line_safe(out, b'-', message);
}

/// Writes a status or error line whose text may quote a client's bytes: a CR or LF
/// inside would end the line early and make the rest read as replies, so each becomes
/// a space (what Redis does to error and status texts that quote input).
fn write_line_safe(out: &mut BytesMut, kind: u8, line: &[u8]) {
    if memchr::memchr2(b'\r', b'\n', line).is_none() {
        return write_line(out, kind, line);
    }
    out.reserve(line.len() + 3);
    out.put_u8(kind);
    out.extend(
        line.iter()
            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
    );
    out.put_slice(b"\r\n");
}

/// Writes `:n\r\n`.
pub fn write_integer(out: &mut BytesMut, n: i64) {
    let mut digits = itoa::Buffer::new();
    write_line(out, b':', digits.format(n).as_bytes());
}

/// Writes a bulk string.
pub fn write_bulk(out: &mut BytesMut, data: &[u8]) {
    // One reservation for header and body: replies of many short elements (LRANGE,
    // HGETALL) call this once per element.
    write_len_before(out, b'$', data.len(), data.len() + 2);
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

/// Writes an array header of `len` elements; the caller writes the elements after it.
pub fn write_array_len(out: &mut BytesMut, len: usize) {
    write_len(out, b'*', len);
}

/// Writes a map header of `len` pairs: `%len` in RESP3, an array of `2 * len` in RESP2.
pub fn write_map_len(out: &mut BytesMut, proto: Protocol, len: usize) {
    match proto {
        Protocol::Resp2 => write_len(out, b'*', len * 2),
        Protocol::Resp3 => write_len(out, b'%', len),
    }
}

/// Writes a set header: `~len` in RESP3, an array in RESP2.
pub fn write_set_len(out: &mut BytesMut, proto: Protocol, len: usize) {
    match proto {
        Protocol::Resp2 => write_len(out, b'*', len),
        Protocol::Resp3 => write_len(out, b'~', len),
    }
}

/// Writes a push header: `>len` in RESP3, an array in RESP2 (how pub/sub messages travel).
pub fn write_push_len(out: &mut BytesMut, proto: Protocol, len: usize) {
    match proto {
        Protocol::Resp2 => write_len(out, b'*', len),
        Protocol::Resp3 => write_len(out, b'>', len),
    }
}

/// Writes the null of a missing string: `$-1` in RESP2, `_` in RESP3.
pub fn write_null_bulk(out: &mut BytesMut, proto: Protocol) {
    match proto {
        Protocol::Resp2 => out.put_slice(b"$-1\r\n"),
        Protocol::Resp3 => out.put_slice(b"_\r\n"),
    }
}

/// Writes the null of a missing aggregate: `*-1` in RESP2, `_` in RESP3.
pub fn write_null_array(out: &mut BytesMut, proto: Protocol) {
    match proto {
        Protocol::Resp2 => out.put_slice(b"*-1\r\n"),
        Protocol::Resp3 => out.put_slice(b"_\r\n"),
    }
}

/// Writes a boolean: `#t`/`#f` in RESP3, `:1`/`:0` in RESP2.
pub fn write_bool(out: &mut BytesMut, proto: Protocol, value: bool) {
    match (proto, value) {
        (Protocol::Resp2, true) => out.put_slice(b":1\r\n"),
        (Protocol::Resp2, false) => out.put_slice(b":0\r\n"),
        (Protocol::Resp3, true) => out.put_slice(b"#t\r\n"),
        (Protocol::Resp3, false) => out.put_slice(b"#f\r\n"),
    }
}

/// Writes a verbatim string: `=len\r\nfmt:text\r\n` in RESP3, a bulk string of the
/// text in RESP2.
///
/// ```
/// use bytes::BytesMut;
/// use redline_resp::{encode, Protocol};
///
/// let mut out = BytesMut::new();
/// encode::write_verbatim(&mut out, Protocol::Resp3, b"txt", b"hi");
/// assert_eq!(&out[..], b"=6\r\ntxt:hi\r\n");
/// ```
pub fn write_verbatim(out: &mut BytesMut, proto: Protocol, format: &[u8; 3], text: &[u8]) {
    match proto {
        Protocol::Resp2 => write_bulk(out, text),
        Protocol::Resp3 => {
            write_len(out, b'=', text.len() + 4);
            out.put_slice(format);
            out.put_u8(b':');
            out.put_slice(text);
            out.put_slice(b"\r\n");
        }
    }
}

/// Writes a big number from its decimal digits: a `(` line in RESP3, a bulk string in
/// RESP2 (as Redis downgrades it).
pub fn write_big_number(out: &mut BytesMut, proto: Protocol, digits: &[u8]) {
    match proto {
        Protocol::Resp2 => write_bulk(out, digits),
        Protocol::Resp3 => write_line(out, b'(', digits),
    }
}

/// Writes a double whose text the caller already chose (Redis formats scores with `%.17g`):
/// a `,` line in RESP3, a bulk string in RESP2.
pub fn write_double_text_reply(out: &mut BytesMut, proto: Protocol, text: &[u8]) {
    match proto {
        Protocol::Resp2 => write_bulk(out, text),
        Protocol::Resp3 => write_line(out, b',', text),
    }
}

/// The shortest text that parses back to the same double, with RESP3's spellings of the
/// non-finite values.
fn write_double_text(out: &mut BytesMut, d: f64) {
    if d.is_nan() {
        out.put_slice(b"nan");
    } else if d.is_infinite() {
        out.put_slice(if d > 0.0 { b"inf" } else { b"-inf" });
    } else {
        // `{:?}` is Rust's shortest round-trip form and switches to exponents for very
        // large or small magnitudes, which RESP3's double grammar allows.
        use std::fmt::Write as _;
        let mut text = String::with_capacity(24);
        let _ = write!(text, "{d:?}");
        out.put_slice(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn enc(f: &Frame) -> Vec<u8> {
        let mut out = BytesMut::new();
        frame(&mut out, f);
        out.to_vec()
    }

    #[test]
    fn lengths_of_every_digit_count() {
        for len in [
            0,
            1,
            9,
            10,
            42,
            99,
            100,
            101,
            999,
            1000,
            123_456,
            usize::MAX,
        ] {
            let mut out = BytesMut::new();
            write_len(&mut out, b'*', len);
            assert_eq!(out, format!("*{len}\r\n").as_bytes(), "{len}");
            let body = vec![b'x'; len.min(1000)];
            let mut out = BytesMut::new();
            write_bulk(&mut out, &body);
            let want = format!("${}\r\n{}\r\n", body.len(), "x".repeat(body.len()));
            assert_eq!(out, want.as_bytes());
        }
    }

    #[test]
    fn status_and_error_lines_never_carry_a_line_break() {
        let mut out = BytesMut::new();
        write_error(&mut out, b"ERR no group '\r\n*1\r\n'");
        write_simple(&mut out, b"a\nb");
        assert_eq!(&out[..], b"-ERR no group '  *1  '\r\n+a b\r\n");
    }

    #[test]
    fn scalars() {
        assert_eq!(enc(&Frame::Simple(Bytes::from_static(b"OK"))), b"+OK\r\n");
        assert_eq!(
            enc(&Frame::Error(Bytes::from_static(b"ERR x"))),
            b"-ERR x\r\n"
        );
        assert_eq!(enc(&Frame::Integer(i64::MIN)), b":-9223372036854775808\r\n");
        assert_eq!(enc(&Frame::Bulk(Bytes::new())), b"$0\r\n\r\n");
        assert_eq!(enc(&Frame::NullBulk), b"$-1\r\n");
        assert_eq!(enc(&Frame::NullArray), b"*-1\r\n");
        assert_eq!(enc(&Frame::Null), b"_\r\n");
        assert_eq!(enc(&Frame::Boolean(true)), b"#t\r\n");
        assert_eq!(enc(&Frame::Double(f64::INFINITY)), b",inf\r\n");
        assert_eq!(enc(&Frame::Double(f64::NEG_INFINITY)), b",-inf\r\n");
        assert_eq!(enc(&Frame::Double(f64::NAN)), b",nan\r\n");
        assert_eq!(enc(&Frame::Double(1.5)), b",1.5\r\n");
        assert_eq!(
            enc(&Frame::BigNumber(Bytes::from_static(
                b"-12345678901234567890"
            ))),
            b"(-12345678901234567890\r\n"
        );
        assert_eq!(
            enc(&Frame::Verbatim {
                format: *b"txt",
                text: Bytes::from_static(b"Some string")
            }),
            b"=15\r\ntxt:Some string\r\n"
        );
        assert_eq!(
            enc(&Frame::BulkError(Bytes::from_static(b"SYNTAX x"))),
            b"!8\r\nSYNTAX x\r\n"
        );
    }

    #[test]
    fn aggregates() {
        let pair = (Frame::Simple(Bytes::from_static(b"k")), Frame::Integer(1));
        assert_eq!(enc(&Frame::Map(vec![pair.clone()])), b"%1\r\n+k\r\n:1\r\n");
        assert_eq!(enc(&Frame::Set(vec![Frame::Integer(1)])), b"~1\r\n:1\r\n");
        assert_eq!(enc(&Frame::Push(vec![Frame::Integer(1)])), b">1\r\n:1\r\n");
        assert_eq!(
            enc(&Frame::Attribute {
                attrs: vec![pair],
                value: Box::new(Frame::Integer(2))
            }),
            b"|1\r\n+k\r\n:1\r\n:2\r\n"
        );
    }

    #[test]
    fn protocol_dependent_headers() {
        let mut out = BytesMut::new();
        write_map_len(&mut out, Protocol::Resp2, 2);
        write_map_len(&mut out, Protocol::Resp3, 2);
        write_null_bulk(&mut out, Protocol::Resp2);
        write_null_bulk(&mut out, Protocol::Resp3);
        write_bool(&mut out, Protocol::Resp2, true);
        write_double_text_reply(&mut out, Protocol::Resp2, b"1.5");
        write_double_text_reply(&mut out, Protocol::Resp3, b"1.5");
        assert_eq!(
            &out[..],
            b"*4\r\n%2\r\n$-1\r\n_\r\n:1\r\n$3\r\n1.5\r\n,1.5\r\n"
        );
    }
}
