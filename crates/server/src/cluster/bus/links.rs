//! The bus's connections: an outbound link per known node, opened by the cron, and the
//! links other nodes open here. Each link has a reader (this task) and a writer task fed
//! by a channel, so replies and messages from elsewhere keep their order.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use redline_resp::{encode, Protocol};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::task::AbortOnDropHandle;

use super::super::node::{Flags, NodeId};
use super::message::{self, DecodeError, Message};
use super::process::{self, LinkInfo, Outcome};
use super::LinkHandle;
use crate::net::outgoing::{connect_peer, tcp_of, PeerStream};
use crate::shared::Shared;

/// The most room a message's body gets before its bytes arrive.
const READ_STEP: usize = 1 << 20;

/// Reads one message; `None` at a clean end of the connection.
async fn read_message(
    reader: &mut tokio::io::ReadHalf<PeerStream>,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<Result<Message, DecodeError>>> {
    let mut first = [0u8; 8];
    match reader.read_exact(&mut first).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = match message::announced_len(&first) {
        Ok(len) if (message::HEADER_LEN..=message::MAX_LEN).contains(&len) => len,
        _ => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "Bad message length or signature received on the Cluster bus.",
            ))
        }
    };
    buf.clear();
    buf.extend_from_slice(&first);
    // The room grows with what arrives: a length announced and never sent (up to
    // MAX_LEN, from anyone who can reach the bus port) costs no memory.
    while buf.len() < len {
        let start = buf.len();
        buf.resize(start + (len - start).min(READ_STEP), 0);
        reader.read_exact(&mut buf[start..]).await?;
    }
    Ok(Some(message::decode(buf)))
}

/// Writes what the channel brings until it closes or the connection fails. The writer
/// ends with its link's task, even when that task is aborted (a writer blocked on a
/// peer that stopped reading would otherwise keep the connection and its queue).
fn spawn_writer(
    mut writer: tokio::io::WriteHalf<PeerStream>,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    queued: Arc<AtomicU64>,
) -> AbortOnDropHandle<()> {
    AbortOnDropHandle::new(tokio::spawn(async move {
        while let Some(bytes) = rx.recv().await {
            let len = bytes.len() as u64;
            // TLS keeps what it encrypted until flushed.
            if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                break;
            }
            queued.fetch_sub(len.min(queued.load(Ordering::Relaxed)), Ordering::Relaxed);
        }
    }))
}

fn ips(stream: &PeerStream) -> (String, String) {
    let ip = |a: std::io::Result<std::net::SocketAddr>| {
        a.map(|a| a.ip().to_canonical().to_string())
            .unwrap_or_default()
    };
    let tcp = tcp_of(stream);
    (ip(tcp.local_addr()), ip(tcp.peer_addr()))
}

/// A node connected to our bus port (its TLS handshake done, with `tls-cluster`).
pub fn accepted(shared: &Arc<Shared>, stream: PeerStream) {
    let (local_ip, peer_ip) = ips(&stream);
    let (tx, rx) = mpsc::unbounded_channel();
    let id = shared.cluster.bus.next_id();
    let queued = Arc::new(AtomicU64::new(0));
    let link = LinkInfo {
        inbound: true,
        node: None,
        local_ip,
        peer_ip,
    };
    let task = {
        let shared = shared.clone();
        let tx = tx.clone();
        let queued = queued.clone();
        async move {
            serve_link(&shared, stream, link, tx, rx, queued, id).await;
            shared.cluster.bus.inbound.lock().remove(&id);
        }
    };
    let handle = LinkHandle::new(id, tx, queued, None);
    spawn_registered(&shared.cluster.bus.inbound, id, handle, task);
}

