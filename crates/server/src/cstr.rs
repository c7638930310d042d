//! What C's string functions make of a client's bytes, where Redis reads arguments with
//! them: a C string ends at its first NUL, `isspace` is the "C" locale's, and
//! `string2ull` falls back to `strtoull`; and `strerror`'s wording of an error. One
//! place for these, so every parser that copies Redis's C behaviour (floats, stream
//! IDs, quoted errors) copies it alike.

/// What C sees of `bytes` read as a string: the bytes before the first NUL.
pub fn c_string(bytes: &[u8]) -> &[u8] {
    bytes.split(|&b| b == 0).next().unwrap_or_default()
}

/// C's `isspace` in the "C" locale.
pub fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Redis's `string2ull`: a strict integer (`string2ll`) that is not negative, or else
/// whatever C's `strtoull` reads whole: leading white space, a `+` or `-` sign (`-`
/// wraps, as in C), leading zeros; nothing after the digits, nothing out of range.
pub fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(n) = redline_resp::parse_i64(s) {
        return u64::try_from(n).ok();
    }
    let start = s.iter().position(|&b| !is_c_space(b))?;
    let (negative, digits) = match s[start] {
        b'-' => (true, &s[start + 1..]),
        b'+' => (false, &s[start + 1..]),
        _ => (false, &s[start..]),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })?;
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// C's `strtoll` in base 10 where Redis requires it to read the whole string: leading
/// white space, a `+` or `-` sign, digits; out of range saturates (Redis does not look
/// at `errno` there). With no digits `strtoll` leaves its end at the string's start,
/// which is its end only for an empty string: that reads as 0.
pub fn strtoll_whole(s: &[u8]) -> Option<i64> {
    let start = s.iter().position(|&b| !is_c_space(b)).unwrap_or(s.len());
    let (negative, digits) = match s[start..].first() {
        Some(b'-') => (true, &s[start + 1..]),
        Some(b'+') => (false, &s[start + 1..]),
        _ => (false, &s[start..]),
    };
    if digits.is_empty() {
        return s.is_empty().then_some(0);
    }
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = digits.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    });
    Some(if negative {
        0i64.checked_sub_unsigned(magnitude).unwrap_or(i64::MIN)
    } else {
        i64::try_from(magnitude).unwrap_or(i64::MAX)
    })
}

/// An I/O error as C's `strerror` words it (Rust adds ` (os error N)`), as Redis quotes
/// it in its errors and logs.
pub fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_c_does() {
        assert_eq!(c_string(b"ab\0cd"), b"ab");
        assert_eq!(c_string(b"\0"), b"");
        assert_eq!(string2ull(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(string2ull(b" +07"), Some(7));
        assert_eq!(string2ull(b"-01"), Some(u64::MAX));
        for bad in [
            &b"-1"[..],
            b"",
            b" ",
            b"7 ",
            b"18446744073709551616",
            b"0x1",
        ] {
            assert_eq!(string2ull(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
