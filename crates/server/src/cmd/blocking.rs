//! Blocking pops (Redis's `blocked.c` with the list and sorted-set parts of `t_list.c` and
//! `t_zset.c`): BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP, plus the
//! shared pop code ZMPOP uses.
//!
//! A blocking command first tries to serve itself, exactly like its non-blocking twin.
//! When every key is empty it registers a [`Waiter`] (under the registry lock, taken
//! before the shards, so no push can slip between the look and the registration) and the
//! connection loop waits for its mailbox or its deadline. Inside MULTI/EXEC it never
//! blocks: it answers the timeout reply at once, as Redis does.
//!
//! Serving happens in the writer's connection: after each top-level command that
//! signalled keys somebody waits on (as Redis signals them: see [`crate::store::ready`]),
//! [`serve_ready`] hands elements to the waiters of each ready key in arrival order,
//! encoding each reply in the waiter's protocol into its mailbox.

use crate::notify::NotifyClass::{Generic, List, Zset};
use crate::store::Value;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use redline_resp::command::CommandSpec;
use redline_resp::{encode, Protocol};

use super::args::is;
use super::lists::{self, side};
use super::long_double::{LongDouble, Parsed};
use super::reply::{double, CmdError, CmdResult, SYNTAX, WRONG_TYPE};
use super::streams;
use super::zsets;
use super::{Ctx, Handler, KeysRef};
use crate::blocking::{BlockOp, Registry, StreamRead, Waiter};
use crate::net::client::Blocked;
use crate::shared::Shared;
use crate::store::ready::{Replaced, Signal, WaitKind};
use crate::store::{Locked, Shard};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("blpop", blpop),
    ("brpop", brpop),
    ("blmove", blmove),
    ("brpoplpush", brpoplpush),
    ("blmpop", blmpop),
    ("bzpopmin", bzpopmin),
    ("bzpopmax", bzpopmax),
    ("bzmpop", bzmpop),
];

/// The shards of the keys a pop touches, however they are locked.
pub trait KeyShards {
    /// The (locked) shard of `key`.
    fn shard_of(&mut self, key: &[u8]) -> &mut Shard;
}

impl KeyShards for Locked<'_> {
    fn shard_of(&mut self, key: &[u8]) -> &mut Shard {
        self.shard(key)
    }
}

impl KeyShards for KeysRef<'_> {
    fn shard_of(&mut self, key: &[u8]) -> &mut Shard {
        self.shard(key)
    }
}

/// What trying a pop on one key gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The reply is written; this many elements were popped.
    Served(usize),
    /// Nothing to pop (missing or empty).
    Empty,
}

/// Which command form runs a pop: Redis's blocking ones (BZPOPMIN, BZMPOP, and serving
/// their waiters) look a sorted set up once more before the pop's own lookup, and each
/// lookup is a use of the key (OBJECT FREQ, IDLETIME); ZMPOP looks it up once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PopBy {
    Blocking,
    Direct,
}

/// Tries `op` on `key`, writing the reply to `out` on success. WRONGTYPE when the key
/// holds another type (or, for a move, when the destination does).
fn try_pop(
    op: &BlockOp,
    by: PopBy,
    shards: &mut dyn KeyShards,
    key: &[u8],
    proto: Protocol,
    out: &mut BytesMut,
) -> Result<Outcome, CmdError> {
    match op {
        BlockOp::Pop { left } | BlockOp::MPop { left, .. } => {
            let count = match op {
                BlockOp::MPop { count, .. } => Some(*count),
                _ => None,
            };
            let shard = shards.shard_of(key);
            let Some(list) = lists::list(shard, key)? else {
                return Ok(Outcome::Empty);
            };
            if list.is_empty() {
                return Ok(Outcome::Empty);
            }
            let n = count.unwrap_or(1).min(list.len());
            encode::write_array_len(out, 2);
            encode::write_bulk(out, key);
            if count.is_some() {
                encode::write_array_len(out, n);
            }
            for _ in 0..n {
                let element = if *left {
                    list.pop_front()
                } else {
                    list.pop_back()
                };
                if let Some(e) = element {
                    encode::write_bulk(out, &e);
                }
            }
            shard.touch(key);
            crate::store::dirty::mark_rest(n);
            shard.notify(List.bit(), if *left { "lpop" } else { "rpop" }, key);
            if shard.remove_if_empty(key) {
                shard.notify(Generic.bit(), "del", key);
            }
            Ok(Outcome::Served(n))
        }
        BlockOp::Move {
            dst,
            from_left,
            to_left,
            ..
        } => match lists::move_one(shards, key, dst, *from_left, *to_left)? {
            Some(element) => {
                encode::write_bulk(out, &element);
                Ok(Outcome::Served(1))
            }
            None => Ok(Outcome::Empty),
        },
        BlockOp::ZPop { max } | BlockOp::ZMPop { max, .. } => {
            let count = match op {
                BlockOp::ZMPop { count, .. } => Some(*count),
                _ => None,
            };
            let shard = shards.shard_of(key);
            if by == PopBy::Blocking {
                match zsets::zset(shard, key)? {
                    Some(z) if !z.is_empty() => {}
                    _ => return Ok(Outcome::Empty),
                }
            }
            let Some(z) = zsets::zset(shard, key)?.filter(|z| !z.is_empty()) else {
                return Ok(Outcome::Empty);
            };
            let popped = zsets::pop_end(z, count.unwrap_or(1), *max);
            shard.touch(key);
            crate::store::dirty::mark_rest(popped.len());
            shard.notify(Zset.bit(), if *max { "zpopmax" } else { "zpopmin" }, key);
            if shard.remove_if_empty(key) {
                shard.notify(Generic.bit(), "del", key);
            }
            match count {
                None => {
                    encode::write_array_len(out, 3);
                    encode::write_bulk(out, key);
                    for (m, s) in &popped {
                        encode::write_bulk(out, m);
                        double(out, proto, *s);
                    }
                }
                Some(_) => {
                    encode::write_array_len(out, 2);
                    encode::write_bulk(out, key);
                    encode::write_array_len(out, popped.len());
                    for (m, s) in &popped {
                        encode::write_array_len(out, 2);
                        encode::write_bulk(out, m);
                        double(out, proto, *s);
                    }
                }
            }
            Ok(Outcome::Served(popped.len()))
        }
        // Streams are served by `serve_stream_waiters`.
        BlockOp::Stream(_) => Ok(Outcome::Empty),
    }
}

