//! BGSAVE without fork: a point-in-time image written while clients keep writing.
//!
//! The cut ([`crate::store::cut`]) begins with every shard held for an instant: the
//! image's header, aux fields and function libraries are taken then, and each shard is
//! told to save its entries into a [`CutFile`]. A background thread then walks every
//! shard in batches of `WALK_BATCH` entries, each batch under the shard's lock, while
//! any command about to change an entry not walked yet saves that one entry first. Each
//! key reaches the file once, with its value at the cut; keys created later never do.
//!
//! The file is therefore written in whatever order shards are reached: entries of one
//! database may come in several runs, each opened by a SELECTDB (without the optional
//! RESIZEDB hint), which Redis's loader and ours read the same way. The CRC-64 is kept
//! as the bytes go out. Savers only serialise and queue; one writer thread does the disk
//! I/O, so no lock is held across a write that page-cache writeback may stall. Memory
//! beyond the dataset: the queue (the walker waits above `MAX_QUEUED` bytes; entries
//! saved before a change always go in), plus the keys changed during the save (so the
//! walker skips them); the dataset is never copied and the server never pauses for
//! longer than beginning the cut. The file buffer and the queue are left out of
//! `maxmemory` ([`crate::store::evict::Eviction::saving`]), as a fork's memory is outside
//! Redis's `used_memory`.
//!
//! BGSAVE and a replication full sync write cuts; SAVE, DEBUG RELOAD and the AOF
//! rewrite's base still take their image with every shard held
//! ([`super::snapshot::capture`]).
//!
//! A cut can be aborted (FLUSHALL and SHUTDOWN stop a BGSAVE, a replica leaving stops
//! its sync), as Redis kills its child: from then on nothing more is serialised into it,
//! the walk stops and the file is removed. `rdb-key-save-delay` slows the walk down key
//! by key, as it slows Redis's child.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::data_file::DataFile;
use super::rdb::file::{
    write_entry, write_select_db, write_string_entry_start, SaveRules, EOF_OPCODE,
};
use super::rdb::CRC64;
use super::snapshot::{debug_delay_micros, dump_path, image_start, saved, RDB_AUTOSYNC};
use crate::alloc::{Counted, Gauge};
use crate::shared::Shared;
use crate::store::cut::walk;
use crate::store::{CutSink, Entry, Held, ShardMap, Store};

/// Entries the walker saves per lock of a shard: small enough that a command waiting
/// for the shard waits about as long as for a pipelined batch of its own.
const WALK_BATCH: usize = 256;

/// Serialised bytes the walker lets queue for the file writer before it waits: the
/// bound on the memory a save adds when the disk is slower than serialising.
const MAX_QUEUED: usize = 64 << 20;

/// The file writer's buffer: large writes keep the disk streaming.
const WRITE_BUFFER: usize = 1 << 20;

/// How a cut's file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutFormat {
    /// An RDB image (a dump file, a sync's image, an AOF base with the RDB preamble).
    Rdb,
    /// Commands (an AOF base without the preamble): SELECT, then each key as RESTORE;
    /// keys past their deadline are left out.
    Commands,
}

/// What the file writer receives.
enum Chunk {
    /// Serialised entries of one database.
    Entries { db: usize, bytes: Vec<u8> },
    /// A large string entry of one database: its start (expiry, type, key) and the
    /// value itself, shared with the store rather than copied (see
    /// [`crate::store::compact::SHARED_FROM`]); the writer encodes it (LZF included),
    /// off every shard's lock.
    LargeString {
        db: usize,
        start: Vec<u8>,
        value: Arc<Vec<u8>>,
    },
    /// The walk is over: end the file.
    Finish,
}

