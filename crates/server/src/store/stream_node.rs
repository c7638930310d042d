//! A stream node: consecutive entries packed in one buffer, as Redis packs them in a
//! listpack. The node keeps the field names of its first entry (its "master" names);
//! an entry whose fields are those names stores only its values. Ids are stored as
//! differences from the node's master id (the first id appended), so an entry of
//! `XADD s * f v` costs about six bytes where an entry of its own costs a tree slot and
//! an allocation.
//!
//! Layout: `names-count, name...` then entries of
//! `flags, ms-diff, seq, [pairs, field, value... | value...], back-length`. Every
//! integer is a varint (`super::varint`), every element `length bytes`; the back-length is the
//! entry's size written backwards, so entries are walked from either end. `seq` is the
//! difference from the master's sequence when the millisecond is the master's, else the
//! sequence itself. Deleted entries stay (flagged) until the whole node goes, as in
//! Redis.

use super::listpack_size;
use super::stream::StreamId;
use super::varint::{self, get as get_varint, put as put_varint};

const DELETED: u8 = 1;
const SAME_FIELDS: u8 = 2;

fn put_element(out: &mut Vec<u8>, element: &[u8]) {
    put_varint(out, element.len() as u64);
    out.extend_from_slice(element);
}

#[inline]
fn get_element<'a>(buf: &'a [u8], at: &mut usize) -> &'a [u8] {
    let len = get_varint(buf, at) as usize;
    let start = *at;
    *at += len;
    &buf[start..start + len]
}

fn skip_elements(buf: &[u8], at: &mut usize, count: usize) {
    for _ in 0..count {
        let len = get_varint(buf, at) as usize;
        *at += len;
    }
}

/// The bytes of one entry in Redis's node listpack: `flags, ms-diff, seq-diff,
/// [num-fields, field, value... | value...], lp-count`, each difference taken from the
/// master id as Redis takes it (the sequence's even when the milliseconds differ).
fn redis_entry_bytes<'a, I>(master: StreamId, id: StreamId, fields: I, same: bool) -> usize
where
    I: ExactSizeIterator<Item = &'a [u8]>,
{
    let pairs = fields.len() / 2;
    let ms_diff = id.ms.wrapping_sub(master.ms) as i64;
    let seq_diff = id.seq.wrapping_sub(master.seq) as i64;
    // The flags are 0 to 3, all of one size.
    let flags = listpack_size::int(0);
    let mut bytes = flags + listpack_size::int(ms_diff) + listpack_size::int(seq_diff);
    let elements = if same {
        bytes += fields
            .skip(1)
            .step_by(2)
            .map(listpack_size::string)
            .sum::<usize>();
        pairs + 3
    } else {
        bytes += listpack_size::int(pairs as i64);
        bytes += fields.map(listpack_size::string).sum::<usize>();
        2 * pairs + 4
    };
    bytes + listpack_size::int(elements as i64)
}

/// One node's entries.
#[derive(Debug, Clone, Default)]
pub(super) struct Node {
    buf: Vec<u8>,
    /// Where the master names start (after their count).
    names_at: usize,
    /// Where the first entry starts (after the master names).
    entries_at: usize,
    /// How many master names there are.
    names: usize,
    /// Entries ever appended here, deleted ones included.
    pub(super) total: usize,
    /// Entries still live.
    pub(super) live: usize,
    /// The bytes of Redis's listpack for this node but its live and deleted counts
    /// (see [`Node::redis_bytes`]).
    redis_rest: usize,
}

/// Where an entry sits in its node, and what it is.
pub(super) struct Located<'a> {
    pub(super) id: StreamId,
    /// Offset of its flags byte.
    pub(super) at: usize,
    pub(super) deleted: bool,
    pub(super) entry: Entry<'a>,
}

impl Node {
    /// A node whose master names are the field names (every other element) of `fields`.
    pub(super) fn new<'a, I>(fields: I) -> Node
    where
        I: ExactSizeIterator<Item = &'a [u8]>,
    {
        Node::with_names(fields.step_by(2))
    }

