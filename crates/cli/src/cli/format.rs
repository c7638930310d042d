//! Replies printed exactly as redis-cli 7.0 prints them: the terminal form
//! (`cliFormatReplyTTY`: numbered, indented, `(integer)`, `(nil)`...) and the raw form
//! (`cliFormatReplyRaw`, used when stdout is not a terminal).
//!
//! Where redis-cli 7.0 has no answer (RESP3 big numbers and attributes make it exit with
//! "Unknown reply type" / a protocol error) we print `(big number) N` and the attributed
//! value.

use redline::Frame;

/// The terminal form of `frame`, newline-terminated.
///
/// ```ignore
/// let mut out = Vec::new();
/// tty(&Frame::Integer(3), "", &mut out);
/// assert_eq!(out, b"(integer) 3\n");
/// ```
pub(crate) fn tty(frame: &Frame, prefix: &str, out: &mut Vec<u8>) {
    match frame {
        Frame::Error(e) | Frame::BulkError(e) => {
            out.extend_from_slice(b"(error) ");
            out.extend_from_slice(e);
            out.push(b'\n');
        }
        Frame::Simple(s) => {
            out.extend_from_slice(s);
            out.push(b'\n');
        }
        Frame::Integer(n) => out.extend_from_slice(format!("(integer) {n}\n").as_bytes()),
        Frame::Double(d) => out.extend_from_slice(format!("(double) {}\n", g17(*d)).as_bytes()),
        Frame::BigNumber(n) => {
            out.extend_from_slice(b"(big number) ");
            out.extend_from_slice(n);
            out.push(b'\n');
        }
        Frame::Bulk(b) => {
            repr(b, out);
            out.push(b'\n');
        }
        Frame::Verbatim { text, .. } => {
            out.extend_from_slice(text);
            out.push(b'\n');
        }
        Frame::Null | Frame::NullBulk | Frame::NullArray => out.extend_from_slice(b"(nil)\n"),
        Frame::Boolean(b) => {
            out.extend_from_slice(if *b { b"(true)\n" } else { b"(false)\n" });
        }
        Frame::Attribute { value, .. } => tty(value, prefix, out),
        Frame::Array(items) => {
            aggregate(Aggregate::List(items, ')', "(empty array)\n"), prefix, out)
        }
        Frame::Push(items) => aggregate(Aggregate::List(items, ')', "(empty push)\n"), prefix, out),
        Frame::Set(items) => aggregate(Aggregate::List(items, '~', "(empty set)\n"), prefix, out),
        Frame::Map(pairs) => aggregate(Aggregate::Map(pairs), prefix, out),
    }
}

/// The aggregates, seen the way redis-cli numbers them.
enum Aggregate<'a> {
    /// Items, the character after each index, and the text for no items.
    List(&'a [Frame], char, &'static str),
    /// Key/value pairs, numbered `1#`.
    Map(&'a [(Frame, Frame)]),
}

/// redis-cli's numbering: indices right-aligned to the widest, nested items indented by
/// that width plus two, and the first line of each item following its index directly.
fn aggregate(agg: Aggregate<'_>, prefix: &str, out: &mut Vec<u8>) {
    let (count, empty) = match &agg {
        Aggregate::List(items, _, empty) => (items.len(), *empty),
        Aggregate::Map(pairs) => (pairs.len(), "(empty hash)\n"),
    };
    if count == 0 {
        out.extend_from_slice(empty.as_bytes());
        return;
    }
    let width = count.to_string().len();
    let nested = format!("{prefix}{}", " ".repeat(width + 2));
    let index = |i: usize, sep: char, out: &mut Vec<u8>| {
        let lead = if i == 0 { "" } else { prefix };
        out.extend_from_slice(format!("{lead}{:>width$}{sep} ", i + 1).as_bytes());
    };
    match agg {
        Aggregate::List(items, sep, _) => {
            for (i, item) in items.iter().enumerate() {
                index(i, sep, out);
                tty(item, &nested, out);
            }
        }
        Aggregate::Map(pairs) => {
            for (i, (key, value)) in pairs.iter().enumerate() {
                index(i, '#', out);
                tty(key, &nested, out);
                // The key's newline gives way to the arrow.
                out.pop();
                out.extend_from_slice(b" => ");
                // redis-cli 7.0 starts a value with more than one element on its own
                // line, every element indented (the first too).
                if aggregate_len(value) > 1 {
                    out.push(b'\n');
                    out.extend_from_slice(nested.as_bytes());
                }
                tty(value, &nested, out);
            }
        }
    }
}

