//! The append-only file, as Redis 7.0 writes it: a directory (`appenddirname`) holding a
//! base file (an RDB image with `aof-use-rdb-preamble yes`, else the commands Redis's rewrite
//! writes, [`super::aof_commands`]), incremental files of commands in RESP, and a manifest
//! listing them:
//!
//! ```text
//! file appendonly.aof.1.base.rdb seq 1 type b
//! file appendonly.aof.1.incr.aof seq 1 type i
//! ```
//!
//! The incremental file receives the replication stream itself (`crate::repl::journal`):
//! every change, in the order the shards saw them, with its SELECTs and MULTI/EXEC. It is
//! buffered where the stream is appended, and written to the file before any reply
//! goes out ([`before_replies`]), so a reply acknowledges a change the file (at least
//! the kernel's page cache) holds, whatever the policy, as Redis writes its buffer
//! before it sends replies; one write covers every connection's changes since the
//! last, not one write per command. With `appendfsync always` the write is also on
//! disk (fsynced) before its reply leaves, one fsync covering every connection waiting
//! (a group commit, as Redis's one fsync per event-loop turn); `everysec` fsyncs from
//! the server's cron once a second; `no` leaves it to the kernel. The cron also writes
//! what no reply waited for (expired keys' deletions, a replica's stream).
//!
//! A rewrite (BGREWRITEAOF, the automatic rewrite, turning AOF on) makes a new base of
//! the dataset as it was at one instant, and the stream goes on in a new incremental
//! file from that instant; then the new manifest is written and the files it replaced
//! are deleted (unless `aof-disable-auto-gc`): a directory that loads in redis-server
//! 7.0 as it loads here, its files numbered as Redis numbers them
//! ([`super::aof_manifest`]). With the AOF already on (or off), the base (RDB with
//! `aof-use-rdb-preamble yes`, the default, else commands) is written in the
//! background from a cut of the keyspace ([`super::bgsave`]), as Redis's child writes
//! it: the manifest
//! names the new incremental file at once (a restart meanwhile loads the old base, the
//! old increments and the new one), and the new base replaces the old files once
//! complete. `appendonly no` and SHUTDOWN stop it. Turning the AOF on still takes its
//! image while every shard is held. A start goes on
//! appending to the last incremental file, as Redis's; a pre-7.0 `appendonly.aof` in
//! `dir` is moved into the directory as the base of a new manifest.

use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, BytesMut};
use parking_lot::Mutex;

use super::aof_manifest::Manifest;
use super::bgsave::CutFormat;
use super::group_commit::{Pacing, Wants};
use crate::shared::Shared;
use crate::store::Held;

/// When the incremental file is fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    /// After every append, before the reply.
    Always,
    /// Once a second.
    EverySec,
    /// Never explicitly.
    No,
}

impl Fsync {
    fn from_config(text: &str) -> Fsync {
        match text {
            "always" => Fsync::Always,
            "no" => Fsync::No,
            _ => Fsync::EverySec,
        }
    }
}

/// The open incremental file, written by the stream.
#[derive(Debug)]
pub struct AofFile {
    file: Arc<File>,
    fsync: Fsync,
    /// What its writes did, updated by the writer outside the stream's lock.
    stats: Arc<FileStats>,
    /// Where replies wait under `appendfsync always`.
    durability: Arc<Durability>,
    /// The second of the last `#TS` annotation.
    last_timestamp: u64,
    /// Appended and not written yet (Redis's `aof_buf`): written by [`AofFile::flush`]
    /// before the replies that acknowledge it go out.
    pending: BytesMut,
}

/// What the writes to one incremental file did.
#[derive(Debug, Default)]
struct FileStats {
    /// Bytes in the file.
    size: AtomicU64,
    /// Written since the last fsync.
    dirty: AtomicBool,
}

/// A write to the file that did not complete: how many of its bytes stay in the file,
/// and the error (Redis's `aof_last_write_errno`).
struct WriteFailure {
    kept: usize,
    /// Bytes the write got in before it failed.
    written: usize,
    errno: i32,
    /// The first write of the bytes came short (logged as a short write).
    short: bool,
}

impl FileStats {
    /// Writes `bytes` to `file` whole. A write cut short (a full disk) is taken back out
    /// of the file, as Redis truncates it, so the file never ends inside a command and
    /// the bytes are written again whole; if the truncation fails too, the part written
    /// stays (and is counted).
    fn write(&self, file: &File, bytes: &[u8]) -> Result<(), WriteFailure> {
        let mut out = file;
        let mut done = 0;
        while done < bytes.len() {
            match out.write(super::data_file::piece(&bytes[done..])) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if done == 0 => {
                    return Err(WriteFailure {
                        kept: 0,
                        written: 0,
                        errno: e.raw_os_error().unwrap_or(libc::EIO),
                        short: false,
                    })
                }
                Err(_) => break,
            }
        }
        if done == bytes.len() {
            self.size.fetch_add(done as u64, Ordering::Relaxed);
            self.dirty.store(true, Ordering::Release);
            return Ok(());
        }
        // Some of it is in: Redis reports the disk as full.
        let before = self.size.load(Ordering::Relaxed);
        // The position too: a file not opened for appending would write after a hole.
        let truncated = file
            .set_len(before)
            .and_then(|()| out.seek(std::io::SeekFrom::Start(before)));
        let kept = match truncated {
            Ok(_) => 0,
            Err(e) => {
                tracing::warn!(
                    "Could not remove short write from the append-only file.  Redis may refuse to load the AOF the next time it starts.  ftruncate: {}",
                    crate::cstr::strerror(&e)
                );
                self.size.fetch_add(done as u64, Ordering::Relaxed);
                self.dirty.store(true, Ordering::Release);
                done
            }
        };
        Err(WriteFailure {
            kept,
            written: done,
            errno: libc::ENOSPC,
            short: true,
        })
    }
}

