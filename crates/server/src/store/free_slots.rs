//! How a shard's key tables grow and shrink, and their empty slots, counted as free
//! memory.
//!
//! A shard's keys are one array of slots (hash, key, entry: 72 bytes, with keys and
//! values of up to 22 bytes inside), and its TTL index another. Left to themselves
//! they double when full: a table is then between half and all full, and since keys
//! spread evenly over the shards, every shard doubles at about the same count (at 1M
//! short keys the tables held 151 bytes a key; redis-server's dict entries take 105).
//! So a full table grows by a quarter ([`growth`]): an eighth kept 8% more short keys
//! under a limit before churn, but glibc's `realloc` copies the array at each step (a
//! stall of milliseconds for a million keys, under the shard's lock), twice as often.
//!
//! Removing a key whose slot holds it whole frees nothing: the slot waits for the next
//! key. [`FreeSlots`] reports each table's empty slots to the allocator's count, which
//! counts them as free (`crate::alloc::empty_key_slots`): evicting such a key gives its
//! slot back, and `used_memory` is what the keys hold. Before, eviction went on while
//! the allocator's figure stood still, until a table fell to a quarter full and shrank:
//! under a 64 MB limit, of 1M keys written it kept 275k where redis-server keeps 602k
//! (now 739k; bench/NOTES.md, "Stop 75").

use std::mem::size_of;

use super::compact::CompactBytes;
use super::value::Entry;

/// One slot of the key table: the hash the table keeps, the key, its entry.
pub const KEY_SLOT_BYTES: usize = size_of::<(u64, CompactBytes, Entry)>();

/// One slot of the TTL index: the hash and the key.
pub const TTL_SLOT_BYTES: usize = size_of::<(u64, CompactBytes)>();

/// Tables at or below this size are never shrunk: too small to matter, and a shard that
/// empties and refills would otherwise reallocate on every cycle.
const MIN_SHRINK: usize = 8;

/// How many slots a full table of `len` keys grows by: a quarter, at least 8 (so that
/// small tables do not reallocate on every new key).
pub fn growth(len: usize) -> usize {
    (len / 4).max(8)
}

/// A shard's two tables' sizes, as this module sized them, and their empty slots as
/// last reported to the allocator's count (reported as none when dropped with the
/// tables).
///
/// The sizes are kept here, as asked for, rather than read back from the maps, so that
/// the figure reported is the one this module decided. (`IndexMap`, the maps before
/// [`super::incremental_map`], reported the smaller of its array's capacity and its
/// hash index's, which the tombstones removals leave shrink: growing the array whenever
/// that figure equalled the length grew it on churn alone.)
#[derive(Debug, Default)]
pub struct FreeSlots {
    /// Slots the key table's array holds.
    keys: usize,
    /// Slots the TTL index's array holds.
    ttls: usize,
    reported: usize,
}

impl FreeSlots {
    /// Before a key is added to a key table of `len` keys: how many slots to reserve
    /// (`None`: there is room). The new slots are reported empty before the caller
    /// allocates them, so no `maxmemory` check sees them allocated and not yet free.
    #[inline]
    pub fn key_room(&mut self, len: usize) -> Option<usize> {
        let more = Self::room(&mut self.keys, len)?;
        self.report(self.reported + more * KEY_SLOT_BYTES);
        Some(more)
    }

    /// [`Self::key_room`] for the TTL index.
    #[inline]
    pub fn ttl_room(&mut self, len: usize) -> Option<usize> {
        let more = Self::room(&mut self.ttls, len)?;
        self.report(self.reported + more * TTL_SLOT_BYTES);
        Some(more)
    }

    fn room(slots: &mut usize, len: usize) -> Option<usize> {
        if len < *slots {
            return None;
        }
        let more = growth(len);
        *slots = len + more;
        Some(more)
    }

    /// After a key left a key table of `len` keys: the size to shrink it to
    /// (`shrink_to`, which sizes its array exactly), when it is down to a quarter of its
    /// size; `None` otherwise. Half is given back, so the memory of deleted, expired or
    /// evicted keys is not pinned by the tables that held them (Redis resizes its dicts
    /// under 10% fill). Amortised O(1): a table shrinks only after losing three
    /// quarters of its size in keys.
    pub fn key_shrink(&mut self, len: usize) -> Option<usize> {
        Self::shrink(&mut self.keys, len)
    }

