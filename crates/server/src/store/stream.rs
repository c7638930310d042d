//! The stream value (Redis's `t_stream.c` data model): entries packed in nodes
//! (`super::stream_node`) the way Redis packs them in listpacks (a node closes at
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

    /// The id as Redis keys its radix tree and writes it in RDB files: milliseconds,
    /// then sequence, both big-endian, so byte order is id order.
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut raw = [0u8; 16];
        raw[..8].copy_from_slice(&self.ms.to_be_bytes());
        raw[8..].copy_from_slice(&self.seq.to_be_bytes());
        raw
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

use super::stream_node::{Cursor, Located, Node};
pub use super::stream_node::{Entry, EntryIter};

/// A consumer's name as groups store it: shared by the group's map and every pending
/// entry the consumer owns (16 bytes in each, where a `Bytes` took 32: a pending entry
/// is a B-tree slot of its own).
pub type ConsumerName = std::sync::Arc<[u8]>;

/// A pending entry: delivered to a consumer and not acknowledged yet.
#[derive(Debug, Clone)]
pub struct Nack {
    /// Last delivery time, Unix ms.
    pub delivery_time: u64,
    /// Times delivered.
    pub delivery_count: u64,
    /// The consumer that owns it.
    pub consumer: ConsumerName,
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
    pub consumers: BTreeMap<ConsumerName, Consumer>,
}

impl Group {
    /// The stored name of consumer `name`, and whether it was created now (with
    /// `seen_time` set to `seen`; a creation counts one change, as Redis's
    /// `streamCreateConsumer` does). A new name is copied out of the request that
    /// carried it: kept as a view into it, the name (and every pending entry naming
    /// the consumer) would keep that request's whole read buffer allocated.
    pub fn consumer_named(&mut self, name: &[u8], seen: u64) -> (ConsumerName, bool) {
        if let Some((stored, _)) = self.consumers.get_key_value(name) {
            return (stored.clone(), false);
        }
        let stored = ConsumerName::from(name);
        super::dirty::mark();
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
    /// Entries in nodes, each keyed by the first id ever appended to it.
    nodes: BTreeMap<StreamId, Node>,
    /// Live entries.
    length: usize,
    /// The first live id, `0-0` when empty (lag estimates ask for it per entry read).
    first: StreamId,
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

impl NodeLimits {
    /// Whether an entry of `fields` opens a new node after `node`, as Redis's
    /// `streamAppendItem` decides: the node's listpack bytes plus the entry's raw text
    /// reach `stream-node-max-bytes` (0 or past 1 GB means 1 GB, a listpack's most), or
    /// the node holds `stream-node-max-entries`, deleted ones counted.
    fn full<'a>(&self, node: &Node, fields: impl Iterator<Item = &'a [u8]>) -> bool {
        const LISTPACK_MAX: usize = 1 << 30;
        let max_bytes = match self.max_bytes {
            0 => LISTPACK_MAX,
            n => n.min(LISTPACK_MAX),
        };
        let text: usize = fields.map(<[u8]>::len).sum();
        node.redis_bytes() + text >= max_bytes
            || (self.max_entries > 0 && node.total >= self.max_entries)
    }
}

/// The entries of one node as an RDB load finds them, deleted ones included (Redis
/// keeps them in the node until it empties, and they count towards its size), packed
/// as they arrive.
#[derive(Debug, Default)]
pub struct NodeBuilder {
    node: Option<(StreamId, Node)>,
    /// The master entry's names, until the first entry opens the node with them.
    names: Option<Node>,
    last: Option<StreamId>,
}

impl NodeBuilder {
    /// A node whose master entry names `names` (else the first entry's names).
    pub fn with_master_names<'a, I>(names: I) -> NodeBuilder
    where
        I: ExactSizeIterator<Item = &'a [u8]>,
    {
        NodeBuilder {
            names: Some(Node::with_names(names)),
            ..NodeBuilder::default()
        }
    }

    /// Adds the next entry, flagged `deleted` or live (ids must increase: the loader
    /// checks).
    pub fn push<'a, I>(&mut self, id: StreamId, fields: I, deleted: bool)
    where
        I: ExactSizeIterator<Item = &'a [u8]> + Clone,
    {
        let NodeBuilder { node, names, last } = self;
        let (master, node) = node.get_or_insert_with(|| {
            let opened = names.take().unwrap_or_else(|| Node::new(fields.clone()));
            (id, opened)
        });
        let at = node.push(*master, id, fields);
        if deleted {
            node.mark_deleted(at);
        }
        *last = Some(id);
    }

