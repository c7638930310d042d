//! Hash commands (Redis's `t_hash.c`): HSET HSETNX HMSET HGET HMGET HDEL HEXISTS HLEN
//! HKEYS HVALS HGETALL HINCRBY HINCRBYFLOAT HSTRLEN HRANDFIELD HSCAN.
//!
//! Fields keep insertion order and deletes keep the others in place, which is what
//! Redis's small (listpack) hashes do, so small hashes list in the same order as Redis.

use crate::notify::{event, NotifyClass};
use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::long_double::{incr_by_float, IncrFloatError, LongDouble, Parsed};
use super::reply::{ok, wrong_arity, CmdError, CmdResult, NOT_FLOAT, OVERFLOW, SYNTAX, WRONG_TYPE};
use super::{Ctx, Handler};
use crate::store::by_position::ByPosition;
use crate::store::{canonical_int, HashValue, Shard, Value};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("hset", hset),
    ("hmset", hmset),
    ("hsetnx", hsetnx),
    ("hget", hget),
    ("hmget", hmget),
    ("hdel", hdel),
    ("hexists", hexists),
    ("hlen", hlen),
    ("hkeys", hkeys),
    ("hvals", hvals),
    ("hgetall", hgetall),
    ("hincrby", hincrby),
    ("hincrbyfloat", hincrbyfloat),
    ("hstrlen", hstrlen),
    ("hrandfield", hrandfield),
    ("hscan", hscan),
];

/// The hash at `key`: `Ok(None)` when missing, WRONGTYPE when not a hash.
fn hash<'s>(shard: &'s mut Shard, key: &[u8]) -> Result<Option<&'s mut HashValue>, CmdError> {
    match shard.get(key) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::Hash(h) => Ok(Some(h)),
            _ => Err(WRONG_TYPE),
        },
    }
}

/// The hash at `key`, created empty when missing.
fn hash_or_new<'s>(shard: &'s mut Shard, key: &[u8]) -> Result<&'s mut HashValue, CmdError> {
    hash(shard, key)?;
    match &mut shard
        .get_or_insert_with(key, || Value::Hash(HashValue::default()))
        .value
    {
        Value::Hash(h) => Ok(h),
        _ => Err(WRONG_TYPE),
    }
}

fn set_fields(ctx: &mut Ctx<'_>, args: &[Bytes], name: &str) -> Result<usize, CmdError> {
    if args.len() % 2 != 0 {
        return Err(wrong_arity(name));
    }
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let h = hash_or_new(&mut shard, key)?;
    let mut created = 0;
    for pair in args[2..].chunks(2) {
        if h.insert(&pair[0], &pair[1]) {
            created += 1;
        }
    }
    shard.touch(key);
    // A change a field given, new or not, as Redis counts them.
    crate::store::dirty::mark_rest(args.len() / 2 - 1);
    event(ctx, NotifyClass::Hash, "hset", key);
    Ok(created)
}

fn hset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let created = set_fields(ctx, args, "hset")?;
    encode::write_integer(ctx.out, created as i64);
    Ok(())
}

fn hmset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    set_fields(ctx, args, "hmset")?;
    ok(ctx.out);
    Ok(())
}

fn hsetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let h = hash_or_new(&mut shard, key)?;
    let created = !h.contains_key(&args[2][..]);
    if created {
        h.insert(&args[2], &args[3]);
        shard.touch(key);
        event(ctx, NotifyClass::Hash, "hset", key);
    }
    encode::write_integer(ctx.out, i64::from(created));
    Ok(())
}

fn hget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    match hash(&mut shard, key)?.and_then(|h| h.get(&args[2][..])) {
        Some(v) => encode::write_bulk(ctx.out, v),
        None => encode::write_null_bulk(ctx.out, proto),
    }
    Ok(())
}

fn hmget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let h = hash(&mut shard, key)?;
    encode::write_array_len(ctx.out, args.len() - 2);
    for field in &args[2..] {
        match h.as_ref().and_then(|h| h.get(&field[..])) {
            Some(v) => encode::write_bulk(ctx.out, v),
            None => encode::write_null_bulk(ctx.out, proto),
        }
    }
    Ok(())
}

