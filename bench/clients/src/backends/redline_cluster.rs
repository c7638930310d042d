//! redline cluster: one `ClusterClient` from one seed URL, cloned per caller.

use bytes::Bytes;

use crate::harness::{Backend, BoxError};

/// `redline::ClusterClient` with its default configuration (one connection per node).
#[derive(Clone)]
pub struct RedlineCluster(::redline::ClusterClient);

impl Backend for RedlineCluster {
    async fn connect(url: &str) -> Result<Self, BoxError> {
        Ok(RedlineCluster(
            ::redline::ClusterClient::connect([url]).await?,
        ))
    }

    async fn get(&mut self, key: &Bytes) -> Result<usize, BoxError> {
        Ok(self.0.get(key).await?.map_or(0, |v| v.len()))
    }

    async fn set(&mut self, key: &Bytes, value: &Bytes) -> Result<(), BoxError> {
        Ok(self.0.set(key, value).await?)
    }
}
