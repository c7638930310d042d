//! The count of changes made to the dataset, as Redis's `server.dirty`: every write path
//! of a shard marks one change (see [`super::Shard::touch`]).
//!
//! The counter is per thread: a command runs on one thread from start to end, so the
//! dispatcher reads it before and after a command to learn whether that command changed
//! anything (saves are scheduled from the sum, replication propagates only commands that
//! did), and no cache line is shared between cores on the write path.

use std::cell::Cell;

thread_local! {
    static CHANGES: Cell<u64> = const { Cell::new(0) };
}

/// Records one change.
#[inline]
pub fn mark() {
    CHANGES.with(|c| c.set(c.get().wrapping_add(1)));
}

/// Records `n` changes.
#[inline]
pub fn mark_n(n: u64) {
    CHANGES.with(|c| c.set(c.get().wrapping_add(n)));
}

/// A command whose key's touch counted one change made `total` (Redis counts one per
/// element pushed, added, removed or set): counts the rest.
#[inline]
pub fn mark_rest(total: usize) {
    mark_n((total as u64).saturating_sub(1));
}

/// The changes counted since `before` (a reading of [`count`]) count as one: a key
/// moved or replaced whole (RENAME, MOVE, COPY, SWAPDB), which Redis counts once however many
/// removals and insertions it took here.
#[inline]
pub fn count_as_one(before: u64) {
    if count() != before {
        forget_since(before);
        mark();
    }
}

/// Takes back the changes this thread counted since `before` (a reading of [`count`]):
/// for a command whose changes Redis does not count (DEBUG POPULATE, DEBUG RELOAD).
#[inline]
pub fn forget_since(before: u64) {
    CHANGES.with(|c| c.set(before));
}

/// Changes made on this thread so far (compare two readings).
#[inline]
pub fn count() -> u64 {
    CHANGES.with(Cell::get)
}
