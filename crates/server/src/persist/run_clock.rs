//! How long a background job (BGSAVE, an AOF rewrite) runs: INFO's
//! `rdb_current_bgsave_time_sec` / `rdb_last_bgsave_time_sec` and
//! `aof_current_rewrite_time_sec` / `aof_last_rewrite_time_sec`.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Start of the running job and the duration of the last one, in whole seconds as
/// Redis counts them (-1 for none).
#[derive(Debug)]
pub struct RunClock {
    /// Unix seconds the running job started at, 0 when none runs.
    started: AtomicU64,
    /// Seconds the last job took, -1 before any ended.
    last: AtomicI64,
}

impl Default for RunClock {
    fn default() -> Self {
        RunClock {
            started: AtomicU64::new(0),
            last: AtomicI64::new(-1),
        }
    }
}

impl RunClock {
    /// A job starts.
    pub fn start(&self) {
        self.started
            .store(super::snapshot::unix_secs().max(1), Ordering::Relaxed);
    }

    /// The running job ended, well or not: its duration becomes the last one's.
    pub fn end(&self) {
        let started = self.started.swap(0, Ordering::Relaxed);
        if started != 0 {
            let secs = super::snapshot::unix_secs().saturating_sub(started);
            self.last
                .store(i64::try_from(secs).unwrap_or(i64::MAX), Ordering::Relaxed);
        }
    }

    /// Seconds the running job has taken so far, -1 when none runs.
    pub fn current(&self) -> i64 {
        match self.started.load(Ordering::Relaxed) {
            0 => -1,
            started => i64::try_from(super::snapshot::unix_secs().saturating_sub(started))
                .unwrap_or(i64::MAX),
        }
    }

    /// Seconds the last job took, -1 before any ended.
    pub fn last(&self) -> i64 {
        self.last.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::RunClock;

    #[test]
    fn reads_minus_one_until_a_job_runs_and_ends() {
        let clock = RunClock::default();
        assert_eq!((clock.current(), clock.last()), (-1, -1));
        clock.start();
        assert!(clock.current() >= 0);
        clock.end();
        assert_eq!(clock.current(), -1);
        assert!(clock.last() >= 0);
        // An end without a start (a job that never began) keeps the last duration.
        clock.end();
        assert!(clock.last() >= 0);
    }
}
