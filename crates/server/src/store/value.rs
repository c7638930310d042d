//! What a key holds. Strings are int-encoded when Redis would (canonical decimal `i64`,
//! written whole: SET, INCR, a load), otherwise compact bytes; a string changed in place
//! (APPEND, SETRANGE, SETBIT, BITFIELD) keeps its bytes whatever they read as, as Redis
//! keeps such a string `raw`. Collections are boxed so an entry stays small whatever
//! its type.
//!
//! Sets are `IndexSet`s: insertion order matches Redis's small encodings, and index
//! access gives O(1) random members and stable scan cursors (hashes: [`super::hash`]). Each
//! collection whose encoding Redis converts once and never back keeps what decides it
//! (the set's `had_text`, and every collection's [`Peaks`]).

use std::collections::VecDeque;

use indexmap::IndexSet;

pub use super::hash::HashValue;

use super::compact::CompactBytes;
use super::stream::Stream;
use super::zset::ZSet;

/// The hasher of every map in the store: fast, and seeded per process so clients cannot
/// aim collisions.
pub type Hasher = foldhash::fast::RandomState;

/// The most elements a collection held and its longest element: Redis converts a
/// compact encoding (`listpack`) once either passes its limit and never back, so the
/// encoding depends on what the value held, not only on what it holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peaks {
    /// The most elements held at once.
    pub entries: usize,
    /// The longest element (a hash's field or value, a sorted set's member) added.
    pub longest: usize,
}

impl Peaks {
    /// Records an addition: `entries` held now, an element of `len` bytes.
    pub fn saw(&mut self, entries: usize, len: usize) {
        self.entries = self.entries.max(entries);
        self.longest = self.longest.max(len);
    }

    /// Whether Redis would still hold the value in its compact encoding under these
    /// limits, the value now being `now`.
    pub fn within(&self, now: Peaks, max_entries: usize, max_len: usize) -> bool {
        self.entries.max(now.entries) <= max_entries && self.longest.max(now.longest) <= max_len
    }
}

/// Set members, and what decides Redis's encoding of them: Redis turns an `intset` into
/// a `hashtable` when a member that is not an integer is added or the set outgrows
/// `set-max-intset-entries`, and never back, so the encoding depends on what the set
/// held, not only on what it holds. Reads and removals go through the members
/// (`Deref`); additions through [`SetValue::insert`] or `collect`.
#[derive(Debug, Clone, Default)]
pub struct SetValue {
    members: IndexSet<CompactBytes, Hasher>,
    /// A member that is not an integer was added once.
    had_text: bool,
    /// The most members it held (`Peaks::longest` is unused: an intset has no length
    /// limit of its members).
    peaks: Peaks,
}

impl SetValue {
    /// An empty set with room for `capacity` members.
    pub fn with_capacity(capacity: usize) -> SetValue {
        SetValue {
            members: IndexSet::with_capacity_and_hasher(capacity, Hasher::default()),
            ..SetValue::default()
        }
    }

    /// Adds `member`; true when it was not there.
    pub fn insert(&mut self, member: CompactBytes) -> bool {
        // Parsed only while the set may still be an intset: once it held text, its
        // encoding is settled and an addition costs no parse.
        let text = !self.had_text && canonical_int(&member).is_none();
        let added = self.members.insert(member);
        if added {
            self.had_text |= text;
            self.peaks.saw(self.members.len(), 0);
        }
        added
    }

    /// Whether Redis would still hold it as an `intset` under a limit of `max_entries`:
    /// integers only, now and always, never more than the limit.
    pub fn is_intset(&self, max_entries: usize) -> bool {
        // The current members are looked at too: an addition through the members'
        // own methods (`DerefMut`) would pass `insert` by.
        !self.had_text
            && self.peaks.entries.max(self.members.len()) <= max_entries
            && self.members.iter().all(|m| canonical_int(m).is_some())
    }
}

impl std::ops::Deref for SetValue {
    type Target = IndexSet<CompactBytes, Hasher>;

    fn deref(&self) -> &Self::Target {
        &self.members
    }
}

impl std::ops::DerefMut for SetValue {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.members
    }
}

impl FromIterator<CompactBytes> for SetValue {
    fn from_iter<I: IntoIterator<Item = CompactBytes>>(members: I) -> SetValue {
        let mut set = SetValue::default();
        for member in members {
            set.insert(member);
        }
        set
    }
}

impl Extend<CompactBytes> for SetValue {
    fn extend<I: IntoIterator<Item = CompactBytes>>(&mut self, members: I) {
        for member in members {
            self.insert(member);
        }
    }
}

impl IntoIterator for SetValue {
    type Item = CompactBytes;
    type IntoIter = indexmap::set::IntoIter<CompactBytes>;

    fn into_iter(self) -> Self::IntoIter {
        self.members.into_iter()
    }
}

impl<'a> IntoIterator for &'a SetValue {
    type Item = &'a CompactBytes;
    type IntoIter = indexmap::set::Iter<'a, CompactBytes>;

    fn into_iter(self) -> Self::IntoIter {
        self.members.iter()
    }
}
/// List elements, head first.
pub type ListValue = VecDeque<CompactBytes>;

/// A stored value.
#[derive(Debug, Clone)]
pub enum Value {
    /// A string whose text is the canonical decimal form of this integer.
    Int(i64),
    /// Any other string.
    Str(CompactBytes),
    /// A list.
    List(Box<ListValue>),
    /// A hash.
    Hash(Box<HashValue>),
    /// A set.
    Set(Box<SetValue>),
    /// A sorted set.
    ZSet(Box<ZSet>),
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

    #[test]
    fn small_entries() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }
}
