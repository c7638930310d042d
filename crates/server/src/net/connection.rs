//! One client connection: read what is available, run every complete command in order,
//! encode all the replies into one buffer, write it once, repeat.
//!
//! The path of a GET: [`serve`] → [`Connection::run`] (socket read into `input`) →
//! `Connection::process_input` (`RequestDecoder::decode` splits the arguments off
//! `input` without copying) → [`crate::cmd::execute`] (command table lookup, arity, auth)
//! → `cmd::strings::get` (locks one shard, encodes the value from the locked entry into
//! `output`) → `Connection::flush` (one `write_all`).
//!
//! The loop is generic over the stream: a plain `TcpStream`, or a rustls stream on the
//! TLS port ([`serve_tls`] runs the handshake in the same task first). Either way one task
//! serves the connection and each batch of replies is one write; TLS adds the encryption
//! and nothing else.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use redline_resp::{encode, Limits, RequestDecoder};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::client::{ClientState, ReplyMode, WaitReplicas};
use super::client_memory::{ClientFigures, IDLE_REPLY_BUFFER};
use super::counted::Counted;
use super::input_turns::{TurnReader, SETTLE_LIMIT};
use super::registry::Registration;
use crate::cmd::{self, Ctx};
use crate::scripting::ScriptWait;
use crate::shared::Shared;

/// Bytes asked of each read (Redis's `PROTO_IOBUF_LEN`).
const READ_CHUNK: usize = 16 * 1024;

/// An argument this long gets its whole room in the query buffer as soon as its length
/// is read (Redis's `PROTO_MBULK_BIG_ARG`).
pub(crate) const BIG_ARG: usize = 32 * 1024;

/// Write out a batch's replies early once they reach this size, so a long pipeline of
/// large replies does not pile up in memory.
const FLUSH_AT: usize = 64 * 1024;

/// A query buffer past this may be cut to its recent use (Redis's
/// `PROTO_RESIZE_THRESHOLD`; see [`Connection::fit_query_buffer`]).
const RESIZE_THRESHOLD: usize = 32 * 1024;

/// How often a busy client's query buffer is looked at for resizing.
const QUERY_PEAK_WINDOW: std::time::Duration = std::time::Duration::from_millis(100);

/// A query buffer bigger than this is released once empty, so one huge request does not
/// pin its memory for the life of the connection.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// The reply buffer a connection keeps once its replies are written (Redis's
/// `PROTO_REPLY_CHUNK_BYTES`, its reply buffer's largest size): larger replies are
/// written from a buffer of their own, freed after, as Redis's reply list is.
pub(super) const REPLY_CHUNK: usize = 16 * 1024;

/// Limits cached from the configuration, refreshed when CONFIG SET bumps its generation.
struct CachedLimits {
    generation: u64,
    query_buffer_limit: usize,
    timeout: Option<Duration>,
}

/// How [`Connection::write_or_read`] ended.
enum Sent {
    /// Every reply was written.
    All,
    /// Some replies still wait, and the client sent more.
    ReadMore,
    /// The client closed its side.
    PeerClosed,
}

/// What [`run_commands`] stopped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// No complete command left in the input.
    Drained,
    /// The output buffer is large: write it, then continue.
    OutputFull,
    /// A blocking command is waiting: write what is pending, then wait for it.
    Blocked,
    /// CLIENT PAUSE holds the next command (kept in `postponed`): wait for the pause to end.
    Paused,
    /// WAIT or SHUTDOWN waits for replicas, or SYNC made this connection a replica link.
    Replication,
    /// The next command (kept in `postponed`) waits for the script turn or for the
    /// running script to end (`client.script_wait` says which).
    Script,
    /// An EVAL starts a Lua debugging session (`client.debug.pending`).
    Debug,
    /// The next command (kept in `postponed`) lets other connections run the input
    /// they have already received first (`client.input_wait`).
    OthersInput,
}

/// A connection being served over stream `S` (TCP or TLS).
pub struct Connection<'a, S> {
    shared: &'a Shared,
    stream: Counted<S>,
    input: BytesMut,
    output: BytesMut,
    /// Bytes written (advanced past) from the front of `output`'s allocation, which
    /// `capacity()` leaves out (see [`Self::output_allocation`]).
    output_sent: usize,
    decoder: RequestDecoder,
    client: ClientState,
    limits: CachedLimits,
    /// The waker the mailbox wakes when the cron asks this idle client to trim its
    /// buffers, registered on the first wait: a task's waker does not change.
    trim_waker: Option<std::task::Waker>,
    /// When the query buffer was last looked at for resizing ([`Self::fit_query_buffer`]).
    qbuf_looked: std::time::Instant,
    /// Nothing read since the connection opened or its idle query buffer was given
    /// back: the next read may take a small buffer (see [`Self::reserve_input`]).
    input_at_rest: bool,
    /// A listener's reads, which mark its input ready before the task runs (see
    /// [`crate::net::input_turns`]).
    turn_reader: TurnReader,
    /// The replication offset up to which this client's changes have been handed to
    /// the replicas' links before its replies went out (see [`Self::before_replies`]).
    replicas_handed: u64,
}

/// Serves one accepted TLS connection: the handshake (bounded by `timeout`), then
/// [`serve`] in the same task. A failed or timed-out handshake closes the socket.
pub async fn serve_tls(
    shared: Arc<Shared>,
    stream: TcpStream,
    peer: SocketAddr,
    id: u64,
    tls: Arc<rustls::ServerConfig>,
    timeout: Duration,
) {
    let stream = {
        let _registration = Registration {
            clients: &shared.clients,
            id,
        };
        match super::tls::handshake(tls, stream, timeout).await {
            Ok(stream) => {
                // Kept registered: `serve` takes the registration over.
                std::mem::forget(_registration);
                stream
            }
            Err(e) => {
                tracing::debug!("Error accepting a client connection: {e} (addr={peer})");
                return;
            }
        }
    };
    serve_stream(shared, stream, peer.into(), id, true).await;
}

/// Serves one accepted plain connection until it closes, is killed, or the server stops.
pub async fn serve<S>(shared: Arc<Shared>, stream: S, peer: super::peer::Peer, id: u64)
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
{
    serve_stream(shared, stream, peer, id, false).await;
}

