//! Whose turn it is to run a script, and where a client waits for it without blocking a
//! worker thread.
//!
//! Scripts run one at a time, each holding every shard (see the module above). Clients
//! that want to run one take the **script turn**, a FIFO async semaphore of one permit:
//! a client that finds it taken parks its task (its command stays unconsumed, like a
//! command CLIENT PAUSE holds back) and is woken alone, in arrival order, when the
//! holder lets go, so a queue of scripts costs one wakeup per script (no herd), and no
//! worker thread ever sleeps on a shard lock held by a script. The turn is kept for the
//! rest of the client's batch (a pipeline of scripts runs back to back) and let go when
//! the batch ends, never across an await.
//!
//! Other commands that arrive while a script runs (and is not yet BUSY) wait for its end
//! the same way, on [`RunFlags::wait_end`](super::RunFlags::wait_end): their shard
//! would be held by the script, and locking it would put the worker thread to sleep for
//! as long as the script runs.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// What a command waits for before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptWait {
    /// The script turn (the command is a script).
    Turn,
    /// The end of the running script (or its turning BUSY).
    End,
    /// The end of the running script, BUSY or not (a WATCH while it is BUSY: it would
    /// lock a shard the script holds).
    Finish,
}

/// The script turn: one permit, handed out in request order.
#[derive(Debug)]
pub struct Turn {
    permits: Arc<Semaphore>,
}

impl Default for Turn {
    fn default() -> Self {
        Turn {
            permits: Arc::new(Semaphore::new(1)),
        }
    }
}

impl Turn {
    /// The turn, if nobody holds it and nobody waits for it.
    pub fn try_take(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }

    /// Whether a turn just let go went straight to a waiting client (the semaphore
    /// hands a released permit to the first waiter, so none is left available).
    pub fn handed_on(&self) -> bool {
        self.permits.available_permits() == 0
    }

    /// Waits for the turn (FIFO).
    pub async fn take(&self) -> Option<OwnedSemaphorePermit> {
        // The semaphore is never closed: `None` cannot happen, and would only mean the
        // command runs without the turn (its shard locks still make it atomic).
        self.permits.clone().acquire_owned().await.ok()
    }
}
