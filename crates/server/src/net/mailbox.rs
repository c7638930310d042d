//! Bytes other connections hand to this one: pub/sub messages, and the reply to a
//! blocking command that another connection's push served. The owner drains it into its
//! output buffer between reads; writers only append under a short lock and wake it.
//!
//! The mailbox is where Redis's output-buffer limits for pub/sub clients apply: a
//! subscriber that does not read lets its mailbox grow, and past the hard limit (or past
//! the soft limit for longer than allowed) the writer reports it so the client can be
//! disconnected. Memory per slow subscriber is therefore bounded.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Waker;
use std::time::Instant;

use bytes::BytesMut;
use parking_lot::Mutex;
use redline_resp::Protocol;
use tokio::sync::Notify;

use super::client_memory::{ClientMemory, IDLE_REPLY_BUFFER};
use super::input_turns::InputTurns;
use super::signal::Signal;
use crate::config::OutputBufferLimit;

/// A connection's inbox.
#[derive(Debug, Default)]
pub struct Mailbox {
    state: Mutex<State>,
    notify: Notify,
    resp3: AtomicBool,
    /// The owner has a pub/sub subscription (it may then get RESP2 invalidations).
    subscribed: AtomicBool,
    /// Bytes of the owner's replies being written to its socket (CLIENT LIST `omem`).
    unsent: AtomicUsize,
    /// What the owner holds apart from its messages (`ClientFigures::held`).
    held: AtomicUsize,
    /// What this client last added to the `maxmemory-clients` total.
    counted: AtomicUsize,
    /// Taken out of the total for good (evicted or closed): a recount by its connection,
    /// still finishing its batch, must not add it back, or the next eviction would close
    /// another client for memory already on its way back.
    forgotten: AtomicBool,
    /// CLIENT NO-EVICT on: counted, never evicted.
    no_evict: AtomicBool,
    /// The owner has been idle long enough to give back its buffers' memory.
    trim: AtomicBool,
    /// Wakes the owner for it while it waits for input.
    trim_waker: Mutex<Option<Waker>>,
    /// The `maxmemory-clients` total, once the owner connection is served.
    accounting: OnceLock<Arc<ClientMemory>>,
    /// Deliveries so far, numbered for [`Mailbox::written_through`].
    delivered: AtomicU64,
    /// Deliveries the owner has written to its socket.
    written: AtomicU64,
    /// Shard channels the cluster unsubscribed the owner from (`State::dropped_shard`).
    shard_dropped: AtomicBool,
    /// Told when `written` moves: a subscriber's every delivery moves it, and only a
    /// waiter makes that cost a notification.
    on_written: Signal,
    /// The owner waits for messages with nothing else to do, so it writes them at once.
    listening: AtomicBool,
    /// Whether the owner has input a publisher must let it run first.
    input_turns: Arc<InputTurns>,
}

#[derive(Debug, Default)]
struct State {
    pending: BytesMut,
    /// Since when the pending bytes are over the soft limit.
    soft_since: Option<Instant>,
    /// Over a limit: nothing more is accepted, the owner is being disconnected.
    overflowed: bool,
    /// What the owner held when client eviction closed it, until its connection freed it.
    closing: usize,
    /// The owner's connection has freed its buffers.
    freed: bool,
    /// Shard channels the cluster unsubscribed the owner from, for it to forget.
    dropped_shard: Vec<bytes::Bytes>,
}

impl Mailbox {
    /// Appends `bytes` and wakes the owner. Returns false when the owner's output
    /// (CLIENT LIST `omem`: these messages and the replies it is writing) is over `limit`
    /// (the caller then disconnects the owner); the bytes are then dropped.
    pub fn push(&self, bytes: &[u8], limit: &OutputBufferLimit) -> bool {
        let mut state = self.state.lock();
        if state.overflowed {
            return false;
        }
        state.pending.extend_from_slice(bytes);
        if self.overflows(&mut state, limit) {
            return false;
        }
        let pending = state.pending.len();
        drop(state);
        self.recount_with(pending);
        self.notify.notify_one();
        true
    }

    /// Whether the owner's output (messages waiting and replies being written) is past
    /// `limit` now: the soft limit runs out also while nothing more arrives, as Redis's
    /// client cron finds it. The messages are then dropped, as [`Mailbox::push`] does.
    pub fn over_limit_now(&self, limit: &OutputBufferLimit) -> bool {
        let mut state = self.state.lock();
        !state.overflowed && self.overflows(&mut state, limit)
    }

    /// Checks the output (CLIENT LIST `omem`) against `limit`; past it, marks the
    /// mailbox overflowed and drops its messages.
    fn overflows(&self, state: &mut State, limit: &OutputBufferLimit) -> bool {
        let len = (state.pending.len() + self.unsent.load(Ordering::Relaxed)) as u64;
        if !limit.exceeded(len, &mut state.soft_since) {
            return false;
        }
        state.overflowed = true;
        state.pending = BytesMut::new();
        true
    }

