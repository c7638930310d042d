//! redline: one `Client` (one multiplexed connection by default), cloned per caller; and
//! the same with its server-assisted client-side cache, GETs served by `cached_get`.

use bytes::Bytes;

use crate::harness::{Backend, BoxError};

/// `redline::Client` with its default configuration.
#[derive(Clone)]
pub struct Redline(::redline::Client);

impl Backend for Redline {
    async fn connect(url: &str) -> Result<Self, BoxError> {
        Ok(Redline(::redline::Client::connect(url).await?))
    }

    async fn get(&mut self, key: &Bytes) -> Result<usize, BoxError> {
        Ok(self.0.get(key).await?.map_or(0, |v| v.len()))
    }

    async fn set(&mut self, key: &Bytes, value: &Bytes) -> Result<(), BoxError> {
        Ok(self.0.set(key, value).await?)
    }
}

/// `redline::Client` with `Config::cache(64 MiB, 60 s)`: GET is `cached_get` (served from
/// memory until the server invalidates the key), SET a plain `SET` (which drops the key's
/// entry when it returns).
#[derive(Clone)]
pub struct RedlineCached(::redline::Client);

impl Backend for RedlineCached {
    async fn connect(url: &str) -> Result<Self, BoxError> {
        let cfg =
            ::redline::Config::from_url(url)?.cache(64 << 20, std::time::Duration::from_secs(60));
        Ok(RedlineCached(::redline::Client::from_config(cfg).await?))
    }

    async fn get(&mut self, key: &Bytes) -> Result<usize, BoxError> {
        Ok(self.0.cached_get(key).await?.map_or(0, |v| v.len()))
    }

    async fn set(&mut self, key: &Bytes, value: &Bytes) -> Result<(), BoxError> {
        Ok(self.0.set(key, value).await?)
    }
}
