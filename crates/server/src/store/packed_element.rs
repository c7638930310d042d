//! Elements packed one after another in a buffer, each `header bytes trailer`: its length
//! written forwards before it and backwards after it, so a run of them is walked from
//! either end. A length under 128 is one byte; under 16,384 two; anything longer nine.
//! Lists keep their chunks this way (`super::list`).

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
