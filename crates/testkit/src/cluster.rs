//! A Redis Cluster of real `redis-server` nodes (default 3 masters + 3 replicas) on free
//! loopback ports, created with `redis-cli --cluster create`, for routing and fault tests;
//! or of `redline-server` nodes ([`RedisClusterBuilder::redline`]), or of both kinds
//! ([`RedisClusterBuilder::mixed`]), created and checked the same way.
//!
//! "Healthy" is checked, not assumed: every running node says `cluster_state:ok` and knows
//! every node, all running nodes return the same `CLUSTER SLOTS` (ranges, masters and
//! replicas), the slots are all covered, no killed node is still listed as a master, and
//! every replica's link to its master is up.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::control::{info_field, Conn, Reply, TlsClient};
use crate::error::{Error, Result};
use crate::process::{ServerProcess, Spec};
use crate::redis::{self, base_args, cli_command, redis_server_bin, MISSING_REDIS};
use crate::tls::TlsCerts;

/// Redis Cluster's number of hash slots.
pub const SLOTS: u16 = 16384;

const POLL: Duration = Duration::from_millis(100);
const CREATE_TIMEOUT: Duration = Duration::from_secs(60);

/// A node's role as reported by `ROLE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Serves slots (or could).
    Master,
    /// Replicates a master.
    Replica,
}

/// One contiguous range of slots and the nodes serving it (indices into the cluster).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SlotRange {
    /// First slot, inclusive.
    pub start: u16,
    /// Last slot, inclusive.
    pub end: u16,
    /// The node index of the master.
    pub master: usize,
    /// The node indices of its replicas, ascending.
    pub replicas: Vec<usize>,
}

/// A running Redis Cluster; every node is SIGKILLed and its directory removed on drop.
///
/// ```no_run
/// use std::time::Duration;
/// use redline_testkit::RedisCluster;
///
/// let mut cluster = RedisCluster::start()?;
/// let master = cluster.master_of_slot(0)?;
/// cluster.kill(master)?;
/// let promoted = cluster.wait_for_failover(master, Duration::from_secs(30))?;
/// assert_ne!(promoted, master);
/// cluster.restart(master)?; // comes back as a replica of `promoted`
/// cluster.wait_until_healthy(Duration::from_secs(30))?;
/// # Ok::<(), redline_testkit::Error>(())
/// ```
pub struct RedisCluster {
    nodes: Vec<ServerProcess>,
    ids: Vec<String>,
    tls: Option<TlsCerts>,
    password: Option<String>,
    /// For each node killed while it was a master: one slot it served, to find its successor.
    killed_slot: Vec<Option<u16>>,
}

impl std::fmt::Debug for RedisCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCluster")
            .field("addrs", &self.addrs())
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Options for [`RedisCluster`]; see [`RedisCluster::builder`].
#[derive(Debug, Clone)]
pub struct RedisClusterBuilder {
    servers: Servers,
    masters: usize,
    replicas_per_master: usize,
    node_timeout: Duration,
    tls: Option<TlsCerts>,
    args: Vec<String>,
    ready_timeout: Duration,
}

/// Which server program runs each node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Servers {
    /// `redis-server` everywhere.
    Redis,
    /// `redline-server` everywhere.
    Redline,
    /// `redline-server` on even node indices, `redis-server` on odd ones.
    Mixed,
}

impl RedisClusterBuilder {
    /// Runs every node on `redline-server` in cluster mode instead of `redis-server`.
    pub fn redline(mut self) -> Self {
        self.servers = Servers::Redline;
        self
    }

    /// Runs `redline-server` on even node indices and `redis-server` on odd ones: one
    /// cluster bus, replication both ways.
    pub fn mixed(mut self) -> Self {
        self.servers = Servers::Mixed;
        self
    }

    /// Number of masters (at least 3, as `redis-cli --cluster create` requires). Default 3.
    pub fn masters(mut self, n: usize) -> Self {
        self.masters = n;
        self
    }

    /// Replicas per master. Default 1.
    pub fn replicas_per_master(mut self, n: usize) -> Self {
        self.replicas_per_master = n;
        self
    }

    /// `cluster-node-timeout`: how long a node may be unreachable before failover starts.
    /// Default 1 s, short so fault tests are quick.
    pub fn node_timeout(mut self, timeout: Duration) -> Self {
        self.node_timeout = timeout;
        self
    }

    /// TLS everywhere: clients, the cluster bus and replication (`--tls-cluster yes
    /// --tls-replication yes`); nodes have no plain port.
    pub fn tls(mut self, certs: &TlsCerts) -> Self {
        self.tls = Some(certs.clone());
        self
    }

