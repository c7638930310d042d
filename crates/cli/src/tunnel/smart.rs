//! Smart mode: one local endpoint that looks like a standalone Redis in front of a whole
//! cluster. Each client's requests (pipelines included) are routed by the redline cluster
//! client (MOVED/ASK, failover and multi-key splits handled there), and the replies
//! written back in request order. A routed request is read once (`RelayCommand`: its
//! end, its table entry, its slot) and forwarded as the bytes the client sent, and its
//! reply as the bytes the node sent (`ClusterClient::relay`); the others are decoded
//! and handled as listed below.
//!
//! # What each kind of command does
//!
//! - Keyed commands: to the slot's master; those read together go out together (one
//!   queue entry and one write per node). `MGET`, `MSET`, `DEL`, `UNLINK`, `EXISTS`,
//!   `TOUCH` across slots are split and merged by the cluster client. After a lost
//!   connection (failover), reads are re-sent by the cluster client, and writes that
//!   answer the same when run twice (plain `SET`, `SETEX`, `PSETEX`, `MSET`, `HMSET`) by
//!   the tunnel; other writes only with `--retry-writes`, since they could run twice.
//!   Each command's outcome is its own: a node lost under a batch does not touch the
//!   replies of commands other nodes answered.
//! - Keyless commands follow Redis's request/response policies as the cluster client
//!   applies them: `KEYS` concatenated, `DBSIZE` summed, `FLUSHALL`/`FLUSHDB`/`SCRIPT
//!   LOAD` on every master, `INFO`, `RANDOMKEY`, `ECHO`... on one node.
//! - `SCAN`: every master in turn behind one cursor (node index in the low 10 bits).
//!   A failover during a scan may repeat keys, as with any cluster client.
//! - Blocking commands (`BLPOP`, `XREAD BLOCK`, `WAIT`...) and `MULTI`...`EXEC`: on a
//!   dedicated connection to the owning master, after every earlier command has been
//!   answered and before any later one starts. Queued commands are answered `+QUEUED`
//!   by the tunnel; a transaction whose keys span nodes ends in `-EXECABORT`.
//! - `SUBSCRIBE`, `PSUBSCRIBE`, `MONITOR`: the connection becomes a byte pass-through to
//!   one master (pub/sub messages reach every node of a cluster); `SSUBSCRIBE`: to the
//!   channel's master. `MONITOR` shows that one node only.
//! - Connection commands are answered by the tunnel: `PING`, `SELECT 0` (other databases:
//!   Redis Cluster's own error), `AUTH` (accepted: the tunnel authenticates upstream),
//!   `HELLO` (RESP2 only; `HELLO 3` gets `-NOPROTO`, so clients fall back),
//!   `CLIENT SETNAME/GETNAME/ID/SETINFO`, `QUIT`, `RESET`.
//! - Refused with a clear error: `CLUSTER`, `READONLY`, `READWRITE`, `ASKING` (as a
//!   standalone server answers them), and `CLIENT` subcommands about upstream
//!   connections (use pinned mode for those).
//! - `WATCH`: on a dedicated connection to the keys' master, which also runs the
//!   transaction that follows; keys watched on several nodes get that node's `-MOVED`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures_util::future::{BoxFuture, FutureExt};
use futures_util::stream::{FuturesOrdered, StreamExt};
use redline::{ClusterClient, ClusterConfig, Cmd, Config, Error, RelayCommand};
use redline_resp::command::{self, CommandFlags, CommandSpec};
use redline_resp::slot::key_slot;
use redline_resp::{encode, Frame, RequestDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use super::dedicated::{Batch, Dedicated, Upstream};
use super::error::TunnelError;
use super::listener;
use super::shutdown::Shutdown;
use super::standalone::CHUNK;

/// Reply batches (one per read, at most) a client may have outstanding before the tunnel
/// stops reading its requests (Redis has no such limit, but it does not hold the
/// commands in memory either).
const WINDOW: usize = 1024;

/// Re-sends of an idempotent write after connection errors, and the pause before each
/// (times the attempt number): together about a second, the time a failover takes to
/// be noticed and routed around.
const RESEND_ATTEMPTS: u32 = 4;
const RESEND_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// Bits of a SCAN cursor that hold the master's index.
const SCAN_NODE_BITS: u32 = 10;

/// What every smart-mode connection shares.
struct Smart {
    upstream: Upstream,
    /// `redis_version` of the cluster, for `HELLO`.
    version: Bytes,
    next_id: AtomicU64,
}

/// Connects the cluster client and opens the local endpoint.
pub(crate) async fn start(
    upstream: Config,
    listen: std::net::SocketAddr,
    retry_writes: bool,
    shutdown: &Shutdown,
) -> Result<(), TunnelError> {
    let mut cfg = ClusterConfig::default();
    cfg.seeds = vec![(upstream.host.clone(), upstream.port)];
    cfg.node = upstream.clone();
    cfg.retry_writes = retry_writes;
    let seed = upstream.addr();
    let cluster = ClusterClient::from_config(cfg).await?;
    let version = server_version(&cluster).await;
    let listener = listener::bind(listen).await?;
    let local = listener.local_addr()?;
    println!("listening {local} -> cluster {seed}");
    tracing::info!(%local, seed = %seed, masters = ?cluster.masters(), "smart tunnel ready");
    let smart = Arc::new(Smart {
        upstream: Upstream {
            cluster,
            config: Arc::new(upstream),
        },
        version,
        next_id: AtomicU64::new(1),
    });
    listener::serve(
        listener,
        Arc::from(format!("cluster {seed}")),
        shutdown.clone(),
        move |client| connection(client, smart.clone()),
    );
    Ok(())
}

async fn server_version(cluster: &ClusterClient) -> Bytes {
    let info: Result<Bytes, Error> = cluster.on_random(Cmd::new("INFO").arg("server")).await;
    info.ok()
        .and_then(|text| {
            let text = String::from_utf8_lossy(&text).into_owned();
            text.lines()
                .find_map(|l| l.strip_prefix("redis_version:"))
                .map(|v| Bytes::from(v.trim().to_owned()))
        })
        .unwrap_or_else(|| Bytes::from_static(b"7.0.0"))
}

/// Commands the tunnel answers itself (`Session::dispatch`'s `match`); every other name
/// is routed (or, when it blocks, handed a connection of its own). Both `dispatch` and
/// `routes_as_is` decide by this one list, so the fast path and the decoded one agree;
/// a new arm of that `match` is reached only once its name is listed here.
const ANSWERED_HERE: &[&[u8]] = &[
    b"PING",
    b"SELECT",
    b"AUTH",
    b"HELLO",
    b"CLIENT",
    b"QUIT",
    b"RESET",
    b"MULTI",
    b"EXEC",
    b"DISCARD",
    b"UNWATCH",
    b"WATCH",
    b"CLUSTER",
    b"READONLY",
    b"READWRITE",
    b"ASKING",
    b"SUBSCRIBE",
    b"PSUBSCRIBE",
    b"MONITOR",
    b"SSUBSCRIBE",
    b"SCAN",
];

/// Whether the tunnel answers a command itself ([`ANSWERED_HERE`]), by its table entry:
/// kept per entry (entries are numbered in `command::all`'s order), since every request
/// asks.
fn answered_here(spec: &'static CommandSpec) -> bool {
    fn listed(spec: &CommandSpec) -> bool {
        ANSWERED_HERE
            .iter()
            .any(|name| name.eq_ignore_ascii_case(spec.name.as_bytes()))
    }
    static BY_ID: std::sync::LazyLock<command::PerEntry<bool>> =
        std::sync::LazyLock::new(|| command::PerEntry::new(listed));
    BY_ID.get(spec)
}

/// What to do with one request.
enum Step {
    /// Routed by the cluster client; consecutive ones go out together.
    Route(RelayCommand),
    /// Its reply, in order with the others (it may run concurrently with them).
    Reply(BoxFuture<'static, Frame>),
    /// Runs alone: after every earlier reply, before any later command.
    Alone(BoxFuture<'static, Frame>),
    /// The connection becomes a pass-through to one node, starting with this command.
    PassThrough { first: Bytes, slot: Option<u16> },
    /// Reply, then close the connection.
    Quit(Frame),
}

/// One local client: its requests in, replies out in order.
async fn connection(client: TcpStream, smart: Arc<Smart>) -> Result<(), TunnelError> {
    let (mut rd, mut wr) = client.into_split();
    let mut session = Session::new(smart);
    let mut inbuf = BytesMut::with_capacity(CHUNK);
    // Whole requests are read off `inbuf` as `RelayCommand`s, so a routed one is forwarded
    // as the bytes the client sent; `decoder` takes over for the rest (and any error)
    // whenever a request is incomplete or not plain RESP, until it stands at a request
    // boundary again.
    let mut decoder = RequestDecoder::default();
    let mut at_boundary = true;
    let mut pending: FuturesOrdered<BoxFuture<'static, Replies>> = FuturesOrdered::new();
    // Routed commands from the same reads, sent together.
    let mut group: Vec<RelayCommand> = Vec::new();
    let mut out = BytesMut::with_capacity(CHUNK);
    let mut eof = false;
    let mut closing = false;
    // A command waiting for the replies before it, and whether one is running.
    let mut waiting: Option<Step> = None;
    let mut alone = false;
    loop {
        if pending.is_empty() {
            alone = false;
            match waiting.take() {
                Some(Step::Alone(fut)) => {
                    pending.push_back(fut.map(Replies::Frame).boxed());
                    alone = true;
                }
                Some(Step::PassThrough { first, slot }) => {
                    let client = rd
                        .reunite(wr)
                        .map_err(|e| TunnelError::Io(std::io::Error::other(e.to_string())))?;
                    return pass_through(client, inbuf, session, first, slot).await;
                }
                other => waiting = other,
            }
        }
        if !closing && !alone && waiting.is_none() {
            while pending.len() < WINDOW {
                let decoded = if at_boundary {
                    match RelayCommand::split_from(&mut inbuf) {
                        Some(request) if session.routes_as_is(&request) => {
                            group.push(request);
                            continue;
                        }
                        // Exactly one whole request: decoded at once.
                        Some(request) => {
                            let mut request = BytesMut::from(request.into_bytes());
                            match decoder.decode(&mut request) {
                                Ok(None) => continue,
                                decoded => decoded,
                            }
                        }
                        // Incomplete, inline, empty or a header Redis refuses: the decoder
                        // reads it as it always has.
                        None => {
                            let before = inbuf.len();
                            let decoded = decoder.decode(&mut inbuf);
                            at_boundary = !matches!(decoded, Ok(None)) || inbuf.len() == before;
                            decoded
                        }
                    }
                } else {
                    let decoded = decoder.decode(&mut inbuf);
                    at_boundary = !matches!(decoded, Ok(None));
                    decoded
                };
                match decoded {
                    Ok(Some(args)) => {
                        let step = session.dispatch(args);
                        if let Step::Route(request) = step {
                            group.push(request);
                            continue;
                        }
                        session.flush(&mut group, &mut pending);
                        match step {
                            Step::Reply(fut) => pending.push_back(fut.map(Replies::Frame).boxed()),
                            Step::Quit(frame) => {
                                pending.push_back(ready(frame));
                                closing = true;
                                break;
                            }
                            step => {
                                waiting = Some(step);
                                break;
                            }
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        // As Redis: an error line, then the connection is closed.
                        session.flush(&mut group, &mut pending);
                        pending.push_back(ready(error_line(&format!("ERR {e}"))));
                        closing = true;
                        break;
                    }
                }
            }
            session.flush(&mut group, &mut pending);
            if waiting.is_some() && pending.is_empty() {
                continue;
            }
        }
        if pending.is_empty() && (eof || closing) {
            let _ = wr.shutdown().await;
            return Ok(());
        }
        let can_read = !eof && !closing && !alone && waiting.is_none() && pending.len() < WINDOW;
        tokio::select! {
            Some(replies) = pending.next(), if !pending.is_empty() => {
                replies.write_to(&mut out);
                // Everything else already answered goes out in the same write.
                while let Some(Some(replies)) = pending.next().now_or_never() {
                    replies.write_to(&mut out);
                    if out.len() >= CHUNK {
                        break;
                    }
                }
                wr.write_all(&out).await?;
                out.clear();
            }
            read = rd.read_buf(&mut inbuf), if can_read => {
                if read? == 0 {
                    eof = true;
                }
                inbuf.reserve(CHUNK.saturating_sub(inbuf.capacity() - inbuf.len()));
            }
            else => return Ok(()),
        }
    }
}

/// Replies ready to go back to the client, in order.
enum Replies {
    /// Answered by the tunnel, or on a dedicated connection.
    Frame(Frame),
    /// Routed commands' replies, as the nodes sent them. Every one is `Ok`: a command
    /// that got none has been given its error reply (`after_error`).
    Raw(Vec<Result<Bytes, Error>>),
}

impl Replies {
    fn write_to(&self, out: &mut BytesMut) {
        match self {
            Replies::Frame(frame) => encode::frame(out, frame),
            Replies::Raw(replies) => replies
                .iter()
                .flatten()
                .for_each(|r| out.extend_from_slice(r)),
        }
    }
}

fn ready(frame: Frame) -> BoxFuture<'static, Replies> {
    std::future::ready(Replies::Frame(frame)).boxed()
}

fn now(frame: Frame) -> BoxFuture<'static, Frame> {
    std::future::ready(frame).boxed()
}

fn error_line(text: &str) -> Frame {
    Frame::Error(Bytes::from(text.replace(['\r', '\n'], " ")))
}

fn ok() -> Frame {
    Frame::Simple(Bytes::from_static(b"OK"))
}

/// A client library error as the error reply a client would have seen from Redis.
fn error_frame(e: &Error) -> Frame {
    match e {
        Error::Server { .. } => error_line(&e.to_string()),
        Error::Auth { kind, message } => error_line(&format!("{kind} {message}")),
        other => error_line(&format!("ERR redline tunnel: {other}")),
    }
}

/// Per-connection state the tunnel keeps on the client's behalf.
struct Session {
    smart: Arc<Smart>,
    id: u64,
    name: Option<Bytes>,
    /// Commands queued since `MULTI`.
    multi: Option<Vec<Vec<Bytes>>>,
    /// A `WATCH` is in force on a dedicated connection.
    watching: bool,
    dedicated: Arc<Mutex<Dedicated>>,
}

impl Session {
    fn new(smart: Arc<Smart>) -> Self {
        let id = smart.next_id.fetch_add(1, Ordering::Relaxed);
        let dedicated = Arc::new(Mutex::new(smart.upstream.dedicated()));
        Session {
            smart,
            id,
            name: None,
            multi: None,
            watching: false,
            dedicated,
        }
    }

    /// True when `dispatch` would route this request to the cluster unchanged: the
    /// common case, forwarded without being decoded. Everything else goes through
    /// `dispatch`.
    fn routes_as_is(&self, request: &RelayCommand) -> bool {
        self.multi.is_none()
            && request.shares_connection()
            && !request.spec().is_some_and(answered_here)
    }

    fn dispatch(&mut self, args: Vec<Bytes>) -> Step {
        let mut name_buf = Upper::default();
        let name = name_buf.of(&args[0]);
        let mut sub_buf = Upper::default();
        let sub = args.get(1).map(|s| sub_buf.of(s));
        if let Some(queue) = &mut self.multi {
            let reply = match name {
                b"EXEC" => {
                    let queued = self.multi.take().unwrap_or_default();
                    return self.transaction(queued);
                }
                b"DISCARD" => {
                    self.multi = None;
                    if self.watching {
                        return self.unwatch(ok());
                    }
                    ok()
                }
                b"MULTI" => error_line("ERR MULTI calls can not be nested"),
                b"WATCH" => error_line("ERR WATCH inside MULTI is not allowed"),
                _ => {
                    queue.push(args);
                    Frame::Simple(Bytes::from_static(b"QUEUED"))
                }
            };
            return Step::Reply(now(reply));
        }
        if !ANSWERED_HERE.contains(&name) {
            return self.route(args);
        }
        let reply = match name {
            b"PING" => match args.len() {
                1 => Frame::Simple(Bytes::from_static(b"PONG")),
                2 => Frame::Bulk(args[1].clone()),
                _ => error_line("ERR wrong number of arguments for 'ping' command"),
            },
            b"SELECT" => match sub {
                Some(b"0") => ok(),
                _ => error_line("ERR SELECT is not allowed in cluster mode"),
            },
            b"AUTH" => ok(),
            b"HELLO" => self.hello(&args),
            b"CLIENT" => self.client(sub, &args),
            b"QUIT" => return Step::Quit(ok()),
            b"RESET" if self.watching => {
                self.name = None;
                return self.unwatch(Frame::Simple(Bytes::from_static(b"RESET")));
            }
            b"RESET" => {
                self.name = None;
                Frame::Simple(Bytes::from_static(b"RESET"))
            }
            b"MULTI" => {
                self.multi = Some(Vec::new());
                ok()
            }
            b"EXEC" => error_line("ERR EXEC without MULTI"),
            b"DISCARD" => error_line("ERR DISCARD without MULTI"),
            b"UNWATCH" if self.watching => return self.unwatch(ok()),
            b"UNWATCH" => ok(),
            b"WATCH" => return self.watch(args),
            b"CLUSTER" | b"READONLY" | b"READWRITE" | b"ASKING" => {
                error_line("ERR This instance has cluster support disabled")
            }
            b"SUBSCRIBE" | b"PSUBSCRIBE" | b"MONITOR" => {
                return Step::PassThrough {
                    first: encoded(&args),
                    slot: None,
                }
            }
            b"SSUBSCRIBE" => {
                return Step::PassThrough {
                    first: encoded(&args),
                    slot: args.get(1).map(|c| key_slot(c)),
                }
            }
            b"SCAN" => return Step::Reply(self.scan(args)),
            // A listed name without an arm of its own.
            _ => return self.route(args),
        };
        Step::Reply(now(reply))
    }

    /// A command the tunnel does not answer: to the cluster, or, when it blocks (as
    /// redline-resp decides: XREAD only with BLOCK, WAIT...), on a connection of its own.
    fn route(&mut self, args: Vec<Bytes>) -> Step {
        if command::blocking(&args).is_some() {
            return self.blocking(args);
        }
        match RelayCommand::new(encoded(&args)) {
            Ok(request) => Step::Route(request),
            Err(e) => Step::Reply(now(error_frame(&e))),
        }
    }

    /// The common path: the routed commands of one read go to the cluster together, as
    /// the client sent them (one write per node), and their replies come back as the
    /// nodes sent them.
    fn flush(
        &self,
        group: &mut Vec<RelayCommand>,
        pending: &mut FuturesOrdered<BoxFuture<'static, Replies>>,
    ) {
        if group.is_empty() {
            return;
        }
        // The next read's group is likely as large: room for it at once, not by doubling.
        let group = std::mem::replace(group, Vec::with_capacity(group.len()));
        let cluster = self.smart.upstream.cluster.clone();
        pending.push_back(
            async move {
                let mut replies = cluster.relay(&group).await;
                for (request, reply) in group.iter().zip(replies.iter_mut()) {
                    if let Err(e) = reply {
                        let e = std::mem::replace(e, Error::Closed);
                        let frame = after_error(&cluster, request.bytes(), e).await;
                        *reply = Ok(encoded_frame(&frame));
                    }
                }
                Replies::Raw(replies)
            }
            .boxed(),
        );
    }

    fn blocking(&self, args: Vec<Bytes>) -> Step {
        let batch = Batch {
            slot: slot_of(&args),
            bytes: encoded(&args),
            replies: 1,
        };
        let dedicated = self.dedicated.clone();
        Step::Alone(
            async move {
                match dedicated.lock().await.exchange(&batch).await {
                    Ok(mut replies) => replies.pop().unwrap_or(Frame::NullArray),
                    Err(e) => error_line(&format!("ERR redline tunnel: {e}")),
                }
            }
            .boxed(),
        )
    }

    /// `MULTI`, the queued commands and `EXEC` in one batch on the owning master; the
    /// reply is `EXEC`'s.
    fn transaction(&mut self, queued: Vec<Vec<Bytes>>) -> Step {
        if queued.is_empty() && !self.watching {
            return Step::Reply(now(Frame::Array(Vec::new())));
        }
        // EXEC ends a WATCH, whatever its outcome.
        self.watching = false;
        let mut bytes = BytesMut::new();
        encode::command(&mut bytes, ["MULTI"]);
        for args in &queued {
            encode::command(&mut bytes, args.iter());
        }
        encode::command(&mut bytes, ["EXEC"]);
        let batch = Batch {
            slot: queued.iter().find_map(|args| slot_of(args)),
            bytes: bytes.freeze(),
            replies: queued.len() + 2,
        };
        let dedicated = self.dedicated.clone();
        Step::Alone(
            async move {
                let mut dedicated = dedicated.lock().await;
                let reply = match dedicated.exchange(&batch).await {
                    Ok(mut replies) => replies.pop().unwrap_or(Frame::NullArray),
                    Err(e) => error_line(&format!("ERR redline tunnel: {e}")),
                };
                dedicated.unwatch();
                reply
            }
            .boxed(),
        )
    }

    /// `WATCH keys`: sent on a dedicated connection to the keys' master, which then also
    /// runs the `MULTI`...`EXEC` that follows.
    fn watch(&mut self, args: Vec<Bytes>) -> Step {
        let batch = Batch {
            slot: slot_of(&args),
            bytes: encoded(&args),
            replies: 1,
        };
        self.watching = true;
        let dedicated = self.dedicated.clone();
        Step::Alone(
            async move {
                let mut dedicated = dedicated.lock().await;
                match dedicated.exchange(&batch).await {
                    Ok(mut replies) => {
                        let reply = replies.pop().unwrap_or(Frame::NullArray);
                        if !matches!(reply, Frame::Error(_)) {
                            dedicated.watch_last();
                        }
                        reply
                    }
                    Err(e) => error_line(&format!("ERR redline tunnel: {e}")),
                }
            }
            .boxed(),
        )
    }

    /// `UNWATCH` on the watching connection, then `reply`.
    fn unwatch(&mut self, reply: Frame) -> Step {
        self.watching = false;
        let batch = Batch {
            slot: None,
            bytes: encoded(&[Bytes::from_static(b"UNWATCH")]),
            replies: 1,
        };
        let dedicated = self.dedicated.clone();
        Step::Alone(
            async move {
                let mut dedicated = dedicated.lock().await;
                let result = dedicated.exchange(&batch).await;
                dedicated.unwatch();
                match result {
                    Ok(_) => reply,
                    Err(e) => error_line(&format!("ERR redline tunnel: {e}")),
                }
            }
            .boxed(),
        )
    }

    /// `HELLO [2 [AUTH u p] [SETNAME n]]`: RESP2 only.
    fn hello(&mut self, args: &[Bytes]) -> Frame {
        if let Some(version) = args.get(1) {
            match std::str::from_utf8(version)
                .ok()
                .and_then(|v| v.parse::<i64>().ok())
            {
                Some(2) => {}
                Some(3) => {
                    return error_line("NOPROTO sorry, this protocol version is not supported")
                }
                _ => return error_line("NOPROTO unsupported protocol version"),
            }
        }
        let mut i = 2;
        while i < args.len() {
            if args[i].eq_ignore_ascii_case(b"AUTH") && i + 2 < args.len() {
                i += 3;
            } else if args[i].eq_ignore_ascii_case(b"SETNAME") && i + 1 < args.len() {
                self.name = Some(args[i + 1].clone());
                i += 2;
            } else {
                return error_line(&format!(
                    "ERR Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(&args[i])
                ));
            }
        }
        let bulk = |s: &'static str| Frame::Bulk(Bytes::from_static(s.as_bytes()));
        Frame::Array(vec![
            bulk("server"),
            bulk("redis"),
            bulk("version"),
            Frame::Bulk(self.smart.version.clone()),
            bulk("proto"),
            Frame::Integer(2),
            bulk("id"),
            Frame::Integer(i64::try_from(self.id).unwrap_or(i64::MAX)),
            bulk("mode"),
            bulk("standalone"),
            bulk("role"),
            bulk("master"),
            bulk("modules"),
            Frame::Array(Vec::new()),
        ])
    }

    fn client(&mut self, sub: Option<&[u8]>, args: &[Bytes]) -> Frame {
        match sub {
            Some(b"SETNAME") if args.len() == 3 => {
                self.name = Some(args[2].clone()).filter(|n| !n.is_empty());
                ok()
            }
            Some(b"GETNAME") => self.name.clone().map_or(Frame::NullBulk, Frame::Bulk),
            Some(b"ID") => Frame::Integer(i64::try_from(self.id).unwrap_or(i64::MAX)),
            Some(b"SETINFO") => ok(),
            Some(other) => error_line(&format!(
                "ERR redline tunnel (smart mode) does not support CLIENT {}; use --mode pinned",
                String::from_utf8_lossy(other)
            )),
            None => error_line("ERR wrong number of arguments for 'client' command"),
        }
    }

    /// `SCAN cursor [options]` over every master in turn (sorted by address). The
    /// cursor carries the master's index in its low bits and that master's own cursor
    /// above them.
    fn scan(&self, args: Vec<Bytes>) -> BoxFuture<'static, Frame> {
        let cluster = self.smart.upstream.cluster.clone();
        async move {
            let Some(cursor) = args
                .get(1)
                .and_then(|c| std::str::from_utf8(c).ok())
                .and_then(|c| c.parse::<u64>().ok())
            else {
                return error_line("ERR invalid cursor");
            };
            let mut masters = cluster.masters();
            masters.sort();
            let index = usize::try_from(cursor & ((1 << SCAN_NODE_BITS) - 1)).unwrap_or(usize::MAX);
            let Some(node) = masters.get(index) else {
                return error_line("ERR invalid cursor");
            };
            let cmd = Cmd::new("SCAN")
                .arg(cursor >> SCAN_NODE_BITS)
                .args(args.iter().skip(2));
            let reply: Result<Frame, Error> = cluster.on_node(node, cmd).await;
            let items = match reply {
                Ok(Frame::Array(items)) if items.len() == 2 => items,
                Ok(other) => return other,
                Err(e) => return error_frame(&e),
            };
            let mut items = items.into_iter();
            let (Some(Frame::Bulk(next)), Some(keys)) = (items.next(), items.next()) else {
                return error_line("ERR redline tunnel: unexpected SCAN reply");
            };
            let next: u64 = std::str::from_utf8(&next)
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let cursor = if next != 0 {
                match next.checked_mul(1 << SCAN_NODE_BITS) {
                    Some(high) => high | index as u64,
                    None => return error_line("ERR redline tunnel: node cursor too large"),
                }
            } else if index + 1 < masters.len() {
                (index + 1) as u64
            } else {
                0
            };
            Frame::Array(vec![Frame::Bulk(Bytes::from(cursor.to_string())), keys])
        }
        .boxed()
    }
}

/// A command name (or subcommand) in upper case for matching: on the stack when short,
/// as every name the tunnel looks at is (no allocation per command).
#[derive(Default)]
struct Upper {
    short: [u8; 24],
    long: Vec<u8>,
}

impl Upper {
    fn of(&mut self, word: &[u8]) -> &[u8] {
        match self.short.get_mut(..word.len()) {
            Some(short) => {
                short.copy_from_slice(word);
                short.make_ascii_uppercase();
                short
            }
            None => {
                self.long = word.to_ascii_uppercase();
                &self.long
            }
        }
    }
}

/// The reply for a routed command that got none: a command the cluster client refused
/// gets its error; after a lost connection, reads and writes that give the same reply
/// when run twice are sent again, other writes get an error saying they may have run.
async fn after_error(cluster: &ClusterClient, request: &Bytes, e: Error) -> Frame {
    if matches!(e, Error::NotMultiplexable { .. } | Error::Protocol(_)) {
        return route_one(cluster, request).await;
    }
    let args = args_of(request);
    if is_readonly(&args) || same_reply_when_repeated(&args) {
        route_one(cluster, request).await
    } else {
        error_line(&format!(
            "ERR redline tunnel: {e} (the command may have run)"
        ))
    }
}

fn encoded_frame(frame: &Frame) -> Bytes {
    let mut out = BytesMut::new();
    encode::frame(&mut out, frame);
    out.freeze()
}

/// One command (encoded) through the cluster client (which re-sends reads after a lost
/// connection). Writes that give the same reply when run twice are re-sent here too, so
/// a failover does not surface as an error for them.
async fn route_one(cluster: &ClusterClient, request: &Bytes) -> Frame {
    let mut attempt = 0;
    loop {
        let Some(cmd) = Cmd::from_encoded(request) else {
            return error_line("ERR Protocol error: invalid multibulk request");
        };
        match cluster.query::<Frame>(cmd).await {
            Ok(frame) => return frame,
            Err(e)
                if e.is_connection_error()
                    && attempt < RESEND_ATTEMPTS
                    && same_reply_when_repeated(&args_of(request)) =>
            {
                attempt += 1;
                tracing::debug!(error = %e, attempt, "re-sending an idempotent write");
                tokio::time::sleep(RESEND_PAUSE * attempt).await;
            }
            Err(e) => return error_frame(&e),
        }
    }
}

/// `readonly` in the command table: the cluster client re-sends these itself.
fn is_readonly(args: &[Bytes]) -> bool {
    args.first()
        .and_then(|name| command::lookup(name))
        .is_some_and(|spec| spec.flags.contains(CommandFlags::READONLY))
}

/// Writes whose effect and reply are the same when they run twice: plain `SET` (no
/// `NX`/`XX`/`GET`, whose replies would change), `SETEX`, `PSETEX`, `MSET`, `HMSET`.
/// `HSET`, `SADD`, `DEL`... are left out: their replies count what changed.
fn same_reply_when_repeated(args: &[Bytes]) -> bool {
    let Some(name) = args.first() else {
        return false;
    };
    let is = |s: &[u8]| name.eq_ignore_ascii_case(s);
    if is(b"SET") {
        return !args.iter().skip(3).any(|a| {
            a.eq_ignore_ascii_case(b"NX")
                || a.eq_ignore_ascii_case(b"XX")
                || a.eq_ignore_ascii_case(b"GET")
        });
    }
    is(b"SETEX") || is(b"PSETEX") || is(b"MSET") || is(b"HMSET")
}

/// The slot of the command's first key, per the command table.
fn slot_of(args: &[Bytes]) -> Option<u16> {
    let positions = command::keys(args).ok()?;
    positions
        .first()
        .and_then(|&i| args.get(i))
        .map(|k| key_slot(k))
}

/// The arguments of an encoded request (off the common path: error handling only).
fn args_of(request: &Bytes) -> Vec<Bytes> {
    let mut buf = BytesMut::from(&request[..]);
    RequestDecoder::default()
        .decode(&mut buf)
        .ok()
        .flatten()
        .unwrap_or_default()
}

fn encoded(args: &[Bytes]) -> Bytes {
    let mut out = BytesMut::new();
    encode::command(&mut out, args.iter());
    out.freeze()
}

/// Hands the connection over to one node, bytes both ways unchanged.
async fn pass_through(
    mut client: TcpStream,
    unread: BytesMut,
    session: Session,
    first: Bytes,
    slot: Option<u16>,
) -> Result<(), TunnelError> {
    let dedicated = session.smart.upstream.dedicated();
    drop(session);
    let (mut server, replies) = dedicated.take_over(first, slot).await?;
    client.write_all(&replies).await?;
    server.write_all(&unread).await?;
    server.flush().await?;
    tokio::io::copy_bidirectional_with_sizes(&mut client, &mut server, CHUNK, CHUNK).await?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<Bytes> {
        list.iter().map(|a| Bytes::from(a.to_string())).collect()
    }

    /// The fast path knows the commands `dispatch` answers by their table entries, so
    /// each must have one; no other entry is taken for one of them.
    #[test]
    fn commands_answered_here_are_known_by_entry() {
        for name in ANSWERED_HERE {
            let spec = command::lookup(name).unwrap_or_else(|| panic!("{name:?}"));
            assert!(answered_here(spec), "{name:?}");
        }
        let answered = command::all().filter(|spec| answered_here(spec)).count();
        assert_eq!(answered, ANSWERED_HERE.len());
    }

    #[test]
    fn idempotent_writes() {
        assert!(same_reply_when_repeated(&args(&[
            "set", "k", "v", "EX", "10"
        ])));
        assert!(!same_reply_when_repeated(&args(&["SET", "k", "v", "NX"])));
        assert!(!same_reply_when_repeated(&args(&["SET", "k", "v", "get"])));
        assert!(same_reply_when_repeated(&args(&[
            "MSET", "a", "1", "b", "2"
        ])));
        assert!(!same_reply_when_repeated(&args(&["INCR", "k"])));
        assert!(!same_reply_when_repeated(&args(&["HSET", "h", "f", "v"])));
    }

    #[test]
    fn slots_from_the_command_table() {
        assert_eq!(
            slot_of(&args(&["BLPOP", "{a}x", "{a}y", "0"])),
            Some(key_slot(b"a"))
        );
        assert_eq!(slot_of(&args(&["SET", "k", "v"])), Some(key_slot(b"k")));
        assert_eq!(slot_of(&args(&["PING"])), None);
    }
}
