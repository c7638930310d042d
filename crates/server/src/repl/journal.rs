//! The command stream: every change to the dataset, in RESP, in one order, with the
//! replication offset and backlog (Redis's `replicationFeedSlaves` and `repl_backlog`).
//!
//! # Order on a sharded keyspace
//!
//! Commands run in parallel on different shards, but a replica applies one stream. A
//! change is appended while its shards are still locked (a command holds them from
//! before it runs until its effects are appended, see `crate::cmd`; an expired key's DEL
//! is appended under the lock of the shard it was in), so two changes to one key reach
//! the stream in the order they happened, and a transaction or script is one piece.
//!
//! # Turning the stream on
//!
//! Nothing is recorded until the first replica attaches: the dispatcher looks at one
//! atomic flag per write. Turning it on must not race with a write that looked at the
//! flag and has not locked its shards yet; writes therefore run inside a *gate*, one
//! read lock per thread slot (uncontended: a thread only ever takes its own slot), and
//! [`Journal::activate`] takes every slot for writing once, which waits for writes in
//! flight and makes every later one see the flag.

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use redline_resp::encode;
use tokio::sync::watch;

use super::backlog::Backlog;
use super::outbox::Outbox;
use crate::alloc::Gauge;
use crate::config::OutputBufferLimit;
use crate::net::signal::Signal;

/// Where a change goes: the append-only file, the replicas (and backlog), or both
/// (Redis's `PROPAGATE_AOF` / `PROPAGATE_REPL`; a script picks with `redis.set_repl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Targets {
    /// To the append-only file.
    pub aof: bool,
    /// To the replicas and the backlog.
    pub replicas: bool,
}

impl Targets {
    /// Both: every change but those a script sent elsewhere.
    pub const ALL: Targets = Targets {
        aof: true,
        replicas: true,
    };

    /// From `redis.set_repl`'s flags (`REPL_AOF` 1, `REPL_REPLICA` 2).
    pub fn from_flags(flags: u8) -> Targets {
        Targets {
            aof: flags & 1 != 0,
            replicas: flags & 2 != 0,
        }
    }
}

/// One change for the stream: the command, the database it ran in, where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Propagated {
    /// The database.
    pub db: usize,
    /// The command as it is written.
    pub args: Vec<Bytes>,
    /// Where it goes.
    pub to: Targets,
}

impl Propagated {
    /// A change for the file and the replicas.
    pub fn all(db: usize, args: Vec<Bytes>) -> Propagated {
        Propagated {
            db,
            args,
            to: Targets::ALL,
        }
    }
}

/// Thread slots of the gate (more threads than slots only share slots).
const GATE_SLOTS: usize = 64;

#[repr(align(128))]
#[derive(Debug, Default)]
struct Slot(RwLock<()>);

static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % GATE_SLOTS;
}

/// Where a replica is in its sync (INFO replication `state=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum LinkState {
    /// The snapshot is being taken.
    WaitBgsave = 0,
    /// The snapshot is being sent.
    SendBulk = 1,
    /// Streaming.
    Online = 2,
}

impl LinkState {
    /// As INFO replication and the logs name it.
    pub fn name(self) -> &'static str {
        match self {
            LinkState::WaitBgsave => "wait_bgsave",
            LinkState::SendBulk => "send_bulk",
            LinkState::Online => "online",
        }
    }
}

/// The address a replica is known by: the IP of its connection, or what it announced
/// (`REPLCONF ip-address`, from its `replica-announce-ip`: an address or a host name).
pub type ReplicaIp = Arc<str>;

/// One attached replica, as the master sees it.
#[derive(Debug)]
pub struct ReplicaLink {
    /// Its client id.
    pub id: u64,
    /// Its address.
    pub ip: ReplicaIp,
    /// The port it listens on (REPLCONF listening-port).
    pub listening_port: AtomicU16,
    state: AtomicU8,
    /// The offset it acknowledged last (REPLCONF ACK).
    pub ack: AtomicU64,
    /// Unix seconds of its last ACK.
    pub ack_time: AtomicU64,
    /// Its place in the replication buffer: what it has written, its output limit.
    pub outbox: Outbox,
    /// Its socket for writes from the tasks that append (see [`super::direct`]).
    pub direct: super::direct::Direct,
}

