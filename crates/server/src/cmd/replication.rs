//! SYNC PSYNC REPLCONF REPLICAOF SLAVEOF ROLE WAIT: the commands over [`crate::repl`].

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use redline_resp::encode;

use super::args::is;
use super::reply::{ok, CmdError, CmdResult, SYNTAX};
use super::{Ctx, Handler};
use crate::net::client::RdbFilter;
use crate::repl::journal::LinkState;
use crate::repl::{failover, master};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("sync", sync),
    ("psync", psync),
    ("replconf", replconf),
    ("replicaof", replicaof),
    ("slaveof", replicaof),
    ("role", role),
    ("wait", wait),
    ("failover", failover),
];

fn refuse_nested(ctx: &Ctx<'_>) -> CmdResult {
    if ctx.nested || ctx.client.multi.is_some() {
        return Err(CmdError::Static(
            "ERR Replica can't interact with the keyspace",
        ));
    }
    Ok(())
}

/// What Redis refuses a SYNC or PSYNC for, in its order: a failover under way, a
/// replica not connected to its master (it has no history to give: a replica of it
/// would take this server's own id and drop its master's), replies still to send on
/// this connection (the link's output must start with the sync), and a filtered image
/// asked for without the EOF form.
fn refuse_sync(ctx: &Ctx<'_>) -> CmdResult {
    if ctx.shared.repl.failover.lock().is_some() {
        return Err(CmdError::Static(
            "NOMASTERLINK Can't SYNC while failing over",
        ));
    }
    let linked = ctx
        .shared
        .repl
        .with_link(crate::repl::replica::LinkStatus::is_up)
        .unwrap_or(true);
    if !linked {
        return Err(CmdError::Static(
            "NOMASTERLINK Can't SYNC while not connected with my master",
        ));
    }
    if !ctx.out.is_empty() {
        return Err(CmdError::Static(
            "ERR SYNC and PSYNC are invalid with pending output",
        ));
    }
    if ctx.client.rdb_filter.is_some() && !ctx.client.repl_capa_eof {
        return Err(CmdError::Static(
            "ERR Filtered replica requires EOF capability",
        ));
    }
    Ok(())
}

fn sync(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    refuse_nested(ctx)?;
    refuse_sync(ctx)?;
    master::start(ctx, None);
    Ok(())
}

fn psync(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    refuse_nested(ctx)?;
    // A FAILOVER's hand-off: our master asks us to take over its history.
    if args.len() > 3 && is(&args[3], "failover") {
        let ours = ctx.shared.repl.journal.stream().replid.clone();
        if args[1] != ours.as_bytes() {
            return Err(CmdError::Static(
                "ERR PSYNC FAILOVER replid must match my replid.",
            ));
        }
        crate::repl::promote(ctx.shared);
        tracing::info!(
            "Failover request received for replid {ours}, accepting (id={}, addr={}).",
            ctx.client.id,
            ctx.client.peer
        );
    }
    refuse_sync(ctx)?;
    if let Err(e) = super::args::int(&args[2]) {
        let (ip, port) = master::replica_address(ctx);
        tracing::info!("Replica {ip}:{port} asks for synchronization");
        tracing::warn!("Replica {ip}:{port} asks for synchronization but with a wrong offset");
        return Err(e);
    }
    master::start(ctx, Some((&args[1], &args[2])));
    Ok(())
}

