//! Distinct integers in ascending order, each stored in the fewest of 2, 4 or 8 bytes
//! that holds the widest of them, as Redis's intset: a set of small integers takes a
//! quarter of the bytes of a `Vec<i64>`. Adding one that needs more bytes rewrites the
//! others wider, once (Redis's upgrade); nothing narrows again.
//!
//! Up to [`INLINE`] bytes (20 small integers) are held inline, in the room the set's
//! other form (a map) takes anyway: a small set of integers is then one allocation, as
//! Redis's intset is, instead of two.

use smallvec::SmallVec;

/// Bytes held without an allocation of their own.
pub const INLINE: usize = 40;

/// See the module docs.
#[derive(Debug, Clone)]
pub struct SortedInts {
    /// The integers, little-endian, `width` bytes each.
    bytes: SmallVec<[u8; INLINE]>,
    /// Bytes per integer: 2, 4 or 8.
    width: u8,
}

impl Default for SortedInts {
    fn default() -> Self {
        SortedInts {
            width: 2,
            bytes: SmallVec::new(),
        }
    }
}

/// The fewest bytes that hold `n`.
fn width_of(n: i64) -> usize {
    if i16::try_from(n).is_ok() {
        2
    } else if i32::try_from(n).is_ok() {
        4
    } else {
        8
    }
}

/// `n` in `width` bytes (which hold it).
fn write(out: &mut [u8], n: i64) {
    let all = n.to_le_bytes();
    out.copy_from_slice(&all[..out.len()]);
}

/// The integer in `raw` (2, 4 or 8 bytes, little-endian, sign-extended).
fn read(raw: &[u8]) -> i64 {
    match *raw {
        [a, b] => i64::from(i16::from_le_bytes([a, b])),
        [a, b, c, d] => i64::from(i32::from_le_bytes([a, b, c, d])),
        [a, b, c, d, e, f, g, h] => i64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => 0,
    }
}

impl SortedInts {
    /// Room for `capacity` integers of the narrowest width.
    pub fn with_capacity(capacity: usize) -> SortedInts {
        SortedInts {
            width: 2,
            bytes: SmallVec::with_capacity(2 * capacity),
        }
    }

    /// Integers already ascending and distinct.
    pub fn from_sorted(ints: &[i64]) -> SortedInts {
        let width = ints.iter().map(|&n| width_of(n)).max().unwrap_or(2);
        let mut bytes = SmallVec::from_elem(0u8, width * ints.len());
        for (slot, &n) in bytes.chunks_exact_mut(width).zip(ints) {
            write(slot, n);
        }
        SortedInts {
            width: width as u8,
            bytes,
        }
    }

