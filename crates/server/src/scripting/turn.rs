//! Whose turn it is to run a script, and how the clients that wait for it get their
//! scripts run without a hand-off between worker threads per script.
//!
//! Scripts run one at a time, each holding every shard (see the module above). A client
//! that wants to run one takes the **script turn**. One that finds it taken does not
//! park its task on a lock: it *queues its batch* (its client state, its decoder and its
//! buffers, the postponed script first) and waits for it to come back. The client
//! holding the turn, when its own batch ends, runs the queued batches one after the
//! other, in arrival order, before it lets go (flat combining), then each waiting task
//! only writes the replies it is given. So a queue of scripts runs back to back on one
//! thread, as in Redis's event loop, instead of each waiting for its task to be woken on
//! another worker (that wake-up was the script path's serial latency: measured 0.6x of
//! redis-server at 10 connections). After [`BUDGET`] batches the holder hands the turn,
//! unused, to the next queued client's task, so its own replies do not wait on an endless
//! queue. No worker thread ever sleeps on a shard lock held by a script, and the turn is
//! never held across an await (a debugging session's EVAL aside).
//!
//! Other commands that arrive while a script runs (and is not yet BUSY) wait for its end
//! on [`RunFlags::wait_end`](super::RunFlags::wait_end): their shard would be held by the
//! script, and locking it would put the worker thread to sleep for as long as the script
//! runs.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What a command waits for before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptWait {
    /// The script turn (the command is a script).
    Turn,
    /// The end of the running script (or its turning BUSY).
    End,
}

/// How many queued batches the client letting the turn go runs before it hands the
/// turn on instead: its own replies wait for them.
pub const BUDGET: usize = 16;

/// A client's batch queued for the turn. Called with [`Use::Run`], it runs the batch
/// holding the permit and gives the permit back (or `None` when the batch keeps it: a
/// debugging session); with [`Use::Hand`], it is handed the permit to run the batch on
/// its own task. Either way it sends the batch back to its connection.
pub type Queued = Box<dyn FnOnce(TurnPermit, Use) -> Option<TurnPermit> + Send>;

/// What a queued batch is to do with the turn it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Run here, by the holder letting the turn go.
    Run,
    /// Take it to its own task.
    Hand,
}

#[derive(Default)]
struct Inner {
    held: AtomicBool,
    queue: parking_lot::Mutex<VecDeque<Queued>>,
}

/// The script turn: one holder at a time; waiting clients' batches queued in request
/// order.
#[derive(Default)]
pub struct Turn {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn")
            .field("held", &self.inner.held.load(Ordering::Relaxed))
            .field("queued", &self.inner.queue.lock().len())
            .finish()
    }
}

impl Turn {
    /// The turn, if nobody holds it.
    pub fn try_take(&self) -> Option<TurnPermit> {
        take(&self.inner)
    }

    /// Queues a batch for the turn. The caller then tries [`Self::try_take`] once (the
    /// holder may have let go between its first try and the queueing) and, if it gets
    /// the turn, [`TurnPermit::pass`]es it, which runs the queue with its own batch.
    /// Nothing else runs the queue: a batch queued while nobody holds the turn, with
    /// no such try after it, would wait for the next script.
    pub fn queue(&self, batch: Queued) {
        self.inner.queue.lock().push_back(batch);
    }
}

fn take(inner: &Arc<Inner>) -> Option<TurnPermit> {
    inner
        .held
        .compare_exchange(false, true, Ordering::SeqCst, Ordering::Relaxed)
        .is_ok()
        .then(|| TurnPermit {
            inner: Some(inner.clone()),
        })
}

/// The script turn, held. Let go with [`Self::pass`]; dropped otherwise (a client gone
/// mid-session), it goes to the next queued batch's task.
pub struct TurnPermit {
    /// `None` once let go.
    inner: Option<Arc<Inner>>,
}

impl std::fmt::Debug for TurnPermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TurnPermit")
    }
}

impl TurnPermit {
    /// Lets the turn go: runs the batches queued for it (at most [`BUDGET`]), then hands
    /// it to the next queued batch's task or frees it. True when it went to a task (woken
    /// onto this worker: yielding lets this worker run it rather than wait for another
    /// worker's wake-up).
    pub fn pass(self) -> bool {
        let Some(inner) = self.inner.clone() else {
            return false;
        };
        let mut permit = self;
        let mut ran = 0;
        loop {
            let next = inner.queue.lock().pop_front();
            let Some(batch) = next else {
                permit.free();
                // A client that queued after the look tried the turn before it was free:
                // nobody would run its batch.
                if inner.queue.lock().is_empty() {
                    return false;
                }
                match take(&inner) {
                    Some(again) => {
                        permit = again;
                        continue;
                    }
                    None => return false,
                }
            };
            if ran == BUDGET {
                batch(permit, Use::Hand);
                return true;
            }
            ran += 1;
            match batch(permit, Use::Run) {
                Some(back) => permit = back,
                None => return false,
            }
        }
    }

    fn free(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.held.store(false, Ordering::SeqCst);
        }
    }
}

impl Drop for TurnPermit {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        // Not let go through `pass` (a client gone mid-session, a panic): the next queued
        // batch's task gets the turn, rather than this code running it wherever the
        // permit happens to drop.
        let next = inner.queue.lock().pop_front();
        match next {
            Some(batch) => {
                batch(TurnPermit { inner: Some(inner) }, Use::Hand);
            }
            None => {
                inner.held.store(false, Ordering::SeqCst);
                if !inner.queue.lock().is_empty() {
                    // Freed after one queued: dropping the retaken turn hands it on.
                    drop(take(&inner));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn recorder(log: &Arc<Mutex<Vec<(u32, bool)>>>, id: u32) -> Queued {
        let log = log.clone();
        Box::new(move |permit, used| {
            log.lock().unwrap().push((id, used == Use::Run));
            (used == Use::Run).then_some(permit)
        })
    }

    #[test]
    fn a_dropped_turn_goes_to_the_first_queued_batch_unrun() {
        let turn = Turn::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let held = turn.try_take();
        assert!(held.is_some());
        assert!(turn.try_take().is_none());
        turn.queue(recorder(&log, 1));
        turn.queue(recorder(&log, 2));
        drop(held);
        // Batch 1 was handed the turn (and, being a recorder, dropped it: batch 2 next).
        assert_eq!(*log.lock().unwrap(), vec![(1, false), (2, false)]);
        assert!(turn.try_take().is_some());
    }

    #[test]
    fn letting_go_runs_a_budget_of_queued_batches_then_hands_the_turn_on() {
        let turn = Turn::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let held = turn.try_take().unwrap();
        for id in 0..20 {
            turn.queue(recorder(&log, id));
        }
        // The 17th is handed the turn; a recorder drops it, which hands it on again.
        assert!(held.pass());
        let expected: Vec<(u32, bool)> = (0..20).map(|id| (id, id < 16)).collect();
        assert_eq!(*log.lock().unwrap(), expected);
        let again = turn.try_take().unwrap();
        assert!(!again.pass());
        assert!(turn.try_take().is_some());
    }
}
