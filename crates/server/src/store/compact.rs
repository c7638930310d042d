//! `CompactBytes`: binary-safe bytes stored inline when short, boxed otherwise. Keys and
//! small values are mostly short, so most entries cost no allocation of their own.
//! Large ones are reference-counted: a snapshot being written takes a reference instead
//! of a copy, and a change while it is held copies the bytes first (copy on write, as
//! Redis's forked child shares the parent's pages).
//!
//! It hashes and compares exactly like `[u8]`, so maps keyed by it are looked up with a
//! plain `&[u8]` (no copy of the request's key to probe the map).

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// Bytes up to this length live inside the value itself: 24 bytes in all with the tag.
pub const INLINE_CAPACITY: usize = 22;

/// Bytes from this length on are reference-counted ([`CompactBytes::Shared`]): the size
/// from which a snapshot writes a string from where it is rather than from a copy.
pub const SHARED_FROM: usize = 256 * 1024;

/// A string growing past this size gets this much room beyond what it needs; below it,
/// its size doubles (Redis's `SDS_MAX_PREALLOC`). Doubling a large string would keep up
/// to its own size unused, all of it in `used_memory` and counted against `maxmemory`.
pub const GROW_SPARE_AT_MOST: usize = 1024 * 1024;

/// The capacity of a string growing to `needed` bytes.
fn grown_capacity(needed: usize) -> usize {
    if needed < GROW_SPARE_AT_MOST {
        needed * 2
    } else {
        needed.saturating_add(GROW_SPARE_AT_MOST)
    }
}

/// `bytes` in a vector of their own, with a growing string's room for `additional`
/// more (none asked, none given).
fn copy_with_room(bytes: &[u8], additional: usize) -> Vec<u8> {
    let needed = bytes.len().saturating_add(additional);
    let mut copy = Vec::with_capacity(if additional == 0 {
        needed
    } else {
        grown_capacity(needed)
    });
    copy.extend_from_slice(bytes);
    copy
}

/// Shared bytes for changing: where they are when nothing else holds them, else a copy
/// (with room for `additional` more) that replaces them here, the holder keeping its
/// own (copy on write).
fn unshared(bytes: &mut Arc<Vec<u8>>, additional: usize) -> &mut Vec<u8> {
    if Arc::get_mut(bytes).is_none() {
        *bytes = Arc::new(copy_with_room(bytes, additional));
    }
    match Arc::get_mut(bytes) {
        Some(unique) => unique,
        // Unique now: replaced just above if it was not.
        None => unreachable!(),
    }
}

/// Owned bytes, inline up to [`INLINE_CAPACITY`], on the heap beyond.
#[derive(Clone)]
pub enum CompactBytes {
    /// Short bytes kept in place.
    Inline {
        /// How many of `data` are used.
        len: u8,
        /// The bytes, zero-padded.
        data: [u8; INLINE_CAPACITY],
    },
    /// Longer bytes in one exact-size allocation.
    Heap(Box<[u8]>),
    /// Bytes that are being appended to (APPEND): spare capacity makes each append
    /// amortised O(1) instead of a copy of the whole string, like Redis's sds.
    Growable(Box<Vec<u8>>),
    /// [`SHARED_FROM`] bytes or more, which a snapshot being written may also hold; grown
    /// in place (with the room of a growing string) while nothing else holds them.
    Shared(Arc<Vec<u8>>),
}

/// No bytes (inline, no allocation).
impl Default for CompactBytes {
    fn default() -> Self {
        CompactBytes::Inline {
            len: 0,
            data: [0; INLINE_CAPACITY],
        }
    }
}

impl CompactBytes {
    /// Copies `bytes`; no allocation when they fit inline.
    pub fn new(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_CAPACITY {
            let mut data = [0u8; INLINE_CAPACITY];
            data[..bytes.len()].copy_from_slice(bytes);
            CompactBytes::Inline {
                len: bytes.len() as u8,
                data,
            }
        } else if bytes.len() < SHARED_FROM {
            CompactBytes::Heap(bytes.into())
        } else {
            CompactBytes::Shared(Arc::new(bytes.to_vec()))
        }
    }

