//! String commands (Redis's `t_string.c`): GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX
//! MGET MSET MSETNX APPEND STRLEN GETRANGE SETRANGE INCR DECR INCRBY DECRBY INCRBYFLOAT.

use crate::store::lookups::as_read;
use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::long_double::{incr_by_float, IncrFloatError};
use super::reply::{
    ok, CmdError, CmdResult, NOT_FLOAT, OVERFLOW, STRING_TOO_LONG, SYNTAX, WRONG_TYPE,
};
use super::{Ctx, Handler};
use crate::notify::{event, NotifyClass};
use crate::store::{canonical_int, now_ms, Entry, Value};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("get", get),
    ("set", set),
    ("setnx", setnx),
    ("setex", setex),
    ("psetex", psetex),
    ("getset", getset),
    ("getdel", getdel),
    ("getex", getex),
    ("mget", mget),
    ("mset", mset),
    ("msetnx", msetnx),
    ("append", append),
    ("strlen", strlen),
    ("getrange", getrange),
    ("substr", getrange),
    ("setrange", setrange),
    ("incr", incr),
    ("decr", decr),
    ("incrby", incrby),
    ("decrby", decrby),
    ("incrbyfloat", incrbyfloat),
];

/// Writes a string entry as a bulk (or WRONGTYPE), straight from the locked entry.
#[inline]
fn write_string(ctx: &mut Ctx<'_>, entry: &Entry) -> CmdResult {
    let out = &mut *ctx.out;
    match &entry.value {
        // A value that alone passes the client's hard output limit is not copied: the
        // client is closed with its replies dropped, as Redis closes it once it has
        // built the reply; copying megabytes only to drop them delays the close.
        Value::Str(s)
            if s.len() >= LARGE_REPLY
                && !ctx.nested
                && ctx.client.reply == crate::net::client::ReplyMode::On =>
        {
            if !ctx.client.reply_passes_hard_limit(out.len(), s.len()) {
                encode::write_bulk(out, s);
            }
        }
        Value::Str(s) => encode::write_bulk(out, s),
        Value::Int(n) => {
            let mut digits = itoa::Buffer::new();
            encode::write_bulk(out, digits.format(*n).as_bytes());
        }
        _ => return Err(WRONG_TYPE),
    }
    Ok(())
}

/// From this size a string reply is checked against the client's hard output limit
/// before it is copied (smaller ones are checked after the command, with the rest).
const LARGE_REPLY: usize = 64 * 1024;

/// GET key: the hot path. One shard lock, the reply encoded from the entry in place.
pub fn get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    match shard.get(key) {
        Some(entry) => write_string(ctx, entry),
        None => {
            encode::write_null_bulk(ctx.out, ctx.client.protocol);
            Ok(())
        }
    }
}

/// Expiry options shared by SET and GETEX.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpireUnit {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// Turns an expire argument into an absolute deadline, as `getExpireMillisecondsOrReply`.
fn deadline(arg: &[u8], unit: ExpireUnit, command: &str) -> Result<u64, CmdError> {
    let invalid = || CmdError::Owned(format!("ERR invalid expire time in '{command}' command"));
    let mut ms = int(arg)?;
    let seconds = matches!(unit, ExpireUnit::Ex | ExpireUnit::ExAt);
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        return Err(invalid());
    }
    if seconds {
        ms *= 1000;
    }
    if matches!(unit, ExpireUnit::Ex | ExpireUnit::Px) {
        ms = ms.checked_add(now_ms() as i64).ok_or_else(invalid)?;
    }
    Ok(ms as u64)
}

#[derive(Default)]
struct SetOptions {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    expire: Option<(ExpireUnit, usize)>,
}

