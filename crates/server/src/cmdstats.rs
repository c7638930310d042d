//! Per-command and per-error counters for INFO commandstats and errorstats.
//!
//! Counting must not put a shared lock on every command: each connection counts into its
//! own small table ([`Local`]) and adds it to the server's ([`CommandStats`]) when it
//! flushes its other counters, once per batch of commands.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::latency::{histogram_bucket, HISTOGRAM_BUCKETS};

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
    /// Calls per latency bucket (LATENCY HISTOGRAM, see `crate::latency`).
    pub histogram: [u64; HISTOGRAM_BUCKETS],
}

impl Counters {
    fn add(&mut self, other: &Counters) {
        self.calls += other.calls;
        self.usec += other.usec;
        self.rejected += other.rejected;
        self.failed += other.failed;
        for (mine, theirs) in self.histogram.iter_mut().zip(other.histogram) {
            *mine += theirs;
        }
    }
}

/// A connection's counts since its last flush.
#[derive(Debug, Default)]
pub struct Local {
    commands: Vec<(&'static str, Counters)>,
    errors: Vec<(String, u64)>,
}

impl Local {
    fn entry(&mut self, name: &'static str) -> &mut Counters {
        let at = match self.commands.iter().position(|(n, _)| *n == name) {
            Some(at) => at,
            None => {
                self.commands.push((name, Counters::default()));
                self.commands.len() - 1
            }
        };
        &mut self.commands[at].1
    }

    /// A call of `name` that ran for `usec` and failed or not.
    pub fn ran(&mut self, name: &'static str, usec: u64, failed: bool) {
        let c = self.entry(name);
        c.calls += 1;
        c.usec += usec;
        c.failed += u64::from(failed);
        c.histogram[histogram_bucket(usec)] += 1;
    }

    /// A call of `name` that ran earlier (a blocked command) and ended in an error.
    pub fn failed_later(&mut self, name: &'static str) {
        self.entry(name).failed += 1;
    }

    /// A call of `name` refused before it ran.
    pub fn rejected(&mut self, name: &'static str) {
        self.entry(name).rejected += 1;
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
        self.commands.is_empty() && self.errors.is_empty()
    }
}

/// The server's totals.
#[derive(Debug, Default)]
pub struct CommandStats {
    commands: Mutex<HashMap<&'static str, Counters>>,
    errors: Mutex<HashMap<String, u64>>,
}

/// Redis keeps at most this many distinct error prefixes (then stops adding new ones).
const MAX_ERROR_PREFIXES: usize = 128;

impl CommandStats {
    /// Adds a connection's counts and clears them.
    pub fn absorb(&self, local: &mut Local) {
        if !local.commands.is_empty() {
            let mut commands = self.commands.lock();
            for (name, c) in local.commands.drain(..) {
                commands.entry(name).or_default().add(&c);
            }
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
        let mut all: Vec<_> = self.commands.lock().iter().map(|(n, c)| (*n, *c)).collect();
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
        local.ran("get", 3, false);
        local.ran("get", 2, true);
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
                        usec: 5,
                        rejected: 0,
                        failed: 1,
                        histogram: {
                            let mut h = [0; HISTOGRAM_BUCKETS];
                            h[1] = 1;
                            h[2] = 1;
                            h
                        },
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
    }
}
