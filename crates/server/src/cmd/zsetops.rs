//! Sorted-set algebra (Redis's `zunionInterDiffGenericCommand`): ZUNION ZINTER ZDIFF,
//! their STORE forms, and ZINTERCARD. Inputs may be sorted sets or plain sets (members
//! scoring 1). Inputs are visited smallest first for union and intersection, as Redis
//! does, so floating-point sums come out bit for bit the same.

use crate::store::lookups::as_read;
use std::collections::HashMap;

use bytes::Bytes;
use redline_resp::encode;

use super::args::{float, is};
use super::reply::{CmdError, CmdResult, SYNTAX, WRONG_TYPE};
use super::zsets::{notify_store, store_zset, write_range};
use super::{Ctx, Handler, KeysRef};
use crate::store::encoding::EncodingLimits;
use crate::store::{canonical_int, Shard, Value, ZSet};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("zunion", zunion),
    ("zinter", zinter),
    ("zdiff", zdiff),
    ("zunionstore", zunionstore),
    ("zinterstore", zinterstore),
    ("zdiffstore", zdiffstore),
    ("zintercard", zintercard),
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

fn aggregate(target: &mut f64, value: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += value;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if value < *target {
                *target = value;
            }
        }
        Aggregate::Max => {
            if value > *target {
                *target = value;
            }
        }
    }
}

/// One input: its key, how many members it holds (looked up once, when the command is
/// parsed, as Redis does) and its weight. Its members are read where they are stored
/// ([`KeysRef::peek`]) when the result is computed, and only the inputs that must be walked are: an
/// intersection walks its smallest input and looks the others' members up, a
/// difference walks its first, so neither costs the size of a large input.
struct Input {
    key: Bytes,
    len: usize,
    weight: f64,
}

/// How many members the input at `key` has (a set's members score 1); a missing key is
/// empty, any other type WRONGTYPE.
fn input_len(shard: &mut Shard, key: &[u8]) -> Result<usize, CmdError> {
    Ok(match shard.get(key).map(|e| &e.value) {
        None => 0,
        Some(Value::ZSet(z)) => z.len(),
        Some(Value::Set(s)) => s.len(),
        Some(_) => return Err(WRONG_TYPE),
    })
}

/// Calls `f` with each member of an input and its score, in the order Redis iterates
/// them (score order for sorted sets, insertion order for sets).
fn each_member(value: Option<&Value>, mut f: impl FnMut(&[u8], f64)) {
    match value {
        Some(Value::ZSet(z)) => z.iter().for_each(|(m, s)| f(m, s)),
        Some(Value::Set(s)) => s.iter().for_each(|m| f(&m, 1.0)),
        _ => {}
    }
}

/// The score of `member` in an input, `None` when it is not there.
fn score_in(value: Option<&Value>, member: &[u8]) -> Option<f64> {
    match value {
        Some(Value::ZSet(z)) => z.score(member),
        Some(Value::Set(s)) => s.contains(member).then_some(1.0),
        _ => None,
    }
}

struct Parsed {
    inputs: Vec<Input>,
    how: Aggregate,
    withscores: bool,
    limit: usize,
}

