//! Sorted set commands (Redis's `t_zset.c`), the core set: ZADD (NX XX GT LT CH INCR)
//! ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZRANK ZREVRANK ZCOUNT ZLEXCOUNT ZRANGE (BYSCORE
//! BYLEX REV LIMIT WITHSCORES) ZREVRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX
//! ZREVRANGEBYLEX ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX ZPOPMIN ZPOPMAX.
//! Scores print as Redis 7.0 does (`%.17g`).

use crate::notify::{event, NotifyClass};
use crate::store::lookups::as_read;
use bytes::Bytes;
use redline_resp::{encode, Protocol};
use std::ops::Bound;

use super::args::{int, is};
use super::float::parse_f64;
use super::reply::{double, CmdError, CmdResult, NOT_FLOAT, SYNTAX, WRONG_TYPE};
use super::{Ctx, Handler};
use crate::store::by_position::ByPosition;
use crate::store::encoding::EncodingLimits;
use crate::store::{ScoreBound, Shard, Value, ZSet};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("zadd", zadd),
    ("zincrby", zincrby),
    ("zrem", zrem),
    ("zcard", zcard),
    ("zscore", zscore),
    ("zmscore", zmscore),
    ("zrank", zrank),
    ("zrevrank", zrevrank),
    ("zcount", zcount),
    ("zlexcount", zlexcount),
    ("zrange", zrange),
    ("zrevrange", zrevrange),
    ("zrangebyscore", zrangebyscore),
    ("zrevrangebyscore", zrevrangebyscore),
    ("zrangebylex", zrangebylex),
    ("zrevrangebylex", zrevrangebylex),
    ("zremrangebyrank", zremrangebyrank),
    ("zremrangebyscore", zremrangebyscore),
    ("zremrangebylex", zremrangebylex),
    ("zpopmin", zpopmin),
    ("zpopmax", zpopmax),
    ("zmpop", zmpop),
    ("zrangestore", zrangestore),
    ("zrandmember", zrandmember),
    ("zscan", zscan),
];

pub(crate) fn zset<'s>(shard: &'s mut Shard, key: &[u8]) -> Result<Option<&'s mut ZSet>, CmdError> {
    match shard.get(key) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::ZSet(z) => Ok(Some(z)),
            _ => Err(WRONG_TYPE),
        },
    }
}

// ---- ZADD / ZINCRBY ----

#[derive(Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

