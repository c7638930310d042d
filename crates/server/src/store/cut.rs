//! A point-in-time cut of the keyspace, taken without a fork and without copying it.
//!
//! BGSAVE needs the dataset as it was at one instant while clients keep writing. Redis
//! forks and lets the kernel copy pages on write; here each shard copies *entries* on
//! write, straight into the snapshot:
//!
//! 1. The cut begins while every shard is held (an instant: nothing is copied, each
//!    non-empty shard only gets a `CutState`). That instant is the snapshot's time.
//! 2. A background walker visits every shard in small batches, each under the shard's
//!    lock, and hands the entries it meets to the [`CutSink`] (which serialises them
//!    into the file).
//! 3. Before anything in a shard can change an entry the walker has not reached (a
//!    write, a deletion, a lazy expiry, even a read, since readers get `&mut` access for
//!    the LRU clock), the shard hands that entry to the sink first, as it was, and
//!    remembers its key as saved. Keys created after the cut are remembered too, so the
//!    walker skips them.
//!
//! Every key that existed at the cut is thus saved exactly once with its value at the
//! cut, and nothing created later is. Several cuts can be pending in a shard at once
//! (a BGSAVE, replicas' full syncs, an AOF rewrite): each keeps its own progress and
//! saved keys, and a change saves the entry into each one that still needs it. Extra memory is the set of keys changed during the
//! save plus one batch per thread being serialised, never a second copy of the data;
//! a writer pays for serialising the one entry it is about to change, never a shard.
//!
//! The walker goes by map position. The shard's map adds a key at a vacant position or
//! at the end, and a removal leaves its position vacant; only while the map compacts
//! does an entry move, the last one into a hole. So the entries below the walker's
//! position stay visited; the one case that breaks this, the last unvisited entry moving
//! into a visited hole, is handled by saving it as it moves (`CutState::moved`).

use std::collections::HashSet;
use std::sync::Arc;

use super::compact::CompactBytes;
use super::value::{Entry, Hasher};
use super::Store;

/// Where a cut's entries go: the snapshot being written (see `persist::snapshot`).
/// Called under the lock of the shard the entries belong to; an implementation must not
/// lock a shard itself (it only ever takes its own leaf lock).
pub trait CutSink: Send + Sync {
    /// Writes `entries` of database `db` with their values as they are now (which is
    /// their value at the cut: the shard calls this before changing them).
    fn save(&self, db: usize, entries: &mut dyn Iterator<Item = (&[u8], &Entry)>);
}

/// The progress of a cut in one shard.
pub(super) struct CutState {
    sink: Arc<dyn CutSink>,
    /// Entries at map indexes below this were saved by the walker (or before moving
    /// there).
    next: usize,
    /// Keys saved out of the walker's order, and keys created after the cut: the walker
    /// skips them.
    saved: HashSet<CompactBytes, Hasher>,
}

impl std::fmt::Debug for CutState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CutState")
            .field("next", &self.next)
            .field("saved", &self.saved.len())
            .finish()
    }
}

impl CutState {
    pub(super) fn new(sink: Arc<dyn CutSink>) -> CutState {
        CutState {
            sink,
            next: 0,
            saved: HashSet::default(),
        }
    }

    /// Whether the entry at `index` with `key` still holds its value at the cut and has
    /// not been saved.
    fn unsaved(&self, index: usize, key: &[u8]) -> bool {
        index >= self.next && !self.saved.contains(key)
    }

    /// Saves one entry out of the walker's order and remembers it.
    fn save_one(&mut self, db: usize, key: &CompactBytes, entry: &Entry) {
        self.sink
            .save(db, &mut std::iter::once((key.as_bytes(), entry)));
        self.saved.insert(key.clone());
    }

    /// Saves the entry at `index` before it changes, if it still needs saving.
    pub(super) fn before_change(
        &mut self,
        db: usize,
        index: usize,
        key: &CompactBytes,
        entry: &Entry,
    ) {
        if self.unsaved(index, key.as_bytes()) {
            self.save_one(db, key, entry);
        }
    }

    /// A key created after the cut: never saved.
    pub(super) fn created(&mut self, key: &[u8]) {
        self.saved.insert(CompactBytes::new(key));
    }

    /// After the last entry, `key` at position `from`, moved into `hole` (the map's
    /// compaction): moved from the unvisited part into the visited one, it is saved
    /// now, or the walker would never meet it.
    pub(super) fn moved(
        &mut self,
        db: usize,
        hole: usize,
        from: usize,
        key: &CompactBytes,
        entry: &Entry,
    ) {
        if hole < self.next && from >= self.next && !self.saved.contains(key.as_bytes()) {
            self.save_one(db, key, entry);
        }
        self.next = self.next.min(from);
    }

    /// Walks up to `batch` of the shard's `len` positions (`positions`, from
    /// `self.next` on: `None` where one is vacant), saving the unsaved entries; true
    /// once the walk reached the end.
    pub(super) fn step<'a>(
        &mut self,
        db: usize,
        positions: impl Iterator<Item = Option<(&'a CompactBytes, &'a Entry)>>,
        len: usize,
        batch: usize,
    ) -> bool {
        let end = self.next.saturating_add(batch).min(len);
        let saved = &self.saved;
        let mut todo = positions
            .take(end - self.next.min(end))
            .flatten()
            .filter(|(key, _)| !saved.contains(key.as_bytes()))
            .map(|(key, entry)| (key.as_bytes(), entry));
        self.sink.save(db, &mut todo);
        self.next = end;
        self.next >= len
    }

    /// Where the walker stands.
    pub(super) fn next(&self) -> usize {
        self.next
    }

    /// Whether this is the cut into `sink`.
    pub(super) fn is_for(&self, sink: &dyn CutSink) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.sink), sink as *const dyn CutSink)
    }
}

