//! HyperLogLog in Redis 7.0's exact byte format (`hyperloglog.c`), so that an HLL is an
//! ordinary string value whose bytes (`GET`, `STRLEN`, `SETRANGE`...) are those Redis
//! stores.
//!
//! Layout: a 16-byte header (`HYLL`, encoding byte, 3 unused bytes, 8-byte little-endian
//! cached cardinality whose top bit marks it stale), then the 2^14 registers of 6 bits:
//! - *dense*: 12288 bytes, register `i` at bit `6 i`, least significant bits first;
//! - *sparse*: a run-length code of opcodes `ZERO` (`00xxxxxx`, 1..64 zero registers),
//!   `XZERO` (`01xxxxxx yyyyyyyy`, 1..16384 zero registers) and `VAL` (`1vvvvvxx`, 1..4
//!   registers of value 1..32). An HLL starts sparse and becomes dense when a register
//!   exceeds 32 or the string would grow past `hll-sparse-max-bytes`.
//!
//! The functions mirror Redis's step by step (including how a sparse update splits and
//! re-merges opcodes, and how a malformed string is caught), because the stored bytes
//! and the INVALIDOBJ cases are visible to clients. Bytes past the end of the string read
//! as zero, as Redis reads the terminating NUL of its strings.
//!
//! The estimator is Otmar Ertl's improved raw estimator (arXiv:1702.01284) over the
//! register histogram, as Redis 7.0 computes it.

/// Bits of the hash that pick the register.
const P: u32 = 14;
/// Number of registers.
pub const REGISTERS: usize = 1 << P;
/// Bits of the hash left to count leading zeros in.
const Q: usize = 64 - P as usize;
/// Largest register value.
const REGISTER_MAX: u32 = 63;
/// Header length.
pub const HEADER_LEN: usize = 16;
/// Length of a dense HLL.
pub const DENSE_LEN: usize = HEADER_LEN + (REGISTERS * 6).div_ceil(8);
/// `hll-sparse-max-bytes` default.
pub const DEFAULT_SPARSE_MAX_BYTES: usize = 3000;

const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;
/// The seed Redis hashes elements with.
const SEED: u64 = 0xadc8_3b19;
/// 1 / (2 ln 2): the limit of the bias constant for many registers.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// The string is not a well-formed HLL (Redis's `INVALIDOBJ`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// An empty HLL: sparse, one XZERO over every register, cached cardinality 0.
pub fn new() -> Vec<u8> {
    let mut hll = Vec::with_capacity(64);
    hll.extend_from_slice(b"HYLL");
    hll.push(SPARSE);
    hll.extend_from_slice(&[0; 11]);
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(SPARSE_XZERO_MAX_LEN);
        push_xzero(&mut hll, run);
        left -= run;
    }
    hll
}

/// Whether a string may be used as an HLL (Redis's `isHLLObjectOrReply`): the magic, a
/// known encoding, and the exact length when dense. Sparse bodies are checked only
/// when read.
pub fn is_hll(bytes: &[u8]) -> bool {
    bytes.len() >= HEADER_LEN
        && bytes.starts_with(b"HYLL")
        && bytes[4] <= SPARSE
        && (bytes[4] != DENSE || bytes.len() == DENSE_LEN)
}

/// Whether a (valid) HLL is dense.
pub fn is_dense(hll: &[u8]) -> bool {
    hll.get(4) == Some(&DENSE)
}

/// The cached cardinality, if not stale.
pub fn cached(hll: &[u8]) -> Option<u64> {
    let card: [u8; 8] = hll.get(8..16)?.try_into().ok()?;
    (card[7] & 0x80 == 0).then(|| u64::from_le_bytes(card))
}

/// Stores a freshly computed cardinality.
pub fn set_cached(hll: &mut [u8], card: u64) {
    if let Some(slot) = hll.get_mut(8..16) {
        slot.copy_from_slice(&card.to_le_bytes());
    }
}

/// Marks the cached cardinality stale.
pub fn invalidate(hll: &mut [u8]) {
    if let Some(b) = hll.get_mut(15) {
        *b |= 0x80;
    }
}

