//! A process-wide monotonic clock, for spans measured across threads in an atomic
//! (a watchdog's batch start, a spell over `maxmemory`): unlike the keyspace's clock,
//! it never moves back with the wall clock, and unlike an `Instant` it fits a `u64`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long since the clock's first use.
///
/// ```
/// let before = redline_server::uptime_clock::elapsed();
/// assert!(redline_server::uptime_clock::elapsed() >= before);
/// ```
pub fn elapsed() -> Duration {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}
