//! `maxmemory-clients`: the memory all normal clients hold together (query buffers,
//! replies waiting to be written, pub/sub messages not taken yet) and, past the limit,
//! client eviction: the clients holding the most are closed until the total is under it
//! again, as Redis's `evictClients` does. A client with `CLIENT NO-EVICT on` is counted
//! but never closed.
//!
//! Each connection's mailbox keeps the figure it last counted for its client and moves
//! the total by the difference (after each batch of commands, and whenever a message is
//! added for it), so the check after a batch is one comparison; only over the limit are
//! the clients looked at. Nothing is counted while the limit is off.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::alloc::Gauge;
use crate::config::Config;

/// The limit and the total, shared by every connection.
#[derive(Debug, Default)]
pub struct ClientMemory {
    /// `maxmemory-clients` in bytes (a percentage is applied to `maxmemory`); 0: off.
    limit: AtomicU64,
    /// Bytes every client holds, as last counted.
    total: Gauge,
    /// Clients closed for it (INFO `evicted_clients`).
    pub evicted: AtomicU64,
}

impl ClientMemory {
    /// Applies `maxmemory-clients` (and `maxmemory`, for a percentage).
    pub fn configure(&self, config: &Config) {
        let setting = config.param("maxmemory-clients");
        let limit = match setting.strip_suffix('%') {
            Some(percent) => {
                let maxmemory = u64::try_from(config.param_int("maxmemory")).unwrap_or(0);
                percent
                    .parse::<u64>()
                    .map_or(0, |p| maxmemory.saturating_mul(p) / 100)
            }
            None => u64::try_from(config.param_int("maxmemory-clients")).unwrap_or(0),
        };
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// Whether client memory is counted (the limit is on).
    #[inline]
    pub fn enabled(&self) -> bool {
        self.limit.load(Ordering::Relaxed) > 0
    }

    /// One client's figure went from `from` to `to`.
    pub fn change(&self, from: usize, to: usize) {
        self.total.change(from, to);
    }

    /// Whether the total is past the limit.
    #[inline]
    pub fn over(&self) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        limit > 0 && self.total.bytes() as u64 > limit
    }
}
