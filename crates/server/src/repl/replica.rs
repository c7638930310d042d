//! The replica side: REPLICAOF host port.
//!
//! A background task connects to the master and does Redis's handshake (PING, AUTH with
//! `masteruser`/`masterauth`, REPLCONF listening-port and capa eof psync2, PSYNC with the
//! id and offset this server already has, or `? -1`). On FULLRESYNC it writes the image
//! (a `$<len>` bulk or a disk-less `$EOF:<mark>` stream) to a temporary file as it
//! arrives ([`super::synced_file`]), renames it over the dump file, then empties the
//! dataset and loads the file while every shard is held, and takes the master's id and
//! offset; with
//! `repl-diskless-load swapdb` (or `on-empty-db` and no keys) it loads the image as it
//! arrives into a dataset beside the keyspace and swaps it in (`load_streamed`). On CONTINUE
//! it goes on from where it was. It then applies the stream through a client flagged as
//! the master (the one writer a read-only replica accepts; its replies go nowhere),
//! appends the same bytes to this server's own stream (so this server's replicas and
//! backlog see exactly the master's stream and offsets) once they are applied: a
//! MULTI's bytes wait for its EXEC, and a full sync of our own replicas never falls
//! between applying and appending (see `Applier`). It ACKs every second (more often
//! after a full sync, until the stream starts: `EarlyAcks`) and on REPLCONF GETACK, and
//! reconnects with PSYNC when the link drops.

use std::cell::RefCell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use redline_resp::scan::{Scanner, Side};
use redline_resp::RequestDecoder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::synced_file::{self, SyncedFile};
use crate::cmd::blocking;
use crate::net::client::{ClientState, ReplyMode};
use crate::net::client_memory::ClientFigures;
use crate::net::connection::run_commands;
use crate::net::input_turns::{InputTurns, TurnReader};
use crate::net::outgoing::{connect_peer, tcp_of, PeerStream};
use crate::net::registry::Registration;
use crate::persist::rdb::file::{Fed, LoadError};
use crate::persist::snapshot::{self, unix_secs, Load, LoadOptions, Loaded, Staging};
use crate::persist::{dump_file, durable};
use crate::shared::Shared;
use crate::store::Held;

/// How the link to the master is doing (INFO `master_link_status`, ROLE's state).
#[derive(Debug, Default)]
pub struct LinkStatus {
    state: AtomicU8,
    /// Unix seconds of the last byte from the master.
    pub last_io: AtomicU64,
    /// The database the master's stream has selected.
    pub stream_db: AtomicUsize,
    /// Unix seconds since when the link is down (0 while up, and before it was ever up).
    pub down_since: AtomicU64,
    /// Bytes of the master's stream read but not applied yet (a CLIENT PAUSE holds
    /// them): INFO's `slave_read_repl_offset` is the applied offset plus these.
    pub unapplied: AtomicU64,
    /// The master client's id in the client table while the stream runs (0 before):
    /// CLIENT LIST shows it, and CLIENT KILL's filters reach it, as any client.
    pub client_id: AtomicU64,
    /// Drops the connection to the master (CLIENT KILL TYPE master); the link then
    /// reconnects and continues with PSYNC, as Redis's does.
    drop_link: tokio::sync::Notify,
    /// This server became a master (REPLICAOF NO ONE, CLUSTER RESET, a failover) while
    /// this link was its master's: a full sync's load still running then ends as if the
    /// promotion came after it (see [`adopt_image`]).
    promoted: AtomicBool,
    /// The full sync's transfer, while one runs.
    pub transfer: TransferProgress,
    /// The link was up when it was lost: it reconnects at once (see [`LinkLost`]).
    lost_up: AtomicBool,
}

/// A full sync's transfer, for INFO's `master_sync_*` lines (Redis's
/// `repl_transfer_size`, `repl_transfer_read` and `repl_transfer_lastio`). As in Redis,
/// only an image read to disk counts its bytes; a disk-less load's read stays 0.
#[derive(Debug, Default)]
pub struct TransferProgress {
    /// The announced size: -1 until the image is announced, 0 when a mark ends it.
    size: AtomicI64,
    read: AtomicU64,
    /// Unix seconds of the last byte of the transfer.
    last_io: AtomicU64,
}

impl TransferProgress {
    /// A full sync starts: nothing announced or read yet.
    fn begin(&self) {
        self.size.store(-1, Ordering::Relaxed);
        self.read.store(0, Ordering::Relaxed);
        self.last_io.store(unix_secs(), Ordering::Relaxed);
    }

    fn announced(&self, transfer: &Transfer) {
        let size = i64::try_from(transfer.size()).unwrap_or(i64::MAX);
        self.size.store(size, Ordering::Relaxed);
        self.last_io.store(unix_secs(), Ordering::Relaxed);
    }

    /// The image's bytes read so far.
    fn read_up_to(&self, bytes: u64) {
        if self.read.swap(bytes, Ordering::Relaxed) != bytes {
            self.last_io.store(unix_secs(), Ordering::Relaxed);
        }
    }

    /// INFO's lines while a full sync runs, Redis's figures and format.
    pub fn info(&self, text: &mut String) {
        use std::fmt::Write;
        let size = self.size.load(Ordering::Relaxed);
        let read = i64::try_from(self.read.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
        let perc = if size == 0 {
            0.0
        } else {
            read as f64 / size as f64 * 100.0
        };
        let last_io = unix_secs().saturating_sub(self.last_io.load(Ordering::Relaxed));
        let _ = write!(
            text,
            "master_sync_total_bytes:{size}\r\nmaster_sync_read_bytes:{read}\r\nmaster_sync_left_bytes:{}\r\nmaster_sync_perc:{perc:.2}\r\nmaster_sync_last_io_seconds_ago:{last_io}\r\n",
            size.saturating_sub(read),
        );
    }
}

/// The input turns of the link to our master while its stream is applied, one per read
/// and the commands applied from it (see [`crate::net::input_turns`]).
///
/// A client of this replica that reads a key just after its write to our master was
/// acknowledged finds the write here, as on a Redis replica: the master hands its
/// stream to the link before the reply goes out (see
/// [`crate::repl::journal::Journal::hand_off`]), and a client's command that reaches
/// this server after the stream waits until what the link had then is applied.
#[derive(Debug, Default)]
pub struct MasterInput {
    /// The stream is being read and applied (the turns mean something).
    streaming: AtomicBool,
    turns: Arc<InputTurns>,
}

impl MasterInput {
    /// Marks the stream as being read until the guard drops.
    fn streaming(&self) -> Streaming<'_> {
        self.streaming.store(true, Ordering::SeqCst);
        Streaming(self)
    }
}