/// REPLCONF listening-port / ip-address / capa / ack / getack / rdb-only...: what a
/// replica tells its master during the handshake, and what a master asks a replica.
fn replconf(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() % 2 == 0 {
        return Err(SYNTAX);
    }
    for pair in args[1..].chunks(2) {
        let (option, value) = (&pair[0], &pair[1]);
        if is(option, "listening-port") {
            let port = std::str::from_utf8(value)
                .ok()
                .and_then(|p| p.parse::<u16>().ok())
                .ok_or(CmdError::Static(
                    "ERR value is not an integer or out of range",
                ))?;
            ctx.client.repl_listening_port = port;
        } else if is(option, "ip-address") {
            ctx.client.repl_ip_address = Some(String::from_utf8_lossy(value).into());
        } else if is(option, "getack") {
            // From our master: answer with our offset (the replica task sends it).
            if ctx.client.is_master {
                ctx.client.ack_requested = true;
            }
            return Ok(());
        } else if is(option, "ack") || is(option, "fack") {
            // ACKs arrive on the replica link, which reads them itself.
            return Ok(());
        } else if is(option, "capa") {
            ctx.client.repl_capa_eof |= is(value, "eof");
        } else if is(option, "rdb-filter-only") {
            ctx.client.rdb_filter = Some(rdb_filter(value)?);
        } else if !is(option, "rdb-only") {
            return Err(super::reply::quoting(
                "ERR Unrecognized REPLCONF option: ",
                option,
                usize::MAX,
                "",
            ));
        }
    }
    ok(ctx.out);
    Ok(())
}