impl ReplicaLink {
    /// Its sync state.
    pub fn state(&self) -> LinkState {
        match self.state.load(Ordering::Relaxed) {
            0 => LinkState::WaitBgsave,
            1 => LinkState::SendBulk,
            _ => LinkState::Online,
        }
    }

    /// Moves it to `state`.
    pub fn set_state(&self, state: LinkState) {
        self.state.store(state as u8, Ordering::Relaxed);
    }

    /// The offset it acknowledged last.
    pub fn acked(&self) -> u64 {
        self.ack.load(Ordering::Acquire)
    }
}

/// The stream's position and its readers.
#[derive(Debug)]
pub struct Stream {
    /// Replication id (40 hex characters).
    pub replid: String,
    /// The previous replication id, after a promotion (PSYNC accepts it up to
    /// `second_offset`).
    pub replid2: String,
    /// Offset up to which `replid2` is valid, -1 when none.
    pub second_offset: i64,
    /// Bytes ever appended to the replication buffer (`master_repl_offset`): none before
    /// a replica first asked to sync, which starts the backlog.
    pub offset: u64,
    /// The database the stream last selected.
    db: Option<usize>,
    /// The database the append-only file last selected, when it differs from the
    /// stream's (a change that went to one of them only).
    aof_db: Option<usize>,
    /// The replication buffer, once a replica has attached: the backlog and what the
    /// replicas have not written yet.
    backlog: Option<Backlog>,
    /// Attached replicas.
    replicas: Vec<Arc<ReplicaLink>>,
    /// The replica connections, and since when there has been none.
    presence: Arc<ReplicaPresence>,
    /// The append-only file's incremental part, when `appendonly yes`.
    pub aof: Option<crate::persist::aof::AofFile>,
    /// The `replica` class of `client-output-buffer-limit` (set where the configuration
    /// is applied, [`crate::shared::Shared::update_config`]).
    pub replica_limit: OutputBufferLimit,
    /// What the replication buffer holds beyond the backlog's size, and the chunks the
    /// links are writing (shared with `maxmemory`, which leaves it out).
    pub replica_buffers: Arc<Gauge>,
    /// Where [`Journal::append`] encodes commands (kept between appends).
    scratch: BytesMut,
    /// The offset every online replica's link has been handed (see
    /// [`Journal::hand_off`]), shared with the journal, which reads it without the lock.
    handed: Arc<AtomicU64>,
}

/// How many replica connections there are, from their SYNC or PSYNC until their link
/// ends, and since when (Unix seconds) there has been none, or the backlog's creation or
/// a promotion when later: Redis's `server.slaves`, which holds a replica from its sync
/// request on, and `repl_no_slaves_since`. A master frees its backlog once it has had
/// none for `repl-backlog-ttl`.
#[derive(Debug)]
pub struct ReplicaPresence {
    count: AtomicUsize,
    none_since: AtomicU64,
}

/// One replica connection, counted in [`ReplicaPresence`] until dropped.
#[derive(Debug)]
pub struct Present(Arc<ReplicaPresence>);

impl Drop for Present {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            let now = crate::persist::snapshot::unix_secs();
            self.0.none_since.store(now, Ordering::Release);
        }
    }
}

/// The longest a client's replies wait for the replicas' links to take its changes
/// ([`Journal::hand_off`]): a link normally does within microseconds; this bounds one
/// starved on a loaded machine.
const HANDOFF_LIMIT: std::time::Duration = std::time::Duration::from_millis(10);

/// The largest encoding buffer the stream keeps between appends (a larger one, from a
/// big value or transaction, is freed).
const SCRATCH_KEPT: usize = 64 * 1024;

impl Stream {
    /// The database the stream last selected, if the next command need not name one.
    pub fn selected_db(&self) -> Option<usize> {
        self.db
    }

    /// Makes the next command name its database (a new reader starts here).
    pub fn force_select(&mut self) {
        self.db = None;
        self.aof_db = None;
    }

    /// The backlog, if one exists.
    pub fn backlog(&self) -> Option<&Backlog> {
        self.backlog.as_ref()
    }

    /// Attached replicas.
    pub fn replicas(&self) -> &[Arc<ReplicaLink>] {
        &self.replicas
    }

