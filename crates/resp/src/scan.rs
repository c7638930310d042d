//! Where RESP frames end, without building them, for code that forwards the original
//! bytes and only needs boundaries (to pair each reply with its command) and a frame's
//! first byte: `redline tunnel`'s relays, and the client's raw replies
//! (`ClusterClient::relay`).
//!
//! The scanner is resumable: it keeps its place inside a frame between reads, so a frame
//! arriving in a thousand pieces is scanned once, and an 8 MB bulk costs one length check
//! per read, not a rescan. Headers follow the same grammar and limits as the parser
//! (tests check both agree); nothing is allocated per frame.
//!
//! ```
//! use redline_resp::scan::{Scanner, Side};
//!
//! let mut scanner = Scanner::new(Side::Reply);
//! assert_eq!(scanner.next(b"*2\r\n$3\r\nfoo").unwrap(), None);
//! // The frame ends after `:7`; `+OK` is the next one.
//! assert_eq!(scanner.next(b"*2\r\n$3\r\nfoo\r\n:7\r\n+OK\r\n").unwrap(), Some(17));
//! ```

use std::borrow::Cow;

use bytes::BytesMut;
use thiserror::Error;

use crate::{Limits, RequestDecoder};

/// The bytes are not RESP the scanner accepts. A relay hands them to the decoder, which
/// answers with the exact protocol error, or stops interpreting the connection.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum ScanError {
    /// A type byte RESP does not define (or a non-bulk inside a request).
    #[error("unexpected byte {0:#04x} at the start of a RESP element")]
    Type(u8),
    /// A line without CRLF, a bad number, or a line beyond `max_inline_len`.
    #[error("malformed RESP line")]
    Line,
    /// A length beyond the limits, or a bulk not followed by CRLF.
    #[error("invalid RESP length")]
    Length,
    /// Aggregates nested deeper than `max_depth`.
    #[error("RESP nesting too deep")]
    Depth,
}

/// Which side of the protocol is scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Client requests: multibulks of bulk strings, or inline lines ending in `\n`.
    Request,
    /// Server replies: any RESP2/RESP3 frame.
    Reply,
}

/// Resumable boundary finder for one direction of one connection.
#[derive(Debug)]
pub struct Scanner {
    side: Side,
    limits: Limits,
    /// Bytes of the current frame already scanned.
    pos: usize,
    /// Inside a bulk payload: the offset just past its CRLF.
    payload_end: Option<usize>,
    /// Children still expected by each open aggregate, innermost last.
    open: Vec<u64>,
}

impl Scanner {
    /// A scanner with Redis's own limits ([`Limits::DEFAULT`]).
    pub fn new(side: Side) -> Self {
        Scanner::with_limits(side, Limits::DEFAULT)
    }

    /// A scanner that refuses what a [`Decoder`](crate::Decoder) with `limits` refuses:
    /// longer bulks and lines, larger counts, deeper nesting.
    pub fn with_limits(side: Side, limits: Limits) -> Self {
        Scanner {
            side,
            limits,
            pos: 0,
            payload_end: None,
            open: Vec::new(),
        }
    }

    /// True while the scanner holds its place inside a frame (between reads).
    pub fn in_frame(&self) -> bool {
        self.pos > 0
    }

    /// Inside a bulk not yet received in full: how many bytes of the frame it takes to
    /// complete it (its payload and CRLF included), so a reader can make room for all of
    /// it at once.
    ///
    /// ```
    /// use redline_resp::scan::{Scanner, Side};
    ///
    /// let mut scanner = Scanner::new(Side::Request);
    /// let partial = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nxx";
    /// assert_eq!(scanner.next(partial), Ok(None));
    /// assert_eq!(scanner.bulk_end(), Some(partial.len() - 2 + 100_002));
    /// ```
    pub fn bulk_end(&self) -> Option<usize> {
        self.payload_end
    }