/// [`serve`] for a connection that is TLS (`tls`) or not.
async fn serve_stream<S>(
    shared: Arc<Shared>,
    stream: S,
    peer: super::peer::Peer,
    id: u64,
    tls: bool,
) where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let _registration = Registration {
        clients: &shared.clients,
        id,
    };
    let (authenticated, limits) = {
        let config = shared.config.read();
        (
            !shared.acl.auth_required(),
            Limits {
                max_bulk_len: usize::try_from(config.proto_max_bulk_len).unwrap_or(usize::MAX),
                ..Limits::default()
            },
        )
    };
    let mut client = ClientState::new(id, peer.clone(), authenticated);
    client.tls = tls;
    if let Some(killed) = shared.clients.killed_flag(id) {
        client.killed = killed;
    }
    client.activity_slot = shared.clients.activity(id);
    client.mailbox.account_in(shared.clients.memory.clone());
    shared.clients.set_mailbox(id, client.mailbox.clone());
    let mut connection = Connection {
        shared: &shared,
        stream: Counted::new(stream),
        // No query buffer until the client sends something, as Redis's client: an
        // idle connection costs its reply buffer only (see `reserve_input`).
        input: BytesMut::new(),
        output: BytesMut::with_capacity(READ_CHUNK),
        output_sent: 0,
        decoder: RequestDecoder::new(limits),
        client,
        limits: CachedLimits {
            generation: u64::MAX,
            query_buffer_limit: usize::MAX,
            timeout: None,
        },
        trim_waker: None,
        qbuf_looked: std::time::Instant::now(),
        input_at_rest: true,
        turn_reader: TurnReader::for_client(id),
        replicas_handed: 0,
    };
    connection.refresh_limits();
    if let Err(e) = connection.run().await {
        tracing::debug!("Client id={id} addr={peer} closed: {e}");
    }
    connection.flush_counters();
}

/// The request path without the socket: decodes every complete command in `input` and
/// executes it in order, replies appended to `output`, then serves clients blocked on
/// keys the command wrote. Stops early when a command blocks, when `output` is large,
/// or after a protocol error (the error reply is written and `close_after_reply` set).
/// The connection loop calls it after each read; the fuzz target calls it directly.
///
/// ```
/// use bytes::BytesMut;
/// use redline_resp::RequestDecoder;
/// use redline_server::net::client::ClientState;
/// use redline_server::net::connection::{run_commands, Progress};
/// use redline_server::shared::Shared;
/// use redline_server::Config;
///
/// let shared = Shared::new(Config::default(), 0);
/// let peer: std::net::SocketAddr = "127.0.0.1:1".parse().unwrap();
/// let mut client = ClientState::new(1, peer, true);
/// let mut input = BytesMut::from(&b"SET k v\r\nGET k\r\n"[..]);
/// let mut output = BytesMut::new();
/// let mut decoder = RequestDecoder::default();
/// let progress = run_commands(&shared, &mut client, &mut decoder, &mut input, &mut output);
/// assert_eq!(progress, Progress::Drained);
/// assert_eq!(&output[..], b"+OK\r\n$1\r\nv\r\n");
/// ```
pub fn run_commands(
    shared: &Shared,
    client: &mut ClientState,
    decoder: &mut RequestDecoder,
    input: &mut BytesMut,
    output: &mut BytesMut,
) -> Progress {
    let progress = run_commands_in_turn(shared, client, decoder, input, output);
    // The script turn lasts one batch (the caller may wait next), or a debugging
    // session's EVAL.
    if progress != Progress::Debug {
        if let Some(turn) = client.script_turn.take() {
            client.handed_turn = turn.pass();
        }
    }
    progress
}

/// [`run_commands`], leaving the script turn, if the batch took it, to the caller.
fn run_commands_in_turn(
    shared: &Shared,
    client: &mut ClientState,
    decoder: &mut RequestDecoder,
    input: &mut BytesMut,
    output: &mut BytesMut,
) -> Progress {
    if !input.is_empty() {
        client.last_interaction = std::time::Instant::now();
        // The batch only consumes its input: its start is its peak.
        client.qbuf_peak = client.qbuf_peak.max(input.len());
    }
    let batch = crate::stall_watchdog::batch();
    client.in_batch = true;
    let progress = run_batch(shared, client, decoder, input, output);
    // The last command's arguments are views into `input`'s buffer: let it go before
    // the next read (a batch that drained did already; one that stopped early did not).
    decoder.release_returned();
    client.in_batch = false;
    client.batch_clock = None;
    drop(batch);
    progress
}

/// What a connection's batch runs on, lent to the client holding the script turn while
/// the connection waits for it (see [`crate::scripting::turn`]).
struct LentBatch {
    client: ClientState,
    decoder: RequestDecoder,
    input: BytesMut,
    output: BytesMut,
}

/// A lent batch coming back: run (with what it made of its input), or handed the
/// script turn to run on its own task.
struct ReturnedBatch {
    lent: LentBatch,
    progress: Option<Progress>,
}

/// The queued form of a lent batch: run by the turn's holder, or handed the turn (to
/// run on its own task), then sent back on `back`. A connection gone meanwhile (killed, shut down) is let go as its
/// task would have let it go.
fn queued_batch(
    shared: Arc<Shared>,
    lent: LentBatch,
    back: tokio::sync::oneshot::Sender<ReturnedBatch>,
) -> crate::scripting::Queued {
    Box::new(move |turn, used| {
        let mut lent = lent;
        lent.client.script_turn = Some(turn);
        let mut progress = None;
        let mut turn_back = None;
        // DEBUG SLEEP stops the server: the batch's own task waits for the end first.
        if used == crate::scripting::Use::Run && !shared.freeze.stopped() {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_commands_in_turn(
                    &shared,
                    &mut lent.client,
                    &mut lent.decoder,
                    &mut lent.input,
                    &mut lent.output,
                )
            }));
            let Ok(ran) = ran else {
                // As a panicking connection task ends alone, so does this client; the
                // turn in it goes to the next queued batch as it drops.
                tracing::warn!(
                    "client id={} ended by a panic in its command",
                    lent.client.id
                );
                forget_client(&shared, &mut lent.client);
                return None;
            };
            if ran != Progress::Debug {
                turn_back = lent.client.script_turn.take();
            }
            progress = Some(ran);
        }
        if let Err(returned) = back.send(ReturnedBatch { lent, progress }) {
            let mut lent = returned.lent;
            forget_client(&shared, &mut lent.client);
        }
        turn_back
    })
}

/// Past the hard `client-output-buffer-limit` of its class (normal or pub/sub) a client
/// is closed at once and none of the replies pending gets written, as in Redis.
fn over_output_limit(client: &mut ClientState, output: &mut BytesMut) -> bool {
    let len = output.len() as u64;
    let within = |hard: u64| hard == 0 || len <= hard;
    if !client.output_overflowed {
        // Under both limits (nearly always): the client's class need not be looked up.
        if client.output_hard_limits.iter().all(|&hard| within(hard)) {
            return false;
        }
        if within(client.output_hard_limits[usize::from(client.in_pubsub())]) {
            return false;
        }
    }
    tracing::warn!(
        "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
        client.id,
        client.peer
    );
    output.clear();
    client.close_after_reply = true;
    true
}

/// How large a batch's replies grow before they are written early: [`FLUSH_AT`], or
/// past the client's hard output limit when it has a larger one. Redis writes a batch's
/// replies only once the batch is done, so a pipeline whose replies pass the limit
/// closes the client with none of them sent; an early write must not hide that.
fn flush_at(client: &ClientState) -> usize {
    let hard = client.output_hard_limits[usize::from(client.in_pubsub())];
    if hard == 0 {
        FLUSH_AT
    } else {
        usize::try_from(hard)
            .unwrap_or(usize::MAX)
            .saturating_add(1)
            .max(FLUSH_AT)
    }
}