fn hdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let mut removed = 0;
    if let Some(h) = hash(&mut shard, key)? {
        for field in &args[2..] {
            // Keep the order of the others, as a listpack does.
            if h.remove(field) {
                removed += 1;
            }
        }
    }
    if removed > 0 {
        shard.touch(key);
        crate::store::dirty::mark_rest(removed as usize);
        event(ctx, NotifyClass::Hash, "hdel", key);
    }
    if shard.remove_if_empty(key) {
        event(ctx, NotifyClass::Generic, "del", key);
    }
    encode::write_integer(ctx.out, removed);
    Ok(())
}

fn hexists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let found = hash(&mut shard, key)?.is_some_and(|h| h.contains_key(&args[2][..]));
    encode::write_integer(ctx.out, i64::from(found));
    Ok(())
}

fn hlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let len = hash(&mut shard, key)?.map_or(0, |h| h.len());
    encode::write_integer(ctx.out, len as i64);
    Ok(())
}

fn hstrlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let len = hash(&mut shard, key)?
        .and_then(|h| h.get(&args[2][..]))
        .map_or(0, |v| v.len());
    encode::write_integer(ctx.out, len as i64);
    Ok(())
}

/// HKEYS (fields), HVALS (values), HGETALL (both, a map in RESP3).
fn list_hash(ctx: &mut Ctx<'_>, args: &[Bytes], fields: bool, values: bool) -> CmdResult {
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let h = hash(&mut shard, key)?;
    let len = h.as_ref().map_or(0, |h| h.len());
    if fields && values {
        encode::write_map_len(ctx.out, proto, len);
    } else {
        encode::write_array_len(ctx.out, len);
    }
    if let Some(h) = h {
        for (f, v) in h.iter() {
            if fields {
                encode::write_bulk(ctx.out, f);
            }
            if values {
                encode::write_bulk(ctx.out, v);
            }
        }
    }
    Ok(())
}

fn hkeys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    list_hash(ctx, args, true, false)
}

fn hvals(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    list_hash(ctx, args, false, true)
}

fn hgetall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    list_hash(ctx, args, true, true)
}

fn hincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let delta = int(&args[3])?;
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let h = hash_or_new(&mut shard, key)?;
    let current = match h.get(&args[2][..]) {
        Some(v) => canonical_int(v).ok_or(CmdError::Static("ERR hash value is not an integer"))?,
        None => 0,
    };
    let Some(next) = current.checked_add(delta) else {
        // Created for this increment: it never existed as far as anyone knows.
        shard.remove_if_empty(key);
        return Err(OVERFLOW);
    };
    h.insert(&args[2], itoa::Buffer::new().format(next).as_bytes());
    shard.touch(key);
    event(ctx, NotifyClass::Hash, "hincrby", key);
    encode::write_integer(ctx.out, next);
    Ok(())
}

fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // Redis validates the increment first, then the type, then the stored field.
    match LongDouble::parse(&args[3]) {
        None => return Err(NOT_FLOAT),
        Some(Parsed::Infinite(_)) => return Err(CmdError::Static("ERR value is NaN or Infinity")),
        Some(Parsed::Finite(_)) => {}
    }
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let h = hash_or_new(&mut shard, key)?;
    let current = h.get(&args[2][..]).map_or(b"0".to_vec(), |v| v.to_vec());
    let result = incr_by_float(&current, &args[3]).map_err(|e| match e {
        IncrFloatError::NotFloat => CmdError::Static("ERR hash value is not a float"),
        IncrFloatError::NanOrInfinity => {
            CmdError::Static("ERR increment would produce NaN or Infinity")
        }
    });
    let text = match result {
        Ok(text) => text,
        Err(e) => {
            // Created for this increment: it never existed as far as anyone knows.
            shard.remove_if_empty(key);
            return Err(e);
        }
    };
    // The hash found above: Redis looks the key up once (one use of it).
    h.insert(&args[2], text.as_bytes());
    shard.touch(key);
    event(ctx, NotifyClass::Hash, "hincrbyfloat", key);
    encode::write_bulk(ctx.out, text.as_bytes());
    Ok(())
}

