//! fred cluster: the same client type with a clustered config from one seed URL.

use bytes::Bytes;
use fred::prelude::{Config, KeysInterface};

use crate::harness::{Backend, BoxError};

/// `fred::clients::Client` from a clustered config.
#[derive(Clone)]
pub struct FredCluster(fred::clients::Client);

impl Backend for FredCluster {
    async fn connect(url: &str) -> Result<Self, BoxError> {
        // Clustered whatever the scheme (`redis://` or `redis-cluster://`).
        let config = Config::from_url_clustered(url)?;
        Ok(FredCluster(super::fred::connect(config).await?))
    }

    async fn get(&mut self, key: &Bytes) -> Result<usize, BoxError> {
        let v: Option<Bytes> = self.0.get(key.clone()).await?;
        Ok(v.map_or(0, |v| v.len()))
    }

    async fn set(&mut self, key: &Bytes, value: &Bytes) -> Result<(), BoxError> {
        let () = self
            .0
            .set(key.clone(), value.clone(), None, None, false)
            .await?;
        Ok(())
    }
}
