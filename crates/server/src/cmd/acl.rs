//! The ACL command family (SETUSER GETUSER LIST USERS DELUSER WHOAMI CAT DRYRUN GENPASS
//! HELP, and LOAD/SAVE, which answer as Redis without an ACL file does) and the
//! NOPERM errors the dispatcher answers when a user may not run a command. Users and
//! their rules live in `crate::acl`; this file only reads arguments and writes replies
//! in Redis 7.0's shapes.

use std::sync::Arc;

use bytes::Bytes;
use redline_resp::command::{self, AclCategories, CommandSpec};
use redline_resp::encode;

use super::reply::{ok, wrong_arity, CmdError, CmdResult};
use super::{Ctx, Handler};
use crate::acl::{self, check::Denied, describe, UserCell};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("acl|setuser", acl_setuser),
    ("acl|getuser", acl_getuser),
    ("acl|list", acl_list),
    ("acl|users", acl_users),
    ("acl|deluser", acl_deluser),
    ("acl|whoami", acl_whoami),
    ("acl|cat", acl_cat),
    ("acl|dryrun", acl_dryrun),
    ("acl|genpass", acl_genpass),
    ("acl|log", acl_log),
    ("acl|help", acl_help),
    ("acl|load", acl_load),
    ("acl|save", acl_save),
];

/// The user a connection runs as.
#[inline]
pub fn current_user<'a>(ctx: &'a Ctx<'_>) -> &'a Arc<UserCell> {
    ctx.client
        .user
        .as_ref()
        .unwrap_or_else(|| ctx.shared.acl.default_user())
}

/// The error a refused command gets; inside EXEC, Redis explains that the rules changed
/// since the command was queued.
pub fn denied_error(spec: &CommandSpec, denied: Denied, in_exec: bool) -> CmdError {
    if in_exec {
        let reason = match denied {
            Denied::Command => "no permission to execute the command or subcommand",
            Denied::Key(_) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        };
        return CmdError::Owned(format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}"));
    }
    match denied {
        Denied::Command => CmdError::Owned(format!(
            "NOPERM this user has no permissions to run the '{}' command",
            spec.name
        )),
        Denied::Key(_) => CmdError::Static(
            "NOPERM this user has no permissions to access one of the keys used as arguments",
        ),
        Denied::Channel(_) => CmdError::Static(
            "NOPERM this user has no permissions to access one of the channels used as arguments",
        ),
    }
}

/// The error a script's command refused by the caller's rules gets (Redis's
/// `scriptVerifyACL`).
pub fn script_denied_error(denied: Denied) -> &'static str {
    match denied {
        Denied::Command => "ERR The user executing the script can't run this command or subcommand",
        Denied::Key(_) => "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments",
        Denied::Channel(_) => "ERR The user executing the script can't publish to the channel mentioned in the command",
    }
}

/// Records a refusal in ACL LOG: `reason` and `object` as Redis names them, the user
/// (the name tried, for authentication), the context (`lua` in a script, `multi` while
/// queueing or in EXEC).
pub fn log_refusal(ctx: &Ctx<'_>, reason: &'static str, object: &[u8], username: &[u8]) {
    let context = if ctx.client.in_script {
        "lua"
    } else if ctx.client.multi.is_some() || ctx.nested {
        "multi"
    } else {
        "toplevel"
    };
    ctx.shared.acl.log.add(acl::log::Entry {
        count: 1,
        reason,
        context,
        object: object.to_vec(),
        username: username.to_vec(),
        ctime_ms: 0,
        // Inside EXEC the client's last command is EXEC, which is what Redis shows.
        client_info: super::client::client_info_line(ctx),
    });
}

/// Logs a command refused by the user's permissions.
pub fn log_denied(ctx: &Ctx<'_>, spec: &CommandSpec, denied: Denied, args: &[Bytes]) {
    let (reason, object) = match denied {
        Denied::Command => ("command", spec.name.as_bytes()),
        Denied::Key(pos) => ("key", args.get(pos).map_or(&b""[..], |a| &a[..])),
        Denied::Channel(pos) => ("channel", args.get(pos).map_or(&b""[..], |a| &a[..])),
    };
    let user = current_user(ctx).name().to_vec();
    log_refusal(ctx, reason, object, &user);
}

