//! Settings of a [`ClusterClient`](crate::ClusterClient): seeds, the per-node connection
//! settings (the standalone [`Config`]: TLS, auth, timeouts, pool size), and the cluster's
//! own knobs (replica reads, refresh timing, redirect and retry limits).

use std::time::Duration;

use crate::config::{Backoff, Config};
use crate::error::Error;

/// Where read-only commands go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReadFrom {
    /// Every command to the slot's master (always current).
    #[default]
    Master,
    /// Read-only commands round-robin over the slot's healthy replicas (over connections
    /// that sent `READONLY`), the master when it has none. Replicas may lag behind.
    Replica,
}

/// Cluster client settings.
///
/// ```
/// use std::time::Duration;
/// use redline::{ClusterConfig, ReadFrom};
///
/// let mut cfg = ClusterConfig::from_urls(["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"])?;
/// cfg.read_from = ReadFrom::Replica;
/// cfg.refresh_interval = Some(Duration::from_secs(10));
/// assert_eq!(cfg.seeds.len(), 2);
/// # Ok::<(), redline::Error>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClusterConfig {
    /// Nodes to ask for the topology at start, in order, as `(host, port)`. After that the
    /// client asks the nodes it knows (and these again if none answers).
    pub seeds: Vec<(String, u16)>,
    /// Connection settings for every node (host and port are replaced by each node's).
    /// With TLS, `node.tls.server_name` names the certificate independently of the
    /// addresses the cluster announces. `db` must be 0.
    pub node: Config,
    /// Where read-only commands go by default.
    pub read_from: ReadFrom,
    /// Topology refresh even when nothing went wrong. Default 30 s; `None` disables it.
    pub refresh_interval: Option<Duration>,
    /// Least time between two refreshes (they are also jittered by up to this much).
    /// Default 100 ms.
    pub refresh_min_interval: Duration,
    /// How many nodes one refresh asks at once. Default 3.
    pub refresh_fanout: usize,
    /// Redirects (`MOVED`/`ASK`) one command may follow. Default 16.
    pub max_redirects: u32,
    /// Pause between retries of `TRYAGAIN`, `CLUSTERDOWN`, `LOADING` and connection
    /// errors; every retry stays within the command timeout.
    pub retry_backoff: Backoff,
    /// Re-send a write after a connection error even when it may have reached the server
    /// (it may then run twice). Default false: only writes known not to have been sent
    /// (the connection could not be opened) are re-sent; reads always are.
    pub retry_writes: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            seeds: Vec::new(),
            node: Config::default(),
            read_from: ReadFrom::Master,
            refresh_interval: Some(Duration::from_secs(30)),
            refresh_min_interval: Duration::from_millis(100),
            refresh_fanout: 3,
            max_redirects: 16,
            retry_backoff: Backoff {
                base: Duration::from_millis(10),
                max: Duration::from_millis(200),
            },
            retry_writes: false,
        }
    }
}

impl ClusterConfig {
    /// Seeds from `redis://`/`rediss://` URLs; the node settings (credentials, TLS,
    /// timeouts, options) come from the first URL.
    pub fn from_urls<I>(urls: I) -> Result<ClusterConfig, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut cfg = ClusterConfig::default();
        for (i, url) in urls.into_iter().enumerate() {
            let node = Config::from_url(url.as_ref())?;
            cfg.seeds.push((node.host.clone(), node.port));
            if i == 0 {
                cfg.node = node;
            }
        }
        Ok(cfg)
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.seeds.is_empty() {
            return Err(Error::Config("a cluster client needs at least one seed"));
        }
        if self.node.db != 0 {
            return Err(Error::Config("Redis Cluster has only database 0"));
        }
        if self.node.sentinel.is_some() {
            return Err(Error::Config(
                "Redis Cluster nodes are not found through Sentinel",
            ));
        }
        if self.refresh_fanout == 0 {
            return Err(Error::Config("refresh_fanout must be at least 1"));
        }
        self.node.validate()
    }

    /// The command timeout, or a generous bound for retries when none is set.
    pub(crate) fn retry_budget(&self) -> Duration {
        self.node.command_timeout.unwrap_or(Duration::from_secs(30))
    }
}
