//! The replication buffer (Redis 7.0's shared replication buffer): one copy of the
//! stream's recent bytes that serves as the backlog (`repl-backlog-size`, so a replica
//! that lost its link for a moment continues with PSYNC) and as every replica's output:
//! each replica's link reads from its own offset in it, and nothing is copied per
//! replica but what a link is writing.
//!
//! It keeps at least `repl-backlog-size` bytes and, beyond that, whatever a replica has
//! not written yet: a slow replica, or one still receiving its full sync's image, makes
//! it grow (and PSYNC can then go back that far), and it shrinks again once no replica
//! needs the extra. Bytes live in blocks of [`BLOCK`] bytes, dropped whole from the
//! front.
//!
//! What it holds beyond `repl-backlog-size` is counted in a [`Gauge`] that `maxmemory`
//! leaves out, as Redis leaves out replicas' buffers: counted before a block is
//! allocated, uncounted after it is freed. The index of blocks counts too (as Redis
//! counts its blocks' headers): a replica stalled for long makes it grow to thousands
//! of entries, which would otherwise show as used memory and evict keys.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::alloc::Gauge;

/// Bytes per block (Redis's `PROTO_REPLY_CHUNK_BYTES`).
pub const BLOCK: usize = 16 * 1024;

/// Bytes one block takes in the index.
const INDEX_ENTRY: usize = std::mem::size_of::<Vec<u8>>();

/// The index's smallest size, in blocks.
const MIN_INDEX: usize = 4;

/// The stream's bytes from `start` to the master offset.
#[derive(Debug)]
pub struct Backlog {
    blocks: VecDeque<Vec<u8>>,
    /// Bytes held.
    len: usize,
    /// `repl-backlog-size`.
    capacity: usize,
    /// Stream offset of the first byte held (Redis's `repl_backlog->offset`, 1-based in
    /// Redis; here the offset *before* that byte). Always at a block's start.
    start: u64,
    /// What the blocks hold beyond `capacity` (see the module's documentation).
    beyond: Arc<Gauge>,
    /// This buffer's part of `beyond`.
    counted: usize,
}

impl Backlog {
    /// An empty buffer of `capacity` bytes whose next byte is at `offset`.
    pub fn new(capacity: usize, offset: u64, beyond: Arc<Gauge>) -> Backlog {
        Backlog {
            blocks: VecDeque::new(),
            len: 0,
            capacity: capacity.max(1),
            start: offset,
            beyond,
            counted: 0,
        }
    }

    /// Appends `data`.
    pub fn push(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.blocks.back().is_none_or(|b| b.len() == BLOCK) {
                if self.blocks.len() == self.blocks.capacity() {
                    // The index doubles, counted before its allocation.
                    let index = (self.blocks.capacity() * 2).max(MIN_INDEX);
                    self.count(self.blocks.len() * BLOCK + index * INDEX_ENTRY);
                    self.blocks.reserve_exact(index - self.blocks.len());
                }
                // Counted before the allocation.
                self.count(self.allocated() + BLOCK);
                self.blocks.push_back(Vec::with_capacity(BLOCK));
            }
            let Some(block) = self.blocks.back_mut() else {
                return;
            };
            let n = (BLOCK - block.len()).min(data.len());
            block.extend_from_slice(&data[..n]);
            self.len += n;
            data = &data[n..];
        }
    }

    /// Drops whole blocks from the front while more than `repl-backlog-size` stays and
    /// no replica still needs them (`needed`: the lowest offset a replica has not
    /// written yet, if any replica is attached).
    pub fn trim(&mut self, needed: Option<u64>) {
        while self.blocks.len() > 1 {
            let front = self.blocks.front().map_or(0, Vec::len);
            let needed_here = needed.is_some_and(|n| n < self.start + front as u64);
            if self.len - front < self.capacity || needed_here {
                break;
            }
            // Freed, then uncounted.
            drop(self.blocks.pop_front());
            self.len -= front;
            self.start += front as u64;
            let index = self.blocks.capacity();
            if index > MIN_INDEX && self.blocks.len() <= index / 4 {
                self.blocks.shrink_to((index / 2).max(MIN_INDEX));
            }
            self.count(self.allocated());
        }
    }

    /// Sets `repl-backlog-size`; the next trim applies it.
    pub fn resize(&mut self, capacity: usize) {
        self.capacity = capacity.max(1);
        // What counts as beyond the backlog changed with it.
        self.count(self.allocated());
    }

    /// Stream offset of the first byte held.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Bytes held (INFO `repl_backlog_histlen`).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `repl-backlog-size`.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The blocks' allocation and their index's (INFO `mem_total_replication_buffers`).
    pub fn allocated(&self) -> usize {
        self.blocks.len() * BLOCK + self.blocks.capacity() * INDEX_ENTRY
    }

    /// Whether offset `from` (a replica that has processed `from` bytes) is held, or is
    /// the end.
    pub fn holds(&self, from: u64) -> bool {
        from >= self.start && from <= self.start + self.len as u64
    }

    /// Up to `max` bytes from offset `from` on, copied; empty at the end, `None` when
    /// `from` is no longer held.
    pub fn read(&self, from: u64, max: usize) -> Option<Vec<u8>> {
        if !self.holds(from) {
            return None;
        }
        let mut at = usize::try_from(from - self.start).ok()?;
        let end = self.len.min(at.saturating_add(max));
        let mut out = Vec::with_capacity(end - at);
        while at < end {
            let block = self.blocks.get(at / BLOCK)?;
            let within = at % BLOCK;
            let n = (block.len() - within).min(end - at);
            out.extend_from_slice(&block[within..within + n]);
            at += n;
        }
        Some(out)
    }

    /// Records `allocated` bytes of blocks and index in the gauge: the part beyond what
    /// `repl-backlog-size` alone takes (its bytes and an index for them).
    fn count(&mut self, allocated: usize) {
        let own_blocks = self.capacity.div_ceil(BLOCK) + 1;
        let own = self.capacity + own_blocks.next_power_of_two().max(MIN_INDEX) * INDEX_ENTRY;
        let beyond = allocated.saturating_sub(own);
        self.beyond.change(self.counted, beyond);
        self.counted = beyond;
    }
}

