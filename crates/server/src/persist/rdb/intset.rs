//! Intsets, Redis's encoding of small all-integer sets: element width (2, 4 or 8 bytes),
//! element count, then the elements in ascending order; all little endian.

use super::Corrupt;

const HEADER: usize = 8;

/// The members of `blob`, validated (width, size, and strictly ascending order, which
/// also rules out duplicates).
pub fn members(blob: &[u8]) -> Result<Vec<i64>, Corrupt> {
    let bad = || Corrupt("intset integrity check failed");
    let header = blob.get(..HEADER).ok_or_else(bad)?;
    let width = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let count = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if !matches!(width, 2 | 4 | 8) || count.checked_mul(width) != Some(blob.len() - HEADER) {
        return Err(bad());
    }
    let out: Vec<i64> = blob[HEADER..]
        .chunks_exact(width)
        .map(|c| {
            let mut v = [0u8; 8];
            v[..width].copy_from_slice(c);
            let shift = 64 - 8 * width as u32;
            (i64::from_le_bytes(v) << shift) >> shift
        })
        .collect();
    if out.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad());
    }
    Ok(out)
}

/// An intset of `values` (sorted here), in the narrowest width that holds them all.
pub fn build(mut values: Vec<i64>) -> Vec<u8> {
    values.sort_unstable();
    values.dedup();
    let width: usize = if values.iter().all(|&v| i16::try_from(v).is_ok()) {
        2
    } else if values.iter().all(|&v| i32::try_from(v).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(HEADER + width * values.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(values.len() as u32).to_le_bytes());
    for v in values {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_and_round_trip() {
        assert_eq!(build(vec![3, 1, 2]).len(), 8 + 6);
        assert_eq!(build(vec![1, 40000]).len(), 8 + 8);
        assert_eq!(build(vec![1, 1 << 40]).len(), 8 + 16);
        let values = vec![-5, 0, 7, i64::MIN, i64::MAX, 1 << 40];
        let mut sorted = values.clone();
        sorted.sort();
        assert_eq!(members(&build(values)).unwrap(), sorted);
    }

    #[test]
    fn corrupt_intsets_are_rejected() {
        let good = build(vec![1, 2, 3]);
        for cut in 0..good.len() {
            assert!(members(&good[..cut]).is_err());
        }
        let mut wide = good.clone();
        wide[0] = 3;
        assert!(members(&wide).is_err());
        let mut unsorted = good.clone();
        unsorted[8] = 9;
        assert!(members(&unsorted).is_err());
        // A count that would overflow the size computation.
        let mut huge = good.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(members(&huge).is_err());
    }
}