/// The stream is read while this lives ([`MasterInput::streaming`]).
struct Streaming<'a>(&'a MasterInput);

impl Drop for Streaming<'_> {
    fn drop(&mut self) {
        self.0.streaming.store(false, Ordering::SeqCst);
        self.0.turns.end();
    }
}

/// Whether this client's command waits first for the master's stream that reached this
/// replica before it ([`MasterInput`]); the wait goes into `input_wait`.
pub fn lets_stream_run_first(ctx: &mut crate::cmd::Ctx<'_>) -> bool {
    if !ctx.shared.repl.is_replica() {
        return false;
    }
    let input = &ctx.shared.repl.master_input;
    if !input.streaming.load(Ordering::SeqCst) {
        return false;
    }
    let arrival = ctx.client.mailbox.input_turns().waits_before();
    let unsettled = input.turns.unsettled_before(arrival);
    ctx.client
        .waits_for_inputs(unsettled.map(|due| (input.turns.clone(), due)))
}

/// Link states, as ROLE names them.
const CONNECT: u8 = 0;
const CONNECTING: u8 = 1;
const SYNC: u8 = 2;
const CONNECTED: u8 = 3;
const HANDSHAKE: u8 = 4;

impl LinkStatus {
    /// ROLE's word for the state: connect, connecting, handshake, sync or connected.
    pub fn role_state(&self) -> &'static str {
        match self.state.load(Ordering::Relaxed) {
            CONNECTING => "connecting",
            HANDSHAKE => "handshake",
            SYNC => "sync",
            CONNECTED => "connected",
            _ => "connect",
        }
    }

    /// Whether the link is up and streaming.
    pub fn is_up(&self) -> bool {
        self.state.load(Ordering::Relaxed) == CONNECTED
    }

    /// Whether a full sync is being received.
    pub fn syncing(&self) -> bool {
        self.state.load(Ordering::Relaxed) == SYNC
    }

    /// Drops the connection to the master if it is up (streaming): what CLIENT KILL
    /// TYPE master does to Redis's master client. Returns whether there was one.
    pub fn drop_link(&self) -> bool {
        if !self.is_up() {
            return false;
        }
        // Wakes the session's `notified()` (created before this call): no permit is
        // stored, so a later session is not dropped by an old request.
        self.drop_link.notify_waiters();
        true
    }

    /// Marks the link's master as no longer followed because this server became a
    /// master: before its history moves on.
    pub fn promoted(&self) {
        self.promoted.store(true, Ordering::Release);
    }

    fn set(&self, state: u8) {
        let previous = self.state.swap(state, Ordering::Relaxed);
        if state == CONNECTED {
            self.down_since.store(0, Ordering::Relaxed);
            // The sync was contact, as Redis's master client starts with its last
            // interaction now. Without it the link reads as silent forever until the
            // master's first ping (up to `repl-ping-replica-period`), and a cluster
            // replica whose master dies in that window judges its data too old to take
            // over.
            self.last_io.store(unix_secs(), Ordering::Relaxed);
        } else if previous == CONNECTED {
            // Down since the link was lost; a link never up stays at 0 (INFO shows -1,
            // "down since ever", as Redis does: Sentinel reads it to pick a replica).
            self.down_since.store(unix_secs(), Ordering::Relaxed);
        }
    }
}

/// The master this server replicates.
#[derive(Debug)]
pub struct MasterLink {
    /// Its host.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// How the link is doing.
    pub status: Arc<LinkStatus>,
    task: tokio::task::JoinHandle<()>,
}

impl MasterLink {
    /// The database the master's stream has selected.
    pub fn stream_db(&self) -> usize {
        self.status.stream_db.load(Ordering::Relaxed)
    }
}

impl Drop for MasterLink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts replicating `host:port` (REPLICAOF), reconnecting until told otherwise.
pub fn replicate(shared: Arc<Shared>, host: String, port: u16) -> MasterLink {
    let status = Arc::new(LinkStatus::default());
    status.set(CONNECT);
    let task = {
        let status = status.clone();
        let host = host.clone();
        tokio::spawn(async move {
            // A link lost once it was up is tried again at once, as Redis 7 reconnects
            // when its master client is freed (the backlog may not hold the gap for
            // long); one that failed before (refused, a handshake error) at the next
            // tick of a one-second clock, as Redis's replication cron does.
            let clock = tokio::time::Instant::now();
            loop {
                // Dropping the session at one of its awaits is safe: what it applied is
                // applied and appended, so PSYNC continues from the stream's offset.
                let dropped = status.drop_link.notified();
                tokio::select! {
                    result = session(&shared, &host, port, &status) => {
                        match &result {
                            Ok(()) => tracing::info!("Connection with master lost."),
                            // A silent master: Redis's own words (`repl-timeout`).
                            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => tracing::warn!("{e}"),
                            Err(e) => tracing::warn!("Error condition on socket for SYNC: {e}"),
                        }
                        // A FAILOVER's target that cannot be reached ends the hand-off:
                        // this server becomes a master again, writes resume.
                        if result.is_err() && super::failover::in_progress(&shared) {
                            super::failover::rejected(&shared);
                        }
                    }
                    () = dropped => tracing::info!("Connection with master lost (killed)."),
                }
                let was_up = status.is_up() || status.lost_up.swap(false, Ordering::Relaxed);
                status.set(CONNECT);
                if was_up {
                    tracing::info!("Reconnecting to MASTER {host}:{port}");
                } else {
                    tokio::time::sleep_until(next_tick(clock, Duration::from_secs(1))).await;
                }
            }
        })
    };
    MasterLink {
        host,
        port,
        status,
        task,
    }
}

