//! `maxmemory`: what each key records about its use, and which keys go when memory runs
//! out (Redis's `evict.c`).
//!
//! Every entry carries 32 bits of access data, kept current on each lookup: under the
//! LRU and other policies the millisecond clock of its last use (modulo 2^32, about 49
//! days: finer than Redis's one-second LRU clock, so LRU tells apart keys used within
//! the same second); under the LFU policies, as
//! Redis, the minute of the last decrement in the high 16 bits and a logarithmic access
//! counter in the low 8 (`lfu-log-factor`, `lfu-decay-time`).
//!
//! When `used_memory` (the counted allocator, [`crate::alloc`], less what replicas'
//! buffers hold) is above `maxmemory` before a command, keys are evicted one at a time
//! until what their removal gave back covers the excess measured at the start: each
//! round samples
//! `maxmemory-samples` keys (keys with a TTL for the `volatile-*` policies) from one
//! random shard of every database, keeps the best candidates in a 16-entry pool across
//! rounds, and evicts the best one that still qualifies. Only one shard is locked at a
//! time, so eviction never stalls the whole keyspace. An evicted key goes to replicas
//! and the AOF as a DEL, with an `evicted` keyspace event.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{now_ms, Store};

/// `maxmemory-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Policy {
    /// Refuse writes with OOM.
    NoEviction = 0,
    /// Least recently used, any key.
    AllKeysLru = 1,
    /// Least frequently used, any key.
    AllKeysLfu = 2,
    /// Any key at random.
    AllKeysRandom = 3,
    /// Least recently used among keys with a TTL.
    VolatileLru = 4,
    /// Least frequently used among keys with a TTL.
    VolatileLfu = 5,
    /// A key with a TTL at random.
    VolatileRandom = 6,
    /// The key with the nearest deadline.
    VolatileTtl = 7,
}

impl Policy {
    /// From its configuration name.
    pub fn from_name(name: &str) -> Policy {
        match name {
            "allkeys-lru" => Policy::AllKeysLru,
            "allkeys-lfu" => Policy::AllKeysLfu,
            "allkeys-random" => Policy::AllKeysRandom,
            "volatile-lru" => Policy::VolatileLru,
            "volatile-lfu" => Policy::VolatileLfu,
            "volatile-random" => Policy::VolatileRandom,
            "volatile-ttl" => Policy::VolatileTtl,
            _ => Policy::NoEviction,
        }
    }

    fn from_u8(n: u8) -> Policy {
        match n {
            1 => Policy::AllKeysLru,
            2 => Policy::AllKeysLfu,
            3 => Policy::AllKeysRandom,
            4 => Policy::VolatileLru,
            5 => Policy::VolatileLfu,
            6 => Policy::VolatileRandom,
            7 => Policy::VolatileTtl,
            _ => Policy::NoEviction,
        }
    }

    /// Whether access is counted as frequency.
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    /// Whether Redis gives every key its own object under this policy (LRU and LFU need
    /// per-key access data, so small integers are not shared: OBJECT REFCOUNT says 1).
    pub fn keeps_own_objects(self) -> bool {
        matches!(
            self,
            Policy::AllKeysLru | Policy::AllKeysLfu | Policy::VolatileLru | Policy::VolatileLfu
        )
    }

    fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }
}

/// Redis's starting LFU counter for a new key.
const LFU_INIT: u32 = 5;

/// The eviction settings and counters, shared by every shard.
#[derive(Debug)]
pub struct Eviction {
    maxmemory: AtomicU64,
    policy: AtomicU8,
    samples: AtomicU32,
    lfu_log_factor: AtomicU32,
    lfu_decay_time: AtomicU32,
    /// Keys evicted since start (INFO `evicted_keys`).
    pub evicted: AtomicU64,
    /// Bytes freed by eviction since the allocator last gave free pages back.
    freed_since_release: AtomicU64,
    /// Memory the limit leaves out (part of Redis's `mem_not_counted_for_evict`): what
    /// replicas' output buffers hold, kept current by the replication stream. A replica that
    /// falls behind must make the master neither evict keys nor refuse writes.
    pub replica_buffers: Arc<crate::alloc::Gauge>,
    /// Memory a point-in-time save holds beyond the dataset (its file buffer and the
    /// entries queued for the disk), also left out: Redis's fork holds the like in a
    /// child process, outside `used_memory`, so a BGSAVE or a full sync near the limit
    /// must neither evict keys nor refuse writes.
    pub saving: Arc<crate::alloc::Gauge>,
    /// What clients closed by client eviction hold until their connections free it
    /// (Redis frees an evicted client at once): left out too, or the keys would pay for
    /// memory already on its way back.
    pub clients_closing: Arc<crate::alloc::Gauge>,
    /// A pass is due outside any command (Redis's eviction time proc): one that stopped
    /// before it was done, or one asked for inside a transaction.
    scheduled: AtomicBool,
    pool: Mutex<Vec<Candidate>>,
    /// How long memory stayed over the limit (INFO `total_eviction_exceeded_time`).
    pub exceeded: ExceededTime,
}

