//! The keys a command changed, for CLIENT TRACKING's invalidations. Redis invalidates
//! where it calls `signalModifiedKey`, which is where a shard's write paths call
//! [`super::Shard::touch`] (WATCH relies on the same calls), so a write that changed
//! nothing (DEL of a missing key, SADD of a member already there) invalidates nothing,
//! and a read that rewrites its value (PFCOUNT's cached count) does.
//!
//! Collected per thread while a command runs and some client tracks: a command runs on
//! one thread from start to end, as [`super::dirty`] relies on too. The first command
//! to begin owns the collection; commands nested in it (inside EXEC or a script) take
//! their own keys as they end.

use std::cell::{Cell, RefCell};

use bytes::Bytes;

thread_local! {
    static COLLECTING: Cell<bool> = const { Cell::new(false) };
    static KEYS: RefCell<Vec<Bytes>> = const { RefCell::new(Vec::new()) };
}

/// Starts collecting; true when this call owns the collection (must [`end`] it).
pub fn begin() -> bool {
    !COLLECTING.with(|c| c.replace(true))
}

/// Records `key` as changed, when a collection runs.
#[inline]
pub fn record(key: &[u8]) {
    if COLLECTING.with(Cell::get) {
        KEYS.with(|k| k.borrow_mut().push(Bytes::copy_from_slice(key)));
    }
}

/// Runs `f` with recording off: changes with their own invalidations (evictions).
pub fn unrecorded<R>(f: impl FnOnce() -> R) -> R {
    let was = COLLECTING.with(|c| c.replace(false));
    let result = f();
    COLLECTING.with(|c| c.set(was));
    result
}

/// The keys changed since the last take, each once, in the order first changed.
pub fn take() -> Vec<Bytes> {
    let mut keys = KEYS.with(|k| std::mem::take(&mut *k.borrow_mut()));
    if keys.len() <= 16 {
        // Most commands change a key or two: no set to build.
        let mut unique: Vec<Bytes> = Vec::with_capacity(keys.len());
        for key in keys {
            if !unique.contains(&key) {
                unique.push(key);
            }
        }
        return unique;
    }
    let mut seen = std::collections::HashSet::with_capacity(keys.len());
    keys.retain(|k| seen.insert(k.clone()));
    keys
}

/// Ends the collection begun by the owner's [`begin`].
pub fn end() {
    COLLECTING.with(|c| c.set(false));
    KEYS.with(|k| k.borrow_mut().clear());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_only_while_begun_and_once_per_key() {
        record(b"before");
        assert!(begin());
        assert!(!begin(), "a nested command does not own it");
        record(b"a");
        record(b"b");
        record(b"a");
        assert_eq!(take(), vec![Bytes::from("a"), Bytes::from("b")]);
        record(b"c");
        end();
        record(b"after");
        assert!(take().is_empty());
    }
}
