//! Replication, as Redis 7.0 does it and compatible with it in both directions.
//!
//! - [`journal`]: the command stream every change goes into, its offset and backlog,
//!   and the order guarantee on a sharded keyspace (read its docs first).
//! - [`rewrite`]: what each command puts in the stream (absolute times, results instead
//!   of recomputations), so a replica, redis-server or redline, applies the same change.
//! - [`master`]: SYNC and PSYNC: a full sync ships an RDB image taken while every shard
//!   is held, then the stream from the offset it was taken at; PSYNC continues from the
//!   backlog after a short disconnect. REPLCONF ACKs feed WAIT and INFO.
//! - [`direct`]: the stream written to a replica by the client that changed the data,
//!   before its reply, when the link keeps up (else by the link's own task).
//! - [`disk_sync`]: the disk-based full sync: a BGSAVE into the dump file, shared by
//!   the replicas that ask while it runs.
//! - [`disk_less`]: the default full sync: replicas that ask meanwhile share one image,
//!   streamed to all of them as it is cut.
//! - [`replica`]: REPLICAOF: the handshake, loading the master's image (from the file
//!   [`synced_file`] wrote as it arrived, or as it arrives with `repl-diskless-load`),
//!   applying its
//!   stream with a client that may write to a read-only replica, ACKs, reconnecting with
//!   PSYNC, and proxying the stream byte for byte to this server's own replicas.
//!
//! Cluster mode ([`crate::cluster`]) replicates through this module: CLUSTER REPLICATE
//! and a won election use REPLICAOF's machinery.

pub mod backlog;
pub mod direct;
pub mod disk_less;
pub mod disk_sync;
pub mod failover;
pub mod journal;
pub mod master;
pub mod outbox;
pub mod replica;
pub mod rewrite;
pub mod silence;
pub mod synced_file;

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::cmd::Ctx;
pub use journal::Journal;
use journal::Propagated;

/// This server's replication state.
#[derive(Debug, Default)]
pub struct Replication {
    /// The command stream.
    pub journal: Arc<Journal>,
    /// The master this server replicates, if any.
    pub master: Mutex<Option<replica::MasterLink>>,
    /// The link to that master's input turns, for clients that come after its stream.
    pub master_input: replica::MasterInput,
    /// The second (since start) of the last PING into the stream.
    pub last_ping: std::sync::atomic::AtomicU64,
    /// Synchronizations served to replicas (INFO stats).
    pub syncs: SyncStats,
    /// A FAILOVER under way.
    pub failover: Mutex<Option<failover::Failover>>,
    /// Replicas waiting for a disk-less sync's image.
    pub disk_less: disk_less::DiskLessSyncs,
    /// Disk-based syncs: the BGSAVE serving them, and replicas waiting for the next.
    pub disk_syncs: disk_sync::DiskSyncs,
    /// The database the master's stream had selected, from the dump a configured
    /// replica loaded at start: its link continues from there.
    pub resumed_stream_db: Mutex<Option<usize>>,
    /// Held while a full sync's image loads off the runtime (where an aborted link
    /// task cannot stop it): a new link to a master waits for it before its PSYNC, so
    /// it names the history of the data it holds.
    pub load_gate: tokio::sync::Mutex<()>,
}

/// INFO's `sync_full`, `sync_partial_ok` and `sync_partial_err`, as Redis counts them:
/// full synchronizations served (SYNC, or a PSYNC that could not continue), PSYNCs
/// continued from the backlog, and PSYNCs naming a history that could not be continued.
#[derive(Debug, Default)]
pub struct SyncStats {
    /// Full synchronizations.
    pub full: std::sync::atomic::AtomicU64,
    /// Partial resynchronizations accepted.
    pub partial_ok: std::sync::atomic::AtomicU64,
    /// Partial resynchronizations refused (a full one followed).
    pub partial_err: std::sync::atomic::AtomicU64,
}

impl SyncStats {
    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        self.full.store(0, Relaxed);
        self.partial_ok.store(0, Relaxed);
        self.partial_err.store(0, Relaxed);
    }
}

impl Replication {
    /// `f` of the link to this server's master, if it replicates one.
    pub fn with_link<R>(&self, f: impl FnOnce(&replica::LinkStatus) -> R) -> Option<R> {
        self.master.lock().as_ref().map(|link| f(&link.status))
    }

    /// The replicas waiting for a full sync's image to start, disk-less or from a
    /// BGSAVE, by address (INFO lists them as `wait_bgsave`; they have acknowledged
    /// nothing yet).
    pub fn waiting_for_image(&self) -> Vec<(journal::ReplicaIp, u16)> {
        let mut waiting = self.disk_less.waiting();
        waiting.extend(self.disk_syncs.waiting());
        waiting
    }

    /// Whether this server replicates a master.
    pub fn is_replica(&self) -> bool {
        self.journal.is_proxy()
    }

