//! Per-command and per-error counters for INFO commandstats, errorstats and
//! latencystats, and LATENCY HISTOGRAM.
//!
//! Counting must not put a shared lock on every command: each connection counts into its
//! own small table ([`Local`]) and adds it to the server's ([`CommandStats`]) when it
//! flushes its other counters, once per batch of commands. Latencies are kept per call
//! in the connection's table and recorded into the server's per-command histograms at
//! that flush.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use parking_lot::Mutex;

use crate::latency::{histogram_bucket_ns, HISTOGRAM_BUCKETS};

/// One command's figures, as `cmdstat_<name>:calls=..,usec=..,rejected_calls=..,failed_calls=..`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Calls that ran.
    pub calls: u64,
    /// Microseconds spent running them.
    pub usec: u64,
    /// Calls refused before running (arity, ACL, unknown subcommand...).
    pub rejected: u64,
    /// Calls that ran and answered an error.
    pub failed: u64,
}

impl Counters {
    fn add(&mut self, other: &Counters) {
        self.calls += other.calls;
        self.usec += other.usec;
        self.rejected += other.rejected;
        self.failed += other.failed;
    }
}

/// A command's counts in a connection's table since its last flush.
#[derive(Debug)]
struct LocalEntry {
    name: &'static str,
    counters: Counters,
    /// Each call's running time, in nanoseconds.
    latencies: Vec<u64>,
}

/// A connection's counts since its last flush. Its entries stay between flushes (a
/// connection mostly repeats the same few commands), emptied in place.
#[derive(Debug, Default)]
pub struct Local {
    commands: Vec<LocalEntry>,
    /// Whether any entry holds counts.
    counted: bool,
    errors: Vec<(String, u64)>,
}

impl Local {
    fn entry(&mut self, name: &'static str) -> &mut LocalEntry {
        self.counted = true;
        let at = match self.commands.iter().position(|e| e.name == name) {
            Some(at) => at,
            None => {
                self.commands.push(LocalEntry {
                    name,
                    counters: Counters::default(),
                    latencies: Vec::new(),
                });
                self.commands.len() - 1
            }
        };
        &mut self.commands[at]
    }

    /// A call of `name` that ran for `elapsed` and failed or not.
    pub fn ran(&mut self, name: &'static str, elapsed: Duration, failed: bool) {
        let e = self.entry(name);
        e.counters.calls += 1;
        e.counters.usec += u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        e.counters.failed += u64::from(failed);
        e.latencies
            .push(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
    }

    /// A call of `name` that ran earlier (a blocked command) and ended in an error.
    pub fn failed_later(&mut self, name: &'static str) {
        self.entry(name).counters.failed += 1;
    }

    /// A call of `name` refused before it ran.
    pub fn rejected(&mut self, name: &'static str) {
        self.entry(name).counters.rejected += 1;
    }

    /// An error reply, counted by its prefix (`ERR`, `WRONGTYPE`...).
    pub fn error(&mut self, message: &[u8]) {
        let prefix = message.split(|&b| b == b' ').next().unwrap_or_default();
        let prefix = String::from_utf8_lossy(prefix).into_owned();
        match self.errors.iter_mut().find(|(p, _)| *p == prefix) {
            Some((_, n)) => *n += 1,
            None => self.errors.push((prefix, 1)),
        }
    }

    /// Nothing counted since the last flush.
    pub fn is_empty(&self) -> bool {
        !self.counted && self.errors.is_empty()
    }
}

/// Room for samples a connection keeps between flushes, per command.
const KEPT_SAMPLES: usize = 256;

/// Redis's latency histograms: 1 ns to 1 s, two significant figures.
const LATENCY_MIN_NS: u64 = 1;
const LATENCY_MAX_NS: u64 = 1_000_000_000;
const LATENCY_SIGFIG: u8 = 2;

/// A command's totals.
#[derive(Default)]
struct Totals {
    counters: Counters,
    /// Created at the command's first call with latency tracking on.
    latency: Option<Box<Histogram<u64>>>,
}

impl Totals {
    fn record(&mut self, latencies: &[u64]) {
        if latencies.is_empty() {
            return;
        }
        let histogram = match &mut self.latency {
            Some(h) => h,
            None => {
                match Histogram::new_with_bounds(LATENCY_MIN_NS, LATENCY_MAX_NS, LATENCY_SIGFIG) {
                    Ok(h) => self.latency.insert(Box::new(h)),
                    Err(_) => return,
                }
            }
        };
        for &ns in latencies {
            // Within the bounds, so recording cannot fail.
            let _ = histogram.record(ns.clamp(LATENCY_MIN_NS, LATENCY_MAX_NS));
        }
    }
}

/// The server's totals.
#[derive(Default)]
pub struct CommandStats {
    commands: Mutex<HashMap<&'static str, Totals>>,
    errors: Mutex<HashMap<String, u64>>,
    /// `latency-tracking no` stops recording latencies (the counts go on).
    untracked: AtomicBool,
}

impl std::fmt::Debug for CommandStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandStats").finish_non_exhaustive()
    }
}

/// Redis keeps at most this many distinct error prefixes (then stops adding new ones).
const MAX_ERROR_PREFIXES: usize = 128;

impl CommandStats {
    /// Applies `latency-tracking`.
    pub fn set_latency_tracking(&self, on: bool) {
        self.untracked.store(!on, Ordering::Relaxed);
    }

