//! Whether another connection has commands that reached the server before this one's
//! command and that it has not run yet.
//!
//! Redis runs the commands of all connections on one thread, in about the order they
//! arrive: a subscriber's UNSUBSCRIBE sent just before another connection's PUBLISH
//! nearly always runs first, even when neither client waited for a reply; so does an
//! EXEC sent just before another connection's write to a key it watches. Here the two
//! connections run on two workers at once, and the PUBLISH could count (and message) a
//! subscriber whose UNSUBSCRIBE was already in its socket, or the write break the
//! transaction. So the few commands whose outcome depends on other connections' state
//! look at those connections first: input the runtime found in their socket, or a
//! batch they are running, that came before the command, and wait (briefly, see
//! [`SETTLE_LIMIT`]) for that turn to end, as Redis would have run it. Who is looked
//! at:
//! - a PUBLISH: the listeners it would reach;
//! - PUBSUB CHANNELS, NUMSUB...: every connection (any may be subscribing);
//! - a write, a script or EXEC: the connections that WATCH keys ([`Watching`]), whose
//!   EXEC it could break;
//! - a write to a key clients are blocked on: every connection (any may be blocking on
//!   it, and would have been queued, and served, first); past a few hundred
//!   connections, those the last wake-ups were for (`crate::net::recent_arrivals`);
//! - on a replica, any client command: the link from the master (below).
//!
//! Every connection numbers its turns: a turn (odd) lasts from a read until the
//! connection finds its socket empty again, its task's waker registered there; in
//! between (even), new input reaches it through that waker, which first marks it ready
//! ([`ReadyWaker`]). The runtime wakes readers in the order the kernel reported their
//! sockets readable, so a connection whose input came before the PUBLISH's is marked
//! before the publisher's task even runs. The turn opens (and `ready_at` drops) before
//! the socket is read, and the publisher looks at `ready_at` first and the count
//! second, so whichever way the two interleave, input that arrived before the PUBLISH
//! is seen. No system call is made on either side.
//!
//! "Before" is told by arrival numbers, drawn from one server-wide counter: a wake-up
//! draws one as it marks its connection ready, in the order the runtime reports
//! readiness, and the read that follows takes it ([`InputTurns::arrival`]); a read
//! made without a wake-up draws a fresh one when its number is first needed (a client
//! blocking), which may be later than its input came (it is not exact): others treat
//! it as no later than theirs, and its own commands wait for all others' input, as if
//! it came last. Input that came after a command is not waited for: Redis would have
//! run the command first. Clients blocked on a key queue by the number too, so of two
//! BLPOPs sent one after the other on two connections the first is served first even
//! when the second's worker ran it first.
//!
//! What this cannot order: a command the runtime did not wake its connection for (the
//! first command of a connection just accepted, read at once; or one already waiting
//! when its connection finished its previous replies) can be read before the runtime
//! has handled the other's earlier readiness; a connection that is not yet a listener
//! or a watcher (its SUBSCRIBE or WATCH still unread) is not looked at by a PUBLISH or
//! a write; nor are connections by a push to a key nobody is blocked on yet.
//!
//! A replica's link to its master counts its turns the same way, one per read and the
//! commands applied from it (see `crate::repl::replica`): a client's command that came
//! after the master's stream waits for the stream to be applied, as Redis, reading both
//! sockets on one thread, would have applied it first.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use bytes::BytesMut;
use parking_lot::Mutex;
use tokio::io::AsyncRead;

use super::recent_arrivals::RECENT_ARRIVALS;
use super::signal::Signal;

/// The longest a command waits for the others' turns. A turn normally ends within
/// microseconds, or as long as its commands run (Redis would hold the command as
/// long); this bounds a connection whose worker is starved on a loaded machine.
pub const SETTLE_LIMIT: Duration = Duration::from_millis(50);