impl AofFile {
    /// Appends a piece of the stream to the buffer; [`before_replies`] writes it (and
    /// under `appendfsync always` fsyncs it) before the connection's replies go out.
    pub fn write(&mut self, bytes: &[u8]) {
        if self.durability.timestamps.load(Ordering::Relaxed) && !bytes.is_empty() {
            // `aof-timestamp-enabled`: a `#TS:<unix time>` line before the first write
            // of each second, as Redis annotates.
            let now = super::snapshot::unix_secs();
            if now > self.last_timestamp {
                self.last_timestamp = now;
                self.append(format!("#TS:{now}\r\n").as_bytes());
            }
        }
        self.append(bytes);
    }

    fn append(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        self.durability
            .appended
            .fetch_add(bytes.len() as u64, Ordering::AcqRel);
    }

    /// Takes the buffer for [`write_pending`] to write outside the stream's lock: the
    /// bytes, where they go, and the position they end at.
    fn take(&mut self) -> Option<Taken> {
        if self.pending.is_empty() {
            return None;
        }
        Some(Taken {
            bytes: self.pending.split(),
            file: self.file.clone(),
            stats: self.stats.clone(),
            end: self.durability.appended.load(Ordering::Acquire),
        })
    }

    /// Puts bytes a write could not write back before what was appended since, for the
    /// next write (Redis keeps them in its `aof_buf`).
    fn requeue(&mut self, mut unwritten: BytesMut) {
        unwritten.extend_from_slice(&self.pending);
        self.pending = unwritten;
    }

    /// Writes the buffer with the stream locked: for the file the stream leaves, whose
    /// caller holds the writer's lock (see [`Durability::writer`]).
    fn flush_locked(&mut self) {
        if let Some(taken) = self.take() {
            if let Some(unwritten) = taken.write(&self.durability) {
                self.requeue(unwritten);
            }
        }
    }
}

/// Bytes taken from an [`AofFile`]'s buffer, to be written in the stream's order.
struct Taken {
    bytes: BytesMut,
    file: Arc<File>,
    stats: Arc<FileStats>,
    end: u64,
}

impl Taken {
    /// Writes the bytes; returns those not written, which go first in the next write.
    fn write(mut self, durability: &Durability) -> Option<BytesMut> {
        let sleep = durability.flush_sleep_us.load(Ordering::Relaxed);
        if sleep > 0 {
            // DEBUG AOF-FLUSH-SLEEP: the write is late, as Redis's flush sleeps (tests
            // check that replies still wait for it).
            std::thread::sleep(std::time::Duration::from_micros(sleep));
        }
        match self.stats.write(&self.file, &self.bytes) {
            Ok(()) => {
                durability.write_succeeded();
                // Every byte appended up to `end` is in a file now.
                durability.written.fetch_max(self.end, Ordering::AcqRel);
                None
            }
            Err(failure) => {
                durability.write_failed(&failure, self.bytes.len());
                self.bytes.advance(failure.kept);
                Some(self.bytes)
            }
        }
    }
}

/// Group commit for `appendfsync always`, as Redis's one fsync per event-loop turn:
/// a connection about to send replies asks for everything appended so far to be on
/// disk and awaits it ([`before_replies`]) without holding its worker thread, so the
/// other connections keep running commands meanwhile; one syncer thread fsyncs
/// whatever was appended by then, which covers every connection waiting.
#[derive(Debug)]
pub struct Durability {
    /// `appendfsync always` is on.
    always: AtomicBool,
    /// Bytes appended ever, across files (a position in the stream of writes).
    appended: AtomicU64,
    /// Up to which position the appended bytes were written to their file.
    written: AtomicU64,
    /// Held while bytes taken from the buffer are written, so that writes keep the
    /// stream's order without holding the stream's lock through the syscall (appends
    /// go on meanwhile). Taken before the stream's lock, never after it.
    writer: Mutex<()>,
    /// The file the syncer fsyncs (the current incremental file).
    file: Mutex<Option<Arc<File>>>,
    /// What connections waiting for the disk want (see [`super::group_commit`]).
    wants: Mutex<Wants>,
    wake: parking_lot::Condvar,
    /// Up to which position the writes are on disk.
    synced: tokio::sync::watch::Sender<u64>,
    /// The syncer thread was started.
    syncer: AtomicBool,
    /// The syncer writes the buffer before each fsync, so under `appendfsync always`
    /// the connections leave the writing to it.
    syncer_writes: AtomicBool,
    /// DEBUG AOF-FLUSH-SLEEP: microseconds each write waits first.
    flush_sleep_us: AtomicU64,
    /// `aof-timestamp-enabled`.
    timestamps: AtomicBool,
    /// The errno of the last write when it failed, else 0 (Redis's
    /// `aof_last_write_status` and `aof_last_write_errno`).
    write_errno: AtomicI32,
    /// The errno of the last `everysec` fsync when it failed, else 0 (Redis's
    /// `aof_bio_fsync_status`).
    fsync_errno: AtomicI32,
    /// When a failed write was last logged (seconds), to log one every
    /// [`ERROR_LOG_PERIOD`].
    write_error_logged: AtomicU64,
}

/// Seconds between two logs of failing AOF writes (Redis's `AOF_WRITE_LOG_ERROR_RATE`).
const ERROR_LOG_PERIOD: u64 = 30;

/// Whether a rewrite's base file is sent to disk as it is written.
const AOF_AUTOSYNC: &str = "aof-rewrite-incremental-fsync";

impl Default for Durability {
    fn default() -> Self {
        Durability {
            always: AtomicBool::new(false),
            appended: AtomicU64::new(0),
            written: AtomicU64::new(0),
            writer: Mutex::new(()),
            file: Mutex::new(None),
            wants: Mutex::new(Wants::default()),
            wake: parking_lot::Condvar::new(),
            synced: tokio::sync::watch::Sender::new(0),
            syncer: AtomicBool::new(false),
            syncer_writes: AtomicBool::new(false),
            flush_sleep_us: AtomicU64::new(0),
            timestamps: AtomicBool::new(false),
            write_errno: AtomicI32::new(0),
            fsync_errno: AtomicI32::new(0),
            write_error_logged: AtomicU64::new(0),
        }
    }
}

