//! The resumable reply decoder: a client's read loop calls it after every read.
//!
//! It consumes each element from the buffer as soon as the element is whole and keeps the
//! unfinished aggregates on a stack, so a reply of a million elements that arrives in a
//! thousand reads is scanned once, not a thousand times. Payloads are split off the
//! buffer, never copied.

use std::ops::Range;

use bytes::{Buf, Bytes, BytesMut};

use crate::parse::lex::{lex, Aggregate, Token};
use crate::{Frame, Limits, ProtocolError};

/// Decodes RESP2/RESP3 replies incrementally, keeping its place between calls.
///
/// Unlike [`crate::parse`], `decode` consumes bytes even when it returns `Ok(None)`: the
/// elements read so far are held inside the decoder until their frame is complete. After
/// an error the decoder's state is unspecified; close the connection.
///
/// ```
/// use bytes::BytesMut;
/// use redline_resp::{Decoder, Frame};
///
/// let mut decoder = Decoder::default();
/// let mut buf = BytesMut::from(&b"*2\r\n$3\r\nfoo\r\n"[..]);
/// assert_eq!(decoder.decode(&mut buf).unwrap(), None);
/// buf.extend_from_slice(b":7\r\n");
/// let frame = decoder.decode(&mut buf).unwrap().unwrap();
/// assert_eq!(frame, Frame::Array(vec![Frame::Bulk("foo".into()), Frame::Integer(7)]));
/// ```
#[derive(Debug, Default)]
pub struct Decoder {
    limits: Limits,
    /// Aggregates opened but not yet complete, outermost first.
    open: Vec<Open>,
}

/// An aggregate whose children are still arriving. Children are kept flat (map keys and
/// values interleaved, an attribute's value last) so one shape serves every kind.
#[derive(Debug)]
struct Open {
    kind: Aggregate,
    children: Vec<Frame>,
    remaining: usize,
}

/// Children preallocated for an aggregate, whatever count the wire claims (Redis caps its
/// argv the same way): a hostile count costs nothing until its elements really arrive.
const MAX_PREALLOCATED: usize = 1024;

impl Decoder {
    /// A decoder enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        Decoder {
            limits,
            open: Vec::new(),
        }
    }

    /// True while part of a frame has been consumed from the buffer and the rest is
    /// awaited: the buffer then starts inside that frame, not at a frame boundary.
    pub fn in_frame(&self) -> bool {
        !self.open.is_empty()
    }

    /// Reads the next complete frame from `buf`, or returns `Ok(None)` once `buf` holds no
    /// more whole elements (call again after the next read).
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, ProtocolError> {
        loop {
            let Some((token, used)) = lex(buf, &self.limits)? else {
                return Ok(None);
            };
            let frame = match token {
                Token::Aggregate { kind, len } => {
                    if self.open.len() >= self.limits.max_depth {
                        return Err(ProtocolError::DepthExceeded {
                            max: self.limits.max_depth,
                        });
                    }
                    buf.advance(used);
                    let remaining = kind.children(len)?;
                    if remaining == 0 {
                        finish(kind, Vec::new())
                    } else {
                        self.open.push(Open {
                            kind,
                            children: Vec::with_capacity(remaining.min(MAX_PREALLOCATED)),
                            remaining,
                        });
                        continue;
                    }
                }
                scalar => take_scalar(buf, scalar, used),
            };
            if let Some(frame) = self.complete(frame) {
                return Ok(Some(frame));
            }
        }
    }

    /// Hands a finished frame to the innermost open aggregate, closing every aggregate it
    /// completes; returns the top-level frame once there is one.
    fn complete(&mut self, mut frame: Frame) -> Option<Frame> {
        loop {
            let Some(open) = self.open.last_mut() else {
                return Some(frame);
            };
            open.children.push(frame);
            open.remaining -= 1;
            if open.remaining > 0 {
                return None;
            }
            let open = self.open.pop()?;
            frame = finish(open.kind, open.children);
        }
    }
}

/// Builds an aggregate frame from its flat children.
fn finish(kind: Aggregate, children: Vec<Frame>) -> Frame {
    match kind {
        Aggregate::Array => Frame::Array(children),
        Aggregate::Set => Frame::Set(children),
        Aggregate::Push => Frame::Push(children),
        Aggregate::Map => Frame::Map(pairs(children)),
        Aggregate::Attribute => {
            let mut children = children;
            // The count was 2n+1, so the value is there; Null only guards the impossible.
            let value = children.pop().unwrap_or(Frame::Null);
            Frame::Attribute {
                attrs: pairs(children),
                value: Box::new(value),
            }
        }
    }
}