/// What a served pop puts in the replication stream (Redis 7.0 propagates blocking pops
/// as their non-blocking twins): `[LR]POP key [count]`, `RPOPLPUSH src dst`,
/// `LMOVE src dst from to`,
/// `ZPOP(MIN|MAX) key [count]`.
pub fn stream_form(op: &BlockOp, key: &[u8], popped: usize) -> Vec<Bytes> {
    let side_word = |left: bool| Bytes::from_static(if left { b"LEFT" } else { b"RIGHT" });
    let key = Bytes::copy_from_slice(key);
    let count = || Bytes::from(popped.to_string());
    match op {
        BlockOp::Pop { left } => {
            vec![
                Bytes::from_static(if *left { b"LPOP" } else { b"RPOP" }),
                key,
            ]
        }
        BlockOp::MPop { left, .. } => vec![
            Bytes::from_static(if *left { b"LPOP" } else { b"RPOP" }),
            key,
            count(),
        ],
        BlockOp::Move {
            dst,
            rpoplpush: true,
            ..
        } => vec![Bytes::from_static(b"RPOPLPUSH"), key, dst.clone()],
        BlockOp::Move {
            dst,
            from_left,
            to_left,
            ..
        } => vec![
            Bytes::from_static(b"LMOVE"),
            key,
            dst.clone(),
            side_word(*from_left),
            side_word(*to_left),
        ],
        BlockOp::ZPop { max } => vec![
            Bytes::from_static(if *max { b"ZPOPMAX" } else { b"ZPOPMIN" }),
            key,
        ],
        BlockOp::ZMPop { max, .. } => vec![
            Bytes::from_static(if *max { b"ZPOPMAX" } else { b"ZPOPMIN" }),
            key,
            count(),
        ],
        BlockOp::Stream(_) => Vec::new(),
    }
}

/// A pop served by the command itself: recorded for the transaction or script around
/// it, or (a top-level blocking command, which holds its own locks) appended to the
/// stream now, while `key`'s shard is still locked.
fn propagate_pop(ctx: &mut Ctx<'_>, op: &BlockOp, key: &[u8], popped: usize) {
    let form = stream_form(op, key, popped);
    crate::repl::propagate_instead(ctx, vec![form]);
}

/// Serves an XREAD / XREADGROUP with BLOCK (`ms` 0 = forever) at once if it can, else
/// blocks it; true when served. It looks under the registry's lock, so no XADD slips
/// in between the look and the wait.
pub fn block_stream(ctx: &mut Ctx<'_>, keys: &[Bytes], mut read: StreamRead, ms: i64) -> bool {
    let proto = ctx.proto();
    let shared = ctx.shared;
    let mut registry = shared.blocking.lock();
    registry.note_stream_wait(ctx.client.db, keys);
    let counted = {
        let mut locked = ctx.lock_keys(keys.iter().map(|k| &k[..]));
        let mut propagate = Vec::new();
        let record = crate::repl::propagates(ctx);
        if streams::serve_read(
            &mut locked,
            proto,
            ctx.out,
            keys,
            &read.from,
            read.group.as_ref(),
            read.count,
            read.noack,
            record.then_some(&mut propagate),
        ) {
            crate::repl::propagate_instead(ctx, propagate);
            return true;
        }
        shared.blocking.count_waiting(keys)
    };
    if read.count == 0 {
        read.count = streams::BLOCKED_DEFAULT_COUNT;
    }
    let waiter = Arc::new(Waiter {
        client_id: ctx.client.id,
        db: ctx.client.db,
        keys: keys.to_vec(),
        op: BlockOp::Stream(Box::new(read)),
        proto,
        silent: ctx.client.reply_silenced(),
        mailbox: ctx.client.mailbox.clone(),
        tls: ctx.client.tls,
        served: Default::default(),
        timed: ms > 0,
        arrived: ctx.client.mailbox.input_turns().arrival(),
    });
    registry.block(&waiter, counted);
    let timeout = (ms > 0).then(|| Duration::from_millis(ms as u64));
    ctx.client.blocked = Some(Blocked {
        waiter,
        deadline: timeout.map(|t| tokio::time::Instant::now() + t),
    });
    false
}