    /// The first id pushed.
    pub fn first(&self) -> Option<StreamId> {
        self.node.as_ref().map(|(master, _)| *master)
    }

    /// The last id pushed.
    pub fn last(&self) -> Option<StreamId> {
        self.last
    }
}

/// One node as [`Stream::node_images`] shows it.
pub struct NodeImage<'a> {
    /// The node's key, the id of the entry that opened it.
    pub master: StreamId,
    /// The master entry's field names.
    pub names: Vec<&'a [u8]>,
    /// Every entry in order: its id, whether it is deleted, its fields.
    pub entries: Vec<(StreamId, bool, Entry<'a>)>,
}

impl NodeImage<'_> {
    /// How many of its entries are live.
    pub fn live(&self) -> usize {
        self.entries
            .iter()
            .filter(|(_, deleted, _)| !deleted)
            .count()
    }
}

/// Live entries in `[start, end]` from either end.
pub struct Range<'a> {
    nodes: std::collections::btree_map::Range<'a, StreamId, Node>,
    front: Option<Cursor<'a>>,
    back: Option<Cursor<'a>>,
    start: StreamId,
    end: StreamId,
    done: bool,
}

impl<'a> Range<'a> {
    fn empty(nodes: std::collections::btree_map::Range<'a, StreamId, Node>) -> Range<'a> {
        Range {
            nodes,
            front: None,
            back: None,
            start: StreamId::MAX,
            end: StreamId::MIN,
            done: true,
        }
    }

    fn finish(&mut self) {
        self.done = true;
        self.front = None;
        self.back = None;
    }
}

impl<'a> Iterator for Range<'a> {
    type Item = (StreamId, Entry<'a>);

    fn next(&mut self) -> Option<(StreamId, Entry<'a>)> {
        while !self.done {
            let found = self.front.as_mut().and_then(Cursor::next_front);
            match found {
                Some(Located { deleted: true, .. }) => {}
                Some(l) if l.id < self.start => {}
                Some(l) if l.id > self.end => self.finish(),
                Some(l) => return Some((l.id, l.entry)),
                None => match self.nodes.next() {
                    Some((master, node)) => {
                        let mut cursor = node.cursor(*master);
                        if *master < self.start {
                            cursor.seek_front(self.start);
                        }
                        self.front = Some(cursor);
                    }
                    None => match self.back.take() {
                        Some(back) => self.front = Some(back),
                        None => self.finish(),
                    },
                },
            }
        }
        None
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        while !self.done {
            let found = self.back.as_mut().and_then(Cursor::next_back);
            match found {
                Some(Located { deleted: true, .. }) => {}
                Some(l) if l.id > self.end => {}
                Some(l) if l.id < self.start => self.finish(),
                Some(l) => return Some((l.id, l.entry)),
                None => match self.nodes.next_back() {
                    Some((master, node)) => {
                        let mut cursor = node.cursor(*master);
                        cursor.seek_back(self.end);
                        self.back = Some(cursor);
                    }
                    None => match self.front.take() {
                        Some(front) => self.back = Some(front),
                        None => self.finish(),
                    },
                },
            }
        }
        None
    }
}

impl Stream {
    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.length
    }

    /// Whether no entry is live.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// The first live id, `0-0` when empty.
    pub fn first_id(&self) -> StreamId {
        self.first
    }

    fn refresh_first(&mut self) {
        self.first = self.first_entry().map(|(id, _)| id).unwrap_or_default();
    }

    /// The first live entry (nodes with none are gone, so the first node has one).
    pub fn first_entry(&self) -> Option<(StreamId, Entry<'_>)> {
        let (master, node) = self.nodes.first_key_value()?;
        let mut cursor = node.cursor(*master);
        std::iter::from_fn(|| cursor.next_front())
            .find(|l| !l.deleted)
            .map(|l| (l.id, l.entry))
    }

    /// The last live entry.
    pub fn last_entry(&self) -> Option<(StreamId, Entry<'_>)> {
        let (master, node) = self.nodes.last_key_value()?;
        let mut cursor = node.cursor(*master);
        std::iter::from_fn(|| cursor.next_back())
            .find(|l| !l.deleted)
            .map(|l| (l.id, l.entry))
    }

    /// The node that holds `id`, if any could.
    fn node_of(&self, id: StreamId) -> Option<(StreamId, &Node)> {
        self.nodes
            .range(..=id)
            .next_back()
            .map(|(master, node)| (*master, node))
    }

