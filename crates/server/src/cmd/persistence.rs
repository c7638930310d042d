//! SAVE, BGSAVE, LASTSAVE and DEBUG RELOAD: the commands over
//! [`crate::persist::snapshot`].

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use redline_resp::encode;

use super::args::is;
use super::reply::{ok, CmdError, CmdResult, SYNTAX};
use super::{Ctx, Handler};
use crate::persist::snapshot;
use crate::store::ready::Signal;
use crate::store::{Held, ShardMap};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("save", save),
    ("bgsave", bgsave),
    ("lastsave", lastsave),
    ("bgrewriteaof", bgrewriteaof),
];

/// BGREWRITEAOF: a new base image and incremental file (with an RDB base, written in the
/// background after the reply; a base of commands is written before it).
fn bgrewriteaof(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx.shared.aof.rewriting.load(Ordering::Acquire) {
        return Err(CmdError::Static(
            "ERR Background append only file rewriting already in progress",
        ));
    }
    if ctx.nested
        || ctx
            .shared
            .persistence
            .bgsave_running
            .load(Ordering::Acquire)
    {
        // Inside EXEC the transaction holds the shards the image needs, and during a
        // BGSAVE two snapshots would compete: the cron runs it later, as Redis
        // schedules a rewrite in either case.
        ctx.shared
            .aof
            .rewrite_scheduled
            .store(true, Ordering::Release);
        encode::write_simple(ctx.out, b"Background append only file rewriting scheduled");
        return Ok(());
    }
    crate::persist::aof::rewrite(ctx.shared).map_err(|e| {
        CmdError::Owned(format!(
            "ERR Can't execute an AOF background rewriting: {e}"
        ))
    })?;
    encode::write_simple(ctx.out, b"Background append only file rewriting started");
    Ok(())
}

/// The waited keys a reload about to empty every database signals to their readers:
/// those holding a stream now (see [`super::blocking::waited_streams`]), found before
/// any shard is taken; inside a transaction, which holds the shards, `None`.
fn streams_before_reload(ctx: &Ctx<'_>) -> Option<Vec<Signal>> {
    (!ctx.nested).then(|| super::blocking::waited_streams(ctx.shared))
}

/// A reload emptied every database: the `streams` found before it are signalled, as
/// Redis's emptying signals them. Inside a transaction every waited key is, once it is
/// over (see [`crate::store::ready::Replaced`]).
fn note_emptied(ctx: &mut Ctx<'_>, streams: Option<Vec<Signal>>) {
    match streams {
        Some(streams) => streams.into_iter().for_each(crate::store::ready::push),
        None => {
            let emptied = crate::store::ready::Replaced::Emptied(None);
            super::blocking::note_replaced(ctx, emptied);
        }
    }
}

/// DEBUG LOADAOF: sync the AOF, empty the dataset and load it back from the AOF.
pub fn debug_loadaof(ctx: &mut Ctx<'_>) -> CmdResult {
    let shared = ctx.shared;
    if ctx.nested {
        return Err(CmdError::Static("ERR DEBUG LOADAOF is not allowed here"));
    }
    crate::persist::aof::sync(shared);
    let streams = streams_before_reload(ctx);
    // Loading from before the dataset is emptied: a rewrite whose cut comes after the
    // emptying sees the load and waits for it (see `aof::cron`).
    let loading = &shared.persistence.loading;
    loading.begin(0);
    with_all_shards(ctx, |held| {
        snapshot::clear(shared, held);
        if let Ok(mut engine) = shared.scripting.engine() {
            engine.libraries.clear();
        }
    });
    let loaded = crate::persist::aof::load(shared);
    loading.end();
    match loaded {
        Ok(_) | Err(crate::persist::aof::LoadError::Missing) => {}
        Err(crate::persist::aof::LoadError::Bad(e)) => {
            tracing::warn!("{e}");
            return Err(CmdError::Static("ERR Error trying to load the AOF"));
        }
    }
    note_emptied(ctx, streams);
    tracing::info!("Append Only File loaded by DEBUG LOADAOF");
    ok(ctx.out);
    Ok(())
}

const BGSAVE_RUNNING: &str = "ERR Background save already in progress";

fn save(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx
        .shared
        .persistence
        .bgsave_running
        .load(Ordering::Acquire)
    {
        return Err(CmdError::Static(BGSAVE_RUNNING));
    }
    ctx.shared.persistence.saves.fetch_add(1, Ordering::Relaxed);
    snapshot::save(ctx.shared).map_err(|_| CmdError::Static("ERR"))?;
    ok(ctx.out);
    Ok(())
}