    /// Takes ownership of a vector (no copy unless it fits inline).
    pub fn from_vec(mut bytes: Vec<u8>) -> Self {
        if bytes.len() <= INLINE_CAPACITY {
            Self::new(&bytes)
        } else if bytes.len() < SHARED_FROM {
            CompactBytes::Heap(bytes.into_boxed_slice())
        } else {
            bytes.shrink_to_fit();
            CompactBytes::Shared(Arc::new(bytes))
        }
    }

    /// The reference-counted bytes of a large value, for a snapshot to write later.
    pub fn shared(&self) -> Option<&Arc<Vec<u8>>> {
        match self {
            CompactBytes::Shared(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            CompactBytes::Inline { len, data } => &data[..*len as usize],
            CompactBytes::Heap(b) => b,
            CompactBytes::Growable(v) => v,
            CompactBytes::Shared(b) => b.as_slice(),
        }
    }

    /// Appends `tail`, keeping spare room for the next append.
    pub fn append(&mut self, tail: &[u8]) {
        self.vec_with_room(tail.len()).extend_from_slice(tail);
    }

    /// The bytes, for changing in place (the length stays). Shared bytes a snapshot
    /// still holds are copied first.
    #[inline]
    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        match self {
            CompactBytes::Inline { len, data } => &mut data[..*len as usize],
            CompactBytes::Heap(b) => b,
            CompactBytes::Growable(v) => v,
            CompactBytes::Shared(b) => unshared(b, 0),
        }
    }

    /// The bytes as a vector whose length may change in place (made growable first,
    /// once): for values rewritten often, such as HyperLogLogs.
    pub fn vec_mut(&mut self) -> &mut Vec<u8> {
        self.vec_with_room(0)
    }

    /// The bytes as a vector with room for `additional` more, for changes that grow them
    /// (APPEND, SETRANGE, SETBIT, BITFIELD). Made growable once: a heap value's
    /// allocation is taken over as it is, inline bytes are copied, and shared bytes are
    /// changed where they are unless a snapshot still holds them. When it must grow, it
    /// grows as Redis's strings do ([`GROW_SPARE_AT_MOST`]): small steps cost amortised
    /// O(1), and a large string holds at most 1 MB it does not use.
    pub fn vec_with_room(&mut self, additional: usize) -> &mut Vec<u8> {
        let needed = self.len().saturating_add(additional);
        let bytes = match self {
            // Large from now on: shareable with a snapshot (the vector moves, not its bytes).
            CompactBytes::Growable(v) if needed >= SHARED_FROM => Some(std::mem::take(&mut **v)),
            CompactBytes::Growable(_) | CompactBytes::Shared(_) => None,
            CompactBytes::Heap(b) => Some(std::mem::take(b).into_vec()),
            CompactBytes::Inline { .. } => Some(copy_with_room(self.as_bytes(), additional)),
        };
        if let Some(bytes) = bytes {
            *self = if needed >= SHARED_FROM {
                CompactBytes::Shared(Arc::new(bytes))
            } else {
                CompactBytes::Growable(Box::new(bytes))
            };
        }
        let v = match self {
            CompactBytes::Growable(v) => v,
            CompactBytes::Shared(b) => unshared(b, additional),
            // Made growable just above.
            CompactBytes::Inline { .. } | CompactBytes::Heap(_) => unreachable!(),
        };
        if needed > v.capacity() {
            v.reserve_exact(grown_capacity(needed) - v.len());
        }
        v
    }

    /// Whether the bytes were changed in place (APPEND, HyperLogLog updates): Redis
    /// reports such strings as `raw` whatever their length.
    pub fn is_growable(&self) -> bool {
        matches!(self, CompactBytes::Growable(_))
    }

    /// Heap bytes owned beyond the value itself, for memory accounting.
    pub fn heap_size(&self) -> usize {
        match self {
            CompactBytes::Inline { .. } => 0,
            CompactBytes::Heap(b) => b.len(),
            CompactBytes::Growable(v) => v.capacity() + std::mem::size_of::<Vec<u8>>(),
            // The counts and the vector in front of the bytes.
            CompactBytes::Shared(b) => {
                b.capacity() + 2 * std::mem::size_of::<usize>() + std::mem::size_of::<Vec<u8>>()
            }
        }
    }
}

