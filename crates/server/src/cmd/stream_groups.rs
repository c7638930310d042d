//! Stream consumer groups and introspection (Redis's `t_stream.c`): XGROUP CREATE /
//! SETID / DESTROY / CREATECONSUMER / DELCONSUMER, XACK, XPENDING, XCLAIM, XAUTOCLAIM
//! and XINFO STREAM / GROUPS / CONSUMERS.

use bytes::{Bytes, BytesMut};
use redline_resp::{encode, Protocol};

use super::args::{int, is};
use super::reply::Piece::{Arg, Text};
use super::reply::{error_from, help, ok, CmdError, CmdResult, SYNTAX};
use super::streams::{interval, stream_mut, strict_id, write_entry, write_id};
use super::{Ctx, Handler};
use crate::notify::{keyspace_event, NotifyClass};
use crate::repl::rewrite;
use crate::store::lookups::as_read;
use crate::store::ready::WaitKind;
use crate::store::stream::{Group, Nack, Stream, StreamId, ENTRIES_READ_INVALID};
use crate::store::{now_ms, Value};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("xgroup|create", xgroup_create),
    ("xgroup|setid", xgroup_setid),
    ("xgroup|destroy", xgroup_destroy),
    ("xgroup|createconsumer", xgroup_createconsumer),
    ("xgroup|delconsumer", xgroup_delconsumer),
    ("xgroup|help", xgroup_help),
    ("xack", xack),
    ("xpending", xpending),
    ("xclaim", xclaim),
    ("xautoclaim", xautoclaim),
    ("xinfo|stream", xinfo_stream),
    ("xinfo|groups", xinfo_groups),
    ("xinfo|consumers", xinfo_consumers),
    ("xinfo|help", xinfo_help),
];

fn no_group(key: &[u8], group: &[u8]) -> CmdError {
    error_from(&[
        Text("NOGROUP No such key '"),
        Arg(key, usize::MAX),
        Text("' or consumer group '"),
        Arg(group, usize::MAX),
        Text("'"),
    ])
}

fn no_such_group_for_key(group: &[u8], key: &[u8]) -> CmdError {
    error_from(&[
        Text("NOGROUP No such consumer group '"),
        Arg(group, usize::MAX),
        Text("' for key name '"),
        Arg(key, usize::MAX),
        Text("'"),
    ])
}

const REQUIRES_KEY: CmdError = CmdError::Static("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.");

/// XGROUP CREATE / SETID options after the id: MKSTREAM / ENTRIESREAD. As in Redis, they
/// are checked first, then the key, then the id.
struct GroupArgs {
    mkstream: bool,
    entries_read: i64,
}

fn parse_group_args(args: &[Bytes], create: bool) -> Result<GroupArgs, CmdError> {
    let mut parsed = GroupArgs {
        mkstream: false,
        entries_read: ENTRIES_READ_INVALID,
    };
    let mut i = 5;
    while i < args.len() {
        if create && is(&args[i], "mkstream") {
            parsed.mkstream = true;
            i += 1;
        } else if is(&args[i], "entriesread") && i + 1 < args.len() {
            let n = int(&args[i + 1])?;
            if n < 0 && n != ENTRIES_READ_INVALID {
                return Err(CmdError::Static(
                    "ERR value for ENTRIESREAD must be positive or -1",
                ));
            }
            parsed.entries_read = n;
            i += 2;
        } else {
            return Err(super::reply::subcommand_syntax("XGROUP", &args[1]));
        }
    }
    Ok(parsed)
}