/// The file a cut is written to, shared by the walker and every command that saves an
/// entry before changing it. Savers only serialise and queue: a thread of its own does
/// the writes, so no shard lock is ever held across disk I/O (page-cache writeback can
/// stall a write for milliseconds once gigabytes are dirty).
pub struct CutFile {
    tx: std::sync::mpsc::Sender<Chunk>,
    queued: Arc<Queued>,
    writer: Mutex<Option<std::thread::JoinHandle<std::io::Result<u64>>>>,
    /// Set when the cut is aborted: nothing more is serialised into it.
    abort: Arc<AtomicBool>,
    format: CutFormat,
    /// How keys are written, fixed at the cut's instant as a forked child has them.
    rules: SaveRules,
}

/// The serialised bytes queued for the writer (allocated, not only used), also kept in
/// the gauge `maxmemory` leaves out ([`crate::store::evict::Eviction::saving`]).
struct Queued {
    bytes: AtomicUsize,
    saving: Arc<Gauge>,
}

impl Queued {
    fn add(&self, n: usize) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
        self.saving.change(0, n);
    }

    fn remove(&self, n: usize) {
        self.bytes.fetch_sub(n, Ordering::Relaxed);
        self.saving.change(n, 0);
    }

    /// A value shared with the store: it holds the walker back like serialised bytes,
    /// but it is the dataset's own memory, not the save's (`add_shared`).
    fn add_shared(&self, n: usize) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// [`Self::add_shared`]'s value was written.
    fn take_back(&self, n: usize) {
        self.bytes.fetch_sub(n, Ordering::Relaxed);
    }
}

/// Where a cut's bytes go: a file (synced to disk at the end) or a disk-less sync's
/// pipe to the replicas ([`crate::repl::disk_less`]).
pub trait CutOutputSink: Write + Send {
    /// Makes what was written durable, if that means anything here.
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CutOutputSink for DataFile {
    fn sync(&mut self) -> std::io::Result<()> {
        self.file().sync_all()
    }
}

/// The writer thread's side: the file, the running checksum, the database of the
/// entries last written (a run of another one needs a SELECTDB).
struct CutOutput {
    /// Its buffer is counted in the save's gauge.
    file: Counted<BufWriter<Box<dyn CutOutputSink>>, Arc<Gauge>>,
    crc: super::rdb::Crc64Digest,
    db: Option<usize>,
    written: u64,
    format: CutFormat,
}

impl CutOutput {
    /// Selects database `db` for the entries that follow, unless it is selected.
    fn select(&mut self, db: usize) -> std::io::Result<()> {
        if self.db == Some(db) {
            return Ok(());
        }
        let mut select = Vec::with_capacity(4);
        match self.format {
            CutFormat::Rdb => write_select_db(&mut select, db),
            CutFormat::Commands => super::aof_commands::select(&mut select, db),
        }
        self.db = Some(db);
        self.write(&select)
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all(bytes)?;
        self.crc.update(bytes);
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Writes chunks until [`Chunk::Finish`], then (an RDB image) EOF and the checksum
    /// (zeros when `checksum` is off), and an fsync. After an error it goes on draining,
    /// so savers never wait on a dead writer, and reports the first error at the end.
    fn run(
        mut self,
        rx: std::sync::mpsc::Receiver<Chunk>,
        queued: &Queued,
        checksum: bool,
    ) -> std::io::Result<u64> {
        let mut result = Ok(());
        loop {
            // Polled rather than waited on: a saver's send then never has to wake this
            // thread (a futex call and a context switch on every write of the save).
            let chunk = match rx.try_recv() {
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    continue;
                }
                other => other.map_err(|_| ()),
            };
            match chunk {
                Ok(Chunk::Entries { db, bytes }) => {
                    if result.is_ok() {
                        result = self.select(db).and_then(|()| self.write(&bytes));
                    }
                    // Freed, then uncounted: never in the allocator's figure alone.
                    let size = bytes.capacity();
                    drop(bytes);
                    queued.remove(size);
                }
                Ok(Chunk::LargeString {
                    db,
                    mut start,
                    value,
                }) => {
                    if result.is_ok() {
                        let body = super::rdb::encode::string_head(&mut start, &value);
                        result = self
                            .select(db)
                            .and_then(|()| self.write(&start))
                            .and_then(|()| self.write(&body));
                    }
                    queued.take_back(value.len());
                }
                Ok(Chunk::Finish) => break,
                Err(_) => return Err(std::io::Error::other("the snapshot cut was abandoned")),
            }
        }
        result?;
        if self.format == CutFormat::Rdb {
            self.write(&[EOF_OPCODE])?;
            let crc = if checksum {
                std::mem::replace(&mut self.crc, CRC64.digest()).finalize()
            } else {
                0
            };
            self.write(&crc.to_le_bytes())?;
        }
        self.file.flush()?;
        self.file.get_mut().sync()?;
        Ok(self.written)
    }
}

impl CutFile {
    /// A cut written to `file` in `format` by a writer thread of its own, starting with
    /// `header`; the memory it holds beyond the dataset is kept in `saving`.
    fn new(
        file: Box<dyn CutOutputSink>,
        buffer: usize,
        header: &[u8],
        format: CutFormat,
        checksum: bool,
        saving: &Arc<Gauge>,
        rules: SaveRules,
    ) -> std::io::Result<CutFile> {
        let (tx, rx) = std::sync::mpsc::channel();
        let queued = Arc::new(Queued {
            bytes: AtomicUsize::new(0),
            saving: saving.clone(),
        });
        let mut out = CutOutput {
            file: Counted::new(saving.clone(), buffer, || {
                BufWriter::with_capacity(buffer, file)
            }),
            crc: CRC64.digest(),
            db: None,
            written: 0,
            format,
        };
        out.write(header)?;
        let writer = {
            let queued = queued.clone();
            std::thread::Builder::new()
                .name("redline-cut-writer".into())
                .spawn(move || {
                    crate::background::lower_this_thread();
                    out.run(rx, &queued, checksum)
                })?
        };
        Ok(CutFile {
            tx,
            queued,
            writer: Mutex::new(Some(writer)),
            abort: Arc::new(AtomicBool::new(false)),
            format,
            rules,
        })
    }

    fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }

    /// Bytes waiting for the writer.
    fn queued(&self) -> usize {
        self.queued.bytes.load(Ordering::Relaxed)
    }

    /// Ends the file once everything queued is written; its size.
    fn finish(&self) -> std::io::Result<u64> {
        let _ = self.tx.send(Chunk::Finish);
        let Some(writer) = self.writer.lock().take() else {
            return Err(std::io::Error::other(
                "the snapshot cut was already finished",
            ));
        };
        writer
            .join()
            .map_err(|_| std::io::Error::other("the snapshot writer panicked"))?
    }
}

impl CutSink for CutFile {
    fn save(&self, db: usize, entries: &mut dyn Iterator<Item = (&[u8], &Entry)>) {
        // Serialised under the shard's lock (the entries are borrowed from it), handed
        // to the writer without waiting for the disk. An aborted cut takes nothing: the
        // shards then drop it at no cost.
        if self.aborted() {
            return;
        }
        let mut bytes = Vec::new();
        match self.format {
            CutFormat::Rdb => {
                for (key, entry) in entries {
                    match large_string(entry) {
                        Some(value) => {
                            // What came before it goes first, in order.
                            self.queue(db, std::mem::take(&mut bytes));
                            self.queue_large(db, key, entry, value.clone());
                        }
                        None => write_entry(&mut bytes, key, entry, &self.rules),
                    }
                }
            }
            CutFormat::Commands => {
                let now = crate::store::now_ms();
                for (key, entry) in entries {
                    if entry.expires_at == 0 || entry.expires_at > now {
                        super::aof_commands::key_commands(&mut bytes, key, entry);
                    }
                }
            }
        }
        self.queue(db, bytes);
    }
}

