//! List commands (Redis's `t_list.c`), non-blocking forms: LPUSH RPUSH LPUSHX RPUSHX
//! LPOP RPOP LLEN LINDEX LSET LRANGE LTRIM LREM LINSERT LPOS LMOVE RPOPLPUSH LMPOP.
//! A list that becomes empty is deleted, as in Redis.

use crate::notify::{event, NotifyClass};
use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::reply::{ok, CmdError, CmdResult, INDEX_OUT_OF_RANGE, NO_SUCH_KEY, SYNTAX, WRONG_TYPE};
use super::{Ctx, Handler};
use crate::store::{ListValue, Shard, Value};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("lpush", lpush),
    ("rpush", rpush),
    ("lpushx", lpushx),
    ("rpushx", rpushx),
    ("lpop", lpop),
    ("rpop", rpop),
    ("llen", llen),
    ("lindex", lindex),
    ("lset", lset),
    ("lrange", lrange),
    ("ltrim", ltrim),
    ("lrem", lrem),
    ("linsert", linsert),
    ("lpos", lpos),
    ("lmove", lmove),
    ("rpoplpush", rpoplpush),
    ("lmpop", lmpop),
];

/// The list at `key`: `Ok(None)` when missing, WRONGTYPE when not a list.
pub(crate) fn list<'s>(
    shard: &'s mut Shard,
    key: &[u8],
) -> Result<Option<&'s mut ListValue>, CmdError> {
    match shard.get(key) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::List(list) => Ok(Some(list)),
            _ => Err(WRONG_TYPE),
        },
    }
}

fn push(ctx: &mut Ctx<'_>, args: &[Bytes], left: bool, only_existing: bool) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let exists = list(&mut shard, key)?.is_some();
    if !exists && only_existing {
        encode::write_integer(ctx.out, 0);
        return Ok(());
    }
    let entry = shard.get_or_insert_with(key, || Value::List(Box::default()));
    let Value::List(list) = &mut entry.value else {
        return Err(WRONG_TYPE);
    };
    if args.len() > 3 {
        let bytes = args[2..].iter().map(|e| ListValue::packed_len(e)).sum();
        list.reserve(bytes, left);
    }
    for element in &args[2..] {
        if left {
            list.push_front(element);
        } else {
            list.push_back(element);
        }
    }
    let len = list.len();
    shard.touch(key);
    // One change an element, as Redis counts them.
    crate::store::dirty::mark_rest(args.len() - 2);
    event(
        ctx,
        NotifyClass::List,
        if left { "lpush" } else { "rpush" },
        key,
    );
    encode::write_integer(ctx.out, len as i64);
    Ok(())
}

fn lpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push(ctx, args, true, false)
}

fn rpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push(ctx, args, false, false)
}

fn lpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push(ctx, args, true, true)
}

fn rpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push(ctx, args, false, true)
}

/// A count Redis reads with `getPositiveLongFromObjectOrReply`.
fn positive(arg: &[u8], message: &'static str) -> Result<i64, CmdError> {
    match crate::store::canonical_int(arg) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(CmdError::Static(message)),
    }
}

fn pop(ctx: &mut Ctx<'_>, args: &[Bytes], left: bool) -> CmdResult {
    if args.len() > 3 {
        return Err(super::reply::wrong_arity(if left {
            "lpop"
        } else {
            "rpop"
        }));
    }
    let count = super::args::pop_count(args.get(2))?;
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let Some(list) = list(&mut shard, key)? else {
        match count {
            Some(_) => encode::write_null_array(ctx.out, proto),
            None => encode::write_null_bulk(ctx.out, proto),
        }
        return Ok(());
    };
    let changed = count != Some(0);
    let mut popped = 1;
    match count {
        None => {
            let element = if left {
                list.pop_front()
            } else {
                list.pop_back()
            };
            match element {
                Some(e) => encode::write_bulk(ctx.out, &e),
                None => encode::write_null_bulk(ctx.out, proto),
            }
        }
        Some(count) => {
            let n = count.min(list.len());
            popped = n;
            encode::write_array_len(ctx.out, n);
            for _ in 0..n {
                let element = if left {
                    list.pop_front()
                } else {
                    list.pop_back()
                };
                if let Some(e) = element {
                    encode::write_bulk(ctx.out, &e);
                }
            }
        }
    }
    if changed {
        shard.touch(key);
        crate::store::dirty::mark_rest(popped);
        event(
            ctx,
            NotifyClass::List,
            if left { "lpop" } else { "rpop" },
            key,
        );
    }
    if shard.remove_if_empty(key) {
        event(ctx, NotifyClass::Generic, "del", key);
    }
    Ok(())
}

fn lpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    pop(ctx, args, true)
}

fn rpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    pop(ctx, args, false)
}

fn llen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let len = list(&mut shard, key)?.map_or(0, |l| l.len());
    encode::write_integer(ctx.out, len as i64);
    Ok(())
}