/// The first instant after now on a clock ticking every `period` since `clock`.
fn next_tick(clock: tokio::time::Instant, period: Duration) -> tokio::time::Instant {
    let period_ns = period.as_nanos().max(1);
    let ticks = clock.elapsed().as_nanos() / period_ns + 1;
    let offset = u64::try_from(ticks * period_ns).unwrap_or(u64::MAX);
    clock + Duration::from_nanos(offset)
}

/// The error a streamed image that could not be loaded ends the sync with (Redis's
/// wording; the cause is logged first).
fn load_failed() -> std::io::Error {
    other(
        "Failed trying to load the MASTER synchronization DB from socket, check server logs."
            .into(),
    )
}

fn other(text: String) -> std::io::Error {
    std::io::Error::other(text)
}

/// Sends one command.
async fn send(socket: &mut PeerStream, args: &[&[u8]]) -> std::io::Result<()> {
    let mut out = BytesMut::new();
    let args: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
    super::journal::write_command(&mut out, &args);
    socket.write_all(&out).await?;
    // TLS keeps what it encrypted until flushed.
    socket.flush().await
}

/// What the replica says when the master stays silent for `repl-timeout`, by stage.
const HANDSHAKE_TIMEOUT: &str = "Timeout connecting to the MASTER...";
const TRANSFER_TIMEOUT: &str = "Timeout receiving bulk data from MASTER... If the problem persists try to set the 'repl-timeout' parameter in redis.conf to a larger value.";
const STREAM_TIMEOUT: &str = "MASTER timeout: no data nor PING received...";

/// Reads what the master sent, or fails with `silent` (kind `TimedOut`) after
/// `timeout` without a byte: any byte, a keepalive newline too, restarts the wait.
async fn read_some(
    socket: &mut PeerStream,
    input: &mut BytesMut,
    timeout: Duration,
    silent: &str,
) -> std::io::Result<usize> {
    match tokio::time::timeout(timeout, socket.read_buf(input)).await {
        Ok(read) => super::read_or_closed(read),
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            silent.to_string(),
        )),
    }
}

/// Reads one line (without CRLF), skipping the bare newlines masters send as keepalives
/// while they prepare a sync.
async fn read_line(
    socket: &mut PeerStream,
    input: &mut BytesMut,
    timeout: Duration,
    silent: &str,
) -> std::io::Result<String> {
    loop {
        while input.first() == Some(&b'\n') {
            input.advance(1);
        }
        if let Some(end) = input.windows(2).position(|w| w == b"\r\n") {
            let line = String::from_utf8_lossy(&input[..end]).into_owned();
            input.advance(end + 2);
            return Ok(line);
        }
        if input.len() > 64 * 1024 {
            return Err(other("master sent an overlong line".into()));
        }
        if read_some(socket, input, timeout, silent).await? == 0 {
            return Err(other("master closed the connection".into()));
        }
    }
}

/// Sends a command and reads its one-line reply.
async fn ask(
    socket: &mut PeerStream,
    input: &mut BytesMut,
    timeout: Duration,
    args: &[&[u8]],
) -> std::io::Result<String> {
    send(socket, args).await?;
    read_line(socket, input, timeout, HANDSHAKE_TIMEOUT).await
}

/// How the master sends its image: `$<len>` then the bytes (from a file), or
/// `$EOF:<40-byte mark>` then the bytes up to the mark (disk-less).
enum Transfer {
    Sized(usize),
    Marked(Vec<u8>),
}

impl Transfer {
    /// Reads the line that announces the image.
    async fn announced(
        socket: &mut PeerStream,
        input: &mut BytesMut,
        timeout: Duration,
    ) -> std::io::Result<Transfer> {
        let header = read_line(socket, input, timeout, TRANSFER_TIMEOUT).await?;
        let Some(size) = header.strip_prefix('$') else {
            return Err(other(format!(
                "Bad protocol from MASTER, the first byte is not '$': {header}"
            )));
        };
        if let Some(mark) = size.strip_prefix("EOF:") {
            return Ok(Transfer::Marked(mark.as_bytes().to_vec()));
        }
        size.parse()
            .map(Transfer::Sized)
            .map_err(|_| other(format!("Bad bulk length from MASTER: {header}")))
    }

    /// The image's size when announced (INFO's `loading_total_bytes`), else 0.
    fn size(&self) -> usize {
        match self {
            Transfer::Sized(len) => *len,
            Transfer::Marked(_) => 0,
        }
    }
}

/// The room the link reads into: at the start, and again once a sync's image was
/// read (an empty buffer would be read 64 bytes at a time).
const READ_ROOM: usize = 16 * 1024;

/// Reads the image into the synced file as it arrives; its size.
async fn receive_image(
    socket: &mut PeerStream,
    input: &mut BytesMut,
    timeout: Duration,
    transfer: Transfer,
    file: &mut SyncedFile,
    progress: &TransferProgress,
) -> std::io::Result<u64> {
    let mut received = 0u64;
    loop {
        // The image's bytes at the start of `input` (the line that announced it may
        // have brought the first ones), whether they end it, and how many can go to
        // the file now: with a mark, the last bytes may be the mark, so they stay
        // until more arrive.
        let (of_image, done, writable) = match &transfer {
            Transfer::Sized(len) => {
                let n = input.len().min(*len - received as usize);
                (n, received as usize + n == *len, n)
            }
            Transfer::Marked(mark) => (
                input.len(),
                input.ends_with(mark),
                input.len().saturating_sub(mark.len()),
            ),
        };
        progress.read_up_to(received + of_image as u64);
        if done || writable >= synced_file::PIECE {
            file.write(input.split_to(writable).freeze()).await?;
            received += writable as u64;
        }
        if done {
            if let Transfer::Marked(mark) = &transfer {
                input.advance(mark.len());
            }
            // The stream's first bytes, if any, move to a buffer of their own.
            let mut rest = BytesMut::with_capacity(READ_ROOM.max(input.len()));
            rest.extend_from_slice(input);
            *input = rest;
            return Ok(received);
        }
        input.reserve(synced_file::PIECE);
        if read_some(socket, input, timeout, TRANSFER_TIMEOUT).await? == 0 {
            return Err(other("master closed the connection during the sync".into()));
        }
    }
}

