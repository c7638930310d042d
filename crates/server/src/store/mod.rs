//! The keyspace: `databases` databases, each split into a power-of-two number of shards
//! by hash slot (`key_slot(key) & (shards - 1)`), each shard a plain map behind its own
//! short mutex.
//!
//! A connection task locks the one shard a command needs, runs the command against it and
//! encodes the reply from the borrowed entry, then unlocks: no channel, no task hop, no
//! copy of the value. Commands over several keys lock all their shards in ascending
//! order ([`Db::lock_keys`]), which makes them atomic and cannot deadlock. Because the
//! shard is chosen by hash slot, keys sharing a hash tag share a shard, and cluster mode
//! can hand over whole slots.

pub mod by_position;
pub mod changed_keys;
mod compact;
pub mod cut;
pub mod digest;
pub mod dirty;
pub mod encoding;
pub mod events;
pub mod evict;
mod exact_buf;
pub mod expiry;
mod free_slots;
pub mod hash;
mod held;
pub mod hll;
pub(crate) mod incremental_map;
pub mod lazyfree;
pub mod list;
pub mod listpack_size;
pub mod lookups;
pub mod packed_members;
pub mod packed_pairs;
pub mod ready;
pub mod sampled;
pub mod set;
mod shard;
mod slot_counts;
mod sorted_blocks;
pub mod sorted_ints;
pub mod stream;
mod stream_node;
pub mod tagged_entries;
mod value;
mod varint;
mod watch;
mod zset;

use std::time::{SystemTime, UNIX_EPOCH};

use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use redline_resp::slot::key_slot;

pub use compact::{CompactBytes, INLINE_CAPACITY};
pub use cut::CutSink;
pub use events::{KeyEvent, KeyEvents};
pub use held::{Held, HeldShards, ShardMap};
pub use list::ListValue;
pub use shard::{as_master, loading, while_loading, SampleResult, Shard};
pub use value::{canonical_int, Entry, HashValue, Hasher, SetValue, Value};
pub use zset::{Score, ScoreBound, ZSet};

thread_local! {
    /// The time a running script or transaction sees: frozen at its start on its
    /// thread, so a key cannot expire half way through (Redis's "scripts block the
    /// time", and its `fixed_time_expire` for a command and what EXEC runs).
    static FROZEN_NOW: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Milliseconds since the Unix epoch: the clock of every deadline (frozen while this
/// thread runs a script or a transaction).
#[inline]
pub fn now_ms() -> u64 {
    if let Some(frozen) = FROZEN_NOW.with(|f| f.get()) {
        return frozen;
    }
    wall_clock_ms()
}

/// Milliseconds since the Unix epoch, never frozen.
pub fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// This thread's clock, frozen at the current time until the guard is dropped (also on
/// unwinding, so a failing script cannot leave a worker thread's clock stopped). A
/// freeze inside another (a script inside EXEC) takes the time it starts at, as Redis's
/// script snapshot does, and gives the outer one back when it ends.
#[must_use = "the clock runs again when the guard is dropped"]
pub struct FrozenTime {
    outer: Option<u64>,
}

impl FrozenTime {
    /// Freezes the clock now.
    pub fn now() -> FrozenTime {
        let outer = FROZEN_NOW.with(|f| f.replace(Some(wall_clock_ms())));
        FrozenTime { outer }
    }
}

impl Drop for FrozenTime {
    fn drop(&mut self) {
        FROZEN_NOW.with(|f| f.set(self.outer));
    }
}

/// A shard on its own cache lines, so two cores locking neighbouring shards do not
/// fight over one line.
#[repr(align(128))]
#[derive(Debug, Default)]
struct ShardSlot(Mutex<Shard>);

/// One logical database (`SELECT n`).
#[derive(Debug)]
pub struct Db {
    shards: Box<[ShardSlot]>,
    mask: usize,
    /// INFO keyspace's `avg_ttl`, in milliseconds: the active expiry's running estimate.
    avg_ttl: std::sync::atomic::AtomicU64,
}

/// The shards locked by a multi-key command, in ascending shard order.
pub struct Locked<'a> {
    guards: Vec<(usize, MutexGuard<'a, Shard>)>,
    mask: usize,
}

impl Locked<'_> {
    /// The locked shard that holds `key`. The key must be one the lock was taken for;
    /// any other key falls back to the first locked shard rather than panicking.
    pub fn shard(&mut self, key: &[u8]) -> &mut Shard {
        let index = key_slot(key) as usize & self.mask;
        let pos = self
            .guards
            .binary_search_by_key(&index, |(i, _)| *i)
            .unwrap_or(0);
        &mut self.guards[pos].1
    }
}

impl Db {
    fn new(shards: usize, index: usize, events: &Arc<KeyEvents>) -> Db {
        let shards = shards.max(1).next_power_of_two();
        Db {
            shards: (0..shards)
                .map(|_| ShardSlot(Mutex::new(Shard::new(index, events.clone()))))
                .collect(),
            mask: shards - 1,
            avg_ttl: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// INFO keyspace's `avg_ttl` (milliseconds; 0 before an estimate, or without keys
    /// with a TTL).
    pub fn avg_ttl(&self) -> u64 {
        self.avg_ttl.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Folds what one active-expiry cycle saw of this database into `avg_ttl`, as
    /// Redis's `activeExpireCycle` does: the remaining TTLs summed over the keys it
    /// sampled and left (`samples` of them) give this cycle's average, weighed 2%
    /// against the estimate so far (which it replaces when there is none);
    /// `volatile_keys` false (no key has a TTL) resets it.
    pub fn note_ttl_samples(&self, sum: u64, samples: u64, volatile_keys: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        if !volatile_keys {
            self.avg_ttl.store(0, Relaxed);
        } else if let Some(now) = sum.checked_div(samples) {
            let mut avg = self.avg_ttl.load(Relaxed);
            if avg == 0 {
                avg = now;
            }
            self.avg_ttl.store((avg / 50) * 49 + now / 50, Relaxed);
        }
    }

    /// Which shard holds `key`.
    #[inline]
    pub fn shard_index(&self, key: &[u8]) -> usize {
        key_slot(key) as usize & self.mask
    }

    /// Which shard holds the keys of cluster hash slot `slot`.
    #[inline]
    pub fn shard_of_slot(&self, slot: usize) -> usize {
        slot & self.mask
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Locks the shard of `key`.
    #[inline]
    pub fn lock(&self, key: &[u8]) -> MutexGuard<'_, Shard> {
        self.shards[self.shard_index(key)].0.lock()
    }

    /// Locks the shard of `key` if nobody holds it.
    pub fn try_lock(&self, key: &[u8]) -> Option<MutexGuard<'_, Shard>> {
        self.shards[self.shard_index(key)].0.try_lock()
    }

    /// Locks shard number `index` (modulo the count).
    pub fn lock_index(&self, index: usize) -> MutexGuard<'_, Shard> {
        self.shards[index & self.mask].0.lock()
    }

    /// Locks the shards of all `keys`, each once, in ascending order.
    pub fn lock_keys<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> Locked<'_> {
        let mut indexes: Vec<usize> = keys.into_iter().map(|k| self.shard_index(k)).collect();
        indexes.sort_unstable();
        indexes.dedup();
        Locked {
            guards: indexes
                .into_iter()
                .map(|i| (i, self.shards[i].0.lock()))
                .collect(),
            mask: self.mask,
        }
    }

    /// Locks every shard, in order (FLUSHDB, SWAPDB).
    pub fn lock_all(&self) -> Vec<MutexGuard<'_, Shard>> {
        self.shards.iter().map(|s| s.0.lock()).collect()
    }

    /// Number of keys (DBSIZE), expired-but-unreclaimed included, as in Redis.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.0.lock().len()).sum()
    }

    /// Whether the database holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of keys with a TTL.
    pub fn ttl_len(&self) -> usize {
        self.shards.iter().map(|s| s.0.lock().ttl_len()).sum()
    }

    /// Removes every key.
    pub fn clear(&self) {
        for mut shard in self.lock_all() {
            shard.clear();
        }
    }
}