/// Time spent over `maxmemory` with eviction unfinished or stuck, as Redis measures it:
/// from a pass that leaves memory over the limit to the next check that finds it under.
#[derive(Debug, Default)]
pub struct ExceededTime {
    /// When the current spell began (microseconds on [`ExceededTime::clock`]; 0: memory
    /// is not over).
    since: AtomicU64,
    /// The spells that ended, in microseconds.
    total: AtomicU64,
}

impl ExceededTime {
    /// Microseconds of the process-wide monotonic clock, from 1 (0 is "no spell").
    fn clock() -> u64 {
        crate::uptime_clock::elapsed().as_micros() as u64 + 1
    }

    /// A pass left memory over the limit: a spell begins, unless one is on.
    pub fn over(&self) {
        if self.since.load(Ordering::Relaxed) == 0 {
            let _ =
                self.since
                    .compare_exchange(0, Self::clock(), Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// Memory is under the limit: the spell on, if any, ends (one relaxed load when
    /// none is, as on every command under a limit).
    #[inline]
    pub fn under(&self) {
        if self.since.load(Ordering::Relaxed) != 0 {
            let since = self.since.swap(0, Ordering::Relaxed);
            if since != 0 {
                self.total
                    .fetch_add(Self::clock().saturating_sub(since), Ordering::Relaxed);
            }
        }
    }

    /// Forgets every spell, the current one included (CONFIG RESETSTAT: Redis starts
    /// the next one at the next pass that leaves memory over the limit).
    pub fn reset(&self) {
        self.since.store(0, Ordering::Relaxed);
        self.total.store(0, Ordering::Relaxed);
    }

    /// The total and the current spell, in milliseconds (INFO's
    /// `total_eviction_exceeded_time`, which includes the current one, and
    /// `current_eviction_exceeded_time`).
    pub fn millis(&self) -> (u64, u64) {
        let since = self.since.load(Ordering::Relaxed);
        let current = if since == 0 {
            0
        } else {
            Self::clock().saturating_sub(since)
        };
        let total = self.total.load(Ordering::Relaxed) + current;
        (total / 1000, current / 1000)
    }
}

/// What an eviction pass came to (Redis's `EVICT_OK`, `EVICT_RUNNING`, `EVICT_FAIL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Under the limit (or no limit).
    Under,
    /// Still over it, with keys left: the pass stopped after its share of work and
    /// another is scheduled.
    Unfinished,
    /// Over it for good: no eviction policy, or nothing left to evict.
    Stuck,
}

impl Default for Eviction {
    fn default() -> Self {
        Eviction {
            maxmemory: AtomicU64::new(0),
            policy: AtomicU8::new(Policy::NoEviction as u8),
            samples: AtomicU32::new(5),
            lfu_log_factor: AtomicU32::new(10),
            lfu_decay_time: AtomicU32::new(1),
            evicted: AtomicU64::new(0),
            freed_since_release: AtomicU64::new(0),
            replica_buffers: Arc::default(),
            saving: Arc::default(),
            clients_closing: Arc::default(),
            scheduled: AtomicBool::new(false),
            pool: Mutex::new(Vec::new()),
            exceeded: ExceededTime::default(),
        }
    }
}

#[derive(Debug, Clone)]
struct Candidate {
    /// Higher is a better victim.
    score: u64,
    db: usize,
    key: Vec<u8>,
}

/// Keys one pass evicts at most before it leaves the rest to the next, so a command
/// never waits on a whole database's eviction (Redis bounds a pass by time instead).
const ROUNDS_PER_PASS: usize = 10_000;

/// Size of the candidate pool (Redis's `EVPOOL_SIZE`).
const POOL: usize = 16;

/// The time keys' uses are recorded with, as the cron last set it ([`tick`]); 0 until
/// a cron runs. Redis's LRU clock is cached the same way: a read or write of a key
/// then costs no clock read (4% of a hot GET or SADD here), and idle times keep the cron's
/// resolution (100 ms at the default `hz`, finer than Redis's second).
static CACHED_MS: AtomicU64 = AtomicU64::new(0);

/// Brings the cached clock up to date (the cron, every `1000 / hz` ms).
pub fn tick() {
    CACHED_MS.store(now_ms(), Ordering::Relaxed);
}

#[inline]
fn cached_ms() -> u64 {
    match CACHED_MS.load(Ordering::Relaxed) {
        0 => now_ms(),
        ms => ms,
    }
}

fn minutes() -> u32 {
    ((cached_ms() / 60_000) & 0xFFFF) as u32
}

/// The LRU clock: milliseconds, modulo 2^32.
fn clock() -> u32 {
    cached_ms() as u32
}

/// The largest value of Redis's 24-bit per-object field (`LRU_CLOCK_MAX`).
const LRU_FIELD_MAX: u32 = (1 << 24) - 1;

/// Redis's LRU clock (`LRU_CLOCK`): wall-clock seconds in 24 bits (INFO's `lru_clock`).
pub fn lru_clock() -> u32 {
    ((cached_ms() / 1000) as u32) & LRU_FIELD_MAX
}

impl Eviction {
    /// Applies the configuration (`maxmemory`, `maxmemory-policy`, `maxmemory-samples`,
    /// `lfu-log-factor`, `lfu-decay-time`).
    pub fn configure(
        &self,
        maxmemory: u64,
        policy: Policy,
        samples: u32,
        log_factor: u32,
        decay: u32,
    ) {
        self.maxmemory.store(maxmemory, Ordering::Relaxed);
        self.policy.store(policy as u8, Ordering::Relaxed);
        self.samples.store(samples.max(1), Ordering::Relaxed);
        self.lfu_log_factor.store(log_factor, Ordering::Relaxed);
        self.lfu_decay_time.store(decay, Ordering::Relaxed);
    }

    /// `maxmemory` in bytes, 0 for none.
    #[inline]
    pub fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Ordering::Relaxed)
    }