    /// Forgets the frame in progress: the next call starts at `buf`'s first byte.
    pub fn reset(&mut self) {
        self.pos = 0;
        self.payload_end = None;
        self.open.clear();
    }

    /// `buf` starts at the current frame's first byte and holds everything received since
    /// (it only grows between calls until a frame is reported). Returns the frame's length
    /// once it is complete, and then starts over for the frame after it.
    pub fn next(&mut self, buf: &[u8]) -> Result<Option<usize>, ScanError> {
        loop {
            if let Some(end) = self.payload_end {
                if buf.len() < end {
                    return Ok(None);
                }
                if &buf[end - 2..end] != b"\r\n" {
                    return Err(ScanError::Length);
                }
                self.payload_end = None;
                self.pos = end;
                if let Some(len) = self.element_done() {
                    return Ok(Some(len));
                }
                continue;
            }
            let Some(&kind) = buf.get(self.pos) else {
                return Ok(None);
            };
            if self.side == Side::Request && self.open.is_empty() && kind != b'*' {
                return inline_len(buf, self.limits.max_inline_len);
            }
            if self.side == Side::Request && !self.open.is_empty() && kind != b'$' {
                return Err(ScanError::Type(kind));
            }
            let Some((line, next)) = line(buf, self.pos, self.limits.max_inline_len)? else {
                return Ok(None);
            };
            match kind {
                b'+' | b'-' | b':' | b',' | b'#' | b'_' | b'(' => self.pos = next,
                b'$' | b'!' | b'=' => {
                    let n = number(line)?;
                    self.pos = next;
                    if let Ok(n) = usize::try_from(n) {
                        // Checked: the limit is the caller's and may be as large as usize.
                        let end = next.checked_add(n).and_then(|e| e.checked_add(2));
                        match end {
                            Some(end) if n <= self.limits.max_bulk_len => {
                                self.payload_end = Some(end);
                                continue;
                            }
                            _ => return Err(ScanError::Length),
                        }
                    }
                    // A null bulk is a reply; in a request Redis refuses it ("invalid
                    // bulk length"), so the decoder must answer it.
                    if n != -1 || self.side == Side::Request {
                        return Err(ScanError::Length);
                    }
                }
                b'*' | b'~' | b'>' | b'%' | b'|' => {
                    let n = number(line)?;
                    self.pos = next;
                    if usize::try_from(n).is_ok_and(|n| n > self.limits.max_array_len) {
                        return Err(ScanError::Length);
                    }
                    let children = match (kind, n) {
                        (_, n) if n < -1 => return Err(ScanError::Length),
                        // Requests: `*0` and `*-1` are complete, empty commands (Redis
                        // skips them); replies: empty or null aggregates.
                        (_, -1 | 0) => 0,
                        (b'%', n) => n.checked_mul(2).ok_or(ScanError::Length)?,
                        // An attribute's pairs, then the value it annotates.
                        (b'|', n) => n
                            .checked_mul(2)
                            .and_then(|c| c.checked_add(1))
                            .ok_or(ScanError::Length)?,
                        (_, n) => n,
                    };
                    if children > 0 {
                        if self.open.len() >= self.limits.max_depth {
                            return Err(ScanError::Depth);
                        }
                        // children > 0 was just checked, so the cast is lossless.
                        self.open.push(children as u64);
                        continue;
                    }
                }
                other => return Err(ScanError::Type(other)),
            }
            if let Some(len) = self.element_done() {
                return Ok(Some(len));
            }
        }
    }

    /// One element ended at `self.pos`: close every aggregate it completes; when none is
    /// left open the frame is complete and the scanner resets for the next one.
    fn element_done(&mut self) -> Option<usize> {
        loop {
            let Some(top) = self.open.last_mut() else {
                let len = self.pos;
                self.pos = 0;
                return Some(len);
            };
            *top -= 1;
            if *top > 0 {
                return None;
            }
            self.open.pop();
        }
    }
}

