//! Cluster mode (`cluster-enabled yes`): redline-server as a Redis Cluster node, next to
//! redis-server nodes, managed by `redis-cli --cluster` as they are.
//!
//! - [`node`] and [`state`]: the nodes this node knows, who serves each of the 16384
//!   slots, the slots being migrated, the epochs, and whether the cluster is up.
//! - [`nodes_file`]: `cluster-config-file` (nodes.conf), Redis's format, written before
//!   a change is acknowledged and read back at start.
//! - [`route`]: what a command meets before it runs, as Redis's `getNodeByQuery`:
//!   `-CROSSSLOT`, `-MOVED`, `-ASK`, `-TRYAGAIN`, `-CLUSTERDOWN`, ASKING and READONLY.
//! - [`bus`]: the cluster bus on `cluster-port` (default port + 10000), Redis 7.0's
//!   binary protocol: MEET, PING/PONG with gossip, FAIL, UPDATE, PUBLISH, failover votes.
//! - `crate::cmd::cluster`: the CLUSTER command.
//!
//! The keyspace is already sharded by hash slot (a slot lies whole inside one shard), so
//! cluster mode needs no second layout: a slot's keys are found in its shard, and every
//! command reads the slot table under a read lock, only when cluster mode is on.

pub mod bus;
pub mod node;
pub mod nodes_file;
pub mod route;
pub mod state;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use crate::config::Config;
use node::{Flags, Node, NodeId};
use nodes_file::NodesFile;
use state::ClusterState;

/// The bus port is the client port plus this, unless `cluster-port` says otherwise.
pub const BUS_PORT_OFFSET: u16 = 10000;

/// Cluster mode's state in the server.
#[derive(Debug)]
pub struct Cluster {
    enabled: AtomicBool,
    /// The cluster as this node sees it.
    pub state: RwLock<ClusterState>,
    file: Mutex<Option<NodesFile>>,
    /// The bus: links to the other nodes.
    pub bus: bus::Bus,
    /// Orders MIGRATE against commands on slots being migrated or imported (see
    /// [`route::SlotGate`]).
    pub migration_gate: RwLock<()>,
    /// Changes commands made (counted after each), and the count nodes.conf holds: a
    /// pipeline of CLUSTER SETSLOTs writes the file once, before its replies leave, as
    /// Redis's `clusterBeforeSleep` does, not once a command.
    changes: AtomicU64,
    saved: AtomicU64,
}

/// Brings this node's entry in line with the settings that may change at run time
/// (Redis's `clusterUpdateMyselfFlags`, `-Ip` and `-Hostname`, which CONFIG SET and the
/// cron call): `cluster-replica-no-failover` (a flag its messages carry),
/// `cluster-announce-ip` and `cluster-announce-hostname`. True when nodes.conf changes.
pub fn update_myself(state: &mut ClusterState, settings: &Settings) -> bool {
    let me = state.me_mut();
    let mut save = false;
    if me.hostname != settings.announce_hostname {
        me.hostname.clone_from(&settings.announce_hostname);
    }
    if !settings.announce_ip.is_empty() && me.ip != settings.announce_ip {
        me.ip.clone_from(&settings.announce_ip);
        save = true;
    }
    if me.flags.any(Flags::NOFAILOVER) != settings.no_failover {
        if settings.no_failover {
            me.flags.set(Flags::NOFAILOVER);
        } else {
            me.flags.clear(Flags::NOFAILOVER);
        }
        save = true;
    }
    save
}

impl Default for Cluster {
    fn default() -> Cluster {
        Cluster {
            enabled: AtomicBool::new(false),
            state: RwLock::new(ClusterState::unused()),
            file: Mutex::new(None),
            bus: bus::Bus::default(),
            migration_gate: RwLock::new(()),
            changes: AtomicU64::new(0),
            saved: AtomicU64::new(0),
        }
    }
}