    /// The live entry `id`.
    pub fn get(&self, id: &StreamId) -> Option<Entry<'_>> {
        let (master, node) = self.node_of(*id)?;
        node.find(master, *id)
            .filter(|l| !l.deleted)
            .map(|l| l.entry)
    }

    /// Number of nodes (XINFO STREAM's `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The nodes Redis's radix tree of these node keys (16-byte big-endian master ids)
    /// has (XINFO STREAM's `radix-tree-nodes`): a compressed node for each run of bytes
    /// the keys below it share, a branching node where they part, a leaf for each key,
    /// and the head of an empty tree.
    pub fn radix_tree_nodes(&self) -> usize {
        fn below(keys: &[[u8; 16]], depth: usize) -> usize {
            let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
                return 0;
            };
            if depth == 16 {
                return 1;
            }
            // Sorted keys: what the first and the last share, all of them share.
            let shared = (depth..16).take_while(|&i| first[i] == last[i]).count();
            if shared > 0 {
                return 1 + below(keys, depth + shared);
            }
            let mut nodes = 1;
            let mut rest = keys;
            while let Some(head) = rest.first() {
                let run = rest.iter().take_while(|k| k[depth] == head[depth]).count();
                nodes += below(&rest[..run], depth + 1);
                rest = &rest[run..];
            }
            nodes
        }
        let keys: Vec<[u8; 16]> = self.nodes.keys().map(|id| id.to_be_bytes()).collect();
        below(&keys, 0).max(1)
    }

    /// Live entries in `[start, end]`, ascending (`.rev()` for descending).
    pub fn range(&self, start: StreamId, end: StreamId) -> Range<'_> {
        // No entry is above `last_id`: a read of what is new (`XREAD ... $`) that finds
        // nothing does not walk the last node.
        if start > end || start > self.last_id {
            return Range::empty(self.nodes.range(..StreamId::MIN));
        }
        // The node holding `start` begins at or before it.
        let from = self.node_of(start).map_or(start, |(master, _)| master);
        Range {
            nodes: self.nodes.range(from..=end),
            front: None,
            back: None,
            start,
            end,
            done: false,
        }
    }

    /// Each node as Redis's listpack holds it: its master id and names, and every
    /// entry, deleted ones flagged (the RDB encoder writes one listpack each).
    pub fn node_images(&self) -> impl Iterator<Item = NodeImage<'_>> {
        self.nodes.iter().map(|(&master, node)| {
            let mut cursor = node.cursor(master);
            let mut entries = Vec::with_capacity(node.total);
            while let Some(l) = cursor.next_front() {
                entries.push((l.id, l.deleted, l.entry));
            }
            NodeImage {
                master,
                names: node.master_names(),
                entries,
            }
        })
    }

    /// Adds a loaded node of entries (RDB), keeping its boundary and its deleted
    /// entries; a node with none live is left out (nothing here keeps one).
    pub fn load_node(&mut self, built: NodeBuilder) {
        if let Some((master, mut node)) = built.node.filter(|(_, node)| node.live > 0) {
            node.shrink();
            self.length += node.live;
            self.nodes.insert(master, node);
            self.refresh_first();
        }
    }

    /// Appends an entry whose id is larger than `last_id` (checked by the caller).
    pub fn append<'a, I>(&mut self, id: StreamId, fields: I, limits: NodeLimits)
    where
        I: ExactSizeIterator<Item = &'a [u8]> + Clone,
    {
        let open_new = match self.nodes.last_key_value() {
            None => true,
            Some((_, node)) => limits.full(node, fields.clone()),
        };
        if open_new {
            if let Some(mut closed) = self.nodes.last_entry() {
                closed.get_mut().shrink();
            }
            self.nodes.insert(id, Node::new(fields.clone()));
        }
        if let Some(mut last) = self.nodes.last_entry() {
            let master = *last.key();
            last.get_mut().push(master, id, fields);
        }
        if self.length == 0 {
            self.first = id;
        }
        self.length += 1;
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Removes one live entry (XDEL and exact trimming; only XDEL moves
    /// `max_deleted_id`, as in Redis); a node whose entries are all gone goes too.
    pub fn delete(&mut self, id: &StreamId) -> bool {
        let Some((master, node)) = self.node_of(*id) else {
            return false;
        };
        let Some(at) = node.find(master, *id).filter(|l| !l.deleted).map(|l| l.at) else {
            return false;
        };
        self.delete_at(master, at);
        if *id == self.first {
            self.refresh_first();
        }
        true
    }

    /// Flags the live entry at `at` of node `master` deleted.
    fn delete_at(&mut self, master: StreamId, at: usize) {
        if let Some(node) = self.nodes.get_mut(&master) {
            node.mark_deleted(at);
            self.length -= 1;
            if node.live == 0 {
                self.nodes.remove(&master);
            }
        }
    }

    /// Trims as Redis's `streamTrim`: whole nodes first; with `approx` stops at the
    /// first node it could only partly remove; `limit` (0 = none) caps the entries
    /// removed in approximate mode. Returns how many entries went.
    pub fn trim(&mut self, strategy: TrimStrategy, approx: bool, limit: usize) -> usize {
        let mut deleted = 0usize;
        while let Some((&master, node)) = self.nodes.first_key_value() {
            let node_live = node.live;
            if let TrimStrategy::MaxLen(max) = strategy {
                if self.length as u64 <= max {
                    break;
                }
            }
            if limit > 0 && deleted + node_live > limit {
                break;
            }
            let whole = match strategy {
                TrimStrategy::MaxLen(max) => (self.length - node_live) as u64 >= max,
                // Redis compares the node's last entry, deleted or not
                // (`lpGetEdgeStreamID`).
                TrimStrategy::MinId(min) => node
                    .cursor(master)
                    .next_back()
                    .is_some_and(|last| last.id < min),
            };
            if whole {
                self.nodes.remove(&master);
                self.length -= node_live;
                deleted += node_live;
                continue;
            }
            if approx {
                break;
            }
            // Exact trimming deletes entries one by one inside the node.
            let mut doomed = Vec::new();
            let mut left = self.length as u64;
            let mut cursor = node.cursor(master);
            while let Some(l) = cursor.next_front() {
                if l.deleted {
                    continue;
                }
                let stop = match strategy {
                    TrimStrategy::MaxLen(max) => left <= max,
                    TrimStrategy::MinId(min) => l.id >= min,
                };
                if stop {
                    break;
                }
                doomed.push(l.at);
                left -= 1;
            }
            for at in doomed {
                self.delete_at(master, at);
                deleted += 1;
            }
            break;
        }
        if deleted > 0 {
            self.refresh_first();
        }
        deleted
    }

    /// Whether `[start, end]` may hold a deleted entry (Redis's
    /// `streamRangeHasTombstones`).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.is_empty() || self.max_deleted_id.is_zero() {
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
        if self.is_empty() && id <= self.last_id {
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
            let len = self.length as i64;
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
            .nodes
            .values()
            .map(|node| node.heap_size() + std::mem::size_of::<(StreamId, Node)>())
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
        entries + groups + std::mem::size_of::<Stream>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits() -> NodeLimits {
        NodeLimits {
            max_entries: 10,
            max_bytes: 0,
        }
    }

    fn filled(n: u64) -> Stream {
        let mut s = Stream::default();
        for i in 1..=n {
            s.append(StreamId::new(i, 0), [&b"f"[..], b"v"].into_iter(), limits());
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
        assert_eq!(&stored[..], b"alice");
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

    #[derive(Debug, Clone)]
    enum Op {
        Append(u64, u64, u8, Vec<u8>),
        Delete(usize),
        Trim(bool, usize, bool, usize),
        Range(usize, usize, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..3u64, 1..3u64, 0..4u8, prop::collection::vec(any::<u8>(), 0..200))
                .prop_map(|(ms, seq, shape, v)| Op::Append(ms, seq, shape, v)),
            1 => any::<usize>().prop_map(Op::Delete),
            1 => (any::<bool>(), 0..40usize, any::<bool>(), 0..12usize)
                .prop_map(|(maxlen, n, approx, limit)| Op::Trim(maxlen, n, approx, limit)),
            2 => (any::<usize>(), any::<usize>(), 0..3u8)
                .prop_map(|(a, b, how)| Op::Range(a, b, how)),
        ]
    }

    fn fields_of(shape: u8, value: &[u8]) -> Vec<Vec<u8>> {
        let v = value.to_vec();
        match shape {
            0 => vec![b"f".to_vec(), v],
            1 => vec![b"f".to_vec(), v.clone(), b"g".to_vec(), v],
            2 => vec![v.clone(), v],
            _ => vec![b"f".to_vec(), b"x".to_vec(), b"other".to_vec(), v],
        }
    }

    type Model = BTreeMap<StreamId, Vec<Vec<u8>>>;

    fn owned(entry: (StreamId, Entry<'_>)) -> (StreamId, Vec<Vec<u8>>) {
        (entry.0, entry.1.iter().map(<[u8]>::to_vec).collect())
    }

    /// An id near the model's: one of them, or just beside one.
    fn pick(model: &Model, n: usize) -> StreamId {
        let ids: Vec<StreamId> = model.keys().copied().collect();
        if ids.is_empty() {
            return StreamId::new(n as u64 % 5, 0);
        }
        let id = ids[n % ids.len()];
        match n / ids.len() % 3 {
            0 => id,
            1 => id.incr().unwrap_or(id),
            _ => id.decr().unwrap_or(id),
        }
    }

    fn check(stream: &Stream, model: &Model) -> Result<(), TestCaseError> {
        prop_assert_eq!(stream.len(), model.len());
        let all: Vec<_> = stream
            .range(StreamId::MIN, StreamId::MAX)
            .map(owned)
            .collect();
        let want: Vec<_> = model.iter().map(|(k, v)| (*k, v.clone())).collect();
        prop_assert_eq!(&all, &want);
        prop_assert_eq!(stream.first_entry().map(owned), want.first().cloned());
        prop_assert_eq!(stream.last_entry().map(owned), want.last().cloned());
        for (id, fields) in model {
            let got: Option<Vec<Vec<u8>>> = stream
                .get(id)
                .map(|e| e.iter().map(<[u8]>::to_vec).collect());
            prop_assert_eq!(got.as_ref(), Some(fields));
        }
        prop_assert_eq!(
            stream.first_id(),
            model.keys().next().copied().unwrap_or_default()
        );
        let node_live: usize = stream.node_images().map(|n| n.live()).sum();
        prop_assert_eq!(node_live, model.len());
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn behaves_as_an_ordered_map(
            ops in prop::collection::vec(op(), 0..300),
            max_entries in 0..6usize,
            max_bytes in prop_oneof![Just(0usize), 20..400usize],
        ) {
            let limits = NodeLimits { max_entries, max_bytes };
            let mut stream = Stream::default();
            let mut model = Model::new();
            let mut last = StreamId::new(1, 0);
            for op in ops {
                match op {
                    Op::Append(ms, seq, shape, value) => {
                        let id = if ms == 0 {
                            StreamId::new(last.ms, last.seq + seq)
                        } else {
                            StreamId::new(last.ms + ms * 1000, seq)
                        };
                        let fields = fields_of(shape, &value);
                        stream.append(id, fields.iter().map(|f| &f[..]), limits);
                        model.insert(id, fields);
                        last = id;
                    }
                    Op::Delete(n) => {
                        let id = pick(&model, n);
                        prop_assert_eq!(stream.delete(&id), model.remove(&id).is_some());
                    }
                    Op::Trim(maxlen, n, approx, limit) => {
                        let strategy = if maxlen {
                            TrimStrategy::MaxLen(n as u64)
                        } else {
                            TrimStrategy::MinId(pick(&model, n))
                        };
                        let limit = if approx { limit } else { 0 };
                        let before = model.len();
                        let removed = stream.trim(strategy, approx, limit);
                        // What exact trimming leaves; approximate trimming stops at a
                        // node boundary before it, having removed only a prefix.
                        let keep_from = match strategy {
                            TrimStrategy::MaxLen(max) => before.saturating_sub(max as usize),
                            TrimStrategy::MinId(min) => model.range(..min).count(),
                        };
                        if approx {
                            prop_assert!(removed <= keep_from);
                            if limit > 0 {
                                prop_assert!(removed <= limit);
                            }
                        } else {
                            prop_assert_eq!(removed, keep_from);
                        }
                        let doomed: Vec<StreamId> = model.keys().take(removed).copied().collect();
                        for id in doomed {
                            model.remove(&id);
                        }
                    }
                    Op::Range(a, b, how) => {
                        let (start, end) = (pick(&model, a), pick(&model, b));
                        let want: Vec<_> = if start <= end {
                            model.range(start..=end).map(|(k, v)| (*k, v.clone())).collect()
                        } else {
                            Vec::new()
                        };
                        let mut range = stream.range(start, end);
                        let got: Vec<_> = match how {
                            0 => range.map(owned).collect(),
                            1 => {
                                let mut got: Vec<_> = range.rev().map(owned).collect();
                                got.reverse();
                                got
                            }
                            _ => {
                                // Alternate ends until they meet.
                                let (mut front, mut back) = (Vec::new(), Vec::new());
                                while let Some(f) = range.next() {
                                    front.push(owned(f));
                                    let Some(b) = range.next_back() else { break };
                                    back.push(owned(b));
                                }
                                prop_assert!(range.next().is_none());
                                back.reverse();
                                front.extend(back);
                                front
                            }
                        };
                        prop_assert_eq!(got, want);
                    }
                }
                check(&stream, &model)?;
            }
        }
    }
}
