//! Set commands (Redis's `t_set.c`): SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP
//! SRANDMEMBER SMOVE SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE
//! SSCAN. Replies are sets in RESP3.

use crate::notify::{event, NotifyClass};
use crate::store::lookups::as_read;
use bytes::Bytes;
use redline_resp::{encode, Protocol};

use super::args::is;
use super::hashes::{scan_cursor, scan_options, scan_page, write_empty_scan};
use super::reply::{CmdError, CmdResult, SYNTAX, WRONG_TYPE};
use super::{Ctx, Handler, KeysRef};
use crate::store::by_position::ByPosition;
use crate::store::set::Member;
use crate::store::{canonical_int, SetValue, Shard, Value};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("sadd", sadd),
    ("srem", srem),
    ("smembers", smembers),
    ("sismember", sismember),
    ("smismember", smismember),
    ("scard", scard),
    ("spop", spop),
    ("srandmember", srandmember),
    ("smove", smove),
    ("sinter", sinter),
    ("sintercard", sintercard),
    ("sinterstore", sinterstore),
    ("sunion", sunion),
    ("sunionstore", sunionstore),
    ("sdiff", sdiff),
    ("sdiffstore", sdiffstore),
    ("sscan", sscan),
];

/// The set at `key`: `Ok(None)` when missing, WRONGTYPE when not a set.
fn set<'s>(shard: &'s mut Shard, key: &[u8]) -> Result<Option<&'s mut SetValue>, CmdError> {
    match shard.get(key) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::Set(s) => Ok(Some(s)),
            _ => Err(WRONG_TYPE),
        },
    }
}

fn write_members<'a>(
    out: &mut bytes::BytesMut,
    proto: Protocol,
    members: impl ExactSizeIterator<Item = Member<'a>>,
) {
    encode::write_set_len(out, proto, members.len());
    for m in members {
        encode::write_bulk(out, &m);
    }
}

fn sadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    set(&mut shard, key)?;
    let entry = shard.get_or_insert_with(key, || Value::Set(SetValue::default()));
    let Value::Set(s) = &mut entry.value else {
        return Err(WRONG_TYPE);
    };
    let added = args[2..].iter().filter(|m| s.insert(m)).count();
    if added > 0 {
        shard.touch(key);
        crate::store::dirty::mark_rest(added);
        event(ctx, NotifyClass::Set, "sadd", key);
    }
    encode::write_integer(ctx.out, added as i64);
    Ok(())
}

fn srem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let removed = match set(&mut shard, key)? {
        Some(s) => args[2..].iter().filter(|m| s.remove(m)).count(),
        None => 0,
    };
    if removed > 0 {
        shard.touch(key);
        crate::store::dirty::mark_rest(removed);
        event(ctx, NotifyClass::Set, "srem", key);
    }
    if shard.remove_if_empty(key) {
        event(ctx, NotifyClass::Generic, "del", key);
    }
    encode::write_integer(ctx.out, removed as i64);
    Ok(())
}

fn smembers(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    match set(&mut shard, key)? {
        Some(s) => write_members(ctx.out, proto, s.iter()),
        None => encode::write_set_len(ctx.out, proto, 0),
    }
    Ok(())
}

fn sismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let found = set(&mut shard, key)?.is_some_and(|s| s.contains(&args[2][..]));
    encode::write_integer(ctx.out, i64::from(found));
    Ok(())
}

fn smismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let s = set(&mut shard, key)?;
    encode::write_array_len(ctx.out, args.len() - 2);
    for m in &args[2..] {
        let found = s.as_ref().is_some_and(|s| s.contains(&m[..]));
        encode::write_integer(ctx.out, i64::from(found));
    }
    Ok(())
}

fn scard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let len = set(&mut shard, key)?.map_or(0, |s| s.len());
    encode::write_integer(ctx.out, len as i64);
    Ok(())
}

