//! One shard of one database: the keys whose hash slot maps here, the subset of them
//! that carry a TTL, and the expiry counters. A shard is only ever touched under its
//! lock (see [`super::Db`]), so nothing in here is synchronised.
//!
//! Expiry bookkeeping lives here so no command can forget it: every insert, overwrite,
//! removal and TTL change keeps `ttl_keys` equal to the keys whose `expires_at != 0`.

use std::collections::HashSet;
use std::sync::Arc;

use super::compact::CompactBytes;
use super::cut::{CutSink, CutState};
use super::events::KeyEvents;
use super::free_slots::FreeSlots;
use super::incremental_map::IncrementalMap;
use super::now_ms;
use super::ready::WaitKind;
use super::slot_counts::SlotCounts;
use super::value::{Entry, Hasher, Value};
use super::watch::{Presence, Watches};
use redline_resp::slot::key_slot;

thread_local! {
    /// The command running on this thread comes from our master (replica side).
    static FROM_MASTER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn from_master() -> bool {
    FROM_MASTER.with(std::cell::Cell::get)
}

thread_local! {
    /// The command running on this thread replays the AOF.
    static LOADING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread replays the AOF: nothing expires meanwhile, and an EXPIRE in
/// the past sets the deadline instead of deleting, as in Redis, whose loading leaves
/// expiry for later (an AOF's writes after such an EXPIRE act on the key it kept).
pub fn loading() -> bool {
    LOADING.with(std::cell::Cell::get)
}

/// Runs `f` as the AOF's replay (see [`loading`]). The flag goes down also on
/// unwinding, so a failing command cannot leave a worker thread that never expires.
pub fn while_loading<R>(f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            LOADING.with(|m| m.set(false));
        }
    }
    LOADING.with(|m| m.set(true));
    let _reset = Reset;
    f()
}

/// Runs `f` as our master's stream: expired keys stay visible to it (see
/// [`Shard::get`]).
pub fn as_master<R>(f: impl FnOnce() -> R) -> R {
    FROM_MASTER.with(|m| m.set(true));
    let result = f();
    FROM_MASTER.with(|m| m.set(false));
    result
}

/// Keys of one shard.
#[derive(Debug, Default)]
pub struct Shard {
    /// Key → entry, by position too, so random keys and scan cursors are O(1) and
    /// stable; its hash index grows incrementally (see [`super::incremental_map`]).
    map: IncrementalMap<CompactBytes, Entry, Hasher>,
    /// Keys with a TTL, indexable so the active cycle samples them in O(1).
    ttl_keys: IncrementalMap<CompactBytes, (), Hasher>,
    /// On a writable replica, keys a client (not our master) gave a TTL: the master
    /// will never send their DEL, so this replica expires them itself (Redis's
    /// `slaveKeysWithExpire`). May name keys gone or changed since: checked when swept.
    replica_ttl_keys: HashSet<CompactBytes, Hasher>,
    /// Keys removed because they expired (lazily or by the active cycle).
    pub expired: u64,
    /// TTL keys the active cycle has looked at.
    pub sampled: u64,
    /// Keys some client WATCHes, and whether a change since broke each watch.
    watched: Watches,
    /// Where expirations and creations are reported (notifications, tracking); `None`
    /// for a shard outside a store (tests).
    events: Option<Arc<KeyEvents>>,
    /// The database this shard belongs to (its events name it). SWAPDB exchanges the
    /// contents of shards, never this.
    db: usize,
    /// The snapshot cuts this shard has not finished saving (see [`super::cut`]): every
    /// change below saves what it is about to change into each first. Several run at
    /// once (a BGSAVE, a replica's full sync, an AOF rewrite), each walked by its own
    /// writer.
    cuts: Vec<CutState>,
    /// How many keys each cluster hash slot holds, once a cluster command asked (see
    /// [`SlotCounts`]); kept up to date from then on.
    slot_counts: Option<Box<SlotCounts>>,
    /// The sizes of `map` and `ttl_keys` and their empty slots, as reported to the
    /// allocator's count (see [`super::free_slots`]).
    free_slots: FreeSlots,
}

/// What one active-expiry round did in a shard.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleResult {
    /// Keys looked at.
    pub sampled: usize,
    /// Keys found expired and removed.
    pub expired: usize,
    /// The remaining TTLs of the keys looked at and left, in milliseconds, summed.
    pub ttl_sum: u64,
    /// How many keys `ttl_sum` adds up.
    pub ttl_samples: u64,
}

/// What the pending `cuts` of database `db` do when the key table, compacting, moves
/// an entry from position `from` into `hole` (see [`IncrementalMap::vacate`]).
fn cuts_hear_moves(
    cuts: &mut [CutState],
    db: usize,
) -> impl FnMut(usize, usize, &CompactBytes, &Entry) + '_ {
    move |hole, from, key, entry| {
        for cut in cuts.iter_mut() {
            cut.moved(db, hole, from, key, entry);
        }
    }
}

/// Whether `key` is missing, stale or live in `map` (WATCH's view of a FLUSHDB or SWAPDB).
fn presence(map: &IncrementalMap<CompactBytes, Entry, Hasher>, key: &[u8]) -> Presence {
    match map.get(key) {
        None => Presence::Missing,
        Some(e) if e.is_stale(now_ms()) => Presence::Stale,
        Some(_) => Presence::Live,
    }
}

impl Shard {
    /// An empty shard of database `db` reporting to `events`.
    pub fn new(db: usize, events: Arc<KeyEvents>) -> Shard {
        Shard {
            events: Some(events),
            db,
            ..Shard::default()
        }
    }

    /// Reports that `key` expired and was removed.
    #[inline]
    fn report_expired(&self, key: &[u8]) {
        if let Some(events) = &self.events {
            events.expired(self.db, key);
        }
    }