impl Durability {
    /// A write failed: logged (once every [`ERROR_LOG_PERIOD`]), and writes are refused
    /// until one succeeds. Under `appendfsync always` the server exits, as Redis does:
    /// replies promised that what they acknowledge or show is on disk.
    fn write_failed(&self, failure: &WriteFailure, expected: usize) {
        self.write_errno.store(failure.errno, Ordering::Release);
        let now = super::snapshot::unix_secs();
        let last = self.write_error_logged.load(Ordering::Relaxed);
        if now.saturating_sub(last) > ERROR_LOG_PERIOD
            && self
                .write_error_logged
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            if failure.short {
                tracing::warn!(
                    "Short write while writing to the AOF file: (nwritten={}, expected={expected})",
                    failure.written
                );
            } else {
                tracing::warn!(
                    "Error writing to the AOF file: {}",
                    crate::cstr::strerror(&std::io::Error::from_raw_os_error(failure.errno))
                );
            }
        }
        if self.always.load(Ordering::Acquire) {
            tracing::warn!(
                "Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting..."
            );
            std::process::exit(1);
        }
    }

    fn write_succeeded(&self) {
        if self.write_errno.load(Ordering::Relaxed) != 0
            && self.write_errno.swap(0, Ordering::AcqRel) != 0
        {
            tracing::warn!("AOF write error looks solved, Redis can write again.");
        }
    }

    /// The `everysec` fsync's outcome: a failure refuses writes until one succeeds.
    fn fsynced(&self, result: std::io::Result<()>) {
        match result {
            Ok(()) => self.fsync_errno.store(0, Ordering::Release),
            Err(e) => {
                let errno = e.raw_os_error().unwrap_or(libc::EIO);
                if self.fsync_errno.swap(errno, Ordering::AcqRel) == 0 {
                    tracing::warn!("Fail to fsync the AOF file: {}", crate::cstr::strerror(&e));
                }
            }
        }
    }

    /// The errno that refuses writes (Redis's DISK_ERROR_TYPE_AOF): the last write's,
    /// else the last fsync's; `None` when both succeeded.
    pub fn disk_error(&self) -> Option<i32> {
        [&self.write_errno, &self.fsync_errno]
            .into_iter()
            .map(|errno| errno.load(Ordering::Acquire))
            .find(|&errno| errno != 0)
    }

    /// The file writes go to from now on (`None`: the AOF is off); `always` is the policy.
    fn switch(self: &Arc<Self>, shared: &Shared, file: Option<Arc<File>>, always: bool) {
        *self.file.lock() = file;
        self.always.store(always, Ordering::Release);
        if always && !self.syncer.swap(true, Ordering::AcqRel) {
            let weak = Arc::downgrade(self);
            let owner = shared.arc().map(|a| Arc::downgrade(&a));
            self.syncer_writes.store(owner.is_some(), Ordering::Release);
            let spawned = std::thread::Builder::new()
                .name("redline-aof-fsync".into())
                .spawn(move || Durability::sync_loop(&weak, owner.as_ref()));
            if let Err(e) = spawned {
                tracing::warn!("Can't start the AOF fsync thread: {e}");
                self.syncer.store(false, Ordering::Release);
                self.syncer_writes.store(false, Ordering::Release);
            }
        }
        if !always {
            // Nothing waits for the disk any more.
            let appended = self.appended.load(Ordering::Acquire);
            self.synced.send_modify(|s| *s = (*s).max(appended));
        }
    }

    /// The syncer: sleeps until a connection wants a position not synced yet, lets the
    /// group gather when the last one was large ([`super::group_commit`]), fsyncs
    /// everything appended by then, publishes it. Ends with the server's state.
    fn sync_loop(weak: &std::sync::Weak<Durability>, owner: Option<&std::sync::Weak<Shared>>) {
        let mut pacing = Pacing::default();
        loop {
            let Some(d) = weak.upgrade() else {
                return;
            };
            {
                let mut wants = d.wants.lock();
                if wants.upto <= *d.synced.borrow() {
                    // Woken by a request, or every second to notice a stopped server.
                    d.wake
                        .wait_for(&mut wants, std::time::Duration::from_secs(1));
                    continue;
                }
                if let Some((enough, until)) = pacing.gather(Instant::now()) {
                    // Only here is `wake_at` set: every other arrival wakes the syncer.
                    wants.wake_at = enough;
                    while wants.arrivals < enough
                        && !d.wake.wait_until(&mut wants, until).timed_out()
                    {}
                    wants.wake_at = 0;
                }
                pacing.start(wants.arrivals);
            }
            let started = Instant::now();
            // The syncer writes what was appended, then fsyncs it: one write per fsync
            // instead of one per reply batch (see `before_replies`).
            if let Some(shared) = owner.and_then(std::sync::Weak::upgrade) {
                write_pending(&shared);
            }
            // Everything written by now is in the current file, or (after a rewrite
            // swapped it) in the old one, which was fsynced before the swap.
            let upto = d.written.load(Ordering::Acquire);
            let file = d.file.lock().clone();
            if let Some(file) = file {
                if let Err(e) = file.sync_data() {
                    // As Redis: after a failed fsync the kernel may have dropped the
                    // pages, so a later success would not mean they are on disk, and
                    // the replies waiting were promised they are.
                    tracing::warn!(
                        "Can't persist AOF for fsync error when the AOF fsync policy is 'always': {}. Exiting...",
                        crate::cstr::strerror(&e)
                    );
                    std::process::exit(1);
                }
            }
            pacing.done(started);
            d.synced.send_modify(|s| *s = (*s).max(upto));
        }
    }
}

