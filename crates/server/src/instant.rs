//! INFO's `instantaneous_ops_per_sec` and `instantaneous_*_kbps`: as in Redis, each
//! rate is the mean of its last 16 samples, one taken every 100 ms by the cron from the
//! server's running totals.

use std::time::Instant as Clock;

use parking_lot::Mutex;

/// Samples kept per rate (Redis's `STATS_METRIC_SAMPLES`).
const SAMPLES: usize = 16;
/// Milliseconds between samples: a cron running faster than this skips turns.
const PERIOD_MS: u128 = 100;

/// What a rate is measured from.
#[derive(Debug, Clone, Copy)]
pub enum Metric {
    /// Commands processed.
    Commands,
    /// Bytes read from clients.
    NetInput,
    /// Bytes written to clients.
    NetOutput,
    /// Bytes read on replication links.
    ReplInput,
    /// Bytes written on replication links.
    ReplOutput,
}

const METRICS: usize = 5;

#[derive(Debug, Default, Clone, Copy)]
struct Rate {
    last_total: u64,
    samples: [u64; SAMPLES],
}

#[derive(Debug, Default)]
struct Rates {
    taken: Option<Clock>,
    next: usize,
    rates: [Rate; METRICS],
}

/// The sampled rates of every [`Metric`].
#[derive(Debug, Default)]
pub struct Instant {
    inner: Mutex<Rates>,
}

impl Instant {
    /// Takes one sample of every metric from its running total (indexed as [`Metric`]),
    /// unless the last sample is less than 100 ms old.
    pub fn sample(&self, totals: [u64; METRICS]) {
        let now = Clock::now();
        let mut inner = self.inner.lock();
        let elapsed_ms = match inner.taken {
            // The first call only records the totals.
            None => None,
            Some(taken) => {
                let ms = now.duration_since(taken).as_millis();
                if ms < PERIOD_MS {
                    return;
                }
                Some(ms)
            }
        };
        let slot = inner.next;
        for (rate, total) in inner.rates.iter_mut().zip(totals) {
            if let Some(ms) = elapsed_ms {
                let delta = u128::from(total.saturating_sub(rate.last_total));
                rate.samples[slot] = u64::try_from(delta * 1000 / ms).unwrap_or(u64::MAX);
            }
            rate.last_total = total;
        }
        if elapsed_ms.is_some() {
            inner.next = (slot + 1) % SAMPLES;
        }
        inner.taken = Some(now);
    }

    /// The mean of `metric`'s samples, per second.
    pub fn per_second(&self, metric: Metric) -> u64 {
        let inner = self.inner.lock();
        inner.rates[metric as usize].samples.iter().sum::<u64>() / SAMPLES as u64
    }

    /// `metric` per second in KiB, as INFO's `_kbps` fields show it.
    pub fn kbps(&self, metric: Metric) -> f64 {
        self.per_second(metric) as f64 / 1024.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_the_mean_of_its_samples() {
        let instant = Instant::default();
        assert_eq!(instant.per_second(Metric::Commands), 0);
        instant.sample([0; METRICS]);
        std::thread::sleep(std::time::Duration::from_millis(110));
        instant.sample([1600, 0, 0, 0, 0]);
        // One sample of about 1600 / 0.11 s among 16: a sixteenth of it.
        let rate = instant.per_second(Metric::Commands);
        assert!(rate > 0 && rate <= 1600 * 10 / 16, "{rate}");
        // Too soon: no sample taken.
        instant.sample([1_000_000, 0, 0, 0, 0]);
        assert_eq!(instant.per_second(Metric::Commands), rate);
    }
}
