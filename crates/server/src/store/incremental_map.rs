//! A map whose entries keep positions, as `IndexMap`'s do, and whose hash index grows a
//! few entries at a time instead of all at once.
//!
//! A shard's keys must be reachable by position (random keys, eviction's samples, scan
//! cursors and snapshot cuts index into them), so they were an `IndexMap`: an array of
//! entries and a hash table of their positions. When that table filled up it was
//! rebuilt whole, under the shard's lock: 37 ms at 455k keys and 74 ms at 890k on this
//! machine, so a fill of 11M keys over 16 shards showed 24 ms at p99.99 and 49 ms at
//! most where redis-server, which rehashes incrementally, showed 5 and 11
//! (bench/NOTES.md, "Stop 76").
//!
//! Here a full index (tombstones count as full, as they do in the table) is replaced by
//! an empty one with twice the buckets (the same number when tombstones filled it), and
//! the old one's positions move over [`MOVES_PER_CHANGE`] at a time with each change,
//! and more in the background cycle ([`IncrementalMap::tidy`]). While they move, a
//! lookup probes the new index, then the old. Every position below the move's frontier
//! is in the new index; those above may be in either, and are moved as the frontier
//! passes them. An index shrinks the same way, when one for the entries left would
//! have half the buckets or fewer ([`IncrementalMap::shrink_to`]).
//!
//! The entries array still grows by reallocation, which for large arrays glibc does by
//! remapping pages, not copying.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::ops::{Index, IndexMut};

use hashbrown::HashTable;

/// Positions moved from the old index to the new one with each insertion or removal:
/// enough that the new index, with room for 3/4 more than the entries it starts with,
/// never fills before the move ends; few enough to cost a change a few microseconds.
const MOVES_PER_CHANGE: usize = 32;

/// Positions moved per call of [`IncrementalMap::tidy`] (the background cycle's), so a
/// move ends even when nothing changes the map.
const MOVES_PER_TIDY: usize = 1024;

#[derive(Clone)]
struct Bucket<K, V> {
    hash: u64,
    key: K,
    value: V,
}

/// The index being emptied into the current one.
#[derive(Clone)]
struct Moving {
    table: HashTable<usize>,
    /// Every position below this is in the current index.
    next: usize,
}

/// Entries in positions `0..len`, found by key through a hash index of positions that
/// grows incrementally (see the module's documentation). Removal swaps the last entry
/// into the hole, as `IndexMap::swap_remove_index` does.
///
/// ```text
/// let mut map: IncrementalMap<CompactBytes, u32, Hasher> = IncrementalMap::default();
/// map.insert(CompactBytes::new(b"a"), 1);
/// assert_eq!(map.get_index_of(b"a".as_slice()), Some(0));
/// ```
#[derive(Clone)]
pub struct IncrementalMap<K, V, S> {
    entries: Vec<Bucket<K, V>>,
    index: HashTable<usize>,
    /// The capacity `index` was made with (its buckets follow from it; the table's own
    /// `capacity` shrinks as tombstones take free slots).
    index_asked: usize,
    moving: Option<Moving>,
    hasher: S,
}

impl<K, V, S: Default> Default for IncrementalMap<K, V, S> {
    fn default() -> Self {
        IncrementalMap {
            entries: Vec::new(),
            index: HashTable::new(),
            index_asked: 0,
            moving: None,
            hasher: S::default(),
        }
    }
}

impl<K, V, S: Default> IncrementalMap<K, V, S> {
    /// An empty map with room for `capacity` entries, in the array and the index.
    pub fn with_capacity(capacity: usize) -> Self {
        IncrementalMap {
            entries: Vec::with_capacity(capacity),
            index: HashTable::with_capacity(capacity),
            index_asked: capacity,
            moving: None,
            hasher: S::default(),
        }
    }
}

impl<K: fmt::Debug, V: fmt::Debug, S> fmt::Debug for IncrementalMap<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// The capacity of a new index for `len` entries. A full index holds 7/8 of its
/// buckets; 7/4 of that asks for exactly twice the buckets (twice `len` would ask for
/// just over, and get four times), and an index full of tombstones, with half its
/// buckets' worth of entries, is replaced by one of the same size. Either leaves the
/// new index room for the move and the changes made while it runs.
fn index_capacity(len: usize) -> usize {
    (len / 4 * 7).max(8)
}