impl Deref for CompactBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for CompactBytes {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Hash for CompactBytes {
    // Must hash exactly as `[u8]` does, for `Borrow<[u8]>` lookups.
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl PartialEq for CompactBytes {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for CompactBytes {}

impl PartialOrd for CompactBytes {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CompactBytes {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl fmt::Debug for CompactBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

impl From<&[u8]> for CompactBytes {
    fn from(bytes: &[u8]) -> Self {
        Self::new(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn large_bytes_are_shared_and_copied_on_write() {
        let mut value = CompactBytes::new(&vec![1u8; SHARED_FROM]);
        let snapshot = value.shared().cloned().unwrap();
        value.as_mut_bytes()[0] = 2;
        // The holder keeps the bytes as they were; the value got its own copy.
        assert_eq!(snapshot[0], 1);
        assert_eq!(value[0], 2);
        assert!(value.shared().is_some());
        // Unshared, a change needs no copy.
        let before = value.as_ptr();
        value.as_mut_bytes()[1] = 3;
        assert_eq!(value.as_ptr(), before);
        // Grown where it is while nothing else holds it, and still shareable.
        value.append(b"x");
        assert_eq!(value.len(), SHARED_FROM + 1);
        let before = value.as_ptr();
        value.append(b"y");
        assert_eq!(value.as_ptr(), before);
        let snapshot = value.shared().cloned().unwrap();
        value.append(b"z");
        assert_eq!(
            (snapshot.len(), value.len()),
            (SHARED_FROM + 2, SHARED_FROM + 3)
        );
        // A growing string that reaches the size becomes shareable.
        let mut grown = CompactBytes::new(&[5u8; 100]);
        grown.append(&vec![6u8; SHARED_FROM]);
        assert!(grown.shared().is_some());
        assert_eq!(grown.len(), SHARED_FROM + 100);
        assert!(CompactBytes::from_vec(vec![0; SHARED_FROM])
            .shared()
            .is_some());
    }

    #[test]
    fn a_growing_string_doubles_when_small_and_keeps_at_most_a_megabyte_spare_when_large() {
        let capacity = |value: &CompactBytes| match value {
            CompactBytes::Growable(v) => v.capacity(),
            CompactBytes::Shared(v) => v.capacity(),
            _ => 0,
        };
        let mut small = CompactBytes::new(&[0u8; 100]);
        small.append(b"z");
        assert_eq!(capacity(&small), 202);
        let mut large = CompactBytes::new(&vec![1u8; 3 * GROW_SPARE_AT_MOST]);
        large.append(b"x");
        assert_eq!(capacity(&large), 4 * GROW_SPARE_AT_MOST + 1);
        // Appends within the room use it; past it, the string gets what it needs plus 1 MB.
        for _ in 0..1000 {
            large.append(b"y");
        }
        assert_eq!(capacity(&large), 4 * GROW_SPARE_AT_MOST + 1);
        large.append(&vec![2u8; GROW_SPARE_AT_MOST]);
        assert_eq!(capacity(&large), 5 * GROW_SPARE_AT_MOST + 1001);
        assert_eq!(large.len(), 4 * GROW_SPARE_AT_MOST + 1001);
        // Made growable without growth, a value keeps its size.
        let mut hll = CompactBytes::new(&[3u8; 50]);
        assert_eq!(hll.vec_mut().capacity(), 50);
    }

    #[test]
    fn inline_and_heap() {
        assert_eq!(std::mem::size_of::<CompactBytes>(), 24);
        let short = CompactBytes::new(b"abc");
        assert!(matches!(short, CompactBytes::Inline { .. }));
        let long = CompactBytes::new(&[7u8; 100]);
        assert!(matches!(long, CompactBytes::Heap(_)));
        assert_eq!(&*long, &[7u8; 100][..]);
        assert_eq!(CompactBytes::new(b""), CompactBytes::from_vec(Vec::new()));
        let mut grown = CompactBytes::new(b"ab");
        for _ in 0..100 {
            grown.append(b"cd");
        }
        assert_eq!(grown.len(), 202);
        assert!(matches!(grown, CompactBytes::Growable(_)));
        assert_eq!(&grown[..4], b"abcd");
    }

    #[test]
    fn map_lookup_by_slice() {
        let mut m = HashMap::new();
        m.insert(CompactBytes::new(b"key"), 1);
        m.insert(CompactBytes::new(&[b'x'; 40]), 2);
        assert_eq!(m.get(&b"key"[..]), Some(&1));
        assert_eq!(m.get(&[b'x'; 40][..]), Some(&2));
    }
}