fn xgroup_create(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let parsed = parse_group_args(args, true)?;
    let key = &args[2];
    let mut shard = ctx.lock(key);
    let exists = stream_mut(&mut shard, key)?.is_some();
    if !exists && !parsed.mkstream {
        return Err(REQUIRES_KEY);
    }
    if args.len() > 8 {
        return Err(super::reply::subcommand_syntax("XGROUP", &args[1]));
    }
    // `$` or a strict id (no `-` or `+`), read before MKSTREAM creates anything.
    let id = match &args[4][..] {
        b"$" => None,
        given => Some(super::streams::strict_id(given, 0)?),
    };
    if !exists {
        // Counts no change: Redis counts the group's creation only.
        shard.get_or_insert_with(key, || Value::Stream(Box::default()));
    }
    let Some(stream) = super::streams::stream_again(&mut shard, key) else {
        return Ok(());
    };
    // Redis 7.0 keeps ENTRIESREAD as given (unknown, -1, by default) whatever the id,
    // `$` included; XINFO then estimates the lag from the id.
    let id = id.unwrap_or(stream.last_id);
    let entries_read = parsed.entries_read;
    if stream.groups.contains_key(&args[3][..]) {
        return Err(CmdError::Static(
            "BUSYGROUP Consumer Group name already exists",
        ));
    }
    stream.groups.insert(
        // Copied: a view would keep the request's read buffer allocated.
        Bytes::copy_from_slice(&args[3]),
        Group {
            last_id: id,
            entries_read,
            ..Group::default()
        },
    );
    super::streams::metadata_changed(1);
    drop(shard);
    ok(ctx.out);
    let db = ctx.client.db;
    keyspace_event(ctx, NotifyClass::Stream, "xgroup-create", db, key);
    Ok(())
}

fn xgroup_setid(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let parsed = parse_group_args(args, false)?;
    let key = &args[2];
    let mut shard = ctx.lock(key);
    let Some(stream) = stream_mut(&mut shard, key)? else {
        return Err(REQUIRES_KEY);
    };
    if !stream.groups.contains_key(&args[3][..]) {
        return Err(no_such_group_for_key(&args[3], key));
    }
    if args.len() != 5 && args.len() != 7 {
        return Err(super::reply::subcommand_syntax("XGROUP", &args[1]));
    }
    // `$`, or an id where `-` and `+` mean the smallest and largest.
    let id = match &args[4][..] {
        b"$" => stream.last_id,
        given => super::streams::any_id(given, 0)?,
    };
    let entries_read = parsed.entries_read;
    let Some(group) = stream.groups.get_mut(&args[3][..]) else {
        return Err(no_such_group_for_key(&args[3], key));
    };
    group.last_id = id;
    group.entries_read = entries_read;
    super::streams::metadata_changed(1);
    drop(shard);
    ok(ctx.out);
    let db = ctx.client.db;
    keyspace_event(ctx, NotifyClass::Stream, "xgroup-setid", db, key);
    Ok(())
}

fn xgroup_destroy(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[2];
    let mut shard = ctx.lock(key);
    let Some(stream) = stream_mut(&mut shard, key)? else {
        return Err(REQUIRES_KEY);
    };
    let removed = stream.groups.remove(&args[3][..]).is_some();
    if removed {
        super::streams::metadata_changed(1);
        // Its blocked readers hear that it is gone (Redis signals the key).
        crate::store::ready::record(ctx.client.db, key, WaitKind::Stream);
    }
    drop(shard);
    encode::write_integer(ctx.out, i64::from(removed));
    if removed {
        let db = ctx.client.db;
        keyspace_event(ctx, NotifyClass::Stream, "xgroup-destroy", db, key);
    }
    Ok(())
}

fn xgroup_createconsumer(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[2];
    let mut shard = ctx.lock(key);
    let Some(stream) = stream_mut(&mut shard, key)? else {
        return Err(REQUIRES_KEY);
    };
    let Some(group) = stream.groups.get_mut(&args[3][..]) else {
        return Err(no_such_group_for_key(&args[3], key));
    };
    let (_, created) = group.consumer_named(&args[4], now_ms());
    drop(shard);
    encode::write_integer(ctx.out, i64::from(created));
    if created {
        let db = ctx.client.db;
        keyspace_event(ctx, NotifyClass::Stream, "xgroup-createconsumer", db, key);
    }
    Ok(())
}

fn xgroup_delconsumer(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[2];
    let mut shard = ctx.lock(key);
    let Some(stream) = stream_mut(&mut shard, key)? else {
        return Err(REQUIRES_KEY);
    };
    let Some(group) = stream.groups.get_mut(&args[3][..]) else {
        return Err(no_such_group_for_key(&args[3], key));
    };
    let pending = match group.consumers.remove(&args[4][..]) {
        None => None,
        Some(consumer) => {
            for id in &consumer.pel {
                group.pel.remove(id);
            }
            Some(consumer.pel.len())
        }
    };
    if pending.is_some() {
        super::streams::metadata_changed(1);
    }
    drop(shard);
    encode::write_integer(ctx.out, pending.unwrap_or(0) as i64);
    if pending.is_some() {
        let db = ctx.client.db;
        keyspace_event(ctx, NotifyClass::Stream, "xgroup-delconsumer", db, key);
    }
    Ok(())
}

