//! Stream commands (Redis's `t_stream.c`): XADD XRANGE XREVRANGE XLEN XDEL XTRIM XREAD
//! XREADGROUP XSETID, and the id and trimming parsers they share with the consumer-group
//! commands in `stream_groups`.

use bytes::{Bytes, BytesMut};
use redline_resp::{encode, Protocol};

use super::args::{int, is};
use super::blocking::KeyShards;
use super::reply::Piece::{Arg, Text};
use super::reply::{wrong_arity, CmdError, CmdResult, SYNTAX, WRONG_TYPE};
use super::{Ctx, Handler};
use crate::blocking::StreamRead;
use crate::notify::{keyspace_event, NotifyClass};
use crate::repl::rewrite;
use crate::store::lookups::as_read;
use crate::store::ready::WaitKind;
use crate::store::stream::{
    Entry, Nack, NodeLimits, Stream, StreamId, TrimStrategy, ENTRIES_READ_INVALID,
};
use crate::store::{now_ms, Shard, Value};

/// COUNT of a blocked read that gave none (Redis's `XREAD_BLOCKED_DEFAULT_COUNT`).
pub const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("xadd", xadd),
    ("xrange", xrange),
    ("xrevrange", xrevrange),
    ("xlen", xlen),
    ("xdel", xdel),
    ("xtrim", xtrim),
    ("xread", xread),
    ("xreadgroup", xreadgroup),
    ("xsetid", xsetid),
];

/// A malformed id.
pub const INVALID_ID: CmdError =
    CmdError::Static("ERR Invalid stream ID specified as stream command argument");

/// `n` changes to a stream's groups, consumers, pending entries or ids (XGROUP, XACK,
/// XCLAIM, XREADGROUP, XSETID): Redis counts them in `dirty` (one per entry acked or
/// claimed) but does not signal the key as modified, so they break no WATCH and
/// invalidate no tracked key. Only XADD, XDEL, XTRIM and a stream's creation do.
pub fn metadata_changed(n: usize) {
    crate::store::dirty::mark_n(n as u64);
}

/// The stream at `key`: `Ok(None)` when missing, WRONGTYPE when not a stream.
pub fn stream_mut<'s>(
    shard: &'s mut Shard,
    key: &[u8],
) -> Result<Option<&'s mut Stream>, CmdError> {
    match shard.get(key) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::Stream(s) => Ok(Some(s)),
            _ => Err(WRONG_TYPE),
        },
    }
}

/// The stream at `key` a command has already looked up (its use recorded then): found
/// again without recording another, as Redis keeps the object it found.
pub fn stream_again<'s>(shard: &'s mut Shard, key: &[u8]) -> Option<&'s mut Stream> {
    match &mut shard.get_untouched_quietly(key)?.value {
        Value::Stream(s) => Some(s),
        _ => None,
    }
}

/// An id where `-` and `+` are not allowed (Redis's `streamParseStrictIDOrReply`).
pub fn strict_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, CmdError> {
    StreamId::parse(arg, missing_seq).ok_or(INVALID_ID)
}

/// An id where `-` and `+` mean the smallest and largest.
pub fn any_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, CmdError> {
    match arg {
        b"-" => Ok(StreamId::MIN),
        b"+" => Ok(StreamId::MAX),
        _ => strict_id(arg, missing_seq),
    }
}

/// A range bound: `-`, `+`, an id, or `(id` (exclusive), resolved to an inclusive id.
pub fn interval(arg: &[u8], start: bool) -> Result<StreamId, CmdError> {
    let missing_seq = if start { 0 } else { u64::MAX };
    match arg.strip_prefix(b"(") {
        Some(rest) if arg.len() > 1 => {
            let id = strict_id(rest, missing_seq)?;
            if start {
                id.incr()
                    .ok_or(CmdError::Static("ERR invalid start ID for the interval"))
            } else {
                id.decr()
                    .ok_or(CmdError::Static("ERR invalid end ID for the interval"))
            }
        }
        _ => any_id(arg, missing_seq),
    }
}

/// Writes an id as a bulk string.
pub fn write_id(out: &mut BytesMut, id: StreamId) {
    // `<ms>-<seq>` on the stack: two u64s of at most 20 digits each.
    let (mut ms, mut seq) = (itoa::Buffer::new(), itoa::Buffer::new());
    let (ms, seq) = (ms.format(id.ms).as_bytes(), seq.format(id.seq).as_bytes());
    let mut text = [0u8; 41];
    let len = ms.len() + 1 + seq.len();
    text[..ms.len()].copy_from_slice(ms);
    text[ms.len()] = b'-';
    text[ms.len() + 1..len].copy_from_slice(seq);
    encode::write_bulk(out, &text[..len]);
}