impl CutFile {
    /// Hands serialised entries of `db` to the writer.
    fn queue(&self, db: usize, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        let size = bytes.capacity();
        self.queued.add(size);
        if self.tx.send(Chunk::Entries { db, bytes }).is_err() {
            self.queued.remove(size);
        }
    }

    /// Hands a large string entry of `db` to the writer, its value by reference.
    fn queue_large(&self, db: usize, key: &[u8], entry: &Entry, value: Arc<Vec<u8>>) {
        let mut start = Vec::new();
        let last_use = self.rules.last_use.of(entry.access);
        write_string_entry_start(&mut start, key, entry.expires_at, last_use);
        let len = value.len();
        self.queued.add_shared(len);
        if self
            .tx
            .send(Chunk::LargeString { db, start, value })
            .is_err()
        {
            self.queued.take_back(len);
        }
    }
}

/// The shared bytes of a string entry large enough for the cut to take by reference
/// (SAVE writes any string of a piece or more from where it is, shared or not).
fn large_string(entry: &Entry) -> Option<&Arc<Vec<u8>>> {
    match &entry.value {
        crate::store::Value::Str(value) => value.shared(),
        _ => None,
    }
}

/// A cut begun and not yet written out: [`Cut::complete`] walks what is left and ends
/// the file. Dropped unfinished (its connection went away), it is finished and
/// discarded on a thread of its own: the shards must not go on saving into it.
pub struct Cut {
    pending: Option<(Arc<CutFile>, PathBuf)>,
    store: Arc<Store>,
    /// `rdb-key-save-delay` when the cut began.
    key_delay: i64,
}

impl std::fmt::Debug for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let temp = self.pending.as_ref().map(|(_, temp)| temp);
        f.debug_struct("Cut").field("temp", &temp).finish()
    }
}

/// Begins a cut into the file `temp`: `held` must hold every shard (this is the
/// image's instant). `extra_aux` adds aux fields (a full sync's replication id and
/// offset). Fails only when the file cannot be created.
pub fn begin_cut(
    shared: &Shared,
    held: &mut dyn ShardMap,
    temp: PathBuf,
    extra_aux: &[(&str, &[u8])],
) -> std::io::Result<Cut> {
    let header = image_start(shared, extra_aux).into_header();
    begin_cut_as(shared, held, temp, &header, CutFormat::Rdb, RDB_AUTOSYNC)
}

/// [`begin_cut`] of a file in `format` that starts with `header`, sent to disk as it is
/// written when the configuration parameter `autosync` is on.
pub fn begin_cut_as(
    shared: &Shared,
    held: &mut dyn ShardMap,
    temp: PathBuf,
    header: &[u8],
    format: CutFormat,
    autosync: &str,
) -> std::io::Result<Cut> {
    let file = DataFile::new(File::create(&temp)?)
        .synced_as_written(shared.config.read().param_bool(autosync));
    begin_cut_into(
        shared,
        held,
        Box::new(file),
        WRITE_BUFFER,
        temp,
        header,
        format,
    )
}

/// [`begin_cut_as`] into `sink` (buffered by `buffer` bytes) rather than a file; `temp`
/// names what [`Cut::complete`] returns (and removes on failure), if anything.
pub fn begin_cut_into(
    shared: &Shared,
    held: &mut dyn ShardMap,
    sink: Box<dyn CutOutputSink>,
    buffer: usize,
    temp: PathBuf,
    header: &[u8],
    format: CutFormat,
) -> std::io::Result<Cut> {
    let began = std::time::Instant::now();
    // Read before the cut is counted (INFO `total_forks`), so a client that sees the
    // count sees a cut that will keep the delay of its instant.
    let key_delay = shared.config.read().param_int("rdb-key-save-delay");
    let checksum = shared.config.read().param_bool("rdbchecksum");
    let saving = &shared.store.events().eviction.saving;
    let rules = SaveRules::now(shared);
    let file = Arc::new(CutFile::new(
        sink, buffer, header, format, checksum, saving, rules,
    )?);
    for db in 0..shared.store.db_count() {
        for index in 0..shared.store.db(db).shard_count() {
            held.shard(db, index).begin_cut(file.clone());
        }
    }
    record_fork(shared, began.elapsed());
    Ok(Cut {
        pending: Some((file, temp)),
        store: shared.store.clone(),
        key_delay,
    })
}

