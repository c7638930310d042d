//! How many keys a shard holds in each cluster hash slot: COUNTKEYSINSLOT and
//! SETSLOT NODE's check answer at once instead of scanning the shard (830 µs a call
//! with a million keys), and GETKEYSINSLOT and the dropping of a lost slot's keys stop
//! scanning once they have found them all (and skip empty slots).
//!
//! A shard builds its counts the first time such a command asks (one pass over its
//! keys) and keeps them from then on: a node that never moves slots pays nothing on its
//! write path, one that does pays an increment per key created or deleted (the key's
//! slot is one CRC16, which the shard's own index computes too). Redis keeps a list of
//! each slot's keys instead; a set of keys per slot here cost a third of the throughput
//! of SETs creating keys (bench/NOTES.md), which counts do not.

use redline_resp::slot::key_slot;

use super::compact::CompactBytes;

/// Keys per slot, for the slots of one shard (`slot >> shift` indexes them: a shard
/// holds the slots equal to its index modulo the shard count, a power of two).
#[derive(Debug)]
pub struct SlotCounts {
    shift: u32,
    counts: Box<[u32]>,
}

impl SlotCounts {
    /// The counts of `keys`, in a shard of a database of `shards` shards.
    pub fn of<'a>(shards: usize, keys: impl Iterator<Item = &'a CompactBytes>) -> SlotCounts {
        let shift = shards.max(1).next_power_of_two().trailing_zeros();
        // Slots are 0..16384.
        let len = (16383 >> shift) + 1;
        let mut counts = SlotCounts {
            shift,
            counts: vec![0; len].into_boxed_slice(),
        };
        for key in keys {
            counts.added(key.as_bytes());
        }
        counts
    }

    fn at(&mut self, key: &[u8]) -> Option<&mut u32> {
        self.counts
            .get_mut(usize::from(key_slot(key)) >> self.shift)
    }

    /// `key` was created.
    pub fn added(&mut self, key: &[u8]) {
        if let Some(count) = self.at(key) {
            *count += 1;
        }
    }

    /// `key` was deleted.
    pub fn removed(&mut self, key: &[u8]) {
        if let Some(count) = self.at(key) {
            *count = count.saturating_sub(1);
        }
    }

    /// Every key is gone.
    pub fn clear(&mut self) {
        self.counts.fill(0);
    }

    /// How many keys `slot` holds.
    pub fn count(&self, slot: u16) -> usize {
        self.counts
            .get(usize::from(slot) >> self.shift)
            .map_or(0, |&n| n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_keys_added_and_removed() {
        let keys: Vec<CompactBytes> = ["a", "b", "{a}x"]
            .map(|k| CompactBytes::new(k.as_bytes()))
            .into();
        for shards in [1, 16, 64] {
            let mut counts = SlotCounts::of(shards, keys.iter());
            let a = key_slot(b"a");
            assert_eq!(counts.count(a), 2);
            assert_eq!(counts.count(key_slot(b"b")), 1);
            counts.removed(b"a");
            counts.removed(b"{a}x");
            counts.removed(b"{a}x");
            assert_eq!(counts.count(a), 0);
            counts.added(b"c");
            assert_eq!(counts.count(key_slot(b"c")), 1);
            counts.clear();
            assert_eq!(counts.count(key_slot(b"c")), 0);
            assert_eq!(counts.count(16383), 0);
        }
    }
}
