//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN, ...): who waits for which key, in
//! the order their commands arrived.
//!
//! Redis's model, kept exactly: a blocked client is served by the connection whose
//! write made its key ready, right after that write's command, so elements go to waiters
//! strictly first-come first-served and nobody can steal an element in between. The
//! serving code lives in `cmd::blocking`; this file is only the table.
//!
//! Lock order: this registry, then shards. A blocking command takes the registry before
//! it looks at its keys, so a push either happens before the look (the command finds the
//! element) or after the registration (the push signals the key). Pushes themselves never
//! take the registry: they record ready keys in their own connection state.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard};
use redline_resp::Protocol;

use crate::net::mailbox::Mailbox;
use crate::store::ready::{key_class, WaitKind, WaitedKeys};

/// What a blocked command does once one of its keys is ready.
#[derive(Debug, Clone)]
pub enum BlockOp {
    /// BLPOP / BRPOP: `[key, element]`.
    Pop {
        /// From the head.
        left: bool,
    },
    /// BLMOVE / BRPOPLPUSH: the moved element.
    Move {
        /// Destination list.
        dst: Bytes,
        /// Pop from the head.
        from_left: bool,
        /// Push to the head.
        to_left: bool,
        /// BRPOPLPUSH, replicated as RPOPLPUSH (BLMOVE as LMOVE), as in Redis.
        rpoplpush: bool,
    },
    /// BLMPOP: `[key, [elements]]`.
    MPop {
        /// From the head.
        left: bool,
        /// At most this many.
        count: usize,
    },
    /// BZPOPMIN / BZPOPMAX: `[key, member, score]`.
    ZPop {
        /// Highest scores first.
        max: bool,
    },
    /// BZMPOP: `[key, [[member, score], ...]]`.
    ZMPop {
        /// Highest scores first.
        max: bool,
        /// At most this many.
        count: usize,
    },
    /// XREAD / XREADGROUP: `[[key, [entries]]]`.
    Stream(Box<StreamRead>),
}

/// A blocked XREAD / XREADGROUP.
#[derive(Debug, Clone)]
pub struct StreamRead {
    /// Where each key is read from, in the waiter's key order.
    pub from: Vec<crate::cmd::streams::ReadFrom>,
    /// XREADGROUP's group and consumer.
    pub group: Option<(Bytes, Bytes)>,
    /// COUNT (0 = all).
    pub count: usize,
    /// NOACK.
    pub noack: bool,
}

impl BlockOp {
    /// Whether the op waits for a sorted set (else a list).
    pub fn wants_zset(&self) -> bool {
        matches!(self, BlockOp::ZPop { .. } | BlockOp::ZMPop { .. })
    }

    /// The type it waits for.
    pub fn kind(&self) -> WaitKind {
        match self {
            BlockOp::Pop { .. } | BlockOp::Move { .. } | BlockOp::MPop { .. } => WaitKind::List,
            BlockOp::ZPop { .. } | BlockOp::ZMPop { .. } => WaitKind::Zset,
            BlockOp::Stream(_) => WaitKind::Stream,
        }
    }
}

/// One blocked client.
#[derive(Debug)]
pub struct Waiter {
    /// The client's id.
    pub client_id: u64,
    /// Database of the keys.
    pub db: usize,
    /// Keys it waits on, in the command's order.
    pub keys: Vec<Bytes>,
    /// What to do when served.
    pub op: BlockOp,
    /// The client's protocol when it blocked.
    pub proto: Protocol,
    /// CLIENT REPLY OFF or SKIP when it blocked: its reply is dropped (the wait still
    /// ends), as Redis keeps a blocked client's reply flags until it is unblocked.
    pub silent: bool,
    /// Where the reply goes.
    pub mailbox: Arc<Mailbox>,
    /// Whether the client is connected over TLS (which port a redirection names).
    pub tls: bool,
    /// Set (under the registry lock) once the reply is in the mailbox.
    pub served: AtomicBool,
    /// Whether it blocked with a timeout (INFO's `clients_in_timeout_table`).
    pub timed: bool,
    /// The arrival number of the input its command came in
    /// ([`crate::net::input_turns::InputTurns::arrival`]): its place in each queue.
    pub arrived: u64,
}

