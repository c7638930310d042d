//! A condition other tasks wait for, with a deadline: the waiters count themselves so a
//! change nobody waits for costs one atomic load, not a lock.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Wakes the tasks waiting in [`Signal::wait_until`] when the state they wait on moved.
#[derive(Debug, Default)]
pub struct Signal {
    notify: Notify,
    waiters: AtomicUsize,
}

impl Signal {
    /// The state moved: wakes the waiters, if any (after the state's own store).
    pub fn notify(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.notify.notify_waiters();
        }
    }

    /// Waits until `done` holds, or `deadline`. `done` is checked after registering for
    /// the next [`Signal::notify`], so a change in between is not missed.
    pub async fn wait_until(&self, done: impl Fn() -> bool, deadline: tokio::time::Instant) {
        if done() {
            return;
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let wait = async {
            loop {
                let moved = self.notify.notified();
                tokio::pin!(moved);
                moved.as_mut().enable();
                if done() {
                    return;
                }
                moved.await;
            }
        };
        let _ = tokio::time::timeout_at(deadline, wait).await;
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}
