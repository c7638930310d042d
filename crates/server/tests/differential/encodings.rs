//! Sequences that ask OBJECT ENCODING after the collection commands, under small
//! packing limits drawn per sequence, so that conversions (listpack to hashtable or
//! skiplist, intset to hashtable) happen within a few commands: when a write converts,
//! what a STORE command's result is encoded as, that nothing converts back, and that
//! a limit changed midway converts nothing until the next addition.

use super::{normalise, show, Gen, KEYS};
use redline_resp::Frame;

/// The limits Redis 7.0 packs hashes, sorted sets and sets of integers under.
const LIMITS: &[&str] = &[
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "set-max-intset-entries",
];

impl Gen {
    /// CONFIG SET of every packing limit to a small value (0 included: nothing packs).
    pub(super) fn small_limits(&mut self) -> Vec<Vec<u8>> {
        self.config_set(LIMITS, Gen::limit)
    }

    fn limit(&mut self, _name: &str) -> Vec<u8> {
        self.pick(&[b"0", b"1", b"2", b"3", b"4", b"8", b"128"])
    }

    /// A collection command (lists, hashes, sets, sorted sets, their algebra and STORE
    /// forms), OBJECT ENCODING of a key, or DEBUG RELOAD (the servers need
    /// `enable-debug-command`).
    pub(super) fn encoding_command(&mut self) -> Vec<Vec<u8>> {
        // Saved and loaded again: Redis picks each encoding afresh from the size.
        if self.chance(3) {
            return vec![b"DEBUG".to_vec(), b"RELOAD".to_vec()];
        }
        // One limit changed under collections already written: Redis keeps their
        // encodings until an addition weighs the new limit.
        if self.chance(4) {
            return self.config_set_one(LIMITS, Gen::limit);
        }
        match self.rng.usize(..10) {
            0..=2 => vec![b"OBJECT".to_vec(), b"ENCODING".to_vec(), self.pick(KEYS)],
            3..=5 => self.collection_command(),
            6 | 7 => self.zset_command(),
            _ => self.more_command(),
        }
    }
}

/// OBJECT ENCODING's reply as it is; any other as [`normalise`] has it, with every
/// array, set and map's elements (at any depth) sorted: a converted collection answers
/// in hash-table order, which is not what this compares. A page of a hash table's scan
/// (its cursor, which buckets it covered) depends on the table's hash seed: only its
/// being a page is compared.
pub(super) fn unordered(command: &[Vec<u8>], reply: Frame) -> String {
    let name = &command[0];
    if name.eq_ignore_ascii_case(b"object") {
        return show(&reply);
    }
    let scan = [&b"hscan"[..], b"sscan", b"zscan"]
        .iter()
        .any(|s| name.eq_ignore_ascii_case(s));
    match &reply {
        Frame::Array(_) if scan => "a page".into(),
        Frame::Array(_) | Frame::Set(_) | Frame::Map(_) => sorted(&reply),
        _ => normalise(command, reply),
    }
}

pub(super) fn sorted(frame: &Frame) -> String {
    let mut items: Vec<String> = match frame {
        Frame::Array(items) | Frame::Set(items) => items.iter().map(sorted).collect(),
        Frame::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| format!("{} => {}", sorted(k), sorted(v)))
            .collect(),
        other => return show(other),
    };
    items.sort();
    format!("[{}]", items.join(", "))
}
