//! Commands: one file per family, dispatched through the shared command table of
//! `redline_resp::command` (the same table answers COMMAND INFO/COUNT/GETKEYS, and gives
//! every arity and flag), so a command's name, arity and flags are written once.
//!
//! [`execute`] runs one command the way Redis's `processCommand` does: look the name up
//! (then the subcommand), check the arity, check authentication, check the user's ACL
//! permissions, call the handler. A
//! handler writes its reply straight into the connection's output buffer; it returns
//! `Err` only before writing anything, and the dispatcher writes that error.

pub mod acl;
pub mod args;
pub mod bitmaps;
pub mod blocking;
pub mod client;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod connection;
mod ctx;
pub mod debug;
pub mod dump;
pub mod float;
pub mod geo;
pub mod hashes;
pub mod hyperloglog;
pub mod info;
pub mod keys;
pub mod latency;
pub mod lcs;
pub mod lists;
pub mod lolwut;
pub mod long_double;
pub mod memory;
pub mod migrate;
pub mod migrate_cache;
mod module;
pub mod persistence;
pub mod pubsub;
pub mod replication;
pub mod reply;
pub mod scripting;
pub mod sets;
pub mod slowlog;
pub mod sort;
pub mod stream_groups;
pub mod streams;
pub mod strings;
pub mod tracking;
pub mod tx;
pub mod zsetops;
pub mod zsets;

use std::sync::LazyLock;

use bytes::Bytes;
use redline_resp::command::{self, CommandFlags, CommandSpec};
use redline_resp::{encode, Protocol};

pub use ctx::{Ctx, KeysRef, ShardRef};
pub use reply::{CmdError, CmdResult};

/// A command implementation: `args[0]` is the command name.
pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> CmdResult;

/// Every implemented command or subcommand, by its table name.
fn registrations() -> Vec<(&'static str, Handler)> {
    let mut all = Vec::new();
    all.extend_from_slice(connection::COMMANDS);
    all.extend_from_slice(commands::COMMANDS);
    all.extend_from_slice(client::COMMANDS);
    all.extend_from_slice(config::COMMANDS);
    all.extend_from_slice(info::COMMANDS);
    all.extend_from_slice(strings::COMMANDS);
    all.extend_from_slice(bitmaps::COMMANDS);
    all.extend_from_slice(hyperloglog::COMMANDS);
    all.extend_from_slice(lcs::COMMANDS);
    all.extend_from_slice(lolwut::COMMANDS);
    all.extend_from_slice(sort::COMMANDS);
    all.extend_from_slice(memory::COMMANDS);
    all.extend_from_slice(debug::COMMANDS);
    all.extend_from_slice(persistence::COMMANDS);
    all.extend_from_slice(replication::COMMANDS);
    all.extend_from_slice(acl::COMMANDS);
    all.extend_from_slice(keys::COMMANDS);
    all.extend_from_slice(dump::COMMANDS);
    all.extend_from_slice(lists::COMMANDS);
    all.extend_from_slice(hashes::COMMANDS);
    all.extend_from_slice(sets::COMMANDS);
    all.extend_from_slice(zsets::COMMANDS);
    all.extend_from_slice(zsetops::COMMANDS);
    all.extend_from_slice(geo::COMMANDS);
    all.extend_from_slice(latency::COMMANDS);
    all.extend_from_slice(slowlog::COMMANDS);
    all.extend_from_slice(module::COMMANDS);
    all.extend_from_slice(migrate::COMMANDS);
    all.extend_from_slice(tx::COMMANDS);
    all.extend_from_slice(blocking::COMMANDS);
    all.extend_from_slice(pubsub::COMMANDS);
    all.extend_from_slice(scripting::COMMANDS);
    all.extend_from_slice(tracking::COMMANDS);
    all.extend_from_slice(streams::COMMANDS);
    all.extend_from_slice(stream_groups::COMMANDS);
    all.extend(cluster::registrations());
    all
}

/// Resolves a table name (`get`, `client|setname`) to its entry.
fn spec_by_name(name: &str) -> Option<&'static CommandSpec> {
    match name.split_once('|') {
        Some((parent, sub)) => {
            command::lookup_subcommand(command::lookup(parent.as_bytes())?, sub.as_bytes())
        }
        None => command::lookup(name.as_bytes()),
    }
}

/// Handlers indexed by their table entry's dense id.
static HANDLERS: LazyLock<Box<[Option<Handler>]>> = LazyLock::new(|| {
    let mut handlers = vec![None; command::ENTRY_COUNT].into_boxed_slice();
    for (name, handler) in registrations() {
        if let Some(slot) = spec_by_name(name)
            .and_then(CommandSpec::index)
            .and_then(|id| handlers.get_mut(id))
        {
            *slot = Some(handler);
        }
    }
    handlers
});

/// The handler of a table entry, if implemented.
#[inline]
pub fn handler_of(spec: &'static CommandSpec) -> Option<Handler> {
    match spec.index() {
        Some(id) => HANDLERS.get(id).copied().flatten(),
        // The one entry outside Redis 7.0's table.
        None if std::ptr::eq(spec, &client::CLIENT_SETINFO) => Some(client::client_setinfo),
        None => None,
    }
}

/// Runs one command and writes its reply.
pub fn execute(ctx: &mut Ctx<'_>, args: &[Bytes]) {
    let result = dispatch(ctx, args);
    // ASKING lasts one command (a whole transaction when sent inside MULTI).
    if ctx.client.asking
        && !ctx.nested
        && ctx.client.multi.is_none()
        && !args
            .first()
            .is_some_and(|a| a.eq_ignore_ascii_case(b"asking"))
    {
        ctx.client.asking = false;
    }
    if let Err(e) = result {
        ctx.client.cmdstats.error(e.text());
        if ctx.client.is_master && !ctx.nested {
            master_got_an_error(ctx.shared, e.text(), args);
        }
        encode::write_error(ctx.out, e.text());
    }
}

