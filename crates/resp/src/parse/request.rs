//! The server's request decoder: multibulk commands (`*3\r\n$3\r\nSET\r\n...`) and inline
//! commands (`SET a "b c"\n`), accepted and rejected exactly as Redis's
//! `processMultibulkBuffer` and `processInlineBuffer` do, with the same error texts.
//!
//! It is resumable: a large MSET arriving in many reads is parsed once, argument by
//! argument, each argument split off the read buffer without copying.

use bytes::{Buf, Bytes, BytesMut};

use crate::parse::find::find_byte;
use crate::parse::{inline, number};
use crate::{Limits, ProtocolError};

/// Decodes client requests into argument vectors, keeping its place between calls.
///
/// Like Redis: a request starting with `*` is a multibulk of bulk strings; anything else
/// is an inline line, split with `redis-cli` quoting. Empty lines, `*0` and negative
/// counts are skipped. Like [`crate::Decoder`], it consumes what it has read even when it
/// returns `Ok(None)`. After an error, reply `-ERR <error>` and close the connection.
///
/// ```
/// use bytes::BytesMut;
/// use redline_resp::RequestDecoder;
///
/// let mut decoder = RequestDecoder::default();
/// let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n\r\nSET a \"b c\"\r\n"[..]);
/// assert_eq!(decoder.decode(&mut buf).unwrap().unwrap(), ["GET", "k"]);
/// assert_eq!(decoder.decode(&mut buf).unwrap().unwrap(), ["SET", "a", "b c"]);
/// assert_eq!(decoder.decode(&mut buf).unwrap(), None);
/// ```
#[derive(Debug, Default)]
pub struct RequestDecoder {
    limits: Limits,
    /// Arguments of the multibulk being read, or of the command [`Self::next_command`]
    /// returned last (then `returned` is set). Its allocation serves command after
    /// command.
    args: Vec<Bytes>,
    returned: bool,
    /// Their bytes, summed.
    args_len: usize,
    /// Bulks still expected by that multibulk; 0 between commands.
    remaining: usize,
    /// The length of the next bulk once its `$<len>` line has been read.
    bulk_len: Option<usize>,
    /// The client has not authenticated and the server requires it: Redis's much smaller
    /// bounds apply, so an anonymous peer cannot make the server buffer a large request.
    unauthenticated: bool,
}

/// Most arguments a request from an unauthenticated client may claim (Redis's bound).
const UNAUTHENTICATED_MAX_ARGS: i64 = 10;
/// Longest argument an unauthenticated client may send (Redis's bound).
const UNAUTHENTICATED_MAX_BULK: usize = 16 * 1024;

/// Arguments preallocated for a multibulk, whatever count it claims: Redis's own cap.
const MAX_PREALLOCATED_ARGS: usize = 1024;

/// A vector of arguments larger than this is not kept for the next command (a client
/// that sent one MSET of a million keys does not keep 32 MB of argument slots).
const KEPT_ARGS_CAPACITY: usize = 1024;

/// Most arguments a command read in one pass may have (see `whole_multibulk`).
const WHOLE_MAX_ARGS: usize = 16;

/// Longest header line `plain_length` reads: a type byte, 18 digits, CR and LF.
const MAX_PLAIN_HEADER: usize = 21;

/// Reads a length at `at`, up to the CR ending its line, when it is written plainly:
/// `0`, or 1 to 18 digits without a leading zero (what `parse_i64` reads the same way,
/// none of them negative), with the byte after the CR (taken as LF) already received.
/// Returns the length and where the next line starts; `None` for anything else.
#[inline]
fn plain_length(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let digits = bytes.get(at..)?;
    let first = *digits.first()?;
    if first == b'0' {
        return (digits.get(1) == Some(&b'\r') && digits.len() > 2).then_some((0, at + 3));
    }
    if !first.is_ascii_digit() {
        return None;
    }
    let mut value = u64::from(first - b'0');
    // At most 18 digits: the CR is at index 18 or before.
    let end = digits.len().min(MAX_PLAIN_HEADER - 2);
    let mut i = 1;
    while i < end {
        let byte = digits[i];
        if byte == b'\r' {
            return (i + 1 < digits.len())
                .then(|| usize::try_from(value).ok().map(|v| (v, at + i + 2)))
                .flatten();
        }
        if !byte.is_ascii_digit() {
            return None;
        }
        value = value * 10 + u64::from(byte - b'0');
        i += 1;
    }
    None
}

