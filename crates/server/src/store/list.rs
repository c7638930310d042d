//! `ListValue`: a list as a deque of chunks of packed elements, as Redis's quicklist of
//! listpacks. A slot per element (24 bytes before its text) made a list of short
//! elements five times Redis's size; packed, an element of up to 127 bytes costs its
//! length plus two bytes.
//!
//! An element is `header bytes trailer`: its length written forwards before it and
//! backwards after it, so a chunk is walked from either end. A length under 128 is one
//! byte; under 16,384 two; anything longer nine. A chunk keeps free space at both ends,
//! so pushes at either end of the list write in place. It grows up to [`CHUNK_BYTES`]
//! (Redis's `list-max-listpack-size -2`); pushes past that start a new chunk. Reading by
//! index walks chunk counts, then the elements of one chunk from its nearer end.

use std::collections::VecDeque;
use std::fmt;

use super::CompactBytes;

/// Bytes of elements a chunk grows to before pushes start another (8 KB, as Redis).
pub const CHUNK_BYTES: usize = 8 * 1024;

/// A chunk grown past this by inserts in the middle is split in two.
const SPLIT_BYTES: usize = 2 * CHUNK_BYTES;

/// Free space a growing chunk gains at least, so a small list's pushes do not each
/// reallocate.
const MIN_GROWTH: usize = 32;

/// The encoded size of an element of `len` bytes.
#[inline]
fn encoded_len(len: usize) -> usize {
    len + 2 * length_width(len)
}

#[inline]
fn length_width(len: usize) -> usize {
    if len < 0x80 {
        1
    } else if len < 0x4000 {
        2
    } else {
        9
    }
}

/// Writes `element` with its header and trailer at the start of `out`, which is exactly
/// [`encoded_len`] long.
fn write_element(out: &mut [u8], element: &[u8]) {
    let len = element.len();
    let width = length_width(len);
    let body = &mut out[width..width + len];
    body.copy_from_slice(element);
    let end = out.len();
    match width {
        1 => {
            out[0] = len as u8;
            out[end - 1] = len as u8;
        }
        2 => {
            // Header: tag and high bits first; trailer: mirrored, tag last.
            out[0] = 0x80 | (len >> 8) as u8;
            out[1] = len as u8;
            out[end - 2] = len as u8;
            out[end - 1] = 0x80 | (len >> 8) as u8;
        }
        _ => {
            let bytes = (len as u64).to_le_bytes();
            out[0] = 0xC0;
            out[1..9].copy_from_slice(&bytes);
            out[end - 9..end - 1].copy_from_slice(&bytes);
            out[end - 1] = 0xC0;
        }
    }
}

/// The element whose header starts at `at`: (body start, body length).
#[inline]
fn read_forward(buf: &[u8], at: usize) -> (usize, usize) {
    let tag = buf[at];
    if tag < 0x80 {
        (at + 1, tag as usize)
    } else if tag & 0xC0 == 0x80 {
        (at + 2, ((tag as usize & 0x3F) << 8) | buf[at + 1] as usize)
    } else {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&buf[at + 1..at + 9]);
        (at + 9, u64::from_le_bytes(bytes) as usize)
    }
}

/// The element whose trailer ends at `end`: (body start, body length).
#[inline]
fn read_backward(buf: &[u8], end: usize) -> (usize, usize) {
    let tag = buf[end - 1];
    let (len, width) = if tag < 0x80 {
        (tag as usize, 1)
    } else if tag & 0xC0 == 0x80 {
        (((tag as usize & 0x3F) << 8) | buf[end - 2] as usize, 2)
    } else {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&buf[end - 9..end - 1]);
        (u64::from_le_bytes(bytes) as usize, 9)
    };
    (end - width - len, len)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Front,
    Back,
}

/// Packed elements in `buf[start..end]`, free space on both sides.
#[derive(Clone)]
struct Chunk {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    count: usize,
}