/// Elements of an aggregate (pairs for a map); 0 for anything else.
fn aggregate_len(frame: &Frame) -> usize {
    match frame {
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => items.len(),
        Frame::Map(pairs) => pairs.len(),
        Frame::Attribute { value, .. } => aggregate_len(value),
        _ => 0,
    }
}

/// The raw form of `frame`, without the final newline (the caller adds it, as redis-cli
/// adds its command delimiter).
pub(crate) fn raw(frame: &Frame, out: &mut Vec<u8>) {
    match frame {
        Frame::Null | Frame::NullBulk | Frame::NullArray => {}
        Frame::Error(e) | Frame::BulkError(e) => {
            out.extend_from_slice(e);
            out.push(b'\n');
        }
        Frame::Simple(s) | Frame::Bulk(s) | Frame::BigNumber(s) => out.extend_from_slice(s),
        Frame::Verbatim { text, .. } => out.extend_from_slice(text),
        Frame::Boolean(b) => out.extend_from_slice(if *b { b"(true)" } else { b"(false)" }),
        Frame::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Frame::Double(d) => out.extend_from_slice(g17(*d).as_bytes()),
        Frame::Attribute { value, .. } => raw(value, out),
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b'\n');
                }
                raw(item, out);
            }
        }
        Frame::Map(pairs) => {
            for (i, (key, value)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(b'\n');
                }
                raw(key, out);
                out.push(b' ');
                raw(value, out);
            }
        }
    }
}

/// `sdscatrepr`: a double-quoted string with C escapes and `\xHH` for bytes outside
/// printable ASCII.
pub(crate) fn repr(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// C's `%.17g`, the form in which Redis sends doubles: the server's text is gone once the
/// reply is parsed, and `%.17g` of the parsed value reproduces it.
pub(crate) fn g17(d: f64) -> String {
    if d.is_nan() {
        return "nan".to_owned();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // 17 significant digits, correctly rounded; the exponent after rounding decides the
    // notation, as in C.
    let sci = format!("{d:.16e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    if !(-4..17).contains(&exp) {
        let mantissa = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let decimals = usize::try_from(16 - exp).unwrap_or(0);
    trim_zeros(&format!("{d:.decimals$}")).to_owned()
}

/// `%g` drops trailing zeros of the fraction, and the point if nothing follows it.
fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn tty_of(frame: &Frame) -> String {
        let mut out = Vec::new();
        tty(frame, "", &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn bulk(s: &str) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    #[allow(clippy::approx_constant)] // the values Redis prints, not pi
    fn g17_matches_printf() {
        assert_eq!(g17(3.141), "3.141");
        assert_eq!(g17(3.14), "3.1400000000000001");
        assert_eq!(g17(1.5), "1.5");
        assert_eq!(g17(3.0), "3");
        assert_eq!(g17(1e300), "1.0000000000000001e+300");
        assert_eq!(g17(1e17), "1e+17");
        assert_eq!(g17(1e16), "10000000000000000");
        assert_eq!(g17(0.0001), "0.0001");
        assert_eq!(g17(0.00001), "1.0000000000000001e-05");
        assert_eq!(g17(-2.5), "-2.5");
        assert_eq!(g17(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn repr_escapes_like_sdscatrepr() {
        let mut out = Vec::new();
        repr(b"a\"b\\\n\x01\xff", &mut out);
        assert_eq!(out, b"\"a\\\"b\\\\\\n\\x01\\xff\"");
    }

    #[test]
    fn nested_arrays_indent_by_index_width() {
        let items: Vec<Frame> = (0..10).map(|i| bulk(&i.to_string())).collect();
        let frame = Frame::Array(vec![Frame::Array(items), Frame::Integer(1)]);
        let text = tty_of(&frame);
        assert!(text.starts_with("1)  1) \"0\"\n    2) \"1\"\n"), "{text}");
        assert!(text.contains("\n   10) \"9\"\n2) (integer) 1\n"), "{text}");
    }

    #[test]
    fn maps_use_arrows() {
        let frame = Frame::Map(vec![(
            bulk("f"),
            Frame::Map(vec![(bulk("g"), Frame::Null)]),
        )]);
        assert_eq!(tty_of(&frame), "1# \"f\" => 1# \"g\" => (nil)\n");
    }
}
