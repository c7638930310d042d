//! Scripting commands: EVAL EVALSHA EVAL_RO EVALSHA_RO, SCRIPT, FUNCTION, FCALL
//! FCALL_RO. The engine and its locking are in [`crate::scripting`].

use std::cell::RefCell;

use bytes::Bytes;
use redline_resp::encode;

use super::args::is;
use super::reply::{ok, CmdError, CmdResult};
use super::{Ctx, Handler};
use crate::scripting::debugger::DebugMode;
use crate::scripting::{self, Engine, Target};
use crate::store::Held;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("eval", eval),
    ("eval_ro", eval_ro),
    ("evalsha", evalsha),
    ("evalsha_ro", evalsha_ro),
    ("fcall", fcall),
    ("fcall_ro", fcall_ro),
    ("script|help", script_help),
    ("script|load", script_load),
    ("script|exists", script_exists),
    ("script|flush", script_flush),
    ("script|kill", script_kill),
    ("script|debug", script_debug),
    ("function|help", function_help),
    ("function|load", function_load),
    ("function|list", function_list),
    ("function|delete", function_delete),
    ("function|flush", function_flush),
    ("function|stats", function_stats),
    ("function|kill", function_kill),
    ("function|dump", function_dump),
    ("function|restore", function_restore),
];

fn engine_error(message: String) -> CmdError {
    CmdError::Owned(message)
}