/// Counts a cut begun, with the time it held the dataset, where Redis counts a fork and
/// its time (INFO `total_forks`, `latest_fork_usec`, the latency monitor's `fork`).
pub(crate) fn record_fork(shared: &Shared, held_for: std::time::Duration) {
    let usec = u64::try_from(held_for.as_micros()).unwrap_or(u64::MAX);
    let stats = &shared.stats;
    stats.forks.fetch_add(1, Ordering::Relaxed);
    stats.latest_fork_usec.store(usec, Ordering::Relaxed);
    shared.latency.add_if_needed("fork", usec / 1000);
}

/// The temporary file a BGSAVE writes for the dump file `path`; a foreground save
/// (SAVE, FLUSHALL's, a shutdown's) writes another, so neither touches the other's.
pub fn temp_path(path: &Path) -> PathBuf {
    path.with_file_name(format!("temp-bgsave-{}.rdb", std::process::id()))
}

impl Cut {
    /// Saves every shard's rest of the cut and completes the file (EOF, checksum,
    /// fsync); returns its path and size. On failure or abort the file is removed
    /// (aborted: an `Interrupted` error). Blocks for as long as the walk takes: call it
    /// on a thread of its own, lowered with [`crate::background::lower_this_thread`].
    pub fn complete(mut self) -> std::io::Result<(PathBuf, u64)> {
        let Some((file, temp)) = self.pending.take() else {
            return Err(std::io::Error::other("cut already completed"));
        };
        finish(&self.store, &file, temp, self.key_delay)
    }

    /// What aborts this cut: set it and [`Cut::complete`] stops soon after.
    pub fn abort_handle(&self) -> Arc<AtomicBool> {
        match &self.pending {
            Some((file, _)) => file.abort.clone(),
            None => Arc::new(AtomicBool::new(true)),
        }
    }
}

/// The background save of one kind running now (a BGSAVE, an AOF rewrite), held so
/// that it can be stopped, as Redis kills its child.
#[derive(Debug, Default)]
pub struct RunningCut(Mutex<Option<Arc<AtomicBool>>>);

impl RunningCut {
    /// `cut` is the one running.
    pub fn start(&self, cut: &Cut) {
        *self.0.lock() = Some(cut.abort_handle());
    }

    /// It is over.
    pub fn end(&self) {
        self.0.lock().take();
    }

    /// Stops it, if one runs (true); it then ends soon, its file removed.
    pub fn abort(&self) -> bool {
        match self.0.lock().take() {
            Some(abort) => {
                abort.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }
}

/// Sets an abort flag when dropped, unless disarmed: a full sync whose replica went
/// away stops its cut.
pub struct AbortOnDrop(Option<Arc<AtomicBool>>);

impl AbortOnDrop {
    /// Guards `abort`.
    pub fn new(abort: Arc<AtomicBool>) -> AbortOnDrop {
        AbortOnDrop(Some(abort))
    }

    /// The work finished: nothing to abort.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(abort) = self.0.take() {
            abort.store(true, Ordering::Relaxed);
        }
    }
}

