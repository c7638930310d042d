//! Whole RDB snapshots as Redis 7.0 writes them (`rdbSaveRio` / `rdbLoadRio`): the
//! `REDIS0010` header, aux fields, function libraries, then per database a SELECTDB and
//! RESIZEDB opcode and its entries (an optional millisecond expiry, the type byte, the key,
//! the value), EOF, and the CRC-64 of everything before it (zero when `rdbchecksum no`).
//!
//! The same bytes are a `dump.rdb` file, the payload of a replication full sync, and the
//! image DEBUG RELOAD goes through. Values use the codec of [`super::encode`] and
//! [`super::decode`]; reading trusts nothing, like the rest of the codec.

use super::reader::Reader;
use super::{decode, encode, Corrupt, Crc64Digest, CRC64, OPCODE_FUNCTION2, RDB_VERSION};
use crate::store::encoding::EncodingLimits;
use crate::store::evict::{LastUse, LastUseSaved};
use crate::store::{Entry, Value};

/// Opcodes between entries (`RDB_OPCODE_*`).
mod opcode {
    pub const MODULE_AUX: u8 = 247;
    pub const IDLE: u8 = 248;
    pub const FREQ: u8 = 249;
    pub const AUX: u8 = 250;
    pub const RESIZEDB: u8 = 251;
    pub const EXPIRETIME_MS: u8 = 252;
    pub const EXPIRETIME: u8 = 253;
    pub const SELECTDB: u8 = 254;
    pub const EOF: u8 = 255;
    /// Functions as 7.0 release candidates wrote them; refused as Redis 7.0 refuses them.
    pub const FUNCTION_PRE_GA: u8 = 246;
}

/// Builds a snapshot piece by piece, in the order the format requires: in memory, or
/// written out as it grows ([`SnapshotWriter::write_out`]).
///
/// ```
/// use redline_server::persist::rdb::file::{read_snapshot, Item, SnapshotWriter};
/// use redline_server::store::{Entry, Value};
///
/// let mut w = SnapshotWriter::new(&[("redis-ver", b"7.0.15")]);
/// w.select_db(0, 1, 0);
/// w.entry(b"k", &Entry { value: Value::string(b"v"), expires_at: 0, access: 0 });
/// let bytes = w.finish(true);
/// let mut keys = 0;
/// read_snapshot(&bytes, |item| {
///     if let Item::Entry { key, .. } = item {
///         assert_eq!(key, b"k");
///         keys += 1;
///     }
///     Ok(())
/// })
/// .unwrap();
/// assert_eq!(keys, 1);
/// ```
pub struct SnapshotWriter {
    out: Vec<u8>,
    /// The checksum of what [`SnapshotWriter::write_out`] wrote out.
    crc: Crc64Digest,
    /// How keys are written (their encodings, their last use).
    rules: SaveRules,
}

/// How a dump file writes each key, as fixed when the save begins (as a forked child
/// has the configuration of its fork): values in the encodings `limits` give them, and
/// the last use the maxmemory policy keeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct SaveRules {
    /// The compact encodings' limits.
    pub limits: EncodingLimits,
    /// What is recorded of each key's last use.
    pub last_use: LastUseSaved,
}

impl SaveRules {
    /// The rules of a save beginning now.
    pub fn now(shared: &crate::shared::Shared) -> SaveRules {
        SaveRules {
            limits: EncodingLimits::now(&shared.hot),
            last_use: shared.store.events().eviction.last_use_saved(),
        }
    }
}

impl SnapshotWriter {
    /// Starts a snapshot: the header and the aux fields given (`redis-ver`, `ctime`...).
    pub fn new(aux: &[(&str, &[u8])]) -> SnapshotWriter {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
        for (name, value) in aux {
            out.push(opcode::AUX);
            encode::string(&mut out, name.as_bytes());
            encode::string(&mut out, value);
        }
        SnapshotWriter {
            out,
            crc: CRC64.digest(),
            rules: SaveRules::default(),
        }
    }

