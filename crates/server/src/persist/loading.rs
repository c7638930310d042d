//! The dataset load as INFO persistence shows it: whether the load at start is under
//! way (clients then get `-LOADING`, as Redis answers while it loads), how far it got,
//! and what the last load stored and skipped (`rdb_last_load_keys_*`, counted by every
//! image load: at start, DEBUG RELOAD, a replica's full sync, an AOF's RDB base).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

/// The error commands get while the dataset loads.
pub const LOADING_ERROR: &str = "LOADING Redis is loading the dataset in memory";

/// Load progress and counters, all atomics: read by INFO while a loader thread writes.
/// Aligned to its own cache lines: every command reads the flag, and neighbours in
/// [`super::snapshot::Persistence`] (the dirty counter) are written on every batch.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Loading {
    /// [`IDLE`], [`BLOCKING`] or [`ASYNC`].
    state: AtomicU8,
    started: AtomicU64,
    total_bytes: AtomicU64,
    loaded_bytes: AtomicU64,
    keys_loaded: AtomicU64,
    keys_expired: AtomicU64,
}

/// No load under way.
pub const IDLE: u8 = 0;
/// A load that clients wait for (they get `-LOADING`): at start, DEBUG LOADAOF, a
/// replica's disk-less load of an image from another history.
pub const BLOCKING: u8 = 1;
/// A replica's disk-less load of a newer image of the same history (Redis's
/// `async_loading`): the old dataset is served until the new one is swapped in; only
/// commands flagged `no-async-loading` get `-LOADING`.
pub const ASYNC: u8 = 2;

impl Loading {
    /// [`IDLE`], [`BLOCKING`] or [`ASYNC`] (one relaxed load: checked per command).
    #[inline]
    pub fn state(&self) -> u8 {
        self.state.load(Relaxed)
    }

    /// Whether a load clients wait for is under way (INFO `loading`).
    #[inline]
    pub fn is_active(&self) -> bool {
        self.state() == BLOCKING
    }

    /// Whether an asynchronous load is under way (INFO `async_loading`).
    pub fn is_async(&self) -> bool {
        self.state() == ASYNC
    }

    /// A load begins (again, once the size is known): `total_bytes` to read (0 when
    /// not known), from now.
    pub fn begin(&self, total_bytes: u64) {
        self.begin_as(BLOCKING, total_bytes);
    }

    /// [`Loading::begin`] of an asynchronous load.
    pub fn begin_async(&self, total_bytes: u64) {
        self.begin_as(ASYNC, total_bytes);
    }

    fn begin_as(&self, state: u8, total_bytes: u64) {
        self.started.store(super::snapshot::unix_secs(), Relaxed);
        self.total_bytes.store(total_bytes, Relaxed);
        self.loaded_bytes.store(0, Relaxed);
        self.state.store(state, Relaxed);
    }

    /// The load is over, however it ended.
    pub fn end(&self) {
        self.state.store(IDLE, Relaxed);
    }

    /// Bytes of the image read so far.
    pub fn set_loaded_bytes(&self, bytes: u64) {
        self.loaded_bytes.store(bytes, Relaxed);
    }

    /// Bytes of the image read so far: where the item being read starts.
    pub fn loaded_bytes(&self) -> u64 {
        self.loaded_bytes.load(Relaxed)
    }

    /// Bytes the load at start reads in all.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes.load(Relaxed)
    }

    /// An image load starts: the key counters start again from zero.
    pub fn reset_keys(&self) {
        self.keys_loaded.store(0, Relaxed);
        self.keys_expired.store(0, Relaxed);
    }

    /// One key stored.
    pub fn key_loaded(&self) {
        self.keys_loaded.fetch_add(1, Relaxed);
    }

    /// One key skipped: it had expired.
    pub fn key_expired(&self) {
        self.keys_expired.fetch_add(1, Relaxed);
    }

    /// Keys the last load stored (`rdb_last_load_keys_loaded`).
    pub fn keys_loaded(&self) -> u64 {
        self.keys_loaded.load(Relaxed)
    }

    /// Keys the last load skipped as expired (`rdb_last_load_keys_expired`).
    pub fn keys_expired(&self) -> u64 {
        self.keys_expired.load(Relaxed)
    }

    /// Redis's `loading_*` INFO fields, present only while a load runs.
    pub fn write_progress(&self, text: &mut String) {
        if self.state() == IDLE {
            return;
        }
        let started = self.started.load(Relaxed);
        let total = self.total_bytes.load(Relaxed);
        // A replica's disk-less image may come without its size (0 here).
        let loaded = self.loaded_bytes.load(Relaxed);
        let loaded = if total == 0 {
            loaded
        } else {
            loaded.min(total)
        };
        let perc = if total == 0 {
            0.0
        } else {
            loaded as f64 * 100.0 / total as f64
        };
        let elapsed = super::snapshot::unix_secs().saturating_sub(started);
        // Redis's estimate: the time so far scaled to the bytes left (1 s at first).
        let eta = if elapsed == 0 {
            1
        } else {
            elapsed.saturating_mul(total.saturating_sub(loaded)) / (loaded + 1)
        };
        let _ = write!(
            text,
            "loading_start_time:{started}\r\nloading_total_bytes:{total}\r\nloading_rdb_used_mem:0\r\nloading_loaded_bytes:{loaded}\r\nloading_loaded_perc:{perc:.2}\r\nloading_eta_seconds:{eta}\r\n"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_shows_only_while_loading() {
        let loading = Loading::default();
        let mut text = String::new();
        loading.write_progress(&mut text);
        assert!(text.is_empty());
        loading.begin(1000);
        loading.set_loaded_bytes(250);
        loading.write_progress(&mut text);
        assert!(text.contains("loading_total_bytes:1000\r\n"), "{text}");
        assert!(text.contains("loading_loaded_bytes:250\r\n"), "{text}");
        assert!(text.contains("loading_loaded_perc:25.00\r\n"), "{text}");
        loading.end();
        assert!(!loading.is_active());
    }

    #[test]
    fn key_counters_restart_with_each_load() {
        let loading = Loading::default();
        loading.key_loaded();
        loading.key_loaded();
        loading.key_expired();
        assert_eq!((loading.keys_loaded(), loading.keys_expired()), (2, 1));
        loading.reset_keys();
        assert_eq!((loading.keys_loaded(), loading.keys_expired()), (0, 0));
    }
}