    /// The policy.
    #[inline]
    pub fn policy(&self) -> Policy {
        Policy::from_u8(self.policy.load(Ordering::Relaxed))
    }

    /// Access data for a key created now.
    #[inline]
    pub fn fresh(&self) -> u32 {
        if self.policy().is_lfu() {
            (minutes() << 8) | LFU_INIT
        } else {
            clock()
        }
    }

    /// Access data after one more use.
    #[inline]
    pub fn touched(&self, access: u32) -> u32 {
        if !self.policy().is_lfu() {
            return clock();
        }
        let counter = self.lfu_decayed(access);
        (minutes() << 8) | self.lfu_increment(counter)
    }

    /// The LFU counter with the decay since its last use applied (OBJECT FREQ).
    ///
    /// `access` may hold an LRU stamp (the key was last used under an LRU policy): its
    /// bits are read as LFU data all the same, as Redis reads its shared field, the
    /// minutes kept to their 16 bits.
    pub fn lfu_decayed(&self, access: u32) -> u32 {
        lfu_decayed_by(access, self.lfu_decay_time.load(Ordering::Relaxed))
    }

    /// What a dump file saved now records of each key's last use (see [`LastUseSaved`]).
    pub fn last_use_saved(&self) -> LastUseSaved {
        match self.policy() {
            Policy::AllKeysLru | Policy::VolatileLru => LastUseSaved::IdleSeconds,
            Policy::AllKeysLfu | Policy::VolatileLfu => LastUseSaved::Freq {
                decay: self.lfu_decay_time.load(Ordering::Relaxed),
            },
            _ => LastUseSaved::Nothing,
        }
    }

