//! Which connections the runtime woke for input most recently, by arrival number (see
//! [`crate::net::input_turns`]).
//!
//! A write to a key clients are blocked on waits for earlier input that could queue a
//! blocking command ahead of the waiters it serves. Finding that input by looking at
//! every connection costs about 6 µs a write per 1,000 connections; input that has not
//! run yet came shortly before, so past a few hundred connections the write looks only
//! at the owners of the last [`LOOK_BACK`] wake-ups instead, which costs the same
//! whatever the number of connections.
//!
//! Every wake-up that draws an arrival number records it here with its connection's id,
//! in the slot the number picks in a ring: three plain stores, no lock and no
//! read-modify-write on the path every command's wake-up takes. A slot holds one
//! number at a time, so a reader checks that the number it found is the one it asked
//! for both before and after it reads the id (as a sequence lock does): an id is never
//! paired with another wake-up's number.

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// How many wake-ups back a write looks for earlier input: the earlier input a push
/// must wait for came just before the clients it serves (two BLPOPs sent one after the
/// other are a few numbers apart). Looking further back finds more input that came
/// long before and has still not run on a busy server, and waits for it: a job queue's
/// producers with 1,000 connections open pushed 0.77x as fast as with no look at 256,
/// 0.89x at 64, where the look itself costs nothing measurable (bench/NOTES.md, stop
/// 85).
pub const LOOK_BACK: u64 = 64;

/// Slots in the ring: many times [`LOOK_BACK`], so that a slot being read is seldom the
/// one a wake-up is writing at the same time, and a push that serves clients blocked
/// for a while still finds the wake-ups from before the first of them.
const SLOTS: usize = 1024;

/// One wake-up: its arrival number (0 while being written) and its connection's id.
#[derive(Debug)]
struct Slot {
    number: AtomicU64,
    owner: AtomicU64,
}

/// The last 1,024 wake-ups (see the module documentation).
#[derive(Debug)]
pub struct RecentArrivals {
    slots: [Slot; SLOTS],
}

/// The server's wake-ups, recorded by [`crate::net::input_turns::ReadyWaker`].
pub static RECENT_ARRIVALS: RecentArrivals = RecentArrivals::new();

impl RecentArrivals {
    /// An empty ring.
    pub const fn new() -> Self {
        RecentArrivals {
            slots: [const {
                Slot {
                    number: AtomicU64::new(0),
                    owner: AtomicU64::new(0),
                }
            }; SLOTS],
        }
    }

    fn slot(&self, number: u64) -> &Slot {
        &self.slots[(number % SLOTS as u64) as usize]
    }

    /// A wake-up numbered `number` (never 0) marked connection `owner` ready.
    pub fn record(&self, number: u64, owner: u64) {
        let slot = self.slot(number);
        // The number goes down first and comes back with the new owner: a reader that
        // sees the same number before and after its read of the owner read its owner.
        slot.number.store(0, Ordering::Relaxed);
        fence(Ordering::Release);
        slot.owner.store(owner, Ordering::Relaxed);
        slot.number.store(number, Ordering::Release);
    }

    /// The owners of the wake-ups numbered from `before - back` up to `before`
    /// (excluded) that the ring still holds, each once.
    pub fn owners_before(&self, before: u64, back: u64) -> Vec<u64> {
        let mut owners = Vec::new();
        for number in before.saturating_sub(back).max(1)..before {
            let slot = self.slot(number);
            if slot.number.load(Ordering::Acquire) != number {
                continue;
            }
            let owner = slot.owner.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            if slot.number.load(Ordering::Relaxed) == number {
                owners.push(owner);
            }
        }
        owners.sort_unstable();
        owners.dedup();
        owners
    }
}

impl Default for RecentArrivals {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_owners_of_earlier_wake_ups_each_once() {
        let ring = RecentArrivals::new();
        ring.record(10, 7);
        ring.record(11, 8);
        ring.record(12, 7);
        ring.record(14, 9);
        assert_eq!(ring.owners_before(14, LOOK_BACK), [7, 8]);
        assert_eq!(ring.owners_before(15, LOOK_BACK), [7, 8, 9]);
        assert_eq!(ring.owners_before(15, 3), [7, 9]);
        assert_eq!(ring.owners_before(10, LOOK_BACK), Vec::<u64>::new());
    }

    #[test]
    fn a_slot_reused_by_a_later_wake_up_is_not_read_as_the_earlier() {
        let ring = RecentArrivals::new();
        ring.record(5, 1);
        ring.record(5 + SLOTS as u64, 2);
        assert_eq!(ring.owners_before(6, LOOK_BACK), Vec::<u64>::new());
        assert_eq!(ring.owners_before(6 + SLOTS as u64, SLOTS as u64), [2]);
    }

    #[test]
    fn readers_never_pair_an_owner_with_another_number() {
        // Each wake-up's owner is the lap of the ring its number is on: a reader racing
        // the writer over one slot must only ever find the owner of the number it asks
        // for.
        let laps = 2_000u64;
        let ring = std::sync::Arc::new(RecentArrivals::new());
        let writer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                for number in 1..laps * SLOTS as u64 {
                    ring.record(number, number / SLOTS as u64);
                }
            })
        };
        while !writer.is_finished() {
            for lap in 0..laps {
                let number = lap * SLOTS as u64 + 3;
                let owners = ring.owners_before(number + 1, 1);
                assert!(owners.iter().all(|&o| o == lap), "{number}: {owners:?}");
            }
        }
        writer.join().unwrap();
    }
}