fn run_batch(
    shared: &Shared,
    client: &mut ClientState,
    decoder: &mut RequestDecoder,
    input: &mut BytesMut,
    output: &mut BytesMut,
) -> Progress {
    while !client.close_after_reply {
        if client.killed.load(Ordering::Acquire) {
            client.close_after_reply = true;
            break;
        }
        // A command CLIENT PAUSE held back runs first, once the pause is over.
        let postponed = client.postponed.take();
        let next = match &postponed {
            Some(args) => Ok(Some(&args[..])),
            None => {
                client.qbuf = input.len();
                client.qbuf_capacity = input.capacity();
                decoder.set_unauthenticated(!client.authenticated && shared.acl.auth_required());
                decoder.next_command(input)
            }
        };
        match next {
            Ok(Some(args)) => {
                if shared.tracking.active() {
                    before_tracked_command(shared, client, output);
                }
                if let Some(dropped) = client.mailbox.take_dropped_shard_channels() {
                    // The cluster moved their slots away and told the client so.
                    for channel in dropped {
                        client.shard_channels.swap_remove(&channel[..]);
                    }
                    client.mailbox.set_subscribed(client.in_pubsub());
                }
                let mark = output.len();
                let mut ctx = Ctx::new(shared, client, output);
                cmd::execute(&mut ctx, args);
                if postponed.is_some() {
                    // What the postponed command waited for serves it alone.
                    client.input_waited = false;
                }
                if std::mem::take(&mut client.postpone) {
                    // Rare (a pause, a script's turn): the decoder's arguments are lent.
                    client.postponed = Some(args.to_vec());
                    return if client.script_wait.is_some() {
                        Progress::Script
                    } else if !client.input_wait.is_empty() {
                        Progress::OthersInput
                    } else {
                        Progress::Paused
                    };
                }
                let filtered = if let Some(at) = client.reply_switched_at.take() {
                    apply_reply_switch(client, output, mark, at);
                    true
                } else if client.reply != ReplyMode::On {
                    apply_reply_mode(client, output, mark);
                    true
                } else {
                    false
                };
                if filtered {
                    // The pub/sub traffic the command sent itself past the filter goes
                    // out now, in its place among the replies, as Redis writes it.
                    client.mailbox.drain_into(output);
                }
                if over_output_limit(client, output) {
                    break;
                }
                if !client.ready.is_empty() || !client.replaced.is_empty() {
                    // The waiters' changes count as this client's, as Redis counts
                    // them in the command that made the key ready.
                    let changes = crate::store::dirty::count();
                    cmd::blocking::serve_ready(shared, &mut client.ready, &mut client.replaced);
                    client.changes += crate::store::dirty::count().wrapping_sub(changes);
                }
                after_command(shared, client, output);
                if client.blocked.is_some() {
                    return Progress::Blocked;
                }
                if client.wait.is_some()
                    || client.replica_start.is_some()
                    || client.shutdown_wait.is_some()
                {
                    return Progress::Replication;
                }
                if client.debug.pending.is_some() {
                    return Progress::Debug;
                }
                if output.len() >= FLUSH_AT && output.len() >= flush_at(client) {
                    return Progress::OutputFull;
                }
            }
            Ok(None) => return Progress::Drained,
            Err(e) => {
                // Redis answers a protocol error and closes the connection.
                let text = format!("ERR {e}");
                encode::write_error(output, text.as_bytes());
                tracing::debug!(
                    "Protocol error ({e}) from client: id={} addr={}",
                    client.id,
                    client.peer
                );
                client.close_after_reply = true;
            }
        }
    }
    Progress::Drained
}

/// What follows every command when keyspace notifications or tracking are in use: the
/// queued key events are published, BCAST invalidations sent, the tracking table kept
/// under its limit. Two relaxed loads otherwise.
#[inline]
fn after_command(shared: &Shared, client: &ClientState, output: &mut BytesMut) {
    if shared.store.events().pending() {
        crate::notify::publish_pending(shared, client.id, output);
    }
    if shared.tracking.active() {
        shared.tracking.broadcast(shared);
    }
}

/// Before each command while some client tracks keys, as Redis's `processCommand`: the
/// tracking table is brought under its limit, and invalidations already addressed to
/// this client go out ahead of the command's reply.
fn before_tracked_command(shared: &Shared, client: &ClientState, output: &mut BytesMut) {
    shared.tracking.enforce_limit(shared);
    if client.tracking || client.protocol == redline_resp::Protocol::Resp3 {
        client.mailbox.drain_into(output);
    }
}

/// CLIENT REPLY OFF/SKIP: drops the reply the last command wrote (from `mark` on).
fn apply_reply_mode(client: &mut ClientState, output: &mut BytesMut, mark: usize) {
    match client.reply {
        ReplyMode::On => {}
        ReplyMode::Off => output.truncate(mark),
        // CLIENT REPLY SKIP itself answers nothing; the command after it is skipped.
        ReplyMode::SkipArmed => client.reply = ReplyMode::Skipping,
        ReplyMode::Skipping => {
            output.truncate(mark);
            client.reply = ReplyMode::On;
        }
    }
}

/// CLIENT REPLY OFF or ON ran at `at`, within the command whose output starts at `mark`
/// (inside EXEC, or the command itself): as in Redis, which decides each reply as it is
/// written, what came before the switch follows the old mode and the rest the new one.
fn apply_reply_switch(client: &ClientState, output: &mut BytesMut, mark: usize, at: usize) {
    let at = at.clamp(mark, output.len());
    match client.reply {
        ReplyMode::Off => output.truncate(at),
        // Switched on from off: the replies before the switch were not to be sent.
        _ => {
            let after = output.split_off(at);
            output.truncate(mark);
            output.unsplit(after);
        }
    }
}

impl<S> Drop for Connection<'_, S> {
    /// Releases the client's WATCHes, blocking registration and subscriptions however the connection ends (closed, killed,
    /// server shutdown), so shards do not keep versions for clients that are gone.
    fn drop(&mut self) {
        // Freed first: an evicted client's memory stops being left out of `maxmemory`
        // only once it is.
        self.input = BytesMut::new();
        self.output = BytesMut::new();
        forget_client(self.shared, &mut self.client);
    }
}

