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
//!
//! Removal swaps the last entry into the hole ([`IncrementalMap::swap_remove_index`]),
//! or, for a map whose positions are cursors that must not move (the keyspace's SCAN),
//! leaves the position vacant ([`IncrementalMap::vacate`]): the next new key fills it,
//! and once more than half the positions are vacant, the last entries move into the
//! holes a few at a time (the only moves such a map makes, as Redis's dict moves
//! entries only while it resizes).

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

/// The hash a vacant position keeps (see [`IncrementalMap::vacate`]). No key is filed
/// under it: [`IncrementalMap::hash_of`] files such a key under its neighbour.
const VACANT: u64 = u64::MAX;

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

/// Entries in positions `0..positions()`, found by key through a hash index of
/// positions that grows incrementally (see the module's documentation). Removal swaps
/// the last entry into the hole, as `IndexMap::swap_remove_index` does, or leaves the
/// position vacant ([`IncrementalMap::vacate`]).
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
    /// Positions [`IncrementalMap::vacate`] left vacant, to be filled first. May also
    /// name positions filled or cut off since (checked when taken).
    vacated: Vec<usize>,
    /// How many positions below `entries.len()` are vacant.
    vacant: usize,
    /// Whether removals and [`IncrementalMap::compact_in_background`] fill the holes
    /// (from when more than half the positions are vacant until none is).
    compacting: bool,
}

impl<K, V, S: Default> Default for IncrementalMap<K, V, S> {
    fn default() -> Self {
        IncrementalMap::with_capacity(0)
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
            vacated: Vec::new(),
            vacant: 0,
            compacting: false,
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
        self.entries.len() - self.vacant
    }

    /// Whether there is no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Positions in use or vacant: every entry's position is below it.
    #[inline]
    pub fn positions(&self) -> usize {
        self.entries.len()
    }

    /// Vacant positions (see [`Self::vacate`]).
    #[inline]
    pub fn vacant(&self) -> usize {
        self.vacant
    }

    /// Entries the array holds without reallocating.
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// The entry at `index` (`None` past the end or where it is vacant).
    #[inline]
    pub fn get_index(&self, index: usize) -> Option<(&K, &V)> {
        self.entries
            .get(index)
            .filter(|b| b.hash != VACANT)
            .map(|b| (&b.key, &b.value))
    }

    /// The entry at `index`, its value writable.
    #[inline]
    pub fn get_index_mut(&mut self, index: usize) -> Option<(&K, &mut V)> {
        self.entries
            .get_mut(index)
            .filter(|b| b.hash != VACANT)
            .map(|b| (&b.key, &mut b.value))
    }

