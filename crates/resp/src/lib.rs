//! RESP2 and RESP3 for redline: frames, an incremental zero-copy parser, an encoder that
//! writes into the caller's buffer, and the Redis command table. No I/O.
//!
//! The client and the server both speak RESP through this crate, so one parser and one
//! command table serve both sides.
//!
//! ```
//! use bytes::BytesMut;
//! use redline_resp::{encode, parse, Frame};
//!
//! let mut buf = BytesMut::new();
//! encode::command(&mut buf, ["SET", "key", "value"]);
//! let frame = parse(&mut buf).unwrap().unwrap();
//! assert!(matches!(frame, Frame::Array(ref args) if args.len() == 3));
//! ```
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod command;
pub mod encode;
mod error;
mod frame;
mod limits;
mod parse;
pub mod scan;
pub mod slot;

pub use error::ProtocolError;
pub use frame::Frame;
pub use limits::Limits;
pub use parse::{parse, parse_i64, parse_with, split_args, Decoder, RequestDecoder};

/// The protocol version a connection speaks; it decides how nulls, maps, sets, doubles
/// and pushes are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Protocol {
    /// RESP2: nulls are `$-1`/`*-1`, maps and sets are flat arrays, doubles are bulks.
    #[default]
    Resp2,
    /// RESP3, after `HELLO 3`.
    Resp3,
}