/// Up to how many open connections a write to a key clients are blocked on looks at
/// every other connection's input first ([`lets_earlier_blockers_run_first`]). That
/// pass costs about 6 µs a push for 1,000 (a job queue's producers with 1,000 idle
/// connections open pushed 0.81x as fast, with 4,000 0.30x): past this, a push looks
/// only at the connections the last wake-ups before the waiters it serves were for
/// ([`crate::net::recent_arrivals`]).
pub const ORDERED_PUSH_CLIENTS: usize = 256;

/// Whether this write waits first for connections whose input came before it and has
/// not run yet, because a key it writes has blocked clients: a blocking command among
/// that input would have been queued on the key in Redis, and served first, before this
/// write's element went to the clients already queued (see
/// [`crate::net::input_turns`]). The wait goes into `input_wait`.
pub fn lets_earlier_blockers_run_first(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    args: &[Bytes],
) -> bool {
    // One load for every command while nobody is blocked. Blocking commands do not
    // look: a pop on a key others wait on finds it empty and queues by its arrival
    // anyway, so a job queue's consumers pay nothing (BLMOVE's push to a destination
    // others wait on goes unordered: rare).
    ctx.shared.blocking.any()
        && spec.may_replicate()
        && !spec.is_blocking()
        && matches!(
            spec.docs.group,
            "list" | "sorted-set" | "stream" | "generic"
        )
        && wait_for_earlier_blockers(ctx, spec, args)
}