/// DEBUG AOF-FLUSH-SLEEP: every AOF write waits `micros` first (0: none).
pub fn set_flush_sleep(shared: &Shared, micros: u64) {
    shared
        .aof
        .durability
        .flush_sleep_us
        .store(micros, Ordering::Relaxed);
}

/// Before a connection's replies go out: every change appended so far is written to
/// the file, and under `appendfsync always` on disk too (awaited without holding the
/// worker, so other connections run meanwhile).
pub async fn before_replies(shared: &Shared) {
    let d = &shared.aof.durability;
    let target = d.appended.load(Ordering::Acquire);
    let syncer_writes = d.always.load(Ordering::Acquire) && d.syncer_writes.load(Ordering::Acquire);
    let mut turns = 0;
    while !syncer_writes && d.written.load(Ordering::Acquire) < target {
        if let Some(writer) = d.writer.try_lock() {
            write_taken(shared, &writer);
            break;
        }
        // Another connection is writing, maybe these bytes: let this worker run other
        // connections meanwhile (their changes join the next write) rather than park
        // it on the lock; a write that takes long is waited for.
        if turns < WRITER_TURNS {
            turns += 1;
            tokio::task::yield_now().await;
        } else {
            write_pending(shared);
            break;
        }
    }
    if !d.always.load(Ordering::Acquire) {
        return;
    }
    let mut synced = d.synced.subscribe();
    if *synced.borrow_and_update() >= target {
        return;
    }
    if d.wants.lock().arrive(target) {
        d.wake.notify_one();
    }
    while *synced.borrow_and_update() < target {
        if synced.changed().await.is_err() || !d.always.load(Ordering::Acquire) {
            return;
        }
    }
}

/// Writes what the stream appended to the AOF and was not written yet; nothing when
/// the AOF is off. The bytes are taken under the stream's lock and written after it,
/// under the writer's lock (see `Durability::writer`).
pub fn write_pending(shared: &Shared) {
    let writer = shared.aof.durability.writer.lock();
    write_taken(shared, &writer);
}

/// How many times [`before_replies`] yields while another connection writes, before it
/// waits on the lock.
const WRITER_TURNS: u32 = 16;

/// [`write_pending`] with the writer's lock held.
fn write_taken(shared: &Shared, _writer: &parking_lot::MutexGuard<'_, ()>) {
    let d = &shared.aof.durability;
    if d.written.load(Ordering::Acquire) >= d.appended.load(Ordering::Acquire) {
        // Another connection wrote them while this one waited.
        return;
    }
    let taken = shared
        .repl
        .journal
        .stream()
        .aof
        .as_mut()
        .and_then(AofFile::take);
    if let Some(taken) = taken {
        let file = taken.file.clone();
        if let Some(unwritten) = taken.write(d) {
            // Written again first by the next write (the cron's, or a reply's), into
            // the same file: the writer's lock, still held, keeps it current.
            let mut stream = shared.repl.journal.stream();
            if let Some(aof) = stream.aof.as_mut().filter(|a| Arc::ptr_eq(&a.file, &file)) {
                aof.requeue(unwritten);
            }
        }
    }
}

/// Writes the current file's buffer and returns the file: before an fsync that must
/// cover everything appended (a rewrite leaving the file, DEBUG LOADAOF, shutdown).
fn written_file(shared: &Shared) -> Option<Arc<File>> {
    let _writer = shared.aof.durability.writer.lock();
    shared.repl.journal.stream().aof.as_mut().map(|a| {
        a.flush_locked();
        a.file.clone()
    })
}

/// AOF state and counters.
#[derive(Debug, Default)]
pub struct Aof {
    /// A rewrite is running (INFO `aof_rewrite_in_progress`).
    pub rewriting: AtomicBool,
    /// Rewrites done (`aof_rewrites`).
    pub rewrites: AtomicU64,
    /// How long the running rewrite and the last one took.
    pub rewrite_clock: super::run_clock::RunClock,
    /// Size of the base file at the last rewrite (`aof_base_size`).
    pub base_size: AtomicU64,
    /// The manifest: the files of the AOF and the last sequence numbers given out.
    manifest: Mutex<Manifest>,
    /// The last rewrite failed.
    pub rewrite_failed: AtomicBool,
    /// A rewrite asked for inside a transaction, where the shards it needs are held:
    /// the cron runs it (INFO `aof_rewrite_scheduled`).
    pub rewrite_scheduled: AtomicBool,
    /// Stops the rewrite running in the background, if one is.
    rewrite_abort: super::bgsave::RunningCut,
    /// The rewrite running turns the AOF on (Redis's `AOF_WAIT_REWRITE`): until it
    /// completes, the stream goes to a temporary increment the manifest does not name,
    /// and a shutdown without FORCE refuses to exit.
    pub initial_rewrite: AtomicBool,
    /// `appendfsync always`'s group commit.
    pub durability: Arc<Durability>,
}

/// The directory the AOF lives in.
fn dir(shared: &Shared) -> PathBuf {
    PathBuf::from(shared.config.read().param("appenddirname"))
}

fn base_name(shared: &Shared) -> String {
    shared.config.read().param("appendfilename").to_string()
}

fn manifest_path(shared: &Shared) -> PathBuf {
    dir(shared).join(format!("{}.manifest", base_name(shared)))
}

/// Whether the AOF is being written.
pub fn enabled(shared: &Shared) -> bool {
    shared.repl.journal.stream().aof.is_some()
}

/// `read` of the current incremental file, if the AOF is on.
fn current<T>(shared: &Shared, read: impl FnOnce(&AofFile) -> T) -> Option<T> {
    shared.repl.journal.stream().aof.as_ref().map(read)
}

/// Size of the current incremental file (`aof_current_size` adds the base).
pub fn current_size(shared: &Shared) -> u64 {
    current(shared, |a| a.stats.size.load(Ordering::Relaxed)).unwrap_or(0)
}

