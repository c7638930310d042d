//! LEB128 varints for the packed encodings this crate writes (stream nodes, small sorted
//! sets' scores): seven bits a byte, low bits first, the high bit set on every byte but
//! the last. Readers index the buffer directly: it is one this crate wrote.

/// `value`'s bytes (the first `.1` of them).
#[inline]
pub(super) fn encode(mut value: u64) -> ([u8; 10], usize) {
    let mut out = [0u8; 10];
    let mut n = 0;
    while value >= 0x80 {
        out[n] = value as u8 | 0x80;
        value >>= 7;
        n += 1;
    }
    out[n] = value as u8;
    (out, n + 1)
}

/// Appends `value`.
#[inline]
pub(super) fn put(out: &mut Vec<u8>, value: u64) {
    let (bytes, n) = encode(value);
    out.extend_from_slice(&bytes[..n]);
}

/// The bytes [`put`] writes for `value`.
pub(super) fn len(value: u64) -> usize {
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reads the varint at `*at`, moving past it.
#[inline]
pub(super) fn get(buf: &[u8], at: &mut usize) -> u64 {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = buf[*at];
        *at += 1;
        value |= u64::from(byte & 0x7F) << shift;
        if byte < 0x80 {
            return value;
        }
        shift += 7;
    }
}

/// Appends `value` written backwards, to be read from its last byte ([`get_back`]).
pub(super) fn put_back(out: &mut Vec<u8>, value: u64) {
    let start = out.len();
    put(out, value);
    out[start..].reverse();
}

/// Reads the backwards varint that ends at `*end`, moving before it.
pub(super) fn get_back(buf: &[u8], end: &mut usize) -> u64 {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        *end -= 1;
        let byte = buf[*end];
        value |= u64::from(byte & 0x7F) << shift;
        if byte < 0x80 {
            return value;
        }
        shift += 7;
    }
}

/// A signed value as an unsigned one, small magnitudes small (zigzag).
pub(super) fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub(super) fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_both_ways() {
        for value in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX,
        ] {
            let mut buf = vec![0xAA];
            put(&mut buf, value);
            assert_eq!(buf.len() - 1, len(value));
            let mut at = 1;
            assert_eq!(get(&buf, &mut at), value);
            assert_eq!(at, buf.len());
            let mut back = vec![0xAA];
            put_back(&mut back, value);
            let mut end = back.len();
            assert_eq!(get_back(&back, &mut end), value);
            assert_eq!(end, 1);
        }
        for value in [
            0,
            1,
            -1,
            63,
            -64,
            64,
            i64::MAX,
            i64::MIN,
            1 << 53,
            -(1 << 53),
        ] {
            assert_eq!(unzigzag(zigzag(value)), value);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(63), 126);
    }
}
