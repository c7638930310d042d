//! Variable-length entries in one buffer with an index behind them, as Redis keeps a
//! small collection in a listpack: what small hashes ([`super::packed_pairs`]) and small
//! sorted sets ([`super::packed_members`]) are made of.
//!
//! Layout, for `n` entries: the entries in order, then `n` tags (one byte of each
//! entry's key hash, chosen by the caller), then `n` offsets (`u16`, little-endian,
//! where each entry starts). A lookup scans the tags (`memchr`, many at a time) and
//! looks at about one entry in 256 of the others; an entry by position is O(1). The
//! index sits behind the entries so that adding one at the end moves only the index,
//! not every entry, as a listpack's append moves nothing.
//!
//! The buffer stays under 64 KiB (the callers' limits guarantee it), so an offset fits
//! a `u16`. Reads go through `get`: nothing here panics on a buffer it did not build.

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct TaggedEntries {
    bytes: Vec<u8>,
    /// Fewer than 2^16 (the buffer's limit); 32 bits keep the owner's size class
    /// small (see [`super::value::Peaks`]).
    len: u32,
}

/// One byte of `key`'s hash under `seed` (fixed: tags are stored, and only narrow
/// comparisons).
pub fn tag(seed: u64, key: &[u8]) -> u8 {
    use std::hash::BuildHasher;
    (foldhash::fast::FixedState::with_seed(seed).hash_one(key) >> 56) as u8
}

impl TaggedEntries {
    /// The entries written back to back in `area` (best with room for 3 more bytes
    /// each), described in order by their tags and lengths: the index is added behind.
    pub fn from_area(mut area: Vec<u8>, entries: &[(u8, usize)]) -> Self {
        area.reserve_exact(3 * entries.len());
        area.extend(entries.iter().map(|(tag, _)| tag));
        let mut offset = 0usize;
        for (_, len) in entries {
            area.extend_from_slice(&(offset as u16).to_le_bytes());
            offset += len;
        }
        TaggedEntries {
            bytes: area,
            len: entries.len() as u32,
        }
    }

    /// How many entries it holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries, back to back, in order.
    #[inline]
    pub fn area(&self) -> &[u8] {
        self.bytes.get(..self.area_end()).unwrap_or_default()
    }

    /// Where the entries end (and the tags start).
    #[inline]
    fn area_end(&self) -> usize {
        self.bytes.len() - 3 * self.len()
    }

    /// Where entry `i` starts.
    #[inline]
    pub fn offset(&self, i: usize) -> Option<usize> {
        if i >= self.len() {
            return None;
        }
        let at = self.area_end() + self.len() + 2 * i;
        let raw = self.bytes.get(at..at + 2)?;
        Some(usize::from(u16::from_le_bytes([raw[0], raw[1]])))
    }

    fn set_offset(&mut self, i: usize, offset: usize) {
        let at = self.area_end() + self.len() + 2 * i;
        if let Some(slot) = self.bytes.get_mut(at..at + 2) {
            slot.copy_from_slice(&(offset as u16).to_le_bytes());
        }
    }

    /// Moves the offsets of the entries from `i` on by `by` bytes.
    fn shift_offsets_from(&mut self, i: usize, by: isize) {
        for j in i..self.len() {
            if let Some(offset) = self.offset(j) {
                self.set_offset(j, offset.wrapping_add_signed(by));
            }
        }
    }

    /// Entry `i`'s bytes (to the end of the area for the last one).
    #[inline]
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let start = self.offset(i)?;
        let end = self.offset(i + 1).unwrap_or_else(|| self.area_end());
        self.bytes.get(start..end)
    }

    /// The positions whose tag is `tag`, in order.
    pub fn with_tag(&self, tag: u8) -> impl Iterator<Item = usize> + '_ {
        let end = self.area_end();
        let tags = self.bytes.get(end..end + self.len()).unwrap_or_default();
        memchr::memchr_iter(tag, tags)
    }

    /// Puts `entry` (of `size` bytes) at position `i`, tagged `tag`.
    pub fn insert(&mut self, i: usize, tag: u8, size: usize, entry: impl Iterator<Item = u8>) {
        let n = self.len();
        let i = i.min(n);
        let at = self.offset(i).unwrap_or_else(|| self.area_end());
        if self.bytes.capacity() - self.bytes.len() < size + 3 {
            // By what is added or an eighth: the buffer is the collection's memory.
            self.bytes
                .reserve_exact((size + 3).max(self.bytes.len() / 8));
        }
        self.bytes.splice(at..at, entry);
        self.shift_offsets_from(i, size as isize);
        // One more tag (the offsets move up by a byte), then one more offset.
        let tags = self.area_end();
        self.bytes.insert(tags + i, tag);
        let slot = tags + n + 1 + 2 * i;
        self.bytes.splice(slot..slot, (at as u16).to_le_bytes());
        self.len = (n + 1) as u32;
    }

    /// Replaces the bytes `range` of entry `i` (relative to its start) with `with`, of
    /// `size` bytes.
    pub fn replace(
        &mut self,
        i: usize,
        range: std::ops::Range<usize>,
        size: usize,
        with: impl Iterator<Item = u8>,
    ) {
        let Some(start) = self.offset(i) else {
            return;
        };
        let (from, to) = (start + range.start, start + range.end);
        if to > self.area_end() || from > to {
            return;
        }
        if to - from == size {
            for (slot, byte) in self.bytes[from..to].iter_mut().zip(with) {
                *slot = byte;
            }
            return;
        }
        let grows = size as isize - (to - from) as isize;
        self.bytes.splice(from..to, with);
        self.shift_offsets_from(i + 1, grows);
        self.bytes.shrink_to(self.bytes.len() * 5 / 4);
    }

    /// Removes entry `i`, keeping the order of the others.
    pub fn remove(&mut self, i: usize) {
        let n = self.len();
        let Some(start) = self.offset(i) else {
            return;
        };
        let end = self.offset(i + 1).unwrap_or_else(|| self.area_end());
        self.bytes.drain(start..end);
        self.shift_offsets_from(i + 1, -((end - start) as isize));
        // Its offset, then its tag (the offsets move back by a byte with it).
        let tags = self.area_end();
        let slot = tags + n + 2 * i;
        self.bytes.drain(slot..slot + 2);
        self.bytes.remove(tags + i);
        self.len = (n - 1) as u32;
        self.bytes.shrink_to(self.bytes.len() * 5 / 4);
    }

    /// Bytes it holds on the heap.
    pub fn heap_size(&self) -> usize {
        self.bytes.capacity()
    }
}
