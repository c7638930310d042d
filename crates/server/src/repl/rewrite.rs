//! What a command that changed the dataset puts in the replication stream: usually the
//! command as sent, but never something a replica would apply differently. As Redis 7.0
//! does it, relative times become absolute ones (`SET ... EX` → `SET ... PXAT`, EXPIRE
//! and GETEX → PEXPIREAT, RESTORE ttl → ABSTTL), results replace what a replica cannot
//! recompute (INCRBYFLOAT → SET KEEPTTL, HINCRBYFLOAT → HSET, SPOP → SREM or DEL, XADD
//! `*` → the id it got), approximate stream trimming becomes exact, and commands that
//! only remove a key become DEL (GETDEL, an expiry in the past).
//!
//! The rules read the result where it is: in the shards, still held by the command
//! (`crate::cmd` runs a propagating command with its shards held until its effects are
//! appended), or in the reply the command just wrote. Reading a key here is not a use
//! of it: OBJECT IDLETIME, LFU counts and INFO's hits and misses never see these reads.

use bytes::Bytes;
use redline_resp::{Frame, RequestDecoder};

use crate::cmd::{args::is, Ctx};
use crate::store::stream::{Group, Nack, StreamId};
use crate::store::Value;

fn word(text: &'static str) -> Bytes {
    Bytes::from_static(text.as_bytes())
}

/// Whether [`propagated`] reads the reply of command `name`: the caller copies the
/// reply out only then (every other command gets an empty one).
pub fn reads_reply(name: &str) -> bool {
    matches!(name, "hincrbyfloat" | "spop" | "lmpop" | "zmpop" | "xadd")
}

/// The stream form of `args` (its name resolved to `name`), which changed the dataset;
/// `reply` is what it answered (for the commands [`reads_reply`] names). Empty when
/// nothing must be propagated.
pub fn propagated(ctx: &mut Ctx<'_>, name: &str, args: &[Bytes], reply: &[u8]) -> Vec<Vec<Bytes>> {
    let key = args.get(1).cloned().unwrap_or_default();
    let one = |v: Vec<Bytes>| vec![v];
    match name {
        "set" => {
            let expiring = args
                .iter()
                .skip(3)
                .any(|a| ["ex", "px", "exat", "pxat"].iter().any(|w| is(a, w)));
            if expiring {
                return one(set_with_deadline(
                    ctx,
                    &key,
                    args.get(2).cloned().unwrap_or_default(),
                ));
            }
            // GET only changes the reply.
            let mut out: Vec<Bytes> = args[..3.min(args.len())].to_vec();
            out.extend(args.iter().skip(3).filter(|a| !is(a, "get")).cloned());
            one(out)
        }
        "setex" | "psetex" => one(set_with_deadline(
            ctx,
            &key,
            args.get(3).cloned().unwrap_or_default(),
        )),
        "getset" => one(vec![
            word("SET"),
            key,
            args.get(2).cloned().unwrap_or_default(),
        ]),
        "getdel" => one(vec![word("DEL"), key]),
        "expire" | "pexpire" | "expireat" | "pexpireat" => one(deadline_or_del(ctx, &key)),
        "getex" => {
            if args.iter().skip(2).any(|a| is(a, "persist")) {
                one(vec![word("PERSIST"), key])
            } else {
                one(deadline_or_del(ctx, &key))
            }
        }
        "incrbyfloat" => {
            let value = string_value(ctx, &key).unwrap_or_default();
            one(vec![word("SET"), key, value, word("KEEPTTL")])
        }
        "hincrbyfloat" => {
            let field = args.get(2).cloned().unwrap_or_default();
            let value = bulk_reply(reply).unwrap_or_default();
            one(vec![word("HSET"), key, field, value])
        }
        "spop" => spop(ctx, key, reply),
        "lmpop" | "zmpop" => multi_pop(name, args, reply).map_or_else(Vec::new, one),
        "restore" => one(restore(ctx, args)),
        "xadd" => one(xadd(ctx, args, reply)),
        "xtrim" => one(trim_exact(ctx, &key, vec![word("XTRIM"), key.clone()])),
        _ => one(args.to_vec()),
    }
}

/// `SET key value PXAT <deadline>` from the key's deadline now, or `DEL key` when the
/// deadline was already past and the key is gone.
fn set_with_deadline(ctx: &mut Ctx<'_>, key: &Bytes, value: Bytes) -> Vec<Bytes> {
    match deadline(ctx, key) {
        Some(Some(ms)) => vec![word("SET"), key.clone(), value, word("PXAT"), ms],
        Some(None) => vec![word("SET"), key.clone(), value],
        None => vec![word("DEL"), key.clone()],
    }
}

