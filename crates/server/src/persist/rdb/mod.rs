//! The RDB value codec: how Redis 7.0 serialises one value, in DUMP payloads today and
//! in RDB snapshots later.
//!
//! A value is its RDB type byte followed by its body ([`encode`] writes one,
//! [`decode`] reads one). A DUMP payload adds a footer: the RDB version (2 bytes, little
//! endian; Redis 7.0 writes 10) and the CRC-64 (Jones, Redis's `crc64`) of everything
//! before it, 8 bytes little endian ([`dump_payload`], [`restore_payload`]).
//!
//! Reading accepts every encoding Redis 7.0 loads for strings, lists, hashes, sets and
//! sorted sets (including the zipmap- and ziplist-based ones of older versions); writing
//! uses the encoding Redis 7.0 holds the value in ([`crate::store::encoding`]). Input is never
//! trusted: each length is checked against the bytes that remain, compact encodings are
//! validated entry by entry, and any inconsistency is a [`Corrupt`] error.

pub mod decode;
pub mod encode;
pub mod file;
pub mod intset;
pub mod listpack;
pub mod lzf;
pub mod reader;
pub mod stream;
pub mod ziplist;
pub mod zipmap;

use crate::store::Value;

/// The RDB version Redis 7.0 writes, and the newest it (and this codec) reads.
pub const RDB_VERSION: u16 = 10;

/// RDB object type bytes (`RDB_TYPE_*` in Redis's `rdb.h`).
pub mod types {
    /// A string.
    pub const STRING: u8 = 0;
    /// A list as a count and its elements (before quicklists).
    pub const LIST: u8 = 1;
    /// A set as a count and its members.
    pub const SET: u8 = 2;
    /// A sorted set with scores as text.
    pub const ZSET: u8 = 3;
    /// A hash as a count and its field/value pairs.
    pub const HASH: u8 = 4;
    /// A sorted set with binary scores.
    pub const ZSET_2: u8 = 5;
    /// A hash as a zipmap (Redis 2.4 and older).
    pub const HASH_ZIPMAP: u8 = 9;
    /// A list as one ziplist (Redis before 3.2).
    pub const LIST_ZIPLIST: u8 = 10;
    /// A set as an intset.
    pub const SET_INTSET: u8 = 11;
    /// A sorted set as a ziplist (Redis before 7.0).
    pub const ZSET_ZIPLIST: u8 = 12;
    /// A hash as a ziplist (Redis before 7.0).
    pub const HASH_ZIPLIST: u8 = 13;
    /// A list as ziplist nodes (Redis 3.2 to 6.2).
    pub const LIST_QUICKLIST: u8 = 14;
    /// A hash as a listpack.
    pub const HASH_LISTPACK: u8 = 16;
    /// A sorted set as a listpack.
    pub const ZSET_LISTPACK: u8 = 17;
    /// A list as listpack or plain nodes (Redis 7.0).
    pub const LIST_QUICKLIST_2: u8 = 18;
    /// A stream (Redis 5.0 to 6.2).
    pub const STREAM_LISTPACKS: u8 = 15;
    /// A stream with 7.0's counters (what Redis 7.0 writes).
    pub const STREAM_LISTPACKS_2: u8 = 19;
}

/// Malformed RDB data; the text says what was wrong (for logs and tests; clients get
/// Redis's generic "Bad data format").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt(pub &'static str);

/// Why a DUMP payload was refused, with the error Redis answers RESTORE with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short, a newer RDB version, or a checksum mismatch.
    VersionOrChecksum,
    /// The value itself is malformed (or of a type this server does not hold).
    BadData(Corrupt),
}

impl PayloadError {
    /// Redis's error text.
    pub fn text(&self) -> &'static str {
        match self {
            PayloadError::VersionOrChecksum => "ERR DUMP payload version or checksum are wrong",
            PayloadError::BadData(_) => "ERR Bad data format",
        }
    }
}

