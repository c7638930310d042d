//! The cluster bus: a listener on the bus port, one outbound link to every other node
//! (this node's PINGs, MEETs and requests go there), the inbound links other nodes
//! opened (their PINGs come there, answered with PONG on the same connection), and a
//! cron every 100 ms that connects, pings, detects failures and runs elections.
//!
//! - [`message`]: the wire format.
//! - [`build`]: the messages this node sends.
//! - [`process`]: what a received message changes.
//! - [`failure`], [`failover`]: failure detection, replica promotion.
//! - [`migration`]: replicas moving to masters left without one.
//! - [`links`]: the link tasks and CLUSTER LINKS.
//! - [`cron`]: the periodic work.

pub mod build;
pub mod cron;
pub mod failover;
pub mod failure;
pub mod links;
pub mod message;
pub mod migration;
pub mod process;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::node::{Flags, Node, NodeId};
use crate::shared::Shared;
pub use process::FORGET_TTL_MS;

/// A link's sending side.
#[derive(Debug)]
pub(crate) struct LinkHandle {
    /// Distinguishes this link from a later one to the same node.
    pub id: u64,
    /// Messages to write.
    pub tx: mpsc::UnboundedSender<Vec<u8>>,
    /// Milliseconds since the epoch when it was created.
    pub created: u64,
    /// Bytes queued and not yet written.
    pub queued: Arc<AtomicU64>,
    /// The link's task (set as it is spawned).
    pub task: Option<tokio::task::AbortHandle>,
    /// The node at the other end (inbound links: once known).
    pub node: Option<NodeId>,
}

impl LinkHandle {
    /// A link created now.
    pub(crate) fn new(
        id: u64,
        tx: mpsc::UnboundedSender<Vec<u8>>,
        queued: Arc<AtomicU64>,
        node: Option<NodeId>,
    ) -> LinkHandle {
        LinkHandle {
            id,
            tx,
            created: crate::store::now_ms(),
            queued,
            task: None,
            node,
        }
    }