impl Chunk {
    fn with_capacity(capacity: usize, side: Side) -> Chunk {
        // The free space goes where the pushes will land.
        let at = if side == Side::Front { capacity } else { 0 };
        Chunk {
            buf: vec![0; capacity].into_boxed_slice(),
            start: at,
            end: at,
            count: 0,
        }
    }

    #[inline]
    fn used(&self) -> usize {
        self.end - self.start
    }

    /// Makes room for `need` more bytes on `side`; `full_size` chunks grow at once to
    /// [`CHUNK_BYTES`] (a list that already has several), others by a quarter.
    fn reserve(&mut self, need: usize, side: Side, full_size: bool) {
        let free = match side {
            Side::Front => self.start,
            Side::Back => self.buf.len() - self.end,
        };
        if free >= need {
            return;
        }
        let used = self.used();
        let growth = if full_size {
            CHUNK_BYTES.saturating_sub(used)
        } else {
            (self.buf.len() / 4).max(MIN_GROWTH)
        };
        // The pushed side gains the room; the other keeps what it had.
        let room = need.max(growth);
        let (front, back) = match side {
            Side::Front => (room, self.buf.len() - self.end),
            Side::Back => (self.start, room),
        };
        self.resize(front, back);
    }

    /// Reallocates with `front` and `back` free bytes around the elements.
    fn resize(&mut self, front: usize, back: usize) {
        let used = self.used();
        let mut buf = vec![0u8; front + used + back].into_boxed_slice();
        buf[front..front + used].copy_from_slice(&self.buf[self.start..self.end]);
        self.buf = buf;
        self.start = front;
        self.end = front + used;
    }

    fn push(&mut self, element: &[u8], side: Side, full_size: bool) {
        let need = encoded_len(element.len());
        self.reserve(need, side, full_size);
        let at = match side {
            Side::Front => {
                self.start -= need;
                self.start
            }
            Side::Back => {
                self.end += need;
                self.end - need
            }
        };
        write_element(&mut self.buf[at..at + need], element);
        self.count += 1;
    }

    fn pop(&mut self, side: Side) -> Option<CompactBytes> {
        if self.count == 0 {
            return None;
        }
        let element = match side {
            Side::Front => {
                let (body, len) = read_forward(&self.buf, self.start);
                self.start = body + len + length_width(len);
                &self.buf[body..body + len]
            }
            Side::Back => {
                let (body, len) = read_backward(&self.buf, self.end);
                self.end = body - length_width(len);
                &self.buf[body..body + len]
            }
        };
        self.count -= 1;
        Some(CompactBytes::new(element))
    }

    /// The byte offset of the element at `index` (< count), walked from the nearer end.
    fn offset_of(&self, index: usize) -> usize {
        if index <= self.count / 2 {
            let mut at = self.start;
            for _ in 0..index {
                let (body, len) = read_forward(&self.buf, at);
                at = body + len + length_width(len);
            }
            at
        } else {
            let mut end = self.end;
            for _ in index..self.count {
                let (body, len) = read_backward(&self.buf, end);
                end = body - length_width(len);
            }
            end
        }
    }

    /// The element at byte offset `at`: (body start, body length, encoded length).
    #[inline]
    fn element_at(&self, at: usize) -> (usize, usize, usize) {
        let (body, len) = read_forward(&self.buf, at);
        (body, len, encoded_len(len))
    }

    /// Replaces `remove` encoded bytes at `at` with `insert` (already encoded).
    fn splice(&mut self, at: usize, remove: usize, insert: &[u8]) {
        if remove == insert.len() {
            self.buf[at..at + remove].copy_from_slice(insert);
            return;
        }
        let used = self.used() - remove + insert.len();
        let mut buf = Vec::with_capacity(used);
        buf.extend_from_slice(&self.buf[self.start..at]);
        buf.extend_from_slice(insert);
        buf.extend_from_slice(&self.buf[at + remove..self.end]);
        self.buf = buf.into_boxed_slice();
        self.start = 0;
        self.end = used;
    }