    /// For a save about to hold every shard: on a replica, the journal's gate first,
    /// so the image records the master's offset it stands at ([`SaveInfo::of`] with
    /// `writes_held`); nothing on a master.
    pub fn hold_writes_for_save(&self) -> Option<Vec<parking_lot::RwLockWriteGuard<'_, ()>>> {
        self.is_replica().then(|| self.journal.hold_writes())
    }
}

/// What a dump file records of the replication history (Redis's aux fields
/// `repl-stream-db`, `repl-id`, `repl-offset`): a master's own stream, when recorded, or
/// the master's stream a replica applies. Read with every shard held: a master's
/// commands append after they change data, so the offset is at most the image's, and a
/// restart can at worst need a full sync, never continue from a wrong place. A replica
/// applies its master's stream a batch at a time inside the journal's gate, so its
/// history is saved only by a save that holds the gate too.
#[derive(Debug)]
pub struct SaveInfo {
    db: String,
    id: String,
    offset: String,
}

impl SaveInfo {
    /// The history to save, if there is one. A replica's (its master's, which it
    /// continues after a restart, as Redis's does) only when `writes_held`: the
    /// journal's gate is held, so no batch of the master's stream is half applied.
    pub fn of(shared: &crate::shared::Shared, writes_held: bool) -> Option<SaveInfo> {
        let journal = &shared.repl.journal;
        if shared.repl.is_replica() {
            if !writes_held {
                return None;
            }
            let db = shared.repl.master.lock().as_ref()?.stream_db();
            let stream = journal.stream();
            return Some(SaveInfo {
                db: db.to_string(),
                id: stream.replid.clone(),
                offset: stream.offset.to_string(),
            });
        }
        if !journal.active() {
            return None;
        }
        let stream = journal.stream();
        // As Redis's `rdbPopulateSaveInfo`: a master records its history only once it
        // has a backlog (a replica attached once), not for an AOF alone.
        stream.backlog()?;
        Some(SaveInfo {
            db: stream.selected_db().unwrap_or(0).to_string(),
            id: stream.replid.clone(),
            offset: stream.offset.to_string(),
        })
    }

    /// As aux fields of an image.
    pub fn aux(&self) -> [(&str, &[u8]); 3] {
        [
            ("repl-stream-db", self.db.as_bytes()),
            ("repl-id", self.id.as_bytes()),
            ("repl-offset", self.offset.as_bytes()),
        ]
    }
}

/// `repl-timeout`: how long either end of a link may stay silent, at any stage.
pub fn repl_timeout(shared: &crate::shared::Shared) -> std::time::Duration {
    let secs = shared.config.read().param_int("repl-timeout").max(1);
    std::time::Duration::from_secs(u64::try_from(secs).unwrap_or(1))
}

/// A link's read, with a TLS peer's close without `close_notify` (killed, or its link
/// dropped) read as what it is, a close (0), as a plain link's.
pub fn read_or_closed(read: std::io::Result<usize>) -> std::io::Result<usize> {
    match read {
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(0),
        read => read,
    }
}

/// Closes every replica link, as Redis's `disconnectSlaves` when this server's
/// replication id changes (a promotion, or a new id from our own master): they
/// reconnect with PSYNC and learn the new id before any byte of the new history,
/// instead of receiving it under the old id and needing a full sync later.
pub fn disconnect_replicas(shared: &crate::shared::Shared) {
    let ids: Vec<u64> = shared
        .repl
        .journal
        .stream()
        .replicas()
        .iter()
        .map(|r| r.id)
        .collect();
    for id in ids {
        shared.clients.kill(id);
    }
}

/// Makes this server a master (REPLICAOF NO ONE, a FAILOVER's target, an aborted
/// FAILOVER): the link to its master closes, the history goes on under a new id (the
/// old one stays valid as the second, so the other replicas continue with PSYNC) and
/// its replicas reconnect to learn it. Nothing happens if it is a master already.
pub fn promote(shared: &crate::shared::Shared) {
    let previous = shared.repl.master.lock().take();
    if let Some(link) = &previous {
        // Before the history moves on: a load still running ends as if before this.
        link.status.promoted();
        let journal = &shared.repl.journal;
        let has_backlog = {
            let mut stream = journal.stream();
            stream.shift_replid();
            // The backlog's time to live counts from the promotion, or it could be
            // freed before the old master's replicas reconnect.
            stream.restart_idle();
            stream.backlog().is_some()
        };
        disconnect_replicas(shared);
        if has_backlog {
            // Every write from now on goes into the backlog, as Redis feeds it, so the
            // replicas that attach next continue from their offsets with those writes
            // (recording would otherwise start only when the first one attaches).
            journal.activate_now();
        }
        journal.set_proxy(false);
        shared.store.events().set_replica(false);
        crate::log::set_replica(false);
        tracing::info!("MASTER MODE enabled (user request)");
    }
    shared.config.write().set_replicaof(None);
    shared.apply_oom_score(&shared.config.read());
}

