//! Reading one RDB value (type byte and body) into a [`Value`], as Redis 7.0's
//! `rdbLoadObjectType` and `rdbLoadObject` do for strings, lists, hashes, sets and
//! sorted sets.
//!
//! Redis refuses what it cannot hold sensibly, and so does this: empty collections,
//! duplicate set members, hash fields or sorted-set members, NaN scores, and unknown
//! quicklist node kinds. Streams and module values (which this server does not store)
//! are refused as malformed data too.

use super::listpack::{self, Elem};
use super::reader::{parse_double, Reader};
use super::types::*;
use super::{intset, ziplist, zipmap, Corrupt};
use crate::store::hash::PACKED_MAX_ENTRIES;
use crate::store::{CompactBytes, HashValue, ListValue, SetValue, Value, ZSet};

/// An empty collection: refused in a DUMP payload, skipped in a file (Redis 7.0 once
/// wrote such keys, see its #8453).
pub const EMPTY: Corrupt = Corrupt("empty keys are not allowed");

/// Quicklist node kinds (`QUICKLIST_NODE_CONTAINER_*`).
const NODE_PLAIN: u64 = 1;
const NODE_PACKED: u64 = 2;

/// Reads a type byte and the value that follows.
pub fn value(r: &mut Reader<'_>) -> Result<Value, Corrupt> {
    let kind = r.byte()?;
    body(r, kind)
}

/// Reads the body of a value of RDB type `kind`.
pub fn body(r: &mut Reader<'_>, kind: u8) -> Result<Value, Corrupt> {
    match kind {
        STRING => Ok(Value::string(&r.string()?)),
        LIST => {
            let n = r.count()?;
            let mut list = ListValue::new();
            for _ in 0..n {
                list.push_back(&r.string()?);
            }
            non_empty_list(list)
        }
        LIST_ZIPLIST => {
            let blob = r.string()?;
            let mut list = ListValue::new();
            push_elems(
                &mut list,
                ziplist::entries(&blob).map_err(|_| integrity(kind))?,
            );
            non_empty_list(list)
        }
        LIST_QUICKLIST | LIST_QUICKLIST_2 => quicklist(r, kind),
        SET => {
            let n = r.count()?;
            let mut set = SetValue::with_capacity(capacity(n, r));
            for _ in 0..n {
                if !set.insert(&r.string()?) {
                    return Err(Corrupt("duplicate set members"));
                }
            }
            non_empty(set.len(), Value::Set(set))
        }
        SET_INTSET => {
            let blob = r.string()?;
            let ints = intset::members(&blob).map_err(|_| integrity(kind))?;
            let set = SetValue::from_ints(ints).ok_or_else(|| integrity(kind))?;
            non_empty(set.len(), Value::Set(set))
        }
        HASH => {
            let n = r.count()?;
            let hash = if n > PACKED_MAX_ENTRIES as u64 {
                // Too many to pack: a map from the start, filled as read.
                let mut hash = HashValue::with_capacity(capacity(n, r));
                for _ in 0..n {
                    let field = r.string()?;
                    if !hash.insert(&field, &r.string()?) {
                        return Err(Corrupt("duplicate hash fields"));
                    }
                }
                hash
            } else {
                let mut read = Vec::with_capacity(capacity(n, r));
                for _ in 0..n {
                    read.push((
                        CompactBytes::new(&r.string()?),
                        CompactBytes::new(&r.string()?),
                    ));
                }
                let pairs: Vec<(&[u8], &[u8])> =
                    read.iter().map(|(f, v)| (&f[..], &v[..])).collect();
                HashValue::from_pairs(&pairs).ok_or(Corrupt("duplicate hash fields"))?
            };
            non_empty(hash.len(), Value::Hash(hash))
        }
        HASH_ZIPMAP => {
            let blob = r.string()?;
            let pairs = zipmap::pairs(&blob)?;
            let hash =
                HashValue::from_pairs(&pairs).ok_or(Corrupt("Hash zipmap with dup elements"))?;
            Ok(Value::Hash(hash))
        }
        HASH_ZIPLIST | HASH_LISTPACK => {
            let blob = r.string()?;
            let hash = compact_hash(&blob, kind == HASH_ZIPLIST).map_err(|_| integrity(kind))?;
            non_empty(hash.len(), Value::Hash(hash))
        }
        ZSET | ZSET_2 => {
            let n = r.count()?;
            // Grown as read: the count is the file's word, not a size to trust.
            let mut members = Vec::new();
            for _ in 0..n {
                let member = CompactBytes::new(&r.string()?);
                let score = if kind == ZSET_2 {
                    r.binary_double()?
                } else {
                    r.text_double()?
                };
                members.push(checked_member(member, score)?);
            }
            let zset = zset_of(members)?;
            non_empty(zset.len(), Value::ZSet(zset))
        }
        ZSET_ZIPLIST | ZSET_LISTPACK => {
            let blob = r.string()?;
            let zset = compact_zset(&blob, kind == ZSET_ZIPLIST).map_err(|_| integrity(kind))?;
            non_empty(zset.len(), Value::ZSet(zset))
        }
        STREAM_LISTPACKS | STREAM_LISTPACKS_2 => super::stream::decode(r, kind),
        _ => Err(Corrupt("unsupported object type")),
    }
}