#[cold]
fn wait_for_earlier_blockers(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> bool {
    let blocking = &ctx.shared.blocking;
    let keys = super::keys_where(spec, args, |key| blocking.may_be_waited_on(key));
    if keys.is_empty() {
        return false;
    }
    let db = ctx.client.db;
    let mine = ctx.client.mailbox.input_turns().waits_before();
    let served = waiters_served_at_most(spec, args);
    // Input that came after the waiters this write can serve would queue behind them:
    // whether it ran before or after the write, the same clients are served (what
    // they leave, a late BLPOP pops itself). So only input before the last of those is
    // waited for, which keeps a job queue's producers from waiting on each other and
    // on consumers coming back. A stream's XREAD names `$`, read when it runs, so
    // there any earlier input counts.
    let before = {
        let registry = ctx.shared.blocking.lock();
        keys.into_iter()
            .filter_map(|key| registry.last_served(db, key, served))
            .map(|last| match last.op {
                BlockOp::Stream(_) => mine,
                _ => last.arrived.min(mine),
            })
            .max()
    };
    let Some(before) = before else {
        return false;
    };
    let unsettled =
        ctx.shared
            .clients
            .unsettled_inputs(ctx.client.id, before, ORDERED_PUSH_CLIENTS);
    ctx.client.waits_for_inputs(unsettled)
}

/// Whether this write waits first for every connection's input that came before it and
/// has not run yet, because it may delete or replace a stream key that blocking reads
/// have named lately ([`crate::blocking::STREAM_WAITS_KEPT`]). A blocking XREADGROUP
/// among that input would have blocked first in Redis, and this write would then have
/// ended its wait ("the stream key no longer exists"); run after the write, it finds no
/// stream (NOGROUP) or another type (WRONGTYPE) instead. Pushes order themselves by the
/// waiters they serve ([`lets_earlier_blockers_run_first`]); scripts do not look.
#[inline]
pub fn lets_stream_readers_run_first(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    args: &[Bytes],
) -> bool {
    // One load for every command while no blocking read named a stream lately.
    ctx.shared.blocking.any_stream_waits() && wait_for_stream_readers(ctx, spec, args)
}

fn wait_for_stream_readers(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> bool {
    let removes = match spec.name {
        "flushall" | "flushdb" | "swapdb" => true,
        "exec" => ctx.client.multi.iter().flatten().any(|queued| {
            ctx.shared
                .renamed
                .resolve(queued)
                .is_some_and(|spec| may_remove_stream_waited_on(ctx, spec, queued))
        }),
        _ => may_remove_stream_waited_on(ctx, spec, args),
    };
    if !removes {
        return false;
    }
    let unsettled = ctx.shared.clients.unsettled_inputs(
        ctx.client.id,
        ctx.client.mailbox.input_turns().waits_before(),
        ORDERED_PUSH_CLIENTS,
    );
    ctx.client.waits_for_inputs(unsettled)
}

/// The commands that delete a key or store a value of any type over one, and XGROUP
/// DESTROY (it ends a group): the writes that can take a stream away from readers
/// blocked on it.
/// The others fail on a stream (WRONGTYPE) or cannot remove it.
#[rustfmt::skip]
fn removes_or_replaces_keys(name: &str) -> bool {
    matches!(name,
        "set" | "setex" | "psetex" | "mset" | "del" | "unlink" | "rename" | "renamenx"
        | "move" | "copy" | "restore" | "migrate" | "expire" | "pexpire" | "expireat"
        | "pexpireat" | "sort" | "sunionstore" | "sinterstore" | "sdiffstore" | "zunionstore"
        | "zinterstore" | "zdiffstore" | "zrangestore" | "georadius" | "georadiusbymember"
        | "geosearchstore" | "bitop" | "xgroup|destroy")
}

/// Whether `spec` with `args` may delete or replace a key of the client's database that
/// blocking stream reads named lately ([`removes_or_replaces_keys`]).
fn may_remove_stream_waited_on(ctx: &Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> bool {
    let blocking = &ctx.shared.blocking;
    if !removes_or_replaces_keys(spec.name) {
        return false;
    }
    let named = super::keys_where(spec, args, |key| blocking.may_have_stream_waits(key));
    if named.is_empty() {
        return false;
    }
    let registry = blocking.lock();
    named
        .into_iter()
        .any(|key| registry.had_stream_waits(ctx.client.db, key))
}

/// How many waiters of a key a write can serve at most: one per element it adds for
/// the commands that add elements named in their arguments, else any number (a RENAME
/// or a ZUNIONSTORE brings a whole value). (Blocking commands never ask: see
/// [`lets_earlier_blockers_run_first`].)
fn waiters_served_at_most(spec: &CommandSpec, args: &[Bytes]) -> usize {
    match spec.name {
        "lpush" | "rpush" | "lpushx" | "rpushx" | "linsert" | "lmove" | "rpoplpush" | "zadd"
        | "zincrby" => args.len().saturating_sub(2),
        _ => usize::MAX,
    }
}

/// Serves every XREAD / XREADGROUP waiter of `key` the stream now satisfies (all of
/// them, oldest first: reading does not consume, as Redis serves every stream waiter).
fn serve_stream_waiters(
    shared: &Shared,
    registry: &mut crate::blocking::RegistryGuard<'_>,
    db: usize,
    key: &Bytes,
    reply: &mut BytesMut,
) {
    for waiter in registry.all(db, key) {
        let BlockOp::Stream(read) = &waiter.op else {
            continue;
        };
        let Some(i) = waiter.keys.iter().position(|k| k == key) else {
            continue;
        };
        let Some(&from) = read.from.get(i) else {
            continue;
        };
        let mut locked = shared.store.db(db).lock_keys([&key[..]]);
        let had_consumer = read
            .group
            .as_ref()
            .is_some_and(|g| streams::has_consumer(&mut locked, key, g));
        reply.clear();
        let changes = crate::store::dirty::count();
        let mut propagate = Vec::new();
        let record = crate::repl::serves_propagate(shared);
        let outcome = streams::serve_blocked(
            &mut locked,
            waiter.proto,
            reply,
            key,
            from,
            read.group.as_ref(),
            read.count,
            read.noack,
            record.then_some(&mut propagate),
        );
        crate::repl::append_served(shared, db, propagate);
        let created = !had_consumer
            && read
                .group
                .as_ref()
                .is_some_and(|g| streams::has_consumer(&mut locked, key, g));
        drop(locked);
        // Serving a blocked reader, Redis counts the consumer it created and nothing
        // else (the read itself counts only when the command runs at once).
        crate::store::dirty::forget_since(changes);
        if created {
            crate::store::dirty::mark();
            let class = crate::notify::NotifyClass::Stream;
            crate::notify::event_on(shared, class, "xgroup-createconsumer", db, key);
        }
        match outcome {
            Ok(true) => registry.serve(&waiter, reply),
            Ok(false) => {}
            Err(e) => {
                reply.clear();
                encode::write_error(reply, e.text());
                registry.serve(&waiter, reply);
                // The error reaches the blocked client: INFO errorstats counts it.
                let mut counted = crate::cmdstats::Local::default();
                counted.error(e.text());
                shared.cmdstats.absorb(&mut counted);
            }
        }
    }
}

/// The reply of a blocking command that timed out (or could not block): Redis answers a
/// null array for all of them, except BLMOVE/BRPOPLPUSH inside MULTI (a null bulk).
fn write_timeout(out: &mut BytesMut, proto: Protocol) {
    encode::write_null_array(out, proto);
}

/// Redis's `getTimeoutFromObjectOrReply` in seconds: `None` blocks forever.
///
/// Redis 7.0.15 reads the seconds as a long double and rounds the milliseconds up,
/// `(long long) ceill(seconds * 1000.0)`: any positive timeout, however small (clients
/// send `5e-324` for "do not wait"), waits at least 1 ms, and only 0 (or a negative
/// fraction of a millisecond) waits forever.
pub fn parse_timeout(arg: &[u8]) -> Result<Option<Duration>, CmdError> {
    const NEGATIVE: CmdError = super::args::TIMEOUT_NEGATIVE;
    let seconds = LongDouble::parse(arg).ok_or(CmdError::Static(
        "ERR timeout is not a float or out of range",
    ))?;
    // An infinite or out-of-range product converts to LLONG_MIN in C: "negative".
    let ms = match seconds {
        Parsed::Infinite(_) => return Err(NEGATIVE),
        Parsed::Finite(seconds) => seconds
            .mul_small(1000)
            .and_then(|ms| ms.ceil_i64())
            .ok_or(NEGATIVE)?,
    };
    match u64::try_from(ms) {
        Err(_) => Err(NEGATIVE),
        Ok(0) => Ok(None),
        Ok(ms) => Ok(Some(Duration::from_millis(ms))),
    }
}

/// Parsed `numkeys key... LEFT|RIGHT|MIN|MAX [COUNT n]` (LMPOP family).
pub struct MPopArgs {
    /// Index of the first key.
    pub first: usize,
    /// Number of keys.
    pub numkeys: usize,
    /// LEFT / MIN.
    pub head: bool,
    /// COUNT.
    pub count: usize,
}

/// Parses the arguments from `numkeys_index` on, as `lmpopGenericCommand` and
/// `zmpopGenericCommand` do.
pub fn parse_mpop(args: &[Bytes], numkeys_index: usize, zset: bool) -> Result<MPopArgs, CmdError> {
    let numkeys = match crate::store::canonical_int(&args[numkeys_index]) {
        Some(n) if n > 0 => n as usize,
        _ => return Err(CmdError::Static("ERR numkeys should be greater than 0")),
    };
    let where_index = numkeys_index.saturating_add(numkeys).saturating_add(1);
    if where_index >= args.len() {
        return Err(SYNTAX);
    }
    let head = if zset {
        let w = &args[where_index];
        if is(w, "min") {
            true
        } else if is(w, "max") {
            false
        } else {
            return Err(SYNTAX);
        }
    } else {
        side(&args[where_index])?
    };
    let mut count = None;
    let mut j = where_index + 1;
    while j < args.len() {
        if count.is_none() && is(&args[j], "count") && j + 1 < args.len() {
            match crate::store::canonical_int(&args[j + 1]) {
                Some(n) if n > 0 => count = Some(n as usize),
                _ => return Err(CmdError::Static("ERR count should be greater than 0")),
            }
            j += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    Ok(MPopArgs {
        first: numkeys_index + 1,
        numkeys,
        head,
        count: count.unwrap_or(1),
    })
}

/// Non-blocking pop over several keys (LMPOP-style, ZMPOP): the first non-empty key is
/// served, else a null array.
pub fn pop_first(ctx: &mut Ctx<'_>, keys: &[Bytes], op: &BlockOp) -> CmdResult {
    let proto = ctx.proto();
    let mut all: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    if let BlockOp::Move { dst, .. } = op {
        all.push(dst);
    }
    let mut locked = ctx.lock_keys(all);
    for key in keys {
        if let Outcome::Served(n) = try_pop(op, PopBy::Direct, &mut locked, key, proto, ctx.out)? {
            drop(locked);
            propagate_pop(ctx, op, key, n);
            return Ok(());
        }
    }
    write_timeout(ctx.out, proto);
    Ok(())
}

/// The blocking path: serve now, or answer at once inside a transaction, or block.
fn block_on(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    op: BlockOp,
    timeout: Option<Duration>,
) -> CmdResult {
    let proto = ctx.proto();
    let mut all: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    if let BlockOp::Move { dst, .. } = &op {
        all.push(dst);
    }
    if ctx.nested {
        // Inside EXEC: the shards are the transaction's, and blocking is not allowed.
        let mut locked = ctx.lock_keys(all);
        for key in keys {
            if let Outcome::Served(n) =
                try_pop(&op, PopBy::Blocking, &mut locked, key, proto, ctx.out)?
            {
                drop(locked);
                propagate_pop(ctx, &op, key, n);
                return Ok(());
            }
        }
        match op {
            BlockOp::Move { .. } => encode::write_null_bulk(ctx.out, proto),
            _ => write_timeout(ctx.out, proto),
        }
        return Ok(());
    }
    let shared = ctx.shared;
    let mut registry = shared.blocking.lock();
    let counted = {
        let mut locked = ctx.lock_keys(all);
        for key in keys {
            let outcome = match &op {
                // BLMOVE blocks on a missing source whatever the destination holds.
                BlockOp::Move { .. } => match lists::list(locked.shard(key), key)? {
                    Some(l) if !l.is_empty() => {
                        try_pop(&op, PopBy::Blocking, &mut locked, key, proto, ctx.out)?
                    }
                    _ => Outcome::Empty,
                },
                _ => try_pop(&op, PopBy::Blocking, &mut locked, key, proto, ctx.out)?,
            };
            if let Outcome::Served(n) = outcome {
                // Appended before the shards unlock, so the pop keeps its place among
                // other writes to the key.
                let form = stream_form(&op, key, n);
                crate::repl::propagate_instead(ctx, vec![form]);
                return Ok(());
            }
        }
        shared.blocking.count_waiting(keys)
    };
    let waiter = Arc::new(Waiter {
        client_id: ctx.client.id,
        db: ctx.client.db,
        keys: keys.to_vec(),
        op,
        proto,
        silent: ctx.client.reply_silenced(),
        mailbox: ctx.client.mailbox.clone(),
        tls: ctx.client.tls,
        served: Default::default(),
        timed: timeout.is_some(),
        arrived: ctx.client.mailbox.input_turns().arrival(),
    });
    registry.block(&waiter, counted);
    ctx.client.blocked = Some(Blocked {
        waiter,
        deadline: timeout.map(|t| tokio::time::Instant::now() + t),
    });
    Ok(())
}

fn bpop(ctx: &mut Ctx<'_>, args: &[Bytes], left: bool) -> CmdResult {
    let timeout = parse_timeout(&args[args.len() - 1])?;
    block_on(
        ctx,
        &args[1..args.len() - 1],
        BlockOp::Pop { left },
        timeout,
    )
}

fn blpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bpop(ctx, args, true)
}

fn brpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bpop(ctx, args, false)
}

fn blmove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let from_left = side(&args[3])?;
    let to_left = side(&args[4])?;
    let timeout = parse_timeout(&args[5])?;
    let op = BlockOp::Move {
        dst: args[2].clone(),
        from_left,
        to_left,
        rpoplpush: false,
    };
    block_on(ctx, &args[1..2], op, timeout)
}

fn brpoplpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let timeout = parse_timeout(&args[3])?;
    let op = BlockOp::Move {
        dst: args[2].clone(),
        from_left: false,
        to_left: true,
        rpoplpush: true,
    };
    block_on(ctx, &args[1..2], op, timeout)
}

fn blmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let parsed = parse_mpop(args, 2, false)?;
    let timeout = parse_timeout(&args[1])?;
    let op = BlockOp::MPop {
        left: parsed.head,
        count: parsed.count,
    };
    block_on(
        ctx,
        &args[parsed.first..parsed.first + parsed.numkeys],
        op,
        timeout,
    )
}

