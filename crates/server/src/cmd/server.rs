//! Connection and server commands: PING ECHO SELECT SWAPDB QUIT RESET HELLO AUTH DBSIZE
//! FLUSHDB FLUSHALL COMMAND INFO TIME CLIENT CONFIG SHUTDOWN.

use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes};
use redline_resp::command::{self, BeginSearch, CommandSpec, FindKeys, KeysError};
use redline_resp::{encode, Protocol};

use super::args::{int, is};
use super::reply::{self, ok, CmdError, CmdResult, DB_INDEX, SYNTAX, WRONGPASS};
use super::{Ctx, Handler};
use crate::config::SetError;

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
    ("command", command_all),
    ("command|count", command_count),
    ("command|list", command_list),
    ("command|info", command_info),
    ("command|docs", command_docs),
    ("command|getkeys", command_getkeys),
    ("command|getkeysandflags", command_getkeysandflags),
    ("client|id", client_id),
    ("client|setname", client_setname),
    ("client|getname", client_getname),
    ("config|get", config_get),
    ("config|set", config_set),
    ("config|resetstat", config_resetstat),
    ("config|rewrite", config_rewrite),
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

fn db_index(ctx: &Ctx<'_>, arg: &[u8]) -> Result<usize, CmdError> {
    let n = int(arg)?;
    if n < 0 || n as usize >= ctx.shared.store.db_count() {
        return Err(DB_INDEX);
    }
    Ok(n as usize)
}

fn select(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // Redis reads SELECT's index as a C int, with its own range error.
    let n = int(&args[1])?;
    if i32::try_from(n).is_err() {
        return Err(CmdError::Static(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        ));
    }
    ctx.client.db = db_index(ctx, &args[1])?;
    describe(ctx);
    ok(ctx.out);
    Ok(())
}

fn swapdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
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
    ctx.swap_dbs(a, b);
    ok(ctx.out);
    Ok(())
}

/// Mirrors the client's name and database into the client table (CLIENT LIST).
fn describe(ctx: &Ctx<'_>) {
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
            return Err(CmdError::Owned(format!(
                "ERR Syntax error in HELLO option '{}'",
                reply::clip(&args[i], 128)
            )));
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
        validate_client_name(&name)?;
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
    encode::write_bulk(out, b"mode");
    encode::write_bulk(out, b"standalone");
    encode::write_bulk(out, b"role");
    encode::write_bulk(out, b"master");
    encode::write_bulk(out, b"modules");
    encode::write_array_len(out, 0);
    Ok(())
}

fn dbsize(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let len: usize = (0..ctx.db().shard_count())
        .map(|i| ctx.lock_index(i).len())
        .sum();
    encode::write_integer(ctx.out, len as i64);
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
    for db in 0..ctx.shared.store.db_count() {
        clear_db(ctx, db, lazy);
    }
    ok(ctx.out);
    Ok(())
}

