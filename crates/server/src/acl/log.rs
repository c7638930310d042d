//! ACL LOG: the recent refusals (commands, keys, channels the user may not touch, failed
//! authentications), newest first, as Redis 7.0 keeps them: a refusal like a recent
//! one (same reason, context, object and user, within 60 seconds) bumps that entry's
//! count and moves it to the front instead of adding a new one; at most `acllog-max-len`
//! entries (128 by default).

use std::collections::VecDeque;

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

/// Entries kept by default (Redis's `acllog-max-len`).
const MAX_LEN: usize = 128;

/// Refusals this close together are grouped (Redis's `ACL_LOG_GROUPING_MAX_TIME_DELTA`).
const GROUPING_MS: u64 = 60_000;

/// One logged refusal.
#[derive(Debug, Clone)]
pub struct Entry {
    /// How many refusals it stands for.
    pub count: u64,
    /// `command`, `key`, `channel` or `auth`.
    pub reason: &'static str,
    /// `toplevel`, `multi` or `lua`.
    pub context: &'static str,
    /// The command, key or channel refused (AUTH/HELLO for a failed authentication).
    pub object: Vec<u8>,
    /// The user (the name tried, for a failed authentication).
    pub username: Vec<u8>,
    /// When it last happened, in milliseconds since the epoch.
    pub ctime_ms: u64,
    /// The client, as CLIENT LIST shows it, when it last happened.
    pub client_info: String,
}

/// The log.
#[derive(Debug)]
pub struct AclLog {
    entries: Mutex<VecDeque<Entry>>,
    /// `acllog-max-len`.
    max_len: AtomicUsize,
}

impl Default for AclLog {
    fn default() -> Self {
        AclLog {
            entries: Mutex::default(),
            max_len: AtomicUsize::new(MAX_LEN),
        }
    }
}

impl AclLog {
    /// Records a refusal (its `count` and `ctime_ms` are set here).
    pub fn add(&self, mut entry: Entry) {
        let now = crate::store::now_ms();
        let mut entries = self.entries.lock();
        let similar = entries.iter().position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && now.saturating_sub(e.ctime_ms) < GROUPING_MS
        });
        entry.count = 1;
        if let Some(at) = similar.and_then(|i| entries.remove(i)) {
            entry.count = at.count + 1;
        }
        entry.ctime_ms = now;
        entries.push_front(entry);
        entries.truncate(self.max_len.load(Ordering::Relaxed));
    }

    /// Applies `acllog-max-len` (the log shrinks at its next entry, as in Redis).
    pub fn set_max_len(&self, max_len: usize) {
        self.max_len.store(max_len, Ordering::Relaxed);
    }

    /// The newest `count` entries.
    pub fn newest(&self, count: usize) -> Vec<Entry> {
        self.entries.lock().iter().take(count).cloned().collect()
    }

    /// ACL LOG RESET.
    pub fn reset(&self) {
        self.entries.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(object: &str) -> Entry {
        Entry {
            count: 0,
            reason: "command",
            context: "toplevel",
            object: object.into(),
            username: b"u".to_vec(),
            ctime_ms: 0,
            client_info: String::new(),
        }
    }

    #[test]
    fn similar_refusals_group_and_move_to_front() {
        let log = AclLog::default();
        log.add(entry("get"));
        log.add(entry("set"));
        log.add(entry("get"));
        let all = log.newest(10);
        assert_eq!(all.len(), 2);
        assert_eq!((&all[0].object[..], all[0].count), (&b"get"[..], 2));
        assert_eq!((&all[1].object[..], all[1].count), (&b"set"[..], 1));
        for i in 0..200 {
            log.add(entry(&i.to_string()));
        }
        assert_eq!(log.newest(usize::MAX).len(), MAX_LEN);
        log.reset();
        assert!(log.newest(1).is_empty());
    }
}
