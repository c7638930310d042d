//! The master side: SYNC and PSYNC turn a connection into a replica link.
//!
//! PSYNC with this server's id (or the previous one, after a promotion) and an offset
//! still in the backlog continues without an image. A full sync first gets an image
//! taken at one offset, the replica attached to the stream there, so that it receives
//! every byte of the stream after it: with `repl-diskless-sync yes` (the default) a
//! replica that announced `capa eof` shares an image streamed as it is cut
//! ([`super::disk_less`]); otherwise (and for SYNC and filtered images) the image is a
//! BGSAVE into the dump file, shared by the replicas that ask while it runs
//! ([`super::disk_sync`]).
//!
//! The link then carries the stream to the replica and reads its `REPLCONF ACK`s, which
//! WAIT and INFO replication use.

use super::journal::ReplicaIp;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use redline_resp::command::CommandFlags;
use redline_resp::RequestDecoder;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::journal::{LinkState, ReplicaLink};
use crate::cmd::args::is;
use crate::cmd::Ctx;
use crate::shared::Shared;
use crate::store::Held;

/// A connection that became a replica link, handed to the connection loop.
#[derive(Debug)]
pub struct ReplicaStart {
    /// Where its sync stands.
    pub begin: Begin,
    /// Started with PSYNC, so it acknowledges every second (a SYNC client, such as
    /// `redis-cli --replica`, never does and is not timed out).
    pub acks: bool,
    /// Counts it as a replica from its sync request until its link ends, waiting for
    /// its image included, so the backlog is not freed under it.
    pub present: super::journal::Present,
}

/// Where a replica link's sync stands when its connection hands it over.
#[derive(Debug)]
pub enum Begin {
    /// Attached to the stream: a continued PSYNC.
    Continued(Arc<ReplicaLink>),
    /// Waiting for a disk-less image it shares with the replicas that ask meanwhile.
    Waiting(super::disk_less::Waiting),
    /// A disk-based full sync, still to join or start its BGSAVE.
    Disk(super::disk_sync::Request),
}

/// The address a replica is known by: what it announced (`REPLCONF ip-address`), else
/// its connection's IP; and the port it listens on (`REPLCONF listening-port`, 0 when
/// not told).
pub fn replica_address(ctx: &Ctx<'_>) -> (ReplicaIp, u16) {
    let ip = match &ctx.client.repl_ip_address {
        Some(ip) => ip.clone(),
        // A replica on the Unix socket is this host.
        None => ctx
            .client
            .peer
            .ip()
            .map_or_else(|| ReplicaIp::from("127.0.0.1"), |ip| ip.to_string().into()),
    };
    (ip, ctx.client.repl_listening_port)
}

