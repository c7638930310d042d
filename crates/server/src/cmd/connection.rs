//! Connection and server commands: PING ECHO SELECT SWAPDB QUIT RESET MONITOR HELLO AUTH
//! DBSIZE FLUSHDB FLUSHALL TIME SHUTDOWN. COMMAND, CLIENT, CONFIG and DEBUG have their own
//! files.

use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes};
use redline_resp::{encode, Protocol};

use super::args::{int, is};
use super::reply::{self, ok, CmdError, CmdResult, DB_INDEX, SYNTAX, WRONGPASS};
use super::{Ctx, Handler};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("ping", ping),
    ("echo", echo),
    ("select", select),
    ("swapdb", swapdb),
    ("quit", quit),
    ("reset", reset),
    ("monitor", monitor),
    ("hello", hello),
    ("auth", auth),
    ("dbsize", dbsize),
    ("flushdb", flushdb),
    ("flushall", flushall),
    ("time", time),
    ("shutdown", shutdown),
];

/// The version clients see: the Redis whose behaviour we reproduce.
pub const REDIS_VERSION: &str = "7.0.15";

fn ping(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.client.protocol == Protocol::Resp2 && ctx.client.in_pubsub() && args.len() <= 2 {
        // In pub/sub mode RESP2 has no room for a plain reply: a two-element array.
        encode::write_array_len(ctx.out, 2);
        encode::write_bulk(ctx.out, b"pong");
        encode::write_bulk(ctx.out, args.get(1).map_or(&b""[..], |a| &a[..]));
        return Ok(());
    }
    match args.len() {
        1 => ctx.out.put_slice(b"+PONG\r\n"),
        2 => encode::write_bulk(ctx.out, &args[1]),
        _ => return Err(reply::wrong_arity("ping")),
    }
    Ok(())
}

fn echo(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    encode::write_bulk(ctx.out, &args[1]);
    Ok(())
}

fn select(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.shared.cluster.enabled() && super::args::c_int(&args[1])? != 0 {
        return Err(CmdError::Static(
            "ERR SELECT is not allowed in cluster mode",
        ));
    }
    ctx.client.db = super::args::db_index(&args[1], ctx.shared.store.db_count())?;
    describe(ctx);
    ok(ctx.out);
    Ok(())
}

fn swapdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.shared.cluster.enabled() {
        return Err(CmdError::Static(
            "ERR SWAPDB is not allowed in cluster mode",
        ));
    }
    let parse = |ctx: &Ctx<'_>, arg: &[u8]| -> Result<usize, CmdError> {
        let n = int(arg).map_err(|_| CmdError::Static("ERR invalid first DB index"))?;
        if n < 0 || n as usize >= ctx.shared.store.db_count() {
            return Err(DB_INDEX);
        }
        Ok(n as usize)
    };
    let a = parse(ctx, &args[1])?;
    let b = parse(ctx, &args[2]).map_err(|e| match e {
        CmdError::Static("ERR invalid first DB index") => {
            CmdError::Static("ERR invalid second DB index")
        }
        other => other,
    })?;
    // One change, as Redis counts a swap, however many shards it took.
    let changes = crate::store::dirty::count();
    ctx.swap_dbs(a, b);
    crate::store::dirty::count_as_one(changes);
    ok(ctx.out);
    Ok(())
}

/// Mirrors the client's name and database into the client table (CLIENT LIST).
pub(super) fn describe(ctx: &Ctx<'_>) {
    ctx.shared
        .clients
        .describe(ctx.client.id, ctx.client.name.clone(), ctx.client.db);
}

fn quit(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ok(ctx.out);
    ctx.client.close_after_reply = true;
    Ok(())
}

/// MONITOR: from now on the connection receives every command the server runs.
fn monitor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx.nested || ctx.client.multi.is_some() {
        return Err(CmdError::Static("ERR MONITOR isn't allowed inside MULTI"));
    }
    if !ctx.client.monitor {
        ctx.client.monitor = true;
        ctx.shared
            .monitors
            .add(ctx.client.id, ctx.client.mailbox.clone());
    }
    ok(ctx.out);
    Ok(())
}

fn reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.client.db = 0;
    ctx.client.protocol = Protocol::Resp2;
    ctx.client.name = None;
    describe(ctx);
    ctx.client.user = None;
    ctx.client.authenticated = !ctx.shared.acl.auth_required();
    ctx.shared.clients.set_user(ctx.client.id, None);
    ctx.client.multi = None;
    ctx.client.multi_failed = false;
    super::tx::unwatch_all(ctx.shared, ctx.client);
    super::pubsub::unsubscribe_all(ctx.shared, ctx.client);
    super::tracking::disable(ctx);
    if std::mem::take(&mut ctx.client.monitor) {
        ctx.shared.monitors.remove(ctx.client.id);
    }
    ctx.client.mailbox.set_protocol(Protocol::Resp2);
    ctx.client.readonly = false;
    ctx.client.asking = false;
    // Replies come back on, this one included (a RESET being skipped stays skipped).
    if ctx.client.reply == crate::net::client::ReplyMode::Off {
        ctx.client.reply_switched_at = Some(ctx.out.len());
        ctx.client.reply = crate::net::client::ReplyMode::On;
    }
    ctx.out.put_slice(b"+RESET\r\n");
    Ok(())
}

