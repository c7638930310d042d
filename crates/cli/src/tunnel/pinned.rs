//! Pinned mode: one local listener per cluster node (masters and replicas), each relaying
//! to its node, so cluster-aware clients see a cluster whose every address is local.
//!
//! # Port mapping
//!
//! With `--listen IP:PORT`, the nodes known at start-up, sorted by upstream address
//! (host text, then port), get `PORT`, `PORT+1`, ... in that order. A node that appears
//! later (found by the periodic `CLUSTER NODES` refresh, or named in a reply the tunnel
//! rewrites) gets the next port after the highest one used so far. A port that cannot be
//! bound is skipped (with a warning). `--listen IP:0` lets the system pick every port.
//! Each mapping is printed on stdout as `pinned <local> -> <upstream>` when it opens,
//! and stays for the life of the tunnel (a node that left keeps its port, so it can
//! return under the same one).
//!
//! Rewritten replies name the local listener's IP; a wildcard listen address
//! (`0.0.0.0`, `::`) is announced as loopback.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use redline::{Config, RawConnector};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use super::error::TunnelError;
use super::listener;
use super::rewrite::NodeAddr;
use super::shutdown::Shutdown;
use super::topology;
use super::tracked::{self, NodeLink};

/// Ports tried after a busy one before giving up on a node.
const PORT_ATTEMPTS: u16 = 1000;

/// The node table and everything needed to add a node.
#[derive(Debug)]
pub(crate) struct Pinned {
    /// The upstream settings (TLS, credentials); host and port change per node.
    upstream: Config,
    /// IP the listeners bind; the IP rewritten replies announce.
    bind_ip: IpAddr,
    announce_ip: IpAddr,
    /// First port of the mapping, 0 for system-chosen ports.
    base_port: u16,
    shutdown: Shutdown,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    nodes: BTreeMap<NodeAddr, Arc<NodeLink>>,
    next_port: u16,
}

impl Pinned {
    /// Reads the topology from the seed node, opens a listener per node, and starts the
    /// refresh task.
    pub(crate) async fn start(
        upstream: Config,
        listen: SocketAddr,
        refresh: Duration,
        shutdown: Shutdown,
    ) -> Result<Arc<Pinned>, TunnelError> {
        let announce_ip = match listen.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        let seed = NodeAddr::new(upstream.host.clone(), upstream.port);
        let pinned = Arc::new(Pinned {
            upstream,
            bind_ip: listen.ip(),
            announce_ip,
            base_port: listen.port(),
            shutdown,
            state: Mutex::new(State {
                nodes: BTreeMap::new(),
                next_port: listen.port(),
            }),
        });
        let nodes = topology::discover(&pinned.connector(&seed)?, &seed).await?;
        if nodes.is_empty() {
            return Err(TunnelError::Topology(format!("{seed} lists no nodes")));
        }
        for node in &nodes {
            pinned.local_addr(node).await?;
        }
        let refresher = pinned.clone();
        pinned.shutdown.spawn(async move {
            let stop = refresher.shutdown.clone();
            tokio::select! {
                _ = refresher.refresh_every(refresh) => {}
                _ = stop.cancelled() => {}
            }
        });
        Ok(pinned)
    }

    /// Whether connections to upstream use TLS (decides which `CLUSTER SHARDS` port field
    /// names the upstream port).
    pub(crate) fn upstream_tls(&self) -> bool {
        self.upstream.tls.is_some()
    }

    /// The local listener for `node`, opened now if the node is new.
    pub(crate) async fn local_addr(
        self: &Arc<Self>,
        node: &NodeAddr,
    ) -> Result<SocketAddr, TunnelError> {
        let mut state = self.state.lock().await;
        if let Some(link) = state.nodes.get(node) {
            return Ok(link.local);
        }
        let listener = self.bind_next(&mut state).await?;
        let local = listener.local_addr()?;
        let announced = SocketAddr::new(self.announce_ip, local.port());
        let link = Arc::new(NodeLink {
            node: node.clone(),
            local: announced,
            connector: Arc::new(self.connector(node)?),
            pinned: self.clone(),
        });
        state.nodes.insert(node.clone(), link.clone());
        drop(state);
        println!("pinned {announced} -> {node}");
        tracing::info!(local = %announced, upstream = %node, "pinned listener opened");
        listener::serve(
            listener,
            Arc::from(node.to_string()),
            self.shutdown.clone(),
            move |client| tracked::relay(client, link.clone()),
        );
        Ok(announced)
    }

    /// Local addresses for every node in `nodes`, opening listeners as needed. Nodes that
    /// cannot get one are left out (and logged).
    ///
    /// Boxed with an explicit `Send`: opening a listener spawns relays that call this
    /// again, and the compiler cannot infer `Send` through that cycle.
    pub(crate) fn local_addrs<'a>(
        self: &'a Arc<Self>,
        nodes: &'a [NodeAddr],
    ) -> Pin<Box<dyn Future<Output = HashMap<NodeAddr, SocketAddr>> + Send + 'a>> {
        Box::pin(async move {
            let mut table = HashMap::with_capacity(nodes.len());
            for node in nodes {
                match self.local_addr(node).await {
                    Ok(local) => {
                        table.insert(node.clone(), local);
                    }
                    Err(e) => tracing::warn!(upstream = %node, error = %e, "no local listener"),
                }
            }
            table
        })
    }

    async fn bind_next(&self, state: &mut State) -> Result<TcpListener, TunnelError> {
        if self.base_port == 0 {
            return listener::bind(SocketAddr::new(self.bind_ip, 0)).await;
        }
        let first = SocketAddr::new(self.bind_ip, state.next_port);
        for _ in 0..PORT_ATTEMPTS {
            let addr = SocketAddr::new(self.bind_ip, state.next_port);
            state.next_port = state
                .next_port
                .checked_add(1)
                .ok_or(TunnelError::NoPort(first))?;
            match listener::bind(addr).await {
                Ok(listener) => return Ok(listener),
                Err(e) => tracing::warn!(error = %e, "port skipped"),
            }
        }
        Err(TunnelError::NoPort(first))
    }

    fn connector(&self, node: &NodeAddr) -> Result<RawConnector, TunnelError> {
        let mut cfg = self.upstream.clone();
        cfg.host = node.host.clone();
        cfg.port = node.port;
        Ok(RawConnector::new(&cfg)?)
    }

    /// Re-reads the topology periodically from any known node, opening listeners for
    /// nodes that joined (or were promoted under a new address).
    async fn refresh_every(self: &Arc<Self>, every: Duration) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let links: Vec<Arc<NodeLink>> =
                self.state.lock().await.nodes.values().cloned().collect();
            let mut found = None;
            for link in &links {
                match topology::discover(&link.connector, &link.node).await {
                    Ok(nodes) => {
                        found = Some(nodes);
                        break;
                    }
                    Err(e) => tracing::debug!(node = %link.node, error = %e, "refresh failed"),
                }
            }
            match found {
                Some(nodes) => {
                    self.local_addrs(&nodes).await;
                }
                None => tracing::warn!("topology refresh failed on every known node"),
            }
        }
    }
}
