//! Variable-length entries in one buffer with an index behind them, as Redis keeps a
//! small collection in a listpack: what small hashes ([`super::packed_pairs`]) and small
//! sorted sets ([`super::packed_members`]) are made of.
//!
//! Layout, for `n` entries: a header (`n` as a `u16`, then the owner's [`Peaks`]), the
//! entries in order, then `n` tags (one byte of each entry's key hash, chosen by the
//! caller), then `n` offsets (`u16`, little-endian, where each entry starts, from the
//! end of the header). A lookup scans the tags (`memchr`, many at a time) and looks at
//! about one entry in 256 of the others; an entry by position is O(1). The index sits
//! behind the entries so that adding one at the end moves only the index, not every
//! entry, as a listpack's append moves nothing.
//!
//! Everything, the header included, is one exact-size allocation (a `Box<[u8]>`, see
//! [`super::exact_buf`]), so the collection that owns it needs no box of its own: a small hash
//! or sorted set is its key's entry and this buffer, as in Redis a listpack and its
//! `robj`. A change reallocates, as a listpack's does.
//!
//! The entries and index stay under 64 KiB (the callers' limits guarantee it), so an
//! offset fits a `u16`. Reads go through `get`: nothing here panics on a buffer it did
//! not build.

use super::exact_buf;
use super::value::Peaks;

/// The header's bytes: the entry count, then the owner's peaks (six in all: every
/// byte here is paid once per small hash or sorted set).
const HEADER: usize = COUNT + Peaks::NARROW_BYTES;

/// The entry count's bytes (a `u16`: the buffer stays under 64 KiB, three bytes or more
/// an entry).
const COUNT: usize = 2;

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct TaggedEntries {
    /// Empty (no allocation) until the first entry or peaks are stored.
    buf: Box<[u8]>,
}

/// Entries written back to back behind room for the header, for
/// [`TaggedEntries::from_area`].
pub struct Area(Vec<u8>);

impl Area {
    /// Room for `entry_bytes` of entries and the index of `entries` of them.
    pub fn with_capacity(entry_bytes: usize, entries: usize) -> Area {
        let mut area = Vec::with_capacity(HEADER + entry_bytes + 3 * entries);
        area.resize(HEADER, 0);
        Area(area)
    }
}

impl Extend<u8> for Area {
    fn extend<I: IntoIterator<Item = u8>>(&mut self, bytes: I) {
        self.0.extend(bytes);
    }
}

/// One byte of `key`'s hash under `seed` (fixed: tags are stored, and only narrow
/// comparisons).
pub fn tag(seed: u64, key: &[u8]) -> u8 {
    use std::hash::BuildHasher;
    (foldhash::fast::FixedState::with_seed(seed).hash_one(key) >> 56) as u8
}

/// Where entry `i` of the `n` in `body` (entries, tags, offsets) starts.
fn offset_in(body: &[u8], n: usize, i: usize) -> Option<usize> {
    if i >= n {
        return None;
    }
    let at = body.len().checked_sub(3 * n)? + n + 2 * i;
    let raw = body.get(at..at + 2)?;
    Some(usize::from(u16::from_le_bytes([raw[0], raw[1]])))
}

/// Writes the entry count `n` into the header at the front of `buf`.
fn write_count(buf: &mut [u8], n: usize) {
    if let Some(count) = buf.get_mut(..COUNT) {
        count.copy_from_slice(&(n as u16).to_le_bytes());
    }
}

/// Moves the offsets of entries `from..n` of `body` by `by` bytes.
fn shift_offsets(body: &mut [u8], n: usize, from: usize, by: isize) {
    let Some(index) = body.len().checked_sub(2 * n) else {
        return;
    };
    for j in from..n {
        if let Some(slot) = body.get_mut(index + 2 * j..index + 2 * j + 2) {
            let offset = usize::from(u16::from_le_bytes([slot[0], slot[1]]));
            slot.copy_from_slice(&(offset.wrapping_add_signed(by) as u16).to_le_bytes());
        }
    }
}

impl TaggedEntries {
    /// The entries written back to back in `area`, described in order by their tags
    /// and lengths: the index is added behind, the header in front.
    pub fn from_area(Area(mut area): Area, entries: &[(u8, usize)], peaks: Peaks) -> Self {
        area.reserve_exact(3 * entries.len());
        area.extend(entries.iter().map(|(tag, _)| tag));
        let mut offset = 0usize;
        for (_, len) in entries {
            area.extend_from_slice(&(offset as u16).to_le_bytes());
            offset += len;
        }
        write_count(&mut area, entries.len());
        area[COUNT..HEADER].copy_from_slice(&peaks.to_narrow_bytes());
        TaggedEntries {
            buf: area.into_boxed_slice(),
        }
    }