/// One connection to the master: handshake, sync, stream.
async fn session(
    shared: &Arc<Shared>,
    host: &str,
    port: u16,
    status: &LinkStatus,
) -> std::io::Result<()> {
    // A load of a previous master's image may still run (see `load_gate`).
    drop(shared.repl.load_gate.lock().await);
    status.set(CONNECTING);
    tracing::info!("Connecting to MASTER {host}:{port}");
    let (source, tls) = {
        let config = shared.config.read();
        let source = config.param("bind-source-addr").to_string();
        (source, config.param_bool("tls-replication"))
    };
    let tls = shared.tls.client_for(tls)?;
    let timeout = super::repl_timeout(shared);
    let connecting = connect_peer(host, port, &source, tls);
    let mut socket = tokio::time::timeout(timeout, connecting)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, HANDSHAKE_TIMEOUT))??;
    status.set(HANDSHAKE);
    let mut input = BytesMut::with_capacity(READ_ROOM);
    tracing::info!("MASTER <-> REPLICA sync started");
    let (user, pass) = {
        let config = shared.config.read();
        (
            config.param("masteruser").to_string(),
            config.param("masterauth").to_string(),
        )
    };
    let pong = ask(&mut socket, &mut input, timeout, &[b"PING"]).await?;
    if pong.starts_with('-') && !pong.starts_with("-NOAUTH") && !pong.starts_with("-NOPERM") {
        return Err(other(format!("Error reply to PING from master: '{pong}'")));
    }
    if !pass.is_empty() {
        let reply = if user.is_empty() {
            ask(
                &mut socket,
                &mut input,
                timeout,
                &[b"AUTH", pass.as_bytes()],
            )
            .await?
        } else {
            ask(
                &mut socket,
                &mut input,
                timeout,
                &[b"AUTH", user.as_bytes(), pass.as_bytes()],
            )
            .await?
        };
        if reply.starts_with('-') {
            return Err(other(format!("Unable to AUTH to MASTER: {reply}")));
        }
    }
    let (our_port, our_ip) = announced_address(shared);
    let our_port = our_port.to_string();
    ask(
        &mut socket,
        &mut input,
        timeout,
        &[b"REPLCONF", b"listening-port", our_port.as_bytes()],
    )
    .await?;
    if let Some(ip) = our_ip {
        ask(
            &mut socket,
            &mut input,
            timeout,
            &[b"REPLCONF", b"ip-address", ip.as_bytes()],
        )
        .await?;
    }
    ask(
        &mut socket,
        &mut input,
        timeout,
        &[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"],
    )
    .await?;
    let journal = &shared.repl.journal;
    // Like Redis's cached master: our stream's id and offset describe our data (a master
    // turned replica, a replica moved to another master, or a link that dropped), so a
    // master that knows the id (PSYNC2: a promoted replica keeps its old master's id as
    // its second id) can continue from it instead of sending everything again. One that
    // does not answers FULLRESYNC.
    let (replid, offset) = {
        let stream = journal.stream();
        (stream.replid.clone(), (stream.offset + 1).to_string())
    };
    // A FAILOVER's hand-off asks the target to take over this history.
    let handing_off = super::failover::in_progress(shared);
    let mut psync: Vec<&[u8]> = vec![b"PSYNC", replid.as_bytes(), offset.as_bytes()];
    if handing_off {
        psync.push(b"FAILOVER");
    }
    let reply = ask(&mut socket, &mut input, timeout, &psync).await?;
    if handing_off && !reply.starts_with("+CONTINUE") {
        super::failover::rejected(shared);
        return Err(other(format!(
            "Failover target rejected the PSYNC request: {reply}"
        )));
    }
    let resumed = reply.starts_with("+CONTINUE");
    let mut words = reply.split_whitespace();
    match words.next() {
        Some("+FULLRESYNC") => {
            let (Some(id), Some(offset)) = (
                words.next(),
                words.next().and_then(|o| o.parse::<u64>().ok()),
            ) else {
                return Err(other(format!("Bad FULLRESYNC reply: {reply}")));
            };
            tracing::info!("Full resync from master: {id}:{offset}");
            status.set(SYNC);
            let progress = &status.transfer;
            progress.begin();
            // Redis opens the file before the image is announced: a replica that cannot
            // write one fails here, before it reads anything.
            let file = if disk_less_load(shared) {
                None
            } else {
                Some(SyncedFile::create()?)
            };
            let transfer = Transfer::announced(&mut socket, &mut input, timeout).await?;
            progress.announced(&transfer);
            match file {
                None => {
                    load_streamed(
                        shared,
                        &mut socket,
                        &mut input,
                        timeout,
                        transfer,
                        id,
                        offset,
                        status,
                    )
                    .await?
                }
                Some(mut file) => {
                    let len = receive_image(
                        &mut socket,
                        &mut input,
                        timeout,
                        transfer,
                        &mut file,
                        progress,
                    )
                    .await?;
                    tracing::info!("MASTER <-> REPLICA sync: received {len} bytes of payload");
                    let path = file.finish().await?;
                    // The load holds this worker for its whole length: its other tasks
                    // (a client's INFO, the listener) move to another thread first. The
                    // gate keeps a new link's PSYNC until it ends.
                    let _gate = shared.repl.load_gate.lock().await;
                    crate::cmd::off_the_runtime(|| {
                        // Redis's emptying signals the streams clients wait on.
                        let emptied = blocking::waited_streams(shared);
                        let loaded = load_synced_file(shared, &path, id, offset, status);
                        forget_kept_image(shared);
                        blocking::serve_signalled(shared, emptied);
                        loaded
                    })?;
                }
            }
            if shared.config.read().appendonly {
                // The AOF held the old dataset: it starts again from the master's, as
                // Redis restarts it after a sync (a new base, a new incremental file).
                if let Err(e) = crate::persist::aof::restart(shared) {
                    tracing::warn!(
                        "Failed enabling the AOF after successful master synchronization! Trying it again in one second: {e}"
                    );
                    shared.aof.rewrite_scheduled.store(true, Ordering::Release);
                }
            }
            if status.promoted.load(Ordering::Acquire) {
                // Promoted while the image loaded: the link is gone (see `adopt_image`).
                return Err(other("this server became a master during the sync".into()));
            }
        }
        Some("+CONTINUE") => {
            if let Some(id) = words.next() {
                let mut stream = journal.stream();
                if stream.replid != id {
                    stream.shift_replid();
                    stream.replid = id.to_string();
                    drop(stream);
                    // Our replicas must learn the new id too.
                    super::disconnect_replicas(shared);
                }
            }
            tracing::info!("Successful partial resynchronization with master.");
            if handing_off {
                super::failover::completed(shared);
            }
        }
        _ => {
            return Err(other(format!(
                "Unexpected reply to PSYNC from master: {reply}"
            )))
        }
    }
    status.set(CONNECTED);
    tracing::info!("MASTER <-> REPLICA sync: Finished with success");
    stream(shared, &mut socket, input, status, resumed).await
}