fn bzpop(ctx: &mut Ctx<'_>, args: &[Bytes], max: bool) -> CmdResult {
    let timeout = parse_timeout(&args[args.len() - 1])?;
    block_on(
        ctx,
        &args[1..args.len() - 1],
        BlockOp::ZPop { max },
        timeout,
    )
}

fn bzpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bzpop(ctx, args, false)
}

fn bzpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bzpop(ctx, args, true)
}

fn bzmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let timeout = parse_timeout(&args[1])?;
    let parsed = parse_mpop(args, 2, true)?;
    let op = BlockOp::ZMPop {
        max: !parsed.head,
        count: parsed.count,
    };
    block_on(
        ctx,
        &args[parsed.first..parsed.first + parsed.numkeys],
        op,
        timeout,
    )
}

/// Queues the key of `signal` to be served, once; a signal for a type nobody waits for
/// is dropped, as Redis drops it.
fn enqueue(queue: &mut VecDeque<(usize, Bytes)>, registry: &Registry, signal: Signal) {
    let Signal { db, key, kind } = signal;
    if registry.waits_for(kind) && !queue.iter().any(|(d, k)| *d == db && *k == key) {
        queue.push_back((db, key));
    }
}

/// Records that the command `replaced` whole databases, for [`serve_ready`] to signal
/// their waited keys once it is over (the command may hold every shard, inside EXEC).
pub(super) fn note_replaced(ctx: &mut Ctx<'_>, replaced: Replaced) {
    if ctx.shared.blocking.any() {
        ctx.client.replaced.push(replaced);
    }
}

