//! When the server evicts keys for `maxmemory`, and where the evictions' side effects go
//! (Redis's `performEvictions` callers). Which keys go is [`crate::store::evict`]'s.
//!
//! As in Redis, keys are evicted before a client's command runs, once when CONFIG SET
//! lowers `maxmemory`, and again outside any command only while a pass is unfinished
//! (Redis's eviction time proc). Memory that grows with nobody's command (a tracking
//! client's invalidations not yet written, a pub/sub backlog) does not start a pass by
//! itself: the invalidations of one pass must not pay for the next.

use crate::shared::Shared;
use crate::store::evict::Outcome;

/// Whether eviction may run now (Redis's `isSafeToPerformEvictions`): not on a replica
/// that leaves `maxmemory` to its master (`replica-ignore-maxmemory`), nor while
/// CLIENT PAUSE keeps the dataset still, nor while a load replays the dataset (an
/// unfinished pass the cron would go on with: its DELs would land in the AOF after
/// writes the replay has not reached).
fn safe(shared: &Shared) -> bool {
    if shared.persistence.loading.is_active() {
        return false;
    }
    if shared.repl.is_replica() && shared.config.read().param_bool("replica-ignore-maxmemory") {
        return false;
    }
    !(shared.pause.active() && shared.pause.current().is_some())
}

/// One eviction pass, if memory is over the limit and eviction may run. Each evicted
/// key reaches replicas, the AOF and keyspace events through the store's events.
pub fn perform(shared: &Shared) -> Outcome {
    let store = &shared.store;
    let eviction = &store.events().eviction;
    if !eviction.check_limit() {
        return Outcome::Under;
    }
    if !safe(shared) {
        return Outcome::Under;
    }
    let outcome = eviction.free_memory(store, |_, db, key| store.events().evicted(db, key));
    match outcome {
        Outcome::Under => eviction.exceeded.under(),
        Outcome::Unfinished | Outcome::Stuck => eviction.exceeded.over(),
    }
    outcome
}

/// The cron's part: a pass that was scheduled (an unfinished one, or one asked for where
/// it could not run). Left for later while a script runs: it holds the keys.
pub fn cron(shared: &Shared) {
    let eviction = &shared.store.events().eviction;
    let script = &shared.scripting.flags;
    if script.busy() || script.must_wait() {
        return;
    }
    if eviction.take_scheduled() {
        perform(shared);
    }
}
