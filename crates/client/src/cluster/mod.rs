//! Redis Cluster: [`ClusterClient`] routes every command to the node that owns its keys'
//! hash slot, and keeps doing so through resharding and failover.
//!
//! One concept per file:
//! - `args`: reading arguments back out of an encoded command;
//! - `route`: command table → key positions → slot, or a keyless fan-out;
//! - `layout`: parsing `CLUSTER SHARDS` / `CLUSTER SLOTS`;
//! - `table`: the immutable slot → shard → node snapshot (swapped atomically);
//! - `node`: per-node connection pools (the standalone multiplexers) and the registry;
//! - `refresh`: the single-flight, rate-limited, periodic topology refresh task;
//! - `redirect`: classifying `MOVED`/`ASK`/`TRYAGAIN`/`CLUSTERDOWN`/`LOADING`;
//! - `exec`: one command to its slot, following redirects and retrying within budget;
//! - `batch`: many single-slot commands grouped per node (pipelines, splits);
//! - `split`: MGET/MSET/DEL/UNLINK/EXISTS/TOUCH across slots;
//! - `fanout`: keyless commands on one/all masters/all nodes, replies combined;
//! - `learned`: key positions of commands missing from the table, from `COMMAND INFO`;
//! - `dedicated`: blocking commands and leased connections on a slot's master;
//! - `pipeline`: [`ClusterPipeline`];
//! - `relay`: commands received already encoded, replies handed back as bytes (proxies);
//! - `scripting`: EVAL/EVALSHA by key, `Script` with NOSCRIPT fallback;
//! - `transaction`: atomic cluster pipelines (MULTI/EXEC on one slot);
//! - `pubsub`: sharded pub/sub routed to slot owners;
//! - `metrics`: counters ([`ClusterMetrics`]).
//!
//! The hash slot itself (CRC16-XMODEM and Redis's hash-tag rule) lives in
//! `redline_resp::slot`, shared with the server.

mod batch;
mod client;
mod config;
pub(crate) mod dedicated;
mod exec;
mod fanout;
mod join;
mod layout;
mod learned;
mod metrics;
mod node;
mod pipeline;
mod pubsub;
mod redirect;
mod refresh;
mod relay;
mod route;
mod scripting;
mod split;
mod table;
mod transaction;

pub use client::ClusterClient;
pub use config::{ClusterConfig, ReadFrom};
pub use metrics::ClusterMetrics;
pub use pipeline::ClusterPipeline;
pub use pubsub::ClusterSubscriber;
pub use relay::RelayCommand;
