//! A small hash's pairs in one buffer, as Redis keeps them in a listpack: a third of the
//! memory of a map at ten fields.
//!
//! Layout, for `n` pairs: the pairs in insertion order, each `len field len value`, then
//! `n` tags (one byte of each field's hash), then `n` offsets (`u16`, little-endian,
//! where each pair starts). The index sits behind the pairs so that adding a pair moves
//! only the index (at most 384 bytes), not every pair, as a listpack's append moves
//! nothing: an HSET of 128 fields, or a load, stays linear. A lookup scans the tags
//! (`memchr`, many at a time)
//! and compares the bytes of the fields whose tag matches, about one in 256 of the others;
//! the offsets make that comparison, and a pair by position, O(1). Walking the pairs
//! themselves, one length after another, made HGET on 100-field hashes 0.75x of a map.
//!
//! Fields and values are at most [`MAX_LEN`] bytes and there are at most [`MAX_PAIRS`]
//! pairs (the caller keeps to them), so every length fits a byte and every offset a
//! `u16`. Nothing here panics on a buffer it did not build: reads go through `get`.

/// The most pairs a buffer holds.
pub const MAX_PAIRS: usize = 128;
/// The longest field or value.
pub const MAX_LEN: usize = 64;

const _: () = assert!(MAX_PAIRS * (2 * MAX_LEN + 2) <= u16::MAX as usize);

/// Pairs in one buffer (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct PackedPairs {
    bytes: Vec<u8>,
    pairs: usize,
}

/// One byte of a field's hash (fixed seed: it is stored, and only narrows comparisons).
fn tag(field: &[u8]) -> u8 {
    use std::hash::BuildHasher;
    (foldhash::fast::FixedState::with_seed(0x5ed1_17e5).hash_one(field) >> 56) as u8
}

/// Whether a pair of these lengths fits.
pub fn fits(field: &[u8], value: &[u8]) -> bool {
    field.len() <= MAX_LEN && value.len() <= MAX_LEN
}

