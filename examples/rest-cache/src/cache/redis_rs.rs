//! The redis-rs backend: a `ConnectionManager` (one multiplexed connection that reconnects),
//! or `cluster_async::ClusterConnection` under `REDIS_CLUSTER=1`.

use std::time::Duration;

use bytes::Bytes;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;

use super::{urls, Cache, CacheError};

/// Cache on redis-rs.
///
/// ```no_run
/// # async fn demo() -> Result<(), rest_cache::CacheError> {
/// use std::time::Duration;
/// let cache = rest_cache::cache::RedisRsCache::connect("redis://127.0.0.1:6379", false, Duration::from_secs(1)).await?;
/// # let _ = cache;
/// # Ok(()) }
/// ```
pub struct RedisRsCache {
    conn: Conn,
}

// Both handles are cheap clones of one shared connection; a command takes a clone because
// redis-rs's query API wants `&mut`.
#[derive(Clone)]
enum Conn {
    Standalone(ConnectionManager),
    Cluster(ClusterConnection),
}

impl RedisRsCache {
    /// Connects; `cluster` uses the async cluster client.
    pub async fn connect(url: &str, cluster: bool, timeout: Duration) -> Result<Self, CacheError> {
        let nodes = urls(url);
        let conn = if cluster {
            let client = ClusterClient::builder(nodes)
                .connection_timeout(timeout)
                .response_timeout(timeout)
                .retries(1)
                .build()?;
            Conn::Cluster(client.get_async_connection().await?)
        } else {
            let first = nodes.first().cloned().unwrap_or_default();
            let client = redis::Client::open(first)?;
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(timeout))
                .set_response_timeout(Some(timeout))
                .set_number_of_retries(1);
            Conn::Standalone(ConnectionManager::new_with_config(client, config).await?)
        };
        Ok(RedisRsCache { conn })
    }

    async fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, CacheError> {
        Ok(match self.conn.clone() {
            Conn::Standalone(mut c) => cmd.query_async(&mut c).await?,
            Conn::Cluster(mut c) => cmd.query_async(&mut c).await?,
        })
    }
}

impl Cache for RedisRsCache {
    async fn get(&self, key: &str) -> Result<Option<Bytes>, CacheError> {
        let value: Option<Vec<u8>> = self.query(redis::cmd("GET").arg(key)).await?;
        Ok(value.map(Bytes::from))
    }

    async fn set_ex(&self, key: &str, value: Bytes, ttl_secs: u64) -> Result<(), CacheError> {
        self.query::<()>(
            redis::cmd("SET")
                .arg(key)
                .arg(&value[..])
                .arg("EX")
                .arg(ttl_secs),
        )
        .await
    }

    async fn del(&self, key: &str) -> Result<(), CacheError> {
        self.query::<i64>(redis::cmd("DEL").arg(key)).await?;
        Ok(())
    }
}