/// Bytes appended and not written to the file yet (`aof_buffer_length`).
pub fn buffer_length(shared: &Shared) -> usize {
    current(shared, |a| a.pending.len()).unwrap_or(0)
}

/// Whether the last write or fsync failed (INFO `aof_last_write_status`).
pub fn write_failed(shared: &Shared) -> bool {
    shared.aof.durability.disk_error().is_some()
}

/// Turns the AOF on (`appendonly yes`), or rewrites it: a new base of the dataset as it
/// is at one instant, a new incremental file the stream writes from then on (with the
/// AOF on), a new manifest; the files replaced become history. The base is written in
/// the background ([`rewrite_in_background`]).
pub fn rewrite(shared: &Shared) -> std::io::Result<()> {
    let aof = &shared.aof;
    let (preamble, wanted_on) = {
        let config = shared.config.read();
        (config.param_bool("aof-use-rdb-preamble"), config.appendonly)
    };
    let on = shared.repl.journal.stream().aof.is_some();
    if aof.rewriting.swap(true, Ordering::AcqRel) {
        if wanted_on && !on {
            // Turning the AOF on while a rewrite runs: the cron starts it afterwards.
            aof.rewrite_scheduled.store(true, Ordering::Release);
        }
        return Ok(());
    }
    rewrite_in_background(shared, preamble).inspect_err(|_| {
        aof.rewrite_failed.store(true, Ordering::Relaxed);
        aof.rewriting.store(false, Ordering::Release);
    })
}

/// After a full sync replaced the dataset (a replica's): the AOF starts again from the
/// new one, as Redis stops and restarts it. A rewrite running stops, the stream stops
/// going to the old files, and a rewrite turns the AOF on again: the old files stay
/// named until its base is complete, so a crash meanwhile never pairs the new data's
/// stream with the old base.
pub fn restart(shared: &Shared) -> std::io::Result<()> {
    abort_rewrite(shared);
    stop_writing(shared);
    rewrite(shared)
}

/// Stops the rewrite running in the background (`appendonly no`, SHUTDOWN), as Redis
/// kills its child: the manifest stays as it was (the old base and increments, and the
/// increment begun for the rewrite), the unfinished base is removed. True when one ran.
pub fn abort_rewrite(shared: &Shared) -> bool {
    if !shared.aof.rewrite_abort.abort() {
        return false;
    }
    tracing::info!("Killing running AOF rewrite child thread");
    let _ = std::fs::remove_file(rewrite_temp_path(shared));
    true
}

/// Where a background rewrite writes its base until complete.
fn rewrite_temp_path(shared: &Shared) -> PathBuf {
    dir(shared).join(format!("temp-rewriteaof-bg-{}.aof", std::process::id()))
}

/// Where the stream goes while a rewrite turns the AOF on (Redis's name for it).
fn temp_incr_path(shared: &Shared) -> PathBuf {
    dir(shared).join(format!("temp-{}.incr", base_name(shared)))
}

/// What a rewrite does with the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    /// The AOF is on: a new increment, named in the manifest at once.
    NewIncr,
    /// The AOF is off: the base alone.
    Off,
    /// The rewrite turns the AOF on: a temporary increment until the base is complete.
    TempIncr,
}

/// Starts a rewrite whose base (RDB with `preamble`, else commands) is written in the
/// background (see the module's documentation); the thread it starts clears
/// `rewriting` when done.
fn rewrite_in_background(shared: &Shared, preamble: bool) -> std::io::Result<()> {
    let owner = shared
        .arc()
        .ok_or_else(|| std::io::Error::other("the server is stopping"))?;
    let directory = dir(shared);
    std::fs::create_dir_all(&directory)?;
    let name = base_name(shared);
    let journal = &shared.repl.journal;
    journal.activate();
    // The instant: no write in flight (a replica's batch of its master's stream is
    // whole), every shard held. The base holds everything before it, the new increment
    // everything after.
    let writes = journal.hold_writes();
    let mut held = Held::all(&shared.store);
    if shared.persistence.loading.is_active() {
        // A load began since the cron looked: the cut would hold part of it. The cron
        // starts the rewrite once the load is over.
        shared.aof.rewrite_scheduled.store(true, Ordering::Release);
        shared.aof.rewriting.store(false, Ordering::Release);
        return Ok(());
    }
    let temp = rewrite_temp_path(shared);
    let (header, format) = if preamble {
        let header = super::snapshot::image_start(shared, &[]).into_header();
        (header, CutFormat::Rdb)
    } else {
        (super::aof_commands::header(shared), CutFormat::Commands)
    };
    let cut = super::bgsave::begin_cut_as(shared, &mut held, temp, &header, format, AOF_AUTOSYNC)?;
    let on = journal.stream().aof.is_some();
    let stream = match (on, shared.config.read().appendonly) {
        (true, _) => Stream::NewIncr,
        (false, true) => Stream::TempIncr,
        (false, false) => Stream::Off,
    };
    if stream == Stream::TempIncr {
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(temp_incr_path(shared))?;
        attach(shared, file, 0);
        shared.aof.initial_rewrite.store(true, Ordering::Release);
    }
    if stream == Stream::NewIncr {
        let mut manifest = shared.aof.manifest.lock();
        let mut next = manifest.clone();
        let incr = next.new_incr(&name);
        let incr_path = directory.join(&incr);
        let opened = (|| {
            let file = OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .open(&incr_path)?;
            persist_manifest(shared, &mut next)?;
            Ok::<_, std::io::Error>(file)
        })();
        let file = match opened {
            Ok(file) => file,
            Err(e) => {
                // The cut goes with `cut`'s drop; the manifest still names the old files.
                let _ = std::fs::remove_file(&incr_path);
                return Err(e);
            }
        };
        // What `appendfsync always` waits for may be in the old file's tail: written
        // and on disk before the stream leaves it.
        if let Some(old) = written_file(shared) {
            old.sync_data()?;
        }
        attach(shared, file, 0);
        *manifest = next;
    }
    drop(held);
    drop(writes);
    shared.aof.rewrite_abort.start(&cut);
    shared.aof.rewrite_clock.start();
    tracing::info!("Background append only file rewriting started");
    let spawned = std::thread::Builder::new()
        .name("redline-aofrw".into())
        .spawn(move || {
            crate::background::lower_this_thread();
            let shared = &*owner;
            let result = cut
                .complete()
                .and_then(|(temp, size)| complete_rewrite(shared, &temp, size, stream, preamble));
            let aof = &shared.aof;
            aof.rewrite_abort.end();
            aof.rewrite_clock.end();
            match &result {
                Ok(()) => {
                    aof.rewrite_failed.store(false, Ordering::Relaxed);
                    aof.rewrites.fetch_add(1, Ordering::Relaxed);
                    tracing::info!("Background AOF rewrite finished successfully");
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    aof.rewrite_failed.store(true, Ordering::Relaxed);
                    tracing::warn!("Background AOF rewrite failed: {e}");
                    if stream == Stream::TempIncr {
                        // The AOF is not on yet: the stream stops going to the temporary
                        // increment, and the cron tries again, as Redis retries.
                        stop_writing(shared);
                        aof.rewrite_scheduled.store(true, Ordering::Release);
                    }
                }
            }
            if stream == Stream::TempIncr && result.is_err() {
                let _ = std::fs::remove_file(temp_incr_path(shared));
            }
            aof.initial_rewrite.store(false, Ordering::Release);
            aof.rewriting.store(false, Ordering::Release);
        });
    if let Err(e) = spawned {
        // The cut went with the closure: its drop discarded it.
        shared.aof.rewrite_abort.end();
        shared.aof.rewrite_clock.end();
        if stream == Stream::TempIncr {
            stop_writing(shared);
            let _ = std::fs::remove_file(temp_incr_path(shared));
            shared.aof.initial_rewrite.store(false, Ordering::Release);
        }
        return Err(e);
    }
    Ok(())
}

