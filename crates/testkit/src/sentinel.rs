//! Redis Sentinel for one test: N `redis-sentinel` processes on free loopback ports,
//! monitoring one master (redis-server or redline-server), killed on drop.
//!
//! Each sentinel gets its own private directory and its own configuration file there:
//! Sentinel rewrites that file whenever its view changes (new epochs, discovered
//! replicas and sentinels), so files are never shared. The file is written when the
//! process is launched on a port; a restart on the same port keeps what Sentinel wrote,
//! as a restarted production sentinel would.
//!
//! `start` returns once the group is usable for a failover: every sentinel sees the
//! master up, knows every other sentinel (they find each other through the master's
//! `__sentinel__:hello` channel, every 2 s), and knows the expected number of replicas
//! (from the master's `INFO replication`). Timings default to what makes tests quick:
//! `down-after-milliseconds 1000`, `failover-timeout 2000`.
//!
//! ```no_run
//! use std::time::Duration;
//! use redline_testkit::{RedisSentinels, RedlineServer};
//!
//! let master = RedlineServer::start()?;
//! let sentinels = RedisSentinels::builder().count(3).quorum(2).start(master.addr())?;
//! assert_eq!(sentinels.master_addr()?, master.addr());
//! println!("clients use {}", sentinels.url());
//! # Ok::<(), redline_testkit::Error>(())
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::control::Reply;
use crate::error::{Error, Result};
use crate::process::{ServerProcess, Spec};
use crate::redis::STARTUP_TIMEOUT;

const MISSING_SENTINEL: &str =
    "`make deps` installs redis-sentinel (or set REDIS_SENTINEL_BIN to the program)";
const CONFIG_FILE: &str = "sentinel.conf";
const POLL: Duration = Duration::from_millis(100);

/// The `redis-sentinel` program: `$REDIS_SENTINEL_BIN`, else `redis-sentinel` from `PATH`.
fn redis_sentinel_bin() -> PathBuf {
    std::env::var_os("REDIS_SENTINEL_BIN").map_or_else(|| "redis-sentinel".into(), PathBuf::from)
}

/// Options for [`RedisSentinels`]; see [`RedisSentinels::builder`].
#[derive(Debug, Clone)]
pub struct RedisSentinelsBuilder {
    count: usize,
    quorum: usize,
    master_name: String,
    down_after: Duration,
    failover_timeout: Duration,
    replicas: usize,
    ready_timeout: Duration,
}

impl RedisSentinelsBuilder {
    /// How many sentinels (default 3).
    pub fn count(mut self, count: usize) -> Self {
        self.count = count;
        self
    }

    /// How many sentinels must agree the master is down (default 2).
    pub fn quorum(mut self, quorum: usize) -> Self {
        self.quorum = quorum;
        self
    }

    /// The name the master is monitored under (default `mymaster`).
    pub fn master_name(mut self, name: impl Into<String>) -> Self {
        self.master_name = name.into();
        self
    }

    /// `down-after-milliseconds` (default 1 s).
    pub fn down_after(mut self, after: Duration) -> Self {
        self.down_after = after;
        self
    }

    /// `failover-timeout` (default 2 s).
    pub fn failover_timeout(mut self, timeout: Duration) -> Self {
        self.failover_timeout = timeout;
        self
    }

    /// How many replicas every sentinel must know before `start` returns (default 0).
    /// Start the sentinels after the replicas are attached: Sentinel reads them from the
    /// master's `INFO` when it connects, then only every 10 s.
    pub fn replicas(mut self, replicas: usize) -> Self {
        self.replicas = replicas;
        self
    }

