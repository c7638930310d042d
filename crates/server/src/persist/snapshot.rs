//! The dataset as one RDB image: taken for SAVE, BGSAVE, DEBUG RELOAD, SHUTDOWN and a
//! replication full sync, and loaded at start, by DEBUG RELOAD and by a replica.
//!
//! # How a snapshot is taken
//!
//! [`capture`] runs while the caller holds every shard ([`Held::all`]): the image is
//! serialised from the locked shards, so it is one point in time across all databases
//! (a transaction or script is either wholly in it or not at all), and nothing is
//! copied but the serialised bytes. Clients wait for the serialisation (about
//! 100-200 ns per small key). SAVE (which blocks in Redis too), DEBUG RELOAD, the AOF
//! rewrite and a replication full sync take their image this way; BGSAVE does not stop
//! the server: it writes a copy-on-write cut ([`super::bgsave`]).
//!
//! # How the dump loads at start
//!
//! [`load_at_start`] runs on a blocking thread while the server already accepts
//! clients, as Redis serves between chunks of its load: commands not flagged `loading`
//! get `-LOADING` ([`super::loading`]), INFO shows the progress, and a shutdown stops
//! the load without saving the half-read dataset over the file.
//!
//! [`Persistence`] keeps what INFO persistence reports and what `save <seconds>
//! <changes>` schedules from.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::data_file;
use super::loading::Loading;
use super::rdb::file::{Fed, Item, LoadError, SaveRules, SnapshotStream, SnapshotWriter};
use crate::shared::Shared;
use crate::store::encoding::{settle_loaded, EncodingLimits};
use crate::store::{Held, Shard, ShardMap, Store};

/// Save bookkeeping shared by every save path.
#[derive(Debug)]
pub struct Persistence {
    /// Writes since the last successful save (`rdb_changes_since_last_save`).
    pub dirty: AtomicU64,
    /// Unix seconds of the last successful save (LASTSAVE), the start time before any.
    pub lastsave: AtomicU64,
    /// Unix seconds of the last save attempt, successful or not.
    pub last_attempt: AtomicU64,
    /// Whether the last BGSAVE succeeded.
    pub last_bgsave_ok: AtomicBool,
    /// A BGSAVE is writing.
    pub bgsave_running: AtomicBool,
    /// BGSAVE SCHEDULE asked for one after the running one.
    pub bgsave_scheduled: AtomicBool,
    /// How long the running BGSAVE and the last one took.
    pub bgsave_clock: super::run_clock::RunClock,
    /// Set to stop the running BGSAVE (FLUSHALL, SHUTDOWN), as Redis kills its child.
    pub bgsave_abort: super::bgsave::RunningCut,
    /// Disk-less syncs' cuts being written (INFO `rdb_bgsave_in_progress` counts them,
    /// as Redis's RDB child for a sync).
    pub sync_cuts: std::sync::atomic::AtomicUsize,
    /// Some save point is configured: [`has_save_points`], kept here for what runs
    /// without the configuration at hand (a disk-based sync's save, when its last
    /// replica leaves).
    pub save_points: AtomicBool,
    /// SAVE commands and BGSAVEs started since start, done well or not (`rdb_saves`,
    /// counted as Redis counts it: not FLUSHALL's, SHUTDOWN's or DEBUG RELOAD's own
    /// saves, nor a disk-less sync's image).
    pub saves: AtomicU64,
    /// The load at start (clients get LOADING meanwhile) and the last load's counts.
    pub loading: Loading,
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION: RESTORE and loads do not compare CRCs.
    pub skip_checksum_validation: AtomicBool,
    /// Unix seconds of the last look at the save points.
    last_cron: AtomicU64,
    /// Bumped by every foreground save of the dump file. A BGSAVE renames its file into
    /// place only if no foreground save came after it began (held while renaming).
    pub dump_generation: parking_lot::Mutex<u64>,
}

impl Default for Persistence {
    fn default() -> Self {
        let now = unix_secs();
        Persistence {
            dirty: AtomicU64::new(0),
            lastsave: AtomicU64::new(now),
            last_attempt: AtomicU64::new(now),
            last_bgsave_ok: AtomicBool::new(true),
            bgsave_running: AtomicBool::new(false),
            bgsave_scheduled: AtomicBool::new(false),
            bgsave_clock: super::run_clock::RunClock::default(),
            bgsave_abort: super::bgsave::RunningCut::default(),
            sync_cuts: std::sync::atomic::AtomicUsize::new(0),
            save_points: AtomicBool::new(false),
            saves: AtomicU64::new(0),
            loading: Loading::default(),
            skip_checksum_validation: AtomicBool::new(false),
            last_cron: AtomicU64::new(0),
            dump_generation: parking_lot::Mutex::new(0),
        }
    }
}

