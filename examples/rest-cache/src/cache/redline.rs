//! The redline backend: one `redline::Client` (a single auto-pipelined connection), or
//! `redline::ClusterClient` (one such connection per node) under `REDIS_CLUSTER=1`.

use std::time::Duration;

use bytes::Bytes;

use super::{urls, Cache, CacheError};

/// Cache on redline.
///
/// ```no_run
/// # async fn demo() -> Result<(), rest_cache::CacheError> {
/// use std::time::Duration;
/// let cache = rest_cache::cache::RedlineCache::connect("redis://127.0.0.1:6379", false, Duration::from_secs(1)).await?;
/// # let _ = cache;
/// # Ok(()) }
/// ```
pub struct RedlineCache {
    client: Conn,
}

enum Conn {
    Standalone(redline::Client),
    Cluster(redline::ClusterClient),
}

impl RedlineCache {
    /// Connects; `cluster` asks for the cluster client.
    pub async fn connect(url: &str, cluster: bool, timeout: Duration) -> Result<Self, CacheError> {
        let nodes = urls(url);
        let client = if cluster {
            let mut config = redline::ClusterConfig::from_urls(nodes.iter().map(String::as_str))?;
            config.node.command_timeout = Some(timeout);
            config.node.connect_timeout = timeout;
            Conn::Cluster(redline::ClusterClient::from_config(config).await?)
        } else {
            let first = nodes.into_iter().next().unwrap_or_default();
            let mut config = redline::Config::from_url(&first)?;
            config.command_timeout = Some(timeout);
            config.connect_timeout = timeout;
            Conn::Standalone(redline::Client::from_config(config).await?)
        };
        Ok(RedlineCache { client })
    }
}

impl Cache for RedlineCache {
    async fn get(&self, key: &str) -> Result<Option<Bytes>, CacheError> {
        Ok(match &self.client {
            Conn::Standalone(c) => c.get(key).await?,
            Conn::Cluster(c) => c.get(key).await?,
        })
    }

    async fn set_ex(&self, key: &str, value: Bytes, ttl_secs: u64) -> Result<(), CacheError> {
        match &self.client {
            Conn::Standalone(c) => c.set_ex(key, value, ttl_secs).await?,
            Conn::Cluster(c) => c.set_ex(key, value, ttl_secs).await?,
        }
        Ok(())
    }

    async fn del(&self, key: &str) -> Result<(), CacheError> {
        match &self.client {
            Conn::Standalone(c) => c.del([key]).await?,
            Conn::Cluster(c) => c.del([key]).await?,
        };
        Ok(())
    }
}
