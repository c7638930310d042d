//! Whether a listener has commands that reached the server before a PUBLISH and that
//! it has not run yet.
//!
//! Redis runs the commands of all connections on one thread, in about the order they
//! arrive: a subscriber's UNSUBSCRIBE sent just before another connection's PUBLISH
//! nearly always runs first, even when neither client waited for a reply. Here the two
//! connections run on two workers at once, and the PUBLISH could count (and message) a
//! subscriber whose UNSUBSCRIBE was already in its socket. So a publisher looks at each
//! listener first: input the runtime found in its socket, or a batch it is running, and
//! the PUBLISH waits (briefly, see [`SETTLE_LIMIT`]) for that turn to end, as Redis
//! would have run it.
//!
//! The listener's connection numbers its turns: a turn (odd) lasts from a read until
//! the connection finds its socket empty again, its task's waker registered there; in
//! between (even), new input reaches it through that waker, which first raises `ready`
//! ([`ReadyWaker`]). The runtime wakes readers in the order the kernel reported their
//! sockets readable, so a listener whose input came before the PUBLISH's is marked
//! before the publisher's task even runs. The turn opens (and `ready` drops) before the
//! socket is read, and the publisher looks at `ready` first and the count second, so
//! whichever way the two interleave, input that arrived before the PUBLISH is seen. No
//! system call is made on either side.
//!
//! What this cannot order: a PUBLISH the runtime did not wake its connection for (the
//! first command of a connection just accepted, read at once; or one already waiting
//! when its connection finished its previous replies) can be read before the runtime
//! has handled the listener's earlier readiness.
//!
//! A replica's link to its master counts its turns the same way, one per read and the
//! commands applied from it (see `crate::repl::replica`): a client's command that came
//! after the master's stream waits for the stream to be applied, as Redis, reading both
//! sockets on one thread, would have applied it first.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::AsyncRead;

use super::signal::Signal;

/// The longest a PUBLISH waits for its listeners' turns. A turn normally ends within
/// microseconds, or as long as its commands run (Redis would hold the PUBLISH as
/// long); this bounds a listener whose worker is starved on a loaded machine.
pub const SETTLE_LIMIT: Duration = Duration::from_millis(50);

/// A listener connection's input turns (see the module documentation).
#[derive(Debug, Default)]
pub struct InputTurns {
    /// Odd while the owner reads and runs a batch.
    turns: AtomicU64,
    /// The runtime found the owner's socket readable and the owner has not begun
    /// reading it since.
    ready: AtomicBool,
    /// The owner is itself a publisher waiting for its listeners: what it read before
    /// that PUBLISH has run, so nobody waits for it (two listeners publishing to each
    /// other would otherwise each wait for the other's turn).
    parked: AtomicBool,
    /// Told when a turn ends or the owner parks.
    ended: Signal,
}

impl InputTurns {
    /// Owner: a read starts a turn (no-op when one is open).
    pub fn begin(&self) {
        let turn = self.turns.load(Ordering::Relaxed);
        if turn & 1 == 0 {
            self.turns.store(turn + 1, Ordering::SeqCst);
        }
        // After the turn opened: a publisher that finds `ready` down finds the turn.
        self.ready.store(false, Ordering::SeqCst);
    }

    /// Owner: what was read has run (or nothing came): the turn ends.
    pub fn end(&self) {
        let turn = self.turns.load(Ordering::Relaxed);
        if turn & 1 == 1 {
            self.turns.store(turn + 1, Ordering::SeqCst);
            self.ended.notify();
        }
    }

    /// Publisher: `None` when the owner has no input waiting or running; else the turn
    /// count to wait for ([`Self::settled`]).
    pub fn unsettled(&self) -> Option<u64> {
        if self.parked.load(Ordering::SeqCst) {
            return None;
        }
        let ready = self.ready.load(Ordering::SeqCst);
        let turn = self.turns.load(Ordering::SeqCst);
        if turn & 1 == 1 {
            Some(turn + 1)
        } else if ready {
            Some(turn + 2)
        } else {
            None
        }
    }

