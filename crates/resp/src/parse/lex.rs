//! Reads one RESP element from the front of a byte slice: a whole scalar, or the header
//! of an aggregate.
//!
//! Both reply parsers ([`crate::parse`] and [`crate::Decoder`]) are loops over this one
//! function, so they accept and reject exactly the same inputs. It only reads: the caller
//! decides whether to consume the bytes, which keeps [`crate::parse`] able to leave the
//! buffer untouched on partial input.

use std::ops::Range;

use crate::parse::find::find_byte;
use crate::parse::number::{self, Length};
use crate::{Limits, ProtocolError};

/// One element found at the front of the input, with payloads as byte ranges of it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token {
    Simple(Range<usize>),
    Error(Range<usize>),
    Integer(i64),
    Bulk(Range<usize>),
    NullBulk,
    NullArray,
    Null,
    Double(f64),
    Boolean(bool),
    BigNumber(Range<usize>),
    Verbatim {
        format: [u8; 3],
        text: Range<usize>,
    },
    BulkError(Range<usize>),
    /// The header of an aggregate; `len` is the count on the wire (pairs for maps and
    /// attributes), already checked against the limits.
    Aggregate {
        kind: Aggregate,
        len: usize,
    },
}

/// The aggregate types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Aggregate {
    Array,
    Map,
    Set,
    Push,
    Attribute,
}

impl Aggregate {
    /// How many frames follow the header: `2 * len` for maps, `2 * len + 1` for attributes
    /// (the annotated value follows the pairs).
    pub(crate) fn children(self, len: usize) -> Result<usize, ProtocolError> {
        let children = match self {
            Aggregate::Array | Aggregate::Set | Aggregate::Push => Some(len),
            Aggregate::Map => len.checked_mul(2),
            Aggregate::Attribute => len.checked_mul(2).and_then(|n| n.checked_add(1)),
        };
        children.ok_or(ProtocolError::InvalidMultibulkLength)
    }
}

/// Every RESP2 and RESP3 type byte (streamed RESP3 types apart).
const TYPE_BYTES: &[u8] = b"+-:$*_,#(=!%~>|";

/// Reads one element at the front of `buf`. `Ok(None)` means more bytes are needed;
/// `Ok(Some((token, used)))` gives the element and how many bytes it spans.
pub(crate) fn lex(buf: &[u8], limits: &Limits) -> Result<Option<(Token, usize)>, ProtocolError> {
    let Some(&kind) = buf.first() else {
        return Ok(None);
    };
    // An unknown type byte is an error at once, not after waiting for a line.
    if !TYPE_BYTES.contains(&kind) {
        return Err(ProtocolError::InvalidTypeByte(kind));
    }
    let Some(cr) = find_crlf(buf, limits.max_inline_len)? else {
        return Ok(None);
    };
    let line = 1..cr;
    let text = &buf[line.clone()];
    let after = cr + 2;
    let token = match kind {
        b'+' => Token::Simple(line),
        b'-' => Token::Error(line),
        b':' => Token::Integer(number::parse_i64(text).ok_or(ProtocolError::InvalidInteger)?),
        b'_' if text.is_empty() => Token::Null,
        b'_' => return Err(ProtocolError::InvalidNull),
        b',' => Token::Double(number::parse_double(text).ok_or(ProtocolError::InvalidDouble)?),
        b'#' => Token::Boolean(number::parse_bool(text).ok_or(ProtocolError::InvalidBoolean)?),
        b'(' if number::is_big_number(text) => Token::BigNumber(line),
        b'(' => return Err(ProtocolError::InvalidBigNumber),
        b'$' | b'!' | b'=' => {
            let len = match number::parse_length(text, limits.max_bulk_len) {
                Some(Length::Len(len)) => len,
                Some(Length::Null) if kind == b'$' => return Ok(Some((Token::NullBulk, after))),
                _ => return Err(ProtocolError::InvalidBulkLength),
            };
            return lex_payload(buf, kind, after, len);
        }
        _ => {
            let aggregate = match kind {
                b'*' => Aggregate::Array,
                b'%' => Aggregate::Map,
                b'~' => Aggregate::Set,
                b'>' => Aggregate::Push,
                _ => Aggregate::Attribute,
            };
            let len = match number::parse_length(text, limits.max_array_len) {
                Some(Length::Len(len)) => len,
                Some(Length::Null) if kind == b'*' => return Ok(Some((Token::NullArray, after))),
                _ => return Err(ProtocolError::InvalidMultibulkLength),
            };
            aggregate.children(len)?;
            Token::Aggregate {
                kind: aggregate,
                len,
            }
        }
    };
    Ok(Some((token, after)))
}

