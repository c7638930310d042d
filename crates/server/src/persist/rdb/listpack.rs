//! Listpacks, the compact encoding Redis 7.0 stores small hashes and sorted sets in, and
//! each node of a list (quicklist): a 6-byte header (total bytes, element count, both
//! little endian), the entries, and an end byte `0xFF`. Each entry is an encoding byte
//! (small integers and short string lengths live in it), the data, and a "backlen" that
//! lets Redis walk backwards.
//!
//! [`entries`] validates a listpack completely (the header's size, every entry and its
//! backlen, the end byte and the count) before anything is used: input comes from
//! clients. [`Writer`] builds one exactly as Redis's `lpAppend` would, integers included.

use super::Corrupt;
use crate::store::listpack_size::{self, backlen};

/// One listpack entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem<'a> {
    /// An integer entry.
    Int(i64),
    /// A string entry.
    Str(&'a [u8]),
}

impl Elem<'_> {
    /// The entry's bytes as Redis reads them (integers as decimal text).
    pub fn to_bytes(self) -> Vec<u8> {
        match self {
            Elem::Int(n) => itoa::Buffer::new().format(n).as_bytes().to_vec(),
            Elem::Str(s) => s.to_vec(),
        }
    }
}

const HEADER: usize = 6;
const EOF: u8 = 0xFF;
/// The count Redis writes when there are too many entries to count in 16 bits.
const UNKNOWN_COUNT: u16 = u16::MAX;

/// Every entry of `lp`, validated.
pub fn entries(lp: &[u8]) -> Result<Vec<Elem<'_>>, Corrupt> {
    entries_checked(lp, true)
}

/// Every entry of `lp`, read forward; the back-lengths and the header's count, which
/// reading forward does not use, are checked only when `deep` (Redis's deep
/// sanitization: its shallow check reads only the header).
pub fn entries_checked(lp: &[u8], deep: bool) -> Result<Vec<Elem<'_>>, Corrupt> {
    let bad = || Corrupt("listpack integrity check failed");
    let header: &[u8; HEADER] = lp
        .get(..HEADER)
        .and_then(|h| h.try_into().ok())
        .ok_or_else(bad)?;
    let total = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let count = u16::from_le_bytes([header[4], header[5]]);
    if total != lp.len() || lp.last() != Some(&EOF) {
        return Err(bad());
    }
    let end = lp.len() - 1;
    let mut out = Vec::with_capacity(usize::from(count).min(end));
    let mut pos = HEADER;
    while pos < end {
        let (elem, size) = entry(&lp[pos..end]).ok_or_else(bad)?;
        pos += size;
        let backlen_size = backlen(size);
        let tail = lp.get(pos..pos + backlen_size).ok_or_else(bad)?;
        if pos + backlen_size > end || (deep && decode_backlen(tail) != Some(size)) {
            return Err(bad());
        }
        pos += backlen_size;
        out.push(elem);
    }
    if deep && count != UNKNOWN_COUNT && usize::from(count) != out.len() {
        return Err(bad());
    }
    Ok(out)
}

/// The entry at the start of `at` and the size of its encoding and data.
fn entry(at: &[u8]) -> Option<(Elem<'_>, usize)> {
    let b = *at.first()?;
    let int = |n: usize| -> Option<i64> {
        let bytes = at.get(1..1 + n)?;
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(bytes);
        // Sign-extend from n bytes.
        let shift = 64 - 8 * n as u32;
        Some((i64::from_le_bytes(v) << shift) >> shift)
    };
    let string = |skip: usize, len: usize| -> Option<(Elem<'_>, usize)> {
        let s = at.get(skip..skip.checked_add(len)?)?;
        Some((Elem::Str(s), skip + len))
    };
    match b {
        0x00..=0x7F => Some((Elem::Int(i64::from(b)), 1)),
        0x80..=0xBF => string(1, usize::from(b & 0x3F)),
        0xC0..=0xDF => {
            let raw = (u16::from(b & 0x1F) << 8) | u16::from(*at.get(1)?);
            // 13-bit two's complement.
            let n = (i64::from(raw) << 51) >> 51;
            Some((Elem::Int(n), 2))
        }
        0xE0..=0xEF => string(2, usize::from(b & 0x0F) << 8 | usize::from(*at.get(1)?)),
        0xF0 => {
            let len = u32::from_le_bytes(at.get(1..5)?.try_into().ok()?);
            string(5, len as usize)
        }
        0xF1 => Some((Elem::Int(int(2)?), 3)),
        0xF2 => Some((Elem::Int(int(3)?), 4)),
        0xF3 => Some((Elem::Int(int(4)?), 5)),
        0xF4 => Some((Elem::Int(int(8)?), 9)),
        _ => None,
    }
}

/// Reads a backlen written left to right: 7 bits per byte, most significant first, every
/// byte but the first flagged with the high bit.
fn decode_backlen(bytes: &[u8]) -> Option<usize> {
    let mut value = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        if (i > 0) != (b & 0x80 != 0) {
            return None;
        }
        value = (value << 7) | usize::from(b & 0x7F);
    }
    Some(value)
}

fn push_backlen(out: &mut Vec<u8>, size: usize) {
    let n = backlen(size);
    for i in (0..n).rev() {
        let bits = ((size >> (7 * i)) & 0x7F) as u8;
        out.push(if i == n - 1 { bits } else { bits | 0x80 });
    }
}

/// Builds a listpack.
#[derive(Debug)]
pub struct Writer {
    buf: Vec<u8>,
    count: usize,
}

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}