/// A connection's input turns (see the module documentation).
#[derive(Debug, Default)]
pub struct InputTurns {
    /// Odd while the owner reads and runs a batch.
    turns: AtomicU64,
    /// The runtime found the owner's socket readable and the owner has not begun
    /// reading it since: the wake-up's arrival number (0: not ready).
    ready_at: AtomicU64,
    /// The arrival number of a wake-up the owner consumed and has not read from yet.
    woken_at: AtomicU64,
    /// The input the owner read last: its arrival number shifted left once, the low bit
    /// set when its wake-up drew it (exact); 0 when the read came without one (the
    /// number is drawn when first asked for, [`Self::arrival`]).
    read: AtomicU64,
    /// The owner itself waits for others' turns: what it read before the command that
    /// waits has run, so nobody waits for it (two listeners publishing to each other
    /// would otherwise each wait for the other's turn).
    parked: AtomicBool,
    /// Batches the owner has run (see [`Due`]).
    batches: AtomicU64,
    /// Told when a turn or a batch ends, or the owner parks.
    ended: Signal,
}

/// What another connection waits for: the turn count to reach `turn`, or two more
/// batches to have run. A connection that never finds its socket empty (a client
/// streaming commands) keeps one turn open for good; two batches (the one running, the
/// next read and its commands) run the input it had when the other looked, as Redis,
/// which reads a client's input a chunk at a time, would have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    turn: u64,
    batches: u64,
}

impl InputTurns {
    /// Owner: a read starts a turn (no-op when one is open).
    pub fn begin(&self) {
        let turn = self.turns.load(Ordering::Relaxed);
        if turn & 1 == 0 {
            self.turns.store(turn + 1, Ordering::SeqCst);
        }
        // After the turn opened: a publisher that finds `ready_at` down finds the turn.
        // (Stored only when up: the usual read pays a load, not a locked store.)
        let ready_at = self.ready_at.load(Ordering::SeqCst);
        if ready_at != 0 {
            self.ready_at.store(0, Ordering::SeqCst);
            self.woken_at.store(ready_at, Ordering::Relaxed);
        }
    }

    /// Owner: a read brought input: it takes the number of the wake-up that announced
    /// it, if any. (Owner-only fields: loads and stores, no read-modify-write, and the
    /// shared counter is not touched by a read that came without a wake-up.)
    fn arrived(&self) {
        let woken = self.woken_at.load(Ordering::Relaxed);
        if woken != 0 {
            self.woken_at.store(0, Ordering::Relaxed);
            self.read.store(woken << 1 | 1, Ordering::Release);
        } else {
            self.read.store(0, Ordering::Release);
        }
    }

    /// Owner: its input, held while it waited (a blocked command's pipeline), runs from
    /// now on: it takes a fresh arrival number, as if it came now, which Redis, running
    /// a served client's input at once, also makes true. (Exact, so that a served client
    /// looking for more input is not waited for by writes to the keys it waited on.)
    pub fn resumed(&self) {
        self.read.store(next_arrival() << 1 | 1, Ordering::Release);
    }

    /// Owner: the arrival number of the input it read last, which its commands run
    /// from. Numbers grow server-wide in the order input came (see the module
    /// documentation). A read that came without a wake-up gets a fresh one here, the
    /// first time it is asked for.
    pub fn arrival(&self) -> u64 {
        match self.read.load(Ordering::Relaxed) {
            0 => {
                let fresh = next_arrival();
                self.read.store(fresh << 1, Ordering::Release);
                fresh
            }
            read => read >> 1,
        }
    }

    /// Owner: the number to pass to others' [`Self::unsettled_before`]: its input's
    /// when its wake-up drew it; `u64::MAX` when its read drew it, as its input may have
    /// come before input numbered earlier that the runtime had not reported yet, so it
    /// waits for all of it.
    pub fn waits_before(&self) -> u64 {
        match self.read.load(Ordering::Relaxed) {
            read if read & 1 == 1 => read >> 1,
            _ => u64::MAX,
        }
    }

    /// Owner: what was read has run (or nothing came): the turn ends.
    pub fn end(&self) {
        let turn = self.turns.load(Ordering::Relaxed);
        if turn & 1 == 1 {
            self.turns.store(turn + 1, Ordering::SeqCst);
            self.ended.notify();
        }
        // A wake-up that brought nothing numbers no later input.
        self.woken_at.store(0, Ordering::Relaxed);
    }

    /// Owner: a batch of commands has run.
    pub fn batch_ran(&self) {
        let batches = self.batches.load(Ordering::Relaxed);
        self.batches.store(batches + 1, Ordering::Release);
        self.ended.notify();
    }