/// Parses and reads, in Redis's order: numkeys, the keys' types, then the options.
#[allow(clippy::too_many_arguments)]
fn parse<'a>(
    ctx: &Ctx<'a>,
    locked: &mut Option<KeysRef<'a>>,
    args: &[Bytes],
    numkeys_index: usize,
    op: Op,
    store: bool,
    card_only: bool,
    name: &str,
) -> Result<Parsed, CmdError> {
    let setnum = canonical_int(&args[numkeys_index]).ok_or(super::reply::NOT_INTEGER)?;
    if setnum < 1 {
        return Err(CmdError::Owned(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    if setnum as u64 > (args.len() - numkeys_index - 1) as u64 {
        return Err(SYNTAX);
    }
    let setnum = setnum as usize;
    let keys = &args[numkeys_index + 1..numkeys_index + 1 + setnum];
    let mut inputs = Vec::with_capacity(setnum);
    {
        // The keys (and a STORE destination) stay locked until the result is stored.
        let mut all: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        if store {
            all.push(&args[1]);
        }
        let locked = locked.insert(ctx.lock_keys(all));
        for key in keys {
            let len = as_read(|| input_len(locked.shard(key), key))?;
            inputs.push(Input {
                key: key.clone(),
                len,
                weight: 1.0,
            });
        }
    }
    let mut how = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0usize;
    let mut j = numkeys_index + 1 + setnum;
    while j < args.len() {
        let remaining = args.len() - j;
        let a = &args[j];
        if op != Op::Diff && !card_only && remaining > setnum && is(a, "weights") {
            j += 1;
            for input in inputs.iter_mut() {
                input.weight = float(&args[j])
                    .map_err(|_| CmdError::Static("ERR weight value is not a float"))?;
                j += 1;
            }
        } else if op != Op::Diff && !card_only && remaining >= 2 && is(a, "aggregate") {
            let w = &args[j + 1];
            how = if is(w, "sum") {
                Aggregate::Sum
            } else if is(w, "min") {
                Aggregate::Min
            } else if is(w, "max") {
                Aggregate::Max
            } else {
                return Err(SYNTAX);
            };
            j += 2;
        } else if !store && !card_only && is(a, "withscores") {
            withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && is(a, "limit") {
            limit = match canonical_int(&args[j + 1]) {
                Some(n) if n >= 0 => n as usize,
                Some(_) => return Err(CmdError::Static("ERR LIMIT can't be negative")),
                None => return Err(CmdError::Static("ERR LIMIT can't be negative")),
            };
            j += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    Ok(Parsed {
        inputs,
        how,
        withscores,
        limit,
    })
}

/// Computes the result, in the result set's (score, member) order; for ZINTERCARD only
/// the count matters. The inputs are read from `locked`, where they are stored.
fn compute(
    mut p: Parsed,
    op: Op,
    card_only: bool,
    locked: &mut KeysRef<'_>,
) -> (Vec<(Vec<u8>, f64)>, usize) {
    let weighted = |score: f64, weight: f64| {
        let score = weight * score;
        if score.is_nan() {
            0.0
        } else {
            score
        }
    };
    let mut acc: Vec<(Vec<u8>, f64)> = Vec::new();
    let mut cardinality = 0;
    match op {
        Op::Union => {
            p.inputs.sort_by_key(|i| i.len);
            let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
            for input in &p.inputs {
                each_member(locked.peek(&input.key), |m, s| {
                    let score = weighted(s, input.weight);
                    match index.get(m) {
                        Some(&at) => aggregate(&mut acc[at].1, score, p.how),
                        None => {
                            index.insert(m.to_vec(), acc.len());
                            acc.push((m.to_vec(), score));
                        }
                    }
                });
            }
        }
        Op::Inter => {
            // The smallest input's members, looked up in each other input in turn (in
            // size order, so each member's score aggregates in Redis's order).
            p.inputs.sort_by_key(|i| i.len);
            let Some((first, rest)) = p.inputs.split_first() else {
                return (Vec::new(), 0);
            };
            each_member(locked.peek(&first.key), |m, s| {
                acc.push((m.to_vec(), weighted(s, first.weight)))
            });
            for input in rest {
                let value = locked.peek(&input.key);
                acc.retain_mut(|(m, score)| match score_in(value, m) {
                    Some(v) => {
                        aggregate(score, v * input.weight, p.how);
                        true
                    }
                    None => false,
                });
            }
            if card_only {
                cardinality = match p.limit {
                    0 => acc.len(),
                    limit => acc.len().min(limit),
                };
                return (Vec::new(), cardinality);
            }
        }
        Op::Diff => {
            let Some((first, rest)) = p.inputs.split_first() else {
                return (Vec::new(), 0);
            };
            each_member(locked.peek(&first.key), |m, s| acc.push((m.to_vec(), s)));
            for input in rest {
                if acc.is_empty() {
                    break;
                }
                let value = locked.peek(&input.key);
                acc.retain(|(m, _)| score_in(value, m).is_none());
            }
        }
    }
    // The result is a sorted set: order by (score, member).
    let mut z = ZSet::default();
    for (m, s) in &acc {
        z.insert(m, *s);
    }
    let ordered = z.iter().map(|(m, s)| (m.to_vec(), s)).collect();
    (ordered, cardinality)
}

fn generic(ctx: &mut Ctx<'_>, args: &[Bytes], op: Op, store: bool, name: &str) -> CmdResult {
    let numkeys_index = if store { 2 } else { 1 };
    let mut locked = None;
    let parsed = parse(
        ctx,
        &mut locked,
        args,
        numkeys_index,
        op,
        store,
        false,
        name,
    )?;
    let withscores = parsed.withscores;
    // Parsing locked the keys.
    let Some(held) = locked.as_mut() else {
        return Ok(());
    };
    let (items, _) = compute(parsed, op, false, held);
    if let (true, Some(locked)) = (store, locked.as_mut()) {
        let dst = &args[1];
        encode::write_integer(ctx.out, items.len() as i64);
        let limits = EncodingLimits::now(&ctx.shared.hot);
        let stored = store_zset(locked.shard(dst), dst, items, &limits);
        let event = match op {
            Op::Union => "zunionstore",
            Op::Inter => "zinterstore",
            _ => "zdiffstore",
        };
        notify_store(ctx, stored, event, dst);
    } else {
        let proto = ctx.proto();
        write_range(ctx.out, proto, &items, withscores);
    }
    Ok(())
}

fn zunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    generic(ctx, args, Op::Union, false, "zunion")
}

fn zinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    generic(ctx, args, Op::Inter, false, "zinter")
}

fn zdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    generic(ctx, args, Op::Diff, false, "zdiff")
}

fn zunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    generic(ctx, args, Op::Union, true, "zunionstore")
}

fn zinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    generic(ctx, args, Op::Inter, true, "zinterstore")
}

fn zdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    generic(ctx, args, Op::Diff, true, "zdiffstore")
}

fn zintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut locked = None;
    let parsed = parse(
        ctx,
        &mut locked,
        args,
        1,
        Op::Inter,
        false,
        true,
        "zintercard",
    )?;
    // Parsing locked the keys.
    let Some(held) = locked.as_mut() else {
        return Ok(());
    };
    let (_, n) = compute(parsed, Op::Inter, true, held);
    encode::write_integer(ctx.out, n as i64);
    Ok(())
}
