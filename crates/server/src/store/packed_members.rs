//! A small sorted set's members in one buffer ([`TaggedEntries`]), in (score, member)
//! order, as Redis keeps them in a listpack: 50k sets of 10 members took 2.5x Redis's
//! memory as a vector of (score, member) pairs. Each entry is `score` (f64,
//! little-endian), `len`, `member`, tagged by the member's hash: a lookup by member scans
//! the tags, an entry by rank is O(1), so score and rank ranges are binary searches, as
//! they were on the vector, and a forward range reads the entries one after another.
//!
//! Members are at most [`MAX_LEN`] bytes and there are at most [`MAX_MEMBERS`] (the
//! caller keeps to them), so a length fits a byte and the buffer stays under 64 KiB.

use super::tagged_entries::{self, TaggedEntries};

/// The most members a buffer holds.
pub const MAX_MEMBERS: usize = 128;
/// The longest member.
pub const MAX_LEN: usize = 64;

/// Bytes of an entry before its member: the score and the member's length.
const HEAD: usize = 9;

const _: () = assert!(MAX_MEMBERS * (HEAD + MAX_LEN + 3) <= u16::MAX as usize);

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
#[inline]
fn parse(bytes: &[u8]) -> Option<(&[u8], f64, usize)> {
    let head = bytes.get(..HEAD)?;
    let mut score = [0u8; 8];
    score.copy_from_slice(&head[..8]);
    let len = usize::from(head[8]);
    let member = bytes.get(HEAD..HEAD + len)?;
    Some((member, f64::from_le_bytes(score), HEAD + len))
}

/// An entry's bytes.
fn entry(member: &[u8], score: f64) -> impl Iterator<Item = u8> + '_ {
    score
        .to_le_bytes()
        .into_iter()
        .chain(std::iter::once(member.len() as u8))
        .chain(member.iter().copied())
}

impl PackedMembers {
    /// Entries already in (score, member) order, distinct, within the limits.
    pub fn from_sorted<'a>(
        entries: impl ExactSizeIterator<Item = (&'a [u8], f64)> + Clone,
    ) -> Self {
        let size: usize = entries.clone().map(|(m, _)| HEAD + 3 + m.len()).sum();
        let mut area = Vec::with_capacity(size);
        let mut index = Vec::with_capacity(entries.len());
        for (member, score) in entries {
            area.extend(entry(member, score));
            index.push((tag(member), HEAD + member.len()));
        }
        PackedMembers(TaggedEntries::from_area(area, &index))
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
    #[inline]
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
        self.0
            .insert(i, tag(member), HEAD + member.len(), entry(member, score));
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