/// Parses SET/GETEX options as `parseExtendedStringArgumentsOrReply`, same conflicts.
fn parse_set_options(args: &[Bytes], from: usize, is_set: bool) -> Result<SetOptions, CmdError> {
    let mut o = SetOptions::default();
    let mut j = from;
    while j < args.len() {
        let a = &args[j];
        let has_next = j + 1 < args.len();
        let timed = |o: &SetOptions, unit: ExpireUnit| {
            !o.keepttl && !o.persist && o.expire.is_none_or(|(u, _)| u == unit) && has_next
        };
        if is_set && is(a, "nx") && !o.xx {
            o.nx = true;
        } else if is_set && is(a, "xx") && !o.nx {
            o.xx = true;
        } else if is_set && is(a, "get") {
            o.get = true;
        } else if is_set && is(a, "keepttl") && !o.persist && o.expire.is_none() {
            o.keepttl = true;
        } else if !is_set && is(a, "persist") && o.expire.is_none() && !o.keepttl {
            o.persist = true;
        } else if let Some(unit) = [
            ("ex", ExpireUnit::Ex),
            ("px", ExpireUnit::Px),
            ("exat", ExpireUnit::ExAt),
            ("pxat", ExpireUnit::PxAt),
        ]
        .iter()
        .find(|(w, _)| is(a, w))
        .map(|(_, u)| *u)
        .filter(|u| timed(&o, *u))
        {
            o.expire = Some((unit, j + 1));
            j += 1;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

fn set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let o = parse_set_options(args, 3, true)?;
    let expires_at = match o.expire {
        Some((unit, at)) => deadline(&args[at], unit, "set")?,
        None => 0,
    };
    let key = &args[1];
    let value = Value::string(&args[2]);
    let mut shard = ctx.lock(key);
    // The common case, a plain overwrite: one map lookup.
    if !(o.get || o.nx || o.xx || o.keepttl) {
        shard.insert(key, value, expires_at);
        drop(shard);
        notify_set(ctx, key, expires_at != 0);
        ok(ctx.out);
        return Ok(());
    }
    // GET reads the old value as GET does (a miss counts, and fires `keymiss`): a use.
    if o.get {
        match as_read(|| shard.get(key)) {
            Some(entry) if !entry.value.is_string() => return Err(WRONG_TYPE),
            Some(entry) => write_string(ctx, entry)?,
            None => encode::write_null_bulk(ctx.out, ctx.client.protocol),
        }
    }
    // Then Redis looks the key up for writing (another use) and writes over it without
    // a third: the write below records that use, or the refusal does.
    let found = shard.contains(key);
    if (o.nx && found) || (o.xx && !found) {
        if found {
            let _ = shard.get(key);
        }
        if !o.get {
            encode::write_null_bulk(ctx.out, ctx.client.protocol);
        }
        return Ok(());
    }
    match (o.keepttl, found) {
        (true, true) => {
            if let Some(entry) = shard.get(key) {
                entry.value = value;
            }
            shard.touch(key);
        }
        _ => shard.insert(key, value, expires_at),
    }
    notify_set(ctx, key, expires_at != 0);
    if !o.get {
        ok(ctx.out);
    }
    Ok(())
}

/// The events of a SET: `set`, and `expire` when it gave the key a TTL.
fn notify_set(ctx: &Ctx<'_>, key: &[u8], expires: bool) {
    event(ctx, NotifyClass::String, "set", key);
    if expires {
        event(ctx, NotifyClass::Generic, "expire", key);
    }
}

fn setnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    // Redis's lookup for writing: a use of an existing key.
    let created = shard.get(key).is_none();
    if created {
        shard.insert(key, Value::string(&args[2]), 0);
        event(ctx, NotifyClass::String, "set", key);
    }
    encode::write_integer(ctx.out, i64::from(created));
    Ok(())
}

fn setex_generic(ctx: &mut Ctx<'_>, args: &[Bytes], unit: ExpireUnit, name: &str) -> CmdResult {
    let expires_at = deadline(&args[2], unit, name)?;
    let key = &args[1];
    // Through the context, so inside EXEC the held shard is used (locking it again
    // would deadlock the transaction against itself).
    ctx.lock(key)
        .insert(key, Value::string(&args[3]), expires_at);
    notify_set(ctx, key, true);
    ok(ctx.out);
    Ok(())
}

fn setex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    setex_generic(ctx, args, ExpireUnit::Ex, "setex")
}

fn psetex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    setex_generic(ctx, args, ExpireUnit::Px, "psetex")
}

fn getset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    match as_read(|| shard.get(key)) {
        Some(entry) => write_string(ctx, entry)?,
        None => encode::write_null_bulk(ctx.out, ctx.client.protocol),
    }
    shard.insert(key, Value::string(&args[2]), 0);
    event(ctx, NotifyClass::String, "set", key);
    Ok(())
}

fn getdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    match as_read(|| shard.get(key)) {
        Some(entry) => {
            write_string(ctx, entry)?;
            shard.remove(key);
            event(ctx, NotifyClass::Generic, "del", key);
        }
        None => encode::write_null_bulk(ctx.out, ctx.client.protocol),
    }
    Ok(())
}