impl Writer {
    /// An empty listpack.
    pub fn new() -> Self {
        Writer {
            buf: vec![0; HEADER],
            count: 0,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Size of the finished listpack so far (header, entries, end byte).
    pub fn size(&self) -> usize {
        self.buf.len() + 1
    }

    /// Appends a string, stored as an integer when it is the canonical text of one
    /// (as `lpAppend` does).
    pub fn push(&mut self, s: &[u8]) {
        match crate::store::canonical_int(s) {
            Some(n) => self.push_int(n),
            None => self.push_str(s),
        }
    }

    /// Appends an integer in the smallest encoding.
    pub fn push_int(&mut self, n: i64) {
        let start = self.buf.len();
        let bytes = n.to_le_bytes();
        match listpack_size::int_encoded(n) {
            1 => self.buf.push(n as u8),
            2 => {
                let raw = (n as u16) & 0x1FFF;
                self.buf.push(0xC0 | (raw >> 8) as u8);
                self.buf.push((raw & 0xFF) as u8);
            }
            3 => {
                self.buf.push(0xF1);
                self.buf.extend_from_slice(&bytes[..2]);
            }
            4 => {
                self.buf.push(0xF2);
                self.buf.extend_from_slice(&bytes[..3]);
            }
            5 => {
                self.buf.push(0xF3);
                self.buf.extend_from_slice(&bytes[..4]);
            }
            _ => {
                self.buf.push(0xF4);
                self.buf.extend_from_slice(&bytes);
            }
        }
        self.end_entry(start);
    }

    fn push_str(&mut self, s: &[u8]) {
        let start = self.buf.len();
        let len = s.len();
        match listpack_size::str_header(len) {
            1 => self.buf.push(0x80 | len as u8),
            2 => {
                self.buf.push(0xE0 | (len >> 8) as u8);
                self.buf.push((len & 0xFF) as u8);
            }
            _ => {
                self.buf.push(0xF0);
                self.buf.extend_from_slice(&(len as u32).to_le_bytes());
            }
        }
        self.buf.extend_from_slice(s);
        self.end_entry(start);
    }

    fn end_entry(&mut self, start: usize) {
        let size = self.buf.len() - start;
        push_backlen(&mut self.buf, size);
        self.count += 1;
    }

    /// The finished listpack.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(EOF);
        let total = self.buf.len() as u32;
        let count = u16::try_from(self.count).unwrap_or(UNKNOWN_COUNT);
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_encoding() {
        let ints = [
            0,
            127,
            128,
            -1,
            -4096,
            4095,
            4096,
            -4097,
            32767,
            -32768,
            40000,
            -8388608,
            8388607,
            8388608,
            i64::from(i32::MIN),
            1 << 40,
            i64::MIN,
            i64::MAX,
        ];
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 200];
        let strings: [&[u8]; 6] = [b"", b"a", b"01", b"-0", &mid, &long];
        let mut w = Writer::new();
        for n in ints {
            w.push(n.to_string().as_bytes());
        }
        for s in strings {
            w.push(s);
        }
        let lp = w.finish();
        let got = entries(&lp).unwrap();
        let mut want: Vec<Elem<'_>> = ints.iter().map(|&n| Elem::Int(n)).collect();
        want.extend(strings.iter().map(|s| Elem::Str(s)));
        assert_eq!(got, want);
    }

    /// Streams size their nodes with `store::listpack_size`: it must give the bytes this
    /// writer (checked against Redis's own above and below) actually writes.
    #[test]
    fn the_size_model_matches_what_is_written() {
        let mut texts: Vec<Vec<u8>> = [0i64, 127, 128, -4096, 4096, 32768, 1 << 23, 1 << 40]
            .iter()
            .flat_map(|n| [n.to_string().into_bytes(), (-n).to_string().into_bytes()])
            .collect();
        texts.extend([b"".to_vec(), b"01".to_vec(), b"+5".to_vec(), b"-0".to_vec()]);
        texts.extend([1, 63, 64, 125, 126, 4095, 4096, 20000].map(|n| vec![b'v'; n]));
        for text in &texts {
            let mut w = Writer::new();
            w.push(text);
            let want = listpack_size::EMPTY + listpack_size::string(text);
            assert_eq!(
                w.finish().len(),
                want,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn redis_bytes() {
        // RPUSH l a 1 -> listpack as Redis 7.0 builds it.
        let mut w = Writer::new();
        w.push(b"a");
        w.push(b"1");
        assert_eq!(
            w.finish(),
            [0x0C, 0, 0, 0, 0x02, 0x00, 0x81, b'a', 0x02, 0x01, 0x01, 0xFF]
        );
    }

    #[test]
    fn corrupt_listpacks_are_rejected() {
        let mut w = Writer::new();
        w.push(b"hello");
        w.push(b"12345");
        let good = w.finish();
        assert!(entries(&good).is_ok());
        for cut in 0..good.len() {
            assert!(entries(&good[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..good.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut bad = good.clone();
                bad[i] ^= flip;
                // Either rejected, or still a well-formed listpack: never a panic.
                let _ = entries(&bad);
            }
        }
        let mut wrong_count = good.clone();
        wrong_count[4] = 3;
        assert!(entries(&wrong_count).is_err());
    }

    #[test]
    fn backlens() {
        for size in [1, 127, 128, 16382, 16383, 2097150, 2097151, 268435455] {
            let mut out = Vec::new();
            push_backlen(&mut out, size);
            assert_eq!(out.len(), backlen(size));
            assert_eq!(decode_backlen(&out), Some(size));
        }
    }
}
