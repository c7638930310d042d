//! Hashes: fields and their values, in insertion order.
//!
//! A small hash is one buffer of its pairs ([`PackedPairs`]), as Redis keeps one in a
//! listpack. Past [`PACKED_MAX_ENTRIES`] pairs, or with a field or value longer than
//! [`PACKED_MAX_LEN`], it becomes a map for good (Redis converts a listpack to a
//! hashtable and never back). What Redis reports as the encoding follows Redis's own
//! rules and configured limits ([`Peaks`]), whichever form is held here.

use super::incremental_map::{self, IncrementalMap};

use super::by_position::{random_below, ByPosition};
use super::compact::CompactBytes;
use super::packed_pairs::{self, PackedPairs};
use super::value::{ElementBytes, Hasher, Peaks};

/// Pairs a packed hash holds at most (Redis's default `hash-max-listpack-entries`).
pub const PACKED_MAX_ENTRIES: usize = packed_pairs::MAX_PAIRS;
/// The longest field or value a packed hash holds (Redis's default
/// `hash-max-listpack-value`).
pub const PACKED_MAX_LEN: usize = packed_pairs::MAX_LEN;

/// A hash: see the module docs.
///
/// Its [`Peaks`] (what decides Redis's encoding, see [`HashValue::is_listpack`]) live
/// in the packed buffer's header or beside the map, so a small hash is one allocation,
/// which a key's entry holds without a box.
#[derive(Debug, Clone, Default)]
pub struct HashValue {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    Packed(PackedPairs),
    /// Boxed: a packed hash, the common case, stays two words wide.
    Map(Box<Table>),
}

/// A large hash.
#[derive(Debug, Clone)]
struct Table {
    /// Removal leaves the pair's position vacant and moves no other pair (see
    /// [`IncrementalMap::vacate`]): HSCAN's cursors are positions.
    map: IncrementalMap<CompactBytes, CompactBytes, Hasher>,
    peaks: Peaks,
    /// Its fields' and values' bytes together.
    bytes: ElementBytes,
}

impl Table {
    fn with_capacity(capacity: usize, peaks: Peaks) -> Box<Table> {
        Box::new(Table {
            map: IncrementalMap::with_capacity(capacity),
            peaks,
            bytes: ElementBytes::default(),
        })
    }
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Packed(PackedPairs::default())
    }
}

/// The pairs of a hash, in order.
pub enum Iter<'a> {
    /// Of a packed hash.
    Packed(packed_pairs::Iter<'a>),
    /// Of a map.
    Map(incremental_map::Iter<'a, CompactBytes, CompactBytes>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Packed(p) => p.next(),
            Iter::Map(m) => m.next().map(|(f, v)| (f.as_bytes(), v.as_bytes())),
        }
    }
}

impl HashValue {
    /// An empty hash for `capacity` pairs (a load): a map from the start when they will
    /// not fit a packed one.
    pub fn with_capacity(capacity: usize) -> HashValue {
        let repr = if capacity > PACKED_MAX_ENTRIES {
            Repr::Map(Table::with_capacity(capacity, Peaks::default()))
        } else {
            Repr::default()
        };
        HashValue { repr }
    }

    /// A hash of `pairs` at once (a load), packed in one allocation when they fit;
    /// `None` when a field repeats.
    pub fn from_pairs(pairs: &[(&[u8], &[u8])]) -> Option<HashValue> {
        let mut peaks = Peaks::default();
        peaks.saw(
            pairs.len(),
            pairs
                .iter()
                .map(|(f, v)| f.len().max(v.len()))
                .max()
                .unwrap_or(0),
        );
        let packable = pairs.len() <= PACKED_MAX_ENTRIES
            && pairs.iter().all(|(f, v)| packed_pairs::fits(f, v));
        if packable {
            return Some(HashValue {
                repr: Repr::Packed(PackedPairs::from_pairs(pairs, peaks)?),
            });
        }
        let mut hash = HashValue::with_capacity(pairs.len());
        for (field, value) in pairs {
            if !hash.insert(field, value) {
                return None;
            }
        }
        Some(hash)
    }