/// ACL LOG [count | RESET]: the newest entries (10 by default).
fn acl_log(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let count = match args.get(2) {
        _ if args.len() > 3 => return Err(super::reply::subcommand_syntax("ACL", &args[1])),
        None => 10,
        Some(arg) if super::args::is(arg, "reset") => {
            ctx.shared.acl.log.reset();
            ok(ctx.out);
            return Ok(());
        }
        Some(arg) => super::args::int(arg)?,
    };
    let entries = ctx
        .shared
        .acl
        .log
        .newest(usize::try_from(count).unwrap_or(0));
    let now = crate::store::now_ms();
    let proto = ctx.proto();
    let out = &mut *ctx.out;
    encode::write_array_len(out, entries.len());
    for e in entries {
        encode::write_map_len(out, proto, 7);
        encode::write_bulk(out, b"count");
        encode::write_integer(out, i64::try_from(e.count).unwrap_or(i64::MAX));
        encode::write_bulk(out, b"reason");
        encode::write_bulk(out, e.reason.as_bytes());
        encode::write_bulk(out, b"context");
        encode::write_bulk(out, e.context.as_bytes());
        encode::write_bulk(out, b"object");
        encode::write_bulk(out, &e.object);
        encode::write_bulk(out, b"username");
        encode::write_bulk(out, &e.username);
        encode::write_bulk(out, b"age-seconds");
        super::reply::double(out, proto, now.saturating_sub(e.ctime_ms) as f64 / 1000.0);
        encode::write_bulk(out, b"client-info");
        encode::write_bulk(out, e.client_info.as_bytes());
    }
    Ok(())
}

fn acl_setuser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let name = &args[2];
    if name.iter().any(|&b| b == b' ' || b == 0) {
        return Err(CmdError::Static(
            "ERR Usernames can't contain spaces or null characters",
        ));
    }
    let rules = match acl::user::merge_selector_args(&args[3..]) {
        Ok(rules) => rules,
        Err(i) => {
            return Err(super::reply::quoting(
                "ERR Unmatched parenthesis in acl selector starting at '",
                &args[3 + i],
                usize::MAX,
                "'.",
            ));
        }
    };
    let rules = &rules[..];
    let before = ctx.shared.acl.get(name).map(|cell| cell.rules().clone());
    if let Err((i, e)) = ctx.shared.acl.set_user(name, rules) {
        use super::reply::Piece::{Arg, Text};
        return Err(super::reply::error_from(&[
            Text("ERR Error in ACL SETUSER modifier '"),
            Arg(rules.get(i).map_or(&b""[..], |r| &r[..]), usize::MAX),
            Text("': "),
            Text(e.text()),
        ]));
    }
    if let (Some(before), Some(cell)) = (before, ctx.shared.acl.get(name)) {
        kill_lost_subscribers(ctx, &before, &cell);
    }
    ok(ctx.out);
    Ok(())
}

/// When a user's channels shrink, its clients subscribed to what it may no longer hear
/// are disconnected (the caller after its reply), as Redis 7.0's
/// `ACLKillPubsubClientsIfNeeded` does.
fn kill_lost_subscribers(ctx: &mut Ctx<'_>, before: &acl::User, cell: &Arc<UserCell>) {
    let after = cell.rules().root.clone();
    let before = &before.root;
    let kept = after.allchannels
        || (!before.allchannels && before.channels.iter().all(|c| after.channels.contains(c)));
    if kept {
        return;
    }
    let is_default = Arc::ptr_eq(cell, ctx.shared.acl.default_user());
    let ids = ctx
        .shared
        .clients
        .ids_of_user((!is_default).then_some(cell));
    let mut doomed: Vec<u64> = ctx
        .shared
        .pubsub
        .subscriptions_of(&ids)
        .into_iter()
        .filter(|(_, kind, name)| {
            let pattern = *kind == crate::pubsub::Kind::Pattern;
            !acl::check::channel_allowed(&after, name, pattern)
        })
        .map(|(id, _, _)| id)
        .collect();
    doomed.sort_unstable();
    doomed.dedup();
    for id in doomed {
        if id == ctx.client.id {
            ctx.client.close_after_reply = true;
        } else {
            ctx.shared.clients.kill(id);
        }
    }
}