    /// How many entries it holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf
            .first_chunk::<COUNT>()
            .map_or(0, |n| usize::from(u16::from_le_bytes(*n)))
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The owner's peaks (see [`Peaks`]), kept here so that it needs no allocation of
    /// its own.
    pub fn peaks(&self) -> Peaks {
        match self.buf.get(COUNT..HEADER).and_then(|b| b.try_into().ok()) {
            Some(bytes) => Peaks::from_narrow_bytes(bytes),
            None => Peaks::default(),
        }
    }

    /// Records an addition in the owner's peaks: `entries` held now, an element of
    /// `len` bytes.
    #[inline]
    pub fn saw(&mut self, entries: usize, len: usize) {
        let header = exact_buf::header_mut(&mut self.buf, &[0; HEADER]);
        let slot = header.get_mut(COUNT..HEADER);
        if let Some(slot) = slot.and_then(|s| <&mut [u8; Peaks::NARROW_BYTES]>::try_from(s).ok()) {
            Peaks::saw_narrow(slot, entries, len);
        }
    }

    /// Replaces the owner's peaks.
    pub fn set_peaks(&mut self, peaks: Peaks) {
        let header = exact_buf::header_mut(&mut self.buf, &[0; HEADER]);
        if let Some(slot) = header.get_mut(COUNT..HEADER) {
            slot.copy_from_slice(&peaks.to_narrow_bytes());
        }
    }

    /// The entries, the tags and the offsets.
    #[inline]
    fn body(&self) -> &[u8] {
        self.buf.get(HEADER..).unwrap_or_default()
    }

    /// The entries, back to back, in order.
    #[inline]
    pub fn area(&self) -> &[u8] {
        let body = self.body();
        body.get(..self.area_end()).unwrap_or_default()
    }

    /// Where the entries end (and the tags start), from the end of the header.
    #[inline]
    fn area_end(&self) -> usize {
        self.body().len().saturating_sub(3 * self.len())
    }

    /// Where entry `i` starts, from the end of the header.
    #[inline]
    pub fn offset(&self, i: usize) -> Option<usize> {
        offset_in(self.body(), self.len(), i)
    }

