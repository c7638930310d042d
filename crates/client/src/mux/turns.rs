//! The count behind the driver's "yield once before writing": callers woken by replies
//! against commands taken for writing, over every connection of one client.
//!
//! A caller woken by a reply on one connection may send its next command on another:
//! on a cluster, to whichever node owns its next key. Counted per connection, a node's
//! driver sees one command arrive, no replies of its own since its last write, and writes
//! that one command at once, while the other callers woken by the same batch of replies
//! are still about to send. Counted per client, it sees that more callers were woken
//! than have sent, and waits one turn for them.
//!
//! It also counts the client's connections that have replies due, which divides the
//! busy poll between them (`Driver::spin_budget`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Shared by every connection a client opens (all nodes of a cluster, every pooled
/// connection). Drivers add to it once per batch, not once per command, so the cache
/// line is touched about as often as the sockets are.
#[derive(Debug, Default)]
pub(crate) struct Turns {
    woken: AtomicUsize,
    taken: AtomicUsize,
    /// Connections with replies due, each counted through its [`Waiting`].
    waiting: AtomicUsize,
}

/// One connection's place in [`Turns`]' count of connections with replies due: counted
/// while it says so, and no longer once dropped (the connection closed or failed).
#[derive(Debug)]
pub(crate) struct Waiting {
    turns: Arc<Turns>,
    counted: bool,
}

impl Waiting {
    pub(crate) fn new(turns: Arc<Turns>) -> Waiting {
        Waiting {
            turns,
            counted: false,
        }
    }

    /// Records whether this connection has replies due; touches the shared count only
    /// when that changes.
    #[inline]
    pub(crate) fn set(&mut self, due: bool) {
        if due != self.counted {
            if due {
                self.turns.waiting.fetch_add(1, Ordering::Relaxed);
            } else {
                self.turns.waiting.fetch_sub(1, Ordering::Relaxed);
            }
            self.counted = due;
        }
    }

    /// How many of the client's connections have replies due, this one included when
    /// it is counted.
    #[inline]
    pub(crate) fn connections(&self) -> usize {
        self.turns.waiting.load(Ordering::Relaxed)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// One driver's view: the counts at its last write.
#[derive(Debug)]
pub(crate) struct TurnMark {
    woken: usize,
    taken: usize,
}

impl Turns {
    pub(crate) fn woke(&self, callers: usize) {
        if callers > 0 {
            self.woken.fetch_add(callers, Ordering::Relaxed);
        }
    }

    pub(crate) fn took(&self, commands: usize) {
        if commands > 0 {
            self.taken.fetch_add(commands, Ordering::Relaxed);
        }
    }

    /// Marks a write: later questions count from here.
    pub(crate) fn mark(&self) -> TurnMark {
        TurnMark {
            woken: self.woken.load(Ordering::Relaxed),
            taken: self.taken.load(Ordering::Relaxed),
        }
    }

    /// Whether more callers were woken since `mark` than commands were taken since, on
    /// any connection: some caller is runnable and about to send.
    pub(crate) fn callers_pending(&self, mark: &TurnMark) -> bool {
        let woken = self.woken.load(Ordering::Relaxed).wrapping_sub(mark.woken);
        let taken = self.taken.load(Ordering::Relaxed).wrapping_sub(mark.taken);
        // Wrapping differences: a count that wrapped still compares right.
        (taken as isize) < (woken as isize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_on_other_connections_count() {
        let turns = Turns::default();
        let a = turns.mark();
        let b = turns.mark();
        // Connection A hands out 10 replies; 3 of those callers send on B, 4 on A.
        turns.woke(10);
        turns.took(3);
        assert!(turns.callers_pending(&b), "B should wait for the other 7");
        turns.took(4);
        assert!(turns.callers_pending(&a));
        turns.took(3);
        assert!(!turns.callers_pending(&a), "all 10 sent");
    }

    #[test]
    fn waiting_counts_each_connection_once_until_dropped() {
        let turns = Arc::new(Turns::default());
        let mut a = Waiting::new(turns.clone());
        let mut b = Waiting::new(turns.clone());
        a.set(true);
        a.set(true);
        b.set(true);
        assert_eq!(a.connections(), 2);
        a.set(false);
        assert_eq!(b.connections(), 1);
        drop(b);
        assert_eq!(a.connections(), 0);
        a.set(true);
        drop(a);
        assert_eq!(turns.waiting.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn commands_without_replies_do_not_wait() {
        // A new caller's first command was woken by no reply.
        let turns = Turns::default();
        let m = turns.mark();
        turns.took(1);
        assert!(!turns.callers_pending(&m));
    }
}