/// `PEXPIREAT key <deadline>`, `PERSIST key`, or `DEL key` when the key is gone.
fn deadline_or_del(ctx: &mut Ctx<'_>, key: &Bytes) -> Vec<Bytes> {
    match deadline(ctx, key) {
        Some(Some(ms)) => vec![word("PEXPIREAT"), key.clone(), ms],
        Some(None) => vec![word("PERSIST"), key.clone()],
        None => vec![word("DEL"), key.clone()],
    }
}

/// The key's deadline as text: `None` when the key is missing, `Some(None)` when it
/// has none.
fn deadline(ctx: &mut Ctx<'_>, key: &[u8]) -> Option<Option<Bytes>> {
    let shard = ctx.lock(key);
    let entry = shard.peek(key)?;
    Some((entry.expires_at != 0).then(|| Bytes::from(entry.expires_at.to_string())))
}

fn string_value(ctx: &mut Ctx<'_>, key: &[u8]) -> Option<Bytes> {
    let shard = ctx.lock(key);
    let entry = shard.peek(key)?;
    let mut out = None;
    entry
        .value
        .with_str(|b| out = Some(Bytes::copy_from_slice(b)));
    out
}

/// The reply as one frame.
fn reply_frame(reply: &[u8]) -> Option<Frame> {
    let mut buf = bytes::BytesMut::from(reply);
    redline_resp::parse(&mut buf).ok().flatten()
}

fn bulk_reply(reply: &[u8]) -> Option<Bytes> {
    match reply_frame(reply)? {
        Frame::Bulk(b) => Some(b),
        Frame::Simple(s) => Some(s),
        _ => None,
    }
}

/// LMPOP / ZMPOP: the pop they amount to, `[LR]POP key count` or `ZPOP{MIN,MAX} key
/// count`, from the key and elements they answered.
fn multi_pop(name: &str, args: &[Bytes], reply: &[u8]) -> Option<Vec<Bytes>> {
    let Frame::Array(parts) = reply_frame(reply)? else {
        return None;
    };
    let (Some(Frame::Bulk(key)), Some(Frame::Array(items))) = (parts.first(), parts.get(1)) else {
        return None;
    };
    let numkeys: usize = std::str::from_utf8(args.get(1)?).ok()?.parse().ok()?;
    let side = args.get(2 + numkeys)?;
    let pop = match name {
        "lmpop" if is(side, "left") => "LPOP",
        "lmpop" => "RPOP",
        _ if is(side, "min") => "ZPOPMIN",
        _ => "ZPOPMAX",
    };
    Some(vec![
        word(pop),
        key.clone(),
        Bytes::from(items.len().to_string()),
    ])
}