    /// Another connection, whose command came with arrival number `arrival`
    /// (`u64::MAX`: any input counts): what to wait for ([`Self::settled`]) when the
    /// owner has input that came before it and has not run yet (a wake-up numbered
    /// earlier, or a turn whose input is not known to be later); else `None`.
    pub fn unsettled_before(&self, arrival: u64) -> Option<Due> {
        if self.parked.load(Ordering::SeqCst) {
            return None;
        }
        let ready_at = self.ready_at.load(Ordering::SeqCst);
        let ready = ready_at != 0 && ready_at < arrival;
        let turn = self.turns.load(Ordering::SeqCst);
        let turn = if turn & 1 == 1 {
            // The turn runs input that came after the caller's only when its read's
            // number is exact and later. (Looked at after the turn opened: a number
            // left from the turn before is older, so at worst the caller waits.)
            let read = self.read.load(Ordering::Acquire);
            if !ready && read & 1 == 1 && read >> 1 >= arrival {
                return None;
            }
            turn + 1
        } else if ready {
            turn + 2
        } else {
            return None;
        };
        let batches = self.batches.load(Ordering::Acquire) + 2;
        Some(Due { turn, batches })
    }

    /// Owner: it waits for others' turns until the returned guard drops (see
    /// `parked`).
    pub fn park(&self) -> Parked<'_> {
        self.parked.store(true, Ordering::SeqCst);
        self.ended.notify();
        Parked(self)
    }

    /// Another connection: waits until `due` (or the owner parks), or `deadline`.
    pub async fn settled(&self, due: Due, deadline: tokio::time::Instant) {
        let done = || {
            self.turns.load(Ordering::SeqCst) >= due.turn
                || self.batches.load(Ordering::Acquire) >= due.batches
                || self.parked.load(Ordering::SeqCst)
        };
        self.ended.wait_until(done, deadline).await;
    }
}

/// The connections that WATCH keys, with their turns and the keys they watch: a write
/// to a watched key, sent after the watcher's EXEC (or UNWATCH, DISCARD...), waits for
/// it, as its outcome depends on which runs first. Empty unless somebody watches, so a
/// write pays one atomic load.
#[derive(Debug, Default)]
pub struct Watching {
    /// How many connections watch keys.
    count: AtomicUsize,
    inner: Mutex<WatchingTable>,
}

#[derive(Debug, Default)]
struct WatchingTable {
    turns: HashMap<u64, Arc<InputTurns>>,
    /// Who watches each key, whatever its database (a write to the same name in
    /// another database waits too: rare, and only a wait).
    keys: HashMap<Vec<u8>, Vec<u64>>,
}

impl Watching {
    /// Whether any connection watches a key.
    #[inline]
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }

    /// Client `id` watches `key` (once per key: WATCH skips keys already watched).
    pub fn add(&self, id: u64, turns: &Arc<InputTurns>, key: &[u8]) {
        let mut table = self.inner.lock();
        table.turns.entry(id).or_insert_with(|| turns.clone());
        table.keys.entry(key.to_vec()).or_default().push(id);
        self.count.store(table.turns.len(), Ordering::Release);
    }

    /// Client `id` watches none of `keys` any more (all it watched).
    pub fn remove<'a>(&self, id: u64, keys: impl Iterator<Item = &'a [u8]>) {
        let mut table = self.inner.lock();
        if table.turns.remove(&id).is_none() {
            return;
        }
        for key in keys {
            if let Some(ids) = table.keys.get_mut(key) {
                ids.retain(|w| *w != id);
                if ids.is_empty() {
                    table.keys.remove(key);
                }
            }
        }
        self.count.store(table.turns.len(), Ordering::Release);
    }

    /// The watchers other than `me` that have input they have not run yet, which came
    /// before arrival number `before`, each with the turn to wait for: those watching
    /// one of `keys`, or all of them (`None`).
    pub fn unsettled(
        &self,
        me: u64,
        before: u64,
        keys: Option<&[&[u8]]>,
    ) -> Vec<(Arc<InputTurns>, Due)> {
        if !self.any() {
            return Vec::new();
        }
        let table = self.inner.lock();
        let others = |id: &&u64| **id != me;
        match keys {
            None => unsettled_before(
                table
                    .turns
                    .iter()
                    .filter(|(id, _)| others(id))
                    .map(|(_, t)| t),
                before,
            ),
            Some(keys) => {
                let mut ids: Vec<u64> = keys
                    .iter()
                    .filter_map(|key| table.keys.get(*key))
                    .flatten()
                    .filter(others)
                    .copied()
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                unsettled_before(ids.iter().filter_map(|id| table.turns.get(id)), before)
            }
        }
    }
}

