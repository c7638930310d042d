//! The slow log (Redis's `slowlog.c`): commands that ran for at least
//! `slowlog-log-slower-than` microseconds, newest first, at most `slowlog-max-len` of
//! them, with their arguments trimmed (32 arguments, 128 bytes each) and secrets
//! redacted. Checking a command costs one relaxed load while nothing is slow enough.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;

/// Arguments kept per entry (the last one says how many more there were).
const MAX_ARGS: usize = 32;
/// Bytes kept per argument.
const MAX_ARG_BYTES: usize = 128;

/// One logged command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Unique, increasing id.
    pub id: u64,
    /// Unix time it was logged, in seconds.
    pub time: u64,
    /// How long it ran, in microseconds.
    pub duration: u64,
    /// Its arguments, trimmed and redacted.
    pub args: Vec<Bytes>,
    /// The client's `ip:port`.
    pub peer: String,
    /// The client's name (empty when unnamed).
    pub name: Bytes,
}

/// The server's slow log.
#[derive(Debug)]
pub struct SlowLog {
    /// `slowlog-log-slower-than` (microseconds; negative disables).
    threshold: AtomicI64,
    max_len: AtomicUsize,
    next_id: AtomicU64,
    entries: Mutex<VecDeque<Entry>>,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            threshold: AtomicI64::new(10_000),
            max_len: AtomicUsize::new(128),
            next_id: AtomicU64::new(0),
            entries: Mutex::new(VecDeque::new()),
        }
    }
}

impl SlowLog {
    /// Applies `slowlog-log-slower-than` and `slowlog-max-len`.
    pub fn configure(&self, threshold: i64, max_len: usize) {
        self.threshold.store(threshold, Ordering::Relaxed);
        self.max_len.store(max_len, Ordering::Relaxed);
        let mut entries = self.entries.lock();
        entries.truncate(max_len);
    }

    /// Whether a command that ran `usec` microseconds is logged.
    #[inline]
    pub fn wants(&self, usec: u64) -> bool {
        let threshold = self.threshold.load(Ordering::Relaxed);
        threshold >= 0 && usec >= threshold as u64
    }

    /// Logs a command (call when [`Self::wants`] said so).
    pub fn push(&self, args: &[Bytes], usec: u64, peer: String, name: Option<&[u8]>) {
        let entry = Entry {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            duration: usec,
            args: trimmed(&crate::redact::redacted(args)),
            peer,
            name: name.map(Bytes::copy_from_slice).unwrap_or_default(),
        };
        let max_len = self.max_len.load(Ordering::Relaxed);
        let mut entries = self.entries.lock();
        entries.push_front(entry);
        entries.truncate(max_len);
    }

    /// The newest `count` entries (all when `None`).
    pub fn newest(&self, count: Option<usize>) -> Vec<Entry> {
        let entries = self.entries.lock();
        let n = count.unwrap_or(entries.len()).min(entries.len());
        entries.iter().take(n).cloned().collect()
    }

    /// Entries kept.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// SLOWLOG RESET.
    pub fn reset(&self) {
        self.entries.lock().clear();
    }
}

/// The arguments as an entry keeps them.
fn trimmed(args: &[Bytes]) -> Vec<Bytes> {
    let keep = args.len().min(MAX_ARGS);
    let mut out = Vec::with_capacity(keep);
    for (i, arg) in args.iter().take(keep).enumerate() {
        if keep != args.len() && i == keep - 1 {
            let more = args.len() - keep + 1;
            out.push(Bytes::from(format!("... ({more} more arguments)")));
        } else if arg.len() > MAX_ARG_BYTES {
            let mut s = arg[..MAX_ARG_BYTES].to_vec();
            let more = arg.len() - MAX_ARG_BYTES;
            s.extend_from_slice(format!("... ({more} more bytes)").as_bytes());
            out.push(Bytes::from(s));
        } else {
            // A copy, not a slice: the argument may share its allocation with the whole
            // read that brought it (a replica's 32 MB SET kept 32 MB alive here).
            out.push(Bytes::copy_from_slice(arg));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_trimmed_and_bounded() {
        let log = SlowLog::default();
        log.configure(0, 2);
        assert!(log.wants(0));
        let many: Vec<Bytes> = (0..40).map(|i| Bytes::from(i.to_string())).collect();
        log.push(&many, 5, "127.0.0.1:1".into(), None);
        let long = vec![Bytes::from_static(b"set"), Bytes::from(vec![b'A'; 130])];
        log.push(&long, 6, "127.0.0.1:1".into(), Some(b"n"));
        log.push(&long, 7, "127.0.0.1:1".into(), None);
        assert_eq!(log.len(), 2);
        let newest = log.newest(None);
        assert_eq!(newest[0].duration, 7);
        assert!(newest[0].args[1].ends_with(b"... (2 more bytes)"));
        assert_eq!(newest[1].name, Bytes::from_static(b"n"));
        let first = trimmed(&many);
        assert_eq!(first.len(), 32);
        assert_eq!(first[31], Bytes::from_static(b"... (9 more arguments)"));
        log.configure(-1, 2);
        assert!(!log.wants(u64::MAX));
    }

    #[test]
    fn entries_never_share_the_read_that_brought_their_arguments() {
        let read = Bytes::from(vec![b'k'; 1 << 20]);
        let args = [read.slice(..3), read.slice(3..6)];
        let kept = trimmed(&args);
        assert_eq!(kept, args);
        drop(args);
        // `read` is the last handle on its allocation: the entry holds copies.
        assert!(read.is_unique());
    }
}