fn spop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(SYNTAX);
    }
    let count = super::args::pop_count(args.get(2))?;
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let Some(s) = set(&mut shard, key)? else {
        match count {
            Some(_) => encode::write_set_len(ctx.out, proto, 0),
            None => encode::write_null_bulk(ctx.out, proto),
        }
        return Ok(());
    };
    let mut popped = 1;
    match count {
        None => {
            if let Some(m) = s.random_index().and_then(|i| s.remove_index(i)) {
                encode::write_bulk(ctx.out, &m);
            }
        }
        Some(n) if n >= s.len() && n > 0 => {
            // The whole set, as Redis answers it: SUNION of the one key (a read lookup:
            // a hit, and a second use), in the order SMEMBERS gives.
            popped = s.len();
            let Some(s) = as_read(|| set(&mut shard, key))? else {
                return Ok(());
            };
            write_members(ctx.out, proto, s.iter());
            *s = SetValue::default();
        }
        Some(n) => {
            popped = n;
            encode::write_set_len(ctx.out, proto, n);
            for _ in 0..n {
                if let Some(m) = s.random_index().and_then(|i| s.remove_index(i)) {
                    encode::write_bulk(ctx.out, &m);
                }
            }
        }
    }
    if count != Some(0) {
        shard.touch(key);
        crate::store::dirty::mark_rest(popped);
        event(ctx, NotifyClass::Set, "spop", key);
    }
    if shard.remove_if_empty(key) {
        event(ctx, NotifyClass::Generic, "del", key);
    }
    Ok(())
}

fn srandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(SYNTAX);
    }
    let count = match args.get(2) {
        Some(a) => Some(super::args::random_count(a)?),
        None => None,
    };
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let Some(s) = set(&mut shard, key)? else {
        match count {
            Some(_) => encode::write_array_len(ctx.out, 0),
            None => encode::write_null_bulk(ctx.out, proto),
        }
        return Ok(());
    };
    let Some(count) = count else {
        if let Some(m) = s.random_index().and_then(|i| s.get_index(i)) {
            encode::write_bulk(ctx.out, &m);
        }
        return Ok(());
    };
    let picks = super::args::random_picks(count, s);
    encode::write_array_len(ctx.out, picks.len());
    for i in picks {
        if let Some(m) = s.get_index(i) {
            encode::write_bulk(ctx.out, &m);
        }
    }
    Ok(())
}

fn smove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (src, dst, member) = (&args[1][..], &args[2][..], &args[3][..]);
    let mut locked = ctx.lock_keys([src, dst]);
    // Redis looks both keys up (each a use) before it checks either.
    let is_set = |e: &mut crate::store::Entry| matches!(e.value, Value::Set(_));
    let src_is_set = locked.shard(src).get(src).map(is_set);
    let dst_is_set = locked.shard(dst).get(dst).map(is_set);
    let Some(src_is_set) = src_is_set else {
        encode::write_integer(ctx.out, 0);
        return Ok(());
    };
    if !src_is_set || dst_is_set == Some(false) {
        return Err(WRONG_TYPE);
    }
    let present = matches!(
        locked.shard(src).get_untouched_quietly(src).map(|e| &e.value),
        Some(Value::Set(from)) if from.contains(member)
    );
    if !present {
        encode::write_integer(ctx.out, 0);
        return Ok(());
    }
    if src != dst {
        // Found above: no second use recorded.
        if let Some(Value::Set(from)) = locked
            .shard(src)
            .get_untouched_quietly(src)
            .map(|e| &mut e.value)
        {
            from.remove(member);
        }
        event(ctx, NotifyClass::Set, "srem", src);
        if locked.shard(src).remove_if_empty(src) {
            event(ctx, NotifyClass::Generic, "del", src);
        }
        let entry = locked
            .shard(dst)
            .get_or_insert_with(dst, || Value::Set(SetValue::default()));
        let added = match &mut entry.value {
            Value::Set(to) => to.insert(member),
            _ => false,
        };
        locked.shard(src).touch(src);
        // A member the destination already had leaves it unchanged (no WATCH abort,
        // no event), as in Redis.
        if added {
            locked.shard(dst).touch(dst);
            event(ctx, NotifyClass::Set, "sadd", dst);
        }
    }
    encode::write_integer(ctx.out, 1);
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// Computes an intersection, union or difference of the sets at `keys` (missing keys
/// are empty sets; any other type is WRONGTYPE), with every shard locked at once.
///
/// Each key is looked up once first, as Redis does; the sets are then read where they
/// are stored, one at a time. Only the members the result can hold are copied: an
/// intersection starts from its smallest set and looks the others up, a difference
/// from its first set, so neither costs the size of a large set it is given.
fn combine(
    ctx: &Ctx<'_>,
    keys: &[Bytes],
    op: Op,
    extra_lock: Option<&[u8]>,
) -> Result<SetValue, CmdError> {
    let all = keys.iter().map(|k| &k[..]).chain(extra_lock);
    let mut locked = ctx.lock_keys(all);
    let mut sizes = Vec::with_capacity(keys.len());
    for key in keys {
        sizes.push(as_read(|| set(locked.shard(key), key))?.map(|s| s.len()));
    }
    let copied = |s: Option<&SetValue>| -> Vec<Vec<u8>> {
        s.map(|s| s.iter().map(|m| m.to_vec()).collect())
            .unwrap_or_default()
    };
    let members = match op {
        Op::Union => {
            let mut result = SetValue::default();
            for key in keys {
                for m in stored(&mut locked, key).iter().flat_map(|s| s.iter()) {
                    result.insert(&m);
                }
            }
            return Ok(result);
        }
        Op::Inter => {
            let by_size = smallest_first(&sizes).unwrap_or_default();
            let Some((&first, rest)) = by_size.split_first() else {
                return Ok(SetValue::default());
            };
            let mut members = copied(stored(&mut locked, &keys[first]));
            for &i in rest {
                let other = stored(&mut locked, &keys[i]);
                members.retain(|m| other.is_some_and(|s| s.contains(m)));
            }
            members
        }
        Op::Diff => {
            let Some((first, rest)) = keys.split_first() else {
                return Ok(SetValue::default());
            };
            let mut members = copied(stored(&mut locked, first));
            for key in rest {
                if members.is_empty() {
                    break;
                }
                if let Some(other) = stored(&mut locked, key) {
                    members.retain(|m| !other.contains(m));
                }
            }
            members
        }
    };
    Ok(members.iter().map(|m| &m[..]).collect())
}