/// Removes position `at` (of hash `hash`) from `table`; false when it is not there.
fn take_position(table: &mut HashTable<usize>, hash: u64, at: usize) -> bool {
    match table.find_entry(hash, |&p| p == at) {
        Ok(found) => {
            found.remove();
            true
        }
        Err(_) => false,
    }
}

/// Moves position `at` (of hash `hash`) from the old index `old`, when it is there,
/// into `index`, filed as `to`.
fn move_position<K, V>(
    old: &mut HashTable<usize>,
    index: &mut HashTable<usize>,
    entries: &[Bucket<K, V>],
    hash: u64,
    at: usize,
    to: usize,
) {
    if take_position(old, hash, at) {
        index.insert_unique(hash, to, |&p| entries[p].hash);
    }
}

impl<K, V, S> IncrementalMap<K, V, S> {
    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries the array holds without reallocating.
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// The entry at `index`.
    #[inline]
    pub fn get_index(&self, index: usize) -> Option<(&K, &V)> {
        self.entries.get(index).map(|b| (&b.key, &b.value))
    }

    /// The entry at `index`, its value writable.
    #[inline]
    pub fn get_index_mut(&mut self, index: usize) -> Option<(&K, &mut V)> {
        self.entries.get_mut(index).map(|b| (&b.key, &mut b.value))
    }

