//! Real servers for tests: `redis-server` standalone, with TLS, as a Redis Cluster, and
//! `redline-server`. No mocks: tests talk to the real thing on loopback.
//!
//! Every server gets a free port on 127.0.0.1 and a private temporary directory, is ready
//! (answers `PING`) when `start()` returns, and is SIGKILLed, reaped and its directory
//! removed when dropped — also when the test panics. Tests can therefore run in parallel.
//! A watchdog process also kills our servers if the test binary dies without unwinding
//! (timeout, abort, servers kept in a `static`).
//!
//! ```no_run
//! use std::time::Duration;
//! use redline_testkit::{RedisCluster, RedisServer, Reply, TlsCerts};
//!
//! // Standalone.
//! let server = RedisServer::start()?;
//! assert_eq!(server.cmd(&["PING"])?, Reply::Simple("PONG".into()));
//!
//! // TLS, with a CA, server and client certificates generated for this test.
//! let certs = TlsCerts::generate()?;
//! let tls = RedisServer::builder().tls(&certs).start()?;
//! println!("{} trusts {}", tls.url(), certs.ca_cert_path().display());
//!
//! // 3 masters + 3 replicas; kill -9 a master and wait for its replica to take over.
//! let mut cluster = RedisCluster::start()?;
//! let master = cluster.master_of_slot(0)?;
//! cluster.kill(master)?;
//! let promoted = cluster.wait_for_failover(master, Duration::from_secs(30))?;
//! assert_ne!(promoted, master);
//! # Ok::<(), redline_testkit::Error>(())
//! ```
//!
//! Redis Sentinel: [`RedisSentinels`] starts `redis-sentinel` processes that monitor any
//! of these servers as a master.
//!
//! Programs: `redis-server`, `redis-cli` and `redis-sentinel` from `PATH` (override with
//! `REDIS_SERVER_BIN`, `REDIS_CLI_BIN`, `REDIS_SENTINEL_BIN`); `redline-server` from the cargo target directory (override with
//! `REDLINE_SERVER_BIN`). `make deps` installs the Redis tools.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod cluster;
mod control;
mod error;
mod peak_memory;
mod ports;
mod process;
mod reaper;
mod redis;
mod redline;
mod sentinel;
mod sockets;
mod tls;

pub use cluster::{RedisCluster, RedisClusterBuilder, Role, SlotRange, SLOTS};
pub use control::Reply;
pub use error::{Error, Result};
pub use peak_memory::PeakMemory;
pub use ports::reserve_port;
pub use redis::{RedisServer, RedisServerBuilder};
pub use redline::{redline_server_bin, RedlineServer, RedlineServerBuilder};
pub use sentinel::{RedisSentinels, RedisSentinelsBuilder};
pub use sockets::{listening_socket_inodes, listening_sockets, ClosedPort};
pub use tls::TlsCerts;