/// Redis's MurmurHash64A (little-endian reads).
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let mut k = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element lands in and the value it proposes (1 + the number of
/// trailing zeros of the rest of its hash, at most `Q + 1`).
pub fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash as usize) & (REGISTERS - 1);
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// Adds an element; `Ok(true)` when a register changed.
pub fn add(hll: &mut Vec<u8>, element: &[u8], sparse_max: usize) -> Result<bool, Corrupt> {
    let (index, count) = pattern(element);
    set(hll, index, count, sparse_max)
}

/// Raises register `index` to `count` if it is lower; `Ok(true)` when it changed. A
/// sparse HLL may become dense on the way.
pub fn set(hll: &mut Vec<u8>, index: usize, count: u8, sparse_max: usize) -> Result<bool, Corrupt> {
    if count == 0 || index >= REGISTERS {
        // Nothing to raise; out of range is not a register (neither comes from PFADD).
        return Ok(false);
    }
    match hll.get(4) {
        Some(&DENSE) => Ok(dense_set(body_mut(hll), index, count)),
        Some(&SPARSE) => {
            let mut cursor = START;
            sparse_set(hll, index, count, sparse_max, &mut cursor)
        }
        _ => Err(Corrupt),
    }
}

// ---- dense ----

/// The registers of a dense HLL (empty if the string is shorter than a header, which a
/// checked HLL never is).
fn body_mut(hll: &mut [u8]) -> &mut [u8] {
    hll.get_mut(HEADER_LEN..).unwrap_or_default()
}

/// Reads a register from the dense body; bytes past the end read as zero.
pub fn dense_get(regs: &[u8], index: usize) -> u8 {
    let bit = index * 6;
    let (byte, shift) = (bit / 8, bit % 8);
    let b0 = u32::from(regs.get(byte).copied().unwrap_or(0));
    let b1 = u32::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> shift) | (b1 << (8 - shift))) & REGISTER_MAX) as u8
}

/// Writes a register into the dense body.
fn dense_write(regs: &mut [u8], index: usize, value: u8) {
    let bit = index * 6;
    let (byte, shift) = (bit / 8, bit % 8);
    let v = u32::from(value);
    if let Some(b) = regs.get_mut(byte) {
        *b = ((u32::from(*b) & !(REGISTER_MAX << shift)) | (v << shift)) as u8;
    }
    if let Some(b) = regs.get_mut(byte + 1) {
        *b = ((u32::from(*b) & !(REGISTER_MAX >> (8 - shift))) | (v >> (8 - shift))) as u8;
    }
}

/// Every register of a dense body into `raw`, one byte each: three bytes hold four
/// registers, so whole groups decode without per-register shifts or bounds checks.
fn dense_unpack(regs: &[u8], raw: &mut [u8; REGISTERS]) {
    if regs.len() < REGISTERS / 4 * 3 {
        for (i, r) in raw.iter_mut().enumerate() {
            *r = dense_get(regs, i);
        }
        return;
    }
    for (group, out) in regs.chunks_exact(3).zip(raw.chunks_exact_mut(4)) {
        let (b0, b1, b2) = (group[0], group[1], group[2]);
        out[0] = b0 & 63;
        out[1] = ((b0 >> 6) | (b1 << 2)) & 63;
        out[2] = ((b1 >> 4) | (b2 << 4)) & 63;
        out[3] = b2 >> 2;
    }
}

fn dense_set(regs: &mut [u8], index: usize, count: u8) -> bool {
    if count > dense_get(regs, index) {
        dense_write(regs, index, count);
        true
    } else {
        false
    }
}

// ---- sparse opcodes ----

fn is_zero(op: u8) -> bool {
    op & 0xc0 == 0
}

fn is_xzero(op: u8) -> bool {
    op & 0xc0 == 0x40
}

fn is_val(op: u8) -> bool {
    op & 0x80 != 0
}

fn zero_len(op: u8) -> usize {
    usize::from(op & 0x3f) + 1
}