/// Writes `[id, [field, value, ...]]`.
pub fn write_entry(out: &mut BytesMut, id: StreamId, fields: Entry<'_>) {
    encode::write_array_len(out, 2);
    write_id(out, id);
    encode::write_array_len(out, fields.len());
    for f in fields.iter() {
        encode::write_bulk(out, f);
    }
}

/// Room for the entries a read of at most `limit` collects, sized up front: a vector
/// grown from empty reallocates into sizes that make glibc consolidate its free lists
/// (3k instructions of a 10-entry XREADGROUP). Capped: a read without COUNT of a long
/// stream that finds a few new entries must not reserve for all of them.
pub fn entries_capacity(limit: usize, stream: &Stream) -> usize {
    limit.min(stream.len()).min(128)
}

/// The node limits from the configuration.
fn node_limits(ctx: &Ctx<'_>) -> NodeLimits {
    let hot = &ctx.shared.hot;
    NodeLimits {
        max_entries: hot.stream_node_max_entries().max(0) as usize,
        max_bytes: hot.stream_node_max_bytes().max(0) as usize,
    }
}

/// Parsed XADD / XTRIM options.
#[derive(Debug, Default)]
struct AddTrimArgs {
    strategy: Option<TrimStrategy>,
    approx: bool,
    limit: i64,
    no_mkstream: bool,
    /// XADD's explicit id and whether its sequence was given.
    id: Option<(StreamId, bool)>,
    /// Index of the id argument (XADD).
    id_index: usize,
}