fn zadd_generic(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    mut flags: AddFlags,
    score_at: usize,
) -> CmdResult {
    let mut scoreidx = score_at;
    while scoreidx < args.len() {
        let a = &args[scoreidx];
        if is(a, "nx") {
            flags.nx = true;
        } else if is(a, "xx") {
            flags.xx = true;
        } else if is(a, "ch") {
            flags.ch = true;
        } else if is(a, "incr") {
            flags.incr = true;
        } else if is(a, "gt") {
            flags.gt = true;
        } else if is(a, "lt") {
            flags.lt = true;
        } else {
            break;
        }
        scoreidx += 1;
    }
    let elements = args.len() - scoreidx;
    if elements % 2 != 0 || elements == 0 {
        return Err(SYNTAX);
    }
    let elements = elements / 2;
    if flags.nx && flags.xx {
        return Err(CmdError::Static(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Err(CmdError::Static(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if flags.incr && elements > 1 {
        return Err(CmdError::Static(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let mut scores = Vec::with_capacity(elements);
    for j in 0..elements {
        scores.push(parse_f64(&args[scoreidx + j * 2]).ok_or(NOT_FLOAT)?);
    }
    let key = &args[1];
    let proto = ctx.proto();
    let limits = EncodingLimits::now(&ctx.shared.hot);
    let mut shard = ctx.lock(key);
    let exists = zset(&mut shard, key)?.is_some();
    let (mut added, mut updated, mut processed) = (0, 0, 0);
    let mut last_score = 0.0;
    if exists || !flags.xx {
        let entry = shard.get_or_insert_with(key, || Value::ZSet(ZSet::default()));
        let Value::ZSet(z) = &mut entry.value else {
            return Err(WRONG_TYPE);
        };
        for (j, &score) in scores.iter().enumerate() {
            let member = &args[scoreidx + j * 2 + 1];
            match z.score(member) {
                Some(current) => {
                    if flags.nx {
                        continue;
                    }
                    let mut new = score;
                    if flags.incr {
                        new += current;
                        if new.is_nan() {
                            return Err(CmdError::Static(
                                "ERR resulting score is not a number (NaN)",
                            ));
                        }
                    }
                    if (flags.lt && new >= current) || (flags.gt && new <= current) {
                        continue;
                    }
                    last_score = new;
                    processed += 1;
                    if new != current {
                        z.insert_under(member, new, limits.zset_entries, limits.zset_value);
                        updated += 1;
                    }
                }
                None => {
                    if flags.xx {
                        continue;
                    }
                    z.insert_under(member, score, limits.zset_entries, limits.zset_value);
                    last_score = score;
                    added += 1;
                    processed += 1;
                }
            }
        }
    }
    if added + updated > 0 {
        shard.touch(key);
        crate::store::dirty::mark_rest((added + updated) as usize);
        event(
            ctx,
            NotifyClass::Zset,
            if flags.incr { "zincr" } else { "zadd" },
            key,
        );
    }
    if shard.remove_if_empty(key) {
        event(ctx, NotifyClass::Generic, "del", key);
    }
    if flags.incr {
        if processed > 0 {
            double(ctx.out, proto, last_score);
        } else {
            encode::write_null_bulk(ctx.out, proto);
        }
    } else {
        encode::write_integer(ctx.out, if flags.ch { added + updated } else { added });
    }
    Ok(())
}

pub(crate) fn zadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zadd_generic(ctx, args, AddFlags::default(), 2)
}

fn zincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zadd_generic(
        ctx,
        args,
        AddFlags {
            incr: true,
            ..AddFlags::default()
        },
        2,
    )
}

// ---- lookups ----

fn zrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let removed = match zset(&mut shard, key)? {
        Some(z) => args[2..].iter().filter(|m| z.remove(m).is_some()).count(),
        None => 0,
    };
    if removed > 0 {
        shard.touch(key);
        crate::store::dirty::mark_rest(removed);
        event(ctx, NotifyClass::Zset, "zrem", key);
    }
    if shard.remove_if_empty(key) {
        event(ctx, NotifyClass::Generic, "del", key);
    }
    encode::write_integer(ctx.out, removed as i64);
    Ok(())
}

fn zcard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let len = zset(&mut shard, key)?.map_or(0, |z| z.len());
    encode::write_integer(ctx.out, len as i64);
    Ok(())
}

fn zscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    match zset(&mut shard, key)?.and_then(|z| z.score(&args[2])) {
        Some(score) => double(ctx.out, proto, score),
        None => encode::write_null_bulk(ctx.out, proto),
    }
    Ok(())
}

fn zmscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let z = zset(&mut shard, key)?;
    encode::write_array_len(ctx.out, args.len() - 2);
    for m in &args[2..] {
        match z.as_ref().and_then(|z| z.score(m)) {
            Some(score) => double(ctx.out, proto, score),
            None => encode::write_null_bulk(ctx.out, proto),
        }
    }
    Ok(())
}

fn rank_generic(ctx: &mut Ctx<'_>, args: &[Bytes], rev: bool) -> CmdResult {
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let rank = zset(&mut shard, key)?.and_then(|z| {
        z.rank(&args[2])
            .map(|r| if rev { z.len() - 1 - r } else { r })
    });
    match rank {
        Some(r) => encode::write_integer(ctx.out, r as i64),
        None => encode::write_null_bulk(ctx.out, proto),
    }
    Ok(())
}

fn zrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    rank_generic(ctx, args, false)
}

fn zrevrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    rank_generic(ctx, args, true)
}

// ---- ranges ----

