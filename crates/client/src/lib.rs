//! redline: a Redis client built for throughput and dependable failure handling.
//!
//! ```no_run
//! # async fn demo() -> redline::Result<()> {
//! let client = redline::Client::connect("redis://127.0.0.1:6379").await?;
//! client.set("greeting", "hello").await?;
//! assert_eq!(client.get("greeting").await?.as_deref(), Some(&b"hello"[..]));
//! # Ok(()) }
//! ```
//!
//! # How it works
//!
//! Every [`Client`] holds a small pool of *multiplexed* connections (one by default).
//! Callers on any number of tasks encode their command, queue it, and await the reply;
//! one task per connection writes whatever is queued in one write and hands replies back
//! in order; under load it hands them out in waves and writes between them, so the server
//! answers one batch while the callers prepare the next ([`Config::reply_waves`]). A lost
//! connection fails every waiting command with a typed [`Error`] at once and is
//! re-established on the next command, with capped, jittered backoff. Nothing is re-sent
//! behind the caller's back.
//!
//! The path of one `GET`, caller side:
//! `Client::get` → `Cmd::new("GET").arg(key)` (encoded once, one allocation) →
//! `Client::query_with` → `Pool::pick` → `Multiplexer::send` (oneshot + deadline,
//! `try_send` into the bounded queue) → awaits the oneshot.
//! Connection task (`mux::supervisor::run` → `Driver::poll_run`):
//! `Driver::poll_intake` (copy the bytes into the output buffer, slot to the FIFO) →
//! `Driver::poll_write` (one write for the whole batch) → `Driver::poll_read`
//! (`poll_read_buf` + `Decoder::decode`) → `Driver::dispatch` (completes the oldest slot)
//! → back in the caller: `FromReply::from_reply`.
//!
//! What a command may do to a shared connection comes from Redis's command table
//! (`redline_resp::command`): blocking commands (BLPOP, XREAD BLOCK, WAIT...) run on a
//! dedicated connection of their own, even through the raw [`Client::cmd`]; commands that
//! would change the shared connection for everyone (SUBSCRIBE, WATCH, SELECT, CLIENT
//! REPLY, MULTI outside a pipeline...) are refused with [`Error::NotMultiplexable`]
//! instead of corrupting other callers' traffic. Transactions with WATCH have their own
//! call ([`Client::transaction`]) and pub/sub its own connection ([`Subscriber`], a
//! `Stream` of messages).
//!
//! # Redis Cluster
//!
//! [`ClusterClient`] has the same typed commands (each is written once and generated on
//! [`Client`], [`ClusterClient`], [`Pipeline`] and [`ClusterPipeline`]; the blocking ones
//! on the two clients only) and routes each one to the master that
//! owns its keys' hash slot (key positions from the command table), over one pool of
//! multiplexed connections per node. The slot table is an immutable snapshot swapped
//! atomically (no lock per command); `MOVED`/`ASK`, failovers and resharding are followed
//! without errors reaching callers; MGET/MSET/DEL/UNLINK/EXISTS/TOUCH across slots are
//! split and merged in order; keyless commands fan out as Redis's command tips say.
//! Proxies hand over commands as they received them (each read once into a
//! [`RelayCommand`]) and forward the nodes' replies as bytes with [`ClusterClient::relay`].
//!
//! ```no_run
//! # async fn demo() -> redline::Result<()> {
//! let cluster = redline::ClusterClient::connect(["redis://127.0.0.1:7000"]).await?;
//! cluster.mset([("a", "1"), ("b", "2")]).await?;
//! assert_eq!(cluster.mget(["a", "b"]).await?.len(), 2);
//! # Ok(()) }
//! ```
//!
//! # Redis Sentinel
//!
//! A `redis+sentinel://host:port[,host:port...]/master-name` URL (or
//! [`Config::from_sentinels`]) makes a [`Client`] find its master through Sentinel and
//! follow it across failovers by itself; see [`sentinel`].
//!
//! ```no_run
//! # async fn demo() -> redline::Result<()> {
//! let client = redline::Client::connect("redis+sentinel://127.0.0.1:26379/mymaster").await?;
//! client.incr("visits").await?;
//! # Ok(()) }
//! ```
//!
//! # Client-side caching
//!
//! Opt-in with [`Config::cache`]: every multiplexed connection turns on RESP3 `CLIENT
//! TRACKING`, and the `cached_*` reads ([`Client::cached_get`], `cached_mget`,
//! `cached_hget`, `cached_hgetall`, `cached_smembers`, `cached_cmd`) are served from a
//! bounded LRU that the server's invalidation pushes keep current, in order with the
//! replies. The consistency guarantee, stated precisely, is in the crate README and the
//! `cache` module's docs: a completed write is never hidden from a cached read issued
//! after one more round trip on the client's connection, and never from the writer itself.
//!
//! ```no_run
//! # async fn demo() -> redline::Result<()> {
//! use std::time::Duration;
//!
//! let cfg = redline::Config::from_url("redis://127.0.0.1:6379")?.cache(64 << 20, Duration::from_secs(60));
//! let client = redline::Client::from_config(cfg).await?;
//! let hot = client.cached_get("config:flags").await?;
//! # let _ = hot;
//! # Ok(()) }
//! ```
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod args;
mod buffers;
mod cache;
mod client;
mod cluster;
mod cmd;
mod commands;
mod config;
mod dedicated;
mod error;
mod mux;
mod net;
mod pipeline;
mod pool;
mod pubsub;
mod raw;
mod reply;
pub mod sentinel;
mod transaction;

pub use cache::{CacheConfig, CacheStats};
pub use client::Client;
pub use cluster::{
    ClusterClient, ClusterConfig, ClusterMetrics, ClusterPipeline, ClusterSubscriber, ReadFrom,
    RelayCommand,
};
pub use cmd::{Cmd, ToArg};
pub use commands::{
    EngineStats, ExpireCondition, Expiry, FunctionRestorePolicy, FunctionStats, GeoMatch,
    GeoSearch, GeoUnit, Library, LibraryFunction, RunningFunction, Script, ScriptClient,
    SetCondition, SetOptions, StreamEntry, ZAddOptions,
};
pub use config::{Backoff, CaCerts, ClientCert, Config, FullQueue, PushHandler, TlsConfig};
pub use dedicated::DedicatedConnection;
pub use error::{Error, IoOp, Result, ServerErrorKind, TlsError, UrlError};
pub use pipeline::Pipeline;
pub use pubsub::{Message, Subscriber};
pub use raw::{RawConnection, RawConnector};
pub use redline_resp::{Frame, Protocol};
pub use reply::FromReply;
pub use sentinel::SentinelConfig;
pub use transaction::{TransactionBody, TRANSACTION_ATTEMPTS};
