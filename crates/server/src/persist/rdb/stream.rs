//! Streams in Redis's RDB format: `RDB_TYPE_STREAM_LISTPACKS_2` (type 19, what Redis 7.0
//! writes) and, on load, the 5.0–6.2 `RDB_TYPE_STREAM_LISTPACKS` (type 15).
//!
//! Each node is a listpack keyed by its 128-bit big-endian master id: a master entry
//! (live count, deleted count, master field names, terminator 0) followed by entries of
//! `flags, ms-diff, seq-diff, [num-fields, field, value... | values...], lp-count`.
//! Then the stream's metadata and its consumer groups with their PELs and consumers.

use std::borrow::Cow;

use bytes::Bytes;

use super::encode::{len, string};
use super::listpack::{self, Elem, Writer};
use super::reader::Reader;
use super::types::STREAM_LISTPACKS_2;
use super::Corrupt;
use crate::store::stream::{
    Consumer, ConsumerName, Group, Nack, NodeBuilder, NodeImage, Stream, StreamId,
};
use crate::store::Value;

const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;

fn id_from(raw: &[u8]) -> Result<StreamId, Corrupt> {
    let bad = Corrupt("stream id of the wrong size");
    let ms: [u8; 8] = raw.get(..8).and_then(|s| s.try_into().ok()).ok_or(bad)?;
    let seq: [u8; 8] = raw.get(8..16).and_then(|s| s.try_into().ok()).ok_or(bad)?;
    if raw.len() != 16 {
        return Err(bad);
    }
    Ok(StreamId::new(
        u64::from_be_bytes(ms),
        u64::from_be_bytes(seq),
    ))
}

/// Writes `stream` (type byte included) as Redis 7.0 does.
pub fn encode(out: &mut Vec<u8>, stream: &Stream) {
    out.push(STREAM_LISTPACKS_2);
    len(out, stream.node_count() as u64);
    for node in stream.node_images() {
        let live = node.live();
        let NodeImage {
            master,
            names,
            entries,
        } = node;
        let mut lp = Writer::new();
        lp.push_int(live as i64);
        lp.push_int((entries.len() - live) as i64);
        lp.push_int(names.len() as i64);
        for name in &names {
            lp.push(name);
        }
        lp.push_int(0);
        for &(id, deleted, fields) in &entries {
            let same = fields.len() / 2 == names.len()
                && fields.iter().step_by(2).zip(&names).all(|(a, b)| a == *b);
            let flags = if same { FLAG_SAMEFIELDS } else { 0 };
            lp.push_int(if deleted { flags | FLAG_DELETED } else { flags });
            lp.push_int(id.ms.wrapping_sub(master.ms) as i64);
            lp.push_int(id.seq.wrapping_sub(master.seq) as i64);
            let pairs = fields.len() / 2;
            if same {
                for value in fields.iter().skip(1).step_by(2) {
                    lp.push(value);
                }
                lp.push_int(pairs as i64 + 3);
            } else {
                lp.push_int(pairs as i64);
                for f in fields.iter() {
                    lp.push(f);
                }
                lp.push_int(2 * pairs as i64 + 4);
            }
        }
        string(out, &master.to_be_bytes());
        string(out, &lp.finish());
    }
    len(out, stream.len() as u64);
    len(out, stream.last_id.ms);
    len(out, stream.last_id.seq);
    let first = stream.first_id();
    len(out, first.ms);
    len(out, first.seq);
    len(out, stream.max_deleted_id.ms);
    len(out, stream.max_deleted_id.seq);
    len(out, stream.entries_added);
    len(out, stream.groups.len() as u64);
    for (name, group) in &stream.groups {
        string(out, name);
        len(out, group.last_id.ms);
        len(out, group.last_id.seq);
        len(out, group.entries_read as u64);
        len(out, group.pel.len() as u64);
        for (id, nack) in &group.pel {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&nack.delivery_time.to_le_bytes());
            len(out, nack.delivery_count);
        }
        len(out, group.consumers.len() as u64);
        for (cname, consumer) in &group.consumers {
            string(out, cname);
            out.extend_from_slice(&consumer.seen_time.to_le_bytes());
            len(out, consumer.pel.len() as u64);
            for id in &consumer.pel {
                out.extend_from_slice(&id.to_be_bytes());
            }
        }
    }
}