    /// A random entry's position (`None` when the map is empty). Vacant positions are
    /// at most about half of them (see [`Self::vacate`]), so a few draws find one;
    /// a walk from the last draw bounds the worst case.
    pub fn random_index(&self) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        let positions = self.entries.len();
        let mut at = fastrand::usize(..positions);
        for _ in 0..16 {
            if self.entries[at].hash != VACANT {
                return Some(at);
            }
            at = fastrand::usize(..positions);
        }
        (0..positions)
            .map(|step| (at + step) % positions)
            .find(|&p| self.entries[p].hash != VACANT)
    }

    /// Entries in position order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter {
            buckets: self.entries.iter(),
            left: self.len(),
        }
    }

    /// Each position from `start` on, `None` where it is vacant (a walk by position).
    pub fn positions_from(&self, start: usize) -> impl Iterator<Item = Option<(&K, &V)>> + '_ {
        let start = start.min(self.entries.len());
        self.entries[start..]
            .iter()
            .map(|b| (b.hash != VACANT).then_some((&b.key, &b.value)))
    }

    /// Keys in position order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator {
        self.iter().map(|(key, _)| key)
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

    /// Takes position `at` (of hash `hash`) out of whichever index files it.
    fn forget_position(&mut self, hash: u64, at: usize) {
        if !take_position(&mut self.index, hash, at) {
            if let Some(moving) = &mut self.moving {
                take_position(&mut moving.table, hash, at);
            }
        }
    }

    /// Removes the entry at `index`, the last one taking its place.
    pub fn swap_remove_index(&mut self, index: usize) -> Option<(K, V)> {
        self.trim_vacant_tail();
        let hash = self.entries.get(index).filter(|b| b.hash != VACANT)?.hash;
        self.forget_position(hash, index);
        let last = self.entries.len() - 1;
        if index != last {
            // The insertions below may need room: `relocate` inserts at most one.
            self.room_in_index();
            let moved_hash = self.entries[last].hash;
            self.relocate(moved_hash, last, index);
        }
        let removed = self.entries.swap_remove(index);
        self.trim_vacant_tail();
        self.step(MOVES_PER_CHANGE);
        Some((removed.key, removed.value))
    }

    /// Removes the entry at `index` and leaves its position vacant, so that no other
    /// entry moves (SCAN's cursors are positions: see the module's documentation). The
    /// next new key fills it. Once more than half the positions are vacant the map
    /// compacts: each removal (and [`Self::compact_in_background`]) moves a few entries
    /// from the end into holes, calling `moved(hole, from, key, value)` for each, a move
    /// a walk by position must hear of (as of a swap-remove).
    pub fn vacate(
        &mut self,
        index: usize,
        moved: impl FnMut(usize, usize, &K, &V),
    ) -> Option<(K, V)>
    where
        K: Default,
        V: Default,
    {
        let hash = self.entries.get(index).filter(|b| b.hash != VACANT)?.hash;
        self.forget_position(hash, index);
        let bucket = &mut self.entries[index];
        bucket.hash = VACANT;
        let key = std::mem::take(&mut bucket.key);
        let value = std::mem::take(&mut bucket.value);
        self.vacant += 1;
        if index + 1 == self.entries.len() {
            self.trim_vacant_tail();
        } else {
            self.vacated.push(index);
        }
        if self.vacant * 2 > self.entries.len() {
            self.compacting = true;
        }
        self.step(MOVES_PER_CHANGE);
        self.compact_step(MOVES_PER_CHANGE, moved);
        Some((key, value))
    }

    /// The background cycle's share of a compaction ([`Self::vacate`]), as
    /// [`Self::tidy`] is of a move of the index.
    pub fn compact_in_background(&mut self, moved: impl FnMut(usize, usize, &K, &V)) {
        self.compact_step(MOVES_PER_TIDY, moved);
    }

    /// Drops the vacant positions at the end.
    fn trim_vacant_tail(&mut self) {
        while self.vacant > 0 && self.entries.last().is_some_and(|b| b.hash == VACANT) {
            self.entries.pop();
            self.vacant -= 1;
        }
        if self.vacant == 0 {
            self.vacated.clear();
            self.compacting = false;
        }
    }

    /// Puts `bucket` at a vacant position (at the end if, against the list's invariant,
    /// none is found); returns the position.
    #[inline(never)]
    fn fill_vacant(&mut self, bucket: Bucket<K, V>) -> usize {
        let Some(at) = self.take_vacated() else {
            self.entries.push(bucket);
            return self.entries.len() - 1;
        };
        self.entries[at] = bucket;
        self.vacant -= 1;
        self.trim_vacant_tail();
        at
    }

    /// A vacant position to fill, taken off the list.
    fn take_vacated(&mut self) -> Option<usize> {
        if self.vacant == 0 {
            return None;
        }
        while let Some(at) = self.vacated.pop() {
            if self.entries.get(at).is_some_and(|b| b.hash == VACANT) {
                return Some(at);
            }
        }
        None
    }

    /// While compacting (see [`Self::vacate`]), moves up to `budget` entries from the
    /// end into vacant positions, calling `moved(hole, from, key, value)` for each.
    fn compact_step(&mut self, budget: usize, mut moved: impl FnMut(usize, usize, &K, &V)) {
        for _ in 0..budget {
            self.trim_vacant_tail();
            if !self.compacting {
                return;
            }
            let Some(hole) = self.take_vacated() else {
                return;
            };
            // After the trim the last position holds an entry, and the hole is below it.
            let last = self.entries.len() - 1;
            self.room_in_index();
            let moved_hash = self.entries[last].hash;
            self.relocate(moved_hash, last, hole);
            self.entries.swap_remove(hole);
            self.vacant -= 1;
            let bucket = &self.entries[hole];
            moved(hole, last, &bucket.key, &bucket.value);
        }
        self.trim_vacant_tail();
    }

    /// Whether a compaction has holes to fill (see [`Self::vacate`]).
    pub fn is_compacting(&self) -> bool {
        self.compacting
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
    /// The hash the index files `key` under (never [`VACANT`]).
    #[inline]
    fn hash_of<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        let hash = self.hasher.hash_one(key);
        if hash == VACANT {
            VACANT - 1
        } else {
            hash
        }
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
    /// [`Self::add_new`] (one hash whether it is there or not).
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

    /// Adds `key`, which must not be present, at a vacant position if there is one, else
    /// at the end; `hash` is its hash (from [`Self::find_or_hash`]). Returns its
    /// position.
    pub fn add_new(&mut self, hash: u64, key: K, value: V) -> usize {
        debug_assert_eq!(hash, self.hash_of(&key));
        self.room_in_index();
        let at = if self.vacant == 0 {
            self.entries.push(Bucket { hash, key, value });
            self.entries.len() - 1
        } else {
            self.fill_vacant(Bucket { hash, key, value })
        };
        let entries = &self.entries;
        self.index.insert_unique(hash, at, |&p| entries[p].hash);
        self.step(MOVES_PER_CHANGE);
        at
    }

    /// Sets `key` to `value`: in place when present (returning the old value), else as
    /// [`Self::add_new`] adds it. Returns the position and any old value.
    pub fn insert_full(&mut self, key: K, value: V) -> (usize, Option<V>) {
        match self.find_or_hash(&key) {
            Ok(at) => (
                at,
                Some(std::mem::replace(&mut self.entries[at].value, value)),
            ),
            Err(hash) => (self.add_new(hash, key, value), None),
        }
    }

    /// [`Self::insert_full`] without the position.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.insert_full(key, value).1
    }

    /// Removes `key` as [`Self::vacate`] does, for a map that nothing walks by position
    /// but its own scans, so no move needs hearing of (a large set's, hash's or sorted
    /// set's members: SSCAN, HSCAN and ZSCAN).
    pub fn vacate_key<Q>(&mut self, key: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q> + Default,
        V: Default,
        Q: Hash + Eq + ?Sized,
    {
        let at = self.get_index_of(key)?;
        self.vacate(at, |_, _, _, _| {})
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

/// The entries of an [`IncrementalMap`] in position order (vacant positions skipped).
pub struct Iter<'a, K, V> {
    buckets: std::slice::Iter<'a, Bucket<K, V>>,
    /// Entries not yet returned.
    left: usize,
}

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let bucket = self.buckets.find(|b| b.hash != VACANT)?;
        self.left -= 1;
        Some((&bucket.key, &bucket.value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<K, V> DoubleEndedIterator for Iter<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let bucket = self.buckets.rfind(|b| b.hash != VACANT)?;
        self.left -= 1;
        Some((&bucket.key, &bucket.value))
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

    #[derive(Debug, Clone)]
    enum VacatingOp {
        Insert(u32, u32),
        Vacate(u32),
        /// Vacates every key but one in three (a bulk delete that starts a compaction).
        Thin(u32),
        Compact(usize),
        Shrink(usize),
        Tidy,
    }

    fn vacating_op() -> impl Strategy<Value = VacatingOp> {
        prop_oneof![
            5 => (0..2000u32, any::<u32>()).prop_map(|(k, v)| VacatingOp::Insert(k, v)),
            5 => (0..2000u32).prop_map(VacatingOp::Vacate),
            1 => (0..3u32).prop_map(VacatingOp::Thin),
            2 => (0..64usize).prop_map(VacatingOp::Compact),
            1 => (0..64usize).prop_map(VacatingOp::Shrink),
            1 => Just(VacatingOp::Tidy),
        ]
    }

    /// A move a compaction reported, `(hole, from, key, value)`.
    type Move = (usize, usize, u32, u32);

    /// Applies `moves` to a model of positions, checking each moved the last entry
    /// into a hole.
    fn follow(model: &mut Vec<Option<(u32, u32)>>, moves: Vec<Move>) {
        for (hole, from, k, v) in moves {
            while model.last().is_some_and(Option::is_none) {
                model.pop();
            }
            assert_eq!(from, model.len() - 1);
            assert!(model[hole].is_none());
            assert_eq!(model.pop().flatten(), Some((k, v)));
            model[hole] = Some((k, v));
        }
    }

    proptest! {
        /// A map that vacates positions moves an entry only while it compacts, and
        /// reports each move; a new key takes a vacant position or the end. Checked
        /// against a model of positions, moves in progress or not.
        #[test]
        fn vacated_positions_keep_every_other_entry_in_place(
            ops in proptest::collection::vec(vacating_op(), 1..4000)
        ) {
            let mut map = Map::default();
            let mut model: Vec<Option<(u32, u32)>> = Vec::new();
            for op in ops {
                match op {
                    VacatingOp::Insert(k, v) => {
                        let was_vacant = |at: usize| model.get(at).is_none_or(Option::is_none);
                        let existing = model.iter().position(|e| e.is_some_and(|(mk, _)| mk == k));
                        let (at, old) = map.insert_full(k, v);
                        match existing {
                            Some(p) => {
                                prop_assert_eq!(at, p);
                                prop_assert_eq!(old, model[p].map(|(_, mv)| mv));
                            }
                            None => {
                                prop_assert!(old.is_none());
                                prop_assert!(was_vacant(at), "new key at taken position {}", at);
                                prop_assert!(at <= model.len());
                                if at == model.len() {
                                    prop_assert!(model.iter().all(Option::is_some), "appended past a hole");
                                    model.push(None);
                                }
                            }
                        }
                        model[at] = Some((k, v));
                    }
                    VacatingOp::Vacate(k) => {
                        let at = map.get_index_of(&k);
                        let expected = model.iter().position(|e| e.is_some_and(|(mk, _)| mk == k));
                        prop_assert_eq!(at, expected);
                        if let Some(at) = at {
                            let mut moves = Vec::new();
                            let removed = map.vacate(at, |hole, from, k, v| moves.push((hole, from, *k, *v)));
                            prop_assert_eq!(removed, model[at].take());
                            follow(&mut model, moves);
                        }
                    }
                    VacatingOp::Thin(keep) => {
                        let doomed: Vec<(u32, u32)> =
                            model.iter().flatten().copied().filter(|(k, _)| k % 3 != keep).collect();
                        for (k, v) in doomed {
                            let at = model.iter().position(|e| *e == Some((k, v)));
                            prop_assert_eq!(map.get_index_of(&k), at);
                            let Some(at) = at else { continue };
                            let mut moves = Vec::new();
                            let removed = map.vacate(at, |hole, from, k, v| moves.push((hole, from, *k, *v)));
                            prop_assert_eq!(removed, model[at].take());
                            follow(&mut model, moves);
                        }
                    }
                    VacatingOp::Compact(budget) => {
                        let mut moves = Vec::new();
                        map.compact_step(budget, |hole, from, k, v| moves.push((hole, from, *k, *v)));
                        follow(&mut model, moves);
                    }
                    VacatingOp::Shrink(min) => map.shrink_to(min),
                    VacatingOp::Tidy => map.tidy(),
                }
                while model.last().is_some_and(Option::is_none) {
                    model.pop();
                }
                prop_assert_eq!(map.positions(), model.len());
                let live = model.iter().flatten().count();
                prop_assert_eq!(map.len(), live);
                prop_assert_eq!(map.vacant(), model.len() - live);
                prop_assert!(!map.is_compacting() || map.vacant() > 0);
            }
            for (at, e) in model.iter().enumerate() {
                prop_assert_eq!(map.get_index(at), e.as_ref().map(|(k, v)| (k, v)));
                if let Some((k, _)) = e {
                    prop_assert_eq!(map.get_index_of(k), Some(at));
                }
            }
            let live = map.len();
            let indexed = map.index.len() + map.moving.as_ref().map_or(0, |m| m.table.len());
            prop_assert_eq!(indexed, live, "each entry indexed once");
            prop_assert!(map.iter().eq(model.iter().flatten().map(|(k, v)| (k, v))));
            // A compaction run to its end leaves no hole.
            if map.vacant() * 2 > map.positions() {
                prop_assert!(map.is_compacting());
                map.compact_step(usize::MAX, |_, _, _, _| {});
                prop_assert_eq!(map.vacant(), 0);
                prop_assert_eq!(map.positions(), live);
            }
            if let Some(at) = map.random_index() {
                prop_assert!(map.get_index(at).is_some());
            } else {
                prop_assert_eq!(live, 0);
            }
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
