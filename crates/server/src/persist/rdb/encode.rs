//! Writing one value (type byte and body) as Redis 7.0's `rdbSaveObjectType` and
//! `rdbSaveObject` would, in the encoding Redis 7.0 would hold it in
//! ([`crate::store::encoding`]: its history and the configured limits):
//!
//! - strings: integer encoding when the text is a canonical 32-bit integer, LZF when
//!   longer than 20 bytes and that saves at least 4 bytes, raw otherwise;
//! - lists: `QUICKLIST_2` of listpack nodes of up to 8 KB (`list-max-listpack-size -2`);
//! - hashes: a listpack, otherwise field/value pairs;
//! - sets: an intset, otherwise the members;
//! - sorted sets: a listpack, otherwise `ZSET_2`.

use super::listpack::Writer;
use super::types::*;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{intset, lzf};
use crate::store::encoding::EncodingLimits;
use crate::store::{canonical_int, Value, ZSet};

/// `QUICKLIST_NODE_CONTAINER_PACKED`.
const NODE_PACKED: u64 = 2;

/// A list as the listpack nodes of a quicklist filled as `list-max-listpack-size`
/// (`fill`) fills them when the list is pushed, as it is saved (and as DEBUG OBJECT
/// describes it).
pub fn list_nodes(list: &crate::store::ListValue, fill: i64) -> Vec<Vec<u8>> {
    let mut nodes: Vec<Vec<u8>> = Vec::new();
    let mut node = Writer::new();
    for elem in list.iter() {
        if !node.is_empty()
            && !crate::store::encoding::list_node_takes(node.size(), node.len(), elem.len(), fill)
        {
            nodes.push(std::mem::take(&mut node).finish());
        }
        node.push(elem);
    }
    if !node.is_empty() {
        nodes.push(node.finish());
    }
    nodes
}

/// Appends `value`'s type byte and body to `out`, in the encoding `limits` give it.
pub fn value(out: &mut Vec<u8>, value: &Value, limits: &EncodingLimits) {
    let compact = limits.compact(value);
    match value {
        Value::Int(n) => {
            out.push(STRING);
            string(out, itoa::Buffer::new().format(*n).as_bytes());
        }
        Value::Str(s) => {
            out.push(STRING);
            string(out, s);
        }
        Value::List(list) => {
            out.push(LIST_QUICKLIST_2);
            let nodes = list_nodes(list, limits.list_fill);
            len(out, nodes.len() as u64);
            for node in nodes {
                len(out, NODE_PACKED);
                string(out, &node);
            }
        }
        Value::Hash(hash) if compact => {
            out.push(HASH_LISTPACK);
            let mut lp = Writer::new();
            for (f, v) in hash.iter() {
                lp.push(f);
                lp.push(v);
            }
            string(out, &lp.finish());
        }
        Value::Hash(hash) => {
            out.push(HASH);
            len(out, hash.len() as u64);
            for (f, v) in hash.iter() {
                string(out, f);
                string(out, v);
            }
        }
        Value::Set(set) => {
            // An intset holds integers only: what had text is never compact.
            let ints: Option<Vec<i64>> = compact
                .then(|| match set.ints() {
                    Some(ints) => Some(ints.iter().collect()),
                    None => set.iter().map(|m| canonical_int(&m)).collect(),
                })
                .flatten();
            match ints {
                Some(ints) => {
                    out.push(SET_INTSET);
                    string(out, &intset::build(ints));
                }
                None => {
                    out.push(SET);
                    len(out, set.len() as u64);
                    for m in set.iter() {
                        string(out, &m);
                    }
                }
            }
        }
        Value::ZSet(zset) => zset_value(out, zset, compact),
        Value::Stream(s) => super::stream::encode(out, s),
    }
}

fn zset_value(out: &mut Vec<u8>, zset: &ZSet, compact: bool) {
    if compact {
        out.push(ZSET_LISTPACK);
        let mut lp = Writer::new();
        for (member, score) in zset.iter() {
            lp.push(member);
            lp.push(score_text(score).as_bytes());
        }
        string(out, &lp.finish());
    } else {
        out.push(ZSET_2);
        len(out, zset.len() as u64);
        // Highest first, as Redis walks its skiplist from the tail.
        for (member, score) in zset.iter().rev() {
            string(out, member);
            out.extend_from_slice(&score.to_le_bytes());
        }
    }
}

/// A score as Redis's `zzlInsertAt` writes it into a listpack: an integer when
/// `double2ll` takes it (whole, within ±`LLONG_MAX/2`, -0 as 0), otherwise `%.17g`.
pub fn score_text(score: f64) -> String {
    const HALF: f64 = (i64::MAX / 2) as f64;
    if (-HALF..=HALF).contains(&score) && (score as i64) as f64 == score {
        return itoa::Buffer::new().format(score as i64).to_owned();
    }
    crate::cmd::float::fmt_g17(score)
}

/// An RDB length (`rdbSaveLen`): 1, 2, 5 or 9 bytes.
pub fn len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push((n & 0xFF) as u8);
    } else if let Ok(n) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// `rdbcompression`: strings longer than 20 bytes are LZF-compressed when it pays.
/// One setting for the process, as Redis's is for the server: every image and DUMP
/// payload written reads it.
static COMPRESSION: AtomicBool = AtomicBool::new(true);

/// Sets `rdbcompression` (CONFIG SET, the configuration at start).
pub fn set_compression(on: bool) {
    COMPRESSION.store(on, Ordering::Relaxed);
}

/// A string as `rdbSaveRawString` writes it: integer-encoded, LZF-compressed or raw.
pub fn string(out: &mut Vec<u8>, s: &[u8]) {
    let body = string_head(out, s);
    out.extend_from_slice(&body);
}

/// [`string`] in two parts: its encoding and lengths are appended to `out`, and the body
/// that follows them is returned (the string itself when raw, its LZF form, or nothing
/// when integer-encoded), so a large value can be written from where it is.
pub fn string_head<'a>(out: &mut Vec<u8>, s: &'a [u8]) -> Cow<'a, [u8]> {
    if s.len() <= 11 {
        if let Some(n) = canonical_int(s) {
            if let Ok(n) = i8::try_from(n) {
                out.push(0xC0);
                out.extend_from_slice(&n.to_le_bytes());
                return Cow::Borrowed(&[]);
            }
            if let Ok(n) = i16::try_from(n) {
                out.push(0xC1);
                out.extend_from_slice(&n.to_le_bytes());
                return Cow::Borrowed(&[]);
            }
            if let Ok(n) = i32::try_from(n) {
                out.push(0xC2);
                out.extend_from_slice(&n.to_le_bytes());
                return Cow::Borrowed(&[]);
            }
        }
    }
    if s.len() > 20 && COMPRESSION.load(Ordering::Relaxed) {
        if let Some(compressed) = lzf::compress(s, s.len() - 4) {
            out.push(0xC3);
            len(out, compressed.len() as u64);
            len(out, s.len() as u64);
            return Cow::Owned(compressed);
        }
    }
    len(out, s.len() as u64);
    Cow::Borrowed(s)
}
