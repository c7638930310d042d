//! Disk-less full syncs, as Redis's `repl-diskless-sync yes` (its default): replicas
//! that ask for a full sync within `repl-diskless-sync-delay` seconds of the first one
//! (or until `repl-diskless-sync-max-replicas` of them wait) share one image. When the
//! wait ends the image's instant is taken for all of them at once (one cut of the
//! dataset, one offset, every replica attached to the stream there), each gets
//! `+FULLRESYNC <id> <offset>` and `$EOF:<40-byte mark>`, and the cut's bytes go to all
//! of them as they are written, then the mark, then the stream.
//!
//! The cut writes into a pipe (`Pipe`) that one relay task reads and hands to every
//! replica's link, so the slowest replica paces the image and nothing waits in a file.
//! A replica that stops reading for `repl-timeout` is dropped ("Disconnecting timedout
//! replica (full sync)"); when the last one goes the cut stops, as Redis kills its
//! child. While replicas wait for the image to start they get a newline every second,
//! which keeps their handshake timeout from expiring.
//!
//! A replica that arrives once an image has started waits for the next one, as in
//! Redis. Replicas that cannot read the `$EOF` form (no `REPLCONF capa eof`), and the
//! filtered images of `REPLCONF rdb-filter-only`, get a disk-based sync instead
//! ([`super::master`]).

use super::journal::ReplicaIp;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, Notify};

use super::journal::ReplicaLink;
use super::master::{keep_alive, keepalive_ticks, SyncInstant, EARLY_INPUT};
use crate::persist::bgsave::{self, CutFormat, CutOutputSink};
use crate::persist::snapshot;
use crate::shared::Shared;

/// Bytes of image the cut hands to the pipe at a time, and pieces the pipe holds.
const PIECE: usize = 64 * 1024;
const PIPE_PIECES: usize = 16;
/// Pieces each replica's link may hold before the relay waits for it.
const LINK_PIECES: usize = 4;

/// The disk-less syncs of a master: the group of replicas waiting for the next image.
#[derive(Debug, Default)]
pub struct DiskLessSyncs {
    next: Mutex<Option<Arc<Group>>>,
    /// The abort flags of the images being written (gone once an image's cut and relay
    /// are over).
    running: Mutex<Vec<Weak<AtomicBool>>>,
}

/// Replicas waiting for one image.
#[derive(Debug)]
struct Group {
    /// When the first one arrived: the wait counts from it.
    since: tokio::time::Instant,
    members: Mutex<Vec<Member>>,
    /// A member arrived (`repl-diskless-sync-max-replicas` may be reached).
    joined: Notify,
}

#[derive(Debug)]
struct Member {
    id: u64,
    ip: ReplicaIp,
    port: u16,
    started: oneshot::Sender<Started>,
}

/// A replica's place in a group, until its image starts; leaving (its link dropped)
/// takes it out.
#[derive(Debug)]
pub struct Waiting {
    group: Arc<Group>,
    id: u64,
    started: oneshot::Receiver<Started>,
}

/// A replica's image has started: its link, attached to the stream at the image's
/// offset, and the pieces of the image as they come.
#[derive(Debug)]
pub struct Started {
    /// The replica as the stream knows it.
    pub link: Arc<ReplicaLink>,
    replid: String,
    offset: u64,
    mark: String,
    pieces: mpsc::Receiver<Piece>,
}

/// What the relay hands a replica's link.
#[derive(Debug)]
enum Piece {
    Bytes(Bytes),
    /// The image is complete (a link whose pieces end without this lost its image).
    End,
}

