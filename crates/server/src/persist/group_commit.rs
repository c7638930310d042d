//! When the `appendfsync always` syncer starts its next fsync: at once when few
//! connections wait on it, and when many do, after most of them are back.
//!
//! Every connection whose replies need the disk waits for an fsync that covers its
//! changes; one fsync covers everyone waiting when it starts. Started as soon as anyone
//! waited, fsyncs carried 13 requests each at 50 clients where Redis's carried 29
//! (`-c 50 -P 1`, bench/NOTES.md, stop 55): Redis runs one fsync per event-loop turn,
//! after it has read every client ready, while a multi-core server's connections arrive
//! one by one and the first to arrive started the fsync for itself and a few others.
//! Each fsync costs CPU (the syscall, the file system's work, waking the syncer and the
//! connections) and one of the disk's operations.
//!
//! The connections an fsync released send their next commands within about one round
//! trip, so the last group's size says how many to expect. When it was large
//! ([`GATHER_FROM`] or more), the syncer waits until three quarters of that many have
//! arrived, or until as long as the last fsync took has passed, whichever comes first:
//! a request waits at most one fsync's time more, and only while many clients are
//! writing, when waiting for the disk is most of its latency anyway. A small last group
//! (one client, a few) starts the fsync at once, as before. This is the group commit
//! databases tune by hand (PostgreSQL's `commit_delay` with `commit_siblings`), paced
//! here by what the last fsync showed instead of by settings.

use std::time::{Duration, Instant};

/// A last group this large or larger makes the syncer wait for the next one to gather.
const GATHER_FROM: u64 = 12;

/// The longest a group gathers, whatever the last fsync took (a slow disk's fsync
/// already makes every request that slow).
const GATHER_AT_MOST: Duration = Duration::from_millis(2);

/// What connections want from the syncer; kept under the syncer's lock, so a
/// connection's arrival and the syncer's decision to sleep cannot miss each other.
#[derive(Debug, Default)]
pub(super) struct Wants {
    /// The highest position in the AOF stream a connection waits to see on disk.
    pub(super) upto: u64,
    /// Connections that started waiting, ever.
    pub(super) arrivals: u64,
    /// While the syncer gathers a group: the arrival that wakes it (0: any).
    pub(super) wake_at: u64,
}

impl Wants {
    /// Records a connection that waits for `position`; returns whether it must wake the
    /// syncer (it is idle, or this arrival completes the group it gathers).
    pub(super) fn arrive(&mut self, position: u64) -> bool {
        self.upto = self.upto.max(position);
        self.arrivals += 1;
        self.arrivals >= self.wake_at
    }
}

/// The syncer's memory of its last fsync, which paces the next.
#[derive(Debug, Default)]
pub(super) struct Pacing {
    /// [`Wants::arrivals`] when the last fsync started.
    started_at: u64,
    /// Arrivals the last fsync covered (those since the one before it started).
    last_group: u64,
    /// How long the last fsync (with its write) took.
    last_took: Duration,
    /// When it ended.
    last_done: Option<Instant>,
}

impl Pacing {
    /// The gathering the next fsync waits for, if any: the arrival count that ends it and
    /// the instant it ends regardless. None after a small group, or when the last fsync
    /// ended longer ago than it lasted: its clients are not on their way any more, and
    /// whoever waits now came alone.
    pub(super) fn gather(&self, now: Instant) -> Option<(u64, Instant)> {
        let wait = self.last_took.min(GATHER_AT_MOST);
        let recent = self
            .last_done
            .is_some_and(|done| now.saturating_duration_since(done) <= wait);
        (recent && self.last_group >= GATHER_FROM).then(|| {
            let enough = self.started_at + self.last_group * 3 / 4;
            (enough, now + wait)
        })
    }

    /// An fsync starts now, covering everyone who arrived by `arrivals`.
    pub(super) fn start(&mut self, arrivals: u64) {
        self.last_group = arrivals - self.started_at;
        self.started_at = arrivals;
    }

    /// The fsync started at `started` is done.
    pub(super) fn done(&mut self, started: Instant) {
        let now = Instant::now();
        self.last_took = now.saturating_duration_since(started);
        self.last_done = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pacing whose last fsync covered `group` arrivals, took `took` and ended at `done`.
    fn after(group: u64, took: Duration, done: Instant) -> Pacing {
        let mut pacing = Pacing::default();
        pacing.start(group);
        pacing.last_took = took;
        pacing.last_done = Some(done);
        pacing
    }

    #[test]
    fn a_small_group_starts_the_next_fsync_at_once() {
        let now = Instant::now();
        let pacing = after(GATHER_FROM - 1, Duration::from_micros(300), now);
        assert_eq!(pacing.gather(now), None);
    }

    #[test]
    fn a_large_group_waits_for_three_quarters_of_it_at_most_one_fsync_long() {
        let now = Instant::now();
        let fsync = Duration::from_micros(300);
        assert_eq!(after(40, fsync, now).gather(now), Some((70, now + fsync)));
        let slow = after(40, Duration::from_secs(1), now);
        assert_eq!(slow.gather(now), Some((70, now + GATHER_AT_MOST)));
    }

    #[test]
    fn a_group_from_longer_ago_than_its_fsync_lasted_does_not_wait() {
        let now = Instant::now();
        let fsync = Duration::from_micros(300);
        let pacing = after(40, fsync, now);
        assert_eq!(pacing.gather(now + fsync * 2), None);
        assert_eq!(Pacing::default().gather(now), None);
    }

    #[test]
    fn an_arrival_wakes_the_syncer_when_idle_or_when_the_group_is_complete() {
        let mut wants = Wants::default();
        assert!(wants.arrive(10));
        wants.wake_at = 3;
        assert!(!wants.arrive(5));
        assert!(wants.arrive(20));
        assert_eq!(wants.upto, 20);
    }
}