fn getex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let o = parse_set_options(args, 2, false)?;
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let Some(entry) = as_read(|| shard.get(key)) else {
        encode::write_null_bulk(ctx.out, ctx.client.protocol);
        return Ok(());
    };
    if !entry.value.is_string() {
        return Err(WRONG_TYPE);
    }
    // Read off this lookup: Redis's GETEX looks the key up once (one use of it).
    let had_ttl = entry.expires_at != 0;
    // Redis validates the expire time only once it knows the key is a string.
    let expires_at = match o.expire {
        Some((unit, at)) => Some(deadline(&args[at], unit, "getex")?),
        None => None,
    };
    write_string(ctx, entry)?;
    if let Some(at) = expires_at {
        if super::keys::already_expired(ctx, at as i64) {
            shard.remove(key);
            event(ctx, NotifyClass::Generic, "del", key);
        } else {
            shard.set_expires(key, at);
            event(ctx, NotifyClass::Generic, "expire", key);
        }
    } else if o.persist && had_ttl {
        shard.set_expires(key, 0);
        event(ctx, NotifyClass::Generic, "persist", key);
    }
    Ok(())
}

fn mget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let keys = &args[1..];
    let mut locked = ctx.lock_keys(keys.iter().map(|k| &k[..]));
    encode::write_array_len(ctx.out, keys.len());
    for key in keys {
        match locked.shard(key).get(key) {
            Some(entry) if entry.value.is_string() => write_string(ctx, entry)?,
            _ => encode::write_null_bulk(ctx.out, ctx.client.protocol),
        }
    }
    Ok(())
}

fn mset_generic(ctx: &mut Ctx<'_>, args: &[Bytes], nx: bool, name: &str) -> Result<bool, CmdError> {
    if args.len() % 2 == 0 {
        return Err(super::reply::wrong_arity(name));
    }
    let pairs = &args[1..];
    let mut locked = ctx.lock_keys(pairs.iter().step_by(2).map(|k| &k[..]));
    // A lookup, not a membership test: Redis's MSETNX looks each key up until one
    // exists, a use of that key.
    if nx
        && pairs
            .chunks(2)
            .any(|p| locked.shard(&p[0]).get(&p[0]).is_some())
    {
        return Ok(false);
    }
    for pair in pairs.chunks(2) {
        locked
            .shard(&pair[0])
            .insert(&pair[0], Value::string(&pair[1]), 0);
        event(ctx, NotifyClass::String, "set", &pair[0]);
    }
    Ok(true)
}

fn mset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    mset_generic(ctx, args, false, "mset")?;
    ok(ctx.out);
    Ok(())
}

fn msetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let done = mset_generic(ctx, args, true, "msetnx")?;
    encode::write_integer(ctx.out, i64::from(done));
    Ok(())
}

fn max_len(ctx: &Ctx<'_>) -> u64 {
    ctx.shared.config.read().proto_max_bulk_len
}

fn append(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let limit = max_len(ctx);
    let mut shard = ctx.lock(key);
    let new_len = match shard.get(key) {
        None => {
            // Created uncounted: the touch below is the one change Redis counts.
            shard.get_or_insert_with(key, || Value::string(&args[2]));
            args[2].len()
        }
        Some(entry) => {
            let len = entry.value.str_len().ok_or(WRONG_TYPE)? + args[2].len();
            if len as u64 > limit {
                return Err(STRING_TOO_LONG);
            }
            // Grown in place (amortised, no full copy), and `raw` from then on, as in
            // Redis, whatever the bytes read as.
            match &mut entry.value {
                Value::Str(s) => s.append(&args[2]),
                value => {
                    let mut bytes = value.to_vec().ok_or(WRONG_TYPE)?;
                    bytes.extend_from_slice(&args[2]);
                    *value = Value::raw(bytes);
                }
            }
            len
        }
    };
    shard.touch(key);
    event(ctx, NotifyClass::String, "append", key);
    encode::write_integer(ctx.out, new_len as i64);
    Ok(())
}

fn strlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let len = match shard.get(key) {
        None => 0,
        Some(entry) => entry.value.str_len().ok_or(WRONG_TYPE)?,
    };
    encode::write_integer(ctx.out, len as i64);
    Ok(())
}