impl DiskLessSyncs {
    /// Replica `id` (at `ip`, listening on `port`) waits for the next image.
    pub fn join(&self, id: u64, ip: ReplicaIp, port: u16) -> Waiting {
        let mut next = self.next.lock();
        // A group whose replicas all left is no group: the wait counts from this one.
        if next.as_ref().is_some_and(|g| g.members.lock().is_empty()) {
            *next = None;
        }
        let group = next
            .get_or_insert_with(|| {
                Arc::new(Group {
                    since: tokio::time::Instant::now(),
                    members: Mutex::new(Vec::new()),
                    joined: Notify::new(),
                })
            })
            .clone();
        let (started, receiver) = oneshot::channel();
        group.members.lock().push(Member {
            id,
            ip,
            port,
            started,
        });
        group.joined.notify_waiters();
        Waiting {
            group,
            id,
            started: receiver,
        }
    }

    /// The replicas waiting for the next image to start, by address (INFO lists them
    /// as `wait_bgsave`, as Redis lists its replicas waiting for a child).
    pub fn waiting(&self) -> Vec<(ReplicaIp, u16)> {
        self.next.lock().as_ref().map_or_else(Vec::new, |group| {
            group
                .members
                .lock()
                .iter()
                .map(|m| (m.ip.clone(), m.port))
                .collect()
        })
    }

    /// Stops every image being written (FLUSHALL, as Redis kills its RDB child): their
    /// replicas lose their links and sync again, from the dataset as it is now. True if
    /// one was running.
    pub fn abort_running(&self) -> bool {
        let running = std::mem::take(&mut *self.running.lock());
        let mut stopped = false;
        for abort in running.iter().filter_map(Weak::upgrade) {
            abort.store(true, Ordering::Relaxed);
            stopped = true;
        }
        stopped
    }

