//! HyperLogLog commands (Redis's `hyperloglog.c`): PFADD PFCOUNT PFMERGE, and the
//! introspection commands PFDEBUG and PFSELFTEST.
//!
//! An HLL is a plain string value in Redis's byte format ([`crate::store::hll`]), so
//! every string command sees it as Redis would. Commands check the header before use
//! (`WRONGTYPE Key is not a valid HyperLogLog string value.`) and report a malformed
//! sparse body only when they walk it (`INVALIDOBJ`). Values being updated are kept as
//! growable bytes, changed in place: a dense HLL is 12 KB and is not copied per PFADD.

use crate::notify::{event, NotifyClass};
use crate::store::lookups::as_read;
use bytes::Bytes;
use redline_resp::encode;

use super::args::is;
use super::reply::{ok, quoting, CmdError, CmdResult, WRONG_TYPE};
use super::{Ctx, Handler};
use crate::store::hll::{self, REGISTERS};
use crate::store::{CompactBytes, Value};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("pfadd", pfadd),
    ("pfcount", pfcount),
    ("pfmerge", pfmerge),
    ("pfdebug", pfdebug),
    ("pfselftest", pfselftest),
];

/// A string that is not an HLL.
const NOT_HLL: CmdError =
    CmdError::Static("WRONGTYPE Key is not a valid HyperLogLog string value.");
/// An HLL whose sparse body does not cover exactly every register.
const CORRUPT: CmdError = CmdError::Static("INVALIDOBJ Corrupted HLL object detected");

/// The HLL bytes of a value: WRONGTYPE for non-strings, NOT_HLL for other strings.
fn hll_bytes(value: &Value) -> Result<&[u8], CmdError> {
    match value {
        Value::Str(s) if hll::is_hll(s) => Ok(s.as_bytes()),
        Value::Str(_) | Value::Int(_) => Err(NOT_HLL),
        _ => Err(WRONG_TYPE),
    }
}

/// The HLL bytes of a value, for changing (the caller checked it with [`hll_bytes`]).
fn hll_bytes_mut(value: &mut Value) -> Result<&mut Vec<u8>, CmdError> {
    match value {
        Value::Str(s) => Ok(s.vec_mut()),
        _ => Err(WRONG_TYPE),
    }
}

fn new_hll() -> Value {
    Value::Str(CompactBytes::Growable(Box::new(hll::new())))
}

fn sparse_max(ctx: &Ctx<'_>) -> usize {
    let max = ctx.shared.config.read().hll_sparse_max_bytes;
    usize::try_from(max).unwrap_or(usize::MAX)
}

/// PFADD key [element ...]: 1 when a register changed or the key was created.
fn pfadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sparse_max = sparse_max(ctx);
    let key = &args[1];
    let mut shard = ctx.lock(key);
    // Changes as Redis counts them: the key's creation and each element that raised
    // a register.
    let mut changes = 0;
    // Redis's lookup for writing: a use of an existing key, of any type.
    let entry = shard.get_or_insert_used(key, || {
        changes += 1;
        new_hll()
    });
    hll_bytes(&entry.value)?;
    let bytes = hll_bytes_mut(&mut entry.value)?;
    for element in &args[2..] {
        // On a corrupt body Redis keeps the registers already raised: so do we.
        if hll::add(bytes, element, sparse_max).map_err(|_| CORRUPT)? {
            changes += 1;
        }
    }
    if changes > 0 {
        hll::invalidate(bytes);
        shard.touch(key);
        crate::store::dirty::mark_rest(changes);
        event(ctx, NotifyClass::String, "pfadd", key);
    }
    encode::write_integer(ctx.out, i64::from(changes > 0));
    Ok(())
}