    /// A node whose master names are `names` (a loaded node's master entry).
    pub(super) fn with_names<'a, I>(names: I) -> Node
    where
        I: ExactSizeIterator<Item = &'a [u8]>,
    {
        let count = names.len();
        let mut buf = Vec::new();
        put_varint(&mut buf, count as u64);
        let names_at = buf.len();
        // Redis's master entry: live count, deleted count (see `redis_bytes`), the
        // number of names, the names, a 0 terminator.
        let mut redis_rest =
            listpack_size::EMPTY + listpack_size::int(count as i64) + listpack_size::int(0);
        for name in names {
            put_element(&mut buf, name);
            redis_rest += listpack_size::string(name);
        }
        Node {
            names_at,
            entries_at: buf.len(),
            buf,
            names: count,
            redis_rest,
            ..Node::default()
        }
    }

    /// The size Redis's listpack for this node would have (`lpBytes`), which decides
    /// where a node ends (`stream-node-max-bytes`), and so what an approximate trim
    /// can drop: Redis packs the same entries in the same nodes.
    pub(super) fn redis_bytes(&self) -> usize {
        let deleted = self.total.saturating_sub(self.live);
        self.redis_rest + listpack_size::int(self.live as i64) + listpack_size::int(deleted as i64)
    }

    fn names_region(&self) -> &[u8] {
        &self.buf[self.names_at..self.entries_at]
    }

    /// The master entry's field names (those of the entry that opened the node).
    pub(super) fn master_names(&self) -> Vec<&[u8]> {
        let region = self.names_region();
        let mut at = 0;
        (0..self.names)
            .map(|_| get_element(region, &mut at))
            .collect()
    }

    /// Whether `fields`' names are the master names, in order.
    fn has_master_names<'a, I>(&self, fields: I) -> bool
    where
        I: ExactSizeIterator<Item = &'a [u8]>,
    {
        if fields.len() != 2 * self.names {
            return false;
        }
        let names = self.names_region();
        let mut at = 0;
        fields
            .step_by(2)
            .all(|name| get_element(names, &mut at) == name)
    }

    /// Appends entry `id` (larger than every id here; `master` is the node's key);
    /// returns where it starts (for [`Node::mark_deleted`]).
    pub(super) fn push<'a, I>(&mut self, master: StreamId, id: StreamId, fields: I) -> usize
    where
        I: ExactSizeIterator<Item = &'a [u8]> + Clone,
    {
        let same = self.has_master_names(fields.clone());
        self.redis_rest += redis_entry_bytes(master, id, fields.clone(), same);
        let start = self.buf.len();
        self.buf.push(if same { SAME_FIELDS } else { 0 });
        let ms_diff = id.ms.wrapping_sub(master.ms);
        put_varint(&mut self.buf, ms_diff);
        let seq = if ms_diff == 0 {
            id.seq.wrapping_sub(master.seq)
        } else {
            id.seq
        };
        put_varint(&mut self.buf, seq);
        if same {
            for value in fields.skip(1).step_by(2) {
                put_element(&mut self.buf, value);
            }
        } else {
            put_varint(&mut self.buf, (fields.len() / 2) as u64);
            for element in fields {
                put_element(&mut self.buf, element);
            }
        }
        let size = self.buf.len() - start;
        varint::put_back(&mut self.buf, size as u64);
        self.total += 1;
        self.live += 1;
        start
    }

    /// The entry whose flags byte is at `at`, and where the next one starts.
    fn decode(&self, master: StreamId, at: usize) -> (Located<'_>, usize) {
        let buf = &self.buf[..];
        let mut pos = at;
        let flags = buf[pos];
        pos += 1;
        let ms_diff = get_varint(buf, &mut pos);
        let seq = get_varint(buf, &mut pos);
        let id = if ms_diff == 0 {
            StreamId::new(master.ms, master.seq.wrapping_add(seq))
        } else {
            StreamId::new(master.ms.wrapping_add(ms_diff), seq)
        };
        let same = flags & SAME_FIELDS != 0;
        let (pairs, body_start) = if same {
            (self.names, pos)
        } else {
            let pairs = get_varint(buf, &mut pos) as usize;
            (pairs, pos)
        };
        skip_elements(buf, &mut pos, if same { pairs } else { 2 * pairs });
        let entry = Entry {
            names: if same { self.names_region() } else { &[] },
            body: &buf[body_start..pos],
            pairs,
            same,
        };
        let next = pos + varint::len((pos - at) as u64);
        let located = Located {
            id,
            at,
            deleted: flags & DELETED != 0,
            entry,
        };
        (located, next)
    }

