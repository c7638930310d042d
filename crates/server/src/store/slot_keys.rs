//! A shard's keys by cluster hash slot (Redis's `slots_to_keys`): COUNTKEYSINSLOT,
//! GETKEYSINSLOT, SETSLOT NODE's check and the dropping of a lost slot's keys cost the
//! keys of that slot, not a scan of the shard (with a million keys, a scan per call made
//! a resharding's GETKEYSINSLOT loop take minutes).
//!
//! A shard builds one the first time such a command asks it (one pass over its keys)
//! and keeps it up to date from then on: a node that never moves slots pays nothing on
//! its write path, and one that does pays a CRC16, a set update and a copy of the key
//! for each key created or deleted (Redis pays two pointers per key in cluster mode).

use std::collections::HashMap;

use indexmap::IndexSet;
use redline_resp::slot::key_slot;

use super::compact::CompactBytes;
use super::value::Hasher;

/// Keys by slot.
#[derive(Debug, Default)]
pub struct SlotKeys {
    slots: HashMap<u16, IndexSet<CompactBytes, Hasher>, Hasher>,
}

impl SlotKeys {
    /// The index of `keys`.
    pub fn of<'a>(keys: impl Iterator<Item = &'a CompactBytes>) -> SlotKeys {
        let mut index = SlotKeys::default();
        for key in keys {
            index.added(key.as_bytes());
        }
        index
    }

    /// `key` was created.
    pub fn added(&mut self, key: &[u8]) {
        self.slots
            .entry(key_slot(key))
            .or_default()
            .insert(CompactBytes::new(key));
    }

    /// `key` was deleted.
    pub fn removed(&mut self, key: &[u8]) {
        let slot = key_slot(key);
        if let Some(keys) = self.slots.get_mut(&slot) {
            keys.swap_remove(key);
            if keys.is_empty() {
                self.slots.remove(&slot);
            }
        }
    }

    /// Every key is gone.
    pub fn clear(&mut self) {
        self.slots.clear();
    }

    /// How many keys `slot` holds.
    pub fn count(&self, slot: u16) -> usize {
        self.slots.get(&slot).map_or(0, IndexSet::len)
    }

    /// Up to `max` keys of `slot`, the newest first as Redis lists them (its list adds at
    /// the head; after deletions the order here may differ, which Redis never promised).
    pub fn keys(&self, slot: u16, max: usize) -> Vec<Vec<u8>> {
        self.slots.get(&slot).map_or_else(Vec::new, |keys| {
            keys.iter()
                .rev()
                .take(max)
                .map(|k| k.as_bytes().to_vec())
                .collect()
        })
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
        let mut index = SlotKeys::of(keys.iter());
        let a = key_slot(b"a");
        assert_eq!(index.count(a), 2);
        assert_eq!(index.count(key_slot(b"b")), 1);
        assert_eq!(index.keys(a, 1).len(), 1);
        index.removed(b"a");
        assert_eq!(index.keys(a, 10), vec![b"{a}x".to_vec()]);
        index.removed(b"{a}x");
        index.removed(b"missing");
        assert_eq!(index.count(a), 0);
        assert!(!index.slots.contains_key(&a));
        index.added(b"c");
        index.clear();
        assert_eq!(index.count(key_slot(b"c")), 0);
    }
}
