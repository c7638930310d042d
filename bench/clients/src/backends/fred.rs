//! fred: one `Client` (one connection; fred pipelines concurrent commands on it),
//! cloned per caller.

use bytes::Bytes;
use fred::prelude::{Builder, ClientLike, Config, KeysInterface};

use crate::harness::{Backend, BoxError};

/// `fred::clients::Client` from a centralized (standalone) config.
#[derive(Clone)]
pub struct Fred(fred::clients::Client);

impl Backend for Fred {
    async fn connect(url: &str) -> Result<Self, BoxError> {
        let config = Config::from_url(url)?;
        Ok(Fred(connect(config).await?))
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

/// Builds and initialises a fred client with its defaults (shared with the cluster file).
pub(super) async fn connect(config: Config) -> Result<fred::clients::Client, BoxError> {
    let client = Builder::from_config(config).build()?;
    client.init().await?;
    Ok(client)
}
