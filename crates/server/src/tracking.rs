//! Server-assisted client-side caching (Redis's `tracking.c`): CLIENT TRACKING.
//!
//! Two modes, as in Redis. In the default mode the server remembers, per key name
//! (whatever the database), the ids of the clients that read it; when the key changes
//! each of them gets one invalidation and the key is forgotten. In BCAST mode a client
//! subscribes to key prefixes instead; keys changed under a prefix are collected and
//! sent as one invalidation per prefix once the command that changed them is done.
//!
//! An invalidation is a RESP3 push `>2 invalidate [keys]` (a null instead of the keys
//! after FLUSHALL/FLUSHDB), or, for a client redirecting to a RESP2 connection that is
//! subscribed to `__redis__:invalidate`, a pub/sub message on that channel. Messages go
//! through the target's mailbox, which the connection drains only after writing the
//! reply of its current command, so a client's own invalidations always follow the reply
//! that caused them (inside MULTI/EXEC too), as in Redis 7.0.
//!
//! When no client tracks, the hot path pays one relaxed load ([`Tracking::active`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use parking_lot::Mutex;
use redline_resp::Protocol;

use crate::net::mailbox::Mailbox;
use crate::shared::Shared;
use crate::store::incremental_map::IncrementalMap;
use crate::store::Hasher;

/// The channel RESP2 redirect clients receive invalidations on.
pub const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

/// Options of CLIENT TRACKING ON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// REDIRECT id (0: none).
    pub redirect: u64,
    /// BCAST.
    pub bcast: bool,
    /// OPTIN.
    pub optin: bool,
    /// OPTOUT.
    pub optout: bool,
    /// NOLOOP.
    pub noloop: bool,
    /// PREFIX values (BCAST only).
    pub prefixes: Vec<Bytes>,
}

/// What CLIENT TRACKINGINFO reports about a tracking client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    /// The client's options.
    pub options: Options,
    /// Its redirect client went away.
    pub broken_redirect: bool,
    /// Its prefixes, sorted.
    pub prefixes: Vec<Bytes>,
}

/// One tracking client.
#[derive(Debug)]
struct Tracker {
    mailbox: Arc<Mailbox>,
    options: Options,
    broken: bool,
    prefixes: BTreeSet<Bytes>,
}

/// Keys changed under one BCAST prefix since the last broadcast, and who listens.
#[derive(Debug, Default)]
struct Prefix {
    clients: BTreeSet<u64>,
    /// Changed key → the client that changed it last (`None`: several, or the server).
    keys: BTreeMap<Bytes, Option<u64>>,
}

#[derive(Debug, Default)]
struct State {
    /// Key → ids of the clients that may cache it. Its index grows a few entries at a
    /// time (Redis keeps a radix tree, which never rehashes): rebuilt whole, under this
    /// lock every tracked read and invalidation takes, it stopped them all.
    table: IncrementalMap<Bytes, Vec<u64>, Hasher>,
    /// Sum of the id lists' lengths.
    items: usize,
    trackers: HashMap<u64, Tracker>,
    prefixes: BTreeMap<Bytes, Prefix>,
    /// Rounds in a row the table stayed over `tracking-table-max-keys`.
    over_limit_rounds: usize,
}

/// Every tracking client and the keys they cache.
#[derive(Debug)]
pub struct Tracking {
    clients: AtomicUsize,
    max_keys: AtomicUsize,
    /// Commands running that may still record BCAST keys (see [`Tracking::command_runs`]):
    /// an atomic, not a field under `state`, so a command pays no lock for it. A command
    /// counts itself before it records keys under the lock, so a broadcast that finds
    /// its keys (holding the lock after it) also finds it counted.
    running: AtomicUsize,
    state: Mutex<State>,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            clients: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            max_keys: AtomicUsize::new(1_000_000),
            state: Mutex::default(),
        }
    }
}

/// Counters for INFO.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Clients with tracking on.
    pub clients: usize,
    /// Keys in the tracking table.
    pub keys: usize,
    /// (key, client) pairs in the table.
    pub items: usize,
    /// BCAST prefixes.
    pub prefixes: usize,
}