    /// Writes keys under `rules` (the configured ones) rather than Redis's defaults.
    pub fn with_rules(mut self, rules: SaveRules) -> SnapshotWriter {
        self.rules = rules;
        self
    }

    /// A function library's code (written before the databases, as Redis does).
    pub fn function(&mut self, code: &[u8]) {
        self.out.push(OPCODE_FUNCTION2);
        encode::string(&mut self.out, code);
    }

    /// Starts database `db`, which holds `keys` keys of which `expires` have a TTL.
    pub fn select_db(&mut self, db: usize, keys: usize, expires: usize) {
        self.out.push(opcode::SELECTDB);
        encode::len(&mut self.out, db as u64);
        self.out.push(opcode::RESIZEDB);
        encode::len(&mut self.out, keys as u64);
        encode::len(&mut self.out, expires as u64);
    }

    /// One key of the current database.
    pub fn entry(&mut self, key: &[u8], entry: &Entry) {
        write_entry(&mut self.out, key, entry, &self.rules);
    }

    /// One key of the current database, for an image written to `sink` as it is made:
    /// the bytes so far go out once they reach `piece`, and a string value of `piece`
    /// bytes or more is written from where it is (or from its LZF form) rather than
    /// copied into the piece first, as Redis writes a large string from its object.
    pub fn entry_into(
        &mut self,
        key: &[u8],
        entry: &Entry,
        sink: &mut dyn std::io::Write,
        checksum: bool,
        piece: usize,
    ) -> std::io::Result<()> {
        let value = match &entry.value {
            Value::Str(value) if value.len() >= piece => value,
            _ => {
                self.entry(key, entry);
                if self.out.len() >= piece {
                    self.write_out(sink, checksum)?;
                }
                return Ok(());
            }
        };
        let last_use = self.rules.last_use.of(entry.access);
        write_string_entry_start(&mut self.out, key, entry.expires_at, last_use);
        let body = encode::string_head(&mut self.out, value);
        self.write_out(sink, checksum)?;
        if checksum {
            self.crc.update(&body);
        }
        sink.write_all(&body)
    }