/// The signals Redis sends for the keys clients wait on in databases a command
/// `replaced` (see [`Replaced`]). Takes each key's shard: none may be held.
fn signals_of_replaced(shared: &Shared, registry: &Registry, replaced: Replaced) -> Vec<Signal> {
    let keys = registry.keys();
    match replaced {
        Replaced::Emptied(of) => keys
            .into_iter()
            .filter(|(db, _)| of.is_none_or(|of| of == *db))
            .map(|(db, key)| Signal {
                db,
                key,
                kind: WaitKind::Stream,
            })
            .collect(),
        Replaced::Swapped(a, b) => {
            // The other database holds what this one held before the swap.
            let other = |db: usize| if db == a { b } else { a };
            let keys = keys.into_iter().filter(|(db, _)| *db == a || *db == b);
            swap_signals(
                keys.collect(),
                |db, key| stored_kind(shared, other(db), key) == Some(WaitKind::Stream),
                |db, key| stored_kind(shared, db, key),
            )
        }
    }
}

/// Redis's signals for waited `keys` when whole databases are swapped (SWAPDB's
/// `dbSwapDatabases`, a disk-less load's `swapMainDbWithTempDb`): first, for stream
/// readers, each key that `held_stream` before and `holds` none now
/// (`scanDatabaseForDeletedStreams`), then each key for what it `holds` now
/// (`scanDatabaseForReadyKeys`).
fn swap_signals(
    keys: Vec<(usize, Bytes)>,
    held_stream: impl Fn(usize, &Bytes) -> bool,
    holds: impl Fn(usize, &Bytes) -> Option<WaitKind>,
) -> Vec<Signal> {
    let now: Vec<Option<WaitKind>> = keys.iter().map(|(db, key)| holds(*db, key)).collect();
    let mut signals = Vec::new();
    for ((db, key), now) in keys.iter().zip(&now) {
        if *now != Some(WaitKind::Stream) && held_stream(*db, key) {
            let (db, key, kind) = (*db, key.clone(), WaitKind::Stream);
            signals.push(Signal { db, key, kind });
        }
    }
    for ((db, key), now) in keys.into_iter().zip(now) {
        if let Some(kind) = now {
            signals.push(Signal { db, key, kind });
        }
    }
    signals
}

/// The kind of waiters what `key` of database `db` stores could serve. Expired keys not
/// yet reclaimed count, as Redis finds them in its dict: serving then expires them (and
/// propagates their DEL). Takes the key's shard: none may be held.
fn stored_kind(shared: &Shared, db: usize, key: &[u8]) -> Option<WaitKind> {
    let mut locked = shared.store.db(db).lock_keys([key]);
    let value = locked.shard(key).peek_stored(key).map(|e| &e.value);
    value.and_then(WaitKind::of)
}

/// The keys clients wait on that hold a stream now: what replacing the whole dataset
/// (a reload, a replica's full sync) signals for their readers, as Redis's
/// `scanDatabaseForDeletedStreams` does before it empties the databases. Takes each
/// key's shard: none may be held.
pub fn waited_streams(shared: &Shared) -> Vec<Signal> {
    if !shared.blocking.any() {
        return Vec::new();
    }
    let registry = shared.blocking.lock();
    let mut signals = Vec::new();
    for (db, key) in registry.keys() {
        if stored_kind(shared, db, &key) == Some(WaitKind::Stream) {
            let kind = WaitKind::Stream;
            signals.push(Signal { db, key, kind });
        }
    }
    signals
}

