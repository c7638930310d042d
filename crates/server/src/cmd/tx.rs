//! Transactions (Redis's `multi.c`): MULTI EXEC DISCARD WATCH UNWATCH.
//!
//! MULTI makes the dispatcher queue commands (after the same lookup, arity and auth
//! checks as always; a refusal marks the transaction failed). EXEC locks every shard in
//! one global order ([`Held`]), checks the WATCHed keys, runs the queued commands with
//! their shard access redirected to the held guards, and releases everything: the
//! transaction is atomic and isolated, and other connections only wait for its length.
//!
//! WATCH records each key's per-shard version ([`crate::store::Shard::watch`]); every
//! write path bumps it (including expiry, FLUSHDB/FLUSHALL and SWAPDB), so EXEC sees any
//! change by anyone.

use std::cell::RefCell;

use bytes::Bytes;
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
    for key in &args[1..] {
        if ctx
            .client
            .watched
            .iter()
            .any(|w| w.db == db && w.key == key[..])
        {
            continue;
        }
        let mut shard = ctx.lock(key);
        let expired_at_watch = shard.is_logically_expired(key);
        let version = shard.watch(key);
        drop(shard);
        ctx.client.watched.push(WatchedKey {
            db,
            key: key.to_vec(),
            version,
            expired_at_watch,
        });
    }
    ok(ctx.out);
    Ok(())
}

fn unwatch(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    // Queued UNWATCH runs inside EXEC, whose transaction holds the shards: go through
    // the context rather than locking them again.
    for w in std::mem::take(&mut ctx.client.watched) {
        let index = ctx.shared.store.db(w.db).shard_index(&w.key);
        ctx.lock_in(w.db, index).unwatch(&w.key);
    }
    ok(ctx.out);
    Ok(())
}

/// Forgets every WATCH of a client (EXEC, DISCARD, UNWATCH, RESET, disconnect).
pub fn unwatch_all(shared: &Shared, client: &mut ClientState) {
    for w in client.watched.drain(..) {
        shared.store.db(w.db).lock(&w.key).unwatch(&w.key);
    }
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
    let held = RefCell::new(Held::all(&shared.store));
    // A watched key changed, or expired since WATCH: the transaction does not run.
    let touched = ctx.client.watched.iter().any(|w| {
        let mut held = held.borrow_mut();
        let db = shared.store.db(w.db);
        let shard = held.get_or_first(w.db, db.shard_index(&w.key));
        shard.watch_version(&w.key) != w.version
            || (!w.expired_at_watch && shard.is_logically_expired(&w.key))
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
        };
        for args in &queued {
            super::execute(&mut inner, args);
        }
    }
    drop(held);
    unwatch_all(shared, ctx.client);
    Ok(())
}