/// Walks every shard's rest of the cut into `file`, sleeping `key_delay` microseconds a
/// key (`rdb-key-save-delay`), then ends it (removed on failure or abort).
fn finish(
    store: &Store,
    file: &CutFile,
    temp: PathBuf,
    key_delay: i64,
) -> std::io::Result<(PathBuf, u64)> {
    // One entry a step when slowed down, so that the delay falls between keys.
    let batch = if key_delay == 0 { WALK_BATCH } else { 1 };
    let mut steps = 0u64;
    let walked = walk(store, file, batch, || {
        steps += 1;
        pause(debug_delay_micros(key_delay, steps), &file.abort);
        // Outside the shard's lock: wait for the disk rather than queue the whole
        // dataset in memory.
        while file.queued() > MAX_QUEUED && !file.aborted() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        !file.aborted()
    });
    // Aborted during the walk, or just after it: the file is not wanted either way.
    if !walked || file.aborted() {
        // The shards still holding the cut drop it unsaved (it takes nothing now).
        walk(store, file, usize::MAX, || true);
        let _ = file.finish();
        let _ = std::fs::remove_file(&temp);
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "the save was aborted",
        ));
    }
    match file.finish() {
        Ok(size) => Ok((temp, size)),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Sleeps `micros`, waking early when `abort` is set.
fn pause(micros: u64, abort: &AtomicBool) {
    const SLICE: std::time::Duration = std::time::Duration::from_millis(10);
    let until = Instant::now() + std::time::Duration::from_micros(micros);
    while !abort.load(Ordering::Relaxed) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(SLICE));
    }
}

impl Drop for Cut {
    /// An abandoned cut is finished and discarded, so the shards stop saving into it:
    /// on a thread of its own, or here should no thread start (the thread's closure
    /// holds no `Cut`, so a failed spawn cannot recurse into this drop).
    fn drop(&mut self) {
        let Some((file, temp)) = self.pending.take() else {
            return;
        };
        // Aborted, the walk drops the cut from each shard unsaved; the writer is
        // joined on a thread of its own (it may have queued bytes to write first).
        file.abort.store(true, Ordering::Relaxed);
        let store = self.store.clone();
        let discard = temp.clone();
        let kept = file.clone();
        let spawned = std::thread::Builder::new()
            .name("redline-cut-drop".into())
            .spawn(move || {
                crate::background::lower_this_thread();
                // Aborted, it removes its file itself.
                let _ = finish(&store, &file, temp, 0);
            });
        if let Err(e) = spawned {
            tracing::warn!("An abandoned snapshot cut is finished in place: {e}");
            walk(&self.store, &*kept, usize::MAX, || true);
            let _ = std::fs::remove_file(discard);
        }
    }
}

/// BGSAVE: begins a cut now and writes it on a background thread. Returns false when a
/// save is already running (or cannot start).
pub fn bgsave(shared: &Shared) -> bool {
    let begin = |temp: PathBuf| {
        // On a replica the journal's gate first: the image then records the master's
        // offset it stands at (see `SaveInfo::of`).
        let writes = shared.repl.hold_writes_for_save();
        let mut held = Held::all(&shared.store);
        let history = crate::repl::SaveInfo::of(shared, writes.is_some());
        let aux = history.as_ref().map(crate::repl::SaveInfo::aux);
        let aux = aux.as_ref().map_or(&[][..], |a| &a[..]);
        begin_cut(shared, &mut held, temp, aux).map(|cut| (Begun::new(shared, cut), ()))
    };
    start_bgsave(shared, begin, None).is_ok()
}

/// A BGSAVE's cut just begun, with what it covers: read at its instant (every shard
/// held), so that the dirty count and the dump file's generation match the image.
pub struct Begun {
    cut: Cut,
    dirty_before: u64,
    generation: u64,
}

impl Begun {
    /// `cut`, begun now: call it with every shard still held.
    pub fn new(shared: &Shared, cut: Cut) -> Begun {
        let p = &shared.persistence;
        Begun {
            cut,
            dirty_before: p.dirty.load(Ordering::Relaxed),
            generation: *p.dump_generation.lock(),
        }
    }
}

/// Why a BGSAVE did not start.
#[derive(Debug)]
pub enum NotStarted {
    /// Another one is running.
    Running,
    /// Its file could not be created, or its thread could not start.
    Failed(std::io::Error),
}