/// Expiry counters summed over every shard.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpiryStats {
    /// Keys removed because they expired, lazily or actively.
    pub expired: u64,
    /// TTL keys the active cycle looked at.
    pub sampled: u64,
}

/// Every database.
#[derive(Debug)]
pub struct Store {
    dbs: Box<[Db]>,
    /// Whether the active expiry cycle runs (`DEBUG SET-ACTIVE-EXPIRE`); lazy expiry on
    /// access always does.
    active_expire: std::sync::atomic::AtomicBool,
    /// Whether the whole background cycle is held (`DEBUG PAUSE-CRON 1`).
    cron_paused: std::sync::atomic::AtomicBool,
    /// Key events for notifications and tracking.
    events: Arc<KeyEvents>,
    /// The background freer (UNLINK, FLUSH ASYNC).
    pub lazyfree: lazyfree::LazyFree,
    /// What the active expiry cycles did (INFO's `expired_stale_perc` and the like).
    pub expire_cycles: expiry::CycleStats,
    /// WATCHes released while their shard was held (db, key, watch id): see
    /// [`Store::release_watch`].
    deferred_unwatches: parking_lot::Mutex<Vec<(usize, Vec<u8>, u64)>>,
}

impl Store {
    /// `databases` databases of `shards` shards each (rounded up to a power of two).
    pub fn new(databases: usize, shards: usize) -> Store {
        let events = Arc::new(KeyEvents::default());
        Store {
            dbs: (0..databases.max(1))
                .map(|index| Db::new(shards, index, &events))
                .collect(),
            active_expire: std::sync::atomic::AtomicBool::new(true),
            cron_paused: std::sync::atomic::AtomicBool::new(false),
            events,
            lazyfree: lazyfree::LazyFree::default(),
            expire_cycles: expiry::CycleStats::default(),
            deferred_unwatches: parking_lot::Mutex::default(),
        }
    }