fn xzero_len(op: u8, next: u8) -> usize {
    ((usize::from(op & 0x3f) << 8) | usize::from(next)) + 1
}

fn val_value(op: u8) -> u8 {
    ((op >> 2) & 0x1f) + 1
}

fn val_len(op: u8) -> usize {
    usize::from(op & 0x3) + 1
}

fn val_op(value: u8, len: usize) -> u8 {
    (((value - 1) << 2) | (len as u8 - 1)) | 0x80
}

fn push_xzero(out: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    out.push(((l >> 8) as u8) | 0x40);
    out.push((l & 0xff) as u8);
}

fn push_zeros(out: &mut Vec<u8>, len: usize) {
    if len > SPARSE_ZERO_MAX_LEN {
        push_xzero(out, len);
    } else {
        out.push((len - 1) as u8);
    }
}

/// One decoded opcode of a sparse body.
enum Op {
    /// A run of zero registers.
    Zeros(usize),
    /// A run of registers holding one value.
    Val(usize, u8),
}

/// Decodes the sparse opcode at `p`: the op and its length in bytes.
fn op_at(hll: &[u8], p: usize) -> (Op, usize) {
    let op = hll.get(p).copied().unwrap_or(0);
    if is_zero(op) {
        (Op::Zeros(zero_len(op)), 1)
    } else if is_val(op) {
        (Op::Val(val_len(op), val_value(op)), 1)
    } else {
        let next = hll.get(p + 1).copied().unwrap_or(0);
        (Op::Zeros(xzero_len(op, next)), 2)
    }
}

/// Walks a sparse body as Redis's `hllSparseToDense` and `hllMerge` do, calling `f`
/// for every non-zero register. Valid when the runs cover exactly every register; a run
/// that would pass the last register stops the walk as invalid (Debian's 7.0.15
/// carries the fix for CVE-2025-32023, which made it so).
fn walk_sparse(hll: &[u8], mut f: impl FnMut(usize, u8)) -> Result<(), Corrupt> {
    let mut p = HEADER_LEN;
    let mut idx = 0usize;
    while p < hll.len() {
        let (op, width) = op_at(hll, p);
        let run = match op {
            Op::Zeros(run) | Op::Val(run, _) => run,
        };
        if idx + run > REGISTERS {
            return Err(Corrupt);
        }
        if let Op::Val(_, value) = op {
            for i in idx..idx + run {
                f(i, value);
            }
        }
        idx += run;
        p += width;
    }
    if idx == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// Converts a sparse HLL to dense (a dense one is left alone). The header, cached
/// cardinality included, is kept.
pub fn to_dense(hll: &mut Vec<u8>) -> Result<(), Corrupt> {
    if is_dense(hll) {
        return Ok(());
    }
    let mut dense = vec![0u8; DENSE_LEN];
    dense[..HEADER_LEN].copy_from_slice(hll.get(..HEADER_LEN).ok_or(Corrupt)?);
    dense[4] = DENSE;
    let regs = &mut dense[HEADER_LEN..];
    walk_sparse(hll, |i, v| dense_write(regs, i, v))?;
    *hll = dense;
    Ok(())
}

/// Where a walk over a sparse body may resume: an opcode boundary, the first register
/// it covers, and the opcode before it.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    p: usize,
    first: usize,
    prev: Option<usize>,
}

const START: Cursor = Cursor {
    p: HEADER_LEN,
    first: 0,
    prev: None,
};

/// Raises every register `i` to `max[i]`, in ascending order (PFMERGE). Same bytes as
/// one [`set`] per register, but a sparse walk resumes where the previous one stopped
/// instead of starting over, which keeps the merge linear.
pub fn set_all(hll: &mut Vec<u8>, max: &[u8; REGISTERS], sparse_max: usize) {
    let mut cursor = START;
    for (index, &value) in max.iter().enumerate() {
        if value == 0 {
            continue;
        }
        // Redis ignores the result: the destination was validated by the merge.
        let _ = match hll.get(4) {
            Some(&DENSE) => Ok(dense_set(body_mut(hll), index, value)),
            Some(&SPARSE) => sparse_set(hll, index, value, sparse_max, &mut cursor),
            _ => Err(Corrupt),
        };
    }
}

