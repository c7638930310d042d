//! How many bytes an element takes in one of Redis's listpacks (7.0's `listpack.c`):
//! its encoding header, its data and its back-length. Streams decide where a node ends
//! from the size its listpack would have in Redis (`stream-node-max-bytes`), and the RDB
//! writer picks its encodings with [`int_encoded`], [`str_header`] and [`backlen`], so
//! both follow one reading of the format.

/// A listpack with no element: the 6-byte header and the end byte.
pub const EMPTY: usize = 7;

/// Bytes of the back-length that closes an element of `size` bytes (header and data).
pub fn backlen(size: usize) -> usize {
    match size {
        0..=127 => 1,
        128..16383 => 2,
        16383..2097151 => 3,
        2097151..268435455 => 4,
        _ => 5,
    }
}

/// Bytes of integer `n`'s smallest encoding (tag and data, no back-length): 1 for
/// 0..=127, 2 for 13 bits, then 3, 4, 5 and 9 for 16, 24, 32 and 64 bits.
pub fn int_encoded(n: i64) -> usize {
    if (0..=127).contains(&n) {
        1
    } else if (-4096..=4095).contains(&n) {
        2
    } else if i16::try_from(n).is_ok() {
        3
    } else if (-(1 << 23)..(1 << 23)).contains(&n) {
        4
    } else if i32::try_from(n).is_ok() {
        5
    } else {
        9
    }
}

/// Bytes of a string's length header: 1 up to 63 bytes, 2 up to 4095, else 5.
pub fn str_header(len: usize) -> usize {
    match len {
        0..64 => 1,
        64..4096 => 2,
        _ => 5,
    }
}

/// Bytes of integer `n` as an element, in its smallest encoding.
pub fn int(n: i64) -> usize {
    let encoded = int_encoded(n);
    encoded + backlen(encoded)
}

/// Bytes of `s` as an element: as an integer when it is the canonical text of one (as
/// `lpAppend` stores it), else as a string.
pub fn string(s: &[u8]) -> usize {
    if let Some(n) = super::canonical_int(s) {
        return int(n);
    }
    let encoded = str_header(s.len()) + s.len();
    encoded + backlen(encoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_take_their_smallest_encoding() {
        assert_eq!(int(0), 2);
        assert_eq!(int(127), 2);
        assert_eq!(int(128), 3);
        assert_eq!(int(-4096), 3);
        assert_eq!(int(4096), 4);
        assert_eq!(int(-32768), 4);
        assert_eq!(int(32768), 5);
        assert_eq!(int(1 << 23), 6);
        assert_eq!(int(i64::from(i32::MIN)), 6);
        assert_eq!(int(i64::MAX), 10);
    }

    #[test]
    fn strings_are_sized_as_text_or_as_the_integer_they_spell() {
        assert_eq!(string(b""), 2);
        assert_eq!(string(b"completed"), 11);
        assert_eq!(string(b"12"), 2);
        // Not canonical integers: kept as text.
        assert_eq!(string(b"012"), 5);
        assert_eq!(string(b"+1"), 4);
        assert_eq!(string(&[b'x'; 63]), 65);
        assert_eq!(string(&[b'x'; 64]), 67);
        // 2 + 126 bytes need a 2-byte back-length.
        assert_eq!(string(&[b'x'; 126]), 130);
        assert_eq!(string(&[b'x'; 4096]), 4096 + 5 + 2);
    }
}