/// Those of `turns` that have input which came before arrival number `arrival` and has
/// not run yet, with the turn to wait for.
pub fn unsettled_before<'a>(
    turns: impl Iterator<Item = &'a Arc<InputTurns>>,
    arrival: u64,
) -> Vec<(Arc<InputTurns>, Due)> {
    turns
        .filter_map(|t| t.unsettled_before(arrival).map(|due| (t.clone(), due)))
        .collect()
}

/// The owner waits for others' turns while this lives ([`InputTurns::park`]).
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
    /// The client id its wake-ups are recorded under ([`RECENT_ARRIVALS`]); 0 for a
    /// reader that is not a client's.
    owner: u64,
    /// The task's waker and its wrapped form.
    waker: Option<(Waker, Waker)>,
}

impl TurnReader {
    /// The reader of client `owner`'s connection.
    pub fn for_client(owner: u64) -> Self {
        TurnReader { owner, waker: None }
    }

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
            (
                task.clone(),
                ReadyWaker::wrap(turns.clone(), self.owner, task),
            )
        });
        turns.begin();
        let mut cx = Context::from_waker(waker);
        let read = tokio_util::io::poll_read_buf(Pin::new(reader), &mut cx, input);
        if matches!(read, Poll::Ready(Ok(n)) if n > 0) {
            turns.arrived();
        } else {
            turns.end();
        }
        read
    }
}

/// The server-wide arrival counter (see the module documentation). One shared counter:
/// the runtime's reactor, one thread at a time, draws most numbers.
static ARRIVALS: AtomicU64 = AtomicU64::new(1);

/// The next arrival number (never 0).
fn next_arrival() -> u64 {
    ARRIVALS.fetch_add(1, Ordering::Relaxed)
}

/// The number the next arrival will draw: every arrival so far is numbered below it.
pub fn arrivals_so_far() -> u64 {
    ARRIVALS.load(Ordering::Relaxed)
}

/// The waker a connection reads its socket with: marks it ready with the next arrival
/// number (unless already ready: the earlier input is what others wait for) and records
/// the number as client `owner`'s ([`RECENT_ARRIVALS`]), then wakes the task.
pub struct ReadyWaker {
    turns: Arc<InputTurns>,
    owner: u64,
    task: Waker,
}

impl ReadyWaker {
    /// `task`'s waker, marking `turns` (client `owner`'s) ready first.
    pub fn wrap(turns: Arc<InputTurns>, owner: u64, task: Waker) -> Waker {
        Waker::from(Arc::new(ReadyWaker { turns, owner, task }))
    }
}

