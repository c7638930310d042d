//! Sizes as people write them: `512MB`, `2GB`, `1.5G`, `64k`, `1000` (bytes). Units are
//! binary (1 KB = 1024 bytes), so the defaults give 1,048,576 keys per GB.

/// A size that could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "invalid size '{0}': use a number with an optional unit B, KB, MB, GB or TB (e.g. 512MB, 2GB)"
)]
pub(crate) struct SizeError(pub(crate) String);

/// Parses a size in bytes.
///
/// ```ignore
/// assert_eq!(parse("64MB"), Ok(64 << 20));
/// ```
pub(crate) fn parse(text: &str) -> Result<u64, SizeError> {
    let bad = || SizeError(text.to_owned());
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    if number.is_empty() {
        return Err(bad());
    }
    if let Ok(whole) = number.parse::<u64>() {
        return whole.checked_mul(1u64 << shift).ok_or_else(bad);
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_binary() {
        assert_eq!(parse("64MB"), Ok(64 << 20));
        assert_eq!(parse("2GB"), Ok(2 << 30));
        assert_eq!(parse("512mb"), Ok(512 << 20));
        assert_eq!(parse("1.5G"), Ok(3 << 29));
        assert_eq!(parse("1000"), Ok(1000));
        assert_eq!(parse("10 KB"), Ok(10 << 10));
        assert!(parse("MB").is_err());
        assert!(parse("5XB").is_err());
        assert!(parse("99999999999TB").is_err());
    }
}