/// A background rewrite's base is complete at `temp`: it becomes the base, the
/// increments before the one begun for it become history (all of them when the AOF
/// was off), the manifest says so. A rewrite that turns the AOF on names its temporary
/// increment now (renamed while the stream writes it: the file stays the same).
fn complete_rewrite(
    shared: &Shared,
    temp: &Path,
    size: u64,
    stream: Stream,
    preamble: bool,
) -> std::io::Result<()> {
    let directory = dir(shared);
    let name = base_name(shared);
    let mut manifest = shared.aof.manifest.lock();
    let mut next = manifest.clone();
    let base = next.new_base(&name, preamble);
    let base_path = directory.join(&base);
    // Plain renames: the manifest's write below syncs their directory after them.
    if let Err(e) = std::fs::rename(temp, &base_path) {
        let _ = std::fs::remove_file(temp);
        return Err(e);
    }
    if stream == Stream::TempIncr {
        let incr = next.new_incr(&name);
        if let Err(e) = std::fs::rename(temp_incr_path(shared), directory.join(&incr)) {
            let _ = std::fs::remove_file(&base_path);
            return Err(e);
        }
    }
    next.retire_rewritten_incr(stream != Stream::Off);
    if let Err(e) = persist_manifest(shared, &mut next) {
        let _ = std::fs::remove_file(&base_path);
        return Err(e);
    }
    *manifest = next;
    shared.aof.base_size.store(size, Ordering::Relaxed);
    delete_history(shared, &mut manifest);
    Ok(())
}

/// Writes the manifest if it changed (`persistAofManifest`).
fn persist_manifest(shared: &Shared, manifest: &mut Manifest) -> std::io::Result<()> {
    if !manifest.dirty {
        return Ok(());
    }
    super::snapshot::write_file(&manifest_path(shared), manifest.to_text().as_bytes(), false)?;
    manifest.dirty = false;
    Ok(())
}

/// Deletes the files a rewrite replaced, unless `aof-disable-auto-gc` keeps them
/// (`aofDelHistoryFiles`).
fn delete_history(shared: &Shared, manifest: &mut Manifest) {
    if manifest.history.is_empty() || shared.config.read().param_bool("aof-disable-auto-gc") {
        return;
    }
    let directory = dir(shared);
    for info in manifest.history.drain(..) {
        tracing::info!("Removing the history file {} in the background", info.name);
        let _ = std::fs::remove_file(directory.join(&info.name));
    }
    manifest.dirty = true;
    if let Err(e) = persist_manifest(shared, manifest) {
        tracing::warn!("Can't write the AOF manifest: {e}");
    }
}

/// CONFIG SET aof-disable-auto-gc no: the history kept meanwhile goes now.
pub fn collect_history(shared: &Shared) {
    delete_history(shared, &mut shared.aof.manifest.lock());
}

/// The base image of the dataset held: RDB with `aof-use-rdb-preamble yes`, else
/// commands.
fn base_image(shared: &Shared, held: &mut Held<'_>, preamble: bool) -> Vec<u8> {
    if preamble {
        super::snapshot::capture(shared, held, &[])
    } else {
        super::aof_commands::image(shared, held)
    }
}

/// Makes `file` the incremental file the stream appends to; what the stream appended
/// to the file it leaves is written there first.
fn attach(shared: &Shared, file: File, size: u64) {
    apply_timestamps(shared);
    let fsync = Fsync::from_config(shared.config.read().param("appendfsync"));
    let _writer = shared.aof.durability.writer.lock();
    let mut stream = shared.repl.journal.stream();
    if let Some(old) = stream.aof.as_mut() {
        old.flush_locked();
    }
    stream.force_select();
    let file = Arc::new(file);
    shared
        .aof
        .durability
        .switch(shared, Some(file.clone()), fsync == Fsync::Always);
    stream.aof = Some(AofFile {
        file,
        fsync,
        stats: Arc::new(FileStats {
            size: AtomicU64::new(size),
            ..FileStats::default()
        }),
        durability: shared.aof.durability.clone(),
        last_timestamp: 0,
        pending: BytesMut::new(),
    });
}

