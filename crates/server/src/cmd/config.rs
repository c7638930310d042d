//! CONFIG GET / SET / RESETSTAT / REWRITE over [`crate::config`]: globs and several
//! parameters per call, SET applied all at once or not at all (listeners included).

use std::sync::atomic::Ordering;

use bytes::Bytes;
use redline_resp::encode;

use super::reply::{self, ok, CmdError, CmdResult};
use super::{Ctx, Handler};
use crate::config::SetError;
use crate::glob::glob_match;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("config|help", config_help),
    ("config|get", config_get),
    ("config|set", config_set),
    ("config|resetstat", config_resetstat),
    ("config|rewrite", config_rewrite),
];

fn config_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let config = ctx.shared.config.read().clone();
    // As Redis: a name is answered under the name asked for, a pattern under the names
    // it matches (hidden parameters only by name); each parameter once, whatever the
    // case it was asked in.
    let mut pairs: Vec<(String, String)> = Vec::new();
    let listed = |pairs: &[(String, String)], name: &str| {
        pairs.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    for pattern in &args[2..] {
        let given = String::from_utf8_lossy(pattern).into_owned();
        if !pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
            if !listed(&pairs, &given) {
                if let Some(value) = config.get(&given.to_ascii_lowercase()) {
                    pairs.push((given, value));
                }
            }
            continue;
        }
        let lower = pattern.to_ascii_lowercase();
        for name in crate::config::Config::all_names() {
            if crate::config::Config::is_hidden(name) || listed(&pairs, name) {
                continue;
            }
            if glob_match(&lower, name.as_bytes(), true) {
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

/// Parameters CONFIG SET refuses while the dataset loads (Redis's
/// `DENY_LOADING_CONFIG`).
const DENIED_WHILE_LOADING: &[&str] = &["appendonly", "dir", "repl-diskless-load"];

/// The floor Redis raises `repl-backlog-size` to when it applies it (16 KB).
const REPL_BACKLOG_MIN_SIZE: i64 = 16 * 1024;

fn config_set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() % 2 != 0 {
        return Err(CmdError::Static("ERR syntax error"));
    }
    // First every name, as Redis does: unknown, immutable, protected, refused while
    // loading, or named twice (an alias and its parameter are two names to Redis, each
    // with its own entry). The first such error is the reply, naming the argument as
    // the client wrote it.
    let loading = ctx.shared.persistence.loading.state() != crate::persist::loading::IDLE;
    let mut config = ctx.shared.config.read().clone();
    let mut seen: Vec<String> = Vec::new();
    let failed = |name: &[u8], why: &str| {
        let prefix = "ERR CONFIG SET failed (possibly related to argument '";
        reply::quoting(prefix, name, usize::MAX, &format!("') - {why}"))
    };
    let unknown = |given: &[u8]| {
        reply::quoting(
            "ERR Unknown option or number of arguments for CONFIG SET - '",
            given,
            usize::MAX,
            "'",
        )
    };
    for pair in args[2..].chunks(2) {
        let name = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
        match crate::config::Config::check_settable(&name) {
            Err(SetError::Immutable) => return Err(failed(&pair[0], "can't set immutable config")),
            Err(_) => return Err(unknown(&pair[0])),
            Ok(()) => {}
        }
        let canonical = crate::config::Config::canonical_name(&name);
        if crate::config::PROTECTED_PARAMS.contains(&canonical)
            && !config.allows(
                crate::config::ProtectedAction::Configs,
                ctx.client.peer.is_local(),
            )
        {
            return Err(failed(&pair[0], "can't set protected config"));
        }
        // What the load in progress depends on cannot change under it.
        if loading && DENIED_WHILE_LOADING.contains(&canonical) {
            return Err(CmdError::Static(crate::persist::loading::LOADING_ERROR));
        }
        if seen.contains(&name) {
            return Err(failed(&pair[0], "duplicate parameter"));
        }
        seen.push(name);
    }
    // Then the values, in order; an error names the parameter in lower case.
    for (pair, name) in args[2..].chunks(2).zip(&seen) {
        config
            .set(name, &[pair[1].to_vec()], false)
            .map_err(|e| match e {
                SetError::Unknown | SetError::Arity => unknown(&pair[0]),
                SetError::Immutable => failed(name.as_bytes(), "can't set immutable config"),
                SetError::Invalid(message) => failed(name.as_bytes(), &message),
            })?;
    }
    let named = |param: &str| {
        seen.iter()
            .any(|name| crate::config::Config::canonical_name(name) == param)
    };
    // As Redis: a `maxclients` the open-files limit cannot be raised to is refused,
    // naming the most that fits.
    if named("maxclients") && config.maxclients != ctx.shared.config.read().maxclients {
        use crate::open_files::{fit, Fitted, RESERVED_FDS};
        let most = match fit(config.maxclients) {
            Fitted::Fits => None,
            Fitted::Lowered(most) => Some(most),
            Fitted::TooLow(files) => Some(files.saturating_sub(RESERVED_FDS)),
        };
        if let Some(most) = most {
            return Err(failed(
                b"maxclients",
                &format!(
                    "The operating system is not able to handle the specified number of clients, try with {most}"
                ),
            ));
        }
    }
    if named("repl-backlog-size") && config.param_int("repl-backlog-size") < REPL_BACKLOG_MIN_SIZE {
        let floor = REPL_BACKLOG_MIN_SIZE.to_string().into_bytes();
        let _ = config.set("repl-backlog-size", &[floor], false);
    }
    // Set even to the path it has, as Redis does: the directory may have been removed
    // and made again under the server, whose working directory is then the old one.
    if named("dir") && !config.param("dir").is_empty() {
        config
            .enter_dir()
            .map_err(|e| failed(b"dir", &crate::cstr::strerror(&e)))?;
    }
    // TLS first: its files are checked (the configuration in use stays if they do not
    // load) and its port moved before the plain port, which `port 0` closes only once
    // TLS listens.
    let tls_before = ctx.shared.tls.current();
    if let Some(built) = rebuild_tls(ctx, &config, &seen)? {
        ctx.shared.tls.install(built);
    }
    let restore_tls = || {
        if let Some(previous) = tls_before.clone() {
            ctx.shared.tls.install(previous);
        }
    };
    if let Err(e) = listen_tls(ctx, &config) {
        restore_tls();
        return Err(e);
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
        // A server started on `port 0` (a free port, for embedding) keeps the port it
        // got when only `bind` changes.
        let port = if config.port == 0 && old_port == 0 {
            ctx.shared.port()
        } else {
            config.port
        };
        match crate::net::listener::rebind(ctx.shared, &config.bind, port) {
            Ok(port) => config.port = port,
            Err(e) => {
                tracing::warn!("CONFIG SET {name}: {e}");
                restore_tls();
                return Err(CmdError::Owned(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
                )));
            }
        }
    }
    let aof_was = ctx.shared.config.read().appendonly;
    let aof_now = config.appendonly;
    let gc_was = ctx.shared.config.read().param_bool("aof-disable-auto-gc");
    let gc_now = config.param_bool("aof-disable-auto-gc");
    settle_encodings(ctx, &config);
    ctx.shared.update_config(config);
    if ctx.shared.cluster.enabled() && seen.iter().any(|name| name.starts_with("cluster-")) {
        // The announced hostname and address, and the no-failover flag, apply now.
        let settings = crate::cluster::settings(ctx.shared);
        if crate::cluster::update_myself(&mut ctx.shared.cluster.state.write(), &settings) {
            let _ = ctx.shared.cluster.save();
        }
    }
    if gc_was && !gc_now {
        // History kept while collection was off goes now, as in Redis.
        crate::persist::aof::collect_history(ctx.shared);
    }
    let saving = ctx
        .shared
        .persistence
        .bgsave_running
        .load(std::sync::atomic::Ordering::Acquire);
    if aof_now && !aof_was && (ctx.nested || saving) {
        // The transaction holds the shards the first image needs; a BGSAVE's image
        // comes first, as Redis waits for its child: the cron starts the rewrite.
        ctx.shared
            .aof
            .rewrite_scheduled
            .store(true, std::sync::atomic::Ordering::Release);
        if ctx.nested {
            tracing::warn!(
                "AOF was enabled during a transaction. An AOF background was scheduled to start when possible."
            );
        } else {
            tracing::warn!(
                "AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible."
            );
        }
    } else if aof_now && !aof_was {
        crate::persist::aof::rewrite(ctx.shared).map_err(|e| {
            CmdError::Owned(format!(
                "ERR CONFIG SET failed (possibly related to argument 'appendonly') - {e}"
            ))
        })?;
    } else if aof_was && !aof_now {
        crate::persist::aof::stop(ctx.shared);
    } else if aof_now {
        crate::persist::aof::apply_fsync(ctx.shared);
    }
    ok(ctx.out);
    if named("maxmemory") {
        maxmemory_set(ctx);
    }
    Ok(())
}

/// Before the compact encodings' limits change, every collection keeps the encoding
/// Redis gave it under the old ones (see [`crate::store::encoding::settle`]). A walk
/// of every key, only when one of those limits changes.
fn settle_encodings(ctx: &Ctx<'_>, config: &crate::config::Config) {
    use crate::store::encoding::EncodingLimits;
    let old = EncodingLimits::now(&ctx.shared.hot);
    let changed = crate::config::HotParams::default();
    changed.load(config);
    let new = EncodingLimits::now(&changed);
    if !old.differ_for_collections(&new) {
        return;
    }
    let store = &ctx.shared.store;
    for db in 0..store.db_count() {
        for i in 0..store.db(db).shard_count() {
            ctx.lock_in(db, i).settle_encodings(&old, &new);
        }
    }
}

/// A new `maxmemory` evicts at once, as Redis's (its eviction time proc runs before the
/// next command is read): a client's next command finds memory under the limit, and
/// the evictions' invalidations are on their way by then.
fn maxmemory_set(ctx: &mut Ctx<'_>) {
    let eviction = &ctx.shared.store.events().eviction;
    let max = eviction.maxmemory();
    if max == 0 {
        return;
    }
    let used = crate::alloc::used().saturating_sub(eviction.left_out() as u64);
    if max < used {
        tracing::warn!("WARNING: the new maxmemory value set via CONFIG SET ({max}) is smaller than the current memory usage ({used}). This will result in key eviction and/or the inability to accept new write commands depending on the maxmemory-policy.");
    }
    if ctx.nested {
        // The transaction holds the keys: the cron evicts once it is done.
        eviction.schedule();
    } else {
        super::evict_before_reply(ctx);
    }
}

/// Loads the TLS configuration again when a `tls-*` parameter is set (even to the value
/// it has: a certificate replaced at the same path is read again), or when `tls-port`
/// turns TLS on. A configuration that does not load is refused with Redis's error and the
/// one in use stays. Returns the new configuration, to install.
fn rebuild_tls(
    ctx: &Ctx<'_>,
    config: &crate::config::Config,
    seen: &[String],
) -> Result<Option<crate::net::tls::Contexts>, CmdError> {
    use crate::net::tls;
    let reloading = seen.iter().find(|n| tls::RELOADING.contains(&n.as_str()));
    let port_turns_on = tls::tls_port(config) != 0 && ctx.shared.tls.current().is_none();
    let trigger = match (reloading, port_turns_on) {
        (Some(name), _) if tls::wanted(config) => name.as_str(),
        (_, true) => "tls-port",
        _ => return Ok(None),
    };
    match tls::build(config) {
        Ok(built) => Ok(Some(built)),
        Err(e) => {
            tracing::warn!("{e}");
            Err(CmdError::Owned(format!(
                "ERR CONFIG SET failed (possibly related to argument '{trigger}') - {}",
                tls::UPDATE_FAILED
            )))
        }
    }
}

/// Moves the TLS listeners when `tls-port` (or `bind` while TLS listens) changed.
fn listen_tls(ctx: &Ctx<'_>, config: &crate::config::Config) -> Result<(), CmdError> {
    use crate::net::tls;
    let new_port = tls::tls_port(config);
    let (old_port, old_bind) = {
        let current = ctx.shared.config.read();
        (tls::tls_port(&current), current.bind.clone())
    };
    if new_port == old_port && (new_port == 0 || config.bind == old_bind) {
        return Ok(());
    }
    crate::net::listener::rebind_tls(ctx.shared, &config.bind, new_port)
        .map(|_| ())
        .map_err(|e| {
            tracing::warn!("CONFIG SET tls-port: {e}");
            CmdError::Static("ERR CONFIG SET failed (possibly related to argument 'tls-port') - Unable to listen on this port. Check server logs.")
        })
}

fn config_resetstat(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let stats = &ctx.shared.stats;
    stats.commands_processed.store(0, Ordering::Relaxed);
    stats.connections_received.store(0, Ordering::Relaxed);
    stats.rejected_connections.store(0, Ordering::Relaxed);
    for total in [
        &stats.net_input_bytes,
        &stats.net_output_bytes,
        &stats.net_repl_input_bytes,
        &stats.net_repl_output_bytes,
        &stats.reads_processed,
        &stats.writes_processed,
        &stats.keyspace_hits,
        &stats.keyspace_misses,
        &stats.unexpected_error_replies,
        &stats.forks,
        &stats.latest_fork_usec,
    ] {
        total.store(0, Ordering::Relaxed);
    }
    ctx.shared.cmdstats.reset();
    ctx.shared.repl.syncs.reset();
    ctx.shared.store.lazyfree.reset_stats();
    ctx.shared.store.reset_stats();
    ctx.shared
        .clients
        .memory
        .evicted
        .store(0, Ordering::Relaxed);
    ok(ctx.out);
    Ok(())
}

fn config_rewrite(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    rewrite_config_file(ctx, false)
}

/// CONFIG REWRITE, and DEBUG CONFIG-REWRITE-FORCE-ALL (`all`: defaults written too).
pub fn rewrite_config_file(ctx: &mut Ctx<'_>, all: bool) -> CmdResult {
    let config = ctx.shared.config.read().clone();
    let Some(path) = config.config_file.clone() else {
        return Err(CmdError::Static(
            "ERR The server is running without a config file",
        ));
    };
    let users: Vec<String> = ctx
        .shared
        .acl
        .all()
        .iter()
        .map(|cell| {
            let line = crate::acl::describe::line(cell.name(), &cell.rules());
            String::from_utf8_lossy(&line).into_owned()
        })
        .collect();
    let written = if all {
        crate::config::rewrite_all(&config, &users, &path)
    } else {
        crate::config::rewrite(&config, &users, &path)
    };
    written.map_err(|e| CmdError::Owned(format!("ERR Rewriting config file: {e}")))?;
    ok(ctx.out);
    Ok(())
}

/// CONFIG HELP: Redis's text.
fn config_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    const LINES: &[&str] = &[
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "REWRITE",
        "    Rewrite the configuration file.",
        "HELP",
        "    Prints this help.",
    ];
    super::reply::help(ctx.out, LINES);
    Ok(())
}
