//! What a key holds. Strings are int-encoded when Redis would (canonical decimal `i64`,
//! written whole: SET, INCR, a load), otherwise compact bytes; a string changed in place
//! (APPEND, SETRANGE, SETBIT, BITFIELD) keeps its bytes whatever they read as, as Redis
//! keeps such a string `raw`. Collections are boxed so an entry stays small whatever
//! its type, except hashes, sets and sorted sets, whose small form is one buffer that
//! holds its own header.
//!
//! Hashes ([`super::hash`]) and sets ([`super::set`]) have modules of their own. Each
//! collection whose encoding Redis converts once and never back keeps what decides it
//! (the set's `converted`, and every collection's [`Peaks`]).

pub use super::hash::HashValue;
pub use super::set::SetValue;

use super::compact::CompactBytes;
use super::stream::Stream;
use super::zset::ZSet;

/// The hasher of every map in the store: fast, and seeded per process so clients cannot
/// aim collisions.
pub type Hasher = foldhash::fast::RandomState;

/// The most elements a collection held and its longest element, since the limits last
/// changed: Redis converts a compact encoding (`listpack`) once either passes its limit
/// and never back, so the encoding depends on what the value held, not only on what it
/// holds. A change of the limits settles them ([`Peaks::settled`]).
///
/// Both are kept in 32 bits (saturating: past 4 Gi the answer is the same for every
/// limit that can matter), so that with a small collection's buffer they fit the
/// allocator's next smaller size class: every small hash and sorted set carries one.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peaks {
    /// The most elements held at once.
    entries: u32,
    /// The longest element (a hash's field or value, a sorted set's member) added.
    longest: u32,
}

/// `n` in 32 bits, saturating.
pub(super) fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Peaks {
    /// The bytes of [`Peaks::to_narrow_bytes`].
    pub const NARROW_BYTES: usize = 4;

    /// Both peaks as `u16`s, little-endian, saturating: how a packed collection's header
    /// keeps them (see [`super::tagged_entries`]). A packed collection never holds more
    /// entries or longer elements than its packing limits (a few hundred at most), so
    /// nothing it can record saturates.
    pub fn to_narrow_bytes(self) -> [u8; Peaks::NARROW_BYTES] {
        let narrow = |n: u32| u16::try_from(n).unwrap_or(u16::MAX).to_le_bytes();
        let ([e0, e1], [l0, l1]) = (narrow(self.entries), narrow(self.longest));
        [e0, e1, l0, l1]
    }

    /// [`Peaks::saw`] on peaks kept as [`Peaks::to_narrow_bytes`], in place.
    #[inline]
    pub fn saw_narrow(bytes: &mut [u8; Peaks::NARROW_BYTES], entries: usize, len: usize) {
        let mut peaks = Peaks::from_narrow_bytes(*bytes);
        peaks.saw(entries, len);
        *bytes = peaks.to_narrow_bytes();
    }

    /// Read back from [`Peaks::to_narrow_bytes`]; a saturated `u16` reads as saturated
    /// (what [`Peaks::CONVERTED`] leaves in a packed collection's header).
    pub fn from_narrow_bytes(bytes: [u8; Peaks::NARROW_BYTES]) -> Peaks {
        let [e0, e1, l0, l1] = bytes;
        let wide = |n: u16| {
            if n == u16::MAX {
                u32::MAX
            } else {
                u32::from(n)
            }
        };
        Peaks {
            entries: wide(u16::from_le_bytes([e0, e1])),
            longest: wide(u16::from_le_bytes([l0, l1])),
        }
    }

    /// A value Redis converted under limits since changed: no limit makes it compact
    /// again, as Redis never converts back (saturated, which [`Peaks::within`] reads as
    /// past every limit).
    pub const CONVERTED: Peaks = Peaks {
        entries: u32::MAX,
        longest: u32::MAX,
    };

    /// The peaks to keep when the limits change from `max_entries` and `max_len`: Redis
    /// decided the encoding under them at each addition and keeps it, so a value past
    /// them stays [`Peaks::CONVERTED`] and one within them starts afresh (it stays
    /// compact until an addition passes the new limits, whatever it holds).
    pub fn settled(self, max_entries: usize, max_len: usize) -> Peaks {
        if self.within(max_entries, max_len) {
            Peaks::default()
        } else {
            Peaks::CONVERTED
        }
    }

    /// Peaks of `entries` elements whose longest is `longest` bytes.
    pub fn new(entries: usize, longest: usize) -> Peaks {
        Peaks {
            entries: saturating_u32(entries),
            longest: saturating_u32(longest),
        }
    }

    /// Records an addition: `entries` held now, an element of `len` bytes.
    pub fn saw(&mut self, entries: usize, len: usize) {
        self.entries = self.entries.max(saturating_u32(entries));
        self.longest = self.longest.max(saturating_u32(len));
    }

    /// Whether Redis would still hold the value in its compact encoding under these
    /// limits (never once saturated: see [`Peaks::CONVERTED`]).
    pub fn within(&self, max_entries: usize, max_len: usize) -> bool {
        self.entries != u32::MAX
            && self.longest != u32::MAX
            && self.entries as usize <= max_entries
            && self.longest as usize <= max_len
    }
}

