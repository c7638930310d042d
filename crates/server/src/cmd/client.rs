//! CLIENT and its subcommands: ID SETNAME GETNAME SETINFO LIST INFO KILL REPLY NO-EVICT
//! PAUSE UNPAUSE UNBLOCK. Other connections' state comes from what each reports to the
//! client table (`crate::net::registry`).

use std::fmt::Write as _;

use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::connection::describe;
use super::reply::{self, ok, CmdError, CmdResult, SYNTAX};
use super::{Ctx, Handler};
use crate::net::client::ReplyMode;
use crate::net::client_memory::ClientFigures;
use crate::net::registry::client_type;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("client|help", client_help),
    ("client|id", client_id),
    ("client|setname", client_setname),
    ("client|getname", client_getname),
    ("client|list", client_list),
    ("client|info", client_info),
    ("client|kill", client_kill),
    ("client|reply", client_reply),
    ("client|no-evict", client_no_evict),
    ("client|pause", client_pause),
    ("client|unblock", client_unblock),
    ("client|unpause", client_unpause),
];

fn client_id(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    encode::write_integer(ctx.out, ctx.client.id as i64);
    Ok(())
}

pub(super) fn validate_client_name(name: &[u8]) -> CmdResult {
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
    use redline_resp::command::{AclCategories, CommandDocs, CommandFlags, CommandSpec, DocArg};
    CommandSpec {
        name: "client|setinfo",
        id: CommandSpec::NO_ID,
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
            doc_flags: &[],
            deprecated_since: "",
            replaced_by: "",
            history: &[],
            arguments: &[DocArg::new("attr", "oneof").arguments(&[
                DocArg::new("libname", "string").token("LIB-NAME"),
                DocArg::new("libver", "string").token("LIB-VER"),
            ])],
        },
        subcommands: &[],
    }
};

/// CLIENT SETINFO LIB-NAME|LIB-VER value, answered as Redis 7.2 does.
pub fn client_setinfo(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // Arity (4) is checked by the dispatcher from CLIENT_SETINFO.
    let value = &args[3];
    if value.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(reply::quoting(
            "ERR ",
            &args[2],
            usize::MAX,
            " cannot contain spaces, newlines or special characters.",
        ));
    }
    if is(&args[2], "lib-name") {
        ctx.client.lib_name = Some(value.to_vec());
    } else if is(&args[2], "lib-ver") {
        ctx.client.lib_ver = Some(value.to_vec());
    } else {
        return Err(reply::quoting(
            "ERR Unrecognized option '",
            &args[2],
            usize::MAX,
            "'",
        ));
    }
    ok(ctx.out);
    Ok(())
}

/// One CLIENT LIST line, in Redis 7.0's field order (`rbp`, `obl` and `oll`, which
/// describe Redis's own buffer layout, are 0). `me` is the calling client, whose state
/// is read directly; the others show what their connections last reported.
fn client_line(
    text: &mut String,
    shared: &crate::shared::Shared,
    summary: &crate::net::registry::ClientSummary,
    me: Option<&crate::net::client::ClientState>,
) {
    let name = summary
        .name
        .as_deref()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    let a = match me {
        Some(c) => {
            let last = &summary.activity.memory;
            let memory = ClientFigures::of(c, c.qbuf_capacity, c.qbuf, 0, last.reply_buffer);
            c.activity(c.qbuf, memory)
        }
        None => summary.activity.clone(),
    };
    let (sub, psub, ssub) = a.subscriptions;
    // The caller is running this command: nothing of its own is waiting.
    let omem = if me.is_some() { 0 } else { summary.omem };
    let m = &a.memory;
    // As CLIENT GETREDIR answers: -1 when not tracking, 0 when tracking unredirected.
    let redir = shared
        .tracking
        .info(summary.id)
        .map_or(-1, |info| info.options.redirect as i64);
    let _ = writeln!(
        text,
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp=0 obl=0 oll=0 omem={} tot-mem={} events=r cmd={} user={} redir={} resp={}",
        summary.id,
        summary.peer,
        summary.local,
        summary.fd,
        name,
        summary.age,
        a.last_interaction.elapsed().as_secs(),
        a.flags,
        summary.db,
        sub,
        psub,
        ssub,
        a.multi,
        a.qbuf,
        m.qbuf_free,
        m.argv,
        m.multi,
        m.reply_buffer,
        omem,
        m.held + summary.pending,
        a.last_cmd,
        String::from_utf8_lossy(&summary.user),
        redir,
        a.resp
    );
}

