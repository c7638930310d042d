//! The textual scalars of RESP: integers, lengths, doubles, booleans and big numbers.
//!
//! Integers follow Redis's `string2ll` exactly (no sign other than a leading `-`, no
//! leading zeros, no `-0`, no spaces), so a length Redis rejects is rejected here too.

/// Parses a signed 64-bit decimal integer the way Redis's `string2ll` does: an optional
/// `-`, then digits without a leading zero (`0` alone excepted); no `+`, no `-0`, no
/// spaces. Overflow is detected with checked arithmetic, never wrapped.
///
/// Redis reads request headers, lengths and integer arguments this way, so a number it
/// refuses is refused here too.
///
/// ```
/// use redline_resp::parse_i64;
///
/// assert_eq!(parse_i64(b"-42"), Some(-42));
/// assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
/// for refused in [&b"+1"[..], b"007", b"-0", b" 1", b"", b"9223372036854775808"] {
///     assert_eq!(parse_i64(refused), None);
/// }
/// ```
pub fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'0'] => return Some(0),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    // The first digit is 1-9: "0" alone was handled above, and "-0", "01" are rejected.
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut magnitude: u64 = 0;
    for &byte in digits {
        if !byte.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(byte - b'0'))?;
    }
    if negative {
        // -(2^63) is i64::MIN; anything larger in magnitude does not fit.
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// A length read from the wire: `-1` is the RESP2 null, anything else negative or above
/// `max` is rejected by the caller's error.
pub(crate) enum Length {
    /// `-1`.
    Null,
    /// A non-negative length within the limit.
    Len(usize),
}

/// Parses a length line and checks it against `max` before anyone allocates from it.
pub(crate) fn parse_length(text: &[u8], max: usize) -> Option<Length> {
    match parse_i64(text)? {
        -1 => Some(Length::Null),
        n => {
            let n = usize::try_from(n).ok()?;
            (n <= max).then_some(Length::Len(n))
        }
    }
}

/// Parses a RESP3 double: decimal or exponent notation, or `inf`, `-inf`, `nan` (any case,
/// optional sign).
pub(crate) fn parse_double(text: &[u8]) -> Option<f64> {
    let unsigned = match text {
        [b'-' | b'+', rest @ ..] => rest,
        _ => text,
    };
    if unsigned.eq_ignore_ascii_case(b"inf") {
        return Some(if text.first() == Some(&b'-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if unsigned.eq_ignore_ascii_case(b"nan") {
        return Some(f64::NAN);
    }
    // Only the characters of decimal/exponent notation reach the standard parser, which
    // then rejects misplaced ones ("1e", "--1", "."); its own "infinity"/"nan" spellings
    // are kept out by this filter.
    if !text
        .iter()
        .all(|b| matches!(b, b'0'..=b'9' | b'+' | b'-' | b'.' | b'e' | b'E'))
    {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// Parses `t` or `f`.
pub(crate) fn parse_bool(text: &[u8]) -> Option<bool> {
    match text {
        b"t" => Some(true),
        b"f" => Some(false),
        _ => None,
    }
}

/// Checks a big number: an optional `-` then at least one decimal digit.
pub(crate) fn is_big_number(text: &[u8]) -> bool {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_like_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"42"), Some(42));
        assert_eq!(parse_i64(b"-42"), Some(-42));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1a",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"99999999999999999999999",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn lengths() {
        assert!(matches!(parse_length(b"-1", 10), Some(Length::Null)));
        assert!(matches!(parse_length(b"10", 10), Some(Length::Len(10))));
        assert!(parse_length(b"11", 10).is_none());
        assert!(parse_length(b"-2", 10).is_none());
        assert!(parse_length(b"9000000000000000000", usize::MAX).is_some());
        assert!(parse_length(b"9000000000000000000", 1 << 40).is_none());
    }

    #[test]
    fn doubles() {
        assert_eq!(parse_double(b"1.5"), Some(1.5));
        assert_eq!(parse_double(b"-1.5e-3"), Some(-1.5e-3));
        assert_eq!(parse_double(b"1E10"), Some(1e10));
        assert_eq!(parse_double(b"10"), Some(10.0));
        assert_eq!(parse_double(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_double(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_double(b"-inf"), Some(f64::NEG_INFINITY));
        assert!(parse_double(b"nan").is_some_and(f64::is_nan));
        assert!(parse_double(b"-nan").is_some_and(f64::is_nan));
        for bad in [
            &b""[..],
            b"-",
            b".",
            b"1e",
            b"e5",
            b"1.2.3",
            b"--1",
            b"infinity",
            b"inff",
            b"0x10",
            b"1 ",
            b"1_0",
        ] {
            assert_eq!(
                parse_double(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn booleans_and_big_numbers() {
        assert_eq!(parse_bool(b"t"), Some(true));
        assert_eq!(parse_bool(b"f"), Some(false));
        assert_eq!(parse_bool(b"T"), None);
        assert_eq!(parse_bool(b"true"), None);
        assert!(is_big_number(b"123456789012345678901234567890"));
        assert!(is_big_number(b"-1"));
        assert!(!is_big_number(b"-"));
        assert!(!is_big_number(b""));
        assert!(!is_big_number(b"+1"));
        assert!(!is_big_number(b"1.0"));
    }
}