    /// Whether the buffer (under this id) still holds everything after offset `from`:
    /// how many bytes that is; else why not, in the words Redis logs.
    pub fn continue_from(&self, replid: &str, from: u64) -> Result<u64, String> {
        if replid != self.replid {
            if replid != self.replid2 {
                return Err(format!(
                    "Partial resynchronization not accepted: Replication ID mismatch (Replica asked for '{replid}', my replication IDs are '{}' and '{}')",
                    self.replid, self.replid2
                ));
            }
            if i64::try_from(from).map_or(true, |f| f > self.second_offset) {
                return Err(format!(
                    "Partial resynchronization not accepted: Requested offset for second ID was {}, but I can reply up to {}",
                    from + 1,
                    self.second_offset + 1
                ));
            }
        }
        let Some(backlog) = self.backlog.as_ref() else {
            return Err(format!(
                "Unable to partial resync with replica for lack of backlog (Replica request was: {}).",
                from + 1
            ));
        };
        if !backlog.holds(from) {
            return Err(format!(
                "Unable to partial resync with replica for lack of backlog (Replica request was: {}).",
                from + 1
            ));
        }
        Ok(self.offset - from)
    }

    /// Copies the next piece of `link`'s stream for it to write; `Ok(None)` when it has
    /// written everything, an error when the buffer no longer holds its offset (it
    /// never drops what a replica still needs; this would be a bug, and the link closes).
    pub fn next_chunk<'a>(
        &self,
        link: &'a ReplicaLink,
    ) -> std::io::Result<Option<super::outbox::Chunk<'a>>> {
        let from = link.outbox.sent();
        let Some(backlog) = self.backlog.as_ref().filter(|b| b.holds(from)) else {
            return Err(std::io::Error::other(
                "the replication buffer lost a replica's offset",
            ));
        };
        let len = usize::try_from(self.offset - from)
            .unwrap_or(usize::MAX)
            .min(super::outbox::CHUNK);
        if len == 0 {
            return Ok(None);
        }
        Ok(link.outbox.chunk(len, || backlog.read(from, len)))
    }

    /// Drops from the buffer what neither the backlog nor any replica needs.
    pub fn trim(&mut self) {
        let needed = self.replicas.iter().map(|r| r.outbox.sent()).min();
        if let Some(backlog) = &mut self.backlog {
            backlog.trim(needed);
        }
    }

    /// INFO memory's `mem_total_replication_buffers` (the buffer and the chunks being
    /// written) and `mem_clients_slaves` (each replica's part: from its offset to the
    /// end, and its chunk).
    pub fn buffer_memory(&self) -> (usize, usize) {
        let writing: usize = self.replicas.iter().map(|r| r.outbox.writing()).sum();
        let total = self.backlog.as_ref().map_or(0, Backlog::allocated) + writing;
        let behind: u64 = self
            .replicas
            .iter()
            .map(|r| self.offset.saturating_sub(r.outbox.sent()))
            .sum();
        (
            total,
            usize::try_from(behind).unwrap_or(usize::MAX) + writing,
        )
    }

    /// Starts the backlog, if there is none yet, when a replica first asks to sync (as
    /// Redis's `syncCommand`): from then on the offset counts what is appended, while
    /// the replica still waits for its image.
    pub fn ensure_backlog(&mut self, backlog_size: usize) {
        if self.backlog.is_none() {
            self.backlog = Some(Backlog::new(
                backlog_size,
                self.offset,
                self.replica_buffers.clone(),
            ));
            // Its time to live starts now, not when the server last had a replica: the
            // replica that asked for it is not attached until its image is taken.
            self.restart_idle();
        }
    }

    /// Counts the time without replicas from now (a new backlog, a promotion, a start
    /// from a dump file's history), so a backlog is never freed before replicas had
    /// `repl-backlog-ttl` to attach.
    pub fn restart_idle(&mut self) {
        self.presence
            .none_since
            .store(crate::persist::snapshot::unix_secs(), Ordering::Release);
    }

    /// Counts a replica connection (its SYNC or PSYNC has arrived) until the returned
    /// guard drops.
    pub fn present(&self) -> Present {
        self.presence.count.fetch_add(1, Ordering::AcqRel);
        Present(self.presence.clone())
    }

    /// A master's backlog after `ttl` seconds (more than) without replicas, at Unix time
    /// `now`: freed, under a new replication id with no second one (Redis's
    /// `replicationCron`). Without a backlog the offset stops moving, so the old id must
    /// not let anyone continue from it after writes it no longer counts. Returns whether
    /// it was freed; a `ttl` of 0 keeps it forever.
    pub fn free_idle_backlog(&mut self, ttl: u64, now: u64) -> bool {
        let presence = &self.presence;
        let idle = now.saturating_sub(presence.none_since.load(Ordering::Acquire));
        let replicas = presence.count.load(Ordering::Acquire);
        if ttl == 0 || replicas > 0 || self.backlog.is_none() || idle <= ttl {
            return false;
        }
        self.change_replid();
        self.backlog = None;
        true
    }

    /// Adds a replica whose stream starts at offset `from` (now, after a snapshot it is
    /// sent first; or, continuing, where it left off); its link reads its stream from
    /// the replication buffer.
    pub fn attach(
        &mut self,
        id: u64,
        ip: ReplicaIp,
        listening_port: u16,
        backlog_size: usize,
        from: Option<u64>,
    ) -> Arc<ReplicaLink> {
        self.ensure_backlog(backlog_size);
        // The next command names its database again, whatever the stream selected
        // before: a replica starting from a snapshot has not seen that SELECT, and one
        // continuing may come after a promotion, whose stream's SELECTs were its old
        // master's bytes, passed on without being tracked here.
        self.db = None;
        let link = Arc::new(ReplicaLink {
            id,
            ip,
            listening_port: AtomicU16::new(listening_port),
            state: AtomicU8::new(LinkState::WaitBgsave as u8),
            ack: AtomicU64::new(0),
            ack_time: AtomicU64::new(crate::persist::snapshot::unix_secs()),
            outbox: Outbox::new(self.replica_buffers.clone(), from.unwrap_or(self.offset)),
            direct: super::direct::Direct::default(),
        });
        self.replicas.retain(|r| r.id != id);
        self.replicas.push(link.clone());
        // Continuing, it has the buffer's part after `from` to send at once.
        grew_for(&link, self.offset, &self.replica_limit);
        link
    }

    /// Removes replica `id` (its connection ended, or it was killed): what only it
    /// still needed of the buffer is freed now, as Redis frees a killed replica.
    /// Returns whether the offset handed to every link moved forward.
    fn detach(&mut self, id: u64) -> bool {
        self.replicas.retain(|r| r.id != id);
        self.trim();
        self.refresh_handed()
    }

    /// The link of replica `id`, if attached.
    fn link(&self, id: u64) -> Option<&Arc<ReplicaLink>> {
        self.replicas.iter().find(|r| r.id == id)
    }

    /// Recomputes the offset every online link has been handed (after a link tried a
    /// write, went online, or left); whether it moved forward (then clients waiting in
    /// [`Journal::hand_off`] may go on).
    pub fn refresh_handed(&self) -> bool {
        let handed = self
            .replicas
            .iter()
            .filter(|link| link.state() == LinkState::Online)
            .map(|link| link.outbox.handed())
            .min()
            .unwrap_or(u64::MAX);
        self.handed.swap(handed, Ordering::AcqRel) < handed
    }

    /// Sends a change to the file (`aof`) and the replicas and backlog (`replicas`):
    /// the same bytes, unless a script sent some of it to one side only.
    fn push_split(&mut self, aof: &[u8], replicas: &[u8]) {
        if let Some(file) = &mut self.aof {
            file.write(aof);
        }
        // As in Redis, the offset counts what went into the replication buffer: a
        // master no replica ever asked to sync (so no backlog) stays at 0, whatever its
        // AOF or a rewrite records.
        if let Some(backlog) = &mut self.backlog {
            self.offset += replicas.len() as u64;
            backlog.push(replicas);
        }
        if !self.replicas.is_empty() {
            // A replica past its output limit leaves the stream; its link closes.
            let (head, limit) = (self.offset, self.replica_limit);
            self.replicas.retain(|r| grew_for(r, head, &limit));
        }
        self.trim();
    }

    fn push(&mut self, chunk: &[u8]) {
        self.push_split(chunk, chunk);
    }

    /// Sets the capacity of the backlog (CONFIG SET repl-backlog-size).
    pub fn resize_backlog(&mut self, size: usize) {
        if let Some(backlog) = &mut self.backlog {
            backlog.resize(size);
        }
        self.trim();
    }

    /// Starts a new history (a replica promoted, or taking a master's): the old id stays
    /// valid for PSYNC up to the current offset.
    pub fn shift_replid(&mut self) {
        self.replid2 = std::mem::replace(&mut self.replid, new_replid());
        self.second_offset = i64::try_from(self.offset).unwrap_or(i64::MAX);
    }

    /// A new id with no history behind it (DEBUG CHANGE-REPL-ID): no replica can
    /// continue from before it.
    pub fn change_replid(&mut self) {
        self.replid = new_replid();
        self.replid2 = "0".repeat(40);
        self.second_offset = -1;
    }

    /// At start, as a master whose dump file recorded a replication history (`id` up to
    /// `offset`): that history becomes the second id, the offset goes on from it and an
    /// empty backlog starts there, so replicas that had it continue with PSYNC after a
    /// restart instead of a full sync (Redis 7.0's `loadDataFromDisk`).
    pub fn continue_history(&mut self, id: &str, offset: u64, backlog_size: usize) {
        self.replid2 = id.to_string();
        self.second_offset = i64::try_from(offset).unwrap_or(i64::MAX);
        self.offset = offset;
        self.db = None;
        self.backlog = Some(Backlog::new(
            backlog_size,
            offset,
            self.replica_buffers.clone(),
        ));
        self.restart_idle();
    }

    /// Takes the id and offset of a master this server now replicates (full sync).
    /// The backlog starts there, created if this server had none: as in Redis, a
    /// replica keeps one, so that once promoted it can let the other replicas continue
    /// from their offsets (PSYNC2) instead of sending everything again.
    pub fn adopt(&mut self, replid: &str, offset: u64, backlog_size: usize) {
        self.replid = replid.to_string();
        self.replid2 = "0".repeat(40);
        self.second_offset = -1;
        self.offset = offset;
        self.db = None;
        let capacity = self
            .backlog
            .as_ref()
            .map_or(backlog_size, Backlog::capacity);
        self.backlog = Some(Backlog::new(capacity, offset, self.replica_buffers.clone()));
    }
}

