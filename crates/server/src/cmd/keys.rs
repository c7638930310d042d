//! Keyspace commands (Redis's `db.c` and `expire.c`): DEL UNLINK EXISTS TOUCH TYPE KEYS
//! SCAN RANDOMKEY RENAME RENAMENX EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL EXPIRETIME
//! PEXPIRETIME PERSIST COPY MOVE OBJECT.

use crate::notify::{event, event_on, NotifyClass};
use crate::store::lookups::as_read;
use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::reply::{ok, CmdError, CmdResult, NO_SUCH_KEY, SYNTAX};
use super::{Ctx, Handler};
use crate::glob::glob_match;
use crate::store::{now_ms, Entry};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("del", del),
    ("unlink", unlink),
    ("exists", exists),
    ("touch", touch),
    ("type", type_of),
    ("keys", keys),
    ("scan", scan),
    ("randomkey", randomkey),
    ("rename", rename),
    ("renamenx", renamenx),
    ("expire", expire),
    ("pexpire", pexpire),
    ("expireat", expireat),
    ("pexpireat", pexpireat),
    ("ttl", ttl),
    ("pttl", pttl),
    ("expiretime", expiretime),
    ("pexpiretime", pexpiretime),
    ("persist", persist),
    ("copy", copy),
    ("move", move_key),
    ("object|encoding", object_encoding),
    ("object|freq", object_freq),
    ("object|idletime", object_idletime),
    ("object|refcount", object_refcount),
    ("object|help", object_help),
];

fn del(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let lazy = ctx
        .shared
        .store
        .lazyfree
        .user_del
        .load(std::sync::atomic::Ordering::Relaxed);
    remove_keys(ctx, &args[1..], lazy)
}

/// UNLINK: the keys leave the keyspace now; big values are dropped in the background.
fn unlink(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    remove_keys(ctx, &args[1..], true)
}

/// DEL and UNLINK: with `lazy`, values are dropped after the shards are released, big
/// ones by the background freer.
fn remove_keys(ctx: &mut Ctx<'_>, keys: &[Bytes], lazy: bool) -> CmdResult {
    let mut locked = ctx.lock_keys(keys.iter().map(|k| &k[..]));
    let mut removed = 0;
    let mut garbage = Vec::new();
    for key in keys {
        if let Some(entry) = locked.shard(key).remove(key) {
            removed += 1;
            event(ctx, NotifyClass::Generic, "del", key);
            if lazy {
                garbage.push(entry.value);
            }
        }
    }
    drop(locked);
    for value in garbage {
        ctx.shared.store.lazyfree.free(value);
    }
    encode::write_integer(ctx.out, removed as i64);
    Ok(())
}

/// EXISTS: how many of the keys exist (repeats count again), without using them.
fn exists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let keys = &args[1..];
    let mut locked = ctx.lock_keys(keys.iter().map(|k| &k[..]));
    let found = keys.iter().filter(|k| locked.shard(k).contains(k)).count();
    encode::write_integer(ctx.out, found as i64);
    Ok(())
}

/// TOUCH: like EXISTS, but each key found counts as used (its LRU/LFU data).
fn touch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let keys = &args[1..];
    let mut locked = ctx.lock_keys(keys.iter().map(|k| &k[..]));
    let found = keys
        .iter()
        .filter(|k| locked.shard(k).get(k).is_some())
        .count();
    encode::write_integer(ctx.out, found as i64);
    Ok(())
}

fn type_of(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    // Looking at a key's type or TTL does not count as using it (Redis's NOTOUCH).
    let name = shard
        .get_untouched(key)
        .map_or("none", |e| e.value.type_name());
    encode::write_simple(ctx.out, name.as_bytes());
    Ok(())
}

fn keys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let pattern = crate::glob::match_filter(&args[1]);
    let db = ctx.db();
    let mut found: Vec<Vec<u8>> = Vec::new();
    for i in 0..db.shard_count() {
        ctx.lock_index(i).for_each_live(|key, _| {
            if pattern.is_none_or(|p| glob_match(p, key, false)) {
                found.push(key.to_vec());
            }
        });
    }
    encode::write_array_len(ctx.out, found.len());
    for key in found {
        encode::write_bulk(ctx.out, &key);
    }
    Ok(())
}

