//! What happened to keys while a command (or the active expiry cycle) ran, for the two
//! consumers that live above the store: keyspace notifications (`crate::notify`) and
//! client-side caching (`crate::tracking`).
//!
//! Shards report the events only they see (a key expired lazily or actively, a key
//! created), commands report theirs through `crate::notify::keyspace_event`; all land in
//! one queue in the order they happened (each is pushed under the lock of the shard it
//! concerns), and whoever finishes a command or an expiry cycle publishes the queue.
//! With notifications off and nobody tracking, recording costs one relaxed load.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;

/// One event on one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEvent {
    /// Database of the key.
    pub db: usize,
    /// The key.
    pub key: Bytes,
    /// Notification class bit (`crate::notify::NotifyClass`), 0 when none applies.
    pub class: u32,
    /// Event name (`expired`, `set`, ...).
    pub event: &'static str,
    /// The key's value changed or went away: tracking clients must drop it.
    pub modified: bool,
}

/// Notification class bit of `expired` events (Redis's `NOTIFY_EXPIRED`).
pub const CLASS_EXPIRED: u32 = 1 << 8;
/// Notification class bit of `evicted` events (Redis's `NOTIFY_EVICTED`).
pub const CLASS_EVICTED: u32 = 1 << 9;
/// Notification class bit of `keymiss` events (Redis's `NOTIFY_KEY_MISS`).
pub const CLASS_KEY_MISS: u32 = 1 << 11;
/// Notification class bit of `new` events (Redis's `NOTIFY_NEW`).
pub const CLASS_NEW: u32 = 1 << 14;

/// Where keys that expire are reported for replication: the DEL a replica must apply,
/// appended while the key's shard is still locked.
pub trait DeletionFeed: Send + Sync + std::fmt::Debug {
    /// `key` of database `db` expired and was removed.
    fn expired(&self, db: usize, key: &[u8]);
}

/// The event queue and the switches that decide what is recorded.
#[derive(Debug, Default)]
pub struct KeyEvents {
    /// The replication stream, once the server has one.
    deletions: std::sync::OnceLock<std::sync::Arc<dyn DeletionFeed>>,
    /// `maxmemory` and the access data every key keeps for it.
    pub eviction: super::evict::Eviction,
    /// The keys clients may be blocked on: only those are signalled ready (see
    /// [`super::ready`]).
    pub waited: std::sync::Arc<super::ready::WaitedKeys>,
    /// This server replicates a master: keys expire when the master says so (its DEL),
    /// never locally (see [`super::Shard`]).
    replica: AtomicBool,
    /// Until when (unix ms) expired keys stay in place (CLIENT PAUSE): read as missing,
    /// deleted only once the pause ends, as Redis's `expireIfNeeded` does while paused.
    expiry_held_until: std::sync::atomic::AtomicU64,
    /// `notify-keyspace-events`, as Redis's flag bits.
    notify: AtomicU32,
    /// Some client tracks keys: expirations and evictions must be reported.
    tracking: AtomicBool,
    queue: Mutex<Vec<KeyEvent>>,
    /// The queue holds something (checked without the lock after every command).
    pending: AtomicBool,
    /// Serialises publishers so batches go out in the order they were queued.
    publishing: Mutex<()>,
}

impl KeyEvents {
    /// The `notify-keyspace-events` flags.
    #[inline]
    pub fn notify_flags(&self) -> u32 {
        self.notify.load(Ordering::Relaxed)
    }

    /// Sets the `notify-keyspace-events` flags.
    pub fn set_notify_flags(&self, flags: u32) {
        self.notify.store(flags, Ordering::Relaxed);
    }

    /// Whether some client tracks keys.
    #[inline]
    pub fn tracking(&self) -> bool {
        self.tracking.load(Ordering::Relaxed)
    }

    /// Records whether some client tracks keys.
    pub fn set_tracking(&self, on: bool) {
        self.tracking.store(on, Ordering::Relaxed);
    }

    /// Whether an event of `class` would be published (the class is enabled and so is
    /// at least one of the keyspace / keyevent channels).
    #[inline]
    pub fn wants(&self, class: u32) -> bool {
        let flags = self.notify_flags();
        flags & class != 0 && flags & 0b11 != 0
    }