    /// Watch `watch_id` of `key` in database `db` ends. Never waits: when the shard is
    /// held (a script running, perhaps past its busy threshold, or forever), the release
    /// is left to the background cycle ([`Self::release_deferred_watches`]), as a client
    /// that disconnects or whose EXEC gets BUSY must not stop a worker thread. A watch
    /// id is never reused, so a late release touches no newer WATCH.
    pub fn release_watch(&self, db: usize, key: &[u8], watch_id: u64) {
        match self.db(db).try_lock(key) {
            Some(mut shard) => shard.unwatch(key, watch_id),
            None => self
                .deferred_unwatches
                .lock()
                .push((db, key.to_vec(), watch_id)),
        }
    }

    /// Does the releases [`Self::release_watch`] left (from a thread that may wait).
    pub fn release_deferred_watches(&self) {
        let deferred = std::mem::take(&mut *self.deferred_unwatches.lock());
        for (db, key, watch_id) in deferred {
            self.db(db).lock(&key).unwatch(&key, watch_id);
        }
    }

    /// Key events (expirations, creations, command events) waiting to be published.
    #[inline]
    pub fn events(&self) -> &KeyEvents {
        &self.events
    }

    /// Turns the active expiry cycle on or off (`DEBUG SET-ACTIVE-EXPIRE 0|1`).
    pub fn set_active_expire(&self, on: bool) {
        self.active_expire
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the active expiry cycle runs.
    pub fn active_expire(&self) -> bool {
        self.active_expire
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Holds or resumes the background cycle: expiry, eviction, tracking limits, save
    /// points and replication pings (`DEBUG PAUSE-CRON 1|0`).
    pub fn set_cron_paused(&self, paused: bool) {
        self.cron_paused
            .store(paused, std::sync::atomic::Ordering::Relaxed);
    }

    /// Moves on the shards' key indexes that are being regrown, so a move ends even
    /// when no command changes the shard (Redis's `incrementallyRehash` in its cron,
    /// under `activerehashing yes`; see [`incremental_map`]).
    pub fn tidy_indexes(&self) {
        for db in self.dbs() {
            for index in 0..db.shard_count() {
                db.lock_index(index).tidy_indexes();
            }
        }
    }

    /// Whether the background cycle is held.
    pub fn cron_paused(&self) -> bool {
        self.cron_paused.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Database `index`; callers validate the index at SELECT time.
    #[inline]
    pub fn db(&self, index: usize) -> &Db {
        &self.dbs[index.min(self.dbs.len() - 1)]
    }

    /// Number of databases.
    pub fn db_count(&self) -> usize {
        self.dbs.len()
    }

    /// CONFIG RESETSTAT: the expiry and eviction counters start again from zero.
    pub fn reset_stats(&self) {
        for db in &self.dbs {
            for index in 0..db.shard_count() {
                let mut shard = db.lock_index(index);
                shard.expired = 0;
                shard.sampled = 0;
            }
        }
        self.events
            .eviction
            .evicted
            .store(0, std::sync::atomic::Ordering::Relaxed);
        self.events.eviction.exceeded.reset();
        self.expire_cycles.reset();
    }

    /// All databases.
    pub fn dbs(&self) -> &[Db] {
        &self.dbs
    }

    /// Expiry counters over every database.
    pub fn expiry_stats(&self) -> ExpiryStats {
        let mut stats = ExpiryStats::default();
        for db in self.dbs.iter() {
            for slot in db.shards.iter() {
                let shard = slot.0.lock();
                stats.expired += shard.expired;
                stats.sampled += shard.sampled;
            }
        }
        stats
    }

    /// Exchanges two databases atomically: all shards of both are locked in one global
    /// order (lower database first) before any is touched.
    pub fn swap_dbs(&self, a: usize, b: usize) {
        if a == b || a >= self.dbs.len() || b >= self.dbs.len() {
            return;
        }
        let (lo, hi) = (a.min(b), a.max(b));
        let mut first = self.dbs[lo].lock_all();
        let mut second = self.dbs[hi].lock_all();
        for (x, y) in first.iter_mut().zip(second.iter_mut()) {
            x.swap(y);
        }
        self.swap_avg_ttl(lo, hi);
    }

    /// Exchanges the `avg_ttl` estimates of two databases whose keys were exchanged
    /// (SWAPDB), as Redis swaps them with the dictionaries.
    pub fn swap_avg_ttl(&self, a: usize, b: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        if let (Some(x), Some(y)) = (self.dbs.get(a), self.dbs.get(b)) {
            let mine = x.avg_ttl.load(Relaxed);
            x.avg_ttl.store(y.avg_ttl.swap(mine, Relaxed), Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_tags_share_a_shard_and_multi_locks_work() {
        let store = Store::new(2, 16);
        let db = store.db(0);
        assert_eq!(db.shard_index(b"{user}a"), db.shard_index(b"{user}b"));
        let keys: [&[u8]; 3] = [b"a", b"b", b"c"];
        let mut locked = db.lock_keys(keys);
        for k in keys {
            locked.shard(k).insert(k, Value::Int(1), 0);
        }
        drop(locked);
        assert_eq!(db.len(), 3);
        store.swap_dbs(0, 1);
        assert_eq!(store.db(0).len(), 0);
        assert_eq!(store.db(1).len(), 3);
    }
}