    /// Adds a connection's counts and clears them.
    pub fn absorb(&self, local: &mut Local) {
        if local.counted {
            let tracked = !self.untracked.load(Ordering::Relaxed);
            let mut commands = self.commands.lock();
            for e in &mut local.commands {
                let totals = commands.entry(e.name).or_default();
                totals.counters.add(&e.counters);
                if tracked {
                    totals.record(&e.latencies);
                }
                e.counters = Counters::default();
                // A long pipeline's samples are not kept for the connection's life.
                if e.latencies.capacity() > KEPT_SAMPLES {
                    e.latencies = Vec::new();
                } else {
                    e.latencies.clear();
                }
            }
            local.counted = false;
        }
        if !local.errors.is_empty() {
            let mut errors = self.errors.lock();
            for (prefix, n) in local.errors.drain(..) {
                if errors.len() < MAX_ERROR_PREFIXES || errors.contains_key(&prefix) {
                    *errors.entry(prefix).or_default() += n;
                }
            }
        }
    }

    /// Every command's totals, sorted by name.
    pub fn commands(&self) -> Vec<(&'static str, Counters)> {
        let mut all: Vec<_> = self
            .commands
            .lock()
            .iter()
            .map(|(n, t)| (*n, t.counters))
            .collect();
        all.sort_unstable_by_key(|(n, _)| *n);
        all
    }

    /// Every command with recorded latencies, sorted by name, with its calls per
    /// LATENCY HISTOGRAM bucket.
    pub fn latency_buckets(&self) -> Vec<(&'static str, [u64; HISTOGRAM_BUCKETS])> {
        self.per_histogram(|histogram| {
            let mut buckets = [0; HISTOGRAM_BUCKETS];
            for v in histogram.iter_recorded() {
                buckets[histogram_bucket_ns(v.value_iterated_to())] += v.count_at_value();
            }
            buckets
        })
    }

    /// Every command with recorded latencies, sorted by name, with the latency in
    /// microseconds at each of `percentiles` (INFO latencystats).
    pub fn latency_percentiles(&self, percentiles: &[f64]) -> Vec<(&'static str, Vec<f64>)> {
        self.per_histogram(|histogram| {
            percentiles
                .iter()
                .map(|p| histogram.value_at_percentile(*p) as f64 / 1000.0)
                .collect()
        })
    }

    /// `f` of each command's latency histogram, for the commands that have one, sorted
    /// by name.
    fn per_histogram<T>(&self, f: impl Fn(&Histogram<u64>) -> T) -> Vec<(&'static str, T)> {
        let mut all: Vec<_> = self
            .commands
            .lock()
            .iter()
            .filter_map(|(n, t)| Some((*n, f(t.latency.as_deref()?))))
            .collect();
        all.sort_unstable_by_key(|(n, _)| *n);
        all
    }

    /// Every error prefix's count, sorted.
    pub fn errors(&self) -> Vec<(String, u64)> {
        let mut all: Vec<_> = self
            .errors
            .lock()
            .iter()
            .map(|(p, n)| (p.clone(), *n))
            .collect();
        all.sort();
        all
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        self.commands.lock().clear();
        self.errors.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_counts_reach_the_totals() {
        let stats = CommandStats::default();
        let mut local = Local::default();
        local.ran("get", Duration::from_micros(3), false);
        local.ran("get", Duration::from_nanos(1500), true);
        local.rejected("set");
        local.error(b"ERR wrong");
        local.error(b"WRONGTYPE Operation");
        local.error(b"ERR again");
        stats.absorb(&mut local);
        assert!(local.is_empty());
        assert_eq!(
            stats.commands(),
            vec![
                (
                    "get",
                    Counters {
                        calls: 2,
                        usec: 4,
                        rejected: 0,
                        failed: 1,
                    }
                ),
                (
                    "set",
                    Counters {
                        rejected: 1,
                        ..Counters::default()
                    }
                )
            ]
        );
        assert_eq!(
            stats.errors(),
            vec![("ERR".to_string(), 2), ("WRONGTYPE".to_string(), 1)]
        );
        // 1.5 us is in the 2,048 ns bucket, 3 us in the 4,096 ns one.
        let mut buckets = [0; HISTOGRAM_BUCKETS];
        buckets[1] = 1;
        buckets[2] = 1;
        assert_eq!(stats.latency_buckets(), vec![("get", buckets)]);
        let p = stats.latency_percentiles(&[50.0, 100.0]);
        assert_eq!(p.len(), 1);
        assert!((1.4..1.6).contains(&p[0].1[0]), "{p:?}");
        assert!((2.9..3.1).contains(&p[0].1[1]), "{p:?}");
    }

    #[test]
    fn latency_tracking_off_keeps_counting_calls() {
        let stats = CommandStats::default();
        stats.set_latency_tracking(false);
        let mut local = Local::default();
        local.ran("get", Duration::from_micros(3), false);
        stats.absorb(&mut local);
        assert_eq!(stats.commands()[0].1.calls, 1);
        assert!(stats.latency_percentiles(&[50.0]).is_empty());
        stats.set_latency_tracking(true);
        local.ran("get", Duration::from_micros(3), false);
        stats.absorb(&mut local);
        assert_eq!(stats.latency_percentiles(&[50.0]).len(), 1);
    }
}
