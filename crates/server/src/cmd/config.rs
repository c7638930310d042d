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
    ("config|get", config_get),
    ("config|set", config_set),
    ("config|resetstat", config_resetstat),
    ("config|rewrite", config_rewrite),
];

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
    stats.sync_full.store(0, Ordering::Relaxed);
    stats.sync_partial_ok.store(0, Ordering::Relaxed);
    stats.sync_partial_err.store(0, Ordering::Relaxed);
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
