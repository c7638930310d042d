//! MIGRATE (Redis's `cluster.c`): moves keys to another server, redis-server or
//! redline, as RESTORE commands carrying DUMP payloads, then deletes them here once
//! the target acknowledged each (unless COPY). Propagated as the DEL it amounts to.
//!
//! Like Redis, the transfer is synchronous: the keys' shards stay locked while the
//! target answers, so no client sees a key both here and there, or neither, and a slow
//! target delays only commands on those shards, for at most `timeout` ms per read or
//! write. Connections to targets are kept between calls ([`super::migrate_cache`]); a
//! kept one that fails is dropped and the transfer tried once more on a new one, as
//! Redis retries.

use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::args::{int, is};
use super::reply::{CmdError, CmdResult, SYNTAX};
use super::{Ctx, Handler};
use crate::notify::{event, NotifyClass};
use crate::persist::rdb;
use crate::repl::journal::write_command;
use crate::store::now_ms;

use super::migrate_cache::{Cached, TargetStream};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[("migrate", migrate)];

const CONNECT_ERROR: CmdError = CmdError::Static("IOERR error or timeout connecting to the client");
const WRITE_ERROR: CmdError = CmdError::Static("IOERR error or timeout writing to target instance");
const READ_ERROR: CmdError = CmdError::Static("IOERR error or timeout reading to target instance");

/// MIGRATE's options.
struct Options {
    copy: bool,
    replace: bool,
    /// `(username, password)`: AUTH gives only the password.
    auth: Option<(Option<Bytes>, Bytes)>,
    /// Index of the first key, and how many.
    keys: (usize, usize),
}