    /// How many pairs it holds.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Packed(p) => p.len(),
            Repr::Map(t) => t.map.len(),
        }
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Packed(p) => p.get(field),
            Repr::Map(t) => t.map.get(field).map(CompactBytes::as_bytes),
        }
    }

    /// Whether `field` is there.
    pub fn contains_key(&self, field: &[u8]) -> bool {
        match &self.repr {
            Repr::Packed(p) => p.find(field).is_some(),
            Repr::Map(t) => t.map.contains_key(field),
        }
    }

    /// Sets `field` to `value`; true when the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let added = self.put(field, value);
        let (len, longest) = (self.len(), field.len().max(value.len()));
        match &mut self.repr {
            Repr::Packed(p) => p.saw(len, longest),
            Repr::Map(t) => t.peaks.saw(len, longest),
        }
        added
    }

    /// What Redis's encoding depends on (see [`Peaks`]).
    fn peaks(&self) -> Peaks {
        match &self.repr {
            Repr::Packed(p) => p.peaks(),
            Repr::Map(t) => t.peaks,
        }
    }

    fn put(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Repr::Packed(p) = &mut self.repr {
            if packed_pairs::fits(field, value) {
                if let Some(i) = p.find(field) {
                    p.set_value(i, value);
                    return false;
                }
                if p.len() < PACKED_MAX_ENTRIES {
                    p.push(field, value);
                    return true;
                }
            }
        }
        // A packed hash that outgrew its form becomes a map, for good.
        let mut table = match std::mem::take(&mut self.repr) {
            Repr::Map(table) => table,
            Repr::Packed(p) => {
                let mut table = Table::with_capacity(p.len() + 1, p.peaks());
                for (f, v) in p.iter() {
                    table.map.insert(CompactBytes::new(f), CompactBytes::new(v));
                    table.bytes.add(f.len() + v.len());
                }
                table
            }
        };
        let old = table
            .map
            .insert(CompactBytes::new(field), CompactBytes::new(value));
        let added = match old {
            Some(old) => {
                table.bytes.remove(field.len() + old.len());
                false
            }
            None => true,
        };
        table.bytes.add(field.len() + value.len());
        self.repr = Repr::Map(table);
        added
    }

    /// Removes `field`; true when it was there. A packed hash keeps the order of the
    /// others, as a listpack does.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Packed(p) => match p.find(field) {
                Some(i) => {
                    p.remove(i);
                    true
                }
                None => false,
            },
            Repr::Map(t) => match t.map.vacate_key(field) {
                Some((_, value)) => {
                    t.bytes.remove(field.len() + value.len());
                    true
                }
                None => false,
            },
        }
    }

    /// The pairs, in order.
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Packed(p) => Iter::Packed(p.iter()),
            Repr::Map(t) => Iter::Map(t.map.iter()),
        }
    }

    /// The pair at position `i` (in [`HashValue::iter`]'s order; `None` where it is
    /// vacant), in O(1).
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Packed(p) => p.get_index(i),
            Repr::Map(t) => {
                let (f, v) = t.map.get_index(i)?;
                Some((f.as_bytes(), v.as_bytes()))
            }
        }
    }

    /// Whether Redis would still hold it as a `listpack` under these limits.
    pub fn is_listpack(&self, max_entries: usize, max_value: usize) -> bool {
        // Every addition passes `insert` (or `from_pairs`), so the peaks cover what was
        // added since the limits last changed (`settle_encoding` kept the rest).
        let outgrew = matches!(&self.repr, Repr::Map(t) if t.bytes.outgrew_listpack());
        !outgrew && self.peaks().within(max_entries, max_value)
    }

    /// Loaded from a listpack or ziplist: Redis weighs only its count against the
    /// limits then, not its fields' and values' lengths (`rdbLoadObject`).
    pub fn loaded_as_listpack(&mut self) {
        self.set_peaks(Peaks::new(self.len(), 0));
    }

    /// Keeps the encoding Redis gave it under the limits in force until now, before
    /// they change (see [`Peaks::settled`]).
    pub fn settle_encoding(&mut self, max_entries: usize, max_value: usize) {
        // A hash past a listpack's safety size stays converted by its bytes' own flag.
        self.set_peaks(self.peaks().settled(max_entries, max_value));
    }

    fn set_peaks(&mut self, peaks: Peaks) {
        match &mut self.repr {
            Repr::Packed(p) => p.set_peaks(peaks),
            Repr::Map(t) => t.peaks = peaks,
        }
    }

    /// Bytes it holds on the heap, about (MEMORY USAGE), the pairs' own bytes estimated
    /// from `samples` of them ([`super::sampled::sampled_sum`]).
    pub fn heap_size(&self, samples: usize) -> usize {
        match &self.repr {
            Repr::Packed(p) => p.heap_size(),
            Repr::Map(t) => {
                // Each pair, its hash and its index slot.
                let pairs = t.map.iter().map(|(f, v)| f.heap_size() + v.heap_size());
                t.map.capacity() * (2 * std::mem::size_of::<CompactBytes>() + 16)
                    + super::sampled::sampled_sum(pairs, t.map.len(), samples)
            }
        }
    }
}

impl<'a> FromIterator<(&'a [u8], &'a [u8])> for HashValue {
    fn from_iter<I: IntoIterator<Item = (&'a [u8], &'a [u8])>>(pairs: I) -> HashValue {
        let mut hash = HashValue::default();
        for (field, value) in pairs {
            hash.insert(field, value);
        }
        hash
    }
}

/// Positions as [`HashValue::get_index`] reads them.
impl ByPosition for HashValue {
    fn elements(&self) -> usize {
        self.len()
    }

    fn positions(&self) -> usize {
        match &self.repr {
            Repr::Packed(p) => p.len(),
            Repr::Map(t) => t.map.positions(),
        }
    }

    fn holds(&self, i: usize) -> bool {
        self.get_index(i).is_some()
    }

