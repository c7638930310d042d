//! Disk-based full syncs, as Redis's `repl-diskless-sync no` (and for replicas that
//! cannot read a disk-less image): the image is a BGSAVE into the dump file.
//!
//! - The first replica to ask starts one: its instant is the image's, the replica is
//!   attached to the stream at that offset and gets `+FULLRESYNC <id> <offset>`.
//! - A replica that asks while such a save runs and another replica still waits for it
//!   joins it: attached at the same offset (the stream since then is still buffered for
//!   the replica that waits), as Redis copies the waiting replica's output buffer.
//! - A replica that asks while a BGSAVE nobody can join runs (BGSAVE, a save point, or
//!   a sync's save its replicas all left) waits for the next one, with a newline a
//!   second meanwhile, as Redis keeps its `wait_bgsave_start` replicas alive.
//! - Once written, the file is renamed into place as any BGSAVE's (LASTSAVE and the
//!   dirty count move; the dump file now holds it) and every replica that waited gets
//!   it as a bulk (`$<len>` then the bytes), read from the file it opened at that
//!   instant, so a later save replacing the dump file changes nothing it sends.
//! - When the last replica waiting for it leaves, the save stops, unless save points
//!   are configured: then it is a save the user wants and it goes on, as Redis kills
//!   its child only in the first case.
//!
//! Replicas that ask for a filtered image (`REPLCONF rdb-filter-only`), and any when
//! no file can be created in `dir`, get an image serialised in memory at once.

use super::journal::ReplicaIp;
use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;

use super::journal::{LinkState, ReplicaLink};
use super::master::{backlog_size, keep_alive, keepalive_ticks, SyncInstant};
use crate::net::client::RdbFilter;
use crate::persist::bgsave::{self, Begun, NotStarted};
use crate::persist::snapshot::{self, Persistence};
use crate::shared::Shared;

/// The image is read from its file and sent in pieces of this size.
const SEND_PIECE: usize = 1 << 20;

/// How often a replica waiting for the next BGSAVE looks whether one can start.
const RETRY: Duration = Duration::from_millis(100);

/// The disk-based syncs of a master.
#[derive(Debug, Default)]
pub struct DiskSyncs {
    /// The BGSAVE that serves disk-based syncs, while it runs.
    current: Mutex<Option<Arc<Save>>>,
    /// Replicas waiting for the next BGSAVE: id, address, listening port.
    queued: Mutex<Vec<(u64, ReplicaIp, u16)>>,
    /// A sync's BGSAVE wrote the dump file while `rdb-del-sync-files` was on (Redis's
    /// `RDBGeneratedByReplication`): see [`remove_file_of_syncs`].
    wrote_dump_file: AtomicBool,
}

/// A BGSAVE serving disk-based syncs.
#[derive(Debug)]
struct Save {
    state: Mutex<SaveState>,
    persistence: Arc<Persistence>,
}

#[derive(Debug, Default)]
struct SaveState {
    /// The image's history id and offset.
    replid: String,
    offset: u64,
    /// The replicas waiting for its file.
    waiters: Vec<Waiter>,
    /// Its file is written (or it failed): nobody joins any more.
    done: bool,
    /// Stops its cut.
    abort: Option<Arc<AtomicBool>>,
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    ready: oneshot::Sender<std::io::Result<(File, u64)>>,
}

/// What a replica asked for: a full sync, by PSYNC (answered `+FULLRESYNC`) or SYNC.
#[derive(Debug)]
pub struct Request {
    /// Its connection's id.
    pub id: u64,
    /// Its address.
    pub ip: ReplicaIp,
    /// The port it listens on (`REPLCONF listening-port`).
    pub port: u16,
    /// PSYNC rather than SYNC.
    pub psync: bool,
    /// `REPLCONF rdb-filter-only`: an image without keys, made at once.
    pub filter: Option<RdbFilter>,
}

/// A replica's full sync has its image's instant: its link, attached to the stream
/// there, and the image to send before the stream.
#[derive(Debug)]
pub struct Started {
    /// The replica as the stream knows it.
    pub link: Arc<ReplicaLink>,
    image: Image,
}