/// Whether two prefixes overlap (one starts the other).
fn overlaps(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

impl Tracking {
    /// Whether any client tracks keys.
    #[inline]
    pub fn active(&self) -> bool {
        self.clients.load(Ordering::Relaxed) != 0
    }

    /// Sets `tracking-table-max-keys` (0: no limit).
    pub fn set_max_keys(&self, max: usize) {
        self.max_keys.store(max, Ordering::Relaxed);
    }

    /// CLIENT TRACKING ON for client `id` (options validated against the client's current
    /// state first, with Redis's errors). Returns how many BCAST prefixes the client now
    /// has (they count in its memory, `maxmemory-clients`).
    pub fn enable(
        &self,
        shared: &Shared,
        id: u64,
        mailbox: &Arc<Mailbox>,
        options: Options,
    ) -> Result<usize, String> {
        let mut state = self.state.lock();
        if !options.bcast && !options.prefixes.is_empty() {
            return Err("ERR PREFIX option requires BCAST mode to be enabled".into());
        }
        if let Some(old) = state.trackers.get(&id) {
            if old.options.bcast != options.bcast {
                return Err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.".into());
            }
        }
        if options.bcast && (options.optin || options.optout) {
            return Err("ERR OPTIN and OPTOUT are not compatible with BCAST".into());
        }
        if options.optin && options.optout {
            return Err("ERR You can't specify both OPTIN mode and OPTOUT mode".into());
        }
        if let Some(old) = state.trackers.get(&id) {
            if (options.optin && old.options.optout) || (options.optout && old.options.optin) {
                return Err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.".into());
            }
        }
        if options.bcast {
            let existing = state.trackers.get(&id).map(|t| &t.prefixes);
            for (i, p) in options.prefixes.iter().enumerate() {
                if let Some(old) = existing.and_then(|set| set.iter().find(|o| overlaps(o, p))) {
                    return Err(format!(
                        "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                        String::from_utf8_lossy(p),
                        String::from_utf8_lossy(old)
                    ));
                }
                if let Some(other) = options.prefixes[i + 1..].iter().find(|o| overlaps(p, o)) {
                    return Err(format!(
                        "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                        String::from_utf8_lossy(p),
                        String::from_utf8_lossy(other)
                    ));
                }
            }
        }
        let _ = shared;
        let state = &mut *state;
        let tracker = state.trackers.entry(id).or_insert_with(|| {
            self.clients.fetch_add(1, Ordering::Relaxed);
            Tracker {
                mailbox: mailbox.clone(),
                options: Options::default(),
                broken: false,
                prefixes: BTreeSet::new(),
            }
        });
        tracker.broken = false;
        tracker.options = Options {
            prefixes: Vec::new(),
            ..options.clone()
        };
        if options.bcast {
            let wanted = if options.prefixes.is_empty() {
                vec![Bytes::new()]
            } else {
                options.prefixes
            };
            for p in wanted {
                state
                    .prefixes
                    .entry(p.clone())
                    .or_default()
                    .clients
                    .insert(id);
                tracker.prefixes.insert(p);
            }
        }
        let prefixes = tracker.prefixes.len();
        self.publish_active(shared);
        Ok(prefixes)
    }

    /// CLIENT TRACKING OFF (and disconnect). The client's entries in the key table stay
    /// until those keys change, as in Redis.
    pub fn disable(&self, shared: &Shared, id: u64) {
        let mut state = self.state.lock();
        let Some(tracker) = state.trackers.remove(&id) else {
            return;
        };
        self.clients.fetch_sub(1, Ordering::Relaxed);
        for p in &tracker.prefixes {
            if let Some(prefix) = state.prefixes.get_mut(p) {
                prefix.clients.remove(&id);
                if prefix.clients.is_empty() {
                    state.prefixes.remove(p);
                }
            }
        }
        drop(state);
        self.publish_active(shared);
    }

    fn publish_active(&self, shared: &Shared) {
        shared.store.events().set_tracking(self.active());
    }

    /// CLIENT TRACKINGINFO / GETREDIR of client `id`; `None` when tracking is off.
    pub fn info(&self, id: u64) -> Option<Info> {
        let state = self.state.lock();
        let t = state.trackers.get(&id)?;
        Some(Info {
            options: t.options.clone(),
            broken_redirect: t.broken,
            prefixes: t.prefixes.iter().cloned().collect(),
        })
    }

    /// Remembers that client `id` read `keys` (after a read-only command). `caching` is
    /// the CLIENT CACHING flag in force for the command.
    pub fn remember<'k>(&self, id: u64, caching: bool, keys: impl IntoIterator<Item = &'k [u8]>) {
        let mut state = self.state.lock();
        let Some(t) = state.trackers.get(&id) else {
            return;
        };
        let o = &t.options;
        if o.bcast || (o.optin && !caching) || (o.optout && caching) {
            return;
        }
        for key in keys {
            let at = match state.table.find_or_hash(key) {
                Ok(at) => at,
                Err(hash) => state
                    .table
                    .add_new(hash, Bytes::copy_from_slice(key), Vec::new()),
            };
            let ids = &mut state.table[at];
            if !ids.contains(&id) {
                ids.push(id);
                state.items += 1;
            }
        }
    }

    /// Key `key` changed (Redis's `trackingInvalidateKey`): every client caching it gets
    /// an invalidation, and BCAST prefixes collect it. `by` is the client whose command
    /// changed it (for NOLOOP); `None` for the server (expiry, eviction).
    pub fn invalidate_key(&self, shared: &Shared, key: &[u8], by: Option<u64>) {
        self.invalidate_keys_written(shared, &[key], by, by);
    }

    /// [`Tracking::invalidate_key`] for the keys one command changed, under one lock: a
    /// broadcast (another client's, or the cron's) sends all of them to BCAST clients or
    /// none, as Redis sends a command's keys together before its event loop sleeps. For
    /// a script's keys, NOLOOP in default mode spares the script's caller (`by`), while
    /// BCAST records the change as Lua's client's (`bcast_by`, none), so the caller hears
    /// of it, as in Redis.
    pub fn invalidate_keys_written<K: AsRef<[u8]>>(
        &self,
        shared: &Shared,
        keys: &[K],
        by: Option<u64>,
        bcast_by: Option<u64>,
    ) {
        let mut state = self.state.lock();
        for key in keys {
            let key = key.as_ref();
            for (prefix, bcast) in state.prefixes.iter_mut() {
                if key.starts_with(prefix) {
                    bcast.keys.insert(Bytes::copy_from_slice(key), bcast_by);
                }
            }
            let Some((_, ids)) = state.table.swap_remove(key) else {
                continue;
            };
            state.table.shrink_if_sparse();
            state.items -= ids.len();
            for id in ids {
                let Some(t) = state.trackers.get(&id) else {
                    continue;
                };
                if t.options.bcast || (t.options.noloop && by == Some(id)) {
                    continue;
                }
                let payload = keys_payload(std::iter::once(key));
                send(shared, &mut state, id, &payload);
            }
        }
    }

    /// FLUSHALL / FLUSHDB, a reload, a replica's full sync: every tracking client gets a
    /// null invalidation and the table is emptied.
    pub fn invalidate_all(&self, shared: &Shared) {
        let mut state = self.state.lock();
        if !state.trackers.is_empty() {
            let ids: Vec<u64> = state.trackers.keys().copied().collect();
            for id in ids {
                let Some(t) = state.trackers.get(&id) else {
                    continue;
                };
                let payload: &[u8] = match t.mailbox.protocol() {
                    Protocol::Resp3 => b"_\r\n",
                    Protocol::Resp2 => b"$-1\r\n",
                };
                send(shared, &mut state, id, payload);
            }
        }
        state.table = IncrementalMap::default();
        state.items = 0;
    }

    /// A command that may change keys starts (the outermost one: EXEC and scripts
    /// cover what they run). Until the guard drops, broadcasts wait: a transaction's or
    /// a script's keys go to BCAST clients in one message, as Redis sends them before
    /// its event loop sleeps, never split by the cron's or another client's broadcast.
    /// The last command to end broadcasts after it (see [`Tracking::broadcast`]).
    pub fn command_runs(&self) -> RunningCommand<'_> {
        self.running.fetch_add(1, Ordering::SeqCst);
        RunningCommand { tracking: self }
    }

    /// Sends the keys BCAST prefixes collected (Redis does it before each event-loop
    /// sleep; here after each command, and from the cron), unless a command is still
    /// recording its keys: the last one to end sends them.
    pub fn broadcast(&self, shared: &Shared) {
        let mut state = self.state.lock();
        if self.running.load(Ordering::SeqCst) > 0
            || state.prefixes.values().all(|p| p.keys.is_empty())
        {
            return;
        }
        let mut batches = Vec::new();
        for prefix in state.prefixes.values_mut() {
            if prefix.keys.is_empty() {
                continue;
            }
            let keys = std::mem::take(&mut prefix.keys);
            batches.push((prefix.clients.iter().copied().collect::<Vec<_>>(), keys));
        }
        for (clients, keys) in batches {
            let common = keys_payload(keys.keys().map(|k| &k[..]));
            for id in clients {
                let noloop = state.trackers.get(&id).is_some_and(|t| t.options.noloop);
                if noloop {
                    let mine: Vec<&[u8]> = keys
                        .iter()
                        .filter(|(_, by)| **by != Some(id))
                        .map(|(k, _)| &k[..])
                        .collect();
                    if !mine.is_empty() {
                        let payload = keys_payload(mine.into_iter());
                        send(shared, &mut state, id, &payload);
                    }
                } else {
                    send(shared, &mut state, id, &common);
                }
            }
        }
    }

    /// The background cycle's share of the key table's index move (see
    /// [`IncrementalMap::tidy`]), so a move ends even when no key is tracked or changed.
    pub fn tidy(&self) {
        self.state.lock().table.tidy();
    }

    /// Brings the key table back under `tracking-table-max-keys`, invalidating keys, with
    /// an effort that grows while it stays over (Redis's `trackingLimitUsedSlots`).
    pub fn enforce_limit(&self, shared: &Shared) {
        let max = self.max_keys.load(Ordering::Relaxed);
        let mut state = self.state.lock();
        if max == 0 || state.table.len() <= max {
            state.over_limit_rounds = 0;
            return;
        }
        let effort = 100 * (state.over_limit_rounds + 1);
        let victims: Vec<Bytes> = state
            .table
            .keys()
            .take(effort.min(state.table.len() - max))
            .cloned()
            .collect();
        drop(state);
        for key in victims {
            self.invalidate_key(shared, &key, None);
        }
        let mut state = self.state.lock();
        if state.table.len() <= max {
            state.over_limit_rounds = 0;
        } else {
            state.over_limit_rounds += 1;
        }
    }

    /// Counters for INFO.
    pub fn stats(&self) -> Stats {
        let state = self.state.lock();
        Stats {
            clients: state.trackers.len(),
            keys: state.table.len(),
            items: state.items,
            prefixes: state.prefixes.len(),
        }
    }
}