fn hrandfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let count = match args.get(2) {
        Some(a) => Some(super::args::random_count(a)?),
        None => None,
    };
    let with_values = match args.get(3) {
        Some(a) if args.len() == 4 && is(a, "withvalues") => true,
        None => false,
        _ => return Err(SYNTAX),
    };
    if with_values {
        if let Some(n) = count {
            super::args::random_pairs_count(n)?;
        }
    }
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let Some(h) = hash(&mut shard, key)? else {
        match count {
            Some(_) => encode::write_array_len(ctx.out, 0),
            None => encode::write_null_bulk(ctx.out, proto),
        }
        return Ok(());
    };
    let Some(count) = count else {
        if let Some((f, _)) = h.random_index().and_then(|i| h.get_index(i)) {
            encode::write_bulk(ctx.out, f);
        }
        return Ok(());
    };
    // Positive: distinct fields; negative: repeats allowed.
    let picks = super::args::random_picks(count, h);
    if with_values && proto == redline_resp::Protocol::Resp3 {
        encode::write_array_len(ctx.out, picks.len());
    } else {
        encode::write_array_len(ctx.out, picks.len() * if with_values { 2 } else { 1 });
    }
    for i in picks {
        if let Some((f, v)) = h.get_index(i) {
            if with_values && proto == redline_resp::Protocol::Resp3 {
                encode::write_array_len(ctx.out, 2);
            }
            encode::write_bulk(ctx.out, f);
            if with_values {
                encode::write_bulk(ctx.out, v);
            }
        }
    }
    Ok(())
}

/// `["0", []]`.
pub fn write_empty_scan(out: &mut bytes::BytesMut) {
    encode::write_array_len(out, 2);
    encode::write_bulk(out, b"0");
    encode::write_array_len(out, 0);
}

/// Parses `cursor [MATCH p] [COUNT n]` for HSCAN/SSCAN/ZSCAN.
/// Redis reads the cursor first, then looks the key up, and only then the options
/// ([`scan_options`]): a missing key answers an empty scan whatever the options.
pub fn scan_cursor(args: &[Bytes]) -> Result<u64, CmdError> {
    super::args::scan_cursor(&args[2])
}

/// Parses `[MATCH p] [COUNT n]` after the cursor.
pub fn scan_options(args: &[Bytes]) -> Result<(Option<&[u8]>, usize), CmdError> {
    let mut count = 10;
    let mut pattern = None;
    let mut j = 3;
    while j < args.len() {
        if j + 1 >= args.len() {
            return Err(SYNTAX);
        }
        if is(&args[j], "count") {
            let n = int(&args[j + 1])?;
            if n < 1 {
                return Err(SYNTAX);
            }
            count = n as usize;
        } else if is(&args[j], "match") {
            pattern = crate::glob::match_filter(&args[j + 1]);
        } else {
            return Err(SYNTAX);
        }
        j += 2;
    }
    Ok((pattern, count))
}

/// One call of HSCAN/SSCAN/ZSCAN: every element of `all` (cursor 0) when `whole`, else
/// the next `count` positions below `cursor` read through `at`, walked downward like the
/// keyspace SCAN (cursor 0 starts at the end), with the next cursor (0 when done). Only
/// the elements `keep` accepts are returned.
pub fn scan_page<T>(
    whole: bool,
    all: impl Iterator<Item = T>,
    (len, at): (usize, impl Fn(usize) -> Option<T>),
    (cursor, count): (u64, usize),
    keep: impl Fn(&T) -> bool,
) -> (Vec<T>, u64) {
    if whole {
        return (all.filter(|item| keep(item)).collect(), 0);
    }
    let top = if cursor == 0 {
        len
    } else {
        (cursor as usize).min(len)
    };
    let bottom = top.saturating_sub(count);
    let items = (bottom..top).rev().filter_map(at).filter(|item| keep(item));
    (items.collect(), bottom as u64)
}

fn hscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cursor = scan_cursor(args)?;
    let limits = super::keys::EncodingLimits::now(&ctx.shared.hot);
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let Some(h) = hash(&mut shard, key)? else {
        write_empty_scan(ctx.out);
        return Ok(());
    };
    let (pattern, count) = scan_options(args)?;
    // A hash Redis holds as a listpack comes back whole, in order, whatever COUNT says;
    // a hash table is paged (positions stay put: a removal leaves its position vacant,
    // and a new field takes a vacant position or the end).
    let (items, next) = scan_page(
        h.is_listpack(limits.hash_entries, limits.hash_value),
        h.iter(),
        (h.positions(), |i| h.get_index(i)),
        (cursor, count),
        |(f, _)| pattern.is_none_or(|p| crate::glob::glob_match(p, f, false)),
    );
    encode::write_array_len(ctx.out, 2);
    encode::write_bulk(ctx.out, next.to_string().as_bytes());
    encode::write_array_len(ctx.out, items.len() * 2);
    for (f, v) in items {
        encode::write_bulk(ctx.out, f);
        encode::write_bulk(ctx.out, v);
    }
    Ok(())
}