fn bgsave(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let schedule = match args.get(1) {
        None => false,
        Some(a) if args.len() == 2 && is(a, "schedule") => true,
        Some(_) => return Err(SYNTAX),
    };
    let p = &ctx.shared.persistence;
    if p.bgsave_running.load(Ordering::Acquire) {
        return Err(CmdError::Static(BGSAVE_RUNNING));
    }
    let rewriting = ctx.shared.aof.rewriting.load(Ordering::Acquire);
    if ctx.nested || (schedule && rewriting) {
        // Inside EXEC the transaction holds the shards the cut needs (and Redis
        // schedules a BGSAVE there too): the cron starts it.
        p.bgsave_scheduled.store(true, Ordering::Release);
        encode::write_simple(ctx.out, b"Background saving scheduled");
        return Ok(());
    }
    if rewriting {
        // One background save at a time, as Redis runs one child.
        return Err(CmdError::Static(
            "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.",
        ));
    }
    if !crate::persist::bgsave::bgsave(ctx.shared) {
        return Err(CmdError::Static(BGSAVE_RUNNING));
    }
    encode::write_simple(ctx.out, b"Background saving started");
    Ok(())
}

fn lastsave(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let at = ctx.shared.persistence.lastsave.load(Ordering::Relaxed);
    encode::write_integer(ctx.out, i64::try_from(at).unwrap_or(i64::MAX));
    Ok(())
}

/// Runs `f` with every shard held: the transaction's when inside one, else all locked now.
pub fn with_all_shards<R>(ctx: &Ctx<'_>, f: impl FnOnce(&mut dyn ShardMap) -> R) -> R {
    match ctx.held {
        Some(held) => f(&mut *held.borrow_map()),
        None => {
            let held = RefCell::new(Held::all(&ctx.shared.store));
            let mut map = held.borrow_mut();
            f(&mut *map)
        }
    }
}

/// DEBUG RELOAD \[MERGE\] \[NOFLUSH\] \[NOSAVE\]: save the dataset to the dump file (unless
/// NOSAVE), empty it (unless NOFLUSH) and load the file back, all while every shard is
/// held, as Redis's blocking reload.
pub fn debug_reload(ctx: &mut Ctx<'_>, options: &[Bytes]) -> CmdResult {
    let (mut merge, mut flush, mut save) = (false, true, true);
    for option in options {
        if is(option, "merge") {
            merge = true;
        } else if is(option, "noflush") {
            flush = false;
        } else if is(option, "nosave") {
            save = false;
        } else {
            return Err(CmdError::Static(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    let shared = ctx.shared;
    let path = snapshot::dump_path(shared);
    // Emptying and loading are no changes to Redis; its save resets the count.
    let changes_before = crate::store::dirty::count();
    let mut saved = false;
    let streams = flush.then(|| streams_before_reload(ctx)).flatten();
    let result = with_all_shards(ctx, |held| {
        if save {
            let dirty_before = shared.persistence.dirty.load(Ordering::Relaxed);
            let written = snapshot::write_image(shared, held, &path, &[]);
            snapshot::saved(&shared.persistence, &written, dirty_before);
            written.map_err(|_| CmdError::Static("ERR Error trying to save the DB"))?;
            saved = true;
        }
        // Read as it loads, as Redis's rdbLoad reads it: never whole in memory.
        let unreadable = |_| CmdError::Static("ERR Error trying to load the RDB dump");
        let file = std::fs::File::open(&path).map_err(unreadable)?;
        let length = file.metadata().map_err(unreadable)?.len();
        if flush {
            snapshot::clear(shared, held);
            if let Ok(mut engine) = shared.scripting.engine() {
                engine.libraries.clear();
            }
        }
        // NOFLUSH keeps what is there: keys from the file replace theirs, and a library
        // already loaded fails the load unless MERGE lets the file's replace it.
        let options = snapshot::LoadOptions {
            merge,
            ..snapshot::LoadOptions::default()
        };
        crate::persist::dump_file::load_file(shared, &path, file, length, options, Some(held))
            .map_err(|_| CmdError::Static("ERR Error trying to load the RDB dump"))
    });
    crate::store::dirty::forget_since(changes_before);
    if saved {
        super::connection::saved_now(ctx.client);
    }
    if flush {
        note_emptied(ctx, streams);
    }
    result?;
    tracing::info!("DB reloaded by DEBUG RELOAD");
    ok(ctx.out);
    Ok(())
}