/// The settings the cluster reads from the configuration.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `cluster-node-timeout`, in milliseconds.
    pub node_timeout: u64,
    /// `cluster-require-full-coverage`.
    pub full_coverage: bool,
    /// `cluster-allow-reads-when-down`.
    pub reads_when_down: bool,
    /// `cluster-allow-pubsubshard-when-down`.
    pub pubsubshard_when_down: bool,
    /// `cluster-allow-replica-migration`.
    pub replica_migration: bool,
    /// `cluster-replica-no-failover`.
    pub no_failover: bool,
    /// `cluster-migration-barrier`: the working replicas a master keeps before one of
    /// them may move to an orphaned master.
    pub migration_barrier: u64,
    /// `cluster-link-sendbuf-limit`: bytes a link may hold unwritten (0: no limit).
    pub link_sendbuf_limit: u64,
    /// `cluster-replica-validity-factor`.
    pub validity_factor: u64,
    /// `cluster-announce-ip`.
    pub announce_ip: String,
    /// `cluster-announce-hostname`.
    pub announce_hostname: String,
    /// `cluster-preferred-endpoint-type`.
    pub endpoint: Endpoint,
}

/// What CLUSTER SLOTS and redirections name a node by (`cluster-preferred-endpoint-type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// Its IP address.
    Ip,
    /// Its announced hostname (`?` when it has none).
    Hostname,
    /// Neither: clients reuse the address they used.
    Unknown,
}

impl Settings {
    /// The cluster settings in `config`.
    pub fn from_config(config: &Config) -> Settings {
        let int = |name: &str| u64::try_from(config.param_int(name)).unwrap_or(0);
        Settings {
            node_timeout: int("cluster-node-timeout"),
            full_coverage: config.param_bool("cluster-require-full-coverage"),
            reads_when_down: config.param_bool("cluster-allow-reads-when-down"),
            pubsubshard_when_down: config.param_bool("cluster-allow-pubsubshard-when-down"),
            replica_migration: config.param_bool("cluster-allow-replica-migration"),
            no_failover: config.param_bool("cluster-replica-no-failover"),
            migration_barrier: int("cluster-migration-barrier"),
            link_sendbuf_limit: int("cluster-link-sendbuf-limit"),
            validity_factor: int("cluster-replica-validity-factor"),
            announce_ip: config.param("cluster-announce-ip").to_string(),
            announce_hostname: config.param("cluster-announce-hostname").to_string(),
            endpoint: Endpoint::from_config(config),
        }
    }
}

impl Endpoint {
    /// `cluster-preferred-endpoint-type` in `config`.
    pub fn from_config(config: &Config) -> Endpoint {
        match config.param("cluster-preferred-endpoint-type") {
            "hostname" => Endpoint::Hostname,
            "unknown-endpoint" => Endpoint::Unknown,
            _ => Endpoint::Ip,
        }
    }
}

