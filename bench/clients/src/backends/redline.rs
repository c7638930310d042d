//! redline: one `Client` (one multiplexed connection by default), cloned per caller.

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