fn int_of(elem: Option<&Elem<'_>>) -> Result<i64, Corrupt> {
    match elem {
        Some(Elem::Int(n)) => Ok(*n),
        Some(Elem::Str(s)) => std::str::from_utf8(s)
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or(Corrupt("stream listpack integer")),
        None => Err(Corrupt("stream listpack truncated")),
    }
}

/// An element's bytes, borrowed from the listpack when it is a string: an entry's
/// fields are copied once, into their packed form.
fn bytes_of<'a>(elem: Option<&Elem<'a>>) -> Result<Cow<'a, [u8]>, Corrupt> {
    match elem {
        Some(Elem::Str(s)) => Ok(Cow::Borrowed(*s)),
        Some(e @ Elem::Int(_)) => Ok(Cow::Owned(e.to_bytes())),
        None => Err(Corrupt("stream listpack truncated")),
    }
}

/// The entries of one node listpack, deleted ones flagged, packed. When `deep`, as
/// Redis's deep check, the header's live and deleted counts must add up to the entries
/// there are, each entry's closing element count must match its own size, and the
/// listpack's own back-lengths and count must hold (none of them is used here).
fn node_entries(master: StreamId, lp: &[u8], deep: bool) -> Result<NodeBuilder, Corrupt> {
    let elems = listpack::entries_checked(lp, deep)?;
    let mut it = elems.iter();
    let count = int_of(it.next())?;
    let deleted = int_of(it.next())?;
    let mut expected = count
        .checked_add(deleted)
        .ok_or(Corrupt("stream node entry count"))?;
    let master_count = usize::try_from(int_of(it.next())?).map_err(|_| Corrupt("field count"))?;
    if master_count > elems.len() {
        return Err(Corrupt("field count"));
    }
    let mut names = Vec::with_capacity(master_count);
    for _ in 0..master_count {
        names.push(bytes_of(it.next())?);
    }
    if int_of(it.next())? != 0 {
        return Err(Corrupt("master entry terminator"));
    }
    let mut entries = NodeBuilder::with_master_names(names.iter().map(|n| &n[..]));
    let mut fields = Vec::new();
    while let Some(flags) = it.next() {
        expected = expected.saturating_sub(1);
        if deep && expected < 0 {
            return Err(Corrupt("stream node entry count"));
        }
        let flags = int_of(Some(flags))?;
        let ms = master.ms.wrapping_add(int_of(it.next())? as u64);
        let seq = master.seq.wrapping_add(int_of(it.next())? as u64);
        fields.clear();
        // The elements an entry spans, its closing count included: flags, two id
        // deltas and the count, plus the values (and a field count and the names).
        let span = if flags & FLAG_SAMEFIELDS != 0 {
            for name in &names {
                fields.push(name.clone());
                fields.push(bytes_of(it.next())?);
            }
            names.len() + 3
        } else {
            let n = usize::try_from(int_of(it.next())?).map_err(|_| Corrupt("field count"))?;
            if n > elems.len() {
                return Err(Corrupt("field count"));
            }
            for _ in 0..n {
                fields.push(bytes_of(it.next())?);
                fields.push(bytes_of(it.next())?);
            }
            2 * n + 4
        };
        if usize::try_from(int_of(it.next())?).ok() != Some(span) && deep {
            return Err(Corrupt("stream entry element count"));
        }
        let id = StreamId::new(ms, seq);
        if entries.last().is_some_and(|last| last >= id) {
            return Err(Corrupt("stream ids out of order"));
        }
        entries.push(id, fields.iter().map(|f| &f[..]), flags & FLAG_DELETED != 0);
    }
    if deep && expected != 0 {
        return Err(Corrupt("stream node entry count"));
    }
    Ok(entries)
}

fn ms_time(r: &mut Reader<'_>) -> Result<u64, Corrupt> {
    let raw: [u8; 8] = r
        .take(8)?
        .try_into()
        .map_err(|_| Corrupt("millisecond time"))?;
    Ok(u64::from_le_bytes(raw))
}