/// Writes the AOF to disk now (DEBUG LOADAOF, shutdown).
pub fn sync(shared: &Shared) {
    if let Some(file) = written_file(shared) {
        let _ = file.sync_data();
    }
}

/// `aof-timestamp-enabled` as configured now.
fn apply_timestamps(shared: &Shared) {
    let on = shared.config.read().param_bool("aof-timestamp-enabled");
    shared
        .aof
        .durability
        .timestamps
        .store(on, Ordering::Relaxed);
}

/// CONFIG SET appendfsync: the open file follows the new policy at once, as in Redis.
pub fn apply_fsync(shared: &Shared) {
    apply_timestamps(shared);
    let fsync = Fsync::from_config(shared.config.read().param("appendfsync"));
    let mut stream = shared.repl.journal.stream();
    let Some(aof) = stream.aof.as_mut() else {
        return;
    };
    if aof.fsync == fsync {
        return;
    }
    aof.fsync = fsync;
    let file = aof.file.clone();
    drop(stream);
    shared
        .aof
        .durability
        .switch(shared, Some(file), fsync == Fsync::Always);
}

/// Stops writing the AOF (`appendonly no`); the files stay.
pub fn stop(shared: &Shared) {
    // A rewrite waiting to turn the AOF on has nothing to do now, as in Redis, and one
    // running stops.
    shared.aof.rewrite_scheduled.store(false, Ordering::Release);
    let initial = shared.aof.initial_rewrite.load(Ordering::Acquire);
    abort_rewrite(shared);
    stop_writing(shared);
    if initial {
        let _ = std::fs::remove_file(temp_incr_path(shared));
    }
}

/// The stream stops going to the AOF file.
fn stop_writing(shared: &Shared) {
    let _writer = shared.aof.durability.writer.lock();
    let mut stream = shared.repl.journal.stream();
    if let Some(mut aof) = stream.aof.take() {
        aof.flush_locked();
        let _ = aof.file.sync_data();
        let d = &shared.aof.durability;
        d.switch(shared, None, false);
        // With the AOF off its errors refuse nothing, and turning it on starts afresh
        // (Redis ignores them when it reopens the file).
        d.write_errno.store(0, Ordering::Release);
        d.fsync_errno.store(0, Ordering::Release);
    }
}

/// From the server's cron: the once-a-second fsync of `appendfsync everysec`, and the
/// automatic rewrite when the incremental file outgrew `auto-aof-rewrite-percentage`
/// of the base (and `auto-aof-rewrite-min-size`).
pub fn cron(shared: &Shared) {
    let saving = shared.persistence.bgsave_running.load(Ordering::Acquire);
    // No rewrite begins while a load fills the dataset (DEBUG LOADAOF, RELOAD, a
    // replica's sync): its cut would take a half-loaded dataset as the new base, and
    // the files the load is reading would be retired under it. Redis runs no cron then.
    let loading = shared.persistence.loading.is_active();
    if !saving && !loading && shared.aof.rewrite_scheduled.swap(false, Ordering::AcqRel) {
        if let Err(e) = rewrite(shared) {
            tracing::warn!("Can't rewrite the append only file: {e}");
        }
    }
    // What no reply waited for (active expiry's deletions, a replica's stream).
    write_pending(shared);
    let (file, size) = {
        let mut stream = shared.repl.journal.stream();
        let Some(aof) = stream.aof.as_mut() else {
            return;
        };
        let dirty = aof.stats.dirty.swap(false, Ordering::AcqRel);
        // A failed fsync is tried again until one succeeds (and writes are allowed).
        let retry = shared.aof.durability.fsync_errno.load(Ordering::Relaxed) != 0;
        let file = (aof.fsync == Fsync::EverySec && (dirty || retry)).then(|| aof.file.clone());
        (file, aof.stats.size.load(Ordering::Relaxed))
    };
    if let Some(file) = file {
        // Outside the stream's lock: writers go on while the disk syncs.
        shared.aof.durability.fsynced(file.sync_data());
    }
    let (percentage, min_size) = {
        let config = shared.config.read();
        (
            config.param_int("auto-aof-rewrite-percentage"),
            config.param_int("auto-aof-rewrite-min-size"),
        )
    };
    let base = shared.aof.base_size.load(Ordering::Relaxed).max(1);
    if !loading
        && percentage > 0
        && size >= min_size.max(0) as u64
        && size * 100 / base >= percentage as u64
    {
        tracing::info!(
            "Starting automatic rewriting of AOF on {}% growth",
            size * 100 / base
        );
        if let Err(e) = rewrite(shared) {
            tracing::warn!("Automatic AOF rewrite failed: {e}");
        }
    }
}

pub use super::aof_load::LoadError;

/// Reads the manifest from disk (`aofLoadManifestFromDisk`): no directory or no
/// manifest is an empty one; a bad one is fatal. It becomes the server's manifest.
pub fn read_manifest(shared: &Shared) -> Result<(), LoadError> {
    let path = manifest_path(shared);
    // Read under the lock: a rewrite on another thread writes the file under it too.
    let mut current = shared.aof.manifest.lock();
    let manifest = match std::fs::read(&path) {
        Ok(text) => Manifest::parse(&text)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Manifest::default(),
        Err(e) => {
            return Err(LoadError::Bad(format!(
                "Fatal error: can't open the AOF manifest file {} for reading: {e}",
                path.display()
            )))
        }
    };
    *current = manifest;
    Ok(())
}

