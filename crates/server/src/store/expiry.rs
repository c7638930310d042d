//! Active expiry: Redis's `activeExpireCycle`. Every `1000 / hz` ms a background thread
//! runs a slow cycle: it visits the shards round-robin; in each it samples 20 keys that
//! have a TTL, removes the expired ones, and samples again while more than a tenth were
//! expired, until the cycle's time budget (25% of the period, as Redis) runs out. A
//! cycle that ran out of time leaves expired keys behind, so fast cycles follow (1 ms,
//! at most one every 2 ms, as Redis runs them before each event-loop sleep) until one
//! finishes within its budget. `active-expire-effort` scales all of it as in Redis.
//! Work per cycle is bounded by the budget, never by the number of keys; commands never
//! pay for it.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{now_ms, Store};

/// How hard the cycles work, from `active-expire-effort` (1-10, default 1), with Redis's
/// scaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effort {
    /// Keys sampled per round (20 at effort 1, `ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP`).
    pub keys_per_round: usize,
    /// A fast cycle's budget (1 ms at effort 1).
    pub fast_budget: Duration,
    /// A slow cycle's budget, as a percentage of its period (25% at effort 1).
    pub slow_percent: u32,
    /// A round is repeated in its shard while more than this percentage of its sample
    /// was expired (10% at effort 1).
    pub acceptable_stale: usize,
}

impl Effort {
    /// The figures for `active-expire-effort` `effort` (clamped to 1-10).
    ///
    /// ```
    /// use redline_server::store::expiry::Effort;
    ///
    /// assert_eq!(Effort::new(1).keys_per_round, 20);
    /// assert_eq!(Effort::new(10).keys_per_round, 65);
    /// ```
    pub fn new(effort: i64) -> Effort {
        // Redis rescales 1-10 to 0-9.
        let e = u32::try_from(effort.clamp(1, 10) - 1).unwrap_or(0);
        Effort {
            keys_per_round: 20 + 5 * e as usize,
            fast_budget: Duration::from_micros(1000 + 250 * u64::from(e)),
            slow_percent: 25 + 2 * e,
            acceptable_stale: 10 - e as usize,
        }
    }
}

impl Default for Effort {
    fn default() -> Effort {
        Effort::new(1)
    }
}

/// Where the next cycle resumes, so a budget cut does not always favour the first shards.
#[derive(Debug, Default)]
pub struct Cursor {
    next: usize,
}

/// What one cycle did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cycle {
    /// Keys it removed.
    pub expired: usize,
    /// Keys with a TTL it looked at.
    pub sampled: usize,
    /// Whether it stopped at its time budget.
    pub capped: bool,
}

/// The active expiry cycles' figures for INFO, as Redis keeps them.
#[derive(Debug, Default)]
pub struct CycleStats {
    /// `expired_stale_perc` as a fraction (an `f64`'s bits): each cycle's share of
    /// expired keys among those sampled, averaged with a weight of 5% for the newest.
    stale: AtomicU64,
    /// Cycles that stopped at their time budget (`expired_time_cap_reached_count`).
    capped: AtomicU64,
    /// Time spent in cycles, in microseconds (`expire_cycle_cpu_milliseconds`).
    micros: AtomicU64,
}