/// Authenticates the connection as `user` when `password` opens it (Redis's
/// `ACLAuthenticateUser`); WRONGPASS otherwise, the connection's user unchanged.
fn authenticate(ctx: &mut Ctx<'_>, command: &[u8], user: &[u8], password: &[u8]) -> CmdResult {
    let Some(cell) = ctx.shared.acl.authenticate(user, password) else {
        super::acl::log_refusal(ctx, "auth", command, user);
        return Err(WRONGPASS);
    };
    let cell = (!std::sync::Arc::ptr_eq(&cell, ctx.shared.acl.default_user())).then_some(cell);
    ctx.shared.clients.set_user(ctx.client.id, cell.clone());
    ctx.client.user = cell;
    ctx.client.authenticated = true;
    Ok(())
}

fn auth(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (user, password) = match args.len() {
        2 => {
            if ctx.shared.acl.default_user().rules().nopass {
                return Err(CmdError::Static("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"));
            }
            (&b"default"[..], &args[1][..])
        }
        3 => (&args[1][..], &args[2][..]),
        _ => return Err(SYNTAX),
    };
    authenticate(ctx, &args[0], user, password)?;
    ok(ctx.out);
    Ok(())
}

fn hello(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut protocol = ctx.client.protocol;
    let mut i = 1;
    if let Some(version) = args.get(1) {
        let v = int(version).map_err(|_| {
            CmdError::Static("ERR Protocol version is not an integer or out of range")
        })?;
        protocol = match v {
            2 => Protocol::Resp2,
            3 => Protocol::Resp3,
            _ => return Err(CmdError::Static("NOPROTO unsupported protocol version")),
        };
        i = 2;
    }
    let mut credentials = None;
    let mut name = None;
    while i < args.len() {
        let more = args.len() - i - 1;
        if is(&args[i], "auth") && more >= 2 {
            credentials = Some((args[i + 1].clone(), args[i + 2].clone()));
            i += 3;
        } else if is(&args[i], "setname") && more >= 1 {
            name = Some(args[i + 1].clone());
            i += 2;
        } else {
            return Err(reply::quoting(
                "ERR Syntax error in HELLO option '",
                &args[i],
                usize::MAX,
                "'",
            ));
        }
    }
    if let Some((user, password)) = &credentials {
        authenticate(ctx, &args[0], user, password)?;
    }
    if !ctx.client.authenticated && ctx.shared.acl.auth_required() {
        return Err(CmdError::Static(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        ));
    }
    if let Some(name) = name {
        super::client::validate_client_name(&name)?;
        ctx.client.name = (!name.is_empty()).then(|| name.to_vec());
        describe(ctx);
    }
    ctx.client.protocol = protocol;
    ctx.client.mailbox.set_protocol(protocol);
    let out = &mut *ctx.out;
    encode::write_map_len(out, protocol, 7);
    encode::write_bulk(out, b"server");
    encode::write_bulk(out, b"redis");
    encode::write_bulk(out, b"version");
    encode::write_bulk(out, REDIS_VERSION.as_bytes());
    encode::write_bulk(out, b"proto");
    encode::write_integer(out, if protocol == Protocol::Resp3 { 3 } else { 2 });
    encode::write_bulk(out, b"id");
    encode::write_integer(out, ctx.client.id as i64);
    let mode: &[u8] = if ctx.shared.cluster.enabled() {
        b"cluster"
    } else {
        b"standalone"
    };
    // A replica whatever its link's state, as Redis (which asks `masterhost`).
    let role: &[u8] = if ctx.shared.repl.is_replica() {
        b"replica"
    } else {
        b"master"
    };
    for (name, value) in [(&b"mode"[..], mode), (b"role", role)] {
        encode::write_bulk(out, name);
        encode::write_bulk(out, value);
    }
    encode::write_bulk(out, b"modules");
    encode::write_array_len(out, 0);
    Ok(())
}

fn dbsize(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    encode::write_integer(ctx.out, ctx.db_len(ctx.client.db) as i64);
    Ok(())
}