    /// [`Self::key_shrink`] for the TTL index.
    pub fn ttl_shrink(&mut self, len: usize) -> Option<usize> {
        Self::shrink(&mut self.ttls, len)
    }

    fn shrink(slots: &mut usize, len: usize) -> Option<usize> {
        if *slots <= MIN_SHRINK || len * 4 >= *slots {
            return None;
        }
        *slots = len * 2;
        Some(*slots)
    }

    /// Slots of the key table's and the TTL index's arrays.
    #[cfg(test)]
    pub fn sizes(&self) -> (usize, usize) {
        (self.keys, self.ttls)
    }

    /// The tables were replaced by empty ones with room for `keys` keys and `ttls`
    /// deadlines: all their slots are empty, reported before the caller allocates them.
    pub fn presized(&mut self, keys: usize, ttls: usize) {
        self.keys = keys;
        self.ttls = ttls;
        self.report(keys * KEY_SLOT_BYTES + ttls * TTL_SLOT_BYTES);
    }

    /// The tables were replaced by empty ones: they have no empty slots.
    pub fn emptied(&mut self) {
        self.keys = 0;
        self.ttls = 0;
        self.report(0);
    }

    /// The tables were exchanged with `other`'s (SWAPDB); each side's report follows
    /// at its next [`Self::settle`].
    pub fn swap_tables(&mut self, other: &mut FreeSlots) {
        std::mem::swap(&mut self.keys, &mut other.keys);
        std::mem::swap(&mut self.ttls, &mut other.ttls);
    }

    /// Reports the empty slots of tables holding `key_len` keys and `ttl_len` deadlines.
    #[inline]
    pub fn settle(&mut self, key_len: usize, ttl_len: usize) {
        let empty = self.keys.saturating_sub(key_len) * KEY_SLOT_BYTES
            + self.ttls.saturating_sub(ttl_len) * TTL_SLOT_BYTES;
        self.report(empty);
    }

    /// What was last reported.
    #[cfg(test)]
    pub fn reported(&self) -> usize {
        self.reported
    }

    #[inline]
    fn report(&mut self, bytes: usize) {
        if bytes != self.reported {
            crate::alloc::empty_key_slots(self.reported, bytes);
            self.reported = bytes;
        }
    }
}

impl Drop for FreeSlots {
    fn drop(&mut self) {
        self.report(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_the_sizes_the_tables_hold() {
        // The map's bucket is (hash: u64, key, value); the figures the module's
        // documentation quotes.
        assert_eq!(KEY_SLOT_BYTES, 72);
        assert_eq!(TTL_SLOT_BYTES, 32);
    }

    #[test]
    fn room_is_made_only_when_full_and_empty_slots_follow() {
        let mut slots = FreeSlots::default();
        assert_eq!(slots.key_room(0), Some(8));
        assert_eq!(slots.reported, 8 * KEY_SLOT_BYTES);
        assert_eq!(slots.key_room(7), None);
        slots.settle(8, 0);
        assert_eq!(slots.reported, 0);
        assert_eq!(slots.key_room(8), Some(8));
        assert_eq!(slots.ttl_room(0), Some(8));
        slots.settle(9, 1);
        assert_eq!(slots.reported, 7 * KEY_SLOT_BYTES + 7 * TTL_SLOT_BYTES);
        assert_eq!(slots.key_shrink(9), None, "not down to a quarter");
        assert_eq!(slots.key_shrink(3), Some(6));
        assert_eq!(slots.ttl_shrink(1), None, "too small to shrink");
        assert_eq!(slots.sizes(), (6, 8));
        slots.emptied();
        assert_eq!(slots.reported, 0);
    }

    #[test]
    fn presized_tables_need_no_room_until_full() {
        let mut slots = FreeSlots::default();
        slots.presized(1000, 10);
        assert_eq!(slots.reported, 1000 * KEY_SLOT_BYTES + 10 * TTL_SLOT_BYTES);
        assert_eq!(slots.key_room(999), None);
        assert_eq!(slots.ttl_room(9), None);
        slots.settle(1000, 10);
        assert_eq!(slots.reported, 0);
        assert_eq!(slots.key_room(1000), Some(250));
        slots.emptied();
    }

    #[test]
    fn growth_is_a_quarter_and_at_least_eight() {
        assert_eq!(growth(0), 8);
        assert_eq!(growth(31), 8);
        assert_eq!(growth(80_000), 20_000);
    }
}
