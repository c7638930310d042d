//! Errors commands answer with, in Redis 7.0's exact words, and small reply helpers.
//!
//! A handler returns `Err` only before it has written anything, so the dispatcher can
//! write the error as the whole reply.

use bytes::BytesMut;
use redline_resp::{encode, Protocol};

use crate::cstr::c_string;

/// An error reply (the text after `-`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdError {
    /// A fixed message.
    Static(&'static str),
    /// A message with details.
    Owned(String),
    /// A message quoting client bytes as they are (not necessarily UTF-8).
    Bytes(Vec<u8>),
}

/// What a handler returns.
pub type CmdResult = Result<(), CmdError>;

impl CmdError {
    /// The error line without the leading `-`.
    pub fn text(&self) -> &[u8] {
        match self {
            CmdError::Static(s) => s.as_bytes(),
            CmdError::Owned(s) => s.as_bytes(),
            CmdError::Bytes(b) => b,
        }
    }
}

/// `WRONGTYPE`.
pub const WRONG_TYPE: CmdError =
    CmdError::Static("WRONGTYPE Operation against a key holding the wrong kind of value");
/// An argument that should be an integer.
pub const NOT_INTEGER: CmdError = CmdError::Static("ERR value is not an integer or out of range");
/// An argument that should be a float.
pub const NOT_FLOAT: CmdError = CmdError::Static("ERR value is not a valid float");
/// Unknown or misplaced options.
pub const SYNTAX: CmdError = CmdError::Static("ERR syntax error");
/// INCR family overflow.
pub const OVERFLOW: CmdError = CmdError::Static("ERR increment or decrement would overflow");
/// SELECT / MOVE / SWAPDB index.
pub const DB_INDEX: CmdError = CmdError::Static("ERR DB index is out of range");
/// RENAME of a missing key and the like.
pub const NO_SUCH_KEY: CmdError = CmdError::Static("ERR no such key");
/// Index errors (LSET, LINDEX...).
pub const INDEX_OUT_OF_RANGE: CmdError = CmdError::Static("ERR index out of range");
/// Strings that would exceed proto-max-bulk-len.
pub const STRING_TOO_LONG: CmdError =
    CmdError::Static("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
/// Commands refused before AUTH.
pub const NOAUTH: CmdError = CmdError::Static("NOAUTH Authentication required.");
/// A wrong password.
pub const WRONGPASS: CmdError =
    CmdError::Static("WRONGPASS invalid username-password pair or user is disabled.");
/// A negative count where only positive ones make sense.
pub const MUST_BE_POSITIVE: CmdError =
    CmdError::Static("ERR value is out of range, must be positive");

/// `ERR wrong number of arguments for '<name>' command`.
pub fn wrong_arity(name: &str) -> CmdError {
    CmdError::Owned(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// `ERR unknown subcommand '<sub>'. Try <PARENT> HELP.`
pub fn unknown_subcommand(parent: &str, sub: &[u8]) -> CmdError {
    quoting(
        "ERR unknown subcommand '",
        sub,
        128,
        &format!("'. Try {} HELP.", parent.to_ascii_uppercase()),
    )
}

/// `ERR unknown subcommand or wrong number of arguments for '<sub>'. Try <PARENT> HELP.`
/// (Redis's `addReplySubcommandSyntaxError`).
pub fn subcommand_syntax(parent: &str, sub: &[u8]) -> CmdError {
    quoting(
        "ERR unknown subcommand or wrong number of arguments for '",
        sub,
        128,
        &format!("'. Try {} HELP.", parent.to_ascii_uppercase()),
    )
}

/// `ERR unknown command '<name>', with args beginning with: '<a>' '<b>' ` as Redis
/// builds it: each argument quoted and followed by a space, while the list is under 128
/// characters, the last one clipped to fit.
pub fn unknown_command<A: AsRef<[u8]>>(args: &[A]) -> CmdError {
    let name = args.first().map_or(&b""[..], |a| a.as_ref());
    // Redis's `'%.*s' ` per argument, the room being what the list has left of 128.
    let mut list = Vec::new();
    for arg in args.iter().skip(1) {
        if list.len() >= 128 {
            break;
        }
        let room = 128 - list.len();
        list.push(b'\'');
        list.extend(c_string(arg.as_ref()).iter().take(room));
        list.extend_from_slice(b"' ");
    }
    error_from(&[
        Piece::Text("ERR unknown command '"),
        Piece::Arg(name, 128),
        Piece::Text("', with args beginning with: "),
        Piece::Arg(&list, usize::MAX),
    ])
}

/// A piece of an error message built as Redis's `addReplyErrorFormat` builds one.
#[derive(Debug, Clone, Copy)]
pub enum Piece<'a> {
    /// Fixed text.
    Text(&'a str),
    /// A client argument printed with `%s` (`usize::MAX`) or `%.<max>s`: its bytes as
    /// they are (not necessarily UTF-8) up to the first NUL, at most `max` of them.
    Arg(&'a [u8], usize),
}

/// An error built from `pieces` as Redis's `addReplyErrorFormat` builds it: CR and LF at
/// the end of the message dropped, those inside made spaces, so a client's bytes can
/// never end the error line early.
pub fn error_from(pieces: &[Piece<'_>]) -> CmdError {
    let mut text = Vec::new();
    for piece in pieces {
        match *piece {
            Piece::Text(t) => text.extend_from_slice(t.as_bytes()),
            Piece::Arg(arg, max) => text.extend(c_string(arg).iter().take(max)),
        }
    }
    while text.last().is_some_and(|&c| c == b'\r' || c == b'\n') {
        text.pop();
    }
    for c in &mut text {
        if *c == b'\r' || *c == b'\n' {
            *c = b' ';
        }
    }
    CmdError::Bytes(text)
}

/// An error quoting one client argument between two pieces of text (see [`error_from`]).
pub fn quoting(prefix: &str, arg: &[u8], max: usize, suffix: &str) -> CmdError {
    error_from(&[
        Piece::Text(prefix),
        Piece::Arg(arg, max),
        Piece::Text(suffix),
    ])
}

/// `+OK`.
#[inline]
pub fn ok(out: &mut BytesMut) {
    out.extend_from_slice(b"+OK\r\n");
}

/// Writes a double as Redis 7.0 does (`%.17g`): a bulk in RESP2, a double in RESP3.
pub fn double(out: &mut BytesMut, proto: Protocol, value: f64) {
    let text = super::float::fmt_g17(value);
    encode::write_double_text_reply(out, proto, text.as_bytes());
}

/// A `HELP` reply: one status line per line of text, as Redis's `addReplyHelp`.
pub fn help(out: &mut bytes::BytesMut, lines: &[&str]) {
    redline_resp::encode::write_array_len(out, lines.len());
    for line in lines {
        redline_resp::encode::write_simple(out, line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_command_text() {
        let long = "x".repeat(140);
        let e = unknown_command(&["foo", "a", "b\nc", long.as_str()]);
        let expected = format!(
            "ERR unknown command 'foo', with args beginning with: 'a' 'b c' '{}' ",
            "x".repeat(118)
        );
        assert_eq!(e.text(), expected.as_bytes());
        assert_eq!(
            unknown_command(&["foo"]).text(),
            b"ERR unknown command 'foo', with args beginning with: "
        );
    }

    #[test]
    fn quoted_arguments_keep_their_bytes() {
        let e = quoting("ERR Unsupported option ", b"\xff\xfe", usize::MAX, "");
        assert_eq!(e.text(), b"ERR Unsupported option \xff\xfe");
        // C's %s stops at a NUL; %.3s after three bytes.
        let e = quoting("ERR x '", b"ab\0cd", usize::MAX, "'");
        assert_eq!(e.text(), b"ERR x 'ab'");
        let e = quoting("ERR x '", b"abcdef", 3, "'");
        assert_eq!(e.text(), b"ERR x 'abc'");
        // CR and LF at the end are dropped, the others become spaces.
        let e = quoting("ERR x ", b"a\r\nb\r\n", usize::MAX, "");
        assert_eq!(e.text(), b"ERR x a  b");
    }
}
