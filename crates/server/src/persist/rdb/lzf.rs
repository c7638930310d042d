//! LZF, the compression Redis applies to RDB strings longer than 20 bytes.
//!
//! The format is a sequence of runs, each opened by a control byte `c`:
//! - `c < 32`: `c + 1` literal bytes follow;
//! - otherwise a back reference: length `(c >> 5) + 2` (when `c >> 5 == 7` one more byte
//!   adds to it), distance `((c & 31) << 8 | next byte) + 1` back into the output.
//!
//! Written here rather than taken from a crate: the Rust `lzf` crate is deprecated and
//! uses `unsafe`, and both directions fit in a few safe lines. The compressor is a plain
//! greedy matcher over a hash of the next three bytes, as liblzf's; its output is valid
//! LZF that liblzf (and so Redis) decompresses, though not byte-for-byte liblzf's.

/// Longest back reference: 7 + 255 + 2 bytes.
const MAX_REF_LEN: usize = 264;
/// Farthest back reference: 13 bits of distance.
const MAX_DISTANCE: usize = 1 << 13;
/// Longest literal run.
const MAX_LITERALS: usize = 32;
/// Bits of the match-finder hash table.
const HASH_BITS: u32 = 14;

/// Decompresses `input` into exactly `len` bytes; `None` when the data is malformed or
/// does not decompress to exactly `len` bytes (Redis's "Invalid LZF compressed string").
///
/// `len` comes from the payload, so the output is reserved only up to what `input` can
/// possibly expand to: a three-byte reference yields at most 264 bytes.
pub fn decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    let bound = input.len().saturating_mul(MAX_REF_LEN.div_ceil(3));
    if len > bound {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(len);
    let mut ip = 0;
    while let Some(&ctrl) = input.get(ip) {
        ip += 1;
        let ctrl = usize::from(ctrl);
        if ctrl < 32 {
            let run = input.get(ip..ip + ctrl + 1)?;
            if out.len() + run.len() > len {
                return None;
            }
            out.extend_from_slice(run);
            ip += run.len();
            continue;
        }
        let mut run = ctrl >> 5;
        if run == 7 {
            run += usize::from(*input.get(ip)?);
            ip += 1;
        }
        run += 2;
        let distance = ((ctrl & 31) << 8 | usize::from(*input.get(ip)?)) + 1;
        ip += 1;
        if distance > out.len() || out.len() + run > len {
            return None;
        }
        // Byte by byte: the source may overlap what this run writes (repeats).
        let start = out.len() - distance;
        for i in start..start + run {
            let byte = out[i];
            out.push(byte);
        }
    }
    (out.len() == len).then_some(out)
}

/// Compresses `input`; `None` when the result would be longer than `max_out` bytes
/// (Redis stores a string compressed only when that saves at least 4 bytes).
pub fn compress(input: &[u8], max_out: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(max_out.min(input.len()));
    let mut table = vec![0u32; 1 << HASH_BITS];
    let mut literal_start = 0;
    let mut ip = 0;
    while ip + 2 < input.len() {
        let hash = hash3(input[ip], input[ip + 1], input[ip + 2]);
        // Positions are stored plus one so 0 means "empty slot".
        let candidate = table[hash] as usize;
        table[hash] = (ip + 1) as u32;
        if candidate > 0 {
            let reference = candidate - 1;
            let distance = ip - reference;
            if distance <= MAX_DISTANCE && input[reference..reference + 3] == input[ip..ip + 3] {
                let limit = MAX_REF_LEN.min(input.len() - ip);
                let mut len = 3;
                while len < limit && input[reference + len] == input[ip + len] {
                    len += 1;
                }
                flush_literals(&mut out, &input[literal_start..ip]);
                let code = len - 2;
                let offset = distance - 1;
                if code < 7 {
                    out.push(((code << 5) | (offset >> 8)) as u8);
                } else {
                    out.push(((7 << 5) | (offset >> 8)) as u8);
                    out.push((code - 7) as u8);
                }
                out.push((offset & 0xff) as u8);
                ip += len;
                literal_start = ip;
                if out.len() > max_out {
                    return None;
                }
                continue;
            }
        }
        ip += 1;
    }
    flush_literals(&mut out, &input[literal_start..]);
    (out.len() <= max_out).then_some(out)
}

fn hash3(a: u8, b: u8, c: u8) -> usize {
    let v = u32::from(a) << 16 | u32::from(b) << 8 | u32::from(c);
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

fn flush_literals(out: &mut Vec<u8>, mut literals: &[u8]) {
    while !literals.is_empty() {
        let n = literals.len().min(MAX_LITERALS);
        out.push((n - 1) as u8);
        out.extend_from_slice(&literals[..n]);
        literals = &literals[n..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let samples: Vec<Vec<u8>> = vec![
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".to_vec(),
            b"hello hello hello hello world world world".repeat(30),
            (0..5000u32).map(|i| (i % 251) as u8).collect(),
            (0..3000u32).map(|i| (i * 7919 % 256) as u8).collect(),
            vec![0; 100_000],
        ];
        for s in samples {
            let c = compress(&s, s.len()).expect("compressible");
            assert!(c.len() < s.len());
            assert_eq!(decompress(&c, s.len()).as_deref(), Some(&s[..]));
        }
    }

    #[test]
    fn incompressible_is_refused() {
        let mut rng = fastrand::Rng::with_seed(7);
        let s: Vec<u8> = (0..200).map(|_| rng.u8(..)).collect();
        assert!(compress(&s, s.len() - 4).is_none());
    }

    #[test]
    fn malformed_input_is_rejected() {
        // Back reference before any output.
        assert!(decompress(&[0x20, 0x00], 3).is_none());
        // Truncated literal run.
        assert!(decompress(&[5, b'a'], 6).is_none());
        // Wrong announced length, both ways.
        assert!(decompress(&[1, b'a', b'b'], 3).is_none());
        assert!(decompress(&[1, b'a', b'b'], 1).is_none());
        // An absurd length is refused before reserving anything.
        assert!(decompress(&[0, b'a'], usize::MAX).is_none());
        assert_eq!(decompress(&[], 0), Some(Vec::new()));
        // Overlapping repeat: "a" then copy 8 from distance 1.
        assert_eq!(
            decompress(&[0, b'a', 0xC0, 0x00], 9).as_deref(),
            Some(&b"aaaaaaaaa"[..])
        );
    }
}
