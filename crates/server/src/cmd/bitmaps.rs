//! Bit operations on strings (Redis's `bitops.c`): SETBIT GETBIT BITCOUNT BITPOS BITOP
//! BITFIELD BITFIELD_RO. Bits are numbered from the most significant bit of the first
//! byte; reads past the end see zeros, writes grow the string with zeros.

use crate::notify::{event, NotifyClass};
use crate::store::lookups::as_read;
use bytes::Bytes;
use redline_resp::encode;

use super::args::is;
use super::reply::{CmdError, CmdResult, NOT_INTEGER, SYNTAX, WRONG_TYPE};
use super::{Ctx, Handler};
use crate::store::{canonical_int, Shard, Value};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("setbit", setbit),
    ("getbit", getbit),
    ("bitcount", bitcount),
    ("bitpos", bitpos),
    ("bitop", bitop),
    ("bitfield", bitfield),
    ("bitfield_ro", bitfield_ro),
];

const BIT_OFFSET: CmdError = CmdError::Static("ERR bit offset is not an integer or out of range");

/// Redis's `getBitOffsetFromArgument`: a bit offset, or with `#n` (BITFIELD) `n * bits`;
/// the byte it lands in must be below `proto-max-bulk-len`.
fn bit_offset(ctx: &Ctx<'_>, arg: &[u8], hash_bits: Option<u32>) -> Result<u64, CmdError> {
    let (text, multiply) = match (arg.first(), hash_bits) {
        (Some(b'#'), Some(bits)) if arg.len() > 1 => (&arg[1..], Some(bits)),
        _ => (arg, None),
    };
    let mut n = canonical_int(text).ok_or(BIT_OFFSET)?;
    if let Some(bits) = multiply {
        n = n.wrapping_mul(i64::from(bits));
    }
    let limit = ctx.shared.config.read().proto_max_bulk_len;
    if n < 0 || (n as u64 >> 3) >= limit {
        return Err(BIT_OFFSET);
    }
    Ok(n as u64)
}

/// Runs `f` on the string at `key` where it stands, under the shard's lock: these reads
/// look at a range of a string that may be hundreds of MB, and a copy would cost its
/// whole size each call. `Ok(None)` when missing, WRONGTYPE when not a string.
fn read_in_place<R>(
    shard: &mut Shard,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> R,
) -> Result<Option<R>, CmdError> {
    match shard.get(key) {
        None => Ok(None),
        Some(e) => e.value.with_str(f).map(Some).ok_or(WRONG_TYPE),
    }
}

/// The string at `key` for reading: `Ok(None)` when missing, WRONGTYPE when not a string.
fn read_string(shard: &mut Shard, key: &[u8]) -> Result<Option<Vec<u8>>, CmdError> {
    match shard.get(key) {
        None => Ok(None),
        Some(e) => e.value.to_vec().map(Some).ok_or(WRONG_TYPE),
    }
}

/// Runs `f` on the string at `key` grown with zeros to at least `len` bytes (created
/// when missing; changed in place when no growth is needed). `f` gets whether the key
/// was created or grown, and returns its result and how many changes it made, which
/// the dataset counts (Redis's `server.dirty`: SETBIT and BITFIELD count only writes
/// that changed something). Returns the result, the changes, and whether the key was
/// created or grown (a BITFIELD whose writes all failed still did that).
fn with_bits_mut<R>(
    shard: &mut Shard,
    key: &[u8],
    len: usize,
    f: impl FnOnce(&mut [u8], bool) -> (R, u64),
) -> Result<(R, u64, bool), CmdError> {
    let existing = match shard.get(key) {
        Some(e) => Some(e.value.with_str(<[u8]>::len).ok_or(WRONG_TYPE)?),
        None => None,
    };
    let reshaped = existing.is_none_or(|old_len| old_len < len);
    // A new string is made its exact size, as Redis makes it; signalled only if a
    // write changes it (the touch below), as in Redis.
    let entry = shard.get_or_insert_unsignalled(key, || Value::raw(vec![0; len]));
    let bytes = entry.value.str_grown_mut(len).ok_or(WRONG_TYPE)?;
    let (result, changes) = f(bytes, reshaped);
    if changes > 0 {
        shard.touch(key);
        crate::store::dirty::mark_rest(changes as usize);
    }
    Ok((result, changes, reshaped))
}