impl CycleStats {
    /// Counts a cycle that took `took`. Only the expiry thread records.
    pub fn record(&self, cycle: Cycle, took: Duration) {
        let share = if cycle.sampled == 0 {
            0.0
        } else {
            cycle.expired as f64 / cycle.sampled as f64
        };
        let stale = f64::from_bits(self.stale.load(Ordering::Relaxed));
        self.stale
            .store((share * 0.05 + stale * 0.95).to_bits(), Ordering::Relaxed);
        if cycle.capped {
            self.capped.fetch_add(1, Ordering::Relaxed);
        }
        self.micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    /// `expired_stale_perc` (a percentage), `expired_time_cap_reached_count` and
    /// `expire_cycle_cpu_milliseconds`.
    pub fn snapshot(&self) -> (f64, u64, u64) {
        (
            f64::from_bits(self.stale.load(Ordering::Relaxed)) * 100.0,
            self.capped.load(Ordering::Relaxed),
            self.micros.load(Ordering::Relaxed) / 1000,
        )
    }

    /// Clears them (CONFIG RESETSTAT).
    pub fn reset(&self) {
        for figure in [&self.stale, &self.capped, &self.micros] {
            figure.store(0, Ordering::Relaxed);
        }
    }
}

/// Runs one cycle within `budget`. It stops at the first shard it finds while
/// `loading()` holds: a load replays writes whose keys may have expired since, and
/// those must stay until the load ends, as in Redis (the DELs a cycle would log land
/// after writes the replay has not reached yet).
pub fn run_cycle(
    store: &Store,
    cursor: &mut Cursor,
    budget: Duration,
    effort: Effort,
    loading: &dyn Fn() -> bool,
) -> Cycle {
    let start = Instant::now();
    let per_db = store.db(0).shard_count();
    let total = per_db * store.db_count();
    let mut cycle = Cycle::default();
    // What this cycle saw of the database it is in, for its `avg_ttl`.
    let mut seen = TtlSeen::default();
    for _ in 0..total {
        let position = cursor.next % total;
        cursor.next = (position + 1) % total;
        let index = position / per_db;
        if seen.db != Some(index) {
            seen.fold_into(store);
            seen = TtlSeen {
                db: Some(index),
                ..TtlSeen::default()
            };
        }
        let db = store.db(index);
        seen.shards += 1;
        loop {
            let result = {
                let mut shard = db.lock_index(position % per_db);
                // Checked under the shard's lock, which the load takes to fill it: a
                // load that began before is seen here.
                if loading() {
                    return cycle;
                }
                if shard.ttl_len() == 0 {
                    break;
                }
                seen.volatile_keys = true;
                shard.expire_sample(effort.keys_per_round, now_ms())
            };
            cycle.expired += result.expired;
            cycle.sampled += result.sampled;
            seen.sum = seen.sum.saturating_add(result.ttl_sum);
            seen.samples += result.ttl_samples;
            if start.elapsed() >= budget {
                cycle.capped = true;
                seen.fold_into(store);
                return cycle;
            }
            if result.sampled == 0
                || result.expired * 100 <= result.sampled * effort.acceptable_stale
            {
                break;
            }
        }
    }
    seen.fold_into(store);
    cycle
}

/// The remaining TTLs a cycle sampled in one database's shards (`shards` of them), and
/// whether any of them held a key with a TTL.
#[derive(Default)]
struct TtlSeen {
    db: Option<usize>,
    shards: usize,
    sum: u64,
    samples: u64,
    volatile_keys: bool,
}

impl TtlSeen {
    /// Updates the database's `avg_ttl` with what was seen of it; only a cycle that
    /// looked at every shard knows that no key has a TTL.
    fn fold_into(&self, store: &Store) {
        if let Some(index) = self.db {
            let db = store.db(index);
            let volatile_keys = self.volatile_keys || self.shards < db.shard_count();
            db.note_ttl_samples(self.sum, self.samples, volatile_keys);
        }
    }
}

/// Which cycle runs when: a slow one every period; after any cycle that ran out of
/// time, fast ones in between, each at least twice its budget after the last.
#[derive(Debug)]
pub struct Schedule {
    next_slow: Instant,
    last_fast: Option<Instant>,
    /// The last cycle stopped at its budget: expired keys are left.
    behind: bool,
}

/// A cycle to run ([`Schedule::due`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// The period's cycle, with the cron's other work.
    Slow,
    /// A short cycle between two slow ones, while expired keys are left.
    Fast,
}

impl Schedule {
    /// The first slow cycle is a period after `now`.
    pub fn new(now: Instant, period: Duration) -> Schedule {
        Schedule {
            next_slow: now + period,
            last_fast: None,
            behind: false,
        }
    }

    /// When the next cycle is due (`now` at the soonest), and which.
    pub fn due(&self, now: Instant, effort: Effort) -> (Instant, Pace) {
        if self.behind {
            let fast = self
                .last_fast
                .map_or(now, |at| (at + effort.fast_budget * 2).max(now));
            if fast < self.next_slow {
                return (fast, Pace::Fast);
            }
        }
        (self.next_slow, Pace::Slow)
    }