/// What swapping a loaded dataset in signals (see [`swap_signals`]), given the
/// `waited` streams found before it. Takes the registry, then each key's shard: none
/// may be held.
pub fn signals_of_swap(shared: &Shared, waited: Vec<Signal>) -> Vec<Signal> {
    if !shared.blocking.any() {
        return Vec::new();
    }
    let registry = shared.blocking.lock();
    swap_signals(
        registry.keys(),
        |db, key| waited.iter().any(|s| s.db == db && s.key == *key),
        |db, key| stored_kind(shared, db, key),
    )
}

/// Serves the clients blocked on the keys `signalled` by something other than a
/// client's command (the expiry cycle, a replica's full sync), as Redis serves its
/// ready keys before it sleeps. Takes the shards: none may be held.
pub fn serve_signalled(shared: &Shared, mut signalled: Vec<Signal>) {
    if !signalled.is_empty() {
        serve_ready(shared, &mut signalled, &mut Vec::new());
    }
}

/// Serves the readers of the streams this thread's background work deleted (the
/// expiry cycle, the cron's eviction pass, the keys of slots given to another cluster
/// node: their deletes signal as a command's do, see
/// [`crate::store::ready`]), as Redis serves its ready keys before it sleeps: a group
/// reader hears that its stream went.
pub fn serve_background_signals(shared: &Shared) {
    serve_signalled(shared, crate::store::ready::take());
}

/// Serves clients blocked on the keys `ready` (signalled: see [`crate::store::ready`]),
/// then on those of the databases `replaced`, oldest waiter first, until each key runs
/// dry; keys the serving signals in turn (a BLMOVE creating its destination) are served
/// after them, as Redis's ready list grows while it is served.
pub fn serve_ready(shared: &Shared, ready: &mut Vec<Signal>, replaced: &mut Vec<Replaced>) {
    let journal = &shared.repl.journal;
    // Nested: on a replica this runs inside the batch of our master's stream.
    let _gate = journal.enter_nested();
    let mut registry = shared.blocking.lock();
    let mut queue = VecDeque::new();
    for signal in ready.drain(..) {
        enqueue(&mut queue, &registry, signal);
    }
    for replaced in replaced.drain(..) {
        for signal in signals_of_replaced(shared, &registry, replaced) {
            enqueue(&mut queue, &registry, signal);
        }
    }
    let mut reply = BytesMut::new();
    while let Some((db, key)) = queue.pop_front() {
        serve_stream_waiters(shared, &mut registry, db, &key, &mut reply);
        // Redis serves the waiters of the type the key now holds, oldest first, and
        // passes over the others (a BRPOP on a key that became a sorted set waits on).
        for waiter in registry.all(db, &key) {
            if waiter.is_served() || matches!(waiter.op, BlockOp::Stream(_)) {
                continue;
            }
            let mut keys: Vec<&[u8]> = vec![&key];
            if let BlockOp::Move { dst, .. } = &waiter.op {
                keys.push(dst);
            }
            let mut locked = shared.store.db(db).lock_keys(keys);
            reply.clear();
            let changes = crate::store::dirty::count();
            let outcome = match &waiter.op {
                BlockOp::Move { dst, .. } => {
                    // Redis serves only a source of the right type; a wrong destination
                    // ends the wait with WRONGTYPE. Both are looked at, not used: the
                    // move's own lookups are Redis's.
                    let source = match locked.shard(&key).peek(&key).map(|e| &e.value) {
                        None => 0,
                        Some(Value::List(l)) => l.len(),
                        Some(_) => continue,
                    };
                    if source == 0 {
                        Ok(Outcome::Empty)
                    } else if locked
                        .shard(dst)
                        .peek(dst)
                        .is_none_or(|e| matches!(e.value, Value::List(_)))
                    {
                        try_pop(
                            &waiter.op,
                            PopBy::Blocking,
                            &mut locked,
                            &key,
                            waiter.proto,
                            &mut reply,
                        )
                    } else {
                        Err(WRONG_TYPE)
                    }
                }
                op => match try_pop(
                    op,
                    PopBy::Blocking,
                    &mut locked,
                    &key,
                    waiter.proto,
                    &mut reply,
                ) {
                    // A key of another type does not serve, and does not fail, a waiter.
                    Err(_) => continue,
                    other => other,
                },
            };
            if let Ok(Outcome::Served(n)) = outcome {
                crate::repl::append_served(shared, db, vec![stream_form(&waiter.op, &key, n)]);
            }
            if matches!(waiter.op, BlockOp::Pop { .. } | BlockOp::Move { .. }) {
                // Redis's `serveClientBlockedOnList` counts no change for BLPOP, BRPOP
                // and BLMOVE (BLMPOP's and the sorted set pops' elements it counts).
                crate::store::dirty::forget_since(changes);
            }
            drop(locked);
            match outcome {
                Ok(Outcome::Empty) => break,
                Ok(Outcome::Served(_)) => {
                    registry.serve(&waiter, &reply);
                    if shared.tracking.active() {
                        shared
                            .tracking
                            .invalidate_key(shared, &key, Some(waiter.client_id));
                        if let BlockOp::Move { dst, .. } = &waiter.op {
                            shared
                                .tracking
                                .invalidate_key(shared, dst, Some(waiter.client_id));
                        }
                    }
                }
                Err(e) => {
                    reply.clear();
                    encode::write_error(&mut reply, e.text());
                    registry.serve(&waiter, &reply);
                }
            }
        }
        // What serving this key signalled: a destination a BLMOVE created, a stream that
        // expired as its readers looked at it.
        for signal in crate::store::ready::take() {
            enqueue(&mut queue, &registry, signal);
        }
    }
}