impl Waiter {
    /// Whether the reply has been delivered.
    pub fn is_served(&self) -> bool {
        self.served.load(Ordering::Acquire)
    }
}

/// The table itself, reached through [`Blocking::lock`].
#[derive(Debug, Default)]
pub struct Registry {
    by_key: HashMap<(usize, Bytes), VecDeque<Arc<Waiter>>>,
    /// Stream keys blocking reads named lately, and when last (see
    /// [`Blocking::may_have_stream_waits`]).
    stream_waits: HashMap<(usize, Bytes), Instant>,
    /// How many waiters wait for each [`WaitKind`] (indexed by it).
    kinds: [usize; 3],
}

impl Registry {
    /// Every waiter for `key` of `db`, oldest first.
    pub fn all(&self, db: usize, key: &Bytes) -> Vec<Arc<Waiter>> {
        self.by_key
            .get(&(db, key.clone()))
            .map(|q| q.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Of the first `count` waiters for `key` of `db` (all when fewer), the one that
    /// queued last (by arrival); `None` when nobody waits.
    pub fn last_served(&self, db: usize, key: &Bytes, count: usize) -> Option<&Arc<Waiter>> {
        let queue = self.by_key.get(&(db, key.clone()))?;
        queue.get(count.min(queue.len()).checked_sub(1)?)
    }

    /// The waiter of client `id`, if it is blocked.
    pub fn of_client(&self, id: u64) -> Option<Arc<Waiter>> {
        self.by_key
            .values()
            .flat_map(|q| q.iter())
            .find(|w| w.client_id == id && !w.is_served())
            .cloned()
    }

    /// Every waiter not served yet, once each.
    pub fn waiters(&self) -> Vec<Arc<Waiter>> {
        let mut all: Vec<Arc<Waiter>> = Vec::new();
        for waiter in self.by_key.values().flat_map(|q| q.iter()) {
            if !waiter.is_served() && !all.iter().any(|w| Arc::ptr_eq(w, waiter)) {
                all.push(waiter.clone());
            }
        }
        all
    }

    /// Every key someone waits on.
    pub fn keys(&self) -> Vec<(usize, Bytes)> {
        self.by_key.keys().cloned().collect()
    }

    /// Whether a blocking XREAD or XREADGROUP named `key` of `db` in the last
    /// [`STREAM_WAITS_KEPT`].
    pub fn had_stream_waits(&self, db: usize, key: &Bytes) -> bool {
        self.stream_waits
            .get(&(db, key.clone()))
            .is_some_and(|at| at.elapsed() < STREAM_WAITS_KEPT)
    }

    /// Whether some client waits for a `kind` (Redis's `blocked_clients_by_type`): a
    /// key signalled for a kind nobody waits for wakes nobody.
    pub fn waits_for(&self, kind: WaitKind) -> bool {
        self.kinds[kind as usize] > 0
    }

    fn add(&mut self, waiter: &Arc<Waiter>) {
        self.kinds[waiter.op.kind() as usize] += 1;
        for key in &waiter.keys {
            let queue = self.by_key.entry((waiter.db, key.clone())).or_default();
            // BLPOP k k: wait once per key.
            if queue.iter().any(|w| Arc::ptr_eq(w, waiter)) {
                continue;
            }
            // In arrival order: a command that came first but ran second (its
            // connection's worker was busier) still goes first, as in Redis. Nearly
            // always the back.
            let place = queue
                .iter()
                .rposition(|w| w.arrived <= waiter.arrived)
                .map_or(0, |i| i + 1);
            queue.insert(place, waiter.clone());
        }
    }

    /// Removes `waiter` from every queue; false if it was not there.
    fn remove(&mut self, waiter: &Arc<Waiter>) -> bool {
        let mut found = false;
        for key in &waiter.keys {
            let slot = (waiter.db, key.clone());
            if let Some(queue) = self.by_key.get_mut(&slot) {
                let before = queue.len();
                queue.retain(|w| !Arc::ptr_eq(w, waiter));
                found |= queue.len() != before;
                if queue.is_empty() {
                    self.by_key.remove(&slot);
                }
            }
        }
        if found {
            self.kinds[waiter.op.kind() as usize] -= 1;
        }
        found
    }
}

/// How CLIENT UNBLOCK reaches a client blocked in WAIT: `true` to end it with the
/// UNBLOCKED error, `false` to answer as if its timeout had passed.
pub type ReplicaWaitEnd = tokio::sync::oneshot::Receiver<bool>;

/// How long a stream key a blocking read named counts as one clients block on.
pub const STREAM_WAITS_KEPT: Duration = Duration::from_secs(10);

/// The bit of [`Blocking::stream_wait_bits`] that stands for `key`.
fn stream_wait_bit(key: &[u8]) -> u64 {
    1 << key_class(key)
}

/// What [`Blocking::count_waiting`] returns: that a blocking command counted its keys as
/// waited on while it still held their shards, so [`RegistryGuard::block`] can register
/// it.
#[must_use]
pub struct WaitCounted(());

/// Blocked clients, server-wide.
#[derive(Debug, Default)]
pub struct Blocking {
    registry: Mutex<Registry>,
    /// A bit for each key of the registry's `stream_waits` (see [`stream_wait_bit`]), so
    /// a write looks at its keys with one load and locks nothing while they are none of
    /// them.
    stream_wait_bits: AtomicU64,
    /// Shared with the shards, which signal only the keys it may count
    /// ([`crate::store::ready`]).
    waited: Arc<WaitedKeys>,
    blocked: AtomicUsize,
    /// Blocked clients that blocked with a timeout, WAIT aside: Redis's timeout table.
    timed: AtomicUsize,
    /// Clients in WAIT, by client id (kept apart from `blocked`, which writes check),
    /// and whether each waits with a timeout.
    replica_waits: Mutex<HashMap<u64, (tokio::sync::oneshot::Sender<bool>, bool)>>,
}

/// The locked registry, with the counters it keeps in step.
pub struct RegistryGuard<'a> {
    guard: MutexGuard<'a, Registry>,
    blocking: &'a Blocking,
}

impl std::ops::Deref for RegistryGuard<'_> {
    type Target = Registry;
    fn deref(&self) -> &Registry {
        &self.guard
    }
}