/// FLUSHALL / FLUSHDB's mode: ASYNC, SYNC, or `lazyfree-lazy-user-flush` when none.
fn flush_is_async(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<bool, CmdError> {
    match args.get(1) {
        None => Ok(ctx.shared.store.lazyfree.user_flush.load(Ordering::Relaxed)),
        Some(a) if args.len() == 2 && is(a, "async") => Ok(true),
        Some(a) if args.len() == 2 && is(a, "sync") => Ok(false),
        Some(_) => Err(SYNTAX),
    }
}

fn flushdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let lazy = flush_is_async(ctx, args)?;
    clear_db(ctx, ctx.client.db, lazy);
    ok(ctx.out);
    Ok(())
}

fn flushall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let lazy = flush_is_async(ctx, args)?;
    // A BGSAVE of the keys being flushed stops, as Redis kills its child, and so does a
    // disk-less sync's image (its replicas sync again, from the emptied dataset).
    ctx.shared.persistence.abort_bgsave();
    ctx.shared.repl.disk_less.abort_running();
    // With save points, Redis saves the emptied dataset at once, so a restart cannot
    // bring the flushed keys back from an older dump.
    let save = crate::persist::snapshot::has_save_points(ctx.shared);
    if save && !ctx.client.in_script {
        let shared = ctx.shared;
        super::persistence::with_all_shards(ctx, |held| {
            for db in 0..shared.store.db_count() {
                for i in 0..shared.store.db(db).shard_count() {
                    empty_shard(shared, held.shard(db, i), lazy);
                }
            }
            // A failed save is logged and reported by INFO, as in Redis.
            let _ = crate::persist::snapshot::save_held(shared, held, false);
        });
        saved_now(ctx.client);
    } else {
        for db in 0..ctx.shared.store.db_count() {
            clear_db(ctx, db, lazy);
        }
        // A script holds the interpreter whose function libraries the image needs: the
        // dispatcher saves once the script is over.
        ctx.client.save_after_command |= save;
    }
    ok(ctx.out);
    Ok(())
}

/// The dataset was just saved: this connection's changes not yet added to the total,
/// and those of the running command so far, are on disk.
pub fn saved_now(client: &mut crate::net::client::ClientState) {
    client.changes = 0;
    client.changes_saved_at = Some(crate::store::dirty::count());
}

/// Empties database `db`, shard by shard (each shard under its own lock, or the ones
/// EXEC holds).
pub(super) fn clear_db(ctx: &Ctx<'_>, db: usize, lazy: bool) {
    for i in 0..ctx.shared.store.db(db).shard_count() {
        empty_shard(ctx.shared, &mut ctx.lock_in(db, i), lazy);
    }
}

/// Empties one shard; with `lazy` its keys are dropped by the background freer.
fn empty_shard(shared: &crate::shared::Shared, shard: &mut crate::store::Shard, lazy: bool) {
    if lazy {
        let (garbage, keys) = shard.take_all();
        shared.store.lazyfree.free_all(garbage, keys);
    } else {
        shard.clear();
    }
}

fn time(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    encode::write_array_len(ctx.out, 2);
    encode::write_bulk(ctx.out, now.as_secs().to_string().as_bytes());
    encode::write_bulk(ctx.out, now.subsec_micros().to_string().as_bytes());
    Ok(())
}

fn shutdown(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    use crate::persist::graceful::{self, Requested};
    use crate::persist::shutdown::ShutdownFlags;
    let abort = args[1..].iter().any(|a| is(a, "abort"));
    let words = args[1..]
        .iter()
        .filter(|a| !is(a, "abort"))
        .map(|a| std::str::from_utf8(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| SYNTAX)?;
    let flags = ShutdownFlags::from_words(words.iter().copied()).ok_or(SYNTAX)?;
    if abort {
        // ABORT takes no other flag, as in Redis.
        if !words.is_empty() {
            return Err(SYNTAX);
        }
        if !graceful::abort(ctx.shared) {
            return Err(CmdError::Static("ERR No shutdown in progress."));
        }
        ok(ctx.out);
        return Ok(());
    }
    // A BUSY script lets SHUTDOWN through, but only NOSAVE may stop the server then.
    let scripting = &ctx.shared.scripting.flags;
    if !flags.nosave && scripting.busy() {
        return Err(CmdError::Static(scripting.busy_error()));
    }
    tracing::warn!("User requested shutdown...");
    match graceful::request(ctx.shared, flags, flags.now) {
        // Like Redis: no reply, the connection just closes.
        Requested::Exiting => ctx.client.close_after_reply = true,
        Requested::Waiting(cancelled) => ctx.client.shutdown_wait = Some(cancelled),
        Requested::Failed => return Err(CmdError::Static(SHUTDOWN_FAILED)),
    }
    Ok(())
}

/// What a SHUTDOWN that could not exit answers (a failed save, or cancelled).
pub const SHUTDOWN_FAILED: &str = "ERR Errors trying to SHUTDOWN. Check logs.";
