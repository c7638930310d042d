//! The table of connected clients: ids, and the handle that ends a connection task
//! (CLIENT KILL, SHUTDOWN). Touched on connect and disconnect only, never per command.

use super::peer::Peer;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::task::AbortHandle;

use super::buffer_peaks::BufferPeaks;
use super::client_memory::{ClientFigures, ClientMemory};
use super::input_turns::{arrivals_so_far, unsettled_before, Due, InputTurns};
use super::mailbox::Mailbox;
use super::recent_arrivals::{self, RECENT_ARRIVALS};
use crate::acl::UserCell;

/// One registered connection.
#[derive(Debug)]
pub struct ClientEntry {
    /// The peer's address.
    pub peer: Peer,
    /// The address it connected to (CLIENT LIST's `laddr`: the TLS port for TLS clients).
    pub local: Peer,
    /// Its socket's descriptor (CLIENT LIST's `fd`).
    pub fd: i32,
    /// When it connected.
    pub created: Instant,
    /// CLIENT SETNAME, mirrored here for CLIENT LIST.
    pub name: Option<Vec<u8>>,
    /// Selected database, mirrored here for CLIENT LIST.
    pub db: usize,
    /// The authenticated user (`None`: default), for CLIENT LIST/KILL and ACL DELUSER.
    pub user: Option<Arc<UserCell>>,
    /// Our master's link, which runs as no user (`(superuser)` in CLIENT LIST) and is
    /// out of reach of ACL changes.
    superuser: bool,
    abort: Option<AbortHandle>,
    /// Raised on kill: the connection runs no further command even if the task is
    /// mid-poll when the abort comes (it only takes effect at its next await).
    killed: Arc<AtomicBool>,
    /// Where other connections reach this one (tracking redirection).
    mailbox: Option<Arc<Mailbox>>,
    /// What the connection last reported of itself.
    activity: Arc<Mutex<Activity>>,
}

impl ClientEntry {
    /// The connection's input turns, once its mailbox is set.
    fn input_turns(&self) -> Option<&Arc<InputTurns>> {
        self.mailbox.as_deref().map(Mailbox::input_turns)
    }
}

/// What CLIENT LIST shows that only a connection knows: its last command, flags, query
/// buffer, subscriptions. The connection mirrors it here once per batch of commands and
/// before it waits (blocked, paused), so commands pay nothing for it.
#[derive(Debug, Clone)]
pub struct Activity {
    /// The last command it ran (`NULL` before the first).
    pub last_cmd: &'static str,
    /// Redis's flag letters (`N` for none).
    pub flags: String,
    /// Channels, patterns and shard channels subscribed.
    pub subscriptions: (usize, usize, usize),
    /// Commands queued in MULTI, -1 outside a transaction.
    pub multi: i64,
    /// Bytes waiting in its query buffer.
    pub qbuf: usize,
    /// Its memory, as its connection last counted it.
    pub memory: ClientFigures,
    /// Protocol version (2 or 3).
    pub resp: u8,
    /// When it last sent something.
    pub last_interaction: Instant,
}

/// Clients the cron visits on every turn at least (Redis's
/// `CLIENTS_CRON_MIN_ITERATIONS`): with no more than these, each is looked at every turn.
const CRON_MIN_CLIENTS: usize = 5;

/// Redis's client type, from a connection's flag letters: the link from our master, a
/// replica's link, a client with subscriptions, or a normal one (MONITOR included, as in
/// Redis).
pub fn client_type(flags: &str) -> &'static str {
    if flags.contains('M') {
        "master"
    } else if flags.contains('S') {
        "replica"
    } else if flags.contains('P') {
        "pubsub"
    } else {
        "normal"
    }
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            last_cmd: "NULL",
            flags: "N".to_string(),
            subscriptions: (0, 0, 0),
            multi: -1,
            qbuf: 0,
            memory: ClientFigures::default(),
            resp: 2,
            last_interaction: Instant::now(),
        }
    }
}

