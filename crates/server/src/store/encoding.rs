//! How Redis 7.0 would store a value: in its compact encoding (listpack, intset) or
//! not, from the value's history and the configured limits. OBJECT ENCODING names it,
//! and RDB files and DUMP payloads write the value in it, as Redis writes an object in
//! the encoding it has.

use super::Value;

/// The sizes up to which Redis 7.0 keeps a collection in its compact encoding
/// (`hash-max-listpack-*`, `set-max-intset-entries`, `zset-max-listpack-*`).
#[derive(Debug, Clone, Copy)]
pub struct EncodingLimits {
    /// `hash-max-listpack-entries`.
    pub hash_entries: usize,
    /// `hash-max-listpack-value`.
    pub hash_value: usize,
    /// `set-max-intset-entries`.
    pub set_entries: usize,
    /// `zset-max-listpack-entries`.
    pub zset_entries: usize,
    /// `zset-max-listpack-value`.
    pub zset_value: usize,
    /// `list-max-listpack-size`: a list node's most bytes (-1 to -5: 4 KB to 64 KB) or
    /// entries (positive, up to 8 KB).
    pub list_fill: i64,
}

/// Redis's defaults.
impl Default for EncodingLimits {
    fn default() -> Self {
        EncodingLimits {
            hash_entries: 512,
            hash_value: 64,
            set_entries: 512,
            zset_entries: 128,
            zset_value: 64,
            list_fill: -2,
        }
    }
}

impl EncodingLimits {
    /// The limits as configured now.
    pub fn now(hot: &crate::config::HotParams) -> EncodingLimits {
        let limit = |n: i64| usize::try_from(n).unwrap_or(0);
        EncodingLimits {
            hash_entries: limit(hot.hash_max_listpack_entries()),
            hash_value: limit(hot.hash_max_listpack_value()),
            set_entries: limit(hot.set_max_intset_entries()),
            zset_entries: limit(hot.zset_max_listpack_entries()),
            zset_value: limit(hot.zset_max_listpack_value()),
            list_fill: hot.list_max_listpack_size(),
        }
    }

    /// Whether a collection's encoding may read differently under `other` (see
    /// [`settle`]); the lists' fill names no encoding.
    pub fn differ_for_collections(&self, other: &EncodingLimits) -> bool {
        self.hash() != other.hash()
            || self.set_entries != other.set_entries
            || self.zset() != other.zset()
    }

    /// The hash limits: entries, then a field's or value's length.
    fn hash(&self) -> (usize, usize) {
        (self.hash_entries, self.hash_value)
    }

    /// The sorted-set limits: entries, then a member's length.
    fn zset(&self) -> (usize, usize) {
        (self.zset_entries, self.zset_value)
    }

    /// Whether a hash, set or sorted set is in its compact encoding (a listpack, an
    /// intset); false for the other types.
    pub fn compact(&self, value: &Value) -> bool {
        match value {
            Value::Hash(h) => h.is_listpack(self.hash_entries, self.hash_value),
            Value::Set(s) => s.is_intset(self.set_entries),
            Value::ZSet(z) => z.is_listpack(self.zset_entries, self.zset_value),
            _ => false,
        }
    }
}

/// Keeps the encoding Redis gave `value` under the limits `old`, which are becoming
/// `new` (CONFIG SET): Redis weighs a conversion only when a collection is written or
/// loaded, so a lower limit converts nothing until the next addition and a higher one
/// converts nothing back. Nothing to do for a type whose limits stay.
pub fn settle(value: &mut Value, old: &EncodingLimits, new: &EncodingLimits) {
    match value {
        Value::Hash(h) if old.hash() != new.hash() => {
            h.settle_encoding(old.hash_entries, old.hash_value);
        }
        Value::Set(s) if old.set_entries != new.set_entries => s.settle_encoding(old.set_entries),
        Value::ZSet(z) if old.zset() != new.zset() => {
            z.settle_encoding(old.zset_entries, old.zset_value);
        }
        _ => {}
    }
}

/// What a load (an RDB file, RESTORE) keeps of a `value` just read, under the limits in
/// force: Redis reads a sorted set saved as a skiplist into one and converts it to a
/// listpack when it fits, which drops the sign of its -0 scores.
pub fn settle_loaded(value: &mut Value, limits: &EncodingLimits) {
    if let Value::ZSet(z) = value {
        z.settle_zero_signs(limits.zset_entries, limits.zset_value);
    }
}

/// Whether a list node of `bytes` (its listpack's size) holding `count` entries takes
/// one more of `len` bytes under `fill` (Redis's `_quicklistNodeAllowInsert`, its fill
/// clamped to -5..=32767 as `quicklistSetFill` does).
pub fn list_node_takes(bytes: usize, count: usize, len: usize, fill: i64) -> bool {
    const LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
    const SAFETY_LIMIT: usize = 8192;
    const ENTRY_OVERHEAD: usize = 8;
    let fill = fill.clamp(-5, (1 << 15) - 1);
    let new_size = bytes + len + ENTRY_OVERHEAD;
    if fill < 0 {
        // `-fill - 1` is 0..=4 once clamped.
        return new_size <= LEVELS[usize::try_from(-fill - 1).unwrap_or(0)];
    }
    new_size <= SAFETY_LIMIT && i64::try_from(count).is_ok_and(|n| n < fill)
}

/// Redis 7.0's name for how a value is stored, from its type and size and the
/// configured limits of the compact encodings. Redis decides when a value is written (or
/// loaded) and never converts back; the collections keep what they held for it.
pub fn encoding_name(value: &Value, limits: &EncodingLimits) -> &'static str {
    let compact = limits.compact(value);
    match value {
        Value::Int(_) => "int",
        Value::Str(s) if s.len() <= 44 && !s.is_growable() => "embstr",
        Value::Str(_) => "raw",
        Value::List(_) => "quicklist",
        Value::Hash(_) if compact => "listpack",
        Value::Set(_) if compact => "intset",
        Value::ZSet(_) if compact => "listpack",
        Value::Hash(_) | Value::Set(_) => "hashtable",
        Value::ZSet(_) => "skiplist",
        Value::Stream(_) => "stream",
    }
}