    /// Appends a reply that must be delivered whatever the limits (a served blocking
    /// command), and wakes the owner.
    pub fn deliver(&self, bytes: &[u8]) -> u64 {
        let (pending, number) = {
            let mut state = self.state.lock();
            state.pending.extend_from_slice(bytes);
            (
                state.pending.len(),
                self.delivered.fetch_add(1, Ordering::Relaxed) + 1,
            )
        };
        self.recount_with(pending);
        self.notify.notify_one();
        number
    }

    /// The cluster unsubscribed the owner from shard channel `channel` (its slot moved
    /// away) and tells it with `notice`; the owner forgets the channel before its next
    /// command ([`Mailbox::take_dropped_shard_channels`]).
    pub fn drop_shard_channel(&self, channel: bytes::Bytes, notice: &[u8]) {
        self.state.lock().dropped_shard.push(channel);
        self.shard_dropped.store(true, Ordering::SeqCst);
        self.deliver(notice);
    }

    /// The shard channels dropped since the last call (one load when none).
    #[inline]
    pub fn take_dropped_shard_channels(&self) -> Option<Vec<bytes::Bytes>> {
        if !self.shard_dropped.load(Ordering::Relaxed) {
            return None;
        }
        self.shard_dropped.store(false, Ordering::SeqCst);
        Some(std::mem::take(&mut self.state.lock().dropped_shard))
    }

    /// Deliveries so far: after a [`Mailbox::drain_into`], what was taken goes at least
    /// this far.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// The owner wrote to its socket the deliveries up to `number`.
    pub fn written_through(&self, number: u64) {
        if self.written.fetch_max(number, Ordering::SeqCst) < number {
            self.on_written.notify();
        }
    }

    /// Waits, until `deadline` at most, until the owner has written delivery `number`
    /// to its socket; at once when the owner is busy elsewhere (it writes the delivery
    /// with its next replies, holding it meanwhile as Redis holds a reply it could not
    /// write).
    pub async fn written(&self, number: u64, deadline: tokio::time::Instant) {
        let done = || {
            self.written.load(Ordering::SeqCst) >= number || !self.listening.load(Ordering::Acquire)
        };
        self.on_written.wait_until(done, deadline).await;
    }