impl Drop for Backlog {
    fn drop(&mut self) {
        // Freed, then uncounted.
        self.blocks = VecDeque::new();
        self.count(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Backlog {
        fn read_all(&self, from: u64) -> Option<Vec<u8>> {
            self.read(from, usize::MAX)
        }
    }

    fn backlog(capacity: usize, offset: u64) -> (Backlog, Arc<Gauge>) {
        let gauge = Arc::new(Gauge::new());
        (Backlog::new(capacity, offset, gauge.clone()), gauge)
    }

    #[test]
    fn keeps_the_backlog_size_and_answers_partial_requests() {
        let (mut b, _) = backlog(8, 100);
        b.push(b"abcdef");
        assert_eq!(b.read_all(100).as_deref(), Some(&b"abcdef"[..]));
        assert_eq!(b.read_all(104).as_deref(), Some(&b"ef"[..]));
        assert_eq!(b.read_all(106).as_deref(), Some(&b""[..]));
        assert_eq!(b.read_all(107), None);
        assert_eq!(b.read_all(99), None);
        assert_eq!(b.read(101, 2).as_deref(), Some(&b"bc"[..]));
        // Three blocks and a bit; a backlog of 8 bytes keeps the last block only.
        let big: Vec<u8> = (0..3 * BLOCK + 10).map(|i| (i % 251) as u8).collect();
        b.push(&big);
        b.trim(None);
        assert_eq!(b.start(), 100 + 3 * BLOCK as u64);
        assert_eq!(b.len(), 16);
        assert_eq!(
            b.read_all(b.start()).as_deref(),
            Some(&big[big.len() - 16..])
        );
    }

    #[test]
    fn grows_while_a_replica_needs_it_and_counts_what_is_beyond() {
        let (mut b, gauge) = backlog(BLOCK, 0);
        let data = vec![7u8; 10 * BLOCK];
        b.push(&data);
        // A replica still at offset 0: nothing goes.
        b.trim(Some(0));
        assert_eq!(b.len(), 10 * BLOCK);
        // The index grew from 4 blocks (what the backlog alone takes) to 16.
        assert_eq!(gauge.bytes(), 9 * BLOCK + 12 * INDEX_ENTRY);
        // It wrote five blocks: those go, more than the backlog size stays for it.
        b.trim(Some(5 * BLOCK as u64));
        assert_eq!(b.start(), 5 * BLOCK as u64);
        assert_eq!(gauge.bytes(), 4 * BLOCK + 12 * INDEX_ENTRY);
        assert_eq!(
            b.read(5 * BLOCK as u64 + 1, 3).as_deref(),
            Some(&[7u8; 3][..])
        );
        // No replica: back to the backlog size, nothing counted beyond it (the index
        // shrank with the blocks).
        b.trim(None);
        assert_eq!(b.len(), BLOCK);
        assert_eq!(gauge.bytes(), 0);
        assert_eq!(b.allocated(), BLOCK + MIN_INDEX * INDEX_ENTRY);
        b.resize(1);
        assert_eq!(gauge.bytes(), BLOCK - 1);
        drop(b);
        assert_eq!(gauge.bytes(), 0);
    }
}
