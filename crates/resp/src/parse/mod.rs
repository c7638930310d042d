//! Parsing RESP: stateless [`parse`] for whole frames, the resumable reply [`Decoder`],
//! and the server's [`RequestDecoder`].
//!
//! All three never copy a bulk payload (it becomes a `Bytes` view of the read buffer),
//! never allocate from a count they have not checked, and never panic on any input.
//!
//! RESP3's streamed strings and aggregates (`$?`, `*?`, `;`, `.`) are not accepted: Redis
//! never sends them.

mod decoder;
mod find;
mod inline;
mod lex;
mod number;
mod request;

use bytes::BytesMut;

pub use decoder::Decoder;
pub(crate) use find::find_byte;
pub use inline::split_args;
pub use number::parse_i64;
pub use request::RequestDecoder;

use crate::{Frame, Limits, ProtocolError};
use lex::{lex, Token};

/// Parses one frame from the front of `buf` with [`Limits::DEFAULT`].
///
/// On `Ok(Some(frame))` the frame's bytes are consumed from `buf`; on `Ok(None)` the
/// input is incomplete and `buf` is untouched. Each call rescans from the start of `buf`:
/// a reader that receives large replies in many pieces should use [`Decoder`].
///
/// ```
/// use bytes::BytesMut;
/// use redline_resp::{parse, Frame};
///
/// let mut buf = BytesMut::from(&b"$3\r\nfoo\r\n:1"[..]);
/// assert_eq!(parse(&mut buf).unwrap(), Some(Frame::Bulk("foo".into())));
/// assert_eq!(parse(&mut buf).unwrap(), None);
/// assert_eq!(&buf[..], b":1");
/// ```
pub fn parse(buf: &mut BytesMut) -> Result<Option<Frame>, ProtocolError> {
    parse_with(buf, &Limits::DEFAULT)
}

/// [`parse`] with explicit limits.
///
/// ```
/// use bytes::BytesMut;
/// use redline_resp::{parse_with, Limits, ProtocolError};
///
/// let limits = Limits { max_bulk_len: 4, ..Limits::DEFAULT };
/// let mut buf = BytesMut::from(&b"$5\r\nhello\r\n"[..]);
/// assert_eq!(parse_with(&mut buf, &limits), Err(ProtocolError::InvalidBulkLength));
/// ```
pub fn parse_with(buf: &mut BytesMut, limits: &Limits) -> Result<Option<Frame>, ProtocolError> {
    // First prove a whole frame is there without touching `buf`, then let a fresh decoder
    // build it, consuming exactly that frame. Both walk the same lexer, so they agree.
    if frame_len(buf, limits)?.is_none() {
        return Ok(None);
    }
    Decoder::new(*limits).decode(buf)
}

/// The length of the first whole frame in `buf`, `None` if it is incomplete.
fn frame_len(buf: &[u8], limits: &Limits) -> Result<Option<usize>, ProtocolError> {
    let mut pos = 0;
    // Children still expected by the innermost open aggregate, and by the outer ones;
    // a flat array never touches `outer`, so it costs no allocation.
    let mut remaining = 0usize;
    let mut outer: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    loop {
        let Some((token, used)) = lex(buf.get(pos..).unwrap_or_default(), limits)? else {
            return Ok(None);
        };
        pos += used;
        if let Token::Aggregate { kind, len } = token {
            if depth >= limits.max_depth {
                return Err(ProtocolError::DepthExceeded {
                    max: limits.max_depth,
                });
            }
            let children = kind.children(len)?;
            if children > 0 {
                if depth > 0 {
                    outer.push(remaining);
                }
                depth += 1;
                remaining = children;
                continue;
            }
        }
        // One element is complete: close every aggregate it completes.
        loop {
            if depth == 0 {
                return Ok(Some(pos));
            }
            remaining -= 1;
            if remaining > 0 {
                break;
            }
            depth -= 1;
            remaining = outer.pop().unwrap_or(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_len_counts_nested_frames() {
        let limits = Limits::DEFAULT;
        assert_eq!(
            frame_len(b"*2\r\n*1\r\n:1\r\n:2\r\n+x", &limits),
            Ok(Some(16))
        );
        assert_eq!(frame_len(b"*2\r\n*1\r\n:1\r\n", &limits), Ok(None));
        assert_eq!(
            frame_len(b"|1\r\n+a\r\n+b\r\n:1\r\n", &limits),
            Ok(Some(16))
        );
        assert_eq!(frame_len(b"%1\r\n+a\r\n", &limits), Ok(None));
    }
}