    /// Queues keyspace event `event` of class bit `class` on `key` of this shard's
    /// database (see `crate::notify`; for code that holds a shard but no command
    /// context, such as a blocked client being served).
    pub fn notify(&self, class: u32, event: &'static str, key: &[u8]) {
        if let Some(events) = &self.events {
            if events.wants(class) {
                events.push(super::KeyEvent {
                    db: self.db,
                    key: bytes::Bytes::copy_from_slice(key),
                    class,
                    event,
                    modified: false,
                });
            }
        }
    }

    /// Reports that `key` was created (notifications, tracking, a pending cut).
    #[inline]
    fn report_created(&mut self, key: &[u8], announce: bool) {
        if let (Some(events), true) = (&self.events, announce) {
            events.created(self.db, key);
        }
        // Created after the pending cuts began: they must not save it.
        for cut in &mut self.cuts {
            cut.created(key);
        }
    }

    /// Signals `key`, added with `value`, ready for the clients blocked on the type of
    /// `value` (see [`super::ready`]; no type nobody blocks on). The shard does it
    /// where a key is added and a stream written over or deleted; a command that adds a
    /// key anew over an old one in place (RESTORE ... REPLACE, Redis's `dbDelete` then
    /// `dbAdd`) calls it itself.
    #[inline]
    pub fn signal_ready(&self, key: &[u8], value: &Value) {
        let (Some(events), Some(kind)) = (&self.events, WaitKind::of(value)) else {
            return;
        };
        if events.waited.may_be_waited_on(key) {
            super::ready::record(self.db, key, kind);
        }
    }

    /// [`Shard::signal_ready`] when `value`, written over or deleted, is a stream: its
    /// readers hear of it, as Redis signals a stream's `dbOverwrite` and `dbDelete`.
    #[inline]
    fn signal_ready_if_stream(&self, key: &[u8], value: &Value) {
        if matches!(value, Value::Stream(_)) {
            self.signal_ready(key, value);
        }
    }

    /// Number of keys, including expired ones not reclaimed yet (as Redis's DBSIZE).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the shard holds no key.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of keys with a TTL.
    pub fn ttl_len(&self) -> usize {
        self.ttl_keys.len()
    }

    /// Index of the live entry of `key`; an expired one is removed first (lazy expiry).
    ///
    /// On a replica, as in Redis, expiry is the master's: an expired key is hidden from
    /// clients but kept until the master's DEL, and the master's own commands still see
    /// it (the master knows better whether it lives).
    #[inline]
    fn live_index(&mut self, key: &[u8]) -> Option<usize> {
        let index = self.map.get_index_of(key)?;
        let expires_at = self.map.get_index(index).map_or(0, |(_, e)| e.expires_at);
        if expires_at == 0 {
            // Most keys have no TTL: they cost no clock read (5% of a hot GET).
            return Some(index);
        }
        let now = now_ms();
        if expires_at <= now {
            if loading() {
                return Some(index);
            }
            if self.events.as_ref().is_some_and(|e| e.replica()) {
                return from_master().then_some(index);
            }
            if self.events.as_ref().is_some_and(|e| e.expiry_held(now)) {
                return None;
            }
            self.expire_index(index);
            self.expired += 1;
            return None;
        }
        Some(index)
    }

    /// The entry of `key` as stored, expired or not (DEBUG OBJECT looks without
    /// expiring, like Redis's direct dictionary lookup).
    pub fn peek_stored(&self, key: &[u8]) -> Option<&Entry> {
        self.map.get(key)
    }

    /// Counts a read's lookup of `key` (INFO's hits and misses) and reports a miss as a
    /// `keymiss` event, as Redis's `lookupKeyRead` does.
    #[inline]
    fn looked_up(&self, key: &[u8], found: bool) {
        if super::lookups::looked_up(found) {
            if let Some(events) = &self.events {
                events.missed(self.db, key);
            }
        }
    }

    /// The live entry of `key`, recorded as used (eviction's LRU/LFU data).
    #[inline]
    pub fn get(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let index = self.live_index(key);
        self.looked_up(key, index.is_some());
        let index = index?;
        self.before_change(index);
        let events = self.events.clone();
        let entry = self.map.get_index_mut(index).map(|(_, e)| e)?;
        if let Some(events) = events {
            entry.access = events.eviction.touched(entry.access);
        }
        Some(entry)
    }

    /// The live entry of `key`, without recording a use (TYPE, TTL: Redis's NOTOUCH).
    pub fn get_untouched(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.untouched(key, true)
    }

    /// As [`Shard::get_untouched`], and a miss fires no `keymiss` (OBJECT: Redis's
    /// NOTOUCH|NONOTIFY; it still counts in INFO's misses).
    pub fn get_untouched_quietly(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.untouched(key, false)
    }

    fn untouched(&mut self, key: &[u8], notify: bool) -> Option<&mut Entry> {
        let index = self.live_index(key);
        if notify {
            self.looked_up(key, index.is_some());
        } else {
            super::lookups::looked_up(index.is_some());
        }
        let index = index?;
        self.before_change(index);
        self.map.get_index_mut(index).map(|(_, e)| e)
    }

    /// Access data for a key created now.
    fn fresh_access(&self) -> u32 {
        self.events.as_ref().map_or(0, |e| e.eviction.fresh())
    }

    /// Up to `n` random stored keys (those with a TTL when `volatile`), each with its
    /// access data and deadline: eviction's sample.
    pub fn sample(&self, n: usize, volatile: bool) -> Vec<(Vec<u8>, (u32, u64))> {
        let population = if volatile {
            self.ttl_keys.len()
        } else {
            self.map.len()
        };
        if population == 0 {
            return Vec::new();
        }
        (0..n.min(population))
            .filter_map(|_| {
                let key = if volatile {
                    self.ttl_keys.get_index(fastrand::usize(..population))?.0
                } else {
                    self.map.get_index(self.map.random_index()?)?.0
                }
                .as_bytes();
                let entry = self.map.get(key)?;
                Some((key.to_vec(), (entry.access, entry.expires_at)))
            })
            .collect()
    }