fn acl_getuser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let proto = ctx.proto();
    let Some(cell) = ctx.shared.acl.get(&args[2]) else {
        encode::write_null_bulk(ctx.out, proto);
        return Ok(());
    };
    let user = cell.rules();
    let out = &mut *ctx.out;
    encode::write_map_len(out, proto, 6);
    encode::write_bulk(out, b"flags");
    let flags = describe::flags(&user);
    encode::write_set_len(out, proto, flags.len());
    for flag in flags {
        encode::write_bulk(out, flag.as_bytes());
    }
    encode::write_bulk(out, b"passwords");
    encode::write_array_len(out, user.passwords.len());
    for p in &user.passwords {
        encode::write_bulk(out, acl::user::hex(p).as_bytes());
    }
    selector_fields(out, &user.root);
    encode::write_bulk(out, b"selectors");
    encode::write_array_len(out, user.selectors.len());
    for sel in &user.selectors {
        encode::write_map_len(out, proto, 3);
        selector_fields(out, sel);
    }
    Ok(())
}

/// `commands`, `keys`, `channels` of one selector (GETUSER).
fn selector_fields(out: &mut bytes::BytesMut, sel: &acl::selector::Selector) {
    encode::write_bulk(out, b"commands");
    encode::write_bulk(out, describe::commands(sel).as_bytes());
    encode::write_bulk(out, b"keys");
    encode::write_bulk(out, &describe::keys(sel));
    encode::write_bulk(out, b"channels");
    encode::write_bulk(out, &describe::channels(sel));
}

fn acl_list(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let users = ctx.shared.acl.all();
    encode::write_array_len(ctx.out, users.len());
    for cell in users {
        let line = describe::line(cell.name(), &cell.rules());
        encode::write_bulk(ctx.out, &line);
    }
    Ok(())
}

fn acl_users(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let users = ctx.shared.acl.all();
    encode::write_array_len(ctx.out, users.len());
    for cell in users {
        encode::write_bulk(ctx.out, cell.name());
    }
    Ok(())
}

/// Removes users; clients authenticated as them are disconnected (the caller after its
/// reply), as Redis does.
fn acl_deluser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let names = &args[2..];
    if names.iter().any(|u| &u[..] == b"default") {
        return Err(CmdError::Static("ERR The 'default' user cannot be removed"));
    }
    let removed = ctx.shared.acl.delete(names);
    disconnect_users(ctx, &removed);
    encode::write_integer(ctx.out, removed.len() as i64);
    Ok(())
}

/// Disconnects the clients authenticated as `users` (the caller after its reply).
fn disconnect_users(ctx: &mut Ctx<'_>, users: &[Arc<UserCell>]) {
    ctx.shared.clients.kill_users(users, ctx.client.id);
    if let Some(mine) = &ctx.client.user {
        if users.iter().any(|r| Arc::ptr_eq(r, mine)) {
            ctx.client.user = None;
            ctx.client.authenticated = false;
            ctx.client.close_after_reply = true;
        }
    }
}

fn acl_whoami(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let name = current_user(ctx).name().to_vec();
    encode::write_bulk(ctx.out, &name);
    Ok(())
}

fn acl_cat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(super::reply::subcommand_syntax("ACL", &args[1]));
    }
    let names: Vec<&str> = match args.get(2) {
        None => AclCategories::from_bits(u32::MAX).names().collect(),
        Some(cat) => {
            let Some(flag) = acl::selector::category(cat) else {
                return Err(super::reply::quoting(
                    "ERR Unknown category '",
                    cat,
                    usize::MAX,
                    "'",
                ));
            };
            command::all()
                .filter(|spec| spec.acl_categories.contains(flag))
                .map(|spec| spec.name)
                .collect()
        }
    };
    encode::write_array_len(ctx.out, names.len());
    for n in names {
        encode::write_bulk(ctx.out, n.as_bytes());
    }
    Ok(())
}