/// Reads the `len` payload bytes of a bulk, bulk error or verbatim string starting at
/// `start`, and the CRLF after them.
fn lex_payload(
    buf: &[u8],
    kind: u8,
    start: usize,
    len: usize,
) -> Result<Option<(Token, usize)>, ProtocolError> {
    let end = start
        .checked_add(len)
        .ok_or(ProtocolError::InvalidBulkLength)?;
    let used = end.checked_add(2).ok_or(ProtocolError::InvalidBulkLength)?;
    let Some(terminator) = buf.get(end..used) else {
        return Ok(None);
    };
    if terminator != b"\r\n" {
        return Err(ProtocolError::MissingCrlf);
    }
    let token = match kind {
        b'$' => Token::Bulk(start..end),
        b'!' => Token::BulkError(start..end),
        _ => match buf.get(start..end) {
            Some([a, b, c, b':', ..]) => Token::Verbatim {
                format: [*a, *b, *c],
                text: start + 4..end,
            },
            _ => return Err(ProtocolError::InvalidVerbatim),
        },
    };
    Ok(Some((token, used)))
}

/// Finds the CR of the CRLF that ends the line starting at `buf[0]` (the type byte).
///
/// Only the first `max_line + 3` bytes are searched (type byte, at most `max_line` bytes
/// of text, CRLF), so the answer does not depend on how the stream was chunked: a line
/// that is too long is an error whether or not its end has arrived.
fn find_crlf(buf: &[u8], max_line: usize) -> Result<Option<usize>, ProtocolError> {
    let window = max_line.saturating_add(3).min(buf.len());
    match find_byte(b'\n', &buf[..window]) {
        // buf[0] is a type byte, so a newline is at index 1 or later.
        Some(lf) if lf >= 2 && buf[lf - 1] == b'\r' => Ok(Some(lf - 1)),
        Some(_) => Err(ProtocolError::MissingCrlf),
        None if buf.len() >= max_line.saturating_add(3) => {
            Err(ProtocolError::LineTooLong { max: max_line })
        }
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex_all(input: &[u8]) -> Result<Option<(Token, usize)>, ProtocolError> {
        lex(input, &Limits::DEFAULT)
    }

    #[test]
    fn scalars_as_ranges() {
        assert_eq!(lex_all(b"+OK\r\n"), Ok(Some((Token::Simple(1..3), 5))));
        assert_eq!(lex_all(b"$3\r\nfoo\r\n+"), Ok(Some((Token::Bulk(4..7), 9))));
        assert_eq!(
            lex_all(b"=8\r\ntxt:abcd\r\n"),
            Ok(Some((
                Token::Verbatim {
                    format: *b"txt",
                    text: 8..12
                },
                14
            )))
        );
        assert_eq!(
            lex_all(b"%2\r\n"),
            Ok(Some((
                Token::Aggregate {
                    kind: Aggregate::Map,
                    len: 2
                },
                4
            )))
        );
    }

    #[test]
    fn line_length_is_bounded_whatever_the_chunking() {
        let limits = Limits {
            max_inline_len: 4,
            ..Limits::DEFAULT
        };
        assert_eq!(
            lex(b"+abcd\r\n", &limits),
            Ok(Some((Token::Simple(1..5), 7)))
        );
        assert_eq!(lex(b"+abcd\r", &limits), Ok(None));
        assert_eq!(
            lex(b"+abcde\r\n", &limits),
            Err(ProtocolError::LineTooLong { max: 4 })
        );
        assert_eq!(
            lex(b"+abcde\r", &limits),
            Err(ProtocolError::LineTooLong { max: 4 })
        );
        assert_eq!(
            lex(b"+abcdef", &limits),
            Err(ProtocolError::LineTooLong { max: 4 })
        );
        assert_eq!(lex(b"+abcde", &limits), Ok(None));
    }

    #[test]
    fn aggregate_children() {
        assert_eq!(Aggregate::Map.children(3), Ok(6));
        assert_eq!(Aggregate::Attribute.children(3), Ok(7));
        assert_eq!(
            Aggregate::Map.children(usize::MAX),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        assert_eq!(
            Aggregate::Attribute.children(usize::MAX / 2 + 1),
            Err(ProtocolError::InvalidMultibulkLength)
        );
    }
}