/// Most bytes Redis lets a listpack hold (`LISTPACK_MAX_SAFETY_SIZE`, 1 GiB): it
/// converts a hash or sorted set whose listpack would grow past it, whatever the
/// configured limits.
pub const LISTPACK_MAX_BYTES: usize = 1 << 30;

/// The bytes of a large collection's elements, and whether they ever passed
/// [`LISTPACK_MAX_BYTES`] (Redis's conversion, which it never undoes). Only a large form
/// keeps it: a packed one cannot hold that much.
#[derive(Debug, Clone, Copy, Default)]
pub struct ElementBytes {
    bytes: usize,
    outgrew_listpack: bool,
}

impl ElementBytes {
    /// Counts `n` bytes in.
    #[inline]
    pub fn add(&mut self, n: usize) {
        self.bytes += n;
        self.outgrew_listpack |= self.bytes > LISTPACK_MAX_BYTES;
    }

    /// Counts `n` bytes, counted in before, out.
    #[inline]
    pub fn remove(&mut self, n: usize) {
        self.bytes = self.bytes.saturating_sub(n);
    }

    /// Records a conversion a command made whatever the size (SORT converts a sorted
    /// set to a skiplist before it reads it), which Redis never undoes either.
    pub fn mark_converted(&mut self) {
        self.outgrew_listpack = true;
    }

    /// Whether Redis would have converted the collection from a listpack by now.
    pub fn outgrew_listpack(&self) -> bool {
        self.outgrew_listpack
    }
}

/// A stored value.
#[derive(Debug, Clone)]
pub enum Value {
    /// A string whose text is the canonical decimal form of this integer.
    Int(i64),
    /// Any other string.
    Str(CompactBytes),
    /// A list.
    List(Box<super::ListValue>),
    /// A hash (two words, without a box: see [`HashValue`]).
    Hash(HashValue),
    /// A set (two words, without a box: see [`SetValue`]).
    Set(SetValue),
    /// A sorted set (two words, without a box: see [`ZSet`]).
    ZSet(ZSet),
    /// A stream.
    Stream(Box<Stream>),
}

/// A key's value and its deadline.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Expiry deadline in Unix milliseconds; 0 = no expiry.
    pub expires_at: u64,
    /// Last use, for eviction: see [`super::evict`].
    pub access: u32,
}

/// A placeholder (the string "0", no deadline): what a vacant position of a shard's key table
/// holds (see `IncrementalMap::vacate`), allocating nothing.
impl Default for Entry {
    fn default() -> Self {
        Entry {
            value: Value::Int(0),
            expires_at: 0,
            access: 0,
        }
    }
}

impl Entry {
    /// Whether the deadline has passed at `now` (Unix ms): expired, not yet reclaimed.
    #[inline]
    pub fn is_stale(&self, now: u64) -> bool {
        self.expires_at != 0 && self.expires_at <= now
    }
}

/// The value's integer if `bytes` is the canonical text of an `i64`, read as Redis's
/// `string2ll` reads it (what Redis int-encodes: no `+`, no leading zeros, no spaces).
pub fn canonical_int(bytes: &[u8]) -> Option<i64> {
    redline_resp::parse_i64(bytes)
}

impl Value {
    /// A string value from bytes, int-encoded when possible.
    pub fn string(bytes: &[u8]) -> Value {
        match canonical_int(bytes) {
            Some(n) => Value::Int(n),
            None => Value::Str(CompactBytes::new(bytes)),
        }
    }

    /// A string changed in place: its bytes as they are, with room to change again
    /// (Redis's `raw` encoding, whatever the bytes read as).
    pub fn raw(bytes: Vec<u8>) -> Value {
        Value::Str(CompactBytes::Growable(Box::new(bytes)))
    }

    /// A string kept as text even when it reads as an integer (a number written as a
    /// float's text, as Redis's INCRBYFLOAT result is `embstr`).
    pub fn text(bytes: &[u8]) -> Value {
        Value::Str(CompactBytes::new(bytes))
    }