    /// Splits off the second half of the elements into a chunk of their own.
    fn split(&mut self) -> Chunk {
        let keep = self.count / 2;
        let at = self.offset_of(keep);
        let tail = &self.buf[at..self.end];
        let other = Chunk {
            buf: tail.into(),
            start: 0,
            end: tail.len(),
            count: self.count - keep,
        };
        self.end = at;
        self.count = keep;
        self.shrink();
        other
    }

    /// Gives back free space beyond a quarter of the chunk (after removals).
    fn shrink(&mut self) {
        let used = self.used();
        if self.buf.len() > MIN_GROWTH * 4 && self.buf.len() - used > used.max(MIN_GROWTH) {
            self.resize(0, used / 8);
        }
    }
}

/// A list: chunks of packed elements. See the module documentation.
///
/// ```
/// use redline_server::store::ListValue;
///
/// let mut list = ListValue::new();
/// list.push_back(b"b");
/// list.push_front(b"a");
/// assert_eq!(list.get(1), Some(&b"b"[..]));
/// assert_eq!(list.iter().collect::<Vec<_>>(), [&b"a"[..], &b"b"[..]]);
/// ```
#[derive(Clone, Default)]
pub struct ListValue {
    chunks: VecDeque<Chunk>,
    len: usize,
}

impl fmt::Debug for ListValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

impl ListValue {
    /// An empty list.
    pub fn new() -> ListValue {
        ListValue::default()
    }

    /// Elements in the list.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list has no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Chunks holding the elements (Redis's quicklist nodes: lazyfree's effort).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Bytes allocated for the elements and the chunks' table (MEMORY USAGE).
    pub fn allocated(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Chunk>()
            + self.chunks.iter().map(|c| c.buf.len()).sum::<usize>()
    }

    /// Adds `element` at the head.
    pub fn push_front(&mut self, element: &[u8]) {
        self.push(element, Side::Front);
    }

    /// Adds `element` at the tail.
    pub fn push_back(&mut self, element: &[u8]) {
        self.push(element, Side::Back);
    }

    fn push(&mut self, element: &[u8], side: Side) {
        let need = encoded_len(element.len());
        let several = self.chunks.len() > 1;
        let end = match side {
            Side::Front => self.chunks.front_mut(),
            Side::Back => self.chunks.back_mut(),
        };
        match end {
            Some(chunk) if chunk.count == 0 || chunk.used() + need <= CHUNK_BYTES => {
                chunk.push(element, side, several)
            }
            _ => {
                // A second chunk means a long list: later chunks start at full size.
                let capacity = if self.chunks.is_empty() {
                    need + MIN_GROWTH
                } else {
                    CHUNK_BYTES.max(need)
                };
                let mut chunk = Chunk::with_capacity(capacity, side);
                chunk.push(element, side, false);
                if self.chunks.is_empty() {
                    // Room for one chunk only while there is one (most lists are short).
                    self.chunks.reserve_exact(1);
                }
                match side {
                    Side::Front => self.chunks.push_front(chunk),
                    Side::Back => self.chunks.push_back(chunk),
                }
            }
        }
        self.len += 1;
    }

    /// Removes and returns the head.
    pub fn pop_front(&mut self) -> Option<CompactBytes> {
        self.pop(Side::Front)
    }

    /// Removes and returns the tail.
    pub fn pop_back(&mut self) -> Option<CompactBytes> {
        self.pop(Side::Back)
    }

    fn pop(&mut self, side: Side) -> Option<CompactBytes> {
        let only = self.chunks.len() == 1;
        let chunk = match side {
            Side::Front => self.chunks.front_mut()?,
            Side::Back => self.chunks.back_mut()?,
        };
        let element = chunk.pop(side)?;
        if chunk.count == 0 {
            match side {
                Side::Front => self.chunks.pop_front(),
                Side::Back => self.chunks.pop_back(),
            };
        } else if only {
            // A long list's end chunks are dropped once empty; a short list gives
            // memory back as it shrinks.
            chunk.shrink();
        }
        self.len -= 1;
        Some(element)
    }

