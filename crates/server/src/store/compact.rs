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
    /// [`SHARED_FROM`] bytes or more, which a snapshot being written may also hold.
    Shared(Arc<[u8]>),
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
            CompactBytes::Shared(bytes.into())
        }
    }

    /// Takes ownership of a vector (no copy when it goes to the heap unshared).
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        if bytes.len() <= INLINE_CAPACITY || bytes.len() >= SHARED_FROM {
            Self::new(&bytes)
        } else {
            CompactBytes::Heap(bytes.into_boxed_slice())
        }
    }

    /// The reference-counted bytes of a large value, for a snapshot to write later.
    pub fn shared(&self) -> Option<&Arc<[u8]>> {
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
            CompactBytes::Shared(b) => b,
        }
    }

    /// Appends `tail`, keeping spare room for the next append.
    pub fn append(&mut self, tail: &[u8]) {
        if let CompactBytes::Growable(v) = self {
            v.extend_from_slice(tail);
            return;
        }
        let mut v = Vec::with_capacity((self.len() + tail.len()) * 2);
        v.extend_from_slice(self.as_bytes());
        v.extend_from_slice(tail);
        *self = CompactBytes::Growable(Box::new(v));
    }

    /// The bytes, for changing in place (the length stays). Shared bytes a snapshot
    /// still holds are copied first.
    #[inline]
    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        if let CompactBytes::Shared(b) = self {
            if Arc::get_mut(b).is_none() {
                *b = Arc::from(&b[..]);
            }
        }
        match self {
            CompactBytes::Inline { len, data } => &mut data[..*len as usize],
            CompactBytes::Heap(b) => b,
            CompactBytes::Growable(v) => v,
            // Unique now: copied just above if it was not.
            CompactBytes::Shared(b) => Arc::get_mut(b).map_or(&mut [], |b| b),
        }
    }

    /// The bytes as a vector whose length may change in place (made growable first,
    /// once): for values rewritten often, such as HyperLogLogs.
    pub fn vec_mut(&mut self) -> &mut Vec<u8> {
        let bytes = match self {
            CompactBytes::Growable(_) => None,
            // A heap value's allocation is taken over as it is, not copied.
            CompactBytes::Heap(b) => Some(std::mem::take(b).into_vec()),
            CompactBytes::Inline { .. } | CompactBytes::Shared(_) => Some(self.as_bytes().to_vec()),
        };
        if let Some(bytes) = bytes {
            *self = CompactBytes::Growable(Box::new(bytes));
        }
        match self {
            CompactBytes::Growable(v) => v,
            // Made growable just above.
            _ => unreachable!(),
        }
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
            // The counts in front of the bytes.
            CompactBytes::Shared(b) => b.len() + 2 * std::mem::size_of::<usize>(),
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
        value.append(b"x");
        assert_eq!(value.len(), SHARED_FROM + 1);
        assert!(value.is_growable());
        assert!(CompactBytes::from_vec(vec![0; SHARED_FROM])
            .shared()
            .is_some());
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