fn getrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut start = int(&args[2])?;
    let mut end = int(&args[3])?;
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let Some(entry) = shard.get(key) else {
        encode::write_bulk(ctx.out, b"");
        return Ok(());
    };
    let out = &mut *ctx.out;
    entry
        .value
        .with_str(|s| {
            let len = s.len() as i64;
            if start < 0 && end < 0 && start > end {
                encode::write_bulk(out, b"");
                return;
            }
            if start < 0 {
                start += len;
            }
            if end < 0 {
                end += len;
            }
            start = start.max(0);
            end = end.max(0);
            if end >= len {
                end = len - 1;
            }
            if start > end || len == 0 {
                encode::write_bulk(out, b"");
            } else {
                encode::write_bulk(out, &s[start as usize..=end as usize]);
            }
        })
        .ok_or(WRONG_TYPE)
}

fn setrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let offset = int(&args[2])?;
    if offset < 0 {
        return Err(CmdError::Static("ERR offset is out of range"));
    }
    let value = &args[3];
    let limit = max_len(ctx);
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let current = match shard.get(key) {
        None => 0,
        Some(entry) => entry.value.str_len().ok_or(WRONG_TYPE)?,
    };
    if value.is_empty() {
        encode::write_integer(ctx.out, current as i64);
        return Ok(());
    }
    if offset as u64 + value.len() as u64 > limit {
        return Err(STRING_TOO_LONG);
    }
    let (offset, end) = (offset as usize, offset as usize + value.len());
    // Written where it is (a copy would make each SETRANGE cost the string's size); a
    // new string is made its exact size, as Redis makes it.
    let entry = shard.get_or_insert_with(key, || Value::raw(vec![0; end]));
    let bytes = entry.value.str_grown_mut(end).ok_or(WRONG_TYPE)?;
    bytes[offset..end].copy_from_slice(value);
    let len = bytes.len();
    shard.touch(key);
    event(ctx, NotifyClass::String, "setrange", key);
    encode::write_integer(ctx.out, len as i64);
    Ok(())
}

fn incr_generic(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> CmdResult {
    let mut shard = ctx.lock(key);
    // The command's one lookup: Redis's INCR looks the key up for writing before it
    // checks its type and value, a use of it whatever follows.
    let entry = shard.get_or_insert_used(key, || Value::Int(0));
    let current = match &entry.value {
        Value::Int(n) => *n,
        // A string changed in place may read as an integer.
        Value::Str(s) => canonical_int(s).ok_or(super::reply::NOT_INTEGER)?,
        _ => return Err(WRONG_TYPE),
    };
    let next = current.checked_add(delta).ok_or(OVERFLOW)?;
    entry.value = Value::Int(next);
    shard.touch(key);
    event(ctx, NotifyClass::String, "incrby", key);
    encode::write_integer(ctx.out, next);
    Ok(())
}

fn incr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    incr_generic(ctx, &args[1], 1)
}

fn decr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    incr_generic(ctx, &args[1], -1)
}

fn incrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let delta = int(&args[2])?;
    incr_generic(ctx, &args[1], delta)
}

fn decrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let delta = int(&args[2])?;
    let delta = delta
        .checked_neg()
        .ok_or(CmdError::Static("ERR decrement would overflow"))?;
    incr_generic(ctx, &args[1], delta)
}

fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    // Redis checks the type, then the current value, then the increment.
    let current = match shard.get(key) {
        None => b"0".to_vec(),
        Some(entry) => entry.value.to_vec().ok_or(WRONG_TYPE)?,
    };
    let text = incr_by_float(&current, &args[2]).map_err(|e| match e {
        IncrFloatError::NotFloat => NOT_FLOAT,
        IncrFloatError::NanOrInfinity => {
            CmdError::Static("ERR increment would produce NaN or Infinity")
        }
    })?;
    // Found above (Redis's one lookup, one use) or created now.
    match shard.get_untouched_quietly(key) {
        Some(entry) => entry.value = Value::text(text.as_bytes()),
        None => {
            // Created uncounted: the touch below is the one change Redis counts.
            shard.get_or_insert_with(key, || Value::text(text.as_bytes()));
        }
    }
    shard.touch(key);
    event(ctx, NotifyClass::String, "incrbyfloat", key);
    encode::write_bulk(ctx.out, text.as_bytes());
    Ok(())
}