/// A Redis list index (negative from the tail) as a position, if in range.
fn position(index: i64, len: usize) -> Option<usize> {
    let index = if index < 0 { index + len as i64 } else { index };
    (0..len as i64).contains(&index).then_some(index as usize)
}

fn lindex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    // Redis looks the key up before it reads the index.
    let Some(list) = list(&mut shard, key)? else {
        encode::write_null_bulk(ctx.out, proto);
        return Ok(());
    };
    let index = int(&args[2])?;
    match position(index, list.len()).and_then(|p| list.get(p)) {
        Some(element) => encode::write_bulk(ctx.out, element),
        None => encode::write_null_bulk(ctx.out, proto),
    }
    Ok(())
}

fn lset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let list = list(&mut shard, key)?.ok_or(NO_SUCH_KEY)?;
    let index = int(&args[2])?;
    let p = position(index, list.len()).ok_or(INDEX_OUT_OF_RANGE)?;
    list.set(p, &args[3]);
    shard.touch(key);
    event(ctx, NotifyClass::List, "lset", key);
    ok(ctx.out);
    Ok(())
}

/// Redis's start/stop clamping for LRANGE: `None` for an empty range.
fn range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 { len + end } else { end };
    start = start.max(0);
    if start > end || start >= len {
        return None;
    }
    end = end.min(len - 1);
    Some((start as usize, end as usize))
}

fn lrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let start = int(&args[2])?;
    let end = int(&args[3])?;
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let Some(list) = list(&mut shard, key)? else {
        encode::write_array_len(ctx.out, 0);
        return Ok(());
    };
    match range(start, end, list.len()) {
        None => encode::write_array_len(ctx.out, 0),
        Some((from, to)) => {
            encode::write_array_len(ctx.out, to - from + 1);
            for element in list.iter_from(from).take(to - from + 1) {
                encode::write_bulk(ctx.out, element);
            }
        }
    }
    Ok(())
}

fn ltrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let start = int(&args[2])?;
    let end = int(&args[3])?;
    let key = &args[1];
    let mut shard = ctx.lock(key);
    if let Some(list) = list(&mut shard, key)? {
        let before = list.len();
        match range(start, end, list.len()) {
            None => list.clear(),
            Some((from, to)) => list.keep_range(from, to),
        }
        let removed = before - list.len();
        // Signalled whatever it removed; a change an element removed (none: LTRIM
        // counts, and so propagates, nothing), as Redis.
        shard.signal(key);
        crate::store::dirty::mark_n(removed as u64);
        event(ctx, NotifyClass::List, "ltrim", key);
    }
    if shard.remove_if_empty(key) {
        event(ctx, NotifyClass::Generic, "del", key);
    }
    ok(ctx.out);
    Ok(())
}

fn lrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let count = int(&args[2])?;
    let key = &args[1];
    let target = &args[3][..];
    let mut shard = ctx.lock(key);
    let Some(list) = list(&mut shard, key)? else {
        encode::write_integer(ctx.out, 0);
        return Ok(());
    };
    let limit = if count == 0 {
        usize::MAX
    } else {
        count.unsigned_abs() as usize
    };
    let removed = list.remove_equal(target, limit, count < 0);
    if removed > 0 {
        shard.touch(key);
        crate::store::dirty::mark_rest(removed);
        event(ctx, NotifyClass::List, "lrem", key);
    }
    if shard.remove_if_empty(key) {
        event(ctx, NotifyClass::Generic, "del", key);
    }
    encode::write_integer(ctx.out, removed as i64);
    Ok(())
}

fn linsert(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let after = if is(&args[2], "after") {
        true
    } else if is(&args[2], "before") {
        false
    } else {
        return Err(SYNTAX);
    };
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let Some(list) = list(&mut shard, key)? else {
        encode::write_integer(ctx.out, 0);
        return Ok(());
    };
    let reply = match list.iter().position(|e| e == &args[3][..]) {
        Some(p) => {
            list.insert(if after { p + 1 } else { p }, &args[4]);
            list.len() as i64
        }
        None => -1,
    };
    if reply > 0 {
        shard.touch(key);
        event(ctx, NotifyClass::List, "linsert", key);
    }
    encode::write_integer(ctx.out, reply);
    Ok(())
}

