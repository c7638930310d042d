//! The stream keys a command signalled to blocked XREAD / XREADGROUP clients, as Redis's
//! `signalKeyAsReady` does for a stream: when a key holding one is added, written over
//! or deleted (`dbAdd`, `dbOverwrite`, `dbDelete`: COPY, RENAME, RESTORE, SET, DEL,
//! expiry...), on every XADD and on XGROUP DESTROY. Other changes to a stream (XDEL,
//! XTRIM, XSETID, XGROUP SETID...) wake nobody, and a waiter is served only once
//! signalled, as on Redis: its stream's last ID may have passed its own long before.
//!
//! Recorded per thread, as [`super::changed_keys`]: a command runs on one thread from
//! start to end. The shard records adds, overwrites and deletes, the stream commands
//! the rest; the command's end takes them ([`take`]).

use std::cell::RefCell;

use bytes::Bytes;

thread_local! {
    static KEYS: RefCell<Vec<(usize, Bytes)>> = const { RefCell::new(Vec::new()) };
}

/// Records that `key` of database `db` was signalled.
pub fn record(db: usize, key: &[u8]) {
    KEYS.with(|k| k.borrow_mut().push((db, Bytes::copy_from_slice(key))));
}

/// The keys signalled since the last take, in the order signalled (repeats included).
/// Allocates nothing when there are none.
#[inline]
pub fn take() -> Vec<(usize, Bytes)> {
    KEYS.with(|k| std::mem::take(&mut *k.borrow_mut()))
}
