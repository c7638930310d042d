//! Elements packed one after another in a buffer, each `header bytes trailer`: its length
//! written forwards before it and backwards after it, so a run of them is walked from
//! either end. A length under 128 is one byte; under 16,384 two; anything longer nine.
//! Lists keep their chunks this way (`super::list`); a stream entry's fields are one
//! such run ([`PackedElements`]).

use std::fmt;

/// The encoded size of an element of `len` bytes.
#[inline]
pub(super) fn encoded_len(len: usize) -> usize {
    len + 2 * length_width(len)
}

#[inline]
pub(super) fn length_width(len: usize) -> usize {
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
pub(super) fn write_element(out: &mut [u8], element: &[u8]) {
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
pub(super) fn read_forward(buf: &[u8], at: usize) -> (usize, usize) {
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
pub(super) fn read_backward(buf: &[u8], end: usize) -> (usize, usize) {
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

/// A short sequence of elements in one allocation of its own, e.g. a stream entry's
/// field/value pairs: an element of up to 127 bytes costs its length plus two bytes, and
/// the entry owns its bytes. (Kept as views into the request that carried them, 1M
/// entries of `f v` pinned 458 MB of read buffers where Redis takes 26 MB.)
#[derive(Clone, PartialEq, Eq)]
pub struct PackedElements {
    packed: Box<[u8]>,
    count: u32,
}

impl PackedElements {
    /// Packs `elements` (at most `u32::MAX` of them: a request holds fewer).
    pub fn new<'a, I>(elements: I) -> PackedElements
    where
        I: IntoIterator<Item = &'a [u8]>,
        I::IntoIter: Clone,
    {
        let elements = elements.into_iter();
        let size = elements.clone().map(|e| encoded_len(e.len())).sum();
        let mut packed = vec![0u8; size].into_boxed_slice();
        let mut at = 0;
        let mut count = 0u32;
        for element in elements {
            let end = at + encoded_len(element.len());
            write_element(&mut packed[at..end], element);
            at = end;
            count = count.saturating_add(1);
        }
        PackedElements { packed, count }
    }

    /// How many elements it holds.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The elements, in order.
    pub fn iter(&self) -> PackedIter<'_> {
        PackedIter {
            packed: &self.packed,
            at: 0,
            left: self.len(),
        }
    }

    /// Bytes it allocated.
    pub fn heap_size(&self) -> usize {
        self.packed.len()
    }
}

impl fmt::Debug for PackedElements {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|e| String::from_utf8_lossy(e)))
            .finish()
    }
}

/// The elements of a [`PackedElements`], front to back.
pub struct PackedIter<'a> {
    packed: &'a [u8],
    at: usize,
    left: usize,
}

impl<'a> Iterator for PackedIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        let (start, len) = read_forward(self.packed, self.at);
        self.at = start + len + length_width(len);
        self.left -= 1;
        Some(&self.packed[start..start + len])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for PackedIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_of_every_length_width_read_back() {
        let long = vec![b'x'; 20_000];
        let mid = vec![b'y'; 300];
        let elements: Vec<&[u8]> = vec![b"", b"f", &mid, b"v", &long, &[0x80, 0xC0, 0xff]];
        let packed = PackedElements::new(elements.iter().copied());
        assert_eq!(packed.len(), elements.len());
        assert_eq!(packed.iter().collect::<Vec<_>>(), elements);
        assert_eq!(packed.iter().len(), elements.len());
        assert_eq!(packed.heap_size(), 2 + 3 + 304 + 3 + 20_018 + 5);
        let empty = PackedElements::new(std::iter::empty());
        assert!(empty.is_empty());
        assert_eq!(empty.iter().next(), None);
    }
}
