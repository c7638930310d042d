//! The server a forked Lua debugging session runs on (`SCRIPT DEBUG YES`).
//!
//! Redis forks: the child runs the debugged EVAL on its copy of the dataset while the
//! parent goes on serving, and the child's changes vanish with it. A multi-threaded
//! server cannot fork safely (another thread may hold a lock the child would need), so
//! a session gets a server state of its own instead: the same configuration without
//! saves, and a copy of every key made by a snapshot cut ([`crate::store::cut`]), the
//! dataset at one instant, copied while clients keep writing, which stops them only as
//! long as a BGSAVE's start does. Whatever the session does (writes, notifications, its
//! replication stream, statistics) stays in that state and is dropped with it.
//!
//! The copy's memory is left out of `maxmemory` with a save's own, as a forked child's
//! is outside its parent's `used_memory`: debugging never evicts the server's keys.
//! The copy itself has no limit (nothing is evicted from it, no write in it is refused
//! OOM): its keys share the process's memory figure with the server's, which no limit
//! of its own could tell apart.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::alloc::{thread_net, Gauge};
use crate::shared::Shared;
use crate::store::{cut, CutSink, Entry, Held, Store};

/// Entries copied per hold of a shard: a writer waits at most this long for the copy.
const COPY_BATCH: usize = 64;

/// Bytes a slot of a presized table's hash index takes, about (8 for the position, 1
/// of control, buckets rounded up to a power of two): the estimate counted before the
/// index is allocated, corrected once it is.
const PRESIZE_SLOT_ESTIMATE: usize = 18;

/// A forked session's server state; its memory leaves the `maxmemory` exemption when
/// dropped.
pub struct Forked {
    shared: Option<Arc<Shared>>,
    /// Where the copy's bytes are left out of `maxmemory`.
    gauge: Arc<Gauge>,
    /// The copy's bytes counted there.
    counted: usize,
}

impl Forked {
    /// A server state like `real`'s, holding its keys as they are now. Blocks for as
    /// long as the copy takes: call it on the session's thread. Refused, with the
    /// reason Redis gives for a fork that fails for want of memory, when the copy would
    /// leave the machine (or the container) less than a quarter of the memory it has
    /// available now.
    pub fn new(real: &Shared) -> Result<Forked, &'static str> {
        let need = crate::alloc::used();
        if let Some(available) = crate::system_memory::available() {
            if need > available / 4 * 3 {
                tracing::warn!(
                    "Can't fork for debugging: a copy of the dataset ({need} bytes) would leave too little of the {available} bytes available"
                );
                return Err("Cannot allocate memory");
            }
        }
        let mut config = real.config.read().clone();
        // FLUSHALL saves when save points are set: not from the copy.
        config.save.clear();
        config.appendonly = false;
        config.params.insert("maxmemory", "0".into());
        // The copy has no replicas: it refuses writes for want of them only when the
        // server does now (a forked child keeps its parent's count).
        if crate::cmd::writes_refused(real).is_none() {
            config.params.insert("min-replicas-to-write", "0".into());
        }
        let shared = Arc::new(Shared::new(config, real.port()));
        shared.set_arc();
        shared.cluster.copy_view_of(&real.cluster);
        let gauge = real.store.events().eviction.saving.clone();
        let sink = Arc::new(CopyInto {
            store: shared.store.clone(),
            gauge: gauge.clone(),
            counted: AtomicUsize::new(0),
        });
        let began = std::time::Instant::now();
        // The copy's instant: every shard held while its cut begins. Each shard's size
        // then is what its copy will hold.
        let mut sizes = Vec::new();
        {
            let mut held = Held::all(&real.store);
            for db in 0..real.store.db_count() {
                for index in 0..real.store.db(db).shard_count() {
                    if let Some(shard) = held.get(db, index) {
                        shard.begin_cut(sink.clone());
                        sizes.push((db, index, shard.len(), shard.ttl_len()));
                    }
                }
            }
        }
        // Counted as Redis counts its fork (INFO `total_forks`, `latest_fork_usec`).
        crate::persist::bgsave::record_fork(real, began.elapsed());
        for (db, index, keys, ttls) in sizes {
            let estimate = (keys + ttls) * PRESIZE_SLOT_ESTIMATE;
            sink.counted_while(estimate, || {
                let mut shard = sink.store.db(db).lock_index(index);
                shard.presize(keys, ttls);
                shard
            });
        }
        // On a thread of lower priority, as a save's walk: on a busy server the copy
        // takes longer rather than the clients. Should that thread fail, this one
        // walks (what is left).
        let walked = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("redline-ldb-copy".into())
                .spawn_scoped(scope, || {
                    crate::background::lower_this_thread();
                    cut::walk(&real.store, &*sink, COPY_BATCH, || true);
                })
                .map(|walker| walker.join().is_ok())
        });
        if !matches!(walked, Ok(true)) {
            cut::walk(&real.store, &*sink, COPY_BATCH, || true);
        }
        Ok(Forked {
            shared: Some(shared),
            gauge,
            counted: sink.counted.load(Ordering::Relaxed),
        })
    }

    /// The session's server state.
    pub fn shared(&self) -> Option<&Arc<Shared>> {
        self.shared.as_ref()
    }
}

impl Drop for Forked {
    fn drop(&mut self) {
        // Freed first, then no longer left out: no limit check sees the bytes uncounted.
        drop(self.shared.take());
        self.gauge.change(self.counted, 0);
    }
}

/// A cut that copies each entry into another store, counting what the copy takes as
/// left out of `maxmemory` before it is allocated.
struct CopyInto {
    store: Arc<Store>,
    gauge: Arc<Gauge>,
    counted: AtomicUsize,
}

impl CopyInto {
    /// Runs `change` on the copy, counting what it allocates (or frees) as left out of
    /// `maxmemory`: `estimate` before, corrected to the measure after. `change` returns
    /// the lock of the shard it changed, released only once counted, so that a change
    /// freeing what another counted is always counted after it.
    fn counted_while<G>(&self, estimate: usize, change: impl FnOnce() -> G) {
        self.gauge.change(0, estimate);
        let before = thread_net();
        let guard = change();
        // Signed: a change may free more than it takes (the end of an index's move frees
        // the old index, which earlier changes counted).
        let took = thread_net() - before;
        match usize::try_from(took) {
            Ok(grew) => {
                self.gauge.change(estimate, grew);
                self.counted.fetch_add(grew, Ordering::Relaxed);
            }
            Err(_) => {
                let freed = took.unsigned_abs();
                self.gauge.change(estimate + freed, 0);
                self.counted.fetch_sub(freed, Ordering::Relaxed);
            }
        }
        drop(guard);
    }
}

impl CutSink for CopyInto {
    fn save(&self, db: usize, entries: &mut dyn Iterator<Item = (&[u8], &Entry)>) {
        let db = self.store.db(db);
        for (key, entry) in entries {
            let estimate = crate::cmd::memory::value_size(
                &entry.value,
                crate::store::sampled::DEFAULT_SAMPLES,
            ) + key.len();
            self.counted_while(estimate, || {
                let mut shard = db.lock(key);
                shard.insert_copy(key, entry);
                shard
            });
        }
    }
}