/// Splits `numkeys key... arg...` (starting at `args[2]`); `not_a_number` is the
/// command's error for a numkeys that does not parse (EVAL and FCALL word it apart).
fn keys_and_args<'a>(
    args: &'a [Bytes],
    not_a_number: &'static str,
) -> Result<(&'a [Bytes], &'a [Bytes]), CmdError> {
    // string2ll: no `+`, no leading zeros, no `-0`.
    let numkeys = crate::store::canonical_int(&args[2]).ok_or(CmdError::Static(not_a_number))?;
    if numkeys < 0 {
        return Err(CmdError::Static("ERR Number of keys can't be negative"));
    }
    let rest = &args[3..];
    let n = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if n > rest.len() {
        return Err(CmdError::Static(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    Ok(rest.split_at(n))
}

const RO_WITH_WRITES: &str = "ERR Can not execute a script with write flag using *_ro command.";

/// Holds every shard (unless EXEC already does), then the engine, and runs, inline on
/// this thread: the dispatcher gave a top-level script the script turn, and the
/// interpreter's hook hands the worker on if the script runs long (see
/// `crate::scripting`).
fn run_locked(
    ctx: &mut Ctx<'_>,
    prepare: impl FnOnce(&mut Engine) -> Result<(String, bool), CmdError>,
    function: bool,
    keys: &[Bytes],
    args: &[Bytes],
    command: &[Bytes],
) -> CmdResult {
    let shared = ctx.shared;
    // Inside EXEC the transaction already holds the shards; otherwise hold every shard
    // of the databases up to the client's, and of the others when the script reaches
    // them (see `Held::databases`).
    let own = ctx
        .held
        .is_none()
        .then(|| RefCell::new(Held::databases(&shared.store, ctx.client.db)));
    let mut engine = shared.scripting.engine().map_err(engine_error)?;
    let (name, read_only) = prepare(&mut engine)?;
    let target = if function {
        Target::Function(&name)
    } else {
        Target::Script(&name)
    };
    let mut inner = Ctx {
        shared,
        client: &mut *ctx.client,
        out: &mut *ctx.out,
        held: match &own {
            Some(held) => Some(held),
            None => ctx.held,
        },
        nested: ctx.nested,
    };
    scripting::run(
        &mut engine,
        &mut inner,
        target,
        keys,
        args,
        read_only,
        command,
    );
    if own.is_some() {
        // A top-level script: its effects go out as one piece while its shards are held.
        crate::repl::flush(&mut inner);
    }
    Ok(())
}

fn eval_generic(ctx: &mut Ctx<'_>, args: &[Bytes], by_sha: bool, ro: bool) -> CmdResult {
    let (keys, rest) = keys_and_args(args, "ERR value is not an integer or out of range")?;
    let debug = &mut ctx.client.debug;
    // EVALSHA is refused (after its length check, as in Redis): the debugger lists the
    // source the EVAL carries.
    if debug.mode != DebugMode::Off
        && !ctx.nested
        && ctx.client.multi.is_none()
        && !(by_sha && args[1].len() != 40)
    {
        if by_sha {
            return Err(CmdError::Static(
                "ERR Please use EVAL instead of EVALSHA for debugging",
            ));
        }
        if debug.io.is_none() {
            // The connection starts the session, then runs this EVAL in it.
            debug.pending = Some(args.to_vec());
            return Ok(());
        }
    }
    let body = args[1].clone();
    let state = RunState::of(ctx);
    let run_flags = ctx.shared.scripting.flags.clone();
    run_locked(
        ctx,
        |engine| {
            let sha = if by_sha {
                // A SHA is ASCII: checked as UTF-8 (not read lossily) on the common path.
                match std::str::from_utf8(&body) {
                    Ok(text) => text.to_ascii_lowercase(),
                    Err(_) => String::from_utf8_lossy(&body).to_ascii_lowercase(),
                }
            } else {
                engine.load_script(&body).map_err(CmdError::Bytes)?
            };
            let Some(flags) = engine.script_flags(&sha) else {
                return Err(CmdError::Static(
                    "NOSCRIPT No matching script. Please use EVAL.",
                ));
            };
            state.check(&flags, ro)?;
            run_flags.set_allows_oom(flags.allow_oom);
            run_flags.set_replicas_short(state.no_replicas.is_some());
            Ok((sha, ro || flags.no_writes))
        },
        false,
        keys,
        rest,
        args,
    )
}

/// What decides whether a script may start, read before the interpreter is taken.
struct RunState {
    cluster: bool,
    /// A replica whose link is down, with `replica-serve-stale-data no`.
    stale: bool,
    /// A read-only replica, and the caller is not its master.
    read_only_replica: bool,
    /// Used memory is over `maxmemory`.
    over_limit: bool,
    /// NOREPLICAS: fewer good replicas than `min-replicas-to-write`.
    no_replicas: Option<CmdError>,
}

impl RunState {
    fn of(ctx: &Ctx<'_>) -> RunState {
        let shared = ctx.shared;
        let replica = shared.repl.is_replica();
        RunState {
            cluster: shared.cluster.enabled(),
            stale: super::running_stale(shared),
            read_only_replica: replica && shared.hot.replica_read_only() && !ctx.client.is_master,
            over_limit: shared.store.events().eviction.over_limit(),
            no_replicas: super::writes_refused(shared),
        }
    }

    /// Redis's `scriptPrepareForRun`, in its order. A script that declared its flags is
    /// checked against them; one without a shebang only for a stale replica (its
    /// commands are checked one by one).
    fn check(&self, flags: &crate::scripting::ScriptFlags, ro: bool) -> Result<(), CmdError> {
        if flags.eval_compat {
            if self.stale {
                return Err(CmdError::Static(super::MASTERDOWN));
            }
            return Ok(());
        }
        if flags.no_cluster && self.cluster {
            return Err(CmdError::Static(
                "ERR Can not run script on cluster, 'no-cluster' flag is set.",
            ));
        }
        if self.stale && !flags.allow_stale {
            return Err(CmdError::Static("MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' and 'allow-stale' flag is not set on the script."));
        }
        if !flags.no_writes {
            if self.read_only_replica {
                return Err(CmdError::Static(
                    "READONLY Can not run script with write flag on readonly replica",
                ));
            }
            if ro {
                return Err(CmdError::Static(RO_WITH_WRITES));
            }
            if let Some(refusal) = &self.no_replicas {
                return Err(refusal.clone());
            }
        }
        if self.over_limit && !flags.allow_oom && !flags.no_writes {
            return Err(CmdError::Static("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"));
        }
        Ok(())
    }
}

fn eval(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    eval_generic(ctx, args, false, false)
}

fn eval_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    eval_generic(ctx, args, false, true)
}

fn evalsha(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    eval_generic(ctx, args, true, false)
}

fn evalsha_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    eval_generic(ctx, args, true, true)
}

fn fcall_generic(ctx: &mut Ctx<'_>, args: &[Bytes], ro: bool) -> CmdResult {
    let name = String::from_utf8_lossy(&args[1]).into_owned();
    let (keys, rest) = match keys_and_args(args, "ERR Bad number of keys provided") {
        Ok(split) => split,
        // Redis looks the function up before it reads the number of keys.
        Err(e) => {
            let engine = ctx.shared.scripting.engine().map_err(engine_error)?;
            if engine.function(&name).is_none() {
                return Err(CmdError::Static("ERR Function not found"));
            }
            return Err(e);
        }
    };
    let state = RunState::of(ctx);
    let run_flags = ctx.shared.scripting.flags.clone();
    run_locked(
        ctx,
        |engine| {
            let Some(f) = engine.function(&name) else {
                return Err(CmdError::Static("ERR Function not found"));
            };
            state.check(&f.flags, ro)?;
            run_flags.set_allows_oom(f.flags.allow_oom);
            run_flags.set_replicas_short(state.no_replicas.is_some());
            let read_only = f.flags.no_writes;
            Ok((name.clone(), read_only))
        },
        true,
        keys,
        rest,
        args,
    )
}

fn fcall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    fcall_generic(ctx, args, false)
}