fn xgroup_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    help(
        ctx.out,
        &[
            "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
            "HELP",
            "    Prints this help.",
        ],
    );
    Ok(())
}

fn xack(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    // A write that looks its stream up as Redis's reads do (`keymiss`, INFO's misses).
    let Some(group) =
        as_read(|| stream_mut(&mut shard, key))?.and_then(|s| s.groups.get_mut(&args[2][..]))
    else {
        drop(shard);
        encode::write_integer(ctx.out, 0);
        return Ok(());
    };
    let ids = args[3..]
        .iter()
        .map(|a| strict_id(a, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let mut acked = 0;
    for id in ids {
        if let Some(nack) = group.pel.remove(&id) {
            if let Some(c) = group.consumers.get_mut(&nack.consumer) {
                c.pel.remove(&id);
            }
            acked += 1;
        }
    }
    super::streams::metadata_changed(acked as usize);
    drop(shard);
    encode::write_integer(ctx.out, acked);
    Ok(())
}

fn xpending(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let summary = args.len() == 3;
    if args.len() != 3 && (args.len() < 6 || args.len() > 9) {
        return Err(SYNTAX);
    }
    let mut range = None;
    let mut min_idle = 0i64;
    let mut consumer_name = None;
    if args.len() >= 6 {
        let mut start_at = 3;
        if is(&args[3], "idle") {
            min_idle = int(&args[4])?;
            if args.len() < 8 {
                return Err(SYNTAX);
            }
            start_at += 2;
        }
        let count = int(&args[start_at + 2])?.max(0) as usize;
        let start = interval(&args[start_at], true)?;
        let end = interval(&args[start_at + 1], false)?;
        consumer_name = args.get(start_at + 3);
        range = Some((start, end, count));
    }
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let stream = stream_mut(&mut shard, key)?;
    let Some(group) = stream.and_then(|s| s.groups.get(&args[2][..])) else {
        return Err(no_group(key, &args[2]));
    };
    let out = &mut *ctx.out;
    if summary {
        encode::write_array_len(out, 4);
        encode::write_integer(out, group.pel.len() as i64);
        match (group.pel.keys().next(), group.pel.keys().next_back()) {
            (Some(first), Some(last)) => {
                write_id(out, *first);
                write_id(out, *last);
                let owners: Vec<_> = group
                    .consumers
                    .iter()
                    .filter(|(_, c)| !c.pel.is_empty())
                    .collect();
                encode::write_array_len(out, owners.len());
                for (name, c) in owners {
                    encode::write_array_len(out, 2);
                    encode::write_bulk(out, name);
                    encode::write_bulk(out, itoa::Buffer::new().format(c.pel.len()).as_bytes());
                }
            }
            _ => {
                encode::write_null_bulk(out, proto);
                encode::write_null_bulk(out, proto);
                encode::write_null_array(out, proto);
            }
        }
        return Ok(());
    }
    let Some((start, end, count)) = range else {
        return Ok(());
    };
    // Walked only as far as COUNT rows take: a group's pending list may hold millions.
    let ids: Box<dyn Iterator<Item = StreamId> + '_> = match consumer_name {
        Some(name) => match group.consumers.get(&name[..]) {
            Some(c) if start <= end => Box::new(c.pel.range(start..=end).copied()),
            Some(_) => Box::new(std::iter::empty()),
            None => {
                encode::write_array_len(out, 0);
                return Ok(());
            }
        },
        None if start <= end => Box::new(group.pel.range(start..=end).map(|(k, _)| *k)),
        None => Box::new(std::iter::empty()),
    };
    let now = now_ms() as i64;
    let mut rows = Vec::new();
    for id in ids {
        if rows.len() >= count {
            break;
        }
        let Some(nack) = group.pel.get(&id) else {
            continue;
        };
        let idle = (now - nack.delivery_time as i64).max(0);
        if min_idle != 0 && idle < min_idle {
            continue;
        }
        rows.push((id, nack, idle));
    }
    encode::write_array_len(out, rows.len());
    for (id, nack, idle) in rows {
        encode::write_array_len(out, 4);
        write_id(out, id);
        encode::write_bulk(out, &nack.consumer);
        encode::write_integer(out, idle);
        encode::write_integer(out, nack.delivery_count as i64);
    }
    Ok(())
}

/// Gives pending entry `id` to `consumer` (creating the consumer), as XCLAIM and
/// XAUTOCLAIM do.
fn claim_to<'g>(
    group: &'g mut Group,
    id: StreamId,
    consumer: &Bytes,
    now: u64,
) -> Option<&'g mut Nack> {
    let (stored, _) = group.consumer_named(consumer, now);
    if let Some(c) = group.consumers.get_mut(&stored) {
        c.seen_time = now;
    }
    let previous = group.pel.get(&id).map(|n| n.consumer.clone())?;
    if previous[..] != consumer[..] {
        if let Some(old) = group.consumers.get_mut(&previous) {
            old.pel.remove(&id);
        }
        if let Some(new) = group.consumers.get_mut(&consumer[..]) {
            new.pel.insert(id);
        }
    }
    let nack = group.pel.get_mut(&id)?;
    nack.consumer = stored;
    Some(nack)
}