/// Redis's `hllSparseSet`: raises register `index` of a sparse HLL to `count`,
/// rewriting the opcode that covers it into up to five, then merging equal neighbours;
/// promotes to dense when `count` does not fit a VAL or the string would pass
/// `sparse_max` bytes. `cursor` is where the walk may start (for a later, higher
/// register) and is moved to the opcode before the change, which nothing here alters.
fn sparse_set(
    hll: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
    cursor: &mut Cursor,
) -> Result<bool, Corrupt> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(hll, index, count);
    }
    // Step 1: find the opcode covering `index`. The hot loop of sparse updates: opcodes
    // decoded inline.
    if index < cursor.first {
        *cursor = START;
    }
    let end = hll.len();
    let Cursor {
        mut p,
        mut first,
        mut prev,
    } = *cursor;
    let mut before_prev = None;
    let mut first_of_prev = 0;
    let mut moved = false;
    let mut span = 0usize;
    let mut width = 1;
    while p < end {
        let op = hll[p];
        (span, width) = if op & 0x80 != 0 {
            (usize::from(op & 0x3) + 1, 1)
        } else if op & 0x40 == 0 {
            (usize::from(op & 0x3f) + 1, 1)
        } else {
            let next = usize::from(hll.get(p + 1).copied().unwrap_or(0));
            (((usize::from(op & 0x3f) << 8) | next) + 1, 2)
        };
        if index < first + span {
            break;
        }
        before_prev = prev;
        prev = Some(p);
        first_of_prev = first;
        moved = true;
        p += width;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Corrupt);
    }
    // The opcode before the change keeps its place and first register (step 4 may
    // merge into it, never move it), and everything before it stays: the next walk may
    // start there. When this walk did not move, the cursor's own opcode is about to
    // change, so the next one starts over.
    *cursor = match prev {
        Some(at) if moved => Cursor {
            p: at,
            first: first_of_prev,
            prev: before_prev,
        },
        _ => START,
    };
    let op = hll[p];
    let last = first + span - 1;

    // Step 2: the cheap cases, changed in place.
    let mut in_place = false;
    if is_val(op) {
        if val_value(op) >= count {
            return Ok(false);
        }
        in_place = span == 1;
    } else if is_zero(op) && span == 1 {
        in_place = true;
    }
    if in_place {
        hll[p] = val_op(count, 1);
    } else {
        // The general case: the run split around the new value.
        let mut seq = Vec::with_capacity(5);
        if is_val(op) {
            let current = val_value(op);
            if index != first {
                seq.push(val_op(current, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(current, last - index));
            }
        } else {
            if index != first {
                push_zeros(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                push_zeros(&mut seq, last - index);
            }
        }
        // Step 3: splice it in, unless that makes the string too long.
        let new_len = (end + seq.len()).saturating_sub(width);
        if seq.len() > width && new_len > sparse_max {
            return promote(hll, index, count);
        }
        // An XZERO cut short by the end of the string is replaced whole, and the result
        // keeps the length Redis computes (its last byte falls off).
        let tail = hll.split_off((p + width).min(end));
        hll.truncate(p);
        hll.extend_from_slice(&seq);
        hll.extend_from_slice(&tail);
        hll.truncate(new_len);
    }

    // Step 4: merge adjacent VALs of equal value, scanning up to five opcodes from the
    // one before the change.
    let mut p = prev.unwrap_or(HEADER_LEN);
    let mut scan = 5;
    while p < hll.len() && scan > 0 {
        scan -= 1;
        let op = hll[p];
        if is_xzero(op) {
            p += 2;
            continue;
        }
        if is_zero(op) {
            p += 1;
            continue;
        }
        if let Some(&next) = hll.get(p + 1) {
            if is_val(next) && val_value(op) == val_value(next) {
                let len = val_len(op) + val_len(next);
                if len <= SPARSE_VAL_MAX_LEN {
                    hll[p + 1] = val_op(val_value(op), len);
                    hll.remove(p);
                    // Try again with the merged opcode and the one after it.
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate(hll);
    Ok(true)
}

fn promote(hll: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    to_dense(hll)?;
    Ok(dense_set(body_mut(hll), index, count))
}

// ---- debugging (PFDEBUG, PFSELFTEST) ----

/// Every register of a dense HLL, in order.
pub fn registers(hll: &[u8]) -> Vec<u8> {
    let mut raw = [0u8; REGISTERS];
    dense_unpack(hll.get(HEADER_LEN..).unwrap_or(&[]), &mut raw);
    raw.to_vec()
}

/// A sparse body as text, opcode by opcode: `z:len`, `Z:len` (XZERO), `v:value,len`.
pub fn decode(hll: &[u8]) -> String {
    let mut words = Vec::new();
    let mut p = HEADER_LEN;
    while p < hll.len() {
        let (op, width) = op_at(hll, p);
        words.push(match op {
            Op::Zeros(run) if width == 1 => format!("z:{run}"),
            Op::Zeros(run) => format!("Z:{run}"),
            Op::Val(run, value) => format!("v:{value},{run}"),
        });
        p += width;
    }
    words.join(" ")
}

/// Checks this module against itself: every register written and read back in the
/// dense layout, and the sparse and dense forms agreeing on registers and estimates as
/// elements arrive. `Err` names the first failure, as Redis's `TESTFAILED` does.
pub fn self_test() -> Result<(), String> {
    let mut regs = vec![0u8; DENSE_LEN - HEADER_LEN];
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..16 {
        let expected: Vec<u8> = (0..REGISTERS).map(|_| (next() & 63) as u8).collect();
        for (i, &v) in expected.iter().enumerate() {
            dense_write(&mut regs, i, v);
        }
        if let Some(i) = (0..REGISTERS).find(|&i| dense_get(&regs, i) != expected[i]) {
            return Err(format!("Register error at {i}"));
        }
    }
    let mut sparse = new();
    let mut dense = new();
    to_dense(&mut dense).map_err(|_| "Sparse and dense representation mismatch".to_string())?;
    for i in 0..5000u64 {
        let element = next().to_le_bytes();
        let a = add(&mut sparse, &element, DEFAULT_SPARSE_MAX_BYTES);
        let b = add(&mut dense, &element, DEFAULT_SPARSE_MAX_BYTES);
        let agree = a == b
            && (!is_dense(&sparse) || sparse[HEADER_LEN..] == dense[HEADER_LEN..])
            && (i % 500 != 0 || count(&sparse) == count(&dense));
        if !agree {
            return Err("Sparse and dense representation mismatch".to_string());
        }
    }
    Ok(())
}

// ---- counting ----

/// Raises each `max[i]` to register `i` of `hll` (PFCOUNT of several keys, PFMERGE).
pub fn merge(max: &mut [u8; REGISTERS], hll: &[u8]) -> Result<(), Corrupt> {
    if is_dense(hll) {
        let mut raw = [0u8; REGISTERS];
        dense_unpack(hll.get(HEADER_LEN..).unwrap_or(&[]), &mut raw);
        for (m, &v) in max.iter_mut().zip(raw.iter()) {
            *m = (*m).max(v);
        }
        Ok(())
    } else {
        walk_sparse(hll, |i, v| {
            if v > max[i] {
                max[i] = v;
            }
        })
    }
}

/// Recomputes the cardinality of one HLL (ignoring its cache).
pub fn count(hll: &[u8]) -> Result<u64, Corrupt> {
    let mut histo = [0u64; 64];
    let body = hll.get(HEADER_LEN..).unwrap_or(&[]);
    if is_dense(hll) {
        let mut raw = [0u8; REGISTERS];
        dense_unpack(body, &mut raw);
        for &r in raw.iter() {
            histo[usize::from(r)] += 1;
        }
    } else {
        // Unlike the conversion, the histogram never stops early: every opcode counts,
        // and the total must come out exact.
        let mut p = HEADER_LEN;
        let mut idx = 0usize;
        while p < hll.len() {
            let (op, width) = op_at(hll, p);
            let (run, value) = match op {
                Op::Zeros(run) => (run, 0),
                Op::Val(run, value) => (run, value),
            };
            idx += run;
            // A hostile body can hold more runs than a u64 of registers: wrap, as the
            // total is checked below anyway.
            histo[usize::from(value)] = histo[usize::from(value)].wrapping_add(run as u64);
            p += width;
        }
        if idx != REGISTERS {
            return Err(Corrupt);
        }
    }
    Ok(estimate(&histo))
}

/// The cardinality of registers held one per byte (the union PFCOUNT builds).
pub fn count_registers(regs: &[u8; REGISTERS]) -> u64 {
    let mut histo = [0u64; 64];
    for &r in regs {
        histo[usize::from(r & 63)] += 1;
    }
    estimate(&histo)
}

/// Ertl's estimator over the register histogram, in Redis 7.0's order of operations.
fn estimate(histo: &[u64; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - histo[Q + 1] as f64) / m);
    for j in (1..=Q).rev() {
        z += histo[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histo[0] as f64 / m);
    let e = (ALPHA_INF * m * m / z).round();
    // Only registers that no element can produce (all at 51 or more) make `z` zero:
    // Redis's llroundl then gives LLONG_MIN on x86-64, read back as 2^63.
    if e.is_finite() && e < 9_223_372_036_854_775_808.0 {
        e as u64
    } else {
        1 << 63
    }
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let previous = z;
        z += x * y;
        y += y;
        if z == previous {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let previous = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if z == previous {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Redis 7.0 stores after `PFADD k x y z` (read back with GET).
    const XYZ: &[u8] = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x61\x84\x80\x58\xcd\x88\x45\xa0\x84\x08";

    fn filled(n: usize, sparse_max: usize) -> Vec<u8> {
        let mut hll = new();
        for i in 0..n {
            add(&mut hll, i.to_string().as_bytes(), sparse_max).unwrap();
        }
        hll
    }

    #[test]
    fn empty_is_sparse_with_a_valid_zero_cache() {
        let hll = new();
        assert_eq!(hll, b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f\xff");
        assert!(is_hll(&hll));
        assert_eq!(cached(&hll), Some(0));
        assert_eq!(count(&hll), Ok(0));
    }

    #[test]
    fn sparse_bytes_match_redis() {
        let mut hll = new();
        for e in [&b"x"[..], b"y", b"z"] {
            assert_eq!(add(&mut hll, e, 3000), Ok(true));
        }
        assert_eq!(hll, XYZ);
        assert_eq!(cached(&hll), None);
        assert_eq!(add(&mut hll, b"x", 3000), Ok(false));
        assert_eq!(count(&hll), Ok(3));
        // Registers seen in the bytes: 8581 = 1, 14932 = 3, 16374 = 2.
        let mut max = [0u8; REGISTERS];
        merge(&mut max, &hll).unwrap();
        assert_eq!((max[8581], max[14932], max[16374]), (1, 3, 2));
        assert_eq!(max.iter().filter(|&&r| r != 0).count(), 3);
    }

    #[test]
    fn estimates_match_redis() {
        // PFCOUNT and STRLEN after PFADD of "0".."n-1", as Redis 7.0.15 answers.
        let hll = filled(100, 3000);
        assert_eq!((count(&hll), hll.len()), (Ok(100), 287));
        let hll = filled(1000, 3000);
        assert_eq!((count(&hll), hll.len()), (Ok(1001), 1923));
        let hll = filled(20000, 3000);
        assert_eq!((count(&hll), hll.len()), (Ok(19891), DENSE_LEN));
    }

    #[test]
    fn sparse_to_dense_keeps_registers_and_header() {
        let mut sparse = filled(1000, usize::MAX);
        let mut before = [0u8; REGISTERS];
        merge(&mut before, &sparse).unwrap();
        set_cached(&mut sparse, 12345);
        to_dense(&mut sparse).unwrap();
        assert_eq!(sparse.len(), DENSE_LEN);
        assert!(is_dense(&sparse) && is_hll(&sparse));
        assert_eq!(cached(&sparse), Some(12345));
        let mut after = [0u8; REGISTERS];
        merge(&mut after, &sparse).unwrap();
        assert_eq!(before, after);
        // The sparse limit only changes the representation, never the registers.
        let dense = filled(1000, 0);
        assert!(is_dense(&dense));
        assert_eq!(&dense[HEADER_LEN..], &sparse[HEADER_LEN..]);
    }

    #[test]
    fn dense_registers_round_trip() {
        let mut regs = vec![0u8; DENSE_LEN - HEADER_LEN];
        for i in 0..REGISTERS {
            dense_write(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8);
        }
        let mut raw = [0u8; REGISTERS];
        dense_unpack(&regs, &mut raw);
        assert!(raw.iter().enumerate().all(|(i, &r)| r == (i % 64) as u8));
        assert!(!dense_set(&mut regs, 5, 3));
        assert!(dense_set(&mut regs, 5, 6));
        assert_eq!(dense_get(&regs, 5), 6);
        assert_eq!(dense_get(&regs, 4), 4);
        assert_eq!(dense_get(&regs, 6), 6);
    }

    #[test]
    fn merging_with_a_cursor_writes_what_single_sets_write() {
        let mut rng = 0x1234_5678_u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for (n, runs, max_value) in [(50, 1, 3), (300, 4, 5), (600, 12, 40), (2000, 2, 2)] {
            let dest = filled(n, 3000);
            let mut max = [0u8; REGISTERS];
            // Runs of neighbouring registers, to exercise splits and merges.
            for _ in 0..n {
                let start = (next() as usize) % REGISTERS;
                let value = (next() % max_value) as u8 + 1;
                let stop = (start + runs).min(REGISTERS);
                max[start..stop].fill(value);
            }
            let mut one_by_one = dest.clone();
            for (i, &v) in max.iter().enumerate() {
                if v != 0 {
                    let _ = set(&mut one_by_one, i, v, 3000);
                }
            }
            let mut at_once = dest.clone();
            set_all(&mut at_once, &max, 3000);
            assert_eq!(one_by_one, at_once, "n={n}");
        }
    }

    #[test]
    fn debugging_views() {
        let mut hll = new();
        assert_eq!(decode(&hll), "Z:16384");
        for e in [&b"x"[..], b"y", b"z"] {
            add(&mut hll, e, 3000).unwrap();
        }
        assert_eq!(decode(&hll), "Z:8581 v:1,1 Z:6350 v:3,1 Z:1441 v:2,1 z:9");
        to_dense(&mut hll).unwrap();
        let regs = registers(&hll);
        assert_eq!((regs[8581], regs[14932], regs[16374]), (1, 3, 2));
        assert_eq!(self_test(), Ok(()));
    }

    #[test]
    fn big_register_promotes() {
        let mut hll = new();
        assert_eq!(set(&mut hll, 7, 33, 3000), Ok(true));
        assert!(is_dense(&hll));
        assert_eq!(dense_get(&hll[HEADER_LEN..], 7), 33);
    }

    #[test]
    fn malformed_sparse_is_corrupt() {
        // One XZERO covering only 16383 registers.
        let mut short = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x7f\xfe".to_vec();
        assert_eq!(count(&short), Err(Corrupt));
        assert_eq!(set(&mut short, 16383, 1, 3000), Err(Corrupt));
        assert_eq!(to_dense(&mut short), Err(Corrupt));
        assert!(!is_hll(b"HYLL\x00\0\0\0\0\0\0\0\0\0\0\0"));
        assert!(!is_hll(b"HYLL\x02\0\0\0\0\0\0\0\0\0\0\0\x7f\xff"));
        assert!(!is_hll(b"HYLL\x01\0\0"));
    }

    #[test]
    fn estimator_edges() {
        let mut regs = [0u8; REGISTERS];
        assert_eq!(count_registers(&regs), 0);
        regs[0] = 1;
        assert_eq!(count_registers(&regs), 1);
        let full = [51u8; REGISTERS];
        assert!(count_registers(&full) > 1 << 60);
    }
}