impl RequestDecoder {
    /// A decoder enforcing `limits` (`max_array_len`, `max_bulk_len`, `max_inline_len`;
    /// requests have no nesting).
    pub fn new(limits: Limits) -> Self {
        RequestDecoder {
            limits,
            args: Vec::new(),
            returned: false,
            args_len: 0,
            remaining: 0,
            bulk_len: None,
            unauthenticated: false,
        }
    }

    /// Applies, or lifts, the bounds Redis sets on requests from clients that have not
    /// authenticated while a password is required: at most 10 arguments of at most
    /// 16 KiB each, anything larger a protocol error. The server sets it before each
    /// request; it takes effect at the next `*` or `$` line.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use redline_resp::{ProtocolError, RequestDecoder};
    ///
    /// let mut decoder = RequestDecoder::default();
    /// decoder.set_unauthenticated(true);
    /// let mut buf = BytesMut::from(&b"*100\r\n"[..]);
    /// assert_eq!(decoder.decode(&mut buf), Err(ProtocolError::UnauthenticatedMultibulkLength));
    /// ```
    pub fn set_unauthenticated(&mut self, unauthenticated: bool) {
        self.unauthenticated = unauthenticated;
    }

    /// Changes the longest bulk argument accepted (`proto-max-bulk-len`, which a server
    /// may change while the connection is open); it applies from the next `$` line.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use redline_resp::{Limits, ProtocolError, RequestDecoder};
    ///
    /// let mut decoder = RequestDecoder::new(Limits { max_bulk_len: 4, ..Limits::DEFAULT });
    /// decoder.set_max_bulk_len(8);
    /// let mut buf = BytesMut::from(&b"*1\r\n$6\r\nfoobar\r\n"[..]);
    /// assert_eq!(decoder.decode(&mut buf).unwrap().unwrap(), ["foobar"]);
    /// decoder.set_max_bulk_len(2);
    /// let mut buf = BytesMut::from(&b"*1\r\n$6\r\nfoobar\r\n"[..]);
    /// assert_eq!(decoder.decode(&mut buf), Err(ProtocolError::InvalidBulkLength));
    /// ```
    pub fn set_max_bulk_len(&mut self, max_bulk_len: usize) {
        self.limits.max_bulk_len = max_bulk_len;
    }

    /// The length of the bulk argument being received, once its `$<len>` line was read
    /// and until its last byte arrives: the server sizes its read buffer for a large one
    /// at once, as Redis does, instead of growing it read after read.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use redline_resp::RequestDecoder;
    ///
    /// let mut decoder = RequestDecoder::default();
    /// let mut buf = BytesMut::from(&b"*2\r\n$3\r\nSET\r\n$100000\r\nvvv"[..]);
    /// assert_eq!(decoder.decode(&mut buf).unwrap(), None);
    /// assert_eq!(decoder.pending_bulk(), Some(100_000));
    /// assert_eq!(decoder.pending_args_len(), 3);
    /// ```
    pub fn pending_bulk(&self) -> Option<usize> {
        self.bulk_len.filter(|_| self.remaining > 0)
    }

    /// Bytes of the arguments of an incomplete command already split off the buffer
    /// (Redis's `argv-mem` of a client whose command is still arriving).
    pub fn pending_args_len(&self) -> usize {
        self.args_len
    }