/// SCAN's cursor: `shard + shards * position`, where position 0 starts the shard from
/// its end and position p resumes below index p (see `Shard::scan`).
fn scan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cursor = super::args::scan_cursor(&args[1])?;
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut type_filter: Option<&[u8]> = None;
    let mut j = 2;
    while j < args.len() {
        let has_next = j + 1 < args.len();
        if is(&args[j], "count") && has_next {
            let n = int(&args[j + 1])?;
            if n < 1 {
                return Err(SYNTAX);
            }
            count = n as usize;
        } else if is(&args[j], "match") && has_next {
            pattern = crate::glob::match_filter(&args[j + 1]);
        } else if is(&args[j], "type") && has_next {
            type_filter = Some(&args[j + 1]);
        } else {
            return Err(SYNTAX);
        }
        j += 2;
    }
    let db = ctx.db();
    let shards = db.shard_count() as u64;
    let mut shard = (cursor % shards) as usize;
    let mut position = cursor / shards;
    let mut found: Vec<Vec<u8>> = Vec::new();
    let mut budget = count;
    let next_cursor = loop {
        let mut visited = 0;
        let keep = |key: &[u8], entry: &Entry| {
            pattern.is_none_or(|p| glob_match(p, key, false))
                && type_filter
                    .is_none_or(|t| t.eq_ignore_ascii_case(entry.value.type_name().as_bytes()))
        };
        let start = (position > 0).then_some(position as usize);
        let next = ctx.lock_index(shard).scan(start, budget, |key, entry| {
            visited += 1;
            if keep(key, entry) {
                found.push(key.to_vec());
            }
        });
        // Empty shards cost nothing, so an empty keyspace answers cursor 0 at once.
        budget = budget.saturating_sub(visited);
        if next > 0 {
            position = next as u64;
            if budget == 0 {
                break shard as u64 + shards * position;
            }
            continue;
        }
        shard += 1;
        position = 0;
        if shard as u64 >= shards {
            break 0;
        }
        if budget == 0 {
            break shard as u64;
        }
    };
    encode::write_array_len(ctx.out, 2);
    encode::write_bulk(ctx.out, next_cursor.to_string().as_bytes());
    encode::write_array_len(ctx.out, found.len());
    for key in found {
        encode::write_bulk(ctx.out, &key);
    }
    Ok(())
}

fn randomkey(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let db = ctx.db();
    let shards = db.shard_count();
    let start = fastrand::usize(..shards);
    for i in 0..shards {
        if let Some(key) = ctx.lock_index((start + i) % shards).random_key() {
            encode::write_bulk(ctx.out, &key);
            return Ok(());
        }
    }
    encode::write_null_bulk(ctx.out, ctx.client.protocol);
    Ok(())
}

/// RENAME and RENAMENX; returns whether the rename happened.
fn rename_generic(ctx: &mut Ctx<'_>, args: &[Bytes], nx: bool) -> Result<bool, CmdError> {
    let (from, to) = (&args[1][..], &args[2][..]);
    let changes = crate::store::dirty::count();
    let mut locked = ctx.lock_keys([from, to]);
    // Redis looks the source up, then the destination: a use of each that exists,
    // whatever the answer (a key renamed to itself, RENAMENX onto a key).
    if locked.shard(from).get(from).is_none() {
        return Err(NO_SUCH_KEY);
    }
    if from == to {
        return Ok(!nx);
    }
    if locked.shard(to).get(to).is_some() && nx {
        return Ok(false);
    }
    if let Some(entry) = locked.shard(from).remove(from) {
        // The value moves with its last use, as Redis moves the object.
        let target = locked.shard(to);
        target.insert_anew(to, entry.value, entry.expires_at);
        target.set_access(to, entry.access);
        crate::store::dirty::count_as_one(changes);
        event(ctx, NotifyClass::Generic, "rename_from", from);
        event(ctx, NotifyClass::Generic, "rename_to", to);
    }
    Ok(true)
}

fn rename(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    rename_generic(ctx, args, false)?;
    ok(ctx.out);
    Ok(())
}

fn renamenx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let done = rename_generic(ctx, args, true)?;
    encode::write_integer(ctx.out, i64::from(done));
    Ok(())
}

/// Whether a deadline of `when_ms` deletes its key at once (Redis's
/// `checkAlreadyExpired`): when it has passed, except while loading and on a replica,
/// which keeps the key, hidden, until its master's DEL comes (or, for a key it gave the
/// TTL itself, until its own sweep).
pub(crate) fn already_expired(ctx: &Ctx<'_>, when_ms: i64) -> bool {
    when_ms <= now_ms() as i64 && !crate::store::loading() && !ctx.shared.store.events().replica()
}

