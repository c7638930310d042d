//! The stream value (Redis's `t_stream.c` data model): entries keyed by id, grouped in
//! nodes the way Redis groups them in listpacks (a node closes at
//! `stream-node-max-entries` entries or `stream-node-max-bytes` bytes), so approximate
//! trimming (`~`) removes exactly the whole nodes Redis would. Consumer groups keep
//! their pending entries list (PEL), consumers, last delivered id and the 7.0
//! `entries-read` counter, from which lag is computed as Redis 7.0 does.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use bytes::Bytes;

use crate::cstr::{c_string, string2ull};

/// A stream entry id, `ms-seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    /// Milliseconds part.
    pub ms: u64,
    /// Sequence part.
    pub seq: u64,
}

impl StreamId {
    /// The smallest id.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest id.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// An id from its parts.
    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// Whether this is `0-0`.
    pub fn is_zero(&self) -> bool {
        self.ms == 0 && self.seq == 0
    }

    /// The next id, `None` after the largest.
    pub fn incr(&self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(StreamId::new(self.ms + 1, 0))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous id, `None` before the smallest.
    pub fn decr(&self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(StreamId::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    /// Parses `ms[-seq]` as Redis's `streamGenericParseIDOrReply` does; a missing
    /// sequence is `missing_seq`. `None` when invalid. The text is a C string there: at
    /// most 127 bytes, read up to its first NUL, split at its first `-`.
    pub fn parse(text: &[u8], missing_seq: u64) -> Option<StreamId> {
        if text.len() > 127 {
            return None;
        }
        let text = c_string(text);
        let (ms, seq) = match text.iter().position(|&b| b == b'-') {
            Some(at) => (&text[..at], Some(&text[at + 1..])),
            None => (text, None),
        };
        let ms = string2ull(ms)?;
        let seq = match seq {
            Some(s) => string2ull(s)?,
            None => missing_seq,
        };
        Some(StreamId::new(ms, seq))
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// An entry's field/value pairs, flattened, in one allocation the entry owns.
pub type Fields = super::packed_element::PackedElements;

/// One node: the entries that share one of Redis's listpacks, counted as Redis counts
/// them (deleted entries still occupy the node until it empties).
#[derive(Debug, Clone, Default)]
struct Node {
    /// Entries ever appended here, deleted ones included.
    total: usize,
    /// Entries still live.
    live: usize,
    /// Approximate listpack bytes.
    bytes: usize,
}

/// A pending entry: delivered to a consumer and not acknowledged yet.
#[derive(Debug, Clone)]
pub struct Nack {
    /// Last delivery time, Unix ms.
    pub delivery_time: u64,
    /// Times delivered.
    pub delivery_count: u64,
    /// The consumer that owns it.
    pub consumer: Bytes,
}

/// A consumer of a group.
#[derive(Debug, Clone, Default)]
pub struct Consumer {
    /// Last time it was seen (read or claimed), Unix ms.
    pub seen_time: u64,
    /// Its pending ids.
    pub pel: BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Debug, Clone, Default)]
pub struct Group {
    /// Last id delivered to a consumer.
    pub last_id: StreamId,
    /// Logical count of entries read, `-1` when unknown (Redis's
    /// `SCG_INVALID_ENTRIES_READ`).
    pub entries_read: i64,
    /// Pending entries, by id.
    pub pel: BTreeMap<StreamId, Nack>,
    /// Consumers, by name.
    pub consumers: BTreeMap<Bytes, Consumer>,
}

impl Group {
    /// The stored name of consumer `name`, and whether it was created now (with
    /// `seen_time` set to `seen`). A new name is copied out of the request that
    /// carried it: kept as a view into it, the name (and every pending entry naming
    /// the consumer) would keep that request's whole read buffer allocated.
    pub fn consumer_named(&mut self, name: &[u8], seen: u64) -> (Bytes, bool) {
        if let Some((stored, _)) = self.consumers.get_key_value(name) {
            return (stored.clone(), false);
        }
        let stored = Bytes::copy_from_slice(name);
        self.consumers.insert(
            stored.clone(),
            Consumer {
                seen_time: seen,
                ..Consumer::default()
            },
        );
        (stored, true)
    }
}

/// The unknown `entries_read` marker.
pub const ENTRIES_READ_INVALID: i64 = -1;

/// A stream.
#[derive(Debug, Clone, Default)]
pub struct Stream {
    entries: BTreeMap<StreamId, Fields>,
    /// Node boundaries: the first id ever appended to each node.
    nodes: BTreeMap<StreamId, Node>,
    /// The largest id ever added.
    pub last_id: StreamId,
    /// The largest id ever deleted (XDEL, trimming).
    pub max_deleted_id: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// Consumer groups, by name.
    pub groups: BTreeMap<Bytes, Group>,
}

/// How a trim is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimStrategy {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Drop entries with smaller ids.
    MinId(StreamId),
}

/// Node size limits (`stream-node-max-entries`, `stream-node-max-bytes`; 0 = none).
#[derive(Debug, Clone, Copy)]
pub struct NodeLimits {
    /// Entries per node.
    pub max_entries: usize,
    /// Bytes per node.
    pub max_bytes: usize,
}

/// Approximate listpack bytes of one entry (each element with its small header).
fn entry_bytes(fields: &Fields) -> usize {
    fields.iter().map(|f| f.len() + 2).sum::<usize>() + 8
}

impl Stream {
    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is live.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The first live id, `0-0` when empty.
    pub fn first_id(&self) -> StreamId {
        self.entries.keys().next().copied().unwrap_or_default()
    }

    /// The first live entry.
    pub fn first_entry(&self) -> Option<(&StreamId, &Fields)> {
        self.entries.iter().next()
    }

    /// The last live entry.
    pub fn last_entry(&self) -> Option<(&StreamId, &Fields)> {
        self.entries.iter().next_back()
    }

    /// The live entry `id`.
    pub fn get(&self, id: &StreamId) -> Option<&Fields> {
        self.entries.get(id)
    }

    /// Number of nodes (XINFO STREAM FULL's `radix-tree-nodes` stand-in).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Entries in `[start, end]`, ascending.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl DoubleEndedIterator<Item = (&StreamId, &Fields)> {
        let bounds = if start <= end {
            Some((start, end))
        } else {
            None
        };
        bounds
            .into_iter()
            .flat_map(move |(s, e)| self.entries.range(s..=e))
    }

    /// Live entries grouped by node, in order (the RDB encoder writes one listpack each).
    pub fn nodes(&self) -> Vec<Vec<(StreamId, &Fields)>> {
        let starts: Vec<StreamId> = self.nodes.keys().copied().collect();
        let mut out = Vec::with_capacity(starts.len());
        for (i, start) in starts.iter().enumerate() {
            let items: Vec<(StreamId, &Fields)> = match starts.get(i + 1).and_then(|n| n.decr()) {
                Some(end) if end >= *start => self
                    .entries
                    .range(*start..=end)
                    .map(|(k, v)| (*k, v))
                    .collect(),
                Some(_) => Vec::new(),
                None => self.entries.range(*start..).map(|(k, v)| (*k, v)).collect(),
            };
            if !items.is_empty() {
                out.push(items);
            }
        }
        out
    }

    /// Adds a loaded node of entries (RDB), keeping its boundary.
    pub fn load_node(&mut self, items: Vec<(StreamId, Fields)>) {
        let Some(first) = items.first().map(|(id, _)| *id) else {
            return;
        };
        let mut node = Node::default();
        for (id, fields) in items {
            node.total += 1;
            node.live += 1;
            node.bytes += entry_bytes(&fields);
            self.entries.insert(id, fields);
        }
        self.nodes.insert(first, node);
    }

    /// Appends an entry whose id is larger than `last_id` (checked by the caller).
    pub fn append(&mut self, id: StreamId, fields: Fields, limits: NodeLimits) {
        let size = entry_bytes(&fields);
        let open_new = match self.nodes.iter_mut().next_back() {
            None => true,
            Some((_, node)) => {
                (limits.max_entries > 0 && node.total >= limits.max_entries)
                    || (limits.max_bytes > 0 && node.bytes + size >= limits.max_bytes)
            }
        };
        if open_new {
            self.nodes.insert(id, Node::default());
        }
        if let Some((_, node)) = self.nodes.iter_mut().next_back() {
            node.total += 1;
            node.live += 1;
            node.bytes += size;
        }
        self.entries.insert(id, fields);
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Removes one live entry (XDEL and exact trimming; only XDEL moves
    /// `max_deleted_id`, as in Redis); a node whose entries are all gone goes too.
    pub fn delete(&mut self, id: &StreamId) -> bool {
        if self.entries.remove(id).is_none() {
            return false;
        }
        let node_key = self.nodes.range(..=*id).next_back().map(|(k, _)| *k);
        if let Some(key) = node_key {
            if let Some(node) = self.nodes.get_mut(&key) {
                node.live = node.live.saturating_sub(1);
                if node.live == 0 {
                    self.nodes.remove(&key);
                }
            }
        }
        true
    }

    /// Trims as Redis's `streamTrim`: whole nodes first; with `approx` stops at the
    /// first node it could only partly remove; `limit` (0 = none) caps the entries
    /// removed in approximate mode. Returns how many entries went.
    pub fn trim(&mut self, strategy: TrimStrategy, approx: bool, limit: usize) -> usize {
        let mut deleted = 0usize;
        while let Some((&node_start, node)) = self.nodes.iter().next() {
            let node_live = node.live;
            if let TrimStrategy::MaxLen(max) = strategy {
                if self.entries.len() as u64 <= max {
                    break;
                }
            }
            if limit > 0 && deleted + node_live > limit {
                break;
            }
            let node_end = self
                .nodes
                .range(node_start..)
                .nth(1)
                .map(|(k, _)| *k)
                .and_then(|k| k.decr());
            let ids: Vec<StreamId> = match node_end {
                Some(end) => self
                    .entries
                    .range(node_start..=end)
                    .map(|(k, _)| *k)
                    .collect(),
                None => self.entries.range(node_start..).map(|(k, _)| *k).collect(),
            };
            let whole = match strategy {
                TrimStrategy::MaxLen(max) => self.entries.len() as u64 - node_live as u64 >= max,
                TrimStrategy::MinId(min) => ids.last().is_some_and(|last| *last < min),
            };
            if whole {
                for id in &ids {
                    self.entries.remove(id);
                }
                self.nodes.remove(&node_start);
                deleted += node_live;
                continue;
            }
            if approx {
                break;
            }
            // Exact trimming deletes entries one by one inside the node.
            for id in ids {
                let stop = match strategy {
                    TrimStrategy::MaxLen(max) => self.entries.len() as u64 <= max,
                    TrimStrategy::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                self.delete(&id);
                deleted += 1;
            }
            break;
        }
        deleted
    }

    /// Whether `[start, end]` may hold a deleted entry (Redis's
    /// `streamRangeHasTombstones`).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.entries.is_empty() || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id() > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// The logical position of `id` from the first entry ever added, when knowable
    /// (Redis's `streamEstimateDistanceFromFirstEverEntry`).
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return 0;
        }
        if self.entries.is_empty() && id <= self.last_id {
            return added;
        }
        if id == self.last_id {
            return added;
        }
        if id > self.last_id {
            return ENTRIES_READ_INVALID;
        }
        let first = self.first_id();
        if self.max_deleted_id.is_zero() || self.max_deleted_id < first {
            let len = self.entries.len() as i64;
            if id < first {
                return added - len;
            }
            if id == first {
                return added - len + 1;
            }
        }
        ENTRIES_READ_INVALID
    }

    /// A group's lag, `None` when unknown (Redis's `streamReplyWithCGLag`).
    pub fn group_lag(&self, group: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let added = self.entries_added as i64;
        if group.entries_read != ENTRIES_READ_INVALID
            && !self.range_has_tombstones(group.last_id, StreamId::MAX)
        {
            return Some(added - group.entries_read);
        }
        let read = self.estimate_distance(group.last_id);
        (read != ENTRIES_READ_INVALID).then_some(added - read)
    }

    /// Moves a group past `id` after delivering it, keeping `entries_read` as Redis does.
    pub fn advance_group(&mut self, name: &[u8], id: StreamId) {
        let estimate = self.estimate_distance(id);
        let tombstones = self.range_has_tombstones(id, StreamId::MAX);
        let added = self.entries_added;
        if let Some(group) = self.groups.get_mut(name) {
            if id > group.last_id {
                if group.entries_read != ENTRIES_READ_INVALID && !tombstones {
                    group.entries_read += 1;
                } else if added > 0 {
                    group.entries_read = estimate;
                }
                group.last_id = id;
            }
        }
    }

    /// Approximate heap bytes (MEMORY USAGE).
    pub fn heap_size(&self) -> usize {
        let entries: usize = self
            .entries
            .values()
            .map(|f| f.heap_size() + std::mem::size_of::<(StreamId, Fields)>())
            .sum();
        let groups: usize = self
            .groups
            .iter()
            .map(|(name, g)| {
                name.len()
                    + 64
                    + g.pel.len() * 64
                    + g.consumers
                        .iter()
                        .map(|(n, c)| n.len() + 48 + c.pel.len() * 24)
                        .sum::<usize>()
            })
            .sum();
        entries + self.nodes.len() * 48 + groups + std::mem::size_of::<Stream>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> NodeLimits {
        NodeLimits {
            max_entries: 10,
            max_bytes: 0,
        }
    }

    fn filled(n: u64) -> Stream {
        let mut s = Stream::default();
        for i in 1..=n {
            s.append(
                StreamId::new(i, 0),
                Fields::new([&b"f"[..], b"v"]),
                limits(),
            );
        }
        s
    }

    #[test]
    fn ids_parse_and_step() {
        assert_eq!(StreamId::parse(b"1-2", 0), Some(StreamId::new(1, 2)));
        assert_eq!(StreamId::parse(b"5", 7), Some(StreamId::new(5, 7)));
        assert_eq!(StreamId::parse(b"-1", 0), None);
        assert_eq!(StreamId::parse(b"1-", 0), None);
        // As C's strtoull reads them (checked against redis-server's XADD).
        assert_eq!(StreamId::parse(b"+1-0", 0), Some(StreamId::new(1, 0)));
        assert_eq!(StreamId::parse(b" 2-0", 0), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::parse(b"03-0", 0), Some(StreamId::new(3, 0)));
        assert_eq!(StreamId::parse(b"4- 1", 0), Some(StreamId::new(4, 1)));
        assert_eq!(
            StreamId::parse(b"5--01", 0),
            Some(StreamId::new(5, u64::MAX))
        );
        assert_eq!(StreamId::parse(b"6-+2", 0), Some(StreamId::new(6, 2)));
        assert_eq!(StreamId::parse(b"7-1\0junk", 0), Some(StreamId::new(7, 1)));
        for bad in [
            &b"-1"[..],
            b"7-",
            b" ",
            b"8 ",
            b"9-1 ",
            b"1--1",
            b"18446744073709551616",
        ] {
            assert_eq!(
                StreamId::parse(bad, 0),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(StreamId::parse(&[b'1'; 128], 0), None);
        assert_eq!(StreamId::MAX.incr(), None);
        assert_eq!(StreamId::MIN.decr(), None);
        assert_eq!(StreamId::new(1, u64::MAX).incr(), Some(StreamId::new(2, 0)));
    }

    #[test]
    fn approximate_trim_removes_whole_nodes_only() {
        let mut s = filled(25);
        assert_eq!(s.trim(TrimStrategy::MaxLen(12), true, 0), 10);
        assert_eq!(s.len(), 15);
        assert_eq!(s.trim(TrimStrategy::MaxLen(12), false, 0), 3);
        assert_eq!(s.len(), 12);
        assert!(s.max_deleted_id.is_zero());
    }

    #[test]
    fn consumer_names_are_copied_once() {
        let request = Bytes::from_static(b"XREADGROUP GROUP g alice");
        let name = request.slice(19..);
        let mut group = Group::default();
        let (stored, created) = group.consumer_named(&name, 7);
        assert!(created);
        assert_eq!(stored, "alice");
        // Not a view into the request.
        assert_ne!(stored.as_ptr(), name.as_ptr());
        assert_eq!(group.consumers[&stored].seen_time, 7);
        let (again, created) = group.consumer_named(b"alice", 9);
        assert!(!created);
        assert_eq!(again.as_ptr(), stored.as_ptr());
        assert_eq!(group.consumers[&stored].seen_time, 7);
    }

    #[test]
    fn lag_follows_redis() {
        let mut s = filled(5);
        let group = Group {
            entries_read: ENTRIES_READ_INVALID,
            ..Group::default()
        };
        s.groups.insert(Bytes::from_static(b"g"), group);
        assert_eq!(s.group_lag(&s.groups[&b"g"[..]]), Some(5));
        s.advance_group(b"g", StreamId::new(1, 0));
        assert_eq!(s.groups[&b"g"[..]].entries_read, 1);
        s.delete(&StreamId::new(3, 0));
        s.max_deleted_id = StreamId::new(3, 0);
        assert_eq!(s.group_lag(&s.groups[&b"g"[..]]), None);
    }
}