/// Empties database `db`, shard by shard (each shard under its own lock, or the ones
/// EXEC holds); with `lazy` the keys are dropped by the background freer.
fn clear_db(ctx: &Ctx<'_>, db: usize, lazy: bool) {
    for i in 0..ctx.shared.store.db(db).shard_count() {
        let mut shard = ctx.lock_in(db, i);
        if lazy {
            let (garbage, keys) = shard.take_all();
            drop(shard);
            ctx.shared.store.lazyfree.free_all(garbage, keys);
        } else {
            shard.clear();
        }
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
    let (mut save, mut nosave, mut force) = (false, false, false);
    for arg in &args[1..] {
        save |= is(arg, "save");
        nosave |= is(arg, "nosave");
        force |= is(arg, "force");
        if !["nosave", "save", "now", "force", "abort"]
            .iter()
            .any(|w| is(arg, w))
        {
            return Err(SYNTAX);
        }
        if is(arg, "abort") {
            return Err(CmdError::Static("ERR No shutdown in progress."));
        }
    }
    if save && nosave {
        return Err(SYNTAX);
    }
    tracing::warn!("User requested shutdown...");
    let shared = ctx.shared;
    if save || (!nosave && crate::persist::snapshot::saves_on_exit(shared)) {
        tracing::info!("Saving the final RDB snapshot before exiting.");
        if crate::persist::snapshot::save(shared).is_err() && !force {
            tracing::warn!("Error trying to save the DB, can't exit.");
            return Err(CmdError::Static(
                "ERR Errors trying to SHUTDOWN. Check logs.",
            ));
        }
    }
    shared
        .persistence
        .shutdown_handled
        .store(true, std::sync::atomic::Ordering::Release);
    shared.request_shutdown();
    // Like Redis: no reply, the connection just closes.
    ctx.client.close_after_reply = true;
    Ok(())
}

// ---- COMMAND ----

fn command_all(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    encode::write_array_len(ctx.out, command::COMMANDS.len());
    for spec in command::COMMANDS {
        write_command_info(ctx.out, ctx.client.protocol, spec);
    }
    Ok(())
}

fn command_count(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    encode::write_integer(ctx.out, command::COMMANDS.len() as i64);
    Ok(())
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern].
fn command_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let all = command::all();
    let names: Vec<&str> = match &args[2..] {
        [] => all.map(|c| c.name).collect(),
        [filterby, kind, value] if super::args::is(filterby, "filterby") => {
            if super::args::is(kind, "module") {
                // No modules: no command comes from one.
                Vec::new()
            } else if super::args::is(kind, "aclcat") {
                let category = String::from_utf8_lossy(value).to_ascii_lowercase();
                match command::AclCategories::from_name(&category) {
                    Some(cat) => all
                        .filter(|c| c.acl_categories.contains(cat))
                        .map(|c| c.name)
                        .collect(),
                    None => Vec::new(),
                }
            } else if super::args::is(kind, "pattern") {
                all.filter(|c| glob_match(value, c.name.as_bytes(), true))
                    .map(|c| c.name)
                    .collect()
            } else {
                return Err(SYNTAX);
            }
        }
        _ => return Err(SYNTAX),
    };
    encode::write_array_len(ctx.out, names.len());
    for name in names {
        encode::write_bulk(ctx.out, name.as_bytes());
    }
    Ok(())
}

fn command_info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() == 2 {
        return command_all(ctx, args);
    }
    encode::write_array_len(ctx.out, args.len() - 2);
    for name in &args[2..] {
        match find_command(name) {
            Some(spec) => write_command_info(ctx.out, ctx.client.protocol, spec),
            None => encode::write_null_bulk(ctx.out, ctx.client.protocol),
        }
    }
    Ok(())
}

/// A command by name, subcommands as `parent|sub`.
fn find_command(name: &[u8]) -> Option<&'static CommandSpec> {
    match name.iter().position(|&c| c == b'|') {
        Some(bar) => command::lookup_subcommand(command::lookup(&name[..bar])?, &name[bar + 1..]),
        None => command::lookup(name),
    }
}

fn write_status_set<'a>(
    out: &mut bytes::BytesMut,
    proto: Protocol,
    items: impl Iterator<Item = &'a str>,
    prefix: &str,
) {
    let items: Vec<&str> = items.collect();
    encode::write_set_len(out, proto, items.len());
    for item in items {
        let mut line = String::with_capacity(prefix.len() + item.len());
        line.push_str(prefix);
        line.push_str(item);
        encode::write_simple(out, line.as_bytes());
    }
}

