//! Why a byte stream is not valid RESP.

use std::fmt;

/// A malformed or over-limit input. After one, the stream cannot be resynchronised: the
/// connection should be closed.
///
/// The request-side variants (the first nine) carry Redis's own wording, so a server can
/// reply `-ERR <Display>` unchanged, exactly as `redis-server` does before it closes the
/// connection. The reply-side variants name what was wrong.
///
/// ```
/// use bytes::BytesMut;
/// use redline_resp::{parse, ProtocolError};
///
/// let mut buf = BytesMut::from(&b"$999999999999\r\n"[..]);
/// let err = parse(&mut buf).unwrap_err();
/// assert_eq!(err, ProtocolError::InvalidBulkLength);
/// assert_eq!(err.to_string(), "Protocol error: invalid bulk length");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// An aggregate length that is not a number, is negative (other than a `*-1` null), or
    /// exceeds `max_array_len`.
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    /// A bulk length that is not a number, is negative (other than a `$-1` null), or
    /// exceeds `max_bulk_len`.
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
    /// A request's multibulk element does not start with `$`.
    #[error("Protocol error: expected '$', got '{}'", char::from(*.0))]
    ExpectedDollar(u8),
    /// An inline request whose quotes do not close, or a closing quote followed by
    /// something other than a space.
    #[error("Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
    /// An inline request longer than `max_inline_len` without a newline.
    #[error("Protocol error: too big inline request")]
    TooBigInlineRequest,
    /// A request's `*<count>` line longer than `max_inline_len` without CR.
    #[error("Protocol error: too big mbulk count string")]
    TooBigMbulkCount,
    /// A request's `$<len>` line longer than `max_inline_len` without CR.
    #[error("Protocol error: too big bulk count string")]
    TooBigBulkCount,
    /// A request of more than 10 arguments from a client that has not authenticated
    /// while the server requires it (see [`crate::RequestDecoder::set_unauthenticated`]).
    #[error("Protocol error: unauthenticated multibulk length")]
    UnauthenticatedMultibulkLength,
    /// A request argument longer than 16 KiB from a client that has not authenticated
    /// while the server requires it.
    #[error("Protocol error: unauthenticated bulk length")]
    UnauthenticatedBulkLength,
    /// A reply starts with a byte that is no RESP2/RESP3 type.
    #[error("Protocol error: invalid type byte {}", ShowByte(*.0))]
    InvalidTypeByte(u8),
    /// A reply line (status, error, number...) runs past `max_inline_len` without CRLF.
    #[error("Protocol error: line longer than {max} bytes without CRLF")]
    LineTooLong {
        /// The configured `max_inline_len`.
        max: usize,
    },
    /// A line ends in a bare LF, or a bulk payload is not followed by CRLF.
    #[error("Protocol error: expected CRLF")]
    MissingCrlf,
    /// `:` with something other than a signed 64-bit decimal integer.
    #[error("Protocol error: invalid integer")]
    InvalidInteger,
    /// `,` with something other than a decimal or exponent number, `inf`, `-inf` or `nan`.
    #[error("Protocol error: invalid double")]
    InvalidDouble,
    /// `#` with something other than `t` or `f`.
    #[error("Protocol error: invalid boolean")]
    InvalidBoolean,
    /// `(` with something other than an optional `-` and decimal digits.
    #[error("Protocol error: invalid big number")]
    InvalidBigNumber,
    /// `_` followed by anything before CRLF.
    #[error("Protocol error: invalid null")]
    InvalidNull,
    /// A verbatim string shorter than 4 bytes or without the `xxx:` format prefix.
    #[error("Protocol error: invalid verbatim string")]
    InvalidVerbatim,
    /// Aggregates nested deeper than `max_depth`.
    #[error("Protocol error: nesting deeper than {max} levels")]
    DepthExceeded {
        /// The configured `max_depth`.
        max: usize,
    },
}

/// Shows a byte as `'c'` when printable, as `0xNN` otherwise.
struct ShowByte(u8);

impl fmt::Display for ShowByte {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_ascii_graphic() {
            write!(f, "'{}'", char::from(self.0))
        } else {
            write!(f, "0x{:02x}", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_wording() {
        assert_eq!(
            ProtocolError::ExpectedDollar(b'f').to_string(),
            "Protocol error: expected '$', got 'f'"
        );
        assert_eq!(
            ProtocolError::UnbalancedQuotes.to_string(),
            "Protocol error: unbalanced quotes in request"
        );
        assert_eq!(
            ProtocolError::TooBigInlineRequest.to_string(),
            "Protocol error: too big inline request"
        );
        assert_eq!(
            ProtocolError::TooBigMbulkCount.to_string(),
            "Protocol error: too big mbulk count string"
        );
        assert_eq!(
            ProtocolError::TooBigBulkCount.to_string(),
            "Protocol error: too big bulk count string"
        );
        assert_eq!(
            ProtocolError::InvalidMultibulkLength.to_string(),
            "Protocol error: invalid multibulk length"
        );
    }

    #[test]
    fn type_byte_shown_readably() {
        assert_eq!(
            ProtocolError::InvalidTypeByte(b'x').to_string(),
            "Protocol error: invalid type byte 'x'"
        );
        assert_eq!(
            ProtocolError::InvalidTypeByte(0).to_string(),
            "Protocol error: invalid type byte 0x00"
        );
    }
}
