//! The replication backlog (`repl-backlog-size`): the last bytes of the command stream,
//! so a replica that lost its link for a moment continues with PSYNC instead of a full
//! sync.

use std::collections::VecDeque;

/// A bounded window of the stream ending at the master offset.
#[derive(Debug)]
pub struct Backlog {
    bytes: VecDeque<u8>,
    capacity: usize,
    /// Stream offset of the first byte held (Redis's `repl_backlog->offset`, 1-based in
    /// Redis; here the offset *before* that byte).
    start: u64,
}

impl Backlog {
    /// An empty backlog of `capacity` bytes whose next byte is at `offset`.
    pub fn new(capacity: usize, offset: u64) -> Backlog {
        Backlog {
            bytes: VecDeque::new(),
            capacity: capacity.max(1),
            start: offset,
        }
    }

    /// Appends stream bytes, dropping the oldest beyond the capacity.
    pub fn push(&mut self, data: &[u8]) {
        // Only what will stay goes in: a change larger than the backlog (a 32 MB value)
        // must not grow it to that size, which a VecDeque would keep allocated.
        let kept = &data[data.len().saturating_sub(self.capacity)..];
        self.start += (data.len() - kept.len()) as u64;
        self.bytes.extend(kept);
        let excess = self.bytes.len().saturating_sub(self.capacity);
        if excess > 0 {
            self.bytes.drain(..excess);
            self.start += excess as u64;
        }
        // After a resize down, the allocation follows.
        if self.bytes.capacity() > 2 * self.capacity.max(4096) {
            self.bytes.shrink_to(self.capacity);
        }
    }

    /// Changes the capacity (CONFIG SET repl-backlog-size), keeping the newest bytes.
    pub fn resize(&mut self, capacity: usize) {
        self.capacity = capacity.max(1);
        self.push(&[]);
    }

    /// Offset of the first byte held.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Everything after stream offset `from` (a replica that has processed `from`
    /// bytes), or `None` when that part is no longer held.
    pub fn since(&self, from: u64) -> Option<Vec<u8>> {
        let end = self.start + self.bytes.len() as u64;
        if from < self.start || from > end {
            return None;
        }
        let skip = usize::try_from(from - self.start).ok()?;
        Some(self.bytes.iter().skip(skip).copied().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_bytes_and_answers_partial_requests() {
        let mut b = Backlog::new(8, 100);
        b.push(b"abcdef");
        assert_eq!(b.since(100).as_deref(), Some(&b"abcdef"[..]));
        assert_eq!(b.since(104).as_deref(), Some(&b"ef"[..]));
        assert_eq!(b.since(106).as_deref(), Some(&b""[..]));
        assert_eq!(b.since(107), None);
        b.push(b"ghijk");
        assert_eq!(b.start(), 103);
        assert_eq!(b.since(102), None);
        assert_eq!(b.since(103).as_deref(), Some(&b"defghijk"[..]));
        b.resize(3);
        assert_eq!(b.since(108).as_deref(), Some(&b"ijk"[..]));
    }

    #[test]
    fn a_change_larger_than_the_backlog_keeps_its_tail_and_no_more_memory() {
        let mut b = Backlog::new(10_000, 0);
        b.push(b"abc");
        let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        b.push(&big);
        assert_eq!(b.start(), 1_000_003 - 10_000);
        assert_eq!(b.len(), 10_000);
        assert_eq!(
            b.since(b.start()).as_deref(),
            Some(&big[big.len() - 10_000..])
        );
        assert_eq!(b.since(b.start() - 1), None);
        b.push(b"de");
        assert_eq!(b.start(), 1_000_005 - 10_000);
        assert_eq!(b.since(1_000_003).as_deref(), Some(&b"de"[..]));
        assert!(b.bytes.capacity() < 100_000, "{}", b.bytes.capacity());
        // Shrunk with the backlog.
        let mut b = Backlog::new(1 << 20, 0);
        b.push(&vec![1; 1 << 20]);
        b.resize(8192);
        b.push(b"x");
        assert!(b.bytes.capacity() < 1 << 16, "{}", b.bytes.capacity());
    }
}