fn setbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let offset = bit_offset(ctx, &args[2], None)?;
    const BIT: CmdError = CmdError::Static("ERR bit is not an integer or out of range");
    let on = match canonical_int(&args[3]).ok_or(BIT)? {
        0 => false,
        1 => true,
        _ => return Err(BIT),
    };
    let key = &args[1];
    let byte = (offset >> 3) as usize;
    let mask = 1u8 << (7 - (offset & 7));
    let mut shard = ctx.lock(key);
    let (old, changes, _) = with_bits_mut(&mut shard, key, byte + 1, |b, dirty| {
        let old = b[byte] & mask != 0;
        if on {
            b[byte] |= mask;
        } else {
            b[byte] &= !mask;
        }
        (old, u64::from(dirty || old != on))
    })?;
    drop(shard);
    if changes > 0 {
        event(ctx, NotifyClass::String, "setbit", key);
    }
    encode::write_integer(ctx.out, i64::from(old));
    Ok(())
}

fn getbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let offset = bit_offset(ctx, &args[2], None)?;
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let bit = match shard.get(key) {
        None => 0,
        Some(e) => e
            .value
            .with_str(|s| {
                s.get((offset >> 3) as usize)
                    .map_or(0, |b| (b >> (7 - (offset & 7))) & 1)
            })
            .ok_or(WRONG_TYPE)?,
    };
    encode::write_integer(ctx.out, i64::from(bit));
    Ok(())
}

/// A range as BITCOUNT/BITPOS read it: `(start, end)` in bytes plus the masks of the
/// bits outside a BIT range in the first and last byte; `None` when empty.
struct Range {
    start: i64,
    end: i64,
    first_mask: u8,
    last_mask: u8,
}

fn resolve(mut start: i64, mut end: i64, len: i64, bits: bool) -> Range {
    let total = if bits { len << 3 } else { len };
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    let (mut first_mask, mut last_mask) = (0u8, 0u8);
    if bits && start <= end {
        first_mask = (!((1u32 << (8 - (start & 7))) - 1) & 0xFF) as u8;
        last_mask = ((1u32 << (7 - (end & 7))) - 1) as u8;
        start >>= 3;
        end >>= 3;
    }
    Range {
        start,
        end,
        first_mask,
        last_mask,
    }
}

fn unit(arg: &[u8]) -> Result<bool, CmdError> {
    if is(arg, "bit") {
        Ok(true)
    } else if is(arg, "byte") {
        Ok(false)
    } else {
        Err(SYNTAX)
    }
}

fn bitcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let count = read_in_place(&mut shard, key, |s| bits_counted(s, args))?.unwrap_or(Ok(0))?;
    drop(shard);
    encode::write_integer(ctx.out, count);
    Ok(())
}

/// BITCOUNT's answer for the string `s` and the command's range arguments.
fn bits_counted(s: &[u8], args: &[Bytes]) -> Result<i64, CmdError> {
    let len = s.len() as i64;
    let range = match args.len() {
        4 | 5 => {
            let start = canonical_int(&args[2]).ok_or(NOT_INTEGER)?;
            let end = canonical_int(&args[3]).ok_or(NOT_INTEGER)?;
            // Redis answers an empty negative range before it reads the unit, so
            // `BITCOUNT k -1 -2 bad` is 0, not a syntax error.
            if start < 0 && end < 0 && start > end {
                return Ok(0);
            }
            let bits = match args.get(4) {
                Some(u) => unit(u)?,
                None => false,
            };
            resolve(start, end, len, bits)
        }
        2 => Range {
            start: 0,
            end: len - 1,
            first_mask: 0,
            last_mask: 0,
        },
        _ => return Err(SYNTAX),
    };
    if range.start > range.end {
        return Ok(0);
    }
    let (a, b) = (range.start as usize, range.end as usize);
    let mut count: i64 = s[a..=b].iter().map(|x| i64::from(x.count_ones())).sum();
    if range.first_mask != 0 {
        count -= i64::from((s[a] & range.first_mask).count_ones());
    }
    if range.last_mask != 0 {
        count -= i64::from((s[b] & range.last_mask).count_ones());
    }
    Ok(count)
}

/// Redis's `redisBitpos`: the first bit equal to `bit` in `bytes`; not found is -1 for
/// a one and the bit just past the end for a zero.
fn first_bit(bytes: &[u8], bit: bool) -> i64 {
    let skip = if bit { 0u8 } else { 0xFF };
    for (i, &b) in bytes.iter().enumerate() {
        if b != skip {
            let x = if bit { b } else { !b };
            return (i as i64) * 8 + i64::from(x.leading_zeros());
        }
    }
    if bit {
        -1
    } else {
        bytes.len() as i64 * 8
    }
}