    /// Ends the wait of `group` (if it is still the next one): it takes no more
    /// replicas.
    fn close(&self, group: &Arc<Group>) {
        let mut next = self.next.lock();
        if next.as_ref().is_some_and(|g| Arc::ptr_eq(g, group)) {
            *next = None;
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.group.members.lock().retain(|m| m.id != self.id);
    }
}

impl Waiting {
    /// Waits for the image to start, sending the replica a newline a second meanwhile;
    /// starts it when the wait is over (`repl-diskless-sync-delay` since the first
    /// replica of the group, or `repl-diskless-sync-max-replicas` waiting).
    pub async fn started<S: AsyncRead + AsyncWrite + Unpin>(
        mut self,
        shared: &Shared,
        socket: &mut S,
        input: &mut BytesMut,
    ) -> std::io::Result<Started> {
        let mut newline = keepalive_ticks();
        loop {
            let (delay, max) = {
                let config = shared.config.read();
                (
                    config.param_int("repl-diskless-sync-delay").max(0) as u64,
                    usize::try_from(config.param_int("repl-diskless-sync-max-replicas"))
                        .unwrap_or(0),
                )
            };
            let due = self.group.since + Duration::from_secs(delay);
            let joined = self.group.joined.notified();
            let full = max > 0 && self.group.members.lock().len() >= max;
            if full || tokio::time::Instant::now() >= due {
                start(shared, &self.group);
            }
            let started = &mut self.started;
            let woke = keep_alive(shared, socket, input, &mut newline, async {
                tokio::select! {
                    started = started => Some(started),
                    () = tokio::time::sleep_until(due) => None,
                    () = joined => None,
                }
            })
            .await?;
            if let Some(started) = woke {
                return started
                    .map_err(|_| std::io::Error::other("the sync image could not start"));
            }
        }
    }
}

/// Starts the image of `group`, unless another of its members did: takes its instant
/// for every member (attached to the stream at one offset, one cut of the dataset),
/// tells each, and starts the cut's writer and the relay.
fn start(shared: &Shared, group: &Arc<Group>) {
    shared.repl.disk_less.close(group);
    let members = std::mem::take(&mut *group.members.lock());
    if members.is_empty() {
        return;
    }
    let journal = &shared.repl.journal;
    journal.activate();
    let (pipe, pieces) = mpsc::channel(PIPE_PIECES);
    let addresses: Vec<_> = members
        .iter()
        .map(|m| (m.id, m.ip.clone(), m.port))
        .collect();
    let mut instant = SyncInstant::take(shared, &addresses);
    let aux = instant.aux(shared);
    let aux: Vec<(&str, &[u8])> = aux.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
    let header = snapshot::image_start(shared, &aux).into_header();
    let cut = bgsave::begin_cut_into(
        shared,
        &mut instant.held,
        Box::new(Pipe(pipe)),
        PIECE,
        std::path::PathBuf::new(),
        &header,
        CutFormat::Rdb,
    );
    let (replid, offset) = (instant.replid.clone(), instant.offset);
    let links = std::mem::take(&mut instant.links);
    // Clients go on.
    drop(instant);
    let cut = match cut {
        Ok(cut) => cut,
        Err(e) => {
            tracing::warn!("Can't start the disk-less sync image: {e}");
            for m in &members {
                journal.detach(m.id);
            }
            return;
        }
    };
    tracing::info!("Starting BGSAVE for SYNC with target: replicas sockets");
    let mark = super::journal::new_replid();
    let mut outlets = Vec::new();
    for (member, link) in members.into_iter().zip(links) {
        let (to_link, from_relay) = mpsc::channel(LINK_PIECES);
        let started = Started {
            link,
            replid: replid.clone(),
            offset,
            mark: mark.clone(),
            pieces: from_relay,
        };
        match member.started.send(started) {
            Ok(()) => outlets.push(to_link),
            // Its link went meanwhile.
            Err(_) => journal.detach(member.id),
        }
    }
    let abort = cut.abort_handle();
    {
        let mut running = shared.repl.disk_less.running.lock();
        running.retain(|a| a.strong_count() > 0);
        running.push(Arc::downgrade(&abort));
    }
    let (written, result) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("redline-sync-cut".into())
        .spawn(move || {
            crate::background::lower_this_thread();
            let _ = written.send(cut.complete().is_ok());
        });
    if let Err(e) = spawned {
        // The cut went with the closure; the links see their pieces end.
        tracing::warn!("Can't start the disk-less sync image: {e}");
        return;
    }
    // Redis's line names its child; the image is written by a thread of this process.
    tracing::info!(
        "Background RDB transfer started by pid {} (a thread of this process)",
        std::process::id()
    );
    // INFO's `rdb_bgsave_in_progress` until the relay has handed on the last piece,
    // as Redis's RDB child counts until the pipe is read to its end.
    let in_progress = snapshot::SyncCutInProgress::new(shared.persistence.clone());
    tokio::spawn(relay(pieces, outlets, result, abort, in_progress));
}

/// No replica is left for the image: the cut stops, as Redis kills its child.
fn last_dropped(abort: &AtomicBool) {
    tracing::warn!("Diskless rdb transfer, last replica dropped, killing fork child.");
    abort.store(true, Ordering::Relaxed);
}

/// Resolves once every replica's link has gone.
async fn all_closed(outlets: &[mpsc::Sender<Piece>]) {
    for outlet in outlets {
        outlet.closed().await;
    }
}

/// Hands every piece of the image to every replica's link still there, at the pace of
/// the slowest; stops the cut when none is left.
async fn relay(
    mut pieces: mpsc::Receiver<Bytes>,
    mut outlets: Vec<mpsc::Sender<Piece>>,
    written: oneshot::Receiver<bool>,
    abort: Arc<AtomicBool>,
    _in_progress: snapshot::SyncCutInProgress,
) {
    loop {
        // The last replica may go while the cut has nothing to hand over (a slow
        // image): the cut stops then, not at its next piece.
        let next = tokio::select! {
            piece = pieces.recv() => piece,
            () = all_closed(&outlets) => return last_dropped(&abort),
        };
        let Some(piece) = next else {
            break;
        };
        let mut kept = Vec::with_capacity(outlets.len());
        for outlet in outlets {
            if outlet.send(Piece::Bytes(piece.clone())).await.is_ok() {
                kept.push(outlet);
            }
        }
        outlets = kept;
        if outlets.is_empty() {
            return last_dropped(&abort);
        }
    }
    tracing::warn!(
        "Diskless rdb transfer, done reading from pipe, {} replicas still up.",
        outlets.len()
    );
    if written.await == Ok(true) {
        for outlet in &outlets {
            let _ = outlet.send(Piece::End).await;
        }
    } else if abort.load(Ordering::Relaxed) {
        // The links see their pieces end without the end mark and close: the replicas
        // connect again and sync the dataset as it is now.
        tracing::warn!("Background transfer stopped (FLUSHALL): the replicas will sync again");
    } else {
        tracing::warn!("Background transfer error");
    }
}

impl Started {
    /// Sends the replica its image: FULLRESYNC, the `$EOF` header, the pieces as the
    /// relay hands them over, the mark. A replica that takes nothing for `repl-timeout`
    /// is dropped.
    pub async fn send<S: AsyncRead + AsyncWrite + Unpin>(
        mut self,
        shared: &Shared,
        socket: &mut S,
        input: &mut BytesMut,
    ) -> std::io::Result<()> {
        let link = &self.link;
        let head = format!(
            "+FULLRESYNC {} {}\r\n$EOF:{}\r\n",
            self.replid, self.offset, self.mark
        );
        // The link stays `wait_bgsave` while its image streams, as in Redis (only a
        // disk-based image is `send_bulk`).
        socket.write_all(head.as_bytes()).await?;
        loop {
            // A replica that goes while the relay is behind is seen at once (its
            // link closes), not at the next piece.
            let piece = tokio::select! {
                piece = self.pieces.recv() => piece,
                read = socket.read_buf(input), if input.len() < EARLY_INPUT => {
                    if read? == 0 {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "the replica closed the link during its image",
                        ));
                    }
                    continue;
                }
            };
            let bytes = match piece {
                Some(Piece::Bytes(bytes)) => bytes,
                Some(Piece::End) => break,
                None => return Err(std::io::Error::other("the sync image was abandoned")),
            };
            write_or_time_out(shared, socket, &bytes, link).await?;
        }
        socket.write_all(self.mark.as_bytes()).await?;
        // A TLS link may still hold the image's last records (the socket was full at
        // the last write): out now, or the replica waits for its mark while this side
        // waits for its ACK.
        socket.flush().await?;
        tracing::info!(
            "Streamed RDB transfer with replica {}:{} succeeded (socket). Waiting for REPLCONF ACK from slave to enable streaming",
            link.ip,
            link.listening_port.load(std::sync::atomic::Ordering::Relaxed)
        );
        Ok(())
    }
}