fn parse(args: &[Bytes]) -> Result<Options, CmdError> {
    let mut o = Options {
        copy: false,
        replace: false,
        auth: None,
        keys: (3, 1),
    };
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let arg = &args[j];
        if is(arg, "copy") {
            o.copy = true;
        } else if is(arg, "replace") {
            o.replace = true;
        } else if is(arg, "auth") {
            if more < 1 {
                return Err(SYNTAX);
            }
            o.auth = Some((None, args[j + 1].clone()));
            j += 1;
        } else if is(arg, "auth2") {
            if more < 2 {
                return Err(SYNTAX);
            }
            o.auth = Some((Some(args[j + 1].clone()), args[j + 2].clone()));
            j += 2;
        } else if is(arg, "keys") {
            if !args[3].is_empty() {
                return Err(CmdError::Static("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"));
            }
            o.keys = (j + 1, args.len() - j - 1);
            break;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

/// A connection to the target with Redis's per-operation timeout, from
/// `bind-source-addr` when set, over `tls` when given.
fn connect(
    host: &[u8],
    port: &[u8],
    timeout: Duration,
    source: &str,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<TargetStream, CmdError> {
    let host = std::str::from_utf8(host).map_err(|_| CONNECT_ERROR)?;
    let port: u16 = std::str::from_utf8(port)
        .ok()
        .and_then(|p| p.parse().ok())
        .ok_or(CONNECT_ERROR)?;
    let stream = crate::net::outgoing::connect_blocking(host, port, source, timeout)
        .map_err(|e| connect_error(&e, tls.is_some()))?;
    let _ = stream.set_nodelay(true);
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|_| CONNECT_ERROR)?;
    match tls {
        None => Ok(TargetStream::Plain(stream)),
        Some(config) => {
            let session = rustls::ClientConnection::new(config, crate::net::tls::server_name(host))
                .map_err(|_| CONNECT_ERROR)?;
            // The handshake belongs to the connect, as in Redis: its failure (a plain
            // connection refused included) is a connect error, not a write error.
            let mut tls = rustls::StreamOwned::new(session, stream);
            while tls.conn.is_handshaking() {
                tls.conn
                    .complete_io(&mut tls.sock)
                    .map_err(|_| CONNECT_ERROR)?;
            }
            Ok(TargetStream::Tls(Box::new(tls)))
        }
    }
}

/// The reply for a plain connection that failed, as Redis 7.0 words it. Redis starts a
/// non-blocking connect and, once the socket turns writable or the timeout passes, goes
/// on as if connected (its blocking connect never reads the socket's error), so a
/// connection refused or timed out is reported by the first write. Only a connect that
/// fails at once (no address, no route, no socket) reports the connection; over TLS the
/// handshake fails first and reports it too.
fn connect_error(e: &std::io::Error, tls: bool) -> CmdError {
    use std::io::ErrorKind::{ConnectionRefused, ConnectionReset, HostUnreachable, TimedOut};
    match e.kind() {
        ConnectionRefused | ConnectionReset | HostUnreachable | TimedOut if !tls => WRITE_ERROR,
        _ => CONNECT_ERROR,
    }
}

/// Reads one reply line (the target answers AUTH, SELECT and RESTORE with one line).
fn read_line(reader: &mut BufReader<&mut TargetStream>) -> Result<String, CmdError> {
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(n) if n > 0 => Ok(line.trim_end().to_string()),
        _ => Err(READ_ERROR),
    }
}

/// Sends AUTH (if given), SELECT (unless the connection has `db` selected already)
/// and the RESTOREs, and reads their replies: one result per key.
fn exchange(
    conn: &mut Cached,
    auth: &Option<(Option<Bytes>, Bytes)>,
    db: i64,
    request: &[u8],
    keys: usize,
) -> Result<Vec<Result<(), String>>, CmdError> {
    let mut preamble = BytesMut::new();
    if let Some((user, password)) = auth {
        let mut command = vec![Bytes::from_static(b"AUTH")];
        command.extend(user.iter().cloned());
        command.push(password.clone());
        write_command(&mut preamble, &command);
    }
    let select = conn.db != Some(db);
    if select {
        write_command(
            &mut preamble,
            &[Bytes::from_static(b"SELECT"), Bytes::from(db.to_string())],
        );
    }
    preamble.extend_from_slice(request);
    let stream = &mut conn.stream;
    stream
        .write_all(&preamble)
        .and_then(|()| stream.flush())
        .map_err(|_| WRITE_ERROR)?;
    let mut reader = BufReader::new(stream);
    let mut refused: Option<String> = None;
    if auth.is_some() {
        let line = read_line(&mut reader)?;
        refused = line.strip_prefix('-').map(str::to_string);
    }
    if select {
        let line = read_line(&mut reader)?;
        if refused.is_none() {
            refused = line.strip_prefix('-').map(str::to_string);
        }
    }
    let mut replies = Vec::with_capacity(keys);
    for _ in 0..keys {
        let line = read_line(&mut reader)?;
        replies.push(match (&refused, line.strip_prefix('-')) {
            (Some(e), _) => Err(e.clone()),
            (None, Some(e)) => Err(e.to_string()),
            (None, None) => Ok(()),
        });
    }
    // A refused AUTH or SELECT leaves nothing selected.
    conn.db = refused.is_none().then_some(db);
    Ok(replies)
}

fn migrate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let opts = parse(args)?;
    let timeout = match int(&args[5])? {
        t if t <= 0 => 1000,
        t => t,
    };
    let db = int(&args[4])?;
    let timeout = Duration::from_millis(timeout.unsigned_abs());
    let (first, count) = opts.keys;
    let names = &args[first..first + count];
    let mut locked = ctx.lock_keys(names.iter().map(|k| &k[..]));
    // The keys that exist and have not expired, with their RESTORE commands.
    let mut moving: Vec<Bytes> = Vec::new();
    let mut request = BytesMut::new();
    let now = now_ms();
    // A cluster node's target may be importing the slot: RESTORE-ASKING is served there.
    let restore_name: &'static [u8] = if ctx.shared.cluster.enabled() {
        b"RESTORE-ASKING"
    } else {
        b"RESTORE"
    };
    let limits = crate::store::encoding::EncodingLimits::now(&ctx.shared.hot);
    for key in names {
        let Some(entry) = locked.shard(key).get(key) else {
            continue;
        };
        let ttl = match entry.expires_at {
            0 => 0,
            at if at <= now => continue,
            at => (at - now).max(1),
        };
        let mut restore = vec![
            Bytes::from_static(restore_name),
            key.clone(),
            Bytes::from(ttl.to_string()),
            Bytes::from(rdb::dump_payload(&entry.value, &limits)),
        ];
        if opts.replace {
            restore.push(Bytes::from_static(b"REPLACE"));
        }
        write_command(&mut request, &restore);
        moving.push(key.clone());
    }
    if moving.is_empty() {
        ctx.out.extend_from_slice(b"+NOKEY\r\n");
        return Ok(());
    }
    let host = args[1].clone();
    let port = args[2].clone();
    let target = format!(
        "{}:{}",
        String::from_utf8_lossy(&host),
        String::from_utf8_lossy(&port)
    );
    let cache = &ctx.shared.migrate_cache;
    let source = ctx
        .shared
        .config
        .read()
        .param("bind-source-addr")
        .to_string();
    let tls_cluster = ctx.shared.config.read().param_bool("tls-cluster");
    let tls = ctx
        .shared
        .tls
        .client_for(tls_cluster)
        .map_err(|_| CONNECT_ERROR)?;
    // Network I/O with the shards held: off the async workers' hands, as a script runs.
    let acked = super::off_the_runtime(|| -> Result<Vec<Result<(), String>>, CmdError> {
        // A kept connection may have been closed by the target meanwhile: on an I/O
        // error with one, try once more on a new connection.
        let mut cached = cache.take(&target);
        loop {
            let reused = cached.is_some();
            let mut conn = match cached.take() {
                Some(conn) => conn,
                None => Cached::new(connect(&host, &port, timeout, &source, tls.clone())?),
            };
            match exchange(&mut conn, &opts.auth, db, &request, moving.len()) {
                Ok(replies) => {
                    cache.put(target.clone(), conn);
                    return Ok(replies);
                }
                Err(_) if reused => continue,
                Err(e) => return Err(e),
            }
        }
    })?;
    let mut first_error = None;
    let mut deleted = vec![Bytes::from_static(b"DEL")];
    for (key, reply) in moving.iter().zip(acked) {
        match reply {
            Err(e) => {
                first_error.get_or_insert(e);
            }
            Ok(()) if !opts.copy => {
                locked.shard(key).remove(key);
                deleted.push(key.clone());
            }
            Ok(()) => {}
        }
    }
    drop(locked);
    for key in &deleted[1..] {
        event(ctx, NotifyClass::Generic, "del", key);
    }
    if deleted.len() > 1 {
        crate::repl::propagate_instead(ctx, vec![deleted]);
    }
    match first_error {
        Some(e) => Err(CmdError::Owned(format!(
            "ERR Target instance replied with error: {e}"
        ))),
        None => {
            super::reply::ok(ctx.out);
            Ok(())
        }
    }
}
