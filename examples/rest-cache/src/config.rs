//! Configuration from the environment: `PORT`, `SQLITE_DB`, `REDIS_URL`, `REDIS_CLUSTER`,
//! `CACHE_BACKEND`, plus `CACHE_TIMEOUT_MS`, `SQLITE_POOL` and `RESEED` for tests and benches.

use std::path::PathBuf;
use std::time::Duration;

use crate::cache::Backend;

/// A bad environment variable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The variable is set but its value cannot be used.
    #[error("{name}={value:?}: {reason}")]
    Invalid {
        /// Variable name.
        name: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// How the service runs.
///
/// ```
/// let config = rest_cache::Config::default();
/// assert_eq!(config.port, 8080);
/// assert_eq!(config.backend, rest_cache::Backend::Redline);
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    /// `PORT`: HTTP port on 0.0.0.0 (0 picks a free one). Default 8080.
    pub port: u16,
    /// `SQLITE_DB`: database file. Default `rest-cache.db`.
    pub sqlite_db: PathBuf,
    /// `REDIS_URL`: the cache server (for a cluster: any node, or several separated by commas).
    /// Default `redis://127.0.0.1:6379`.
    pub redis_url: String,
    /// `REDIS_CLUSTER=1`: use the library's cluster client. Default off.
    pub redis_cluster: bool,
    /// `CACHE_BACKEND=redline|fred|redis-rs`. Default redline.
    pub backend: Backend,
    /// `CACHE_TIMEOUT_MS`: per-command timeout of the cache client (all three backends get
    /// the same), after which the request falls back to SQLite. Default 1000.
    pub cache_timeout: Duration,
    /// `SQLITE_POOL`: SQLite connections (each used by one blocking task at a time). Default 4.
    pub sqlite_pool: usize,
    /// `RESEED=1`: drop every user and seed the 10,000 again at start. Without it the seed
    /// runs only on an empty table.
    pub reseed: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 8080,
            sqlite_db: PathBuf::from("rest-cache.db"),
            redis_url: "redis://127.0.0.1:6379".to_owned(),
            redis_cluster: false,
            backend: Backend::Redline,
            cache_timeout: Duration::from_millis(1000),
            sqlite_pool: 4,
            reseed: false,
        }
    }
}

impl Config {
    /// Reads the process environment; unset variables keep their defaults.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`Config::from_env`], with variables looked up by `lookup` (tests pass a map).
    ///
    /// ```
    /// let config = rest_cache::Config::from_lookup(|name| match name {
    ///     "CACHE_BACKEND" => Some("fred".to_owned()),
    ///     "REDIS_CLUSTER" => Some("1".to_owned()),
    ///     _ => None,
    /// })?;
    /// assert!(config.redis_cluster);
    /// # Ok::<(), rest_cache::ConfigError>(())
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        if let Some(v) = lookup("PORT") {
            config.port = parse_num("PORT", &v)?;
        }
        if let Some(v) = lookup("SQLITE_DB") {
            config.sqlite_db = PathBuf::from(v);
        }
        if let Some(v) = lookup("REDIS_URL") {
            config.redis_url = v;
        }
        if let Some(v) = lookup("REDIS_CLUSTER") {
            config.redis_cluster = parse_flag("REDIS_CLUSTER", &v)?;
        }
        if let Some(v) = lookup("CACHE_BACKEND") {
            config.backend = v.parse().map_err(|()| ConfigError::Invalid {
                name: "CACHE_BACKEND",
                value: v.clone(),
                reason: "expected redline, fred or redis-rs",
            })?;
        }
        if let Some(v) = lookup("CACHE_TIMEOUT_MS") {
            config.cache_timeout = Duration::from_millis(parse_num("CACHE_TIMEOUT_MS", &v)?);
        }
        if let Some(v) = lookup("SQLITE_POOL") {
            config.sqlite_pool = parse_num::<usize>("SQLITE_POOL", &v)?.max(1);
        }
        if let Some(v) = lookup("RESEED") {
            config.reseed = parse_flag("RESEED", &v)?;
        }
        Ok(config)
    }
}

fn parse_num<T: std::str::FromStr>(name: &'static str, value: &str) -> Result<T, ConfigError> {
    value.trim().parse().map_err(|_| ConfigError::Invalid {
        name,
        value: value.to_owned(),
        reason: "expected a non-negative integer",
    })
}

fn parse_flag(name: &'static str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "" | "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(ConfigError::Invalid {
            name,
            value: value.to_owned(),
            reason: "expected 1 or 0",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_variable() {
        let config = Config::from_lookup(|name| {
            Some(
                match name {
                    "PORT" => "9000",
                    "SQLITE_DB" => "/tmp/x.db",
                    "REDIS_URL" => "redis://10.0.0.1:7000",
                    "REDIS_CLUSTER" => "true",
                    "CACHE_BACKEND" => "redis-rs",
                    "CACHE_TIMEOUT_MS" => "250",
                    "SQLITE_POOL" => "2",
                    "RESEED" => "1",
                    _ => return None,
                }
                .to_owned(),
            )
        })
        .unwrap();
        assert_eq!(config.port, 9000);
        assert_eq!(config.sqlite_db, PathBuf::from("/tmp/x.db"));
        assert!(config.redis_cluster && config.reseed);
        assert_eq!(config.backend, Backend::RedisRs);
        assert_eq!(config.cache_timeout, Duration::from_millis(250));
        assert_eq!(config.sqlite_pool, 2);
    }

    #[test]
    fn rejects_unknown_backend() {
        let err = Config::from_lookup(|n| (n == "CACHE_BACKEND").then(|| "memcached".to_owned()));
        assert!(err.is_err());
    }
}