/// Told on the BGSAVE's thread how its cut ended: the complete file (its path and
/// size) before it is renamed into place, or the error. A full sync's replicas open the
/// file then ([`crate::repl::disk_sync`]).
pub type Written = Box<dyn FnOnce(Result<(&Path, u64), &std::io::Error>) + Send>;

/// Starts a BGSAVE into the dump file: `begin` takes the image's instant (holding every
/// shard) and begins its cut into the temporary file it is given; a thread then writes
/// it, tells `written`, and renames it into place. What `begin` returns beside the cut
/// comes back.
pub fn start_bgsave<T>(
    shared: &Shared,
    begin: impl FnOnce(PathBuf) -> std::io::Result<(Begun, T)>,
    written: Option<Written>,
) -> Result<T, NotStarted> {
    let p = &shared.persistence;
    if p.bgsave_running.swap(true, Ordering::AcqRel) {
        return Err(NotStarted::Running);
    }
    p.saves.fetch_add(1, Ordering::Relaxed);
    let path = dump_path(shared);
    let (begun, value) = match begin(temp_path(&path)) {
        Ok(begun) => begun,
        Err(e) => {
            tracing::warn!("Failed opening the temp RDB file for saving: {e}");
            p.last_bgsave_ok.store(false, Ordering::Relaxed);
            p.bgsave_running.store(false, Ordering::Release);
            return Err(NotStarted::Failed(e));
        }
    };
    let Begun {
        cut,
        dirty_before,
        generation,
    } = begun;
    p.bgsave_abort.start(&cut);
    p.bgsave_clock.start();
    let p = shared.persistence.clone();
    let spawned = std::thread::Builder::new()
        .name("redline-bgsave".into())
        .spawn(move || {
            crate::background::lower_this_thread();
            let p = &*p;
            let end = || {
                p.bgsave_clock.end();
                p.bgsave_abort.end();
                p.bgsave_running.store(false, Ordering::Release);
            };
            let completed = cut.complete();
            if let Some(written) = written {
                written(match &completed {
                    Ok((temp, size)) => Ok((temp.as_path(), *size)),
                    Err(e) => Err(e),
                });
            }
            let result = completed.and_then(|(temp, _)| {
                let current = p.dump_generation.lock();
                if *current == generation {
                    super::durable::rename(temp, &path).map(|()| true)
                } else {
                    // A foreground save (FLUSHALL's) wrote a newer dump meanwhile.
                    let _ = std::fs::remove_file(temp);
                    Ok(false)
                }
            });
            let result = match result {
                Ok(false) => {
                    tracing::info!("Background saving abandoned: a newer save replaced it");
                    end();
                    return;
                }
                // Stopped on purpose (FLUSHALL, SHUTDOWN, no replica left for a sync's):
                // not a failed save, as a child Redis kills is not.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                    tracing::warn!("Background saving aborted");
                    end();
                    return;
                }
                other => other.map(|_| ()),
            };
            p.last_bgsave_ok.store(result.is_ok(), Ordering::Relaxed);
            saved(p, &result, dirty_before);
            if result.is_ok() {
                tracing::info!("Background saving terminated with success");
            }
            end();
        });
    if let Err(e) = spawned {
        // The cut went with the thread's closure: its drop finished it (and `written`
        // went unsaid: its receivers see it dropped).
        tracing::warn!("Can't save in background: {e}");
        let p = &shared.persistence;
        p.last_bgsave_ok.store(false, Ordering::Relaxed);
        p.bgsave_clock.end();
        p.bgsave_abort.end();
        p.bgsave_running.store(false, Ordering::Release);
        return Err(NotStarted::Failed(e));
    }
    // Redis's line names its child; the image is written by a thread of this process.
    tracing::info!(
        "Background saving started by pid {} (a thread of this process)",
        std::process::id()
    );
    Ok(value)
}
