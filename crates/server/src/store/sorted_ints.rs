//! Distinct integers in ascending order, each stored in the fewest of 2, 4 or 8 bytes
//! that holds the widest of them, as Redis's intset: a set of small integers takes a
//! quarter of the bytes of a `Vec<i64>`. Adding one that needs more bytes rewrites the
//! others wider, once (Redis's upgrade); nothing narrows again.
//!
//! The integers and a 3-byte header (the width, then the owner's most members held)
//! are one exact-size allocation (a `Box<[u8]>`, see [`super::exact_buf`]), so the set that
//! owns it needs no box of its own: a small set of integers is its key's entry and this
//! buffer, as in Redis an intset and its `robj`. A change reallocates, as an intset's
//! does.

use super::exact_buf;

/// The header's bytes: the width, then the most members held (a `u16`).
const HEADER: usize = 3;

/// The header of a set that held nothing yet: the narrowest width.
const EMPTY_HEADER: [u8; HEADER] = [2, 0, 0];

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct SortedInts {
    /// Empty (no allocation) until the first integer or count is stored.
    buf: Box<[u8]>,
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
    /// Integers already ascending and distinct.
    pub fn from_sorted(ints: &[i64]) -> SortedInts {
        let width = ints.iter().map(|&n| width_of(n)).max().unwrap_or(2);
        let mut buf = vec![0u8; HEADER + width * ints.len()];
        buf[0] = width as u8;
        for (slot, &n) in buf[HEADER..].chunks_exact_mut(width).zip(ints) {
            write(slot, n);
        }
        SortedInts {
            buf: buf.into_boxed_slice(),
        }
    }

    /// The integers' bytes.
    #[inline]
    fn bytes(&self) -> &[u8] {
        self.buf.get(HEADER..).unwrap_or_default()
    }

    /// How many it holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.bytes().len() / self.width()
    }

    /// Bytes per integer.
    #[inline]
    fn width(&self) -> usize {
        match self.buf.first() {
            Some(&w @ (4 | 8)) => usize::from(w),
            _ => 2,
        }
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }

    /// The integer at position `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<i64> {
        let width = self.width();
        let at = i.checked_mul(width)?;
        self.bytes().get(at..at + width).map(read)
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

    /// Runs `change` on the whole buffer (header first, always there) as a vector.
    fn edit(&mut self, change: impl FnOnce(&mut Vec<u8>)) {
        exact_buf::edit(&mut self.buf, &EMPTY_HEADER, change);
    }

    /// Puts `n` at position `at`, where [`SortedInts::search`] said it goes.
    pub fn insert_at(&mut self, at: usize, n: i64) {
        if width_of(n) > self.width() {
            self.widen(width_of(n));
        }
        let width = self.width();
        let start = (HEADER + at * width).min(HEADER + self.bytes().len());
        self.edit(|buf| {
            // Exactly what is added: the box it becomes again keeps no spare room.
            buf.reserve_exact(width);
            buf.splice(start..start, n.to_le_bytes()[..width].iter().copied());
        });
    }

    /// Rewrites every integer in `width` bytes.
    fn widen(&mut self, width: usize) {
        let mut buf = Vec::with_capacity(HEADER + width * (self.len() + 1));
        buf.extend_from_slice(self.buf.get(..HEADER).unwrap_or(&EMPTY_HEADER));
        buf[0] = width as u8;
        for n in self.iter() {
            buf.extend_from_slice(&n.to_le_bytes()[..width]);
        }
        self.buf = buf.into_boxed_slice();
    }

    /// Removes and returns the integer at position `i`.
    pub fn remove_at(&mut self, i: usize) -> Option<i64> {
        let n = self.get(i)?;
        let start = HEADER + i * self.width();
        let end = start + self.width();
        self.edit(|buf| {
            buf.drain(start..end);
        });
        Some(n)
    }

    /// Ascending.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.bytes().chunks_exact(self.width()))
    }

    /// The most integers the owner held at once (see `SortedInts::saw`).
    pub fn most(&self) -> usize {
        self.buf
            .get(1..HEADER)
            .map_or(0, |m| usize::from(u16::from_le_bytes([m[0], m[1]])))
    }

    /// Records that the owner holds `members` now: kept here so that it needs no
    /// allocation of its own. In 16 bits, saturating: a set held as integers holds at
    /// most a few hundred (see `super::set::INTS_MAX`).
    pub fn saw(&mut self, members: usize) {
        let most = u16::try_from(members).unwrap_or(u16::MAX);
        if most as usize <= self.most() {
            return;
        }
        let header = exact_buf::header_mut(&mut self.buf, &EMPTY_HEADER);
        if let Some(slot) = header.get_mut(1..HEADER) {
            slot.copy_from_slice(&most.to_le_bytes());
        }
    }

    /// Forgets the most integers held (a limit changed: see
    /// `super::set::SetValue::settle_encoding`).
    pub fn forget_most(&mut self) {
        if let Some(slot) = self.buf.get_mut(1..HEADER) {
            slot.copy_from_slice(&[0, 0]);
        }
    }

    /// Bytes it holds on the heap.
    pub fn heap_size(&self) -> usize {
        self.buf.len()
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
        assert_eq!(ints.heap_size(), HEADER + 4);
        ints.insert(70_000);
        assert_eq!(ints.heap_size(), HEADER + 12);
        ints.insert(i64::MIN);
        assert_eq!(ints.heap_size(), HEADER + 32);
        assert_eq!(ints.iter().collect::<Vec<_>>(), [i64::MIN, -7, 5, 70_000]);
    }

    /// One exact allocation: the header and the integers, nothing spare; none at all
    /// while empty.
    #[test]
    fn exact_size_with_the_owner_s_count() {
        let mut ints = SortedInts::default();
        assert_eq!(ints.heap_size(), 0);
        assert_eq!(ints.most(), 0);
        ints.saw(0);
        assert_eq!(ints.heap_size(), 0);
        for n in 0..20 {
            ints.insert(n);
            ints.saw(ints.len());
        }
        assert_eq!(ints.heap_size(), HEADER + 40);
        assert_eq!(ints.most(), 20);
        ints.remove_at(0);
        assert_eq!(ints.heap_size(), HEADER + 38);
        assert_eq!(ints.most(), 20);
        ints.saw(70_000);
        assert_eq!(ints.most(), usize::from(u16::MAX));
        let built = SortedInts::from_sorted(&[1, 2, 3]);
        assert_eq!(built.heap_size(), HEADER + 6);
        assert_eq!(built.iter().collect::<Vec<_>>(), [1, 2, 3]);
    }
}