/// Opens this node's link to `node` at `ip:cport`, sending MEET or PING first.
pub fn connect(shared: &Arc<Shared>, node: NodeId, ip: String, cport: u16, timeout: Duration) {
    let (tx, rx) = mpsc::unbounded_channel();
    let id = shared.cluster.bus.next_id();
    let queued = Arc::new(AtomicU64::new(0));
    let task = {
        let shared = shared.clone();
        let tx = tx.clone();
        let queued = queued.clone();
        async move {
            let target = if ip.contains(':') {
                format!("[{ip}]:{cport}")
            } else {
                format!("{ip}:{cport}")
            };
            let (source, tls) = {
                let config = shared.config.read();
                let source = config.param("bind-source-addr").to_string();
                (source, config.param_bool("tls-cluster"))
            };
            let connecting =
                async { connect_peer(&ip, cport, &source, shared.tls.client_for(tls)?).await };
            let stream = match tokio::time::timeout(timeout, connecting).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => {
                    tracing::debug!("Connection with Node {node} at {target} failed: {e}");
                    unreachable(&shared, &node, id);
                    return;
                }
                Err(_) => {
                    tracing::debug!("Connection with Node {node} at {target} timed out");
                    unreachable(&shared, &node, id);
                    return;
                }
            };
            let (local_ip, peer_ip) = ips(&stream);
            let first = {
                let ctx = super::context(&shared);
                let announce_ip = shared
                    .config
                    .read()
                    .param("cluster-announce-ip")
                    .to_string();
                let mut state = shared.cluster.state.write();
                let Some(n) = state.nodes.get_mut(&node) else {
                    drop(state);
                    unlink(&shared, &node, id);
                    return;
                };
                n.linked = true;
                let meet = n.flags.any(Flags::MEET);
                n.flags.clear(Flags::MEET);
                let kind = if meet { message::MEET } else { message::PING };
                if kind == message::PING && n.ping_sent == 0 {
                    n.ping_sent = crate::store::now_ms();
                }
                super::build::ping(&mut state, kind, ctx, &announce_ip)
            };
            shared.cluster.bus.queue(&tx, first);
            let link = LinkInfo {
                inbound: false,
                node: Some(node),
                local_ip,
                peer_ip,
            };
            let current = serve_link(&shared, stream, link, tx, rx, queued, id).await;
            unlink(&shared, &current.unwrap_or(node), id);
        }
    };
    let handle = LinkHandle::new(id, tx, queued, Some(node));
    spawn_registered(&shared.cluster.bus.outbound, node, handle, task);
}

/// Spawns a link's task and records its handle under `key`, holding the table's lock
/// across both: a task that ends at once (a refused connection) removes its entry only
/// after it is there, never before.
fn spawn_registered<K: std::hash::Hash + Eq>(
    table: &parking_lot::Mutex<std::collections::HashMap<K, LinkHandle>>,
    key: K,
    mut handle: LinkHandle,
    task: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let mut table = table.lock();
    handle.task = Some(tokio::spawn(task).abort_handle());
    table.insert(key, handle);
}

/// A node could not be reached: as if a PING had gone unanswered, so failure detection
/// works for a node this one never reached (after its own restart, say).
fn unreachable(shared: &Shared, node: &NodeId, id: u64) {
    if let Some(n) = shared.cluster.state.write().nodes.get_mut(node) {
        if n.ping_sent == 0 {
            n.ping_sent = crate::store::now_ms();
        }
    }
    unlink(shared, node, id);
}

/// An outbound link ended: the node is disconnected until the cron links it again.
fn unlink(shared: &Shared, node: &NodeId, id: u64) {
    let mut links = shared.cluster.bus.outbound.lock();
    if links.get(node).is_some_and(|l| l.id == id) {
        links.remove(node);
        drop(links);
        if let Some(n) = shared.cluster.state.write().nodes.get_mut(node) {
            n.linked = false;
        }
    }
}