    /// A cycle of `pace` started at `at` (`capped`: it stopped at its budget); the next
    /// slow one is a `period` after this slow one.
    pub fn ran(&mut self, pace: Pace, at: Instant, period: Duration, capped: bool) {
        match pace {
            Pace::Slow => self.next_slow = at + period,
            Pace::Fast => self.last_fast = Some(at),
        }
        self.behind = capped;
    }
}

/// The background loop: a slow cycle every `1000 / hz` ms, and fast ones while a cycle
/// leaves expired keys, until `stop` fires or is dropped. `hz` is read each time, so
/// `CONFIG SET hz` applies at once, and `effort` (`active-expire-effort`) before each
/// cycle. No cycle runs while `loading()` holds (see [`run_cycle`]). `after_cycle` runs
/// after each cycle with how long it took and its pace (the server publishes the events
/// the cycle queued there, feeds the latency monitor, and after a slow one does the
/// rest of its periodic work).
pub fn run(
    store: Arc<Store>,
    hz: Arc<AtomicU32>,
    stop: Receiver<()>,
    effort: impl Fn() -> i64,
    loading: impl Fn() -> bool,
    mut after_cycle: impl FnMut(Duration, Pace),
) {
    let mut cursor = Cursor::default();
    let period_of = |hz: &AtomicU32| {
        Duration::from_micros(1_000_000 / u64::from(hz.load(Ordering::Relaxed).clamp(1, 500)))
    };
    let mut schedule = Schedule::new(Instant::now(), period_of(&hz));
    loop {
        let effort = Effort::new(effort());
        let now = Instant::now();
        let (at, pace) = schedule.due(now, effort);
        match stop.recv_timeout(at.saturating_duration_since(now)) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        let period = period_of(&hz);
        let started = Instant::now();
        if pace == Pace::Slow {
            crate::store::evict::tick();
        }
        store.release_deferred_watches();
        if store.cron_paused() {
            schedule.ran(pace, started, period, false);
            continue;
        }
        // A replica's keys expire by its master's DELs, but for those a client gave a
        // TTL here (a writable replica): no DEL will ever come for them.
        let held = store.events().expiry_held(crate::store::now_ms());
        let mut capped = false;
        if store.active_expire() && !held && !loading() {
            if store.events().replica() {
                if pace == Pace::Slow {
                    expire_replica_keys(&store);
                }
            } else {
                let budget = match pace {
                    Pace::Slow => period * effort.slow_percent / 100,
                    Pace::Fast => effort.fast_budget,
                };
                let cycle = run_cycle(&store, &mut cursor, budget, effort, &loading);
                store.expire_cycles.record(cycle, started.elapsed());
                capped = cycle.capped;
            }
        }
        schedule.ran(pace, started, period, capped);
        after_cycle(started.elapsed(), pace);
    }
}

