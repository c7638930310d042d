//! redis-rs: `MultiplexedConnection` (what its docs recommend for async use) and
//! `ConnectionManager` (the same connection wrapped with reconnects), each cloned per
//! caller as documented.

use bytes::Bytes;
use redis::AsyncCommands;

use crate::harness::{Backend, BoxError};

/// `redis::aio::MultiplexedConnection`.
#[derive(Clone)]
pub struct Multiplexed(redis::aio::MultiplexedConnection);

impl Backend for Multiplexed {
    async fn connect(url: &str) -> Result<Self, BoxError> {
        let client = redis::Client::open(url)?;
        Ok(Multiplexed(
            client.get_multiplexed_async_connection().await?,
        ))
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

/// `redis::aio::ConnectionManager`.
#[derive(Clone)]
pub struct Manager(redis::aio::ConnectionManager);

impl Backend for Manager {
    async fn connect(url: &str) -> Result<Self, BoxError> {
        let client = redis::Client::open(url)?;
        Ok(Manager(client.get_connection_manager().await?))
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