/// Reads and processes messages until the link ends; returns the outbound link's node
/// (renamed if the handshake told its real name).
async fn serve_link(
    shared: &Arc<Shared>,
    stream: PeerStream,
    mut link: LinkInfo,
    tx: mpsc::UnboundedSender<Vec<u8>>,
    rx: mpsc::UnboundedReceiver<Vec<u8>>,
    queued: Arc<AtomicU64>,
    id: u64,
) -> Option<NodeId> {
    let (mut reader, writer) = tokio::io::split(stream);
    let writer = spawn_writer(writer, rx, queued);
    let mut buf = Vec::new();
    loop {
        let message = match read_message(&mut reader, &mut buf).await {
            Ok(Some(Ok(message))) => message,
            Ok(Some(Err(e))) => {
                // Redis ignores a message it cannot use (another version, a bad length)
                // and keeps the link.
                tracing::debug!("Ignoring a cluster bus message: {e}");
                continue;
            }
            Ok(None) => break,
            Err(e) => {
                tracing::debug!("Cluster bus link closed: {e}");
                break;
            }
        };
        if shared.cluster.bus.drops(message.header.kind) {
            // DEBUG DROP-CLUSTER-PACKET-FILTER: counted as received, then ignored.
            let mut state = shared.cluster.state.write();
            if let Some(count) = state
                .messages_received
                .get_mut(usize::from(message.header.kind))
            {
                *count += 1;
            }
            tracing::warn!("Dropping packet that matches debug drop filter");
            continue;
        }
        let before = link.node;
        let outcome = {
            let settings = super::super::settings(shared);
            let ctx = super::context(shared);
            let now = crate::store::now_ms();
            let mut state = shared.cluster.state.write();
            let outcome = process::process(&mut state, &settings, &mut link, message, now, ctx);
            state.update_state(now, settings.full_coverage, settings.node_timeout);
            outcome
        };
        if link.inbound && link.node.is_some() && before != link.node {
            adopt_inbound(shared, id, link.node);
        }
        let close = outcome.close;
        apply(shared, &link, &tx, outcome);
        if close {
            break;
        }
    }
    drop(writer);
    link.node
}

/// An inbound link now knows its node; an older inbound link from it goes (Redis keeps
/// one per node).
fn adopt_inbound(shared: &Shared, id: u64, node: Option<NodeId>) {
    let mut inbound = shared.cluster.bus.inbound.lock();
    let older: Vec<u64> = inbound
        .values()
        .filter(|l| l.id != id && l.node == node)
        .map(|l| l.id)
        .collect();
    for old in older {
        if let Some(link) = inbound.remove(&old) {
            link.abort();
        }
    }
    if let Some(link) = inbound.get_mut(&id) {
        link.node = node;
    }
}

/// Carries out a message's effects once the state's lock is released.
fn apply(
    shared: &Arc<Shared>,
    link: &LinkInfo,
    tx: &mpsc::UnboundedSender<Vec<u8>>,
    outcome: Outcome,
) {
    let bus = &shared.cluster.bus;
    for reply in outcome.reply {
        bus.queue(tx, reply);
    }
    if let Some((from, to)) = outcome.renamed {
        let mut links = bus.outbound.lock();
        if let Some(mut handle) = links.remove(&from) {
            handle.node = Some(to);
            links.insert(to, handle);
        }
    }
    for (node, bytes) in outcome.to_nodes {
        bus.send(&node, bytes);
    }
    for bytes in outcome.broadcast {
        bus.broadcast(&bytes);
    }
    for node in &outcome.drop_links {
        if link.inbound || link.node.as_ref() != Some(node) {
            bus.drop_link(node);
        }
    }
    if let Some((shard, channel, payload)) = outcome.publish {
        let kind = if shard {
            crate::pubsub::Kind::Shard
        } else {
            crate::pubsub::Kind::Channel
        };
        let limit = shared.config.read().client_output_buffer_limit[2];
        let published =
            shared
                .pubsub
                .publish(kind, &channel, &payload, &limit, 0, &mut BytesMut::new());
        for id in published.overflowed {
            shared.clients.close_for_output_limit(id);
        }
    }
    if !outcome.drop_slots.is_empty() {
        drop_keys_in_slots(shared, &outcome.drop_slots);
    }
    if let Some(replica) = outcome.mfstart {
        // The paused master's offset reaches the replica in the cron's next PINGs, once
        // the writes already running when the pause began have finished.
        let now = crate::store::now_ms();
        super::failover::on_mfstart(shared, &mut shared.cluster.state.write(), replica, now);
    }
    if outcome.follow.is_some() && shared.cluster.state.write().election.reset_manual() {
        // A master paused for a manual failover is a replica now: its clients go on.
        shared.pause.unpause();
    }
    if outcome.save || outcome.follow.is_some() {
        let _ = shared.cluster.save_synced();
    }
    if let Some(master) = outcome.follow {
        super::replicate_master(shared, master);
    }
}

