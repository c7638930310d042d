//! SORT and SORT_RO (Redis's `sort.c`): sort a list, set or sorted set numerically or
//! with ALPHA, by the element itself or by a BY pattern (`weight_*`, `hash_*->field`),
//! with LIMIT, GET patterns (`#` is the element) and STORE. Equal numeric scores fall
//! back to comparing the elements, as Redis does, so the output is deterministic.

use crate::notify::{event, NotifyClass};
use std::cmp::Ordering;

use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::float::parse_sort_f64;
use super::reply::{CmdError, CmdResult, SYNTAX, WRONG_TYPE};
use super::{Ctx, Handler};
use crate::store::lookups::as_read;
use crate::store::Value;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[("sort", sort), ("sort_ro", sort_ro)];

/// Looks a pattern up for `element`: the first `*` is replaced by the element; a
/// `->field` suffix reads a hash field. `None` when the key, the field or the pattern
/// itself do not give a string.
fn lookup(ctx: &Ctx<'_>, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    // "->" after the star selects a hash field (and must leave a field name).
    let arrow = pattern[star..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|p| p + star)
        .filter(|&p| p + 2 < pattern.len());
    let key_end = arrow.unwrap_or(pattern.len());
    let mut key = Vec::with_capacity(key_end + element.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    let mut shard = ctx.lock(&key);
    let entry = as_read(|| shard.get(&key))?;
    match arrow {
        Some(a) => match &entry.value {
            Value::Hash(h) => h.get(&pattern[a + 2..]).map(|v| v.to_vec()),
            _ => None,
        },
        None => entry.value.to_vec(),
    }
}

/// LIMIT's `(start, count)` as positions in `len` elements (no LIMIT: all of them).
fn window(limit: Option<(i64, i64)>, len: usize) -> (usize, usize) {
    let len = len as i64;
    let (start, count) = limit.unwrap_or((0, -1));
    let start = start.clamp(0, len);
    let count = if count < 0 || start.saturating_add(count) > len {
        len - start
    } else {
        count
    };
    (start as usize, count as usize)
}

/// The elements of an ordered collection of `len` in LIMIT's window, counted from the
/// tail under DESC, copied out: only those are read.
fn in_window<'a>(
    elements: impl DoubleEndedIterator<Item = &'a [u8]>,
    len: usize,
    limit: Option<(i64, i64)>,
    desc: bool,
) -> Vec<Vec<u8>> {
    let (start, count) = window(limit, len);
    if desc {
        elements
            .rev()
            .skip(start)
            .take(count)
            .map(<[u8]>::to_vec)
            .collect()
    } else {
        elements
            .skip(start)
            .take(count)
            .map(<[u8]>::to_vec)
            .collect()
    }
}

fn sort(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    sort_generic(ctx, args, false)
}

fn sort_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    sort_generic(ctx, args, true)
}

