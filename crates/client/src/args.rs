//! Reading arguments back out of an encoded command.
//!
//! Commands reach the router already encoded by [`Cmd`](crate::Cmd) (one allocation, done
//! by the caller). The router needs the name and the keys; walking the RESP array in place
//! gives them as byte ranges of the encoded buffer, with no copy and no allocation, and the
//! same ranges let a multi-key command be cut into per-slot commands. `Cmd` reads its own
//! arguments back with it too (a blocking command's timeout, a proxy's encoded request).

use std::ops::Range;

/// The arguments of one encoded command (`*<n>\r\n` then `n` bulk strings).
#[derive(Debug, Clone)]
pub(crate) struct Args<'a> {
    bytes: &'a [u8],
    pos: usize,
    left: usize,
}

impl<'a> Args<'a> {
    /// Starts reading `bytes`; `None` if they are not one RESP array of bulk strings.
    pub(crate) fn new(bytes: &'a [u8]) -> Option<Args<'a>> {
        if bytes.first() != Some(&b'*') {
            return None;
        }
        let (count, pos) = number(bytes, 1)?;
        Some(Args {
            bytes,
            pos,
            left: count,
        })
    }

    /// The `count` bulk strings at the start of `bytes`, without an array header (a
    /// command's arguments as [`Cmd`](crate::Cmd) keeps them).
    pub(crate) fn bulks(bytes: &'a [u8], count: usize) -> Args<'a> {
        Args {
            bytes,
            pos: 0,
            left: count,
        }
    }

    /// Where the next argument starts (after the header, before any is read): what a
    /// caller checks against the length to know nothing follows the last argument.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Arguments not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.left
    }

    /// The next argument's range in the encoded bytes.
    pub(crate) fn next_range(&mut self) -> Option<Range<usize>> {
        if self.left == 0 || self.bytes.get(self.pos) != Some(&b'$') {
            return None;
        }
        let (len, start) = number(self.bytes, self.pos + 1)?;
        let end = start.checked_add(len)?;
        if self.bytes.get(end..end.checked_add(2)?) != Some(b"\r\n") {
            return None;
        }
        self.pos = end + 2;
        self.left -= 1;
        Some(start..end)
    }

    /// Every remaining argument's range.
    pub(crate) fn ranges(mut self) -> Vec<Range<usize>> {
        let mut out = Vec::with_capacity(self.left);
        while let Some(r) = self.next_range() {
            out.push(r);
        }
        out
    }
}

impl<'a> Iterator for Args<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let range = self.next_range()?;
        self.bytes.get(range)
    }
}

/// Parses a decimal length at `at`, up to CRLF; returns it and the index after the CRLF.
/// Read as Redis reads a header (`string2ll`, no sign): digits without a leading zero,
/// `0` alone excepted, so a proxy never forwards a header Redis would refuse.
fn number(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut n: usize = 0;
    let mut i = at;
    loop {
        let b = *bytes.get(i)?;
        if b == b'\r' {
            break;
        }
        if !b.is_ascii_digit() || (i > at && n == 0) {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(usize::from(b - b'0'))?;
        i += 1;
    }
    if i == at || bytes.get(i + 1) != Some(&b'\n') {
        return None;
    }
    Some((n, i + 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cmd;

    #[test]
    fn reads_back_what_cmd_wrote() {
        let bytes = Cmd::new("MSET")
            .arg("a")
            .arg(b"\r\n".as_slice())
            .arg("")
            .into_bytes();
        let args: Vec<&[u8]> = Args::new(&bytes).unwrap().collect();
        assert_eq!(args, [&b"MSET"[..], b"a", b"\r\n", b""]);
        assert_eq!(Args::new(&bytes).unwrap().remaining(), 4);
    }

    #[test]
    fn refuses_garbage() {
        assert!(Args::new(b"PING\r\n").is_none());
        // Headers Redis refuses: a leading zero, a sign.
        for bad in [&b"*01\r\n"[..], b"*00\r\n", b"*+1\r\n", b"*-1\r\n"] {
            assert!(Args::new(bad).is_none(), "{bad:?}");
        }
        assert_eq!(Args::new(b"*0\r\n").unwrap().remaining(), 0);
        let mut args = Args::new(b"*1\r\n$03\r\nGET\r\n").unwrap();
        assert_eq!(args.next(), None);
        assert!(Args::new(b"*x\r\n").is_none());
        let mut args = Args::new(b"*2\r\n$3\r\nGET\r\n$5\r\nab").unwrap();
        assert_eq!(args.next(), Some(&b"GET"[..]));
        assert_eq!(args.next(), None);
    }
}