/// A pre-7.0 AOF (`appendfilename` in `dir`, no manifest naming anything else) moves
/// into the AOF directory as the base of a new manifest (`aofUpgradePrepare`). A
/// crash half way leaves a state this picks up again at the next start.
fn upgrade_if_old(shared: &Shared, manifest: &mut Manifest) -> Result<(), LoadError> {
    let name = base_name(shared);
    let directory = dir(shared);
    if !Path::new(&name).is_file() {
        return Ok(());
    }
    let interrupted = manifest.incr.is_empty()
        && manifest.base.as_ref().is_some_and(|b| b.name == name)
        && !directory.join(&name).exists();
    if directory.is_dir() && !manifest.is_empty() && !interrupted {
        return Ok(());
    }
    std::fs::create_dir_all(&directory).map_err(|e| {
        LoadError::Bad(format!(
            "Can't open or create append-only dir {}: {e}",
            directory.display()
        ))
    })?;
    manifest.base = Some(super::aof_manifest::Info {
        name: name.clone(),
        seq: 1,
        kind: super::aof_manifest::Kind::Base,
    });
    manifest.base_seq = 1;
    manifest.dirty = true;
    persist_manifest(shared, manifest)
        .map_err(|e| LoadError::Bad(format!("Can't write the AOF manifest: {e}")))?;
    std::fs::rename(&name, directory.join(&name)).map_err(|e| {
        LoadError::Bad(format!(
            "Error trying to move the old AOF file {name} into dir {}: {e}",
            directory.display()
        ))
    })?;
    tracing::info!(
        "Successfully migrated an old-style AOF file ({name}) into the AOF directory ({}).",
        directory.display()
    );
    Ok(())
}

/// Loads the AOF (at start, DEBUG LOADAOF): the manifest from disk (upgrading a pre-7.0
/// AOF first), then the base and every incremental file ([`super::aof_load`]). When
/// the last file ends inside a command and `aof-load-truncated` is on, it is cut after
/// its last whole command, as Redis does. `Missing` when the manifest lists nothing.
pub fn load(shared: &Shared) -> Result<u64, LoadError> {
    read_manifest(shared)?;
    let mut manifest = shared.aof.manifest.lock();
    upgrade_if_old(shared, &mut manifest)?;
    delete_history(shared, &mut manifest);
    if manifest.is_empty() {
        return Err(LoadError::Missing);
    }
    let files = manifest.loadable().cloned().collect::<Vec<_>>();
    // Held until the files are read: a rewrite completing meanwhile (one begun before a
    // DEBUG LOADAOF) would retire and delete them under the load.
    let _manifest = manifest;
    let directory = dir(shared);
    let paths = files
        .iter()
        .map(|file| {
            let path = directory.join(&file.name);
            std::fs::metadata(&path)
                .map(|m| (path, m.len()))
                .map_err(|e| {
                    LoadError::Bad(format!(
                        "Unable to obtain the AOF file {} length. stat: {e}",
                        file.name
                    ))
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let (Some(base), Some((_, size))) = (files.first(), paths.first()) {
        if base.kind == super::aof_manifest::Kind::Base {
            tracing::debug!("AOF base file {} holds {size} bytes", base.name);
            shared.aof.base_size.store(*size, Ordering::Relaxed);
        }
    }
    let parts: Vec<super::aof_load::Part<'_>> = files
        .iter()
        .zip(&paths)
        .map(|(file, (path, _))| super::aof_load::Part {
            name: &file.name,
            contents: super::aof_load::Contents::File(path),
        })
        .collect();
    let truncated_ok = shared.config.read().param_bool("aof-load-truncated");
    let loaded = super::aof_load::load_parts(shared, &parts, truncated_ok)?;
    if let (Some(len), Some(last)) = (loaded.truncated_at, files.last()) {
        truncate(&directory.join(&last.name), len);
    }
    Ok(loaded.commands)
}

fn truncate(path: &Path, len: u64) {
    if let Ok(file) = OpenOptions::new().write(true).open(path) {
        let _ = file.set_len(len);
    }
}

/// At start with `appendonly yes`: load what the directory holds, then open the last
/// incremental file for appending (`aofOpenIfNeededOnServerStart`): a new one when the
/// manifest has none, and a base of the dataset first when it has nothing at all.
pub fn start(shared: &Shared) -> Result<(), String> {
    shared.persistence.loading.begin(0);
    let loaded = load(shared);
    shared.persistence.loading.end();
    match loaded {
        Ok(commands) => tracing::info!("DB loaded from append only file: {commands} commands"),
        Err(LoadError::Missing) => {}
        Err(LoadError::Bad(e)) => return Err(format!("Fatal error loading the AOF: {e}")),
    }
    open_at_start(shared).map_err(|e| format!("Can't open the append-only file: {e}"))
}

fn open_at_start(shared: &Shared) -> std::io::Result<()> {
    let directory = dir(shared);
    std::fs::create_dir_all(&directory)?;
    let name = base_name(shared);
    let preamble = shared.config.read().param_bool("aof-use-rdb-preamble");
    shared.repl.journal.activate();
    // Shards before the manifest, as in a rewrite (one lock order).
    let mut held = Held::all(&shared.store);
    let mut manifest = shared.aof.manifest.lock();
    let had_incr = !manifest.incr.is_empty();
    if manifest.is_empty() {
        let image = base_image(shared, &mut held, preamble);
        let base = manifest.new_base(&name, preamble);
        let autosync = shared.config.read().param_bool(AOF_AUTOSYNC);
        super::snapshot::write_file(&directory.join(&base), &image, autosync)?;
        shared
            .aof
            .base_size
            .store(image.len() as u64, Ordering::Relaxed);
        tracing::info!("Creating AOF base file {base} on server start");
    }
    let incr = manifest.last_incr(&name);
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(directory.join(&incr))?;
    let size = file.metadata()?.len();
    persist_manifest(shared, &mut manifest)?;
    attach(shared, file, size);
    drop(manifest);
    drop(held);
    if had_incr {
        tracing::info!("Opening AOF incr file {incr} on server start");
    } else {
        tracing::info!("Creating AOF incr file {incr} on server start");
    }
    Ok(())
}