/// SYNC (`psync` None) or PSYNC replid offset: makes the connection a replica link. A
/// continued PSYNC is answered here (`+CONTINUE`); a full sync's answer and image come
/// from the link's task once its image has its instant ([`serve`]).
pub fn start(ctx: &mut Ctx<'_>, psync: Option<(&[u8], &[u8])>) {
    let shared = ctx.shared;
    let journal = &shared.repl.journal;
    // Recording starts now (waiting for writes in flight), so nothing after the image
    // is missed.
    journal.activate();
    let (ip, port) = replica_address(ctx);
    let backlog_size = backlog_size(shared);
    let present = journal.stream().present();
    if let Some((replid, offset)) = psync {
        let requested = std::str::from_utf8(offset)
            .ok()
            .and_then(|o| o.parse::<u64>().ok())
            .filter(|&o| o > 0);
        let replid = String::from_utf8_lossy(replid);
        let mut stream = journal.stream();
        let continued = match requested {
            Some(o) => stream.continue_from(&replid, o - 1),
            None => Err(String::new()),
        };
        if let Err(why) = &continued {
            if replid != "?" && !why.is_empty() {
                tracing::info!("{why}");
            }
        }
        if let (Ok(behind), Some(from)) = (continued, requested) {
            // The link sends the missing part from the replication buffer.
            let link = stream.attach(
                ctx.client.id,
                ip.clone(),
                port,
                backlog_size,
                Some(from - 1),
            );
            let reply = format!("+CONTINUE {}\r\n", stream.replid);
            link.set_state(LinkState::Online);
            // Clients' replies wait for it from here on (see `Journal::hand_off`).
            stream.refresh_handed();
            drop(stream);
            ctx.out.extend_from_slice(reply.as_bytes());
            tracing::info!(
                "Partial resynchronization request from {ip}:{port} accepted. Sending {behind} bytes of backlog."
            );
            ctx.client.replica_start = Some(ReplicaStart {
                begin: Begin::Continued(link),
                acks: true,
                present,
            });
            shared
                .repl
                .syncs
                .partial_ok
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        if replid != "?" {
            shared
                .repl
                .syncs
                .partial_err
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    shared
        .repl
        .syncs
        .full
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    tracing::info!("Replica {ip}:{port} asks for synchronization");
    // A full sync starts the backlog now, as Redis's `syncCommand`: writes made while
    // the replica waits for its image move the offset. A backlog made from scratch
    // starts a new history (no past one can be continued), as in Redis.
    {
        let mut stream = journal.stream();
        if stream.backlog().is_none() {
            stream.change_replid();
            stream.ensure_backlog(backlog_size);
            tracing::info!(
                "Replication backlog created, my new replication IDs are '{}' and '{}'",
                stream.replid,
                stream.replid2
            );
        }
    }
    let disk_less = shared.config.read().param_bool("repl-diskless-sync");
    if disk_less && psync.is_some() && ctx.client.repl_capa_eof && ctx.client.rdb_filter.is_none() {
        tracing::info!("Full resync requested by replica {ip}:{port}");
        if shared.config.read().param_int("repl-diskless-sync-delay") > 0 {
            tracing::info!("Delay next BGSAVE for diskless SYNC");
        }
        let waiting = shared.repl.disk_less.join(ctx.client.id, ip, port);
        ctx.client.replica_start = Some(ReplicaStart {
            begin: Begin::Waiting(waiting),
            acks: true,
            present,
        });
        return;
    }
    ctx.client.replica_start = Some(ReplicaStart {
        begin: Begin::Disk(super::disk_sync::Request {
            id: ctx.client.id,
            ip,
            port,
            psync: psync.is_some(),
            filter: ctx.client.rdb_filter,
        }),
        acks: psync.is_some(),
        present,
    });
}

/// A full sync's image's instant: writes stopped, every shard held, and the replicas
/// attached to the stream at its offset. Dropped, clients go on.
pub(super) struct SyncInstant<'a> {
    /// Every shard: begin the image's cut (or serialise it) with these.
    pub held: Held<'a>,
    /// The history's id and the image's offset.
    pub replid: String,
    pub offset: u64,
    /// The replicas, attached where the image ends.
    pub links: Vec<Arc<ReplicaLink>>,
    // Released after `held`: fields drop in order.
    _writes: Vec<parking_lot::RwLockWriteGuard<'a, ()>>,
}

impl<'a> SyncInstant<'a> {
    /// Takes the instant for `replicas` (id, address, listening port).
    pub fn take(shared: &'a Shared, replicas: &[(u64, ReplicaIp, u16)]) -> SyncInstant<'a> {
        let journal = &shared.repl.journal;
        // Our own master's stream is applied, then appended, a batch at a time inside
        // the gate (see `replica::Applier`): shutting the gate first means the image
        // holds a batch only if the offset counts it, so no command reaches a replica
        // twice.
        let writes = journal.hold_writes();
        let held = Held::all(&shared.store);
        // The offset and the replicas' first stream byte are taken under one lock of the
        // stream: with every shard held no data change can come between them, but a
        // PING, a REPLCONF GETACK or a proxied byte of our own master could, and would
        // then be neither counted in the offset nor sent, leaving a replica's offset
        // behind ours for good. What is appended while the image is taken reaches the
        // replicas after it.
        let backlog_size = backlog_size(shared);
        let mut stream = journal.stream();
        let (replid, offset) = (stream.replid.clone(), stream.offset);
        let links = replicas
            .iter()
            .map(|(id, ip, port)| stream.attach(*id, ip.clone(), *port, backlog_size, None))
            .collect();
        drop(stream);
        SyncInstant {
            held,
            replid,
            offset,
            links,
            _writes: writes,
        }
    }

    /// The image's aux fields ([`image_aux`]).
    pub fn aux(&self, shared: &Shared) -> [(&'static str, String); 3] {
        image_aux(shared, &self.replid, self.offset)
    }
}

/// The aux fields of a sync's image: the database the stream has selected (this
/// server's master's, on a replica), the history's id and the image's offset.
pub(crate) fn image_aux(shared: &Shared, replid: &str, offset: u64) -> [(&'static str, String); 3] {
    let stream_db = shared
        .repl
        .master
        .lock()
        .as_ref()
        .map_or(0, |m| m.stream_db());
    [
        ("repl-stream-db", stream_db.to_string()),
        ("repl-id", replid.to_string()),
        ("repl-offset", offset.to_string()),
    ]
}

/// What a replica may send before its image (it sends nothing, as a rule) is kept up
/// to this much; past it, it is not read until the image is sent.
pub(super) const EARLY_INPUT: usize = 64 * 1024;

/// A newline a second, from a second from now.
pub(super) fn keepalive_ticks() -> tokio::time::Interval {
    tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_secs(1),
        Duration::from_secs(1),
    )
}

/// Waits for `until` while a replica waits for its image: a newline on each tick of
/// `newline` (none while DEBUG SLEEP stops the server), what it sends kept in `input`
/// (up to [`EARLY_INPUT`]; it sends nothing, as a rule), its leaving an error.
pub(super) async fn keep_alive<S, F>(
    shared: &Shared,
    socket: &mut S,
    input: &mut BytesMut,
    newline: &mut tokio::time::Interval,
    until: F,
) -> std::io::Result<F::Output>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: std::future::Future,
{
    tokio::pin!(until);
    loop {
        tokio::select! {
            done = &mut until => return Ok(done),
            _ = newline.tick() => {
                if !shared.freeze.stopped() {
                    socket.write_all(b"\n").await?;
                    socket.flush().await?;
                }
            }
            read = socket.read_buf(input), if input.len() < EARLY_INPUT => {
                if read? == 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the replica closed the link before its image was sent",
                    ));
                }
            }
        }
    }
}

/// `repl-backlog-size`, in bytes.
pub(crate) fn backlog_size(shared: &Shared) -> usize {
    usize::try_from(shared.config.read().param_int("repl-backlog-size")).unwrap_or(1 << 20)
}

/// A full sync's image, sent before the stream.
enum Image {
    /// Disk-based: a BGSAVE's file, sent once written (or an image made at once).
    Saved(super::disk_sync::Started),
    /// Disk-less: streamed as it is cut, shared with the replicas of its group.
    Streamed(super::disk_less::Started),
}

/// Serves a replica link until either side closes it: the stream out, ACKs in.
/// `direct`, a duplicate of a plain TCP socket, lets the tasks that append write the
/// stream to it too (see [`super::direct`]).
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    shared: &Shared,
    socket: &mut S,
    input: &mut BytesMut,
    start: ReplicaStart,
    direct: Option<std::net::TcpStream>,
) -> std::io::Result<()> {
    let ReplicaStart {
        begin,
        acks,
        present: _present,
    } = start;
    let (link, image) = match begin {
        Begin::Continued(link) => (link, None),
        Begin::Disk(request) => {
            let started = super::disk_sync::started(shared, socket, input, request).await?;
            (started.link.clone(), Some(Image::Saved(started)))
        }
        Begin::Waiting(waiting) => {
            let started = waiting.started(shared, socket, input).await?;
            (started.link.clone(), Some(Image::Streamed(started)))
        }
    };
    // However the link ends, killed (CLIENT KILL aborts this task) included, the
    // replica leaves the stream and stops counting for WAIT and min-replicas.
    let _detach = Detach {
        shared,
        link: &link,
    };
    let result = tokio::select! {
        result = carry(shared, socket, input, &link, image, acks, direct) => result,
        () = link.outbox.overflowed() => {
            tracing::warn!(
                "Client id={} addr={}:{} scheduled to be closed ASAP for overcoming of output buffer limits.",
                link.id,
                link.ip,
                link.listening_port.load(Ordering::Relaxed)
            );
            Ok(())
        }
    };
    tracing::info!(
        "Connection with replica {}:{} lost.",
        link.ip,
        link.listening_port.load(Ordering::Relaxed)
    );
    result
}

