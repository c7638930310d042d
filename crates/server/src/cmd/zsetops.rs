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

/// One input, copied out of its shard: members with their scores, in the order Redis
/// iterates them (score order for sorted sets, insertion order for sets).
struct Input {
    members: Vec<(Vec<u8>, f64)>,
    lookup: HashMap<Vec<u8>, f64>,
    weight: f64,
}

fn read_input(shard: &mut Shard, key: &[u8]) -> Result<Vec<(Vec<u8>, f64)>, CmdError> {
    Ok(match shard.get(key).map(|e| &e.value) {
        None => Vec::new(),
        Some(Value::ZSet(z)) => z.iter().map(|(m, s)| (m.to_vec(), s)).collect(),
        Some(Value::Set(s)) => s.iter().map(|m| (m.to_vec(), 1.0)).collect(),
        Some(_) => return Err(WRONG_TYPE),
    })
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
            let members = as_read(|| read_input(locked.shard(key), key))?;
            inputs.push(Input {
                lookup: HashMap::new(),
                members,
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
/// the count matters.
fn compute(mut p: Parsed, op: Op, card_only: bool) -> (Vec<(Vec<u8>, f64)>, usize) {
    let mut acc: Vec<(Vec<u8>, f64)> = Vec::new();
    let mut cardinality = 0;
    match op {
        Op::Union => {
            p.inputs.sort_by_key(|i| i.members.len());
            let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
            for input in &p.inputs {
                for (m, s) in &input.members {
                    let mut score = input.weight * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match index.get(m) {
                        Some(&at) => aggregate(&mut acc[at].1, score, p.how),
                        None => {
                            index.insert(m.clone(), acc.len());
                            acc.push((m.clone(), score));
                        }
                    }
                }
            }
        }
        Op::Inter => {
            p.inputs.sort_by_key(|i| i.members.len());
            for input in p.inputs.iter_mut().skip(1) {
                input.lookup = input.members.iter().cloned().collect();
            }
            let (first, rest) = p.inputs.split_at(1);
            for (m, s) in &first[0].members {
                let mut score = first[0].weight * s;
                if score.is_nan() {
                    score = 0.0;
                }
                let mut everywhere = true;
                for input in rest {
                    match input.lookup.get(m) {
                        Some(v) => aggregate(&mut score, v * input.weight, p.how),
                        None => {
                            everywhere = false;
                            break;
                        }
                    }
                }
                if !everywhere {
                    continue;
                }
                if card_only {
                    cardinality += 1;
                    if p.limit != 0 && cardinality >= p.limit {
                        break;
                    }
                } else {
                    acc.push((m.clone(), score));
                }
            }
        }
        Op::Diff => {
            for input in p.inputs.iter_mut().skip(1) {
                input.lookup = input.members.iter().cloned().collect();
            }
            let (first, rest) = p.inputs.split_at(1);
            for (m, s) in &first[0].members {
                if rest.iter().all(|i| !i.lookup.contains_key(m)) {
                    acc.push((m.clone(), *s));
                }
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
    let (items, _) = compute(parsed, op, false);
    if let (true, Some(locked)) = (store, locked.as_mut()) {
        let dst = &args[1];
        encode::write_integer(ctx.out, items.len() as i64);
        let stored = store_zset(locked.shard(dst), dst, items);
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
    let (_, n) = compute(parsed, Op::Inter, true);
    encode::write_integer(ctx.out, n as i64);
    Ok(())
}