    /// How many it holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.bytes.len() / self.width()
    }

    /// Bytes per integer.
    #[inline]
    fn width(&self) -> usize {
        usize::from(self.width)
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The integer at position `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<i64> {
        let width = self.width();
        let at = i.checked_mul(width)?;
        self.bytes.get(at..at + width).map(read)
    }

    /// Where `n` is (`Ok`) or would go (`Err`).
    pub fn search(&self, n: i64) -> Result<usize, usize> {
        if width_of(n) > self.width() {
            // Wider than every member: beyond one end.
            return Err(if n < 0 { 0 } else { self.len() });
        }
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid).map(|m| m.cmp(&n)) {
                Some(std::cmp::Ordering::Less) => lo = mid + 1,
                Some(std::cmp::Ordering::Greater) => hi = mid,
                _ => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Adds `n`; true when it was not there.
    pub fn insert(&mut self, n: i64) -> bool {
        match self.search(n) {
            Ok(_) => false,
            Err(at) => {
                self.insert_at(at, n);
                true
            }
        }
    }

    /// Puts `n` at position `at`, where [`SortedInts::search`] said it goes.
    pub fn insert_at(&mut self, at: usize, n: i64) {
        if width_of(n) > self.width() {
            self.widen(width_of(n));
        }
        let width = self.width();
        if self.bytes.len() == self.bytes.capacity() {
            // By an eighth: the vector is the set's memory.
            self.bytes.reserve_exact((self.bytes.len() / 8).max(width));
        }
        let start = at * width;
        self.bytes
            .insert_from_slice(start, &n.to_le_bytes()[..width]);
    }

    /// Rewrites every integer in `width` bytes.
    fn widen(&mut self, width: usize) {
        let ints: Vec<i64> = self.iter().collect();
        let mut bytes = SmallVec::with_capacity(width * (ints.len() + 1));
        for n in ints {
            bytes.extend_from_slice(&n.to_le_bytes()[..width]);
        }
        *self = SortedInts {
            width: width as u8,
            bytes,
        };
    }

    /// Removes and returns the integer at position `i`.
    pub fn remove_at(&mut self, i: usize) -> Option<i64> {
        let n = self.get(i)?;
        let width = self.width();
        let start = i * width;
        self.bytes.drain(start..start + width);
        Some(n)
    }

    /// Ascending.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.bytes.chunks_exact(self.width()))
    }

    /// Bytes it holds on the heap (none while inline).
    pub fn heap_size(&self) -> usize {
        if self.bytes.spilled() {
            self.bytes.capacity()
        } else {
            0
        }
    }
}

/// The integers of a [`SortedInts`], ascending.
pub struct Iter<'a>(std::slice::ChunksExact<'a, u8>);

impl Iterator for Iter<'_> {
    type Item = i64;

    #[inline]
    fn next(&mut self) -> Option<i64> {
        self.0.next().map(read)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn int() -> impl Strategy<Value = i64> {
        prop_oneof![
            -300i64..300,
            any::<i16>().prop_map(i64::from),
            any::<i32>().prop_map(i64::from),
            any::<i64>(),
        ]
    }

    proptest! {
        /// Inserts and removals answer as a B-tree set does, and the integers stay
        /// ascending whatever the widths met.
        #[test]
        fn behaves_as_an_ordered_set(
            ops in proptest::collection::vec((int(), any::<bool>(), 0usize..50), 0..200)
        ) {
            let mut ints = SortedInts::default();
            let mut model = std::collections::BTreeSet::new();
            for (n, add, at) in ops {
                if add {
                    prop_assert_eq!(ints.insert(n), model.insert(n));
                } else {
                    let expected = model.iter().nth(at).copied();
                    prop_assert_eq!(ints.remove_at(at), expected);
                    if let Some(m) = expected {
                        model.remove(&m);
                    }
                }
                prop_assert_eq!(ints.iter().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
                prop_assert_eq!(ints.len(), model.len());
                prop_assert_eq!(ints.search(n).is_ok(), model.contains(&n));
            }
            let all: Vec<i64> = model.iter().copied().collect();
            prop_assert_eq!(SortedInts::from_sorted(&all).iter().collect::<Vec<_>>(), all);
        }
    }

    #[test]
    fn narrowest_width_that_holds_them() {
        let mut ints = SortedInts::default();
        ints.insert(5);
        ints.insert(-7);
        assert_eq!(ints.bytes.len(), 4);
        ints.insert(70_000);
        assert_eq!(ints.bytes.len(), 12);
        ints.insert(i64::MIN);
        assert_eq!(ints.bytes.len(), 32);
        assert_eq!(ints.iter().collect::<Vec<_>>(), [i64::MIN, -7, 5, 70_000]);
    }

    /// Small sets take no allocation of their own; past `INLINE` bytes they move to
    /// the heap whole.
    #[test]
    fn inline_until_it_outgrows_the_room() {
        let mut ints = SortedInts::default();
        for n in 0..(INLINE / 2) as i64 {
            ints.insert(n);
        }
        assert_eq!(ints.heap_size(), 0);
        ints.insert(-1);
        assert!(ints.heap_size() > INLINE);
        assert_eq!(
            ints.iter().collect::<Vec<_>>(),
            (-1..(INLINE / 2) as i64).collect::<Vec<_>>()
        );
        assert_eq!(SortedInts::from_sorted(&[1, 2, 3]).heap_size(), 0);
    }
}
