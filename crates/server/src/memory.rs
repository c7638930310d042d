//! Memory accounting for `INFO memory`: the bytes the allocator really handed out, when the
//! process runs on jemalloc (the `redline-server` and `redline` binaries install
//! [`Allocator`] as their global allocator and say so with [`use_allocator_stats`]), else
//! the keyspace's own estimate (an embedding program with another allocator).
//!
//! ```no_run
//! #[global_allocator]
//! static GLOBAL: redline_server::memory::Allocator = redline_server::memory::Allocator;
//!
//! fn main() {
//!     redline_server::memory::use_allocator_stats();
//!     // ... start the server ...
//! }
//! ```

use std::sync::atomic::{AtomicBool, Ordering};

/// jemalloc, for a binary's `#[global_allocator]`.
pub use tikv_jemallocator::Jemalloc as Allocator;

/// Set once the global allocator is known to be [`Allocator`].
static ALLOCATOR_STATS: AtomicBool = AtomicBool::new(false);

/// Declares that [`Allocator`] is this process's global allocator, so its statistics
/// describe the whole process.
pub fn use_allocator_stats() {
    ALLOCATOR_STATS.store(true, Ordering::Relaxed);
}

/// Bytes allocated and not yet freed (Redis's `used_memory`): jemalloc's `stats.allocated`
/// when it is the global allocator, `None` otherwise.
pub fn allocated_bytes() -> Option<u64> {
    if !ALLOCATOR_STATS.load(Ordering::Relaxed) {
        return None;
    }
    // The statistics are a snapshot refreshed by advancing the epoch.
    tikv_jemalloc_ctl::epoch::advance().ok()?;
    tikv_jemalloc_ctl::stats::allocated::read()
        .ok()
        .map(|bytes| bytes as u64)
}