fn bitpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let bit = match canonical_int(&args[2]).ok_or(NOT_INTEGER)? {
        0 => false,
        1 => true,
        _ => return Err(CmdError::Static("ERR The bit argument must be 1 or 0.")),
    };
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let missing = if bit { -1 } else { 0 };
    let pos =
        read_in_place(&mut shard, key, |s| bit_position(s, bit, args))?.unwrap_or(Ok(missing))?;
    drop(shard);
    encode::write_integer(ctx.out, pos);
    Ok(())
}

/// BITPOS's answer for the string `s`, the bit looked for and the command's range
/// arguments.
fn bit_position(s: &[u8], bit: bool, args: &[Bytes]) -> Result<i64, CmdError> {
    let len = s.len() as i64;
    let mut end_given = false;
    let range = match args.len() {
        4..=6 => {
            let start = canonical_int(&args[3]).ok_or(NOT_INTEGER)?;
            let bits = match args.get(5) {
                Some(u) => unit(u)?,
                None => false,
            };
            let end = match args.get(4) {
                Some(e) => {
                    end_given = true;
                    canonical_int(e).ok_or(NOT_INTEGER)?
                }
                None if bits => (len << 3) + 7,
                None => len - 1,
            };
            resolve(start, end, len, bits)
        }
        3 => Range {
            start: 0,
            end: len - 1,
            first_mask: 0,
            last_mask: 0,
        },
        _ => return Err(SYNTAX),
    };
    if range.start > range.end {
        return Ok(-1);
    }
    let mut start = range.start as usize;
    let end = range.end as usize;
    let mut bytes = end - start + 1;
    let pos: i64 = 'found: {
        if range.first_mask != 0 {
            let mut c = if bit {
                s[start] & !range.first_mask
            } else {
                s[start] | range.first_mask
            };
            if range.last_mask != 0 && bytes == 1 {
                c = if bit {
                    c & !range.last_mask
                } else {
                    c | range.last_mask
                };
            }
            let pos = first_bit(&[c], bit);
            if bytes == 1 || (pos != -1 && pos != 8) {
                break 'found pos;
            }
            start += 1;
            bytes -= 1;
        }
        let current = bytes - usize::from(range.last_mask != 0);
        if current > 0 {
            let pos = first_bit(&s[start..start + current], bit);
            if bytes == current || (pos != -1 && pos != (current as i64) << 3) {
                break 'found pos;
            }
            start += current;
            bytes -= current;
        }
        let c = if bit {
            s[end] & !range.last_mask
        } else {
            s[end] | range.last_mask
        };
        first_bit(&[c], bit)
    };
    if end_given && !bit && pos == (bytes as i64) << 3 {
        return Ok(-1);
    }
    Ok(if pos != -1 {
        pos + ((start as i64) << 3)
    } else {
        pos
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

fn bitop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let op = match &args[1] {
        a if is(a, "and") => BitOp::And,
        a if is(a, "or") => BitOp::Or,
        a if is(a, "xor") => BitOp::Xor,
        a if is(a, "not") => BitOp::Not,
        _ => return Err(SYNTAX),
    };
    if op == BitOp::Not && args.len() != 4 {
        return Err(CmdError::Static(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let dst = &args[2];
    let sources = &args[3..];
    let mut all: Vec<&[u8]> = sources.iter().map(|k| &k[..]).collect();
    all.push(dst);
    let mut locked = ctx.lock_keys(all);
    let mut inputs = Vec::with_capacity(sources.len());
    for key in sources {
        let found = as_read(|| read_string(locked.shard(key), key))?;
        inputs.push(found.unwrap_or_default());
    }
    let max = inputs.iter().map(|s| s.len()).max().unwrap_or(0);
    let shard = locked.shard(dst);
    if max == 0 {
        if shard.remove_any(dst) {
            event(ctx, NotifyClass::Generic, "del", dst);
        }
        encode::write_integer(ctx.out, 0);
        return Ok(());
    }
    let mut result = vec![0u8; max];
    for (j, out) in result.iter_mut().enumerate() {
        let byte = |i: usize| inputs[i].get(j).copied().unwrap_or(0);
        let mut v = byte(0);
        if op == BitOp::Not {
            v = !v;
        }
        for i in 1..inputs.len() {
            match op {
                BitOp::And => v &= byte(i),
                BitOp::Or => v |= byte(i),
                BitOp::Xor => v ^= byte(i),
                BitOp::Not => {}
            }
        }
        *out = v;
    }
    // A new string built whole, which Redis stores `raw` whatever it reads as.
    shard.insert(dst, Value::raw(result), 0);
    event(ctx, NotifyClass::String, "set", dst);
    encode::write_integer(ctx.out, max as i64);
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldOp {
    Get,
    Set,
    IncrBy,
}

struct Field {
    op: FieldOp,
    signed: bool,
    bits: u32,
    offset: u64,
    value: i64,
    overflow: Overflow,
}

const BAD_TYPE: CmdError = CmdError::Static(
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
);

fn field_type(arg: &[u8]) -> Result<(bool, u32), CmdError> {
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(BAD_TYPE),
    };
    let bits = canonical_int(&arg[1..]).ok_or(BAD_TYPE)?;
    if bits < 1 || (signed && bits > 64) || (!signed && bits > 63) {
        return Err(BAD_TYPE);
    }
    Ok((signed, bits as u32))
}

fn get_unsigned(p: &[u8], offset: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    for j in 0..u64::from(bits) {
        let bit = offset + j;
        let byte = (bit >> 3) as usize;
        let set = p.get(byte).is_some_and(|b| b & (1 << (7 - (bit & 7))) != 0);
        value = (value << 1) | u64::from(set);
    }
    value
}

fn get_signed(p: &[u8], offset: u64, bits: u32) -> i64 {
    let mut value = get_unsigned(p, offset, bits) as i64;
    if bits < 64 && value & (1i64 << (bits - 1)) != 0 {
        value |= (-1i64) << bits;
    }
    value
}

fn set_bits(p: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..u64::from(bits) {
        let set = value & (1u64 << (u64::from(bits) - 1 - j)) != 0;
        let bit = offset + j;
        let byte = (bit >> 3) as usize;
        let mask = 1u8 << (7 - (bit & 7));
        if let Some(b) = p.get_mut(byte) {
            if set {
                *b |= mask;
            } else {
                *b &= !mask;
            }
        }
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: whether `value + incr` leaves the range, and
/// the value to store instead under WRAP or SAT.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, how: Overflow) -> (bool, u64) {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = (value as i64).wrapping_neg();
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX << bits);
    if value > max || (incr > 0 && incr > maxincr) {
        match how {
            Overflow::Wrap => (true, wrap()),
            Overflow::Sat => (true, max),
            Overflow::Fail => (true, 0),
        }
    } else if incr < 0 && incr < minincr {
        match how {
            Overflow::Wrap => (true, wrap()),
            Overflow::Sat => (true, 0),
            Overflow::Fail => (true, 0),
        }
    } else {
        (false, 0)
    }
}

/// Redis's `checkSignedBitfieldOverflow`.
fn signed_overflow(value: i64, incr: i64, bits: u32, how: Overflow) -> (bool, i64) {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let msb = 1u64 << (bits - 1);
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & msb != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        match how {
            Overflow::Wrap => (true, wrap()),
            Overflow::Sat => (true, max),
            Overflow::Fail => (true, 0),
        }
    } else if value < min
        || (bits != 64 && incr < minincr)
        || (value < 0 && incr < 0 && incr < minincr)
    {
        match how {
            Overflow::Wrap => (true, wrap()),
            Overflow::Sat => (true, min),
            Overflow::Fail => (true, 0),
        }
    } else {
        (false, 0)
    }
}

fn bitfield_generic(ctx: &mut Ctx<'_>, args: &[Bytes], readonly_command: bool) -> CmdResult {
    let mut fields = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest_write: Option<u64> = None;
    let mut j = 2;
    while j < args.len() {
        let remaining = args.len() - j - 1;
        let sub = &args[j];
        let op = if is(sub, "get") && remaining >= 2 {
            FieldOp::Get
        } else if is(sub, "set") && remaining >= 3 {
            FieldOp::Set
        } else if is(sub, "incrby") && remaining >= 3 {
            FieldOp::IncrBy
        } else if is(sub, "overflow") && remaining >= 1 {
            let w = &args[j + 1];
            overflow = if is(w, "wrap") {
                Overflow::Wrap
            } else if is(w, "sat") {
                Overflow::Sat
            } else if is(w, "fail") {
                Overflow::Fail
            } else {
                return Err(CmdError::Static("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(SYNTAX);
        };
        let (signed, bits) = field_type(&args[j + 1])?;
        let offset = bit_offset(ctx, &args[j + 2], Some(bits))?;
        let mut value = 0;
        if op != FieldOp::Get {
            let top = offset + u64::from(bits) - 1;
            highest_write = Some(highest_write.map_or(top, |h| h.max(top)));
            value = canonical_int(&args[j + 3]).ok_or(NOT_INTEGER)?;
        }
        fields.push(Field {
            op,
            signed,
            bits,
            offset,
            value,
            overflow,
        });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let Some(highest) = highest_write else {
        // Without a write, a read's lookup, as Redis makes it.
        let read = |s: &[u8]| -> Vec<i64> {
            let field = |f: &Field| {
                if f.signed {
                    get_signed(s, f.offset, f.bits)
                } else {
                    get_unsigned(s, f.offset, f.bits) as i64
                }
            };
            fields.iter().map(field).collect()
        };
        let values = as_read(|| read_in_place(&mut shard, key, read))?.unwrap_or_else(|| read(&[]));
        drop(shard);
        encode::write_array_len(ctx.out, values.len());
        for v in values {
            encode::write_integer(ctx.out, v);
        }
        return Ok(());
    };
    if readonly_command {
        return Err(CmdError::Static(
            "ERR BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let out = &mut *ctx.out;
    let ((), changes, reshaped) =
        with_bits_mut(&mut shard, key, (highest >> 3) as usize + 1, |p, dirty| {
            let mut changes = 0;
            encode::write_array_len(out, fields.len());
            for f in &fields {
                match (f.op, f.signed) {
                    (FieldOp::Get, true) => {
                        encode::write_integer(out, get_signed(p, f.offset, f.bits));
                    }
                    (FieldOp::Get, false) => {
                        encode::write_integer(out, get_unsigned(p, f.offset, f.bits) as i64);
                    }
                    (op, true) => {
                        let old = get_signed(p, f.offset, f.bits);
                        let (base, incr) = match op {
                            FieldOp::Set => (f.value, 0),
                            _ => (old, f.value),
                        };
                        let mut new = base.wrapping_add(incr);
                        let (over, limit) = signed_overflow(base, incr, f.bits, f.overflow);
                        if over {
                            new = limit;
                        }
                        if over && f.overflow == Overflow::Fail {
                            encode::write_null_bulk(out, proto);
                        } else {
                            set_bits(p, f.offset, f.bits, new as u64);
                            changes += u64::from(dirty || old != new);
                            encode::write_integer(out, if op == FieldOp::Set { old } else { new });
                        }
                    }
                    (op, false) => {
                        let old = get_unsigned(p, f.offset, f.bits);
                        let (base, incr) = match op {
                            FieldOp::Set => (f.value as u64, 0),
                            _ => (old, f.value),
                        };
                        let mut new = base.wrapping_add(incr as u64);
                        let (over, limit) = unsigned_overflow(base, incr, f.bits, f.overflow);
                        if over {
                            new = limit;
                        }
                        if over && f.overflow == Overflow::Fail {
                            encode::write_null_bulk(out, proto);
                        } else {
                            set_bits(p, f.offset, f.bits, new);
                            changes += u64::from(dirty || old != new);
                            let shown = if op == FieldOp::Set { old } else { new };
                            encode::write_integer(out, shown as i64);
                        }
                    }
                }
            }
            ((), changes)
        })?;
    if changes == 0 && reshaped {
        // Every write failed (OVERFLOW FAIL), so Redis counts no change and does not
        // propagate; but the key was created or grown, and the replicas and the AOF
        // must hold it too. Propagated before the key unlocks, in its place.
        crate::repl::propagate_instead(ctx, vec![args.to_vec()]);
    }
    drop(shard);
    if changes > 0 {
        event(ctx, NotifyClass::String, "setbit", key);
    }
    Ok(())
}

fn bitfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bitfield_generic(ctx, args, false)
}

fn bitfield_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bitfield_generic(ctx, args, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let mut p = vec![0u8; 4];
        set_bits(&mut p, 3, 10, 0x2AB);
        assert_eq!(get_unsigned(&p, 3, 10), 0x2AB);
        assert_eq!(get_signed(&p, 3, 10), 0x2AB - 0x400);
        assert_eq!(first_bit(&[0, 0x10], true), 11);
        assert_eq!(first_bit(&[0xFF], false), 8);
        assert_eq!(signed_overflow(127, 1, 8, Overflow::Wrap), (true, -128));
        assert_eq!(unsigned_overflow(255, 1, 8, Overflow::Sat), (true, 255));
    }
}