/// An inline request: everything up to and including `\n`.
fn inline_len(buf: &[u8], max_line: usize) -> Result<Option<usize>, ScanError> {
    match memchr::memchr(b'\n', buf) {
        Some(i) => Ok(Some(i + 1)),
        None if buf.len() > max_line => Err(ScanError::Line),
        None => Ok(None),
    }
}

/// The header line starting at `start` (type byte excluded, CRLF excluded) and the offset
/// after its CRLF; `None` while the line is incomplete.
fn line(buf: &[u8], start: usize, max_line: usize) -> Result<Option<(&[u8], usize)>, ScanError> {
    let rest = &buf[start + 1..];
    // As the decoder: at most `max_line` bytes before the CRLF.
    let window = max_line.saturating_add(2).min(rest.len());
    match crate::parse::find_byte(b'\n', &rest[..window]) {
        Some(i) if i > 0 && rest[i - 1] == b'\r' => Ok(Some((&rest[..i - 1], start + 1 + i + 1))),
        Some(_) => Err(ScanError::Line),
        None if rest.len() >= max_line.saturating_add(2) => Err(ScanError::Line),
        None => Ok(None),
    }
}

/// A header's integer as Redis reads it (`string2ll`): anything else (`+1`, `007`, `-0`)
/// is left to the decoder, which answers with Redis's own protocol error.
fn number(line: &[u8]) -> Result<i64, ScanError> {
    crate::parse_i64(line).ok_or(ScanError::Line)
}

/// One word of a request: borrowed from the frame, or unescaped from an inline line.
pub type Word<'a> = Cow<'a, [u8]>;

