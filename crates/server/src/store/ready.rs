//! The keys a command signalled ready for the clients blocked on them, as Redis's
//! `signalKeyAsReady`: when a key is added (`dbAdd`: LPUSH or ZADD creating it, COPY,
//! RENAME, RESTORE, MOVE, a *STORE to a missing key...), when a stream is written over
//! or deleted (`dbOverwrite`, `dbDelete`, expiry), on every XADD and on XGROUP DESTROY.
//! Nothing else wakes a waiter: a push onto a list that exists (a SORT ... STORE or a
//! Z*STORE made it over a value of another type), XDEL, XTRIM, XSETID or XGROUP SETID
//! leave it waiting, as on Redis. Whoever finishes the command serves the keys.
//!
//! Each signal carries the type it is for ([`WaitKind`]: the value added, or a stream
//! for a stream's overwrite or deletion) and, as Redis drops a signal when no client is
//! blocked on that type (a list overwritten by a stream wakes no BLPOP unless some
//! client blocks on a stream somewhere), is served only if one is. Once served, a key's
//! waiters are served by what it holds then.
//!
//! Recorded per thread, as [`super::changed_keys`]: a command runs on one thread from
//! start to end. The shard records adds, overwrites and deletes, the stream commands
//! and the commands that replace whole databases the rest; [`take`] collects them.
//! Only keys some client may wait on are recorded ([`WaitedKeys`]), so a write nobody
//! waits for records nothing.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;

use super::Value;

/// The types clients block on (Redis's `BLOCKED_LIST`, `BLOCKED_ZSET`,
/// `BLOCKED_STREAM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitKind {
    /// BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP.
    List,
    /// BZPOPMIN, BZPOPMAX, BZMPOP.
    Zset,
    /// XREAD and XREADGROUP with BLOCK.
    Stream,
}

impl WaitKind {
    /// The kind of clients `value` can serve; `None` for the types nobody blocks on.
    pub fn of(value: &Value) -> Option<WaitKind> {
        match value {
            Value::List(_) => Some(WaitKind::List),
            Value::ZSet(_) => Some(WaitKind::Zset),
            Value::Stream(_) => Some(WaitKind::Stream),
            _ => None,
        }
    }
}

/// A key signalled ready, for the clients blocked on a `kind`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    /// The key's database.
    pub db: usize,
    /// The key.
    pub key: Bytes,
    /// The type it was signalled for.
    pub kind: WaitKind,
}

/// A command that replaced whole databases: their waited keys are signalled once it is
/// over (by whoever serves, who may take the shards; the command may hold them, inside
/// EXEC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaced {
    /// FLUSHDB of a database, FLUSHALL, DEBUG RELOAD and LOADAOF (`None`: all of them):
    /// each waited key is signalled to stream readers, for the streams deleted.
    Emptied(Option<usize>),
    /// SWAPDB: each waited key for the type it holds now, and for stream readers when
    /// it held a stream that is gone.
    Swapped(usize, usize),
}

thread_local! {
    static SIGNALS: RefCell<Vec<Signal>> = const { RefCell::new(Vec::new()) };
}

/// Records that `key` of database `db` was signalled for `kind`.
pub fn record(db: usize, key: &[u8], kind: WaitKind) {
    let key = Bytes::copy_from_slice(key);
    push(Signal { db, key, kind });
}

/// Records `signal`, made elsewhere (the streams a reload found before it emptied the
/// databases).
pub fn push(signal: Signal) {
    SIGNALS.with(|s| s.borrow_mut().push(signal));
}

/// Whether signals wait to be taken: asked after every command, so the common case
/// (none) builds and drops no vector.
#[inline]
pub fn pending() -> bool {
    SIGNALS.with(|s| !s.borrow().is_empty())
}

/// The signals since the last take, in the order recorded (repeats included).
pub fn take() -> Vec<Signal> {
    SIGNALS.with(|s| std::mem::take(&mut *s.borrow_mut()))
}

/// Which of 64 classes `key` falls in, for lock-free filters of keys: its last 8 bytes
/// and length, mixed, so keys told apart by a counter at their end fall in different
/// classes.
pub fn key_class(key: &[u8]) -> usize {
    let mut tail = [0u8; 8];
    let n = key.len().min(8);
    tail[..n].copy_from_slice(&key[key.len() - n..]);
    let mixed = (u64::from_le_bytes(tail) ^ key.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> 58) as usize
}

/// Per key class ([`key_class`]), how many keys blocked clients wait on: a write
/// signals a key only when its class counts any. Shared by the blocking registry, which
/// counts, and the shards, which look.
#[derive(Debug)]
pub struct WaitedKeys([AtomicU32; 64]);

impl Default for WaitedKeys {
    fn default() -> Self {
        WaitedKeys(std::array::from_fn(|_| AtomicU32::new(0)))
    }
}

impl WaitedKeys {
    /// Counts `key` as waited on once more.
    pub fn count(&self, key: &[u8]) {
        self.0[key_class(key)].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one wait on `key` out.
    pub fn uncount(&self, key: &[u8]) {
        self.0[key_class(key)].fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether a client may be blocked on `key` (in any database): false when no
    /// blocked client waits on a key of its class.
    #[inline]
    pub fn may_be_waited_on(&self, key: &[u8]) -> bool {
        self.0[key_class(key)].load(Ordering::Relaxed) != 0
    }
}