impl Persistence {
    /// Stops the running BGSAVE, if any: its file is discarded and the dump file stays
    /// as it was (Redis kills the child). True when one was running.
    pub fn abort_bgsave(&self) -> bool {
        self.bgsave_abort.abort()
    }
}

/// Seconds since the epoch.
pub fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Serialises every shard of `held` (which must hold them all: [`Held::all`], or the
/// transaction's map) with the server's aux fields and function libraries; `extra_aux`
/// adds fields (replication id and offset for a full sync).
pub fn capture(shared: &Shared, held: &mut dyn ShardMap, extra_aux: &[(&str, &[u8])]) -> Vec<u8> {
    // Without a sink nothing is written out, so nothing can fail.
    capture_with(shared, held, extra_aux, 0, None).unwrap_or_default()
}

/// [`capture`], written to `sink` a piece of about [`data_file::MAX_WRITE`] bytes at a
/// time rather than built whole: a SAVE of a large dataset needs no second copy of it in
/// memory, as Redis's SAVE needs none.
fn capture_into(
    shared: &Shared,
    held: &mut dyn ShardMap,
    extra_aux: &[(&str, &[u8])],
    key_delay: i64,
    sink: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let tail = capture_with(shared, held, extra_aux, key_delay, Some(&mut *sink))?;
    sink.write_all(&tail)
}

/// The image of `held`: written out to `sink` piece by piece when there is one, and what
/// was not written out returned (all of it without a sink). Sleeps `key_delay`
/// microseconds after each key (`rdb-key-save-delay`; see [`debug_delay`]): only a save
/// that blocks the server in Redis too takes a delay here, as every shard is held
/// meanwhile.
fn capture_with(
    shared: &Shared,
    held: &mut dyn ShardMap,
    extra_aux: &[(&str, &[u8])],
    key_delay: i64,
    mut sink: Option<&mut dyn std::io::Write>,
) -> std::io::Result<Vec<u8>> {
    let mut writer = image_start(shared, extra_aux);
    let checksum = shared.config.read().param_bool("rdbchecksum");
    let mut saved = 0u64;
    for db in 0..shared.store.db_count() {
        let shards = shared.store.db(db).shard_count();
        let (mut keys, mut expires) = (0, 0);
        for index in 0..shards {
            let shard = held.shard(db, index);
            keys += shard.len();
            expires += shard.ttl_len();
        }
        if keys == 0 {
            continue;
        }
        writer.select_db(db, keys, expires);
        // Like Redis, keys past their deadline but not reclaimed yet are saved; a master
        // loading the image skips them, a replica keeps them for its master's DEL.
        for index in 0..shards {
            let mut written = Ok(());
            held.shard(db, index).for_each_stored(|key, entry| {
                if written.is_err() {
                    return;
                }
                match sink.as_mut() {
                    Some(sink) => {
                        written = writer.entry_into(
                            key.as_bytes(),
                            entry,
                            &mut **sink,
                            checksum,
                            data_file::MAX_WRITE,
                        );
                    }
                    None => writer.entry(key.as_bytes(), entry),
                }
                saved += 1;
                debug_delay(key_delay, saved);
            });
            written?;
        }
    }
    Ok(writer.finish(checksum))
}

/// The start of an image: header, aux fields (`extra_aux` last but one, before
/// `aof-base`), and the function libraries. Must be called with every shard held, so
/// the libraries belong to the same instant as the keys.
pub fn image_start(shared: &Shared, extra_aux: &[(&str, &[u8])]) -> SnapshotWriter {
    let mut writer = image_header(extra_aux).with_rules(SaveRules::now(shared));
    write_functions(shared, &mut writer);
    writer
}

/// A sync image filtered as REPLCONF rdb-filter-only asks (`redis-cli --functions-rdb`):
/// header and aux fields, the function libraries when `functions`, never keys.
pub fn filtered_image(shared: &Shared, extra_aux: &[(&str, &[u8])], functions: bool) -> Vec<u8> {
    let mut writer = image_header(extra_aux);
    if functions {
        write_functions(shared, &mut writer);
    }
    writer.finish(shared.config.read().param_bool("rdbchecksum"))
}

fn image_header(extra_aux: &[(&str, &[u8])]) -> SnapshotWriter {
    let ctime = unix_secs().to_string();
    let used = crate::cmd::info::resident_bytes().to_string();
    let mut aux: Vec<(&str, &[u8])> = vec![
        (
            "redis-ver",
            crate::cmd::connection::REDIS_VERSION.as_bytes(),
        ),
        ("redis-bits", b"64"),
        ("ctime", ctime.as_bytes()),
        ("used-mem", used.as_bytes()),
    ];
    aux.extend_from_slice(extra_aux);
    aux.push(("aof-base", b"0"));
    SnapshotWriter::new(&aux)
}

fn write_functions(shared: &Shared, writer: &mut SnapshotWriter) {
    if let Ok(engine) = shared.scripting.engine() {
        for library in engine.libraries.values() {
            writer.function(&library.code);
        }
    }
}

/// A disk-less sync's image being made, counted in [`Persistence::sync_cuts`] (INFO
/// `rdb_bgsave_in_progress`, as Redis's RDB child for a sync) for as long as it lives.
pub struct SyncCutInProgress(std::sync::Arc<Persistence>);

impl SyncCutInProgress {
    /// Counts one more sync image in `persistence`.
    pub fn new(persistence: std::sync::Arc<Persistence>) -> SyncCutInProgress {
        persistence.sync_cuts.fetch_add(1, Ordering::Relaxed);
        SyncCutInProgress(persistence)
    }
}

impl Drop for SyncCutInProgress {
    fn drop(&mut self) {
        self.0.sync_cuts.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a load found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// Keys stored.
    pub keys: u64,
    /// Keys skipped because they had expired.
    pub expired: u64,
    /// Keys skipped because they held an empty collection.
    pub empty_skipped: u64,
    /// `redis-ver` of the writer, when given.
    pub version: Option<String>,
    /// `ctime` of the image, when given.
    pub ctime: Option<u64>,
    /// `repl-id` and `repl-offset`, when given (a replica continues from them).
    pub repl: Option<(String, i64)>,
    /// `repl-stream-db`: the database the master's stream had selected.
    pub stream_db: Option<usize>,
    /// Bytes the image took (what follows is an AOF tail).
    pub len: usize,
    /// The keys skipped because they had expired, with their database, when
    /// [`LoadOptions::record_expired`].
    pub expired_keys: Vec<(usize, Vec<u8>)>,
}

/// Empties every database of `held` (which holds every shard), for a reload or a
/// replica's full sync. Tracking clients are told to drop every key, as Redis's
/// `emptyData` tells them, before any client can read the dataset that follows.
pub fn clear(shared: &Shared, held: &mut dyn ShardMap) {
    for db in 0..shared.store.db_count() {
        for index in 0..shared.store.db(db).shard_count() {
            held.shard(db, index).clear();
        }
    }
    shared.tracking.invalidate_all(shared);
}

/// How [`load`] treats keys past their deadline and libraries already loaded.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    /// Keep keys past their deadline for the master to expire (a replica), as Redis
    /// does; otherwise they are skipped.
    pub keep_expired: bool,
    /// A function library of the image replaces one of the same name (DEBUG RELOAD
    /// MERGE); otherwise the load fails on it, as Redis's does.
    pub merge: bool,
    /// Give up when a shutdown is requested (the load at start, which clients do not
    /// wait for).
    pub interruptible: bool,
    /// Keep the names of the keys skipped as expired ([`Loaded::expired_keys`]): a
    /// master continuing its history sends their DELs.
    pub record_expired: bool,
}

/// Keys between two looks at a shutdown request during an interruptible load.
const INTERRUPT_CHECK_EVERY: u64 = 1024;

/// `key-load-delay` and `rdb-key-save-delay`, debugging knobs of Redis's tests:
/// microseconds to sleep after each key read or saved (`count` keys so far); a negative
/// `-n` sleeps one microsecond after one key in `n`.
pub(crate) fn debug_delay(usec: i64, count: u64) {
    let micros = debug_delay_micros(usec, count);
    if micros > 0 {
        std::thread::sleep(std::time::Duration::from_micros(micros));
    }
}

/// The microseconds [`debug_delay`] sleeps after the `count`th key.
pub(crate) fn debug_delay_micros(usec: i64, count: u64) -> u64 {
    match usec {
        0 => 0,
        n if n > 0 => n.unsigned_abs(),
        n if count % n.unsigned_abs() == 0 => 1,
        _ => 0,
    }
}

/// Loads an image into the keyspace and function libraries, through `held` when the
/// caller holds the shards, else locking each key's shard. A key of the image replaces
/// one already there.
pub fn load(
    shared: &Shared,
    bytes: &[u8],
    options: LoadOptions,
    held: Option<&mut dyn ShardMap>,
) -> Result<Loaded, LoadError> {
    let mut load = Load::new(shared, options);
    let fed = if load.verify_checksum {
        load.feed_checking_beside(shared, bytes, held)?
    } else {
        load.feed(shared, bytes, true, held)?
    };
    match fed {
        Fed::Done(_) => {}
        // `last` makes a short image an error, so this is not reached.
        Fed::More(_) => return Err(LoadError::Corrupt(super::rdb::Corrupt("truncated"))),
    }
    load.install(shared)
}

/// An image loaded as it arrives ([`SnapshotStream`]): [`Load::feed`] stores the keys of
/// each piece, [`Load::finish`] gives what the image held besides (its function
/// libraries are not installed: the caller decides when). [`load`] is one feed of the
/// whole image.
pub struct Load {
    options: LoadOptions,
    now: u64,
    loaded: Loaded,
    repl_id: Option<String>,
    repl_offset: Option<i64>,
    libraries: Vec<Vec<u8>>,
    /// `key-load-delay`.
    delay: i64,
    keys_read: u64,
    /// `rdbchecksum`, unless DEBUG SET-SKIP-CHECKSUM-VALIDATION turned it off.
    verify_checksum: bool,
    stream: SnapshotStream,
}

impl Load {
    /// Starts a load (the key counters of INFO start again).
    pub fn new(shared: &Shared, options: LoadOptions) -> Load {
        shared.persistence.loading.reset_keys();
        let (delay, verify_checksum) = {
            let config = shared.config.read();
            let skip = shared
                .persistence
                .skip_checksum_validation
                .load(Ordering::Relaxed);
            (
                config.param_int("key-load-delay"),
                config.param_bool("rdbchecksum") && !skip,
            )
        };
        Load {
            options,
            now: crate::store::now_ms(),
            loaded: Loaded::default(),
            repl_id: None,
            repl_offset: None,
            libraries: Vec::new(),
            delay,
            keys_read: 0,
            verify_checksum,
            stream: SnapshotStream::new(verify_checksum),
        }
    }

    /// Ends the load: what the image held, its function libraries installed.
    pub(super) fn install(self, shared: &Shared) -> Result<Loaded, LoadError> {
        let merge = self.options.merge;
        let (loaded, libraries) = self.finish();
        if !libraries.is_empty() {
            let mut engine = shared.scripting.engine().map_err(LoadError::Refused)?;
            engine
                .load_libraries(&libraries, merge, &shared.scripting.flags)
                .map_err(LoadError::Refused)?;
        }
        Ok(loaded)
    }

    /// When the checksum is verified, leaves it to the caller (who sums the image as it
    /// reads it); whether it is verified.
    pub(super) fn defer_checksum(&mut self) -> bool {
        if self.verify_checksum {
            self.stream = SnapshotStream::deferred_checksum();
        }
        self.verify_checksum
    }

    /// With the checksum deferred, once the image is read: compares the checksum it
    /// ended with to `sum_of(n)`, the caller's checksum of its first `n` bytes (those
    /// the checksum covers).
    pub(super) fn check_deferred(
        &self,
        sum_of: impl FnOnce(usize) -> Result<u64, LoadError>,
    ) -> Result<(), LoadError> {
        let Some((stored, covered)) = self.stream.checksum_trailer() else {
            return Ok(());
        };
        let expected = sum_of(covered)?;
        if stored != 0 && stored != expected {
            return Err(LoadError::Checksum {
                expected,
                got: stored,
            });
        }
        Ok(())
    }

    /// Feeds a whole image, its checksum computed on another thread meanwhile (inline
    /// it was 15% of loading an RDB of random strings) and compared at the end.
    fn feed_checking_beside(
        &mut self,
        shared: &Shared,
        image: &[u8],
        held: Option<&mut dyn ShardMap>,
    ) -> Result<Fed, LoadError> {
        use super::rdb::crc64;
        self.defer_checksum();
        // The checksum ends the image, after everything it covers (trailing bytes are
        // possible, and then the prefix is summed again below).
        let prefix = image.len().saturating_sub(8);
        let (fed, beside) = std::thread::scope(|scope| {
            let summing = std::thread::Builder::new()
                .name("rdb-checksum".into())
                .spawn_scoped(scope, || crc64(&image[..prefix]));
            let fed = self.feed(shared, image, true, held);
            (fed, summing.ok().and_then(|h| h.join().ok()))
        });
        let fed = fed?;
        self.check_deferred(|covered| {
            Ok(match beside {
                Some(sum) if covered == prefix => sum,
                _ => crc64(image.get(..covered).unwrap_or(image)),
            })
        })?;
        Ok(fed)
    }

    /// Bytes of the image read so far.
    pub fn read(&self) -> usize {
        self.stream.read()
    }

    /// Stores the whole items at the start of `bytes` (see [`SnapshotStream::feed`]),
    /// through `held`, else locking each key's shard of the store.
    pub fn feed(
        &mut self,
        shared: &Shared,
        bytes: &[u8],
        last: bool,
        held: Option<&mut dyn ShardMap>,
    ) -> Result<Fed, LoadError> {
        // As a load, not a client's write: a replica does not take the deadlines it
        // loads for ones a client gave it (those it expires itself).
        crate::store::while_loading(|| self.feed_items(shared, bytes, last, held))
    }

    fn feed_items(
        &mut self,
        shared: &Shared,
        bytes: &[u8],
        last: bool,
        mut held: Option<&mut dyn ShardMap>,
    ) -> Result<Fed, LoadError> {
        let Load {
            options,
            now,
            loaded,
            repl_id,
            repl_offset,
            libraries,
            delay,
            keys_read,
            stream,
            ..
        } = self;
        let databases = shared.store.db_count();
        let stats = &shared.persistence.loading;
        let progress = |read: usize| stats.set_loaded_bytes(read as u64);
        let limits = EncodingLimits::now(&shared.hot);
        stream.feed(bytes, last, progress, |item| {
            let is_key = matches!(item, Item::Entry { .. } | Item::EmptyKey { .. });
            match item {
                Item::Aux { name, value } => {
                    let text = String::from_utf8_lossy(value).into_owned();
                    match name {
                        b"redis-ver" => loaded.version = Some(text),
                        b"ctime" => loaded.ctime = text.parse().ok(),
                        b"repl-id" => *repl_id = Some(text),
                        b"repl-offset" => *repl_offset = text.parse().ok(),
                        b"repl-stream-db" => loaded.stream_db = text.parse().ok(),
                        _ => {}
                    }
                }
                Item::Function(code) => libraries.push(code.to_vec()),
                Item::SelectDb(db) if db >= databases => {
                    return Err(LoadError::Refused(format!(
                        "FATAL: Data file was created with a Redis server configured to handle more than {databases} databases. Exiting"
                    )))
                }
                Item::SelectDb(_) => {}
                Item::EmptyKey { key, .. } => {
                    // As Redis 7.0 does: writers once saved such keys (its #8453), which
                    // are dropped rather than failing the load.
                    loaded.empty_skipped += 1;
                    if loaded.empty_skipped <= 10 {
                        tracing::warn!(
                            "rdbLoadObject skipping empty key: {}",
                            String::from_utf8_lossy(key)
                        );
                    }
                }
                Item::Entry {
                    db,
                    key,
                    mut value,
                    expires_at,
                    idle,
                    freq,
                } => {
                    if expires_at != 0 && expires_at <= *now && !options.keep_expired {
                        loaded.expired += 1;
                        stats.key_expired();
                        if options.record_expired {
                            loaded.expired_keys.push((db, key.to_vec()));
                        }
                    } else {
                        settle_loaded(&mut value, &limits);
                        let store = shared.store.db(db);
                        let access = shared.store.events().eviction.loaded_access(idle, freq);
                        match held.as_deref_mut() {
                            Some(held) => held
                                .shard(db, store.shard_index(key))
                                .insert_loaded(key, value, expires_at, access),
                            None => store
                                .lock(key)
                                .insert_loaded(key, value, expires_at, access),
                        }
                        loaded.keys += 1;
                        stats.key_loaded();
                    }
                }
            }
            if is_key {
                *keys_read += 1;
                debug_delay(*delay, *keys_read);
                let look = *delay != 0 || *keys_read % INTERRUPT_CHECK_EVERY == 0;
                if options.interruptible && look && *shared.shutdown.borrow() {
                    return Err(LoadError::Refused(
                        "Loading interrupted by a shutdown".into(),
                    ));
                }
            }
            Ok(())
        })
    }

    /// What the image held besides its keys, and its function libraries' code.
    pub fn finish(self) -> (Loaded, Vec<Vec<u8>>) {
        let mut loaded = self.loaded;
        loaded.len = self.stream.read();
        loaded.repl = self.repl_id.zip(self.repl_offset);
        (loaded, self.libraries)
    }
}

/// A dataset built beside the keyspace (a replica's disk-less load into a temporary
/// database, Redis's `swapdb`), with the keyspace's databases and shards, then
/// exchanged with it whole ([`Staging::swap_with`]).
pub struct Staging {
    dbs: Vec<Vec<Shard>>,
}

impl Staging {
    /// Empty databases shaped as `store`'s. Its shards report no keyspace events:
    /// loading keys is not a change clients are told about.
    pub fn new(store: &Store) -> Staging {
        let dbs = store
            .dbs()
            .iter()
            .map(|db| (0..db.shard_count()).map(|_| Shard::default()).collect())
            .collect();
        Staging { dbs }
    }

    /// Exchanges every shard with `held`'s (which holds every shard of the store):
    /// the keyspace gets this dataset, this gets the keyspace's.
    pub fn swap_with(&mut self, held: &mut dyn ShardMap) {
        for (db, shards) in self.dbs.iter_mut().enumerate() {
            for (index, shard) in shards.iter_mut().enumerate() {
                held.shard(db, index).swap(shard);
            }
        }
    }
}

impl ShardMap for Staging {
    fn shard(&mut self, db: usize, index: usize) -> &mut Shard {
        // The load checks the database number against the store's before any key of
        // it, and shard indexes come from the store: both are in range.
        &mut self.dbs[db][index]
    }
    fn swap(&mut self, a: usize, b: usize) {
        self.dbs.swap(a, b);
    }
    fn pair(&mut self, _: (usize, usize), _: (usize, usize)) -> Option<(&mut Shard, &mut Shard)> {
        // Only loads use a staging map, and they touch one shard at a time.
        None
    }
}

/// Whether RDB files are sent to disk as they are written.
pub const RDB_AUTOSYNC: &str = "rdb-save-incremental-fsync";

/// Where SAVE writes: `dbfilename` in the working directory (`dir` is the cwd).
pub fn dump_path(shared: &Shared) -> PathBuf {
    PathBuf::from(shared.config.read().param("dbfilename"))
}

/// The temporary file an image for `path` is written to before the rename.
pub fn temp_path(path: &Path) -> PathBuf {
    path.with_file_name(format!("temp-{}.rdb", std::process::id()))
}

/// Writes `image` to `path` the way Redis does: a temporary file, fsync, rename, fsync of
/// the directory; sent to disk as it is written when `autosync` (Redis's incremental
/// fsync).
pub fn write_file(path: &Path, image: &[u8], autosync: bool) -> std::io::Result<()> {
    write_file_with(path, autosync, |file| file.write_all(image))
}

/// [`write_file`] of what `write` writes to the temporary file (a slow save shows its
/// temporary file meanwhile, as Redis's does). The temporary file goes whatever fails.
fn write_file_with(
    path: &Path,
    autosync: bool,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let temp = temp_path(path);
    let result = (|| {
        let mut file =
            data_file::DataFile::new(std::fs::File::create(&temp)?).synced_as_written(autosync);
        write(&mut file)?;
        file.file().sync_all()?;
        super::durable::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Writes the image of `held` (every shard) to `path` as it is made, the way Redis's
/// `rdbSave` does: `rdb-key-save-delay` after each key, `rdb-save-incremental-fsync`.
pub fn write_image(
    shared: &Shared,
    held: &mut dyn ShardMap,
    path: &Path,
    extra_aux: &[(&str, &[u8])],
) -> std::io::Result<()> {
    let (delay, autosync) = {
        let config = shared.config.read();
        (
            config.param_int("rdb-key-save-delay"),
            config.param_bool(RDB_AUTOSYNC),
        )
    };
    write_file_with(path, autosync, |file| {
        capture_into(shared, held, extra_aux, delay, file)
    })
}

/// Removes the temporary files of the saves this process has under way, foreground
/// and background (a shutdown does, as Redis removes its own and its child's).
pub fn remove_temp_files(shared: &Shared) {
    let path = dump_path(shared);
    let _ = std::fs::remove_file(temp_path(&path));
    let _ = std::fs::remove_file(super::bgsave::temp_path(&path));
}

/// SAVE: the image taken and written while every shard is held (as Redis's SAVE blocks
/// the server). On a replica the journal's gate is held first, so the image records
/// the master's offset it stands at.
pub fn save(shared: &Shared) -> std::io::Result<()> {
    let writes = shared.repl.hold_writes_for_save();
    save_held(shared, &mut Held::all(&shared.store), writes.is_some())
}

/// Takes the image from `held` (every shard) and writes the dump file; `writes_held`
/// when the caller holds the journal's gate too (see [`crate::repl::SaveInfo::of`]). A
/// BGSAVE still writing will not replace this file with its older image: it is
/// abandoned, as Redis kills its child.
pub fn save_held(
    shared: &Shared,
    held: &mut dyn ShardMap,
    writes_held: bool,
) -> std::io::Result<()> {
    let dirty_before = shared.persistence.dirty.load(Ordering::Relaxed);
    let history = crate::repl::SaveInfo::of(shared, writes_held);
    let aux = history.as_ref().map(crate::repl::SaveInfo::aux);
    let aux = aux.as_ref().map_or(&[][..], |a| &a[..]);
    let result = replace_dump(shared, |path| write_image(shared, held, path, aux));
    saved(&shared.persistence, &result, dirty_before);
    if result.is_ok() {
        tracing::info!("DB saved on disk");
    }
    result
}

/// Writes the dump file with `write`; a BGSAVE still writing will not rename its older
/// image over it afterwards (it is abandoned, as Redis kills its child).
pub fn replace_dump(
    shared: &Shared,
    write: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut generation = shared.persistence.dump_generation.lock();
    *generation += 1;
    write(&dump_path(shared))
}

/// Records the outcome of a save.
pub fn saved(p: &Persistence, result: &std::io::Result<()>, dirty_before: u64) {
    let now = unix_secs();
    p.last_attempt.store(now, Ordering::Relaxed);
    match result {
        Ok(()) => {
            p.dirty.fetch_sub(
                dirty_before.min(p.dirty.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
            p.lastsave.store(now, Ordering::Relaxed);
        }
        Err(e) => tracing::warn!("Failed saving the DB: {e}"),
    }
}

/// The dump file a start loads, opened before any client is served.
#[derive(Debug)]
pub struct DumpAtStart {
    path: PathBuf,
    file: std::fs::File,
    length: u64,
}

/// Opens the dump file for [`load_at_start`]; `None` when there is none, and then
/// nothing loads and no client is told LOADING, as Redis serves the empty dataset (a
/// client that connected and at once sent FLUSHDB, as redis-rs's tests do, got LOADING
/// in the moment a load took to find no file).
pub fn open_at_start(shared: &Shared) -> Result<Option<DumpAtStart>, String> {
    let path = dump_path(shared);
    let opened = std::fs::File::open(&path).and_then(|f| f.metadata().map(|m| (f, m.len())));
    match opened {
        Ok((file, length)) => Ok(Some(DumpAtStart { path, file, length })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("Fatal error loading the DB: {e}. Exiting.")),
    }
}

/// Loads the dump file [`open_at_start`] opened, with Redis's log lines. Clients may be
/// served meanwhile: they get LOADING from here until the server ends the load
/// ([`crate::Server::run_loading`]; after a failure, until the process exits), and a
/// shutdown they ask for stops it.
pub fn load_at_start(shared: &Shared, dump: DumpAtStart) -> Result<(), String> {
    let DumpAtStart { path, file, length } = dump;
    let started = Instant::now();
    let loading = &shared.persistence.loading;
    loading.begin(length);
    // A replica keeps keys past their deadline for its master's DELs, as Redis's does;
    // a master skips them, and sends their DELs if it continues its history.
    let replica = !shared.is_master();
    let options = LoadOptions {
        keep_expired: replica,
        record_expired: !replica,
        interruptible: true,
        ..LoadOptions::default()
    };
    let loaded = super::dump_file::load_file(shared, &path, file, length, options, None)
        .map_err(|e| start_failure(&e, loading))?;
    if let Some(version) = &loaded.version {
        tracing::info!("Loading RDB produced by version {version}");
    }
    if let Some(ctime) = loaded.ctime {
        tracing::info!("RDB age {} seconds", unix_secs().saturating_sub(ctime));
    }
    if loaded.empty_skipped > 0 {
        tracing::warn!(
            "Done loading RDB, keys loaded: {}, keys expired: {}, empty keys skipped: {}.",
            loaded.keys,
            loaded.expired,
            loaded.empty_skipped
        );
    } else {
        tracing::info!(
            "Done loading RDB, keys loaded: {}, keys expired: {}.",
            loaded.keys,
            loaded.expired
        );
    }
    tracing::info!(
        "DB loaded from disk: {:.3} seconds",
        started.elapsed().as_secs_f64()
    );
    continue_saved_history(shared, &loaded);
    Ok(())
}

/// A master restarted from a dump that recorded its replication history keeps it as
/// its second id, so its replicas continue with PSYNC; the keys the load skipped as
/// expired go into the stream as DELs after it, as Redis feeds them to its backlog, so
/// the replicas drop them too. A configured replica takes the history as its master's
/// (the id, the offset its image stands at, the database the stream had selected), so
/// its first PSYNC continues from there, as Redis's replica caches itself as its
/// master.
fn continue_saved_history(shared: &Shared, loaded: &Loaded) {
    let (Some((id, offset)), Some(db)) = (&loaded.repl, loaded.stream_db) else {
        return;
    };
    let Ok(offset) = u64::try_from(*offset) else {
        return;
    };
    let journal = &shared.repl.journal;
    let backlog_size = crate::repl::master::backlog_size(shared);
    if !shared.is_master() {
        journal.stream().adopt(id, offset, backlog_size);
        *shared.repl.resumed_stream_db.lock() = Some(db);
        return;
    }
    journal.activate();
    journal.stream().continue_history(id, offset, backlog_size);
    for (db, key) in &loaded.expired_keys {
        crate::store::events::DeletionFeed::expired(&**journal, *db, key);
    }
}

/// Logs why the load at start failed as Redis's `rdbReportError` does (with the summary
/// its built-in check prints: where, why, how many keys were read), and gives the last
/// line, which the caller logs before exiting.
fn start_failure(e: &LoadError, loading: &Loading) -> String {
    let reason = match e {
        LoadError::Checksum { .. } => {
            tracing::warn!("{e}");
            "RDB CRC error"
        }
        // Where Redis's reads come up short: its generic end-of-file report.
        LoadError::Corrupt(c) if c.0 == "truncated" || c.0 == "length beyond the payload" => {
            tracing::warn!("Short read or OOM loading DB. Unrecoverable error, aborting now.");
            "Unexpected EOF reading RDB file"
        }
        LoadError::Corrupt(c) => c.0,
        LoadError::Header(text) => {
            tracing::warn!("{text}");
            return "Fatal error loading the DB: Invalid argument. Exiting.".into();
        }
        LoadError::Refused(text) => return format!("Fatal error loading the DB: {text}. Exiting."),
    };
    tracing::warn!("Internal error in RDB reading -> {reason}");
    // The checksum is the file's last 8 bytes; anything else failed in the item that
    // starts where the reading stopped.
    let offset = match e {
        LoadError::Checksum { .. } => loading.total_bytes().saturating_sub(8),
        _ => loading.loaded_bytes(),
    };
    tracing::warn!("--- RDB ERROR DETECTED ---");
    tracing::warn!("[offset {offset}] {reason}");
    tracing::warn!(
        "[info] {} keys read",
        loading.keys_loaded() + loading.keys_expired()
    );
    tracing::warn!("[info] {} already expired", loading.keys_expired());
    "Terminating server after rdb file reading failure.".into()
}

/// `save <seconds> <changes> ...` as pairs; anything unparsable is skipped (CONFIG SET
/// validated it).
fn save_points(save: &str) -> Vec<(u64, u64)> {
    let words: Vec<u64> = save
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    words.chunks_exact(2).map(|p| (p[0], p[1])).collect()
}

/// Whether some save point is configured (`save` not empty): then SIGTERM and
/// FLUSHALL save, as in Redis.
pub fn has_save_points(shared: &Shared) -> bool {
    configured_save_points(&shared.config.read().save)
}

/// Whether nothing persists the dataset: no save point and no AOF (Redis's
/// `allPersistenceDisabled`).
pub fn all_persistence_disabled(shared: &Shared) -> bool {
    let config = shared.config.read();
    !configured_save_points(&config.save) && !config.appendonly
}

/// Whether the `save` setting `save` names some save point.
pub fn configured_save_points(save: &str) -> bool {
    !save_points(save).is_empty()
}

/// Once a second from the server's cron: start a BGSAVE when a save point is reached
/// (`changes` writes within `seconds`), or when BGSAVE SCHEDULE asked for one; after a
/// failed save, retry no sooner than 5 seconds later, as Redis does.
pub fn cron(shared: &Shared) {
    let p = &shared.persistence;
    let now = unix_secs();
    // One background save at a time, as Redis runs one child: a rewrite of the AOF
    // comes first.
    if p.last_cron.swap(now, Ordering::Relaxed) == now
        || p.bgsave_running.load(Ordering::Acquire)
        || shared.aof.rewriting.load(Ordering::Acquire)
    {
        return;
    }
    if p.bgsave_scheduled.swap(false, Ordering::AcqRel) {
        super::bgsave::bgsave(shared);
        return;
    }
    let dirty = p.dirty.load(Ordering::Relaxed);
    if dirty == 0 {
        return;
    }
    let lastsave = p.lastsave.load(Ordering::Relaxed);
    let retry_ok = p.last_bgsave_ok.load(Ordering::Relaxed)
        || now.saturating_sub(p.last_attempt.load(Ordering::Relaxed)) > 5;
    let due = save_points(&shared.config.read().save)
        .into_iter()
        .find(|&(seconds, changes)| dirty >= changes && now.saturating_sub(lastsave) >= seconds);
    if let (Some((seconds, changes)), true) = (due, retry_ok) {
        tracing::info!("{changes} changes in {seconds} seconds. Saving...");
        super::bgsave::bgsave(shared);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_points_are_pairs() {
        assert_eq!(
            save_points("3600 1 300 100 60 10000"),
            [(3600, 1), (300, 100), (60, 10000)]
        );
        assert!(save_points("").is_empty());
    }
}