/// A fresh 40-character replication id.
pub fn new_replid() -> String {
    (0..40)
        .map(|_| char::from(b"0123456789abcdef"[fastrand::usize(..16)]))
        .collect()
}

/// The stream grew to `head` for `link`: it is told there is more to write (or the task
/// that appended writes it itself, see [`super::direct`]), unless it is now past `limit`,
/// the replica output limit (then it is told to close). Returns false once it is.
fn grew_for(link: &Arc<ReplicaLink>, head: u64, limit: &OutputBufferLimit) -> bool {
    let fits = link.outbox.fits(head, limit);
    if fits && !super::direct::defer(link) {
        link.outbox.wake();
    }
    fits
}

/// The command stream of this server.
#[derive(Debug)]
pub struct Journal {
    active: AtomicBool,
    /// This server replicates a master: its stream is the master's, proxied byte for
    /// byte, and its own changes are not propagated.
    proxy: AtomicBool,
    gate: Box<[Slot]>,
    stream: Mutex<Stream>,
    /// Bumped on every replica ACK (WAIT waits on it).
    acks: watch::Sender<u64>,
    /// Told when a replica's link has tried to write more of the stream.
    handoff: Signal,
    /// [`Stream`]'s `handed`.
    handed: Arc<AtomicU64>,
}