/// The command name and first argument of a complete request frame, as sent (not
/// case-folded); `None` for an empty command (`*0`, blank inline line) or one the decoder
/// refuses. A multibulk's words are borrowed from the frame; an inline line is split as
/// the decoder splits it (redis-cli quoting, so `"a b"` is one word), which may unescape.
pub fn command_words(frame: &[u8]) -> Option<(Word<'_>, Option<Word<'_>>)> {
    if frame.first() == Some(&b'*') {
        let max = Limits::DEFAULT.max_inline_len;
        let (count, mut pos) = line(frame, 0, max).ok()??;
        let count = number(count).ok()?;
        let mut words = [None, None];
        for word in words.iter_mut().take(usize::try_from(count).ok()?) {
            let (len, next) = line(frame, pos, max).ok()??;
            let len = usize::try_from(number(len).ok()?).ok()?;
            *word = frame.get(next..next + len);
            pos = next + len + 2;
        }
        return Some((Cow::Borrowed(words[0]?), words[1].map(Cow::Borrowed)));
    }
    // Inline commands are rare (typed by hand): decoding a copy costs nothing that matters.
    let mut line = BytesMut::from(frame);
    let args = RequestDecoder::default().decode(&mut line).ok()??;
    let mut args = args.into_iter().map(|a| Cow::Owned(a.to_vec()));
    Some((args.next()?, args.next()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn headers_redis_refuses_are_left_to_the_decoder() {
        for request in [
            &b"*+1\r\n$4\r\nPING\r\n"[..],
            b"*01\r\n$4\r\nPING\r\n",
            b"*1\r\n$04\r\nPING\r\n",
            b"*1\r\n$-0\r\n\r\n",
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$-1\r\n",
        ] {
            let mut scanner = Scanner::new(Side::Request);
            assert!(
                scanner.next(request).is_err(),
                "{:?}",
                String::from_utf8_lossy(request)
            );
        }
        let mut scanner = Scanner::new(Side::Request);
        assert_eq!(scanner.next(b"*1\r\n$4\r\nPING\r\n").ok(), Some(Some(14)));
    }

    /// Frames of every type, as redis-server sends them.
    const REPLIES: &[&[u8]] = &[
        b"+OK\r\n",
        b"-ERR unknown command\r\n",
        b":-42\r\n",
        b"$5\r\nhello\r\n",
        b"$0\r\n\r\n",
        b"$-1\r\n",
        b"*-1\r\n",
        b"*0\r\n",
        b"*3\r\n$1\r\na\r\n*2\r\n:1\r\n$-1\r\n+x\r\n",
        b"%2\r\n+a\r\n:1\r\n+b\r\n*1\r\n_\r\n",
        b"~2\r\n,3.5\r\n#t\r\n",
        b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\n\r\n\n\r\n",
        b"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n",
        b"=15\r\ntxt:Some string\r\n",
        b"!21\r\nSYNTAX invalid syntax\r\n",
        b"(3492890328409238509324850943850943825024385\r\n",
        b"$11\r\n*1\r\n$1\r\nx\r\n\r\n",
    ];

    fn scan_all(side: Side, input: &[u8], step: usize) -> Vec<usize> {
        let mut scanner = Scanner::new(side);
        let mut out = Vec::new();
        let mut start = 0;
        let mut end = 0;
        while end < input.len() {
            end = (end + step).min(input.len());
            while let Some(len) = scanner.next(&input[start..end]).unwrap() {
                out.push(len);
                start += len;
            }
        }
        out
    }

    #[test]
    fn agrees_with_the_parser_at_every_split() {
        let all: Vec<u8> = REPLIES.concat();
        let want: Vec<usize> = REPLIES.iter().map(|r| r.len()).collect();
        for step in 1..=all.len() {
            assert_eq!(scan_all(Side::Reply, &all, step), want, "step {step}");
        }
        // The parser consumes exactly the same bytes for each frame.
        let mut buf = BytesMut::from(&all[..]);
        for len in want {
            let before = buf.len();
            crate::parse(&mut buf).unwrap().unwrap();
            assert_eq!(before - buf.len(), len);
        }
    }

    #[test]
    fn requests_multibulk_inline_and_empty() {
        let input: &[u8] =
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n\r\n*0\r\ncluster nodes\n*1\r\n$4\r\nPING\r\n";
        for step in 1..=input.len() {
            assert_eq!(
                scan_all(Side::Request, input, step),
                vec![20, 6, 2, 4, 14, 14],
                "step {step}"
            );
        }
    }

    #[test]
    fn rejects_garbage_and_hostile_lengths() {
        for bad in [
            &b"?x\r\n"[..],
            b"$9999999999\r\n",
            b"*9223372036854775807\r\n",
            b"%9223372036854775807\r\n",
            b"$3\r\nabcXY",
            b"*1\r\n+no\r\n",
            b"+x\n",
        ] {
            let mut scanner = Scanner::new(Side::Reply);
            let mut result = Ok(None);
            for _ in 0..3 {
                result = scanner.next(bad);
                if result.is_err() {
                    break;
                }
            }
            if bad.starts_with(b"*1") {
                assert!(Scanner::new(Side::Request).next(bad).is_err());
            } else {
                assert!(result.is_err(), "{bad:?}");
            }
        }
        let deep = b"*1\r\n".repeat(200);
        assert_eq!(Scanner::new(Side::Reply).next(&deep), Err(ScanError::Depth));
        // A count within the limits is no memory hazard: nothing is allocated per child.
        assert_eq!(Scanner::new(Side::Reply).next(b"*2147483647\r\n"), Ok(None));
    }

    #[test]
    fn refuses_what_a_decoder_with_the_same_limits_refuses() {
        let limits = Limits {
            max_bulk_len: 4,
            max_array_len: 2,
            max_depth: 2,
            max_inline_len: 8,
        };
        for (input, err) in [
            (&b"$5\r\nhello\r\n"[..], ScanError::Length),
            (b"*3\r\n:1\r\n:2\r\n:3\r\n", ScanError::Length),
            (b"*1\r\n*1\r\n*1\r\n:1\r\n", ScanError::Depth),
            (b"+0123456789\r\n", ScanError::Line),
        ] {
            let mut scanner = Scanner::with_limits(Side::Reply, limits);
            assert_eq!(scanner.next(input), Err(err), "{input:?}");
            let mut buf = BytesMut::from(input);
            assert!(crate::Decoder::new(limits).decode(&mut buf).is_err());
        }
        let unbounded = Limits {
            max_bulk_len: usize::MAX,
            ..Limits::DEFAULT
        };
        // No length overflows, whatever the limit: beyond i64 the header is refused, up
        // to it the scanner waits for the payload.
        for (header, want) in [
            (format!("${}\r\n", u64::MAX), Err(ScanError::Line)),
            (format!("${}\r\n", i64::MAX), Ok(None)),
        ] {
            let got = Scanner::with_limits(Side::Reply, unbounded).next(header.as_bytes());
            assert_eq!(got, want, "{header:?}");
        }
        let mut scanner = Scanner::with_limits(Side::Reply, limits);
        assert_eq!(scanner.next(b"*2\r\n$4\r\nhell\r\n"), Ok(None));
        assert!(scanner.in_frame());
        scanner.reset();
        assert!(!scanner.in_frame());
        assert_eq!(scanner.next(b"+OK\r\n"), Ok(Some(5)));
    }

    /// Pieces of requests, valid and not: whole commands, headers, digits, signs, line
    /// ends on their own, quotes. Concatenated at random they reach the header forms a
    /// hand-written table misses.
    const PIECES: &[&[u8]] = &[
        b"*",
        b"$",
        b"*1\r\n",
        b"*2\r\n",
        b"$1\r\n",
        b"$3\r\n",
        b"$4\r\n",
        b"*0\r\n",
        b"*-1\r\n",
        b"*-5\r\n",
        b"$2\r\n",
        b"$-1\r\n",
        b"$0\r\n",
        b"GET",
        b"PING",
        b"k",
        b"\r\n",
        b"\r",
        b"\n",
        b"0",
        b"1",
        b"3",
        b"-",
        b"+",
        b" ",
        b"\"",
        b"9999999999",
        b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n",
    ];

    /// Random concatenations of up to `max` of `pieces`.
    fn concatenations(
        pieces: &'static [&'static [u8]],
        max: usize,
    ) -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(proptest::sample::select(pieces), 0..max)
            .prop_map(|chosen| chosen.concat())
    }

    proptest! {
        /// The tunnel forwards a multibulk the scanner accepts as the client's bytes,
        /// without decoding it. So each one must be a request the decoder (Redis's own
        /// rules) accepts whole, or the server would get bytes it refuses, on a
        /// connection other clients share.
        #[test]
        fn scanner_accepts_only_what_the_decoder_accepts(input in concatenations(PIECES, 24)) {
            let mut scanner = Scanner::new(Side::Request);
            if let (Ok(Some(end)), Some(b'*')) = (scanner.next(&input), input.first()) {
                let mut one = BytesMut::from(&input[..end]);
                let alone = RequestDecoder::default().decode(&mut one);
                prop_assert!(alone.is_ok(), "scanner took {:?}, decoder: {:?}",
                    String::from_utf8_lossy(&input[..end]), alone);
                prop_assert!(one.is_empty(), "decoder left {:?}", one);
                if let Ok(Some(args)) = alone {
                    // Routing reads the name and first argument without decoding.
                    prop_assert_eq!(words(&input[..end]), first_two(&args));
                    // Read from the whole stream, the decoder ends the command there too.
                    let mut all = BytesMut::from(&input[..]);
                    let first = RequestDecoder::default().decode(&mut all);
                    prop_assert_eq!(first.ok().flatten(), Some(args));
                    prop_assert_eq!(input.len() - all.len(), end);
                }
            }
        }
    }

    /// Inline words, quoted and escaped as redis-cli's quoting allows, and not.
    const INLINE_WORDS: &[&[u8]] = &[
        b"get",
        b"k",
        b"\"a b\"",
        b"'x'",
        b"\"\"",
        b"\\x41",
        b"\"\\x41\"",
        b"sub\"",
        b"\t",
    ];
    const INLINE_SEPARATORS: &[&[u8]] = &[b" ", b"  ", b"\t"];

    proptest! {
        /// The pinned relay classifies inline commands too (`cluster slots`,
        /// `subscribe ch`): their first two words must be the decoder's first two
        /// arguments.
        #[test]
        fn inline_words_are_the_decoders(
            pieces in proptest::collection::vec(proptest::sample::select(INLINE_WORDS), 1..4),
            sep in proptest::sample::select(INLINE_SEPARATORS),
        ) {
            let mut line = pieces.join(sep);
            line.extend_from_slice(b"\r\n");
            let mut buf = BytesMut::from(&line[..]);
            if let Ok(Some(args)) = RequestDecoder::default().decode(&mut buf) {
                prop_assert_eq!(words(&line), first_two(&args),
                    "{:?}", String::from_utf8_lossy(&line));
            }
        }
    }

    /// Pieces of replies of every RESP2/RESP3 type, valid and not.
    const REPLY_PIECES: &[&[u8]] = &[
        b"+OK\r\n",
        b"-ERR x\r\n",
        b":1\r\n",
        b":-0\r\n",
        b"$1\r\nv\r\n",
        b"$-1\r\n",
        b"$-2\r\n",
        b"*1\r\n",
        b"*2\r\n",
        b"*-1\r\n",
        b"%1\r\n",
        b"~1\r\n",
        b">2\r\n",
        b"|1\r\n",
        b"_\r\n",
        b",1.5\r\n",
        b"#t\r\n",
        b"(12\r\n",
        b"=5\r\ntxt:x\r\n",
        b"!3\r\nERR\r\n",
        b"$",
        b"*",
        b"0",
        b"1",
        b"-",
        b"\r\n",
        b"\n",
        b"x",
    ];

    proptest! {
        /// The pinned relay pairs replies with commands by the scanner's boundaries:
        /// every frame the parser reads must be one frame to the scanner, of the same
        /// length. (The scanner does not check what a simple line holds, `:-0` say; it
        /// only has to end it where the parser does.)
        #[test]
        fn reply_boundaries_are_the_parsers(input in concatenations(REPLY_PIECES, 16)) {
            let mut buf = BytesMut::from(&input[..]);
            if let Ok(Some(_)) = crate::parse(&mut buf) {
                let len = input.len() - buf.len();
                prop_assert_eq!(Scanner::new(Side::Reply).next(&input), Ok(Some(len)),
                    "{:?}", String::from_utf8_lossy(&input[..len]));
            }
        }
    }

    type Words = Option<(Vec<u8>, Option<Vec<u8>>)>;

    fn words(frame: &[u8]) -> Words {
        command_words(frame).map(|(name, sub)| (name.into_owned(), sub.map(Cow::into_owned)))
    }

    fn first_two(args: &[bytes::Bytes]) -> Words {
        Some((args[0].to_vec(), args.get(1).map(|a| a.to_vec())))
    }

    #[test]
    fn command_words_of_both_forms() {
        let word = |w: &[u8]| w.to_vec();
        assert_eq!(
            words(b"*3\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n$1\r\nx\r\n"),
            Some((word(b"CLUSTER"), Some(word(b"NODES"))))
        );
        assert_eq!(words(b"*1\r\n$4\r\nPING\r\n"), Some((word(b"PING"), None)));
        assert_eq!(
            words(b"cluster  slots\r\n"),
            Some((word(b"cluster"), Some(word(b"slots"))))
        );
        assert_eq!(
            words(b"\"subscribe\" 'a b'\r\n"),
            Some((word(b"subscribe"), Some(word(b"a b"))))
        );
        assert_eq!(words(b"*0\r\n"), None);
        assert_eq!(words(b"\r\n"), None);
        assert_eq!(
            words(b"get \"k\r\n"),
            None,
            "unbalanced quotes: the decoder's error"
        );
    }
}