/// A command of our master's stream failed here: the replica has diverged (or its
/// master sent something it cannot run). Logged and counted as Redis does (INFO
/// `unexpected_error_replies`); the master never sees the error.
fn master_got_an_error(shared: &crate::shared::Shared, error: &[u8], args: &[Bytes]) {
    let name = args
        .first()
        .and_then(|name| command::lookup(name))
        .map_or("<unknown>", |spec| spec.name);
    let error = String::from_utf8_lossy(&error[..error.len().min(4096)]);
    unexpected_error_reply(shared, "replica", "master", &error, name);
}

/// An error reply on a replication link, which carries none (`from` would send it to
/// `to`): logged as Redis logs it and counted (INFO `unexpected_error_replies`).
pub(crate) fn unexpected_error_reply(
    shared: &crate::shared::Shared,
    from: &str,
    to: &str,
    error: &str,
    command: &str,
) {
    tracing::warn!(
        "== CRITICAL == This {from} is sending an error to its {to}: '{error}' after processing the command '{command}'"
    );
    shared
        .stats
        .unexpected_error_replies
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

#[inline]
fn dispatch<'a>(ctx: &mut Ctx<'a>, args: &[Bytes]) -> CmdResult {
    // Taken first: a command that stops before it runs breaks the chain, so the next
    // one's time never includes it.
    let chained = ctx.client.batch_clock.take();
    let Some(name) = args.first() else {
        return Ok(());
    };
    // CLIENT LIST's `cmd=` names no command after one that does not exist (Redis's
    // `lastcmd` is what the lookup found: NULL).
    let Some(mut spec) = ctx.shared.renamed.lookup(name) else {
        if !ctx.nested {
            ctx.client.last_cmd = "NULL";
        }
        return reject(ctx, reply::unknown_command(args));
    };
    let top = spec.name;
    if spec.has_subcommands() && args.len() >= 2 {
        spec = match command::lookup_subcommand(spec, &args[1]) {
            Some(sub) => sub,
            // Newer than Redis 7.0, sent by current clients during their handshake.
            None if spec.name == "client" && args::is(&args[1], "setinfo") => {
                &client::CLIENT_SETINFO
            }
            None => {
                if !ctx.nested {
                    ctx.client.last_cmd = "NULL";
                }
                return reject(ctx, reply::unknown_subcommand(spec.name, &args[1]));
            }
        };
    }
    if !ctx.nested {
        ctx.client.last_cmd = spec.name;
    }
    if !spec.arity_ok(args.len()) {
        return reject_spec(ctx, spec, reply::wrong_arity(spec.name));
    }
    if spec.flags.contains(CommandFlags::PROTECTED) && !ctx.nested {
        if let Some(refusal) = protected_refusal(ctx, top) {
            return reject_spec(ctx, spec, refusal);
        }
    }
    // SAVE, SHUTDOWN, SYNC, PSYNC: they would wait on the locks EXEC holds.
    if ctx.client.multi.is_some() && !ctx.nested && spec.flags.contains(CommandFlags::NO_MULTI) {
        return reject_spec(
            ctx,
            spec,
            CmdError::Static("ERR Command not allowed inside a transaction"),
        );
    }
    if !ctx.client.authenticated
        && !spec.flags.contains(CommandFlags::NO_AUTH)
        && ctx.shared.acl.auth_required()
    {
        return reject_spec(ctx, spec, reply::NOAUTH);
    }
    let user = acl::current_user(ctx);
    // The fast path: a user allowed everything (the default user, normally) costs one
    // atomic load per command. A script's command was checked by the script's call
    // already (`scripting::call`, in Redis's order).
    if !user.unrestricted() && !ctx.client.in_script {
        let verdict = crate::acl::check::check(&user.rules(), spec, args);
        if let Err(denied) = verdict {
            acl::log_denied(ctx, spec, denied, args);
            let in_exec = ctx.nested;
            return reject_spec(ctx, spec, acl::denied_error(spec, denied, in_exec));
        }
    }
    // Held until the command has run (see `route::SlotGate`). A script's call is routed
    // after the checks of its writes and memory (below), as Redis's `scriptCall` orders
    // them: a write on a replica is READONLY there, not a key of another node.
    let routed = ctx.shared.cluster.enabled() && !ctx.client.is_master;
    let mut _slot_gate = if routed && !ctx.nested {
        cluster_route(ctx, spec, args)?
    } else {
        None
    };
    let Some(handler) = handler_of(spec) else {
        return reject_spec(ctx, spec, reply::unknown_command(args));
    };
    // A client's command is checked in Redis's order (`processCommand`): memory, the
    // disk, good replicas, a read-only replica, the pub/sub context, a stale replica,
    // loading, a busy script, a pause. A script's call in `scriptCall`'s: staleness,
    // a read-only replica, the disk, good replicas, memory, then its slot. EXEC's
    // queued commands were checked as they were queued.
    let checked = (!ctx.nested || ctx.client.in_script) && !ctx.client.is_master;
    let script_call = ctx.nested && ctx.client.in_script;
    if checked && script_call {
        if let Some(refusal) = stale_refusal(ctx, spec, args) {
            return reject_spec(ctx, spec, refusal);
        }
        if let Some(refusal) = readonly_refusal(ctx, spec, args) {
            return reject_spec(ctx, spec, refusal);
        }
    }
    if !ctx.nested && out_of_memory(ctx, spec, args) {
        return reject_spec(ctx, spec, CmdError::Static(OOM));
    }
    if checked {
        if let Some(refusal) = disk_error_refusal(ctx, spec, args) {
            return reject_spec(ctx, spec, refusal);
        }
        if let Some(refusal) = noreplicas_refusal(ctx, spec, args) {
            return reject_spec(ctx, spec, refusal);
        }
    } else if ctx.client.is_master && !ctx.nested {
        master_write_despite_disk_error(ctx, spec, args);
    }
    if checked && !script_call {
        if let Some(refusal) = readonly_refusal(ctx, spec, args) {
            return reject_spec(ctx, spec, refusal);
        }
    }
    if ctx.client.protocol == Protocol::Resp2
        && !ctx.nested
        && ctx.client.in_pubsub()
        && !pubsub::allowed_in_pubsub(spec.name)
    {
        return reject_spec(ctx, spec, CmdError::Owned(format!("ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", spec.name)));
    }
    if checked && !script_call {
        if let Some(refusal) = stale_refusal(ctx, spec, args) {
            return reject_spec(ctx, spec, refusal);
        }
    }
    // While a dataset loads (at start, DEBUG LOADAOF, a replica's disk-less sync)
    // clients get LOADING, except for the commands allowed then; while a replica loads
    // asynchronously, only the commands flagged no-async-loading do. Before BUSY, as in
    // Redis (a slow script in the AOF being loaded makes the server busy too).
    if !ctx.nested
        && !ctx.client.is_master
        && denied_while_loading(ctx, spec, ctx.shared.persistence.loading.state())
    {
        return reject_spec(
            ctx,
            spec,
            CmdError::Static(crate::persist::loading::LOADING_ERROR),
        );
    }
    // A script running past busy-reply-threshold holds every shard: others get BUSY
    // (the script's own calls run with `held` set).
    if !ctx.nested
        && ctx.shared.scripting.flags.busy()
        && !spec.flags.contains(CommandFlags::ALLOW_BUSY)
    {
        let busy = ctx.shared.scripting.flags.busy_error();
        return reject_spec(ctx, spec, CmdError::Static(busy));
    }
    if !ctx.nested && !ctx.client.is_master && ctx.shared.pause.active() && paused(ctx, spec, args)
    {
        ctx.client.postpone = true;
        return Ok(());
    }
    if script_call && out_of_memory(ctx, spec, args) {
        return reject_spec(ctx, spec, CmdError::Static(OOM));
    }
    if routed && script_call {
        _slot_gate = cluster_route(ctx, spec, args)?;
    }
    if ctx.client.multi.is_some() && !tx::runs_inside_multi(top) {
        if !tx::bound_to_fail(ctx) {
            ctx.client.multi.get_or_insert_default().push(args.to_vec());
            ctx.client.multi_bytes += args.iter().map(Bytes::len).sum::<usize>();
        }
        ctx.out.extend_from_slice(b"+QUEUED\r\n");
        return Ok(());
    }
    if !ctx.nested && !ctx.client.is_master {
        if let Some(wait) = script_wait(ctx, spec) {
            ctx.client.script_wait = Some(wait);
            ctx.client.postpone = true;
            return Ok(());
        }
        // Once waited for, the command runs whatever the others do by then.
        // Each check adds the connections it waits for: `|`, not `||`.
        if !std::mem::take(&mut ctx.client.input_waited)
            && (pubsub::lets_listeners_run_first(ctx, spec, args)
                | tx::lets_watchers_run_first(ctx, spec, args)
                | blocking::lets_earlier_blockers_run_first(ctx, spec, args)
                | blocking::lets_stream_readers_run_first(ctx, spec, args)
                | crate::repl::replica::lets_stream_run_first(ctx))
        {
            ctx.client.postpone = true;
            return Ok(());
        }
    }
    let script = ctx.client.tracking && is_script(spec);
    if script {
        ctx.client.tracking_script = Some(args.to_vec());
    }
    if ctx.client.tracking && !ctx.nested && reads_for_tracking(spec) {
        // Before the read, not after: the handler lets its shard go when it returns, and
        // a write landing between the read and the remembering would find nobody to
        // invalidate, leaving the client a stale value for good. Remembered first, such
        // a write invalidates, and the client drops the reply that raced it. (Inside
        // EXEC or a script the shards stay held, so the order there cannot matter.)
        remember_keys(ctx, args);
    }
    let started = match chained {
        Some(previous_end) if !ctx.nested => previous_end,
        _ => std::time::Instant::now(),
    };
    let before = ctx.out.len();
    let changes_before = crate::store::dirty::count();
    let monitored = ctx.shared.monitors.active() && !spec.flags.contains(CommandFlags::ADMIN);
    let skip_monitor = spec.flags.contains(CommandFlags::SKIP_MONITOR);
    if monitored && skip_monitor && is_script(spec) {
        // A script shows before the commands it calls.
        feed_monitors(ctx, args);
    }
    // Tracking invalidates the keys the command changed (see `store::changed_keys`),
    // a read's too: PFCOUNT rewrites its cached count, as Redis's signals.
    let tracking_changes = ctx.shared.tracking.active();
    let owns_changes = tracking_changes && crate::store::changed_keys::begin();
    let _running = owns_changes.then(|| ctx.shared.tracking.command_runs());
    let reading_before = crate::store::lookups::set_reading(spec.is_readonly());
    let result = run_handler(ctx, spec, handler, args);
    crate::store::lookups::set_reading(reading_before);
    if monitored && !skip_monitor {
        feed_monitors(ctx, args);
    }
    if !ctx.nested && std::mem::take(&mut ctx.client.save_after_command) {
        // Every lock the command took is released by now.
        let _ = crate::persist::snapshot::save(ctx.shared);
        connection::saved_now(ctx.client);
    }
    if !ctx.nested {
        // Commands inside EXEC or a script count as part of it.
        let from = match ctx.client.changes_saved_at.take() {
            Some(saved) => saved,
            None => changes_before,
        };
        ctx.client.changes += crate::store::dirty::count().wrapping_sub(from);
    }
    let failed = result.is_err() || ctx.out.get(before) == Some(&b'-');
    let ended = std::time::Instant::now();
    let elapsed = ended.saturating_duration_since(started);
    if !ctx.nested && ctx.client.in_batch {
        ctx.client.batch_clock = Some(ended);
    }
    let usec = elapsed.as_micros() as u64;
    ctx.client.cmdstats.ran(spec.name, elapsed, failed);
    // INFO's total_commands_processed counts what ran, as Redis's `call()` does: a
    // script's and a transaction's commands each, a refused or queued one not.
    ctx.client.commands_since_flush += 1;
    if ctx.client.blocked.is_some() {
        // Logged once served, with the time it waited (see `net::connection`).
        ctx.client.blocked_since = Some((args.to_vec(), started));
    } else {
        observe_duration(ctx.shared, ctx.client, spec, args, usec);
    }
    if result.is_ok() && matches!(spec.name, "flushall" | "flushdb" | "swapdb") {
        note_whole_database_writes(ctx, spec, args);
    }
    if crate::store::ready::pending() {
        note_ready_keys(ctx, crate::store::ready::take());
    }
    if tracking_changes {
        invalidate_changed_keys(ctx, spec);
    }
    if owns_changes {
        crate::store::changed_keys::end();
    }
    if ctx.client.tracking {
        after_tracked_command(ctx, spec, args);
    }
    result
}