    /// Access data for a key loaded from a dump file that recorded its last use as
    /// `idle` seconds or an LFU counter `freq`, as Redis's `objectSetLRUOrLFU` applies
    /// them: the counter under an LFU policy, the idle time under any other; `None`
    /// (a fresh key's) when the file has not the one the policy reads.
    pub fn loaded_access(&self, idle: Option<u64>, freq: Option<u8>) -> Option<u32> {
        if self.policy().is_lfu() {
            freq.map(|f| self.with_freq(f))
        } else {
            idle.map(|i| self.with_idle(i))
        }
    }

    fn lfu_increment(&self, counter: u32) -> u32 {
        if counter >= 255 {
            return 255;
        }
        let base = counter.saturating_sub(LFU_INIT) as f64;
        let factor = self.lfu_log_factor.load(Ordering::Relaxed) as f64;
        let p = 1.0 / (base * factor + 1.0);
        if fastrand::f64() < p {
            counter + 1
        } else {
            counter
        }
    }

    /// Milliseconds since the last use.
    fn idle_ms(&self, access: u32) -> u64 {
        u64::from(clock().wrapping_sub(access))
    }

    /// The 24-bit field Redis keeps in each object (DEBUG OBJECT's `lru`): under an
    /// LFU policy the minutes and counter of the last use, else the LRU clock then.
    pub fn lru_field(&self, access: u32) -> u32 {
        if self.policy().is_lfu() {
            return access & LRU_FIELD_MAX;
        }
        let used_at = cached_ms().saturating_sub(self.idle_ms(access));
        ((used_at / 1000) as u32) & LRU_FIELD_MAX
    }

    /// Seconds since `field` ([`Self::lru_field`]) read as an LRU clock, wrap-around
    /// included (Redis's `estimateObjectIdleTime`, which reads an LFU field so too).
    pub fn field_idle_seconds(field: u32) -> u64 {
        let now = lru_clock();
        u64::from(if now >= field {
            now - field
        } else {
            now + (LRU_FIELD_MAX - field)
        })
    }

    /// Seconds since the last use (OBJECT IDLETIME).
    pub fn idle_seconds(&self, access: u32) -> u64 {
        self.idle_ms(access) / 1000
    }

    /// Access data that reads as idle for `idle` seconds (RESTORE IDLETIME).
    pub fn with_idle(&self, idle: u64) -> u32 {
        let ms = idle.saturating_mul(1000).min(u64::from(u32::MAX)) as u32;
        clock().wrapping_sub(ms)
    }

    /// Access data with LFU counter `freq` (RESTORE FREQ).
    pub fn with_freq(&self, freq: u8) -> u32 {
        (minutes() << 8) | u32::from(freq)
    }

    /// How good a victim an entry is under the current policy (higher evicts first).
    fn score(&self, policy: Policy, access: u32, expires_at: u64) -> u64 {
        match policy {
            Policy::AllKeysLfu | Policy::VolatileLfu => 255 - u64::from(self.lfu_decayed(access)),
            Policy::VolatileTtl => u64::MAX - expires_at,
            _ => self.idle_ms(access),
        }
    }

    /// [`Eviction::over_limit`], for the checks Redis makes before a command and in its
    /// cron: memory found under the limit also ends a spell over it
    /// ([`ExceededTime`]). Without a limit Redis does not look, and a spell goes on
    /// until a limit is set again.
    #[inline]
    pub fn check_limit(&self) -> bool {
        if self.over_limit() {
            return true;
        }
        if self.maxmemory() > 0 {
            self.exceeded.under();
        }
        false
    }

    /// Whether memory is over the limit now.
    #[inline]
    pub fn over_limit(&self) -> bool {
        let max = self.maxmemory();
        // The cheap check first (exact only near the limit), then the careful one.
        max > 0
            && crate::alloc::exceeds(max.saturating_add(self.left_out() as u64))
            && self.excess(max) > 0
    }

    /// How far the allocator's figure is over `max` plus the memory left out (0: not
    /// over). A gauge of memory left out counts before its allocation and uncounts after
    /// the free, so it is read on both sides of the allocator's figure and the larger
    /// reading taken: whatever that figure shows of such memory, one reading counts.
    fn excess(&self, max: u64) -> u64 {
        let before = self.left_out();
        let used = crate::alloc::used();
        let left_out = before.max(self.left_out());
        used.saturating_sub(max.saturating_add(left_out as u64))
    }