    /// Removes `key` whether or not it has expired (an emptied *STORE destination, as
    /// Redis's `dbDelete`); true if it was there.
    pub fn remove_any(&mut self, key: &[u8]) -> bool {
        match self.map.get_index_of(key) {
            Some(index) => self.remove_index(index).is_some(),
            None => false,
        }
    }

    /// Removes `key` for eviction, expired or not; true if it was there. No change is
    /// counted: Redis's eviction counts none (the replicas and the AOF hear a DEL).
    pub fn evict(&mut self, key: &[u8]) -> bool {
        match self.map.get_index_of(key) {
            Some(index) => self.vacate_index(index).is_some(),
            None => false,
        }
    }

    /// Whether `key` exists (and is not expired).
    pub fn contains(&mut self, key: &[u8]) -> bool {
        let found = self.live_index(key).is_some();
        self.looked_up(key, found);
        found
    }

    /// Stores `value` under `key` with deadline `expires_at` (0 = none), replacing any
    /// previous value and TTL.
    pub fn insert(&mut self, key: &[u8], value: Value, expires_at: u64) {
        self.touch(key);
        self.store(key, value, expires_at, true);
    }

    /// [`Shard::insert`] of a key read from an RDB image (a start, DEBUG RELOAD, a
    /// replica's full sync): as Redis's `dbAddRDBLoad`, no `new` event fires and no
    /// change is counted; the load is not a write clients are told about.
    pub fn insert_loaded(
        &mut self,
        key: &[u8],
        value: Value,
        expires_at: u64,
        access: Option<u32>,
    ) {
        self.store(key, value, expires_at, false);
        // Only when the file recorded it: a lookup per loaded key is not free.
        if let Some(access) = access {
            self.set_access(key, access);
        }
    }

    /// Gives `key` the access data `access` (eviction's LRU/LFU data), without a lookup:
    /// a key moved here keeps its history (RENAME, MOVE), a loaded one the file's.
    pub fn set_access(&mut self, key: &[u8], access: u32) {
        if let Some(index) = self.map.get_index_of(key) {
            self.map[index].access = access;
        }
    }

    fn store(&mut self, key: &[u8], value: Value, expires_at: u64, announce: bool) {
        let access = self.fresh_access();
        self.room_for_one_key();
        // One hash and one probe whether the key is new or not (a lookup then an insert
        // hashed and probed twice for every new key: every SET of one, every key loaded).
        match self.map.find_or_hash(key) {
            Ok(index) => {
                let stale = self.map[index].is_stale(now_ms());
                // Redis expires a stale key before writing over it: its `expired` event,
                // then the new key's `new`. (A replica, or a paused expiry, keeps the key
                // in place: it is written over then.)
                if stale && self.live_index(key).is_none() && !self.map.contains_key(key) {
                    if announce {
                        self.signal_ready(key, &value);
                    }
                    let entry = Entry {
                        value,
                        expires_at,
                        access,
                    };
                    self.map.insert(CompactBytes::new(key), entry);
                    self.added(key, expires_at, announce);
                    return;
                }
                self.before_change(index);
                if announce {
                    self.signal_ready_if_stream(key, &self.map[index].value);
                }
                let events = self.events.clone();
                if let Some((_, entry)) = self.map.get_index_mut(index) {
                    let had_ttl = entry.expires_at != 0;
                    entry.value = value;
                    entry.expires_at = expires_at;
                    // Written over: a use, as Redis's `setKey` looks the key up for
                    // writing and the new value keeps the old one's LFU data.
                    if let Some(events) = events {
                        entry.access = events.eviction.touched(entry.access);
                    }
                    self.track_ttl(key, had_ttl, expires_at != 0);
                }
            }
            Err(hash) => {
                if announce {
                    self.signal_ready(key, &value);
                }
                self.map.add_new(
                    hash,
                    CompactBytes::new(key),
                    Entry {
                        value,
                        expires_at,
                        access,
                    },
                );
                self.added(key, expires_at, announce);
            }
        }
    }

    /// The bookkeeping of a key just added to the map: its TTL index, its `new` event,
    /// its slot's count.
    fn added(&mut self, key: &[u8], expires_at: u64, announce: bool) {
        self.track_ttl(key, false, expires_at != 0);
        self.report_created(key, announce);
        if let Some(counts) = &mut self.slot_counts {
            counts.added(key);
        }
    }

    /// Gives an empty shard tables with room for `keys` keys and `ttls` deadlines at
    /// once, so that filling them grows none (a copy of a shard whose size is known:
    /// growing by a quarter at a time, the copy would reallocate its arrays under the
    /// locks of the shards it copies from). A shard holding keys is left as it is.
    pub fn presize(&mut self, keys: usize, ttls: usize) {
        if !self.map.is_empty() || !self.ttl_keys.is_empty() {
            return;
        }
        self.free_slots.presized(keys, ttls);
        self.map = IncrementalMap::with_capacity(keys);
        self.ttl_keys = IncrementalMap::with_capacity(ttls);
    }

    /// Adds a copy of another store's entry (value, deadline, last use) under `key`,
    /// quietly: no change is counted and no event fires, so the commands of the store
    /// copied from, on whose threads the copy is made, see nothing (a forked debugging
    /// session's dataset: `crate::scripting::forked`).
    pub fn insert_copy(&mut self, key: &[u8], entry: &Entry) {
        self.room_for_one_key();
        let copy = Entry {
            value: entry.value.clone(),
            expires_at: entry.expires_at,
            access: entry.access,
        };
        let has_ttl = copy.expires_at != 0;
        match self.map.find_or_hash(key) {
            Ok(index) => {
                if let Some((_, stored)) = self.map.get_index_mut(index) {
                    let had_ttl = stored.expires_at != 0;
                    *stored = copy;
                    self.track_ttl(key, had_ttl, has_ttl);
                }
            }
            Err(hash) => {
                self.map.add_new(hash, CompactBytes::new(key), copy);
                self.track_ttl(key, false, has_ttl);
                if let Some(counts) = &mut self.slot_counts {
                    counts.added(key);
                }
            }
        }
    }