fn xclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let Some(stream) = as_read(|| stream_mut(&mut shard, key))? else {
        return Err(no_group(key, &args[2]));
    };
    if !stream.groups.contains_key(&args[2][..]) {
        return Err(no_group(key, &args[2]));
    }
    let min_idle = int(&args[4])
        .map_err(|_| CmdError::Static("ERR Invalid min-idle-time argument for XCLAIM"))?
        .max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < args.len() {
        match StreamId::parse(&args[j], 0) {
            Some(id) => ids.push(id),
            None => break,
        }
        j += 1;
    }
    let now = now_ms() as i64;
    let (mut force, mut justid) = (false, false);
    let mut retry: i64 = -1;
    let mut delivery: i64 = -1;
    let mut last_id = StreamId::MIN;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = &args[j];
        let number = |arg: &[u8], what: &'static str| int(arg).map_err(|_| CmdError::Static(what));
        if is(opt, "force") {
            force = true;
        } else if is(opt, "justid") {
            justid = true;
        } else if is(opt, "idle") && more > 0 {
            j += 1;
            delivery = now - number(&args[j], "ERR Invalid IDLE option argument for XCLAIM")?;
        } else if is(opt, "time") && more > 0 {
            j += 1;
            delivery = number(&args[j], "ERR Invalid TIME option argument for XCLAIM")?;
        } else if is(opt, "retrycount") && more > 0 {
            j += 1;
            retry = number(
                &args[j],
                "ERR Invalid RETRYCOUNT option argument for XCLAIM",
            )?;
        } else if is(opt, "lastid") && more > 0 {
            j += 1;
            last_id = strict_id(&args[j], 0)?;
        } else {
            return Err(error_from(&[
                Text("ERR Unrecognized XCLAIM option '"),
                Arg(opt, usize::MAX),
                Text("'"),
            ]));
        }
        j += 1;
    }
    if delivery < 0 || delivery > now {
        delivery = now;
    }
    let consumer = args[3].clone();
    let had_consumer = stream
        .groups
        .get(&args[2][..])
        .is_some_and(|g| g.consumers.contains_key(&consumer[..]));
    let exists: Vec<bool> = ids.iter().map(|id| stream.get(id).is_some()).collect();
    let Some(group) = stream.groups.get_mut(&args[2][..]) else {
        return Ok(());
    };
    let group_name = args[2].clone();
    // What changed, as Redis propagates it: an XCLAIM per entry claimed or dropped, or
    // only the group's new position when LASTID moved it and nothing else changed.
    let mut propagate = Vec::new();
    let moved = last_id > group.last_id;
    if moved {
        group.last_id = last_id;
    }
    let position = group.last_id;
    let mut claimed = Vec::new();
    for (id, exists) in ids.into_iter().zip(exists) {
        if !exists {
            if let Some(nack) = group.pel.remove(&id) {
                if let Some(c) = group.consumers.get_mut(&nack.consumer) {
                    c.pel.remove(&id);
                }
                let form = rewrite::stream_claim(key, &group_name, id, &nack, position);
                propagate.push(form);
            }
            continue;
        }
        let mut fresh = false;
        if force && !group.pel.contains_key(&id) {
            let (stored, _) = group.consumer_named(&consumer, 0);
            if let Some(c) = group.consumers.get_mut(&stored) {
                c.pel.insert(id);
            }
            // Created delivered once (Redis's `streamCreateNACK`), then counted again
            // below as any claim is: FORCE alone leaves 2, with JUSTID 1.
            group.pel.insert(
                id,
                Nack {
                    delivery_time: 0,
                    delivery_count: 1,
                    consumer: stored,
                },
            );
            fresh = true;
        }
        let Some(nack) = group.pel.get(&id) else {
            continue;
        };
        if !fresh && min_idle > 0 && now - (nack.delivery_time as i64) < min_idle {
            continue;
        }
        let Some(nack) = claim_to(group, id, &consumer, now as u64) else {
            continue;
        };
        nack.delivery_time = delivery as u64;
        if retry >= 0 {
            nack.delivery_count = retry as u64;
        } else if !justid {
            nack.delivery_count += 1;
        }
        let form = rewrite::stream_claim(key, &group_name, id, nack, position);
        propagate.push(form);
        claimed.push(id);
    }
    if moved && propagate.is_empty() {
        propagate.push(rewrite::stream_group_position(key, &group_name, group));
    }
    let created = !had_consumer && group.consumers.contains_key(&consumer[..]);
    // One change an entry claimed or dropped, or the group's move alone, as Redis
    // counts them (a consumer's creation counted itself).
    super::streams::metadata_changed(propagate.len());
    let Some(stream) = super::streams::stream_again(&mut shard, key) else {
        return Ok(());
    };
    encode::write_array_len(ctx.out, claimed.len());
    for id in claimed {
        match (justid, stream.get(&id)) {
            (false, Some(fields)) => write_entry(ctx.out, id, fields),
            _ => write_id(ctx.out, id),
        }
    }
    drop(shard);
    crate::repl::propagate_instead(ctx, propagate);
    if created {
        let db = ctx.client.db;
        keyspace_event(ctx, NotifyClass::Stream, "xgroup-createconsumer", db, key);
    }
    Ok(())
}