fn write_command_info(out: &mut bytes::BytesMut, proto: Protocol, spec: &CommandSpec) {
    encode::write_array_len(out, 10);
    encode::write_bulk(out, spec.name.as_bytes());
    encode::write_integer(out, i64::from(spec.arity));
    write_status_set(out, proto, spec.flags.names(), "");
    encode::write_integer(out, i64::from(spec.first_key));
    encode::write_integer(out, i64::from(spec.last_key));
    encode::write_integer(out, i64::from(spec.key_step));
    write_status_set(out, proto, spec.acl_categories.names(), "@");
    // Tips are bulk strings, unlike the flags.
    encode::write_set_len(out, proto, spec.tips.len());
    for tip in spec.tips {
        encode::write_bulk(out, tip.as_bytes());
    }
    encode::write_set_len(out, proto, spec.key_specs.len());
    for key_spec in spec.key_specs {
        let has_notes = !key_spec.notes.is_empty();
        encode::write_map_len(out, proto, 3 + usize::from(has_notes));
        if has_notes {
            encode::write_bulk(out, b"notes");
            encode::write_bulk(out, key_spec.notes.as_bytes());
        }
        encode::write_bulk(out, b"flags");
        write_status_set(out, proto, key_spec.flags.names(), "");
        encode::write_bulk(out, b"begin_search");
        encode::write_map_len(out, proto, 2);
        encode::write_bulk(out, b"type");
        match key_spec.begin_search {
            BeginSearch::Index(index) => {
                encode::write_bulk(out, b"index");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 1);
                encode::write_bulk(out, b"index");
                encode::write_integer(out, i64::from(index));
            }
            BeginSearch::Keyword {
                keyword,
                start_from,
            } => {
                encode::write_bulk(out, b"keyword");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 2);
                encode::write_bulk(out, b"keyword");
                encode::write_bulk(out, keyword.as_bytes());
                encode::write_bulk(out, b"startfrom");
                encode::write_integer(out, i64::from(start_from));
            }
            BeginSearch::Unknown => {
                encode::write_bulk(out, b"unknown");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 0);
            }
        }
        encode::write_bulk(out, b"find_keys");
        encode::write_map_len(out, proto, 2);
        encode::write_bulk(out, b"type");
        match key_spec.find_keys {
            FindKeys::Range {
                last_key,
                key_step,
                limit,
            } => {
                encode::write_bulk(out, b"range");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 3);
                encode::write_bulk(out, b"lastkey");
                encode::write_integer(out, i64::from(last_key));
                encode::write_bulk(out, b"keystep");
                encode::write_integer(out, i64::from(key_step));
                encode::write_bulk(out, b"limit");
                encode::write_integer(out, i64::from(limit));
            }
            FindKeys::Keynum {
                keynum_index,
                first_key,
                key_step,
            } => {
                encode::write_bulk(out, b"keynum");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 3);
                encode::write_bulk(out, b"keynumidx");
                encode::write_integer(out, i64::from(keynum_index));
                encode::write_bulk(out, b"firstkey");
                encode::write_integer(out, i64::from(first_key));
                encode::write_bulk(out, b"keystep");
                encode::write_integer(out, i64::from(key_step));
            }
            FindKeys::Unknown => {
                encode::write_bulk(out, b"unknown");
                encode::write_bulk(out, b"spec");
                encode::write_map_len(out, proto, 0);
            }
        }
    }
    // Redis sends "no subcommands" as an empty set, and a list of them as an array.
    if spec.subcommands.is_empty() {
        encode::write_set_len(out, proto, 0);
    } else {
        encode::write_array_len(out, spec.subcommands.len());
    }
    for sub in spec.subcommands {
        write_command_info(out, proto, sub);
    }
}

fn command_docs(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let specs: Vec<&'static CommandSpec> = if args.len() == 2 {
        command::COMMANDS.iter().collect()
    } else {
        args[2..].iter().filter_map(|n| find_command(n)).collect()
    };
    let proto = ctx.client.protocol;
    encode::write_map_len(ctx.out, proto, specs.len());
    for spec in specs {
        encode::write_bulk(ctx.out, spec.name.as_bytes());
        encode::write_map_len(ctx.out, proto, 4);
        for (field, value) in [
            ("summary", spec.docs.summary),
            ("since", spec.docs.since),
            ("group", spec.docs.group),
            ("complexity", spec.docs.complexity),
        ] {
            encode::write_bulk(ctx.out, field.as_bytes());
            encode::write_bulk(ctx.out, value.as_bytes());
        }
    }
    Ok(())
}

fn keys_error(e: KeysError) -> CmdError {
    CmdError::Owned(match e {
        KeysError::UnknownCommand => "ERR Invalid command specified".to_string(),
        other => format!("ERR {other}"),
    })
}