/// The port and address this replica tells its master (Redis's
/// `replicationSendListeningPort` and `replica-announce-ip`): `replica-announce-port`,
/// else the TLS port when it replicates over TLS, else the plain port.
fn announced_address(shared: &Shared) -> (u16, Option<String>) {
    let config = shared.config.read();
    let announced = u16::try_from(config.param_int("replica-announce-port")).unwrap_or(0);
    let tls_port = shared.tls.port();
    let port = if announced != 0 {
        announced
    } else if config.param_bool("tls-replication") && tls_port != 0 {
        tls_port
    } else {
        shared.port()
    };
    let ip = Some(config.param("replica-announce-ip"))
        .filter(|ip| !ip.is_empty())
        .map(str::to_string);
    (port, ip)
}

/// With `rdb-del-sync-files yes` and no persistence configured, the file the sync
/// wrote goes once it was loaded (or failed to), as Redis deletes it.
fn forget_kept_image(shared: &Shared) {
    if shared.config.read().param_bool("rdb-del-sync-files")
        && snapshot::all_persistence_disabled(shared)
    {
        tracing::info!(
            "Removing the RDB file obtained from the master. This replica has persistence disabled"
        );
        let _ = std::fs::remove_file(snapshot::dump_path(shared));
    }
}

/// Makes the synced file at `temp` the dump file, then replaces the dataset with it
/// while every shard is held, as Redis's replica renames before it loads: restarted
/// later, even after a crash before any save of its own, the replica loads that file
/// and continues with PSYNC from the master's offset it records, and a BGSAVE still
/// under way will not rename its older image over it. A file larger than
/// `loading-process-events-interval-bytes` is loaded while clients get -LOADING (INFO
/// `loading:1`), as Redis answers them between those steps of its load; a smaller one
/// is loaded before Redis would answer anyone, so commands wait for it here too.
fn load_synced_file(
    shared: &Shared,
    temp: &Path,
    replid: &str,
    offset: u64,
    status: &LinkStatus,
) -> std::io::Result<()> {
    let dump = snapshot::dump_path(shared);
    if let Err(e) = snapshot::replace_dump(shared, |path| durable::rename(temp, path)) {
        let _ = std::fs::remove_file(temp);
        return Err(other(format!(
            "Failed trying to rename the temp DB into {} in MASTER <-> REPLICA synchronization: {e}",
            dump.display()
        )));
    }
    let unloadable = |e: &dyn std::fmt::Display| {
        other(format!(
            "Failed trying to load the MASTER synchronization DB from disk: {e}"
        ))
    };
    let file = std::fs::File::open(&dump).map_err(|e| unloadable(&e))?;
    let length = file.metadata().map_err(|e| unloadable(&e))?.len();
    let loading = &shared.persistence.loading;
    let step = shared
        .config
        .read()
        .param_int("loading-process-events-interval-bytes");
    let _ends = (i64::try_from(length).unwrap_or(i64::MAX) > step).then(|| {
        loading.begin(length);
        LoadingEnds(loading)
    });
    let held = RefCell::new(Held::all(&shared.store));
    let mut map = held.borrow_mut();
    tracing::info!("MASTER <-> REPLICA sync: Flushing old data");
    snapshot::clear(shared, &mut *map);
    if let Ok(mut engine) = shared.scripting.engine() {
        engine.libraries.clear();
    }
    tracing::info!("MASTER <-> REPLICA sync: Loading DB in memory");
    let options = snapshot::LoadOptions {
        keep_expired: true,
        ..snapshot::LoadOptions::default()
    };
    let loaded = dump_file::load_file(shared, &dump, file, length, options, Some(&mut *map))
        .map_err(|e| unloadable(&e))?;
    adopt_image(shared, &loaded, replid, offset, status);
    Ok(())
}

/// The image is in: the master's history (id, offset, selected database) is ours.
///
/// A load off the runtime runs on after its link task is aborted. If this server was
/// promoted meanwhile (Redis answers no command during such a load, so there the
/// promotion comes after it), the history goes on from the master's under a new id,
/// as if promoted now: no write has reached the held shards since. Checked under the
/// stream's lock, which the promotion takes after marking the link.
fn adopt_image(shared: &Shared, loaded: &Loaded, replid: &str, offset: u64, status: &LinkStatus) {
    status
        .stream_db
        .store(loaded.stream_db.unwrap_or(0), Ordering::Relaxed);
    let backlog_size = super::master::backlog_size(shared);
    {
        let mut stream = shared.repl.journal.stream();
        stream.adopt(replid, offset, backlog_size);
        if status.promoted.load(Ordering::Acquire) {
            stream.shift_replid();
        }
    }
    // Our own replicas hold the history this image replaced: they must sync again.
    super::disconnect_replicas(shared);
}

/// Whether the image is loaded as it arrives (`repl-diskless-load swapdb`, or
/// `on-empty-db` when there are no keys), rather than read whole first (`disabled`,
/// where Redis writes it to disk).
fn disk_less_load(shared: &Shared) -> bool {
    match shared.config.read().param("repl-diskless-load") {
        "swapdb" => true,
        "on-empty-db" => shared.store.dbs().iter().all(|db| db.is_empty()),
        _ => false,
    }
}

