//! WATCHes sent while a script is BUSY. Redis answers them at once, between two steps
//! of the script, and the script's later writes to the key break the watcher's EXEC.
//! Here the script holds the key's shard, so the WATCH cannot register there itself:
//! it leaves the registration to the script's thread, which makes it before the
//! script's next command (or at its end, before the shards are released), the point
//! at which Redis would have run the WATCH.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::shared::Shared;
use crate::store::HeldShards;

/// One key a client watches, to be registered in its shard.
#[derive(Debug)]
pub struct BusyWatch {
    /// The key's database.
    pub db: usize,
    /// The key.
    pub key: Vec<u8>,
    /// The client's run of WATCHes (see `ClientState::watch_id`).
    pub watch_id: u64,
}

/// The WATCHes waiting for the running script's thread.
#[derive(Debug, Default)]
pub struct BusyWatches {
    /// `None` while no script runs (or once its end took them): a WATCH then locks the
    /// shard itself.
    waiting: Mutex<Option<Vec<BusyWatch>>>,
    /// Some are waiting: the one load each of the script's commands pays.
    any: AtomicBool,
}

impl BusyWatches {
    /// A script starts: WATCHes may wait for it from now on.
    pub(super) fn open(&self) {
        *self.waiting.lock() = Some(Vec::new());
        self.any.store(false, Ordering::Release);
    }

    /// Leaves `watch` to the running script; gives it back when no script runs any
    /// more (the caller then waits for the shard).
    pub fn defer(&self, watch: BusyWatch) -> Result<(), BusyWatch> {
        let mut waiting = self.waiting.lock();
        match waiting.as_mut() {
            Some(list) => {
                list.push(watch);
                self.any.store(true, Ordering::Release);
                Ok(())
            }
            None => Err(watch),
        }
    }

    /// The script's thread, before each of its commands: registers what waits.
    #[inline]
    pub fn register_waiting(&self, shared: &Shared, held: Option<&dyn HeldShards>) {
        if self.any.load(Ordering::Acquire) {
            let taken = self.take(|waiting| waiting.as_mut().map(std::mem::take));
            register(shared, held, taken.unwrap_or_default());
        }
    }

    /// The script's thread, at its end and still holding its shards: registers what
    /// waits and refuses WATCHes from now on.
    pub fn close(&self, shared: &Shared, held: Option<&dyn HeldShards>) {
        let taken = self.take(Option::take);
        register(shared, held, taken.unwrap_or_default());
    }

    /// What `how` takes of the list, with the flag cleared under the same lock as
    /// [`Self::defer`] sets it, so a WATCH deferred meanwhile keeps its flag.
    fn take(
        &self,
        how: impl FnOnce(&mut Option<Vec<BusyWatch>>) -> Option<Vec<BusyWatch>>,
    ) -> Option<Vec<BusyWatch>> {
        let mut waiting = self.waiting.lock();
        self.any.store(false, Ordering::Release);
        how(&mut waiting)
    }
}

/// Registers each watch in its shard: through the script's held shards when it holds
/// them (reaching a database it has not yet, in lock order), else by locking.
fn register(shared: &Shared, held: Option<&dyn HeldShards>, watches: Vec<BusyWatch>) {
    for w in watches {
        let store = shared.store.db(w.db);
        match held {
            Some(held) => held
                .borrow_map()
                .shard(w.db, store.shard_index(&w.key))
                .watch(&w.key, w.watch_id),
            None => store.lock(&w.key).watch(&w.key, w.watch_id),
        }
    }
}