/// COMMAND GETKEYSANDFLAGS: each key with its key-spec flags (`RW access delete`...).
fn command_getkeysandflags(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let command_args = &args[2..];
    let keys = command::keys_and_flags(command_args).map_err(keys_error)?;
    encode::write_array_len(ctx.out, keys.len());
    for (index, flags) in keys {
        encode::write_array_len(ctx.out, 2);
        encode::write_bulk(
            ctx.out,
            command_args.get(index).map_or(&b""[..], |a| &a[..]),
        );
        let names: Vec<&str> = flags.names().collect();
        encode::write_set_len(ctx.out, ctx.client.protocol, names.len());
        for name in names {
            encode::write_simple(ctx.out, name.as_bytes());
        }
    }
    Ok(())
}

fn command_getkeys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let command_args = &args[2..];
    let keys = command::getkeys(command_args).map_err(keys_error)?;
    encode::write_array_len(ctx.out, keys.len());
    for index in keys {
        encode::write_bulk(
            ctx.out,
            command_args.get(index).map_or(&b""[..], |a| &a[..]),
        );
    }
    Ok(())
}

// ---- CLIENT ----

fn client_id(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    encode::write_integer(ctx.out, ctx.client.id as i64);
    Ok(())
}

fn validate_client_name(name: &[u8]) -> CmdResult {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(CmdError::Static(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    Ok(())
}

fn client_setname(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    validate_client_name(&args[2])?;
    ctx.client.name = (!args[2].is_empty()).then(|| args[2].to_vec());
    describe(ctx);
    ok(ctx.out);
    Ok(())
}

fn client_getname(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    match &ctx.client.name {
        Some(name) => encode::write_bulk(ctx.out, name),
        None => encode::write_null_bulk(ctx.out, ctx.client.protocol),
    }
    Ok(())
}

/// `CLIENT SETINFO LIB-NAME|LIB-VER value` (Redis 7.2; 7.0 lacks it, but clients send
/// it during their handshake).
/// CLIENT SETINFO is newer than Redis 7.0's table, but current clients send it during
/// their handshake: this entry (flags and categories as Redis 7.2 has them) lets it go
/// through the dispatcher's checks like any other subcommand.
pub static CLIENT_SETINFO: redline_resp::command::CommandSpec = {
    use redline_resp::command::{AclCategories, CommandDocs, CommandFlags, CommandSpec};
    CommandSpec {
        name: "client|setinfo",
        arity: 4,
        flags: CommandFlags::of(&[
            CommandFlags::NOSCRIPT,
            CommandFlags::LOADING,
            CommandFlags::STALE,
        ]),
        acl_categories: AclCategories::of(&[AclCategories::SLOW, AclCategories::CONNECTION]),
        first_key: 0,
        last_key: 0,
        key_step: 0,
        tips: &[],
        key_specs: &[],
        get_keys: None,
        docs: CommandDocs {
            summary: "Sets information specific to the client or connection.",
            since: "7.2.0",
            group: "connection",
            complexity: "O(1)",
        },
        subcommands: &[],
    }
};

/// CLIENT SETINFO LIB-NAME|LIB-VER value, answered as Redis 7.2 does.
pub fn client_setinfo(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // Arity (4) is checked by the dispatcher from CLIENT_SETINFO.
    let value = &args[3];
    if value.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(CmdError::Owned(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            reply::clip(&args[2], 128)
        )));
    }
    if is(&args[2], "lib-name") {
        ctx.client.lib_name = Some(value.to_vec());
    } else if is(&args[2], "lib-ver") {
        ctx.client.lib_ver = Some(value.to_vec());
    } else {
        return Err(CmdError::Owned(format!(
            "ERR Unrecognized option '{}'",
            reply::clip(&args[2], 128)
        )));
    }
    ok(ctx.out);
    Ok(())
}

// ---- CONFIG ----

/// Redis's glob matching, also used by KEYS and SCAN MATCH.
pub use crate::cmd::keys::glob_match;

