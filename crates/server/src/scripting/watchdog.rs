//! Scripts run inline on the connection's worker thread: a script of a few commands
//! costs no thread handoff and no wakeup. One that runs long must still not keep the
//! runtime from serving other clients (BUSY replies, SCRIPT KILL, with any number of
//! workers, one included): the interpreter's hook calls [`release_worker`] once the
//! script has run [`RELEASE_AFTER_MS`], which hands this worker's scheduler (its queued
//! tasks, its turn at the I/O driver) to another thread, as `block_in_place` does. The
//! script then finishes on this thread, which leaves the pool when its task yields.

use std::time::Duration;

use tokio::runtime::{Handle, RuntimeFlavor};

/// How long a script runs on its worker before the worker is handed on.
pub const RELEASE_AFTER_MS: u64 = 1;

/// If a hand-over did not take (see [`release_worker`]), how long until the next try.
pub const RETRY_MS: u64 = 100;

/// Whether the current thread is a worker of a multi-thread runtime (the only place a
/// worker can be handed on; elsewhere, such as while loading the AOF, nothing waits).
pub fn on_runtime_worker() -> bool {
    matches!(Handle::try_current(), Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread)
}

/// Hands the current worker's scheduler to another thread; the caller goes on running
/// on this one, outside the scheduler. A no-op when it already was handed on.
///
/// `block_in_place` queues a blocking-pool job that takes the scheduler, and takes it
/// back when its closure returns unless that job already has it. So the closure waits
/// for a second job queued behind the first: the pool starts jobs in order, so once the
/// second runs the first has started (and taking the scheduler is the first thing it
/// does). Should the hand-over still not take, the hook tries again [`RETRY_MS`] later.
pub fn release_worker() {
    let Ok(handle) = Handle::try_current() else {
        return;
    };
    if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
        return;
    }
    tokio::task::block_in_place(|| {
        let (started, wait) = std::sync::mpsc::channel::<()>();
        handle.spawn_blocking(move || {
            let _ = started.send(());
        });
        let _ = wait.recv_timeout(Duration::from_millis(50));
        std::thread::sleep(Duration::from_micros(200));
    });
}