#[derive(Debug)]
enum Image {
    /// A BGSAVE's file, once written.
    Saved(Ticket),
    /// Serialised at once.
    InMemory(Vec<u8>),
}

/// A replica's place among a save's waiters; leaving (its link dropped) takes it out
/// and, when it was the last and no save point wants the file, stops the save.
#[derive(Debug)]
struct Ticket {
    save: Arc<Save>,
    id: u64,
    ready: oneshot::Receiver<std::io::Result<(File, u64)>>,
}

enum Join {
    Joined(Arc<ReplicaLink>, String, u64, Ticket),
    /// A BGSAVE nobody can join runs: wait for the next.
    Busy,
    /// No file: an image in memory instead.
    NoFile,
}

/// A replica waiting for the next BGSAVE; dropped, it no longer is.
struct Queued<'a> {
    syncs: &'a DiskSyncs,
    id: u64,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.syncs.queued.lock().retain(|q| q.0 != self.id);
    }
}

impl DiskSyncs {
    /// The replicas waiting for the next BGSAVE, by address (INFO lists them as
    /// `wait_bgsave`, as Redis does its `wait_bgsave_start` replicas).
    pub fn waiting(&self) -> Vec<(ReplicaIp, u16)> {
        self.queued
            .lock()
            .iter()
            .map(|q| (q.1.clone(), q.2))
            .collect()
    }

    fn queue(&self, request: &Request) -> Queued<'_> {
        self.queued
            .lock()
            .push((request.id, request.ip.clone(), request.port));
        Queued {
            syncs: self,
            id: request.id,
        }
    }

    /// Joins the running sync's save if a replica still waits for it, or starts one.
    fn join(&self, shared: &Shared, request: &Request) -> Join {
        let mut current = self.current.lock();
        if let Some(save) = current.as_ref() {
            let mut state = save.state.lock();
            if !state.done && !state.waiters.is_empty() {
                let mut stream = shared.repl.journal.stream();
                if stream.backlog().is_some_and(|b| b.holds(state.offset)) {
                    let link = stream.attach(
                        request.id,
                        request.ip.clone(),
                        request.port,
                        backlog_size(shared),
                        Some(state.offset),
                    );
                    drop(stream);
                    let ticket = Ticket::new(save, &mut state, request.id);
                    tracing::info!("Waiting for end of BGSAVE for SYNC");
                    return Join::Joined(link, state.replid.clone(), state.offset, ticket);
                }
            }
        }
        let save = Arc::new(Save {
            state: Mutex::new(SaveState::default()),
            persistence: shared.persistence.clone(),
        });
        let begin = |temp: std::path::PathBuf| {
            let mut instant =
                SyncInstant::take(shared, &[(request.id, request.ip.clone(), request.port)]);
            let aux = instant.aux(shared);
            let aux: Vec<(&str, &[u8])> = aux.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
            let link = instant.links.remove(0);
            let (replid, offset) = (instant.replid.clone(), instant.offset);
            match bgsave::begin_cut(shared, &mut instant.held, temp, &aux) {
                Ok(cut) => {
                    let mut state = save.state.lock();
                    state.abort = Some(cut.abort_handle());
                    state.replid.clone_from(&replid);
                    state.offset = offset;
                    let ticket = Ticket::new(&save, &mut state, request.id);
                    drop(state);
                    let begun = Begun::new(shared, cut);
                    drop(instant);
                    Ok((begun, (link, replid, offset, ticket)))
                }
                Err(e) => {
                    drop(instant);
                    shared.repl.journal.detach(request.id);
                    Err(e)
                }
            }
        };
        let written: bgsave::Written = {
            let save = save.clone();
            Box::new(move |result| save.written(result))
        };
        match bgsave::start_bgsave(shared, begin, Some(written)) {
            Ok((link, replid, offset, ticket)) => {
                *current = Some(save);
                if shared.config.read().param_bool("rdb-del-sync-files") {
                    self.wrote_dump_file.store(true, Ordering::Relaxed);
                }
                tracing::info!(
                    "Starting BGSAVE for SYNC with target: disk (replica {}:{}, offset {offset})",
                    request.ip.clone(),
                    request.port
                );
                Join::Joined(link, replid, offset, ticket)
            }
            Err(NotStarted::Running) => Join::Busy,
            Err(NotStarted::Failed(_)) => Join::NoFile,
        }
    }
}