    /// A cursor over every entry, deleted ones included.
    pub(super) fn cursor(&self, master: StreamId) -> Cursor<'_> {
        Cursor {
            node: self,
            master,
            lo: self.entries_at,
            hi: self.buf.len(),
        }
    }

    /// The entry `id`, live or deleted.
    pub(super) fn find(&self, master: StreamId, id: StreamId) -> Option<Located<'_>> {
        let mut cursor = self.cursor(master);
        cursor.seek_front(id);
        cursor.next_front().filter(|located| located.id == id)
    }

    /// Flags the entry at `at` deleted (it must be live).
    pub(super) fn mark_deleted(&mut self, at: usize) {
        self.buf[at] |= DELETED;
        self.live = self.live.saturating_sub(1);
    }

    /// Gives back spare capacity once the node is closed to appends.
    pub(super) fn shrink(&mut self) {
        self.buf.shrink_to_fit();
    }

    /// Bytes it allocated.
    pub(super) fn heap_size(&self) -> usize {
        self.buf.capacity()
    }
}

/// Walks a node's entries from both ends; the ends never cross.
#[derive(Clone)]
pub(super) struct Cursor<'a> {
    node: &'a Node,
    master: StreamId,
    lo: usize,
    hi: usize,
}

/// An id as one number, to compare distances between ids.
fn linear(id: StreamId) -> u128 {
    (u128::from(id.ms) << 64) | u128::from(id.seq)
}

impl<'a> Cursor<'a> {
    /// Moves the front to the first entry (deleted or not) at or after `start`,
    /// walking from whichever end the ids say is nearer: entries are only found by
    /// walking, and a read of what is new starts near a node's end.
    pub(super) fn seek_front(&mut self, start: StreamId) {
        let (Some(first), Some(last)) = (self.clone().next_front(), self.clone().next_back())
        else {
            return;
        };
        if first.id >= start {
            return;
        }
        if last.id < start {
            self.lo = self.hi;
            return;
        }
        let target = linear(start);
        if target - linear(first.id) <= linear(last.id) - target {
            let mut probe = self.clone();
            while let Some(located) = probe.next_front() {
                if located.id >= start {
                    self.lo = located.at;
                    return;
                }
            }
        } else {
            let mut probe = self.clone();
            while let Some(located) = probe.next_back() {
                if located.id < start {
                    return;
                }
                self.lo = located.at;
            }
        }
    }

    /// Moves the back to just after the last entry (deleted or not) at or before
    /// `end`, walking from the nearer end as [`Cursor::seek_front`] does.
    pub(super) fn seek_back(&mut self, end: StreamId) {
        let (Some(first), Some(last)) = (self.clone().next_front(), self.clone().next_back())
        else {
            return;
        };
        if last.id <= end {
            return;
        }
        if first.id > end {
            self.hi = self.lo;
            return;
        }
        let target = linear(end);
        if target - linear(first.id) <= linear(last.id) - target {
            let mut probe = self.clone();
            while let Some(located) = probe.next_front() {
                if located.id > end {
                    self.hi = located.at;
                    return;
                }
            }
        } else {
            let mut probe = self.clone();
            loop {
                let after = probe.hi;
                let Some(located) = probe.next_back() else {
                    return;
                };
                if located.id <= end {
                    self.hi = after;
                    return;
                }
            }
        }
    }

    pub(super) fn next_front(&mut self) -> Option<Located<'a>> {
        if self.lo >= self.hi {
            return None;
        }
        let (located, next) = self.node.decode(self.master, self.lo);
        self.lo = next;
        Some(located)
    }

    pub(super) fn next_back(&mut self) -> Option<Located<'a>> {
        if self.lo >= self.hi {
            return None;
        }
        let mut end = self.hi;
        let size = varint::get_back(&self.node.buf, &mut end) as usize;
        let at = end - size;
        let (located, _) = self.node.decode(self.master, at);
        self.hi = at;
        Some(located)
    }
}

/// An entry's field/value pairs, borrowed from its node.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// The master names, when the entry has them (its body is then values only).
    names: &'a [u8],
    body: &'a [u8],
    pairs: usize,
    same: bool,
}