/// Drops this node's keys in slots a newer configuration gave to another node, telling
/// replicas and the AOF (Redis's `delKeysInSlot`).
pub fn drop_keys_in_slots(shared: &Shared, slots: &[usize]) {
    let db = shared.store.db(0);
    for &slot in slots {
        let keys = crate::cmd::cluster::keys_in_slot(
            &mut db.lock_index(db.shard_of_slot(slot)),
            db.shard_count(),
            slot,
            usize::MAX,
        );
        for key in keys {
            let mut shard = db.lock(&key);
            if shard.remove(&key).is_some() {
                // The DEL replicas and the AOF apply, as for an expired key.
                crate::store::events::DeletionFeed::expired(&*shared.repl.journal, 0, &key);
            }
        }
    }
    // The streams deleted signal their readers, as a command's deletes do.
    crate::cmd::blocking::serve_background_signals(shared);
}

/// CLUSTER LINKS: every link with a known node, outbound ("to") and inbound ("from").
pub fn describe(shared: &Shared, out: &mut BytesMut, proto: Protocol) {
    let mut rows: Vec<(&str, NodeId, u64, u64)> = Vec::new();
    for link in shared.cluster.bus.outbound.lock().values() {
        if let Some(node) = link.node {
            rows.push((
                "to",
                node,
                link.created,
                link.queued.load(Ordering::Relaxed),
            ));
        }
    }
    for link in shared.cluster.bus.inbound.lock().values() {
        if let Some(node) = link.node {
            rows.push((
                "from",
                node,
                link.created,
                link.queued.load(Ordering::Relaxed),
            ));
        }
    }
    // Node by node, its link to it before its link from it, as Redis walks its nodes
    // (clients pair them up).
    let mut order: Vec<NodeId> = Vec::new();
    for (_, node, _, _) in &rows {
        if !order.contains(node) {
            order.push(*node);
        }
    }
    rows.sort_by_key(|(direction, node, _, _)| {
        (order.iter().position(|n| n == node), *direction == "from")
    });
    encode::write_array_len(out, rows.len());
    for (direction, node, created, queued) in rows {
        // Readable always; writable while something waits to be sent.
        let events = if queued > 0 { "rw" } else { "r" };
        encode::write_map_len(out, proto, 6);
        encode::write_bulk(out, b"direction");
        encode::write_bulk(out, direction.as_bytes());
        encode::write_bulk(out, b"node");
        encode::write_bulk(out, node.as_bytes());
        encode::write_bulk(out, b"create-time");
        encode::write_integer(out, i64::try_from(created).unwrap_or(i64::MAX));
        encode::write_bulk(out, b"events");
        encode::write_bulk(out, events.as_bytes());
        encode::write_bulk(out, b"send-buffer-allocated");
        encode::write_integer(out, i64::try_from(queued).unwrap_or(i64::MAX));
        encode::write_bulk(out, b"send-buffer-used");
        encode::write_integer(out, i64::try_from(queued).unwrap_or(i64::MAX));
    }
}