/// The link's work: the image if a full sync started it, then the stream out and the
/// ACKs in, until either side closes.
async fn carry<S: AsyncRead + AsyncWrite + Unpin>(
    shared: &Shared,
    socket: &mut S,
    input: &mut BytesMut,
    link: &ReplicaLink,
    image: Option<Image>,
    acks: bool,
    direct: Option<std::net::TcpStream>,
) -> std::io::Result<()> {
    let mut replica_input = ReplicaInput::default();
    // What came right behind SYNC/PSYNC, before the link was served.
    replica_input.take(shared, link, input)?;
    let sent = match image {
        None => Ok(()),
        Some(Image::Saved(started)) => started.send(shared, socket, input).await,
        Some(Image::Streamed(started)) => match started.send(shared, socket, input).await {
            // As Redis: the stream follows a disk-less image once the replica has
            // acknowledged it, so no byte of it can be taken for the end of the image
            // (a replica that loads the whole image first looks for its mark at the
            // end of what it read).
            Ok(()) => first_ack(shared, socket, input, link, &mut replica_input).await,
            Err(e) => Err(e),
        },
    };
    if let Err(e) = sent {
        tracing::warn!("Full synchronization with replica failed: {e}");
        return Err(e);
    }
    // What it sent while its image was on the way (kept unread until now).
    replica_input.take(shared, link, input)?;
    if let Some(direct) = direct {
        link.direct.open(direct);
    }
    link.set_state(LinkState::Online);
    shared.repl.journal.stream().refresh_handed();
    tracing::info!(
        "Synchronization with replica {}:{} succeeded",
        link.ip,
        link.listening_port.load(Ordering::Relaxed)
    );
    let journal = &shared.repl.journal;
    let mut last_heard = tokio::time::Instant::now();
    let mut silence = super::silence::Silence::new(shared, last_heard);
    loop {
        tokio::select! {
            // A replica that stopped acknowledging (it sends REPLCONF ACK every second)
            // for `repl-timeout` is gone without a word: dropped, as Redis does.
            () = silence.passed(shared, last_heard), if acks => {
                tracing::warn!(
                    "Disconnecting timedout replica (streaming sync): {}:{}",
                    link.ip,
                    link.listening_port.load(Ordering::Relaxed)
                );
                return Ok(());
            }
            () = link.outbox.ready() => {
                shared.freeze.wait().await;
                // Held until the chunk is out: a task that appends may write to the
                // replica too (see `direct`), and wakes the link when it is done.
                let Some(_busy) = super::direct::link_busy(link) else {
                    continue;
                };
                // A chunk of what it has not written yet per turn, so its ACKs are read
                // between chunks of a long catch-up.
                let (chunk, head) = {
                    let stream = journal.stream();
                    (stream.next_chunk(link)?, stream.offset)
                };
                if let Some(chunk) = chunk {
                    // One write first, without waiting: clients whose replies wait for
                    // their changes to reach the replicas go on once it is made.
                    let end = link.outbox.sent() + chunk.len() as u64;
                    let done = write_now(socket, &chunk).await?;
                    let caught_up = done == chunk.len() && end >= head;
                    journal.link_tried(link, end, caught_up);
                    socket.write_all(&chunk[done..]).await?;
                    // A no-op on TCP; a TLS link sends what its buffer still holds.
                    socket.flush().await?;
                    journal.link_unstuck(link);
                    chunk.written();
                    let mut stream = journal.stream();
                    stream.trim();
                    if link.outbox.sent() < stream.offset {
                        link.outbox.wake();
                    }
                }
            }
            read = socket.read_buf(input) => {
                if read? == 0 {
                    return Ok(());
                }
                last_heard = tokio::time::Instant::now();
                replica_input.take(shared, link, input)?;
            }
        }
    }
}