fn xautoclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    const ATTEMPTS_FACTOR: i64 = 10;
    const ID_BYTES: i64 = 16;
    let key = &args[1];
    let mut shard = ctx.lock(key);
    // Looked up first, refused for its type only once the arguments parsed, as in Redis.
    let found = as_read(|| stream_mut(&mut shard, key))
        .map(|s| s.is_some_and(|s| s.groups.contains_key(&args[2][..])));
    let min_idle = int(&args[4])
        .map_err(|_| CmdError::Static("ERR Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0);
    let start = interval(&args[5], true)?;
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(&args[j], "count") && more > 0 {
            j += 1;
            // Redis bounds it by what its reply's ID array can hold (16 bytes an ID)
            // and words a bad number as an out-of-range one.
            count = match int(&args[j]) {
                Ok(n) if (1..=i64::MAX / ID_BYTES.max(ATTEMPTS_FACTOR)).contains(&n) => n,
                _ => return Err(CmdError::Static("ERR COUNT must be > 0")),
            };
        } else if is(&args[j], "justid") {
            justid = true;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    if !found? {
        return Err(no_group(key, &args[2]));
    }
    let Some(stream) = super::streams::stream_again(&mut shard, key) else {
        return Ok(());
    };
    let now = now_ms();
    let consumer = args[3].clone();
    let mut attempts = count * ATTEMPTS_FACTOR;
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut cursor = start;
    let mut next = StreamId::MIN;
    // The entries the attempts can reach, and the one after them (the next cursor): not
    // the whole pending list, which may hold millions.
    let reach = usize::try_from(attempts)
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    let pending: Vec<StreamId> = {
        let Some(group) = stream.groups.get(&args[2][..]) else {
            return Ok(());
        };
        group
            .pel
            .range(start..)
            .map(|(k, _)| *k)
            .take(reach)
            .collect()
    };
    let exists: Vec<bool> = pending.iter().map(|id| stream.get(id).is_some()).collect();
    let Some(group) = stream.groups.get_mut(&args[2][..]) else {
        return Ok(());
    };
    let had_consumer = group.consumers.contains_key(&consumer[..]);
    let mut propagate = Vec::new();
    let position = group.last_id;
    let mut i = 0;
    while attempts > 0 && count > 0 && i < pending.len() {
        attempts -= 1;
        let id = pending[i];
        i += 1;
        cursor = id;
        if !exists[i - 1] {
            if let Some(nack) = group.pel.remove(&id) {
                if let Some(c) = group.consumers.get_mut(&nack.consumer) {
                    c.pel.remove(&id);
                }
                let form = rewrite::stream_claim(key, &args[2], id, &nack, position);
                propagate.push(form);
            }
            deleted.push(id);
            // Redis counts a deleted entry against COUNT (it bounds the reply size).
            count -= 1;
            continue;
        }
        let Some(nack) = group.pel.get(&id) else {
            continue;
        };
        if min_idle > 0 && (now as i64 - nack.delivery_time as i64) < min_idle {
            continue;
        }
        let Some(nack) = claim_to(group, id, &consumer, now) else {
            continue;
        };
        nack.delivery_time = now;
        if !justid {
            nack.delivery_count += 1;
        }
        let form = rewrite::stream_claim(key, &args[2], id, nack, position);
        propagate.push(form);
        claimed.push(id);
        count -= 1;
    }
    if let Some(id) = pending.get(i) {
        next = *id;
    }
    let _ = cursor;
    let created = !had_consumer && group.consumers.contains_key(&consumer[..]);
    // One change an entry claimed or dropped, or the group's move alone, as Redis
    // counts them (a consumer's creation counted itself).
    super::streams::metadata_changed(propagate.len());
    let Some(stream) = super::streams::stream_again(&mut shard, key) else {
        return Ok(());
    };
    let out = &mut *ctx.out;
    encode::write_array_len(out, 3);
    write_id(out, next);
    encode::write_array_len(out, claimed.len());
    for id in claimed {
        match (justid, stream.get(&id)) {
            (false, Some(fields)) => write_entry(out, id, fields),
            _ => write_id(out, id),
        }
    }
    encode::write_array_len(out, deleted.len());
    for id in deleted {
        write_id(out, id);
    }
    drop(shard);
    crate::repl::propagate_instead(ctx, propagate);
    if created {
        let db = ctx.client.db;
        keyspace_event(ctx, NotifyClass::Stream, "xgroup-createconsumer", db, key);
    }
    Ok(())
}

fn with_stream<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(&mut Stream, &mut BytesMut, Protocol) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let Some(stream) = stream_mut(&mut shard, key)? else {
        return Err(CmdError::Static("ERR no such key"));
    };
    f(stream, ctx.out, proto)
}

fn field(out: &mut BytesMut, name: &str) {
    encode::write_bulk(out, name.as_bytes());
}

fn entry_or_null(
    out: &mut BytesMut,
    proto: Protocol,
    entry: Option<(StreamId, crate::store::stream::Entry<'_>)>,
) {
    match entry {
        Some((id, fields)) => write_entry(out, id, fields),
        None => encode::write_null_bulk(out, proto),
    }
}

/// XINFO STREAM's options, `[FULL [COUNT n]]`: whether FULL, and the COUNT (10 by
/// default or when negative, 0 for all).
fn xinfo_stream_options(args: &[Bytes]) -> Result<(bool, i64), CmdError> {
    match &args[3..] {
        [] => Ok((false, 10)),
        [full] if is(full, "full") => Ok((true, 10)),
        [full, count, n] if is(full, "full") && is(count, "count") => {
            let n = int(n)?;
            Ok((true, if n < 0 { 10 } else { n }))
        }
        _ => Err(super::reply::subcommand_syntax("XINFO", &args[1])),
    }
}

fn xinfo_stream(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = args[2].clone();
    // As Redis: the key is looked up before the options are read.
    with_stream(ctx, &key, |s, out, proto| {
        let (full, count) = xinfo_stream_options(args)?;
        encode::write_map_len(out, proto, if full { 9 } else { 10 });
        field(out, "length");
        encode::write_integer(out, s.len() as i64);
        field(out, "radix-tree-keys");
        encode::write_integer(out, s.node_count() as i64);
        field(out, "radix-tree-nodes");
        encode::write_integer(out, s.radix_tree_nodes() as i64);
        field(out, "last-generated-id");
        write_id(out, s.last_id);
        field(out, "max-deleted-entry-id");
        write_id(out, s.max_deleted_id);
        field(out, "entries-added");
        encode::write_integer(out, s.entries_added as i64);
        field(out, "recorded-first-entry-id");
        write_id(out, s.first_id());
        if !full {
            field(out, "groups");
            encode::write_integer(out, s.groups.len() as i64);
            field(out, "first-entry");
            entry_or_null(out, proto, s.first_entry());
            field(out, "last-entry");
            entry_or_null(out, proto, s.last_entry());
            return Ok(());
        }
        let limit = if count == 0 {
            usize::MAX
        } else {
            count as usize
        };
        field(out, "entries");
        let mut entries = Vec::with_capacity(super::streams::entries_capacity(limit, s));
        entries.extend(s.range(StreamId::MIN, StreamId::MAX).take(limit));
        encode::write_array_len(out, entries.len());
        for (id, fields) in entries {
            write_entry(out, id, fields);
        }
        field(out, "groups");
        encode::write_array_len(out, s.groups.len());
        for (name, g) in &s.groups {
            encode::write_map_len(out, proto, 7);
            field(out, "name");
            encode::write_bulk(out, name);
            field(out, "last-delivered-id");
            write_id(out, g.last_id);
            field(out, "entries-read");
            match super::streams::entries_read_of(g.entries_read) {
                Some(n) => encode::write_integer(out, n),
                None => encode::write_null_bulk(out, proto),
            }
            field(out, "lag");
            match s.group_lag(g) {
                Some(n) => encode::write_integer(out, n),
                None => encode::write_null_bulk(out, proto),
            }
            field(out, "pel-count");
            encode::write_integer(out, g.pel.len() as i64);
            field(out, "pending");
            let pel: Vec<_> = g.pel.iter().take(limit).collect();
            encode::write_array_len(out, pel.len());
            for (id, nack) in pel {
                encode::write_array_len(out, 4);
                write_id(out, *id);
                encode::write_bulk(out, &nack.consumer);
                encode::write_integer(out, nack.delivery_time as i64);
                encode::write_integer(out, nack.delivery_count as i64);
            }
            field(out, "consumers");
            encode::write_array_len(out, g.consumers.len());
            for (cname, c) in &g.consumers {
                encode::write_map_len(out, proto, 4);
                field(out, "name");
                encode::write_bulk(out, cname);
                field(out, "seen-time");
                encode::write_integer(out, c.seen_time as i64);
                field(out, "pel-count");
                encode::write_integer(out, c.pel.len() as i64);
                field(out, "pending");
                let pel: Vec<_> = c.pel.iter().take(limit).collect();
                encode::write_array_len(out, pel.len());
                for id in pel {
                    encode::write_array_len(out, 3);
                    write_id(out, *id);
                    let nack = g.pel.get(id);
                    encode::write_integer(out, nack.map_or(0, |n| n.delivery_time as i64));
                    encode::write_integer(out, nack.map_or(0, |n| n.delivery_count as i64));
                }
            }
        }
        Ok(())
    })
}

fn xinfo_groups(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = args[2].clone();
    with_stream(ctx, &key, |s, out, proto| {
        encode::write_array_len(out, s.groups.len());
        for (name, g) in &s.groups {
            encode::write_map_len(out, proto, 6);
            field(out, "name");
            encode::write_bulk(out, name);
            field(out, "consumers");
            encode::write_integer(out, g.consumers.len() as i64);
            field(out, "pending");
            encode::write_integer(out, g.pel.len() as i64);
            field(out, "last-delivered-id");
            write_id(out, g.last_id);
            field(out, "entries-read");
            match super::streams::entries_read_of(g.entries_read) {
                Some(n) => encode::write_integer(out, n),
                None => encode::write_null_bulk(out, proto),
            }
            field(out, "lag");
            match s.group_lag(g) {
                Some(n) => encode::write_integer(out, n),
                None => encode::write_null_bulk(out, proto),
            }
        }
        Ok(())
    })
}

fn xinfo_consumers(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = args[2].clone();
    let group = args[3].clone();
    with_stream(ctx, &key, |s, out, proto| {
        let Some(g) = s.groups.get(&group[..]) else {
            return Err(no_such_group_for_key(&group, &key));
        };
        let now = now_ms() as i64;
        encode::write_array_len(out, g.consumers.len());
        for (name, c) in &g.consumers {
            encode::write_map_len(out, proto, 3);
            field(out, "name");
            encode::write_bulk(out, name);
            field(out, "pending");
            encode::write_integer(out, c.pel.len() as i64);
            field(out, "idle");
            encode::write_integer(out, (now - c.seen_time as i64).max(0));
        }
        Ok(())
    })
}

fn xinfo_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    help(
        ctx.out,
        &[
            "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
            "HELP",
            "    Prints this help.",
        ],
    );
    Ok(())
}