impl Wake for ReadyWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // A plain store, as the flag it replaced: only the runtime's reactor wakes a
        // socket's reader, and the owner only ever clears the mark.
        let ready_at = &self.turns.ready_at;
        if ready_at.load(Ordering::SeqCst) == 0 {
            let arrival = next_arrival();
            ready_at.store(arrival, Ordering::SeqCst);
            RECENT_ARRIVALS.record(arrival, self.owner);
        }
        self.task.wake_by_ref();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_socket_or_an_open_turn_is_unsettled() {
        let turns = Arc::new(InputTurns::default());
        assert_eq!(turns.unsettled_before(u64::MAX), None);
        let waker = ReadyWaker::wrap(turns.clone(), 0, Waker::noop().clone());
        waker.wake_by_ref();
        assert_eq!(turns.unsettled_before(u64::MAX).map(|d| d.turn), Some(2));
        turns.begin();
        assert_eq!(turns.unsettled_before(u64::MAX).map(|d| d.turn), Some(2));
        turns.end();
        assert_eq!(turns.unsettled_before(u64::MAX), None);
        waker.wake();
        // Readable again after a turn: another whole turn is needed.
        assert_eq!(turns.unsettled_before(u64::MAX).map(|d| d.turn), Some(4));
    }

    #[test]
    fn only_input_that_came_earlier_is_waited_for() {
        let (early, late) = (
            Arc::new(InputTurns::default()),
            Arc::new(InputTurns::default()),
        );
        let wake_early = ReadyWaker::wrap(early.clone(), 0, Waker::noop().clone());
        let wake_late = ReadyWaker::wrap(late.clone(), 0, Waker::noop().clone());
        wake_early.wake_by_ref();
        wake_late.wake_by_ref();
        // The later reader opens its turn and reads: its input takes its wake-up's number.
        late.begin();
        late.arrived();
        let arrival = late.arrival();
        assert_eq!(late.waits_before(), arrival);
        assert!(early.unsettled_before(arrival).is_some());
        assert_eq!(late.unsettled_before(arrival), None);
        // Once the earlier one reads, its number is below, so it is still waited for
        // while its turn is open, and not after.
        early.begin();
        early.arrived();
        assert!(early.arrival() < arrival);
        assert!(early.unsettled_before(arrival).is_some());
        early.end();
        assert_eq!(early.unsettled_before(arrival), None);
        // A second wake-up before the read keeps the first number.
        wake_early.wake_by_ref();
        wake_early.wake_by_ref();
        early.begin();
        early.arrived();
        let first = early.arrival();
        // A read without a wake-up draws a fresh, later number; so does input that ran
        // only after its client was served.
        early.end();
        early.begin();
        early.arrived();
        assert!(early.arrival() > first);
        // Its input may have come before that number: a caller that came after the
        // earlier wake-up still waits for the turn, and its own commands wait for all.
        assert!(early.unsettled_before(first + 1).is_some());
        assert_eq!(early.waits_before(), u64::MAX);
        let before = early.arrival();
        early.resumed();
        assert!(early.arrival() > before);
    }

    #[test]
    fn a_write_looks_at_the_watchers_of_its_keys_only() {
        let watching = Watching::default();
        let (a, b) = (
            Arc::new(InputTurns::default()),
            Arc::new(InputTurns::default()),
        );
        watching.add(1, &a, b"k1");
        watching.add(1, &a, b"k2");
        watching.add(2, &b, b"k2");
        a.begin();
        b.begin();
        let ids = |found: Vec<(Arc<InputTurns>, Due)>| {
            let mut ids: Vec<u64> = found
                .iter()
                .map(|(t, _)| if Arc::ptr_eq(t, &a) { 1 } else { 2 })
                .collect();
            ids.sort_unstable();
            ids
        };
        assert_eq!(ids(watching.unsettled(9, u64::MAX, Some(&[b"k1"]))), [1]);
        assert_eq!(
            ids(watching.unsettled(9, u64::MAX, Some(&[b"k2", b"k1"]))),
            [1, 2]
        );
        assert_eq!(
            ids(watching.unsettled(9, u64::MAX, Some(&[b"other"]))),
            Vec::<u64>::new()
        );
        assert_eq!(ids(watching.unsettled(1, u64::MAX, None)), [2]);
        // A watcher with nothing unread is not waited for.
        b.end();
        assert_eq!(ids(watching.unsettled(9, u64::MAX, Some(&[b"k2"]))), [1]);
        watching.remove(1, [&b"k1"[..], b"k2"].into_iter());
        assert_eq!(
            ids(watching.unsettled(9, u64::MAX, None)),
            Vec::<u64>::new()
        );
        assert!(watching.any());
        watching.remove(2, [&b"k2"[..]].into_iter());
        assert!(!watching.any());
    }

    #[tokio::test]
    async fn a_turn_left_open_settles_after_two_batches() {
        let turns = Arc::new(InputTurns::default());
        turns.begin();
        let due = turns.unsettled_before(u64::MAX).unwrap();
        turns.batch_ran();
        let owner = turns.clone();
        let streamer = tokio::spawn(async move {
            tokio::task::yield_now().await;
            // Still reading (a client streaming commands): the turn stays open.
            owner.batch_ran();
        });
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        turns.settled(due, deadline).await;
        assert!(tokio::time::Instant::now() < deadline);
        assert!(turns.unsettled_before(u64::MAX).is_some());
        streamer.await.unwrap();
    }

    #[tokio::test]
    async fn settled_returns_when_the_turn_ends() {
        let turns = Arc::new(InputTurns::default());
        turns.begin();
        let target = turns.unsettled_before(u64::MAX).unwrap();
        let owner = turns.clone();
        let ender = tokio::spawn(async move {
            tokio::task::yield_now().await;
            owner.end();
        });
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        turns.settled(target, deadline).await;
        assert_eq!(turns.unsettled_before(u64::MAX), None);
        ender.await.unwrap();
    }
}
