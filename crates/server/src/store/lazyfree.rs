//! Freeing big values off the command path (Redis's `lazyfree.c`): UNLINK, FLUSHALL /
//! FLUSHDB ASYNC and the `lazyfree-lazy-user-del` / `lazyfree-lazy-user-flush` settings
//! take the value out of the keyspace at once and leave dropping it to a background
//! thread, when dropping it would cost more than [`THRESHOLD`] allocations (Redis's
//! `lazyfreeGetFreeEffort`, with its default encodings: a small hash, sorted set or
//! integer set is one allocation). INFO shows `lazyfree_pending_objects` and
//! `lazyfreed_objects`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

use parking_lot::Mutex;

use super::Value;

/// Values whose free effort is above this are dropped in the background.
pub const THRESHOLD: usize = 64;

/// Default listpack / intset limits of Redis 7.0 (`*-max-listpack-entries`,
/// `*-max-listpack-value`, `set-max-intset-entries`).
const LISTPACK_ENTRIES: usize = 128;
const LISTPACK_VALUE: usize = 64;
const INTSET_ENTRIES: usize = 512;

/// Something to drop, and how many objects it counts as.
type Garbage = (Box<dyn Send>, u64);

/// The background freer.
#[derive(Debug, Default)]
pub struct LazyFree {
    queue: Mutex<Option<mpsc::Sender<Garbage>>>,
    pending: std::sync::Arc<AtomicU64>,
    freed: std::sync::Arc<AtomicU64>,
    /// `lazyfree-lazy-user-del`: DEL behaves as UNLINK.
    pub user_del: AtomicBool,
    /// `lazyfree-lazy-user-flush`: FLUSHALL / FLUSHDB without a mode are ASYNC.
    pub user_flush: AtomicBool,
}

/// What dropping `value` costs, in allocations (Redis's `lazyfreeGetFreeEffort`).
pub fn free_effort(value: &Value) -> usize {
    match value {
        Value::Int(_) | Value::Str(_) => 1,
        Value::List(l) => l.chunk_count().max(1),
        Value::Set(s) => {
            // A set held as integers is one allocation; one of text that reads as
            // integers would be an intset in Redis.
            let intset = s.ints().is_some()
                || (s.len() <= INTSET_ENTRIES
                    && s.iter().all(|m| super::canonical_int(&m).is_some()));
            if intset {
                1
            } else {
                s.len()
            }
        }
        Value::Hash(h) => {
            let listpack = h.len() <= LISTPACK_ENTRIES
                && h.iter()
                    .all(|(f, v)| f.len() <= LISTPACK_VALUE && v.len() <= LISTPACK_VALUE);
            if listpack {
                1
            } else {
                h.len()
            }
        }
        Value::ZSet(z) => {
            let listpack =
                z.len() <= LISTPACK_ENTRIES && z.iter().all(|(m, _)| m.len() <= LISTPACK_VALUE);
            if listpack {
                1
            } else {
                z.len()
            }
        }
        Value::Stream(s) => {
            // One allocation per node; each group and its pending entries, estimated
            // from the first group, as Redis does.
            let groups = s.groups.len();
            let pel = s.groups.values().next().map_or(0, |g| g.pel.len());
            s.node_count() + groups * (1 + pel)
        }
    }
}

impl LazyFree {
    /// Drops `value`: now if it is cheap, else in the background.
    pub fn free(&self, value: Value) {
        if free_effort(&value) > THRESHOLD {
            self.send(Box::new(value), 1);
        }
    }

    /// Drops a whole keyspace's worth of `objects` keys in the background (FLUSH ASYNC).
    pub fn free_all(&self, garbage: Box<dyn Send>, objects: u64) {
        if objects > 0 {
            self.send(garbage, objects);
        }
    }

    fn send(&self, garbage: Box<dyn Send>, objects: u64) {
        self.pending.fetch_add(objects, Ordering::Relaxed);
        let mut queue = self.queue.lock();
        if queue.is_none() {
            *queue = self.start();
        }
        let refused = match queue.as_ref() {
            Some(tx) => tx.send((garbage, objects)).err().map(|e| e.0),
            None => Some((garbage, objects)),
        };
        drop(queue);
        // No background thread: free here rather than keep it.
        if let Some((garbage, objects)) = refused {
            drop(garbage);
            self.pending.fetch_sub(objects, Ordering::Relaxed);
            self.freed.fetch_add(objects, Ordering::Relaxed);
        }
    }

    fn start(&self) -> Option<mpsc::Sender<Garbage>> {
        let (tx, rx) = mpsc::channel::<Garbage>();
        let (pending, freed) = (self.pending.clone(), self.freed.clone());
        std::thread::Builder::new()
            .name("redline-lazyfree".into())
            .spawn(move || {
                for (garbage, objects) in rx {
                    drop(garbage);
                    pending.fetch_sub(objects, Ordering::Relaxed);
                    freed.fetch_add(objects, Ordering::Relaxed);
                }
            })
            .ok()?;
        Some(tx)
    }

    /// Objects waiting to be freed (INFO `lazyfree_pending_objects`).
    pub fn pending(&self) -> u64 {
        self.pending.load(Ordering::Relaxed)
    }

    /// Objects freed in the background since start or CONFIG RESETSTAT.
    pub fn freed(&self) -> u64 {
        self.freed.load(Ordering::Relaxed)
    }

    /// CONFIG RESETSTAT.
    pub fn reset_stats(&self) {
        self.freed.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_free_inline_and_big_ones_in_the_background() {
        let lazy = LazyFree::default();
        lazy.free(Value::Int(1));
        let small: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        let small: crate::store::value::SetValue = small.iter().map(|m| m.as_bytes()).collect();
        assert_eq!(free_effort(&Value::Set(small)), 1);
        let big: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
        let big: crate::store::value::SetValue = big.iter().map(|m| m.as_bytes()).collect();
        lazy.free(Value::Set(big));
        for _ in 0..1000 {
            if lazy.freed() == 1 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(lazy.freed(), 1);
        assert_eq!(lazy.pending(), 0);
    }
}