/// Whether a user could run a command, without running it: OK, or the reason as text.
fn acl_dryrun(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let Some(cell) = ctx.shared.acl.get(&args[2]) else {
        return Err(super::reply::quoting(
            "ERR User '",
            &args[2],
            usize::MAX,
            "' not found",
        ));
    };
    let run = &args[3..];
    let Some(spec) = ctx.shared.renamed.resolve(run) else {
        return Err(super::reply::quoting(
            "ERR Command '",
            &run[0],
            usize::MAX,
            "' not found",
        ));
    };
    if !spec.arity_ok(run.len()) {
        return Err(wrong_arity(spec.name));
    }
    let verdict = acl::check::check(&cell.rules(), spec, run);
    match verdict {
        Ok(()) => ok(ctx.out),
        Err(denied) => {
            // The key or channel quoted as given: its bytes up to a NUL (Redis's %s).
            let what = |pos: usize, kind: &str| {
                let named = crate::cstr::c_string(run.get(pos).map_or(&b""[..], |a| &a[..]));
                [
                    &b"This user has no permissions to access the '"[..],
                    named,
                    format!("' {kind}").as_bytes(),
                ]
                .concat()
            };
            let text = match denied {
                Denied::Command => format!(
                    "This user has no permissions to run the '{}' command",
                    spec.name
                )
                .into_bytes(),
                Denied::Key(pos) => what(pos, "key"),
                Denied::Channel(pos) => what(pos, "channel"),
            };
            encode::write_bulk(ctx.out, &text);
        }
    }
    Ok(())
}

/// A random password of `bits` bits (256 by default), in hex.
fn acl_genpass(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(super::reply::subcommand_syntax("ACL", &args[1]));
    }
    let bits = match args.get(2) {
        Some(arg) => super::args::int(arg)?,
        None => 256,
    };
    if !(1..=4096).contains(&bits) {
        return Err(CmdError::Static("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"));
    }
    // `bits` is in 1..=4096, so these conversions and sizes are small.
    let chars = (bits.unsigned_abs() as usize).div_ceil(4);
    let mut random = vec![0u8; chars.div_ceil(2)];
    getrandom::getrandom(&mut random)
        .map_err(|_| CmdError::Static("ERR Failed to read random bytes"))?;
    let mut text = acl::user::hex(&random);
    text.truncate(chars);
    encode::write_bulk(ctx.out, text.as_bytes());
    Ok(())
}

/// The `aclfile` path, or Redis's error when none is configured.
fn acl_file(ctx: &Ctx<'_>) -> Result<std::path::PathBuf, CmdError> {
    let path = ctx.shared.config.read().param("aclfile").to_string();
    if path.is_empty() {
        return acl_no_file();
    }
    Ok(path.into())
}

/// ACL LOAD: every user replaced by the file's (nothing changes if any line is bad);
/// clients authenticated as a replaced user are disconnected, as in Redis.
fn acl_load(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let path = acl_file(ctx)?;
    let replaced =
        acl::file::load(&ctx.shared.acl, &path).map_err(|e| CmdError::Owned(format!("ERR {e}")))?;
    disconnect_users(ctx, &replaced);
    ok(ctx.out);
    Ok(())
}

fn acl_save(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let path = acl_file(ctx)?;
    if let Err(e) = acl::file::save(&ctx.shared.acl, &path) {
        tracing::warn!("Writing ACL file for ACL SAVE: {e}");
        return Err(CmdError::Static(
            "ERR There was an error trying to save the ACLs. Please check the server logs for more information",
        ));
    }
    ok(ctx.out);
    Ok(())
}

fn acl_no_file<T>() -> Result<T, CmdError> {
    Err(CmdError::Static("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."))
}

fn acl_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    const LINES: &[&str] = &[
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Prints this help.",
    ];
    super::reply::help(ctx.out, LINES);
    Ok(())
}