/// Writes a piece of the image. A replica that takes nothing for `repl-timeout` (read
/// again every second, so a lowered timeout applies at once, as Redis's cron checks it)
/// is dropped, with Redis's log line.
async fn write_or_time_out<S: AsyncWrite + Unpin>(
    shared: &Shared,
    socket: &mut S,
    mut bytes: &[u8],
    link: &ReplicaLink,
) -> std::io::Result<()> {
    let mut progress = tokio::time::Instant::now();
    while !bytes.is_empty() {
        match tokio::time::timeout(Duration::from_secs(1), socket.write(bytes)).await {
            Ok(written) => {
                let written = written?;
                if written == 0 {
                    return Err(std::io::ErrorKind::WriteZero.into());
                }
                bytes = &bytes[written..];
                progress = tokio::time::Instant::now();
            }
            Err(_) => {
                if progress.elapsed() >= super::repl_timeout(shared) {
                    tracing::warn!(
                        "Disconnecting timedout replica (full sync): {}:{}",
                        link.ip,
                        link.listening_port
                            .load(std::sync::atomic::Ordering::Relaxed)
                    );
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the replica took nothing of its image for repl-timeout",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The cut's end of the pipe: its writer thread blocks while the relay is behind.
struct Pipe(mpsc::Sender<Bytes>);

impl std::io::Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .blocking_send(Bytes::copy_from_slice(buf))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "no replica left"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CutOutputSink for Pipe {}