/// Ends a wait that timed out (writing the timeout reply to `out`), unless the waiter
/// was served meanwhile; returns whether it timed out.
pub fn time_out(shared: &Shared, waiter: &Arc<Waiter>, out: &mut BytesMut) -> bool {
    let mut registry = shared.blocking.lock();
    if registry.cancel(waiter) {
        if !waiter.silent {
            write_timeout(out, waiter.proto);
        }
        true
    } else {
        false
    }
}

/// CLIENT UNBLOCK's error, for a client blocked on keys or in WAIT.
pub const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

/// CLIENT UNBLOCK: ends client `id`'s wait (on keys, or in WAIT) as if it timed out, or
/// with an UNBLOCKED error; false when it is not blocked.
pub fn unblock(shared: &Shared, id: u64, with_error: bool) -> bool {
    let mut registry = shared.blocking.lock();
    let Some(waiter) = registry.of_client(id) else {
        drop(registry);
        let ended = shared.blocking.unblock_replica_wait(id, with_error);
        if ended && with_error {
            count_unblocked_error(shared);
        }
        return ended;
    };
    let mut reply = BytesMut::new();
    if with_error {
        encode::write_error(&mut reply, UNBLOCKED.as_bytes());
        count_unblocked_error(shared);
    } else {
        write_timeout(&mut reply, waiter.proto);
    }
    registry.serve(&waiter, &reply);
    true
}

/// INFO errorstats counts CLIENT UNBLOCK's error when it is given.
fn count_unblocked_error(shared: &Shared) {
    let mut counted = crate::cmdstats::Local::default();
    counted.error(UNBLOCKED.as_bytes());
    shared.cmdstats.absorb(&mut counted);
}

/// REPLICAOF host port: every client blocked on keys gets an UNBLOCKED error, as in
/// Redis; otherwise what the new master writes would serve them here, and the pops
/// would make this replica differ from its master.
pub fn unblock_all_for_replica(shared: &Shared) {
    const UNBLOCKED: &str =
        "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)";
    let mut registry = shared.blocking.lock();
    let waiters = registry.waiters();
    if waiters.is_empty() {
        return;
    }
    let mut reply = BytesMut::new();
    encode::write_error(&mut reply, UNBLOCKED.as_bytes());
    let mut counted = crate::cmdstats::Local::default();
    for waiter in waiters {
        counted.error(UNBLOCKED.as_bytes());
        registry.serve(&waiter, &reply);
    }
    drop(registry);
    shared.cmdstats.absorb(&mut counted);
}

/// Forgets a waiter whose client went away.
pub fn cancel(shared: &Shared, waiter: &Arc<Waiter>) {
    shared.blocking.lock().cancel(waiter);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(arg: &str) -> Result<Option<u128>, String> {
        parse_timeout(arg.as_bytes())
            .map(|t| t.map(|d| d.as_millis()))
            .map_err(|e| String::from_utf8_lossy(e.text()).into_owned())
    }

    #[test]
    fn timeouts_round_up_to_the_millisecond_as_redis_7_0_15() {
        assert_eq!(ms("0"), Ok(None));
        assert_eq!(ms("0.0"), Ok(None));
        // The smallest positive double, node-redis's "do not wait": 1 ms, not forever.
        assert_eq!(ms("5e-324"), Ok(Some(1)));
        assert_eq!(ms("1e-400"), Ok(Some(1)));
        assert_eq!(ms("0.0001"), Ok(Some(1)));
        assert_eq!(ms("0.001"), Ok(Some(1)));
        assert_eq!(ms("0.0015"), Ok(Some(2)));
        assert_eq!(ms("1"), Ok(Some(1000)));
        assert_eq!(ms("1.5"), Ok(Some(1500)));
        assert_eq!(ms("0x1p-3"), Ok(Some(125)));
        // A subnormal long double is a timeout too.
        assert_eq!(ms("1e-4940"), Ok(Some(1)));
        // A negative fraction of a millisecond rounds up to 0: forever, as in Redis.
        // So does -0.001: as a long double it is a hair above -1 ms once multiplied.
        assert_eq!(ms("-0.0005"), Ok(None));
        assert_eq!(ms("-0.001"), Ok(None));
        assert_eq!(ms("-0.002"), Err("ERR timeout is negative".into()));
        assert_eq!(ms("-1"), Err("ERR timeout is negative".into()));
        for huge in ["inf", "-inf", "1e400", "9300000000000000"] {
            assert_eq!(ms(huge), Err("ERR timeout is negative".into()), "{huge}");
        }
        for bad in ["", " 1", "1 ", "abc", "nan", "1e99999", "1e-4951"] {
            assert_eq!(
                ms(bad),
                Err("ERR timeout is not a float or out of range".into()),
                "{bad}"
            );
        }
    }
}
