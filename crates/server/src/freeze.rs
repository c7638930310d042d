//! DEBUG SLEEP: the whole server stops for a while, as Redis's single thread does when it
//! sleeps. Clients' commands, the cron and what replication sends on its own (newlines
//! to waiting replicas, the stream) wait for the end; what is already running finishes.
//!
//! When nothing sleeps, a check is one relaxed load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::store::now_ms;

/// Until when the server is stopped.
#[derive(Debug, Default)]
pub struct Freeze {
    /// Milliseconds since the Unix epoch; 0: not stopped.
    until_ms: AtomicU64,
}

impl Freeze {
    /// Stops the server for `duration` from now (a longer stop already set stays).
    pub fn stop_for(&self, duration: Duration) {
        let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        self.until_ms
            .fetch_max(now_ms().saturating_add(ms), Ordering::Relaxed);
    }

    /// Whether the server is stopped now.
    #[inline]
    pub fn stopped(&self) -> bool {
        let until = self.until_ms.load(Ordering::Relaxed);
        if until == 0 {
            return false;
        }
        if until > now_ms() {
            return true;
        }
        // Over: back to the one-load check.
        let _ = self
            .until_ms
            .compare_exchange(until, 0, Ordering::Relaxed, Ordering::Relaxed);
        false
    }

    /// Waits until the server runs again (at once when it runs).
    pub async fn wait(&self) {
        loop {
            let until = self.until_ms.load(Ordering::Relaxed);
            let now = now_ms();
            if until <= now {
                return;
            }
            tokio::time::sleep(Duration::from_millis(until - now)).await;
        }
    }
}
