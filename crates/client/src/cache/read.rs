//! Cached reads: the typed methods on [`Client`] and [`ClusterClient`], and the one
//! flow behind them (look up; on a miss leave a placeholder, send, store the reply into
//! the placeholder if it survived).
//!
//! `MGET` is served key by key from the same entries as `GET` (a hit needs no round
//! trip; the misses go out as one `MGET`, split by slot on a cluster), so the two share
//! one copy of each value.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use redline_resp::command;
use redline_resp::Frame;

use super::store::Lookup;
use super::{Cache, CacheStats};
use crate::args::Args;
use crate::cluster::ReadFrom;
use crate::cmd::{cmd, Cmd, ToArg};
use crate::error::Error;
use crate::reply::FromReply;
use crate::{Client, ClusterClient};

/// What a cached read needs from a client: its cache and a way to send a read over a
/// tracked connection (a master's, on a cluster).
pub(crate) trait Transport: Sync {
    fn cache(&self) -> Option<&Arc<Cache>>;
    fn send_read(&self, bytes: Bytes) -> impl Future<Output = Result<Frame, Error>> + Send;
}

impl Transport for Client {
    fn cache(&self) -> Option<&Arc<Cache>> {
        self.client_cache()
    }

    fn send_read(&self, bytes: Bytes) -> impl Future<Output = Result<Frame, Error>> + Send {
        self.pool().pick().send(bytes)
    }
}

impl Transport for ClusterClient {
    fn cache(&self) -> Option<&Arc<Cache>> {
        self.shared().cache.as_ref()
    }

    fn send_read(&self, bytes: Bytes) -> impl Future<Output = Result<Frame, Error>> + Send {
        // Replicas may lag: cached reads always go to the slot's master.
        self.execute(bytes, ReadFrom::Master)
    }
}

/// A placeholder whose read is in flight; dropped unfinished (the caller gave up, the
/// read failed), it is removed so it cannot be filled later.
struct InFlight<'a> {
    cache: &'a Cache,
    cmd: Bytes,
    token: u64,
    armed: bool,
}

impl InFlight<'_> {
    fn finish(mut self, frame: &Frame) {
        self.armed = false;
        self.cache.fill(&self.cmd, self.token, frame);
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.cache.abandon(&self.cmd, self.token);
        }
    }
}

/// The keys of an encoded read-only command (slices of `bytes`, no copy), or
/// [`Error::NotCacheable`] for a command that may write or reads no key.
fn read_keys(bytes: &Bytes) -> Result<Vec<Bytes>, Error> {
    let args: Vec<&[u8]> = Args::new(bytes).ok_or(Error::EmptyCommand)?.collect();
    let name = || {
        Arc::from(String::from_utf8_lossy(
            args.first().copied().unwrap_or_default(),
        ))
    };
    let readonly = command::resolve(&args).is_some_and(|spec| spec.is_readonly());
    let positions = match command::keys(&args) {
        Ok(p) if readonly && !p.is_empty() => p,
        _ => return Err(Error::NotCacheable { command: name() }),
    };
    Ok(positions
        .into_iter()
        .filter_map(|i| args.get(i).map(|k| bytes.slice_ref(k)))
        .collect())
}

/// One cached read: the reply frame, from the cache or the server.
pub(crate) async fn cached<T: Transport>(client: &T, cmd: Cmd) -> Result<Frame, Error> {
    let bytes = cmd.into_bytes();
    let Some(cache) = client.cache() else {
        return client.send_read(bytes).await;
    };
    let keys = read_keys(&bytes)?;
    cached_encoded(client, cache, bytes, &keys).await
}

/// A typed read whose only key is its first argument (GET, HGET, HGETALL, SMEMBERS): the
/// key is sliced out of the encoded command, no command-table walk, no allocation.
pub(crate) async fn cached_first_key<T: Transport>(client: &T, cmd: Cmd) -> Result<Frame, Error> {
    let bytes = cmd.into_bytes();
    let Some(cache) = client.cache() else {
        return client.send_read(bytes).await;
    };
    let key = Args::new(&bytes)
        .and_then(|mut args| args.nth(1))
        .map(|k| bytes.slice_ref(k))
        .ok_or(Error::EmptyCommand)?;
    cached_encoded(client, cache, bytes, std::slice::from_ref(&key)).await
}

