//! redline-server: a Redis-compatible server that uses every core.
//!
//! Same protocol (RESP2, RESP3, inline), same commands and the same replies as Redis 7.0,
//! served by a tokio multi-thread runtime where each connection task executes its own
//! commands against a keyspace sharded by hash slot under short locks.
//!
//! - [`config`]: redis.conf-style configuration and `CONFIG GET/SET`.
//! - [`net`]: listener and the per-connection read → execute → write loop.
//! - [`cmd`]: command dispatch through the shared command table, one file per family;
//!   [`cmdstats`]: per-command and per-error counters for INFO; [`instant`]: its
//!   sampled rates.
//! - [`store`]: databases, shards, values, expiry, eviction, lazy freeing.
//! - [`cstr`]: what C's string functions make of client bytes, where Redis reads them
//!   so (a NUL ends the text, `isspace`, `strtoull`).
//! - [`persist`]: the RDB codec (DUMP/RESTORE, snapshots) and the AOF.
//! - [`repl`]: replication to and from redis-server (the command stream, SYNC/PSYNC), and
//!   the plan for cluster mode on top of it.
//! - [`blocking`]: clients blocked on keys; [`pubsub`]: channel subscriptions.
//! - [`scripting`]: Lua scripts and functions (EVAL, FCALL), atomic over every shard.
//! - [`notify`]: keyspace notifications; [`tracking`]: client-side caching.
//! - [`acl`]: users, their passwords and permissions; [`pause`]: CLIENT PAUSE.
//! - [`geohash`]: the geohash arithmetic of the GEO commands.
//! - [`monitor`], [`slowlog`], [`latency`]: MONITOR, SLOWLOG, LATENCY; [`redact`]: what
//!   they never show.
//! - [`runtime`]: the tokio runtime a server runs on (connections run in arrival order).
//! - [`proc_title`]: the process title `ps` shows (`proc-title-template`).
//! - [`alloc`]: the counting allocator behind `used_memory` and `maxmemory`;
//!   [`background`]: the priority of threads that must not slow commands.
//!
//! Embedding (what `redline bench` does):
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use redline_server::{Config, Server};
//!
//! let server = Server::bind(Config { port: 0, ..Config::default() }).await?;
//! let address = server.local_addr();
//! let stop = server.shutdown_handle();
//! tokio::spawn(server.run());
//! // ... talk to `address` ...
//! stop.shutdown();
//! # Ok(()) }
//! ```
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

/// Every program linking the server counts its heap (INFO used_memory, maxmemory).
#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

pub mod acl;
pub mod alloc;
pub mod background;
pub mod blocking;
pub mod cluster;
pub mod cmd;
pub mod cmdstats;
pub mod config;
pub mod crash;
pub mod cstr;
pub mod freeze;
pub mod geohash;
pub mod glob;
pub mod instant;
pub mod latency;
pub mod launcher;
pub mod log;
pub mod maxmemory;
pub mod monitor;
pub mod net;
pub mod notify;
pub mod oom_score;
pub mod open_files;
pub mod pause;
pub mod persist;
pub mod proc_title;
pub mod pubsub;
pub mod redact;
pub mod repl;
pub mod runtime;
pub mod scripting;
mod server;
pub mod shared;
pub mod slowlog;
pub mod stall_watchdog;
pub mod store;
pub mod supervision;
pub mod syslog;
pub mod system_memory;
pub mod tracking;
pub mod uptime_clock;

pub use config::{Config, ConfigError};
pub use server::{Server, ShutdownHandle};