impl ClientEntry {
    fn summary(&self, id: u64) -> ClientSummary {
        ClientSummary {
            id,
            peer: self.peer.clone(),
            local: self.local.clone(),
            fd: self.fd,
            age: self.created.elapsed().as_secs(),
            name: self.name.clone(),
            db: self.db,
            user: match &self.user {
                _ if self.superuser => b"(superuser)".to_vec(),
                Some(user) => user.name().to_vec(),
                None => b"default".to_vec(),
            },
            activity: self.activity.lock().clone(),
            omem: self.mailbox.as_ref().map_or(0, |m| m.output_bytes()),
            pending: self.mailbox.as_ref().map_or(0, |m| m.pending_bytes()),
        }
    }
}

/// What CLIENT LIST shows of one client.
#[derive(Debug, Clone)]
pub struct ClientSummary {
    /// Id.
    pub id: u64,
    /// Peer address.
    pub peer: Peer,
    /// The server address it connected to.
    pub local: Peer,
    /// Its socket's descriptor.
    pub fd: i32,
    /// Seconds connected.
    pub age: u64,
    /// Name.
    pub name: Option<Vec<u8>>,
    /// Database.
    pub db: usize,
    /// User name.
    pub user: Vec<u8>,
    /// What its connection last reported.
    pub activity: Activity,
    /// Output waiting for it: replies being written, messages not taken yet.
    pub omem: usize,
    /// The messages not taken yet alone (the replies are in its reply buffer).
    pub pending: usize,
}

/// Connected clients.
#[derive(Debug, Default)]
pub struct Clients {
    next_id: AtomicU64,
    map: Mutex<HashMap<u64, ClientEntry>>,
    /// `maxmemory-clients`: what the clients hold, and client eviction.
    pub memory: Arc<ClientMemory>,
    /// When [`Clients::trim_idle`] last walked the clients.
    last_trim: Mutex<Option<Instant>>,
    /// The largest buffers that walk saw lately (INFO's `client_recent_max_*`).
    buffer_peaks: Mutex<BufferPeaks>,
}

impl Clients {
    /// Registers a connection and returns its id (ids start at 1, like Redis's) and the
    /// flag a kill raises, which [`Clients::set_abort`] needs.
    pub fn register(
        &self,
        peer: impl Into<Peer>,
        local: impl Into<Peer>,
        fd: i32,
    ) -> (u64, Arc<AtomicBool>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let killed = Arc::<AtomicBool>::default();
        self.insert(id, peer.into(), local.into(), fd, killed.clone(), false);
        (id, killed)
    }