/// One write of `bytes`, as far as the socket takes it now: how many it took.
async fn write_now<S: AsyncWrite + Unpin>(socket: &mut S, bytes: &[u8]) -> std::io::Result<usize> {
    let first =
        std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *socket).poll_write(cx, bytes))).await;
    match first {
        Poll::Ready(result) => result,
        Poll::Pending => Ok(0),
    }
}

/// Reads what the replica sends until its first `REPLCONF ACK`, for `repl-timeout` at
/// most.
async fn first_ack<S: AsyncRead + AsyncWrite + Unpin>(
    shared: &Shared,
    socket: &mut S,
    input: &mut BytesMut,
    link: &ReplicaLink,
    replica_input: &mut ReplicaInput,
) -> std::io::Result<()> {
    let timeout = shared.config.read().param_int("repl-timeout").max(1) as u64;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(timeout);
    // An ACK may already be in what came during the image.
    replica_input.take(shared, link, input)?;
    while !replica_input.acked {
        match tokio::time::timeout_at(deadline, socket.read_buf(input)).await {
            Ok(read) => {
                if read? == 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the replica closed the link after its image",
                    ));
                }
                replica_input.take(shared, link, input)?;
            }
            Err(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the replica did not acknowledge its image",
                ))
            }
        }
    }
    Ok(())
}