    /// The chunk holding `index` (< len) and the index within it, counted from the
    /// nearer end of the list.
    fn locate(&self, index: usize) -> (usize, usize) {
        if index < self.len / 2 {
            let mut skipped = 0;
            for (i, chunk) in self.chunks.iter().enumerate() {
                if index < skipped + chunk.count {
                    return (i, index - skipped);
                }
                skipped += chunk.count;
            }
        } else {
            let mut after = self.len;
            for (i, chunk) in self.chunks.iter().enumerate().rev() {
                after -= chunk.count;
                if index >= after {
                    return (i, index - after);
                }
            }
        }
        (self.chunks.len(), 0)
    }

    /// The element at `index`.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len {
            return None;
        }
        let (c, i) = self.locate(index);
        let chunk = self.chunks.get(c)?;
        let (body, len, _) = chunk.element_at(chunk.offset_of(i));
        Some(&chunk.buf[body..body + len])
    }

    /// Replaces the element at `index`; false when out of range.
    pub fn set(&mut self, index: usize, element: &[u8]) -> bool {
        if index >= self.len {
            return false;
        }
        let (c, i) = self.locate(index);
        let Some(chunk) = self.chunks.get_mut(c) else {
            return false;
        };
        let at = chunk.offset_of(i);
        let (_, _, old) = chunk.element_at(at);
        let mut encoded = vec![0; encoded_len(element.len())];
        write_element(&mut encoded, element);
        chunk.splice(at, old, &encoded);
        self.split_if_large(c);
        true
    }

    /// Inserts `element` before position `index` (`len` appends).
    pub fn insert(&mut self, index: usize, element: &[u8]) {
        if index >= self.len {
            return self.push_back(element);
        }
        if index == 0 {
            return self.push_front(element);
        }
        let (c, i) = self.locate(index);
        let Some(chunk) = self.chunks.get_mut(c) else {
            return;
        };
        let at = chunk.offset_of(i);
        let mut encoded = vec![0; encoded_len(element.len())];
        write_element(&mut encoded, element);
        chunk.splice(at, 0, &encoded);
        chunk.count += 1;
        self.len += 1;
        self.split_if_large(c);
    }

    fn split_if_large(&mut self, c: usize) {
        if let Some(chunk) = self.chunks.get_mut(c) {
            if chunk.used() > SPLIT_BYTES && chunk.count > 1 {
                let tail = chunk.split();
                self.chunks.insert(c + 1, tail);
            }
        }
    }

    /// Keeps only the elements `from..=to` (LTRIM).
    pub fn keep_range(&mut self, from: usize, to: usize) {
        if from > to || from >= self.len {
            return self.clear();
        }
        let to = to.min(self.len - 1);
        // In place: a capped list (LPUSH then LTRIM) trims on every push.
        let mut index = 0;
        self.chunks.retain_mut(|chunk| {
            let first = index;
            let last = index + chunk.count; // exclusive
            index = last;
            if last <= from || first > to {
                return false;
            }
            if first < from || last > to + 1 {
                let skip = from.saturating_sub(first);
                let stop = (to + 1).min(last) - first;
                let start = chunk.offset_of(skip);
                let end = if stop == chunk.count {
                    chunk.end
                } else {
                    chunk.offset_of(stop)
                };
                chunk.start = start;
                chunk.end = end;
                chunk.count = stop - skip;
                chunk.shrink();
            }
            true
        });
        self.len = to + 1 - from;
        self.merge_small();
    }

    /// Removes every element.
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.len = 0;
    }

    /// Removes up to `limit` elements equal to `element`, from the tail when
    /// `from_tail` (LREM); returns how many.
    pub fn remove_equal(&mut self, element: &[u8], limit: usize, from_tail: bool) -> usize {
        let mut removed = 0;
        let chunks = self.chunks.len();
        for step in 0..chunks {
            let c = if from_tail { chunks - 1 - step } else { step };
            if removed == limit {
                break;
            }
            let Some(chunk) = self.chunks.get_mut(c) else {
                continue;
            };
            let mut matches: Vec<usize> = Vec::new();
            let mut at = chunk.start;
            while at < chunk.end {
                let (body, len, encoded) = chunk.element_at(at);
                if &chunk.buf[body..body + len] == element {
                    matches.push(at);
                }
                at += encoded;
            }
            if matches.is_empty() {
                continue;
            }
            let room = limit - removed;
            if matches.len() > room {
                if from_tail {
                    matches.drain(..matches.len() - room);
                } else {
                    matches.truncate(room);
                }
            }
            let gone = encoded_len(element.len());
            let mut buf = Vec::with_capacity(chunk.used() - gone * matches.len());
            let mut from = chunk.start;
            for &at in &matches {
                buf.extend_from_slice(&chunk.buf[from..at]);
                from = at + gone;
            }
            buf.extend_from_slice(&chunk.buf[from..chunk.end]);
            chunk.end = buf.len();
            chunk.start = 0;
            chunk.buf = buf.into_boxed_slice();
            chunk.count -= matches.len();
            removed += matches.len();
        }
        self.len -= removed;
        if removed > 0 {
            self.chunks.retain(|c| c.count > 0);
            self.merge_small();
        }
        removed
    }

    /// Joins neighbouring chunks that fit in one, after removals in the middle.
    fn merge_small(&mut self) {
        let mut i = 0;
        while i + 1 < self.chunks.len() {
            let (a, b) = (&self.chunks[i], &self.chunks[i + 1]);
            if a.used() + b.used() <= CHUNK_BYTES / 2 {
                let mut buf = Vec::with_capacity(a.used() + b.used());
                buf.extend_from_slice(&a.buf[a.start..a.end]);
                buf.extend_from_slice(&b.buf[b.start..b.end]);
                let count = a.count + b.count;
                let end = buf.len();
                self.chunks[i] = Chunk {
                    buf: buf.into_boxed_slice(),
                    start: 0,
                    end,
                    count,
                };
                self.chunks.remove(i + 1);
            } else {
                i += 1;
            }
        }
    }

    /// Makes room for about `bytes` more bytes of elements at the head or the tail (a
    /// push of several elements, a load: one allocation instead of growing step by step).
    pub fn reserve(&mut self, bytes: usize, at_head: bool) {
        let side = if at_head { Side::Front } else { Side::Back };
        let several = self.chunks.len() > 1;
        let end = match side {
            Side::Front => self.chunks.front_mut(),
            Side::Back => self.chunks.back_mut(),
        };
        match end {
            Some(chunk) => {
                let room = CHUNK_BYTES.saturating_sub(chunk.used()).min(bytes);
                chunk.reserve(room, side, several);
            }
            None => {
                self.chunks.reserve_exact(1);
                let chunk = Chunk::with_capacity(bytes.min(CHUNK_BYTES), side);
                self.chunks.push_back(chunk);
            }
        }
    }

    /// The bytes `element` takes packed (for [`ListValue::reserve`]).
    pub fn packed_len(element: &[u8]) -> usize {
        encoded_len(element.len())
    }

    /// The elements, head first (reversible).
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            chunks: self.chunks.iter(),
            front: &[],
            back: &[],
            remaining: self.len,
        }
    }

    /// The elements from `index` on (LRANGE): the walk starts there.
    pub fn iter_from(&self, index: usize) -> Iter<'_> {
        if index >= self.len {
            return Iter {
                chunks: self.chunks.range(0..0),
                front: &[],
                back: &[],
                remaining: 0,
            };
        }
        let (c, i) = self.locate(index);
        let front = match self.chunks.get(c) {
            Some(chunk) => &chunk.buf[chunk.offset_of(i)..chunk.end],
            None => &[],
        };
        Iter {
            chunks: self.chunks.range(c + 1..),
            front,
            back: &[],
            remaining: self.len - index,
        }
    }
}