/// How [`CRC64`] is computed: sixteen bytes per step from sixteen tables (32 KB), as
/// Redis's `crcspeed` computes it eight at a time. The crate's default, a byte per step,
/// took 39% of the time of loading an RDB of random strings.
pub type Crc64Table = crc::Table<16>;

/// A CRC-64 computed piece by piece (`CRC64.digest()`).
pub type Crc64Digest = crc::Digest<'static, u64, Crc64Table>;

/// Redis's CRC-64 (Jones polynomial, reflected, no final xor), for checksums computed
/// piece by piece (`CRC64.digest()`).
pub static CRC64: crc::Crc<u64, Crc64Table> = crc::Crc::<u64, Crc64Table>::new(&crc::CRC_64_REDIS);

/// Redis's CRC-64 of `bytes`.
pub fn crc64(bytes: &[u8]) -> u64 {
    CRC64.checksum(bytes)
}

/// `value` as a DUMP payload.
pub fn dump_payload(value: &Value, limits: &crate::store::encoding::EncodingLimits) -> Vec<u8> {
    let mut out = Vec::new();
    encode::value(&mut out, value, limits);
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The body of a DUMP-style payload once its footer (RDB version, CRC64) checks out,
/// as Redis's `verifyDumpPayload`.
fn verified_body(payload: &[u8]) -> Result<&[u8], PayloadError> {
    verified_body_with(payload, true)
}

/// [`verified_body`], the CRC compared only when `verify_crc` (DEBUG
/// SET-SKIP-CHECKSUM-VALIDATION turns it off, as Redis's tests do).
fn verified_body_with(payload: &[u8], verify_crc: bool) -> Result<&[u8], PayloadError> {
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(PayloadError::VersionOrChecksum);
    };
    let version = u16::from_le_bytes([payload[body_len], payload[body_len + 1]]);
    if version > RDB_VERSION {
        return Err(PayloadError::VersionOrChecksum);
    }
    if !verify_crc {
        return Ok(&payload[..body_len]);
    }
    let mut stored = [0u8; 8];
    stored.copy_from_slice(&payload[body_len + 2..]);
    if crc64(&payload[..body_len + 2]) != u64::from_le_bytes(stored) {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok(&payload[..body_len])
}

/// Redis 7.0's opcode for one function library (its code) in RDB files and FUNCTION DUMP.
pub(crate) const OPCODE_FUNCTION2: u8 = 245;

/// FUNCTION DUMP: each library's code after the function opcode, then the footer.
pub fn functions_payload<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(OPCODE_FUNCTION2);
        encode::string(&mut out, code);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The library codes of a FUNCTION DUMP payload.
pub fn restore_functions_payload(payload: &[u8]) -> Result<Vec<Vec<u8>>, PayloadError> {
    let body = verified_body(payload)?;
    let mut reader = reader::Reader::new(body);
    let mut codes = Vec::new();
    while reader.remaining() > 0 {
        if reader.byte().map_err(PayloadError::BadData)? != OPCODE_FUNCTION2 {
            return Err(PayloadError::BadData(Corrupt("not a function opcode")));
        }
        codes.push(reader.string().map_err(PayloadError::BadData)?.into_owned());
    }
    Ok(codes)
}

/// The value of a DUMP payload, checked as Redis's `verifyDumpPayload` then
/// `rdbLoadObject` do.
pub fn restore_payload(payload: &[u8]) -> Result<Value, PayloadError> {
    restore_payload_with(payload, true, true)
}

/// [`restore_payload`], the CRC compared only when `verify_crc`, and redundant counts
/// only when `deep` (Redis's deep sanitization, see [`reader::Reader::shallow`]).
pub fn restore_payload_with(
    payload: &[u8],
    verify_crc: bool,
    deep: bool,
) -> Result<Value, PayloadError> {
    verified_body_with(payload, verify_crc)?;
    // Like Redis, the object is read from the whole payload: bytes left before the
    // footer are ignored.
    let mut reader = reader::Reader::new(payload);
    if !deep {
        reader = reader.shallow();
    }
    decode::value(&mut reader).map_err(PayloadError::BadData)
}

#[cfg(test)]
mod tests;