/// Reads a stream body of RDB type `kind` (15 or 19).
pub fn decode(r: &mut Reader<'_>, kind: u8) -> Result<Value, Corrupt> {
    let mut stream = Stream::default();
    let nodes = r.count()?;
    let mut previous: Option<StreamId> = None;
    for _ in 0..nodes {
        let master = id_from(&r.string()?)?;
        let lp = r.string()?;
        // Redis words any fault inside a node's listpack this way.
        let entries = node_entries(master, &lp, r.deep())
            .map_err(|_| Corrupt("Stream listpack integrity check failed."))?;
        if let (Some(prev), Some(first)) = (previous, entries.first()) {
            if first <= prev {
                return Err(Corrupt("stream nodes out of order"));
            }
        }
        let Some(last) = entries.last() else {
            return Err(Corrupt("empty stream node"));
        };
        previous = Some(last);
        stream.load_node(entries);
    }
    let length = r.count()?;
    if length != stream.len() as u64 {
        return Err(Corrupt("stream length mismatch"));
    }
    stream.last_id = StreamId::new(r.count()?, r.count()?);
    if kind == STREAM_LISTPACKS_2 {
        let _first = StreamId::new(r.count()?, r.count()?);
        stream.max_deleted_id = StreamId::new(r.count()?, r.count()?);
        stream.entries_added = r.count()?;
    } else {
        stream.entries_added = length;
    }
    if stream
        .last_entry()
        .is_some_and(|(id, _)| id > stream.last_id)
    {
        return Err(Corrupt("stream last id below its entries"));
    }
    let groups = r.count()?;
    for _ in 0..groups {
        let name = Bytes::from(r.string()?.into_owned());
        let last_id = StreamId::new(r.count()?, r.count()?);
        let entries_read = if kind == STREAM_LISTPACKS_2 {
            r.count()? as i64
        } else {
            stream.estimate_distance(last_id)
        };
        let mut group = Group {
            last_id,
            entries_read,
            ..Group::default()
        };
        let pel = r.count()?;
        // Owners are set when their consumers are read: every entry must get exactly
        // one. Until then an entry holds this very allocation, told apart by address
        // (any name, "" included, may be a consumer's).
        let unowned = ConsumerName::from(&b"unowned"[..]);
        let is_unowned = |nack: &Nack| std::sync::Arc::ptr_eq(&nack.consumer, &unowned);
        for _ in 0..pel {
            let id = id_from(r.take(16)?)?;
            let delivery_time = ms_time(r)?;
            let delivery_count = r.count()?;
            let nack = Nack {
                delivery_time,
                delivery_count,
                consumer: unowned.clone(),
            };
            if group.pel.insert(id, nack).is_some() {
                return Err(Corrupt(
                    "Duplicated global PEL entry loading stream consumer group",
                ));
            }
        }
        let consumers = r.count()?;
        for _ in 0..consumers {
            let cname = ConsumerName::from(&r.string()?[..]);
            let seen_time = ms_time(r)?;
            let mut consumer = Consumer {
                seen_time,
                ..Consumer::default()
            };
            let owned = r.count()?;
            for _ in 0..owned {
                let id = id_from(r.take(16)?)?;
                let nack = group
                    .pel
                    .get_mut(&id)
                    .ok_or(Corrupt("consumer entry missing from the group PEL"))?;
                if !is_unowned(nack) || !consumer.pel.insert(id) {
                    return Err(Corrupt(
                        "Duplicated consumer PEL entry loading a stream consumer group",
                    ));
                }
                nack.consumer = cname.clone();
            }
            if group.consumers.insert(cname, consumer).is_some() {
                return Err(Corrupt("Duplicate stream consumer detected."));
            }
        }
        if group.pel.values().any(is_unowned) {
            return Err(Corrupt("group PEL entry without a consumer"));
        }
        if stream.groups.insert(name, group).is_some() {
            return Err(Corrupt("Duplicated consumer group name"));
        }
    }
    Ok(Value::Stream(Box::new(stream)))
}