/// Releases what a client holds beyond its task: its WATCHes, blocking registration,
/// subscriptions, MONITOR and tracking state, and its place in the memory accounts.
fn forget_client(shared: &Shared, client: &mut ClientState) {
    client.mailbox.freed();
    client.mailbox.forget();
    // Nobody waits for the turn of a connection that is gone.
    client.mailbox.input_turns().end();
    cmd::tx::unwatch_all(shared, client);
    if let Some(blocked) = client.blocked.take() {
        cmd::blocking::cancel(shared, &blocked.waiter);
    }
    if client.wait.is_some() {
        // Ended in WAIT (CLIENT KILL aborts the task mid-wait): no longer blocked.
        shared.blocking.end_replica_wait(client.id);
    }
    cmd::pubsub::unsubscribe_all(shared, client);
    if client.monitor {
        shared.monitors.remove(client.id);
    }
    if client.tracking {
        shared.tracking.disable(shared, client.id);
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + 'static> Connection<'_, S> {
    /// The read → execute → write loop.
    pub async fn run(&mut self) -> io::Result<()> {
        loop {
            // Settings changed since the last batch (on any connection) apply to this
            // one's input, read just now, as Redis reads them at each use.
            self.refresh_limits();
            // A batch the script turn's holder ran for this client, not yet followed up.
            let mut ran = None;
            loop {
                // The rare waits are boxed: inline, the largest of them sized every
                // connection's task (4.8 KB; 2.8 KB so, about Redis's cost per client).
                if self.shared.freeze.stopped() {
                    Box::pin(self.shared.freeze.wait()).await;
                }
                let progress = match ran.take() {
                    Some(progress) => progress,
                    None => self.process_input(),
                };
                match progress {
                    Progress::Drained => {
                        // The turn went to a client parked on it, woken onto this
                        // worker's queue: yielding lets this worker run that script now,
                        // before this client's write, rather than leave it to another
                        // worker's wake-up (the hand-off is the script path's serial
                        // latency at one command per batch).
                        if std::mem::take(&mut self.client.handed_turn) {
                            tokio::task::yield_now().await;
                        }
                        break;
                    }
                    Progress::Script => ran = Box::pin(self.wait_for_script()).await?,
                    Progress::OthersInput => Box::pin(self.wait_for_others_input()).await,
                    Progress::Debug => Box::pin(self.debug_session()).await?,
                    Progress::OutputFull => self.write_ready().await?,
                    Progress::Blocked => {
                        self.publish_activity();
                        self.flush().await?;
                        if !Box::pin(self.wait_unblocked()).await? {
                            return Ok(());
                        }
                    }
                    Progress::Paused => {
                        self.publish_activity();
                        self.flush().await?;
                        if !Box::pin(self.wait_unpaused()).await? {
                            return Ok(());
                        }
                    }
                    Progress::Replication => {
                        self.flush().await?;
                        if let Some(start) = self.client.replica_start.take() {
                            // From here on the connection carries the stream.
                            self.client.is_replica = true;
                            self.publish_activity();
                            let shared = self.shared;
                            // What the link carries from here on is replication traffic.
                            self.flush_counters();
                            let direct = self.stream.duplicate_tcp();
                            let served = Box::pin(crate::repl::master::serve(
                                shared,
                                &mut self.stream,
                                &mut self.input,
                                start,
                                direct,
                            ))
                            .await;
                            let traffic = self.stream.take_counts();
                            let stats = &shared.stats;
                            stats
                                .net_repl_input_bytes
                                .fetch_add(traffic.read, Ordering::Relaxed);
                            stats
                                .net_repl_output_bytes
                                .fetch_add(traffic.written, Ordering::Relaxed);
                            stats.add_calls(traffic);
                            return served;
                        }
                        if !Box::pin(self.wait_replicas()).await?
                            || !Box::pin(self.wait_shutdown()).await?
                        {
                            return Ok(());
                        }
                    }
                }
            }
            if self.client.reply != ReplyMode::On {
                // Pub/sub confirmations sent past CLIENT REPLY OFF wait in the mailbox.
                self.client.mailbox.drain_into(&mut self.output);
            }
            if self.client.close_after_reply {
                // Gone for everyone before the last reply is read (QUIT): a tracking
                // redirect to this client is broken from then on, as in Redis.
                self.shared.clients.unregister(self.client.id);
            }
            // Counted before the replies go out, so a client that reads INFO right after
            // its reply (on any connection) sees these commands and their changes.
            self.flush_counters();
            if self.client.close_after_reply {
                self.flush().await?;
                return Ok(());
            }
            if self.input.is_empty() {
                // The commands consumed the buffer's front: given back now (nothing to
                // move), as the next read would, so CLIENT LIST shows the whole buffer
                // as free (`qbuf-free`), as Redis's does.
                let _ = self.input.try_reclaim(self.input.capacity() + 1);
                self.fit_query_buffer();
            }
            // Room for the next read made before the replies go out, not after: a client
            // that reads its reply and looks at CLIENT LIST sees the buffer its next read
            // uses (the first read's small one grown), as Redis's is sized at the read.
            self.reserve_input();
            self.count_memory();
            if !self.client.eviction_invalidations.is_empty() {
                Box::pin(self.await_eviction_invalidations()).await;
            }
            let sent = self.write_or_read().await?;
            if self.input.len() > self.limits.query_buffer_limit {
                tracing::warn!(
                    "Closing client that reached max query buffer length: id={} addr={}",
                    self.client.id,
                    self.client.peer
                );
                return Ok(());
            }
            match sent {
                Sent::All => {}
                // More commands arrived while the replies waited: run them, replies
                // queued behind those not yet read.
                Sent::ReadMore => continue,
                Sent::PeerClosed => return Ok(()),
            }
            if self.input.is_empty() && self.input.capacity() > KEEP_CAPACITY {
                self.input = BytesMut::with_capacity(READ_CHUNK);
            }
            // And to the wait for the next read (`timeout`), which a command of this batch
            // may have changed.
            self.refresh_limits();
            self.reserve_input();
            // Subscribers and RESP3 clients (pushes: invalidations, messages) read and
            // wait for their mailbox at once.
            if self.client.in_pubsub()
                || self.client.monitor
                || self.client.protocol == redline_resp::Protocol::Resp3
            {
                if !self.read_or_message().await? {
                    return Ok(());
                }
                continue;
            }
            let timeout = self.limits.timeout;
            let read = std::future::poll_fn(|cx| self.poll_read_or_trim(cx));
            let n = match timeout {
                None => read.await?,
                Some(idle) => match tokio::time::timeout(idle, read).await {
                    Ok(result) => result?,
                    Err(_) => return Ok(()),
                },
            };
            if n == 0 {
                return Ok(());
            }
        }
    }

    /// Reads what the client sends next (0: the peer closed); meanwhile trims the
    /// buffers when the cron asks this idle client to (see [`Self::trim_idle_buffers`]),
    /// within the same wait, so an idle `timeout` is not restarted by it.
    ///
    /// Not a `select!` over the mailbox as [`Self::read_or_message`] is: registering
    /// with its `Notify` on every wait cost about 330 instructions a request at `-P 1`
    /// (callgrind); here the wake-up is a waker registered once per connection and a
    /// flag read per poll.
    fn poll_read_or_trim(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.trim_waker.is_none() {
            self.client.mailbox.register_trim_waker(cx.waker());
            self.trim_waker = Some(cx.waker().clone());
        }
        if self.client.mailbox.take_trim() {
            self.trim_idle_buffers();
            self.count_memory();
        }
        self.poll_read_in_turn(cx)
    }

    /// Makes room in the query buffer for the next read.
    fn reserve_input(&mut self) {
        let spare = self.input.capacity() - self.input.len();
        match self.decoder.pending_bulk() {
            // A large argument is arriving: room for all of it at once, as Redis makes
            // (so it is read without copies), and counted whole from then on.
            Some(len) if len >= BIG_ARG => {
                let missing = (len + 2).saturating_sub(self.input.len());
                if spare < missing {
                    self.input.reserve(missing);
                    self.count_memory();
                }
            }
            // Nothing read yet, or an idle client's buffer given back: the read itself
            // takes a small buffer when bytes arrive, grown here on the next turn. A
            // buffer used up to its end (its bytes still held by queued commands, so
            // not reclaimed) is not at rest: streaming input read 64 bytes at a time
            // made a 100,000-command MULTI twice as slow.
            _ if self.input.capacity() == 0 && self.input_at_rest => {}
            _ if spare < READ_CHUNK => {
                let before = self.input.capacity();
                self.input.reserve(READ_CHUNK.max(self.input.len()));
                // Grown from the small first buffer (not merely moved to its front):
                // CLIENT LIST and `maxmemory-clients` see the new size at once.
                if self.input.capacity() > before + READ_CHUNK / 2 {
                    self.count_memory();
                }
            }
            _ => {}
        }
    }

    /// Waits for input, and meanwhile for the mailbox: messages and pushes for
    /// subscribers and RESP3 clients, and for everyone the cron's request to trim the
    /// buffers of an idle client. Returns false when the peer closed or stayed idle past
    /// `timeout` (no idle timeout for subscribers, as in Redis).
    async fn read_or_message(&mut self) -> io::Result<bool> {
        let mailbox = self.client.mailbox.clone();
        let idle = if self.client.in_pubsub() {
            None
        } else {
            self.limits.timeout
        };
        let expiry = idle.map(tokio::time::sleep);
        tokio::pin!(expiry);
        let _listening = mailbox.listening();
        loop {
            tokio::select! {
                biased;
                _ = mailbox.wait() => {
                    let trimmed = mailbox.take_trim();
                    if trimmed {
                        self.trim_idle_buffers();
                    }
                    let through = mailbox.delivered();
                    mailbox.drain_into(&mut self.output);
                    // Messages delivered cost no recount unless the limit is on (a
                    // subscriber's figures are otherwise refreshed after its commands).
                    if trimmed || self.shared.clients.memory.enabled() {
                        self.count_memory();
                    }
                    if !self.output.is_empty() {
                        // Input is read while a slow reader's socket is full: a
                        // turn ends there (see `poll_read_in_turn`), not after the write.
                        let sent = self.write_or_read().await?;
                        // Writing to the client counts as activity, as in Redis.
                        if let (Some(sleep), Some(idle)) = (expiry.as_mut().as_pin_mut(), idle) {
                            sleep.reset(tokio::time::Instant::now() + idle);
                        }
                        match sent {
                            Sent::All => {}
                            // The rest of the messages go out with the replies.
                            Sent::ReadMore => return Ok(true),
                            Sent::PeerClosed => return Ok(false),
                        }
                    }
                    mailbox.written_through(through);
                }
                read = std::future::poll_fn(|cx| self.poll_read_in_turn(cx)) => return Ok(read? > 0),
                _ = async {
                    match expiry.as_mut().as_pin_mut() {
                        Some(sleep) => sleep.await,
                        None => std::future::pending().await,
                    }
                } => return Ok(false),
            }
        }
    }

    /// A read of a client between batches (see [`crate::net::input_turns`]). A turn
    /// lasts from its first read until it finds its socket empty, with its task's waker
    /// registered there, wrapped so that input arriving from then on is marked ready
    /// before the task runs.
    fn poll_read_in_turn(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let turns = self.client.mailbox.input_turns();
        self.turn_reader
            .poll_read(turns, cx, &mut self.stream, &mut self.input)
    }

    /// Waits until the clients this client's evictions sent invalidations to have
    /// written them (see [`crate::maxmemory`]): kept unwritten, they would count as
    /// used memory at this client's next command and evict more keys, whose
    /// invalidations would evict more. A client busy elsewhere is not waited for, nor
    /// one whose socket stays full: 100 ms at most for each (one shared deadline let
    /// invalidations go unwritten on a loaded machine, and the test of this evicted
    /// more).
    async fn await_eviction_invalidations(&mut self) {
        for (mailbox, number) in std::mem::take(&mut self.client.eviction_invalidations) {
            let deadline = tokio::time::Instant::now() + Duration::from_millis(100);
            mailbox.written(number, deadline).await;
        }
    }

    /// Resizes a busy client's query buffer as Redis's client cron does, at most every
    /// [`QUERY_PEAK_WINDOW`] (about as often as the cron passes a client when there are
    /// few): one past 32 KB and more than twice the most the commands used since the
    /// last look (a large argument before, small commands since) is cut to that use,
    /// and at least a read's worth. Called after a batch, with the buffer empty.
    fn fit_query_buffer(&mut self) {
        let now = self.client.last_interaction;
        if now.saturating_duration_since(self.qbuf_looked) < QUERY_PEAK_WINDOW {
            return;
        }
        let capacity = self.input.capacity();
        let peak = self.client.qbuf_peak;
        if capacity > RESIZE_THRESHOLD && capacity / 2 > peak {
            self.input = BytesMut::with_capacity(peak.max(READ_CHUNK));
        }
        self.client.qbuf_peak = 0;
        self.qbuf_looked = now;
    }

    /// Gives back what an idle client's buffers hold beyond what it needs: the query
    /// buffer once idle for 2 s, the reply buffer down to
    /// [`IDLE_REPLY_BUFFER`] after DEBUG REPLYBUFFER's peak-reset time (as Redis's
    /// client cron does). The next read starts small and grows again as needed.
    fn trim_idle_buffers(&mut self) {
        let idle = self.client.last_interaction.elapsed();
        let memory = &self.shared.clients.memory;
        if self.input.is_empty() && memory.query_buffer_due(idle) {
            self.input = BytesMut::new();
            self.input_at_rest = true;
        }
        if memory.reply_buffer_due(idle)
            && self.output.is_empty()
            && self.output_allocation() > IDLE_REPLY_BUFFER
        {
            self.output = BytesMut::with_capacity(IDLE_REPLY_BUFFER);
            self.output_sent = 0;
        }
    }

    /// Waits until the blocked command is served or times out, keeping the socket read
    /// (pipelined commands wait in the input; a close ends the wait). Returns false when
    /// the connection should close.
    async fn wait_unblocked(&mut self) -> io::Result<bool> {
        let Some((waiter, deadline)) = self
            .client
            .blocked
            .as_ref()
            .map(|b| (b.waiter.clone(), b.deadline))
        else {
            return Ok(true);
        };
        let mailbox = self.client.mailbox.clone();
        let reply_at = self.output.len();
        loop {
            let expiry = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                _ = mailbox.wait() => {
                    mailbox.drain_into(&mut self.output);
                    if waiter.is_served() {
                        break;
                    }
                    self.flush().await?;
                }
                _ = expiry => {
                    if cmd::blocking::time_out(self.shared, &waiter, &mut self.output) {
                        break;
                    }
                    // Served meanwhile: the reply is in the mailbox, picked up next turn.
                }
                read = self.stream.read_buf(&mut self.input) => {
                    if read? == 0 || self.input.len() > self.limits.query_buffer_limit {
                        return Ok(false);
                    }
                    self.reserve_input();
                }
            }
        }
        self.client.blocked = None;
        // What was pipelined behind the blocked command runs now, as Redis runs it once
        // the client is served: it queues behind clients that blocked meanwhile.
        self.client.mailbox.input_turns().resumed();
        if let Some((args, started)) = self.client.blocked_since.take() {
            if let Some(spec) = self.shared.renamed.resolve(&args) {
                let usec = started.elapsed().as_micros() as u64;
                cmd::observe_duration(self.shared, &self.client, spec, &args, usec);
                // Ended by an error (its stream or group deleted, CLIENT UNBLOCK ERROR).
                if self.output.get(reply_at) == Some(&b'-') {
                    self.client.cmdstats.failed_later(spec.name);
                }
            }
        }
        // Counted before the reply goes out, so a client reading INFO next sees it.
        self.flush_counters();
        Ok(true)
    }

    /// Waits until CLIENT PAUSE ends (UNPAUSE or its deadline), keeping the socket read as
    /// [`Self::wait_unblocked`] does. Returns false when the connection should close.
    async fn wait_unpaused(&mut self) -> io::Result<bool> {
        let mailbox = self.client.mailbox.clone();
        let shared = self.shared;
        let _held = shared.pause.hold_back();
        loop {
            // Subscribe before looking, so an UNPAUSE in between is not missed.
            let mut changed = self.shared.pause.subscribe();
            let Some((_, until)) = self.shared.pause.current() else {
                return Ok(true);
            };
            tokio::select! {
                // Messages still reach a subscriber whose own command is held.
                _ = mailbox.wait() => {
                    mailbox.drain_into(&mut self.output);
                    self.flush().await?;
                }
                _ = changed.changed() => {}
                _ = tokio::time::sleep_until(until) => {}
                read = self.stream.read_buf(&mut self.input) => {
                    if read? == 0 || self.input.len() > self.limits.query_buffer_limit {
                        return Ok(false);
                    }
                    self.reserve_input();
                }
            }
        }
    }

    /// WAIT: answers how many replicas acknowledged the client's last write, once
    /// enough did or the timeout passed, keeping the socket read meanwhile. Returns false
    /// when the connection should close.
    async fn wait_replicas(&mut self) -> io::Result<bool> {
        let Some(wait) = self.client.wait else {
            return Ok(true);
        };
        // A blocked client from here on: CLIENT LIST's `b`, INFO's count, CLIENT UNBLOCK.
        let id = self.client.id;
        let timed = wait.deadline.is_some();
        let unblock = self.shared.blocking.begin_replica_wait(id, timed);
        self.publish_activity();
        let mark = self.output.len();
        let waited = self.wait_for_acks(wait, unblock).await;
        if wait.silent {
            self.output.truncate(mark);
        }
        self.shared.blocking.end_replica_wait(id);
        self.client.wait = None;
        waited
    }

    /// WAIT's loop: answers once enough replicas acknowledged, at the deadline, or when
    /// CLIENT UNBLOCK ends it; false when the peer leaves.
    async fn wait_for_acks(
        &mut self,
        wait: WaitReplicas,
        mut unblock: crate::blocking::ReplicaWaitEnd,
    ) -> io::Result<bool> {
        let journal = &self.shared.repl.journal;
        let mut acks = journal.subscribe_acks();
        loop {
            let acked = journal.acked_count(wait.offset);
            if acked >= wait.needed {
                encode::write_integer(&mut self.output, acked as i64);
                return Ok(true);
            }
            let expiry = async {
                match wait.deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = acks.changed() => {}
                _ = expiry => {
                    let acked = journal.acked_count(wait.offset);
                    encode::write_integer(&mut self.output, acked as i64);
                    return Ok(true);
                }
                Ok(with_error) = &mut unblock => {
                    if with_error {
                        encode::write_error(&mut self.output, cmd::blocking::UNBLOCKED.as_bytes());
                        self.client.cmdstats.failed_later("wait");
                    } else {
                        let acked = journal.acked_count(wait.offset);
                        encode::write_integer(&mut self.output, acked as i64);
                    }
                    return Ok(true);
                }
                read = self.stream.read_buf(&mut self.input) => {
                    if read? == 0 || self.input.len() > self.limits.query_buffer_limit {
                        return Ok(false);
                    }
                    self.reserve_input();
                }
            }
        }
    }

    /// A SHUTDOWN waiting for the replicas: answered with an error if it is cancelled;
    /// false (close) when the server exits, or the peer leaves.
    async fn wait_shutdown(&mut self) -> io::Result<bool> {
        let Some(mut cancelled) = self.client.shutdown_wait.take() else {
            return Ok(true);
        };
        loop {
            tokio::select! {
                outcome = &mut cancelled => {
                    if outcome.is_err() {
                        return Ok(false);
                    }
                    encode::write_error(&mut self.output, cmd::connection::SHUTDOWN_FAILED.as_bytes());
                    return Ok(true);
                }
                read = self.stream.read_buf(&mut self.input) => {
                    if read? == 0 || self.input.len() > self.limits.query_buffer_limit {
                        return Ok(false);
                    }
                    self.reserve_input();
                }
            }
        }
    }

    /// Runs every complete command in the input, appending replies to the output.
    fn process_input(&mut self) -> Progress {
        if !self.input.is_empty() {
            self.input_at_rest = false;
        }
        let progress = run_commands(
            self.shared,
            &mut self.client,
            &mut self.decoder,
            &mut self.input,
            &mut self.output,
        );
        self.batch_ran(progress)
    }

    /// What follows a batch run, here or by the script turn's holder.
    fn batch_ran(&mut self, progress: Progress) -> Progress {
        // A turn (see `poll_read_in_turn`) goes on until the connection finds its socket
        // empty: input that arrives before it waits on its socket again finds nobody to
        // mark it ready. (One whose commands ran with no read, after a wait, starts its
        // turn here.) A client that waits now (blocked, paused...) runs none of its
        // input until it is served, as in Redis: nothing for others to wait for.
        let turns = self.client.mailbox.input_turns();
        turns.batch_ran();
        if matches!(progress, Progress::Drained | Progress::OutputFull) {
            turns.begin();
        } else {
            turns.end();
        }
        progress
    }

    /// Waits for what the postponed command needs (see `crate::scripting::turn`): the
    /// script turn, for the next batch (which starts with that command), or the end of
    /// the running script.
    async fn wait_for_script(&mut self) -> io::Result<Option<Progress>> {
        match self.client.script_wait.take() {
            Some(ScriptWait::Turn) => return self.lend_batch().await,
            Some(ScriptWait::End) => self.shared.scripting.flags.wait_end().await,
            None => {}
        }
        Ok(None)
    }

    /// Queues this connection's batch for the script turn and waits for it to come
    /// back: run by the turn's holder (its progress returned), or handed the turn to run
    /// here (`None`: the turn is in the client now).
    async fn lend_batch(&mut self) -> io::Result<Option<Progress>> {
        let Some(shared) = self.shared.arc() else {
            return Err(io::Error::other("server state gone"));
        };
        let placeholder = ClientState::new(self.client.id, self.client.peer.clone(), false);
        let lent = LentBatch {
            client: std::mem::replace(&mut self.client, placeholder),
            decoder: std::mem::take(&mut self.decoder),
            input: std::mem::take(&mut self.input),
            output: std::mem::take(&mut self.output),
        };
        let (back, returned) = tokio::sync::oneshot::channel();
        let turn = &self.shared.scripting.turn;
        turn.queue(queued_batch(shared, lent, back));
        // The holder may have let go between this client's first try and its queueing.
        if let Some(taken) = turn.try_take() {
            self.client.handed_turn = taken.pass();
        }
        let returned = returned
            .await
            .map_err(|_| io::Error::other("client ended while waiting for the script turn"))?;
        let LentBatch {
            client,
            decoder,
            input,
            output,
        } = returned.lent;
        let handed_turn = self.client.handed_turn;
        self.client = client;
        self.client.handed_turn |= handed_turn;
        self.decoder = decoder;
        self.input = input;
        self.output = output;
        Ok(returned.progress.map(|progress| self.batch_ran(progress)))
    }

    /// Waits (within [`SETTLE_LIMIT`]) until the connections the postponed command
    /// waits for (a PUBLISH's listeners, a replica's master link) have run the input
    /// they had when it came, then lets it run.
    async fn wait_for_others_input(&mut self) {
        let deadline = tokio::time::Instant::now() + SETTLE_LIMIT;
        // Two listeners publishing to each other must not wait for each other's turn.
        let _parked = self.client.mailbox.input_turns().park();
        for (turns, due) in std::mem::take(&mut self.client.input_wait) {
            turns.settled(due, deadline).await;
        }
        self.client.input_waited = true;
    }

    /// Runs the EVAL of a Lua debugging session on a thread of its own while this task
    /// relays between it and the client (see `crate::scripting::debugger`); then the
    /// EVAL's reply goes out and the connection closes, as in Redis. A forked session
    /// (`SCRIPT DEBUG YES`) runs on a copy of the dataset and leaves the script turn to
    /// other clients at once.
    async fn debug_session(&mut self) -> io::Result<()> {
        use crate::scripting::debugger::{self, DebugMode, IoEvent};
        use crate::scripting::forked::Forked;
        let Some(args) = self.client.debug.pending.take() else {
            return Ok(());
        };
        self.flush().await?;
        let Some(shared) = self.shared.arc() else {
            return Err(io::Error::other("server state gone"));
        };
        let forked = self.client.debug.mode == DebugMode::Forked;
        if forked {
            if let Some(turn) = self.client.script_turn.take() {
                self.client.handed_turn = turn.pass();
            }
        }
        let (io, mut relay) = debugger::channel();
        let (done, result) = tokio::sync::oneshot::channel();
        let placeholder = ClientState::new(self.client.id, self.client.peer.clone(), false);
        let mut client = std::mem::replace(&mut self.client, placeholder);
        client.debug.io = Some(io);
        if !forked {
            tracing::warn!("Redis synchronous debugging eval session started");
        }
        std::thread::Builder::new()
            .name("redline-ldb".into())
            .spawn(move || {
                let mut out = BytesMut::new();
                let copy = match forked.then(|| Forked::new(&shared)).transpose() {
                    Ok(copy) => copy,
                    Err(reason) => {
                        // As Redis when its fork fails: the error, and the client goes
                        // on, without the debugger.
                        let text = format!(
                            "ERR Fork() failed: can't run EVAL in debugging mode: {reason}"
                        );
                        encode::write_error(&mut out, text.as_bytes());
                        client.debug.io = None;
                        let _ = done.send((client, out, false));
                        return;
                    }
                };
                let server = copy.as_ref().and_then(Forked::shared).unwrap_or(&shared);
                if copy.is_some() {
                    tracing::warn!("Redis forked for debugging eval");
                }
                {
                    let mut ctx = Ctx::new(server, &mut client, &mut out);
                    cmd::scripting::eval_debugged(&mut ctx, &args);
                }
                client.debug.io = None;
                after_command(server, &client, &mut out);
                if copy.is_some() {
                    tracing::warn!("Lua debugging session child exiting");
                }
                let _ = done.send((client, out, true));
                // Freed after the reply leaves: a copy of many keys takes a while.
                drop(copy);
            })?;
        // Bytes that came after the EVAL are the first debugger commands.
        let mut unread = self.input.split();
        let mut gone = false;
        let mut result = std::pin::pin!(result);
        let finished = loop {
            let event = tokio::select! {
                finished = &mut result => break finished,
                event = relay.events.recv() => event,
            };
            let Some(event) = event else {
                break result.await;
            };
            match event {
                IoEvent::Write(bytes) => {
                    if !gone {
                        gone = self.stream.write_all(&bytes).await.is_err()
                            || self.stream.flush().await.is_err();
                    }
                }
                IoEvent::NeedInput => {
                    let bytes = if !unread.is_empty() {
                        Some(unread.split().freeze())
                    } else if gone {
                        None
                    } else {
                        let mut buf = BytesMut::with_capacity(READ_CHUNK);
                        match self.stream.read_buf(&mut buf).await {
                            Ok(n) if n > 0 => Some(buf.freeze()),
                            _ => {
                                gone = true;
                                None
                            }
                        }
                    };
                    let _ = relay.input.send(bytes);
                }
            }
        };
        // What the session wrote before it ended (its `<endsession>` mark).
        while let Ok(IoEvent::Write(bytes)) = relay.events.try_recv() {
            if !gone {
                gone = self.stream.write_all(&bytes).await.is_err();
            }
        }
        let (client, out, ran) =
            finished.map_err(|_| io::Error::other("debugging session failed"))?;
        if !forked {
            tracing::warn!("Redis synchronous debugging eval session ended");
        }
        self.client = client;
        self.client.debug = Default::default();
        self.output.extend_from_slice(&out);
        if ran {
            self.client.close_after_reply = true;
        } else {
            // No session: what the client sent after the EVAL is commands again.
            unread.extend_from_slice(&self.input);
            self.input = unread;
        }
        Ok(())
    }

    /// This client's memory (see [`ClientFigures`]).
    fn figures(&self) -> ClientFigures {
        ClientFigures::of(
            &self.client,
            self.input.capacity(),
            self.input.len(),
            self.decoder.pending_args_len(),
            self.output_allocation(),
        )
    }

    /// The reply buffer's whole allocation: `capacity()` counts only from the first
    /// byte not yet written.
    fn output_allocation(&self) -> usize {
        self.output.capacity() + self.output_sent
    }

    /// Mirrors this client's state for other clients' CLIENT LIST.
    fn publish_activity(&self) {
        self.client
            .publish_activity(self.input.len(), self.figures());
    }

    /// Publishes this client's state for CLIENT LIST and records what it holds for
    /// `maxmemory-clients` (after a batch, or after messages were taken), the same
    /// figures for both; while the limit is on, closes the clients holding the most
    /// while all of them together are over it.
    fn count_memory(&self) {
        let figures = self.figures();
        let mailbox = &self.client.mailbox;
        // Recorded before it is shown: what CLIENT LIST shows, a recount already sees.
        mailbox.set_held(figures.held);
        self.client.publish_activity(self.input.len(), figures);
        if self.shared.clients.memory.enabled() {
            mailbox.recount();
            self.shared.clients.evict_over_limit();
        }
    }

    /// Writes the replies while the client reads them, and meanwhile reads what it
    /// sends: a client that pipelines many commands before reading any reply (or never
    /// reads) gets its replies buffered, as Redis buffers them (within
    /// `client-output-buffer-limit`, counted in `used_memory` and so by `maxmemory`),
    /// instead of both sides blocking on full sockets.
    async fn write_or_read(&mut self) -> io::Result<Sent> {
        if self.output.is_empty() {
            return Ok(Sent::All);
        }
        // What these replies acknowledge is on record first (see `before_replies`).
        self.before_replies().await;
        self.client.mailbox.set_unsent(self.output.len());
        let sent = std::future::poll_fn(|cx| self.poll_write_or_read(cx)).await;
        self.client.mailbox.set_unsent(self.output.len());
        // Shown at once: CLIENT LIST's `rbs` is what the client holds now, as in Redis.
        if self.output.is_empty() && self.release_large_output() {
            self.count_memory();
        }
        sent
    }

    fn poll_write_or_read(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Sent>> {
        match self.poll_write_output(cx) {
            Poll::Ready(Ok(())) => {
                // A no-op on TCP; TLS sends any record still held in its buffer.
                return Pin::new(&mut self.stream)
                    .poll_flush(cx)
                    .map_ok(|()| Sent::All);
            }
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => {}
        }
        self.reserve_input();
        // A client whose replies wait for room ends its turn here once its socket is
        // empty, rather than hold others until the replies are out.
        match self.poll_read_in_turn(cx) {
            Poll::Ready(Ok(0)) => Poll::Ready(Ok(Sent::PeerClosed)),
            Poll::Ready(Ok(_)) => Poll::Ready(Ok(Sent::ReadMore)),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Writes the output until it is empty (ready) or the socket is full (pending).
    fn poll_write_output(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.output.is_empty() {
            match Pin::new(&mut self.stream).poll_write(cx, &self.output) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                // All of it written (the usual case): the buffer stays at its front.
                Poll::Ready(Ok(n)) if n == self.output.len() && self.output_sent == 0 => {
                    self.output.clear();
                }
                Poll::Ready(Ok(n)) => {
                    self.output.advance(n);
                    self.output_sent += n;
                    if self.output_sent >= self.output.len() {
                        // What is left is no longer than what was sent: move it to the
                        // front, as BytesMut's own `reserve` would on its next growth,
                        // so the front of the allocation (and its size, counted for
                        // `maxmemory-clients`) stays known.
                        let whole = self.output.capacity() - self.output.len() + self.output_sent;
                        if self.output.try_reclaim(whole) {
                            self.output_sent = 0;
                        }
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Writes what the socket takes now, without waiting: a long batch of large replies
    /// goes out as it is made, and the rest waits for [`Self::write_or_read`].
    async fn write_ready(&mut self) -> io::Result<()> {
        self.before_replies().await;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(Err(e)) = self.poll_write_output(cx) {
                return Poll::Ready(Err(e));
            }
            // TLS: send the records made so far; the rest goes with the next write.
            let _ = Pin::new(&mut self.stream).poll_flush(cx);
            Poll::Ready(Ok(()))
        })
        .await?;
        self.client.mailbox.set_unsent(self.output.len());
        Ok(())
    }

    /// Writes everything pending in one call.
    async fn flush(&mut self) -> io::Result<()> {
        if !self.output.is_empty() {
            // What these replies acknowledge is on record first (see `before_replies`).
            self.before_replies().await;
            // Shown as `omem` while the client is slow to read it.
            self.client.mailbox.set_unsent(self.output.len());
            let written = self.stream.write_all(&self.output).await;
            self.client.mailbox.set_unsent(0);
            written?;
            // A no-op on TCP; TLS sends any record still held in its buffer.
            self.stream.flush().await?;
            self.output.clear();
            if self.release_large_output() {
                self.count_memory();
            }
        }
        Ok(())
    }

    /// What replies acknowledge is on record before they leave: a change of the
    /// cluster's configuration (nodes.conf), the AOF's bytes (on disk under `appendfsync
    /// always`), and the stream handed to the replicas' links (see
    /// [`crate::repl::journal::Journal::hand_off`]).
    async fn before_replies(&mut self) {
        self.shared.cluster.save_changes();
        crate::persist::aof::before_replies(self.shared).await;
        // What this task appended goes to the replicas from here when it can.
        crate::repl::direct::write_deferred(self.shared);
        let offset = self.client.repl_offset;
        if offset != self.replicas_handed {
            self.replicas_handed = offset;
            self.shared.repl.journal.hand_off(offset).await;
        }
    }

    /// Gives back an empty reply buffer grown past [`REPLY_CHUNK`]; whether it did.
    fn release_large_output(&mut self) -> bool {
        if self.output_allocation() <= REPLY_CHUNK {
            return false;
        }
        self.output = BytesMut::with_capacity(REPLY_CHUNK);
        self.output_sent = 0;
        true
    }

    fn refresh_limits(&mut self) {
        let generation = self.shared.config_generation.load(Ordering::Acquire);
        if generation == self.limits.generation {
            return;
        }
        let config = self.shared.config.read();
        self.limits = CachedLimits {
            generation,
            query_buffer_limit: usize::try_from(config.client_query_buffer_limit)
                .unwrap_or(usize::MAX),
            timeout: (config.timeout > 0).then(|| Duration::from_secs(config.timeout)),
        };
        self.client.output_hard_limits = [
            config.client_output_buffer_limit[0].hard,
            config.client_output_buffer_limit[2].hard,
        ];
        // Redis reads `proto-max-bulk-len` at every bulk header: a CONFIG SET applies to
        // open connections too, the one that sent it included.
        self.decoder
            .set_max_bulk_len(usize::try_from(config.proto_max_bulk_len).unwrap_or(usize::MAX));
    }

    /// Adds this connection's command count to the server's, once per batch: a shared
    /// counter bumped per command would bounce its cache line between cores.
    fn flush_counters(&mut self) {
        if !self.client.cmdstats.is_empty() {
            self.shared.cmdstats.absorb(&mut self.client.cmdstats);
        }
        if self.client.changes > 0 {
            self.shared
                .persistence
                .dirty
                .fetch_add(std::mem::take(&mut self.client.changes), Ordering::Relaxed);
        }
        if self.client.commands_since_flush > 0 {
            self.shared
                .stats
                .commands_processed
                .fetch_add(self.client.commands_since_flush, Ordering::Relaxed);
            self.client.commands_since_flush = 0;
        }
        let (hits, misses) = crate::store::lookups::take();
        if hits + misses > 0 {
            let stats = &self.shared.stats;
            stats.keyspace_hits.fetch_add(hits, Ordering::Relaxed);
            stats.keyspace_misses.fetch_add(misses, Ordering::Relaxed);
        }
        let traffic = self.stream.take_counts();
        let stats = &self.shared.stats;
        if traffic.read > 0 {
            stats
                .net_input_bytes
                .fetch_add(traffic.read, Ordering::Relaxed);
        }
        if traffic.written > 0 {
            stats
                .net_output_bytes
                .fetch_add(traffic.written, Ordering::Relaxed);
        }
        stats.add_calls(traffic);
    }
}
