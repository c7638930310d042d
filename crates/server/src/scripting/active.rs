//! The run in progress on this thread, as `redis.call`, `redis.pcall`,
//! `redis.acl_check_cmd` and the prelude's `state.run_args` reach it.
//!
//! Those are made once per interpreter (making them per run, as scoped functions,
//! cost more than a short script itself: two C closures, a userdata and their
//! destructors each, and the garbage they leave). What they act on — the client, its
//! shards, the server — is borrowed for one run, so it is published here for the run's
//! length: [`enter`] stores a pointer to it in a thread-local and [`Active`] takes it
//! away again; [`with`] lends it to a callback. Scripts run on the thread that started
//! them (the watchdog's hand-over moves the *scheduler* away, not the script), so the
//! thread-local is the run's.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::AtomicU8;

use bytes::Bytes;

use crate::net::client::ClientState;
use crate::shared::Shared;
use crate::store::HeldShards;

use super::debugger::Session;

/// What a script's calls run with during one run.
pub struct RunContext<'a> {
    /// Server-wide state.
    pub shared: &'a Shared,
    /// The shards the script holds.
    pub held: Option<&'a (dyn HeldShards + 'a)>,
    /// The script's client.
    pub client: &'a mut ClientState,
    /// A read-only script (EVAL_RO, `no-writes`).
    pub read_only: bool,
    /// The debugging session, which logs the calls while stepping.
    pub session: Option<&'a Session>,
    /// The protocol the script asked for with `redis.setresp` (2 or 3).
    pub resp: &'a AtomicU8,
    /// Where its changes go (`redis.set_repl`'s flags).
    pub repl: &'a AtomicU8,
    /// Its keys (an EVAL's KEYS, a function's first argument).
    pub keys: &'a [Bytes],
    /// Its other arguments (ARGV, a function's second argument).
    pub args: &'a [Bytes],
}

thread_local! {
    /// The published run: a `*mut RunContext` with its lifetimes erased, or null.
    static CURRENT: Cell<*mut ()> = const { Cell::new(ptr::null_mut()) };
}

/// A run published on this thread; dropping it withdraws the run. It holds the
/// context's mutable borrow, so nothing else touches the context meanwhile.
pub struct Active<'c> {
    previous: *mut (),
    _borrow: PhantomData<&'c mut ()>,
}

/// Publishes `run` to the callbacks until the returned guard is dropped.
pub fn enter<'c>(run: &'c mut RunContext<'_>) -> Active<'c> {
    let previous = CURRENT.with(|c| c.replace(ptr::from_mut(run).cast()));
    Active {
        previous,
        _borrow: PhantomData,
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// Whether a run is published on this thread (a script is running here).
pub fn is_published() -> bool {
    CURRENT.with(|c| !c.get().is_null())
}

/// Lends the published run to `f`; `None` when no run is published (a call made
/// outside a run) or when it is already lent (a call re-entered from inside a call).
pub fn with<R>(f: impl for<'c, 'r> FnOnce(&'c mut RunContext<'r>) -> R) -> Option<R> {
    // Taken while lent, so a re-entrant call finds nothing instead of a second `&mut`.
    let taken = CURRENT.with(|c| c.replace(ptr::null_mut()));
    if taken.is_null() {
        return None;
    }
    struct Restore(*mut ());
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(taken);
    // SAFETY: `taken` came from `enter`, whose `Active` guard still lives (it puts the
    // pointer back only when dropped, and is dropped before the context's borrow ends),
    // so it points to a live `RunContext` borrowed mutably for that guard's whole life;
    // the guard's owner cannot reach the context meanwhile. The pointer was taken out of
    // the thread-local above, so this is the only reference made from it until
    // `_restore` runs. `f` is generic over both lifetimes, so no reference it is lent
    // can escape into `R`.
    let run = unsafe { &mut *taken.cast::<RunContext<'_>>() };
    Some(f(run))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_lent_outside_a_run() {
        assert!(!is_published());
        assert!(with(|_| ()).is_none());
    }
}