impl Default for Journal {
    fn default() -> Self {
        let handed = Arc::new(AtomicU64::new(u64::MAX));
        Journal {
            active: AtomicBool::new(false),
            proxy: AtomicBool::new(false),
            gate: (0..GATE_SLOTS).map(|_| Slot::default()).collect(),
            stream: Mutex::new(Stream {
                replid: new_replid(),
                replid2: "0".repeat(40),
                second_offset: -1,
                offset: 0,
                db: None,
                aof_db: None,
                backlog: None,
                replicas: Vec::new(),
                presence: Arc::new(ReplicaPresence {
                    count: AtomicUsize::new(0),
                    none_since: AtomicU64::new(crate::persist::snapshot::unix_secs()),
                }),
                aof: None,
                replica_limit: crate::config::Config::default().client_output_buffer_limit[1],
                replica_buffers: Arc::default(),
                scratch: BytesMut::new(),
                handed: handed.clone(),
            }),
            handed,
            acks: watch::channel(0).0,
            handoff: Signal::default(),
        }
    }
}

/// Held while a write runs (see the module docs).
pub type GateGuard<'a> = RwLockReadGuard<'a, ()>;

impl Journal {
    /// Whether changes are recorded (a replica attached at some point, and this server
    /// is not itself a replica).
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Acquire) && !self.proxy.load(Ordering::Relaxed)
    }

    /// Whether this server proxies a master's stream.
    pub fn is_proxy(&self) -> bool {
        self.proxy.load(Ordering::Relaxed)
    }

    /// Switches proxy mode (REPLICAOF host port / NO ONE).
    pub fn set_proxy(&self, on: bool) {
        self.proxy.store(on, Ordering::Release);
    }

    /// Enters the gate for one write (top-level commands only: never nested).
    #[inline]
    pub fn enter(&self) -> GateGuard<'_> {
        let slot = SLOT.with(|s| *s);
        self.gate[slot].0.read()
    }

    /// [`Journal::enter`] for code that may run inside the gate this thread already
    /// holds (clients blocked on keys our master's stream just changed are served from
    /// inside its batch): it never queues behind a writer waiting for that outer hold,
    /// which would deadlock.
    pub fn enter_nested(&self) -> GateGuard<'_> {
        let slot = SLOT.with(|s| *s);
        self.gate[slot].0.read_recursive()
    }

    /// Turns recording on, after every write in flight has finished.
    pub fn activate(&self) {
        if self.active.load(Ordering::Acquire) {
            return;
        }
        let _all = self.hold_writes();
        self.active.store(true, Ordering::Release);
    }

    /// Turns recording on at once, without waiting for the writes in flight: for a
    /// replica's promotion, whose writes in flight (a writable replica's own) are not
    /// propagated anyway, and which may run inside a transaction holding the gate.
    pub fn activate_now(&self) {
        self.active.store(true, Ordering::Release);
    }

    /// Waits for every write in flight and keeps new ones out until dropped. Taken
    /// before any shard (the gate comes first in the lock order).
    pub fn hold_writes(&self) -> Vec<RwLockWriteGuard<'_, ()>> {
        self.gate.iter().map(|s| s.0.write()).collect()
    }

    /// The stream, locked (shards, if any, must be locked before it).
    pub fn stream(&self) -> parking_lot::MutexGuard<'_, Stream> {
        self.stream.lock()
    }

    /// Appends commands, each with the database it ran in; more than one are wrapped in
    /// MULTI/EXEC so the replica applies them as one, as Redis 7.0 does. Returns the
    /// offset after them.
    pub fn append(&self, commands: &[Propagated]) -> u64 {
        let mut stream = self.stream.lock();
        if commands.is_empty() {
            return stream.offset;
        }
        if commands.iter().all(|c| c.to == Targets::ALL) && stream.aof_db.is_none() {
            // Encoded into a buffer the stream keeps: the file and the backlog copy
            // from it, so a command costs no allocation here.
            let mut out = std::mem::take(&mut stream.scratch);
            out.clear();
            let mut db = stream.db;
            encode_for(commands, &mut db, |_| true, &mut out);
            stream.db = db;
            stream.push(&out);
            if out.capacity() <= SCRATCH_KEPT {
                stream.scratch = out;
            }
        } else {
            // A script sent some changes to one side only: each side gets its own
            // commands and SELECTs (MULTI and EXEC go to both, as in Redis).
            let mut aof_db = stream.aof_db.or(stream.db);
            let mut aof = BytesMut::new();
            encode_for(commands, &mut aof_db, |t| t.aof, &mut aof);
            let mut db = stream.db;
            let mut replicas = BytesMut::new();
            encode_for(commands, &mut db, |t| t.replicas, &mut replicas);
            stream.db = db;
            stream.aof_db = if aof_db == db { None } else { aof_db };
            stream.push_split(&aof, &replicas);
        }
        stream.offset
    }

    /// Appends bytes as they came from this server's master (proxy mode).
    pub fn append_raw(&self, bytes: Bytes) {
        let mut stream = self.stream.lock();
        // Those bytes may select another database, which is not tracked: once this
        // server writes on its own (promoted), its first command names its database.
        stream.force_select();
        stream.push(&bytes);
        // Freed while the lock is held, so nobody sees the new offset with the copy still
        // counted in `used_memory` (it may be a large value's second copy).
        drop(bytes);
    }

    /// Asks every replica for an ACK now rather than at its next second (WAIT, FAILOVER,
    /// a shutdown waiting for replicas).
    pub fn request_acks(&self) {
        self.append_dbless(&[
            Bytes::from_static(b"REPLCONF"),
            Bytes::from_static(b"GETACK"),
            Bytes::from_static(b"*"),
        ]);
    }

    /// Appends a command that names no database (PING, REPLCONF GETACK).
    pub fn append_dbless(&self, args: &[Bytes]) -> u64 {
        let mut out = BytesMut::new();
        write_command(&mut out, args);
        let mut stream = self.stream.lock();
        stream.push(&out);
        stream.offset
    }

    /// `link` made its first write of a chunk that ends at stream offset `end`;
    /// `caught_up` when its socket took all of it and it reached the end of the stream
    /// (see [`Self::hand_off`]). What no replica needs any more is freed, under the
    /// same lock: a direct writer ([`super::direct`]) has moved the link's offset by
    /// then (the link's own task moves it once its chunk is out, and trims again).
    pub fn link_tried(&self, link: &ReplicaLink, end: u64, caught_up: bool) {
        link.outbox.tried(end, caught_up);
        let moved = {
            let mut stream = self.stream.lock();
            stream.trim();
            stream.refresh_handed()
        };
        // Only when every link has gone further: with several replicas, the waiting
        // clients are woken by the last of them, not once per link.
        if moved {
            self.handoff.notify();
        }
    }

    /// Replica `id` leaves the stream (see [`Stream::detach`]); clients that waited for
    /// its link go on.
    pub fn detach(&self, id: u64) {
        if self.stream.lock().detach(id) {
            self.handoff.notify();
        }
    }

    /// Replica `id` was killed (CLIENT KILL): detached, and its connection shut down at
    /// once where this side holds its socket (see [`super::direct::Direct::shut_down`]).
    pub fn kill(&self, id: u64) {
        if let Some(link) = self.stream.lock().link(id) {
            link.direct.shut_down();
        }
        self.detach(id);
    }

    /// `link` has written the chunk it tried: if it was behind, clients wait for it
    /// again from now on.
    pub fn link_unstuck(&self, link: &ReplicaLink) {
        if link.outbox.unstuck() {
            self.stream.lock().refresh_handed();
        }
    }

    /// Waits until every online replica's link has made its first write of the stream
    /// up to `offset` (or is behind: its socket full, or more than a chunk to write),
    /// for [`HANDOFF_LIMIT`] at most: a
    /// client's reply then leaves after the change it acknowledges, as Redis writes its
    /// replicas' output before its clients' in each event-loop turn, and a client that
    /// reads from a replica right after its write's reply finds the write there.
    pub async fn hand_off(&self, offset: u64) {
        if !self.active() {
            return;
        }
        let handed = || self.handed.load(Ordering::Acquire) >= offset;
        if handed() {
            return;
        }
        let deadline = tokio::time::Instant::now() + HANDOFF_LIMIT;
        self.handoff.wait_until(handed, deadline).await;
    }

    /// Current offset.
    pub fn offset(&self) -> u64 {
        self.stream.lock().offset
    }

    /// Records a replica's ACK and wakes WAIT.
    pub fn acked(&self, link: &ReplicaLink, offset: u64) {
        link.ack.fetch_max(offset, Ordering::AcqRel);
        link.ack_time
            .store(crate::persist::snapshot::unix_secs(), Ordering::Relaxed);
        self.acks.send_modify(|n| *n += 1);
    }

    /// Watches ACKs (WAIT).
    pub fn subscribe_acks(&self) -> watch::Receiver<u64> {
        self.acks.subscribe()
    }

    /// Replicas online that acknowledged within the last `max_lag` seconds
    /// (`min-replicas-max-lag`).
    pub fn good_replicas(&self, max_lag: u64) -> usize {
        let now = crate::persist::snapshot::unix_secs();
        self.stream
            .lock()
            .replicas
            .iter()
            .filter(|r| {
                r.state() == LinkState::Online
                    && now.saturating_sub(r.ack_time.load(Ordering::Relaxed)) <= max_lag
            })
            .count()
    }

    /// Replicas online whose ACK reached `offset`.
    pub fn acked_count(&self, offset: u64) -> usize {
        self.stream
            .lock()
            .replicas
            .iter()
            .filter(|r| r.state() == LinkState::Online && r.acked() >= offset)
            .count()
    }
}

