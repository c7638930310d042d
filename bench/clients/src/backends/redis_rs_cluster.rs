//! redis-rs cluster: `cluster_async::ClusterConnection` from one seed URL, cloned per caller.

use bytes::Bytes;
use redis::AsyncCommands;

use crate::harness::{Backend, BoxError};

/// `redis::cluster_async::ClusterConnection`.
#[derive(Clone)]
pub struct Cluster(redis::cluster_async::ClusterConnection);

impl Backend for Cluster {
    async fn connect(url: &str) -> Result<Self, BoxError> {
        let client = redis::cluster::ClusterClient::new(vec![url])?;
        Ok(Cluster(client.get_async_connection().await?))
    }

    async fn get(&mut self, key: &Bytes) -> Result<usize, BoxError> {
        let v: Option<Vec<u8>> = self.0.get(&key[..]).await?;
        Ok(v.map_or(0, |v| v.len()))
    }

    async fn set(&mut self, key: &Bytes, value: &Bytes) -> Result<(), BoxError> {
        let () = self.0.set(&key[..], &value[..]).await?;
        Ok(())
    }
}
