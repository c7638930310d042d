//! Latency monitoring (Redis's `latency.c`): events (`command`, `fast-command`,
//! `expire-cycle`...) that took at least `latency-monitor-threshold` milliseconds,
//! kept as one sample per second (the worst) over the last 160 samples, for LATENCY
//! LATEST / HISTORY / RESET / GRAPH / DOCTOR; and the per-command latency histograms of
//! LATENCY HISTOGRAM, in the buckets Redis's reports use.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Samples kept per event (Redis's `LATENCY_TS_LEN`).
const HISTORY_LEN: usize = 160;

/// One second's worst latency of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Unix time, seconds.
    pub time: u64,
    /// Milliseconds.
    pub latency: u64,
}

/// An event's samples and the worst ever seen.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Oldest first.
    pub samples: VecDeque<Sample>,
    /// The worst latency since the last reset.
    pub max: u64,
}

/// The latency monitor.
#[derive(Debug, Default)]
pub struct LatencyMonitor {
    /// `latency-monitor-threshold` in milliseconds; 0 disables the monitor.
    threshold: AtomicU64,
    events: Mutex<BTreeMap<&'static str, Series>>,
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl LatencyMonitor {
    /// Applies `latency-monitor-threshold`.
    pub fn configure(&self, threshold_ms: u64) {
        self.threshold.store(threshold_ms, Ordering::Relaxed);
    }

    /// Records `ms` for `event` if the monitor is on and it reaches the threshold
    /// (Redis's `latencyAddSampleIfNeeded`).
    #[inline]
    pub fn add_if_needed(&self, event: &'static str, ms: u64) {
        let threshold = self.threshold.load(Ordering::Relaxed);
        if threshold > 0 && ms >= threshold {
            self.add(event, ms);
        }
    }

    fn add(&self, event: &'static str, ms: u64) {
        let now = unix_now();
        let mut events = self.events.lock();
        let series = events.entry(event).or_default();
        series.max = series.max.max(ms);
        if let Some(last) = series.samples.back_mut() {
            if last.time == now {
                last.latency = last.latency.max(ms);
                return;
            }
        }
        if series.samples.len() == HISTORY_LEN {
            series.samples.pop_front();
        }
        series.samples.push_back(Sample {
            time: now,
            latency: ms,
        });
    }

    /// Every event with samples, by name.
    pub fn events(&self) -> Vec<(&'static str, Series)> {
        self.events
            .lock()
            .iter()
            .map(|(name, s)| (*name, s.clone()))
            .collect()
    }

    /// One event's samples.
    pub fn series(&self, event: &[u8]) -> Option<Series> {
        let events = self.events.lock();
        events
            .iter()
            .find(|(name, _)| name.as_bytes() == event)
            .map(|(_, s)| s.clone())
    }

    /// Forgets the named events (all when `names` is empty); returns how many it reset.
    pub fn reset(&self, names: &[&[u8]]) -> usize {
        let mut events = self.events.lock();
        if names.is_empty() {
            let n = events.len();
            events.clear();
            return n;
        }
        let before = events.len();
        events.retain(|name, _| !names.contains(&name.as_bytes()));
        before - events.len()
    }
}

/// Buckets of a command latency histogram: powers of two from 1,024 ns to 2^30 ns.
pub const HISTOGRAM_BUCKETS: usize = 21;
const FIRST_POWER: u32 = 10;
/// Redis clamps recorded latencies to 1,024 ns .. 1 s.
const MAX_NS: u64 = 1_000_000_000;

/// The highest value the bucket of 2^`power` ns stands for, in Redis's histogram
/// (two significant figures): what its report shows, in microseconds.
fn bucket_top_ns(power: u32) -> u64 {
    (1u64 << power) + (1u64 << (power - 7)) - 1
}

/// The bucket of a command that ran for `ns` nanoseconds.
#[inline]
pub fn histogram_bucket_ns(ns: u64) -> usize {
    let ns = ns.min(MAX_NS);
    let mut power = FIRST_POWER;
    while ns > bucket_top_ns(power) && (power - FIRST_POWER) < HISTOGRAM_BUCKETS as u32 - 1 {
        power += 1;
    }
    (power - FIRST_POWER) as usize
}

/// The `histogram_usec` pairs of LATENCY HISTOGRAM: for each bucket that holds calls,
/// its upper bound in microseconds and the calls at or below it.
pub fn histogram_report(buckets: &[u64; HISTOGRAM_BUCKETS]) -> Vec<(u64, u64)> {
    let mut cumulative = 0;
    let mut out = Vec::new();
    for (i, &n) in buckets.iter().enumerate() {
        if n == 0 {
            continue;
        }
        cumulative += n;
        out.push((bucket_top_ns(FIRST_POWER + i as u32) / 1000, cumulative));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_keep_the_worst_per_second() {
        let monitor = LatencyMonitor::default();
        monitor.add_if_needed("command", 500);
        assert!(monitor.events().is_empty(), "off while the threshold is 0");
        monitor.configure(100);
        monitor.add_if_needed("command", 50);
        monitor.add_if_needed("command", 300);
        monitor.add_if_needed("command", 200);
        let series = monitor.series(b"command").unwrap_or_default();
        assert_eq!(series.max, 300);
        assert!(!series.samples.is_empty() && series.samples.len() <= 2);
        assert_eq!(monitor.reset(&[b"nope"]), 0);
        assert_eq!(monitor.reset(&[]), 1);
    }

    #[test]
    fn histogram_buckets_match_redis_reports() {
        let mut buckets = [0u64; HISTOGRAM_BUCKETS];
        for usec in [0, 1, 2, 33, 5_000_000] {
            buckets[histogram_bucket_ns(usec * 1000)] += 1;
        }
        assert_eq!(
            histogram_report(&buckets),
            vec![(1, 2), (2, 3), (33, 4), (1_082_130, 5)]
        );
    }
}