/// On a replica: the keys clients gave a TTL here, once it has passed (see
/// [`super::Shard::expire_replica_keys`]).
fn expire_replica_keys(store: &Store) {
    let now = crate::store::now_ms();
    for db in 0..store.db_count() {
        let db = store.db(db);
        for index in 0..db.shard_count() {
            db.lock_index(index).expire_replica_keys(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Value;

    /// Adds `key` to database `db` with the deadline `expires_at` (1: long past).
    fn put(store: &Store, db: usize, key: &str, expires_at: u64) {
        store
            .db(db)
            .lock(key.as_bytes())
            .insert(key.as_bytes(), Value::Int(1), expires_at);
    }

    #[test]
    fn cycles_estimate_avg_ttl_and_reset_it_without_volatile_keys() {
        let store = Store::new(2, 4);
        let now = crate::store::now_ms();
        for i in 0..100 {
            put(&store, 1, &i.to_string(), now + 100_000);
        }
        put(&store, 0, "persistent", 0);
        let cycle = |cursor: &mut Cursor| {
            run_cycle(
                &store,
                cursor,
                Duration::from_secs(1),
                Effort::default(),
                &|| false,
            )
        };
        let mut cursor = Cursor::default();
        cycle(&mut cursor);
        let avg = store.db(1).avg_ttl();
        assert!((90_000..=100_000).contains(&avg), "avg_ttl {avg}");
        assert_eq!(store.db(0).avg_ttl(), 0);
        // SWAPDB takes the estimate along, as Redis's.
        store.swap_dbs(0, 1);
        assert_eq!((store.db(0).avg_ttl(), store.db(1).avg_ttl()), (avg, 0));
        store.swap_dbs(0, 1);
        for i in 0..100 {
            store
                .db(1)
                .lock(i.to_string().as_bytes())
                .remove(i.to_string().as_bytes());
        }
        cycle(&mut cursor);
        assert_eq!(store.db(1).avg_ttl(), 0);
    }

    #[test]
    fn cycle_reclaims_without_access() {
        let store = Store::new(2, 4);
        for i in 0..1000 {
            put(&store, i % 2, &i.to_string(), 1);
        }
        for i in 0..10 {
            put(&store, 0, &format!("keep{i}"), u64::MAX);
        }
        let mut cursor = Cursor::default();
        let mut expired = 0;
        for _ in 0..1000 {
            expired += run_cycle(
                &store,
                &mut cursor,
                Duration::from_secs(1),
                Effort::default(),
                &|| false,
            )
            .expired;
            if expired == 1000 {
                break;
            }
        }
        assert_eq!(expired, 1000);
        assert_eq!(store.db(0).len() + store.db(1).len(), 10);
        assert!(store.expiry_stats().sampled >= 1000);
    }

    #[test]
    fn a_cycle_expires_nothing_while_a_load_runs() {
        let store = Store::new(1, 4);
        for i in 0..100 {
            put(&store, 0, &i.to_string(), 1);
        }
        let cycle = run_cycle(
            &store,
            &mut Cursor::default(),
            Duration::from_secs(1),
            Effort::default(),
            &|| true,
        );
        assert_eq!((cycle.expired, store.db(0).len()), (0, 100));
    }

    #[test]
    fn effort_sets_the_sample_per_round() {
        let store = Store::new(1, 1);
        for i in 0..1000 {
            // Live keys: each shard gets one round, whatever the effort.
            put(&store, 0, &i.to_string(), u64::MAX);
        }
        for (effort, sampled) in [(1, 20), (5, 40), (10, 65)] {
            let cycle = run_cycle(
                &store,
                &mut Cursor::default(),
                Duration::from_secs(1),
                Effort::new(effort),
                &|| false,
            );
            assert_eq!(cycle.sampled, sampled, "effort {effort}");
        }
    }

    #[test]
    fn a_capped_cycle_is_followed_by_fast_ones_until_one_keeps_up() {
        let effort = Effort::default();
        let period = Duration::from_millis(100);
        let start = Instant::now();
        let mut schedule = Schedule::new(start, period);
        assert_eq!(schedule.due(start, effort), (start + period, Pace::Slow));
        // The slow cycle ran out of time: a fast one follows at once.
        let slow = start + period;
        schedule.ran(Pace::Slow, slow, period, true);
        let now = Instant::now();
        let (at, pace) = schedule.due(now, effort);
        assert_eq!(pace, Pace::Fast);
        assert!(at <= Instant::now());
        // Fast ones never closer than twice their budget.
        let fast = slow + Duration::from_millis(30);
        schedule.ran(Pace::Fast, fast, period, true);
        assert_eq!(
            schedule.due(start, effort),
            (fast + effort.fast_budget * 2, Pace::Fast)
        );
        // One that finished in time: back to the period's slow cycle.
        schedule.ran(Pace::Fast, fast + Duration::from_millis(2), period, false);
        assert_eq!(schedule.due(start, effort), (slow + period, Pace::Slow));
        // Fast cycles never push the slow one back.
        schedule.ran(
            Pace::Fast,
            slow + period - Duration::from_micros(500),
            period,
            true,
        );
        assert_eq!(schedule.due(start, effort), (slow + period, Pace::Slow));
    }
}