/// `commands` as one side receives them (those `side` keeps), with a SELECT wherever
/// the database changes from `db` (updated); several are wrapped in MULTI/EXEC.
fn encode_for(
    commands: &[Propagated],
    db: &mut Option<usize>,
    side: impl Fn(Targets) -> bool,
    out: &mut BytesMut,
) {
    let wrap = commands.len() > 1;
    if wrap {
        select(out, db, commands[0].db);
        write_command(out, &[Bytes::from_static(b"MULTI")]);
    }
    for c in commands.iter().filter(|c| side(c.to)) {
        select(out, db, c.db);
        write_command(out, &c.args);
    }
    if wrap {
        write_command(out, &[Bytes::from_static(b"EXEC")]);
    }
}

fn select(out: &mut BytesMut, current: &mut Option<usize>, db: usize) {
    if *current != Some(db) {
        let db_text = db.to_string();
        write_command(out, &[Bytes::from_static(b"SELECT"), Bytes::from(db_text)]);
        *current = Some(db);
    }
}

/// One command as a RESP array of bulk strings.
pub fn write_command(out: &mut BytesMut, args: &[Bytes]) {
    encode::write_array_len(out, args.len());
    for arg in args {
        encode::write_bulk(out, arg);
    }
}

impl crate::store::events::DeletionFeed for Journal {
    fn expired(&self, db: usize, key: &[u8]) {
        // A replica's stream is its master's (a key it expires itself, on a writable
        // replica, is not sent on, as in Redis).
        if self.active() && !self.is_proxy() {
            self.append(&[Propagated::all(
                db,
                vec![Bytes::from_static(b"DEL"), Bytes::copy_from_slice(key)],
            )]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn selects_once_and_wraps_several_commands() {
        let journal = Journal::default();
        let link = journal
            .stream()
            .attach(1, ReplicaIp::from("127.0.0.1"), 6380, 1 << 20, None);
        journal.append(&[Propagated::all(0, args(&["SET", "a", "1"]))]);
        journal.append(&[Propagated::all(0, args(&["SET", "b", "2"]))]);
        journal.append(&[
            Propagated::all(1, args(&["INCR", "x"])),
            Propagated::all(2, args(&["DEL", "y"])),
        ]);
        let chunk = journal.stream().next_chunk(&link).unwrap().unwrap();
        let got = chunk.to_vec();
        chunk.written();
        assert!(journal.stream().next_chunk(&link).unwrap().is_none());
        let text = String::from_utf8(got).unwrap().replace("\r\n", " ");
        assert_eq!(
            text,
            "*2 $6 SELECT $1 0 *3 $3 SET $1 a $1 1 *3 $3 SET $1 b $1 2 \
             *2 $6 SELECT $1 1 *1 $5 MULTI *2 $4 INCR $1 x \
             *2 $6 SELECT $1 2 *2 $3 DEL $1 y *1 $4 EXEC "
        );
        let stream = journal.stream();
        assert_eq!(
            stream.offset as usize,
            text.len() + text.matches(' ').count()
        );
        assert!(stream.continue_from(&stream.replid.clone(), 0).is_ok());
        assert!(stream.continue_from("other", 0).is_err());
    }

    #[test]
    fn activation_waits_for_writes_in_flight() {
        let journal = Arc::new(Journal::default());
        let gate = journal.enter();
        let j = journal.clone();
        let activating = std::thread::spawn(move || j.activate());
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!journal.active(), "activated while a write was in flight");
        drop(gate);
        activating.join().unwrap();
        assert!(journal.active());
    }
}
