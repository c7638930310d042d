//! Zipmaps, the compact hash encoding of Redis 2.4 and older (RDB type 9). Redis 7.0
//! still loads them, converting each to a listpack (or a hash table past the configured
//! limits); here they are only read, never written.
//!
//! Layout: a count byte (254 or more means "count it"), then per pair the field length,
//! the field, the value length, a byte of free space after the value, the value and that
//! free space; then `0xFF`. A length is one byte below 254, else `0xFE` (or `0xFF`) and
//! four bytes little endian. Validated as Redis's deep `zipmapValidateIntegrity` does:
//! every entry inside the blob, at least one pair, and the count right when it is given.

use super::Corrupt;

const BIGLEN: u8 = 254;

/// One field and its value, borrowed from the zipmap.
pub type Pair<'a> = (&'a [u8], &'a [u8]);
const END: u8 = 0xFF;

/// The field/value pairs of `zm`, in order, validated.
pub fn pairs(zm: &[u8]) -> Result<Vec<Pair<'_>>, Corrupt> {
    let bad = || Corrupt("Zipmap integrity check failed.");
    if zm.len() < 2 || zm.last() != Some(&END) {
        return Err(bad());
    }
    // Everything must lie before the terminator, which ends the walk.
    let end = zm.len() - 1;
    let mut out = Vec::new();
    let mut pos = 1;
    while zm.get(pos).ok_or_else(bad)? != &END {
        let (field_len, at) = length(zm, pos, end).ok_or_else(bad)?;
        let field = zm
            .get(at..)
            .and_then(|rest| rest.get(..field_len))
            .ok_or_else(bad)?;
        let (value_len, at) = length(zm, at + field_len, end).ok_or_else(bad)?;
        let free = usize::from(*zm.get(at).ok_or_else(bad)?);
        let value = zm
            .get(at + 1..)
            .and_then(|rest| rest.get(..value_len))
            .ok_or_else(bad)?;
        pos = at + 1 + value_len + free;
        if pos > end {
            return Err(bad());
        }
        out.push((field, value));
    }
    if out.is_empty() || (zm[0] != BIGLEN && usize::from(zm[0]) != out.len()) {
        return Err(bad());
    }
    Ok(out)
}

/// The length encoded at `pos` and where what it measures starts, if both lie before
/// `end`.
fn length(zm: &[u8], pos: usize, end: usize) -> Option<(usize, usize)> {
    let first = *zm.get(pos)?;
    let (len, next) = if first < BIGLEN {
        (usize::from(first), pos + 1)
    } else {
        let bytes = zm.get(pos + 1..pos + 5)?;
        (u32::from_le_bytes(bytes.try_into().ok()?) as usize, pos + 5)
    };
    (next <= end).then_some((len, next))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a zipmap the way Redis 2.4 does, with `free` spare bytes after each value
    /// (test input only).
    pub(crate) fn build(pairs: &[(&[u8], &[u8])], free: u8) -> Vec<u8> {
        let mut zm = vec![u8::try_from(pairs.len()).unwrap_or(BIGLEN).min(BIGLEN)];
        let len = |zm: &mut Vec<u8>, n: usize| {
            if n < usize::from(BIGLEN) {
                zm.push(n as u8);
            } else {
                zm.push(BIGLEN);
                zm.extend_from_slice(&(n as u32).to_le_bytes());
            }
        };
        for (field, value) in pairs {
            len(&mut zm, field.len());
            zm.extend_from_slice(field);
            len(&mut zm, value.len());
            zm.push(free);
            zm.extend_from_slice(value);
            zm.extend(std::iter::repeat_n(0, usize::from(free)));
        }
        zm.push(END);
        zm
    }

    #[test]
    fn reads_short_and_long_lengths_and_free_space() {
        let long = vec![b'v'; 300];
        let zm = build(&[(b"f1", b"v1"), (b"big", &long), (b"", b"")], 3);
        let got = pairs(&zm).unwrap();
        assert_eq!(
            got,
            vec![
                (&b"f1"[..], &b"v1"[..]),
                (&b"big"[..], &long[..]),
                (&b""[..], &b""[..])
            ]
        );
    }

    #[test]
    fn redis_2_4_asset_bytes() {
        // The zipmap of tests/assets/hash-zipmap.rdb: {f1: v1, f2: v2}.
        let zm = b"\x02\x02f1\x02\x00v1\x02f2\x02\x00v2\xff";
        assert_eq!(
            pairs(zm).unwrap(),
            vec![(&b"f1"[..], &b"v1"[..]), (&b"f2"[..], &b"v2"[..])]
        );
    }

    #[test]
    fn damage_is_an_error_never_a_panic() {
        let zm = build(&[(b"field", b"value"), (b"g", b"w")], 1);
        for cut in 0..zm.len() {
            assert!(pairs(&zm[..cut]).is_err(), "cut {cut}");
        }
        for i in 0..zm.len() {
            for flip in [0x01, 0x80, 0xFF] {
                let mut bad = zm.clone();
                bad[i] ^= flip;
                let _ = pairs(&bad);
            }
        }
        // Empty, or a count that disagrees.
        assert!(pairs(b"\x00\xff").is_err());
        let mut wrong_count = zm.clone();
        wrong_count[0] = 3;
        assert!(pairs(&wrong_count).is_err());
        let mut uncounted = zm.clone();
        uncounted[0] = BIGLEN;
        assert_eq!(pairs(&uncounted).unwrap().len(), 2);
        // A value length past the end.
        assert!(pairs(b"\x01\x01f\xfe\xff\xff\xff\x7f\x00\xff").is_err());
    }
}