/// Bytes read between two attempts to load more of a streamed image, at least: an
/// item cut short is read again from its start, so the bytes kept must grow by as
/// much again (or this) before the next attempt, which keeps a large item's reading
/// linear.
const FEED_STEP: usize = 64 * 1024;

/// A streamed image's bytes not loaded yet are loaded when the master sends nothing
/// more for this long, however few.
const PAUSE: Duration = Duration::from_millis(10);

/// A streamed load's state, moved to a blocking thread for each piece.
struct StreamedLoad {
    load: Load,
    staging: Staging,
    /// Bytes read and not loaded yet (the start of an item cut short).
    pending: BytesMut,
}

/// Ends the load INFO shows, however the sync ends.
struct LoadingEnds<'a>(&'a crate::persist::loading::Loading);

impl Drop for LoadingEnds<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Loads the image as it arrives into a dataset beside the keyspace, then swaps it in,
/// as Redis's disk-less load (`swapdb`) does; the old dataset is discarded on a thread
/// of its own. Whatever stops it on the way (the link dropped, a bad image), the old
/// dataset stays. When the master sends a newer image of the history this server has
/// (same replication id), clients keep reading the old dataset meanwhile (INFO
/// `async_loading`); else they get `-LOADING` (INFO `loading`). The reading waits for
/// the loading, so a slow replica slows the master's transfer, not its own memory.
#[allow(clippy::too_many_arguments)]
async fn load_streamed(
    shared: &Arc<Shared>,
    socket: &mut PeerStream,
    input: &mut BytesMut,
    timeout: Duration,
    transfer: Transfer,
    replid: &str,
    offset: u64,
    status: &LinkStatus,
) -> std::io::Result<()> {
    // `on-empty-db` loads into the empty dataset as a load from a file would.
    let swapdb = shared.config.read().param("repl-diskless-load") == "swapdb";
    let same_history = swapdb && shared.repl.journal.stream().replid == replid;
    match &transfer {
        Transfer::Sized(len) => {
            tracing::info!("MASTER <-> REPLICA sync: receiving {len} bytes from master to parser")
        }
        Transfer::Marked(_) => tracing::info!(
            "MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to parser"
        ),
    }
    tracing::info!("MASTER <-> REPLICA sync: Loading DB in memory");
    let loading = &shared.persistence.loading;
    let size = transfer.size() as u64;
    if same_history {
        loading.begin_async(size);
    } else {
        loading.begin(size);
    }
    let _ends = LoadingEnds(loading);
    let options = LoadOptions {
        keep_expired: true,
        interruptible: true,
        ..LoadOptions::default()
    };
    let mut job = Box::new(StreamedLoad {
        load: Load::new(shared, options),
        staging: Staging::new(&shared.store),
        pending: BytesMut::new(),
    });
    let mut image_left = match transfer {
        Transfer::Sized(len) => Some(len),
        Transfer::Marked(_) => None,
    };
    // Loaded again once the bytes kept have grown enough, or when the master pauses
    // (the end of a marked image is not known before it is read).
    let (mut feed_at, mut kept, mut paused) = (0, 0, false);
    loop {
        let take = image_left.map_or(input.len(), |left| left.min(input.len()));
        // Without a copy when nothing is kept (the usual case between items).
        job.pending.unsplit(input.split_to(take));
        if let Some(left) = &mut image_left {
            *left -= take;
        }
        let last = image_left == Some(0);
        if job.pending.len() >= feed_at || last || paused {
            let fed;
            (job, fed) = feed_streamed(shared, job, last).await?;
            match fed {
                Ok(Fed::Done(read)) => {
                    job.pending.advance(read);
                    break;
                }
                Ok(Fed::More(read)) => {
                    job.pending.advance(read);
                    kept = job.pending.len();
                    feed_at = kept + kept.max(FEED_STEP);
                }
                Err(e) => {
                    tracing::warn!("{e}");
                    return Err(load_failed());
                }
            }
        }
        let reading = read_some(socket, input, timeout, TRANSFER_TIMEOUT);
        let read = if job.pending.len() > kept {
            tokio::time::timeout(PAUSE, reading).await.ok()
        } else {
            Some(reading.await)
        };
        paused = read.is_none();
        if read.transpose()? == Some(0) {
            tracing::warn!(
                "Internal error in RDB reading offset {} -> Unexpected EOF reading RDB file. Failure loading rdb format from socket, assuming connection error, resuming operation.",
                job.load.read()
            );
            return Err(load_failed());
        }
    }
    // What follows the image: the rest of a sized one is skipped (Redis loads what it
    // announced), a marked one must end with its mark; then the stream.
    let mut rest = std::mem::take(&mut job.pending);
    match &transfer {
        Transfer::Sized(_) => {
            // Announced bytes past the image's end are not the stream.
            rest.clear();
            let mut left = image_left.unwrap_or(0);
            while left > 0 {
                if input.is_empty()
                    && read_some(socket, input, timeout, TRANSFER_TIMEOUT).await? == 0
                {
                    return Err(other("master closed the connection during the sync".into()));
                }
                let skip = left.min(input.len());
                input.advance(skip);
                left -= skip;
            }
        }
        Transfer::Marked(mark) => {
            rest.extend_from_slice(input);
            input.clear();
            while rest.len() < mark.len() {
                if read_some(socket, &mut rest, timeout, TRANSFER_TIMEOUT).await? == 0 {
                    return Err(other("master closed the connection during the sync".into()));
                }
            }
            if !rest.starts_with(mark) {
                tracing::warn!("Replication stream EOF marker is broken");
                return Err(other("Replication stream EOF marker is broken".into()));
            }
            rest.advance(mark.len());
        }
    }
    rest.extend_from_slice(input);
    *input = rest;
    let StreamedLoad {
        load, mut staging, ..
    } = *job;
    let (loaded, libraries) = load.finish();
    let waited = blocking::waited_streams(shared);
    {
        let mut held = Held::all(&shared.store);
        let mut engine = shared.scripting.engine().map_err(other)?;
        // The image's libraries replace the old ones whole, or not at all.
        let old = std::mem::take(&mut engine.libraries);
        if let Err(e) = engine.load_libraries(&libraries, false, &shared.scripting.flags) {
            engine.libraries = old;
            tracing::warn!("{e}");
            return Err(load_failed());
        }
        tracing::info!("MASTER <-> REPLICA sync: Swapping active DB with loaded DB");
        staging.swap_with(&mut held);
        // Tracking clients drop every key, as Redis's swap of a loaded dataset tells
        // them, before any client reads the new one.
        shared.tracking.invalidate_all(shared);
    }
    tracing::info!("MASTER <-> REPLICA sync: Discarding old DB in background");
    let _ = std::thread::Builder::new()
        .name("redline-free-old-db".into())
        .spawn(move || drop(staging));
    adopt_image(shared, &loaded, replid, offset, status);
    let signalled = if swapdb {
        blocking::signals_of_swap(shared, waited)
    } else {
        waited
    };
    blocking::serve_signalled(shared, signalled);
    Ok(())
}