/// The inputs' indexes, smallest set first (the order an intersection looks members up
/// in); `None` when one is missing, which makes the intersection empty.
fn smallest_first(sizes: &[Option<usize>]) -> Option<Vec<usize>> {
    if sizes.iter().any(Option::is_none) {
        return None;
    }
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    Some(order)
}

/// The set at `key`, read as the server reads for itself ([`combine`] counted its
/// lookup already).
fn stored<'s>(locked: &'s mut KeysRef<'_>, key: &[u8]) -> Option<&'s SetValue> {
    match locked.peek(key) {
        Some(Value::Set(s)) => Some(s),
        _ => None,
    }
}

fn reply_set(ctx: &mut Ctx<'_>, args: &[Bytes], op: Op) -> CmdResult {
    let result = combine(ctx, &args[1..], op, None)?;
    write_members(ctx.out, ctx.client.protocol, result.iter());
    Ok(())
}

fn store_set(ctx: &mut Ctx<'_>, args: &[Bytes], op: Op) -> CmdResult {
    let dst = &args[1];
    let result = combine(ctx, &args[2..], op, Some(dst))?;
    let len = result.len();
    let mut shard = ctx.lock(dst);
    if result.is_empty() {
        if shard.remove_any(dst) {
            event(ctx, NotifyClass::Generic, "del", dst);
        }
    } else {
        shard.insert(dst, Value::Set(result), 0);
        let name = match op {
            Op::Inter => "sinterstore",
            Op::Union => "sunionstore",
            Op::Diff => "sdiffstore",
        };
        event(ctx, NotifyClass::Set, name, dst);
    }
    encode::write_integer(ctx.out, len as i64);
    Ok(())
}

fn sinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    reply_set(ctx, args, Op::Inter)
}

fn sunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    reply_set(ctx, args, Op::Union)
}

fn sdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    reply_set(ctx, args, Op::Diff)
}

fn sinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    store_set(ctx, args, Op::Inter)
}

fn sunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    store_set(ctx, args, Op::Union)
}

fn sdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    store_set(ctx, args, Op::Diff)
}