/// The EXPIRE family, as Redis's `expireGenericCommand`.
fn expire_generic(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    seconds: bool,
    relative: bool,
    name: &str,
) -> CmdResult {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for option in &args[3..] {
        if is(option, "nx") {
            nx = true;
        } else if is(option, "xx") {
            xx = true;
        } else if is(option, "gt") {
            gt = true;
        } else if is(option, "lt") {
            lt = true;
        } else {
            return Err(super::reply::quoting(
                "ERR Unsupported option ",
                option,
                usize::MAX,
                "",
            ));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(CmdError::Static(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(CmdError::Static(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let invalid = || CmdError::Owned(format!("ERR invalid expire time in '{name}' command"));
    let mut when = int(&args[2])?;
    if seconds {
        when = when.checked_mul(1000).ok_or_else(invalid)?;
    }
    let now = now_ms() as i64;
    if relative {
        when = when.checked_add(now).ok_or_else(invalid)?;
    }
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let Some(entry) = shard.get(key) else {
        encode::write_integer(ctx.out, 0);
        return Ok(());
    };
    let current = (entry.expires_at != 0).then_some(entry.expires_at as i64);
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| when <= c))
        || (lt && current.is_some_and(|c| when >= c));
    if refused {
        encode::write_integer(ctx.out, 0);
        return Ok(());
    }
    if already_expired(ctx, when) {
        shard.remove(key);
        event(ctx, NotifyClass::Generic, "del", key);
    } else {
        shard.set_expires(key, when as u64);
        event(ctx, NotifyClass::Generic, "expire", key);
    }
    encode::write_integer(ctx.out, 1);
    Ok(())
}

fn expire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    expire_generic(ctx, args, true, true, "expire")
}

fn pexpire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    expire_generic(ctx, args, false, true, "pexpire")
}

fn expireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    expire_generic(ctx, args, true, false, "expireat")
}

fn pexpireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    expire_generic(ctx, args, false, false, "pexpireat")
}

/// TTL, PTTL, EXPIRETIME, PEXPIRETIME: -2 missing, -1 no TTL.
fn ttl_generic(ctx: &mut Ctx<'_>, args: &[Bytes], ms: bool, absolute: bool) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let reply = match shard.get_untouched(key) {
        None => -2,
        Some(entry) if entry.expires_at == 0 => -1,
        Some(entry) => {
            let at = entry.expires_at as i64;
            // From the running clock, as Redis 7.0's `ttlGenericCommand` reads it, also
            // where expiry is judged at a frozen instant (inside EXEC or a script): a key
            // still alive there shows 0.
            let ttl = if absolute {
                at
            } else {
                (at - crate::store::wall_clock_ms() as i64).max(0)
            };
            if ms {
                ttl
            } else {
                (ttl + 500) / 1000
            }
        }
    };
    encode::write_integer(ctx.out, reply);
    Ok(())
}

fn ttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, args, false, false)
}

fn pttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, args, true, false)
}

fn expiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, args, false, true)
}

fn pexpiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, args, true, true)
}

fn persist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut shard = ctx.lock(key);
    let had = shard.get(key).is_some_and(|e| e.expires_at != 0);
    if had {
        shard.set_expires(key, 0);
        event(ctx, NotifyClass::Generic, "persist", key);
    }
    encode::write_integer(ctx.out, i64::from(had));
    Ok(())
}

const SAME_OBJECT: CmdError = CmdError::Static("ERR source and destination objects are the same");

/// Puts a copy of `entry` at `key` of `shard` (COPY's destination side).
fn place(shard: &mut crate::store::Shard, key: &[u8], entry: &Entry) {
    shard.insert_anew(key, entry.value.clone(), entry.expires_at);
}