/// Saves what every shard still owes the cut into `sink`, `batch` entries per lock,
/// calling `between` (with no lock held) after each batch; stops, returning false, when
/// `between` does.
pub fn walk(
    store: &Store,
    sink: &dyn CutSink,
    batch: usize,
    mut between: impl FnMut() -> bool,
) -> bool {
    for db in store.dbs() {
        for index in 0..db.shard_count() {
            loop {
                let (pending, done) = {
                    let mut shard = db.lock_index(index);
                    (shard.cut_pending(sink), shard.cut_step(sink, batch))
                };
                if !pending {
                    break;
                }
                if !done {
                    std::thread::yield_now();
                }
                if !between() {
                    return false;
                }
                if done {
                    break;
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::store::{Shard, Value};

    /// Records what a cut saved, key by key, failing on a key saved twice.
    #[derive(Default)]
    struct Recorder(parking_lot::Mutex<BTreeMap<Vec<u8>, String>>);

    impl CutSink for Recorder {
        fn save(&self, db: usize, entries: &mut dyn Iterator<Item = (&[u8], &Entry)>) {
            assert_eq!(db, 0);
            let mut saved = self.0.lock();
            for (key, entry) in entries {
                let before = saved.insert(key.to_vec(), format!("{:?}", entry.value));
                assert!(before.is_none(), "{key:?} saved twice");
            }
        }
    }

    fn contents(shard: &Shard) -> BTreeMap<Vec<u8>, String> {
        let mut all = BTreeMap::new();
        shard.for_each_stored(|k, e| {
            all.insert(k.as_bytes().to_vec(), format!("{:?}", e.value));
        });
        all
    }

    /// Whatever mix of writes, deletions, reads and new keys runs while the walker goes,
    /// the cut holds exactly the entries of the instant it began.
    #[test]
    fn a_cut_saves_the_dataset_of_its_instant_whatever_changes_meanwhile() {
        for seed in 0..200u64 {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut shard = Shard::default();
            let keys = rng.usize(0..300);
            for i in 0..keys {
                shard.insert(format!("k{i}").as_bytes(), Value::Int(i as i64), 0);
            }
            let expected = contents(&shard);
            let recorder = Arc::new(Recorder::default());
            shard.begin_cut(recorder.clone());
            let mut round = 0i64;
            while shard.cut_pending(&*recorder) {
                round += 1;
                for _ in 0..rng.usize(0..20) {
                    let key = format!("k{}", rng.usize(0..keys.max(1) * 2));
                    match rng.u8(0..5) {
                        0 => shard.insert(key.as_bytes(), Value::Int(-round), 0),
                        1 => {
                            shard.remove(key.as_bytes());
                        }
                        2 => {
                            shard.get(key.as_bytes());
                        }
                        3 => {
                            shard.get_or_insert_with(key.as_bytes(), || Value::string(b"new"));
                        }
                        _ => {
                            shard.set_expires(key.as_bytes(), u64::MAX);
                        }
                    }
                }
                shard.cut_step(&*recorder, rng.usize(1..40));
            }
            assert_eq!(*recorder.0.lock(), expected, "seed {seed}");
        }
    }

    /// Two cuts begun at different instants, walked in turns while writes go on, each
    /// hold the dataset of their own instant (a BGSAVE and a replica's full sync, say).
    #[test]
    fn overlapping_cuts_each_save_their_own_instant() {
        for seed in 0..100u64 {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut shard = Shard::default();
            for i in 0..rng.usize(1..200) {
                shard.insert(format!("k{i}").as_bytes(), Value::Int(i as i64), 0);
            }
            let first_expected = contents(&shard);
            let first = Arc::new(Recorder::default());
            shard.begin_cut(first.clone());
            shard.cut_step(&*first, rng.usize(0..50));
            for i in 0..rng.usize(0..50) {
                shard.insert(format!("k{}", i * 3).as_bytes(), Value::Int(-1), 0);
                shard.remove(format!("k{}", i * 7).as_bytes());
            }
            let second_expected = contents(&shard);
            let second = Arc::new(Recorder::default());
            shard.begin_cut(second.clone());
            let mut round = 0;
            while shard.cut_pending(&*first) || shard.cut_pending(&*second) {
                round += 1;
                for _ in 0..rng.usize(0..10) {
                    let key = format!("k{}", rng.usize(0..400));
                    if rng.bool() {
                        shard.insert(key.as_bytes(), Value::Int(-round), 0);
                    } else {
                        shard.remove(key.as_bytes());
                    }
                }
                let which = if rng.bool() { &first } else { &second };
                shard.cut_step(&**which, rng.usize(1..30));
            }
            assert_eq!(*first.0.lock(), first_expected, "seed {seed}, first");
            assert_eq!(*second.0.lock(), second_expected, "seed {seed}, second");
        }
    }

    #[test]
    fn flushing_a_shard_saves_the_rest_of_the_cut_first() {
        let mut shard = Shard::default();
        for i in 0..50 {
            shard.insert(format!("k{i}").as_bytes(), Value::Int(i), 0);
        }
        let expected = contents(&shard);
        let recorder = Arc::new(Recorder::default());
        shard.begin_cut(recorder.clone());
        shard.cut_step(&*recorder, 10);
        shard.clear();
        assert!(!shard.cut_pending(&*recorder));
        assert_eq!(*recorder.0.lock(), expected);
    }
}