    /// Registers the link from our master and returns its id: `resumed`, the id its
    /// previous link had, when the link continues that one (a partial resync), as Redis
    /// resurrects its cached master client; a new id otherwise.
    pub fn register_master(
        &self,
        peer: impl Into<Peer>,
        local: impl Into<Peer>,
        fd: i32,
        resumed: Option<u64>,
    ) -> u64 {
        let id = resumed
            .filter(|id| !self.contains(*id))
            .unwrap_or_else(|| self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        self.insert(id, peer.into(), local.into(), fd, Arc::default(), true);
        id
    }

    fn insert(
        &self,
        id: u64,
        peer: Peer,
        local: Peer,
        fd: i32,
        killed: Arc<AtomicBool>,
        superuser: bool,
    ) {
        self.map.lock().insert(
            id,
            ClientEntry {
                peer,
                local,
                fd,
                created: Instant::now(),
                name: None,
                db: 0,
                user: None,
                superuser,
                abort: None,
                killed,
                mailbox: None,
                activity: Arc::default(),
            },
        );
    }

    /// Records the mailbox of client `id`, so others can reach it by id.
    pub fn set_mailbox(&self, id: u64, mailbox: Arc<Mailbox>) {
        if let Some(entry) = self.map.lock().get_mut(&id) {
            entry.mailbox = Some(mailbox);
        }
    }

    /// The mailbox of client `id`, if it is connected.
    pub fn mailbox(&self, id: u64) -> Option<Arc<Mailbox>> {
        self.map.lock().get(&id).and_then(|e| e.mailbox.clone())
    }

    /// The connections other than `me` that have input they have not run yet, each with
    /// the turn to wait for (see [`crate::net::input_turns`]); only input that came
    /// before arrival number `before` (`u64::MAX`: all). With more than `limit`
    /// connections open, only those woken for input by the last
    /// [`recent_arrivals::LOOK_BACK`] wake-ups before it are looked at: a pass over all
    /// of them would cost every caller time in proportion to the idle ones.
    pub fn unsettled_inputs(
        &self,
        me: u64,
        before: u64,
        limit: usize,
    ) -> Vec<(Arc<InputTurns>, Due)> {
        let map = self.map.lock();
        if map.len() > limit {
            let recent = RECENT_ARRIVALS
                .owners_before(before.min(arrivals_so_far()), recent_arrivals::LOOK_BACK);
            return unsettled_before(
                recent
                    .iter()
                    .filter(|id| **id != me)
                    .filter_map(|id| map.get(id))
                    .filter_map(ClientEntry::input_turns),
                before,
            );
        }
        unsettled_before(
            map.iter()
                .filter(|(id, _)| **id != me)
                .filter_map(|(_, e)| e.input_turns()),
            before,
        )
    }

    /// Whether client `id` is connected.
    pub fn contains(&self, id: u64) -> bool {
        self.map.lock().contains_key(&id)
    }

    /// Where client `id` reports its activity (see [`Activity`]).
    pub fn activity(&self, id: u64) -> Option<Arc<Mutex<Activity>>> {
        self.map.lock().get(&id).map(|e| e.activity.clone())
    }

    /// The flag a kill raises for client `id`, shared with its connection.
    pub fn killed_flag(&self, id: u64) -> Option<Arc<AtomicBool>> {
        self.map.lock().get(&id).map(|e| e.killed.clone())
    }

    /// Attaches the task's abort handle, unless the task already finished; a client
    /// killed before it came (`killed`, from [`Clients::register`]) is aborted now.
    /// The task runs from its spawn, so a loaded machine can run its first commands,
    /// and another client kill it, before the handle is attached.
    pub fn set_abort(&self, id: u64, killed: &AtomicBool, abort: AbortHandle) {
        let mut map = self.map.lock();
        if let Some(entry) = map.get_mut(&id) {
            entry.abort = Some(abort);
        } else if killed.load(Ordering::Acquire) {
            abort.abort();
        }
    }

    /// Forgets a connection (called when its task ends, however it ends).
    pub fn unregister(&self, id: u64) {
        self.map.lock().remove(&id);
    }

    /// Number of connected clients.
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// Whether no client is connected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `maxmemory-clients` was set: every client counted again (their totals are not
    /// kept while the limit is off), then the clients holding the most closed while
    /// they are over it.
    pub fn recount_memory(&self) {
        if !self.memory.enabled() {
            return;
        }
        let mailboxes: Vec<Arc<Mailbox>> = self
            .map
            .lock()
            .values()
            .filter_map(|entry| entry.mailbox.clone())
            .collect();
        for mailbox in mailboxes {
            mailbox.recount();
        }
        self.evict_over_limit();
    }

    /// What every client but the replicas' links holds, as each last counted itself:
    /// INFO `mem_clients_normal`, which in Redis counts the master link, pub/sub and
    /// normal clients (replicas' links are `mem_clients_slaves`).
    pub fn normal_memory(&self) -> usize {
        self.map
            .lock()
            .values()
            .map(|entry| {
                let held = {
                    let activity = entry.activity.lock();
                    match client_type(&activity.flags) {
                        "replica" => return 0,
                        _ => activity.memory.held,
                    }
                };
                held + entry.mailbox.as_ref().map_or(0, |m| m.pending_bytes())
            })
            .sum()
    }

    /// Asks every idle client that holds buffers it does not need to give their memory
    /// back (Redis's `clientsCronResizeQueryBuffer` and `clientsCronResizeOutputBuffer`).
    /// The server's cron calls it on every turn; it walks the clients once a second, or
    /// on every turn while there are at most [`CRON_MIN_CLIENTS`] (Redis's client cron
    /// visits at least that many clients per turn).
    pub fn trim_idle(&self) {
        {
            let mut last = self.last_trim.lock();
            let walked_lately = last.is_some_and(|at| at.elapsed() < Duration::from_secs(1));
            if walked_lately && self.len() > CRON_MIN_CLIENTS {
                return;
            }
            *last = Some(Instant::now());
        }
        let second = crate::persist::snapshot::unix_secs();
        let mut peaks = self.buffer_peaks.lock();
        for entry in self.map.lock().values() {
            let Some(mailbox) = &entry.mailbox else {
                continue;
            };
            let (idle, memory, qbuf) = {
                let activity = entry.activity.lock();
                (
                    activity.last_interaction.elapsed(),
                    activity.memory,
                    activity.qbuf,
                )
            };
            let qbuf_capacity = memory.qbuf_free + qbuf;
            peaks.record(second, qbuf_capacity + memory.argv, mailbox.output_bytes());
            if self
                .memory
                .should_trim(idle, qbuf_capacity, memory.reply_buffer)
            {
                mailbox.request_trim();
            }
        }
    }

    /// The largest query buffer (with the arguments split off it) and the largest
    /// output waiting of any client in the last few seconds, as the walk of
    /// [`Clients::trim_idle`] saw them (INFO's `client_recent_max_input_buffer` and
    /// `client_recent_max_output_buffer`).
    pub fn recent_max_buffers(&self) -> (usize, usize) {
        self.buffer_peaks
            .lock()
            .recent_max(crate::persist::snapshot::unix_secs())
    }

    /// Closes the pub/sub clients whose output is past `limit` (the `pubsub` class of
    /// `client-output-buffer-limit`) with no message arriving to find it: a soft limit
    /// runs out on time, as in Redis's client cron. The server's cron calls it on every
    /// turn.
    pub fn close_over_output_limit(&self, limit: &crate::config::OutputBufferLimit) {
        if limit.hard == 0 && limit.soft == 0 {
            return;
        }
        let over: Vec<u64> = self
            .map
            .lock()
            .iter()
            .filter(|(_, entry)| {
                entry
                    .mailbox
                    .as_ref()
                    .is_some_and(|m| m.subscribed() && m.over_limit_now(limit))
            })
            .map(|(&id, _)| id)
            .collect();
        for id in over {
            self.close_for_output_limit(id);
        }
    }

    /// Closes client `id`, past its `client-output-buffer-limit`, with Redis's warning.
    pub fn close_for_output_limit(&self, id: u64) {
        tracing::warn!(
            "Client id={id} scheduled to be closed ASAP for overcoming of output buffer limits."
        );
        self.kill(id);
    }

    /// Client eviction (`maxmemory-clients`): while the clients hold more than the
    /// limit, closes the one holding the most, passing over `CLIENT NO-EVICT` clients.
    /// One comparison when under the limit.
    pub fn evict_over_limit(&self) {
        if !self.memory.over() {
            return;
        }
        let mut candidates: Vec<(usize, u64, Arc<Mailbox>)> = self
            .map
            .lock()
            .iter()
            .filter_map(|(&id, entry)| {
                let mailbox = entry.mailbox.as_ref()?;
                (!mailbox.no_evict()).then(|| (mailbox.memory(), id, mailbox.clone()))
            })
            .collect();
        candidates.sort_unstable_by_key(|&(bytes, id, _)| std::cmp::Reverse((bytes, id)));
        for (bytes, id, mailbox) in candidates {
            if !self.memory.over() {
                break;
            }
            // Out of the total at once, so the next check does not pick it again.
            mailbox.forget();
            if self.kill(id) {
                mailbox.evicted(bytes);
                self.memory.evicted.fetch_add(1, Ordering::Relaxed);
                tracing::debug!("Evicting client: id={id} tot-mem={bytes}");
            }
        }
    }

    /// Ends the task of client `id`; false when there is no such client.
    pub fn kill(&self, id: u64) -> bool {
        // Gone from the table at once, as Redis's CLIENT KILL skips clients already
        // closing: the task itself may end a moment later (or, its handle not attached
        // yet, be aborted by `set_abort`).
        match self.map.lock().remove(&id) {
            Some(entry) => {
                entry.killed.store(true, Ordering::Release);
                if let Some(abort) = &entry.abort {
                    abort.abort();
                }
                true
            }
            None => false,
        }
    }

    /// Ends every connection task (shutdown).
    pub fn kill_all(&self) {
        for entry in self.map.lock().values() {
            if let Some(abort) = &entry.abort {
                abort.abort();
            }
        }
    }

    /// Records a client's name and database (SETNAME, SELECT, RESET).
    pub fn describe(&self, id: u64, name: Option<Vec<u8>>, db: usize) {
        if let Some(entry) = self.map.lock().get_mut(&id) {
            entry.name = name;
            entry.db = db;
        }
    }

    /// Records the user a client authenticated as (AUTH, HELLO AUTH, RESET).
    pub fn set_user(&self, id: u64, user: Option<Arc<UserCell>>) {
        if let Some(entry) = self.map.lock().get_mut(&id) {
            entry.user = user;
        }
    }

    /// Ends the tasks of every client authenticated as one of `users`, except `skip`
    /// (the caller, which closes itself after its reply).
    pub fn kill_users(&self, users: &[Arc<UserCell>], skip: u64) {
        self.map.lock().retain(|&id, entry| {
            let theirs = entry
                .user
                .as_ref()
                .is_some_and(|u| users.iter().any(|d| Arc::ptr_eq(d, u)));
            if !theirs || id == skip || entry.superuser {
                return true;
            }
            entry.killed.store(true, Ordering::Release);
            if let Some(abort) = &entry.abort {
                abort.abort();
            }
            false
        });
    }

    /// Ids of the clients authenticated as `user` (`None`: as the default user).
    pub fn ids_of_user(&self, user: Option<&Arc<UserCell>>) -> Vec<u64> {
        self.map
            .lock()
            .iter()
            .filter(|(_, e)| !e.superuser)
            .filter(|(_, e)| match (user, &e.user) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            })
            .map(|(&id, _)| id)
            .collect()
    }