/// A command running while tracking is on (see [`Tracking::command_runs`]).
#[must_use = "broadcasts wait while this lives"]
pub struct RunningCommand<'t> {
    tracking: &'t Tracking,
}

impl Drop for RunningCommand<'_> {
    fn drop(&mut self) {
        self.tracking.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An array of bulk strings, the "value" part of an invalidation.
fn keys_payload<'k>(keys: impl ExactSizeIterator<Item = &'k [u8]>) -> BytesMut {
    let mut out = BytesMut::new();
    redline_resp::encode::write_array_len(&mut out, keys.len());
    for k in keys {
        redline_resp::encode::write_bulk(&mut out, k);
    }
    out
}

/// Sends one invalidation (`payload` is its encoded value) to tracking client `id`,
/// through its redirection if it has one (Redis's `sendTrackingMessage`).
fn send(shared: &Shared, state: &mut State, id: u64, payload: &[u8]) {
    let Some(t) = state.trackers.get_mut(&id) else {
        return;
    };
    let (target, redirected) = if t.options.redirect != 0 {
        match shared.clients.mailbox(t.options.redirect) {
            Some(m) => (m, true),
            None => {
                t.broken = true;
                if t.mailbox.protocol() == Protocol::Resp3 {
                    let mut out = BytesMut::new();
                    out.put_slice(b">2\r\n$21\r\ntracking-redir-broken\r\n");
                    redline_resp::encode::write_integer(&mut out, t.options.redirect as i64);
                    t.mailbox.deliver(&out);
                }
                return;
            }
        }
    } else {
        (t.mailbox.clone(), false)
    };
    let mut out = BytesMut::with_capacity(payload.len() + 48);
    if target.protocol() == Protocol::Resp3 {
        out.put_slice(b">2\r\n$10\r\ninvalidate\r\n");
    } else if redirected && target.subscribed() {
        out.put_slice(b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n");
    } else {
        return;
    }
    out.put_slice(payload);
    let number = target.deliver(&out);
    SENT.with(|sent| {
        if let Some(sent) = sent.borrow_mut().as_mut() {
            // One entry per recipient, its last delivery: an eviction of many keys
            // sends each tracker many.
            let key = Arc::as_ptr(&target) as usize;
            sent.entry(key)
                .or_insert_with(|| (target.clone(), number))
                .1 = number;
        }
    });
}

/// Recipients by mailbox address.
type SentTo = HashMap<usize, Sent>;

thread_local! {
    /// The invalidations sent on this thread while [`collect_sent`] runs.
    static SENT: std::cell::RefCell<Option<SentTo>> = const { std::cell::RefCell::new(None) };
}

/// Invalidations sent to one client: its mailbox and the delivery number of the last.
pub type Sent = (Arc<Mailbox>, u64);

/// Runs `f` and returns, with its result, the clients it sent invalidations to on this
/// thread (each once, with its last delivery).
pub fn collect_sent<R>(f: impl FnOnce() -> R) -> (R, Vec<Sent>) {
    struct Stop;
    impl Drop for Stop {
        fn drop(&mut self) {
            SENT.with(|sent| sent.borrow_mut().take());
        }
    }
    SENT.with(|sent| *sent.borrow_mut() = Some(HashMap::new()));
    let stop = Stop;
    let result = f();
    let sent = SENT
        .with(|sent| sent.borrow_mut().take())
        .map(|sent| sent.into_values().collect())
        .unwrap_or_default();
    drop(stop);
    (result, sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_overlap_when_one_starts_the_other() {
        assert!(overlaps(b"FOO", b"FOOBAR"));
        assert!(overlaps(b"", b"x"));
        assert!(!overlaps(b"FOO", b"BAR"));
    }
}