async fn cached_encoded<T: Transport>(
    client: &T,
    cache: &Cache,
    bytes: Bytes,
    keys: &[Bytes],
) -> Result<Frame, Error> {
    if !cache.covers(keys) {
        return client.send_read(bytes).await;
    }
    match cache.lookup(&bytes, keys) {
        Lookup::Hit(frame) => {
            hit_yield_point().await;
            Ok(frame)
        }
        Lookup::Fetch(token) => {
            let guard = InFlight {
                cache,
                cmd: bytes.clone(),
                token,
                armed: true,
            };
            let frame = client.send_read(bytes).await?;
            guard.finish(&frame);
            Ok(frame)
        }
    }
}

/// A hit completes without touching the runtime: without this, a task looping on hits
/// never yields and starves every other task on its worker (timers included). It takes
/// one unit of tokio's cooperative budget and yields only when the budget is spent, as a
/// socket read would.
async fn hit_yield_point() {
    tokio::task::coop::consume_budget().await;
}

/// `MGET` from the `GET` entries: hits from the cache, the misses in one `MGET`.
async fn cached_mget<T: Transport>(client: &T, keys: Vec<Bytes>) -> Result<Frame, Error> {
    let Some(cache) = client.cache() else {
        return client.send_read(cmd!("MGET").args(keys).into_bytes()).await;
    };
    let mut out: Vec<Option<Frame>> = Vec::with_capacity(keys.len());
    let mut missing: Vec<(usize, Bytes, Option<InFlight<'_>>)> = Vec::new();
    for key in keys {
        let get = cmd!("GET").arg(&key).into_bytes();
        let guard = if cache.covers(std::slice::from_ref(&key)) {
            match cache.lookup(&get, std::slice::from_ref(&key)) {
                Lookup::Hit(frame) => {
                    out.push(Some(frame));
                    continue;
                }
                Lookup::Fetch(token) => Some(InFlight {
                    cache,
                    cmd: get,
                    token,
                    armed: true,
                }),
            }
        } else {
            None
        };
        missing.push((out.len(), key, guard));
        out.push(None);
    }
    if missing.is_empty() {
        hit_yield_point().await;
    } else {
        let mget = cmd!("MGET").args(missing.iter().map(|(_, k, _)| k));
        let values = match client.send_read(mget.into_bytes()).await? {
            Frame::Array(values) if values.len() == missing.len() => values,
            // An error reply (or a shape we do not know): the caller converts it.
            other => return Ok(other),
        };
        for ((at, _, guard), value) in missing.into_iter().zip(values) {
            if let Some(guard) = guard {
                guard.finish(&value);
            }
            if let Some(slot) = out.get_mut(at) {
                *slot = Some(value);
            }
        }
    }
    Ok(Frame::Array(
        out.into_iter().map(|f| f.unwrap_or(Frame::Null)).collect(),
    ))
}

/// The cached reads, the same on both clients.
macro_rules! cached_reads {
    ($client:ty) => {
        impl $client {
            /// `GET key`, served from the client-side cache when it holds the key (see
            /// [`Config::cache`](crate::Config::cache) and the consistency guarantee in the
            /// crate's README). Without a cache configured, a plain `GET`.
            ///
            /// ```no_run
            /// # async fn demo(client: redline::Client) -> redline::Result<()> {
            /// let name = client.cached_get("user:1:name").await?; // a round trip
            /// let again = client.cached_get("user:1:name").await?; // from memory
            /// assert_eq!(name, again);
            /// # Ok(()) }
            /// ```
            pub fn cached_get(
                &self,
                key: impl ToArg,
            ) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send + '_ {
                let cmd = cmd!("GET").arg(key);
                async move { FromReply::from_reply(cached_first_key(self, cmd).await?) }
            }

            /// `MGET key...`, each key served from the cache when held; the others are
            /// fetched with one `MGET` (per slot on a cluster) and cached as `GET` entries.
            ///
            /// ```no_run
            /// # async fn demo(client: redline::Client) -> redline::Result<()> {
            /// let values = client.cached_mget(["a", "b", "c"]).await?;
            /// assert_eq!(values.len(), 3);
            /// # Ok(()) }
            /// ```
            pub fn cached_mget(
                &self,
                keys: impl IntoIterator<Item = impl ToArg>,
            ) -> impl Future<Output = Result<Vec<Option<Bytes>>, Error>> + Send + '_ {
                let keys: Vec<Bytes> = keys
                    .into_iter()
                    .map(|k| crate::cluster::dedicated::arg_bytes(&k))
                    .collect();
                async move { FromReply::from_reply(cached_mget(self, keys).await?) }
            }

            /// `HGET key field`, cached (one entry per field read).
            ///
            /// ```no_run
            /// # async fn demo(client: redline::Client) -> redline::Result<()> {
            /// let email = client.cached_hget("user:1", "email").await?;
            /// # let _ = email;
            /// # Ok(()) }
            /// ```
            pub fn cached_hget(
                &self,
                key: impl ToArg,
                field: impl ToArg,
            ) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send + '_ {
                let cmd = cmd!("HGET").arg(key).arg(field);
                async move { FromReply::from_reply(cached_first_key(self, cmd).await?) }
            }

            /// `HGETALL key`, cached (the whole hash as one entry).
            ///
            /// ```no_run
            /// # async fn demo(client: redline::Client) -> redline::Result<()> {
            /// let user = client.cached_hgetall("user:1").await?;
            /// # let _ = user;
            /// # Ok(()) }
            /// ```
            pub fn cached_hgetall(
                &self,
                key: impl ToArg,
            ) -> impl Future<Output = Result<HashMap<Bytes, Bytes>, Error>> + Send + '_ {
                let cmd = cmd!("HGETALL").arg(key);
                async move { FromReply::from_reply(cached_first_key(self, cmd).await?) }
            }

            /// `SMEMBERS key`, cached.
            ///
            /// ```no_run
            /// # async fn demo(client: redline::Client) -> redline::Result<()> {
            /// let tags = client.cached_smembers("post:7:tags").await?;
            /// # let _ = tags;
            /// # Ok(()) }
            /// ```
            pub fn cached_smembers(
                &self,
                key: impl ToArg,
            ) -> impl Future<Output = Result<HashSet<Bytes>, Error>> + Send + '_ {
                let cmd = cmd!("SMEMBERS").arg(key);
                async move { FromReply::from_reply(cached_first_key(self, cmd).await?) }
            }

            /// Any read-only command with keys (`readonly` in Redis's command table:
            /// `STRLEN`, `LRANGE`, `ZRANGE`, `HMGET`, `GETRANGE`...), cached by its exact
            /// arguments and dropped when any of its keys changes. Other commands are
            /// refused with [`Error::NotCacheable`] (when a cache is configured).
            ///
            /// ```no_run
            /// # async fn demo(client: redline::Client) -> redline::Result<()> {
            /// let top = client.cached_cmd(["ZRANGE", "leaderboard", "0", "9"]).await?;
            /// # let _ = top;
            /// # Ok(()) }
            /// ```
            pub fn cached_cmd<I>(
                &self,
                args: I,
            ) -> impl Future<Output = Result<Frame, Error>> + Send + '_
            where
                I: IntoIterator,
                I::Item: ToArg,
            {
                let cmd = Cmd::from_args(args).ok_or(Error::EmptyCommand);
                async move {
                    let frame = cached(self, cmd?).await?;
                    <Frame as FromReply>::from_reply(frame)
                }
            }

            /// The client-side cache's counters, `None` without a cache.
            ///
            /// ```no_run
            /// # async fn demo(client: redline::Client) {
            /// if let Some(stats) = client.cache_stats() {
            ///     println!("{} hits, {} misses", stats.hits, stats.misses);
            /// }
            /// # }
            /// ```
            pub fn cache_stats(&self) -> Option<CacheStats> {
                Transport::cache(self).map(|c| c.stats())
            }
        }
    };
}

cached_reads!(Client);
cached_reads!(ClusterClient);