fn lpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut rank: i64 = 1;
    let mut count: Option<i64> = None;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < args.len() {
        if j + 1 >= args.len() {
            return Err(SYNTAX);
        }
        let value = &args[j + 1];
        if is(&args[j], "rank") {
            rank = int(value)?;
            if rank == 0 {
                return Err(CmdError::Static("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"));
            }
        } else if is(&args[j], "count") {
            count = Some(positive(value, "ERR COUNT can't be negative")?);
        } else if is(&args[j], "maxlen") {
            maxlen = positive(value, "ERR MAXLEN can't be negative")?;
        } else {
            return Err(SYNTAX);
        }
        j += 2;
    }
    let key = &args[1];
    let target = &args[2][..];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let Some(list) = list(&mut shard, key)? else {
        match count {
            Some(_) => encode::write_array_len(ctx.out, 0),
            None => encode::write_null_bulk(ctx.out, proto),
        }
        return Ok(());
    };
    let len = list.len();
    let from_tail = rank < 0;
    // RANK -9223372036854775808: Redis negates it in a C long, where it stays negative,
    // so the first match from the tail already counts, and COUNT's stop test overflows
    // and never fires (every match within MAXLEN is returned).
    let wrapped = rank == i64::MIN;
    let mut skip = if wrapped { 0 } else { rank.unsigned_abs() - 1 };
    let want = match count {
        Some(_) if wrapped => usize::MAX,
        Some(0) => usize::MAX,
        Some(n) => n as usize,
        None => 1,
    };
    let limit = if maxlen == 0 {
        len
    } else {
        (maxlen as usize).min(len)
    };
    let mut found = Vec::new();
    let mut elements = list.iter();
    for step in 0..limit {
        let element = if from_tail {
            elements.next_back()
        } else {
            elements.next()
        };
        let Some(element) = element else {
            break;
        };
        let index = if from_tail { len - 1 - step } else { step };
        if element == target {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            found.push(index);
            if found.len() >= want {
                break;
            }
        }
    }
    match count {
        Some(_) => {
            encode::write_array_len(ctx.out, found.len());
            for index in found {
                encode::write_integer(ctx.out, index as i64);
            }
        }
        None => match found.first() {
            Some(index) => encode::write_integer(ctx.out, *index as i64),
            None => encode::write_null_bulk(ctx.out, proto),
        },
    }
    Ok(())
}

/// LEFT or RIGHT.
pub(crate) fn side(arg: &[u8]) -> Result<bool, CmdError> {
    if is(arg, "left") {
        Ok(true)
    } else if is(arg, "right") {
        Ok(false)
    } else {
        Err(SYNTAX)
    }
}

fn move_generic(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from_left: bool,
    to_left: bool,
) -> CmdResult {
    let proto = ctx.proto();
    let mut locked = ctx.lock_keys([src, dst]);
    match move_one(&mut locked, src, dst, from_left, to_left)? {
        Some(element) => encode::write_bulk(ctx.out, &element),
        None => encode::write_null_bulk(ctx.out, proto),
    }
    Ok(())
}

/// Moves one element from an end of `src` to an end of `dst`: LMOVE's work, and BLMOVE's
/// once its source has one. Its lookups of the source and the destination are the uses
/// Redis's records; its events are Redis's (`lpush`/`rpush` on the destination,
/// `lpop`/`rpop` on the source, then `del` if that emptied it), and a list rotated onto
/// itself keeps its key. `None` when the source is missing; WRONGTYPE when either key
/// holds another type.
pub(crate) fn move_one(
    shards: &mut dyn super::blocking::KeyShards,
    src: &[u8],
    dst: &[u8],
    from_left: bool,
    to_left: bool,
) -> Result<Option<crate::store::CompactBytes>, CmdError> {
    if list(shards.shard_of(src), src)?.is_none() {
        return Ok(None);
    }
    list(shards.shard_of(dst), dst)?;
    let element = match shards
        .shard_of(src)
        .get_untouched_quietly(src)
        .map(|e| &mut e.value)
    {
        Some(Value::List(l)) if from_left => l.pop_front(),
        Some(Value::List(l)) => l.pop_back(),
        _ => None,
    };
    let Some(element) = element else {
        return Ok(None);
    };
    let dst_shard = shards.shard_of(dst);
    let entry = dst_shard.get_or_insert_with(dst, || Value::List(Box::default()));
    if let Value::List(l) = &mut entry.value {
        if to_left {
            l.push_front(&element);
        } else {
            l.push_back(&element);
        }
    }
    // One change for the whole move (Redis's count); the destination is signalled.
    dst_shard.signal(dst);
    dst_shard.notify(
        NotifyClass::List.bit(),
        if to_left { "lpush" } else { "rpush" },
        dst,
    );
    let src_shard = shards.shard_of(src);
    src_shard.touch(src);
    src_shard.notify(
        NotifyClass::List.bit(),
        if from_left { "lpop" } else { "rpop" },
        src,
    );
    if src_shard.remove_if_empty(src) {
        src_shard.notify(NotifyClass::Generic.bit(), "del", src);
    }
    Ok(Some(element))
}

fn lmove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let from_left = side(&args[3])?;
    let to_left = side(&args[4])?;
    move_generic(ctx, &args[1], &args[2], from_left, to_left)
}

fn rpoplpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    move_generic(ctx, &args[1], &args[2], false, true)
}

fn lmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let parsed = super::blocking::parse_mpop(args, 1, false)?;
    let op = crate::blocking::BlockOp::MPop {
        left: parsed.head,
        count: parsed.count,
    };
    super::blocking::pop_first(ctx, &args[parsed.first..parsed.first + parsed.numkeys], &op)
}
