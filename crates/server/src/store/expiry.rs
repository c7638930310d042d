//! Active expiry: Redis's `activeExpireCycle`. Every `1000 / hz` ms a background thread
//! visits the shards round-robin; in each it samples 20 keys that have a TTL, removes the
//! expired ones, and samples again while more than a quarter were expired, until the
//! cycle's time budget (25% of the period, as Redis) runs out. Work per cycle is bounded
//! by the budget, never by the number of keys; commands never pay for it.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{now_ms, Store};

/// Keys sampled per round (Redis's `ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP`).
pub const SAMPLES_PER_ROUND: usize = 20;

/// A round is repeated while more than this percentage of its sample was expired.
pub const REPEAT_ABOVE_PERCENT: usize = 25;

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

/// Runs one cycle within `budget`.
pub fn run_cycle(store: &Store, cursor: &mut Cursor, budget: Duration) -> Cycle {
    let start = Instant::now();
    let per_db = store.db(0).shard_count();
    let total = per_db * store.db_count();
    let mut cycle = Cycle::default();
    for _ in 0..total {
        let position = cursor.next % total;
        cursor.next = (position + 1) % total;
        let db = store.db(position / per_db);
        loop {
            let result = {
                let mut shard = db.lock_index(position % per_db);
                if shard.ttl_len() == 0 {
                    break;
                }
                shard.expire_sample(SAMPLES_PER_ROUND, now_ms())
            };
            cycle.expired += result.expired;
            cycle.sampled += result.sampled;
            if start.elapsed() >= budget {
                cycle.capped = true;
                return cycle;
            }
            if result.sampled == 0 || result.expired * 100 <= result.sampled * REPEAT_ABOVE_PERCENT
            {
                break;
            }
        }
    }
    cycle
}

/// The background loop: a cycle every `1000 / hz` ms until `stop` fires or is dropped.
/// `hz` is read each time, so `CONFIG SET hz` applies at once. `after_cycle` runs after
/// each period with how long its cycle took (the server publishes the events the cycle
/// queued there, and feeds the latency monitor).
pub fn run(
    store: Arc<Store>,
    hz: Arc<AtomicU32>,
    stop: Receiver<()>,
    mut after_cycle: impl FnMut(Duration),
) {
    let mut cursor = Cursor::default();
    loop {
        let hz = hz.load(Ordering::Relaxed).clamp(1, 500);
        let period = Duration::from_micros(1_000_000 / u64::from(hz));
        match stop.recv_timeout(period) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        crate::store::evict::tick();
        if store.cron_paused() {
            continue;
        }
        // A replica's keys expire by its master's DELs, but for those a client gave a
        // TTL here (a writable replica): no DEL will ever come for them.
        let started = std::time::Instant::now();
        let held = store.events().expiry_held(crate::store::now_ms());
        if store.active_expire() && !held {
            if store.events().replica() {
                expire_replica_keys(&store);
            } else {
                let cycle = run_cycle(&store, &mut cursor, period / 4);
                store.expire_cycles.record(cycle, started.elapsed());
            }
        }
        after_cycle(started.elapsed());
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

    #[test]
    fn cycle_reclaims_without_access() {
        let store = Store::new(2, 4);
        for i in 0..1000u32 {
            let key = i.to_string();
            store
                .db(i as usize % 2)
                .lock(key.as_bytes())
                .insert(key.as_bytes(), Value::Int(1), 1);
        }
        for i in 0..10u32 {
            let key = format!("keep{i}");
            store
                .db(0)
                .lock(key.as_bytes())
                .insert(key.as_bytes(), Value::Int(1), u64::MAX);
        }
        let mut cursor = Cursor::default();
        let mut expired = 0;
        for _ in 0..1000 {
            expired += run_cycle(&store, &mut cursor, Duration::from_secs(1)).expired;
            if expired == 1000 {
                break;
            }
        }
        assert_eq!(expired, 1000);
        assert_eq!(store.db(0).len() + store.db(1).len(), 10);
        assert!(store.expiry_stats().sampled >= 1000);
    }
}
