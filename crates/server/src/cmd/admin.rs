//! Introspection and administration beyond the basics in `server.rs`: CLIENT LIST INFO
//! KILL (filters) REPLY NO-EVICT PAUSE UNPAUSE, LASTSAVE, MEMORY USAGE, DEBUG (the parts the
//! Redis test suite leans on). ACL lives in `acl.rs`.

use std::fmt::Write as _;

use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::reply::{ok, CmdError, CmdResult, SYNTAX};
use super::{Ctx, Handler};
use crate::net::client::ReplyMode;
use crate::store::Value;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("client|list", client_list),
    ("client|info", client_info),
    ("client|kill", client_kill),
    ("client|reply", client_reply),
    ("client|no-evict", client_no_evict),
    ("client|pause", client_pause),
    ("client|unblock", client_unblock),
    ("client|unpause", client_unpause),
    ("memory|usage", memory_usage),
    ("debug", debug),
];

/// One CLIENT LIST line, in Redis 7.0's field order (memory figures we do not track
/// are 0). `me` is the calling client, whose state is read directly; the others show
/// what their connections last reported.
fn client_line(
    text: &mut String,
    summary: &crate::net::registry::ClientSummary,
    local: &str,
    me: Option<&crate::net::client::ClientState>,
) {
    let name = summary
        .name
        .as_deref()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    let a = match me {
        Some(c) => c.activity(c.qbuf),
        None => summary.activity.clone(),
    };
    let (sub, psub, ssub) = a.subscriptions;
    let _ = writeln!(
        text,
        "id={} addr={} laddr={} fd=0 name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user={} redir=-1 resp={}",
        summary.id,
        summary.peer,
        local,
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
        a.last_cmd,
        String::from_utf8_lossy(&summary.user),
        a.resp
    );
}

fn local_addr(ctx: &Ctx<'_>) -> String {
    let bind = ctx
        .shared
        .config
        .read()
        .bind
        .first()
        .cloned()
        .unwrap_or_default();
    let host = bind.trim_start_matches('-');
    format!("{host}:{}", ctx.shared.port())
}

