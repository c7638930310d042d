//! A small sorted set's members in one buffer ([`TaggedEntries`]), in (score, member)
//! order, as Redis keeps them in a listpack: 50k sets of 10 members took 2.5x Redis's
//! memory as a vector of (score, member) pairs. Each entry is `head`, `score`, `member`:
//! the head is the member's length, its high bit set when the score is a whole number
//! (of at most 2^53), stored then as a zigzag varint (a score under 64 takes a byte, a
//! millisecond timestamp six), else as the f64's 8 bytes, little-endian, as Redis's
//! listpack stores integer scores as integers. Entries are tagged by the member's hash: a lookup by member scans
//! the tags, an entry by rank is O(1), so score and rank ranges are binary searches, as
//! they were on the vector, and a forward range reads the entries one after another.
//!
//! Members are at most [`MAX_LEN`] bytes and there are at most [`MAX_MEMBERS`] (the
//! caller keeps to them), so a length fits a byte and the buffer stays under 64 KiB.

use super::tagged_entries::{self, TaggedEntries};
use super::value::Peaks;
use super::varint;

/// The most members a buffer holds.
pub const MAX_MEMBERS: usize = 128;
/// The longest member.
pub const MAX_LEN: usize = 64;

/// The most bytes of an entry before its member: the head and an f64 score.
const MAX_HEAD: usize = 9;

/// The head's bit for a whole-number score.
const WHOLE_SCORE: u8 = 0x80;

const _: () = assert!(MAX_MEMBERS * (MAX_HEAD + MAX_LEN + 3) <= u16::MAX as usize);
const _: () = assert!(MAX_LEN < WHOLE_SCORE as usize);

/// `score` as a whole number, when it is one that converts back exactly (-0 does not).
fn whole(score: f64) -> Option<i64> {
    const LIMIT: f64 = (1u64 << 53) as f64;
    (score.fract() == 0.0 && score.abs() <= LIMIT && !(score == 0.0 && score.is_sign_negative()))
        .then_some(score as i64)
}

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct PackedMembers(TaggedEntries);

/// The tag of a member.
fn tag(member: &[u8]) -> u8 {
    tagged_entries::tag(0x2e7_5e75, member)
}

/// Whether a member of this length fits.
pub fn fits(member: &[u8]) -> bool {
    member.len() <= MAX_LEN
}

/// The member and score at the start of `bytes`, and the entry's length.
#[inline(always)]
fn parse(bytes: &[u8]) -> Option<(&[u8], f64, usize)> {
    let head = *bytes.first()?;
    let (score, at) = if head & WHOLE_SCORE != 0 {
        // Binary searches read scores: one or two varint bytes without the loop.
        let (raw, at) = match bytes.get(1..3) {
            Some(&[b0, _]) if b0 < 0x80 => (u64::from(b0), 2),
            Some(&[b0, b1]) if b1 < 0x80 => (u64::from(b0 & 0x7F) | u64::from(b1) << 7, 3),
            _ => {
                let mut at = 1;
                (varint::get(bytes, &mut at), at)
            }
        };
        (varint::unzigzag(raw) as f64, at)
    } else {
        let raw: [u8; 8] = bytes.get(1..9)?.try_into().ok()?;
        (f64::from_le_bytes(raw), 9)
    };
    let len = usize::from(head & !WHOLE_SCORE);
    let member = bytes.get(at..at + len)?;
    Some((member, score, at + len))
}

/// An entry's head and score bytes (`head.1` of them are used).
fn head(member: &[u8], score: f64) -> ([u8; MAX_HEAD], usize) {
    let mut out = [0u8; MAX_HEAD];
    match whole(score) {
        Some(n) => {
            // At most 54 bits after zigzag: eight bytes.
            let (raw, used) = varint::encode(varint::zigzag(n));
            out[0] = member.len() as u8 | WHOLE_SCORE;
            out[1..1 + used].copy_from_slice(&raw[..used]);
            (out, 1 + used)
        }
        None => {
            out[0] = member.len() as u8;
            out[1..].copy_from_slice(&score.to_le_bytes());
            (out, MAX_HEAD)
        }
    }
}

/// An entry's bytes and their count.
fn entry(member: &[u8], score: f64) -> (impl Iterator<Item = u8> + '_, usize) {
    let (head, used) = head(member, score);
    let bytes = head.into_iter().take(used).chain(member.iter().copied());
    (bytes, used + member.len())
}

impl PackedMembers {
    /// Entries already in (score, member) order, distinct, within the limits.
    pub fn from_sorted<'a>(
        entries: impl ExactSizeIterator<Item = (&'a [u8], f64)> + Clone,
        peaks: Peaks,
    ) -> Self {
        let size: usize = entries.clone().map(|(m, s)| entry(m, s).1).sum();
        let mut area = tagged_entries::Area::with_capacity(size, entries.len());
        let mut index = Vec::with_capacity(entries.len());
        for (member, score) in entries {
            let (bytes, len) = entry(member, score);
            area.extend(bytes);
            index.push((tag(member), len));
        }
        PackedMembers(TaggedEntries::from_area(area, &index, peaks))
    }