fn fcall_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    fcall_generic(ctx, args, true)
}

/// The EVAL of a Lua debugging session, on the session's thread, with the client's
/// connection in `client.debug.io` (see [`crate::scripting::debugger`]).
pub fn eval_debugged(ctx: &mut Ctx<'_>, args: &[Bytes]) {
    let ro = is(&args[0], "eval_ro");
    if let Err(e) = eval_generic(ctx, args, false, ro) {
        encode::write_error(ctx.out, e.text());
    }
    // Still here: the script never ran under the debugger.
    if let Some(io) = ctx.client.debug.io.take() {
        io.end_unstarted();
    }
}

/// SCRIPT DEBUG YES|SYNC|NO: how the client's next EVAL is debugged (see
/// [`crate::scripting::debugger`]).
fn script_debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if !ctx.out.is_empty() {
        return Err(CmdError::Static(
            "ERR SCRIPT DEBUG must be called outside a pipeline",
        ));
    }
    let mode = &args[2];
    ctx.client.debug.mode = if is(mode, "no") {
        DebugMode::Off
    } else if is(mode, "sync") {
        DebugMode::Sync
    } else if is(mode, "yes") {
        DebugMode::Forked
    } else {
        return Err(CmdError::Static("ERR Use SCRIPT DEBUG YES/SYNC/NO"));
    };
    ok(ctx.out);
    Ok(())
}

fn script_load(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut engine = ctx.shared.scripting.engine().map_err(engine_error)?;
    let sha = engine.load_script(&args[2]).map_err(CmdError::Bytes)?;
    encode::write_bulk(ctx.out, sha.as_bytes());
    Ok(())
}

fn script_exists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let engine = ctx.shared.scripting.engine().map_err(engine_error)?;
    encode::write_array_len(ctx.out, args.len() - 2);
    for sha in &args[2..] {
        let known = engine.has_script(&String::from_utf8_lossy(sha));
        encode::write_integer(ctx.out, i64::from(known));
    }
    Ok(())
}

/// `[ASYNC|SYNC]` of the FLUSH subcommands.
fn flush_mode(args: &[Bytes], error: &'static str) -> CmdResult {
    match args.get(2) {
        None => Ok(()),
        Some(a) if args.len() == 3 && (is(a, "async") || is(a, "sync")) => Ok(()),
        Some(_) => Err(CmdError::Static(error)),
    }
}

fn script_flush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    flush_mode(args, "ERR SCRIPT FLUSH only support SYNC|ASYNC option")?;
    ctx.shared
        .scripting
        .engine()
        .map_err(engine_error)?
        .flush_scripts();
    ok(ctx.out);
    Ok(())
}

/// How long SCRIPT KILL and FUNCTION KILL wait for the script to stop before replying.
const KILL_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// SCRIPT KILL (`eval`) and FUNCTION KILL: each stops only its own kind of script.
fn kill(ctx: &mut Ctx<'_>, eval: bool) -> CmdResult {
    let flags = &ctx.shared.scripting.flags;
    flags.kill(eval).map_err(CmdError::Static)?;
    // Replies once the script has stopped, as Redis does (see `wait_killed`); a script
    // stuck in one long command does not hold the reply past the limit.
    super::off_the_runtime(|| flags.wait_killed(KILL_WAIT));
    ok(ctx.out);
    Ok(())
}

