//! A small sorted set's members in one buffer, in (score, member) order, as Redis keeps
//! them in a listpack: 50k sets of 10 members took 2.5x Redis's memory as a vector of
//! (score, member) pairs.
//!
//! Layout, for `n` members: the entries in order, each `score` (f64, little-endian),
//! `len`, `member`; then `n` tags (one byte of each member's hash); then `n` offsets
//! (`u16`, little-endian, where each entry starts). A lookup by member scans the tags
//! (`memchr`) and compares about one member in 256 of the others; an entry by rank is
//! O(1), so score and rank ranges are binary searches, as they were on the vector.
//!
//! Members are at most [`MAX_LEN`] bytes and there are at most [`MAX_MEMBERS`] (the
//! caller keeps to them), so a length fits a byte and an offset a `u16`. Reads go
//! through `get`: nothing here panics on a buffer it did not build.

/// The most members a buffer holds.
pub const MAX_MEMBERS: usize = 128;
/// The longest member.
pub const MAX_LEN: usize = 64;

/// Bytes of an entry before its member: the score and the member's length.
const HEAD: usize = 9;

const _: () = assert!(MAX_MEMBERS * (HEAD + MAX_LEN) <= u16::MAX as usize);

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct PackedMembers {
    bytes: Vec<u8>,
    len: usize,
}

/// One byte of a member's hash (fixed seed: it is stored, and only narrows comparisons).
fn tag(member: &[u8]) -> u8 {
    use std::hash::BuildHasher;
    (foldhash::fast::FixedState::with_seed(0x2e7_5e75).hash_one(member) >> 56) as u8
}

/// Whether a member of this length fits.
pub fn fits(member: &[u8]) -> bool {
    member.len() <= MAX_LEN
}

impl PackedMembers {
    /// Entries already in (score, member) order, distinct, within the limits.
    pub fn from_sorted<'a>(
        entries: impl ExactSizeIterator<Item = (&'a [u8], f64)> + Clone,
    ) -> Self {
        let len = entries.len();
        let size: usize = entries.clone().map(|(m, _)| HEAD + m.len() + 3).sum();
        let mut bytes = Vec::with_capacity(size);
        let mut tags = Vec::with_capacity(len);
        let mut offsets = Vec::with_capacity(len);
        for (member, score) in entries {
            offsets.push(bytes.len() as u16);
            tags.push(tag(member));
            bytes.extend_from_slice(&score.to_le_bytes());
            bytes.push(member.len() as u8);
            bytes.extend_from_slice(member);
        }
        bytes.extend_from_slice(&tags);
        for offset in offsets {
            bytes.extend_from_slice(&offset.to_le_bytes());
        }
        PackedMembers { bytes, len }
    }

    /// How many members it holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the entries end (and the tags start).
    #[inline]
    fn area_end(&self) -> usize {
        self.bytes.len() - 3 * self.len
    }

    /// Where entry `i` starts.
    #[inline]
    fn offset(&self, i: usize) -> Option<usize> {
        if i >= self.len {
            return None;
        }
        let at = self.area_end() + self.len + 2 * i;
        let raw = self.bytes.get(at..at + 2)?;
        Some(usize::from(u16::from_le_bytes([raw[0], raw[1]])))
    }

    fn set_offset(&mut self, i: usize, offset: usize) {
        let at = self.area_end() + self.len + 2 * i;
        if let Some(slot) = self.bytes.get_mut(at..at + 2) {
            slot.copy_from_slice(&(offset as u16).to_le_bytes());
        }
    }

    /// The member and score at rank `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<(&[u8], f64)> {
        let start = self.offset(i)?;
        let head = self.bytes.get(start..start + HEAD)?;
        let mut score = [0u8; 8];
        score.copy_from_slice(&head[..8]);
        let len = usize::from(head[8]);
        let member = self.bytes.get(start + HEAD..start + HEAD + len)?;
        Some((member, f64::from_le_bytes(score)))
    }

    /// The rank of `member`.
    pub fn find(&self, member: &[u8]) -> Option<usize> {
        let end = self.area_end();
        let tags = self.bytes.get(end..end + self.len)?;
        memchr::memchr_iter(tag(member), tags)
            .find(|&i| self.get(i).is_some_and(|(m, _)| m == member))
    }

    /// The first rank whose entry `before` is false for (entries for which it is true
    /// come first, as for `slice::partition_point`).
    pub fn partition_point(&self, before: impl Fn(&[u8], f64) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len);
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
        let n = self.len;
        let i = i.min(n);
        let at = self.offset(i).unwrap_or_else(|| self.area_end());
        let size = HEAD + member.len();
        if self.bytes.capacity() - self.bytes.len() < size + 3 {
            // By an eighth: the buffer is the set's memory.
            self.bytes
                .reserve_exact((size + 3).max(self.bytes.len() / 8));
        }
        let entry = score
            .to_le_bytes()
            .into_iter()
            .chain(std::iter::once(member.len() as u8))
            .chain(member.iter().copied());
        self.bytes.splice(at..at, entry);
        for j in i..n {
            if let Some(offset) = self.offset(j) {
                self.set_offset(j, offset + size);
            }
        }
        // One more tag (the offsets move up by a byte), then one more offset.
        let tags = self.area_end();
        self.bytes.insert(tags + i, tag(member));
        let slot = tags + n + 1 + 2 * i;
        self.bytes.splice(slot..slot, (at as u16).to_le_bytes());
        self.len = n + 1;
    }

    /// Removes the member at rank `i`; its score.
    pub fn remove_at(&mut self, i: usize) -> Option<f64> {
        let (_, score) = self.get(i)?;
        let n = self.len;
        let start = self.offset(i)?;
        let end = self.offset(i + 1).unwrap_or_else(|| self.area_end());
        self.bytes.drain(start..end);
        for j in i + 1..n {
            if let Some(offset) = self.offset(j) {
                self.set_offset(j, offset - (end - start));
            }
        }
        let tags = self.area_end();
        let slot = tags + n + 2 * i;
        self.bytes.drain(slot..slot + 2);
        self.bytes.remove(tags + i);
        self.len = n - 1;
        self.bytes.shrink_to(self.bytes.len() * 5 / 4);
        Some(score)
    }

    /// The entries at ranks `range`, ascending (`rev()` for descending). Forward, the
    /// entries are read one after another; backward, through the offsets.
    pub fn range(&self, range: std::ops::Range<usize>) -> Range<'_> {
        let end = range.end.min(self.len);
        let start = range.start.min(end);
        Range {
            members: self,
            at: self.offset(start).unwrap_or(0),
            front: start,
            back: end,
        }
    }

    /// Bytes it holds on the heap.
    pub fn heap_size(&self) -> usize {
        self.bytes.capacity()
    }
}

/// Entries of a [`PackedMembers`] by rank (see [`PackedMembers::range`]).
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
        let bytes = &self.members.bytes;
        let head = bytes.get(self.at..self.at + HEAD)?;
        let mut score = [0u8; 8];
        score.copy_from_slice(&head[..8]);
        let len = usize::from(head[8]);
        let member = bytes.get(self.at + HEAD..self.at + HEAD + len)?;
        self.at += HEAD + len;
        self.front += 1;
        Some((member, f64::from_le_bytes(score)))
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