    /// Requires this password on every node (`--requirepass`, and `--masterauth` so
    /// replicas can sync); the kit authenticates its own checks.
    pub fn password(self, password: impl Into<String>) -> Self {
        self.arg("--requirepass", password)
    }

    /// Adds one `redis-server` option with its value to every node.
    pub fn arg(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.args.push(name.into());
        self.args.push(value.into());
        self
    }

    /// Adds `redis-server` arguments as they are to every node, for options that take
    /// more than one value (`--rename-command GET MYGET`).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// How long creation may take until the cluster is healthy. Default 60 s.
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Starts the nodes, creates the cluster and waits until it is healthy.
    pub fn start(self) -> Result<RedisCluster> {
        if self.masters < 3 {
            return Err(Error::Invalid(format!(
                "a cluster needs at least 3 masters, not {}",
                self.masters
            )));
        }
        let count = self.masters * (1 + self.replicas_per_master);
        let password = redis::requirepass(&self.args);
        let control_tls = self
            .tls
            .as_ref()
            .map(|c| TlsClient::new(c.ca_cert_der()))
            .transpose()?;
        let certs = self.tls.clone();
        let mut extra = self.args.clone();
        if let Some(pw) = &password {
            // Replicas authenticate to their master with the same password.
            extra.extend(["--masterauth".to_string(), pw.clone()]);
        }
        let timeout_ms = self.node_timeout.as_millis().max(1).to_string();
        let redis_spec = Spec {
            program: redis_server_bin(),
            name: "redis-cluster-node",
            args: Arc::new(move |port, dir| {
                let mut args = base_args(port, dir, certs.as_ref());
                args.extend(
                    ["--cluster-enabled", "yes", "--cluster-config-file"].map(String::from),
                );
                args.push(dir.join("nodes.conf").display().to_string());
                args.push("--cluster-node-timeout".into());
                args.push(timeout_ms.clone());
                // Redis 7.0 leaves a replica out of CLUSTER SLOTS while its replication
                // offset is 0, which lasts until the master's first replication PING
                // (every 10 s by default); every second keeps start-up and rejoins quick.
                args.extend(["--repl-ping-replica-period", "1"].map(String::from));
                if certs.is_some() {
                    args.extend(
                        ["--tls-cluster", "yes", "--tls-replication", "yes"].map(String::from),
                    );
                }
                args.extend(extra.iter().cloned());
                args
            }),
            with_bus: true,
            tls: control_tls,
            password: password.clone(),
            check_pid: true,
            startup_timeout: redis::STARTUP_TIMEOUT,
            missing_hint: MISSING_REDIS,
        };
        let redline_spec = match self.servers {
            Servers::Redis => None,
            Servers::Redline | Servers::Mixed => {
                let mut spec = redis_spec.clone();
                let args = redis_spec.args.clone();
                spec.program = crate::redline::redline_server_bin()?;
                spec.name = "redline-cluster-node";
                spec.check_pid = false;
                spec.missing_hint = crate::redline::MISSING_REDLINE;
                spec.args = Arc::new(move |port, dir| {
                    let mut all = args(port, dir);
                    // As redis-server nodes in Redis's own suite, DEBUG is on.
                    all.extend(["--enable-debug-command", "yes"].map(String::from));
                    all
                });
                Some(spec)
            }
        };
        let mut nodes = Vec::with_capacity(count);
        for index in 0..count {
            let redline = match self.servers {
                Servers::Redis => false,
                Servers::Redline => true,
                Servers::Mixed => index % 2 == 0,
            };
            let spec = match (&redline_spec, redline) {
                (Some(spec), true) => spec.clone(),
                _ => redis_spec.clone(),
            };
            nodes.push(ServerProcess::start(spec)?);
        }
        let ids = nodes
            .iter()
            .map(|n| n.conn()?.text(&["CLUSTER", "MYID"]))
            .collect::<Result<Vec<_>>>()?;
        let mut cluster = RedisCluster {
            killed_slot: vec![None; nodes.len()],
            nodes,
            ids,
            tls: self.tls,
            password: password.clone(),
        };
        cluster.create(self.replicas_per_master, password.as_deref())?;
        cluster.wait_healthy(
            Some((self.masters, self.replicas_per_master)),
            self.ready_timeout,
        )?;
        Ok(cluster)
    }
}

impl RedisCluster {
    /// Starts 3 masters with 1 replica each, node timeout 1 s, no TLS.
    pub fn start() -> Result<Self> {
        Self::builder().start()
    }