    /// The bytes so far, without EOF and checksum: the start of an image whose entries
    /// are written elsewhere ([`write_select_db`], [`write_entry`], then [`EOF_OPCODE`] and the checksum).
    pub fn into_header(self) -> Vec<u8> {
        self.out
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Whether nothing at all was written (never: the header is there from the start).
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// Writes the bytes so far to `sink` and lets them go: a snapshot written to a file
    /// as it is made holds one piece in memory, not the whole image. `checksum` as
    /// given to [`Self::finish`].
    pub fn write_out(
        &mut self,
        sink: &mut dyn std::io::Write,
        checksum: bool,
    ) -> std::io::Result<()> {
        if checksum {
            self.crc.update(&self.out);
        }
        let written = sink.write_all(&self.out);
        self.out.clear();
        written
    }

    /// Ends the snapshot: EOF and the checksum (zeros when `checksum` is off, which
    /// Redis's loader takes as "not checked"); returns what was not written out.
    pub fn finish(mut self, checksum: bool) -> Vec<u8> {
        self.out.push(opcode::EOF);
        let crc = if checksum {
            self.crc.update(&self.out);
            self.crc.finalize()
        } else {
            0
        };
        self.out.extend_from_slice(&crc.to_le_bytes());
        self.out
    }
}

/// Appends one key (optional expiry and last use, type byte, key, value) to `out`, as
/// `rules` write it.
pub fn write_entry(out: &mut Vec<u8>, key: &[u8], entry: &Entry, rules: &SaveRules) {
    write_key_head(out, entry.expires_at, rules.last_use.of(entry.access));
    // The type byte comes first, then the key, then the body, and the value codec writes
    // type and body as one piece: the key goes first, then type and body, then the type
    // byte rotates in front of the key. The body stays where it was written (a large
    // value is not copied again) and nothing is allocated.
    let start = out.len();
    encode::string(out, key);
    let key_end = out.len();
    encode::value(out, &entry.value, &rules.limits);
    out[start..=key_end].rotate_right(1);
}

/// The start of a string entry (expiry, last use, type byte, key) whose value is
/// written apart, after [`encode::string_head`]: a large value from where it is.
pub fn write_string_entry_start(
    out: &mut Vec<u8>,
    key: &[u8],
    expires_at: u64,
    last_use: Option<LastUse>,
) {
    write_key_head(out, expires_at, last_use);
    out.push(super::types::STRING);
    encode::string(out, key);
}

/// What comes before an entry's type byte: its deadline, then its last use, when it
/// has them (Redis's order).
fn write_key_head(out: &mut Vec<u8>, expires_at: u64, last_use: Option<LastUse>) {
    if expires_at != 0 {
        out.push(opcode::EXPIRETIME_MS);
        out.extend_from_slice(&expires_at.to_le_bytes());
    }
    match last_use {
        Some(LastUse::IdleSeconds(seconds)) => {
            out.push(opcode::IDLE);
            encode::len(out, seconds);
        }
        Some(LastUse::Freq(freq)) => {
            out.push(opcode::FREQ);
            out.push(freq);
        }
        None => {}
    }
}

/// Appends a SELECTDB opcode without the RESIZEDB hint (which is optional: an image
/// written piece by piece selects a database again wherever its entries resume).
pub fn write_select_db(out: &mut Vec<u8>, db: usize) {
    out.push(opcode::SELECTDB);
    encode::len(out, db as u64);
}

/// The EOF opcode, to be followed by the 8-byte little-endian CRC-64 of everything up to
/// and including it.
pub const EOF_OPCODE: u8 = opcode::EOF;

/// One thing read from a snapshot, in file order.
#[derive(Debug)]
pub enum Item<'a> {
    /// An aux field.
    Aux {
        /// Its name (`redis-ver`, `repl-id`...).
        name: &'a [u8],
        /// Its value.
        value: &'a [u8],
    },
    /// A function library's code.
    Function(&'a [u8]),
    /// A database starts (its keys follow).
    SelectDb(usize),
    /// A key holding an empty collection, which the file should not have held.
    EmptyKey {
        /// The database.
        db: usize,
        /// The key.
        key: &'a [u8],
    },
    /// One key.
    Entry {
        /// The database.
        db: usize,
        /// The key.
        key: &'a [u8],
        /// The value.
        value: Value,
        /// Absolute expiry in unix milliseconds, 0 for none.
        expires_at: u64,
        /// Seconds since its last use, when the file records them (saved under an LRU
        /// policy).
        idle: Option<u64>,
        /// Its LFU counter, when the file records it (saved under an LFU policy).
        freq: Option<u8>,
    },
}

/// Why a snapshot could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Not an RDB file, or a version newer than this server reads.
    Header(String),
    /// The checksum at the end does not match.
    Checksum {
        /// The CRC-64 of the contents.
        expected: u64,
        /// The one the file ends with.
        got: u64,
    },
    /// Malformed contents.
    Corrupt(Corrupt),
    /// Something the reader refused (a module value, an unloadable library...).
    Refused(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Header(text) | LoadError::Refused(text) => f.write_str(text),
            LoadError::Checksum { expected, got } => write!(
                f,
                "Wrong RDB checksum expected: ({expected:x}) but got ({got:x}). Aborting now."
            ),
            LoadError::Corrupt(c) => write!(
                f,
                "Short read or OOM loading DB. Unrecoverable error, aborting now. ({})",
                c.0
            ),
        }
    }
}

impl From<Corrupt> for LoadError {
    fn from(c: Corrupt) -> LoadError {
        LoadError::Corrupt(c)
    }
}