impl RegistryGuard<'_> {
    /// Registers a blocked client, whose keys [`Blocking::count_waiting`] counted.
    pub fn block(&mut self, waiter: &Arc<Waiter>, _counted: WaitCounted) {
        self.guard.add(waiter);
        self.blocking.blocked.fetch_add(1, Ordering::Relaxed);
        if waiter.timed {
            self.blocking.timed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records that a blocking XREAD or XREADGROUP named `keys` of `db` (whether it
    /// blocked or was served at once).
    pub fn note_stream_wait(&mut self, db: usize, keys: &[Bytes]) {
        let now = Instant::now();
        for key in keys {
            match self.guard.stream_waits.get_mut(&(db, key.clone())) {
                Some(at) => *at = now,
                // Copied: the key is a view into the request's read buffer, which it
                // would keep allocated for as long as it is remembered.
                None => {
                    let key = Bytes::copy_from_slice(key);
                    self.guard.stream_waits.insert((db, key), now);
                }
            }
            self.blocking
                .stream_wait_bits
                .fetch_or(stream_wait_bit(key), Ordering::Relaxed);
        }
    }

    /// Counts `waiter`, just removed, out.
    fn forget(&self, waiter: &Waiter) {
        self.blocking.blocked.fetch_sub(1, Ordering::Relaxed);
        if waiter.timed {
            self.blocking.timed.fetch_sub(1, Ordering::Relaxed);
        }
        for key in &waiter.keys {
            self.blocking.waited.uncount(key);
        }
    }

    /// Delivers `reply` to `waiter` and forgets it.
    pub fn serve(&mut self, waiter: &Arc<Waiter>, reply: &[u8]) {
        if self.guard.remove(waiter) {
            self.forget(waiter);
        }
        waiter.served.store(true, Ordering::Release);
        waiter
            .mailbox
            .deliver(if waiter.silent { &[] } else { reply });
    }

    /// Forgets `waiter` without a reply (timeout, disconnect). Returns false when it was
    /// served meanwhile (its reply is in its mailbox).
    pub fn cancel(&mut self, waiter: &Arc<Waiter>) -> bool {
        if waiter.is_served() {
            return false;
        }
        if self.guard.remove(waiter) {
            self.forget(waiter);
        }
        true
    }
}

impl Blocking {
    /// The registry of a server whose shards look at `waited` (the store's
    /// [`crate::store::KeyEvents::waited`]) before they signal a key.
    pub fn new(waited: Arc<WaitedKeys>) -> Blocking {
        Blocking {
            waited,
            ..Blocking::default()
        }
    }

    /// Locks the registry (before any shard).
    pub fn lock(&self) -> RegistryGuard<'_> {
        RegistryGuard {
            guard: self.registry.lock(),
            blocking: self,
        }
    }

    /// Counts `keys` as waited on, for a blocking command about to block on them. It
    /// must count while it still holds their shards after finding them empty: a write
    /// to one of them then either came before (and the command found what it wrote) or
    /// sees the count when it ends, and signals the key ([`Blocking::may_be_waited_on`]).
    pub fn count_waiting(&self, keys: &[Bytes]) -> WaitCounted {
        for key in keys {
            self.waited.count(key);
        }
        WaitCounted(())
    }

    /// Whether a client may be blocked on `key` (in any database): false when no
    /// blocked client waits on a key of its class, so a write need not signal it.
    #[inline]
    pub fn may_be_waited_on(&self, key: &[u8]) -> bool {
        self.waited.may_be_waited_on(key)
    }

    /// Whether a blocking stream read may have named `key` lately (any database): one
    /// relaxed load; [`Registry::had_stream_waits`] answers exactly.
    #[inline]
    pub fn may_have_stream_waits(&self, key: &[u8]) -> bool {
        let bits = self.stream_wait_bits.load(Ordering::Relaxed);
        bits != 0 && bits & stream_wait_bit(key) != 0
    }

    /// Whether any stream key counts as one clients block on.
    #[inline]
    pub fn any_stream_waits(&self) -> bool {
        self.stream_wait_bits.load(Ordering::Relaxed) != 0
    }

    /// Forgets the stream keys no blocking read named for [`STREAM_WAITS_KEPT`] (the
    /// cron's).
    pub fn forget_old_stream_waits(&self) {
        if !self.any_stream_waits() {
            return;
        }
        let mut registry = self.registry.lock();
        registry
            .stream_waits
            .retain(|_, at| at.elapsed() < STREAM_WAITS_KEPT);
        let bits = registry
            .stream_waits
            .keys()
            .fold(0, |bits, (_, key)| bits | stream_wait_bit(key));
        self.stream_wait_bits.store(bits, Ordering::Relaxed);
    }

    /// Whether any client is blocked: one relaxed load, checked after each write command.
    #[inline]
    pub fn any(&self) -> bool {
        self.blocked.load(Ordering::Relaxed) > 0
    }

    /// Number of blocked clients, WAIT included (INFO `blocked_clients`).
    pub fn count(&self) -> usize {
        self.blocked.load(Ordering::Relaxed) + self.replica_waits.lock().len()
    }

    /// Blocked clients that blocked with a timeout, WAIT included (INFO
    /// `clients_in_timeout_table`).
    pub fn timed_count(&self) -> usize {
        let waits = self.replica_waits.lock();
        self.timed.load(Ordering::Relaxed) + waits.values().filter(|(_, timed)| *timed).count()
    }

    /// Client `id` starts waiting in WAIT (`timed`: with a timeout); CLIENT UNBLOCK ends
    /// it through the receiver. [`Blocking::end_replica_wait`] must follow, however the
    /// wait ends (the connection's end included).
    pub fn begin_replica_wait(&self, id: u64, timed: bool) -> ReplicaWaitEnd {
        let (end, ended) = tokio::sync::oneshot::channel();
        self.replica_waits.lock().insert(id, (end, timed));
        ended
    }

    /// Client `id`'s WAIT is over.
    pub fn end_replica_wait(&self, id: u64) {
        self.replica_waits.lock().remove(&id);
    }

    /// CLIENT UNBLOCK of a client in WAIT, with the UNBLOCKED error or as a timeout;
    /// false when client `id` is not in WAIT.
    pub fn unblock_replica_wait(&self, id: u64, with_error: bool) -> bool {
        match self.replica_waits.lock().remove(&id) {
            Some((end, _)) => end.send(with_error).is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter(client_id: u64, keys: &[&'static [u8]], arrived: u64) -> Arc<Waiter> {
        Arc::new(Waiter {
            client_id,
            db: 0,
            keys: keys.iter().map(|k| Bytes::from_static(k)).collect(),
            op: BlockOp::Pop { left: true },
            proto: Protocol::Resp2,
            silent: false,
            mailbox: Arc::new(Mailbox::default()),
            tls: false,
            served: AtomicBool::new(false),
            timed: false,
            arrived,
        })
    }

    #[test]
    fn waiters_queue_in_the_order_their_commands_arrived() {
        let blocking = Blocking::default();
        let key = Bytes::from_static(b"k");
        let mut registry = blocking.lock();
        // Client 2's command came second but ran first; client 3's came last.
        for w in [
            waiter(2, &[b"k"], 20),
            waiter(3, &[b"k", b"other"], 30),
            waiter(1, &[b"k", b"k"], 10),
        ] {
            let counted = blocking.count_waiting(&w.keys);
            registry.block(&w, counted);
        }
        let order: Vec<u64> = registry.all(0, &key).iter().map(|w| w.client_id).collect();
        assert_eq!(order, [1, 2, 3]);
        let other = Bytes::from_static(b"other");
        let last = |key: &Bytes, count| registry.last_served(0, key, count).map(|w| w.client_id);
        assert_eq!(last(&other, 1), Some(3));
        assert_eq!(last(&key, 1), Some(1));
        assert_eq!(last(&key, 2), Some(2));
        assert_eq!(last(&key, usize::MAX), Some(3));
        assert_eq!(last(&key, 0), None);
        assert!(registry.last_served(1, &key, 1).is_none());
        assert_eq!(blocking.count(), 3);
    }

    #[test]
    fn keys_count_as_waited_on_until_their_last_waiter_goes() {
        let blocking = Blocking::default();
        assert!(!blocking.may_be_waited_on(b"k"));
        let (one, two) = (waiter(1, &[b"k", b"k"], 10), waiter(2, &[b"k", b"j"], 20));
        let mut registry = blocking.lock();
        for w in [&one, &two] {
            let counted = blocking.count_waiting(&w.keys);
            registry.block(w, counted);
        }
        assert!(blocking.may_be_waited_on(b"k") && blocking.may_be_waited_on(b"j"));
        registry.serve(&one, b"+OK\r\n");
        assert!(blocking.may_be_waited_on(b"k"));
        assert!(registry.cancel(&two));
        assert!(!blocking.may_be_waited_on(b"k") && !blocking.may_be_waited_on(b"j"));
        // Gone already: nothing is counted out twice.
        registry.cancel(&two);
        assert!(!blocking.may_be_waited_on(b"k") && !blocking.may_be_waited_on(b"j"));
    }
}