fn config_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let config = ctx.shared.config.read().clone();
    let mut pairs: Vec<(String, String)> = Vec::new();
    for pattern in &args[2..] {
        let lower = pattern.to_ascii_lowercase();
        let is_glob = lower.iter().any(|b| matches!(b, b'*' | b'?' | b'['));
        for name in crate::config::Config::all_names() {
            if is_glob && crate::config::Config::is_hidden(name) {
                continue;
            }
            if glob_match(&lower, name.as_bytes(), true) && !pairs.iter().any(|(n, _)| n == name) {
                if let Some(value) = config.get(name) {
                    pairs.push((name.to_string(), value));
                }
            }
        }
    }
    encode::write_map_len(ctx.out, ctx.client.protocol, pairs.len());
    for (name, value) in pairs {
        encode::write_bulk(ctx.out, name.as_bytes());
        encode::write_bulk(ctx.out, value.as_bytes());
    }
    Ok(())
}

fn config_set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() % 2 != 0 {
        return Err(reply::wrong_arity("config|set"));
    }
    let mut config = ctx.shared.config.read().clone();
    let mut seen: Vec<String> = Vec::new();
    for pair in args[2..].chunks(2) {
        let name = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
        let canonical = crate::config::Config::canonical_name(&name).to_string();
        if seen.contains(&canonical) {
            return Err(CmdError::Owned(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"
            )));
        }
        seen.push(canonical);
        config
            .set(&name, &[pair[1].to_vec()], false)
            .map_err(|e| match e {
                SetError::Unknown | SetError::Arity => CmdError::Owned(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                    reply::clip(&pair[0], 128)
                )),
                SetError::Immutable => CmdError::Owned(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
                )),
                SetError::Invalid(message) => CmdError::Owned(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {message}"
                )),
            })?;
    }
    let dir = config.param("dir").to_string();
    if !dir.is_empty() && ctx.shared.config.read().param("dir") != dir {
        std::env::set_current_dir(&dir).map_err(|e| {
            CmdError::Owned(format!(
                "ERR CONFIG SET failed (possibly related to argument 'dir') - {e}"
            ))
        })?;
    }
    let (old_port, old_bind) = {
        let current = ctx.shared.config.read();
        (current.port, current.bind.clone())
    };
    if config.port != old_port || config.bind != old_bind {
        // Listen on the new addresses before anything else applies: a failure leaves
        // every parameter as it was.
        let (name, why) = if config.port != old_port {
            ("port", "Unable to listen on this port")
        } else {
            ("bind", "Failed to bind to specified addresses.")
        };
        match crate::net::listener::rebind(ctx.shared, &config.bind, config.port) {
            Ok(port) => config.port = port,
            Err(e) => {
                tracing::warn!("CONFIG SET {name}: {e}");
                return Err(CmdError::Owned(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
                )));
            }
        }
    }
    let aof_was = ctx.shared.config.read().appendonly;
    let aof_now = config.appendonly;
    ctx.shared.update_config(config);
    if aof_now && !aof_was {
        crate::persist::aof::rewrite(ctx.shared).map_err(|e| {
            CmdError::Owned(format!(
                "ERR CONFIG SET failed (possibly related to argument 'appendonly') - {e}"
            ))
        })?;
    } else if aof_was && !aof_now {
        crate::persist::aof::stop(ctx.shared);
    }
    ok(ctx.out);
    Ok(())
}

fn config_resetstat(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let stats = &ctx.shared.stats;
    stats.commands_processed.store(0, Ordering::Relaxed);
    stats.connections_received.store(0, Ordering::Relaxed);
    stats.rejected_connections.store(0, Ordering::Relaxed);
    ctx.shared.cmdstats.reset();
    ctx.shared.store.lazyfree.reset_stats();
    ok(ctx.out);
    Ok(())
}

fn config_rewrite(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let config = ctx.shared.config.read().clone();
    let Some(path) = config.config_file.clone() else {
        return Err(CmdError::Static(
            "ERR The server is running without a config file",
        ));
    };
    crate::config::rewrite(&config, &path)
        .map_err(|e| CmdError::Owned(format!("ERR Rewriting config file: {e}")))?;
    ok(ctx.out);
    Ok(())
}