fn sintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let numkeys = match canonical_int(&args[1]) {
        Some(n) if n > 0 => n as usize,
        _ => return Err(CmdError::Static("ERR numkeys should be greater than 0")),
    };
    if numkeys > args.len() - 2 {
        return Err(CmdError::Static(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let mut limit = 0usize;
    let mut j = 2 + numkeys;
    while j < args.len() {
        if is(&args[j], "limit") && j + 1 < args.len() {
            match canonical_int(&args[j + 1]) {
                Some(n) if n >= 0 => limit = n as usize,
                _ => return Err(CmdError::Static("ERR LIMIT can't be negative")),
            }
            j += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    let n = intersection_size(ctx, &args[2..2 + numkeys], limit)?;
    encode::write_integer(ctx.out, n as i64);
    Ok(())
}

/// How many members the sets at `keys` share, counted up to `limit` (0: all), as
/// Redis's SINTERCARD counts: the smallest set's members looked up in the others in
/// size order, stopping at the limit. Read a few dozen at a time, so that a small limit
/// over large sets reads few members and nothing is built; under a limit, in a
/// scattered order, as Redis's hash order is, not in the order they were added (sets
/// filled from two ranges would otherwise put every shared member last).
fn intersection_size(ctx: &Ctx<'_>, keys: &[Bytes], limit: usize) -> Result<usize, CmdError> {
    const CHUNK: usize = 64;
    let mut locked = ctx.lock_keys(keys.iter().map(|k| &k[..]));
    let mut sizes = Vec::with_capacity(keys.len());
    for key in keys {
        sizes.push(as_read(|| set(locked.shard(key), key))?.map(|s| s.len()));
    }
    let by_size = smallest_first(&sizes).unwrap_or_default();
    let Some((&first, rest)) = by_size.split_first() else {
        return Ok(0);
    };
    let positions = stored(&mut locked, &keys[first]).map_or(0, |s| s.positions());
    // Counting them all, the order does not matter: memory order is the fastest.
    let stride = if limit == 0 {
        1
    } else {
        coprime_stride(positions)
    };
    let (mut count, mut at) = (0, 0);
    while at < positions && (limit == 0 || count < limit) {
        let end = (at + CHUNK).min(positions);
        let Some(smallest) = stored(&mut locked, &keys[first]) else {
            break;
        };
        let mut shared: Vec<Vec<u8>> = (at..end)
            .filter_map(|k| {
                smallest.get_index(((k as u128 * stride as u128) % positions as u128) as usize)
            })
            .map(|m| m.to_vec())
            .collect();
        for &i in rest {
            let other = stored(&mut locked, &keys[i]);
            shared.retain(|m| other.is_some_and(|s| s.contains(m)));
        }
        count += shared.len();
        at = end;
    }
    Ok(if limit == 0 { count } else { count.min(limit) })
}

/// A step that visits every position below `n` once (`k * step % n` for k in 0..n),
/// scattered: near the golden ratio of `n`, moved to the next number coprime with it.
fn coprime_stride(n: usize) -> usize {
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    if n < 3 {
        return 1;
    }
    let mut step = (n as f64 * 0.618_033_988_75) as usize;
    while gcd(step, n) != 1 {
        step += 1;
    }
    step
}

fn sscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cursor = scan_cursor(args)?;
    let limits = super::keys::EncodingLimits::now(&ctx.shared.hot);
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let Some(s) = set(&mut shard, key)? else {
        write_empty_scan(ctx.out);
        return Ok(());
    };
    let (pattern, count) = scan_options(args)?;
    // A set Redis holds as an intset comes back whole, ascending, whatever COUNT says;
    // a hash table is paged, by positions that only a map keeps put (integers kept
    // sorted under a small limit are moved to one first).
    let whole = s.is_intset(limits.set_entries);
    if !whole {
        s.unpack();
    }
    let (items, next) = scan_page(
        whole,
        s.iter(),
        (s.positions(), |i| s.get_index(i)),
        (cursor, count),
        |m: &Member<'_>| pattern.is_none_or(|p| crate::glob::glob_match(p, m, false)),
    );
    encode::write_array_len(ctx.out, 2);
    encode::write_bulk(ctx.out, next.to_string().as_bytes());
    encode::write_array_len(ctx.out, items.len());
    for m in items {
        encode::write_bulk(ctx.out, &m);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::coprime_stride;

    #[test]
    fn the_stride_visits_every_position_once() {
        for n in [1usize, 2, 3, 4, 10, 64, 97, 100, 1000, 4096, 65_537] {
            let step = coprime_stride(n);
            let mut seen = vec![false; n];
            for k in 0..n {
                let at = k * step % n;
                assert!(!seen[at], "n {n}: {at} twice");
                seen[at] = true;
            }
        }
    }
}
