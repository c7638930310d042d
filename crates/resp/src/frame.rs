//! One RESP value, RESP2 and RESP3 alike.
//!
//! A [`Frame`] is what the parser hands out and what the encoder writes. Payloads are
//! [`Bytes`]: when a frame comes from the parser they are slices of the read buffer, so a
//! 512 MiB bulk string is never copied on its way to the caller.

use bytes::Bytes;

/// A RESP2 or RESP3 value.
///
/// The variants follow the protocol's type bytes one to one, so parsing then encoding
/// reproduces the same bytes (doubles apart, whose textual form is normalised).
///
/// ```
/// use redline_resp::Frame;
/// use bytes::Bytes;
///
/// let reply = Frame::Array(vec![Frame::Bulk(Bytes::from_static(b"v")), Frame::NullBulk]);
/// assert!(matches!(&reply, Frame::Array(items) if items.len() == 2));
/// ```
#[derive(Debug, Clone)]
pub enum Frame {
    /// `+OK\r\n`: a status line without CR or LF.
    Simple(Bytes),
    /// `-ERR message\r\n`: an error line; the first word is the error kind.
    Error(Bytes),
    /// `:42\r\n`: a signed 64-bit integer.
    Integer(i64),
    /// `$3\r\nfoo\r\n`: a binary-safe string.
    Bulk(Bytes),
    /// `*2\r\n...`: an ordered list of frames.
    Array(Vec<Frame>),
    /// `$-1\r\n`: RESP2's null bulk string.
    NullBulk,
    /// `*-1\r\n`: RESP2's null array.
    NullArray,
    /// `_\r\n`: RESP3's null.
    Null,
    /// `%2\r\n...`: RESP3 map, as key/value pairs in wire order.
    Map(Vec<(Frame, Frame)>),
    /// `~2\r\n...`: RESP3 set, in wire order.
    Set(Vec<Frame>),
    /// `,3.14\r\n`: RESP3 double, including `inf`, `-inf` and `nan`.
    Double(f64),
    /// `#t\r\n` / `#f\r\n`: RESP3 boolean.
    Boolean(bool),
    /// `(3492890328409238509324850943850943825024385\r\n`: RESP3 big number, kept as
    /// its decimal digits (with an optional leading `-`).
    BigNumber(Bytes),
    /// `=15\r\ntxt:Some string\r\n`: RESP3 verbatim string with its three-byte format.
    Verbatim {
        /// The format, e.g. `txt` or `mkd`.
        format: [u8; 3],
        /// The text after the `xxx:` prefix.
        text: Bytes,
    },
    /// `!21\r\nSYNTAX invalid syntax\r\n`: RESP3 binary-safe error.
    BulkError(Bytes),
    /// `|1\r\n...`: RESP3 attribute map followed by the frame it annotates.
    Attribute {
        /// The attribute key/value pairs.
        attrs: Vec<(Frame, Frame)>,
        /// The reply the attributes belong to.
        value: Box<Frame>,
    },
    /// `>3\r\n...`: RESP3 out-of-band push (pub/sub messages, client tracking).
    Push(Vec<Frame>),
}

/// Structural equality; doubles compare with `==` except that two NaNs are equal, so a
/// parsed `,nan` equals `Frame::Double(f64::NAN)` (tests compare frames this way).
///
/// ```
/// use redline_resp::Frame;
///
/// assert_eq!(Frame::Double(f64::NAN), Frame::Double(f64::NAN));
/// assert_ne!(Frame::Double(0.5), Frame::Double(1.5));
/// ```
impl PartialEq for Frame {
    fn eq(&self, other: &Self) -> bool {
        use Frame::*;
        match (self, other) {
            (Simple(a), Simple(b))
            | (Error(a), Error(b))
            | (Bulk(a), Bulk(b))
            | (BigNumber(a), BigNumber(b))
            | (BulkError(a), BulkError(b)) => a == b,
            (Integer(a), Integer(b)) => a == b,
            (Array(a), Array(b)) | (Set(a), Set(b)) | (Push(a), Push(b)) => a == b,
            (NullBulk, NullBulk) | (NullArray, NullArray) | (Null, Null) => true,
            (Map(a), Map(b)) => a == b,
            (Double(a), Double(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Boolean(a), Boolean(b)) => a == b,
            (
                Verbatim {
                    format: fa,
                    text: ta,
                },
                Verbatim {
                    format: fb,
                    text: tb,
                },
            ) => fa == fb && ta == tb,
            (
                Attribute {
                    attrs: aa,
                    value: va,
                },
                Attribute {
                    attrs: ab,
                    value: vb,
                },
            ) => aa == ab && va == vb,
            _ => false,
        }
    }
}