/// Reads a whole snapshot, handing every item to `sink` in file order; `sink` may refuse
/// one (the load stops with its error). Items that only tune memory (IDLE, FREQ,
/// RESIZEDB) are skipped. Returns the length of the image: an AOF with an RDB preamble
/// goes on with commands after it.
pub fn read_snapshot(
    bytes: &[u8],
    sink: impl FnMut(Item<'_>) -> Result<(), LoadError>,
) -> Result<usize, LoadError> {
    read_snapshot_with_progress(bytes, true, |_| {}, sink)
}

/// [`read_snapshot`], telling `progress` how many bytes were read after each item; the
/// checksum is compared only when `verify_checksum` (Redis skips it under `rdbchecksum
/// no` and DEBUG SET-SKIP-CHECKSUM-VALIDATION).
pub fn read_snapshot_with_progress(
    bytes: &[u8],
    verify_checksum: bool,
    progress: impl FnMut(usize),
    sink: impl FnMut(Item<'_>) -> Result<(), LoadError>,
) -> Result<usize, LoadError> {
    let mut stream = SnapshotStream::new(verify_checksum);
    match stream.feed(bytes, true, progress, sink)? {
        Fed::Done(_) => Ok(stream.read()),
        // `last` makes a short image an error, so this is not reached.
        Fed::More(_) => Err(LoadError::Corrupt(Corrupt("truncated"))),
    }
}

/// How far [`SnapshotStream::feed`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    /// It read this many bytes (whole items); the image goes on in bytes to come.
    More(usize),
    /// It read this many bytes, the image's last among them (EOF and the checksum).
    Done(usize),
}

/// Why one item stopped: the caller's sink refused it (final), or its bytes did not
/// read (perhaps only not all here yet).
enum Stop {
    Sink(LoadError),
    Parse(Corrupt),
}

impl From<Corrupt> for Stop {
    fn from(c: Corrupt) -> Stop {
        Stop::Parse(c)
    }
}

/// A snapshot read as it arrives, in pieces (a replica loading its master's image
/// straight from the socket, as Redis's disk-less load does): each [`feed`] reads the
/// whole items at the start of the bytes it is given and says how many bytes those
/// took; the caller keeps the rest and adds what arrives after it. An item cut short
/// is read again from its start with more bytes, so a caller feeding a large item
/// should wait until its bytes have grown (doubling them, say) rather than feed every
/// small read. The checksum is kept as the bytes are read.
///
/// [`feed`]: SnapshotStream::feed
///
/// ```
/// use redline_server::persist::rdb::file::{Fed, Item, SnapshotStream, SnapshotWriter};
/// use redline_server::store::{Entry, Value};
///
/// let mut w = SnapshotWriter::new(&[]);
/// w.select_db(0, 1, 0);
/// w.entry(b"k", &Entry { value: Value::string(b"v"), expires_at: 0, access: 0 });
/// let image = w.finish(true);
/// let mut stream = SnapshotStream::new(true);
/// let mut keys = 0;
/// let mut count = |item: Item<'_>| {
///     keys += usize::from(matches!(item, Item::Entry { .. }));
///     Ok(())
/// };
/// let half = image.len() / 2;
/// let Fed::More(read) = stream.feed(&image[..half], false, |_| {}, &mut count).unwrap() else {
///     panic!("half an image is not all of it");
/// };
/// assert_eq!(stream.feed(&image[read..], false, |_| {}, &mut count).unwrap(), Fed::Done(image.len() - read));
/// assert_eq!(keys, 1);
/// ```
pub struct SnapshotStream {
    verify_checksum: bool,
    /// The format version, once the header is read.
    version: Option<u16>,
    db: usize,
    /// An expiry opcode read, for the key that follows it.
    expires_at: u64,
    /// An IDLE or FREQ opcode read, for the key that follows it.
    idle: Option<u64>,
    freq: Option<u8>,
    /// The checksum of what was read, when computed here (see
    /// [`SnapshotStream::deferred_checksum`]).
    crc: Option<super::Crc64Digest>,
    /// With the checksum deferred: the one the image ends with, and how many bytes
    /// of the image it covers.
    trailer: Option<(u64, usize)>,
    read: usize,
    done: bool,
}

impl SnapshotStream {
    /// Starts reading an image; its checksum is compared only when `verify_checksum`.
    pub fn new(verify_checksum: bool) -> SnapshotStream {
        SnapshotStream {
            verify_checksum,
            version: None,
            db: 0,
            expires_at: 0,
            idle: None,
            freq: None,
            crc: Some(super::CRC64.digest()),
            trailer: None,
            read: 0,
            done: false,
        }
    }

    /// Starts reading an image whose checksum the caller computes and compares (over
    /// the whole image at once, beside the parse: see [`Self::checksum_trailer`]).
    pub fn deferred_checksum() -> SnapshotStream {
        SnapshotStream {
            crc: None,
            ..SnapshotStream::new(false)
        }
    }

    /// With the checksum deferred, once the image is read: the checksum it ends with
    /// and the length of the prefix it covers (`None` before format 5, which has none).
    pub fn checksum_trailer(&self) -> Option<(u64, usize)> {
        self.trailer
    }

    /// Bytes of the image read so far.
    pub fn read(&self) -> usize {
        self.read
    }

    /// Reads the whole items at the start of `bytes` (what follows the bytes read so
    /// far), handing each to `sink` and telling `progress` the bytes read after each.
    /// `last`: nothing follows `bytes`, so an item cut short is an error.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        last: bool,
        mut progress: impl FnMut(usize),
        mut sink: impl FnMut(Item<'_>) -> Result<(), LoadError>,
    ) -> Result<Fed, LoadError> {
        if self.done {
            return Ok(Fed::Done(0));
        }
        let mut pos = 0;
        if self.version.is_none() {
            if bytes.len() < 9 && !last {
                return Ok(Fed::More(0));
            }
            self.version = Some(header_version(bytes)?);
            self.consume(&bytes[..9]);
            pos = 9;
        }
        while !self.done {
            let mut r = Reader::new(&bytes[pos..]);
            match self.item(&mut r, &mut sink) {
                Ok(()) => {
                    let used = r.position();
                    // The EOF item counted its opcode itself (the checksum covers
                    // everything before its own 8 bytes).
                    if let (false, Some(crc)) = (self.done, &mut self.crc) {
                        crc.update(&bytes[pos..pos + used]);
                    }
                    self.read += used;
                    pos += used;
                    progress(self.read);
                }
                Err(Stop::Sink(e)) => return Err(e),
                Err(Stop::Parse(_)) if r.ran_out() && !last => return Ok(Fed::More(pos)),
                Err(Stop::Parse(c)) => return Err(LoadError::Corrupt(c)),
            }
        }
        Ok(Fed::Done(pos))
    }

    fn consume(&mut self, bytes: &[u8]) {
        if let Some(crc) = &mut self.crc {
            crc.update(bytes);
        }
        self.read += bytes.len();
    }

    /// Reads one item (an opcode and what it carries) from the start of `r`. The
    /// EOF opcode is read with the checksum after it, and compares it.
    fn item(
        &mut self,
        r: &mut Reader<'_>,
        sink: &mut impl FnMut(Item<'_>) -> Result<(), LoadError>,
    ) -> Result<(), Stop> {
        let kind = r.byte()?;
        match kind {
            opcode::EOF => {
                if self.version.unwrap_or(0) >= 5 {
                    let stored = u64::from_le_bytes(r.array()?);
                    match self.crc.take() {
                        Some(mut crc) => {
                            crc.update(&[opcode::EOF]);
                            let expected = crc.finalize();
                            if self.verify_checksum && stored != 0 && stored != expected {
                                return Err(Stop::Sink(LoadError::Checksum {
                                    expected,
                                    got: stored,
                                }));
                            }
                        }
                        // Everything before the checksum: what was read, and this opcode.
                        None => self.trailer = Some((stored, self.read + 1)),
                    }
                }
                self.done = true;
                return Ok(());
            }
            opcode::SELECTDB => {
                self.db = usize::try_from(r.count()?).map_err(|_| Corrupt("database number"))?;
                sink(Item::SelectDb(self.db)).map_err(Stop::Sink)?;
            }
            opcode::RESIZEDB => {
                r.count()?;
                r.count()?;
            }
            opcode::AUX => {
                let name = r.string()?;
                let value = r.string()?;
                sink(Item::Aux {
                    name: &name,
                    value: &value,
                })
                .map_err(Stop::Sink)?;
            }
            opcode::EXPIRETIME_MS => {
                self.expires_at = u64::from_le_bytes(r.array()?);
                return Ok(());
            }
            opcode::EXPIRETIME => {
                let seconds = u32::from_le_bytes(r.array()?);
                self.expires_at = u64::from(seconds) * 1000;
                return Ok(());
            }
            opcode::IDLE => {
                self.idle = Some(r.count()?);
                return Ok(());
            }
            opcode::FREQ => {
                self.freq = Some(r.byte()?);
                return Ok(());
            }
            OPCODE_FUNCTION2 => {
                let code = r.string()?;
                sink(Item::Function(&code)).map_err(Stop::Sink)?;
            }
            opcode::FUNCTION_PRE_GA => {
                return Err(Stop::Sink(LoadError::Refused(
                    "Pre-release function format not supported.".into(),
                )))
            }
            opcode::MODULE_AUX => {
                return Err(Stop::Sink(LoadError::Refused(
                    "The RDB file contains AUX module data I can't load: no matching module".into(),
                )))
            }
            _ => {
                let key = r.string()?;
                let db = self.db;
                match decode::body(r, kind) {
                    Err(decode::EMPTY) => sink(Item::EmptyKey { db, key: &key }),
                    value => sink(Item::Entry {
                        db,
                        key: &key,
                        value: value?,
                        expires_at: self.expires_at,
                        idle: self.idle,
                        freq: self.freq,
                    }),
                }
                .map_err(Stop::Sink)?;
            }
        }
        self.expires_at = 0;
        (self.idle, self.freq) = (None, None);
        Ok(())
    }
}

/// The format version of an image, from its `REDIS0010`-style header.
fn header_version(bytes: &[u8]) -> Result<u16, LoadError> {
    if bytes.len() < 9 || &bytes[..5] != b"REDIS" {
        return Err(LoadError::Header(
            "Wrong signature trying to load DB from file".into(),
        ));
    }
    let version = std::str::from_utf8(&bytes[5..9])
        .ok()
        .and_then(|v| v.parse::<u16>().ok())
        .ok_or_else(|| LoadError::Header("Wrong signature trying to load DB from file".into()))?;
    if !(1..=RDB_VERSION).contains(&version) {
        return Err(LoadError::Header(format!(
            "Can't handle RDB format version {version}"
        )));
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(value: &[u8], expires_at: u64) -> Entry {
        Entry {
            value: Value::string(value),
            expires_at,
            access: 0,
        }
    }

    /// Every item the sink sees, as text.
    fn describe(item: &Item<'_>) -> String {
        match item {
            Item::Entry {
                db,
                key,
                expires_at,
                ..
            } => {
                format!("{db} {} {expires_at}", String::from_utf8_lossy(key))
            }
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn an_image_fed_in_two_pieces_split_anywhere_reads_as_a_whole() {
        let mut w = SnapshotWriter::new(&[("redis-ver", b"7.0.15")]);
        w.function(b"#!lua name=lib\nredis.register_function('f', function() return 1 end)");
        w.select_db(0, 2, 1);
        w.entry(b"a", &entry(b"1", 0));
        w.entry(b"b", &entry(&[b'x'; 300], 1_900_000_000_000));
        w.select_db(2, 1, 0);
        w.entry(b"c", &entry(b"hello", 0));
        let image = w.finish(true);
        let mut whole = Vec::new();
        read_snapshot(&image, |item| {
            whole.push(describe(&item));
            Ok(())
        })
        .unwrap();
        for split in 0..image.len() {
            let mut seen = Vec::new();
            let mut stream = SnapshotStream::new(true);
            let mut sink = |item: Item<'_>| {
                seen.push(describe(&item));
                Ok(())
            };
            let Fed::More(read) = stream
                .feed(&image[..split], false, |_| {}, &mut sink)
                .unwrap()
            else {
                panic!("done before the end at {split}");
            };
            let fed = stream
                .feed(&image[read..], false, |_| {}, &mut sink)
                .unwrap();
            assert_eq!(fed, Fed::Done(image.len() - read), "split at {split}");
            assert_eq!(seen, whole, "split at {split}");
            assert_eq!(stream.read(), image.len());
        }
    }

    #[test]
    fn a_short_image_is_an_error_only_when_nothing_follows() {
        let mut w = SnapshotWriter::new(&[]);
        w.select_db(0, 1, 0);
        w.entry(b"k", &entry(&[b'v'; 100], 0));
        let image = w.finish(true);
        let short = &image[..image.len() - 20];
        let mut stream = SnapshotStream::new(true);
        assert!(matches!(
            stream.feed(short, false, |_| {}, |_| Ok(())),
            Ok(Fed::More(_))
        ));
        let mut stream = SnapshotStream::new(true);
        assert!(matches!(
            stream.feed(short, true, |_| {}, |_| Ok(())),
            Err(LoadError::Corrupt(_))
        ));
        // A bad checksum is found at the end, whatever the pieces.
        let mut bad = image.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let mut stream = SnapshotStream::new(true);
        assert!(matches!(
            stream.feed(&bad, false, |_| {}, |_| Ok(())),
            Err(LoadError::Checksum { .. })
        ));
    }

    #[test]
    fn round_trip_keeps_keys_expiries_functions_and_aux() {
        let mut w = SnapshotWriter::new(&[("redis-ver", b"7.0.15"), ("redis-bits", b"64")]);
        w.function(b"#!lua name=lib\nredis.register_function('f', function() return 1 end)");
        w.select_db(0, 2, 1);
        w.entry(b"a", &entry(b"1", 0));
        w.entry(b"b", &entry(&[b'x'; 100], 1_900_000_000_000));
        w.select_db(3, 1, 0);
        w.entry(b"c", &entry(b"hello", 0));
        let bytes = w.finish(true);
        let mut seen = Vec::new();
        read_snapshot(&bytes, |item| {
            seen.push(match item {
                Item::Aux { name, value } => format!(
                    "aux {}={}",
                    String::from_utf8_lossy(name),
                    String::from_utf8_lossy(value)
                ),
                Item::Function(code) => format!("fn {}", code.len()),
                Item::SelectDb(db) => format!("db {db}"),
                Item::EmptyKey { key, .. } => format!("empty {}", String::from_utf8_lossy(key)),
                Item::Entry {
                    db,
                    key,
                    expires_at,
                    ..
                } => format!("{db} {} {expires_at}", String::from_utf8_lossy(key)),
            });
            Ok(())
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                "aux redis-ver=7.0.15",
                "aux redis-bits=64",
                "fn 68",
                "db 0",
                "0 a 0",
                "0 b 1900000000000",
                "db 3",
                "3 c 0"
            ]
        );
    }

    #[test]
    fn damage_is_an_error_never_a_panic() {
        let mut w = SnapshotWriter::new(&[("redis-ver", b"7.0.15")]);
        w.select_db(0, 1, 0);
        w.entry(b"key", &entry(b"value", 0));
        let bytes = w.finish(true);
        let mut flipped = bytes.clone();
        let last = flipped.len() - 12;
        flipped[last] ^= 0xFF;
        assert!(read_snapshot(&flipped, |_| Ok(())).is_err());
        for cut in 0..bytes.len() {
            assert!(
                read_snapshot(&bytes[..cut], |_| Ok(())).is_err(),
                "cut {cut}"
            );
        }
        let unchecked = {
            let mut b = bytes.clone();
            let n = b.len();
            b[n - 8..].fill(0);
            b
        };
        assert!(read_snapshot(&unchecked, |_| Ok(())).is_ok());
        assert!(matches!(
            read_snapshot(b"REDIS0011\xff", |_| Ok(())),
            Err(LoadError::Header(_))
        ));
    }
}