impl Cluster {
    /// Whether cluster mode is on (one relaxed load: what every command pays).
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Turns cluster mode on at start: reads `cluster-config-file` (creating it with a
    /// fresh node if it does not exist) and takes this node's ports from `config`.
    /// Returns the bus port.
    pub fn open(&self, config: &Config, port: u16, tls_port: u16) -> Result<u16, String> {
        let path = config.param("cluster-config-file").to_string();
        let (mut file, text) = NodesFile::open(&path)?;
        let now = crate::store::now_ms();
        let mut state = if text.trim().is_empty() {
            let me = Node::new(
                NodeId::random(),
                "",
                0,
                0,
                Flags::MYSELF | Flags::MASTER,
                now,
            );
            tracing::info!("No cluster configuration found, I'm {}", me.id);
            ClusterState::new(me, now)
        } else {
            let state = nodes_file::parse(&text, now)?;
            tracing::info!("Node configuration loaded, I'm {}", state.myself);
            state
        };
        // The bus port follows the port clients of the bus's kind use (Redis's
        // `clusterInit`): the TLS one with `tls-cluster`.
        let client_port = if config.param_bool("tls-cluster") && tls_port != 0 {
            tls_port
        } else {
            port
        };
        let bus_port = bus_port(config, client_port);
        announce_myself(&mut state, config, port, tls_port, bus_port);
        file.save(&state, true)
            .map_err(|e| format!("Fatal: can't update cluster config file {path}: {e}"))?;
        *self.state.write() = state;
        *self.file.lock() = Some(file);
        self.enabled.store(true, Ordering::Relaxed);
        Ok(bus_port)
    }

    /// Takes `other`'s view of the cluster as it is now, without its nodes.conf or its
    /// bus links: a forked debugging session's copy (`crate::scripting::forked`), whose
    /// scripts meet the cluster's checks as they would on the node.
    pub fn copy_view_of(&self, other: &Cluster) {
        *self.state.write() = other.state.read().clone();
        self.enabled.store(other.enabled(), Ordering::Relaxed);
    }

    /// Records a change a command made: [`Cluster::save_changes`] writes it before the
    /// command's reply leaves.
    pub fn note_change(&self) {
        self.changes.fetch_add(1, Ordering::AcqRel);
    }

    /// Writes the state to `cluster-config-file` if a command changed it since the last
    /// write; when another connection is writing it, waits for that write, which may
    /// hold this connection's change. Called before replies go out.
    pub fn save_changes(&self) {
        if self.saved.load(Ordering::Acquire) >= self.changes.load(Ordering::Acquire) {
            return;
        }
        let mut file = self.file.lock();
        // Read before the state is: a change counted later is written again.
        let changes = self.changes.load(Ordering::Acquire);
        if self.saved.load(Ordering::Acquire) >= changes {
            return;
        }
        let _ = self.write_locked(&mut file, false);
        self.saved.store(changes, Ordering::Release);
    }

    /// Writes the state to `cluster-config-file` now (CONFIG SET of a setting it holds).
    pub fn save(&self) -> std::io::Result<()> {
        self.write_locked(&mut self.file.lock(), false)
    }

    /// Writes the state and waits until it is on disk: epochs, slots the bus brought,
    /// failovers, CLUSTER SAVECONFIG.
    pub fn save_synced(&self) -> std::io::Result<()> {
        self.write_locked(&mut self.file.lock(), true)
    }

    fn write_locked(&self, file: &mut Option<NodesFile>, sync: bool) -> std::io::Result<()> {
        let Some(file) = file.as_mut() else {
            return Ok(());
        };
        let state = self.state.read();
        file.save(&state, sync).inspect_err(|e| {
            tracing::warn!(
                "Could not save the cluster configuration to {}: {e}",
                file.path()
            );
        })
    }
}

/// The bus port: `cluster-port`, or the client port + 10000.
pub fn bus_port(config: &Config, port: u16) -> u16 {
    match u16::try_from(config.param_int("cluster-port")) {
        Ok(p) if p != 0 => p,
        _ => port.wrapping_add(BUS_PORT_OFFSET),
    }
}

/// Sets this node's announced address and ports from `config` (Redis's
/// `clusterUpdateMyselfAnnouncedPorts`, `clusterUpdateMyselfIp`, hostname).
pub fn announce_myself(
    state: &mut ClusterState,
    config: &Config,
    port: u16,
    tls_port: u16,
    bus_port: u16,
) {
    let announced = |name: &str| {
        u16::try_from(config.param_int(name))
            .ok()
            .filter(|&p| p != 0)
    };
    // Redis's `deriveAnnouncedPorts`: with `tls-cluster` the TLS port is the node's
    // port and the plain one its pport.
    let tls_cluster = config.param_bool("tls-cluster") && tls_port != 0;
    let (mut client_port, mut plain_port) = if tls_cluster {
        (tls_port, port)
    } else {
        (port, 0)
    };
    match announced("cluster-announce-tls-port") {
        Some(announced_tls) if tls_cluster => {
            client_port = announced_tls;
            plain_port = announced("cluster-announce-port").unwrap_or(0);
        }
        _ => {
            if let Some(announced_port) = announced("cluster-announce-port") {
                client_port = announced_port;
            }
        }
    }
    let me = state.me_mut();
    me.port = client_port;
    me.pport = plain_port;
    me.cport = announced("cluster-announce-bus-port").unwrap_or(bus_port);
    let ip = config.param("cluster-announce-ip");
    if !ip.is_empty() {
        me.ip = ip.to_string();
    }
    me.hostname = config.param("cluster-announce-hostname").to_string();
}

/// The cluster settings as configured now.
pub fn settings(shared: &crate::shared::Shared) -> Settings {
    Settings::from_config(&shared.config.read())
}