/// What a replica sends on its link: `REPLCONF ACK` (and `FACK`, `GETACK`), which get no
/// reply. Anything else would get one, and a replica link carries no replies: as Redis,
/// the master logs it (an error reply as a critical one first) and drops the link, so
/// a replica that stray bytes reached resyncs instead of reading a reply as stream.
///
/// Unlike Redis, the command is not run first. Keyspace commands are refused there
/// anyway ("Replica can't interact with the keyspace"); what is left (PING, SLOWLOG GET,
/// CONFIG SET...) is not for a replica to send.
#[derive(Default)]
struct ReplicaInput {
    decoder: RequestDecoder,
    /// A `REPLCONF ACK` came.
    acked: bool,
}

impl ReplicaInput {
    /// Handles every complete command in `input`; an error closes the link.
    fn take(
        &mut self,
        shared: &Shared,
        link: &ReplicaLink,
        input: &mut BytesMut,
    ) -> std::io::Result<()> {
        loop {
            let args = match self.decoder.decode(input) {
                Ok(Some(args)) => args,
                Ok(None) => return Ok(()),
                Err(e) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("protocol error on a replica link: {e}"),
                    ))
                }
            };
            if args.len() >= 2 && is(&args[0], "replconf") {
                if is(&args[1], "ack") {
                    if let Some(offset) = args
                        .get(2)
                        .and_then(|o| std::str::from_utf8(o).ok())
                        .and_then(|o| o.parse().ok())
                    {
                        shared.repl.journal.acked(link, offset);
                    }
                    self.acked = true;
                    continue;
                }
                if is(&args[1], "getack") || is(&args[1], "fack") {
                    continue;
                }
            }
            return Err(rogue_command(shared, link, &args));
        }
    }
}

