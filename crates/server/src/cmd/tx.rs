//! Transactions (Redis's `multi.c`): MULTI EXEC DISCARD WATCH UNWATCH.
//!
//! MULTI makes the dispatcher queue commands (after the same lookup, arity and auth
//! checks as always; a refusal marks the transaction failed). EXEC locks the shards the
//! transaction needs (those of its keys when the command table names them all, else every
//! shard) in one global order ([`Held`]), checks the WATCHed keys, runs the queued commands with
//! their shard access redirected to the held guards, and releases everything: the
//! transaction is atomic and isolated, and other connections only wait for its length.
//!
//! WATCH registers the client with the key's shard ([`crate::store::Shard::watch`]);
//! every write path reports its change there (including expiry, FLUSHDB/FLUSHALL and
//! SWAPDB, with Redis's exceptions for stale keys), so EXEC sees any change by anyone.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use redline_resp::command::CommandSpec;
use redline_resp::encode;

use super::reply::{ok, CmdError, CmdResult};
use super::{Ctx, Handler};
use crate::net::client::{ClientState, WatchedKey};
use crate::shared::Shared;
use crate::store::Held;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("multi", multi),
    ("exec", exec),
    ("discard", discard),
    ("watch", watch),
    ("unwatch", unwatch),
];

/// Commands that run at once even inside MULTI (Redis's list).
pub fn runs_inside_multi(name: &str) -> bool {
    matches!(
        name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

fn multi(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(CmdError::Static("ERR MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(Vec::new());
    ctx.client.multi_bytes = 0;
    ctx.client.multi_failed = false;
    ok(ctx.out);
    Ok(())
}

fn discard(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx.client.multi.take().is_none() {
        return Err(CmdError::Static("ERR DISCARD without MULTI"));
    }
    ctx.client.multi_failed = false;
    unwatch_all(ctx.shared, ctx.client);
    ok(ctx.out);
    Ok(())
}

fn watch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(CmdError::Static("ERR WATCH inside MULTI is not allowed"));
    }
    let db = ctx.client.db;
    if ctx.client.watched.is_empty() {
        ctx.client.watch_id = NEXT_WATCH_ID.fetch_add(1, Ordering::Relaxed);
    }
    for key in &args[1..] {
        if ctx
            .client
            .watched
            .iter()
            .any(|w| w.db == db && w.key == key[..])
        {
            continue;
        }
        register_watch(ctx, db, key);
        let turns = ctx.client.mailbox.input_turns();
        ctx.shared.watching.add(ctx.client.id, turns, key);
        ctx.client.watched.push(WatchedKey {
            db,
            key: key.to_vec(),
        });
    }
    ok(ctx.out);
    Ok(())
}

/// Registers this client's WATCH of `key` in its shard. A BUSY script holding the shard
/// registers it instead, before its next command, where Redis would run the WATCH
/// (between two of the script's steps); waiting here for the shard would answer only
/// once the script ended, after writes the WATCH must see.
fn register_watch(ctx: &mut Ctx<'_>, db: usize, key: &[u8]) {
    let watch_id = ctx.client.watch_id;
    let store = ctx.shared.store.db(db);
    if let Some(mut shard) = store.try_lock(key) {
        shard.watch(key, watch_id);
        return;
    }
    let flags = &ctx.shared.scripting.flags;
    if flags.busy() {
        let watch = crate::scripting::BusyWatch {
            db,
            key: key.to_vec(),
            watch_id,
        };
        if flags.watches.defer(watch).is_ok() {
            return;
        }
    }
    ctx.lock(key).watch(key, watch_id);
}

fn unwatch(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    // Queued inside EXEC, whose transaction holds the shards, the releases are left to
    // the background cycle (`Store::release_watch` never waits): EXEC has already
    // checked the watches, and a watch id is never reused.
    unwatch_all(ctx.shared, ctx.client);
    ok(ctx.out);
    Ok(())
}

/// Whether the transaction being queued is bound to fail: a command was refused while
/// queueing, or a watched key changed since WATCH (Redis's `CLIENT_DIRTY_EXEC` and
/// `CLIENT_DIRTY_CAS`). Redis queues nothing more then, so EXEC's checks (the cluster's
/// slots among them) and CLIENT LIST's `multi=` see only what came before. A key whose
/// shard a BUSY script holds counts as unchanged: EXEC finds it anyway.
pub fn bound_to_fail(ctx: &Ctx<'_>) -> bool {
    if ctx.client.multi_failed {
        return true;
    }
    let watch_id = ctx.client.watch_id;
    ctx.client.watched.iter().any(|w| {
        let db = ctx.shared.store.db(w.db);
        let shard = match db.try_lock(&w.key) {
            Some(shard) => shard,
            None if ctx.shared.scripting.flags.busy() => return false,
            None => db.lock(&w.key),
        };
        shard.watch_changed(&w.key, watch_id)
    })
}

/// Where each client's run of WATCHes gets its id (see `ClientState::watch_id`).
static NEXT_WATCH_ID: AtomicU64 = AtomicU64::new(1);

/// Forgets every WATCH of a client (EXEC, DISCARD, UNWATCH, RESET, disconnect), without
/// waiting for a shard a script holds (see `Store::release_watch`).
pub fn unwatch_all(shared: &Shared, client: &mut ClientState) {
    if client.watched.is_empty() {
        return;
    }
    shared
        .watching
        .remove(client.id, client.watched.iter().map(|w| &w.key[..]));
    for w in client.watched.drain(..) {
        shared.store.release_watch(w.db, &w.key, client.watch_id);
    }
}

/// Whether this command, which may change keys, waits first for the connections that
/// WATCH those keys and have input they have not run yet: an EXEC among it would have
/// run before this command in Redis, and found its keys unchanged (see
/// [`crate::net::input_turns`]). The wait goes into `input_wait`.
#[inline]
pub fn lets_watchers_run_first(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> bool {
    // One load for every command while nobody watches.
    ctx.shared.watching.any()
        && (spec.may_replicate() || spec.name == "exec")
        && wait_for_watchers(ctx, spec, args)
}

#[cold]
fn wait_for_watchers(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> bool {
    let (mut keys, mut positions) = (Vec::new(), Vec::new());
    let precise = written_keys(ctx, spec, args, &mut keys, &mut positions);
    let unsettled = ctx.shared.watching.unsettled(
        ctx.client.id,
        ctx.client.mailbox.input_turns().waits_before(),
        precise.then_some(&keys[..]),
    );
    ctx.client.waits_for_inputs(unsettled)
}

/// Adds to `keys` the keys the command (or EXEC's queued commands) names; false when it
/// may change keys it does not name (a script, FLUSHALL, SWAPDB...). `positions` is
/// room for the key positions, reused across EXEC's commands.
fn written_keys<'a>(
    ctx: &'a Ctx<'_>,
    spec: &CommandSpec,
    args: &'a [Bytes],
    keys: &mut Vec<&'a [u8]>,
    positions: &mut Vec<usize>,
) -> bool {
    if spec.name == "exec" {
        let queued = ctx.client.multi.iter().flatten();
        return queued.into_iter().all(|queued| {
            ctx.shared.renamed.resolve(queued).is_none_or(|spec| {
                !spec.may_replicate() || written_keys(ctx, spec, queued, keys, positions)
            })
        });
    }
    if matches!(spec.name, "flushall" | "flushdb" | "swapdb") || super::is_script(spec) {
        return false;
    }
    // A list it pushes to (or makes: RENAME, COPY, SORT STORE...) can serve a blocked
    // BLMOVE, which writes its own destination.
    if ctx.shared.blocking.any() && matches!(spec.docs.group, "list" | "generic") {
        return false;
    }
    positions.clear();
    if redline_resp::command::keys_into(spec, args, positions).is_err() {
        return false;
    }
    keys.extend(
        positions
            .iter()
            .filter_map(|&i| args.get(i))
            .map(|k| &k[..]),
    );
    true
}

/// Commands outside the data families whose effect stays within the keys the command
/// table gives for them (or that touch no key at all).
const NARROW_OK: &[&str] = &[
    "del",
    "unlink",
    "exists",
    "touch",
    "type",
    "ttl",
    "pttl",
    "expire",
    "pexpire",
    "expireat",
    "pexpireat",
    "expiretime",
    "pexpiretime",
    "persist",
    "rename",
    "renamenx",
    "ping",
    "echo",
    "time",
    "publish",
    "spublish",
];

/// The shards a transaction needs: those of the WATCHed keys and of every queued
/// command's keys, all in the current database. `None` (hold everything) as soon as one
/// command may reach beyond its named keys or change the database.
pub(crate) fn plan(
    shared: &Shared,
    db: usize,
    queued: &[Vec<Bytes>],
    watched: &[WatchedKey],
) -> Option<Vec<(usize, usize)>> {
    use redline_resp::command::{self, AclCategories};
    let data = AclCategories::STRING
        .union(AclCategories::LIST)
        .union(AclCategories::HASH)
        .union(AclCategories::SET)
        .union(AclCategories::SORTEDSET)
        .union(AclCategories::BITMAP);
    let mut shards: Vec<(usize, usize)> = watched
        .iter()
        .map(|w| (w.db, shared.store.db(w.db).shard_index(&w.key)))
        .collect();
    let store = shared.store.db(db);
    for args in queued {
        let spec = shared.renamed.resolve(args)?;
        let in_family = spec.acl_categories.intersects(data)
            && !matches!(spec.name, "sort" | "sort_ro" | "copy" | "move");
        if !in_family && !NARROW_OK.contains(&spec.name) {
            return None;
        }
        for i in command::keys(args).ok()? {
            shards.push((db, store.shard_index(args.get(i)?)));
        }
    }
    Some(shards)
}

fn exec(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let Some(queued) = ctx.client.multi.take() else {
        return Err(CmdError::Static("ERR EXEC without MULTI"));
    };
    if std::mem::take(&mut ctx.client.multi_failed) {
        unwatch_all(ctx.shared, ctx.client);
        return Err(CmdError::Static(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let shared = ctx.shared;
    // The transaction's commands judge expiry at one instant, EXEC's start, as in Redis:
    // a key alive for the first is alive for the last.
    let _frozen = crate::store::FrozenTime::now();
    let held = RefCell::new(
        match plan(shared, ctx.client.db, &queued, &ctx.client.watched) {
            Some(shards) => Held::some(&shared.store, shards),
            None => Held::all(&shared.store),
        },
    );
    // A watched key changed, or expired since WATCH: the transaction does not run.
    let watch_id = ctx.client.watch_id;
    let touched = ctx.client.watched.iter().any(|w| {
        let mut held = held.borrow_mut();
        let db = shared.store.db(w.db);
        held.get_or_first(w.db, db.shard_index(&w.key))
            .watch_broken(&w.key, watch_id)
    });
    if touched {
        drop(held);
        unwatch_all(shared, ctx.client);
        encode::write_null_array(ctx.out, ctx.client.protocol);
        return Ok(());
    }
    encode::write_array_len(ctx.out, queued.len());
    {
        let mut inner = Ctx {
            shared,
            client: &mut *ctx.client,
            out: &mut *ctx.out,
            held: Some(&held),
            nested: true,
        };
        for args in &queued {
            super::execute(&mut inner, args);
        }
        if !ctx.nested {
            // The transaction's effects go out as one piece while it still holds its
            // shards.
            inner.nested = false;
            crate::repl::flush(&mut inner);
        }
    }
    drop(held);
    unwatch_all(shared, ctx.client);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn exec_holds_only_named_keys_when_it_can() {
        let shared = Shared::new(crate::Config::default(), 0);
        let simple = [
            cmd(&["SET", "a", "1"]),
            cmd(&["INCR", "b"]),
            cmd(&["DEL", "c"]),
        ];
        let shards = plan(&shared, 0, &simple, &[]).expect("narrow plan");
        assert_eq!(shards.len(), 3);
        let zunion = [cmd(&["ZUNIONSTORE", "d", "2", "x", "y"])];
        assert_eq!(plan(&shared, 0, &zunion, &[]).map(|s| s.len()), Some(3));
        for wide in [
            cmd(&["SELECT", "1"]),
            cmd(&["FLUSHDB"]),
            cmd(&["KEYS", "*"]),
            cmd(&["SORT", "l", "BY", "w_*"]),
            cmd(&["SWAPDB", "0", "1"]),
            cmd(&["ZUNIONSTORE", "d", "x", "y"]),
        ] {
            assert!(
                plan(&shared, 0, std::slice::from_ref(&wide), &[]).is_none(),
                "{wide:?}"
            );
        }
    }
}