fn parse_score_bound(arg: &[u8]) -> Option<ScoreBound> {
    let (exclusive, text) = match arg.first() {
        Some(b'(') => (true, &arg[1..]),
        _ => (false, arg),
    };
    let value = super::float::parse_range_f64(text)?;
    Some(ScoreBound { value, exclusive })
}

fn score_range(min: &[u8], max: &[u8]) -> Result<(ScoreBound, ScoreBound), CmdError> {
    match (parse_score_bound(min), parse_score_bound(max)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(CmdError::Static("ERR min or max is not a float")),
    }
}

/// A lex bound: `-`, `+`, `[x` or `(x`.
#[derive(Clone)]
enum LexBound {
    Min,
    Max,
    Inclusive(Vec<u8>),
    Exclusive(Vec<u8>),
}

fn parse_lex_bound(arg: &[u8]) -> Option<LexBound> {
    match arg.first()? {
        b'-' if arg.len() == 1 => Some(LexBound::Min),
        b'+' if arg.len() == 1 => Some(LexBound::Max),
        b'[' => Some(LexBound::Inclusive(arg[1..].to_vec())),
        b'(' => Some(LexBound::Exclusive(arg[1..].to_vec())),
        _ => None,
    }
}

fn lex_range(min: &[u8], max: &[u8]) -> Result<(LexBound, LexBound), CmdError> {
    match (parse_lex_bound(min), parse_lex_bound(max)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(CmdError::Static(
            "ERR min or max not valid string range item",
        )),
    }
}

fn lex_above_min(member: &[u8], min: &LexBound) -> bool {
    match min {
        LexBound::Min => true,
        LexBound::Max => false,
        LexBound::Inclusive(v) => member >= &v[..],
        LexBound::Exclusive(v) => member > &v[..],
    }
}

fn lex_below_max(member: &[u8], max: &LexBound) -> bool {
    match max {
        LexBound::Min => false,
        LexBound::Max => true,
        LexBound::Inclusive(v) => member <= &v[..],
        LexBound::Exclusive(v) => member < &v[..],
    }
}

/// The lower and upper bound of a lex range.
type MemberBounds<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);

/// A lex range as bounds on the members; `None` when it is empty by its ends alone
/// (a minimum of `+` or a maximum of `-`).
fn lex_bounds<'a>(min: &'a LexBound, max: &'a LexBound) -> Option<MemberBounds<'a>> {
    let lower = match min {
        LexBound::Min => Bound::Unbounded,
        LexBound::Max => return None,
        LexBound::Inclusive(v) => Bound::Included(&v[..]),
        LexBound::Exclusive(v) => Bound::Excluded(&v[..]),
    };
    let upper = match max {
        LexBound::Max => Bound::Unbounded,
        LexBound::Min => return None,
        LexBound::Inclusive(v) => Bound::Included(&v[..]),
        LexBound::Exclusive(v) => Bound::Excluded(&v[..]),
    };
    Some((lower, upper))
}