/// A list of quicklist nodes: ziplists (`LIST_QUICKLIST`), or listpacks and plain
/// elements (`LIST_QUICKLIST_2`). Empty nodes are skipped, as Redis does.
fn quicklist(r: &mut Reader<'_>, kind: u8) -> Result<Value, Corrupt> {
    let nodes = r.count()?;
    let mut list = ListValue::new();
    for _ in 0..nodes {
        let container = if kind == LIST_QUICKLIST_2 {
            r.count()?
        } else {
            NODE_PACKED
        };
        if container != NODE_PLAIN && container != NODE_PACKED {
            return Err(Corrupt("Quicklist integrity check failed."));
        }
        let blob = r.string()?;
        if blob.is_empty() {
            return Err(Corrupt("empty quicklist node"));
        }
        if container == NODE_PLAIN {
            list.push_back(&blob);
            continue;
        }
        let zip = kind == LIST_QUICKLIST;
        let node = compact_entries(&blob, zip).map_err(|_| {
            Corrupt(if zip {
                "Ziplist integrity check failed."
            } else {
                "Listpack integrity check failed."
            })
        })?;
        push_elems(&mut list, node);
    }
    non_empty_list(list)
}

/// Redis's report of a compact encoding of type `kind` that fails validation (bad
/// structure, an odd count of pair entries, a duplicate), as `rdbLoadObject` words it.
fn integrity(kind: u8) -> Corrupt {
    Corrupt(match kind {
        LIST_ZIPLIST => "List ziplist integrity check failed.",
        SET_INTSET => "Intset integrity check failed.",
        HASH_ZIPLIST => "Hash ziplist integrity check failed.",
        HASH_LISTPACK => "Hash listpack integrity check failed.",
        ZSET_ZIPLIST => "Zset ziplist integrity check failed.",
        _ => "Zset listpack integrity check failed.",
    })
}

/// A hash from the field/value entries of a ziplist or listpack blob.
fn compact_hash(blob: &[u8], zip: bool) -> Result<HashValue, Corrupt> {
    let items = compact_entries(blob, zip)?;
    let read: Vec<(CompactBytes, CompactBytes)> = pairs(&items)?
        .map(|pair| (compact(pair[0]), compact(pair[1])))
        .collect();
    let pairs: Vec<(&[u8], &[u8])> = read.iter().map(|(f, v)| (&f[..], &v[..])).collect();
    let mut hash = HashValue::from_pairs(&pairs).ok_or(Corrupt("duplicate hash fields"))?;
    hash.loaded_as_listpack();
    Ok(hash)
}

/// A sorted set from the member/score entries of a ziplist or listpack blob.
fn compact_zset(blob: &[u8], zip: bool) -> Result<ZSet, Corrupt> {
    let items = compact_entries(blob, zip)?;
    let mut members = Vec::with_capacity(items.len() / 2);
    for pair in pairs(&items)? {
        let score = match pair[1] {
            Elem::Int(n) => n as f64,
            // `zzlStrtod`: at most 127 bytes, and text that is no number reads as 0.
            Elem::Str(s) => parse_double(&s[..s.len().min(127)]).unwrap_or(0.0),
        };
        members.push(checked_member(compact(pair[0]), score)?);
    }
    let mut zset = zset_of(members)?;
    zset.loaded_as_listpack();
    Ok(zset)
}

/// The entries of a ziplist or listpack blob.
fn compact_entries(blob: &[u8], zip: bool) -> Result<Vec<Elem<'_>>, Corrupt> {
    if zip {
        ziplist::entries(blob)
    } else {
        listpack::entries(blob)
    }
}

/// Entries taken two by two; an odd count is corrupt.
fn pairs<'e, 'b>(items: &'e [Elem<'b>]) -> Result<std::slice::ChunksExact<'e, Elem<'b>>, Corrupt> {
    if items.len() % 2 != 0 {
        return Err(Corrupt("odd number of entries in a pairs encoding"));
    }
    Ok(items.chunks_exact(2))
}

fn checked_member(member: CompactBytes, score: f64) -> Result<(CompactBytes, f64), Corrupt> {
    if score.is_nan() {
        return Err(Corrupt("zset with NaN score"));
    }
    Ok((member, score))
}

fn zset_of(members: Vec<(CompactBytes, f64)>) -> Result<ZSet, Corrupt> {
    ZSet::from_members(members).ok_or(Corrupt("duplicate zset members"))
}

fn compact(elem: Elem<'_>) -> CompactBytes {
    match elem {
        Elem::Int(n) => CompactBytes::new(itoa::Buffer::new().format(n).as_bytes()),
        Elem::Str(s) => CompactBytes::new(s),
    }
}

/// Appends a node's entries to `list`, room for all of them made at once.
fn push_elems(list: &mut ListValue, node: Vec<Elem<'_>>) {
    let mut digits = itoa::Buffer::new();
    let bytes = node
        .iter()
        .map(|e| match e {
            Elem::Int(n) => ListValue::packed_len(digits.format(*n).as_bytes()),
            Elem::Str(s) => ListValue::packed_len(s),
        })
        .sum();
    list.reserve(bytes, false);
    for elem in node {
        match elem {
            Elem::Int(n) => list.push_back(digits.format(n).as_bytes()),
            Elem::Str(s) => list.push_back(s),
        }
    }
}

/// Most elements reserved up front; a collection grows past this as it is read.
const MAX_RESERVE: usize = 1 << 16;

/// A collection's initial capacity: what the count says, but no more than the bytes
/// left could hold (each element takes at least one) nor [`MAX_RESERVE`], so a lying
/// count costs no memory.
fn capacity(count: u64, r: &Reader<'_>) -> usize {
    usize::try_from(count)
        .unwrap_or(usize::MAX)
        .min(r.remaining())
        .min(MAX_RESERVE)
}

fn non_empty_list(list: ListValue) -> Result<Value, Corrupt> {
    non_empty(list.len(), Value::List(Box::new(list)))
}

fn non_empty(len: usize, value: Value) -> Result<Value, Corrupt> {
    if len == 0 {
        Err(EMPTY)
    } else {
        Ok(value)
    }
}