/// Loads what a streamed load has read, on a blocking thread (the load sleeps for
/// `key-load-delay` and takes the shards of nothing but its own staging map).
async fn feed_streamed(
    shared: &Arc<Shared>,
    mut job: Box<StreamedLoad>,
    last: bool,
) -> std::io::Result<(Box<StreamedLoad>, Result<Fed, LoadError>)> {
    let shared = shared.clone();
    tokio::task::spawn_blocking(move || {
        let StreamedLoad {
            load,
            staging,
            pending,
        } = &mut *job;
        let fed = load.feed(&shared, pending, last, Some(staging));
        (job, fed)
    })
    .await
    .map_err(|e| other(format!("the load stopped: {e}")))
}

/// Applies the master's stream until the link drops.
async fn stream(
    shared: &Arc<Shared>,
    socket: &mut PeerStream,
    mut input: BytesMut,
    status: &LinkStatus,
    resumed: bool,
) -> std::io::Result<()> {
    let journal = &shared.repl.journal;
    let peer = tcp_of(socket).peer_addr()?;
    // Listed as a client (flags M), as Redis lists its master client.
    let previous = status.client_id.load(Ordering::Relaxed);
    let id = shared.clients.register_master(
        peer,
        tcp_of(socket).local_addr()?,
        std::os::fd::AsRawFd::as_raw_fd(tcp_of(socket)),
        (resumed && previous != 0).then_some(previous),
    );
    let _registration = Registration {
        clients: &shared.clients,
        id,
    };
    status.client_id.store(id, Ordering::Relaxed);
    let mut client = ClientState::new(id, peer, true);
    client.activity_slot = shared.clients.activity(id);
    client.is_master = true;
    client.reply = ReplyMode::Off;
    client.db = status.stream_db.load(Ordering::Relaxed);
    shared.clients.describe(id, None, client.db);
    // What CLIENT LIST shows of it: its last command, its query buffer.
    let publish = |client: &ClientState, input: &BytesMut| {
        let figures = ClientFigures::of(client, input.capacity(), input.len(), 0, 0);
        client.publish_activity(input.len(), figures);
    };
    publish(&client, &input);
    let mut applier = Applier {
        decoder: RequestDecoder::default(),
        scanner: Scanner::new(Side::Request),
        output: BytesMut::new(),
        held_back: BytesMut::new(),
        big_bulk: false,
    };
    let mut ack = tokio::time::interval(Duration::from_secs(1));
    let mut early_acks = (!resumed).then(EarlyAcks::new);
    let mut pause_changes = shared.pause.subscribe();
    let mut last_read = tokio::time::Instant::now();
    // A master that died without closing (a partition, a frozen host) is noticed after
    // `repl-timeout` without a byte; its PINGs keep a quiet link alive.
    let mut silence = super::silence::Silence::new(shared, last_read);
    let master_input = &shared.repl.master_input;
    let _streaming = master_input.streaming();
    // Dropped before `_streaming` (declared after it): the link reads as down before
    // the turn that found it closed ends, so a client's command that came after the
    // master closed it (INFO, ROLE) sees it down, as Redis, whose one thread handles
    // the close first, answers.
    let _lost = LinkLost(status);
    let mut reader = TurnReader::default();
    loop {
        // As in Redis, a CLIENT PAUSE (WRITE or ALL) holds the master's commands too:
        // they are read (and counted as read) but applied once the pause ends.
        let paused_until = shared.pause.current().map(|(_, until)| until);
        if !input.is_empty() && paused_until.is_none() {
            let db = client.db;
            applier.apply(shared, &mut client, &mut input, &status.stream_db);
            if client.db != db {
                shared.clients.describe(id, None, client.db);
            }
            publish(&client, &input);
            if input.is_empty() && std::mem::take(&mut applier.big_bulk) {
                // The view left behind still owns the large bulk's buffer once its
                // value is gone: without this, reads would reuse it and keep it for
                // good (Redis trims its master client's query buffer the same way).
                input = BytesMut::new();
            }
            // Our master's commands count in INFO commandstats and stats, as in Redis.
            if !client.cmdstats.is_empty() {
                shared.cmdstats.absorb(&mut client.cmdstats);
            }
            let commands = std::mem::take(&mut client.commands_since_flush);
            shared
                .stats
                .commands_processed
                .fetch_add(commands, Ordering::Relaxed);
            if std::mem::take(&mut client.ack_requested) {
                send_ack(socket, journal.offset()).await?;
            }
        }
        // What was read has run (or waits for a pause to end): clients go on.
        master_input.turns.end();
        status
            .unapplied
            .store(input.len() as u64, Ordering::Relaxed);
        let pause_end = paused_until.map_or_else(tokio::time::Instant::now, Into::into);
        applier.make_room(&mut input);
        tokio::select! {
            read = std::future::poll_fn(|cx| {
                reader.poll_read(&master_input.turns, cx, socket, &mut input)
            }) => {
                let read = super::read_or_closed(read)?;
                if read == 0 {
                    return Ok(());
                }
                shared
                    .stats
                    .net_repl_input_bytes
                    .fetch_add(read as u64, Ordering::Relaxed);
                last_read = tokio::time::Instant::now();
                early_acks = None;
                client.last_interaction = last_read.into_std();
                status.last_io.store(unix_secs(), Ordering::Relaxed);
            }
            _ = ack.tick() => send_ack(socket, journal.offset()).await?,
            _ = EarlyAcks::due(&early_acks) => {
                send_ack(socket, journal.offset()).await?;
                early_acks = early_acks.and_then(EarlyAcks::next);
            }
            () = silence.passed(shared, last_read) => {
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, STREAM_TIMEOUT));
            }
            _ = pause_changes.changed(), if paused_until.is_some() => {}
            _ = tokio::time::sleep_until(pause_end), if paused_until.is_some() => {}
        }
    }
}