fn script_kill(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    kill(ctx, true)
}

fn function_kill(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    kill(ctx, false)
}

fn function_load(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // Options come first, the code is the last argument.
    let (code, options) = match args[2..].split_last() {
        Some(split) => split,
        None => return Err(super::reply::wrong_arity("function|load")),
    };
    let mut replace = false;
    for option in options {
        if is(option, "replace") {
            replace = true;
        } else {
            return Err(super::reply::quoting(
                "ERR Unknown option given: ",
                option,
                usize::MAX,
                "",
            ));
        }
    }
    let scripting = &ctx.shared.scripting;
    let mut engine = scripting.engine().map_err(engine_error)?;
    let loaded = engine.load_library(code, replace, &scripting.flags);
    engine.collect();
    let name = loaded.map_err(CmdError::Bytes)?;
    // Libraries are part of the dataset: saves and replicas count the change.
    crate::store::dirty::mark();
    encode::write_bulk(ctx.out, name.as_bytes());
    Ok(())
}

fn function_delete(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let name = String::from_utf8_lossy(&args[2]);
    let mut engine = ctx.shared.scripting.engine().map_err(engine_error)?;
    if engine.libraries.remove(&*name).is_none() {
        return Err(CmdError::Static("ERR Library not found"));
    }
    engine.collect();
    crate::store::dirty::mark();
    ok(ctx.out);
    Ok(())
}

fn function_flush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(super::reply::subcommand_syntax("FUNCTION", &args[1]));
    }
    flush_mode(args, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option")?;
    let mut engine = ctx.shared.scripting.engine().map_err(engine_error)?;
    engine.libraries.clear();
    engine.collect();
    crate::store::dirty::mark();
    ok(ctx.out);
    Ok(())
}

fn function_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        let unknown = || super::reply::quoting("ERR Unknown argument ", &args[i], usize::MAX, "");
        if is(&args[i], "withcode") && !with_code {
            with_code = true;
            i += 1;
        } else if is(&args[i], "libraryname") && pattern.is_none() {
            let Some(p) = args.get(i + 1) else {
                return Err(CmdError::Static("ERR library name argument was not given"));
            };
            pattern = Some(p);
            i += 2;
        } else {
            return Err(unknown());
        }
    }
    let engine = ctx.shared.scripting.engine().map_err(engine_error)?;
    let proto = ctx.client.protocol;
    let libraries: Vec<&scripting::Library> = engine
        .libraries
        .values()
        .filter(|lib| {
            // The pattern matches without case, as Redis's FUNCTION LIST matches it.
            pattern.is_none_or(|p| crate::glob::glob_match(p, lib.name.as_bytes(), true))
        })
        .collect();
    encode::write_array_len(ctx.out, libraries.len());
    for lib in libraries {
        encode::write_map_len(ctx.out, proto, if with_code { 4 } else { 3 });
        encode::write_bulk(ctx.out, b"library_name");
        encode::write_bulk(ctx.out, lib.name.as_bytes());
        encode::write_bulk(ctx.out, b"engine");
        encode::write_bulk(ctx.out, b"LUA");
        encode::write_bulk(ctx.out, b"functions");
        encode::write_array_len(ctx.out, lib.functions.len());
        for f in lib.functions.values() {
            encode::write_map_len(ctx.out, proto, 3);
            encode::write_bulk(ctx.out, b"name");
            encode::write_bulk(ctx.out, f.name.as_bytes());
            encode::write_bulk(ctx.out, b"description");
            match &f.description {
                Some(d) => encode::write_bulk(ctx.out, d.as_bytes()),
                None => encode::write_null_bulk(ctx.out, proto),
            }
            encode::write_bulk(ctx.out, b"flags");
            let names = f.flags.names();
            encode::write_set_len(ctx.out, proto, names.len());
            for n in names {
                encode::write_simple(ctx.out, n.as_bytes());
            }
        }
        if with_code {
            encode::write_bulk(ctx.out, b"library_code");
            encode::write_bulk(ctx.out, &lib.code);
        }
    }
    Ok(())
}

