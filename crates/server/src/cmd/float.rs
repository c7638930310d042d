//! Floating point text as Redis 7.0 reads and writes it: scores and hash floats are
//! printed with C's `%.17g`, parsed like `strtod` without leading spaces or NaN.

use crate::cstr::{c_string, is_c_space};

/// Formats like C's `printf("%.17g", value)`, with `inf`/`-inf` (and `nan`).
///
/// ```
/// use redline_server::cmd::float::fmt_g17;
/// assert_eq!(fmt_g17(1.1), "1.1000000000000001");
/// assert_eq!(fmt_g17(3.0), "3");
/// assert_eq!(fmt_g17(1e20), "1e+20");
/// assert_eq!(fmt_g17(0.0001), "0.0001");
/// assert_eq!(fmt_g17(0.00001), "1.0000000000000001e-05");
/// ```
pub fn fmt_g17(value: f64) -> String {
    fmt_g(value, 17)
}

/// C's `%.<precision>g`.
pub fn fmt_g(value: f64, precision: usize) -> String {
    if value.is_nan() {
        // glibc prints a NaN's sign (0/0 is a negative NaN on x86).
        return if value.is_sign_negative() {
            "-nan"
        } else {
            "nan"
        }
        .into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.into();
    }
    let precision = precision.max(1);
    // A whole number of at most `precision` digits prints as its digits (the common
    // case: integer scores); -0 keeps its sign, as C prints it.
    if value.fract() == 0.0 && precision <= 17 && value.abs() < 10f64.powi(precision as i32) {
        if value == 0.0 && value.is_sign_negative() {
            return "-0".into();
        }
        return itoa::Buffer::new().format(value as i64).to_string();
    }
    fmt_g_digits(value, precision)
}

/// C's `%.<precision>g` of a finite `value`, from its decimal digits: those `%e` prints
/// (C defines `%g` by them), placed for the fixed notation when the exponent calls for
/// it, without formatting the value a second time.
fn fmt_g_digits(value: f64, precision: usize) -> String {
    let sci = format!("{:.*e}", precision - 1, value);
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        let mantissa = trim_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs());
    }
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits = mantissa.as_bytes().iter().filter(|&&b| b != b'.');
    let mut out = String::with_capacity(precision + 8);
    out.push_str(sign);
    if exponent < 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
        out.extend(digits.map(|&b| char::from(b)));
    } else {
        // At most `precision` digits before the point (the exponent is below it).
        let whole = exponent as usize + 1;
        for (i, &b) in digits.enumerate() {
            if i == whole {
                out.push('.');
            }
            out.push(char::from(b));
        }
    }
    let kept = trim_zeros(&out).len();
    out.truncate(kept);
    out
}

fn trim_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// Parses a float argument as Redis's `getDoubleFromObject` accepts it: the whole text
/// must be what `strtod` reads (`inf`, exponents, hex floats such as `0x1p3`), with no
/// leading space, not NaN, and not out of range (overflow, or underflow to zero).
///
/// ```
/// use redline_server::cmd::float::parse_f64;
/// assert_eq!(parse_f64(b"0x10"), Some(16.0));
/// assert_eq!(parse_f64(b"1e400"), None);
/// assert_eq!(parse_f64(b" 1"), None);
/// ```
pub fn parse_f64(bytes: &[u8]) -> Option<f64> {
    if bytes.first().is_none_or(|&c| is_c_space(c)) {
        return None;
    }
    let read = strtod(bytes);
    let out_of_range = read.range_error && (read.value.is_infinite() || read.value == 0.0);
    (read.len == bytes.len() && !out_of_range && !read.value.is_nan()).then_some(read.value)
}