    /// How long the group may take to become ready (default 30 s).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Starts the sentinels monitoring `master` and waits until they are ready for a
    /// failover (see the module docs).
    pub fn start(self, master: SocketAddr) -> Result<RedisSentinels> {
        if self.count == 0 || self.quorum == 0 || self.quorum > self.count {
            return Err(Error::Invalid(format!(
                "{} sentinels with quorum {}: need 1 <= quorum <= count",
                self.count, self.quorum
            )));
        }
        let settings = Arc::new(self.clone());
        let mut nodes = Vec::with_capacity(self.count);
        for _ in 0..self.count {
            let settings = settings.clone();
            let spec = Spec {
                program: redis_sentinel_bin(),
                name: "redis-sentinel",
                args: Arc::new(move |port, dir| {
                    let path = dir.join(CONFIG_FILE);
                    let own_port = format!("port {port}\n");
                    let current = std::fs::read_to_string(&path).unwrap_or_default();
                    if !current.starts_with(&own_port) {
                        // A failed write shows as the sentinel exiting with "can't open
                        // config file" in its log, which `launch` reports.
                        let _ = std::fs::write(&path, settings.config_text(port, dir, master));
                    }
                    vec![path.display().to_string()]
                }),
                with_bus: false,
                tls: None,
                password: None,
                check_pid: true,
                startup_timeout: STARTUP_TIMEOUT,
                missing_hint: MISSING_SENTINEL,
            };
            nodes.push(ServerProcess::start(spec)?);
        }
        let sentinels = RedisSentinels {
            nodes,
            master_name: self.master_name,
            down_after: self.down_after,
            failover_timeout: self.failover_timeout,
        };
        sentinels.wait_ready(self.replicas, self.ready_timeout)?;
        Ok(sentinels)
    }

    fn config_text(&self, port: u16, dir: &std::path::Path, master: SocketAddr) -> String {
        let name = &self.master_name;
        format!(
            "port {port}\nbind 127.0.0.1\ndaemonize no\ndir \"{dir}\"\n\
             sentinel monitor {name} {ip} {mport} {quorum}\n\
             sentinel down-after-milliseconds {name} {down}\n\
             sentinel failover-timeout {name} {failover}\n\
             sentinel parallel-syncs {name} 1\n",
            dir = dir.display(),
            ip = master.ip(),
            mport = master.port(),
            quorum = self.quorum,
            down = self.down_after.as_millis(),
            failover = self.failover_timeout.as_millis(),
        )
    }
}

/// A group of `redis-sentinel` processes monitoring one master, each on a free loopback
/// port with its own directory and configuration file; SIGKILLed and cleaned up when
/// dropped, also when the test panics.
pub struct RedisSentinels {
    nodes: Vec<ServerProcess>,
    master_name: String,
    down_after: Duration,
    failover_timeout: Duration,
}

impl std::fmt::Debug for RedisSentinels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSentinels")
            .field("addrs", &self.addrs())
            .field("master_name", &self.master_name)
            .finish()
    }
}

impl RedisSentinels {
    /// Three sentinels, quorum 2, monitoring `master` as `mymaster`.
    pub fn start(master: SocketAddr) -> Result<Self> {
        Self::builder().start(master)
    }

    /// Options: count, quorum, name, timings, replicas to wait for.
    pub fn builder() -> RedisSentinelsBuilder {
        RedisSentinelsBuilder {
            count: 3,
            quorum: 2,
            master_name: "mymaster".into(),
            down_after: Duration::from_secs(1),
            failover_timeout: Duration::from_secs(2),
            replicas: 0,
            ready_timeout: Duration::from_secs(30),
        }
    }