/// The elements of a [`ListValue`], from either end.
pub struct Iter<'a> {
    /// Chunks not yet entered from either end.
    chunks: std::collections::vec_deque::Iter<'a, Chunk>,
    /// What is left of the chunk being read from the head.
    front: &'a [u8],
    /// What is left of the chunk being read from the tail.
    back: &'a [u8],
    remaining: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        while self.front.is_empty() {
            self.front = match self.chunks.next() {
                Some(chunk) => &chunk.buf[chunk.start..chunk.end],
                // The last chunk is the one the tail is reading.
                None if !self.back.is_empty() => std::mem::take(&mut self.back),
                None => return None,
            };
        }
        let (body, len) = read_forward(self.front, 0);
        let element = &self.front[body..body + len];
        self.front = &self.front[body + len + length_width(len)..];
        self.remaining -= 1;
        Some(element)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<'a> DoubleEndedIterator for Iter<'a> {
    fn next_back(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        while self.back.is_empty() {
            self.back = match self.chunks.next_back() {
                Some(chunk) => &chunk.buf[chunk.start..chunk.end],
                None if !self.front.is_empty() => std::mem::take(&mut self.front),
                None => return None,
            };
        }
        let (body, len) = read_backward(self.back, self.back.len());
        let element = &self.back[body..body + len];
        self.back = &self.back[..body - length_width(len)];
        self.remaining -= 1;
        Some(element)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> FromIterator<&'a [u8]> for ListValue {
    fn from_iter<I: IntoIterator<Item = &'a [u8]>>(iter: I) -> ListValue {
        let mut list = ListValue::new();
        list.extend(iter);
        list
    }
}