    /// Stores `value` under `key` as a new key, deleting what was there first (Redis's
    /// `dbDelete` then `dbAdd`, as RENAME and COPY do): its `new` event fires even when
    /// the key existed.
    pub fn insert_anew(&mut self, key: &[u8], value: Value, expires_at: u64) {
        self.remove_any(key);
        self.insert(key, value, expires_at);
    }

    /// The entry of `key`, created with `make()` when missing (or expired); an existing
    /// one is not recorded as used (the command looked it up already).
    pub fn get_or_insert_with(&mut self, key: &[u8], make: impl FnOnce() -> Value) -> &mut Entry {
        self.get_or_insert(key, make, false, true)
    }

    /// [`Shard::get_or_insert_with`] for a command whose only lookup this is: an
    /// existing key is recorded as used, as Redis's lookup for writing records it.
    pub fn get_or_insert_used(&mut self, key: &[u8], make: impl FnOnce() -> Value) -> &mut Entry {
        self.get_or_insert(key, make, true, true)
    }

    /// [`Shard::get_or_insert_with`] that does not signal a key it creates (WATCH,
    /// tracking), for a write that may end up changing nothing: Redis's BITFIELD creates
    /// its string first and signals it only if a write then changed it (the caller's
    /// [`Shard::touch`]).
    pub fn get_or_insert_unsignalled(
        &mut self,
        key: &[u8],
        make: impl FnOnce() -> Value,
    ) -> &mut Entry {
        self.get_or_insert(key, make, false, false)
    }

    fn get_or_insert(
        &mut self,
        key: &[u8],
        make: impl FnOnce() -> Value,
        used: bool,
        signal: bool,
    ) -> &mut Entry {
        let index = match self.live_index(key) {
            Some(index) => {
                self.before_change(index);
                if let (true, Some(events)) = (used, &self.events) {
                    let entry = &mut self.map[index];
                    entry.access = events.eviction.touched(entry.access);
                }
                index
            }
            None => {
                // No change counted: the command counts what it puts in (Redis's
                // `dbAdd` counts nothing either), and every caller touches the key after.
                if signal {
                    self.signal(key);
                }
                self.report_created(key, true);
                if let Some(counts) = &mut self.slot_counts {
                    counts.added(key);
                }
                let access = self.fresh_access();
                self.room_for_one_key();
                let value = make();
                self.signal_ready(key, &value);
                let (index, _) = self.map.insert_full(
                    CompactBytes::new(key),
                    Entry {
                        value,
                        expires_at: 0,
                        access,
                    },
                );
                self.settle_free_slots();
                index
            }
        };
        // The index was just found or inserted, so it is in range.
        &mut self.map[index]
    }

    /// Sets (or with 0 clears) the deadline of an existing key; false when it is missing.
    pub fn set_expires(&mut self, key: &[u8], expires_at: u64) -> bool {
        let Some(index) = self.live_index(key) else {
            return false;
        };
        self.touch(key);
        self.before_change(index);
        let entry = &mut self.map[index];
        let had_ttl = entry.expires_at != 0;
        entry.expires_at = expires_at;
        self.track_ttl(key, had_ttl, expires_at != 0);
        true
    }

    fn track_ttl(&mut self, key: &[u8], had: bool, has: bool) {
        // Only a client's write on a (writable) replica: not its master's, not a load.
        if has && !from_master() && !loading() && self.events.as_ref().is_some_and(|e| e.replica())
        {
            self.replica_ttl_keys.insert(CompactBytes::new(key));
        }
        match (had, has) {
            (false, true) => {
                self.room_for_one_ttl();
                self.ttl_keys.insert(CompactBytes::new(key), ());
            }
            (true, false) => {
                self.ttl_keys.swap_remove(key);
            }
            _ => {}
        }
        self.settle_free_slots();
    }

    /// Makes room for one more key in a full key table: a quarter more (see
    /// [`super::free_slots::growth`]). A vacant position is room already.
    #[inline]
    fn room_for_one_key(&mut self) {
        if self.map.vacant() == 0 {
            if let Some(more) = self.free_slots.key_room(self.map.len()) {
                self.map.reserve_exact(more);
            }
        }
    }

    /// [`Self::room_for_one_key`] for the TTL index.
    #[inline]
    fn room_for_one_ttl(&mut self) {
        if let Some(more) = self.free_slots.ttl_room(self.ttl_keys.len()) {
            self.ttl_keys.reserve_exact(more);
        }
    }

    /// Reports the tables' empty slots as they are now (after any change of a table's
    /// length or size; see [`super::free_slots`]).
    #[inline]
    fn settle_free_slots(&mut self) {
        self.free_slots.settle(self.map.len(), self.ttl_keys.len());
    }