/// Marks a link that was up as lost when dropped (see [`stream`]).
struct LinkLost<'a>(&'a LinkStatus);

impl Drop for LinkLost<'_> {
    fn drop(&mut self) {
        self.0.lost_up.store(true, Ordering::Relaxed);
        self.0.set(CONNECT);
    }
}

/// Applies our master's stream and passes it on, byte for byte, to our own stream (our
/// replicas, our backlog), as Redis's `replicationFeedStreamFromMasterStream` does.
struct Applier {
    decoder: RequestDecoder,
    scanner: Scanner,
    output: BytesMut,
    /// Bytes run inside a MULTI our master has not closed yet: they reach our stream
    /// with its EXEC, as one piece, since the transaction is not applied before.
    held_back: BytesMut,
    /// The read buffer was sized for a large bulk (see [`Applier::make_room`]).
    big_bulk: bool,
}

impl Applier {
    /// A large bulk arriving gets room for all of it at once, as a client's query buffer
    /// does: the value then lives in a buffer of its own size. Grown by doubling
    /// instead, a 32 MB value would keep up to 64 MB alive (it is stored without a copy).
    fn make_room(&mut self, input: &mut BytesMut) {
        if let Some(end) = self.scanner.bulk_end() {
            let missing = end.saturating_sub(input.len());
            if missing >= crate::net::connection::BIG_ARG
                && input.capacity() - input.len() < missing
            {
                input.reserve(missing);
                self.big_bulk = true;
            }
        }
    }

    /// Runs every whole command in `input`, one at a time, and appends to our stream
    /// what has been applied. Inside the journal's gate, which a full sync of our own
    /// replica holds shut while it takes its image and offset, so a command is in the
    /// image or in the stream after it, never in both (nor, inside a MULTI, queued but
    /// counted in the offset). The database the stream has selected is recorded in
    /// `stream_db` inside the gate too: a dump of ours saves it with the offset.
    fn apply(
        &mut self,
        shared: &Shared,
        client: &mut ClientState,
        input: &mut BytesMut,
        stream_db: &AtomicUsize,
    ) {
        let journal = &shared.repl.journal;
        let _gate = journal.enter();
        // A copy of each whole command run, taken before the decoder consumes it (its
        // values are stored without a copy). Only whole commands are copied: a large
        // bulk still arriving is not copied on every read, nor is room made for it.
        let mut ran = BytesMut::new();
        // `ran[..applied]` is applied outside any MULTI.
        let mut applied = 0;
        crate::store::as_master(|| loop {
            let mut one = match self.scanner.next(input) {
                Ok(Some(len)) => input.split_to(len),
                Ok(None) => break,
                Err(_) => {
                    // What the scanner refuses, the decoder reports as Redis does.
                    self.scanner.reset();
                    std::mem::take(input)
                }
            };
            if ran.capacity() == 0 {
                // Room for the batch's commands at once, as far as they are small.
                ran.reserve(one.len() + input.len().min(crate::net::connection::BIG_ARG));
            }
            ran.extend_from_slice(&one);
            run_commands(
                shared,
                client,
                &mut self.decoder,
                &mut one,
                &mut self.output,
            );
            // Left by the decoder (only after a refused frame): not run, and the next
            // read goes on from it.
            ran.truncate(ran.len() - one.len());
            if client.multi.is_none() {
                applied = ran.len();
            }
            if !one.is_empty() {
                one.unsplit(std::mem::take(input));
                *input = one;
                break;
            }
        });
        self.output.clear();
        if applied > 0 && !self.held_back.is_empty() {
            journal.append_raw(self.held_back.split().freeze());
        }
        self.held_back.extend_from_slice(&ran[applied..]);
        ran.truncate(applied);
        if applied > 0 {
            // Handed over whole: the journal frees the copy before its new offset shows.
            journal.append_raw(ran.freeze());
            // Into the AOF once per batch, as Redis writes it once per event-loop turn.
            crate::persist::aof::write_pending(shared);
            // And to this server's own replicas, from here when it can.
            super::direct::write_deferred(shared);
        }
        stream_db.store(client.db, Ordering::Relaxed);
    }
}

/// ACKs sent after a full sync until the master's first byte comes, closer together
/// than the one a second. A master that sent its image disk-less starts the stream on
/// an ACK that finds its image's child gone (Redis's `repl_start_cmd_stream_on_ack`);
/// the first ACK, sent as the stream starts, can come before the child has exited, and
/// the master would then hold the stream, and every write, until the next ACK a second
/// later, while the replica reports its link up.
struct EarlyAcks {
    at: tokio::time::Instant,
    gap: Duration,
}

impl EarlyAcks {
    const FIRST_GAP: Duration = Duration::from_millis(5);
    /// Past this gap, the ACK a second takes over.
    const LAST_GAP: Duration = Duration::from_millis(500);

    fn new() -> Self {
        EarlyAcks {
            at: tokio::time::Instant::now() + Self::FIRST_GAP,
            gap: Self::FIRST_GAP,
        }
    }

    /// When the next one is due; never while there is none.
    async fn due(acks: &Option<Self>) {
        match acks {
            Some(acks) => tokio::time::sleep_until(acks.at).await,
            None => std::future::pending().await,
        }
    }

    /// The one after, twice as far (none past [`Self::LAST_GAP`]).
    fn next(self) -> Option<Self> {
        let gap = self.gap * 2;
        (gap <= Self::LAST_GAP).then(|| EarlyAcks {
            at: self.at + gap,
            gap,
        })
    }
}

async fn send_ack(socket: &mut PeerStream, offset: u64) -> std::io::Result<()> {
    let offset = offset.to_string();
    send(socket, &[b"REPLCONF", b"ACK", offset.as_bytes()]).await
}
