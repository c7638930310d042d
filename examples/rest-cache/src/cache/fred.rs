//! The fred backend: one `fred::Client` (a single pipelined connection per node), with a
//! reconnect policy so it survives a restarted server.

use std::time::Duration;

use bytes::Bytes;
use fred::prelude::{ClientLike, Config, Expiration, KeysInterface, ReconnectPolicy};
use fred::types::Builder;

use super::{urls, Cache, CacheError};

/// Cache on fred.
///
/// ```no_run
/// # async fn demo() -> Result<(), rest_cache::CacheError> {
/// use std::time::Duration;
/// let cache = rest_cache::cache::FredCache::connect("redis://127.0.0.1:6379", false, Duration::from_secs(1)).await?;
/// # let _ = cache;
/// # Ok(()) }
/// ```
pub struct FredCache {
    client: fred::prelude::Client,
}

impl FredCache {
    /// Connects; `cluster` uses fred's clustered configuration (every listed node is a seed).
    pub async fn connect(url: &str, cluster: bool, timeout: Duration) -> Result<Self, CacheError> {
        let nodes = urls(url);
        let first = nodes.first().cloned().unwrap_or_default();
        let config = if cluster {
            // fred takes extra seeds as `?node=host:port` query parameters.
            let extra: Vec<String> = nodes
                .iter()
                .skip(1)
                .map(|u| format!("node={}", u.trim_start_matches("redis://")))
                .collect();
            let seed = if extra.is_empty() {
                first
            } else {
                format!("{first}?{}", extra.join("&"))
            };
            Config::from_url_clustered(&seed)?
        } else {
            Config::from_url_centralized(&first)?
        };
        let client = Builder::from_config(config)
            .with_performance_config(|p| p.default_command_timeout = timeout)
            .with_connection_config(|c| {
                c.connection_timeout = timeout;
                c.internal_command_timeout = timeout;
                // A command in flight when the connection drops is not retried: the
                // service would rather answer from SQLite than wait.
                c.max_command_attempts = 1;
            })
            .set_policy(ReconnectPolicy::new_exponential(0, 10, 1000, 2))
            .build()?;
        client.init().await?;
        Ok(FredCache { client })
    }
}

impl Cache for FredCache {
    async fn get(&self, key: &str) -> Result<Option<Bytes>, CacheError> {
        Ok(self.client.get::<Option<Bytes>, _>(key).await?)
    }

    async fn set_ex(&self, key: &str, value: Bytes, ttl_secs: u64) -> Result<(), CacheError> {
        let ttl = i64::try_from(ttl_secs).unwrap_or(i64::MAX);
        self.client
            .set::<(), _, _>(key, value, Some(Expiration::EX(ttl)), None, false)
            .await?;
        Ok(())
    }

    async fn del(&self, key: &str) -> Result<(), CacheError> {
        self.client.del::<i64, _>(key).await?;
        Ok(())
    }
}