/// The include filters of REPLCONF rdb-filter-only, as Redis 7.0 reads them: words
/// (quoted as on a configuration line), of which only `functions` exists; none at all
/// means an image of neither keys nor functions.
fn rdb_filter(value: &[u8]) -> Result<RdbFilter, CmdError> {
    let words = crate::config::split_args(value)
        .ok_or(CmdError::Static("ERR Missing rdb-filter-only values"))?;
    let mut filter = RdbFilter::Nothing;
    for word in words {
        if !is(&word, "functions") {
            return Err(super::reply::quoting(
                "ERR Unsupported rdb-filter-only option: ",
                &word,
                usize::MAX,
                "",
            ));
        }
        filter = RdbFilter::Functions;
    }
    Ok(filter)
}

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms] (see [`failover`]).
fn failover(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.shared.cluster.enabled() {
        return Err(CmdError::Static(
            "ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.",
        ));
    }
    // ABORT stands alone; among other options it is a syntax error, as in Redis.
    if args.len() == 2 && is(&args[1], "abort") {
        if !failover::abort(ctx.shared) {
            return Err(CmdError::Static("ERR No failover in progress."));
        }
        ok(ctx.out);
        return Ok(());
    }
    let mut request = failover::Request::default();
    let mut i = 1;
    while i < args.len() {
        let word = &args[i];
        if is(word, "to") && i + 2 < args.len() && request.target.is_none() {
            let host = String::from_utf8_lossy(&args[i + 1]).into_owned();
            request.target = Some((host, super::args::int(&args[i + 2])?));
            i += 3;
        } else if is(word, "force") && !request.force {
            request.force = true;
            i += 1;
        } else if is(word, "timeout") && i + 1 < args.len() && request.timeout_ms.is_none() {
            let ms = super::args::int(&args[i + 1])?;
            if ms <= 0 {
                return Err(CmdError::Static(
                    "ERR FAILOVER timeout must be greater than 0",
                ));
            }
            request.timeout_ms = Some(ms as u64);
            i += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    failover::start(ctx.shared, request).map_err(CmdError::Static)?;
    ok(ctx.out);
    Ok(())
}

/// REPLICAOF host port | NO ONE (and SLAVEOF). Allowed inside MULTI: what the
/// transaction wrote after it is not propagated, as in Redis.
fn replicaof(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let shared = ctx.shared;
    if shared.cluster.enabled() {
        // A cluster node's master is set with CLUSTER REPLICATE.
        return Err(CmdError::Static(
            "ERR REPLICAOF not allowed in cluster mode.",
        ));
    }
    if is(&args[1], "no") && is(&args[2], "one") {
        crate::repl::promote(shared);
        ok(ctx.out);
        return Ok(());
    }
    let port = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
        .ok_or(CmdError::Static("ERR Invalid master port"))?;
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    if !replicate_from(shared, &host, port, true)? {
        encode::write_simple(ctx.out, b"OK Already connected to specified master");
        return Ok(());
    }
    tracing::info!(
        "REPLICAOF {host}:{port} enabled (user request from 'id={}')",
        ctx.client.id
    );
    ok(ctx.out);
    Ok(())
}

/// Starts replicating `host:port` (REPLICAOF, and CLUSTER REPLICATE); false when that
/// master is already the one followed. `remember` writes it in the configuration, as
/// REPLICAOF does (cluster mode keeps it in nodes.conf instead).
pub(crate) fn replicate_from(
    shared: &crate::shared::Shared,
    host: &str,
    port: u16,
    remember: bool,
) -> Result<bool, CmdError> {
    let mut master = shared.repl.master.lock();
    if master
        .as_ref()
        .is_some_and(|m| m.host.eq_ignore_ascii_case(host) && m.port == port)
    {
        return Ok(false);
    }
    let Some(this) = shared.arc() else {
        return Err(CmdError::Static("ERR replication needs a running server"));
    };
    super::blocking::unblock_all_for_replica(shared);
    // A replica moving to another master keeps the database its stream had selected, as
    // Redis's cached master does: a PSYNC continuing there goes on in that database.
    let stream_db = master
        .as_ref()
        .map(crate::repl::replica::MasterLink::stream_db);
    let link = crate::repl::follow(this, host.to_string(), port);
    if let Some(db) = stream_db {
        link.status.stream_db.store(db, Ordering::Relaxed);
    }
    *master = Some(link);
    drop(master);
    if remember {
        shared.config.write().set_replicaof(Some((host, port)));
    }
    shared.apply_oom_score(&shared.config.read());
    Ok(true)
}

fn role(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let shared = ctx.shared;
    let master = shared.repl.master.lock();
    let offset = shared.repl.journal.offset();
    match master.as_ref() {
        Some(link) => {
            encode::write_array_len(ctx.out, 5);
            encode::write_bulk(ctx.out, b"slave");
            encode::write_bulk(ctx.out, link.host.as_bytes());
            encode::write_integer(ctx.out, i64::from(link.port));
            encode::write_bulk(ctx.out, link.status.role_state().as_bytes());
            encode::write_integer(ctx.out, i64::try_from(offset).unwrap_or(i64::MAX));
        }
        None => {
            let stream = shared.repl.journal.stream();
            encode::write_array_len(ctx.out, 3);
            encode::write_bulk(ctx.out, b"master");
            encode::write_integer(ctx.out, i64::try_from(offset).unwrap_or(i64::MAX));
            let online: Vec<_> = stream
                .replicas()
                .iter()
                .filter(|r| r.state() == LinkState::Online)
                .collect();
            encode::write_array_len(ctx.out, online.len());
            for r in online {
                encode::write_array_len(ctx.out, 3);
                encode::write_bulk(ctx.out, r.ip.to_string().as_bytes());
                encode::write_bulk(
                    ctx.out,
                    r.listening_port
                        .load(Ordering::Relaxed)
                        .to_string()
                        .as_bytes(),
                );
                encode::write_bulk(
                    ctx.out,
                    r.ack.load(Ordering::Relaxed).to_string().as_bytes(),
                );
            }
        }
    }
    Ok(())
}

/// WAIT numreplicas timeout: answered at once when enough replicas acknowledged this
/// client's last write, else the connection waits (see `net::connection`).
fn wait(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let shared = ctx.shared;
    if shared.repl.is_replica() {
        return Err(CmdError::Static("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."));
    }
    let needed = super::args::int(&args[1])?;
    let timeout = super::args::timeout_ms(&args[2])?;
    let offset = ctx.client.repl_offset;
    let acked = shared.repl.journal.acked_count(offset);
    if ctx.nested || acked as i64 >= needed {
        encode::write_integer(ctx.out, acked as i64);
        return Ok(());
    }
    // Ask the replicas for an ACK now rather than at their next second.
    shared.repl.journal.request_acks();
    ctx.client.wait = Some(crate::net::client::WaitReplicas {
        offset,
        needed: usize::try_from(needed).unwrap_or(usize::MAX),
        deadline: (timeout > 0).then(|| {
            tokio::time::Instant::now() + std::time::Duration::from_millis(timeout as u64)
        }),
        silent: ctx.client.reply_silenced(),
    });
    Ok(())
}

/// INFO's `# Replication` section.
pub fn info_section(ctx: &Ctx<'_>, text: &mut String) {
    let shared = ctx.shared;
    // Before the stream's lock: FAILOVER takes its own lock first, then the stream's.
    let failover_state = failover::state_name(shared);
    let master = shared.repl.master.lock();
    let stream = shared.repl.journal.stream();
    text.push_str("# Replication\r\n");
    match master.as_ref() {
        Some(link) => {
            let now = crate::persist::snapshot::unix_secs();
            let status = &link.status;
            let last_io = status.last_io.load(Ordering::Relaxed);
            let _ = write!(
                text,
                "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\nmaster_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{}\r\nslave_repl_offset:{}\r\n",
                link.host,
                link.port,
                if status.is_up() { "up" } else { "down" },
                if last_io == 0 { -1 } else { now.saturating_sub(last_io) as i64 },
                u8::from(status.syncing()),
                stream.offset + status.unapplied.load(Ordering::Relaxed),
                stream.offset,
            );
            if status.syncing() {
                status.transfer.info(text);
            }
            if !status.is_up() {
                let since = status.down_since.load(Ordering::Relaxed);
                let down = if since == 0 {
                    -1
                } else {
                    i64::try_from(now.saturating_sub(since)).unwrap_or(i64::MAX)
                };
                let _ = write!(text, "master_link_down_since_seconds:{down}\r\n");
            }
            let config = shared.config.read();
            // Sentinel leaves a replica that says `replica_announced:0` out of its replies.
            let _ = write!(
                text,
                "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:{}\r\n",
                config.param_int("replica-priority"),
                u8::from(config.param_bool("replica-read-only")),
                u8::from(config.param_bool("replica-announced")),
            );
        }
        None => text.push_str("role:master\r\n"),
    }
    let waiting = shared.repl.waiting_for_image();
    let _ = write!(
        text,
        "connected_slaves:{}\r\n",
        stream.replicas().len() + waiting.len()
    );
    for (i, r) in stream.replicas().iter().enumerate() {
        let state = r.state().name();
        let lag = crate::persist::snapshot::unix_secs()
            .saturating_sub(r.ack_time.load(Ordering::Relaxed));
        let _ = write!(
            text,
            "slave{i}:ip={},port={},state={state},offset={},lag={lag}\r\n",
            r.ip,
            r.listening_port.load(Ordering::Relaxed),
            r.ack.load(Ordering::Relaxed),
        );
    }
    let attached = stream.replicas().len();
    for (i, (ip, port)) in waiting.iter().enumerate() {
        let _ = write!(
            text,
            "slave{}:ip={ip},port={port},state=wait_bgsave,offset=0,lag=0\r\n",
            attached + i
        );
    }
    let backlog = stream.backlog();
    let _ = write!(
        text,
        "master_failover_state:{}\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\nmaster_repl_offset:{}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:{}\r\nrepl_backlog_size:{}\r\nrepl_backlog_first_byte_offset:{}\r\nrepl_backlog_histlen:{}\r\n\r\n",
        failover_state,
        stream.replid,
        stream.replid2,
        stream.offset,
        // Redis shows the first offset the second id cannot serve; -1 without one.
        if stream.second_offset < 0 {
            -1
        } else {
            stream.second_offset + 1
        },
        u8::from(backlog.is_some()),
        shared.config.read().param_int("repl-backlog-size"),
        backlog.map_or(0, |b| b.start() + 1),
        backlog.map_or(0, |b| b.len()),
    );
}