fn pairs(flat: Vec<Frame>) -> Vec<(Frame, Frame)> {
    let mut pairs = Vec::with_capacity(flat.len() / 2);
    let mut flat = flat.into_iter();
    while let (Some(key), Some(value)) = (flat.next(), flat.next()) {
        pairs.push((key, value));
    }
    pairs
}

/// Consumes a scalar's `used` bytes from `buf` and builds its frame; payloads become
/// `Bytes` views of the consumed region (one reference-count increment, no copy).
fn take_scalar(buf: &mut BytesMut, token: Token, used: usize) -> Frame {
    match token {
        Token::Simple(r) => Frame::Simple(split_payload(buf, used, r)),
        Token::Error(r) => Frame::Error(split_payload(buf, used, r)),
        Token::Bulk(r) => Frame::Bulk(split_payload(buf, used, r)),
        Token::BigNumber(r) => Frame::BigNumber(split_payload(buf, used, r)),
        Token::BulkError(r) => Frame::BulkError(split_payload(buf, used, r)),
        Token::Verbatim { format, text } => Frame::Verbatim {
            format,
            text: split_payload(buf, used, text),
        },
        other => {
            buf.advance(used);
            match other {
                Token::Integer(n) => Frame::Integer(n),
                Token::NullBulk => Frame::NullBulk,
                Token::NullArray => Frame::NullArray,
                Token::Double(d) => Frame::Double(d),
                Token::Boolean(b) => Frame::Boolean(b),
                // Null, and aggregates which the caller handles before.
                _ => Frame::Null,
            }
        }
    }
}

/// Splits the element's `used` bytes off `buf` and narrows them to `payload`. Narrowing
/// a frozen shared buffer only moves its bounds; it does not touch the reference count.
fn split_payload(buf: &mut BytesMut, used: usize, payload: Range<usize>) -> Bytes {
    let mut region = buf.split_to(used).freeze();
    region.truncate(payload.end);
    region.advance(payload.start);
    region
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8]) -> Vec<Frame> {
        let mut decoder = Decoder::default();
        let mut buf = BytesMut::from(input);
        let mut frames = Vec::new();
        while let Some(frame) = decoder.decode(&mut buf).unwrap() {
            frames.push(frame);
        }
        assert!(buf.is_empty());
        frames
    }

    #[test]
    fn nested_and_empty_aggregates() {
        assert_eq!(
            decode_all(b"*2\r\n*0\r\n%1\r\n+k\r\n~1\r\n$0\r\n\r\n"),
            vec![Frame::Array(vec![
                Frame::Array(vec![]),
                Frame::Map(vec![(
                    Frame::Simple("k".into()),
                    Frame::Set(vec![Frame::Bulk(Bytes::new())])
                )]),
            ])]
        );
    }

    #[test]
    fn attribute_wraps_the_next_frame() {
        assert_eq!(
            decode_all(b"|1\r\n+ttl\r\n:3\r\n*1\r\n:1\r\n|0\r\n_\r\n"),
            vec![
                Frame::Attribute {
                    attrs: vec![(Frame::Simple("ttl".into()), Frame::Integer(3))],
                    value: Box::new(Frame::Array(vec![Frame::Integer(1)])),
                },
                Frame::Attribute {
                    attrs: vec![],
                    value: Box::new(Frame::Null),
                },
            ]
        );
    }

    #[test]
    fn payloads_share_the_read_buffer() {
        let mut buf = BytesMut::from(&b"$5\r\nhello\r\n"[..]);
        let start = buf.as_ptr() as usize;
        let Some(Frame::Bulk(payload)) = Decoder::default().decode(&mut buf).unwrap() else {
            panic!("expected a bulk");
        };
        assert_eq!(payload.as_ptr() as usize, start + 4);
    }

    #[test]
    fn depth_limit() {
        let limits = Limits {
            max_depth: 2,
            ..Limits::DEFAULT
        };
        let mut ok = BytesMut::from(&b"*1\r\n*1\r\n:1\r\n"[..]);
        assert!(Decoder::new(limits).decode(&mut ok).unwrap().is_some());
        let mut deep = BytesMut::from(&b"*1\r\n*1\r\n*0\r\n"[..]);
        assert_eq!(
            Decoder::new(limits).decode(&mut deep),
            Err(ProtocolError::DepthExceeded { max: 2 })
        );
    }

    #[test]
    fn hostile_count_does_not_preallocate() {
        let mut buf = BytesMut::from(&b"*2147483647\r\n:1\r\n"[..]);
        let mut decoder = Decoder::default();
        assert_eq!(decoder.decode(&mut buf), Ok(None));
        assert!(decoder.open[0].children.capacity() <= MAX_PREALLOCATED);
    }
}