/// PFCOUNT key [key ...]: one key answers from (and refreshes) its cached cardinality;
/// several keys count their union, caching nothing.
fn pfcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 2 {
        let keys = &args[1..];
        let mut locked = ctx.lock_keys(keys.iter().map(|k| &k[..]));
        let mut max = Box::new([0u8; REGISTERS]);
        for key in keys {
            if let Some(entry) = locked.shard(key).get(key) {
                hll::merge(&mut max, hll_bytes(&entry.value)?).map_err(|_| CORRUPT)?;
            }
        }
        drop(locked);
        encode::write_integer(ctx.out, hll::count_registers(&max) as i64);
        return Ok(());
    }
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let Some(entry) = shard.get(key) else {
        encode::write_integer(ctx.out, 0);
        return Ok(());
    };
    hll_bytes(&entry.value)?;
    let bytes = hll_bytes_mut(&mut entry.value)?;
    let card = match hll::cached(bytes) {
        Some(card) => card,
        None => {
            let card = hll::count(bytes).map_err(|_| CORRUPT)?;
            // A read that writes: the new cache is part of the stored bytes.
            hll::set_cached(bytes, card);
            shard.touch(key);
            card
        }
    };
    encode::write_integer(ctx.out, card as i64);
    Ok(())
}

/// PFMERGE destkey [sourcekey ...]: the destination (itself a source) gets the
/// register-wise maximum; it turns dense at once if any input is dense.
fn pfmerge(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sparse_max = sparse_max(ctx);
    let keys = &args[1..];
    let mut locked = ctx.lock_keys(keys.iter().map(|k| &k[..]));
    let mut max = Box::new([0u8; REGISTERS]);
    let mut use_dense = false;
    // Every key, the destination included, is looked up as a read first, as in Redis.
    for key in keys {
        if let Some(entry) = as_read(|| locked.shard(key).get(key)) {
            let bytes = hll_bytes(&entry.value)?;
            use_dense |= hll::is_dense(bytes);
            hll::merge(&mut max, bytes).map_err(|_| CORRUPT)?;
        }
    }
    let dest = &args[1];
    let shard = locked.shard(dest);
    // Then Redis looks the destination up for writing: one more use of it.
    let entry = shard.get_or_insert_used(dest, new_hll);
    let bytes = hll_bytes_mut(&mut entry.value)?;
    if use_dense {
        hll::to_dense(bytes).map_err(|_| CORRUPT)?;
    }
    hll::set_all(bytes, &max, sparse_max);
    hll::invalidate(bytes);
    shard.touch(dest);
    drop(locked);
    event(ctx, NotifyClass::String, "pfadd", dest);
    ok(ctx.out);
    Ok(())
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key. GETREG and TODENSE leave the key dense.
fn pfdebug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (sub, key) = (&args[1], &args[2]);
    let mut shard = ctx.lock(key);
    let Some(entry) = shard.get(key) else {
        return Err(CmdError::Static("ERR The specified key does not exist"));
    };
    hll_bytes(&entry.value)?;
    let bytes = hll_bytes_mut(&mut entry.value)?;
    let out = &mut *ctx.out;
    if is(sub, "getreg") {
        hll::to_dense(bytes).map_err(|_| CORRUPT)?;
        encode::write_array_len(out, REGISTERS);
        for value in hll::registers(bytes) {
            encode::write_integer(out, i64::from(value));
        }
    } else if is(sub, "decode") {
        if hll::is_dense(bytes) {
            return Err(CmdError::Static("ERR HLL encoding is not sparse"));
        }
        encode::write_bulk(out, hll::decode(bytes).as_bytes());
    } else if is(sub, "encoding") {
        let name: &[u8] = if hll::is_dense(bytes) {
            b"dense"
        } else {
            b"sparse"
        };
        encode::write_simple(out, name);
    } else if is(sub, "todense") {
        let converted = !hll::is_dense(bytes);
        hll::to_dense(bytes).map_err(|_| CORRUPT)?;
        encode::write_integer(out, i64::from(converted));
    } else {
        return Err(quoting(
            "ERR Unknown PFDEBUG subcommand '",
            sub,
            usize::MAX,
            "'",
        ));
    }
    Ok(())
}

/// PFSELFTEST: checks the representation code and answers OK (or `TESTFAILED`).
fn pfselftest(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    hll::self_test().map_err(|why| CmdError::Owned(format!("TESTFAILED {why}")))?;
    ok(ctx.out);
    Ok(())
}