impl<'a> Extend<&'a [u8]> for ListValue {
    fn extend<I: IntoIterator<Item = &'a [u8]>>(&mut self, iter: I) {
        for element in iter {
            self.push_back(element);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn elements_of_every_length_width_read_back() {
        let long = vec![b'x'; 20_000];
        let mid = vec![b'y'; 300];
        let elements: Vec<&[u8]> = vec![b"", b"f", &mid, b"v", &long, &[0x80, 0xC0, 0xff]];
        let size: usize = elements.iter().map(|e| encoded_len(e.len())).sum();
        assert_eq!(size, 2 + 3 + 304 + 3 + 20_018 + 5);
        let mut packed = vec![0u8; size];
        let mut at = 0;
        for element in &elements {
            let end = at + encoded_len(element.len());
            write_element(&mut packed[at..end], element);
            at = end;
        }
        let mut forward = Vec::new();
        let mut at = 0;
        while at < packed.len() {
            let (start, len) = read_forward(&packed, at);
            forward.push(&packed[start..start + len]);
            at = start + len + length_width(len);
        }
        assert_eq!(forward, elements);
        let mut backward = Vec::new();
        let mut end = packed.len();
        while end > 0 {
            let (start, len) = read_backward(&packed, end);
            backward.push(&packed[start..start + len]);
            end = start - length_width(len);
        }
        backward.reverse();
        assert_eq!(backward, elements);
    }

    #[derive(Debug, Clone)]
    enum Op {
        PushFront(Vec<u8>),
        PushBack(Vec<u8>),
        PopFront,
        PopBack,
        Set(usize, Vec<u8>),
        Insert(usize, Vec<u8>),
        Trim(usize, usize),
        RemoveEqual(Vec<u8>, usize, bool),
    }

    fn element() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            8 => prop::collection::vec(0u8..4, 0..4),
            3 => prop::collection::vec(any::<u8>(), 100..300),
            1 => prop::collection::vec(any::<u8>(), 16_000..17_000),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            20 => element().prop_map(Op::PushFront),
            20 => element().prop_map(Op::PushBack),
            6 => Just(Op::PopFront),
            6 => Just(Op::PopBack),
            3 => (any::<usize>(), element()).prop_map(|(i, e)| Op::Set(i, e)),
            3 => (any::<usize>(), element()).prop_map(|(i, e)| Op::Insert(i, e)),
            1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Trim(a, b)),
            1 => (element(), 0usize..4, any::<bool>()).prop_map(|(e, n, t)| Op::RemoveEqual(e, n, t)),
        ]
    }

    fn check(list: &ListValue, model: &VecDeque<Vec<u8>>) {
        assert_eq!(list.len(), model.len());
        assert_eq!(
            list.chunks.iter().map(|c| c.count).sum::<usize>(),
            model.len()
        );
        assert!(list.iter().eq(model.iter().map(|e| &e[..])));
        assert!(list.iter().rev().eq(model.iter().rev().map(|e| &e[..])));
        for (i, e) in model.iter().enumerate() {
            assert_eq!(list.get(i), Some(&e[..]));
        }
        for from in [0, model.len() / 3, model.len().saturating_sub(1)] {
            assert!(list
                .iter_from(from)
                .eq(model.iter().skip(from).map(|e| &e[..])));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn behaves_as_a_deque(ops in prop::collection::vec(op(), 0..600)) {
            let mut list = ListValue::new();
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            for (n, op) in ops.into_iter().enumerate() {
                match op {
                    Op::PushFront(e) => { list.push_front(&e); model.push_front(e); }
                    Op::PushBack(e) => { list.push_back(&e); model.push_back(e); }
                    Op::PopFront => prop_assert_eq!(
                        list.pop_front().map(|e| e.to_vec()), model.pop_front()),
                    Op::PopBack => prop_assert_eq!(
                        list.pop_back().map(|e| e.to_vec()), model.pop_back()),
                    Op::Set(i, e) => {
                        let i = if model.is_empty() { i } else { i % model.len() };
                        let done = list.set(i, &e);
                        prop_assert_eq!(done, i < model.len());
                        if done { model[i] = e; }
                    }
                    Op::Insert(i, e) => {
                        let i = i % (model.len() + 1);
                        list.insert(i, &e);
                        model.insert(i, e);
                    }
                    Op::Trim(a, b) => {
                        if !model.is_empty() {
                            let (a, b) = (a % model.len(), b % model.len());
                            let (from, to) = (a.min(b), a.max(b));
                            list.keep_range(from, to);
                            model.truncate(to + 1);
                            model.drain(..from);
                        }
                    }
                    Op::RemoveEqual(e, limit, tail) => {
                        let limit = if limit == 0 { usize::MAX } else { limit };
                        let mut expect = 0;
                        if tail {
                            let mut i = model.len();
                            while i > 0 && expect < limit {
                                i -= 1;
                                if model[i] == e { model.remove(i); expect += 1; }
                            }
                        } else {
                            let mut i = 0;
                            while i < model.len() && expect < limit {
                                if model[i] == e { model.remove(i); expect += 1; } else { i += 1; }
                            }
                        }
                        prop_assert_eq!(list.remove_equal(&e, limit, tail), expect);
                    }
                }
                if n % 32 == 0 {
                    check(&list, &model);
                }
            }
            check(&list, &model);
        }
    }

    #[test]
    fn short_elements_cost_their_length_and_two_bytes() {
        let mut list = ListValue::new();
        for i in 0..100_000u32 {
            list.push_front(format!("{:03}", i % 1000).as_bytes());
        }
        // 5 bytes each, chunks of 8 KB: within an eighth of the elements' bytes.
        assert!(list.allocated() < 500_000 * 9 / 8, "{}", list.allocated());
        assert_eq!(list.get(99_999), Some(&b"000"[..]));
    }

    #[test]
    fn every_length_width_reads_back_both_ways() {
        for len in [0, 1, 127, 128, 16_383, 16_384, 70_000] {
            let element = vec![7u8; len];
            let mut buf = vec![0; encoded_len(len)];
            write_element(&mut buf, &element);
            assert_eq!(read_forward(&buf, 0), (length_width(len), len));
            assert_eq!(read_backward(&buf, buf.len()), (length_width(len), len));
        }
    }
}