/// A score range bound as Redis's `zslParseRange` reads it: the whole C string (up to
/// the first NUL) read by `strtod` (which skips leading spaces), not NaN; out-of-range
/// values saturate, and the empty text reads as 0 (strtod stops at once, at the end).
pub fn parse_range_f64(bytes: &[u8]) -> Option<f64> {
    let text = c_string(bytes);
    let read = strtod(text);
    (read.len == text.len() && !read.value.is_nan()).then_some(read.value)
}

/// A SORT weight as Redis reads it: the whole C string read by `strtod`, no range error
/// at all (a subnormal result counts), not NaN.
pub fn parse_sort_f64(bytes: &[u8]) -> Option<f64> {
    let text = c_string(bytes);
    let read = strtod(text);
    (read.len == text.len() && !read.range_error && !read.value.is_nan()).then_some(read.value)
}

/// What C's `strtod` reads from the start of a text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Strtod {
    /// The value (0 when nothing was read).
    pub value: f64,
    /// Bytes read, leading white space included; 0 when no number starts the text.
    pub len: usize,
    /// `errno == ERANGE`: the value overflowed, or underflowed to zero or a subnormal.
    pub range_error: bool,
}

/// Reads a number as glibc's `strtod` does: leading white space, a sign, then a decimal
/// number with an optional exponent, a hex float (`0x1.8p3`), `inf`/`infinity`, or
/// `nan`/`nan(chars)`, case-insensitively. Decimal values are correctly rounded, as in
/// glibc.
pub fn strtod(text: &[u8]) -> Strtod {
    let none = Strtod {
        value: 0.0,
        len: 0,
        range_error: false,
    };
    let mut i = text.iter().take_while(|&&c| is_c_space(c)).count();
    let negative = match text.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let signed = |v: f64| if negative { -v } else { v };
    let rest = &text[i..];
    let starts =
        |word: &[u8]| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word);
    if starts(b"infinity") || starts(b"inf") {
        let n = if starts(b"infinity") { 8 } else { 3 };
        return Strtod {
            value: signed(f64::INFINITY),
            len: i + n,
            range_error: false,
        };
    }
    if starts(b"nan") {
        let mut len = i + 3;
        // An optional `(n-char-sequence)`.
        if text.get(len) == Some(&b'(') {
            let chars = text[len + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count();
            if text.get(len + 1 + chars) == Some(&b')') {
                len += chars + 2;
            }
        }
        // glibc keeps the sign on a NaN (`-nan` prints as such).
        return Strtod {
            value: signed(f64::NAN),
            len,
            range_error: false,
        };
    }
    // `0x` counts only when a hex digit follows (after an optional point); otherwise
    // strtod reads the `0` alone.
    let hex_digit_at = |k: usize| rest.get(k).is_some_and(u8::is_ascii_hexdigit);
    if starts(b"0x") && (hex_digit_at(2) || (rest.get(2) == Some(&b'.') && hex_digit_at(3))) {
        let (value, len, range_error) = hex_float(&rest[2..]);
        return Strtod {
            value: signed(value),
            len: i + 2 + len,
            range_error,
        };
    }
    // Decimal: digits, an optional point and digits (at least one digit in all), then
    // an exponent only if digits follow it.
    let digits = |from: usize| {
        rest[from.min(rest.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let int = digits(0);
    let mut end = int;
    let mut frac = 0;
    if rest.get(end) == Some(&b'.') {
        frac = digits(end + 1);
        if int + frac > 0 {
            end += 1 + frac;
        }
    }
    if int + frac == 0 {
        return none;
    }
    let nonzero = rest[..end].iter().any(|c| (b'1'..=b'9').contains(c));
    if matches!(rest.get(end), Some(b'e' | b'E')) {
        if let Some((_, len)) = exponent(&rest[end + 1..]) {
            end += 1 + len;
        }
    }
    // ASCII digits, point, sign and exponent only: valid UTF-8 that Rust parses.
    let value: f64 = std::str::from_utf8(&rest[..end])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    let range_error =
        value.is_infinite() || (nonzero && (value == 0.0 || value.abs() < f64::MIN_POSITIVE));
    Strtod {
        value: signed(value),
        len: i + end,
        range_error,
    }
}

/// An exponent after its `e` or `p`: an optional sign and at least one digit, read as
/// strtod reads it (saturating: huge exponents still mean overflow or underflow), and
/// how many bytes it took; `None` when no digit follows, and strtod ends the number
/// before the `e`.
pub(crate) fn exponent(text: &[u8]) -> Option<(i64, usize)> {
    let sign = usize::from(matches!(text.first(), Some(b'+' | b'-')));
    let digits = text[sign.min(text.len())..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    if digits == 0 {
        return None;
    }
    let value = text[sign..sign + digits].iter().fold(0i64, |acc, &d| {
        acc.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    let value = if text[0] == b'-' { -value } else { value };
    Some((value, sign + digits))
}

/// The digits of a hex float after `0x`: its magnitude, the bytes read and whether it is
/// out of range. The mantissa keeps 64 significant bits plus a sticky bit, so the one
/// rounding to 53 bits is correct.
fn hex_float(text: &[u8]) -> (f64, usize, bool) {
    let mut mantissa: u64 = 0;
    let mut sticky = false;
    let mut exp2: i64 = 0;
    let mut i = 0;
    let mut point = false;
    while let Some(&c) = text.get(i) {
        let digit = match c {
            b'.' if !point => {
                point = true;
                i += 1;
                continue;
            }
            c if c.is_ascii_hexdigit() => u64::from((c as char).to_digit(16).unwrap_or(0)),
            _ => break,
        };
        if mantissa >> 60 == 0 {
            mantissa = mantissa << 4 | digit;
            if point {
                exp2 -= 4;
            }
        } else {
            // No room: the digit only decides rounding, and shifts the point.
            sticky |= digit != 0;
            if !point {
                exp2 += 4;
            }
        }
        i += 1;
    }
    if matches!(text.get(i), Some(b'p' | b'P')) {
        if let Some((e, len)) = exponent(&text[i + 1..]) {
            exp2 = exp2.saturating_add(e);
            i += 1 + len;
        }
    }
    if mantissa == 0 {
        return (0.0, i, false);
    }
    // Normalise to 64 bits, then let the sticky bit break ties below the rounding point.
    let shift = mantissa.leading_zeros();
    mantissa <<= shift;
    exp2 -= i64::from(shift);
    let m = (mantissa | u64::from(sticky)) as f64;
    let e = exp2.clamp(-2200, 2200) as i32;
    // Two steps: 2^e alone may not be representable where the product is.
    let value = m * 2f64.powi(e / 2) * 2f64.powi(e - e / 2);
    let range_error = value.is_infinite() || value == 0.0 || value < f64::MIN_POSITIVE;
    (value, i, range_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g17_matches_c() {
        assert_eq!(fmt_g17(0.0), "0");
        assert_eq!(fmt_g17(-0.0), "-0");
        assert_eq!(fmt_g17(-2.5), "-2.5");
        assert_eq!(fmt_g17(123456789012345678.0), "1.2345678901234568e+17");
        assert_eq!(fmt_g17(12345678901234567.0), "12345678901234568");
        assert_eq!(fmt_g17(0.1), "0.10000000000000001");
        assert_eq!(fmt_g17(f64::INFINITY), "inf");
        assert_eq!(fmt_g17(1e-300), "1e-300");
        assert_eq!(fmt_g(0.5, 6), "0.5");
    }

    proptest::proptest! {
        /// Any bytes: no panic, and never more read than given.
        #[test]
        fn strtod_reads_within_any_text(text in proptest::collection::vec(
            proptest::sample::select(&b" \t+-.0123456789abcdefxXpPeEinfINFt()_"[..]), 0..24)) {
            proptest::prop_assert!(strtod(&text).len <= text.len());
            let _ = (parse_f64(&text), parse_range_f64(&text), parse_sort_f64(&text));
        }

        /// Every finite double printed with `%.17g` reads back as itself.
        /// Whole numbers take a shortcut; it prints what the digits would.
        #[test]
        fn whole_numbers_print_as_their_digits(
            n in -200_000_000_000_000_000i64..200_000_000_000_000_000,
            shift in 0u32..18,
            precision in 1usize..18,
        ) {
            let value = (n / 10i64.pow(shift)) as f64;
            proptest::prop_assert_eq!(fmt_g(value, precision), fmt_g_digits(value, precision));
        }

        /// The digits placed for the fixed notation are what formatting the value
        /// with those decimals prints.
        #[test]
        fn fixed_notation_from_the_digits(
            n in -1_000_000_000_000_000i64..1_000_000_000_000_000,
            scale in 0i32..24,
            precision in 1usize..18,
        ) {
            let value = n as f64 / 10f64.powi(scale);
            if value.is_finite() {
                let sci = format!("{:.*e}", precision - 1, value);
                let exponent: i32 = sci.split_once('e').map_or(0, |(_, e)| e.parse().unwrap_or(0));
                if (-4..precision as i32).contains(&exponent) {
                    let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
                    let expected = format!("{value:.decimals$}");
                    proptest::prop_assert_eq!(fmt_g_digits(value, precision), trim_zeros(&expected));
                }
            }
        }

        #[test]
        fn g17_round_trips(bits in proptest::num::u64::ANY) {
            let value = f64::from_bits(bits);
            if value.is_finite() {
                proptest::prop_assert_eq!(parse_range_f64(fmt_g17(value).as_bytes()), Some(value));
            }
        }
    }

    #[test]
    fn strtod_reads_what_glibc_reads() {
        let read = |s: &[u8]| {
            let r = strtod(s);
            (r.value, r.len, r.range_error)
        };
        assert_eq!(read(b"  1.5x"), (1.5, 5, false));
        assert_eq!(read(b"1e"), (1.0, 1, false));
        assert_eq!(read(b"1e+"), (1.0, 1, false));
        assert_eq!(read(b".5"), (0.5, 2, false));
        assert_eq!(read(b"5."), (5.0, 2, false));
        assert_eq!(read(b"."), (0.0, 0, false));
        assert_eq!(read(b"0x"), (0.0, 1, false));
        assert_eq!(read(b"0x1p3"), (8.0, 5, false));
        assert_eq!(read(b"-0X.8"), (-0.5, 5, false));
        assert_eq!(read(b"0x1.8p-1"), (0.75, 8, false));
        assert_eq!(read(b"1e400"), (f64::INFINITY, 5, true));
        assert_eq!(read(b"1e-400"), (0.0, 6, true));
        assert_eq!(read(b"0e-400"), (0.0, 6, false));
        assert!(read(b"1e-310").2, "subnormal");
        assert_eq!(read(b"Infinity!"), (f64::INFINITY, 8, false));
        assert_eq!(strtod(b"nan(x1)").len, 7);
        assert_eq!(strtod(b"nan(").len, 3);
        assert_eq!(read(b"-"), (0.0, 0, false));
    }

    #[test]
    fn parses_like_strtod() {
        assert_eq!(parse_f64(b"0x634"), Some(1588.0));
        assert_eq!(parse_f64(b"1e-400"), None);
        assert_eq!(parse_f64(b"1e-310"), Some(1e-310));
        assert_eq!(parse_range_f64(b" 1e400"), Some(f64::INFINITY));
        assert_eq!(parse_range_f64(b""), Some(0.0));
        assert_eq!(parse_range_f64(b" "), None);
        assert_eq!(parse_sort_f64(b""), Some(0.0));
        assert_eq!(parse_sort_f64(b"1e-310"), None);
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"1e3"), Some(1000.0));
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"1 "), None);
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b""), None);
        assert_eq!(parse_f64(b"abc"), None);
    }
}