    /// Entries in position order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        self.iter_from(0)
    }

    /// Entries from position `start` on (none when it is past the end).
    pub fn iter_from(&self, start: usize) -> Iter<'_, K, V> {
        let start = start.min(self.entries.len());
        Iter(self.entries[start..].iter())
    }

    /// Keys in position order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator {
        self.entries.iter().map(|b| &b.key)
    }

    /// Room for `additional` more entries in the array (the index grows by itself).
    pub fn reserve_exact(&mut self, additional: usize) {
        self.entries.reserve_exact(additional);
    }

    /// Whether positions are still moving between two indexes.
    pub fn is_moving(&self) -> bool {
        self.moving.is_some()
    }

    /// Moves up to `budget` positions from the old index into the current one, and
    /// drops the old one once it is empty.
    fn step(&mut self, budget: usize) {
        let Some(moving) = &mut self.moving else {
            return;
        };
        let entries = &self.entries;
        let mut left = budget;
        while left > 0 && moving.next < entries.len() && !moving.table.is_empty() {
            let at = moving.next;
            let hash = entries[at].hash;
            move_position(&mut moving.table, &mut self.index, entries, hash, at, at);
            moving.next += 1;
            left -= 1;
        }
        if moving.table.is_empty() || moving.next >= entries.len() {
            debug_assert!(
                moving.table.is_empty(),
                "positions left behind the frontier"
            );
            self.moving = None;
        }
    }

    /// Finishes a move in progress at once.
    fn finish_moving(&mut self) {
        self.step(usize::MAX);
    }

    /// The background cycle's share of a move in progress (see [`MOVES_PER_TIDY`]).
    pub fn tidy(&mut self) {
        self.step(MOVES_PER_TIDY);
    }

    /// Starts moving every position into a new index sized for `capacity` entries.
    fn start_moving(&mut self, capacity: usize) {
        self.finish_moving();
        let old = std::mem::replace(&mut self.index, HashTable::with_capacity(capacity));
        self.index_asked = capacity;
        if !old.is_empty() {
            self.moving = Some(Moving {
                table: old,
                next: 0,
            });
        }
    }

    /// Before an insertion into the current index: a full one (no slot left that is
    /// neither used nor a tombstone) is replaced, so the table never rebuilds itself.
    #[inline]
    fn room_in_index(&mut self) {
        if self.index.len() < self.index.capacity() {
            return;
        }
        if self.moving.is_some() {
            // The pace above should prevent this; finish rather than stall twice.
            self.finish_moving();
            if self.index.len() < self.index.capacity() {
                return;
            }
        }
        self.start_moving(index_capacity(self.entries.len()));
    }

    /// Position `hole` now holds what was at `from` (the last position, swapped in):
    /// its index entry follows, into the current index when the frontier has passed
    /// the hole.
    fn relocate(&mut self, hash: u64, from: usize, hole: usize) {
        if let Some(p) = self.index.find_mut(hash, |&p| p == from) {
            *p = hole;
            return;
        }
        let Some(moving) = &mut self.moving else {
            return;
        };
        if hole < moving.next {
            move_position(
                &mut moving.table,
                &mut self.index,
                &self.entries,
                hash,
                from,
                hole,
            );
        } else if let Some(p) = moving.table.find_mut(hash, |&p| p == from) {
            *p = hole;
        }
    }

    /// Removes the entry at `index`, the last one taking its place.
    pub fn swap_remove_index(&mut self, index: usize) -> Option<(K, V)> {
        let hash = self.entries.get(index)?.hash;
        if !take_position(&mut self.index, hash, index) {
            if let Some(moving) = &mut self.moving {
                take_position(&mut moving.table, hash, index);
            }
        }
        let last = self.entries.len() - 1;
        if index != last {
            // The insertions below may need room: `relocate` inserts at most one.
            self.room_in_index();
            let moved_hash = self.entries[last].hash;
            self.relocate(moved_hash, last, index);
        }
        let removed = self.entries.swap_remove(index);
        self.step(MOVES_PER_CHANGE);
        Some((removed.key, removed.value))
    }

    /// Gives half the array back (and the index, moved incrementally) once it is at most
    /// a quarter full, for a map with no policy of its own (a shard keeps its own in
    /// `FreeSlots`). A small map keeps what it has.
    pub fn shrink_if_sparse(&mut self) {
        const SMALL: usize = 1024;
        if self.capacity() >= SMALL && self.len() * 4 <= self.capacity() {
            self.shrink_to(self.capacity() / 2);
        }
    }

    /// Shrinks the array to hold at least `min` entries, and the index with it (moved
    /// incrementally) when an index for them would have half the buckets or fewer.
    pub fn shrink_to(&mut self, min: usize) {
        self.entries.shrink_to(min);
        let wanted = index_capacity(min.max(self.entries.len()));
        if self.moving.is_none() && wanted * 2 <= self.index_asked {
            self.start_moving(wanted);
        }
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> IncrementalMap<K, V, S> {
    /// The hash the index files `key` under.
    #[inline]
    fn hash_of<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        self.hasher.hash_one(key)
    }

    #[inline]
    fn find<Q>(&self, hash: u64, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let entries = &self.entries;
        let eq = |&p: &usize| entries[p].key.borrow() == key;
        if let Some(&p) = self.index.find(hash, eq) {
            return Some(p);
        }
        let moving = self.moving.as_ref()?;
        moving.table.find(hash, eq).copied()
    }

    /// The position of `key`.
    #[inline]
    pub fn get_index_of<Q>(&self, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.entries.is_empty() {
            return None;
        }
        self.find(self.hash_of(key), key)
    }

    /// The position of `key`, or the hash to add it under with
    /// [`Self::push_new`] (one hash whether it is there or not).
    #[inline]
    pub fn find_or_hash<Q>(&self, key: &Q) -> Result<usize, u64>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hash_of(key);
        self.find(hash, key).ok_or(hash)
    }

    /// The value of `key`.
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get_index_of(key).map(|p| &self.entries[p].value)
    }

    /// Whether `key` is present.
    #[inline]
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get_index_of(key).is_some()
    }

    /// Adds `key`, which must not be present, at the end; `hash` is its hash (from
    /// [`Self::find_or_hash`]). Returns its position.
    pub fn push_new(&mut self, hash: u64, key: K, value: V) -> usize {
        debug_assert_eq!(hash, self.hash_of(&key));
        self.room_in_index();
        let at = self.entries.len();
        self.entries.push(Bucket { hash, key, value });
        let entries = &self.entries;
        self.index.insert_unique(hash, at, |&p| entries[p].hash);
        self.step(MOVES_PER_CHANGE);
        at
    }

    /// Sets `key` to `value`: in place when present (returning the old value), else at
    /// the end. Returns the position and any old value.
    pub fn insert_full(&mut self, key: K, value: V) -> (usize, Option<V>) {
        match self.find_or_hash(&key) {
            Ok(at) => (
                at,
                Some(std::mem::replace(&mut self.entries[at].value, value)),
            ),
            Err(hash) => (self.push_new(hash, key, value), None),
        }
    }

    /// [`Self::insert_full`] without the position.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.insert_full(key, value).1
    }

    /// Removes `key`, the last entry taking its place.
    pub fn swap_remove<Q>(&mut self, key: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let at = self.get_index_of(key)?;
        self.swap_remove_index(at)
    }
}