    /// Every client, oldest first (CLIENT LIST).
    pub fn summaries(&self) -> Vec<ClientSummary> {
        let mut all: Vec<ClientSummary> = self
            .map
            .lock()
            .iter()
            .map(|(&id, e)| e.summary(id))
            .collect();
        all.sort_by_key(|c| c.id);
        all
    }

    /// One client's summary (CLIENT INFO, ACL LOG), without snapshotting the others.
    pub fn summary(&self, id: u64) -> Option<ClientSummary> {
        self.map.lock().get(&id).map(|e| e.summary(id))
    }

    /// Ids currently connected (oldest first).
    pub fn ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.map.lock().keys().copied().collect();
        ids.sort_unstable();
        ids
    }
}

/// Unregisters a client when its task ends, even by abort or panic.
pub struct Registration<'a> {
    /// The registry.
    pub clients: &'a Clients,
    /// The client's id.
    pub id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.clients.unregister(self.id);
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::task::Waker;

    use super::*;
    use crate::net::input_turns::ReadyWaker;

    #[test]
    fn past_the_limit_only_connections_woken_lately_are_looked_at() {
        let clients = Clients::default();
        let addr: SocketAddr = ([127, 0, 0, 1], 1).into();
        let connect = || {
            let (id, _) = clients.register(addr, addr, -1);
            let mailbox = Arc::new(Mailbox::default());
            clients.set_mailbox(id, mailbox.clone());
            (id, mailbox.input_turns().clone())
        };
        let (me, _) = connect();
        let (woken, woken_turns) = connect();
        let (_, reading_turns) = connect();
        let (_, idle_turns) = connect();
        // One connection the runtime woke for input, one reading without a wake-up (a
        // client streaming commands), one idle.
        ReadyWaker::wrap(woken_turns.clone(), woken, Waker::noop().clone()).wake_by_ref();
        reading_turns.begin();
        let found = |limit| {
            let mut found: Vec<_> = clients
                .unsettled_inputs(me, u64::MAX, limit)
                .into_iter()
                .map(|(turns, _)| Arc::as_ptr(&turns))
                .collect();
            found.sort_unstable();
            found
        };
        let mut all = vec![Arc::as_ptr(&woken_turns), Arc::as_ptr(&reading_turns)];
        all.sort_unstable();
        assert_eq!(found(usize::MAX), all);
        assert_eq!(found(2), [Arc::as_ptr(&woken_turns)]);
        assert!(!found(2).contains(&Arc::as_ptr(&idle_turns)));
    }
}
