//! The redline backend: one `redline::Client` (a single auto-pipelined connection).

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
    client: redline::Client,
}

impl RedlineCache {
    /// Connects; `cluster` asks for the cluster client.
    pub async fn connect(url: &str, cluster: bool, timeout: Duration) -> Result<Self, CacheError> {
        if cluster {
            return Err(CacheError::Unsupported(
                "REDIS_CLUSTER=1 with CACHE_BACKEND=redline needs redline's cluster client",
            ));
        }
        let first = urls(url).into_iter().next().unwrap_or_default();
        let mut config = redline::Config::from_url(&first)?;
        config.command_timeout = Some(timeout);
        config.connect_timeout = timeout;
        let client = redline::Client::from_config(config).await?;
        Ok(RedlineCache { client })
    }
}

impl Cache for RedlineCache {
    async fn get(&self, key: &str) -> Result<Option<Bytes>, CacheError> {
        Ok(self.client.get(key).await?)
    }

    async fn set_ex(&self, key: &str, value: Bytes, ttl_secs: u64) -> Result<(), CacheError> {
        Ok(self.client.set_ex(key, value, ttl_secs).await?)
    }

    async fn del(&self, key: &str) -> Result<(), CacheError> {
        self.client.del([key]).await?;
        Ok(())
    }
}