/// The entries of an [`IncrementalMap`] in position order.
pub struct Iter<'a, K, V>(std::slice::Iter<'a, Bucket<K, V>>);

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|b| (&b.key, &b.value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<K, V> DoubleEndedIterator for Iter<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|b| (&b.key, &b.value))
    }
}

impl<K, V> ExactSizeIterator for Iter<'_, K, V> {}

impl<K, V, S> Index<usize> for IncrementalMap<K, V, S> {
    type Output = V;

    fn index(&self, index: usize) -> &V {
        &self.entries[index].value
    }
}

impl<K, V, S> IndexMut<usize> for IncrementalMap<K, V, S> {
    fn index_mut(&mut self, index: usize) -> &mut V {
        &mut self.entries[index].value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;
    use proptest::prelude::*;

    type Map = IncrementalMap<u32, u32, foldhash::fast::RandomState>;

    fn check(map: &Map, model: &IndexMap<u32, u32>) {
        assert_eq!(map.len(), model.len());
        for (at, (k, v)) in model.iter().enumerate() {
            assert_eq!(map.get_index(at), Some((k, v)), "position {at}");
            assert_eq!(map.get_index_of(k), Some(at), "key {k}");
        }
        let indexed = map.index.len() + map.moving.as_ref().map_or(0, |m| m.table.len());
        assert_eq!(indexed, map.len(), "each position indexed once");
        if let Some(moving) = &map.moving {
            for at in 0..moving.next.min(map.len()) {
                let hash = map.entries[at].hash;
                assert!(map.index.find(hash, |&p| p == at).is_some(), "{at} behind");
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u32, u32),
        Remove(u32),
        RemoveAt(usize),
        Shrink(usize),
        Tidy,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0..3000u32, any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            3 => (0..3000u32).prop_map(Op::Remove),
            2 => any::<usize>().prop_map(Op::RemoveAt),
            1 => (0..64usize).prop_map(Op::Shrink),
            1 => Just(Op::Tidy),
        ]
    }

    proptest! {
        /// Every operation leaves the same entries at the same positions as `IndexMap`,
        /// moves in progress or not.
        #[test]
        fn same_positions_as_index_map(ops in proptest::collection::vec(op(), 1..4000)) {
            let mut map = Map::default();
            let mut model = IndexMap::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        prop_assert_eq!(map.insert_full(k, v), model.insert_full(k, v));
                    }
                    Op::Remove(k) => {
                        prop_assert_eq!(map.swap_remove(&k), model.swap_remove_entry(&k));
                    }
                    Op::RemoveAt(at) => {
                        let at = if model.is_empty() { at } else { at % model.len() };
                        prop_assert_eq!(map.swap_remove_index(at), model.swap_remove_index(at));
                    }
                    Op::Shrink(min) => map.shrink_to(min),
                    Op::Tidy => map.tidy(),
                }
                let indexed = map.index.len() + map.moving.as_ref().map_or(0, |m| m.table.len());
                prop_assert_eq!(indexed, map.len());
            }
            check(&map, &model);
        }
    }

    #[test]
    fn growth_moves_positions_incrementally() {
        let mut map = Map::default();
        let mut model = IndexMap::new();
        let mut saw_moving = false;
        for k in 0..50_000u32 {
            map.insert(k, k);
            model.insert(k, k);
            saw_moving |= map.is_moving();
            if k % 4999 == 0 {
                check(&map, &model);
            }
        }
        assert!(saw_moving);
        // Churn: tombstones fill the index, which is replaced without growing.
        for k in 50_000..200_000u32 {
            assert_eq!(
                map.swap_remove(&(k - 50_000)),
                model.swap_remove_entry(&(k - 50_000))
            );
            map.insert(k, k);
            model.insert(k, k);
        }
        check(&map, &model);
        assert!(
            map.index.capacity() <= 4 * 50_000,
            "{}",
            map.index.capacity()
        );
        while map.is_moving() {
            map.tidy();
        }
        check(&map, &model);
    }
}
