//! Keyspace hits and misses (INFO `keyspace_hits`, `keyspace_misses`), counted as Redis
//! counts them: key lookups made while a read-only command runs (GET, MGET, HGET,
//! EXISTS...), a key that expired counting as a miss; writes' lookups are not counted.
//!
//! Per thread, like [`super::dirty`]: a command runs on one thread from start to end, the
//! dispatcher says whether it reads, and the connection moves the counts into the
//! server's totals once per batch, so no cache line is shared between cores per lookup.

use std::cell::Cell;

thread_local! {
    static READING: Cell<bool> = const { Cell::new(false) };
    static HITS: Cell<u64> = const { Cell::new(0) };
    static MISSES: Cell<u64> = const { Cell::new(0) };
}

/// Says whether the command about to run on this thread is a read; returns what was
/// said before (a script's `redis.call` restores its caller's).
#[inline]
pub fn set_reading(reading: bool) -> bool {
    READING.with(|r| r.replace(reading))
}

/// Records one lookup of a key, found or not, if a read is running; returns whether it
/// counted a miss (Redis then fires a `keymiss` event too).
#[inline]
pub fn looked_up(found: bool) -> bool {
    if READING.with(Cell::get) {
        let counter = if found { &HITS } else { &MISSES };
        counter.with(|c| c.set(c.get().wrapping_add(1)));
        return !found;
    }
    false
}

/// Runs `f` with its lookups counted as a read's: Redis's `lookupKeyRead` inside a
/// write command (the sources of SINTERSTORE, ZUNIONSTORE, PFMERGE, BITOP), which
/// counts in INFO's hits and misses and fires `keymiss`.
pub fn as_read<T>(f: impl FnOnce() -> T) -> T {
    let before = set_reading(true);
    let result = f();
    set_reading(before);
    result
}

/// This thread's hits and misses since the last call; both restart at zero.
pub fn take() -> (u64, u64) {
    (HITS.with(|c| c.replace(0)), MISSES.with(|c| c.replace(0)))
}

/// This thread's hits and misses not taken yet.
pub fn pending() -> (u64, u64) {
    (HITS.with(Cell::get), MISSES.with(Cell::get))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_count() {
        take();
        looked_up(true);
        let before = set_reading(true);
        looked_up(true);
        looked_up(false);
        looked_up(false);
        set_reading(before);
        looked_up(false);
        assert_eq!(pending(), (1, 2));
        assert_eq!(take(), (1, 2));
        assert_eq!(take(), (0, 0));
    }
}
