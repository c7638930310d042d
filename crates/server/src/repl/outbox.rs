//! The stream bytes waiting to go to one replica.
//!
//! The journal appends each change to every replica's outbox (under the stream lock, so
//! in stream order) and the replica's link task takes the whole outbox at once and
//! writes it. A replica that stops reading does not stop the master: its outbox grows,
//! as a Redis replica's output buffer does, until the `replica` class of
//! `client-output-buffer-limit` closes the link.
//!
//! What the outboxes hold is counted apart ([`Gauge`]): INFO reports it as
//! `mem_clients_slaves`, and `maxmemory` leaves it out (`mem_not_counted_for_evict`), as
//! Redis does, so a slow replica makes the master neither evict keys nor refuse writes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::alloc::Gauge;
use crate::config::OutputBufferLimit;

/// The bytes waiting, and since when they are over the soft limit.
#[derive(Debug, Default)]
struct Pending {
    bytes: BytesMut,
    soft_since: Option<std::time::Instant>,
}

/// One replica's pending stream.
#[derive(Debug)]
pub struct Outbox {
    pending: Mutex<Pending>,
    ready: Notify,
    /// Told once the replica overflows.
    overflow: Notify,
    /// The allocation of `pending`.
    pending_bytes: AtomicUsize,
    /// The allocation of the chunk the link is writing.
    writing_bytes: AtomicUsize,
    /// Past its output limit: the link closes.
    overflowed: AtomicBool,
    total: Arc<Gauge>,
}

impl Outbox {
    /// An empty outbox counted in `total`.
    pub fn new(total: Arc<Gauge>) -> Outbox {
        Outbox {
            pending: Mutex::new(Pending::default()),
            ready: Notify::new(),
            overflow: Notify::new(),
            pending_bytes: AtomicUsize::new(0),
            writing_bytes: AtomicUsize::new(0),
            overflowed: AtomicBool::new(false),
            total,
        }
    }

    /// Appends `bytes`, unless the replica is past `limit` (then the outbox is emptied
    /// and the link told to close, as Redis closes a client over its limit). Returns
    /// false once the replica has overflowed.
    pub fn push(&self, bytes: &[u8], limit: &OutputBufferLimit) -> bool {
        if self.overflowed.load(Ordering::Relaxed) {
            return false;
        }
        let mut guard = self.pending.lock();
        let Pending {
            bytes: pending,
            soft_since,
        } = &mut *guard;
        let spare = pending.capacity() - pending.len();
        if spare < bytes.len() {
            // Counted before it is allocated, old and new buffer both while the bytes
            // move: another thread checking `maxmemory` meanwhile must never see the
            // allocator's figure grow by more than this one.
            let before = pending.capacity();
            let len = pending.len();
            let wanted = (len + bytes.len()).max(before * 2);
            self.count(&self.pending_bytes, before + wanted);
            pending.reserve(wanted - len);
        }
        pending.extend_from_slice(bytes);
        let over = limit.exceeded(pending.len() as u64, soft_since);
        if over {
            *pending = BytesMut::new();
            self.overflowed.store(true, Ordering::Relaxed);
            self.overflow.notify_one();
        }
        self.count(&self.pending_bytes, pending.capacity());
        drop(guard);
        self.ready.notify_one();
        !over
    }

    /// Frees what waits here (the replica is being killed, detached from the stream,
    /// and will not take it), then uncounts it.
    pub fn discard(&self) {
        let bytes = std::mem::take(&mut self.pending.lock().bytes);
        drop(bytes);
        self.count(&self.pending_bytes, 0);
    }

    /// Waits until there is something to write, then takes all of it.
    pub async fn take(&self) -> Chunk<'_> {
        loop {
            if let Some(chunk) = self.try_take() {
                return chunk;
            }
            self.ready.notified().await;
        }
    }

    /// Resolves once the replica went past its output limit: its link must close, even
    /// while a write to it is stuck.
    pub async fn overflowed(&self) {
        while !self.overflowed.load(Ordering::Relaxed) {
            self.overflow.notified().await;
        }
    }

    /// Takes what is pending, if anything; it counts as being written until the chunk
    /// is dropped.
    pub fn try_take(&self) -> Option<Chunk<'_>> {
        let mut pending = self.pending.lock();
        if pending.bytes.is_empty() {
            return None;
        }
        // Counted as being written before it stops counting as pending (the other
        // order would hide it for a moment).
        self.count(&self.writing_bytes, pending.bytes.capacity());
        let bytes = std::mem::take(&mut pending.bytes);
        self.count(&self.pending_bytes, 0);
        Some(Chunk {
            bytes,
            outbox: self,
        })
    }

    fn count(&self, figure: &AtomicUsize, bytes: usize) {
        let before = figure.swap(bytes, Ordering::Relaxed);
        self.total.change(before, bytes);
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        // Freed, then uncounted: giving back tens of megabytes takes milliseconds, and
        // a `maxmemory` check meanwhile must not see them as used (it would evict).
        drop(std::mem::take(&mut self.pending.get_mut().bytes));
        self.count(&self.pending_bytes, 0);
    }
}

/// What the link took from its outbox to write, counted until it is dropped (written,
/// or the link gone).
#[derive(Debug)]
pub struct Chunk<'a> {
    bytes: BytesMut,
    outbox: &'a Outbox,
}

impl std::ops::Deref for Chunk<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Chunk<'_> {
    fn drop(&mut self) {
        // Freed, then uncounted (see `Outbox`'s drop).
        drop(std::mem::take(&mut self.bytes));
        self.outbox.count(&self.outbox.writing_bytes, 0);
    }
}