    /// Reads the next command from `buf`: its arguments, never empty. `Ok(None)` means
    /// `buf` holds no more whole commands (call again after the next read).
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        self.release_returned();
        Ok(self.fill(buf)?.then(|| std::mem::take(&mut self.args)))
    }

    /// As [`Self::decode`], but lends the arguments instead of handing over a new vector
    /// per command: the decoder keeps one and refills it at the next call. The server's
    /// connections read this way.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use redline_resp::RequestDecoder;
    ///
    /// let mut decoder = RequestDecoder::default();
    /// let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n"[..]);
    /// assert_eq!(decoder.next_command(&mut buf).unwrap().unwrap(), ["GET", "k"]);
    /// assert_eq!(decoder.next_command(&mut buf).unwrap().unwrap(), ["PING"]);
    /// assert_eq!(decoder.next_command(&mut buf).unwrap(), None);
    /// ```
    pub fn next_command(&mut self, buf: &mut BytesMut) -> Result<Option<&[Bytes]>, ProtocolError> {
        self.release_returned();
        if self.fill(buf)? {
            self.returned = true;
            Ok(Some(&self.args))
        } else {
            Ok(None)
        }
    }

    /// Drops the arguments lent by [`Self::next_command`], keeping their vector unless
    /// a command with many arguments left it large. The next call does it too; a caller
    /// that stops reading for a while (a blocked or paused client) calls this, so the
    /// arguments do not keep the read buffer they were sliced from allocated.
    pub fn release_returned(&mut self) {
        if std::mem::take(&mut self.returned) {
            if self.args.capacity() > KEPT_ARGS_CAPACITY {
                self.args = Vec::new();
            } else {
                self.args.clear();
            }
        }
    }

    /// Reads the next whole command into `args`; false when `buf` holds none yet.
    fn fill(&mut self, buf: &mut BytesMut) -> Result<bool, ProtocolError> {
        if self.remaining == 0 && self.whole_multibulk(buf) {
            return Ok(true);
        }
        while self.remaining == 0 {
            let Some(&first) = buf.first() else {
                return Ok(false);
            };
            if first != b'*' {
                match self.inline(buf)? {
                    Some(args) if args.is_empty() => continue,
                    Some(args) => {
                        self.args = args;
                        return Ok(true);
                    }
                    None => return Ok(false),
                }
            }
            if !self.multibulk_header(buf)? {
                return Ok(false);
            }
        }
        while self.remaining > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => match self.bulk_header(buf)? {
                    Some(len) => len,
                    None => return Ok(false),
                },
            };
            // The two bytes after the payload are skipped unchecked, as Redis does.
            let Some(used) = len.checked_add(2).filter(|&used| used <= buf.len()) else {
                return Ok(false);
            };
            let mut arg = buf.split_to(used).freeze();
            arg.truncate(len);
            self.args.push(arg);
            self.args_len += len;
            self.bulk_len = None;
            self.remaining -= 1;
        }
        self.args_len = 0;
        Ok(true)
    }

    /// The common case, read in one pass: a multibulk of at most [`WHOLE_MAX_ARGS`]
    /// arguments already whole in `buf`, with plain lengths. Its headers are read in
    /// place and the command is split off the buffer once, its arguments sliced from
    /// it, instead of advancing the buffer header by header (a third of the decoder's
    /// instructions per GET). Anything else (a partial command, a length Redis would
    /// refuse or reads differently, the unauthenticated bounds) returns false with
    /// `buf` untouched, and the header-by-header path reads it and reports its errors.
    fn whole_multibulk(&mut self, buf: &mut BytesMut) -> bool {
        if self.unauthenticated || self.limits.max_inline_len < MAX_PLAIN_HEADER {
            return false;
        }
        let bytes = &buf[..];
        if bytes.first() != Some(&b'*') {
            return false;
        }
        let Some((count, mut at)) = plain_length(bytes, 1) else {
            return false;
        };
        if count == 0 || count > WHOLE_MAX_ARGS || count > self.limits.max_array_len {
            return false;
        }
        let mut spans = [(0, 0); WHOLE_MAX_ARGS];
        for span in &mut spans[..count] {
            if bytes.get(at) != Some(&b'$') {
                return false;
            }
            let Some((len, start)) = plain_length(bytes, at + 1) else {
                return false;
            };
            // The two bytes after the payload are skipped unchecked, as Redis does.
            match start.checked_add(len).and_then(|end| end.checked_add(2)) {
                Some(next) if len <= self.limits.max_bulk_len && next <= bytes.len() => {
                    *span = (start, len);
                    at = next;
                }
                _ => return false,
            }
        }
        let command = buf.split_to(at).freeze();
        self.args.reserve(count);
        let (last, rest) = spans[..count].split_last().unwrap_or((&(0, 0), &[]));
        for &(start, len) in rest {
            self.args.push(command.slice(start..start + len));
        }
        // The last argument takes the command's own handle: one reference count fewer.
        let mut arg = command;
        arg.advance(last.0);
        arg.truncate(last.1);
        self.args.push(arg);
        true
    }

    /// Reads `*<count>\r\n`. Returns false if the line is incomplete; a count of zero or
    /// less is consumed and leaves `remaining` at 0 (the caller moves on).
    fn multibulk_header(&mut self, buf: &mut BytesMut) -> Result<bool, ProtocolError> {
        let Some(cr) = find_cr(
            buf,
            self.limits.max_inline_len,
            ProtocolError::TooBigMbulkCount,
        )?
        else {
            return Ok(false);
        };
        let count = match number::parse_i64(&buf[1..cr]) {
            Some(count)
                if count <= i64::try_from(self.limits.max_array_len).unwrap_or(i64::MAX) =>
            {
                count
            }
            _ => return Err(ProtocolError::InvalidMultibulkLength),
        };
        if self.unauthenticated && count > UNAUTHENTICATED_MAX_ARGS {
            return Err(ProtocolError::UnauthenticatedMultibulkLength);
        }
        // Like Redis, the byte after CR is taken to be LF without looking.
        buf.advance(cr + 2);
        if let Ok(count) = usize::try_from(count) {
            self.remaining = count;
            self.args.reserve(count.min(MAX_PREALLOCATED_ARGS));
        }
        Ok(true)
    }

    /// Reads `$<len>\r\n` and remembers the length; `None` if the line is incomplete.
    fn bulk_header(&mut self, buf: &mut BytesMut) -> Result<Option<usize>, ProtocolError> {
        let Some(cr) = find_cr(
            buf,
            self.limits.max_inline_len,
            ProtocolError::TooBigBulkCount,
        )?
        else {
            return Ok(None);
        };
        if buf[0] != b'$' {
            return Err(ProtocolError::ExpectedDollar(buf[0]));
        }
        let len = number::parse_i64(&buf[1..cr])
            .and_then(|len| usize::try_from(len).ok())
            .filter(|&len| len <= self.limits.max_bulk_len)
            .ok_or(ProtocolError::InvalidBulkLength)?;
        if self.unauthenticated && len > UNAUTHENTICATED_MAX_BULK {
            return Err(ProtocolError::UnauthenticatedBulkLength);
        }
        buf.advance(cr + 2);
        self.bulk_len = Some(len);
        Ok(Some(len))
    }

    /// Reads one inline line (ending in LF, CRLF accepted) and splits it; an empty result
    /// is a blank line the caller skips. `None` if the line is incomplete.
    ///
    /// A NUL byte before the line's LF hides the LF, as in Redis, which looks for it with
    /// `strchr`: such a line is never complete, and fails only once it passes the inline
    /// limit. So a TLS handshake sent to a plain port (binary, with NULs) gets no reply and
    /// the client times out, as against Redis, instead of reading an error reply as TLS.
    ///
    /// The limit is where Redis's reads put it (see [`inline_limit`]): a line is taken
    /// when its LF is within that many bytes, and fails once that many have come without
    /// one, however the stream was chunked.
    fn inline(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let limit = inline_limit(self.limits.max_inline_len);
        let window = limit.min(buf.len());
        let lf = memchr::memchr2(b'\n', 0, &buf[..window]).filter(|&at| buf[at] == b'\n');
        let Some(lf) = lf else {
            return if buf.len() >= limit {
                Err(ProtocolError::TooBigInlineRequest)
            } else {
                Ok(None)
            };
        };
        let end = if lf > 0 && buf[lf - 1] == b'\r' {
            lf - 1
        } else {
            lf
        };
        let args = inline::split_args(&buf[..end]).ok_or(ProtocolError::UnbalancedQuotes)?;
        buf.advance(lf + 1);
        Ok(Some(args))
    }
}

