//! The cache behind the service: one small trait, one file per client library.
//!
//! Each backend uses its library the way its documentation recommends for a shared,
//! long-lived client: one multiplexed connection (redline `Client`, fred `Client`,
//! redis-rs `ConnectionManager`), or the library's cluster client under `REDIS_CLUSTER=1`.
//! All three get the same per-command timeout, so a dead cache costs every backend the same
//! bounded wait before the request falls back to SQLite.

mod fred;
mod redis_rs;
mod redline;

use std::future::Future;
use std::str::FromStr;

use bytes::Bytes;

pub use self::fred::FredCache;
pub use self::redis_rs::RedisRsCache;
pub use self::redline::RedlineCache;

/// Which client library is the cache.
///
/// ```
/// let backend: rest_cache::Backend = "redis-rs".parse().unwrap();
/// assert_eq!(backend.name(), "redis-rs");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// redline (this project).
    Redline,
    /// fred.
    Fred,
    /// redis-rs.
    RedisRs,
}

impl Backend {
    /// The three backends, in the order benches run them.
    pub const ALL: [Backend; 3] = [Backend::Redline, Backend::Fred, Backend::RedisRs];

    /// The `CACHE_BACKEND` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Redline => "redline",
            Backend::Fred => "fred",
            Backend::RedisRs => "redis-rs",
        }
    }
}

impl FromStr for Backend {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        match s.trim().to_ascii_lowercase().as_str() {
            "redline" => Ok(Backend::Redline),
            "fred" => Ok(Backend::Fred),
            "redis-rs" | "redis_rs" | "redisrs" | "redis" => Ok(Backend::RedisRs),
            _ => Err(()),
        }
    }
}

/// A cache command that failed. The service logs it and carries on without the cache.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// From redline.
    #[error("redline: {0}")]
    Redline(#[from] ::redline::Error),
    /// From fred.
    #[error("fred: {0}")]
    Fred(#[from] ::fred::error::Error),
    /// From redis-rs.
    #[error("redis-rs: {0}")]
    RedisRs(#[from] ::redis::RedisError),
}

/// The three commands cache-aside needs.
///
/// ```no_run
/// # async fn demo(cache: impl rest_cache::Cache) -> Result<(), rest_cache::CacheError> {
/// cache.set_ex("user:1", bytes::Bytes::from_static(b"{}"), 60).await?;
/// assert!(cache.get("user:1").await?.is_some());
/// cache.del("user:1").await?;
/// # Ok(()) }
/// ```
pub trait Cache: Send + Sync + 'static {
    /// `GET key`.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Bytes>, CacheError>> + Send;
    /// `SET key value EX ttl_secs`.
    fn set_ex(
        &self,
        key: &str,
        value: Bytes,
        ttl_secs: u64,
    ) -> impl Future<Output = Result<(), CacheError>> + Send;
    /// `DEL key`.
    fn del(&self, key: &str) -> impl Future<Output = Result<(), CacheError>> + Send;
}

/// Splits `REDIS_URL` into node URLs (a cluster seed may list several, comma-separated).
pub(crate) fn urls(url: &str) -> Vec<String> {
    url.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_owned)
        .collect()
}