    /// How many sentinels the group has.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the group is empty (never, once started).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every sentinel's `127.0.0.1:<port>`.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(ServerProcess::addr).collect()
    }

    /// The name the master is monitored under.
    pub fn master_name(&self) -> &str {
        &self.master_name
    }

    /// `redis+sentinel://127.0.0.1:<p1>,127.0.0.1:<p2>,.../<master name>`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.addrs().iter().map(ToString::to_string).collect();
        format!("redis+sentinel://{}/{}", hosts.join(","), self.master_name)
    }

    /// The time Sentinel needs at most to replace a dead master, election retry
    /// included: `down-after-milliseconds` plus twice `failover-timeout` (a failed
    /// election is retried after that).
    pub fn failover_time(&self) -> Duration {
        self.down_after + 2 * self.failover_timeout
    }

    /// Sends one command to sentinel `i` on a fresh connection.
    pub fn cmd(&self, i: usize, args: &[&str]) -> Result<Reply> {
        self.node(i)?.cmd(args)
    }

    /// The master address sentinel `i` reports (`SENTINEL get-master-addr-by-name`).
    pub fn master_addr_of(&self, i: usize) -> Result<SocketAddr> {
        let args = ["SENTINEL", "get-master-addr-by-name", &self.master_name];
        let reply = self.cmd(i, &args)?;
        let addr = match reply.items() {
            Some([ip, port]) => ip
                .text()
                .zip(port.text())
                .and_then(|(ip, port)| format!("{ip}:{port}").parse().ok()),
            _ => None,
        };
        addr.ok_or_else(|| Error::Reply {
            command: args.join(" "),
            addr: self.nodes[i].addr().to_string(),
            reply: format!("{reply:?}"),
        })
    }

    /// The master address the first answering sentinel reports.
    pub fn master_addr(&self) -> Result<SocketAddr> {
        let mut last = None;
        for i in 0..self.nodes.len() {
            match self.master_addr_of(i) {
                Ok(addr) => return Ok(addr),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Invalid("no sentinels".into())))
    }

    /// Waits until every running sentinel reports a master other than `old` and they all
    /// agree on it, and returns it.
    pub fn wait_for_new_master(
        &mut self,
        old: SocketAddr,
        timeout: Duration,
    ) -> Result<SocketAddr> {
        let deadline = Instant::now() + timeout;
        loop {
            let running: Vec<usize> = (0..self.nodes.len())
                .filter(|&i| self.nodes[i].is_running())
                .collect();
            let seen: Vec<Result<SocketAddr>> =
                running.iter().map(|&i| self.master_addr_of(i)).collect();
            let first = seen.first().and_then(|r| r.as_ref().ok()).copied();
            if let Some(addr) = first {
                if addr != old && seen.iter().all(|r| r.as_ref().ok() == Some(&addr)) {
                    return Ok(addr);
                }
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: format!("failover of {} away from {old}", self.master_name),
                    waited: timeout,
                    last: format!("sentinels report {seen:?}"),
                    log_tail: self.log_tails(),
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// `SENTINEL MASTER <name>` of sentinel `i`, as field/value pairs.
    pub fn master_state(&self, i: usize) -> Result<Vec<(String, String)>> {
        let reply = self.cmd(i, &["SENTINEL", "MASTER", &self.master_name])?;
        let items = reply.items().ok_or_else(|| Error::Reply {
            command: format!("SENTINEL MASTER {}", self.master_name),
            addr: self.nodes[i].addr().to_string(),
            reply: format!("{reply:?}"),
        })?;
        Ok(items
            .chunks(2)
            .filter_map(|pair| match pair {
                [k, v] => Some((k.text()?, v.text()?)),
                _ => None,
            })
            .collect())
    }

    /// SIGKILLs sentinel `i`; its port and directory stay for [`restart`](Self::restart).
    pub fn kill(&mut self, i: usize) -> Result<()> {
        self.node_mut(i)?.kill();
        Ok(())
    }

    /// Starts sentinel `i` again on its port, with the configuration it last wrote.
    pub fn restart(&mut self, i: usize) -> Result<()> {
        self.node_mut(i)?.restart()
    }

    /// Every sentinel's recent log lines, labelled.
    pub fn log_tails(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("--- {}\n{}", n.describe(), n.log_tail()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn wait_ready(&self, replicas: usize, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let others = (self.nodes.len() - 1).to_string();
        loop {
            let mut last = String::new();
            let ready = (0..self.nodes.len()).all(|i| match self.master_state(i) {
                Ok(state) => {
                    let field = |k: &str| {
                        state
                            .iter()
                            .find(|(key, _)| key == k)
                            .map_or("", |(_, v)| v.as_str())
                    };
                    let ok = field("flags") == "master"
                        && field("num-other-sentinels") == others
                        && field("num-slaves").parse::<usize>().unwrap_or(0) >= replicas;
                    if !ok {
                        last = format!(
                            "sentinel {i}: flags={} num-other-sentinels={} num-slaves={}",
                            field("flags"),
                            field("num-other-sentinels"),
                            field("num-slaves")
                        );
                    }
                    ok
                }
                Err(e) => {
                    last = e.to_string();
                    false
                }
            });
            if ready {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: format!("{} sentinels of {}", self.nodes.len(), self.master_name),
                    waited: timeout,
                    last,
                    log_tail: self.log_tails(),
                });
            }
            std::thread::sleep(POLL);
        }
    }

    fn node(&self, i: usize) -> Result<&ServerProcess> {
        self.nodes.get(i).ok_or_else(|| self.no_such(i))
    }

    fn node_mut(&mut self, i: usize) -> Result<&mut ServerProcess> {
        let err = self.no_such(i);
        self.nodes.get_mut(i).ok_or(err)
    }

    fn no_such(&self, i: usize) -> Error {
        Error::Invalid(format!(
            "no sentinel {i}: the group has {}",
            self.nodes.len()
        ))
    }
}
