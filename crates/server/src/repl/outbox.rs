//! One replica's place in the replication buffer ([`super::backlog`]): the offset its
//! link has written up to, the wake-up for new bytes, and the output limit.
//!
//! The stream is not copied per replica: the link copies a piece of the shared buffer
//! from its offset when it writes ([`Chunk`], at most [`CHUNK`] bytes), and the buffer
//! keeps every byte some replica has not written yet. A replica that stops reading
//! makes the buffer grow, as a Redis replica's output does, until the `replica` class of
//! `client-output-buffer-limit`, measured from its offset to the end of the stream,
//! closes the link.
//!
//! The piece being written is counted in the same [`Gauge`] as the buffer beyond the
//! backlog: INFO reports both, and `maxmemory` leaves them out
//! (`mem_not_counted_for_evict`), as Redis does, so a slow replica makes the master
//! neither evict keys nor refuse writes.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::alloc::Gauge;
use crate::config::OutputBufferLimit;

/// The most a link copies out of the buffer for one write.
pub const CHUNK: usize = 256 * 1024;

/// One replica's pending stream.
#[derive(Debug)]
pub struct Outbox {
    /// Stream offset up to which the link has written (the next byte it sends).
    sent: AtomicU64,
    /// Stream offset up to which the link has made its first write (see
    /// [`Outbox::handed`]).
    tried: AtomicU64,
    /// The link is behind: its last first write did not take its whole chunk (the
    /// replica's socket is full), or that chunk did not reach the end of the stream (a
    /// catch-up after a sync, or writers faster than the replica). Until that chunk is
    /// out, nobody waits for the link, as Redis's replies do not wait for a replica's
    /// output buffer.
    stuck: AtomicBool,
    ready: Notify,
    /// Told once the replica overflows.
    overflow: Notify,
    /// Past its output limit: the link closes.
    overflowed: AtomicBool,
    /// Since when it is over the soft limit.
    soft_since: Mutex<Option<std::time::Instant>>,
    /// The allocation of the chunk the link is writing.
    writing: AtomicUsize,
    total: Arc<Gauge>,
}

impl Outbox {
    /// A replica whose stream starts at offset `from`, its writes counted in `total`.
    pub fn new(total: Arc<Gauge>, from: u64) -> Outbox {
        Outbox {
            sent: AtomicU64::new(from),
            tried: AtomicU64::new(from),
            stuck: AtomicBool::new(false),
            ready: Notify::new(),
            overflow: Notify::new(),
            overflowed: AtomicBool::new(false),
            soft_since: Mutex::new(None),
            writing: AtomicUsize::new(0),
            total,
        }
    }

    /// The offset of the next byte the link sends.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Acquire)
    }

    /// Whether the replica is still within `limit` with the stream grown to `head`; once
    /// it is not, it is told to close (and this stays false).
    pub fn fits(&self, head: u64, limit: &OutputBufferLimit) -> bool {
        if self.overflowed.load(Ordering::Relaxed) {
            return false;
        }
        let behind = head.saturating_sub(self.sent());
        if limit.exceeded(behind, &mut self.soft_since.lock()) {
            self.overflowed.store(true, Ordering::Relaxed);
            self.overflow.notify_one();
            return false;
        }
        true
    }

    /// The link made its first write of a chunk that ends at stream offset `end`;
    /// `caught_up` when the socket took all of it and it reached the stream's end.
    pub fn tried(&self, end: u64, caught_up: bool) {
        self.stuck.store(!caught_up, Ordering::Release);
        self.tried.fetch_max(end, Ordering::AcqRel);
    }

    /// Whether the link is behind (see [`Outbox::handed`]).
    pub fn is_stuck(&self) -> bool {
        self.stuck.load(Ordering::Acquire)
    }

    /// The chunk the link was writing is out; whether the link had been behind.
    pub fn unstuck(&self) -> bool {
        self.stuck.swap(false, Ordering::AcqRel)
    }

    /// The stream offset up to which changes have been handed to the replica's socket
    /// (written, or at least tried); everything while the link is behind. A reply
    /// acknowledging a change up to there may go out, as Redis writes its replicas'
    /// output before its clients' in one event-loop turn (and buffers what a full
    /// socket does not take).
    pub fn handed(&self) -> u64 {
        if self.stuck.load(Ordering::Acquire) {
            u64::MAX
        } else {
            self.tried.load(Ordering::Acquire)
        }
    }

    /// Makes the next [`Outbox::ready`] return at once (more to write).
    pub fn wake(&self) {
        self.ready.notify_one();
    }

    /// Waits until the stream may have grown past what was written.
    pub async fn ready(&self) {
        self.ready.notified().await;
    }

    /// Resolves once the replica went past its output limit: its link must close, even
    /// while a write to it is stuck.
    pub async fn overflowed(&self) {
        while !self.overflowed.load(Ordering::Relaxed) {
            self.overflow.notified().await;
        }
    }

    /// Bytes this replica's link holds to write.
    pub fn writing(&self) -> usize {
        self.writing.load(Ordering::Relaxed)
    }

    /// A chunk of `len` bytes filled by `fill` (a copy out of the buffer), counted from
    /// before it is allocated until it is freed.
    pub fn chunk(&self, len: usize, fill: impl FnOnce() -> Option<Vec<u8>>) -> Option<Chunk<'_>> {
        self.count(len);
        let bytes = fill();
        let chunk = Chunk {
            bytes: bytes.unwrap_or_default(),
            outbox: self,
        };
        // Trued to the copy (never more than `len`); an empty chunk uncounts at once.
        self.count(chunk.bytes.capacity());
        (!chunk.bytes.is_empty()).then_some(chunk)
    }

    fn count(&self, bytes: usize) {
        let before = self.writing.swap(bytes, Ordering::Relaxed);
        self.total.change(before, bytes);
    }
}

/// What the link copied from the buffer to write, counted until it is dropped; once
/// written, [`Chunk::written`] moves the replica's offset past it.
#[derive(Debug)]
pub struct Chunk<'a> {
    bytes: Vec<u8>,
    outbox: &'a Outbox,
}

impl Chunk<'_> {
    /// The chunk reached the replica's connection: its offset moves past it.
    pub fn written(self) {
        let len = self.bytes.len();
        self.written_part(len);
    }

    /// The chunk's first `n` bytes reached the replica's connection: its offset moves
    /// past them, and the rest is copied again for the next write.
    pub fn written_part(self, n: usize) {
        self.outbox.sent.fetch_add(n as u64, Ordering::AcqRel);
    }
}

impl std::ops::Deref for Chunk<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Chunk<'_> {
    fn drop(&mut self) {
        // Freed, then uncounted.
        drop(std::mem::take(&mut self.bytes));
        self.outbox.count(0);
    }
}
