//! LZF, the compression Redis applies to RDB strings longer than 20 bytes.
//!
//! The format is a sequence of runs, each opened by a control byte `c`:
//! - `c < 32`: `c + 1` literal bytes follow;
//! - otherwise a back reference: length `(c >> 5) + 2` (when `c >> 5 == 7` one more byte
//!   adds to it), distance `((c & 31) << 8 | next byte) + 1` back into the output.
//!
//! Written here rather than taken from a crate: the Rust `lzf` crate is deprecated and
//! uses `unsafe`, and both directions fit in a few safe lines. The compressor follows
//! liblzf's greedy matcher step by step (same hash, same match rules, same output
//! limits), so Redis and this server usually compress a string to the same bytes.

use crate::alloc::{Counted, Gauge, WORK_TABLES};

/// Longest back reference: 7 + 255 + 2 bytes.
const MAX_REF_LEN: usize = 264;
/// Farthest back reference: 13 bits of distance.
const MAX_DISTANCE: usize = 1 << 13;
/// Longest literal run.
const MAX_LITERALS: usize = 32;
/// Largest string decompressed: Redis's own limit for a string (512 MiB).
pub const MAX_DECOMPRESSED: usize = 512 << 20;
/// Bits of the match-finder hash table (liblzf's `HLOG`, 16 in Redis).
const HASH_BITS: u32 = 16;
/// The table's size: one `u32` slot per hash (liblzf's offsets on 64-bit machines).
const TABLE_BYTES: usize = (1 << HASH_BITS) * std::mem::size_of::<u32>();

/// Decompresses `input` into exactly `len` bytes; `None` when the data is malformed or
/// does not decompress to exactly `len` bytes (Redis's "Invalid LZF compressed string").
///
/// `len` comes from the payload, so it is refused beyond what `input` can possibly
/// expand to (a three-byte reference yields at most 264 bytes) or beyond
/// [`MAX_DECOMPRESSED`], and the output grows with what is actually decompressed
/// rather than being reserved from `len` up front.
pub fn decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    let bound = input.len().saturating_mul(MAX_REF_LEN.div_ceil(3));
    if len > bound || len > MAX_DECOMPRESSED {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(len.min(input.len().saturating_mul(4)));
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
        // The run repeats the last `distance` bytes: from `start` on, the output is
        // periodic with that period, and stays so when a whole number of periods is
        // appended. So it is copied in blocks that double (one block when the run does
        // not overlap itself), not byte by byte.
        let start = out.len() - distance;
        let mut left = run;
        while left > 0 {
            let n = left.min(out.len() - start);
            out.extend_from_within(start..start + n);
            left -= n;
        }
    }
    (out.len() == len).then_some(out)
}

/// Compresses `input` the way Redis's copy of liblzf does (`HLOG` 16, `VERY_FAST`), so
/// payloads match Redis's byte for byte; `None` when the
/// result would not fit in `out_len` bytes, with liblzf's own conservative checks
/// (Redis stores a string compressed only when that saves at least 4 bytes).
///
/// liblzf leaves its hash table uninitialised, so in rare cases Redis's output can also
/// depend on earlier compressions; this is its output from a clean table.
pub fn compress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    // Positions are kept in 32 bits; a longer string (beyond Redis's 512 MB limit,
    // possible with a larger `proto-max-bulk-len`) is stored uncompressed.
    if input.is_empty() || out_len == 0 || input.len() >= u32::MAX as usize {
        return None;
    }
    TABLE.with(|table| compress_with(&mut table.borrow_mut(), input, out_len))
}

/// liblzf's hash table (offsets of earlier positions by hash), kept per thread so
/// short strings do not each clear 256 KB. A compression's positions are stored from a
/// base above every earlier one's, so a slot below the base reads as empty; the table
/// is cleared only when the bases run out of 32 bits. Counted in [`WORK_TABLES`] while
/// it lives: Redis's is on the stack.
struct Table {
    slots: Counted<Vec<u32>, &'static Gauge>,
    /// Where the next compression's positions start.
    next_base: u32,
}