impl Save {
    /// On the BGSAVE's thread, its cut ended: every waiting replica opens the file now
    /// (before it is renamed into place, so no later save can replace what it reads),
    /// or learns that it failed.
    fn written(&self, result: Result<(&std::path::Path, u64), &std::io::Error>) {
        let mut state = self.state.lock();
        state.done = true;
        for waiter in std::mem::take(&mut state.waiters) {
            let opened = match result {
                Ok((path, size)) => File::open(path).map(|file| (file, size)),
                Err(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
            };
            let _ = waiter.ready.send(opened);
        }
    }
}

impl Ticket {
    fn new(save: &Arc<Save>, state: &mut SaveState, id: u64) -> Ticket {
        let (ready, receiver) = oneshot::channel();
        state.waiters.push(Waiter { id, ready });
        Ticket {
            save: save.clone(),
            id,
            ready: receiver,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut state = self.save.state.lock();
        state.waiters.retain(|w| w.id != self.id);
        if state.done || !state.waiters.is_empty() {
            return;
        }
        if self.save.persistence.save_points.load(Ordering::Relaxed) {
            return;
        }
        if let Some(abort) = &state.abort {
            tracing::warn!(
                "No replica waits for the BGSAVE for SYNC and no save point needs it: stopping it"
            );
            abort.store(true, Ordering::Relaxed);
        }
    }
}

/// Waits until a replica's full sync has its image's instant: joins or starts a BGSAVE
/// (waiting for the next one while one nobody can join runs), then answers PSYNC's
/// `+FULLRESYNC`. A newline a second keeps the replica's handshake alive meanwhile.
pub async fn started<S: AsyncRead + AsyncWrite + Unpin>(
    shared: &Shared,
    socket: &mut S,
    input: &mut BytesMut,
    request: Request,
) -> std::io::Result<Started> {
    let syncs = &shared.repl.disk_syncs;
    let mut newline = keepalive_ticks();
    let mut queued = None;
    let (link, replid, offset, image) = loop {
        if request.filter.is_some() {
            let (link, replid, offset, bytes) = image_now(shared, &request);
            break (link, replid, offset, Image::InMemory(bytes));
        }
        match syncs.join(shared, &request) {
            Join::Joined(link, replid, offset, ticket) => {
                break (link, replid, offset, Image::Saved(ticket))
            }
            Join::NoFile => {
                let (link, replid, offset, bytes) = image_now(shared, &request);
                break (link, replid, offset, Image::InMemory(bytes));
            }
            Join::Busy => {
                if queued.is_none() {
                    tracing::info!(
                        "Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC"
                    );
                    queued = Some(syncs.queue(&request));
                }
            }
        }
        keep_alive(
            shared,
            socket,
            input,
            &mut newline,
            tokio::time::sleep(RETRY),
        )
        .await?;
    };
    drop(queued);
    if request.psync {
        socket
            .write_all(format!("+FULLRESYNC {replid} {offset}\r\n").as_bytes())
            .await?;
    }
    Ok(Started { link, image })
}

impl Started {
    /// Sends the replica its image as a bulk once it is written, with a newline a
    /// second until then. The link is `wait_bgsave` until the file is written, then
    /// `send_bulk`, as in Redis.
    pub async fn send<S: AsyncRead + AsyncWrite + Unpin>(
        self,
        shared: &Shared,
        socket: &mut S,
        input: &mut BytesMut,
    ) -> std::io::Result<()> {
        let Started { link, image } = self;
        match image {
            Image::InMemory(bytes) => {
                link.set_state(LinkState::SendBulk);
                socket
                    .write_all(format!("${}\r\n", bytes.len()).as_bytes())
                    .await?;
                socket.write_all(&bytes).await?;
                tracing::info!(
                    "Full resync of replica {}:{}: {} bytes of RDB sent",
                    link.ip,
                    link.listening_port.load(Ordering::Relaxed),
                    bytes.len()
                );
            }
            Image::Saved(mut ticket) => {
                let mut newline = keepalive_ticks();
                let written =
                    keep_alive(shared, socket, input, &mut newline, &mut ticket.ready).await?;
                let (file, size) = written
                    .map_err(|_| std::io::Error::other("the BGSAVE for SYNC was abandoned"))?
                    .map_err(|e| {
                        tracing::warn!("SYNC failed. BGSAVE for the replica failed: {e}");
                        e
                    })?;
                link.set_state(LinkState::SendBulk);
                socket.write_all(format!("${size}\r\n").as_bytes()).await?;
                // Read a megabyte at a time: each read of a tokio file is a trip to a
                // blocking thread, and `copy` reads 8 KB at a time (1 GB took 5.0 s
                // to sync that way, 3.5 s this way: bench/NOTES.md, stop 91).
                let file = tokio::fs::File::from_std(file).take(size);
                let mut file = tokio::io::BufReader::with_capacity(SEND_PIECE, file);
                let copied = tokio::io::copy_buf(&mut file, socket).await?;
                if copied != size {
                    return Err(std::io::Error::other("the sync image changed size"));
                }
                tracing::info!("Synchronization image of {size} bytes sent");
            }
        }
        // A TLS link may still hold the image's last records (the socket was full at
        // the last write): out now, not with the stream's first change.
        socket.flush().await
    }
}

/// From the server's cron (Redis's `removeRDBUsedToSyncReplicas`): with
/// `rdb-del-sync-files yes` and no persistence configured, the dump file a disk-based
/// sync wrote goes once no replica waits for an image or is being sent one, so an
/// instance without persistence does not keep the dataset on disk.
pub fn remove_file_of_syncs(shared: &Shared) {
    let syncs = &shared.repl.disk_syncs;
    if !shared.config.read().param_bool("rdb-del-sync-files") {
        // Cleared, so that turning the option on later does not delete a file written
        // while it was off.
        syncs.wrote_dump_file.store(false, Ordering::Relaxed);
        return;
    }
    if !syncs.wrote_dump_file.load(Ordering::Relaxed)
        || !snapshot::all_persistence_disabled(shared)
        || !syncs.queued.lock().is_empty()
    {
        return;
    }
    let syncing = shared
        .repl
        .journal
        .stream()
        .replicas()
        .iter()
        .any(|link| link.state() != LinkState::Online);
    let path = snapshot::dump_path(shared);
    if !syncing && path.symlink_metadata().is_ok() {
        syncs.wrote_dump_file.store(false, Ordering::Relaxed);
        tracing::info!(
            "Removing the RDB file used to feed replicas in a persistence-less instance"
        );
        let _ = std::fs::remove_file(path);
    }
}

/// An image serialised now, with every shard held, and the replica attached at its
/// offset: the filtered one the replica asked for, or the whole dataset (when no file
/// could be made).
fn image_now(shared: &Shared, request: &Request) -> (Arc<ReplicaLink>, String, u64, Vec<u8>) {
    let mut instant = SyncInstant::take(shared, &[(request.id, request.ip.clone(), request.port)]);
    let aux = instant.aux(shared);
    let aux: Vec<(&str, &[u8])> = aux.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
    let bytes = match request.filter {
        // A filtered image has no keys: small, made at once.
        Some(filter) => snapshot::filtered_image(shared, &aux, filter == RdbFilter::Functions),
        None => snapshot::capture(shared, &mut instant.held, &aux),
    };
    let link = instant.links.remove(0);
    (link, instant.replid.clone(), instant.offset, bytes)
}