impl PackedPairs {
    /// How many pairs it holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.pairs
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pairs == 0
    }

    /// Where the pairs end (and the tags start).
    #[inline]
    fn area_end(&self) -> usize {
        self.bytes.len() - 3 * self.pairs
    }

    /// Where pair `i` starts.
    #[inline]
    fn offset(&self, i: usize) -> Option<usize> {
        if i >= self.pairs {
            return None;
        }
        let at = self.area_end() + self.pairs + 2 * i;
        let raw = self.bytes.get(at..at + 2)?;
        Some(usize::from(u16::from_le_bytes([raw[0], raw[1]])))
    }

    fn set_offset(&mut self, i: usize, offset: usize) {
        let at = self.area_end() + self.pairs + 2 * i;
        if let Some(slot) = self.bytes.get_mut(at..at + 2) {
            slot.copy_from_slice(&(offset as u16).to_le_bytes());
        }
    }

    /// Pair `i`'s field and value, and where its value's length byte is.
    fn pair_at(&self, i: usize) -> Option<(&[u8], &[u8], usize)> {
        let start = self.offset(i)?;
        let flen = usize::from(*self.bytes.get(start)?);
        let field = self.bytes.get(start + 1..start + 1 + flen)?;
        let vpos = start + 1 + flen;
        let vlen = usize::from(*self.bytes.get(vpos)?);
        let value = self.bytes.get(vpos + 1..vpos + 1 + vlen)?;
        Some((field, value, vpos))
    }

    /// Pair `i`, by position in insertion order.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.pair_at(i).map(|(f, v, _)| (f, v))
    }

    /// The position of `field`.
    pub fn find(&self, field: &[u8]) -> Option<usize> {
        let end = self.area_end();
        let tags = self.bytes.get(end..end + self.pairs)?;
        memchr::memchr_iter(tag(field), tags)
            .find(|&i| self.pair_at(i).is_some_and(|(f, _, _)| f == field))
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.get_index(self.find(field)?).map(|(_, v)| v)
    }

    /// The pairs at once, in one allocation (a load); the caller keeps to the limits.
    /// `None` when a field repeats.
    pub fn from_pairs(pairs: &[(&[u8], &[u8])]) -> Option<PackedPairs> {
        let mut fields: Vec<&[u8]> = pairs.iter().map(|(f, _)| *f).collect();
        fields.sort_unstable();
        if fields.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        let area: usize = pairs.iter().map(|(f, v)| 2 + f.len() + v.len()).sum();
        let mut bytes = Vec::with_capacity(area + 3 * pairs.len());
        let mut offsets = Vec::with_capacity(pairs.len());
        for (field, value) in pairs {
            offsets.push(bytes.len() as u16);
            bytes.push(field.len() as u8);
            bytes.extend_from_slice(field);
            bytes.push(value.len() as u8);
            bytes.extend_from_slice(value);
        }
        bytes.extend(pairs.iter().map(|(f, _)| tag(f)));
        for offset in offsets {
            bytes.extend_from_slice(&offset.to_le_bytes());
        }
        Some(PackedPairs {
            bytes,
            pairs: pairs.len(),
        })
    }

    /// Appends a pair whose field is not there (the caller looked, and keeps to the
    /// limits).
    pub fn push(&mut self, field: &[u8], value: &[u8]) {
        let n = self.pairs;
        let start = self.area_end();
        self.bytes.reserve_exact(5 + field.len() + value.len());
        let pair = std::iter::once(field.len() as u8)
            .chain(field.iter().copied())
            .chain(std::iter::once(value.len() as u8))
            .chain(value.iter().copied());
        // The pair goes where the index starts; the index moves up behind it, and takes
        // one more tag (the offsets move by a byte) and one more offset.
        self.bytes.splice(start..start, pair);
        let tags_end = self.bytes.len() - 2 * n;
        self.bytes.insert(tags_end, tag(field));
        self.bytes.extend_from_slice(&(start as u16).to_le_bytes());
        self.pairs = n + 1;
    }

    /// Replaces the value of pair `i`.
    pub fn set_value(&mut self, i: usize, value: &[u8]) {
        let Some((_, old, vpos)) = self.pair_at(i) else {
            return;
        };
        let old = vpos + 1..vpos + 1 + old.len();
        if old.len() == value.len() {
            self.bytes[old].copy_from_slice(value);
            return;
        }
        let grows = value.len() as isize - old.len() as isize;
        self.bytes[vpos] = value.len() as u8;
        self.bytes.splice(old, value.iter().copied());
        self.shift_offsets_after(i, grows);
        self.bytes.shrink_to(self.bytes.len() * 5 / 4);
    }

    /// Moves the offsets of the pairs after `i` by `by` bytes.
    fn shift_offsets_after(&mut self, i: usize, by: isize) {
        for j in i + 1..self.pairs {
            if let Some(offset) = self.offset(j) {
                self.set_offset(j, offset.wrapping_add_signed(by));
            }
        }
    }

    /// Removes pair `i`, keeping the order of the others.
    pub fn remove(&mut self, i: usize) {
        let n = self.pairs;
        if i >= n {
            return;
        }
        let start = self.offset(i).unwrap_or(0);
        let end = self.offset(i + 1).unwrap_or_else(|| self.area_end());
        self.bytes.drain(start..end);
        self.shift_offsets_after(i, -((end - start) as isize));
        // Its offset, then its tag (the offsets move back by a byte with it).
        let tags = self.area_end();
        let offset = tags + n + 2 * i;
        self.bytes.drain(offset..offset + 2);
        self.bytes.remove(tags + i);
        self.pairs = n - 1;
        self.bytes.shrink_to(self.bytes.len() * 5 / 4);
    }

    /// The pairs, in insertion order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.bytes.get(..self.area_end()).unwrap_or_default())
    }

    /// Bytes it holds on the heap.
    pub fn heap_size(&self) -> usize {
        self.bytes.capacity()
    }
}

/// The pairs of a [`PackedPairs`], in order.
#[derive(Clone)]
pub struct Iter<'a>(&'a [u8]);

impl<'a> Iter<'a> {
    /// The next length-prefixed element.
    fn element(&mut self) -> Option<&'a [u8]> {
        let (&len, rest) = self.0.split_first()?;
        let (element, rest) = rest.split_at_checked(usize::from(len))?;
        self.0 = rest;
        Some(element)
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        Some((self.element()?, self.element()?))
    }
}