impl Table {
    fn new() -> Table {
        Table {
            slots: Counted::new(&WORK_TABLES, TABLE_BYTES, || vec![0; 1 << HASH_BITS]),
            next_base: 1,
        }
    }

    /// Starts a compression of `len` bytes (less than `u32::MAX`): every slot reads as
    /// empty. Returns the base its positions are stored from.
    fn begin(&mut self, len: usize) -> u32 {
        let len = len as u32;
        if self.next_base.checked_add(len).is_none() {
            self.slots.fill(0);
            self.next_base = 1;
        }
        let base = self.next_base;
        self.next_base = base + len;
        base
    }
}

thread_local! {
    static TABLE: std::cell::RefCell<Table> = std::cell::RefCell::new(Table::new());
}

fn compress_with(table: &mut Table, input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let base = table.begin(input.len());
    let slots = &mut table.slots[..];
    // The offset in `slot` (0 when empty: a reference to position 0 is never taken,
    // liblzf's `ref > in_data`), replaced by `ip`.
    let mut swap = |slot: usize, ip: usize| {
        let entry = std::mem::replace(&mut slots[slot], base + ip as u32);
        entry.saturating_sub(base) as usize
    };
    let in_end = input.len();
    let mut out = vec![0u8; out_len];
    let at = |i: usize| u32::from(input.get(i).copied().unwrap_or(0));
    let first = |i: usize| (at(i) << 8) | at(i + 1);
    let next = |h: u32, i: usize| (h << 8) | at(i + 2);
    // The run of literals being written: its length byte is reserved at `op - lit - 1`.
    let mut lit = 0usize;
    let mut op = 1usize;
    let mut ip = 0usize;
    let mut hval = first(0);
    while ip + 2 < in_end {
        hval = (hval << 8) | u32::from(input[ip + 2]);
        let reference = swap(slot_of(hval), ip);
        let off = ip.wrapping_sub(reference).wrapping_sub(1);
        if off < MAX_DISTANCE
            && reference > 0
            && input[reference + 2] == input[ip + 2]
            && input[reference..reference + 2] == input[ip..ip + 2]
        {
            let max_len = (in_end - ip - 2).min(MAX_REF_LEN);
            if op + 4 >= out_len && op - usize::from(lit == 0) + 4 >= out_len {
                return None;
            }
            end_run(&mut out, &mut op, lit);
            let len = match_len(input, reference, ip, max_len) - 2;
            ip += 1;
            if len < 7 {
                out[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((off >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = (off & 0xFF) as u8;
            op += 2;
            lit = 0;
            ip += len + 1;
            if ip + 2 >= in_end {
                break;
            }
            // VERY_FAST: hash the last two positions of the match.
            ip -= 2;
            hval = first(ip);
            for _ in 0..2 {
                hval = next(hval, ip);
                swap(slot_of(hval), ip);
                ip += 1;
            }
        } else {
            if op >= out_len {
                return None;
            }
            out[op] = input[ip];
            op += 1;
            ip += 1;
            lit += 1;
            if lit == MAX_LITERALS {
                out[op - lit - 1] = (lit - 1) as u8;
                lit = 0;
                op += 1;
            }
        }
    }
    if op + 3 > out_len {
        return None;
    }
    while ip < in_end {
        out[op] = input[ip];
        op += 1;
        ip += 1;
        lit += 1;
        if lit == MAX_LITERALS {
            out[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    end_run(&mut out, &mut op, lit);
    out.truncate(op);
    Some(out)
}

/// Closes the literal run: writes its length byte, or takes back the reserved byte
/// when the run is empty.
fn end_run(out: &mut [u8], op: &mut usize, lit: usize) {
    if lit > 0 {
        out[*op - lit - 1] = (lit - 1) as u8;
    } else {
        *op -= 1;
    }
}

/// Length of the match at `ip` against `reference` (at least 3 bytes are known to
/// match), counted as liblzf does: 16 unrolled steps first when `max_len > 16`, which
/// may run two bytes past `max_len`.
fn match_len(input: &[u8], reference: usize, ip: usize, max_len: usize) -> usize {
    let mut len = 2;
    if max_len > 16 {
        for _ in 0..16 {
            len += 1;
            if input[reference + len] != input[ip + len] {
                return len;
            }
        }
    }
    loop {
        len += 1;
        if !(len < max_len && input[reference + len] == input[ip + len]) {
            return len;
        }
    }
}

/// liblzf's `IDX` in `VERY_FAST` mode: `((h >> 8) - h * 5) & (HSIZE - 1)`, where `h`
/// holds the bytes hashed so far (the slot depends on the last three).
fn slot_of(h: u32) -> usize {
    ((h >> (24 - HASH_BITS)).wrapping_sub(h.wrapping_mul(5)) & ((1 << HASH_BITS) - 1)) as usize
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
            {
                let mut rng = fastrand::Rng::with_seed(3);
                let block: Vec<u8> = (0..300).map(|_| rng.u8(..)).collect();
                block.repeat(10)
            },
            vec![0; 100_000],
        ];
        for s in samples {
            let c = compress(&s, s.len()).unwrap_or_else(|| panic!("{}", s.len()));
            assert!(c.len() < s.len());
            assert_eq!(decompress(&c, s.len()).as_deref(), Some(&s[..]));
        }
    }

    #[test]
    fn output_is_liblzf_output() {
        // What Redis 7.0.15 wrote for "ab" * 100 (DUMP of that string).
        let c = compress(&b"ab".repeat(100), 196).unwrap();
        assert_eq!(
            c,
            [0x02, b'a', b'b', b'a', 0xe0, 0xba, 0x01, 0x01, b'a', b'b']
        );
        // An intset of -5, 0, 40000 and 2^40 (a collision-prone input).
        let mut blob = vec![8, 0, 0, 0, 4, 0, 0, 0];
        for v in [-5i64, 0, 40000, 1 << 40] {
            blob.extend_from_slice(&v.to_le_bytes());
        }
        // What Redis 7.0.15 wrote for it (DUMP of SADD s -5 1099511627776 40000 0).
        let redis = "040800000004200301fbff8000200a600001409c6006800002010000";
        let redis: Vec<u8> = (0..redis.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&redis[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(compress(&blob, 36).unwrap(), redis);
        // The same input twice gives the same bytes (no state leaks between calls).
        assert_eq!(compress(&b"ab".repeat(100), 196).unwrap(), c);
    }

    /// Random streams of literal runs and back references (overlapping ones too),
    /// decompressed as the format defines them: byte by byte.
    #[test]
    fn back_references_copy_as_byte_by_byte() {
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..2000 {
            let (mut stream, mut expected) = (Vec::new(), Vec::<u8>::new());
            for _ in 0..rng.usize(1..40) {
                if expected.is_empty() || rng.bool() {
                    let run: Vec<u8> = (0..rng.usize(1..=32)).map(|_| rng.u8(..)).collect();
                    stream.push((run.len() - 1) as u8);
                    stream.extend_from_slice(&run);
                    expected.extend_from_slice(&run);
                    continue;
                }
                let distance = rng.usize(1..=expected.len().min(MAX_DISTANCE));
                let run = rng.usize(3..=MAX_REF_LEN);
                let code = run - 2;
                let d = distance - 1;
                if code < 7 {
                    stream.push((code << 5 | d >> 8) as u8);
                } else {
                    stream.extend_from_slice(&[(7 << 5 | d >> 8) as u8, (code - 7) as u8]);
                }
                stream.push((d & 0xff) as u8);
                for _ in 0..run {
                    expected.push(expected[expected.len() - distance]);
                }
            }
            assert_eq!(
                decompress(&stream, expected.len()).as_deref(),
                Some(&expected[..])
            );
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