    /// Entry `i`'s bytes (to the end of the area for the last one).
    #[inline]
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let start = self.offset(i)?;
        let end = self.offset(i + 1).unwrap_or_else(|| self.area_end());
        self.body().get(start..end)
    }

    /// The positions whose tag is `tag`, in order.
    pub fn with_tag(&self, tag: u8) -> impl Iterator<Item = usize> + '_ {
        let end = self.area_end();
        let tags = self.body().get(end..end + self.len()).unwrap_or_default();
        memchr::memchr_iter(tag, tags)
    }

    /// Runs `change` on the whole buffer (header first, always there) as a vector.
    fn edit<R>(&mut self, change: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        exact_buf::edit(&mut self.buf, &[0; HEADER], change)
    }

    /// Puts `entry` (of `size` bytes) at position `i`, tagged `tag`.
    pub fn insert(&mut self, i: usize, tag: u8, size: usize, entry: impl Iterator<Item = u8>) {
        let n = self.len();
        let i = i.min(n);
        let end = self.area_end();
        let at = self.offset(i).unwrap_or(end).min(end);
        self.edit(|buf| {
            // Exactly what is added: the buffer is the collection's memory, and the
            // box it becomes again keeps no spare room.
            buf.reserve_exact(size + 3);
            buf.splice(HEADER + at..HEADER + at, entry);
            if let Some(body) = buf.get_mut(HEADER..) {
                shift_offsets(body, n, i, size as isize);
            }
            // One more tag (the offsets move up by a byte), then one more offset.
            let tags = buf.len() - 3 * n;
            buf.insert(tags + i, tag);
            let slot = tags + n + 1 + 2 * i;
            buf.splice(slot..slot, (at as u16).to_le_bytes());
            write_count(buf, n + 1);
        });
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
        let (from, to) = (HEADER + from, HEADER + to);
        if to - from == size {
            if let Some(bytes) = self.buf.get_mut(from..to) {
                for (slot, byte) in bytes.iter_mut().zip(with) {
                    *slot = byte;
                }
            }
            return;
        }
        let n = self.len();
        let grows = size as isize - (to - from) as isize;
        self.edit(|buf| {
            // Exactly what is added, as in `insert` (a splice alone would double the
            // buffer, and the box it becomes again would reallocate it back).
            buf.reserve_exact(size.saturating_sub(to - from));
            buf.splice(from..to, with);
            if let Some(body) = buf.get_mut(HEADER..) {
                shift_offsets(body, n, i + 1, grows);
            }
        });
    }

    /// Removes entry `i`, keeping the order of the others.
    pub fn remove(&mut self, i: usize) {
        let n = self.len();
        let Some(start) = self.offset(i) else {
            return;
        };
        let end = self.offset(i + 1).unwrap_or_else(|| self.area_end());
        self.edit(|buf| {
            buf.drain(HEADER + start..HEADER + end);
            if let Some(body) = buf.get_mut(HEADER..) {
                shift_offsets(body, n, i + 1, -((end - start) as isize));
            }
            // Its offset, then its tag (the offsets move back by a byte with it).
            let tags = buf.len() - 3 * n;
            let slot = tags + n + 2 * i;
            buf.drain(slot..slot + 2);
            buf.remove(tags + i);
            write_count(buf, n - 1);
        });
    }

    /// Bytes it holds on the heap.
    pub fn heap_size(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An entry of `len` bytes, each its position's low byte.
    fn bytes(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| seed.wrapping_add(i as u8)).collect()
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(usize, u8, usize),
        Replace(usize, usize),
        Remove(usize),
        Saw(usize, usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0usize..40, any::<u8>(), 0usize..20).prop_map(|(i, t, n)| Op::Insert(i, t, n)),
            2 => (0usize..40, 0usize..20).prop_map(|(i, n)| Op::Replace(i, n)),
            2 => (0usize..40).prop_map(Op::Remove),
            1 => (0usize..200, 0usize..200).prop_map(|(e, l)| Op::Saw(e, l)),
        ]
    }

    proptest! {
        /// Entries, tags and peaks answer as a vector of them does, and the buffer is
        /// exactly its header, entries and index: no spare room.
        #[test]
        fn behaves_as_a_vector(ops in proptest::collection::vec(op(), 0..120)) {
            let mut entries = TaggedEntries::default();
            let mut model: Vec<(u8, Vec<u8>)> = Vec::new();
            let mut peaks = Peaks::default();
            for (n, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Insert(i, tag, len) => {
                        let entry = bytes(len, n as u8);
                        entries.insert(i, tag, len, entry.iter().copied());
                        model.insert(i.min(model.len()), (tag, entry));
                    }
                    Op::Replace(i, len) if i < model.len() => {
                        // The entry's second half becomes `len` new bytes.
                        let old = &mut model[i].1;
                        let from = old.len() / 2;
                        let with = bytes(len, n as u8);
                        entries.replace(i, from..old.len(), len, with.iter().copied());
                        old.truncate(from);
                        old.extend_from_slice(&with);
                    }
                    Op::Remove(i) if i < model.len() => {
                        entries.remove(i);
                        model.remove(i);
                    }
                    Op::Saw(held, len) => {
                        entries.saw(held, len);
                        peaks.saw(held, len);
                    }
                    _ => {}
                }
                prop_assert_eq!(entries.len(), model.len());
                for (i, (tag, entry)) in model.iter().enumerate() {
                    prop_assert_eq!(entries.get(i), Some(&entry[..]));
                    prop_assert!(entries.with_tag(*tag).any(|at| at == i));
                }
                prop_assert_eq!(entries.get(model.len()), None);
                let area: Vec<u8> = model.iter().flat_map(|(_, e)| e.iter().copied()).collect();
                prop_assert_eq!(entries.area(), &area[..]);
                prop_assert_eq!(entries.peaks().to_narrow_bytes(), peaks.to_narrow_bytes());
                if entries.heap_size() > 0 {
                    prop_assert_eq!(entries.heap_size(), HEADER + area.len() + 3 * model.len());
                }
            }
        }
    }

    #[test]
    fn built_at_once_reads_as_inserted() {
        let mut area = Area::with_capacity(5, 2);
        area.extend(b"abcde".iter().copied());
        let peaks = Peaks::new(2, 3);
        let built = TaggedEntries::from_area(area, &[(7, 2), (9, 3)], peaks);
        assert_eq!(built.get(0), Some(&b"ab"[..]));
        assert_eq!(built.get(1), Some(&b"cde"[..]));
        assert_eq!(built.with_tag(9).collect::<Vec<_>>(), vec![1]);
        assert_eq!(built.peaks().to_narrow_bytes(), peaks.to_narrow_bytes());
        assert_eq!(built.heap_size(), HEADER + 5 + 6);
    }

    #[test]
    fn empty_allocates_nothing() {
        let empty = TaggedEntries::default();
        assert_eq!(empty.heap_size(), 0);
        assert_eq!(empty.len(), 0);
        assert_eq!(empty.get(0), None);
        assert!(empty.area().is_empty());
    }
}
