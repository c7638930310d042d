//! A small hash's pairs in one buffer ([`TaggedEntries`]), as Redis keeps them in a
//! listpack: a third of the memory of a map at ten fields. Each entry is `len field len
//! value`, tagged by the field's hash. Walking the pairs themselves, one length after
//! another, made HGET on 100-field hashes 0.75x of a map; the tags and offsets made it
//! faster than the map.
//!
//! Fields and values are at most [`MAX_LEN`] bytes and there are at most [`MAX_PAIRS`]
//! pairs (the caller keeps to them), so every length fits a byte and the buffer stays
//! under 64 KiB.

use super::tagged_entries::{self, TaggedEntries};
use super::value::Peaks;

/// The most pairs a buffer holds.
pub const MAX_PAIRS: usize = 128;
/// The longest field or value.
pub const MAX_LEN: usize = 64;

const _: () = assert!(MAX_PAIRS * (2 * MAX_LEN + 5) <= u16::MAX as usize);

/// Pairs in one buffer (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct PackedPairs(TaggedEntries);

/// The tag of a field.
fn tag(field: &[u8]) -> u8 {
    tagged_entries::tag(0x5ed1_17e5, field)
}

/// Whether a pair of these lengths fits.
pub fn fits(field: &[u8], value: &[u8]) -> bool {
    field.len() <= MAX_LEN && value.len() <= MAX_LEN
}

/// An entry's field and value.
fn split(entry: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut iter = Iter(entry);
    Some((iter.element()?, iter.element()?))
}

/// A pair as an entry's bytes.
fn entry<'a>(field: &'a [u8], value: &'a [u8]) -> impl Iterator<Item = u8> + 'a {
    std::iter::once(field.len() as u8)
        .chain(field.iter().copied())
        .chain(std::iter::once(value.len() as u8))
        .chain(value.iter().copied())
}

impl PackedPairs {
    /// The pairs at once, in one allocation (a load); the caller keeps to the limits.
    /// `None` when a field repeats.
    pub fn from_pairs(pairs: &[(&[u8], &[u8])], peaks: Peaks) -> Option<PackedPairs> {
        let mut fields: Vec<&[u8]> = pairs.iter().map(|(f, _)| *f).collect();
        fields.sort_unstable();
        if fields.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        let size: usize = pairs.iter().map(|(f, v)| 2 + f.len() + v.len()).sum();
        let mut area = tagged_entries::Area::with_capacity(size, pairs.len());
        let mut index = Vec::with_capacity(pairs.len());
        for (field, value) in pairs {
            area.extend(entry(field, value));
            index.push((tag(field), 2 + field.len() + value.len()));
        }
        Some(PackedPairs(TaggedEntries::from_area(area, &index, peaks)))
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

    /// How many pairs it holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Pair `i`, by position in insertion order.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        split(self.0.get(i)?)
    }

    /// The position of `field`.
    pub fn find(&self, field: &[u8]) -> Option<usize> {
        self.0
            .with_tag(tag(field))
            .find(|&i| self.get_index(i).is_some_and(|(f, _)| f == field))
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.get_index(self.find(field)?).map(|(_, v)| v)
    }

    /// Appends a pair whose field is not there (the caller looked, and keeps to the
    /// limits).
    pub fn push(&mut self, field: &[u8], value: &[u8]) {
        let size = 2 + field.len() + value.len();
        self.0
            .insert(self.len(), tag(field), size, entry(field, value));
    }

    /// Replaces the value of pair `i`.
    pub fn set_value(&mut self, i: usize, value: &[u8]) {
        let Some((field, old)) = self.get_index(i) else {
            return;
        };
        // The value's length byte and the value.
        let at = 1 + field.len();
        let old = at..at + 1 + old.len();
        let with = std::iter::once(value.len() as u8).chain(value.iter().copied());
        self.0.replace(i, old, 1 + value.len(), with);
    }

    /// Removes pair `i`, keeping the order of the others.
    pub fn remove(&mut self, i: usize) {
        self.0.remove(i);
    }

    /// The pairs, in insertion order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.0.area())
    }

    /// Bytes it holds on the heap.
    pub fn heap_size(&self) -> usize {
        self.0.heap_size()
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