/// The members within a lex range, ascending (`rev()` for descending): from the
/// ordered index where the set allows it ([`ZSet::by_lex`]), else by filtering.
fn lex_members<'z>(
    z: &'z ZSet,
    min: &LexBound,
    max: &LexBound,
) -> Box<dyn DoubleEndedIterator<Item = (&'z [u8], f64)> + 'z> {
    if let Some(found) = lex_bounds(min, max).and_then(|(lower, upper)| z.by_lex(lower, upper)) {
        return Box::new(found);
    }
    let (min, max) = (min.clone(), max.clone());
    Box::new(
        z.iter()
            .filter(move |(m, _)| lex_above_min(m, &min) && lex_below_max(m, &max)),
    )
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Auto,
    Forward,
    Reverse,
}

/// The members a range picks, in the order it walks them (`reverse`: from the highest;
/// a reversed score or lex range has its bounds given min first here), after LIMIT.
fn select<'z>(
    z: &'z ZSet,
    kind: RangeType,
    reverse: bool,
    args: (&[u8], &[u8]),
    limit: Option<(i64, i64)>,
) -> Result<Vec<(&'z [u8], f64)>, CmdError> {
    let (offset, count) = match limit {
        None => (0, usize::MAX),
        Some((offset, _)) if offset < 0 => return Ok(Vec::new()),
        Some((offset, count)) => (
            offset as usize,
            usize::try_from(count).unwrap_or(usize::MAX),
        ),
    };
    /// LIMIT's page of `found`, walked from the highest when `reverse`.
    fn page<'z>(
        found: impl DoubleEndedIterator<Item = (&'z [u8], f64)>,
        reverse: bool,
        offset: usize,
        count: usize,
    ) -> Vec<(&'z [u8], f64)> {
        if reverse {
            found.rev().skip(offset).take(count).collect()
        } else {
            found.skip(offset).take(count).collect()
        }
    }
    Ok(match kind {
        RangeType::Rank | RangeType::Auto => {
            let (start, end) = (int(args.0)?, int(args.1)?);
            let len = z.len() as i64;
            let mut start = if start < 0 { len + start } else { start };
            let mut end = if end < 0 { len + end } else { end };
            start = start.max(0);
            if start > end || start >= len {
                return Ok(Vec::new());
            }
            end = end.min(len - 1);
            // Ranks of a reversed range count from the highest member.
            let (first, last) = if reverse {
                (len - 1 - end, len - 1 - start)
            } else {
                (start, end)
            };
            let found = z.by_rank(first as usize, last as usize + 1);
            page(found, reverse, offset, count)
        }
        RangeType::Score => {
            let (min, max) = score_range(args.0, args.1)?;
            page(z.by_score(min, max), reverse, offset, count)
        }
        RangeType::Lex => {
            let (min, max) = lex_range(args.0, args.1)?;
            page(lex_members(z, &min, &max), reverse, offset, count)
        }
    })
}

pub(crate) fn write_range<M: AsRef<[u8]>>(
    out: &mut bytes::BytesMut,
    proto: Protocol,
    items: &[(M, f64)],
    scores: bool,
) {
    if scores && proto == Protocol::Resp3 {
        encode::write_array_len(out, items.len());
        for (m, s) in items {
            encode::write_array_len(out, 2);
            encode::write_bulk(out, m.as_ref());
            double(out, proto, *s);
        }
    } else {
        encode::write_array_len(out, items.len() * if scores { 2 } else { 1 });
        for (m, s) in items {
            encode::write_bulk(out, m.as_ref());
            if scores {
                double(out, proto, *s);
            }
        }
    }
}

/// Redis's `zrangeGenericCommand`: the options after `key min max`, conflicts, parsing
/// of the range, then the lookup.
fn zrange_generic(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    mut kind: RangeType,
    mut direction: Direction,
) -> CmdResult {
    zrange_into(ctx, args, &mut kind, &mut direction, None)
}