    /// The owner's peaks, kept in the buffer (see [`TaggedEntries::peaks`]).
    pub fn peaks(&self) -> Peaks {
        self.0.peaks()
    }

    /// Records an addition in the owner's peaks (see [`Peaks::saw`]).
    pub fn saw(&mut self, entries: usize, len: usize) {
        self.0.saw(entries, len);
    }

    /// Replaces the owner's peaks (see [`Peaks::settled`]).
    pub fn set_peaks(&mut self, peaks: Peaks) {
        self.0.set_peaks(peaks);
    }

    /// How many members it holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The member and score at rank `i`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<(&[u8], f64)> {
        parse(self.0.get(i)?).map(|(m, s, _)| (m, s))
    }

    /// The rank of `member`.
    pub fn find(&self, member: &[u8]) -> Option<usize> {
        self.0
            .with_tag(tag(member))
            .find(|&i| self.get(i).is_some_and(|(m, _)| m == member))
    }

    /// The first rank whose entry `before` is false for (entries for which it is true
    /// come first, as for `slice::partition_point`).
    pub fn partition_point(&self, before: impl Fn(&[u8], f64) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid) {
                Some((m, s)) if before(m, s) => lo = mid + 1,
                _ => hi = mid,
            }
        }
        lo
    }

    /// Puts `member` at rank `i` (the caller found its place, and keeps to the limits).
    pub fn insert_at(&mut self, i: usize, member: &[u8], score: f64) {
        let (bytes, len) = entry(member, score);
        self.0.insert(i, tag(member), len, bytes);
    }

    /// Removes the member at rank `i`; its score.
    pub fn remove_at(&mut self, i: usize) -> Option<f64> {
        let (_, score) = self.get(i)?;
        self.0.remove(i);
        Some(score)
    }

    /// The entries at ranks `range`, ascending (`rev()` for descending).
    pub fn range(&self, range: std::ops::Range<usize>) -> Range<'_> {
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        Range {
            members: self,
            at: self.0.offset(start).unwrap_or(0),
            front: start,
            back: end,
        }
    }

    /// Bytes it holds on the heap.
    pub fn heap_size(&self) -> usize {
        self.0.heap_size()
    }
}

/// Entries of a [`PackedMembers`] by rank (see [`PackedMembers::range`]): forward, read
/// one after another; backward, through the offsets.
pub struct Range<'a> {
    members: &'a PackedMembers,
    /// Where entry `front` starts.
    at: usize,
    front: usize,
    back: usize,
}

impl<'a> Iterator for Range<'a> {
    type Item = (&'a [u8], f64);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        let (member, score, size) = parse(self.members.0.area().get(self.at..)?)?;
        self.at += size;
        self.front += 1;
        Some((member, score))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.back - self.front;
        (left, Some(left))
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        self.members.get(self.back)
    }
}

impl ExactSizeIterator for Range<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    const SCORES: [f64; 13] = [
        f64::NEG_INFINITY,
        -9_007_199_254_740_994.0,
        -9_007_199_254_740_992.0,
        -1.5,
        -1.0,
        -0.0,
        0.0,
        0.25,
        63.0,
        1_700_000_000_000.0,
        9_007_199_254_740_992.0,
        f64::MAX,
        f64::INFINITY,
    ];

    #[test]
    fn scores_of_every_kind_read_back_exactly() {
        let members: Vec<Vec<u8>> = (0..SCORES.len())
            .map(|i| vec![b'a' + i as u8; i * 5])
            .collect();
        let entries = || members.iter().map(|m| &m[..]).zip(SCORES);
        let built = PackedMembers::from_sorted(entries(), Peaks::default());
        let mut inserted = PackedMembers::default();
        for (i, (member, score)) in entries().enumerate().rev() {
            inserted.insert_at(0, member, score);
            assert_eq!(inserted.find(member), Some(0), "entry {i}");
        }
        for set in [&built, &inserted] {
            let forward: Vec<(&[u8], u64)> = set
                .range(0..set.len())
                .map(|(m, s)| (m, s.to_bits()))
                .collect();
            let want: Vec<(&[u8], u64)> = entries().map(|(m, s)| (m, s.to_bits())).collect();
            assert_eq!(forward, want);
            let mut backward: Vec<(&[u8], u64)> = set
                .range(0..set.len())
                .rev()
                .map(|(m, s)| (m, s.to_bits()))
                .collect();
            backward.reverse();
            assert_eq!(backward, want);
        }
        // Whole scores take their varint, others the f64's eight bytes.
        let small = PackedMembers::from_sorted([(&b"m"[..], 5.0)].into_iter(), Peaks::default());
        let fraction = PackedMembers::from_sorted([(&b"m"[..], 0.5)].into_iter(), Peaks::default());
        assert_eq!(small.heap_size() + 7, fraction.heap_size());
        assert_eq!(
            inserted.remove_at(5).map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
    }
}