fn function_stats(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    // Answered from the run flags, never the interpreter: it runs while a function is
    // BUSY, and that is when it matters.
    let flags = &ctx.shared.scripting.flags;
    if flags.running() && flags.is_eval() {
        // Redis: an EVAL running is BUSY to FUNCTION STATS, which reports functions.
        return Err(CmdError::Static(crate::scripting::BUSY_EVAL));
    }
    let (libraries, functions) = flags.counts();
    let proto = ctx.client.protocol;
    encode::write_map_len(ctx.out, proto, 2);
    encode::write_bulk(ctx.out, b"running_script");
    match flags.current().filter(|_| !flags.is_eval()) {
        Some((name, command, ms)) => {
            encode::write_map_len(ctx.out, proto, 3);
            encode::write_bulk(ctx.out, b"name");
            encode::write_bulk(ctx.out, name.as_bytes());
            encode::write_bulk(ctx.out, b"command");
            encode::write_array_len(ctx.out, command.len());
            for arg in &command {
                encode::write_bulk(ctx.out, arg);
            }
            encode::write_bulk(ctx.out, b"duration_ms");
            encode::write_integer(ctx.out, ms as i64);
        }
        None => encode::write_null_bulk(ctx.out, proto),
    }
    encode::write_bulk(ctx.out, b"engines");
    encode::write_map_len(ctx.out, proto, 1);
    encode::write_bulk(ctx.out, b"LUA");
    encode::write_map_len(ctx.out, proto, 2);
    encode::write_bulk(ctx.out, b"libraries_count");
    encode::write_integer(ctx.out, libraries as i64);
    encode::write_bulk(ctx.out, b"functions_count");
    encode::write_integer(ctx.out, functions as i64);
    Ok(())
}

fn function_dump(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let engine = ctx.shared.scripting.engine().map_err(engine_error)?;
    let payload =
        crate::persist::rdb::functions_payload(engine.libraries.values().map(|lib| &lib.code[..]));
    encode::write_bulk(ctx.out, &payload);
    Ok(())
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]: all the payload's libraries load,
/// or none do.
fn function_restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    #[derive(PartialEq)]
    enum Policy {
        Append,
        Replace,
        Flush,
    }
    let policy =
        match args.get(3) {
            None => Policy::Append,
            Some(p) if args.len() == 4 && is(p, "append") => Policy::Append,
            Some(p) if args.len() == 4 && is(p, "replace") => Policy::Replace,
            Some(p) if args.len() == 4 && is(p, "flush") => Policy::Flush,
            Some(_) if args.len() > 4 => {
                return Err(super::reply::subcommand_syntax("FUNCTION", &args[1]))
            }
            Some(_) => return Err(CmdError::Static(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            )),
        };
    let codes = crate::persist::rdb::restore_functions_payload(&args[2])
        .map_err(|_| CmdError::Static("ERR DUMP payload version or checksum are wrong"))?;
    let scripting = &ctx.shared.scripting;
    let mut engine = scripting.engine().map_err(engine_error)?;
    if policy == Policy::Append {
        for code in &codes {
            if let Ok(name) = crate::scripting::library_name(code) {
                if engine.libraries.contains_key(&name.to_ascii_lowercase()) {
                    return Err(CmdError::Owned(format!(
                        "ERR Library {name} already exists"
                    )));
                }
            }
        }
    }
    // All or nothing: the libraries as they were come back if one fails to load.
    let saved = if policy == Policy::Flush {
        std::mem::take(&mut engine.libraries)
    } else {
        engine.libraries.clone()
    };
    let loaded = codes.iter().try_for_each(|code| {
        engine
            .load_library(code, policy == Policy::Replace, &scripting.flags)
            .map(drop)
    });
    if loaded.is_err() {
        engine.libraries = saved;
    } else {
        drop(saved);
    }
    engine.collect();
    loaded.map_err(CmdError::Bytes)?;
    crate::store::dirty::mark();
    ok(ctx.out);
    Ok(())
}

/// SCRIPT HELP: Redis's text.
fn script_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    const LINES: &[&str] = &[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ];
    super::reply::help(ctx.out, LINES);
    Ok(())
}

/// FUNCTION HELP: Redis's text.
fn function_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    const LINES: &[&str] = &[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ];
    super::reply::help(ctx.out, LINES);
    Ok(())
}
