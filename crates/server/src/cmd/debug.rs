//! DEBUG: the subcommands Redis's test suite leans on (SLEEP, RELOAD, LOADAOF, OBJECT,
//! DIGEST, DIGEST-VALUE, PROTOCOL, POPULATE, SET-ACTIVE-EXPIRE, PAUSE-CRON,
//! QUICKLIST-PACKED-THRESHOLD, REPLICATE, ...), with Redis's replies.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::reply::{ok, CmdError, CmdResult, MUST_BE_POSITIVE};
use super::{Ctx, Handler};
use crate::repl::journal::{Propagated, Targets};
use crate::store::Value;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[("debug", debug)];

fn debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "sleep") && args.len() == 3 {
        // Read as Redis reads it, with strtod and no error: what starts the argument
        // ("0\r\n", as hiredis's tests send it, is 0), else 0; a value that is not
        // finite sleeps not at all, as Redis's conversion to microseconds goes negative.
        let seconds = super::float::strtod(&args[2]).value;
        let seconds = if seconds.is_finite() { seconds } else { 0.0 };
        // The whole server stops, as Redis's single thread sleeps (see `crate::freeze`);
        // capped for safety.
        let ms = (seconds * 1000.0).clamp(0.0, 60_000.0) as u64;
        let duration = std::time::Duration::from_millis(ms);
        ctx.shared.freeze.stop_for(duration);
        std::thread::sleep(duration);
        ok(ctx.out);
        return Ok(());
    }
    if is(sub, "config-rewrite-force-all") && args.len() == 2 {
        return super::config::rewrite_config_file(ctx, true);
    }
    if is(sub, "populate") && (3..=5).contains(&args.len()) {
        return debug_populate(ctx, args);
    }
    if is(sub, "set-skip-checksum-validation") && args.len() == 3 {
        let on = super::args::int(&args[2]).is_ok_and(|n| n != 0);
        ctx.shared
            .persistence
            .skip_checksum_validation
            .store(on, std::sync::atomic::Ordering::Relaxed);
        ok(ctx.out);
        return Ok(());
    }
    if is(sub, "log") && args.len() == 3 {
        tracing::warn!("DEBUG LOG: {}", String::from_utf8_lossy(&args[2]));
        ok(ctx.out);
        return Ok(());
    }
    if is(sub, "set-active-expire") && args.len() == 3 {
        // Redis reads the flag with atoi: anything but a non-zero number turns it off.
        let on = super::args::int(&args[2]).is_ok_and(|n| n != 0);
        ctx.shared.store.set_active_expire(on);
        ok(ctx.out);
        return Ok(());
    }
    if is(sub, "segfault") {
        tracing::warn!("DEBUG SEGFAULT: crashing the server on purpose");
        crate::crash::segfault();
    }
    if is(sub, "replybuffer") && args.len() == 4 {
        let memory = &ctx.shared.clients.memory;
        if is(&args[2], "peak-reset-time") {
            let ms = if is(&args[3], "never") {
                -1
            } else if is(&args[3], "reset") {
                crate::net::client_memory::DEFAULT_PEAK_RESET_MS
            } else {
                super::args::int(&args[3])?
            };
            memory.peak_reset_ms.store(ms, Ordering::Relaxed);
        } else if is(&args[2], "resizing") {
            // Redis reads it with atoi.
            let on = super::args::int(&args[3]).is_ok_and(|n| n != 0);
            memory.resizing.store(on, Ordering::Relaxed);
        } else {
            return Err(super::reply::subcommand_syntax("DEBUG", sub));
        }
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
        let limits = super::keys::EncodingLimits::now(&ctx.shared.hot);
        let shard = ctx.lock(key);
        let Some(e) = shard.peek_stored(key) else {
            return Err(CmdError::Static("ERR no such key"));
        };
        let line = object_line(ctx.shared, e, &limits);
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
    if is(sub, "replicate") && args.len() >= 3 {
        // The command goes to the replicas as it is, never run here: how a test makes a
        // replica diverge (Redis's `replicationFeedSlaves`, in the stream's database).
        let journal = &ctx.shared.repl.journal;
        if journal.active() {
            let db = journal.stream().selected_db().unwrap_or(ctx.client.db);
            journal.append(&[Propagated {
                db,
                args: args[2..].to_vec(),
                to: Targets {
                    aof: false,
                    replicas: true,
                },
            }]);
        }
        ok(ctx.out);
        return Ok(());
    }
    if is(sub, "aof-flush-sleep") && args.len() == 3 {
        // Redis reads it with atoi: microseconds each AOF write waits first.
        let micros = super::args::int(&args[2]).map_or(0, |n| n.max(0) as u64);
        crate::persist::aof::set_flush_sleep(ctx.shared, micros);
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
        // An element larger than a list chunk gets a chunk of its own here, whatever
        // its size: the threshold is validated as Redis validates it, with no other
        // effect.
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
    if is(sub, "drop-cluster-packet-filter") && args.len() == 3 {
        ctx.shared.cluster.bus.set_drop_filter(int(&args[2])?);
        ok(ctx.out);
        return Ok(());
    }
    if is(sub, "clusterlink") && args.len() == 5 && is(&args[2], "kill") {
        return kill_cluster_link(ctx, &args[3], &args[4]);
    }
    if is(sub, "error") && args.len() == 3 {
        // The text as the error, as Redis sends it: its own prefix, on one line, and
        // not counted in errorstats.
        ctx.out.extend_from_slice(b"-");
        ctx.out.extend(args[2].iter().map(|&b| match b {
            b'\r' | b'\n' => b' ',
            b => b,
        }));
        ctx.out.extend_from_slice(b"\r\n");
        return Ok(());
    }
    if is(sub, "change-repl-id") && args.len() == 2 {
        tracing::warn!("Changing replication IDs after receiving DEBUG change-repl-id");
        ctx.shared.repl.journal.stream().change_replid();
        super::reply::ok(ctx.out);
        return Ok(());
    }
    if is(sub, "help") {
        // Redis's text for each subcommand this server has, in Redis's order (the
        // ones it lacks are left out; SET-DISABLE-DENY-SCRIPTS is unlisted there too).
        const LINES: &[&str] = &[
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "AOF-FLUSH-SLEEP <microsec>",
            "    Server will sleep before flushing the AOF, this is used for testing.",
            "CHANGE-REPL-ID",
            "    Change the replication IDs of the instance.",
            "    Dangerous: should be used only for testing the replication subsystem.",
            "CONFIG-REWRITE-FORCE-ALL",
            "    Like CONFIG REWRITE but writes all configuration options, including",
            "    keywords not listed in original configuration file or default values.",
            "DIGEST",
            "    Output a hex signature representing the current DB content.",
            "DIGEST-VALUE <key> [<key> ...]",
            "    Output a hex signature of the values of all the specified keys.",
            "ERROR <string>",
            "    Return a Redis protocol error with <string> as message. Useful for clients",
            "    unit tests to simulate Redis errors.",
            "LOG <message>",
            "    Write <message> to the server log.",
            "LOADAOF",
            "    Flush the AOF buffers on disk and reload the AOF in memory.",
            "REPLICATE <string>",
            "    Replicates the provided string to replicas, allowing data divergence.",
            "OBJECT <key>",
            "    Show low level info about `key` and associated value.",
            "DROP-CLUSTER-PACKET-FILTER <packet-type>",
            "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
            "POPULATE <count> [<prefix>] [<size>]",
            "    Create <count> string keys named key:<num>. If <prefix> is specified then",
            "    it is used instead of the 'key' prefix. These are not propagated to",
            "    replicas. Cluster slots are not respected so keys not belonging to the",
            "    current node can be created in cluster mode.",
            "PROTOCOL <type>",
            "    Reply with a test value of the specified type. <type> can be: string,",
            "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
            "    true, false.",
            "RELOAD [option ...]",
            "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
            "    * MERGE: conflicting keys will be loaded from RDB.",
            "    * NOFLUSH: the existing database will not be removed before load, but",
            "      conflicting keys will generate an exception and kill the server.",
            "    * NOSAVE: the database will be loaded from an existing RDB file.",
            "    Examples:",
            "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
            "      the database.",
            "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
            "      existing RDB file.",
            "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
            "      file to the database.",
            "SEGFAULT",
            "    Crash the server with sigsegv.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "QUICKLIST-PACKED-THRESHOLD <size>",
            "    Sets the threshold for elements to be inserted as plain vs packed nodes",
            "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
            "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
            "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "PAUSE-CRON <0|1>",
            "    Stop periodic cron job processing.",
            "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
            "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
            "    In case NEVER is provided the last observed peak will never be reset",
            "    In case RESET is provided the peak reset time will be restored to the default value",
            "REPLYBUFFER RESIZING <0|1>",
            "    Enable or disable the reply buffer resize cron job",
            "CLUSTERLINK KILL <to|from|all> <node-id>",
            "    Kills the link based on the direction to/from (both) with the provided node.",
            "HELP",
            "    Prints this help.",
        ];
        super::reply::help(ctx.out, LINES);
        return Ok(());
    }
    // DEBUG answers every unmatched form with Redis's subcommand syntax error.
    Err(super::reply::subcommand_syntax("DEBUG", sub))
}

/// `DEBUG CLUSTERLINK KILL to|from|all <node>`: closes this node's bus links with
/// `node` (the cron opens a new outbound one; the node opens a new inbound one).
fn kill_cluster_link(ctx: &mut Ctx<'_>, direction: &[u8], name: &[u8]) -> CmdResult {
    let shared = ctx.shared;
    if !shared.cluster.enabled() {
        return Err(CmdError::Static(
            "ERR Debug option only available for cluster mode enabled setup!",
        ));
    }
    let Some(node) = shared.cluster.state.read().lookup(name).map(|n| n.id) else {
        return Err(super::reply::quoting(
            "ERR Unknown node ",
            name,
            usize::MAX,
            "",
        ));
    };
    let (to, from) = if is(direction, "to") {
        (true, false)
    } else if is(direction, "from") {
        (false, true)
    } else if is(direction, "all") {
        (true, true)
    } else {
        return Err(super::reply::quoting(
            "ERR Unknown direction ",
            direction,
            usize::MAX,
            "",
        ));
    };
    if to {
        shared.cluster.bus.drop_link(&node);
    }
    if from {
        shared.cluster.bus.drop_inbound(&node);
    }
    ok(ctx.out);
    Ok(())
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
    let positive = |arg: &Bytes| {
        int(arg)
            .ok()
            .and_then(|n| u64::try_from(n).ok())
            .ok_or(MUST_BE_POSITIVE)
    };
    let count = positive(&args[2])?;
    let prefix = args.get(3).map_or(&b"key"[..], |p| &p[..]);
    let size = match args.get(4) {
        Some(size) => usize::try_from(positive(size)?).map_err(|_| MUST_BE_POSITIVE)?,
        None => 0,
    };
    if size as u64 > ctx.shared.config.read().proto_max_bulk_len {
        return Err(super::reply::STRING_TOO_LONG);
    }
    // Redis adds the keys without counting them as changes: no save point fires.
    let changes_before = crate::store::dirty::count();
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
    crate::store::dirty::forget_since(changes_before);
    ok(ctx.out);
    Ok(())
}

/// DEBUG OBJECT's line, as Redis builds it: the reference count (a shared integer's),
/// the value's size as it is saved, the 24-bit access field and the idle time read from
/// it, and for a list its quicklist's nodes. This server has no object addresses to
/// show: 0x0.
fn object_line(
    shared: &crate::shared::Shared,
    e: &crate::store::Entry,
    limits: &super::keys::EncodingLimits,
) -> String {
    use crate::persist::rdb::encode;
    use crate::store::evict::Eviction;
    use std::fmt::Write as _;
    let mut saved = Vec::new();
    encode::value(&mut saved, &e.value, limits);
    let eviction = &shared.store.events().eviction;
    let lru = eviction.lru_field(e.access);
    let mut line = format!(
        "Value at:0x0 refcount:{} encoding:{} serializedlength:{} lru:{lru} lru_seconds_idle:{}",
        super::keys::refcount(eviction, &e.value),
        super::keys::encoding_name(&e.value, limits),
        // Without the type byte, as Redis's `rdbSavedObjectLen`.
        saved.len().saturating_sub(1),
        Eviction::field_idle_seconds(lru),
    );
    if let crate::store::Value::List(list) = &e.value {
        let nodes = encode::list_nodes(list, limits.list_fill);
        let config = shared.config.read();
        let _ = write!(
            line,
            " ql_nodes:{} ql_avg_node:{:.2} ql_listpack_max:{} ql_compressed:{} ql_uncompressed_size:{}",
            nodes.len(),
            list.len() as f64 / nodes.len().max(1) as f64,
            config.param_int("list-max-listpack-size"),
            u8::from(config.param_int("list-compress-depth") != 0),
            nodes.iter().map(Vec::len).sum::<usize>(),
        );
    }
    line
}