    /// Queues `event`.
    pub fn push(&self, event: KeyEvent) {
        self.queue.lock().push(event);
        self.pending.store(true, Ordering::Release);
    }

    /// Whether keys expire only by the master's DEL (this server is a replica).
    #[inline]
    pub fn replica(&self) -> bool {
        self.replica.load(Ordering::Relaxed)
    }

    /// Holds deletions of expired keys until `until_ms` (0 releases them).
    pub fn hold_expiry_until(&self, until_ms: u64) {
        self.expiry_held_until.store(until_ms, Ordering::Relaxed);
    }

    /// Whether expired keys must stay in place now.
    #[inline]
    pub fn expiry_held(&self, now_ms: u64) -> bool {
        now_ms < self.expiry_held_until.load(Ordering::Relaxed)
    }

    /// Switches master-driven expiry on (REPLICAOF host port) or off (NO ONE).
    pub fn set_replica(&self, on: bool) {
        self.replica.store(on, Ordering::Relaxed);
    }

    /// Sets where expired keys are reported for replication (once, at start).
    pub fn set_deletion_feed(&self, feed: std::sync::Arc<dyn DeletionFeed>) {
        let _ = self.deletions.set(feed);
    }

    /// A key was removed because it expired (lazily or by the active cycle).
    #[inline]
    pub fn expired(&self, db: usize, key: &[u8]) {
        if let Some(feed) = self.deletions.get() {
            feed.expired(db, key);
        }
        let notify = self.wants(CLASS_EXPIRED);
        let tracking = self.tracking();
        if notify || tracking {
            self.push(KeyEvent {
                db,
                key: Bytes::copy_from_slice(key),
                class: if notify { CLASS_EXPIRED } else { 0 },
                event: "expired",
                modified: tracking,
            });
        }
    }

    /// A key was evicted (maxmemory): replicas and the AOF get its DEL, notifications
    /// an `evicted` event, tracking clients an invalidation.
    pub fn evicted(&self, db: usize, key: &[u8]) {
        if let Some(feed) = self.deletions.get() {
            feed.expired(db, key);
        }
        let notify = self.wants(CLASS_EVICTED);
        let tracking = self.tracking();
        if notify || tracking {
            self.push(KeyEvent {
                db,
                key: Bytes::copy_from_slice(key),
                class: if notify { CLASS_EVICTED } else { 0 },
                event: "evicted",
                modified: tracking,
            });
        }
    }

    /// A read looked `key` up and did not find it.
    #[inline]
    pub fn missed(&self, db: usize, key: &[u8]) {
        self.notify_only(db, key, CLASS_KEY_MISS, "keymiss");
    }

    /// A key was created.
    #[inline]
    pub fn created(&self, db: usize, key: &[u8]) {
        self.notify_only(db, key, CLASS_NEW, "new");
    }

    /// An event only notifications want (the value did not change: tracking ignores
    /// it), queued if `notify-keyspace-events` has its class.
    #[inline]
    fn notify_only(&self, db: usize, key: &[u8], class: u32, event: &'static str) {
        if self.wants(class) {
            self.push(KeyEvent {
                db,
                key: Bytes::copy_from_slice(key),
                class,
                event,
                modified: false,
            });
        }
    }

    /// Whether events wait to be published.
    #[inline]
    pub fn pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Takes every queued event and hands them, in order, to `publish`; concurrent
    /// callers publish one after the other, never interleaved.
    pub fn drain(&self, publish: impl FnOnce(Vec<KeyEvent>)) {
        let _turn = self.publishing.lock();
        let events = {
            let mut queue = self.queue.lock();
            self.pending.store(false, Ordering::Release);
            std::mem::take(&mut *queue)
        };
        if !events.is_empty() {
            publish(events);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_recorded_when_off() {
        let events = KeyEvents::default();
        events.expired(0, b"k");
        events.created(0, b"k");
        assert!(!events.pending());
        events.set_notify_flags(CLASS_EXPIRED | 0b10);
        events.expired(3, b"k");
        events.created(3, b"k");
        assert!(events.pending());
        let mut seen = Vec::new();
        events.drain(|batch| seen = batch);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].event, "expired");
        assert_eq!(seen[0].db, 3);
        assert!(!events.pending());
    }
}