/// A TYPE argument as Redis's `getClientTypeByName` reads it, canonical (`slave` is
/// `replica`), or Redis's error for an unknown one.
fn client_type_arg(arg: &[u8]) -> Result<&'static str, CmdError> {
    if !["normal", "master", "replica", "slave", "pubsub"]
        .iter()
        .any(|w| is(arg, w))
    {
        return Err(reply::quoting(
            "ERR Unknown client type '",
            arg,
            usize::MAX,
            "'",
        ));
    }
    Ok(["normal", "master", "pubsub"]
        .into_iter()
        .find(|w| is(arg, w))
        .unwrap_or("replica"))
}

fn client_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut ids: Option<Vec<u64>> = None;
    let mut kind: Option<&str> = None;
    let mut j = 2;
    while j < args.len() {
        if is(&args[j], "type") && j + 1 < args.len() {
            kind = Some(client_type_arg(&args[j + 1])?);
            j += 2;
        } else if is(&args[j], "id") && j + 1 < args.len() {
            let mut list = Vec::new();
            for a in &args[j + 1..] {
                match int(a) {
                    Ok(n) if n > 0 => list.push(n as u64),
                    _ => return Err(CmdError::Static("ERR Invalid client ID")),
                }
            }
            ids = Some(list);
            j = args.len();
        } else {
            return Err(SYNTAX);
        }
    }
    let mut text = String::new();
    for s in ctx.shared.clients.summaries() {
        if ids.as_ref().is_some_and(|l| !l.contains(&s.id)) {
            continue;
        }
        let me = s.id == ctx.client.id;
        let flags = if me {
            ctx.client.flags()
        } else {
            s.activity.flags.clone()
        };
        if kind.is_some_and(|k| k != client_type(&flags)) {
            continue;
        }
        client_line(&mut text, ctx.shared, &s, me.then_some(&*ctx.client));
    }
    verbatim(ctx, text.as_bytes());
    Ok(())
}

fn client_info(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let mut text = client_info_line(ctx);
    if !text.is_empty() {
        text.push('\n');
    }
    verbatim(ctx, text.as_bytes());
    Ok(())
}

/// This client's CLIENT LIST line, without the newline (CLIENT INFO, ACL LOG).
pub fn client_info_line(ctx: &Ctx<'_>) -> String {
    line_of(ctx.shared, ctx.client.id, Some(&*ctx.client))
}

/// Client `id`'s CLIENT LIST line, without the newline; `me` when it is the caller.
fn line_of(
    shared: &crate::shared::Shared,
    id: u64,
    me: Option<&crate::net::client::ClientState>,
) -> String {
    let mut text = String::new();
    if let Some(s) = shared.clients.summary(id) {
        client_line(&mut text, shared, &s, me);
    }
    text.truncate(text.trim_end().len());
    text
}

