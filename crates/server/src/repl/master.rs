//! The master side: SYNC and PSYNC turn a connection into a replica link.
//!
//! A full sync holds every shard ([`Held::all`]) while it reads the stream's id and
//! offset, serialises the dataset ([`snapshot::capture`]) and attaches the replica to the
//! stream: the image is exactly the state at that offset, and the replica receives every
//! change after it. The image goes out as a disk-less bulk (`$<len>` then the bytes),
//! which every Redis replica reads whatever `repl-diskless-sync` says. PSYNC with this
//! server's id (or the previous one, after a promotion) and an offset still in the
//! backlog continues without an image.
//!
//! The link then carries the stream to the replica and reads its `REPLCONF ACK`s, which
//! WAIT and INFO replication use.

use std::cell::RefCell;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use redline_resp::RequestDecoder;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::journal::{LinkState, ReplicaLink};
use crate::cmd::args::is;
use crate::cmd::Ctx;
use crate::persist::snapshot;
use crate::shared::Shared;
use crate::store::Held;

/// A connection that became a replica link, handed to the connection loop.
#[derive(Debug)]
pub struct ReplicaStart {
    /// The replica as the stream knows it.
    pub link: Arc<ReplicaLink>,
    /// Its part of the stream.
    pub rx: mpsc::UnboundedReceiver<Bytes>,
}

/// SYNC (`psync` None) or PSYNC replid offset: writes the reply (and the image or the
/// backlog part) to the output and makes the connection a replica link.
pub fn start(ctx: &mut Ctx<'_>, psync: Option<(&[u8], &[u8])>) {
    let shared = ctx.shared;
    let journal = &shared.repl.journal;
    // Recording starts now (waiting for writes in flight), so nothing after the image
    // is missed.
    journal.activate();
    let ip = ctx.client.peer.ip();
    let port = ctx.client.repl_listening_port;
    let backlog_size = backlog_size(shared);
    if let Some((replid, offset)) = psync {
        let requested = std::str::from_utf8(offset)
            .ok()
            .and_then(|o| o.parse::<u64>().ok())
            .filter(|&o| o > 0);
        let replid = String::from_utf8_lossy(replid);
        let mut stream = journal.stream();
        if let Some(data) = requested.and_then(|o| stream.continue_from(&replid, o - 1)) {
            let (link, rx) = stream.attach(ctx.client.id, ip, port, backlog_size);
            let reply = format!("+CONTINUE {}\r\n", stream.replid);
            drop(stream);
            link.set_state(LinkState::Online);
            ctx.out.extend_from_slice(reply.as_bytes());
            ctx.out.extend_from_slice(&data);
            tracing::info!(
                "Partial resynchronization request from {ip}:{port} accepted. Sending {} bytes of backlog.",
                data.len()
            );
            ctx.client.replica_start = Some(ReplicaStart { link, rx });
            return;
        }
    }
    tracing::info!("Replica {ip}:{port} asks for synchronization");
    let held = RefCell::new(Held::all(&shared.store));
    let (replid, offset) = {
        let stream = journal.stream();
        (stream.replid.clone(), stream.offset)
    };
    let stream_db = shared
        .repl
        .master
        .lock()
        .as_ref()
        .map_or(0, |m| m.stream_db())
        .to_string();
    let offset_text = offset.to_string();
    let image = snapshot::capture(
        shared,
        &mut *held.borrow_mut(),
        &[
            ("repl-stream-db", stream_db.as_bytes()),
            ("repl-id", replid.as_bytes()),
            ("repl-offset", offset_text.as_bytes()),
        ],
    );
    let (link, rx) = journal
        .stream()
        .attach(ctx.client.id, ip, port, backlog_size);
    drop(held);
    if psync.is_some() {
        ctx.out
            .extend_from_slice(format!("+FULLRESYNC {replid} {offset}\r\n").as_bytes());
    }
    ctx.out
        .extend_from_slice(format!("${}\r\n", image.len()).as_bytes());
    ctx.out.extend_from_slice(&image);
    link.set_state(LinkState::SendBulk);
    tracing::info!(
        "Full resync requested by replica {ip}:{port}: {} bytes of RDB at offset {offset}",
        image.len()
    );
    ctx.client.replica_start = Some(ReplicaStart { link, rx });
}

fn backlog_size(shared: &Shared) -> usize {
    usize::try_from(shared.config.read().param_int("repl-backlog-size")).unwrap_or(1 << 20)
}

/// Serves a replica link until either side closes it: the stream out, ACKs in.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    shared: &Shared,
    socket: &mut S,
    input: &mut BytesMut,
    start: ReplicaStart,
) -> std::io::Result<()> {
    let ReplicaStart { link, mut rx } = start;
    let journal = &shared.repl.journal;
    link.set_state(LinkState::Online);
    tracing::info!(
        "Synchronization with replica {}:{} succeeded",
        link.ip,
        link.listening_port
            .load(std::sync::atomic::Ordering::Relaxed)
    );
    let mut decoder = RequestDecoder::default();
    let mut out = BytesMut::new();
    let result = loop {
        tokio::select! {
            chunk = rx.recv() => {
                let Some(chunk) = chunk else { break Ok(()) };
                out.extend_from_slice(&chunk);
                while let Ok(more) = rx.try_recv() {
                    out.extend_from_slice(&more);
                }
                if let Err(e) = socket.write_all(&out).await {
                    break Err(e);
                }
                // A no-op on TCP; a TLS link sends what its buffer still holds.
                if let Err(e) = socket.flush().await {
                    break Err(e);
                }
                out.clear();
            }
            read = socket.read_buf(input) => {
                match read {
                    Ok(0) => break Ok(()),
                    Ok(_) => {}
                    Err(e) => break Err(e),
                }
                while let Ok(Some(args)) = decoder.decode(input) {
                    // REPLCONF ACK <offset> [FACK <offset>]; anything else is ignored.
                    if args.len() >= 3 && is(&args[0], "replconf") && is(&args[1], "ack") {
                        if let Some(offset) = std::str::from_utf8(&args[2]).ok().and_then(|o| o.parse().ok()) {
                            journal.acked(&link, offset);
                        }
                    }
                }
            }
        }
    };
    journal.stream().detach(link.id);
    tracing::info!(
        "Connection with replica {}:{} lost.",
        link.ip,
        link.listening_port
            .load(std::sync::atomic::Ordering::Relaxed)
    );
    result
}

/// From the server's cron: a PING into the stream every `repl-ping-replica-period`
/// seconds while replicas are attached, so they see a live link (Redis replicas drop a
/// link silent for `repl-timeout`). As in Redis the period counts from the server's
/// start, not from a replica's arrival.
pub fn cron(shared: &Shared) {
    use std::sync::atomic::Ordering;
    let journal = &shared.repl.journal;
    if !journal.active() || journal.stream().replicas().is_empty() {
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