/// SPOP: SREM of the members it returned, or DEL when it emptied the set.
fn spop(ctx: &mut Ctx<'_>, key: Bytes, reply: &[u8]) -> Vec<Vec<Bytes>> {
    let members: Vec<Bytes> = match reply_frame(reply) {
        Some(Frame::Bulk(m)) => vec![m],
        Some(Frame::Array(items)) | Some(Frame::Set(items)) => items
            .into_iter()
            .filter_map(|f| match f {
                Frame::Bulk(b) => Some(b),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let exists = ctx.lock(&key).peek(&key).is_some();
    if !exists && members.len() > 1 {
        return vec![vec![word("DEL"), key]];
    }
    // Redis sends at most 1024 members per SREM.
    members
        .chunks(1024)
        .map(|chunk| {
            let mut cmd = vec![word("SREM"), key.clone()];
            cmd.extend_from_slice(chunk);
            cmd
        })
        .collect()
}

/// RESTORE with a relative TTL: the deadline it got, with ABSTTL.
fn restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Vec<Bytes> {
    let key = args.get(1).cloned().unwrap_or_default();
    let absolute = args.iter().skip(4).any(|a| is(a, "absttl"));
    match deadline(ctx, &key) {
        None => vec![word("DEL"), key],
        Some(Some(ms)) if !absolute => {
            let mut out = args.to_vec();
            out[2] = ms;
            out.push(word("ABSTTL"));
            out
        }
        Some(_) => args.to_vec(),
    }
}

/// Where XADD's and XTRIM's trimming clause is, if any: (start, end) in `args`.
fn trim_clause(args: &[Bytes], from: usize) -> Option<(usize, usize)> {
    let start = (from..args.len()).find(|&i| is(&args[i], "maxlen") || is(&args[i], "minid"))?;
    let mut end = start + 1;
    if args
        .get(end)
        .is_some_and(|a| &a[..] == b"=" || &a[..] == b"~")
    {
        end += 1;
    }
    end += 1; // the threshold
    if args.get(end).is_some_and(|a| is(a, "limit")) {
        end += 2;
    }
    Some((start, end.min(args.len())))
}

/// XADD: the id it got instead of `*`/`ms-*`, and trimming made exact.
fn xadd(ctx: &mut Ctx<'_>, args: &[Bytes], reply: &[u8]) -> Vec<Bytes> {
    let key = args.get(1).cloned().unwrap_or_default();
    let Some(id) = bulk_reply(reply) else {
        return args.to_vec();
    };
    // The id is the first argument after the options.
    let mut i = 2;
    let mut trim = None;
    while i < args.len() {
        if is(&args[i], "nomkstream") {
            i += 1;
        } else if let Some((s, e)) = trim_clause(args, i).filter(|(s, _)| *s == i) {
            trim = Some((s, e));
            i = e;
        } else {
            break;
        }
    }
    let mut out: Vec<Bytes> = vec![word("XADD"), key.clone()];
    if args
        .iter()
        .skip(2)
        .take(i.saturating_sub(2))
        .any(|a| is(a, "nomkstream"))
    {
        out.push(word("NOMKSTREAM"));
    }
    if trim.is_some() {
        out.extend(exact_trim(ctx, &key));
    }
    out.push(id);
    out.extend(args.iter().skip(i + 1).cloned());
    out
}

/// XTRIM made exact.
fn trim_exact(ctx: &mut Ctx<'_>, key: &Bytes, mut head: Vec<Bytes>) -> Vec<Bytes> {
    head.extend(exact_trim(ctx, key));
    head
}

/// `MINID = <first id left>` (or `MAXLEN = 0` when nothing is left): trimming that any
/// server applies the same way, whatever its node layout (approximate trimming depends
/// on it).
fn exact_trim(ctx: &mut Ctx<'_>, key: &[u8]) -> Vec<Bytes> {
    let shard = ctx.lock(key);
    let first = shard.peek(key).and_then(|e| match &e.value {
        Value::Stream(s) => s
            .range(
                crate::store::stream::StreamId::MIN,
                crate::store::stream::StreamId::MAX,
            )
            .next()
            .map(|(id, _)| id.to_string()),
        _ => None,
    });
    match first {
        Some(id) => vec![word("MINID"), word("="), Bytes::from(id)],
        None => vec![word("MAXLEN"), word("="), word("0")],
    }
}

/// Splits a raw stream into its commands (for tests and the replica side's accounting).
pub fn split_commands(bytes: &[u8]) -> Vec<Vec<Bytes>> {
    let mut buf = bytes::BytesMut::from(bytes);
    let mut decoder = RequestDecoder::default();
    let mut out = Vec::new();
    while let Ok(Some(args)) = decoder.decode(&mut buf) {
        out.push(args);
    }
    out
}

fn text(value: impl ToString) -> Bytes {
    Bytes::from(value.to_string())
}

/// The XCLAIM that brings a replica's pending entry `id` of `group` to `nack`'s state,
/// idempotently (Redis's `streamPropagateXCLAIM`): XREADGROUP, XCLAIM and XAUTOCLAIM
/// propagate as these, since delivery times and counts cannot be recomputed. An entry
/// that no longer exists makes the replica drop it from its PEL too.
pub fn stream_claim(
    key: &Bytes,
    group: &Bytes,
    id: StreamId,
    nack: &Nack,
    last_id: StreamId,
) -> Vec<Bytes> {
    vec![
        word("XCLAIM"),
        key.clone(),
        group.clone(),
        Bytes::copy_from_slice(&nack.consumer),
        word("0"),
        text(id),
        word("TIME"),
        text(nack.delivery_time),
        word("RETRYCOUNT"),
        text(nack.delivery_count),
        word("FORCE"),
        word("JUSTID"),
        word("LASTID"),
        text(last_id),
    ]
}

/// `XGROUP SETID` to `group`'s position (Redis's `streamPropagateGroupID`): what a
/// NOACK read, or an XCLAIM that only moved LASTID, changed.
pub fn stream_group_position(key: &Bytes, name: &Bytes, group: &Group) -> Vec<Bytes> {
    vec![
        word("XGROUP"),
        word("SETID"),
        key.clone(),
        name.clone(),
        text(group.last_id),
        word("ENTRIESREAD"),
        text(group.entries_read),
    ]
}

/// `XGROUP CREATECONSUMER`: a NOACK read that created its consumer (with acknowledged
/// reads the XCLAIMs create it).
pub fn stream_consumer_created(key: &Bytes, group: &Bytes, consumer: &Bytes) -> Vec<Bytes> {
    vec![
        word("XGROUP"),
        word("CREATECONSUMER"),
        key.clone(),
        group.clone(),
        consumer.clone(),
    ]
}