/// Makes this server a replica of `host:port`: its own writes stop going into the
/// stream, which becomes the master's, and the link task starts. The caller stores the
/// returned link in [`Replication::master`] (REPLICAOF, or `replicaof` at start).
pub fn follow(shared: Arc<crate::shared::Shared>, host: String, port: u16) -> replica::MasterLink {
    shared.repl.journal.set_proxy(true);
    shared.store.events().set_replica(true);
    crate::log::set_replica(true);
    replica::replicate(shared, host, port)
}

/// At start: follows the master the configuration names (`replicaof host port`), as
/// redis-server does after loading its data.
pub fn follow_configured(shared: &Arc<crate::shared::Shared>) {
    let Some((host, port)) = shared.config.read().replicaof() else {
        return;
    };
    let mut master = shared.repl.master.lock();
    if master.is_none() {
        tracing::info!("Connecting to MASTER {host}:{port}");
        let link = follow(shared.clone(), host, port);
        if let Some(db) = shared.repl.resumed_stream_db.lock().take() {
            link.status
                .stream_db
                .store(db, std::sync::atomic::Ordering::Relaxed);
        }
        *master = Some(link);
    }
}

/// Records what a command that changed the dataset (or that always propagates, like
/// PUBLISH) puts in the stream, for the top-level command to append. `reply_start` is
/// where its reply begins in the output.
pub fn record(ctx: &mut Ctx<'_>, name: &str, args: &[Bytes], reply_start: usize, db: usize) {
    let forms = match ctx.client.propagate_as.take() {
        Some(forms) => forms,
        None => {
            let reply = if rewrite::reads_reply(name) {
                ctx.out
                    .get(reply_start..)
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            rewrite::propagated(ctx, name, args, &reply)
        }
    };
    let to = ctx.client.repl_targets;
    ctx.client
        .propagate
        .extend(forms.into_iter().map(|args| Propagated { db, args, to }));
}

/// Puts `forms` in the stream in place of the running command (Redis's
/// `alsoPropagate` with `preventCommandPropagation`), for a command whose change cannot
/// be replayed as sent. Inside a transaction, a script or a command run with its shards
/// held they are recorded for it to append; a top-level command that takes its own
/// locks (blocking pops, XREADGROUP) calls this while still holding them, and they are
/// appended now.
pub fn propagate_instead(ctx: &mut Ctx<'_>, forms: Vec<Vec<Bytes>>) {
    let journal = &ctx.shared.repl.journal;
    if !propagates(ctx) {
        return;
    }
    if ctx.nested || ctx.held.is_some() {
        ctx.client
            .propagate_as
            .get_or_insert_with(Vec::new)
            .extend(forms);
    } else if !forms.is_empty() {
        let db = ctx.client.db;
        let pending: Vec<_> = forms
            .into_iter()
            .map(|args| Propagated::all(db, args))
            .collect();
        ctx.client.repl_offset = journal.append(&pending);
    }
}

/// Whether [`propagate_instead`] would keep anything now: a command that builds its
/// forms only for it (one per entry an XREADGROUP delivers) asks first, under the same
/// locks. Our master's stream and an AOF being loaded are already in the stream.
pub fn propagates(ctx: &Ctx<'_>) -> bool {
    !ctx.client.is_master && ctx.shared.repl.journal.active()
}

/// Whether [`append_served`] would keep anything now.
pub fn serves_propagate(shared: &crate::shared::Shared) -> bool {
    shared.repl.journal.active() && !shared.repl.is_replica()
}

/// Appends what serving a blocked client changed (its pop, its group read), while the
/// keys' shards are still locked. A replica's stream is its master's: nothing of its own
/// goes in.
pub fn append_served(shared: &crate::shared::Shared, db: usize, forms: Vec<Vec<Bytes>>) {
    let journal = &shared.repl.journal;
    if forms.is_empty() || !serves_propagate(shared) {
        return;
    }
    let pending: Vec<_> = forms
        .into_iter()
        .map(|args| Propagated::all(db, args))
        .collect();
    journal.append(&pending);
}

/// Appends what the top-level command recorded, while its shards are still held.
pub fn flush(ctx: &mut Ctx<'_>) {
    if ctx.client.propagate.is_empty() {
        return;
    }
    if ctx.shared.repl.is_replica() {
        // Demoted meanwhile (REPLICAOF inside MULTI): our stream is the master's now.
        ctx.client.propagate.clear();
        return;
    }
    // Appended from where it was recorded, and the list kept for the next command.
    ctx.client.repl_offset = ctx.shared.repl.journal.append(&ctx.client.propagate);
    ctx.client.propagate.clear();
    // A long transaction's list is not kept.
    ctx.client.propagate.shrink_to(16);
}
