//! The client's connections to one cluster node, and the registry of every node known.
//!
//! A [`Node`] is the standalone client's pool idea per node: `pool_size` multiplexed
//! connections picked round-robin with a counter of this node's own. Connections are
//! opened lazily (the multiplexer connects on first use and reconnects with backoff), so
//! learning about a node costs nothing until a command goes there. Reads from a replica
//! use a second, separate set of connections that send `READONLY` in their handshake, so
//! the connections that carry master traffic never serve possibly stale replica data.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::config::Config;
use crate::dedicated::DedicatedPool;
use crate::error::Error;
use crate::mux::Multiplexer;
use crate::net::Endpoint;

use super::layout::addr_of;

/// Connections to one node.
#[derive(Debug)]
pub(crate) struct Node {
    /// `host:port`, as the cluster announces it.
    pub(crate) addr: Arc<str>,
    /// The host alone (a `MOVED` with an empty host means this one).
    pub(crate) host: String,
    /// How to reach it (also for pub/sub connections).
    pub(crate) endpoint: Arc<Endpoint>,
    primary: Muxes,
    /// Opened on the first replica read.
    readonly: OnceLock<Muxes>,
    readonly_endpoint: Arc<Endpoint>,
    /// Leased connections (blocking commands, WATCH), made on first use.
    dedicated: OnceLock<Arc<DedicatedPool>>,
    cfg: Arc<Config>,
}

#[derive(Debug)]
struct Muxes {
    muxes: Box<[Multiplexer]>,
    next: AtomicUsize,
}

impl Muxes {
    fn spawn(endpoint: &Arc<Endpoint>, cfg: &Config) -> Muxes {
        let muxes = (0..cfg.pool_size.max(1))
            .map(|_| Multiplexer::spawn(endpoint.clone(), cfg, None))
            .collect();
        Muxes {
            muxes,
            next: AtomicUsize::new(0),
        }
    }

    #[inline]
    fn pick(&self) -> &Multiplexer {
        let n = self.muxes.len();
        let i = if n == 1 {
            0
        } else {
            self.next.fetch_add(1, Ordering::Relaxed) % n
        };
        &self.muxes[i]
    }
}

impl Node {
    fn new(host: &str, port: u16, base: &Config) -> Result<Node, Error> {
        let mut cfg = base.clone();
        cfg.host = host.to_owned();
        cfg.port = port;
        let endpoint = Arc::new(Endpoint::new(&cfg)?);
        let mut readonly = Endpoint::new(&cfg)?;
        readonly.handshake.readonly();
        Ok(Node {
            addr: endpoint.addr.clone(),
            host: host.to_owned(),
            primary: Muxes::spawn(&endpoint, &cfg),
            endpoint,
            readonly: OnceLock::new(),
            readonly_endpoint: Arc::new(readonly),
            dedicated: OnceLock::new(),
            cfg: Arc::new(cfg),
        })
    }

    /// The connection for the next command.
    #[inline]
    pub(crate) fn pick(&self) -> &Multiplexer {
        self.primary.pick()
    }

    /// A connection that has sent `READONLY` (replica reads).
    pub(crate) fn pick_readonly(&self) -> &Multiplexer {
        self.readonly
            .get_or_init(|| Muxes::spawn(&self.readonly_endpoint, &self.cfg))
            .pick()
    }
}

impl Node {
    /// The node's pool of dedicated (leased) connections.
    pub(crate) fn dedicated(&self) -> &Arc<DedicatedPool> {
        self.dedicated
            .get_or_init(|| DedicatedPool::new(self.endpoint.clone(), self.cfg.command_timeout))
    }
}

/// Every node the client has connections to, by `host:port`. Used when a topology is
/// built or a redirect names a node; never on the ordinary command path.
#[derive(Debug)]
pub(crate) struct Registry {
    base: Config,
    nodes: Mutex<HashMap<Arc<str>, Arc<Node>>>,
}

impl Registry {
    pub(crate) fn new(base: Config) -> Registry {
        Registry {
            base,
            nodes: Mutex::new(HashMap::new()),
        }
    }

    /// The node at `host:port`, created (without connecting) if new.
    pub(crate) fn get(&self, host: &str, port: u16) -> Result<Arc<Node>, Error> {
        let addr = addr_of(host, port);
        let mut nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(node) = nodes.get(addr.as_str()) {
            return Ok(node.clone());
        }
        let node = Arc::new(Node::new(host, port, &self.base)?);
        nodes.insert(node.addr.clone(), node.clone());
        Ok(node)
    }

    /// Forgets nodes the cluster no longer lists (their connections close once no
    /// table or in-flight command holds them).
    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        let mut nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
        nodes.retain(|addr, _| keep(addr));
    }
}