fn client_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut ids: Option<Vec<u64>> = None;
    let mut j = 2;
    while j < args.len() {
        if is(&args[j], "type") && j + 1 < args.len() {
            let t = &args[j + 1];
            if !["normal", "master", "replica", "slave", "pubsub"]
                .iter()
                .any(|w| is(t, w))
            {
                return Err(CmdError::Owned(format!(
                    "ERR Unknown client type '{}'",
                    String::from_utf8_lossy(t)
                )));
            }
            if !is(t, "normal") && !is(t, "pubsub") {
                ids = Some(Vec::new());
            }
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
    let local = local_addr(ctx);
    let mut text = String::new();
    for s in ctx.shared.clients.summaries() {
        if ids.as_ref().is_some_and(|l| !l.contains(&s.id)) {
            continue;
        }
        let me = (s.id == ctx.client.id).then_some(&*ctx.client);
        client_line(&mut text, &s, &local, me);
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
    let local = local_addr(ctx);
    let mut text = String::new();
    if let Some(s) = ctx.shared.clients.summary(ctx.client.id) {
        client_line(&mut text, &s, &local, Some(&*ctx.client));
    }
    text.truncate(text.trim_end().len());
    text
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 when the client was blocked on keys.
fn client_unblock(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let id = int(&args[2])?;
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
        let Some(target) = clients.iter().find(|c| c.peer.to_string() == addr) else {
            return Err(CmdError::Static("ERR No such client"));
        };
        kill(ctx, target.id);
        ok(ctx.out);
        return Ok(());
    }
    if args.len() % 2 != 0 {
        return Err(SYNTAX);
    }
    let (mut id, mut addr, mut laddr, mut skipme, mut user) = (None, None, None, true, None);
    let mut kind_ok = true;
    for pair in args[2..].chunks(2) {
        let (name, value) = (&pair[0], &pair[1]);
        if is(name, "id") {
            match int(value) {
                Ok(n) if n > 0 => id = Some(n as u64),
                _ => return Err(CmdError::Static("ERR client-id should be greater than 0")),
            }
        } else if is(name, "addr") {
            addr = Some(String::from_utf8_lossy(value).into_owned());
        } else if is(name, "laddr") {
            laddr = Some(String::from_utf8_lossy(value).into_owned());
        } else if is(name, "skipme") {
            skipme = if is(value, "yes") {
                true
            } else if is(value, "no") {
                false
            } else {
                return Err(SYNTAX);
            };
        } else if is(name, "type") {
            if !["normal", "master", "replica", "slave", "pubsub"]
                .iter()
                .any(|w| is(value, w))
            {
                return Err(CmdError::Owned(format!(
                    "ERR Unknown client type '{}'",
                    String::from_utf8_lossy(value)
                )));
            }
            kind_ok = is(value, "normal");
        } else if is(name, "user") {
            user = Some(value.to_vec());
        } else {
            return Err(SYNTAX);
        }
    }
    if let Some(name) = &user {
        if ctx.shared.acl.get(name).is_none() {
            return Err(CmdError::Owned(format!(
                "ERR No such user '{}'",
                String::from_utf8_lossy(name)
            )));
        }
    }
    let local = local_addr(ctx);
    let mut killed = 0;
    for c in clients {
        let matches = kind_ok
            && id.is_none_or(|i| i == c.id)
            && addr.as_ref().is_none_or(|a| *a == c.peer.to_string())
            && laddr.as_ref().is_none_or(|a| *a == local)
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

fn kill(ctx: &mut Ctx<'_>, id: u64) {
    if id == ctx.client.id {
        ctx.client.close_after_reply = true;
    } else {
        ctx.shared.clients.kill(id);
    }
}

fn client_reply(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mode = &args[2];
    if is(mode, "on") {
        ctx.client.reply = ReplyMode::On;
        ok(ctx.out);
    } else if is(mode, "off") {
        ctx.client.reply = ReplyMode::Off;
    } else if is(mode, "skip") {
        if ctx.client.reply == ReplyMode::On {
            ctx.client.reply = ReplyMode::SkipArmed;
        }
    } else {
        return Err(SYNTAX);
    }
    Ok(())
}

fn client_no_evict(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // There is no eviction (maxmemory is not supported), so the flag changes nothing.
    if is(&args[2], "on") || is(&args[2], "off") {
        ok(ctx.out);
        Ok(())
    } else {
        Err(SYNTAX)
    }
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
    let ms = int(&args[2])
        .map_err(|_| CmdError::Static("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
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

/// Bytes a value takes, estimated from its layout (entry, inline or heap bytes, and the
/// per-element overhead of its collection).
fn value_size(value: &Value) -> usize {
    const ENTRY: usize = 56;
    let heap = |len: usize| {
        if len > crate::store::INLINE_CAPACITY {
            len + 16
        } else {
            0
        }
    };
    ENTRY
        + match value {
            Value::Int(_) => 0,
            Value::Str(s) => heap(s.len()),
            Value::List(l) => 32 + l.iter().map(|e| 24 + heap(e.len())).sum::<usize>(),
            Value::Hash(h) => {
                64 + h
                    .iter()
                    .map(|(f, v)| 64 + heap(f.len()) + heap(v.len()))
                    .sum::<usize>()
            }
            Value::Set(s) => 64 + s.iter().map(|m| 40 + heap(m.len())).sum::<usize>(),
            Value::ZSet(z) => {
                96 + z
                    .iter()
                    .map(|(m, _)| 112 + 2 * heap(m.len()))
                    .sum::<usize>()
            }
            Value::Stream(s) => s.heap_size(),
        }
}

fn memory_usage(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut j = 3;
    while j < args.len() {
        if is(&args[j], "samples") && j + 1 < args.len() {
            let n = int(&args[j + 1])?;
            if n < 0 {
                return Err(SYNTAX);
            }
            j += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    let key = &args[2];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    match shard.get(key) {
        Some(e) => {
            let size = value_size(&e.value) + key.len();
            encode::write_integer(ctx.out, size as i64);
        }
        None => encode::write_null_bulk(ctx.out, proto),
    }
    Ok(())
}

fn debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "sleep") && args.len() == 3 {
        let seconds = super::args::float(&args[2])?;
        // Like Redis, the whole connection (not the server) waits; capped for safety.
        let ms = (seconds * 1000.0).clamp(0.0, 60_000.0) as u64;
        std::thread::sleep(std::time::Duration::from_millis(ms));
        ok(ctx.out);
        return Ok(());
    }
    if is(sub, "populate") && (3..=5).contains(&args.len()) {
        return debug_populate(ctx, args);
    }
    if is(sub, "set-active-expire") && args.len() == 3 {
        // Redis reads the flag with atoi: anything but a non-zero number turns it off.
        let on = super::args::int(&args[2]).is_ok_and(|n| n != 0);
        ctx.shared.store.set_active_expire(on);
        ok(ctx.out);
        return Ok(());
    }
    if is(sub, "pause-cron") && args.len() == 3 {
        let paused = super::args::int(&args[2]).is_ok_and(|n| n != 0);
        ctx.shared.store.set_cron_paused(paused);
        ok(ctx.out);
        return Ok(());
    }
    if is(sub, "object") && args.len() == 3 {
        let key = &args[2];
        let shard = ctx.lock(key);
        let Some(e) = shard.peek_stored(key) else {
            return Err(CmdError::Static("ERR no such key"));
        };
        let line = format!(
            "Value at:0x0 refcount:1 encoding:{} serializedlength:0 lru:0 lru_seconds_idle:0",
            super::keys::encoding_name(&e.value)
        );
        encode::write_simple(ctx.out, line.as_bytes());
        return Ok(());
    }
    if is(sub, "set-disable-deny-scripts") && args.len() == 3 {
        let on = super::args::int(&args[2]).is_ok_and(|n| n != 0);
        ctx.shared
            .scripting
            .allow_denied
            .store(on, std::sync::atomic::Ordering::Relaxed);
        ok(ctx.out);
        return Ok(());
    }
    if is(sub, "loadaof") {
        return super::persistence::debug_loadaof(ctx);
    }
    if is(sub, "reload") {
        return super::persistence::debug_reload(ctx, &args[2..]);
    }
    if is(sub, "protocol") && args.len() == 3 {
        return debug_protocol(ctx, &args[2]);
    }
    if is(sub, "digest") && args.len() == 2 {
        return debug_digest(ctx);
    }
    if is(sub, "digest-value") {
        let mut digests = Vec::with_capacity(args.len() - 2);
        for key in &args[2..] {
            let mut shard = ctx.lock(key);
            let digest = shard
                .get(key)
                .map_or([0u8; 20], |e| crate::store::digest::value_digest(e));
            digests.push(crate::store::digest::hex(&digest));
        }
        encode::write_array_len(ctx.out, digests.len());
        for d in digests {
            encode::write_simple(ctx.out, d.as_bytes());
        }
        return Ok(());
    }
    if is(sub, "quicklist-packed-threshold") && args.len() == 3 {
        // Lists here have no quicklist nodes to switch to plain form; the size is
        // validated as Redis validates it and has no other effect.
        let bytes = std::str::from_utf8(&args[2])
            .ok()
            .and_then(crate::config::parse_memory)
            .filter(|n| (0..=(1i64 << 32) - (1 << 20)).contains(n));
        if bytes.is_none() {
            return Err(CmdError::Static(
                "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
            ));
        }
        ok(ctx.out);
        return Ok(());
    }
    if is(sub, "help") {
        const LINES: &[&str] = &[
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "OBJECT <key>",
            "    Show low level info about the key and associated value.",
            "POPULATE <count> [<prefix>] [<size>]",
            "    Create <count> string keys named key:<num>. If <prefix> is specified then",
            "    it is used instead of the 'key' prefix. These are not propagated to",
            "    replicas. Cluster slots are not respected so keys not belonging to the",
            "    current node can be created in cluster mode.",
            "PAUSE-CRON <0|1>",
            "    Stop periodic cron job processing.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "HELP",
            "    Prints this help.",
        ];
        super::reply::help(ctx.out, LINES);
        return Ok(());
    }
    // DEBUG answers every unmatched form with Redis's subcommand syntax error.
    Err(super::reply::subcommand_syntax("DEBUG", sub))
}

/// `DEBUG DIGEST`: every database's keys folded into one digest (zeros when empty).
fn debug_digest(ctx: &mut Ctx<'_>) -> CmdResult {
    use crate::store::digest;
    let mut total = [0u8; 20];
    for db in 0..ctx.shared.store.dbs().len() {
        let mut keys_digest = [0u8; 20];
        let mut keys = 0;
        for index in 0..ctx.shared.store.db(db).shard_count() {
            let shard = ctx.lock_in(db, index);
            keys += digest::fold_shard(&shard, &mut keys_digest);
        }
        if keys > 0 {
            digest::mix_db(&mut total, db, &keys_digest);
        }
    }
    encode::write_simple(ctx.out, digest::hex(&total).as_bytes());
    Ok(())
}

/// `DEBUG PROTOCOL <type>`: one reply of each RESP type, as Redis sends them (the
/// attribute only to RESP3 clients).
fn debug_protocol(ctx: &mut Ctx<'_>, name: &[u8]) -> CmdResult {
    use redline_resp::Protocol;
    let proto = ctx.client.protocol;
    let out = &mut *ctx.out;
    match name.to_ascii_lowercase().as_slice() {
        b"string" => encode::write_bulk(out, b"Hello World"),
        b"integer" => encode::write_integer(out, 12345),
        b"double" => encode::write_double_text_reply(out, proto, b"3.141"),
        b"bignum" => {
            encode::write_big_number(out, proto, b"1234567999999999999999999999999999999")
        }
        b"null" => encode::write_null_bulk(out, proto),
        b"array" | b"set" => {
            if name.eq_ignore_ascii_case(b"set") {
                encode::write_set_len(out, proto, 3);
            } else {
                encode::write_array_len(out, 3);
            }
            for j in 0..3 {
                encode::write_integer(out, j);
            }
        }
        b"map" => {
            encode::write_map_len(out, proto, 3);
            for j in 0..3 {
                encode::write_integer(out, j);
                encode::write_bool(out, proto, j == 1);
            }
        }
        b"attrib" => {
            if proto == Protocol::Resp3 {
                encode::write_len(out, b'|', 1);
                encode::write_bulk(out, b"key-popularity");
                encode::write_array_len(out, 2);
                encode::write_bulk(out, b"key:123");
                encode::write_integer(out, 90);
            }
            encode::write_bulk(out, b"Some real reply following the attribute");
        }
        b"push" => {
            if proto != Protocol::Resp3 {
                return Err(CmdError::Static("ERR RESP2 is not supported by this command"));
            }
            encode::write_push_len(out, proto, 2);
            encode::write_bulk(out, b"server-cpu-usage");
            encode::write_integer(out, 42);
            encode::write_bulk(out, b"Some real reply following the push reply");
        }
        b"true" => encode::write_bool(out, proto, true),
        b"false" => encode::write_bool(out, proto, false),
        b"verbatim" => {
            encode::write_verbatim(out, proto, b"txt", b"This is a verbatim\nstring")
        }
        _ => return Err(CmdError::Static("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")),
    }
    Ok(())
}

/// `DEBUG POPULATE count [prefix] [size]`: keys `prefix:N` (default `key:N`) holding
/// `value:N`, cut or zero-padded to `size` bytes when given; existing keys are left alone.
fn debug_populate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    const NOT_POSITIVE: CmdError = CmdError::Static("ERR value is out of range, must be positive");
    let positive = |arg: &Bytes| {
        super::args::int(arg)
            .ok()
            .and_then(|n| u64::try_from(n).ok())
            .ok_or(NOT_POSITIVE)
    };
    let count = positive(&args[2])?;
    let prefix = args.get(3).map_or(&b"key"[..], |p| &p[..]);
    let size = match args.get(4) {
        Some(size) => usize::try_from(positive(size)?).map_err(|_| NOT_POSITIVE)?,
        None => 0,
    };
    if size as u64 > ctx.shared.config.read().proto_max_bulk_len {
        return Err(super::reply::STRING_TOO_LONG);
    }
    let mut key = Vec::with_capacity(prefix.len() + 21);
    for j in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        key.push(b':');
        key.extend_from_slice(itoa::Buffer::new().format(j).as_bytes());
        let mut shard = ctx.lock(&key);
        if shard.contains(&key) {
            continue;
        }
        let mut value = format!("value:{j}").into_bytes();
        if size > 0 {
            value.resize(size, 0);
        }
        shard.insert(&key, Value::string(&value), 0);
    }
    ok(ctx.out);
    Ok(())
}

/// Text as Redis sends it: a verbatim string in RESP3, a bulk string in RESP2.
fn verbatim(ctx: &mut Ctx<'_>, text: &[u8]) {
    encode::write_verbatim(ctx.out, ctx.client.protocol, b"txt", text);
}
