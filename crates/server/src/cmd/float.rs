//! Floating point text as Redis 7.0 reads and writes it: scores and hash floats are
//! printed with C's `%.17g`, parsed like `strtod` without leading spaces or NaN.

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
        return "nan".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.into();
    }
    let precision = precision.max(1);
    // The exponent %e would print decides between fixed and exponent notation.
    let sci = format!("{:.*e}", precision - 1, value);
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        let mantissa = trim_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    } else {
        let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
        trim_zeros(&format!("{value:.decimals$}")).to_string()
    }
}

fn trim_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// Parses a float argument as Redis's `getDoubleFromObject` accepts it: the whole text
/// must be a number (`inf`, `-inf`, exponents allowed), no spaces, not NaN.
pub fn parse_f64(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    (!value.is_nan()).then_some(value)
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

    #[test]
    fn parses_like_strtod() {
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