impl<'a> Entry<'a> {
    /// Fields and values, flattened: `2 × pairs` elements.
    pub fn len(&self) -> usize {
        2 * self.pairs
    }

    /// Whether it has no fields (never, for an entry XADD wrote).
    pub fn is_empty(&self) -> bool {
        self.pairs == 0
    }

    /// Field, value, field, value...
    pub fn iter(&self) -> EntryIter<'a> {
        EntryIter {
            entry: *self,
            names_at: 0,
            body_at: 0,
            left: self.len(),
        }
    }
}

/// The elements of an [`Entry`], in order.
pub struct EntryIter<'a> {
    entry: Entry<'a>,
    names_at: usize,
    body_at: usize,
    left: usize,
}

impl<'a> Iterator for EntryIter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        let is_name = self.left % 2 == 0;
        self.left -= 1;
        if self.entry.same && is_name {
            Some(get_element(self.entry.names, &mut self.names_at))
        } else {
            Some(get_element(self.entry.body, &mut self.body_at))
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for EntryIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry_of(located: &Located<'_>) -> Vec<Vec<u8>> {
        located.entry.iter().map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn entries_read_back_from_both_ends() {
        let master = StreamId::new(1_000, 5);
        let long = vec![b'x'; 300];
        let entries: Vec<(StreamId, Vec<&[u8]>)> = vec![
            (master, vec![b"f", b"v", b"g", b"w"]),
            (StreamId::new(1_000, 9), vec![b"f", b"1", b"g", b""]),
            (StreamId::new(1_002, 0), vec![b"other", &long]),
            (StreamId::new(u64::MAX, 7), vec![b"f", b"x", b"g", b"y"]),
            (StreamId::new(u64::MAX, u64::MAX), vec![]),
        ];
        let mut node = Node::new(entries[0].1.iter().copied());
        for (id, fields) in &entries {
            node.push(master, *id, fields.iter().copied());
        }
        let want: Vec<(StreamId, Vec<Vec<u8>>)> = entries
            .iter()
            .map(|(id, f)| (*id, f.iter().map(|e| e.to_vec()).collect()))
            .collect();
        let mut cursor = node.cursor(master);
        let mut forward = Vec::new();
        while let Some(l) = cursor.next_front() {
            assert_eq!(l.entry.iter().len(), l.entry.len());
            forward.push((l.id, entry_of(&l)));
        }
        assert_eq!(forward, want);
        let mut cursor = node.cursor(master);
        let mut backward = Vec::new();
        while let Some(l) = cursor.next_back() {
            backward.push((l.id, entry_of(&l)));
        }
        backward.reverse();
        assert_eq!(backward, want);
        // The two ends meet without crossing.
        let mut cursor = node.cursor(master);
        let mut seen = vec![cursor.next_front().map(|l| l.id)];
        seen.push(cursor.next_back().map(|l| l.id));
        while let Some(l) = cursor.next_front() {
            seen.push(Some(l.id));
        }
        assert_eq!(seen.len(), entries.len());
        assert!(cursor.next_back().is_none());
    }

    #[test]
    fn same_fields_store_values_only_and_deletes_flag() {
        let master = StreamId::new(1_700_000_000_000, 0);
        let mut node = Node::new([&b"field"[..], b"v"].into_iter());
        let before = node.buf.len();
        node.push(master, master, [&b"field"[..], b"v"].into_iter());
        // flags, two one-byte diffs, "v" with its length, one back-length byte.
        assert_eq!(node.buf.len() - before, 6);
        node.push(
            master,
            StreamId::new(master.ms + 1, 0),
            [&b"field"[..], b"w"].into_iter(),
        );
        let second = node
            .find(master, StreamId::new(master.ms + 1, 0))
            .map(|l| (l.at, l.deleted));
        let Some((at, false)) = second else {
            panic!("entry not found live: {second:?}");
        };
        node.mark_deleted(at);
        assert_eq!(node.live, 1);
        assert!(node
            .find(master, StreamId::new(master.ms + 1, 0))
            .is_some_and(|l| l.deleted));
        assert!(node.find(master, StreamId::new(master.ms, 1)).is_none());
    }
}
