//! Ziplists, the compact encoding of Redis before 7.0 (RDB 9 and older). Redis 7.0
//! still loads them (as ziplist-based lists, hashes and sorted sets) and converts them
//! to listpacks; here they are only read, never written.
//!
//! Layout: total bytes (u32), offset of the last entry (u32), count (u16), all little
//! endian; the entries; `0xFF`. An entry is the previous entry's size (1 byte, or `0xFE`
//! and 4 bytes), an encoding (string lengths in 1, 2 or 5 bytes, integer widths, or an
//! immediate 0..12), and the data. Everything is checked, as Redis's deep validation
//! does for these types.

use super::listpack::Elem;
use super::Corrupt;

const HEADER: usize = 10;
const END: u8 = 0xFF;
const BIG_PREVLEN: u8 = 0xFE;

/// Every entry of `zl`, validated.
pub fn entries(zl: &[u8]) -> Result<Vec<Elem<'_>>, Corrupt> {
    let bad = || Corrupt("ziplist integrity check failed");
    let header = zl.get(..HEADER).ok_or_else(bad)?;
    let total = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let tail = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    let count = u16::from_le_bytes([header[8], header[9]]);
    if total != zl.len() || zl.last() != Some(&END) {
        return Err(bad());
    }
    let end = zl.len() - 1;
    let mut out = Vec::with_capacity(usize::from(count).min(end));
    let mut pos = HEADER;
    let mut prev_size = 0;
    let mut last = HEADER;
    while pos < end {
        let (elem, size) = entry(&zl[pos..end], prev_size).ok_or_else(bad)?;
        out.push(elem);
        last = pos;
        prev_size = size;
        pos += size;
    }
    if tail != last || (count != u16::MAX && usize::from(count) != out.len()) {
        return Err(bad());
    }
    Ok(out)
}

/// The entry at the start of `at` (which must record `prev_size`) and its whole size.
fn entry(at: &[u8], prev_size: usize) -> Option<(Elem<'_>, usize)> {
    let (recorded, mut pos) = match *at.first()? {
        BIG_PREVLEN => (
            u32::from_le_bytes(at.get(1..5)?.try_into().ok()?) as usize,
            5,
        ),
        END => return None,
        b => (usize::from(b), 1),
    };
    if recorded != prev_size {
        return None;
    }
    let enc = *at.get(pos)?;
    pos += 1;
    let int = |pos: usize, n: usize| -> Option<i64> {
        let bytes = at.get(pos..pos + n)?;
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(bytes);
        let shift = 64 - 8 * n as u32;
        Some((i64::from_le_bytes(v) << shift) >> shift)
    };
    let string = |pos: usize, len: usize| -> Option<(Elem<'_>, usize)> {
        let s = at.get(pos..pos.checked_add(len)?)?;
        Some((Elem::Str(s), pos + len))
    };
    match enc {
        0x00..=0x3F => string(pos, usize::from(enc & 0x3F)),
        0x40..=0x7F => string(
            pos + 1,
            usize::from(enc & 0x3F) << 8 | usize::from(*at.get(pos)?),
        ),
        0x80 => string(
            pos + 4,
            u32::from_be_bytes(at.get(pos..pos + 4)?.try_into().ok()?) as usize,
        ),
        0xC0 => Some((Elem::Int(int(pos, 2)?), pos + 2)),
        0xD0 => Some((Elem::Int(int(pos, 4)?), pos + 4)),
        0xE0 => Some((Elem::Int(int(pos, 8)?), pos + 8)),
        0xF0 => Some((Elem::Int(int(pos, 3)?), pos + 3)),
        0xFE => Some((Elem::Int(int(pos, 1)?), pos + 1)),
        0xF1..=0xFD => Some((Elem::Int(i64::from(enc & 0x0F) - 1), pos)),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a ziplist the way Redis 6 does (test input only).
    pub(crate) fn build(items: &[&[u8]]) -> Vec<u8> {
        let mut body = Vec::new();
        let mut prev = 0usize;
        let mut last = HEADER;
        for item in items {
            let start = body.len();
            last = HEADER + start;
            if prev < 254 {
                body.push(prev as u8);
            } else {
                body.push(BIG_PREVLEN);
                body.extend_from_slice(&(prev as u32).to_le_bytes());
            }
            match crate::store::canonical_int(item) {
                Some(n) if (0..=12).contains(&n) => body.push(0xF1 + n as u8),
                Some(n) if i8::try_from(n).is_ok() => {
                    body.push(0xFE);
                    body.push(n as i8 as u8);
                }
                Some(n) if i16::try_from(n).is_ok() => {
                    body.push(0xC0);
                    body.extend_from_slice(&(n as i16).to_le_bytes());
                }
                Some(n) if (-(1 << 23)..(1 << 23)).contains(&n) => {
                    body.push(0xF0);
                    body.extend_from_slice(&n.to_le_bytes()[..3]);
                }
                Some(n) if i32::try_from(n).is_ok() => {
                    body.push(0xD0);
                    body.extend_from_slice(&(n as i32).to_le_bytes());
                }
                Some(n) => {
                    body.push(0xE0);
                    body.extend_from_slice(&n.to_le_bytes());
                }
                None if item.len() < 64 => {
                    body.push(item.len() as u8);
                    body.extend_from_slice(item);
                }
                None if item.len() < 16384 => {
                    body.push(0x40 | (item.len() >> 8) as u8);
                    body.push((item.len() & 0xFF) as u8);
                    body.extend_from_slice(item);
                }
                None => {
                    body.push(0x80);
                    body.extend_from_slice(&(item.len() as u32).to_be_bytes());
                    body.extend_from_slice(item);
                }
            }
            prev = body.len() - start;
        }
        let mut zl = Vec::new();
        zl.extend_from_slice(&((HEADER + body.len() + 1) as u32).to_le_bytes());
        zl.extend_from_slice(&(last as u32).to_le_bytes());
        zl.extend_from_slice(&(items.len() as u16).to_le_bytes());
        zl.extend_from_slice(&body);
        zl.push(END);
        zl
    }

    #[test]
    fn reads_every_encoding() {
        let big = vec![b'z'; 300];
        let huge = vec![b'h'; 20000];
        let items: Vec<&[u8]> = vec![
            b"a",
            b"0",
            b"12",
            b"13",
            b"-1",
            b"300",
            b"-70000",
            b"40000",
            b"3000000000",
            b"-9223372036854775808",
            &big,
            &huge,
            b"",
        ];
        let zl = build(&items);
        let got: Vec<Vec<u8>> = entries(&zl)
            .unwrap()
            .into_iter()
            .map(Elem::to_bytes)
            .collect();
        let want: Vec<Vec<u8>> = items.iter().map(|i| i.to_vec()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn corrupt_ziplists_are_rejected() {
        let zl = build(&[b"abc", b"7", b"xyz"]);
        for cut in 0..zl.len() {
            assert!(entries(&zl[..cut]).is_err());
        }
        for i in 0..zl.len() {
            let mut bad = zl.clone();
            bad[i] ^= 0x41;
            let _ = entries(&bad);
        }
        let mut wrong_tail = zl.clone();
        wrong_tail[4] += 1;
        assert!(entries(&wrong_tail).is_err());
    }
}