/// How far an inline line may run before its newline: `max_inline_len` and a quarter.
///
/// Redis reads a client's input 16 KB at a time (`PROTO_IOBUF_LEN`, a quarter of its
/// `PROTO_INLINE_MAX_SIZE`) and fails an inline line only when a read leaves more than
/// 64 KB without a newline: a line sent whole is read in pieces, the fifth of which
/// ends at 80 KB, so lines whose newline comes within 80 KB are taken (a 72 KB `LPUSH`
/// typed inline is; by hand it took 81,900 bytes and refused 81,910), and longer ones
/// fail. A smaller configured limit keeps the same proportion.
fn inline_limit(max_inline_len: usize) -> usize {
    max_inline_len.saturating_add(max_inline_len / 4)
}

/// Finds the CR ending a `*`/`$` header line, as Redis does: the first CR, with one more
/// byte (taken as LF) already received, and no NUL before it. Only the first `max + 1`
/// bytes are searched, so a line too long is `too_long` however the stream was chunked.
fn find_cr(
    buf: &[u8],
    max: usize,
    too_long: ProtocolError,
) -> Result<Option<usize>, ProtocolError> {
    let window = max.saturating_add(1).min(buf.len());
    match find_byte(b'\r', &buf[..window]) {
        // Redis looks for the CR with `strchr`, which stops at a NUL: one before the CR
        // hides it (see `inline`). Headers are a few bytes; the whole-command path,
        // which reads most of them, never comes here.
        Some(cr) if memchr::memchr(0, &buf[..cr]).is_some() => {
            if buf.len() > max {
                Err(too_long)
            } else {
                Ok(None)
            }
        }
        Some(cr) if cr + 1 < buf.len() => Ok(Some(cr)),
        Some(_) => Ok(None),
        None if buf.len() > max => Err(too_long),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8]) -> Result<Vec<Vec<Bytes>>, ProtocolError> {
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::from(input);
        let mut commands = Vec::new();
        while let Some(args) = decoder.decode(&mut buf)? {
            commands.push(args);
        }
        Ok(commands)
    }

    #[test]
    fn multibulk_and_inline_pipeline() {
        let commands = decode_all(
            b"*1\r\n$4\r\nPING\r\nECHO hi\n\r\n*0\r\n*-7\r\n*2\r\n$3\r\nGET\r\n$0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(
            commands,
            vec![vec!["PING"], vec!["ECHO", "hi"], vec!["GET", ""]]
        );
    }

    #[test]
    fn hostile_count_does_not_preallocate() {
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::from(&b"*2147483647\r\n"[..]);
        assert_eq!(decoder.decode(&mut buf), Ok(None));
        assert!(decoder.args.capacity() <= MAX_PREALLOCATED_ARGS);
        assert_eq!(decoder.remaining, 2_147_483_647);
    }

    #[test]
    fn unauthenticated_bounds_are_redis_s() {
        let decode = |input: &[u8]| {
            let mut decoder = RequestDecoder::default();
            decoder.set_unauthenticated(true);
            decoder
                .decode(&mut BytesMut::from(input))
                .map(|c| c.is_some())
        };
        let ten = b"*10\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n\
            $1\r\na\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n";
        assert_eq!(decode(ten), Ok(true));
        assert_eq!(
            decode(b"*11\r\n"),
            Err(ProtocolError::UnauthenticatedMultibulkLength)
        );
        assert_eq!(decode(b"*1\r\n$16384\r\n"), Ok(false));
        assert_eq!(
            decode(b"*1\r\n$16385\r\n"),
            Err(ProtocolError::UnauthenticatedBulkLength)
        );
        // Lifted once the client authenticates.
        let mut decoder = RequestDecoder::default();
        decoder.set_unauthenticated(true);
        decoder.set_unauthenticated(false);
        assert_eq!(
            decoder.decode(&mut BytesMut::from(&b"*100\r\n"[..])),
            Ok(None)
        );
    }

    /// A line longer than 64 KB whose newline comes within 80 KB is taken, whole or in
    /// pieces; 80 KB without a newline fail (see [`inline_limit`]).
    #[test]
    fn inline_lines_are_taken_up_to_where_redis_reads_them() {
        let mut decoder = RequestDecoder::default();
        let arg = vec![b'a'; 72 * 1024];
        let mut line = b"LPUSH k ".to_vec();
        line.extend_from_slice(&arg);
        line.extend_from_slice(b"\r\n");
        let mut buf = BytesMut::new();
        for piece in line.chunks(5000) {
            buf.extend_from_slice(piece);
            if buf.len() < line.len() {
                assert_eq!(decoder.decode(&mut buf), Ok(None));
            }
        }
        let args = decoder.decode(&mut buf).unwrap().unwrap();
        assert_eq!(args.len(), 3);
        assert_eq!(args[2].len(), arg.len());
        let mut too_long = BytesMut::from(&vec![b'a'; 80 * 1024][..]);
        assert_eq!(
            decoder.decode(&mut too_long),
            Err(ProtocolError::TooBigInlineRequest)
        );
        let mut late_newline = BytesMut::from(&vec![b'a'; 90 * 1024][..]);
        late_newline.extend_from_slice(b"\r\n");
        assert_eq!(
            decoder.decode(&mut late_newline),
            Err(ProtocolError::TooBigInlineRequest)
        );
    }

    /// Redis finds an inline line's end with `strchr`, which stops at a NUL: a NUL
    /// before the LF leaves the line incomplete until it passes the inline limit, while
    /// one after the LF (in the next line) does not matter.
    #[test]
    fn a_nul_before_the_newline_hides_it() {
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::from(&b"\x16\x03\x01 \x00\xa5\r\nPING\r\n"[..]);
        assert_eq!(decoder.decode(&mut buf), Ok(None));
        assert_eq!(buf.len(), 14, "nothing consumed");
        buf.extend_from_slice(&vec![b'x'; inline_limit(decoder.limits.max_inline_len)]);
        assert_eq!(
            decoder.decode(&mut buf),
            Err(ProtocolError::TooBigInlineRequest)
        );
        // The same for the CR of a `*` or `$` header, which Redis finds the same way.
        for header in [
            &b"*1\x00\r\n"[..],
            b"*1\r\n$4\x00\r\nPING\r\n",
            b"*1\r\n+\x00\r\n",
        ] {
            let mut decoder = RequestDecoder::default();
            let mut buf = BytesMut::from(header);
            assert_eq!(decoder.decode(&mut buf), Ok(None), "{header:?}");
        }
        assert_eq!(
            decode_all(b"PING\r\n\x00"),
            Ok(vec![vec![Bytes::from("PING")]])
        );
    }

    #[test]
    fn argument_shares_the_read_buffer() {
        let mut buf = BytesMut::from(&b"*1\r\n$5\r\nhello\r\n"[..]);
        let start = buf.as_ptr() as usize;
        let args = RequestDecoder::default().decode(&mut buf).unwrap().unwrap();
        assert_eq!(args[0].as_ptr() as usize, start + 8);
    }
}