/// Whether `spec` must wait for the load in `state` to end (Redis's
/// `is_denyloading_command` and `is_deny_async_loading_command`; an EXEC is denied
/// while loading asynchronously when it queued a command that would be).
fn denied_while_loading(ctx: &Ctx<'_>, spec: &CommandSpec, state: u8) -> bool {
    use crate::persist::loading::{ASYNC, BLOCKING};
    match state {
        BLOCKING => !spec.flags.contains(CommandFlags::LOADING),
        ASYNC => {
            let denied = |s: &CommandSpec| s.flags.contains(CommandFlags::NO_ASYNC_LOADING);
            denied(spec)
                || (spec.name == "exec"
                    && ctx
                        .client
                        .multi
                        .iter()
                        .flatten()
                        .filter_map(|queued| ctx.shared.renamed.resolve(queued))
                        .any(denied))
        }
        _ => false,
    }
}

/// Whether a command writes: for EXEC, whether anything it queued does; for a script,
/// what it declared (cluster mode's read-only checks).
pub(crate) fn writes(ctx: &Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> bool {
    effective_flags(ctx, spec, args).write
}

/// The flags that decide whether a command may run now.
#[derive(Debug, Clone, Copy)]
struct Effective {
    write: bool,
    /// Runs on a stale replica.
    stale_ok: bool,
    /// Refused above `maxmemory`.
    deny_oom: bool,
}

impl Effective {
    fn of_spec(spec: &CommandSpec) -> Effective {
        Effective {
            write: spec.is_write(),
            stale_ok: spec.flags.contains(CommandFlags::STALE),
            deny_oom: spec.flags.contains(CommandFlags::DENYOOM),
        }
    }
}

/// The flags of a command, and for EXEC the union of what it queued (Redis checks a
/// transaction's writes, deny-oom and staleness when EXEC arrives).
fn effective_flags(ctx: &Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> Effective {
    if is_script(spec) {
        // A script that declared its flags writes, may run stale and is refused above
        // `maxmemory` as they say (Redis's `scriptFlagsToCmdFlags`); one without a
        // shebang is checked per call.
        if let Some(flags) = ctx.shared.scripting.declared_flags(args) {
            return Effective {
                write: !flags.no_writes,
                stale_ok: flags.allow_stale,
                deny_oom: !flags.no_writes && !flags.allow_oom,
            };
        }
    }
    // A script without declared flags (no shebang, an unknown SHA or function, a shebang
    // in error) keeps the command's `stale`, as in Redis: the script's own check
    // (`RunState::check`) then refuses it after its lookup and compilation.
    let mut effective = Effective::of_spec(spec);
    if spec.name == "exec" {
        // A transaction writes if a queued command does (a queued script as it
        // declares), as Redis sums the queued commands' flags.
        for queued in ctx.client.multi.iter().flatten() {
            if let Some(q) = ctx.shared.renamed.resolve(queued) {
                let one = if is_script(q) {
                    effective_flags(ctx, q, queued)
                } else {
                    Effective::of_spec(q)
                };
                effective.write |= one.write;
                effective.stale_ok &= one.stale_ok;
                effective.deny_oom |= one.deny_oom;
            }
        }
    }
    effective
}

/// Redis's `masterdownerr`.
pub const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// Whether this server is a replica whose link is down and `replica-serve-stale-data`
/// is off: only commands flagged `stale` run.
pub fn running_stale(shared: &crate::shared::Shared) -> bool {
    shared.repl.is_replica()
        && !shared.hot.replica_serve_stale_data()
        && !shared
            .repl
            .with_link(crate::repl::replica::LinkStatus::is_up)
            .unwrap_or(false)
}

/// READONLY: a write on a replica that takes none from clients (`replica-read-only`).
fn readonly_refusal(ctx: &Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> Option<CmdError> {
    let refused = ctx.shared.repl.is_replica()
        && ctx.shared.hot.replica_read_only()
        && effective_flags(ctx, spec, args).write;
    refused.then_some(CmdError::Static(
        "READONLY You can't write against a read only replica.",
    ))
}

/// NOREPLICAS: a write on a master with fewer good replicas than
/// `min-replicas-to-write` (a replica never counts its own).
fn noreplicas_refusal(ctx: &Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> Option<CmdError> {
    let shared = ctx.shared;
    if shared.hot.min_replicas_to_write() <= 0
        || shared.repl.is_replica()
        || !effective_flags(ctx, spec, args).write
    {
        return None;
    }
    if ctx.client.in_script {
        return shared
            .scripting
            .flags
            .replicas_short()
            .then_some(CmdError::Static(NOREPLICAS));
    }
    writes_refused(shared)
}

/// MASTERDOWN: a command not flagged `stale` on a replica whose link is down, with
/// `replica-serve-stale-data no`.
fn stale_refusal(ctx: &Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> Option<CmdError> {
    let shared = ctx.shared;
    if shared.hot.replica_serve_stale_data() || !shared.repl.is_replica() {
        return None;
    }
    if effective_flags(ctx, spec, args).stale_ok || !running_stale(shared) {
        return None;
    }
    Some(CmdError::Static(if ctx.client.in_script {
        "ERR Can not execute the command on a stale replica"
    } else {
        MASTERDOWN
    }))
}

const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// Redis's answer to a write while the last background save failed.
const BGSAVE_ERR: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// MISCONF (Redis's `writeCommandsDeniedByDiskError`): while the last BGSAVE failed,
/// with save points configured and `stop-writes-on-bgsave-error yes`, or while the AOF
/// cannot be written or fsynced, writes are refused, and PING too, so that health
/// checks notice; reads go on. The link from this server's master is not refused
/// (Redis would stop the replica).
fn disk_error_refusal(ctx: &Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> Option<CmdError> {
    let refusal = disk_error(ctx.shared)?;
    (spec.name == "ping" || effective_flags(ctx, spec, args).write).then_some(refusal)
}

/// A write from this server's master while the disk fails this server: as in Redis, the
/// replica stops (it would go on diverging from what it can restart with) unless
/// `replica-ignore-disk-write-errors yes`, where it applies the write and says so in
/// the log every 10 seconds.
fn master_write_despite_disk_error(ctx: &Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) {
    static LAST_LOG_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if spec.name == "ping"
        || disk_error(ctx.shared).is_none()
        || !effective_flags(ctx, spec, args).write
    {
        return;
    }
    if !ctx
        .shared
        .config
        .read()
        .param_bool("replica-ignore-disk-write-errors")
    {
        tracing::warn!("Guru Meditation: Replica was unable to write command to disk.");
        std::process::abort();
    }
    let now = crate::store::now_ms();
    let last = LAST_LOG_MS.load(std::sync::atomic::Ordering::Relaxed);
    if now >= last + 10_000 {
        LAST_LOG_MS.store(now, std::sync::atomic::Ordering::Relaxed);
        tracing::warn!("Replica is applying a command even though it is unable to write to disk.");
    }
}

/// The error that refuses writes while the disk fails this server, if it does.
fn disk_error(shared: &crate::shared::Shared) -> Option<CmdError> {
    let persistence = &shared.persistence;
    if !persistence
        .last_bgsave_ok
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        let config = shared.config.read();
        if config.param_bool("stop-writes-on-bgsave-error") && !config.save.is_empty() {
            return Some(CmdError::Static(BGSAVE_ERR));
        }
    }
    let errno = shared.aof.durability.disk_error()?;
    Some(CmdError::Owned(format!(
        "MISCONF Errors writing to the AOF file: {}",
        crate::cstr::strerror(&std::io::Error::from_raw_os_error(errno))
    )))
}

/// NOREPLICAS when fewer replicas than `min-replicas-to-write` acknowledged within
/// `min-replicas-max-lag` seconds (this server being a master).
pub fn writes_refused(shared: &crate::shared::Shared) -> Option<CmdError> {
    let (min_replicas, max_lag) = (
        shared.hot.min_replicas_to_write(),
        shared.hot.min_replicas_max_lag(),
    );
    if min_replicas <= 0 || shared.repl.is_replica() {
        return None;
    }
    let good = shared.repl.journal.good_replicas(max_lag.max(0) as u64);
    ((good as i64) < min_replicas).then_some(CmdError::Static(NOREPLICAS))
}

/// Shows a command to the MONITOR connections.
fn feed_monitors(ctx: &Ctx<'_>, args: &[Bytes]) {
    let origin = if ctx.client.in_script {
        "lua".to_string()
    } else {
        ctx.client.peer.to_string()
    };
    ctx.shared.monitors.feed(ctx.client.db, &origin, args);
}

/// Redis's answer to a deny-oom command above `maxmemory`.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Over `maxmemory`, keys are evicted before a client's command (Redis's
/// `performEvictions` in `processCommand`); true when memory stays above the limit and
/// the command may grow it (deny-oom, a script as it declared), which is then refused.
/// Inside MULTI every command but EXEC, DISCARD, QUIT and RESET is refused then, as in
/// Redis: queuing takes memory too. Commands inside EXEC were checked when queued; a
/// script's calls are checked unless it declared allow-oom.
fn out_of_memory(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> bool {
    let eviction = &ctx.shared.store.events().eviction;
    if !eviction.check_limit() {
        return false;
    }
    if ctx.client.is_master {
        return false;
    }
    if ctx.nested {
        return ctx.client.in_script
            && spec.flags.contains(CommandFlags::DENYOOM)
            && !ctx.shared.scripting.flags.allows_oom();
    }
    let outcome = evict_before_reply(ctx);
    let queuing =
        ctx.client.multi.is_some() && !matches!(spec.name, "exec" | "discard" | "quit" | "reset");
    outcome == crate::store::evict::Outcome::Stuck
        && (queuing || effective_flags(ctx, spec, args).deny_oom)
}

/// An eviction pass for this client's command. What the evictions caused
/// (invalidations, keyspace events) goes out ahead of what the command writes next, as
/// Redis sends it.
fn evict_before_reply(ctx: &mut Ctx<'_>) -> crate::store::evict::Outcome {
    let (outcome, sent) = crate::tracking::collect_sent(|| {
        // Evicted keys are invalidated here, through `collect_sent`, not as keys the
        // command changed (CONFIG SET maxmemory evicts from inside its handler).
        let outcome =
            crate::store::changed_keys::unrecorded(|| crate::maxmemory::perform(ctx.shared));
        if ctx.shared.store.events().pending() {
            crate::notify::publish_pending(ctx.shared, ctx.client.id, ctx.out);
        }
        outcome
    });
    if ctx.client.tracking || ctx.client.protocol == Protocol::Resp3 {
        ctx.client.mailbox.drain_into(ctx.out);
    }
    let own = &ctx.client.mailbox;
    ctx.client.eviction_invalidations.extend(
        sent.into_iter()
            .filter(|(to, _)| !std::sync::Arc::ptr_eq(to, own)),
    );
    outcome
}

/// How a command reaches the replication stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Propagation {
    /// It cannot change the dataset: nothing to record.
    None,
    /// Run with its shards held until its effects are appended (most writes).
    Held,
    /// EXEC and scripts: they hold their own shards and append their commands' effects
    /// before releasing them.
    OwnLocks,
    /// Blocking pops and group reads append what they changed under their own locks
    /// (they take the blocking registry before any shard, so they cannot run with
    /// shards held).
    SelfAppending,
}

fn propagation(spec: &CommandSpec) -> Propagation {
    if is_script(spec) || spec.name == "exec" {
        Propagation::OwnLocks
    } else if !spec.may_replicate() {
        Propagation::None
    } else if spec.is_blocking() {
        Propagation::SelfAppending
    } else {
        Propagation::Held
    }
}

/// Calls the handler; while the replication stream is on, a command that may change the
/// dataset runs inside the journal's gate, and what it changed is recorded (and, at the
/// top level, appended while its shards are still held: see `crate::repl::journal`).
#[inline]
fn run_handler(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    handler: Handler,
    args: &[Bytes],
) -> CmdResult {
    let how = propagation(spec);
    // Our master's stream and an AOF being loaded are already in the stream.
    if how == Propagation::None || ctx.client.is_master {
        return handler(ctx, args);
    }
    let shared = ctx.shared;
    let journal = &shared.repl.journal;
    let _gate = (!ctx.nested).then(|| journal.enter());
    if !journal.active() {
        return handler(ctx, args);
    }
    let db = ctx.client.db;
    let before = ctx.out.len();
    let changes_before = crate::store::dirty::count();
    if ctx.nested {
        let result = handler(ctx, args);
        if how != Propagation::OwnLocks {
            record_if_changed(ctx, spec, args, before, changes_before, db);
        }
        return result;
    }
    match how {
        Propagation::Held => {
            let queued = [args.to_vec()];
            let held = std::cell::RefCell::new(match tx::plan(shared, db, &queued, &[]) {
                Some(shards) => crate::store::Held::some(&shared.store, shards),
                None => crate::store::Held::all(&shared.store),
            });
            let mut inner = Ctx {
                shared,
                client: &mut *ctx.client,
                out: &mut *ctx.out,
                held: Some(&held),
                nested: false,
            };
            let result = handler(&mut inner, args);
            record_if_changed(&mut inner, spec, args, before, changes_before, db);
            crate::repl::flush(&mut inner);
            result
        }
        _ => handler(ctx, args),
    }
}

fn record_if_changed(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    args: &[Bytes],
    before: usize,
    changes_before: u64,
    db: usize,
) {
    let changed = crate::store::dirty::count() != changes_before;
    // PUBLISH, and FLUSHALL/FLUSHDB even of empty databases, always propagate (Redis's
    // forceCommandPropagation); in cluster mode PUBLISH goes over the bus instead.
    let forced = matches!(spec.name, "flushall" | "flushdb")
        || (spec.name == "publish" && !ctx.shared.cluster.enabled());
    if changed || forced || ctx.client.propagate_as.is_some() {
        crate::repl::record(ctx, spec.name, args, before, db);
    }
}

/// Runs `f`, which may take long (a script, MIGRATE's round trips), where it cannot
/// starve the runtime: on a multi-thread tokio worker, the worker's other tasks move to
/// another thread first (a task parked in this worker's slot, like the listener, would
/// otherwise wait for it, and SCRIPT KILL could never be read).
pub(crate) fn off_the_runtime<R>(f: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// The slow log and the latency monitor's `command` / `fast-command` events, after a
/// command ran for `usec` (EXEC and the like are skipped: their commands are logged).
pub fn observe_duration(
    shared: &crate::shared::Shared,
    client: &crate::net::client::ClientState,
    spec: &CommandSpec,
    args: &[Bytes],
    usec: u64,
) {
    if spec.flags.contains(CommandFlags::SKIP_SLOWLOG) {
        return;
    }
    let event = if spec.flags.contains(CommandFlags::FAST) {
        "fast-command"
    } else {
        "command"
    };
    shared.latency.add_if_needed(event, usec / 1000);
    if shared.slowlog.wants(usec) {
        // A script's commands run on Redis's script client: no address, no name.
        let (peer, name) = if client.in_script {
            ("?:0".to_string(), None)
        } else {
            (client.peer.to_string(), client.name.as_deref())
        };
        shared.slowlog.push(args, usec, peer, name);
    }
}

/// Records the command's keys as read by this tracking client (Redis's
/// `trackingRememberKeys`): found as a cluster node finds them
/// ([`command::routing_keys_into`]), as Redis's tracking does.
fn remember_keys(ctx: &Ctx<'_>, args: &[Bytes]) {
    let Some(spec) = command::resolve(args) else {
        return;
    };
    let mut indexes = Vec::new();
    command::routing_keys_into(spec, args, &mut indexes);
    let keys = indexes
        .into_iter()
        .filter_map(|i| args.get(i).map(|k| &k[..]));
    ctx.shared
        .tracking
        .remember(ctx.client.id, ctx.client.tracking_caching, keys);
}

/// Client-side caching after a command of a tracking client: remember the keys a
/// read-only command fetched, and let CLIENT CACHING lapse after the command (or
/// transaction) it applied to.
fn after_tracked_command(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) {
    if is_script(spec) {
        ctx.client.tracking_script = None;
    } else if let Some(script) = ctx.client.tracking_script.take() {
        // A read the script called tracks the keys the script declared, at once: a
        // write later in the script invalidates them (Redis's `call`).
        if spec.is_readonly() {
            remember_keys(ctx, &script);
        }
        ctx.client.tracking_script = Some(script);
    } else if ctx.nested && reads_for_tracking(spec) {
        // A top-level read remembered its keys before it ran (see `dispatch`).
        remember_keys(ctx, args);
    }
    if !ctx.nested && ctx.client.multi.is_none() && !spec.name.starts_with("client") {
        ctx.client.tracking_caching = false;
    }
}

/// Whether a tracking client's command remembers the keys it reads: a read-only command
/// other than a script or pub/sub (Redis's `trackingRememberKeys` condition; a command a
/// script calls is the script's, see `after_tracked_command`).
fn reads_for_tracking(spec: &CommandSpec) -> bool {
    spec.is_readonly() && !is_script(spec) && !spec.flags.contains(CommandFlags::PUBSUB)
}

/// DEBUG and MODULE run only where `enable-debug-command` / `enable-module-command`
/// allow (by default nowhere), as in Redis 7.0.
fn protected_refusal(ctx: &Ctx<'_>, top: &str) -> Option<CmdError> {
    use crate::config::ProtectedAction;
    let (action, name, option) = if top == "debug" {
        (ProtectedAction::Debug, "DEBUG", "enable-debug-command")
    } else {
        (ProtectedAction::Module, "MODULE", "enable-module-command")
    };
    if ctx
        .shared
        .config
        .read()
        .allows(action, ctx.client.peer.is_local())
    {
        return None;
    }
    Some(CmdError::Owned(format!(
        "ERR {name} command not allowed. If the {option} option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
    )))
}

/// What a top-level command must wait for before it runs, if anything: a script takes
/// the script turn (waiting when another client has it); any other command waits while a
/// script runs and is not yet BUSY, since its shard is held (see
/// `crate::scripting::turn`).
fn script_wait(ctx: &mut Ctx<'_>, spec: &CommandSpec) -> Option<crate::scripting::ScriptWait> {
    let scripting = &ctx.shared.scripting;
    if is_script(spec) {
        if ctx.client.script_turn.is_none() {
            match scripting.turn.try_take() {
                Some(permit) => ctx.client.script_turn = Some(permit),
                None => return Some(crate::scripting::ScriptWait::Turn),
            }
        }
        None
    } else if scripting.flags.must_wait() {
        Some(crate::scripting::ScriptWait::End)
    } else {
        None
    }
}

/// EVAL, EVALSHA, FCALL and their read-only variants.
pub(crate) fn is_script(spec: &CommandSpec) -> bool {
    matches!(
        spec.name,
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
    )
}

/// Whether CLIENT PAUSE holds this command back: every command in `ALL` mode; in `WRITE`
/// mode writes, commands that may replicate (EVAL, PUBLISH, PFCOUNT...) and EXEC of a
/// transaction that queued one, as Redis 7.0 decides.
fn paused(ctx: &Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) -> bool {
    use crate::pause::PauseMode;
    match ctx.shared.pause.current() {
        None => false,
        Some((PauseMode::All, _)) => true,
        Some((PauseMode::Write, _)) => {
            (spec.may_replicate() && !ctx.shared.scripting.declared_no_writes(args))
                || (spec.name == "exec"
                    && ctx.client.multi.iter().flatten().any(|queued| {
                        ctx.shared.renamed.resolve(queued).is_some_and(|s| {
                            s.may_replicate() && !ctx.shared.scripting.declared_no_writes(queued)
                        })
                    }))
        }
    }
}

/// Tracking clients drop the keys the command changed (Redis's `signalModifiedKey`, see
/// `store::changed_keys`), as each command ends, inside EXEC and scripts too. FLUSHALL
/// and FLUSHDB send their one null invalidation instead (see `note_written_keys`).
fn invalidate_changed_keys(ctx: &mut Ctx<'_>, spec: &CommandSpec) {
    let keys = crate::store::changed_keys::take();
    if keys.is_empty() || matches!(spec.name, "flushall" | "flushdb") {
        return;
    }
    // A script's writes are Lua's client's for BCAST's NOLOOP (Redis records the client
    // that changed the key), the caller's for default mode's.
    let id = ctx.client.id;
    let bcast_by = (!ctx.client.in_script).then_some(id);
    ctx.shared
        .tracking
        .invalidate_keys_written(ctx.shared, &keys, Some(id), bcast_by);
}

/// FLUSHALL and FLUSHDB empty the tracking table. They and SWAPDB replace whole
/// databases, whose waited keys are signalled as Redis signals them once the command is
/// over (see [`crate::store::ready::Replaced`]).
fn note_whole_database_writes(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[Bytes]) {
    use crate::store::ready::Replaced;
    let replaced = match spec.name {
        "flushall" | "flushdb" => {
            // The tracking table is emptied even when nobody tracks any more.
            ctx.shared.tracking.invalidate_all(ctx.shared);
            Replaced::Emptied((spec.name == "flushdb").then_some(ctx.client.db))
        }
        _ => {
            let db_at = |i: usize| -> Option<usize> {
                std::str::from_utf8(args.get(i)?).ok()?.parse().ok()
            };
            match (db_at(1), db_at(2)) {
                // A database swapped with itself stays as it was: nothing is signalled.
                (Some(a), Some(b)) if a != b => Replaced::Swapped(a, b),
                _ => return,
            }
        }
    };
    blocking::note_replaced(ctx, replaced);
}

/// Adds the keys the command signalled ([`crate::store::ready`]) to the client's ready
/// list, each once, in the order first signalled: served once the command is over.
fn note_ready_keys(ctx: &mut Ctx<'_>, signalled: Vec<crate::store::ready::Signal>) {
    let ready = &mut ctx.client.ready;
    for signal in signalled {
        if !ready.contains(&signal) {
            ready.push(signal);
        }
    }
}

/// The keys `spec` names in `args` that pass `keep`. Asked after every write while a
/// client is blocked, and most keys pass nothing: a command whose one key is its first
/// argument allocates no buffer of positions (about 300 instructions a write).
pub(crate) fn keys_where<'a>(
    spec: &CommandSpec,
    args: &'a [Bytes],
    keep: impl Fn(&[u8]) -> bool,
) -> Vec<&'a Bytes> {
    if spec.has_sole_first_key() {
        return args.get(1).filter(|key| keep(key)).into_iter().collect();
    }
    let mut positions = Vec::new();
    if command::keys_into(spec, args, &mut positions).is_err() {
        return Vec::new();
    }
    positions
        .into_iter()
        .filter_map(|i| args.get(i))
        .filter(|key| keep(key))
        .collect()
}

/// A command refused before it runs; inside MULTI that also dooms the transaction
/// (EXEC will answer EXECABORT), as in Redis.
/// A refusal of a known command: counted as its rejected call (INFO commandstats).
fn reject_spec(ctx: &mut Ctx<'_>, spec: &'static CommandSpec, error: CmdError) -> CmdResult {
    ctx.client.cmdstats.rejected(spec.name);
    if spec.name == "exec" {
        // A refused EXEC ends the transaction, and answers EXECABORT even outside one
        // (Redis's `execCommandAbort`): a client that lost its MULTI to RESET or a
        // reconnect learns why its transaction did not run.
        ctx.client.multi = None;
        ctx.client.multi_failed = false;
        tx::unwatch_all(ctx.shared, ctx.client);
        // Redis formats these refusals without the `ERR ` that its plain error replies
        // add, so only codes such as NOAUTH or OOM show inside EXECABORT.
        let text = String::from_utf8_lossy(error.text()).into_owned();
        let text = text.trim_start_matches('-');
        return Err(CmdError::Owned(format!(
            "EXECABORT Transaction discarded because of: {}",
            text.strip_prefix("ERR ").unwrap_or(text)
        )));
    }
    reject(ctx, error)
}

/// Cluster mode: whether this node runs the command (Redis's `getNodeByQuery` in
/// `processCommand`, and `scriptVerifyClusterState` for a script's calls).
fn cluster_route<'a>(
    ctx: &mut Ctx<'a>,
    spec: &'static CommandSpec,
    args: &[Bytes],
) -> Result<Option<crate::cluster::route::SlotGate<'a>>, CmdError> {
    use crate::cluster::route;
    match route::check(ctx, spec, args) {
        Ok(routed) if !ctx.nested => {
            ctx.client.cluster_slot = routed.slot;
            Ok(routed.gate)
        }
        Ok(route::Routed {
            slot: Some(slot), ..
        }) if !ctx.shared.scripting.flags.cross_slot() => {
            match ctx.client.cluster_slot {
                None => ctx.client.cluster_slot = Some(slot),
                Some(first) if first != slot => {
                    reject_spec(ctx, spec, CmdError::Static(route::SCRIPT_CROSSSLOT))?
                }
                Some(_) => {}
            }
            Ok(None)
        }
        Ok(_) => Ok(None),
        Err(refusal) if ctx.nested => {
            reject_spec(ctx, spec, route::script_error(refusal.kind)).map(|()| None)
        }
        Err(refusal) if spec.name == "exec" => {
            // A redirected EXEC discards the transaction, with the redirection as reply.
            ctx.client.cmdstats.rejected(spec.name);
            ctx.client.multi = None;
            ctx.client.multi_failed = false;
            tx::unwatch_all(ctx.shared, ctx.client);
            Err(refusal.error)
        }
        Err(refusal) => reject_spec(ctx, spec, refusal.error).map(|()| None),
    }
}

fn reject(ctx: &mut Ctx<'_>, error: CmdError) -> CmdResult {
    if ctx.client.multi.is_some() {
        ctx.client.multi_failed = true;
    }
    Err(error)
}

/// Names of implemented commands (tests, COMMAND DOCS).
pub fn implemented() -> Vec<&'static str> {
    registrations().into_iter().map(|(n, _)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registration_is_in_the_table() {
        for (name, _) in registrations() {
            assert!(
                spec_by_name(name).is_some(),
                "{name} is not a Redis 7.0 command"
            );
        }
        let registered = HANDLERS.iter().filter(|h| h.is_some()).count();
        assert_eq!(registered, registrations().len(), "a name registered twice");
        // CLIENT SETINFO is the one entry outside the 7.0 table.
        assert!(handler_of(&client::CLIENT_SETINFO).is_some());
    }
}