    /// Removes `key`, returning its entry if it was live.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let index = self.live_index(key)?;
        self.remove_index(index)
    }

    /// Removes the entry at `index`: a command's removal, one change counted.
    fn remove_index(&mut self, index: usize) -> Option<Entry> {
        let (_, entry) = self.vacate_index(index)?;
        super::dirty::mark();
        Some(entry)
    }

    /// Removes the expired entry at `index` and reports it. No change is counted, as
    /// Redis's `deleteExpiredKeyAndPropagate` counts none: the key's TTL was the change.
    fn expire_index(&mut self, index: usize) {
        if let Some((key, _)) = self.vacate_index(index) {
            self.report_expired(&key);
        }
    }

    /// Removes the entry at `index` and signals its key, counting no change (the
    /// callers above decide what counts).
    fn vacate_index(&mut self, index: usize) -> Option<(CompactBytes, Entry)> {
        self.before_change(index);
        // The position is left vacant, so no other key moves under a SCAN cursor (but
        // while the table compacts: the cuts hear of those moves).
        let (key, entry) = self
            .map
            .vacate(index, cuts_hear_moves(&mut self.cuts, self.db))?;
        self.signal(&key);
        self.signal_ready_if_stream(key.as_bytes(), &entry.value);
        if entry.expires_at != 0 {
            self.ttl_keys.swap_remove(key.as_bytes());
        }
        if let Some(counts) = &mut self.slot_counts {
            counts.removed(key.as_bytes());
        }
        self.shrink_if_sparse();
        self.settle_free_slots();
        Some((key, entry))
    }

    /// A table down to a quarter of its size gives half of it back (see
    /// [`super::free_slots::FreeSlots::key_shrink`]) once it has no vacant position
    /// left; shrinking keeps the order of the entries (scan cursors and snapshot cuts
    /// index into it).
    fn shrink_if_sparse(&mut self) {
        if self.map.vacant() == 0 {
            if let Some(to) = self.free_slots.key_shrink(self.map.len()) {
                self.map.shrink_to(to);
            }
        }
        if let Some(to) = self.free_slots.ttl_shrink(self.ttl_keys.len()) {
            self.ttl_keys.shrink_to(to);
        }
    }

    /// Removes every key and returns them, to be dropped elsewhere (FLUSH ASYNC), with
    /// their count.
    pub fn take_all(&mut self) -> (Box<dyn Send>, u64) {
        self.finish_cut();
        let keys = std::mem::take(&mut self.map);
        let ttls = std::mem::take(&mut self.ttl_keys);
        if let Some(counts) = &mut self.slot_counts {
            counts.clear();
        }
        self.watched
            .replaced(|key| presence(&keys, key), |_| Presence::Missing);
        let count = keys.len() as u64;
        super::dirty::mark_n(count);
        // The tables' empty slots stay reported until they are dropped (after them,
        // as the tuple drops in order); the new, empty tables have none.
        let slots = std::mem::take(&mut self.free_slots);
        (Box::new((keys, ttls, slots)), count)
    }

    /// Removes every key; each counts as one change, as in Redis's `emptyData`.
    pub fn clear(&mut self) {
        self.finish_cut();
        super::dirty::mark_n(self.map.len() as u64);
        let map = &self.map;
        self.watched
            .replaced(|key| presence(map, key), |_| Presence::Missing);
        self.map = IncrementalMap::default();
        self.ttl_keys = IncrementalMap::default();
        self.free_slots.emptied();
        if let Some(counts) = &mut self.slot_counts {
            counts.clear();
        }
    }

    /// Exchanges the contents of two shards (SWAPDB).
    pub fn swap(&mut self, other: &mut Shard) {
        self.finish_cut();
        other.finish_cut();
        // One change per side, as when each shard was touched whole.
        super::dirty::mark_n(2);
        let (mine, theirs) = (&self.map, &other.map);
        self.watched
            .replaced(|key| presence(mine, key), |key| presence(theirs, key));
        other
            .watched
            .replaced(|key| presence(theirs, key), |key| presence(mine, key));
        std::mem::swap(&mut self.map, &mut other.map);
        std::mem::swap(&mut self.ttl_keys, &mut other.ttl_keys);
        std::mem::swap(&mut self.slot_counts, &mut other.slot_counts);
        self.free_slots.swap_tables(&mut other.free_slots);
        self.settle_free_slots();
        other.settle_free_slots();
    }

    /// How many keys cluster hash slot `slot` holds here, expired ones not reclaimed yet
    /// included as Redis counts them, in a database of `shards` shards (the counts are
    /// built on first use).
    pub fn slot_count(&mut self, shards: usize, slot: u16) -> usize {
        let map = &self.map;
        self.slot_counts
            .get_or_insert_with(|| Box::new(SlotCounts::of(shards, map.keys())))
            .count(slot)
    }

    /// Up to `max` keys of cluster hash slot `slot` (see [`Shard::slot_count`]): the scan
    /// stops once it found them all. Newest first, as Redis lists them (its list adds at
    /// the head; after deletions the order may differ, which Redis never promised).
    pub fn keys_in_slot(&mut self, shards: usize, slot: u16, max: usize) -> Vec<Vec<u8>> {
        let want = self.slot_count(shards, slot).min(max);
        self.map
            .keys()
            .rev()
            .filter(|key| key_slot(key.as_bytes()) == slot)
            .take(want)
            .map(|key| key.as_bytes().to_vec())
            .collect()
    }

    /// Records that `key` changed, for WATCH. Every write path calls it: the shard's own
    /// insert/remove/expire methods, and commands that modify a value in place.
    #[inline]
    pub fn touch(&mut self, key: &[u8]) {
        super::dirty::mark();
        self.signal(key);
    }

    /// [`Shard::touch`] without counting a change: WATCH and tracking only (Redis's
    /// `signalModifiedKey`), for a key whose change its command counts elsewhere.
    #[inline]
    pub fn signal(&mut self, key: &[u8]) {
        super::changed_keys::record(key);
        if self.watched.is_watched(key) {
            let present = self.map.contains_key(key);
            self.watched.touched(key, present);
        }
    }

    /// Watch `client` (a watch id, see `ClientState::watch_id`) starts on `key` (WATCH).
    pub fn watch(&mut self, key: &[u8], client: u64) {
        let stale = self.is_logically_expired(key);
        self.watched.watch(key, client, stale);
    }

    /// `client` stops watching `key`.
    pub fn unwatch(&mut self, key: &[u8], client: u64) {
        self.watched.unwatch(key, client);
    }

    /// Whether `key` changed, or expired, since `client` watched it: its EXEC fails.
    pub fn watch_broken(&self, key: &[u8], client: u64) -> bool {
        self.watched
            .broken(key, client, self.is_logically_expired(key))
    }

    /// Whether `key` changed since `client` watched it (see [`super::watch::Watches::changed`]).
    pub fn watch_changed(&self, key: &[u8], client: u64) -> bool {
        self.watched.changed(key, client)
    }

    /// Removes `key` when it holds a collection a write left empty, as Redis deletes it:
    /// looked at as the server reads for itself ([`Shard::peek`]: no use recorded, no
    /// lookup counted). True when it did.
    pub fn remove_if_empty(&mut self, key: &[u8]) -> bool {
        let empty = self
            .peek(key)
            .is_some_and(|e| e.value.is_empty_collection());
        if empty {
            // No change counted: the command counted what it took out, and Redis's
            // `dbDelete` of an emptied key counts nothing more.
            self.discard(key);
        }
        empty
    }

    /// Removes `key`, counting no change: a key this command made and could not fill
    /// (nothing changed), or a collection it emptied (see [`Shard::remove_if_empty`]).
    pub fn discard(&mut self, key: &[u8]) {
        if let Some(index) = self.live_index(key) {
            self.vacate_index(index);
        }
    }

    /// Whether `key` exists but its deadline has passed (not yet reclaimed).
    pub fn is_logically_expired(&self, key: &[u8]) -> bool {
        presence(&self.map, key) == Presence::Stale
    }

    /// Whether `key` exists and is not expired, without reclaiming it.
    pub fn peek_live(&self, key: &[u8]) -> bool {
        self.peek(key).is_some()
    }

    /// The live entry of `key` as the server reads it for itself (a write's
    /// propagation): no use recorded, no hit or miss counted, no event, nothing
    /// reclaimed, so a client's OBJECT IDLETIME and INFO never see it.
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        self.map.get(key).filter(|e| !e.is_stale(now_ms()))
    }

    /// A random live key (expired ones met on the way are reclaimed).
    pub fn random_key(&mut self) -> Option<CompactBytes> {
        while let Some(index) = self.map.random_index() {
            let (key, entry) = self.map.get_index(index)?;
            if entry.expires_at != 0 && entry.expires_at <= now_ms() {
                self.expire_index(index);
                self.expired += 1;
                continue;
            }
            return Some(key.clone());
        }
        None
    }

    /// Calls `f` for entries at indexes below `cursor` going down, at most `count` of
    /// them, and returns the next cursor (0 = done). `cursor == None` starts from the
    /// current end. A removal leaves its position vacant and a new key fills a vacant
    /// position, so an entry present throughout is met exactly once; keys move only
    /// while the table compacts, each from the end (already visited) into a hole, so
    /// even then none is skipped, at worst repeated (Redis's SCAN guarantee, and its
    /// repeats while a dict resizes).
    pub fn scan(
        &mut self,
        cursor: Option<usize>,
        count: usize,
        mut f: impl FnMut(&CompactBytes, &Entry),
    ) -> usize {
        let now = now_ms();
        let mut pos = cursor.unwrap_or(usize::MAX).min(self.map.positions());
        let mut visited = 0;
        while pos > 0 && visited < count {
            pos -= 1;
            let expired_key = match self.map.get_index(pos) {
                Some((key, entry)) if entry.expires_at != 0 && entry.expires_at <= now => {
                    visited += 1;
                    Some(key.clone())
                }
                Some((key, entry)) => {
                    visited += 1;
                    f(key, entry);
                    None
                }
                None => None,
            };
            if let Some(key) = expired_key {
                // Reclaimed as it is met, as Redis's scan callback does.
                let _ = self.live_index(key.as_bytes());
            }
        }
        pos
    }

    /// Every stored key, expired or not yet reclaimed (DEBUG DIGEST, like Redis's walk
    /// of its dictionary).
    pub fn for_each_stored(&self, mut f: impl FnMut(&CompactBytes, &Entry)) {
        for (key, entry) in self.map.iter() {
            f(key, entry);
        }
    }

    /// Settles every collection's encoding before the limits change from `old` to `new`
    /// (see [`super::encoding::settle`]): a walk of the shard, as CONFIG SET of an
    /// encoding limit is rare.
    pub fn settle_encodings(
        &mut self,
        old: &super::encoding::EncodingLimits,
        new: &super::encoding::EncodingLimits,
    ) {
        for i in 0..self.map.positions() {
            if let Some((_, entry)) = self.map.get_index_mut(i) {
                super::encoding::settle(&mut entry.value, old, new);
            }
        }
    }

    /// Every live key (KEYS, snapshots).
    pub fn for_each_live(&self, mut f: impl FnMut(&CompactBytes, &Entry)) {
        let now = now_ms();
        for (key, entry) in self.map.iter() {
            if entry.expires_at == 0 || entry.expires_at > now {
                f(key, entry);
            }
        }
    }

    /// One round of Redis's active expiry: look at up to `samples` random keys with a TTL
    /// and remove the expired ones. Cost is O(samples) whatever the shard holds.
    pub fn expire_sample(&mut self, samples: usize, now: u64) -> SampleResult {
        let mut result = SampleResult::default();
        for _ in 0..samples {
            if self.ttl_keys.is_empty() {
                break;
            }
            let pick = fastrand::usize(..self.ttl_keys.len());
            result.sampled += 1;
            let Some((key, _)) = self.ttl_keys.get_index(pick) else {
                break;
            };
            let Some(index) = self.map.get_index_of(key.as_bytes()) else {
                // Cannot happen while the invariant holds; repair rather than loop.
                self.ttl_keys.swap_remove_index(pick);
                self.settle_free_slots();
                continue;
            };
            let expires_at = self.map.get_index(index).map_or(0, |(_, e)| e.expires_at);
            if expires_at != 0 && expires_at <= now {
                self.expire_index(index);
                result.expired += 1;
            } else if expires_at != 0 {
                result.ttl_sum = result.ttl_sum.saturating_add(expires_at - now);
                result.ttl_samples += 1;
            }
        }
        self.sampled += result.sampled as u64;
        self.expired += result.expired as u64;
        result
    }

    /// On a replica: removes the keys a client gave a TTL here once it has passed (see
    /// `replica_ttl_keys`), and forgets those that no longer have one. Returns how many
    /// expired.
    pub fn expire_replica_keys(&mut self, now: u64) -> usize {
        if self.replica_ttl_keys.is_empty() {
            return 0;
        }
        let mut expired = 0;
        let keys: Vec<CompactBytes> = self.replica_ttl_keys.drain().collect();
        for key in keys {
            let Some(index) = self.map.get_index_of(key.as_bytes()) else {
                continue;
            };
            let expires_at = self.map.get_index(index).map_or(0, |(_, e)| e.expires_at);
            if expires_at == 0 {
                continue;
            }
            if expires_at > now {
                self.replica_ttl_keys.insert(key);
                continue;
            }
            self.expire_index(index);
            self.expired += 1;
            expired += 1;
        }
        expired
    }

    /// The background cycle's share of moving the key indexes into their regrown
    /// tables (see [`super::incremental_map`]).
    pub fn tidy_indexes(&mut self) {
        self.map.tidy();
        self.ttl_keys.tidy();
        if self.map.is_compacting() {
            // The one time keys move, as Redis's entries move only while its dict
            // resizes: a SCAN under way may then see a key twice.
            self.map
                .compact_in_background(cuts_hear_moves(&mut self.cuts, self.db));
            self.shrink_if_sparse();
            self.settle_free_slots();
        }
    }

    /// Keys a client gave a TTL on this replica (INFO `slave_expires_tracked_keys`).
    pub fn replica_ttl_len(&self) -> usize {
        self.replica_ttl_keys.len()
    }

    /// Starts a snapshot cut (see [`super::cut`]): from now on this shard saves every
    /// entry into `sink`, as it is now, before changing it, and [`Shard::cut_step`]
    /// saves the rest. An empty shard has nothing to save. Cuts already pending go on.
    pub fn begin_cut(&mut self, sink: Arc<dyn CutSink>) {
        if !self.map.is_empty() {
            self.cuts.push(CutState::new(sink));
        }
    }

    /// Whether the cut into `sink` still has entries of this shard to save.
    pub fn cut_pending(&self, sink: &dyn CutSink) -> bool {
        self.cuts.iter().any(|cut| cut.is_for(sink))
    }

    /// Saves up to `batch` more entries of the cut into `sink`; true when the shard has
    /// nothing left to save for it.
    pub fn cut_step(&mut self, sink: &dyn CutSink, batch: usize) -> bool {
        let Some(at) = self.cuts.iter().position(|cut| cut.is_for(sink)) else {
            return true;
        };
        let cut = &mut self.cuts[at];
        let positions = self.map.positions();
        let start = cut.next().min(positions);
        let rest = self.map.positions_from(start);
        let done = cut.step(self.db, rest, positions, batch);
        if done {
            self.cuts.swap_remove(at);
        }
        done
    }

    /// Saves everything the pending cuts still need (before FLUSH or SWAPDB replace the
    /// whole map).
    fn finish_cut(&mut self) {
        let positions = self.map.positions();
        for mut cut in std::mem::take(&mut self.cuts) {
            let start = cut.next().min(positions);
            cut.step(
                self.db,
                self.map.positions_from(start),
                positions,
                usize::MAX,
            );
        }
    }

    /// Saves the entry at `index` for the pending cuts before it changes.
    #[inline]
    fn before_change(&mut self, index: usize) {
        if self.cuts.is_empty() {
            return;
        }
        if let Some((key, entry)) = self.map.get_index(index) {
            for cut in &mut self.cuts {
                cut.before_change(self.db, index, key, entry);
            }
        }
    }

    /// Approximate bytes held by this shard's keys and values.
    pub fn keys_heap_size(&self) -> usize {
        self.map.capacity() * (std::mem::size_of::<(CompactBytes, Entry)>() + 16)
            + self.map.keys().map(|k| k.heap_size()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::free_slots::{KEY_SLOT_BYTES, TTL_SLOT_BYTES};
    use super::*;

    #[test]
    fn ttl_index_follows_entries() {
        let mut s = Shard::default();
        s.insert(b"a", Value::Int(1), u64::MAX);
        s.insert(b"b", Value::Int(2), 0);
        assert_eq!(s.ttl_len(), 1);
        s.insert(b"a", Value::Int(3), 0);
        assert_eq!(s.ttl_len(), 0);
        assert!(s.set_expires(b"b", u64::MAX));
        assert_eq!(s.ttl_len(), 1);
        s.remove(b"b");
        assert_eq!(s.ttl_len(), 0);
        assert!(!s.set_expires(b"zz", 5));
    }

    /// Churn (a key removed, another added) leaves tombstones in the hash index; the
    /// key array must not grow for it, and its empty slots must be reported as they
    /// are.
    #[test]
    fn churn_does_not_grow_the_key_array() {
        let mut s = Shard::default();
        for n in 0..1000u32 {
            s.insert(format!("key:{n}").as_bytes(), Value::Int(1), u64::MAX);
        }
        let (keys, ttls) = s.free_slots.sizes();
        for n in 1000..30_000u32 {
            let victim = format!("key:{}", n - 1000);
            assert!(s.remove(victim.as_bytes()).is_some());
            s.insert(format!("key:{n}").as_bytes(), Value::Int(1), u64::MAX);
        }
        assert_eq!(s.free_slots.sizes(), (keys, ttls));
        assert!(keys <= 1000 + 1000 / 4 + 8, "{keys} slots for 1000 keys");
        let empty = (keys - 1000) * KEY_SLOT_BYTES + (ttls - 1000) * TTL_SLOT_BYTES;
        assert_eq!(s.free_slots.reported(), empty);
        // Emptied tables report none.
        s.clear();
        assert_eq!(s.free_slots.reported(), 0);
    }

    #[test]
    fn every_write_breaks_a_watch() {
        let mut s = Shard::default();
        s.watch(b"k", 1);
        assert!(!s.watch_broken(b"k", 1));
        s.insert(b"k", Value::Int(1), 0);
        s.remove(b"k");
        assert!(s.watch_broken(b"k", 1), "created and deleted again");
        s.unwatch(b"k", 1);
        // Lazily deleting a key that was already stale at WATCH is no change.
        s.insert(b"k", Value::Int(1), 1);
        s.watch(b"k", 2);
        assert!(s.get(b"k").is_none(), "lazily expired");
        assert!(!s.watch_broken(b"k", 2));
        s.insert(b"k", Value::Int(1), 0);
        s.clear();
        assert!(s.watch_broken(b"k", 2));
    }

    #[test]
    fn lazy_and_active_expiry() {
        let mut s = Shard::default();
        s.insert(b"gone", Value::Int(1), 1);
        assert!(s.get(b"gone").is_none());
        assert_eq!(s.len(), 0);
        for i in 0..100u32 {
            s.insert(&i.to_be_bytes(), Value::Int(1), 1);
        }
        let mut total = 0;
        while s.ttl_len() > 0 {
            total += s.expire_sample(20, now_ms()).expired;
        }
        assert_eq!(total, 100);
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn scan_visits_everything_once_without_changes() {
        let mut s = Shard::default();
        for i in 0..50u32 {
            s.insert(&i.to_be_bytes(), Value::Int(1), 0);
        }
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let next = s.scan(cursor, 7, |k, _| seen.push(k.clone()));
            if next == 0 {
                break;
            }
            cursor = Some(next);
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 50);
    }

    /// Scans `s` to the end with COUNT `count`, calling `between` after each call;
    /// returns how many times each key came back.
    fn scan_counting(
        s: &mut Shard,
        count: usize,
        mut between: impl FnMut(&mut Shard, &HashSet<Vec<u8>>),
    ) -> std::collections::HashMap<Vec<u8>, usize> {
        let mut seen = std::collections::HashMap::new();
        let mut cursor = None;
        loop {
            let next = s.scan(cursor, count, |k, _| {
                *seen.entry(k.as_bytes().to_vec()).or_insert(0) += 1;
            });
            if next == 0 {
                return seen;
            }
            between(s, &seen.keys().cloned().collect());
            cursor = Some(next);
        }
    }

    /// Deleting keys the scan has not reached yet, and adding others, neither repeats
    /// nor skips a key present throughout (Redis's SCAN, whose dict does not move
    /// entries unless it resizes; fakeredis's scan tests check it on a real server).
    #[test]
    fn scan_repeats_nothing_while_unvisited_keys_go_and_new_ones_come() {
        let mut s = Shard::default();
        for i in 0..1000u32 {
            s.insert(format!("k{i}").as_bytes(), Value::Int(1), 0);
        }
        let mut gone = HashSet::new();
        let mut added = 0u32;
        let seen = scan_counting(&mut s, 10, |s, seen| {
            let victim = (0..1000u32)
                .map(|i| format!("k{i}").into_bytes())
                .find(|k| !seen.contains(k) && !gone.contains(k));
            if let Some(victim) = victim {
                assert!(s.remove(&victim).is_some());
                gone.insert(victim);
            }
            for _ in 0..2 {
                s.insert(format!("new{added}").as_bytes(), Value::Int(1), 0);
                added += 1;
            }
        });
        assert!(!s.map.is_compacting());
        assert!(seen.values().all(|&n| n == 1), "a key came back twice");
        for i in 0..1000u32 {
            let key = format!("k{i}").into_bytes();
            assert!(
                gone.contains(&key) || seen.contains_key(&key),
                "k{i} skipped"
            );
        }
    }

    /// A bulk delete compacts the table: keys move then, and a scan under way may
    /// repeat one, but never skips a key present throughout.
    #[test]
    fn scan_skips_nothing_while_the_table_compacts() {
        let mut s = Shard::default();
        for i in 0..2000u32 {
            s.insert(format!("k{i}").as_bytes(), Value::Int(1), 0);
        }
        let mut deleted = false;
        let mut compacted = false;
        let seen = scan_counting(&mut s, 25, |s, _| {
            if !deleted {
                for i in (0..2000u32).filter(|i| i % 4 != 0) {
                    s.remove(format!("k{i}").as_bytes());
                    compacted |= s.map.is_compacting();
                }
                deleted = true;
            }
            s.tidy_indexes();
        });
        assert!(compacted);
        assert!(s.map.vacant() * 2 <= s.map.positions());
        for i in (0..2000u32).filter(|i| i % 4 == 0) {
            assert!(
                seen.contains_key(format!("k{i}").as_bytes()),
                "k{i} skipped"
            );
        }
        assert_eq!(s.len(), 500);
    }

    /// Random keys and eviction's samples find keys in a table with vacant positions.
    #[test]
    fn random_keys_come_from_the_keys_left() {
        let mut s = Shard::default();
        for i in 0..100u32 {
            s.insert(format!("k{i}").as_bytes(), Value::Int(1), 0);
        }
        for i in 0..99u32 {
            s.remove(format!("k{i}").as_bytes());
        }
        for _ in 0..50 {
            assert_eq!(s.random_key().as_deref(), Some(&b"k99"[..]));
            let sample = s.sample(3, false);
            assert!(sample.iter().all(|(k, _)| k == b"k99"), "{sample:?}");
        }
    }
}