    fn random_index(&self) -> Option<usize> {
        match &self.repr {
            Repr::Packed(p) => random_below(p.len()),
            Repr::Map(t) => t.map.random_index(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Vec<u8>, Vec<u8>),
        Remove(Vec<u8>),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few distinct fields, so inserts replace and removals find; lengths around
        // the packed limit.
        let field = prop_oneof![
            (0u8..40).prop_map(|n| vec![b'f', n]),
            (60usize..70).prop_map(|n| vec![b'l'; n]),
        ];
        let value = prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..10),
            proptest::collection::vec(any::<u8>(), 60..70),
        ];
        prop_oneof![
            4 => (field.clone(), value).prop_map(|(f, v)| Op::Insert(f, v)),
            1 => field.prop_map(Op::Remove),
        ]
    }

    proptest! {
        /// Every operation answers as a map does; a packed hash keeps insertion order
        /// (removals shift, as a listpack's); a large one never moves a pair up as
        /// others come and go (HSCAN's cursors are positions, walked down).
        #[test]
        fn behaves_as_a_map(ops in proptest::collection::vec(op(), 0..300)) {
            let mut hash = HashValue::default();
            let mut model: IndexMap<Vec<u8>, Vec<u8>> = IndexMap::new();
            for op in ops {
                let packed = matches!(hash.repr, Repr::Packed(_));
                match op {
                    Op::Insert(f, v) => {
                        let new = model.insert(f.clone(), v.clone()).is_none();
                        prop_assert_eq!(hash.insert(&f, &v), new);
                    }
                    Op::Remove(f) => {
                        let there = model.shift_remove(&f).is_some();
                        let before: Vec<(Vec<u8>, usize)> = (0..hash.positions())
                            .filter_map(|i| hash.get_index(i).map(|(f, _)| (f.to_vec(), i)))
                            .collect();
                        prop_assert_eq!(hash.remove(&f), there);
                        if !packed {
                            // Only compaction moves a pair, from the end into a hole:
                            // down, so HSCAN's descending cursor passes none by.
                            for (other, at) in before.iter().filter(|(o, _)| *o != f) {
                                let now = (0..=*at)
                                    .rev()
                                    .find(|&i| hash.get_index(i).is_some_and(|(o, _)| o == &other[..]));
                                prop_assert!(now.is_some(), "{:?} moved up from {}", other, at);
                            }
                        }
                    }
                }
                prop_assert_eq!(hash.len(), model.len());
                for (f, v) in &model {
                    prop_assert_eq!(hash.get(f), Some(&v[..]));
                }
                let pairs: Vec<(&[u8], &[u8])> = hash.iter().collect();
                let expected: Vec<(&[u8], &[u8])> =
                    model.iter().map(|(f, v)| (&f[..], &v[..])).collect();
                if matches!(hash.repr, Repr::Packed(_)) {
                    prop_assert_eq!(&pairs, &expected);
                } else {
                    let (mut got, mut want) = (pairs.clone(), expected.clone());
                    got.sort();
                    want.sort();
                    prop_assert_eq!(got, want);
                }
                let by_position: Vec<(&[u8], &[u8])> =
                    (0..hash.positions()).filter_map(|i| hash.get_index(i)).collect();
                prop_assert_eq!(&by_position, &pairs);
                prop_assert_eq!(hash.get_index(hash.positions()), None);
                if let Some(i) = hash.random_index() {
                    prop_assert!(hash.get_index(i).is_some());
                }
                // Built at once (a load), the same pairs in the same order.
                let rebuilt = HashValue::from_pairs(&expected);
                prop_assert_eq!(
                    rebuilt.as_ref().map(|h| h.iter().collect::<Vec<_>>()),
                    Some(expected.clone())
                );
            }
        }
    }

    #[test]
    fn a_load_refuses_a_repeated_field() {
        let pairs: [(&[u8], &[u8]); 3] = [(b"a", b"1"), (b"b", b"2"), (b"a", b"3")];
        assert!(HashValue::from_pairs(&pairs).is_none());
        let long = [b'x'; PACKED_MAX_LEN + 1];
        let pairs: [(&[u8], &[u8]); 2] = [(b"a", &long), (b"a", b"2")];
        assert!(HashValue::from_pairs(&pairs).is_none());
    }

    #[test]
    fn packs_until_a_limit_then_stays_a_map() {
        let mut hash = HashValue::default();
        for n in 0..PACKED_MAX_ENTRIES {
            hash.insert(format!("f{n}").as_bytes(), b"v");
        }
        assert!(matches!(hash.repr, Repr::Packed(_)));
        hash.insert(b"one more", b"v");
        assert!(matches!(hash.repr, Repr::Map(_)));
        hash.remove(b"one more");
        assert!(matches!(hash.repr, Repr::Map(_)));

        let mut long = HashValue::default();
        long.insert(b"f", &[b'x'; PACKED_MAX_LEN]);
        assert!(matches!(long.repr, Repr::Packed(_)));
        long.insert(b"f", &[b'x'; PACKED_MAX_LEN + 1]);
        assert!(matches!(long.repr, Repr::Map(_)));
        assert_eq!(long.get(b"f").map(<[u8]>::len), Some(PACKED_MAX_LEN + 1));
    }
}