    /// The name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Int(_) | Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
        }
    }

    /// Whether it is a list, hash, set or sorted set left without elements: a key
    /// Redis deletes when a write takes its last element (a stream may stay empty).
    pub fn is_empty_collection(&self) -> bool {
        match self {
            Value::List(l) => l.is_empty(),
            Value::Hash(h) => h.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
            Value::Int(_) | Value::Str(_) | Value::Stream(_) => false,
        }
    }

    /// Whether this is a string (either encoding).
    pub fn is_string(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Str(_))
    }

    /// Calls `f` with the string's bytes (formatting an int on the stack, no allocation);
    /// `None` for non-strings.
    pub fn with_str<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        match self {
            Value::Int(n) => {
                let mut digits = itoa::Buffer::new();
                Some(f(digits.format(*n).as_bytes()))
            }
            Value::Str(s) => Some(f(s.as_bytes())),
            _ => None,
        }
    }

    /// The string's bytes for changing in place, grown with zeros to at least `len`
    /// (SETRANGE, SETBIT, BITFIELD): no copy of the rest, however large. An int becomes
    /// its text first; the string is `raw` from then on, as Redis leaves a string
    /// changed in place. `None` for non-strings.
    pub fn str_grown_mut(&mut self, len: usize) -> Option<&mut Vec<u8>> {
        if let Value::Int(_) = self {
            *self = Value::raw(self.to_vec()?);
        }
        let Value::Str(s) = self else {
            return None;
        };
        let bytes = s.vec_with_room(len.saturating_sub(s.len()));
        if bytes.len() < len {
            bytes.resize(len, 0);
        }
        Some(bytes)
    }

    /// The string's bytes as a fresh vector (for read-modify-write commands).
    pub fn to_vec(&self) -> Option<Vec<u8>> {
        self.with_str(|b| b.to_vec())
    }

    /// Length of a string value (`STRLEN`).
    pub fn str_len(&self) -> Option<usize> {
        self.with_str(|b| b.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_encoding_is_canonical_only() {
        assert_eq!(canonical_int(b"123"), Some(123));
        assert_eq!(canonical_int(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(canonical_int(b"0123"), None);
        assert_eq!(canonical_int(b"+1"), None);
        assert_eq!(canonical_int(b"-0"), None);
        assert_eq!(canonical_int(b" 1"), None);
        assert_eq!(canonical_int(b"9223372036854775808"), None);
    }

    /// Settled peaks: a value past the old limits stays converted under any new one,
    /// in a packed header too; one within them starts afresh.
    #[test]
    fn settled_peaks_keep_the_old_limits_decision() {
        let peaks = Peaks::new(3, 5);
        assert!(!peaks.settled(2, 64).within(usize::MAX, usize::MAX));
        assert!(!peaks.settled(128, 4).within(1000, 1000));
        let fresh = peaks.settled(128, 64);
        assert!(fresh.within(0, 0));
        let narrow = Peaks::from_narrow_bytes(Peaks::CONVERTED.to_narrow_bytes());
        assert!(!narrow.within(usize::MAX, usize::MAX));
        let mut bytes = Peaks::CONVERTED.to_narrow_bytes();
        Peaks::saw_narrow(&mut bytes, 1, 1);
        assert!(!Peaks::from_narrow_bytes(bytes).within(usize::MAX, usize::MAX));
    }

    /// Redis converts once a listpack would pass 1 GiB, and never back.
    #[test]
    fn element_bytes_remember_outgrowing_a_listpack() {
        let mut bytes = ElementBytes::default();
        bytes.add(LISTPACK_MAX_BYTES);
        assert!(!bytes.outgrew_listpack());
        bytes.remove(10);
        bytes.add(11);
        assert!(bytes.outgrew_listpack());
        bytes.remove(LISTPACK_MAX_BYTES);
        assert!(bytes.outgrew_listpack());
    }

    #[test]
    fn small_entries() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }

    /// A small hash, set of integers or sorted set is its key's entry and one buffer:
    /// the value is the buffer's (pointer, length) and nothing else, so the entry holds
    /// it without a box (a 48- or 80-byte chunk, a seventh of a 10-field hash's whole
    /// cost and almost half a 10-integer set's, when it had one).
    #[test]
    fn small_collections_need_no_box() {
        assert_eq!(std::mem::size_of::<crate::store::HashValue>(), 16);
        assert_eq!(std::mem::size_of::<crate::store::ZSet>(), 16);
        assert_eq!(std::mem::size_of::<crate::store::SetValue>(), 16);
    }
}