    /// Options: sizes, node timeout, TLS, extra node arguments.
    pub fn builder() -> RedisClusterBuilder {
        RedisClusterBuilder {
            servers: Servers::Redis,
            masters: 3,
            replicas_per_master: 1,
            node_timeout: Duration::from_secs(1),
            tls: None,
            args: Vec::new(),
            ready_timeout: Duration::from_secs(60),
        }
    }

    /// Number of nodes (running or killed).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: a cluster has at least 3 nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every node's address, by node index.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(ServerProcess::addr).collect()
    }

    /// Node `node`'s address. Panics if `node >= len()`, like slice indexing.
    pub fn addr(&self, node: usize) -> SocketAddr {
        self.nodes[node].addr()
    }

    /// Node `node`'s cluster id (`CLUSTER MYID`). Panics if `node >= len()`.
    pub fn node_id(&self, node: usize) -> &str {
        &self.ids[node]
    }

    /// Node `node`'s process id, `None` while killed. Panics if `node >= len()`.
    pub fn pid(&self, node: usize) -> Option<u32> {
        self.nodes[node].pid()
    }

    /// Node `node`'s log tail. Panics if `node >= len()`.
    pub fn log_tail(&self, node: usize) -> String {
        self.nodes[node].log_tail()
    }

    /// The certificates of a TLS cluster.
    pub fn tls(&self) -> Option<&TlsCerts> {
        self.tls.as_ref()
    }

    /// The password every node requires, if any.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// `redis://127.0.0.1:<port>` (or `rediss://`, with `:<password>@` when set) of every
    /// node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| redis::url(self.tls.is_some(), self.password.as_deref(), n.addr()))
            .collect()
    }

    /// Whether node `node` is alive.
    pub fn is_running(&mut self, node: usize) -> Result<bool> {
        Ok(self.node_mut(node)?.is_running())
    }

    /// Sends one command to node `node` on a fresh control connection.
    pub fn cmd(&self, node: usize, args: &[&str]) -> Result<Reply> {
        self.node(node)?.cmd(args)
    }

    /// A `redis-cli` command pointed at node `node` (TLS files and password included; add
    /// `-c` to follow redirections).
    pub fn cli(&self, node: usize) -> Result<Command> {
        Ok(cli_command(
            self.node(node)?.addr(),
            self.tls.as_ref(),
            self.password.as_deref(),
        ))
    }

    /// `ROLE` of node `node`.
    pub fn role(&self, node: usize) -> Result<Role> {
        let reply = self.cmd(node, &["ROLE"])?;
        match reply.items().and_then(|i| i.first()).and_then(Reply::text) {
            Some(r) if r == "master" => Ok(Role::Master),
            Some(r) if r == "slave" => Ok(Role::Replica),
            _ => Err(Error::Reply {
                command: "ROLE".into(),
                addr: self.addr(node).to_string(),
                reply: format!("{reply:?}"),
            }),
        }
    }

    /// Running nodes whose `ROLE` is master.
    pub fn masters(&mut self) -> Result<Vec<usize>> {
        self.running_with_role(Role::Master)
    }

    /// Running nodes whose `ROLE` is replica.
    pub fn replicas(&mut self) -> Result<Vec<usize>> {
        self.running_with_role(Role::Replica)
    }

    fn running_with_role(&mut self, role: Role) -> Result<Vec<usize>> {
        let mut out = Vec::new();
        for node in self.running() {
            if self.role(node)? == role {
                out.push(node);
            }
        }
        Ok(out)
    }

    /// The slot map as the first running node that answers sees it.
    pub fn slot_ranges(&mut self) -> Result<Vec<SlotRange>> {
        let mut last = Error::Invalid("no node is running".into());
        for node in self.running() {
            match self.slot_view(node) {
                Ok(view) => return Ok(view),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// The node index of the master serving `slot`.
    pub fn master_of_slot(&mut self, slot: u16) -> Result<usize> {
        self.slot_ranges()?
            .iter()
            .find(|r| (r.start..=r.end).contains(&slot))
            .map(|r| r.master)
            .ok_or_else(|| Error::Invalid(format!("slot {slot} is not served")))
    }

    /// SIGKILLs node `node` (like `kill -9`). Its port and directory are kept for
    /// [`restart`](Self::restart).
    pub fn kill(&mut self, node: usize) -> Result<()> {
        self.node(node)?;
        // Remember a slot it serves, so wait_for_failover can tell who took over.
        self.killed_slot[node] = self
            .slot_view(node)
            .ok()
            .and_then(|view| view.into_iter().find(|r| r.master == node))
            .map(|r| r.start);
        self.nodes[node].kill();
        Ok(())
    }

    /// Starts node `node` again on its port with its `nodes.conf` (same id), and waits
    /// until it answers `PING`. It rejoins the cluster on its own; use
    /// [`wait_until_healthy`](Self::wait_until_healthy) to wait for that.
    pub fn restart(&mut self, node: usize) -> Result<()> {
        self.node_mut(node)?.restart()
    }

    /// Waits until the slots of `killed` (a master killed with [`kill`](Self::kill)) are
    /// served by another node and the cluster is healthy again; returns the new master.
    pub fn wait_for_failover(&mut self, killed: usize, timeout: Duration) -> Result<usize> {
        self.node(killed)?;
        let slot = self.killed_slot[killed].ok_or_else(|| {
            Error::Invalid(format!("node {killed} was not a master when it was killed"))
        })?;
        self.wait_healthy(None, timeout)?;
        let promoted = self.master_of_slot(slot)?;
        if promoted == killed {
            return Err(Error::Invalid(format!(
                "node {killed} serves slot {slot} again; it was restarted before failover"
            )));
        }
        Ok(promoted)
    }

    /// Waits until the running nodes form a healthy cluster (see the module docs).
    pub fn wait_until_healthy(&mut self, timeout: Duration) -> Result<()> {
        self.wait_healthy(None, timeout)
    }

    fn node(&self, node: usize) -> Result<&ServerProcess> {
        self.nodes.get(node).ok_or_else(|| self.no_such(node))
    }

    fn node_mut(&mut self, node: usize) -> Result<&mut ServerProcess> {
        let err = self.no_such(node);
        self.nodes.get_mut(node).ok_or(err)
    }

    fn no_such(&self, node: usize) -> Error {
        Error::Invalid(format!(
            "no node {node}: the cluster has {}",
            self.nodes.len()
        ))
    }

    fn running(&mut self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].is_running())
            .collect()
    }

    /// `redis-cli --cluster create` over all nodes.
    fn create(&self, replicas: usize, password: Option<&str>) -> Result<()> {
        let log_path = self.nodes[0].dir().join("cluster-create.log");
        let log = File::create(&log_path)
            .map_err(|e| Error::io(format!("create {}", log_path.display()), e))?;
        let log_err = log
            .try_clone()
            .map_err(|e| Error::io(format!("open {}", log_path.display()), e))?;
        let mut cmd = Command::new(redis::redis_cli_bin());
        if let Some(certs) = &self.tls {
            cmd.args(certs.redis_cli_args());
        }
        if let Some(pw) = password {
            cmd.args(["-a", pw, "--no-auth-warning"]);
        }
        cmd.args(["--cluster", "create"])
            .args(self.addrs().iter().map(SocketAddr::to_string))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let command = format!("{cmd:?}");
        let mut child = cmd.spawn().map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound(format!(
                "{} not found: {MISSING_REDIS}",
                redis::redis_cli_bin().display()
            )),
            _ => Error::Spawn {
                program: redis::redis_cli_bin().display().to_string(),
                source,
            },
        })?;
        let deadline = Instant::now() + CREATE_TIMEOUT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status.to_string(),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break format!("killed after {CREATE_TIMEOUT:?}");
                }
                Err(e) => return Err(Error::io("wait for redis-cli", e)),
            }
        };
        let output = std::fs::read_to_string(&log_path).unwrap_or_default();
        if status.contains("exit status: 0") && output.contains("[OK] All 16384 slots covered") {
            return Ok(());
        }
        Err(Error::Tool {
            command,
            status,
            output,
        })
    }

    /// Polls [`health`](Self::health) until it passes or `timeout` elapses.
    fn wait_healthy(&mut self, full: Option<(usize, usize)>, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let last = match self.health(full) {
                Ok(()) => return Ok(()),
                Err(problem) => problem,
            };
            if Instant::now() >= deadline {
                let log_tail = self
                    .nodes
                    .iter()
                    .map(|n| {
                        let tail = n.log_tail();
                        let lines: Vec<&str> = tail.lines().collect();
                        let short = lines[lines.len().saturating_sub(6)..].join("\n");
                        format!("--- {}\n{short}", n.describe())
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                return Err(Error::Timeout {
                    what: "redis cluster health".into(),
                    waited: timeout,
                    last,
                    log_tail,
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// `Ok` if healthy, else a description of the first problem seen. With `full`, also
    /// requires exactly `(masters, replicas per master)`.
    fn health(&mut self, full: Option<(usize, usize)>) -> Result<(), String> {
        let running = self.running();
        let total = self.nodes.len().to_string();
        let mut agreed: Option<(usize, Vec<SlotRange>)> = None;
        for &node in &running {
            let describe = self.nodes[node].describe();
            let mut conn = self.nodes[node]
                .conn()
                .map_err(|e| format!("{describe}: {e}"))?;
            let info = conn.text(&["CLUSTER", "INFO"]).map_err(|e| e.to_string())?;
            let state = info_field(&info, "cluster_state");
            if state != Some("ok") {
                return Err(format!("{describe}: cluster_state is {state:?}"));
            }
            let known = info_field(&info, "cluster_known_nodes");
            if known != Some(total.as_str()) {
                return Err(format!("{describe}: knows {known:?} nodes, not {total}"));
            }
            let view = self.parse_view(&mut conn).map_err(|e| e.to_string())?;
            match &agreed {
                None => agreed = Some((node, view)),
                Some((first, seen)) if *seen != view => {
                    return Err(format!(
                        "nodes {first} and {node} disagree: {seen:?} vs {view:?}"
                    ))
                }
                Some(_) => {}
            }
        }
        let Some((_, view)) = agreed else {
            return Err("no node is running".into());
        };
        let covered: u32 = view
            .iter()
            .map(|r| u32::from(r.end) - u32::from(r.start) + 1)
            .sum();
        if covered != u32::from(SLOTS) {
            return Err(format!("{covered} of {SLOTS} slots covered"));
        }
        let mut roles: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for r in &view {
            roles.entry(r.master).or_default().extend(&r.replicas);
        }
        for replicas in roles.values_mut() {
            replicas.sort_unstable();
            replicas.dedup();
        }
        for &node in &running {
            let listed = roles.contains_key(&node) || roles.values().any(|r| r.contains(&node));
            if !listed {
                return Err(format!(
                    "node {node} is running but not in CLUSTER SLOTS yet"
                ));
            }
        }
        if let Some(&dead) = roles.keys().find(|m| !running.contains(m)) {
            return Err(format!("killed node {dead} is still listed as a master"));
        }
        if let Some((masters, per_master)) = full {
            if roles.len() != masters || roles.values().any(|r| r.len() != per_master) {
                return Err(format!(
                    "want {masters} masters with {per_master} replicas each, have {roles:?}"
                ));
            }
        }
        for replica in roles.values().flatten() {
            let info = self.nodes[*replica]
                .conn()
                .and_then(|mut c| c.text(&["INFO", "replication"]))
                .map_err(|e| e.to_string())?;
            let link = info_field(&info, "master_link_status");
            if link != Some("up") {
                return Err(format!("replica {replica}: master_link_status {link:?}"));
            }
        }
        Ok(())
    }

    fn slot_view(&self, node: usize) -> Result<Vec<SlotRange>> {
        self.parse_view(&mut self.node(node)?.conn()?)
    }

    /// `CLUSTER SLOTS`, with ports turned into node indices and everything sorted.
    fn parse_view(&self, conn: &mut Conn) -> Result<Vec<SlotRange>> {
        let args = ["CLUSTER", "SLOTS"];
        let reply = conn.cmd(&args)?;
        let bad = || conn.unexpected(&args, &reply);
        let mut view = Vec::new();
        for range in reply.items().ok_or_else(bad)? {
            let items = range.items().ok_or_else(bad)?;
            let slot = |i: usize| {
                items
                    .get(i)
                    .and_then(Reply::integer)
                    .and_then(|n| u16::try_from(n).ok())
            };
            let (Some(start), Some(end)) = (slot(0), slot(1)) else {
                return Err(bad());
            };
            let mut nodes = Vec::new();
            for endpoint in items.get(2..).unwrap_or_default() {
                let port = endpoint
                    .items()
                    .and_then(|e| e.get(1))
                    .and_then(Reply::integer)
                    .ok_or_else(bad)?;
                let index = self
                    .nodes
                    .iter()
                    .position(|n| i64::from(n.port()) == port)
                    .ok_or_else(bad)?;
                nodes.push(index);
            }
            let Some((&master, replicas)) = nodes.split_first() else {
                return Err(bad());
            };
            let mut replicas = replicas.to_vec();
            replicas.sort_unstable();
            view.push(SlotRange {
                start,
                end,
                master,
                replicas,
            });
        }
        view.sort();
        Ok(view)
    }
}
