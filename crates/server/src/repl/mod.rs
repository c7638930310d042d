//! Replication, as Redis 7.0 does it and compatible with it in both directions.
//!
//! - [`journal`]: the command stream every change goes into, its offset and backlog,
//!   and the order guarantee on a sharded keyspace (read its docs first).
//! - [`rewrite`]: what each command puts in the stream (absolute times, results instead
//!   of recomputations), so a replica, redis-server or redline, applies the same change.
//! - [`master`]: SYNC and PSYNC: a full sync ships an RDB image taken while every shard
//!   is held, then the stream from the offset it was taken at; PSYNC continues from the
//!   backlog after a short disconnect. REPLCONF ACKs feed WAIT and INFO.
//! - [`replica`]: REPLICAOF: the handshake, loading the master's image, applying its
//!   stream with a client that may write to a read-only replica, ACKs, reconnecting with
//!   PSYNC, and proxying the stream byte for byte to this server's own replicas.
//!
//! # Cluster mode, next
//!
//! `cluster-enabled yes` builds on this: the keyspace is already sharded by hash slot
//! (`slot % shards`), so a node owning a set of slots serves exactly the shards' keys
//! whose slot it owns, answers MOVED/ASK for the others from a slot table swapped
//! atomically (as the client library does), and migrates a slot by streaming its keys
//! with the RDB value codec (MIGRATE/RESTORE ASKING). Failover inside a cluster reuses
//! this module's replication; the cluster bus (Redis 7.0's gossip and failure detection,
//! a binary protocol on port+10000) is a separate listener that updates the slot table,
//! so redline-server nodes can join a cluster that `redis-cli --cluster` manages.

pub mod backlog;
pub mod journal;
pub mod master;
pub mod replica;
pub mod rewrite;

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::cmd::Ctx;
pub use journal::Journal;

/// This server's replication state.
#[derive(Debug, Default)]
pub struct Replication {
    /// The command stream.
    pub journal: Arc<Journal>,
    /// The master this server replicates, if any.
    pub master: Mutex<Option<replica::MasterLink>>,
    /// The second (since start) of the last PING into the stream.
    pub last_ping: std::sync::atomic::AtomicU64,
    /// Synchronizations served to replicas (INFO stats).
    pub syncs: SyncStats,
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
    /// Whether this server replicates a master.
    pub fn is_replica(&self) -> bool {
        self.journal.is_proxy()
    }
}

/// Makes this server a replica of `host:port`: its own writes stop going into the
/// stream, which becomes the master's, and the link task starts. The caller stores the
/// returned link in [`Replication::master`] (REPLICAOF, or `replicaof` at start).
pub fn follow(shared: Arc<crate::shared::Shared>, host: String, port: u16) -> replica::MasterLink {
    shared.repl.journal.set_proxy(true);
    shared.store.events().set_replica(true);
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
        *master = Some(follow(shared.clone(), host, port));
    }
}

/// Records what a command that changed the dataset (or that always propagates, like
/// PUBLISH) puts in the stream, for the top-level command to append. `reply_start` is
/// where its reply begins in the output.
pub fn record(ctx: &mut Ctx<'_>, name: &str, args: &[Bytes], reply_start: usize, db: usize) {
    let forms = match ctx.client.propagate_as.take() {
        Some(forms) => forms,
        None => {
            let reply = ctx
                .out
                .get(reply_start..)
                .map(<[u8]>::to_vec)
                .unwrap_or_default();
            rewrite::propagated(ctx, name, args, &reply)
        }
    };
    ctx.client
        .propagate
        .extend(forms.into_iter().map(|form| (db, form)));
}

/// Puts `forms` in the stream in place of the running command (Redis's
/// `alsoPropagate` with `preventCommandPropagation`), for a command whose change cannot
/// be replayed as sent. Inside a transaction, a script or a command run with its shards
/// held they are recorded for it to append; a top-level command that takes its own
/// locks (blocking pops, XREADGROUP) calls this while still holding them, and they are
/// appended now.
pub fn propagate_instead(ctx: &mut Ctx<'_>, forms: Vec<Vec<Bytes>>) {
    let journal = &ctx.shared.repl.journal;
    // Our master's stream and an AOF being loaded are already in the stream.
    if ctx.client.is_master || !journal.active() {
        return;
    }
    if ctx.nested || ctx.held.is_some() {
        ctx.client
            .propagate_as
            .get_or_insert_with(Vec::new)
            .extend(forms);
    } else if !forms.is_empty() {
        let db = ctx.client.db;
        let pending: Vec<_> = forms.into_iter().map(|form| (db, form)).collect();
        ctx.client.repl_offset = journal.append(&pending);
    }
}

/// Appends what serving a blocked client changed (its pop, its group read), while the
/// keys' shards are still locked. A replica's stream is its master's: nothing of its own
/// goes in.
pub fn append_served(shared: &crate::shared::Shared, db: usize, forms: Vec<Vec<Bytes>>) {
    let journal = &shared.repl.journal;
    if forms.is_empty() || !journal.active() || shared.repl.is_replica() {
        return;
    }
    let pending: Vec<_> = forms.into_iter().map(|form| (db, form)).collect();
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
    let pending = std::mem::take(&mut ctx.client.propagate);
    ctx.client.repl_offset = ctx.shared.repl.journal.append(&pending);
}