    /// Owner: it waits for its own listeners until the returned guard drops (see
    /// `parked`).
    pub fn park(&self) -> Parked<'_> {
        self.parked.store(true, Ordering::SeqCst);
        self.ended.notify();
        Parked(self)
    }

    /// Publisher: waits until the turn count reaches `target`, or `deadline`.
    pub async fn settled(&self, target: u64, deadline: tokio::time::Instant) {
        let done =
            || self.turns.load(Ordering::SeqCst) >= target || self.parked.load(Ordering::SeqCst);
        self.ended.wait_until(done, deadline).await;
    }
}

/// The owner waits for its own listeners while this lives ([`InputTurns::park`]).
pub struct Parked<'a>(&'a InputTurns);

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        self.0.parked.store(false, Ordering::SeqCst);
    }
}

/// The owner's reads: each opens a turn (ended at once when it finds nothing), with the
/// task's waker wrapped in a [`ReadyWaker`] (made once per task waker).
#[derive(Default)]
pub struct TurnReader {
    /// The task's waker and its wrapped form.
    waker: Option<(Waker, Waker)>,
}

impl TurnReader {
    /// Reads into `input` within a turn of `turns`; the turn stays open when bytes
    /// came, for the owner to end once it has run them.
    pub fn poll_read<R: AsyncRead + Unpin>(
        &mut self,
        turns: &Arc<InputTurns>,
        cx: &mut Context<'_>,
        reader: &mut R,
        input: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        if self
            .waker
            .as_ref()
            .is_some_and(|(task, _)| !task.will_wake(cx.waker()))
        {
            self.waker = None;
        }
        let (_, waker) = self.waker.get_or_insert_with(|| {
            let task = cx.waker().clone();
            (task.clone(), ReadyWaker::wrap(turns.clone(), task))
        });
        turns.begin();
        let mut cx = Context::from_waker(waker);
        let read = tokio_util::io::poll_read_buf(Pin::new(reader), &mut cx, input);
        if !matches!(read, Poll::Ready(Ok(n)) if n > 0) {
            turns.end();
        }
        read
    }
}

/// The waker a listener reads its socket with: raises `ready`, then wakes the task.
pub struct ReadyWaker {
    turns: Arc<InputTurns>,
    task: Waker,
}

impl ReadyWaker {
    /// `task`'s waker, raising `turns`' `ready` first.
    pub fn wrap(turns: Arc<InputTurns>, task: Waker) -> Waker {
        Waker::from(Arc::new(ReadyWaker { turns, task }))
    }
}

impl Wake for ReadyWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.turns.ready.store(true, Ordering::SeqCst);
        self.task.wake_by_ref();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_socket_or_an_open_turn_is_unsettled() {
        let turns = Arc::new(InputTurns::default());
        assert_eq!(turns.unsettled(), None);
        let waker = ReadyWaker::wrap(turns.clone(), Waker::noop().clone());
        waker.wake_by_ref();
        assert_eq!(turns.unsettled(), Some(2));
        turns.begin();
        assert_eq!(turns.unsettled(), Some(2));
        turns.end();
        assert_eq!(turns.unsettled(), None);
        waker.wake();
        // Readable again after a turn: another whole turn is needed.
        assert_eq!(turns.unsettled(), Some(4));
    }

    #[tokio::test]
    async fn settled_returns_when_the_turn_ends() {
        let turns = Arc::new(InputTurns::default());
        turns.begin();
        let target = turns.unsettled().unwrap();
        let owner = turns.clone();
        let ender = tokio::spawn(async move {
            tokio::task::yield_now().await;
            owner.end();
        });
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        turns.settled(target, deadline).await;
        assert_eq!(turns.unsettled(), None);
        ender.await.unwrap();
    }
}