/// Logs a command a replica sent on its link as Redis does, and returns the error that
/// closes the link.
fn rogue_command(shared: &Shared, link: &ReplicaLink, args: &[Bytes]) -> std::io::Error {
    let spec = shared.renamed.resolve(args);
    let name = spec.map_or("<unknown>", |spec| spec.name);
    let error = match spec {
        None => Some(crate::cmd::reply::unknown_command(args)),
        Some(spec) if !spec.arity_ok(args.len()) => Some(crate::cmd::reply::wrong_arity(spec.name)),
        Some(spec)
            if spec.flags.intersects(
                CommandFlags::WRITE | CommandFlags::READONLY | CommandFlags::MAY_REPLICATE,
            ) =>
        {
            Some(crate::cmd::reply::CmdError::Static(
                "ERR Replica can't interact with the keyspace",
            ))
        }
        Some(_) => None,
    };
    if let Some(error) = error {
        let text = String::from_utf8_lossy(error.text());
        let text = text.strip_prefix("ERR ").unwrap_or(&text);
        crate::cmd::unexpected_error_reply(shared, "master", "replica", text, name);
    }
    tracing::warn!(
        "Replica generated a reply to command '{name}', disconnecting it: {}",
        crate::cmd::client::client_line_of(shared, link.id)
    );
    std::io::Error::other(format!("the replica sent '{name}' on its link"))
}

/// Detaches a replica from the stream when its link's task ends or is dropped, and
/// closes the duplicate of its socket (counting what went through it).
struct Detach<'a> {
    shared: &'a Shared,
    link: &'a ReplicaLink,
}

impl Drop for Detach<'_> {
    fn drop(&mut self) {
        self.link.direct.close();
        let traffic = self.link.direct.traffic();
        let stats = &self.shared.stats;
        stats
            .net_repl_output_bytes
            .fetch_add(traffic.written, Ordering::Relaxed);
        stats.add_calls(traffic);
        self.shared.repl.journal.detach(self.link.id);
    }
}

/// From the server's cron: a PING into the stream every `repl-ping-replica-period`
/// seconds while replicas are attached, so they see a live link (Redis replicas drop a
/// link silent for `repl-timeout`). As in Redis the period counts from the server's
/// start, not from a replica's arrival.
pub fn cron(shared: &Shared) {
    free_idle_backlog(shared);
    super::disk_sync::remove_file_of_syncs(shared);
    let journal = &shared.repl.journal;
    // A replica passes its master's stream on byte for byte (PINGs included) and adds
    // nothing of its own: its sub-replicas' offsets must stay its master's.
    if !journal.active() || journal.is_proxy() || journal.stream().replicas().is_empty() {
        return;
    }
    let period = shared
        .config
        .read()
        .param_int("repl-ping-replica-period")
        .max(1) as u64;
    let second = shared.started.elapsed().as_secs();
    let last = &shared.repl.last_ping;
    if second % period == 0 && last.swap(second, Ordering::AcqRel) != second {
        journal.append_dbless(&[Bytes::from_static(b"PING")]);
    }
}

/// From the server's cron: a master without replicas for `repl-backlog-ttl` seconds
/// frees its backlog, as Redis's `replicationCron` does. A replica keeps its own (it
/// may be promoted, and its replicas continue from it).
fn free_idle_backlog(shared: &Shared) {
    let journal = &shared.repl.journal;
    if journal.is_proxy() {
        return;
    }
    let ttl = shared.config.read().param_int("repl-backlog-ttl");
    let ttl = u64::try_from(ttl).unwrap_or(0);
    let now = crate::persist::snapshot::unix_secs();
    if journal.stream().free_idle_backlog(ttl, now) {
        tracing::info!("Replication backlog freed after {ttl} seconds without connected replicas.");
    }
}