fn copy(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let src_db = ctx.client.db;
    let mut dst_db = src_db;
    let mut replace = false;
    let mut j = 3;
    while j < args.len() {
        if is(&args[j], "replace") {
            replace = true;
        } else if is(&args[j], "db") && j + 1 < args.len() {
            dst_db = super::args::db_index(&args[j + 1], ctx.shared.store.db_count())?;
            j += 1;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    if ctx.shared.cluster.enabled() && (src_db != 0 || dst_db != 0) {
        return Err(CmdError::Static(
            "ERR Copying to another database is not allowed in cluster mode",
        ));
    }
    let (src, dst) = (&args[1][..], &args[2][..]);
    if src_db == dst_db && src == dst {
        return Err(SAME_OBJECT);
    }
    let changes = crate::store::dirty::count();
    // One step under both locks: look at the source, the destination, then write.
    let run = |from: &mut crate::store::Shard, to: &mut crate::store::Shard| -> i64 {
        let Some(entry) = as_read(|| from.get(src).cloned()) else {
            return 0;
        };
        // Redis's lookup for writing: a use of the destination, replaced or not.
        if to.get(dst).is_some() && !replace {
            return 0;
        }
        place(to, dst, &entry);
        1
    };
    let done = if src_db == dst_db {
        let mut locked = ctx.lock_keys([src, dst]);
        match as_read(|| locked.shard(src).get(src).cloned()) {
            None => 0,
            Some(entry) => {
                let to = locked.shard(dst);
                if to.get(dst).is_some() && !replace {
                    0
                } else {
                    place(to, dst, &entry);
                    1
                }
            }
        }
    } else {
        ctx.with_two_dbs((src_db, src), (dst_db, dst), |a, b| run(a, b))
            .unwrap_or(0)
    };
    if done == 1 {
        crate::store::dirty::count_as_one(changes);
        event_on(ctx.shared, NotifyClass::Generic, "copy_to", dst_db, dst);
    }
    encode::write_integer(ctx.out, done);
    Ok(())
}

fn move_key(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.shared.cluster.enabled() {
        return Err(CmdError::Static("ERR MOVE is not allowed in cluster mode"));
    }
    let dst_db = super::args::db_index(&args[2], ctx.shared.store.db_count())?;
    let src_db = ctx.client.db;
    if dst_db == src_db {
        return Err(SAME_OBJECT);
    }
    let key = &args[1][..];
    let eviction = &ctx.shared.store.events().eviction;
    let changes = crate::store::dirty::count();
    let moved = ctx
        .with_two_dbs((src_db, key), (dst_db, key), |from, to| {
            if !from.contains(key) || to.contains(key) {
                return 0;
            }
            match from.remove(key) {
                Some(entry) => {
                    to.insert(key, entry.value, entry.expires_at);
                    to.set_access(key, eviction.touched(entry.access));
                    1
                }
                None => 0,
            }
        })
        .unwrap_or(0);
    if moved == 1 {
        crate::store::dirty::count_as_one(changes);
        event_on(ctx.shared, NotifyClass::Generic, "move_from", src_db, key);
        event_on(ctx.shared, NotifyClass::Generic, "move_to", dst_db, key);
    }
    encode::write_integer(ctx.out, moved);
    Ok(())
}

pub(crate) use crate::store::encoding::{encoding_name, EncodingLimits};

/// Runs `f` on the live entry of `args[2]`, or answers a null: one lookup, counted in
/// keyspace_hits/misses as Redis's OBJECT counts it.
fn with_object(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    f: impl FnOnce(&Entry, &mut bytes::BytesMut) -> CmdResult,
) -> CmdResult {
    let key = &args[2];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    // OBJECT looks without counting as a use, and a miss fires no `keymiss`.
    match shard.get_untouched_quietly(key) {
        Some(entry) => f(entry, ctx.out),
        None => {
            encode::write_null_bulk(ctx.out, proto);
            Ok(())
        }
    }
}

fn object_encoding(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let limits = EncodingLimits::now(&ctx.shared.hot);
    with_object(ctx, args, |e, out| {
        encode::write_bulk(out, encoding_name(&e.value, &limits).as_bytes());
        Ok(())
    })
}

fn object_freq(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let eviction = &ctx.shared.store.events().eviction;
    with_object(ctx, args, |e, out| {
        if !eviction.policy().is_lfu() {
            return Err(CmdError::Static("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
        }
        encode::write_integer(out, i64::from(eviction.lfu_decayed(e.access)));
        Ok(())
    })
}

fn object_idletime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let eviction = &ctx.shared.store.events().eviction;
    with_object(ctx, args, |e, out| {
        if eviction.policy().is_lfu() {
            return Err(CmdError::Static("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
        }
        encode::write_integer(out, eviction.idle_seconds(e.access) as i64);
        Ok(())
    })
}

fn object_refcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let eviction = &ctx.shared.store.events().eviction;
    with_object(ctx, args, |e, out| {
        encode::write_integer(out, refcount(eviction, &e.value));
        Ok(())
    })
}

/// The reference count Redis shows for a value (OBJECT REFCOUNT, DEBUG OBJECT): Redis
/// shares the objects of the integers 0..9999 (refcount INT_MAX), except under
/// `maxmemory` with an LRU or LFU policy, where each key needs its own access field
/// (redline keeps one per key anyway, so only the figure follows that rule).
pub fn refcount(eviction: &crate::store::evict::Eviction, value: &crate::store::Value) -> i64 {
    let sharing = eviction.maxmemory() == 0 || !eviction.policy().keeps_own_objects();
    let shared = sharing && matches!(value, crate::store::Value::Int(n) if (0..10000).contains(n));
    if shared {
        i64::from(i32::MAX)
    } else {
        1
    }
}

fn object_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    const LINES: &[&str] = &[
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Prints this help.",
    ];
    super::reply::help(ctx.out, LINES);
    Ok(())
}