/// ZRANGE and ZRANGESTORE (`store` is the destination; the source and the range then
/// sit one argument later, and WITHSCORES is not an option).
fn zrange_into(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    kind: &mut RangeType,
    direction: &mut Direction,
    store: Option<&Bytes>,
) -> CmdResult {
    let base = usize::from(store.is_some());
    let (mut kind, mut direction) = (*kind, *direction);
    let mut withscores = false;
    let mut limit: Option<(i64, i64)> = None;
    let mut j = 4 + base;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if store.is_none() && is(a, "withscores") {
            withscores = true;
        } else if is(a, "limit") && left >= 2 {
            limit = Some((int(&args[j + 1])?, int(&args[j + 2])?));
            j += 2;
        } else if direction == Direction::Auto && is(a, "rev") {
            direction = Direction::Reverse;
        } else if kind == RangeType::Auto && is(a, "bylex") {
            kind = RangeType::Lex;
        } else if kind == RangeType::Auto && is(a, "byscore") {
            kind = RangeType::Score;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    if direction == Direction::Auto {
        direction = Direction::Forward;
    }
    if kind == RangeType::Auto {
        kind = RangeType::Rank;
    }
    // Redis tests the count only: `LIMIT n -1` means "no limit" and passes.
    if limit.is_some_and(|(_, count)| count != -1) && kind == RangeType::Rank {
        return Err(CmdError::Static(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    // A rank range ignores a `LIMIT n -1` that passed the check above, offset included.
    let limit = if kind == RangeType::Rank { None } else { limit };
    if withscores && kind == RangeType::Lex {
        return Err(CmdError::Static(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let reverse = direction == Direction::Reverse;
    let (mut lo, mut hi) = (&args[2 + base][..], &args[3 + base][..]);
    if reverse && kind != RangeType::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    // Validate the range before looking at the key, as Redis does.
    match kind {
        RangeType::Score => {
            score_range(lo, hi)?;
        }
        RangeType::Lex => {
            lex_range(lo, hi)?;
        }
        _ => {
            int(lo)?;
            int(hi)?;
        }
    }
    let key = &args[1 + base];
    let proto = ctx.proto();
    if let Some(dst) = store {
        let mut locked = ctx.lock_keys([&key[..], &dst[..]]);
        // The source is read as ZRANGE reads it (a miss fires `keymiss`).
        let source = as_read(|| zset(locked.shard(key), key))?;
        let items: Vec<(Vec<u8>, f64)> = match source {
            Some(z) => select(z, kind, reverse, (lo, hi), limit)?
                .into_iter()
                .map(|(m, s)| (m.to_vec(), s))
                .collect(),
            None => Vec::new(),
        };
        let limits = EncodingLimits::now(&ctx.shared.hot);
        let items = added_one_by_one(items, &limits);
        let shard = locked.shard(dst);
        encode::write_integer(ctx.out, items.len() as i64);
        let stored = store_zset(shard, dst, items, &limits);
        notify_store(ctx, stored, "zrangestore", dst);
        return Ok(());
    }
    let mut shard = ctx.lock(key);
    let Some(z) = zset(&mut shard, key)? else {
        encode::write_array_len(ctx.out, 0);
        return Ok(());
    };
    // For reversed score/lex ranges the bounds were given max first; select() walks
    // in reverse and filters with (min, max).
    let items = select(z, kind, reverse, (lo, hi), limit)?;
    write_range(ctx.out, proto, &items, withscores);
    Ok(())
}

/// Replaces `dst` with a sorted set of `items`, or deletes it when there are none (the
/// *STORE commands). Redis builds the set as a skiplist and converts it to a listpack
/// when it fits `limits`, which drops the sign of a -0 score.
/// Returns `Some(true)` when it stored a set, `Some(false)` when it deleted `dst`,
/// `None` when there was nothing to store and nothing to delete.
pub(crate) fn store_zset(
    shard: &mut Shard,
    dst: &[u8],
    items: Vec<(Vec<u8>, f64)>,
    limits: &EncodingLimits,
) -> Option<bool> {
    if items.is_empty() {
        // As Redis's `dbDelete`: a stale destination goes too, as `del`, not `expired`.
        return shard.remove_any(dst).then_some(false);
    }
    let mut z = ZSet::default();
    for (m, s) in items {
        z.insert(&m, s);
    }
    z.settle_zero_signs(limits.zset_entries, limits.zset_value);
    shard.insert(dst, Value::ZSet(z), 0);
    Some(true)
}

/// ZRANGESTORE's `items`, in the order it adds them, with the scores Redis 7.0 keeps:
/// it starts a listpack when they are few enough, so the -0 scores of members added
/// before one too long for it (which converts the set) read back as 0.
fn added_one_by_one(
    mut items: Vec<(Vec<u8>, f64)>,
    limits: &EncodingLimits,
) -> Vec<(Vec<u8>, f64)> {
    if items.len() <= limits.zset_entries {
        let converted_at = items
            .iter()
            .position(|(m, _)| m.len() > limits.zset_value)
            .unwrap_or(items.len());
        for (_, score) in &mut items[..converted_at] {
            if *score == 0.0 {
                *score = 0.0;
            }
        }
    }
    items
}

/// The event of a *STORE command, given what [`store_zset`] did.
pub(crate) fn notify_store(ctx: &Ctx<'_>, stored: Option<bool>, name: &'static str, dst: &[u8]) {
    match stored {
        Some(true) => event(ctx, NotifyClass::Zset, name, dst),
        Some(false) => event(ctx, NotifyClass::Generic, "del", dst),
        None => {}
    }
}

fn zrangestore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let dst = args[1].clone();
    zrange_into(
        ctx,
        args,
        &mut RangeType::Auto,
        &mut Direction::Auto,
        Some(&dst),
    )
}

fn zrandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let count = match args.get(2) {
        Some(a) => Some(super::args::random_count(a)?),
        None => None,
    };
    let with_scores = match args.get(3) {
        Some(a) if args.len() == 4 && is(a, "withscores") => true,
        None => false,
        _ => return Err(SYNTAX),
    };
    if with_scores {
        if let Some(n) = count {
            super::args::random_pairs_count(n)?;
        }
    }
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let Some(z) = zset(&mut shard, key)? else {
        match count {
            Some(_) => encode::write_array_len(ctx.out, 0),
            None => encode::write_null_bulk(ctx.out, proto),
        }
        return Ok(());
    };
    let Some(count) = count else {
        if let Some((m, _)) = z.random_index().and_then(|i| z.get_index(i)) {
            encode::write_bulk(ctx.out, m);
        }
        return Ok(());
    };
    // Positive: distinct members; negative: repeats allowed.
    let picks = super::args::random_picks(count, z);
    let items: Vec<(Vec<u8>, f64)> = picks
        .into_iter()
        .filter_map(|i| z.get_index(i).map(|(m, s)| (m.to_vec(), s)))
        .collect();
    write_range(ctx.out, proto, &items, with_scores);
    Ok(())
}

fn zscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    use super::hashes::{scan_cursor, scan_options, scan_page, write_empty_scan};
    let cursor = scan_cursor(args)?;
    let limits = EncodingLimits::now(&ctx.shared.hot);
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let Some(z) = zset(&mut shard, key)? else {
        write_empty_scan(ctx.out);
        return Ok(());
    };
    let (pattern, count) = scan_options(args)?;
    let whole = z.is_listpack(limits.zset_entries, limits.zset_value);
    if !whole {
        // Redis pages a skiplist; the packed form (kept under small limits) cannot be.
        z.unpack();
    }
    let (items, next) = scan_page(
        whole,
        z.iter(),
        (z.positions(), |i| z.get_index(i)),
        (cursor, count),
        |(m, _)| pattern.is_none_or(|p| crate::glob::glob_match(p, m, false)),
    );
    encode::write_array_len(ctx.out, 2);
    encode::write_bulk(ctx.out, next.to_string().as_bytes());
    encode::write_array_len(ctx.out, items.len() * 2);
    for (m, s) in items {
        encode::write_bulk(ctx.out, m);
        encode::write_bulk(ctx.out, super::float::fmt_g17(s).as_bytes());
    }
    Ok(())
}

fn zrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, RangeType::Auto, Direction::Auto)
}

fn zrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, RangeType::Rank, Direction::Reverse)
}

fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, RangeType::Score, Direction::Forward)
}

fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, RangeType::Score, Direction::Reverse)
}

fn zrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, RangeType::Lex, Direction::Forward)
}

fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, RangeType::Lex, Direction::Reverse)
}

fn zcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (min, max) = score_range(&args[2], &args[3])?;
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let n = zset(&mut shard, key)?.map_or(0, |z| z.count_by_score(min, max));
    encode::write_integer(ctx.out, n as i64);
    Ok(())
}

fn zlexcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (min, max) = lex_range(&args[2], &args[3])?;
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let n = zset(&mut shard, key)?.map_or(0, |z| {
        lex_bounds(&min, &max)
            .and_then(|(lower, upper)| z.count_by_lex(lower, upper))
            .unwrap_or_else(|| lex_members(z, &min, &max).count())
    });
    encode::write_integer(ctx.out, n as i64);
    Ok(())
}

fn zremrange(ctx: &mut Ctx<'_>, args: &[Bytes], kind: RangeType) -> CmdResult {
    match kind {
        RangeType::Score => {
            score_range(&args[2], &args[3])?;
        }
        RangeType::Lex => {
            lex_range(&args[2], &args[3])?;
        }
        _ => {
            int(&args[2])?;
            int(&args[3])?;
        }
    }
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let removed = match zset(&mut shard, key)? {
        None => 0,
        Some(z) => {
            let victims: Vec<Vec<u8>> = select(z, kind, false, (&args[2], &args[3]), None)?
                .into_iter()
                .map(|(m, _)| m.to_vec())
                .collect();
            for m in &victims {
                z.remove(m);
            }
            victims.len()
        }
    };
    if removed > 0 {
        shard.touch(key);
        crate::store::dirty::mark_rest(removed);
        let name = match kind {
            RangeType::Score => "zremrangebyscore",
            RangeType::Lex => "zremrangebylex",
            _ => "zremrangebyrank",
        };
        event(ctx, NotifyClass::Zset, name, key);
    }
    if shard.remove_if_empty(key) {
        event(ctx, NotifyClass::Generic, "del", key);
    }
    encode::write_integer(ctx.out, removed as i64);
    Ok(())
}

fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zremrange(ctx, args, RangeType::Rank)
}

fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zremrange(ctx, args, RangeType::Score)
}

fn zremrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zremrange(ctx, args, RangeType::Lex)
}

fn zpop(ctx: &mut Ctx<'_>, args: &[Bytes], max: bool) -> CmdResult {
    if args.len() > 3 {
        return Err(SYNTAX);
    }
    let count = super::args::pop_count(args.get(2))?;
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let Some(z) = zset(&mut shard, key)? else {
        encode::write_array_len(ctx.out, 0);
        return Ok(());
    };
    let popped = pop_end(z, count.unwrap_or(1), max);
    if !popped.is_empty() {
        // A change a member popped, as Redis counts them.
        shard.touch(key);
        crate::store::dirty::mark_rest(popped.len());
        event(
            ctx,
            NotifyClass::Zset,
            if max { "zpopmax" } else { "zpopmin" },
            key,
        );
    }
    if shard.remove_if_empty(key) {
        event(ctx, NotifyClass::Generic, "del", key);
    }
    if count.is_none() {
        // One pair, flat in both protocols.
        encode::write_array_len(ctx.out, popped.len() * 2);
        for (m, s) in &popped {
            encode::write_bulk(ctx.out, m);
            double(ctx.out, proto, *s);
        }
    } else {
        write_range(ctx.out, proto, &popped, true);
    }
    Ok(())
}

/// Takes up to `n` members off the low end of `z` (the high end when `max`), with their
/// scores, in the order they go.
pub(crate) fn pop_end(z: &mut ZSet, n: usize, max: bool) -> Vec<(Vec<u8>, f64)> {
    let n = n.min(z.len());
    let mut popped = Vec::with_capacity(n);
    for _ in 0..n {
        let next = if max {
            z.iter().next_back()
        } else {
            z.iter().next()
        };
        let Some((m, s)) = next.map(|(m, s)| (m.to_vec(), s)) else {
            break;
        };
        z.remove(&m);
        popped.push((m, s));
    }
    popped
}

fn zpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zpop(ctx, args, false)
}

fn zpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zpop(ctx, args, true)
}

fn zmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let parsed = super::blocking::parse_mpop(args, 1, true)?;
    let op = crate::blocking::BlockOp::ZMPop {
        max: !parsed.head,
        count: parsed.count,
    };
    super::blocking::pop_first(ctx, &args[parsed.first..parsed.first + parsed.numkeys], &op)
}