    /// Memory `maxmemory` leaves out (INFO `mem_not_counted_for_evict`): replicas'
    /// buffers, a save's own, evicted clients' on its way back, and the work tables
    /// Redis keeps on its stack.
    pub fn left_out(&self) -> usize {
        self.replica_buffers.bytes()
            + self.saving.bytes()
            + self.clients_closing.bytes()
            + crate::alloc::WORK_TABLES.bytes()
    }

    /// Evicts keys until memory is under the limit. `evicted` is told each key as it
    /// goes (while its shard is locked: replication and notifications). A pass that
    /// stops before it is done schedules the next ([`Eviction::take_scheduled`]).
    pub fn free_memory(
        &self,
        store: &Store,
        mut evicted: impl FnMut(&mut super::Shard, usize, &[u8]),
    ) -> Outcome {
        let policy = self.policy();
        let max = self.maxmemory();
        if max == 0 {
            return Outcome::Under;
        }
        let to_free = self.excess(max);
        if to_free == 0 {
            return Outcome::Under;
        }
        if policy == Policy::NoEviction {
            return Outcome::Stuck;
        }
        // As Redis's `performEvictions`: the amount to free is fixed now, and only what
        // removing the keys gave back counts towards it, not what their side effects
        // (invalidation messages to tracking clients, DELs for replicas) allocate,
        // which is freed once sent; measuring `used` again after each key would let
        // those messages drive eviction on until the database is empty.
        let mut freed = 0;
        for _round in 0..ROUNDS_PER_PASS {
            if freed >= to_free {
                self.released(max, freed);
                return Outcome::Under;
            }
            match self.evict_one(store, policy, &mut evicted) {
                Some(bytes) => freed += bytes,
                None => return Outcome::Stuck,
            }
        }
        self.released(max, freed);
        self.schedule();
        Outcome::Unfinished
    }

    /// Asks for a pass outside any command, as CONFIG SET `maxmemory` does in Redis.
    pub fn schedule(&self) {
        self.scheduled.store(true, Ordering::Relaxed);
    }

    /// Whether a pass outside any command is due; taking it clears the request.
    pub fn take_scheduled(&self) -> bool {
        self.scheduled.load(Ordering::Relaxed) && self.scheduled.swap(false, Ordering::Relaxed)
    }

    /// Counts what an eviction pass freed; past 1/64 of `maxmemory` (at least 1 MB) the
    /// allocator's free pages go back to the kernel, so RSS follows `used_memory`
    /// instead of growing with each arena the freed memory is stuck in.
    fn released(&self, max: u64, freed: u64) {
        let total = self.freed_since_release.fetch_add(freed, Ordering::Relaxed) + freed;
        if total >= (max / 64).max(1 << 20) {
            self.freed_since_release.store(0, Ordering::Relaxed);
            crate::alloc::release_free_pages();
        }
    }

    /// Evicts the best candidate and returns the bytes its removal gave back; `None`
    /// when no key qualifies.
    fn evict_one(
        &self,
        store: &Store,
        policy: Policy,
        evicted: &mut impl FnMut(&mut super::Shard, usize, &[u8]),
    ) -> Option<u64> {
        let random = matches!(policy, Policy::AllKeysRandom | Policy::VolatileRandom);
        let samples = self.samples.load(Ordering::Relaxed) as usize;
        for _attempt in 0..4 {
            // Fill the pool from one random shard of every database.
            let mut found_any = false;
            for db_index in 0..store.db_count() {
                let db = store.db(db_index);
                let start = fastrand::usize(..db.shard_count());
                // The first shard with candidates, from a random start.
                for step in 0..db.shard_count() {
                    let index = (start + step) % db.shard_count();
                    let mut shard = db.lock_index(index);
                    let picked = shard.sample(samples, policy.volatile());
                    if picked.is_empty() {
                        continue;
                    }
                    found_any = true;
                    if random {
                        let (key, _) = &picked[fastrand::usize(..picked.len())];
                        let key = key.clone();
                        let (removed, freed) = measured(|| shard.evict(&key));
                        if removed {
                            evicted(&mut shard, db_index, &key);
                            self.evicted.fetch_add(1, Ordering::Relaxed);
                            return Some(freed);
                        }
                        continue;
                    }
                    let mut pool = self.pool.lock();
                    for (key, (access, expires_at)) in picked {
                        let score = self.score(policy, access, expires_at);
                        if pool.iter().any(|c| c.db == db_index && c.key == key) {
                            continue;
                        }
                        pool.push(Candidate {
                            score,
                            db: db_index,
                            key,
                        });
                    }
                    pool.sort_by_key(|c| std::cmp::Reverse(c.score));
                    pool.truncate(POOL);
                    break;
                }
            }
            if !found_any {
                return None;
            }
            // Evict the best candidate that still exists (and still qualifies).
            loop {
                let best = {
                    let mut pool = self.pool.lock();
                    if pool.is_empty() {
                        break;
                    }
                    pool.remove(0)
                };
                let db = store.db(best.db);
                let mut shard = db.lock(&best.key);
                let qualifies = shard
                    .peek_stored(&best.key)
                    .is_some_and(|e| !policy.volatile() || e.expires_at != 0);
                if !qualifies {
                    continue;
                }
                let (removed, freed) = measured(|| shard.evict(&best.key));
                if removed {
                    evicted(&mut shard, best.db, &best.key);
                    self.evicted.fetch_add(1, Ordering::Relaxed);
                    return Some(freed);
                }
            }
        }
        None
    }
}