    /// Stops the link's task (its connection closes).
    fn abort(&self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The bus's links.
#[derive(Debug)]
pub struct Bus {
    /// Outbound links, by the node they lead to.
    pub(crate) outbound: Mutex<HashMap<NodeId, LinkHandle>>,
    /// Inbound links, by link id.
    pub(crate) inbound: Mutex<HashMap<u64, LinkHandle>>,
    next_id: AtomicU64,
    /// `DEBUG DROP-CLUSTER-PACKET-FILTER`: the message type ignored on arrival, or -1.
    drop_filter: AtomicI64,
    /// Links closed for exceeding `cluster-link-sendbuf-limit` (CLUSTER INFO).
    pub buffer_limit_exceeded: AtomicU64,
    /// Messages queued on a link, by type (CLUSTER INFO): one per link, as Redis's
    /// `clusterSendMessage` counts, so a PUBLISH with no other node counts none.
    pub sent: [AtomicU64; message::TYPES],
}

impl Default for Bus {
    fn default() -> Bus {
        Bus {
            outbound: Mutex::default(),
            inbound: Mutex::default(),
            next_id: AtomicU64::new(0),
            drop_filter: AtomicI64::new(-1),
            buffer_limit_exceeded: AtomicU64::new(0),
            sent: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl Bus {
    /// Sets the message type dropped on arrival (`-1`: none), for tests of lost messages.
    pub fn set_drop_filter(&self, kind: i64) {
        self.drop_filter.store(kind, Ordering::Relaxed);
    }

    /// Whether a message of type `kind` is dropped on arrival.
    fn drops(&self, kind: u16) -> bool {
        self.drop_filter.load(Ordering::Relaxed) == i64::from(kind)
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Queues `bytes` on the link to `node`, if there is one.
    pub fn send(&self, node: &NodeId, bytes: Vec<u8>) {
        if let Some(link) = self.outbound.lock().get(node) {
            link.queued.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            self.queue(&link.tx, bytes);
        }
    }

    /// Queues `bytes` on every outbound link.
    pub fn broadcast(&self, bytes: &[u8]) {
        for link in self.outbound.lock().values() {
            link.queued.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            self.queue(&link.tx, bytes.to_vec());
        }
    }

    /// Queues the encoded message `bytes` on a link's writer, counting it as sent.
    pub(crate) fn queue(&self, tx: &mpsc::UnboundedSender<Vec<u8>>, bytes: Vec<u8>) {
        if let Some(count) = message::kind_of(&bytes).and_then(|k| self.sent.get(usize::from(k))) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        let _ = tx.send(bytes);
    }

    /// Closes the outbound link to `node` (the cron opens a new one if it is still known).
    pub fn drop_link(&self, node: &NodeId) {
        if let Some(link) = self.outbound.lock().remove(node) {
            link.abort();
        }
    }

    /// Closes the links `node` opened to this one.
    pub fn drop_inbound(&self, node: &NodeId) {
        self.inbound.lock().retain(|_, link| {
            let theirs = link.node.as_ref() == Some(node);
            if theirs {
                link.abort();
            }
            !theirs
        });
    }

    /// Closes the links whose unwritten messages exceed `limit` bytes
    /// (`cluster-link-sendbuf-limit`; 0 is no limit): a node that stopped reading does
    /// not make this one buffer without end. The cron opens a new outbound link.
    pub fn close_links_over(&self, limit: u64) {
        if limit == 0 {
            return;
        }
        let over = |direction: &str, link: &LinkHandle| {
            let queued = link.queued.load(Ordering::Relaxed);
            if queued <= limit {
                return false;
            }
            let node = link.node.map(|n| n.to_string()).unwrap_or_default();
            tracing::warn!("Freeing cluster link({direction} node {node}, used memory: {queued}) due to exceeding send buffer memory limit.");
            link.abort();
            self.buffer_limit_exceeded.fetch_add(1, Ordering::Relaxed);
            true
        };
        self.outbound.lock().retain(|_, link| !over("to", link));
        self.inbound.lock().retain(|_, link| !over("from", link));
    }

    /// Closes both links with `node`, which this node no longer knows (CLUSTER FORGET,
    /// CLUSTER RESET), as Redis frees a deleted node's links: if `node` still knows
    /// this one it connects again, and that link stays nameless (CLUSTER LINKS leaves
    /// it out) until `node` is met again.
    pub fn forget(&self, node: &NodeId) {
        self.drop_link(node);
        self.drop_inbound(node);
    }

    /// Closes every link (when the bus stops listening).
    pub fn drop_all(&self) {
        for (_, link) in self.outbound.lock().drain() {
            link.abort();
        }
        for (_, link) in self.inbound.lock().drain() {
            link.abort();
        }
    }
}

/// What the header needs beyond the state.
pub fn context(shared: &Shared) -> build::Context {
    // A replica receiving a full sync has no offset yet (Redis's
    // `replicationGetSlaveOffset` is 0 then): its master hides it from CLUSTER SLOTS
    // and shows it `loading` in CLUSTER SHARDS meanwhile.
    let syncing = shared
        .repl
        .with_link(crate::repl::replica::LinkStatus::syncing)
        .unwrap_or(false);
    build::Context {
        offset: if syncing {
            0
        } else {
            shared.repl.journal.offset()
        },
    }
}

/// Starts serving the bus on `listeners` and the cron.
pub fn start(shared: &Arc<Shared>, listeners: Vec<tokio::net::TcpListener>) {
    for listener in listeners {
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut stop = shared.shutdown.subscribe();
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = stop.wait_for(|s| *s) => break,
                };
                match accepted {
                    Ok((stream, _)) => accept(&shared, stream),
                    Err(e) => {
                        tracing::warn!("Error accepting cluster node: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    }
                }
            }
            shared.cluster.bus.drop_all();
        });
    }
    tokio::spawn(cron::run(shared.clone()));
}

/// A connection to the bus port: a link at once, or after its TLS handshake (in its own
/// task, so a slow peer holds up no other) with `tls-cluster`.
fn accept(shared: &Arc<Shared>, stream: tokio::net::TcpStream) {
    let _ = stream.set_nodelay(true);
    let (tls, timeout) = {
        let config = shared.config.read();
        let timeout = crate::net::tls::handshake_timeout(&config);
        (config.param_bool("tls-cluster"), timeout)
    };
    if !tls {
        links::accepted(shared, tokio_util::either::Either::Left(stream));
        return;
    }
    // A peer must present a certificate the CA signed (Redis's `TLS_CLIENT_AUTH_YES`).
    let Some(server) = shared.tls.bus() else {
        return;
    };
    let shared = shared.clone();
    tokio::spawn(async move {
        match crate::net::tls::handshake(server, stream, timeout).await {
            Ok(stream) => links::accepted(
                &shared,
                tokio_util::either::Either::Right(Box::new(stream.into())),
            ),
            Err(e) => tracing::debug!("Error accepting cluster node connection: {e}"),
        }
    });
}

/// CLUSTER MEET: a node in handshake that the cron links to with MEET.
pub fn start_handshake(shared: &Shared, ip: &str, port: u16, cport: u16) {
    let mut state = shared.cluster.state.write();
    let pending = state.nodes.values().any(|n| {
        n.in_handshake() && n.ip.eq_ignore_ascii_case(ip) && n.port == port && n.cport == cport
    });
    if pending {
        return;
    }
    let node = Node::new(
        NodeId::random(),
        ip,
        port,
        cport,
        Flags::HANDSHAKE | Flags::MEET,
        crate::store::now_ms(),
    );
    state.nodes.insert(node.id, node);
}

/// Replicates `master` (CLUSTER REPLICATE, a slot change, a failover elsewhere), once
/// its address is known; the cron retries until it is.
pub fn replicate_master(shared: &Shared, master: NodeId) {
    let address = {
        let state = shared.cluster.state.read();
        state
            .nodes
            .get(&master)
            .filter(|n| !n.ip.is_empty() && n.port != 0)
            .map(|n| (n.ip.clone(), n.port))
    };
    if let Some((ip, port)) = address {
        match crate::cmd::replication::replicate_from(shared, &ip, port, false) {
            Ok(_) => {}
            Err(e) => tracing::warn!(
                "Can't replicate {master}: {}",
                String::from_utf8_lossy(e.text())
            ),
        }
    }
}

/// This replica won an election (or took over): it stops replicating, keeps its data
/// and history, and tells every node.
pub fn promoted(shared: &Shared) {
    crate::repl::promote(shared);
    {
        let settings = super::settings(shared);
        let mut state = shared.cluster.state.write();
        state.update_state(
            crate::store::now_ms(),
            settings.full_coverage,
            settings.node_timeout,
        );
    }
    let _ = shared.cluster.save_synced();
    broadcast_pong(shared);
}

/// A PONG to every node: the fastest way to tell them of a change of slots or role.
pub fn broadcast_pong(shared: &Shared) {
    let ctx = context(shared);
    let announce_ip = shared
        .config
        .read()
        .param("cluster-announce-ip")
        .to_string();
    let targets: Vec<NodeId> = shared.cluster.bus.outbound.lock().keys().copied().collect();
    // Each node gets its own gossip sample, all built under one lock.
    let pongs: Vec<(NodeId, Vec<u8>)> = {
        let mut state = shared.cluster.state.write();
        targets
            .into_iter()
            .map(|node| {
                (
                    node,
                    build::ping(&mut state, message::PONG, ctx, &announce_ip),
                )
            })
            .collect()
    };
    for (node, pong) in pongs {
        shared.cluster.bus.send(&node, pong);
    }
}

/// PUBLISH goes to every node; SPUBLISH to the nodes of this node's shard.
pub fn propagate_publish(shared: &Shared, shard: bool, channel: &[u8], payload: &[u8]) {
    let ctx = context(shared);
    let (bytes, targets) = {
        let mut state = shared.cluster.state.write();
        let targets: Option<Vec<NodeId>> = if shard {
            let Some(master) = state.my_master() else {
                return;
            };
            Some(
                std::iter::once(master)
                    .chain(state.replicas_of(&master).iter().map(|n| n.id))
                    .filter(|id| *id != state.myself)
                    .collect(),
            )
        } else {
            None
        };
        (
            build::publish(&mut state, shard, channel, payload, ctx),
            targets,
        )
    };
    match targets {
        None => shared.cluster.bus.broadcast(&bytes),
        Some(nodes) => {
            for node in nodes {
                shared.cluster.bus.send(&node, bytes.clone());
            }
        }
    }
}