    /// Marks the owner as waiting for messages with nothing else to do, until the
    /// returned guard drops.
    pub fn listening(&self) -> Listening<'_> {
        self.listening.store(true, Ordering::Release);
        Listening(self)
    }

    /// Moves everything pending to `out`.
    pub fn drain_into(&self, out: &mut BytesMut) {
        let mut state = self.state.lock();
        if !state.pending.is_empty() {
            out.extend_from_slice(&state.pending);
            state.pending.clear();
            // Given back past a small message's size: Redis holds a client's messages in
            // its one reply buffer, and a second buffer kept here would be memory Redis
            // does not use. Kept, a burst of invalidations (a maxmemory eviction's, to
            // every tracking client) stays allocated and counted in `used_memory`,
            // evicting more keys, whose invalidations grow it further.
            if state.pending.capacity() > IDLE_REPLY_BUFFER {
                state.pending = BytesMut::new();
            }
        }
        // The soft limit's clock runs on: the owner may still be writing what it took
        // (`unsent`); the next check stops it once the output is under the limit.
    }

    /// Records how many reply bytes the owner is writing (0 once written).
    pub fn set_unsent(&self, bytes: usize) {
        self.unsent.store(bytes, Ordering::Relaxed);
    }

    /// Output waiting for the client: replies being written and messages not yet
    /// taken (CLIENT LIST `omem`).
    pub fn output_bytes(&self) -> usize {
        self.unsent.load(Ordering::Relaxed) + self.pending_bytes()
    }

    /// Messages not yet taken.
    pub fn pending_bytes(&self) -> usize {
        self.state.lock().pending.len()
    }

    /// Counts this client in `memory` (`maxmemory-clients`) from now on.
    pub fn account_in(&self, memory: Arc<ClientMemory>) {
        let _ = self.accounting.set(memory);
    }

    /// Records what the owner holds apart from its messages (`ClientFigures::held`).
    pub fn set_held(&self, bytes: usize) {
        self.held.store(bytes, Ordering::Relaxed);
    }

    /// Brings this client's part of the `maxmemory-clients` total up to date: what its
    /// connection holds and the messages waiting.
    pub fn recount(&self) {
        if self.accounting.get().is_some_and(|m| m.enabled()) {
            let pending = self.state.lock().pending.len();
            self.recount_with(pending);
        }
    }

    fn recount_with(&self, pending: usize) {
        let Some(memory) = self.accounting.get().filter(|m| m.enabled()) else {
            return;
        };
        if self.forgotten.load(Ordering::SeqCst) {
            return;
        }
        let now = self.held.load(Ordering::Relaxed) + pending;
        let before = self.counted.swap(now, Ordering::SeqCst);
        memory.change(before, now);
        // A `forget` between the check and the swap: whichever swap came last, the
        // figure ends at 0.
        if self.forgotten.load(Ordering::SeqCst) {
            let left = self.counted.swap(0, Ordering::SeqCst);
            memory.change(left, 0);
        }
    }

    /// What this client counts for in the `maxmemory-clients` total.
    pub fn memory(&self) -> usize {
        self.counted.load(Ordering::Relaxed)
    }

    /// Client eviction closes the owner: what it held (`bytes`) counts as freed for
    /// `maxmemory` from now on, as in Redis, until the connection has freed it.
    pub fn evicted(&self, bytes: usize) {
        let Some(closing) = self.accounting.get().and_then(|m| m.closing()) else {
            return;
        };
        let mut state = self.state.lock();
        if !state.freed {
            closing.change(0, bytes);
            state.closing += bytes;
        }
    }

    /// The owner's connection freed its buffers: drops the messages waiting too, and
    /// what [`Mailbox::evicted`] counted.
    pub fn freed(&self) {
        let mut state = self.state.lock();
        state.freed = true;
        state.pending = BytesMut::new();
        let bytes = std::mem::take(&mut state.closing);
        if let Some(closing) = self.accounting.get().and_then(|m| m.closing()) {
            closing.change(bytes, 0);
        }
    }

    /// Takes this client out of the total for good (it is closing).
    pub fn forget(&self) {
        self.forgotten.store(true, Ordering::SeqCst);
        if let Some(memory) = self.accounting.get() {
            let before = self.counted.swap(0, Ordering::SeqCst);
            memory.change(before, 0);
        }
    }

    /// Asks the owner, idle, to trim its buffers (it wakes for it).
    pub fn request_trim(&self) {
        if !self.trim.swap(true, Ordering::SeqCst) {
            self.notify.notify_one();
            if let Some(waker) = self.trim_waker.lock().as_ref() {
                waker.wake_by_ref();
            }
        }
    }

    /// Whether a trim was asked for since the last call (one load when not).
    pub fn take_trim(&self) -> bool {
        self.trim.load(Ordering::SeqCst) && self.trim.swap(false, Ordering::SeqCst)
    }

    /// The waker [`Mailbox::request_trim`] wakes, registered before the owner checks
    /// [`Mailbox::take_trim`] so a request between the two is not missed.
    pub fn register_trim_waker(&self, waker: &Waker) {
        *self.trim_waker.lock() = Some(waker.clone());
    }

    /// CLIENT NO-EVICT.
    pub fn set_no_evict(&self, on: bool) {
        self.no_evict.store(on, Ordering::Relaxed);
    }

    /// Whether client eviction passes over this client.
    pub fn no_evict(&self) -> bool {
        self.no_evict.load(Ordering::Relaxed)
    }

    /// Waits until something is pushed (returns at once if something was pushed since the
    /// last wait).
    pub async fn wait(&self) {
        self.notify.notified().await
    }

    /// The protocol messages for the owner are encoded in.
    pub fn protocol(&self) -> Protocol {
        if self.resp3.load(Ordering::Relaxed) {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        }
    }

    /// The owner's input turns: a PUBLISH lets a listener run the commands it has
    /// already received first (see [`InputTurns`]).
    pub fn input_turns(&self) -> &Arc<InputTurns> {
        &self.input_turns
    }

    /// Whether the owner is subscribed to something.
    pub fn subscribed(&self) -> bool {
        self.subscribed.load(Ordering::Relaxed)
    }

    /// Records whether the owner is subscribed to something.
    pub fn set_subscribed(&self, on: bool) {
        self.subscribed.store(on, Ordering::Relaxed);
    }

    /// Records the owner's protocol (after HELLO / RESET).
    pub fn set_protocol(&self, protocol: Protocol) {
        self.resp3
            .store(protocol == Protocol::Resp3, Ordering::Relaxed);
    }
}

/// The owner waits for messages ([`Mailbox::listening`]) while this lives.
pub struct Listening<'a>(&'a Mailbox);

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        self.0.listening.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_limit_drops_and_reports() {
        let m = Mailbox::default();
        let limit = OutputBufferLimit {
            hard: 10,
            soft: 0,
            soft_seconds: 0,
        };
        assert!(m.push(b"12345", &limit));
        assert!(!m.push(b"1234567", &limit));
        assert!(!m.push(b"1", &limit));
        let mut out = BytesMut::new();
        m.drain_into(&mut out);
        assert!(out.is_empty());
    }
}