/// Runs `remove` and returns its result with the bytes it gave back (on this thread:
/// a removal frees where it runs).
fn measured(remove: impl FnOnce() -> bool) -> (bool, u64) {
    let before = crate::alloc::thread_net();
    let removed = remove();
    let freed = before.saturating_sub(crate::alloc::thread_net());
    (removed, u64::try_from(freed).unwrap_or(0))
}

/// The LFU counter of `access` with the decay since its last use applied, one step per
/// `decay` minutes (`lfu-decay-time`; 0: none).
fn lfu_decayed_by(access: u32, decay: u32) -> u32 {
    let counter = access & 0xFF;
    let last = (access >> 8) & 0xFFFF;
    let now = minutes();
    // Redis's `LFUTimeElapsed`, wrap-around included.
    let elapsed = if now >= last {
        now - last
    } else {
        65535 - last + now
    };
    let periods = elapsed.checked_div(decay).unwrap_or(0);
    counter.saturating_sub(periods)
}

/// What a dump file records of each key's last use, by the policy when it is saved
/// (Redis's `RDB_OPCODE_IDLE` under an LRU policy, `RDB_OPCODE_FREQ` under an LFU one,
/// nothing under the others).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LastUseSaved {
    /// Nothing.
    #[default]
    Nothing,
    /// The seconds since the last use.
    IdleSeconds,
    /// The LFU counter, decayed by `decay` (`lfu-decay-time`).
    Freq {
        /// `lfu-decay-time`, in minutes.
        decay: u32,
    },
}

/// A key's last use as a dump file records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastUse {
    /// Seconds since.
    IdleSeconds(u64),
    /// The LFU counter.
    Freq(u8),
}

impl LastUseSaved {
    /// What is recorded for a key with access data `access`.
    pub fn of(self, access: u32) -> Option<LastUse> {
        match self {
            LastUseSaved::Nothing => None,
            LastUseSaved::IdleSeconds => Some(LastUse::IdleSeconds(u64::from(
                clock().wrapping_sub(access) / 1000,
            ))),
            LastUseSaved::Freq { decay } => Some(LastUse::Freq(
                u8::try_from(lfu_decayed_by(access, decay)).unwrap_or(u8::MAX),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any access stamp, LRU or LFU, decays without overflow: a key used under an LRU
    /// policy, then read by OBJECT FREQ or ranked for eviction under an LFU one.
    #[test]
    fn lfu_decay_takes_any_stamp() {
        let eviction = Eviction::default();
        eviction.configure(0, Policy::AllKeysLfu, 5, 10, 1);
        for access in [0, 1, 0xFF, 0xFFFF_FF00, u32::MAX, clock(), eviction.fresh()] {
            assert!(eviction.lfu_decayed(access) <= 255, "{access:#x}");
        }
        let fresh = eviction.fresh();
        assert_eq!(eviction.lfu_decayed(fresh), LFU_INIT);
    }
}