fn sort_generic(ctx: &mut Ctx<'_>, args: &[Bytes], readonly: bool) -> CmdResult {
    let (mut desc, mut alpha) = (false, false);
    let mut limit: Option<(i64, i64)> = None;
    let mut sort_by: Option<&[u8]> = None;
    let mut dont_sort = false;
    let mut gets: Vec<&[u8]> = Vec::new();
    let mut store: Option<&Bytes> = None;
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if is(a, "asc") {
            desc = false;
        } else if is(a, "desc") {
            desc = true;
        } else if is(a, "alpha") {
            alpha = true;
        } else if is(a, "limit") && left >= 2 {
            limit = Some((int(&args[j + 1])?, int(&args[j + 2])?));
            j += 2;
        } else if is(a, "store") && left >= 1 && !readonly {
            store = Some(&args[j + 1]);
            j += 1;
        } else if is(a, "by") && left >= 1 {
            let pattern = &args[j + 1][..];
            // A pattern without '*' (as C's `strchr` sees it) means "do not sort" (but
            // still LIMIT and GET).
            if !crate::cstr::c_string(pattern).contains(&b'*') {
                dont_sort = true;
            } else if ctx.shared.cluster.enabled() {
                // Its lookups would reach keys of any slot.
                return Err(CmdError::Static(
                    "ERR BY option of SORT denied in Cluster mode.",
                ));
            } else if !full_key_access(ctx, args) {
                return Err(CmdError::Static(
                    "ERR BY option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            sort_by = Some(pattern);
            j += 1;
        } else if is(a, "get") && left >= 1 {
            if ctx.shared.cluster.enabled() {
                return Err(CmdError::Static(
                    "ERR GET option of SORT denied in Cluster mode.",
                ));
            }
            if !full_key_access(ctx, args) {
                return Err(CmdError::Static(
                    "ERR GET option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            gets.push(&args[j + 1]);
            j += 1;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    let key = &args[1];
    // Lists and sorted sets keep their own order without sorting, read from the tail
    // under DESC (before LIMIT, which counts from that end): then only LIMIT's window
    // is read, not the whole collection.
    let (mut elements, is_set, windowed) = {
        let mut shard = ctx.lock(key);
        // Read lookups, as Redis's (`keymiss`, INFO's misses), for SORT too.
        let value = as_read(|| shard.get(key)).map(|e| &mut e.value);
        // Redis converts a sorted set to its skiplist form for good before reading it,
        // even for SORT_RO: OBJECT ENCODING tells.
        if let Some(Value::ZSet(z)) = value {
            z.convert_to_skiplist();
        }
        match value.map(|v| &*v) {
            None => (Vec::new(), false, false),
            Some(Value::List(l)) if dont_sort => {
                (in_window(l.iter(), l.len(), limit, desc), false, true)
            }
            Some(Value::ZSet(z)) if dont_sort => {
                let members = z.iter().map(|(m, _)| m);
                (in_window(members, z.len(), limit, desc), false, true)
            }
            Some(Value::List(l)) => (l.iter().map(<[u8]>::to_vec).collect(), false, false),
            Some(Value::Set(s)) => (s.iter().map(|e| e.to_vec()).collect(), true, false),
            Some(Value::ZSet(z)) => (z.iter().map(|(m, _)| m.to_vec()).collect(), false, false),
            Some(_) => return Err(WRONG_TYPE),
        }
    };
    // A set has no order of its own: when it is stored or goes to a script, it is sorted
    // (alphabetically) so the result does not depend on hash order, as in Redis.
    if dont_sort && is_set && (store.is_some() || ctx.client.in_script) {
        dont_sort = false;
        alpha = true;
        sort_by = None;
    }
    let (start, count) = if windowed {
        (0, elements.len())
    } else {
        window(limit, elements.len())
    };
    if !dont_sort {
        // Sort keys: the element or its BY value, as a number or as bytes.
        let mut keyed: Vec<(Vec<u8>, Option<Vec<u8>>, f64)> = Vec::with_capacity(elements.len());
        for e in elements.drain(..) {
            let by = match sort_by {
                Some(p) => lookup(ctx, p, &e),
                None => Some(e.clone()),
            };
            let mut score = 0.0;
            if !alpha {
                if let Some(v) = &by {
                    score = parse_sort_f64(v).ok_or(CmdError::Static(
                        "ERR One or more scores can't be converted into double",
                    ))?;
                }
            }
            keyed.push((e, by, score));
        }
        let by_pattern = sort_by.is_some();
        keyed.sort_by(|a, b| {
            let cmp = if !alpha {
                a.2.partial_cmp(&b.2)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.0.cmp(&b.0))
            } else if by_pattern {
                match (&a.1, &b.1) {
                    (None, None) => Ordering::Equal,
                    (None, _) => Ordering::Less,
                    (_, None) => Ordering::Greater,
                    (Some(x), Some(y)) => collate(x, y),
                }
            } else {
                collate(&a.0, &b.0)
            };
            if desc {
                cmp.reverse()
            } else {
                cmp
            }
        });
        elements = keyed.into_iter().map(|(e, _, _)| e).collect();
    }
    let picked = &elements[start..start + count];
    let mut out: Vec<Option<Vec<u8>>> = Vec::new();
    for e in picked {
        if gets.is_empty() {
            out.push(Some(e.clone()));
        } else {
            for g in &gets {
                out.push(lookup(ctx, g, e));
            }
        }
    }
    match store {
        Some(dst) => {
            let n = out.len();
            let mut shard = ctx.lock(dst);
            if n == 0 {
                if shard.remove_any(dst) {
                    event(ctx, NotifyClass::Generic, "del", dst);
                }
            } else {
                let list = out
                    .iter()
                    .map(|v| v.as_deref().unwrap_or_default())
                    .collect();
                shard.insert(dst, Value::List(Box::new(list)), 0);
                // A change an element stored, as Redis counts them.
                crate::store::dirty::mark_rest(n);
                event(ctx, NotifyClass::List, "sortstore", dst);
            }
            encode::write_integer(ctx.out, n as i64);
        }
        None => {
            let proto = ctx.proto();
            encode::write_array_len(ctx.out, out.len());
            for v in out {
                match v {
                    Some(v) => encode::write_bulk(ctx.out, &v),
                    None => encode::write_null_bulk(ctx.out, proto),
                }
            }
        }
    }
    Ok(())
}

/// `strcoll` in the C locale: bytes compared up to the first NUL.
fn collate(a: &[u8], b: &[u8]) -> Ordering {
    let cut = |s: &[u8]| s.iter().position(|&c| c == 0).map_or(s.len(), |p| p);
    a[..cut(a)].cmp(&b[..cut(b)])
}

/// BY and GET patterns read keys no key pattern can vet in advance: Redis allows them
/// only to users that may read every key with this command.
fn full_key_access(ctx: &Ctx<'_>, args: &[Bytes]) -> bool {
    let user = super::acl::current_user(ctx);
    if user.unrestricted() {
        return true;
    }
    let Some(spec) = ctx.shared.renamed.resolve(args) else {
        return false;
    };
    crate::acl::check::reads_every_key(&user.rules(), spec, args)
}