/// Redis's `streamParseAddOrTrimArgsOrReply`.
fn parse_add_trim(ctx: &Ctx<'_>, args: &[Bytes], xadd: bool) -> Result<AddTrimArgs, CmdError> {
    const BOTH: CmdError = CmdError::Static(
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
    );
    let mut parsed = AddTrimArgs::default();
    let mut limit_given = false;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = &args[i][..];
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if parsed.strategy.is_some() {
                return Err(BOTH);
            }
            parsed.approx = false;
            let next = &args[i + 1][..];
            if more >= 2 && next == b"~" {
                parsed.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let value = &args[i + 1];
            if is(opt, "maxlen") {
                let n = int(value)?;
                if n < 0 {
                    return Err(CmdError::Static("ERR The MAXLEN argument must be >= 0."));
                }
                parsed.strategy = Some(TrimStrategy::MaxLen(n as u64));
            } else {
                parsed.strategy = Some(TrimStrategy::MinId(strict_id(value, 0)?));
            }
            i += 1;
        } else if is(opt, "limit") && more > 0 {
            let n = int(&args[i + 1])?;
            if n < 0 {
                return Err(CmdError::Static("ERR The LIMIT argument must be >= 0."));
            }
            parsed.limit = n;
            limit_given = true;
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            parsed.no_mkstream = true;
        } else if xadd {
            parsed.id = Some(xadd_id(opt)?);
            break;
        } else {
            return Err(SYNTAX);
        }
        i += 1;
    }
    parsed.id_index = i;
    if parsed.limit != 0 && parsed.strategy.is_none() {
        return Err(CmdError::Static(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && parsed.strategy.is_none() {
        return Err(CmdError::Static(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if limit_given {
        if !parsed.approx {
            return Err(CmdError::Static(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
    } else if parsed.approx {
        let per_node = node_limits(ctx).max_entries as i64;
        parsed.limit = (100 * per_node).clamp(1, 1_000_000);
        if per_node <= 0 {
            parsed.limit = 10_000;
        }
    } else {
        parsed.limit = 0;
    }
    Ok(parsed)
}

/// XADD's explicit id: `ms-seq`, `ms` or `ms-*` (sequence chosen by the server).
fn xadd_id(arg: &[u8]) -> Result<(StreamId, bool), CmdError> {
    if let Some(ms) = arg.strip_suffix(b"-*") {
        let id = strict_id(ms, 0)?;
        if ms.contains(&b'-') {
            return Err(INVALID_ID);
        }
        return Ok((id, false));
    }
    Ok((strict_id(arg, 0)?, true))
}

/// The id XADD assigns, or Redis's error when it cannot.
fn next_id(stream: &Stream, given: Option<(StreamId, bool)>) -> Result<StreamId, CmdError> {
    const SMALLER: CmdError = CmdError::Static(
        "ERR The ID specified in XADD is equal or smaller than the target stream top item",
    );
    let last = stream.last_id;
    let id = match given {
        None => {
            let now = now_ms();
            if now > last.ms {
                StreamId::new(now, 0)
            } else {
                last.incr().ok_or(SMALLER)?
            }
        }
        Some((id, true)) => id,
        Some((id, false)) => {
            if id.ms == last.ms {
                if last.seq == u64::MAX {
                    return Err(SMALLER);
                }
                StreamId::new(id.ms, last.seq + 1)
            } else {
                StreamId::new(id.ms, 0)
            }
        }
    };
    if id <= last {
        return Err(SMALLER);
    }
    Ok(id)
}

/// Most bytes an entry's fields and values may hold together: Redis refuses more, as a
/// listpack cannot hold it (`STREAM_LISTPACK_MAX_SIZE`, 1 GiB).
const ENTRY_MAX_BYTES: usize = 1 << 30;

/// Whether an entry of these fields and values is more than Redis stores.
fn entry_too_large(fields: &[Bytes]) -> bool {
    fields.iter().map(Bytes::len).sum::<usize>() > ENTRY_MAX_BYTES
}

fn xadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let parsed = parse_add_trim(ctx, args, true)?;
    let field_pos = parsed.id_index + 1;
    if args.len() < field_pos + 2 || (args.len() - field_pos) % 2 == 1 {
        return Err(wrong_arity("xadd"));
    }
    if let Some((id, true)) = parsed.id {
        if id.is_zero() {
            return Err(CmdError::Static(
                "ERR The ID specified in XADD must be greater than 0-0",
            ));
        }
    }
    let limits = node_limits(ctx);
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    if stream_mut(&mut shard, key)?.is_none() && parsed.no_mkstream {
        encode::write_null_bulk(ctx.out, proto);
        return Ok(());
    }
    // Found above (one use recorded) or created now.
    let entry = shard.get_or_insert_with(key, || Value::Stream(Box::default()));
    let Value::Stream(stream) = &mut entry.value else {
        return Err(WRONG_TYPE);
    };
    if stream.last_id == StreamId::MAX {
        drop_empty(&mut shard, key);
        return Err(CmdError::Static(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let id = match next_id(stream, parsed.id) {
        Ok(id) => id,
        Err(e) => {
            drop_empty(&mut shard, key);
            return Err(e);
        }
    };
    if entry_too_large(&args[field_pos..]) {
        drop_empty(&mut shard, key);
        return Err(CmdError::Static("ERR Elements are too large to be stored"));
    }
    stream.append(id, args[field_pos..].iter().map(|f| &f[..]), limits);
    let trimmed = parsed
        .strategy
        .is_some_and(|s| stream.trim(s, parsed.approx, parsed.limit as usize) > 0);
    shard.touch(key);
    // Looked at while the shard is held: a reader that blocked before is counted.
    if ctx.shared.blocking.may_be_waited_on(key) {
        crate::store::ready::record(ctx.client.db, key, WaitKind::Stream);
    }
    drop(shard);
    write_id(ctx.out, id);
    let db = ctx.client.db;
    keyspace_event(ctx, NotifyClass::Stream, "xadd", db, key);
    if trimmed {
        keyspace_event(ctx, NotifyClass::Stream, "xtrim", db, key);
    }
    Ok(())
}

/// Removes a stream this command created and then failed to fill (Redis leaves it
/// empty, unpropagated, so its replicas lack it): looked at, not used, and no change.
fn drop_empty(shard: &mut Shard, key: &[u8]) {
    if let Some(s) = stream_again(shard, key) {
        if s.entries_added == 0 && s.groups.is_empty() && s.last_id.is_zero() {
            shard.discard(key);
        }
    }
}

fn range_cmd(ctx: &mut Ctx<'_>, args: &[Bytes], rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let start = interval(start_arg, true)?;
    let end = interval(end_arg, false)?;
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if is(&args[j], "count") && j + 1 < args.len() {
            count = int(&args[j + 1])?.max(0);
            j += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    let key = &args[1];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    let Some(stream) = stream_mut(&mut shard, key)? else {
        encode::write_array_len(ctx.out, 0);
        return Ok(());
    };
    if count == 0 {
        encode::write_null_array(ctx.out, proto);
        return Ok(());
    }
    let limit = if count < 0 {
        usize::MAX
    } else {
        count as usize
    };
    let mut items = Vec::with_capacity(entries_capacity(limit, stream));
    if rev {
        items.extend(stream.range(start, end).rev().take(limit));
    } else {
        items.extend(stream.range(start, end).take(limit));
    }
    encode::write_array_len(ctx.out, items.len());
    for (id, fields) in items {
        write_entry(ctx.out, id, fields);
    }
    Ok(())
}

fn xrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_cmd(ctx, args, false)
}

fn xrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_cmd(ctx, args, true)
}

fn xlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let len = stream_mut(&mut shard, key)?.map_or(0, |s| s.len());
    encode::write_integer(ctx.out, len as i64);
    Ok(())
}

fn xdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let mut deleted = 0;
    // As Redis: the key's type is checked before the IDs are parsed, and a missing key
    // answers 0 whatever the IDs.
    if let Some(stream) = stream_mut(&mut shard, key)? {
        let ids = args[2..]
            .iter()
            .map(|a| strict_id(a, 0))
            .collect::<Result<Vec<_>, _>>()?;
        for id in ids {
            if stream.delete(&id) {
                deleted += 1;
                if id > stream.max_deleted_id {
                    stream.max_deleted_id = id;
                }
            }
        }
    }
    if deleted > 0 {
        shard.touch(key);
        crate::store::dirty::mark_rest(deleted as usize);
    }
    drop(shard);
    encode::write_integer(ctx.out, deleted);
    if deleted > 0 {
        let db = ctx.client.db;
        keyspace_event(ctx, NotifyClass::Stream, "xdel", db, key);
    }
    Ok(())
}

fn xtrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // As Redis: the arguments are checked before the key is looked up.
    let parsed = parse_add_trim(ctx, args, false)?;
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let mut removed = 0;
    if let (Some(stream), Some(strategy)) = (stream_mut(&mut shard, key)?, parsed.strategy) {
        removed = stream.trim(strategy, parsed.approx, parsed.limit as usize);
    }
    if removed > 0 {
        shard.touch(key);
        crate::store::dirty::mark_rest(removed);
    }
    drop(shard);
    encode::write_integer(ctx.out, removed as i64);
    if removed > 0 {
        let db = ctx.client.db;
        keyspace_event(ctx, NotifyClass::Stream, "xtrim", db, key);
    }
    Ok(())
}

/// XREAD / XREADGROUP arguments.
#[derive(Debug, Clone)]
pub struct ReadArgs {
    /// BLOCK timeout in ms, if given.
    pub block: Option<i64>,
    /// COUNT (0 = all).
    pub count: usize,
    /// NOACK.
    pub noack: bool,
    /// GROUP name and consumer.
    pub group: Option<(Bytes, Bytes)>,
    /// The stream keys.
    pub keys: Vec<Bytes>,
    /// Their ids as given.
    pub ids: Vec<Bytes>,
}

fn parse_read(args: &[Bytes], group_cmd: bool) -> Result<ReadArgs, CmdError> {
    let mut parsed = ReadArgs {
        block: None,
        count: 0,
        noack: false,
        group: None,
        keys: Vec::new(),
        ids: Vec::new(),
    };
    let mut streams_at = None;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let o = &args[i];
        if is(o, "block") && more > 0 {
            i += 1;
            parsed.block = Some(super::args::timeout_ms(&args[i])?);
        } else if is(o, "count") && more > 0 {
            i += 1;
            parsed.count = int(&args[i])?.max(0) as usize;
        } else if is(o, "streams") && more > 0 {
            let rest = args.len() - (i + 1);
            if rest % 2 != 0 {
                return Err(CmdError::Static("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."));
            }
            streams_at = Some(i + 1);
            break;
        } else if is(o, "group") && more >= 2 {
            if !group_cmd {
                return Err(CmdError::Static(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            parsed.group = Some((args[i + 1].clone(), args[i + 2].clone()));
            i += 2;
        } else if is(o, "noack") {
            if !group_cmd {
                return Err(CmdError::Static(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            parsed.noack = true;
        } else {
            return Err(SYNTAX);
        }
        i += 1;
    }
    let Some(at) = streams_at else {
        return Err(SYNTAX);
    };
    if group_cmd && parsed.group.is_none() {
        return Err(CmdError::Static("ERR Missing GROUP option for XREADGROUP"));
    }
    let n = (args.len() - at) / 2;
    parsed.keys = args[at..at + n].to_vec();
    parsed.ids = args[at + n..].to_vec();
    Ok(parsed)
}

/// Where each stream is read from: after `id`, or new entries of the group (`>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFrom {
    /// Entries after this id.
    After(StreamId),
    /// XREADGROUP `>`.
    New,
}

/// Validates the ids and resolves `$` (before any reply is written).
fn resolve_ids(ctx: &Ctx<'_>, parsed: &ReadArgs) -> Result<Vec<ReadFrom>, CmdError> {
    let mut from = Vec::with_capacity(parsed.keys.len());
    for (key, id) in parsed.keys.iter().zip(&parsed.ids) {
        let mut shard = ctx.lock(key);
        let stream = stream_mut(&mut shard, key)?;
        if let Some((group, _)) = &parsed.group {
            if !stream
                .as_ref()
                .is_some_and(|s| s.groups.contains_key(group))
            {
                return Err(super::reply::error_from(&[
                    Text("NOGROUP No such key '"),
                    Arg(key, usize::MAX),
                    Text("' or consumer group '"),
                    Arg(group, usize::MAX),
                    Text("' in XREADGROUP with GROUP option"),
                ]));
            }
        }
        if &id[..] == b"$" {
            if parsed.group.is_some() {
                return Err(CmdError::Static("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."));
            }
            from.push(ReadFrom::After(stream.map_or(StreamId::MIN, |s| s.last_id)));
        } else if &id[..] == b">" {
            if parsed.group.is_none() {
                return Err(CmdError::Static("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."));
            }
            from.push(ReadFrom::New);
        } else {
            let after = strict_id(id, 0)?;
            // Redis spells `>` as the largest ID, so a group read naming that ID
            // explicitly reads new entries too.
            from.push(if after == StreamId::MAX && parsed.group.is_some() {
                ReadFrom::New
            } else {
                ReadFrom::After(after)
            });
        }
    }
    Ok(from)
}

/// Serves what is available now: writes the whole reply and returns `true`, or writes
/// nothing and returns `false` when no stream has anything to give. A group read adds
/// what it changed to `propagate`, in the replication stream's form (`None`: nothing
/// is propagated now, so nothing is built).
#[allow(clippy::too_many_arguments)]
pub fn serve_read(
    shards: &mut dyn KeyShards,
    proto: Protocol,
    out: &mut BytesMut,
    keys: &[Bytes],
    from: &[ReadFrom],
    group: Option<&(Bytes, Bytes)>,
    count: usize,
    noack: bool,
    mut propagate: Option<&mut Vec<Vec<Bytes>>>,
) -> bool {
    // Room for a typical read up front: grown from empty, each entry's bulk strings
    // reallocated it again and again (3k instructions of a 10-entry read).
    let mut body = BytesMut::with_capacity(1024);
    let mut served = 0;
    for (key, from) in keys.iter().zip(from) {
        let shard = shards.shard_of(key);
        let Ok(Some(stream)) = stream_mut(shard, key) else {
            continue;
        };
        let wrote = match (group, *from) {
            (None, ReadFrom::After(after)) => {
                read_after(stream, &mut body, proto, key, after, count, false)
            }
            (None, ReadFrom::New) => false,
            (Some((group, consumer)), from) => read_group(
                stream,
                &mut body,
                proto,
                (key, group, consumer),
                from,
                (count, noack, false),
                propagate.as_deref_mut(),
            ),
        };
        if wrote {
            served += 1;
            // A group's read moves its cursor and pending entries (one change a stream,
            // as Redis counts it); a plain XREAD changes nothing.
            if group.is_some() {
                metadata_changed(1);
            }
        }
    }
    if served == 0 {
        return false;
    }
    if proto == Protocol::Resp2 {
        encode::write_array_len(out, served);
    } else {
        encode::write_map_len(out, proto, served);
    }
    out.extend_from_slice(&body);
    true
}

/// One stream of XREAD: `[key, entries after `after`]` in `body`, and `true`; `false`
/// (nothing written) when there are none, unless `even_none`.
fn read_after(
    stream: &Stream,
    body: &mut BytesMut,
    proto: Protocol,
    key: &Bytes,
    after: StreamId,
    count: usize,
    even_none: bool,
) -> bool {
    let limit = if count == 0 { usize::MAX } else { count };
    let entries = entries_after(stream, after, limit);
    if entries.is_empty() && !even_none {
        return false;
    }
    write_stream_read(body, proto, key, &entries);
    true
}

/// The entries of `stream` after `after`, at most `limit`.
fn entries_after(stream: &Stream, after: StreamId, limit: usize) -> Vec<(StreamId, Entry<'_>)> {
    let mut entries = Vec::with_capacity(entries_capacity(limit, stream));
    if let Some(start) = after.incr() {
        entries.extend(stream.range(start, StreamId::MAX).take(limit));
    }
    entries
}

/// One stream's part of a read's reply: `[key, entries]` (in RESP3 a map's key and
/// value).
fn write_stream_read(
    body: &mut BytesMut,
    proto: Protocol,
    key: &Bytes,
    entries: &[(StreamId, Entry<'_>)],
) {
    if proto == Protocol::Resp2 {
        encode::write_array_len(body, 2);
    }
    encode::write_bulk(body, key);
    encode::write_array_len(body, entries.len());
    for &(id, fields) in entries {
        write_entry(body, id, fields);
    }
}

/// Serves one blocked reader on `key`, signalled (see [`crate::store::ready`]), if the
/// stream's last ID is past the one it waits after (a group reader: its group's last
/// delivered): `Ok(true)` with the reply in `out`. As on Redis, the entries since may
/// all be gone (an XADD then an XDEL in one transaction, XADD ... MAXLEN 0, a stream
/// copied in): the reply then holds none. An error ends the wait of a group reader
/// whose stream or group went away, as Redis's `serveClientsBlockedOnStreamKey` does.
#[allow(clippy::too_many_arguments)]
pub fn serve_blocked(
    shards: &mut dyn KeyShards,
    proto: Protocol,
    out: &mut BytesMut,
    key: &Bytes,
    from: ReadFrom,
    group: Option<&(Bytes, Bytes)>,
    count: usize,
    noack: bool,
    propagate: Option<&mut Vec<Vec<Bytes>>>,
) -> Result<bool, CmdError> {
    if let Some((name, _)) = group {
        // A check, not a use of the key: the read below is Redis's one lookup.
        match stream_again(shards.shard_of(key), key) {
            Some(s) if s.groups.contains_key(name) => {}
            Some(_) => {
                return Err(CmdError::Static(
                    "NOGROUP the consumer group this client was blocked on no longer exists",
                ))
            }
            _ => {
                return Err(CmdError::Static(
                    "UNBLOCKED the stream key no longer exists",
                ))
            }
        }
    }
    let Ok(Some(stream)) = stream_mut(shards.shard_of(key), key) else {
        return Ok(false);
    };
    let waits_after = match (group, from) {
        (Some((name, _)), _) => stream.groups.get(name).map(|g| g.last_id),
        (None, ReadFrom::After(after)) => Some(after),
        (None, ReadFrom::New) => None,
    };
    let Some(after) = waits_after.filter(|after| stream.last_id > *after) else {
        return Ok(false);
    };
    // Served for sure from here (the group is there, and an empty read answers too):
    // the reply goes straight into `out`.
    if proto == Protocol::Resp2 {
        encode::write_array_len(out, 1);
    } else {
        encode::write_map_len(out, proto, 1);
    }
    match group {
        Some((name, consumer)) => read_group(
            stream,
            out,
            proto,
            (key, name, consumer),
            ReadFrom::New,
            (count, noack, true),
            propagate,
        ),
        None => read_after(stream, out, proto, key, after, count, true),
    };
    Ok(true)
}

/// One stream of XREADGROUP (`options`: COUNT, NOACK, and whether to answer a read of
/// new entries that found none); `false` when it has nothing to give (and wrote
/// nothing). New entries propagate as Redis 7.0 propagates them: an XCLAIM per
/// delivered entry, or with NOACK the group's new position (and the consumer if the
/// read created it). Re-reading history propagates nothing.
fn read_group(
    stream: &mut Stream,
    body: &mut BytesMut,
    proto: Protocol,
    (key, group_name, consumer_name): (&Bytes, &Bytes, &Bytes),
    from: ReadFrom,
    (count, noack, even_none): (usize, bool, bool),
    mut propagate: Option<&mut Vec<Vec<Bytes>>>,
) -> bool {
    let now = now_ms();
    let Some(group) = stream.groups.get(group_name) else {
        return false;
    };
    let last_id = group.last_id;
    let limit = if count == 0 { usize::MAX } else { count };
    match from {
        ReadFrom::After(after) => {
            // History: this consumer's pending entries after `after`.
            let Some(start) = after.incr() else {
                return false;
            };
            let ids: Vec<StreamId> = group
                .consumers
                .get(&consumer_name[..])
                .map(|c| c.pel.range(start..).take(limit).copied().collect())
                .unwrap_or_default();
            if proto == Protocol::Resp2 {
                encode::write_array_len(body, 2);
            }
            encode::write_bulk(body, key);
            encode::write_array_len(body, ids.len());
            for &id in &ids {
                match stream.get(&id) {
                    Some(fields) => write_entry(body, id, fields),
                    None => {
                        encode::write_array_len(body, 2);
                        write_id(body, id);
                        encode::write_null_array(body, proto);
                    }
                }
            }
            // The group was found above; the reply is written either way.
            let Some(group) = stream.groups.get_mut(group_name) else {
                return true;
            };
            let (stored, _) = group.consumer_named(consumer_name, 0);
            if let Some(c) = group.consumers.get_mut(&stored) {
                c.seen_time = now;
            }
            for id in ids {
                if let Some(nack) = group.pel.get_mut(&id) {
                    nack.delivery_time = now;
                    nack.delivery_count += 1;
                }
            }
            true
        }
        ReadFrom::New => {
            let entries = entries_after(stream, last_id, limit);
            if entries.is_empty() && !even_none {
                return false;
            }
            write_stream_read(body, proto, key, &entries);
            let items: Vec<StreamId> = entries.into_iter().map(|(id, _)| id).collect();
            for &id in &items {
                stream.advance_group(group_name, id);
            }
            let Some(group) = stream.groups.get_mut(&group_name[..]) else {
                return true;
            };
            let (stored, created) = group.consumer_named(consumer_name, now);
            if let Some(c) = group.consumers.get_mut(&stored) {
                c.seen_time = now;
            }
            if noack {
                if created {
                    if let Some(propagate) = propagate.as_deref_mut() {
                        propagate.push(rewrite::stream_consumer_created(
                            key,
                            group_name,
                            consumer_name,
                        ));
                    }
                }
                if let (Some(propagate), false) = (propagate, items.is_empty()) {
                    propagate.push(rewrite::stream_group_position(key, group_name, group));
                }
            } else {
                for id in &items {
                    if let Some(previous) = group.pel.insert(
                        *id,
                        Nack {
                            delivery_time: now,
                            delivery_count: 1,
                            consumer: stored.clone(),
                        },
                    ) {
                        if let Some(owner) = group.consumers.get_mut(&previous.consumer) {
                            owner.pel.remove(id);
                        }
                    }
                    if let Some(consumer) = group.consumers.get_mut(&consumer_name[..]) {
                        consumer.pel.insert(*id);
                    }
                    if let (Some(propagate), Some(nack)) =
                        (propagate.as_deref_mut(), group.pel.get(id))
                    {
                        // Each delivered entry moved the group to it.
                        propagate.push(rewrite::stream_claim(key, group_name, *id, nack, *id));
                    }
                }
            }
            true
        }
    }
}

/// Whether `consumer` of `group` exists on the stream at `key`.
pub fn has_consumer(
    shards: &mut dyn KeyShards,
    key: &[u8],
    (group, consumer): &(Bytes, Bytes),
) -> bool {
    matches!(stream_again(shards.shard_of(key), key),
        Some(s) if s.groups.get(group).is_some_and(|g| g.consumers.contains_key(&consumer[..])))
}

/// Whether `consumer` of `group` exists on each stream of `keys`.
fn consumers_exist(ctx: &Ctx<'_>, keys: &[Bytes], (group, consumer): &(Bytes, Bytes)) -> Vec<bool> {
    keys.iter()
        .map(|key| {
            let mut shard = ctx.lock(key);
            // Bookkeeping, not a use of the key.
            matches!(stream_again(&mut shard, key),
                Some(s) if s.groups.get(group).is_some_and(|g| g.consumers.contains_key(&consumer[..])))
        })
        .collect()
}

/// Announces the consumers a read created (`xgroup-createconsumer`, as Redis's
/// `streamCreateConsumer`).
fn notify_new_consumers(ctx: &Ctx<'_>, keys: &[Bytes], group: &(Bytes, Bytes), before: &[bool]) {
    let after = consumers_exist(ctx, keys, group);
    let db = ctx.client.db;
    for ((key, was), now) in keys.iter().zip(before).zip(after) {
        if !was && now {
            keyspace_event(ctx, NotifyClass::Stream, "xgroup-createconsumer", db, key);
        }
    }
}

fn read_generic(ctx: &mut Ctx<'_>, args: &[Bytes], group_cmd: bool) -> CmdResult {
    let parsed = parse_read(args, group_cmd)?;
    if parsed.block.is_some() && ctx.client.in_script {
        let name = if group_cmd { "xreadgroup" } else { "xread" };
        return Err(CmdError::Owned(format!(
            "ERR {name} command is not allowed with BLOCK option from scripts"
        )));
    }
    // Both lookups of each stream count as reads (`keymiss`, INFO's misses), for
    // XREADGROUP too, as Redis's `lookupKeyRead`s; the consumer checks do not.
    let from = as_read(|| resolve_ids(ctx, &parsed))?;
    let proto = ctx.proto();
    let existed = match &parsed.group {
        Some(group) => consumers_exist(ctx, &parsed.keys, group),
        None => Vec::new(),
    };
    let blocking = parsed.block.filter(|_| !ctx.nested);
    let served = match blocking {
        Some(ms) => {
            let read = StreamRead {
                from,
                group: parsed.group.clone(),
                count: parsed.count,
                noack: parsed.noack,
            };
            as_read(|| super::blocking::block_stream(ctx, &parsed.keys, read, ms))
        }
        None => {
            let mut locked = ctx.lock_keys(parsed.keys.iter().map(|k| &k[..]));
            let mut propagate = Vec::new();
            let record = group_cmd && crate::repl::propagates(ctx);
            let served = as_read(|| {
                serve_read(
                    &mut locked,
                    proto,
                    ctx.out,
                    &parsed.keys,
                    &from,
                    parsed.group.as_ref(),
                    parsed.count,
                    parsed.noack,
                    record.then_some(&mut propagate),
                )
            });
            if group_cmd {
                // Still under the streams' locks: the stream sees these before any
                // later change to them.
                crate::repl::propagate_instead(ctx, propagate);
            }
            served
        }
    };
    if let Some(group) = &parsed.group {
        notify_new_consumers(ctx, &parsed.keys, group, &existed);
    }
    if !served && blocking.is_none() {
        encode::write_null_array(ctx.out, proto);
    }
    Ok(())
}

fn xread(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    read_generic(ctx, args, false)
}

fn xreadgroup(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    read_generic(ctx, args, true)
}

fn xsetid(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let id = strict_id(&args[2], 0)?;
    let mut entries_added: Option<u64> = None;
    let mut max_deleted: Option<StreamId> = None;
    let mut i = 3;
    while i < args.len() {
        if is(&args[i], "entriesadded") && i + 1 < args.len() {
            let n = int(&args[i + 1])?;
            if n < 0 {
                return Err(CmdError::Static("ERR entries_added must be positive"));
            }
            entries_added = Some(n as u64);
            i += 2;
        } else if is(&args[i], "maxdeletedid") && i + 1 < args.len() {
            let m = strict_id(&args[i + 1], 0)?;
            if id < m {
                return Err(CmdError::Static(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
            max_deleted = Some(m);
            i += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let Some(stream) = stream_mut(&mut shard, key)? else {
        return Err(CmdError::Static("ERR no such key"));
    };
    if id < stream.last_id && !stream.is_empty() {
        if let Some((last, _)) = stream.last_entry() {
            if id < last {
                return Err(CmdError::Static(
                    "ERR The ID specified in XSETID is smaller than the target stream top item",
                ));
            }
        }
    }
    if let Some(n) = entries_added {
        if (stream.len() as u64) > n {
            return Err(CmdError::Static(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    stream.last_id = id;
    if let Some(n) = entries_added {
        stream.entries_added = n;
    }
    // MAXDELETEDID 0 leaves the recorded one as it is, as in Redis: 0-0 means "none
    // given" there.
    if let Some(m) = max_deleted.filter(|m| !m.is_zero()) {
        stream.max_deleted_id = m;
    }
    metadata_changed(1);
    drop(shard);
    super::reply::ok(ctx.out);
    let db = ctx.client.db;
    keyspace_event(ctx, NotifyClass::Stream, "xsetid", db, key);
    Ok(())
}

/// A group's `entries-read` for replies (`None` = unknown).
pub fn entries_read_of(value: i64) -> Option<i64> {
    (value != ENTRIES_READ_INVALID).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(interval(b"-", true), Ok(StreamId::MIN));
        assert_eq!(interval(b"+", false), Ok(StreamId::MAX));
        assert_eq!(interval(b"(1-1", true), Ok(StreamId::new(1, 2)));
        assert_eq!(interval(b"(1", false), Ok(StreamId::new(1, u64::MAX - 1)));
        assert!(interval(b"(-", true).is_err());
        assert!(interval(b"(0-0", false).is_err());
    }

    #[test]
    fn an_entry_holds_a_gibibyte_at_most() {
        // Zeroed by the allocator and never touched: no memory is used for it.
        let most = Bytes::from(vec![0u8; ENTRY_MAX_BYTES - 1]);
        let one = Bytes::from_static(b"a");
        assert!(!entry_too_large(&[most.clone(), one.clone()]));
        assert!(entry_too_large(&[most, one.clone(), one]));
    }

    #[test]
    fn xadd_ids() {
        assert_eq!(xadd_id(b"5-*"), Ok((StreamId::new(5, 0), false)));
        assert_eq!(xadd_id(b"5"), Ok((StreamId::new(5, 0), true)));
        assert!(xadd_id(b"5-1-*").is_err());
        assert!(xadd_id(b"x").is_err());
    }
}