/// Client `id`'s CLIENT LIST line, without the newline (the replica links' log lines).
pub fn client_line_of(shared: &crate::shared::Shared, id: u64) -> String {
    line_of(shared, id, None)
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 when the client was blocked on keys.
fn client_unblock(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // Redis takes the id and an optional reason, nothing more, and reads the reason
    // before the id.
    if args.len() > 4 {
        return Err(reply::subcommand_syntax("CLIENT", &args[1]));
    }
    let with_error = match args.get(3) {
        None => false,
        Some(a) if is(a, "timeout") => false,
        Some(a) if is(a, "error") => true,
        Some(_) => {
            return Err(CmdError::Static(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    let id = int(&args[2])?;
    let done =
        u64::try_from(id).is_ok_and(|id| super::blocking::unblock(ctx.shared, id, with_error));
    encode::write_integer(ctx.out, i64::from(done));
    Ok(())
}

/// CLIENT KILL addr (old form) or filter pairs ID ADDR LADDR SKIPME TYPE USER.
fn client_kill(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let clients = ctx.shared.clients.summaries();
    if args.len() == 3 {
        let addr = String::from_utf8_lossy(&args[2]).into_owned();
        match clients.iter().find(|c| c.peer.to_string() == addr) {
            Some(target) => kill(ctx, target.id),
            None => return Err(CmdError::Static("ERR No such client")),
        }
        ok(ctx.out);
        return Ok(());
    }
    // Filters are read in order, each checked as it comes (an unknown user before a later
    // syntax error), as Redis does.
    let (mut id, mut addr, mut laddr, mut skipme, mut user) = (None, None, None, true, None);
    let mut kind: Option<&str> = None;
    for pair in args[2..].chunks(2) {
        let [name, value] = pair else {
            return Err(SYNTAX);
        };
        if is(name, "id") {
            match int(value) {
                Ok(n) if n > 0 => id = Some(n as u64),
                _ => return Err(CmdError::Static("ERR client-id should be greater than 0")),
            }
        } else if is(name, "type") {
            kind = Some(client_type_arg(value)?);
        } else if is(name, "addr") {
            addr = Some(String::from_utf8_lossy(value).into_owned());
        } else if is(name, "laddr") {
            laddr = Some(String::from_utf8_lossy(value).into_owned());
        } else if is(name, "user") {
            if ctx.shared.acl.get(value).is_none() {
                return Err(super::reply::quoting(
                    "ERR No such user '",
                    value,
                    usize::MAX,
                    "'",
                ));
            }
            user = Some(value.to_vec());
        } else if is(name, "skipme") {
            skipme = if is(value, "yes") {
                true
            } else if is(value, "no") {
                false
            } else {
                return Err(SYNTAX);
            };
        } else {
            return Err(SYNTAX);
        }
    }
    let mut killed = 0;
    for c in clients {
        let matches = kind.is_none_or(|k| k == client_type(&c.activity.flags))
            && id.is_none_or(|i| i == c.id)
            && addr.as_ref().is_none_or(|a| *a == c.peer.to_string())
            && laddr.as_ref().is_none_or(|a| *a == c.local.to_string())
            && user.as_ref().is_none_or(|u| *u == c.user)
            && !(skipme && c.id == ctx.client.id);
        if matches {
            kill(ctx, c.id);
            killed += 1;
        }
    }
    encode::write_integer(ctx.out, killed);
    Ok(())
}

/// Drops the link to our master if `id` is its client; whether it did. The link then
/// reconnects and continues with PSYNC, as Redis's does once its master client is freed.
fn drop_master_link(ctx: &Ctx<'_>, id: u64) -> bool {
    let master = ctx.shared.repl.master.lock();
    master.as_ref().is_some_and(|m| {
        m.status
            .client_id
            .load(std::sync::atomic::Ordering::Relaxed)
            == id
            && m.status.drop_link()
    })
}

fn kill(ctx: &mut Ctx<'_>, id: u64) {
    if id == ctx.client.id {
        ctx.client.close_after_reply = true;
    } else {
        ctx.shared.clients.kill(id);
        if drop_master_link(ctx, id) {
            return;
        }
        // What only a replica still needed of the replication buffer is freed now, as
        // Redis frees a killed client, not when its link's task next runs: INFO and
        // `maxmemory` right after see it gone, and the replica its connection closed.
        ctx.shared.repl.journal.kill(id);
    }
}

fn client_reply(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mode = &args[2];
    if is(mode, "on") {
        if ctx.client.reply == ReplyMode::Off {
            ctx.client.reply_switched_at = Some(ctx.out.len());
        }
        ctx.client.reply = ReplyMode::On;
        ok(ctx.out);
    } else if is(mode, "off") {
        if ctx.client.reply != ReplyMode::Off {
            ctx.client.reply_switched_at = Some(ctx.out.len());
        }
        ctx.client.reply = ReplyMode::Off;
    } else if is(mode, "skip") {
        // Unless replies are off, the next command is skipped, also when this SKIP is
        // itself being skipped (Redis's `CLIENT_REPLY_SKIP_NEXT`).
        if ctx.client.reply != ReplyMode::Off {
            ctx.client.reply = ReplyMode::SkipArmed;
        }
    } else {
        return Err(SYNTAX);
    }
    Ok(())
}

fn client_no_evict(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let on = if is(&args[2], "on") {
        true
    } else if is(&args[2], "off") {
        false
    } else {
        return Err(SYNTAX);
    };
    ctx.client.mailbox.set_no_evict(on);
    ok(ctx.out);
    Ok(())
}

/// CLIENT PAUSE timeout [WRITE|ALL]: the mode is read before the timeout, as in Redis.
fn client_pause(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    use crate::pause::PauseMode;
    let mode = match args.get(3) {
        _ if args.len() > 4 => return Err(super::reply::subcommand_syntax("CLIENT", &args[1])),
        None => PauseMode::All,
        Some(m) if is(m, "write") => PauseMode::Write,
        Some(m) if is(m, "all") => PauseMode::All,
        Some(_) => {
            return Err(CmdError::Static(
                "ERR CLIENT PAUSE mode must be WRITE or ALL",
            ))
        }
    };
    let ms = super::args::timeout_ms(&args[2])?;
    let now_ms = i64::try_from(crate::store::now_ms()).unwrap_or(i64::MAX);
    let now = tokio::time::Instant::now();
    // Redis adds the timeout to the clock in a signed 64-bit integer: past its range the
    // sum wraps into the past, and the pause ends at once.
    let until = if ms > i64::MAX - now_ms {
        now
    } else {
        // Within range, but maybe past what the monotonic clock can hold: never, then.
        now.checked_add(std::time::Duration::from_millis(ms.unsigned_abs()))
            .unwrap_or(now + std::time::Duration::from_secs(100 * 365 * 86_400))
    };
    ctx.shared.pause.pause(until, mode);
    // Expired keys stay until the pause ends (deleting them would be a write).
    let until_ms = u64::try_from(now_ms.saturating_add(ms)).unwrap_or(u64::MAX);
    let events = ctx.shared.store.events();
    if !events.expiry_held(until_ms.saturating_sub(1)) {
        events.hold_expiry_until(until_ms);
    }
    ok(ctx.out);
    Ok(())
}

fn client_unpause(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.shared.pause.unpause();
    ctx.shared.store.events().hold_expiry_until(0);
    ok(ctx.out);
    Ok(())
}
/// Text as Redis sends it: a verbatim string in RESP3, a bulk string in RESP2.
fn verbatim(ctx: &mut Ctx<'_>, text: &[u8]) {
    encode::write_verbatim(ctx.out, ctx.client.protocol, b"txt", text);
}

/// CLIENT HELP: Redis's text.
fn client_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    const LINES: &[&str] = &[
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CACHING (YES|NO)",
        "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
        "GETREDIR",
        "    Return the client ID we are redirecting to when tracking is enabled.",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "KILL <ip:port>",
        "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are:",
        "    * ADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made from the specified address",
        "    * LADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made to specified local address",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Kill connections by type.",
        "    * USER <username>",
        "      Kill connections authenticated by <username>.",
        "    * SKIPME (YES|NO)",
        "      Skip killing current connection (default: yes).",
        "LIST [options ...]",
        "    Return information about client connections. Options:",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Return clients of specified type.",
        "UNPAUSE",
        "    Stop the current client pause, resuming traffic.",
        "PAUSE <timeout> [WRITE|ALL]",
        "    Suspend all, or just write, clients for <timeout> milliseconds.",
        "REPLY (ON|OFF|SKIP)",
        "    Control the replies sent to the current connection.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
        "         [OPTIN] [OPTOUT] [NOLOOP]",
        "    Control server assisted client side caching.",
        "TRACKINGINFO",
        "    Report tracking status for the current connection.",
        "NO-EVICT (ON|OFF)",
        "    Protect current client connection from eviction.",
        "HELP",
        "    Prints this help.",
    ];
    super::reply::help(ctx.out, LINES);
    Ok(())
}
